/* The parser driver (feeds lexer tokens to the Lemon parser, recovers from errors),
   the AST node constructors, syntax error messages and ast_dump. */
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "parse_internal.h"
#include "tokens.h"

const char *const ast_op_spelling[AOP_COUNT] = {
#define X(n, s) s,
    AST_OPS(X)
#undef X
};

/* ---- nodes ---------------------------------------------------------------------- */

List list_one(Node *n) {
    List l = {n, n};
    return l;
}

List list_add(List l, Node *n) {
    if (!n) return l;
    if (!l.head) return list_one(n);
    l.tail->next = n;
    l.tail = n;
    return l;
}

Node *node_new(ParseCtx *ps, NodeKind k, Loc loc) {
    Node *n = NEW(ps->arena, Node);
    n->kind = k;
    n->loc = loc;
    n->depth = 1;
    return n;
}

static int max_depth(int d, const Node *n) { return n && n->depth > d ? n->depth : d; }

static int list_depth(int d, const Node *n) {
    for (; n; n = n->next) d = max_depth(d, n);
    return d;
}

static bool is_expr(NodeKind k) { return k <= N_LAMBDA; }

static Node *deeper(Node *best, Node *list) {
    for (; list; list = list->next)
        if (!best || list->depth > best->depth) best = list;
    return best;
}

static Node *deepest_child(Node *m) {
    Node *best = NULL;
    Node *one[5] = {m->a, m->b, m->c, m->type, m->els};
    for (int i = 0; i < 5; i++)
        if (one[i] && (!best || one[i]->depth > best->depth)) best = one[i];
    best = deeper(best, m->args);
    best = deeper(best, m->params);
    best = deeper(best, m->dims);
    return deeper(best, m->body);
}

/* The expression on a too-deep statement's deepest path, when it makes up most of the
   depth: then the expression is what to split, and the error points at it. */
static Node *deep_expr(Node *n) {
    Node *m = n;
    while (m && !is_expr(m->kind)) m = deepest_child(m);
    return m && 2 * m->depth > n->depth ? m : NULL;
}

/* The statement one level below the limit on n's deepest path, where the error points. */
static Node *too_deep_stmt(Node *n) {
    Node *m = n;
    for (int k = 0; k < PARSE_DEPTH_LIMIT; k++) {
        Node *c = deepest_child(m);
        if (!c || is_expr(c->kind)) break;
        m = c;
    }
    return m;
}

Node *node_done(ParseCtx *ps, Node *n) {
    int d = 0;
    d = max_depth(d, n->a);
    d = max_depth(d, n->b);
    d = max_depth(d, n->c);
    d = max_depth(d, n->type);
    d = max_depth(d, n->els);
    d = list_depth(d, n->args);
    d = list_depth(d, n->params);
    d = list_depth(d, n->dims);
    d = list_depth(d, n->body);
    n->depth = d + 1;
    if (n->depth <= PARSE_DEPTH_LIMIT || n->kind == N_FN || n->kind == N_PROGRAM) return n;
    /* Too deep for the passes that recurse over the tree: report once, stop parsing,
       and hand back a leaf in its place so that what is returned stays shallow. */
    if (!ps->deep_reported) {
        ps->deep_reported = true;
        Node *e = is_expr(n->kind) ? n : deep_expr(n);
        if (e)
            diag_error(ps->diag, e == n ? n->loc : node_first_loc(e), "expression nested too deeply (limit %d); %s",
                       PARSE_DEPTH_LIMIT, NEST_HINT_EXPR);
        else
            diag_error(ps->diag, too_deep_stmt(n)->loc, "statements nested too deeply (limit %d); %s",
                       PARSE_DEPTH_LIMIT, NEST_HINT_BLOCK);
    }
    ps->stop = true;
    Node *zero = node_new(ps, N_INT, n->loc);
    zero->text = "0";
    if (is_expr(n->kind)) return zero;
    if (n->kind == N_BLOCK) return node_new(ps, N_BLOCK, n->loc);
    Node *s = node_new(ps, N_EXPRSTMT, n->loc);
    s->a = zero;
    s->depth = 2;
    return s;
}

