/* The cuk grammar (Lemon): actions only build nodes; the driver and the error
   messages live in parse.c. */

%name CukParse
%token_prefix TK_
%token_type {Tok}
%extra_context {ParseCtx *ps}
/* Bounded: deep nesting must end in a clean error, never in a crash. */
%stack_size 20000
%start_symbol program

%include {
#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include "parse_internal.h"
#define YYMALLOCARGTYPE size_t
static void syntax_error(void *parser, int major, const Tok *tok);
}

%syntax_error {
    syntax_error(yypParser, yymajor, &TOKEN);
}

%stack_overflow {
    report_stack_overflow(ps);
}

/* Token codes in a fixed order (the error messages name them through parse.c). */
%token FN LET VAR IF ELSE FOR IN WHILE RETURN TRUE FALSE.
%token IDENT INT FLOAT STRING.
%token LPAREN RPAREN LBRACKET RBRACKET LBRACE RBRACE COMMA SEMI COLON ARROW ASSIGN DOTDOT.
%token QUESTION OROR ANDAND PIPE CARET AMP EQEQ NE LT LE GT GE SHL SHR.
%token PLUS MINUS STAR SLASH PERCENT BANG TILDE STARSTAR AT.

/* Precedence, lowest first. LAMBDA and UNARY are never produced by the lexer. */
%right LAMBDA.
%right QUESTION.
%left OROR.
%left ANDAND.
%left PIPE.
%left CARET.
%left AMP.
%left EQEQ NE.
%left LT LE GT GE.
%left SHL SHR.
%left PLUS MINUS.
%left STAR SLASH PERCENT AT.
%right UNARY BANG TILDE.
%right STARSTAR.
%left LBRACKET.

%type fn {Node *}
%type params {List}
%type plist {List}
%type param {Node *}
%type ret {Node *}
%type type {Node *}
%type opttype {Node *}
%type dims {List}
%type dim {Node *}
%type block {Node *}
%type stmts {List}
%type stmt {Node *}
%type ifstmt {Node *}
%type expr {Node *}
%type args {List}
%type arglist {List}
%type arg {Node *}
%type items {List}
%type item {Node *}
%type sl {Node *}
%type lparams {List}
%type lparam {Node *}
%type types {List}
%type exprs {List}
%type names {List}
%type name {Node *}

program ::= fns.

fns ::= .
fns ::= fns fn(F). { add_fn(ps, F); }
/* Top-level recovery: Lemon drops tokens until one can follow (the next 'fn'). */
fns ::= fns error.

