/* What the lexer, the Lemon grammar and parse.c share: tokens, the parse context and
   the AST node constructors. Not part of the public front-end interface (ast.h). */
#ifndef CUK_PARSE_INTERNAL_H
#define CUK_PARSE_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>

#include "ast.h"

/* Deepest AST (and bracket nesting) the parser builds; later passes recurse over the
   tree, so nothing deeper may reach them. */
#define PARSE_DEPTH_LIMIT NEST_LIMIT
/* What to do about it, after the message. */
#define NEST_HINT_EXPR "give parts of it names with let"
#define NEST_HINT_BLOCK "move the inner blocks into a function"

/* One token: its code (TK_* from the generated grammar.h, 0 = end of file), where it
   starts, its spelling, and the value of a literal. */
typedef struct Tok {
    int kind;
    Loc loc;
    const char *text; /* points into the source text */
    int len;
    int64_t ival;     /* TK_INT */
    double fval;      /* TK_FLOAT */
    const char *sval; /* TK_STRING: unescaped, in the arena */
} Tok;

typedef struct Lexer {
    Arena *arena;
    Diag *diag;
    const Src *src;
    const unsigned char *cur, *end;
    /* Incremental line/column tracking: loc_at() only moves forward. */
    const unsigned char *mark;
    int line;
    long line_start;
    bool dropped; /* the last call skipped a bad token (so the parser should stay quiet) */
} Lexer;

void lex_init(Lexer *lx, Arena *a, Diag *d, const Src *src);
/* Returns the next token's kind (0 at end of file). Reports bad input itself. */
int lex_next(Lexer *lx, Tok *t);
/* Line and column of a pointer into the source, at or after the last one asked. */
Loc lex_loc(Lexer *lx, const unsigned char *p);

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0 if it is not valid UTF-8.
   p must be followed by a NUL somewhere (the source always is). */
int utf8_seq_len(const unsigned char *p);
/* Location of byte offset off in s, computed from the start. */
Loc src_loc_at(const Src *s, long off);

/* A list under construction (left-recursive rules append at the tail). */
typedef struct List {
    Node *head, *tail;
} List;

/* What the parser would have accepted where a syntax error happened. */
typedef struct SyntaxExpect {
    bool valid;
    bool ok[64]; /* ok[t]: token code t was acceptable */
    int n;       /* number of token codes */
    int top_major;
    bool in_block;
} SyntaxExpect;

/* State shared by the driver (parse.c) and the grammar actions. */
typedef struct ParseCtx {
    Arena *arena;
    Diag *diag;
    const Src *src;
    List fns;        /* finished functions, kept even if the parse fails later */
    Tok cur;         /* the token being fed, for %stack_overflow */
    bool stop;       /* give up: nesting too deep or the parser stack overflowed */
    bool deep_reported;
    SyntaxExpect expect; /* filled before feeding a token the parser will reject */
} ParseCtx;

List list_one(Node *n);
List list_add(List l, Node *n);

Node *node_new(ParseCtx *ps, NodeKind k, Loc loc);
/* Computes n's depth and enforces PARSE_DEPTH_LIMIT (reports and returns a harmless
   stand-in when exceeded). Every grammar action passes its node through it. */
Node *node_done(ParseCtx *ps, Node *n);

Node *mk_binary(ParseCtx *ps, AstOp op, Tok optok, Node *l, Node *r);
Node *mk_unary(ParseCtx *ps, AstOp op, Tok optok, Node *e);
Node *mk_leaf(ParseCtx *ps, NodeKind k, Tok t); /* N_INT N_FLOAT N_STR N_BOOL N_IDENT */
Node *mk_type(ParseCtx *ps, Tok name, Node *dims);
Node *mk_param(ParseCtx *ps, Tok name, Node *type);
void add_fn(ParseCtx *ps, Node *fn);

/* Called from %syntax_error; ps->expect says what was acceptable. */
void report_syntax_error(ParseCtx *ps, const Tok *tok);
void report_stack_overflow(ParseCtx *ps);

/* Helpers defined in the grammar's %code section (they need Lemon's tables). */
void *CukParseAlloc(void *(*mallocProc)(size_t), ParseCtx *ps);
void CukParseFree(void *p, void (*freeProc)(void *));
void CukParse(void *p, int major, Tok minor);
bool parser_accepts(void *p, int tok);
int parser_top_major(void *p);
void parser_quiet(void *p); /* suppress messages until a few tokens parse again */
void parser_reset_quiet(void *p); /* report the next error whatever came before */
int parser_error_symbol(void);
void parser_expected(void *p, SyntaxExpect *ex);

#endif