Loc node_first_loc(const Node *n) {
    for (;;) {
        if ((n->kind == N_BINARY || n->kind == N_TERNARY || n->kind == N_INDEX) && n->a)
            n = n->a;
        else
            return n->loc;
    }
}

Node *mk_binary(ParseCtx *ps, AstOp op, Tok optok, Node *l, Node *r) {
    Node *n = node_new(ps, N_BINARY, optok.loc);
    n->op = op;
    n->a = l;
    n->b = r;
    return node_done(ps, n);
}

Node *mk_unary(ParseCtx *ps, AstOp op, Tok optok, Node *e) {
    Node *n = node_new(ps, N_UNARY, optok.loc);
    n->op = op;
    n->a = e;
    return node_done(ps, n);
}

Node *mk_leaf(ParseCtx *ps, NodeKind k, Tok t) {
    Node *n = node_new(ps, k, t.loc);
    n->text = arena_strndup(ps->arena, t.text, (size_t)t.len);
    switch (k) {
    case N_INT: n->ival = t.ival; break;
    case N_FLOAT: n->fval = t.fval; break;
    case N_STR: n->sval = t.sval ? t.sval : ""; break;
    case N_BOOL: n->ival = t.kind == TK_TRUE; break;
    case N_IDENT: n->name = n->text; break;
    default: die("mk_leaf: not a leaf kind %d", k);
    }
    return n;
}

Node *mk_type(ParseCtx *ps, Tok name, Node *dims) {
    Node *n = node_new(ps, N_TYPE, name.loc);
    n->name = arena_strndup(ps->arena, name.text, (size_t)name.len);
    n->dims = dims;
    return node_done(ps, n);
}

Node *mk_param(ParseCtx *ps, Tok name, Node *type) {
    Node *n = node_new(ps, N_PARAM, name.loc);
    n->name = arena_strndup(ps->arena, name.text, (size_t)name.len);
    n->type = type;
    return node_done(ps, n);
}

void add_fn(ParseCtx *ps, Node *fn) { ps->fns = list_add(ps->fns, fn); }

/* ---- syntax error messages ---------------------------------------------------------- */

/* How a token is named in "expected ..." lists (lang/tokens.h); NULL for codes the lexer
   never makes. */
static const char *const tok_names[] = {
#define X(n, kind, text) [TK_##n] = TOKEN_NAME_##kind(text),
    TOKENS(X)
#undef X
};

static const char *tok_name(int k) {
    if (k == 0) return "end of file";
    if (k < 0 || k >= (int)(sizeof tok_names / sizeof tok_names[0])) return NULL;
    return tok_names[k];
}

/* The offending token as the message shows it. */
static const char *tok_desc(ParseCtx *ps, const Tok *t) {
    int len = t->len;
    const char *dots = "";
    if (len > 32) {
        len = 32;
        dots = "...";
    }
    switch (t->kind) {
    case 0: return "end of file";
    case TK_IDENT: return arena_printf(ps->arena, "name '%.*s%s'", len, t->text, dots);
    case TK_INT:
    case TK_FLOAT: return arena_printf(ps->arena, "number '%.*s%s'", len, t->text, dots);
    case TK_STRING: return arena_printf(ps->arena, "string %.*s%s", len, t->text, dots);
    default: return tok_name(t->kind);
    }
}

static const int expr_start[] = {TK_INT,   TK_FLOAT, TK_STRING, TK_TRUE, TK_FALSE,
                                  TK_IDENT, TK_LPAREN, TK_MINUS, TK_PLUS, TK_BANG,
                                  TK_TILDE, TK_PIPE,   TK_OROR};
static const int stmt_start[] = {TK_LET, TK_VAR, TK_IF, TK_FOR, TK_WHILE, TK_RETURN};
static const int operators[] = {TK_QUESTION, TK_OROR,  TK_ANDAND, TK_PIPE,     TK_CARET,
                                TK_AMP,      TK_EQEQ,  TK_NE,     TK_LT,       TK_LE,
                                TK_GT,       TK_GE,    TK_SHL,    TK_SHR,      TK_PLUS,
                                TK_MINUS,    TK_STAR,  TK_SLASH,  TK_PERCENT,  TK_STARSTAR,
                                TK_AT,       TK_LBRACKET, TK_LPAREN};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* If every token of set is acceptable, clear them and return true. */
