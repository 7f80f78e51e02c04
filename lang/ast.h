/* The abstract syntax tree produced by the parser (lexer.re + grammar.y). */
#ifndef CUK_AST_H
#define CUK_AST_H
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"

/* Operators, written once; sema maps them onto IR ops. */
#define AST_OPS(X)                                                                       \
    X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(MOD, "%") X(POW, "**")             \
    X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=")                \
    X(LAND, "&&") X(LOR, "||") X(BAND, "&") X(BOR, "|") X(BXOR, "^") X(SHL, "<<")       \
    X(SHR, ">>") X(NEG, "unary -") X(PLUS, "unary +") X(NOT, "!") X(BNOT, "~")           \
    X(MATMUL, "@")

typedef enum {
#define X(n, s) AOP_##n,
    AST_OPS(X)
#undef X
        AOP_COUNT
} AstOp;
extern const char *const ast_op_spelling[AOP_COUNT];

typedef enum {
    /* expressions */
    N_INT,     /* ival; text keeps the spelling */
    N_FLOAT,   /* fval */
    N_BOOL,    /* ival 0/1 */
    N_STR,     /* sval (unescaped) */
    N_IDENT,   /* name */
    N_UNARY,   /* op, a */
    N_BINARY,  /* op, a, b */
    N_TERNARY, /* a ? b : c */
    N_CALL,    /* name(args...), args list of exprs or N_NAMEDARG; name may be a type (cast) */
    N_NAMEDARG,/* name = a */
    N_INDEX,   /* a[args...]; each arg an expr or N_SLICE */
    N_SLICE,   /* a:b:c inside an index; any of a, b, c may be NULL */
    N_LAMBDA,  /* |params| a ; params list of N_PARAM (type may be NULL) */
    N_TUPLE,   /* (a, b, ...): args list of exprs; as a result type (N_FN's type), a
                  list of N_TYPE. Sema allows tuples as results and let bindings only */
    /* types */
    N_TYPE,    /* name = "f32" ...; dims: list of sizes (NULL = scalar), each an N_IDENT, an
                  N_INT, an N_ANYSIZE or (result types only, sema checks) an expression */
    N_ANYSIZE, /* `?` as a size: known only when the function runs */
    /* statements */
    N_LET,     /* let name [: type] = a */
    N_VAR,     /* var name [: type] = a */
    N_LETTUPLE,/* let (x, _, y) = a; args: list of N_IDENT (`_` discards); ival 1 for var */
    N_ASSIGN,  /* name = a */
    N_UPDATE,  /* b[...] = a (b an N_INDEX; name: its base when that is an identifier, else
                  NULL); loc at the '=' */
    N_IF,      /* if a { body } else { els }; els is a N_BLOCK or N_IF or NULL */
    N_FOR,     /* for name in a..b { body } */
    N_WHILE,   /* while a { body } */
    N_RETURN,  /* return [a] */
    N_EXPRSTMT,/* a; */
    N_BLOCK,   /* { body } */
    /* declarations */
    N_PARAM,   /* name : type */
    N_FN,      /* fn name(params) [-> type] { body }  or  = a; (expression body: a set, body NULL) */
    N_PROGRAM, /* body: list of N_FN */
} NodeKind;

/* How deep a program may nest: the height of the syntax tree and the nesting of
   brackets the parser accepts, and the depth of each statement's IR after sema inlines
   calls and lets into it. Passes that recurse over trees and IR on the caller's stack
   (fusion, the GPU executor) stay within a 1 MiB thread stack at this depth; see
   docs/language.md, "Limits". */
#define NEST_LIMIT 256

typedef struct Node Node;
struct Node {
    NodeKind kind;
    Loc loc;         /* where the construct starts (the operator for N_BINARY/N_UNARY) */
    Node *next;      /* sibling in a list */
    AstOp op;
    const char *name;
    Node *a, *b, *c;
    Node *args;      /* N_CALL, N_INDEX: argument list */
    Node *params;    /* N_FN, N_LAMBDA */
    Node *type;      /* N_LET/N_VAR/N_PARAM: annotation; N_FN: return type (NULL = none) */
    Node *dims;      /* N_TYPE */
    Node *body;      /* N_BLOCK/N_FN/N_FOR/N_WHILE/N_IF/N_PROGRAM: list of statements */
    Node *els;       /* N_IF */
    int64_t ival;
    double fval;
    const char *sval;
    const char *text;/* literal spelling */
    int depth;       /* height of this subtree (leaves are 1); the parser keeps it <= NEST_LIMIT */
};

/* Parses one source file. Syntax errors go to d (several per run, with recovery);
   returns the N_PROGRAM (possibly partial) or NULL if nothing could be parsed. */
Node *parse_program(Arena *a, Diag *d, const Src *src);

/* Location of the first token of an expression (binary nodes sit at their operator). */
Loc node_first_loc(const Node *n);

/* The spelling of a size in a type (`n`, `3`, `?`, `n + 2`, `2 * (n - 1)`), for
   messages and dumps; parentheses only where the operators need them. */
const char *size_text(Arena *a, const Node *d);

/* For tests and debugging: prints the tree as an S-expression. */
void ast_dump(FILE *out, const Node *n);

#endif