fn(A) ::= FN(K) IDENT(N) LPAREN params(P) RPAREN ret(R) block(B). {
    A = node_new(ps, N_FN, K.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->params = P.head;
    A->type = R;
    A->body = B->body;
    A = node_done(ps, A);
}
fn(A) ::= FN(K) IDENT(N) LPAREN params(P) RPAREN ret(R) ASSIGN expr(E) SEMI. {
    A = node_new(ps, N_FN, K.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->params = P.head;
    A->type = R;
    A->a = E;
    A = node_done(ps, A);
}

params(A) ::= . { A.head = A.tail = NULL; }
params(A) ::= plist(L). { A = L; }
params(A) ::= plist(L) COMMA. { A = L; }
plist(A) ::= param(P). { A = list_one(P); }
plist(A) ::= plist(L) COMMA param(P). { A = list_add(L, P); }
param(A) ::= IDENT(N) COLON type(T). { A = mk_param(ps, N, T); }

ret(A) ::= . { A = NULL; }
ret(A) ::= ARROW type(T). { A = T; }
/* Several results (DESIGN.md part 2): -> (f32[?], i64[?]). One type in parentheses is
   parsed too, for sema to say that a 1-tuple is not a thing. */
ret(A) ::= ARROW LPAREN(L) types(T) RPAREN. {
    A = node_new(ps, N_TUPLE, L.loc);
    A->args = T.head;
    A = node_done(ps, A);
}
types(A) ::= type(T). { A = list_one(T); }
types(A) ::= types(L) COMMA type(T). { A = list_add(L, T); }

type(A) ::= IDENT(N). { A = mk_type(ps, N, NULL); }
type(A) ::= IDENT(N) LBRACKET dims(D) RBRACKET. { A = mk_type(ps, N, D.head); }
dims(A) ::= dim(D). { A = list_one(D); }
dims(A) ::= dims(L) COMMA dim(D). { A = list_add(L, D); }
/* A size is any expression here; sema accepts a size variable or an integer, and in a
   result type +, - and * of them (DESIGN.md part 2, "Sizes"). */
dim(A) ::= expr(E). { A = E; }
dim(A) ::= QUESTION(Q). { A = node_done(ps, node_new(ps, N_ANYSIZE, Q.loc)); }

opttype(A) ::= . { A = NULL; }
opttype(A) ::= COLON type(T). { A = T; }

block(A) ::= LBRACE(L) stmts(S) RBRACE. {
    A = node_new(ps, N_BLOCK, L.loc);
    A->body = S.head;
    A = node_done(ps, A);
}
/* Statement-level recovery: a bad statement is skipped up to its ';' (stmt rule
   below) or, if the block ends first, up to the '}'. */
block(A) ::= LBRACE(L) stmts(S) error RBRACE. {
    A = node_new(ps, N_BLOCK, L.loc);
    A->body = S.head;
    A = node_done(ps, A);
}

stmts(A) ::= . { A.head = A.tail = NULL; }
stmts(A) ::= stmts(L) stmt(S). { A = S ? list_add(L, S) : L; }

stmt(A) ::= error SEMI. { A = NULL; }
stmt(A) ::= LET(K) IDENT(N) opttype(T) ASSIGN expr(E) SEMI. {
    A = node_new(ps, N_LET, K.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->type = T;
    A->a = E;
    A = node_done(ps, A);
}
stmt(A) ::= VAR(K) IDENT(N) opttype(T) ASSIGN expr(E) SEMI. {
    A = node_new(ps, N_VAR, K.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->type = T;
    A->a = E;
    A = node_done(ps, A);
}
/* let (a, b) = f(x); binds the results of a function with several results. */
stmt(A) ::= LET(K) LPAREN names(L) RPAREN ASSIGN expr(E) SEMI. {
    A = node_new(ps, N_LETTUPLE, K.loc);
    A->args = L.head;
    A->a = E;
    A = node_done(ps, A);
}
stmt(A) ::= VAR(K) LPAREN names(L) RPAREN ASSIGN expr(E) SEMI. {
    A = node_new(ps, N_LETTUPLE, K.loc);
    A->args = L.head;
    A->a = E;
    A->ival = 1;
    A = node_done(ps, A);
}
names(A) ::= name(N). { A = list_one(N); }
names(A) ::= names(L) COMMA name(N). { A = list_add(L, N); }
name(A) ::= IDENT(T). { A = mk_leaf(ps, N_IDENT, T); }
stmt(A) ::= IDENT(N) ASSIGN expr(E) SEMI. {
    A = node_new(ps, N_ASSIGN, N.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->a = E;
    A = node_done(ps, A);
}
/* An update of part of a var array: sema lowers it to a new value of the array. */
stmt(A) ::= expr(E) LBRACKET items(L) RBRACKET ASSIGN(O) expr(V) SEMI. {
    A = node_new(ps, N_UPDATE, O.loc);
    Node *t = node_new(ps, N_INDEX, node_first_loc(E));
    t->a = E;
    t->args = L.head;
    A->b = node_done(ps, t);
    A->name = E->kind == N_IDENT ? E->name : NULL;
    A->a = V;
    A = node_done(ps, A);
}
stmt(A) ::= ifstmt(I). { A = I; }
stmt(A) ::= FOR(K) IDENT(N) IN expr(L) DOTDOT expr(H) block(B). {
    A = node_new(ps, N_FOR, K.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->a = L;
    A->b = H;
    A->body = B->body;
    A = node_done(ps, A);
}
stmt(A) ::= WHILE(K) expr(C) block(B). {
    A = node_new(ps, N_WHILE, K.loc);
    A->a = C;
    A->body = B->body;
    A = node_done(ps, A);
}
stmt(A) ::= RETURN(K) SEMI. { A = node_done(ps, node_new(ps, N_RETURN, K.loc)); }
stmt(A) ::= RETURN(K) expr(E) SEMI. {
    A = node_new(ps, N_RETURN, K.loc);
    A->a = E;
    A = node_done(ps, A);
}
stmt(A) ::= expr(E) SEMI. {
    A = node_new(ps, N_EXPRSTMT, node_first_loc(E));
    A->a = E;
    A = node_done(ps, A);
}

ifstmt(A) ::= IF(K) expr(C) block(B). {
    A = node_new(ps, N_IF, K.loc);
    A->a = C;
    A->body = B->body;
    A = node_done(ps, A);
}
ifstmt(A) ::= IF(K) expr(C) block(B) ELSE block(E). {
    A = node_new(ps, N_IF, K.loc);
    A->a = C;
    A->body = B->body;
    A->els = E;
    A = node_done(ps, A);
}
ifstmt(A) ::= IF(K) expr(C) block(B) ELSE ifstmt(E). {
    A = node_new(ps, N_IF, K.loc);
    A->a = C;
    A->body = B->body;
    A->els = E;
    A = node_done(ps, A);
}

/* ---- expressions ---- */
expr(A) ::= INT(T). { A = mk_leaf(ps, N_INT, T); }
expr(A) ::= FLOAT(T). { A = mk_leaf(ps, N_FLOAT, T); }
expr(A) ::= STRING(T). { A = mk_leaf(ps, N_STR, T); }
expr(A) ::= TRUE(T). { A = mk_leaf(ps, N_BOOL, T); }
expr(A) ::= FALSE(T). { A = mk_leaf(ps, N_BOOL, T); }
expr(A) ::= IDENT(T). { A = mk_leaf(ps, N_IDENT, T); }
expr(A) ::= LPAREN expr(E) RPAREN. { A = E; }
/* A tuple: (a, b). Sema allows it only as a function's results. */
expr(A) ::= LPAREN(L) expr(E) COMMA exprs(R) RPAREN. {
    A = node_new(ps, N_TUPLE, L.loc);
    E->next = R.head;
    A->args = E;
    A = node_done(ps, A);
}
exprs(A) ::= expr(E). { A = list_one(E); }
exprs(A) ::= exprs(L) COMMA expr(E). { A = list_add(L, E); }

expr(A) ::= IDENT(N) LPAREN args(L) RPAREN. {
    A = node_new(ps, N_CALL, N.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->args = L.head;
    A = node_done(ps, A);
}
args(A) ::= . { A.head = A.tail = NULL; }
args(A) ::= arglist(L). { A = L; }
args(A) ::= arglist(L) COMMA. { A = L; }
arglist(A) ::= arg(E). { A = list_one(E); }
arglist(A) ::= arglist(L) COMMA arg(E). { A = list_add(L, E); }
arg(A) ::= expr(E). { A = E; }
arg(A) ::= IDENT(N) ASSIGN expr(E). {
    A = node_new(ps, N_NAMEDARG, N.loc);
    A->name = arena_strndup(ps->arena, N.text, (size_t)N.len);
    A->a = E;
    A = node_done(ps, A);
}

expr(A) ::= expr(B) LBRACKET items(L) RBRACKET. {
    A = node_new(ps, N_INDEX, node_first_loc(B));
    A->a = B;
    A->args = L.head;
    A = node_done(ps, A);
}
items(A) ::= item(E). { A = list_one(E); }
items(A) ::= items(L) COMMA item(E). { A = list_add(L, E); }
item(A) ::= expr(E). { A = E; }
item(A) ::= sl(L) COLON(C) sl(H). {
    A = node_new(ps, N_SLICE, L ? node_first_loc(L) : C.loc);
    A->a = L;
    A->b = H;
    A = node_done(ps, A);
}
item(A) ::= sl(L) COLON(C) sl(H) COLON sl(S). {
    A = node_new(ps, N_SLICE, L ? node_first_loc(L) : C.loc);
    A->a = L;
    A->b = H;
    A->c = S;
    A = node_done(ps, A);
}
sl(A) ::= . { A = NULL; }
sl(A) ::= expr(E). { A = E; }

expr(A) ::= PIPE(K) lparams(P) PIPE expr(E). [LAMBDA] {
    A = node_new(ps, N_LAMBDA, K.loc);
    A->params = P.head;
    A->a = E;
    A = node_done(ps, A);
}
expr(A) ::= OROR(K) expr(E). [LAMBDA] {
    A = node_new(ps, N_LAMBDA, K.loc);
    A->a = E;
    A = node_done(ps, A);
}
lparams(A) ::= lparam(P). { A = list_one(P); }
lparams(A) ::= lparams(L) COMMA lparam(P). { A = list_add(L, P); }
lparam(A) ::= IDENT(N). { A = mk_param(ps, N, NULL); }
lparam(A) ::= IDENT(N) COLON type(T). { A = mk_param(ps, N, T); }

expr(A) ::= expr(C) QUESTION expr(T) COLON expr(E). {
    A = node_new(ps, N_TERNARY, node_first_loc(C));
    A->a = C;
    A->b = T;
    A->c = E;
    A = node_done(ps, A);
}

expr(A) ::= expr(L) OROR(O) expr(R). { A = mk_binary(ps, AOP_LOR, O, L, R); }
expr(A) ::= expr(L) ANDAND(O) expr(R). { A = mk_binary(ps, AOP_LAND, O, L, R); }
expr(A) ::= expr(L) PIPE(O) expr(R). { A = mk_binary(ps, AOP_BOR, O, L, R); }
expr(A) ::= expr(L) CARET(O) expr(R). { A = mk_binary(ps, AOP_BXOR, O, L, R); }
expr(A) ::= expr(L) AMP(O) expr(R). { A = mk_binary(ps, AOP_BAND, O, L, R); }
expr(A) ::= expr(L) EQEQ(O) expr(R). { A = mk_binary(ps, AOP_EQ, O, L, R); }
expr(A) ::= expr(L) NE(O) expr(R). { A = mk_binary(ps, AOP_NE, O, L, R); }
expr(A) ::= expr(L) LT(O) expr(R). { A = mk_binary(ps, AOP_LT, O, L, R); }
expr(A) ::= expr(L) LE(O) expr(R). { A = mk_binary(ps, AOP_LE, O, L, R); }
expr(A) ::= expr(L) GT(O) expr(R). { A = mk_binary(ps, AOP_GT, O, L, R); }
expr(A) ::= expr(L) GE(O) expr(R). { A = mk_binary(ps, AOP_GE, O, L, R); }
expr(A) ::= expr(L) SHL(O) expr(R). { A = mk_binary(ps, AOP_SHL, O, L, R); }
expr(A) ::= expr(L) SHR(O) expr(R). { A = mk_binary(ps, AOP_SHR, O, L, R); }
expr(A) ::= expr(L) PLUS(O) expr(R). { A = mk_binary(ps, AOP_ADD, O, L, R); }
expr(A) ::= expr(L) MINUS(O) expr(R). { A = mk_binary(ps, AOP_SUB, O, L, R); }
expr(A) ::= expr(L) STAR(O) expr(R). { A = mk_binary(ps, AOP_MUL, O, L, R); }
expr(A) ::= expr(L) SLASH(O) expr(R). { A = mk_binary(ps, AOP_DIV, O, L, R); }
expr(A) ::= expr(L) PERCENT(O) expr(R). { A = mk_binary(ps, AOP_MOD, O, L, R); }
expr(A) ::= expr(L) STARSTAR(O) expr(R). { A = mk_binary(ps, AOP_POW, O, L, R); }
/* a @ b is dot(a, b), at the precedence of '*' as in NumPy. */
expr(A) ::= expr(L) AT(O) expr(R). { A = mk_binary(ps, AOP_MATMUL, O, L, R); }

expr(A) ::= MINUS(O) expr(E). [UNARY] { A = mk_unary(ps, AOP_NEG, O, E); }
expr(A) ::= PLUS(O) expr(E). [UNARY] { A = mk_unary(ps, AOP_PLUS, O, E); }
expr(A) ::= BANG(O) expr(E). [UNARY] { A = mk_unary(ps, AOP_NOT, O, E); }
expr(A) ::= TILDE(O) expr(E). [UNARY] { A = mk_unary(ps, AOP_BNOT, O, E); }

%code {
/* The helpers below read Lemon's tables, so they live in the generated file. */

/* Would the parser, in its current state, accept token tok (after whatever
   reductions that token triggers)? Simulates those reductions on a copy of the top
   of the stack; the real stack is not touched. */
bool parser_accepts(void *p, int tok) {
    yyParser *P = p;
    long depth = P->yytos - P->yystack; /* index of the real top */
    YYACTIONTYPE over[256];             /* states pushed by simulated reductions */
    int nover = 0;
    YYACTIONTYPE state = P->yytos->stateno;
    for (int steps = 0; steps < 100000; steps++) {
        YYACTIONTYPE act = yy_find_shift_action((YYCODETYPE)tok, state);
        if (act >= YY_MIN_REDUCE) {
            int rule = act - YY_MIN_REDUCE;
            int n = -yyRuleInfoNRhs[rule];
            if (n <= nover) {
                nover -= n;
            } else {
                depth -= n - nover;
                nover = 0;
            }
            if (depth < 0) return false;
            YYACTIONTYPE below = nover ? over[nover - 1] : P->yystack[depth].stateno;
            state = yy_find_reduce_action(below, yyRuleInfoLhs[rule]);
            if (nover == (int)(sizeof over / sizeof over[0])) return true; /* can't tell */
            over[nover++] = state;
        } else if (act <= YY_MAX_SHIFTREDUCE || act == YY_ACCEPT_ACTION) {
            return true;
        } else {
            return false;
        }
    }
    return false;
}

int parser_top_major(void *p) { return ((yyParser *)p)->yytos->major; }

void parser_quiet(void *p) { ((yyParser *)p)->yyerrcnt = 3; }

void parser_reset_quiet(void *p) { ((yyParser *)p)->yyerrcnt = -1; }

int parser_error_symbol(void) { return YYERRORSYMBOL; }

void parser_expected(void *p, SyntaxExpect *ex) {
    yyParser *P = p;
    ASSERT(YYNTOKEN <= (int)(sizeof ex->ok / sizeof ex->ok[0]));
    ex->n = YYNTOKEN;
    for (int t = 0; t < YYNTOKEN; t++) ex->ok[t] = parser_accepts(P, t);
    ex->in_block = false;
    for (yyStackEntry *e = P->yystack; e <= P->yytos; e++)
        if (e->major == TK_LBRACE) ex->in_block = true;
    ex->top_major = P->yytos->major;
    ex->valid = true;
}

static void syntax_error(void *parser, int major, const Tok *tok) {
    yyParser *P = parser;
    /* The driver computes what was expected before feeding a token that will fail:
       by now Lemon's default reductions may have narrowed the state. */
    if (!P->ps->expect.valid) parser_expected(P, &P->ps->expect);
    Tok t = *tok;
    t.kind = major;
    report_syntax_error(P->ps, &t);
}
}