static bool take_all(bool *ok, const int *set, int n) {
    for (int i = 0; i < n; i++)
        if (!ok[set[i]]) return false;
    for (int i = 0; i < n; i++) ok[set[i]] = false;
    return true;
}

void report_syntax_error(ParseCtx *ps, const Tok *tok) {
    const SyntaxExpect *ex = &ps->expect;
    const bool *acceptable = ex->ok;
    int n = ex->n, top_major = ex->top_major;
    bool in_block = ex->in_block;
    bool ok[64];
    memcpy(ok, acceptable, sizeof ok);
    for (int i = 0; i < n; i++)
        if (!tok_name(i)) ok[i] = false;

    /* Name common sets by what they mean rather than token by token. */
    bool expr = take_all(ok, expr_start, COUNT(expr_start));
    bool stmt = expr && take_all(ok, stmt_start, COUNT(stmt_start));
    int nops = 0;
    for (int i = 0; i < COUNT(operators); i++) nops += ok[operators[i]];
    bool ops = nops >= 8;
    if (ops) {
        for (int i = 0; i < COUNT(operators); i++) ok[operators[i]] = false;
        /* '=' after a name (x = e; f(axis = 1)) is rarely what was missing. */
        ok[TK_ASSIGN] = false;
    }

    const char *items[8];
    int nitems = 0, rest = 0;
    if (stmt) items[nitems++] = "a statement";
    else if (expr && ok[TK_QUESTION]) {
        /* only a size in a type takes an expression or '?' */
        items[nitems++] = "a size (a name, an integer or '?')";
        ok[TK_QUESTION] = false;
    } else if (expr) items[nitems++] = "an expression";
    int only = -1, count = 0;
    for (int i = 0; i < n; i++)
        if (ok[i]) {
            only = i;
            count++;
        }
    if (ops && count == 1 && only == TK_SEMI) {
        items[nitems++] = in_block ? "';' after the statement" : "';' after the expression";
    } else if (!expr && count == 1 && only == TK_IDENT &&
               (top_major == TK_COLON || top_major == TK_ARROW)) {
        items[nitems++] = "a type";
    } else if (!expr && count == 2 && ok[TK_IDENT] && ok[TK_LPAREN] && top_major == TK_ARROW) {
        /* a result type, or several in parentheses (-> (f32, i64)) */
        items[nitems++] = "a type or '(' before several result types";
    } else {
        for (int i = 0; i < n; i++) {
            if (!ok[i]) continue;
            if (nitems < 5) items[nitems++] = tok_name(i);
            else rest++;
        }
        if (nitems == 0 && ops) items[nitems++] = "an operator";
    }

    char buf[512];
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < nitems; i++) {
        const char *sep = i == 0 ? "" : (i == nitems - 1 && !rest) ? " or " : ", ";
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", sep, items[i]);
    }
    if (rest) snprintf(buf + len, sizeof buf - len, " or another token");

    /* A common slip deserves a hint. */
    const char *hint = "";
    if (tok->kind == TK_ASSIGN && acceptable[TK_EQEQ]) hint = " (use '==' to compare)";
    if (nitems == 0)
        diag_error(ps->diag, tok->loc, "unexpected %s%s", tok_desc(ps, tok), hint);
    else
        diag_error(ps->diag, tok->loc, "unexpected %s, expected %s%s", tok_desc(ps, tok), buf,
                   hint);
}

void report_stack_overflow(ParseCtx *ps) {
    if (!ps->deep_reported) {
        ps->deep_reported = true;
        diag_error(ps->diag, ps->cur.loc, "expression nested too deeply (limit %d); %s",
                   PARSE_DEPTH_LIMIT, NEST_HINT_EXPR);
    }
    ps->stop = true;
}

/* ---- the driver ----------------------------------------------------------------------- */

typedef struct Driver {
    Lexer lx;
    Tok peeked;
    bool has_peek;
    Loc last_end; /* just past the last token, where "unexpected end of file" points */
} Driver;

static int next_tok(Driver *dr, Tok *t) {
    if (dr->has_peek) {
        dr->has_peek = false;
        *t = dr->peeked;
        return t->kind;
    }
    return lex_next(&dr->lx, t);
}

static int peek_tok(Driver *dr) {
    if (!dr->has_peek) {
        lex_next(&dr->lx, &dr->peeked);
        dr->has_peek = true;
    }
    return dr->peeked.kind;
}

/* After an error the parser dropped a '{': skip its whole block, so that its '}' does
   not end the enclosing one. Returns the closing '}' (or end of file). */
static Tok skip_block(Driver *dr) {
    int depth = 1;
    Tok t;
    for (;;) {
        int k = next_tok(dr, &t);
        if (k == 0) return t;
        if (k == TK_LBRACE) depth++;
        if (k == TK_RBRACE && --depth == 0) return t;
    }
}

static void feed(ParseCtx *ps, void *parser, Tok t) {
    ps->cur = t;
    ps->expect.valid = false;
    if (!parser_accepts(parser, t.kind)) parser_expected(parser, &ps->expect);
    CukParse(parser, t.kind, t);
}

Node *parse_program(Arena *a, Diag *d, const Src *src) {
    ParseCtx ps;
    memset(&ps, 0, sizeof ps);
    ps.arena = a;
    ps.diag = d;
    ps.src = src;
    Driver dr;
    memset(&dr, 0, sizeof dr);
    lex_init(&dr.lx, a, d, src);
    dr.last_end = lex_loc(&dr.lx, dr.lx.cur);

    void *parser = CukParseAlloc(malloc, &ps);
    if (!parser) die("out of memory allocating the parser");
    int max = d->max_errors > 0 ? d->max_errors : 50;
    int nesting = 0; /* open ( [ { brackets */
    int errsym = parser_error_symbol();
    for (;;) {
        if (ps.stop || d->errors > max) break;
        Tok t;
        int before = d->errors;
        int k = next_tok(&dr, &t);
        /* The lexer already complained; what it skipped would only cause echoes. */
        if (d->errors != before || dr.lx.dropped) parser_quiet(parser);
        if (k == 0) t.loc = dr.last_end;
        if (k == TK_LPAREN || k == TK_LBRACKET || k == TK_LBRACE) {
            if (++nesting > PARSE_DEPTH_LIMIT) {
                diag_error(d, t.loc, "%s nested too deeply (limit %d); %s",
                           k == TK_LBRACE ? "blocks" : "expression", PARSE_DEPTH_LIMIT,
                           k == TK_LBRACE ? NEST_HINT_BLOCK : NEST_HINT_EXPR);
                break;
            }
        } else if ((k == TK_RPAREN || k == TK_RBRACKET || k == TK_RBRACE) && nesting > 0) {
            nesting--;
        }
        if (k != 0) {
            dr.last_end = t.loc;
            dr.last_end.col += t.len;
            dr.last_end.off += t.len;
        }
        feed(&ps, parser, t);
        if (k == 0) break;
        if (k == TK_LBRACE && parser_top_major(parser) != TK_LBRACE) {
            /* The '{' was thrown away in error recovery: skip the block it opens, then
               end the broken statement there unless an 'else' continues it. */
            Tok close = skip_block(&dr);
            nesting--;
            if (close.kind == 0) continue; /* the next read gives end of file again */
            if (parser_top_major(parser) == errsym && parser_accepts(parser, TK_SEMI) &&
                peek_tok(&dr) != TK_ELSE) {
                close.kind = TK_SEMI;
                feed(&ps, parser, close);
                parser_reset_quiet(parser); /* a clean cut: the next error is news */
            }
        }
    }
    CukParseFree(parser, free);

    Node *prog = node_new(&ps, N_PROGRAM, src_loc_at(src, 0));
    prog->body = ps.fns.head;
    return node_done(&ps, prog);
}

/* ---- ast_dump --------------------------------------------------------------------------- */

/* How tightly an operator in a size binds (higher binds tighter); leaves bind tightest. */
static int size_prec(const Node *d) {
    if (d->kind == N_BINARY) return d->op == AOP_ADD || d->op == AOP_SUB ? 1 : d->op == AOP_POW ? 3 : 2;
    return d->kind == N_UNARY ? 3 : 4;
}

const char *size_text(Arena *a, const Node *d) {
    switch (d->kind) {
    case N_IDENT: return d->name;
    case N_ANYSIZE: return "?";
    case N_INT:
    case N_FLOAT: return d->text ? d->text : "?";
    case N_UNARY: {
        const char *s = ast_op_spelling[d->op];
        if (strncmp(s, "unary ", 6) == 0) s += 6;
        const char *x = size_text(a, d->a);
        return size_prec(d->a) < 3 ? arena_printf(a, "%s(%s)", s, x) : arena_printf(a, "%s%s", s, x);
    }
    case N_BINARY: {
        /* the right operand of a left-associative operator needs parentheses at equal
           precedence too: n - (m - 1), n * (m * 2) is kept as written */
        int p = size_prec(d);
        const char *l = size_text(a, d->a), *r = size_text(a, d->b);
        bool pl = size_prec(d->a) < p, pr = size_prec(d->b) <= p;
        return arena_printf(a, "%s%s%s %s %s%s%s", pl ? "(" : "", l, pl ? ")" : "", ast_op_spelling[d->op],
                            pr ? "(" : "", r, pr ? ")" : "");
    }
    default: return "(expression)";
    }
}

static void dump_type(FILE *o, const Node *t) {
    fputs(t->name, o);
    if (!t->dims) return;
    fputc('[', o);
    Arena a;
    arena_init(&a);
    for (const Node *d = t->dims; d; d = d->next) {
        fputs(size_text(&a, d), o);
        if (d->next) fputs(", ", o);
    }
    arena_free(&a);
    fputc(']', o);
}

static void dump_str(FILE *o, const char *s) {
    fputc('"', o);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", o); break;
        case '\\': fputs("\\\\", o); break;
        case '\n': fputs("\\n", o); break;
        case '\t': fputs("\\t", o); break;
        case '\r': fputs("\\r", o); break;
        default:
            if (*p < 0x20 || *p == 0x7f) fprintf(o, "\\x%02x", *p);
            else fputc(*p, o);
        }
    }
    fputc('"', o);
}

static void dump(FILE *o, const Node *n, int ind);

static void child(FILE *o, const Node *n, int ind) {
    fputc('\n', o);
    if (n) dump(o, n, ind);
    else fprintf(o, "%*s_", ind, "");
}

/* A statement list shown as (block ...). */
static void dump_body(FILE *o, const Node *body, int ind) {
    fprintf(o, "\n%*s(block", ind, "");
    for (const Node *s = body; s; s = s->next) child(o, s, ind + 2);
    fputc(')', o);
}

static void dump_param(FILE *o, const Node *n) {
    fprintf(o, "(param %s", n->name);
    if (n->type) {
        fputc(' ', o);
        dump_type(o, n->type);
    }
    fputc(')', o);
}

static void dump(FILE *o, const Node *n, int ind) {
    fprintf(o, "%*s", ind, "");
    switch (n->kind) {
    case N_INT: fprintf(o, "(int %s)", n->text ? n->text : "?"); return;
    case N_FLOAT: fprintf(o, "(float %s)", n->text ? n->text : "?"); return;
    case N_BOOL: fprintf(o, "(bool %s)", n->ival ? "true" : "false"); return;
    case N_STR:
        fputs("(str ", o);
        dump_str(o, n->sval ? n->sval : "");
        fputc(')', o);
        return;
    case N_IDENT: fprintf(o, "(ident %s)", n->name); return;
    case N_TYPE:
        fputs("(type ", o);
        dump_type(o, n);
        fputc(')', o);
        return;
    case N_ANYSIZE: fputs("(size ?)", o); return;
    case N_PARAM: dump_param(o, n); return;
    case N_UNARY: {
        const char *s = ast_op_spelling[n->op];
        if (strncmp(s, "unary ", 6) == 0) s += 6;
        fprintf(o, "(unary %s", s);
        child(o, n->a, ind + 2);
        break;
    }
    case N_BINARY:
        fprintf(o, "(binary %s", ast_op_spelling[n->op]);
        child(o, n->a, ind + 2);
        child(o, n->b, ind + 2);
        break;
    case N_TERNARY:
        fputs("(ternary", o);
        child(o, n->a, ind + 2);
        child(o, n->b, ind + 2);
        child(o, n->c, ind + 2);
        break;
    case N_CALL:
        fprintf(o, "(call %s", n->name);
        for (const Node *a = n->args; a; a = a->next) child(o, a, ind + 2);
        break;
    case N_NAMEDARG:
        fprintf(o, "(named %s", n->name);
        child(o, n->a, ind + 2);
        break;
    case N_INDEX:
        fputs("(index", o);
        child(o, n->a, ind + 2);
        for (const Node *a = n->args; a; a = a->next) child(o, a, ind + 2);
        break;
    case N_SLICE:
        fputs("(slice", o);
        child(o, n->a, ind + 2);
        child(o, n->b, ind + 2);
        if (n->c) child(o, n->c, ind + 2);
        break;
    case N_LAMBDA:
        fputs("(lambda", o);
        for (const Node *p = n->params; p; p = p->next) {
            fputc(' ', o);
            dump_param(o, p);
        }
        child(o, n->a, ind + 2);
        break;
    case N_LET:
    case N_VAR:
        fprintf(o, "(%s %s", n->kind == N_LET ? "let" : "var", n->name);
        if (n->type) {
            fputc(' ', o);
            dump_type(o, n->type);
        }
        child(o, n->a, ind + 2);
        break;
    case N_TUPLE:
        fputs("(tuple", o);
        for (const Node *a = n->args; a; a = a->next) {
            if (a->kind == N_TYPE) {
                fputc(' ', o);
                dump_type(o, a);
            } else {
                child(o, a, ind + 2);
            }
        }
        break;
    case N_LETTUPLE:
        fputs(n->ival ? "(var (" : "(let (", o);
        for (const Node *a = n->args; a; a = a->next) fprintf(o, "%s%s", a == n->args ? "" : " ", a->name);
        fputc(')', o);
        child(o, n->a, ind + 2);
        break;
    case N_ASSIGN:
        fprintf(o, "(assign %s", n->name);
        child(o, n->a, ind + 2);
        break;
    case N_UPDATE:
        fputs("(update", o);
        child(o, n->b, ind + 2);
        child(o, n->a, ind + 2);
        break;
    case N_IF:
        fputs("(if", o);
        child(o, n->a, ind + 2);
        dump_body(o, n->body, ind + 2);
        if (n->els) {
            fprintf(o, "\n%*s(else", ind + 2, "");
            if (n->els->kind == N_BLOCK) dump_body(o, n->els->body, ind + 4);
            else child(o, n->els, ind + 4);
            fputc(')', o);
        }
        break;
    case N_FOR:
        fprintf(o, "(for %s", n->name);
        child(o, n->a, ind + 2);
        child(o, n->b, ind + 2);
        dump_body(o, n->body, ind + 2);
        break;
    case N_WHILE:
        fputs("(while", o);
        child(o, n->a, ind + 2);
        dump_body(o, n->body, ind + 2);
        break;
    case N_RETURN:
        fputs("(return", o);
        if (n->a) child(o, n->a, ind + 2);
        break;
    case N_EXPRSTMT:
        fputs("(expr", o);
        child(o, n->a, ind + 2);
        break;
    case N_BLOCK:
        fputs("(block", o);
        for (const Node *s = n->body; s; s = s->next) child(o, s, ind + 2);
        break;
    case N_FN:
        fprintf(o, "(fn %s", n->name);
        for (const Node *p = n->params; p; p = p->next) child(o, p, ind + 2);
        if (n->type && n->type->kind == N_TUPLE) {
            fprintf(o, "\n%*s(ret (tuple", ind + 2, "");
            for (const Node *t = n->type->args; t; t = t->next) {
                fputc(' ', o);
                dump_type(o, t);
            }
            fputs("))", o);
        } else if (n->type) {
            fprintf(o, "\n%*s(ret ", ind + 2, "");
            dump_type(o, n->type);
            fputc(')', o);
        }
        if (n->a) child(o, n->a, ind + 2);
        else dump_body(o, n->body, ind + 2);
        break;
    case N_PROGRAM:
        fputs("(program", o);
        for (const Node *f = n->body; f; f = f->next) child(o, f, ind + 2);
        break;
    }
    fputc(')', o);
}

void ast_dump(FILE *out, const Node *n) {
    if (!n) {
        fputs("(null)\n", out);
        return;
    }
    dump(out, n, 0);
    fputc('\n', out);
}
