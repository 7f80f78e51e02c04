/* Unit tests for the front end: lexer, grammar, AST shape, ast_dump, diagnostics and
   src_load. Exits nonzero (after printing what failed) if anything is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "tokens.h"

static int failures;

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            failures++;                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
        }                                                                         \
    } while (0)

/* Parses text; returns the program and leaves the messages in *msgs (malloc'ed). */
static Node *parse(Arena *a, const char *text, char **msgs, int *nerr) {
    Src *src = NEW(a, Src);
    src_from_string(a, "t.cuk", text, src);
    size_t len;
    FILE *out = open_memstream(msgs, &len);
    Diag d;
    diag_init(&d, out);
    Node *p = parse_program(a, &d, src);
    fclose(out);
    *nerr = d.errors;
    return p;
}

static char *dump_str(const Node *n) {
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    ast_dump(f, n);
    fclose(f);
    return buf;
}

/* A copy of s without the indentation at the start of each line, so that fragments
   can be matched wherever they sit in the tree. */
static char *unindent(const char *s) {
    char *r = malloc(strlen(s) + 1), *q = r;
    bool bol = true;
    for (; *s; s++) {
        if (bol && *s == ' ') continue;
        bol = *s == '\n';
        *q++ = *s;
    }
    *q = 0;
    return r;
}

/* Parses a valid program and checks that its dump contains every fragment. */
static void expect_dump(const char *text, const char *const *frags) {
    Arena a;
    arena_init(&a);
    char *msgs;
    int nerr;
    Node *p = parse(&a, text, &msgs, &nerr);
    if (nerr) {
        failures++;
        fprintf(stderr, "unexpected errors for:\n%s\n%s", text, msgs);
    } else {
        char *d = dump_str(p);
        char *du = unindent(d);
        for (int i = 0; frags[i]; i++) {
            char *fu = unindent(frags[i]);
            bool found = strstr(du, fu) != NULL;
            free(fu);
            if (!found) {
                failures++;
                fprintf(stderr, "dump of:\n%s\nlacks:\n%s\nit is:\n%s\n", text, frags[i], d);
            }
        }
        free(du);
        free(d);
    }
    free(msgs);
    arena_free(&a);
}

/* Parses an invalid program; the messages must contain want (e.g. "t.cuk:2:9: error:
   unexpected ';'") and there must be nerr_want errors (-1: any). */
static void expect_error(const char *text, const char *want, int nerr_want) {
    Arena a;
    arena_init(&a);
    char *msgs;
    int nerr;
    parse(&a, text, &msgs, &nerr);
    if (!strstr(msgs, want) || (nerr_want >= 0 && nerr != nerr_want) || nerr == 0) {
        failures++;
        fprintf(stderr, "for:\n%s\nwanted %d error(s) with:\n%s\ngot %d:\n%s\n", text, nerr_want,
                want, nerr, msgs);
    }
    free(msgs);
    arena_free(&a);
}

static int tree_depth(const Node *n) {
    return n ? n->depth : 0;
}

static const char *design_example =
    "// saxpy.cuk\n"
    "fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] {\n"
    "    return a * x + y;\n"
    "}\n"
    "\n"
    "fn sq(v: f32) -> f32 = v * v;            // expression body\n"
    "\n"
    "fn rms(x: f32[n]) -> f32 {\n"
    "    return sqrt(sum(sq(x)) / f32(n));    // scalar fn applied elementwise\n"
    "}\n"
    "\n"
    "fn softmax(x: f32[r, c]) -> f32[r, c] {\n"
    "    let e = exp(x - max(x, axis=1, keepdims=true));\n"
    "    return e / sum(e, axis=1, keepdims=true);\n"
    "}\n"
    "\n"
    "fn main() {\n"
    "    let n = 1 << 20;\n"
    "    let x = linspace(0.0, 1.0, n);\n"
    "    let y = rand(n, seed=7);\n"
    "    let z = saxpy(2.0, x, y);\n"
    "    print(sum(z));\n"
    "    print(cumsum(x)[n - 1]);\n"
    "    var acc = zeros(n);\n"
    "    for i in 0..10 {\n"
    "        acc = acc + scan(|a, b| a + b, 0.0, z) * f32(i);\n"
    "    }\n"
    "    save(\"acc.npy\", acc);\n"
    "}\n";

static void test_design_example(void) {
    Arena a;
    arena_init(&a);
    char *msgs;
    int nerr;
    Node *p = parse(&a, design_example, &msgs, &nerr);
    CHECK(nerr == 0);
    if (nerr) fputs(msgs, stderr);
    free(msgs);
    CHECK(p && p->kind == N_PROGRAM);
    if (!p) return;
    const char *names[] = {"saxpy", "sq", "rms", "softmax", "main"};
    int i = 0;
    Node *fn[5] = {0};
    for (Node *f = p->body; f; f = f->next, i++) {
        CHECK(f->kind == N_FN);
        if (i < 5) {
            CHECK(strcmp(f->name, names[i]) == 0);
            fn[i] = f;
        }
    }
    CHECK(i == 5);
    if (i != 5) return;

    /* saxpy: params with types and dims, return type, a return statement. */
    Node *sx = fn[0];
    CHECK(sx->loc.line == 2 && sx->loc.col == 1);
    Node *pa = sx->params;
    CHECK(pa->kind == N_PARAM && !strcmp(pa->name, "a") && !strcmp(pa->type->name, "f32") &&
          !pa->type->dims);
    Node *px = pa->next;
    CHECK(px && px->type->dims && px->type->dims->kind == N_IDENT &&
          !strcmp(px->type->dims->name, "n"));
    CHECK(sx->type && !strcmp(sx->type->name, "f32") && sx->type->dims);
    Node *ret = sx->body;
    CHECK(ret->kind == N_RETURN && ret->loc.line == 3 && ret->loc.col == 5);
    Node *add = ret->a;
    CHECK(add->kind == N_BINARY && add->op == AOP_ADD);
    CHECK(add->loc.line == 3 && add->loc.col == 18); /* at the operator */
    CHECK(add->a->kind == N_BINARY && add->a->op == AOP_MUL);

    /* sq: expression body. */
    CHECK(fn[1]->a && fn[1]->a->kind == N_BINARY && fn[1]->body == NULL);

    /* rms: nested calls, a cast spelled as a call. */
    Node *sqrtc = fn[2]->body->a;
    CHECK(sqrtc->kind == N_CALL && !strcmp(sqrtc->name, "sqrt"));
    Node *div = sqrtc->args;
    CHECK(div->kind == N_BINARY && div->op == AOP_DIV);
    CHECK(div->b->kind == N_CALL && !strcmp(div->b->name, "f32"));

    /* softmax: 2-D types, named arguments. */
    CHECK(fn[3]->params->type->dims->next && !strcmp(fn[3]->params->type->dims->next->name, "c"));
    Node *let = fn[3]->body;
    CHECK(let->kind == N_LET && !strcmp(let->name, "e"));
    Node *maxc = let->a->args->b;
    CHECK(maxc->kind == N_CALL && !strcmp(maxc->name, "max"));
    Node *axis = maxc->args->next;
    CHECK(axis->kind == N_NAMEDARG && !strcmp(axis->name, "axis") && axis->a->ival == 1);
    CHECK(axis->next->kind == N_NAMEDARG && axis->next->a->kind == N_BOOL &&
          axis->next->a->ival == 1);

    /* main: let, literals, index of a call, var, for, assign, lambda, string. */
    Node *s = fn[4]->body;
    CHECK(s->kind == N_LET && s->a->op == AOP_SHL && s->a->b->ival == 20);
    s = s->next;
    CHECK(s->a->args->kind == N_FLOAT && s->a->args->fval == 0.0 &&
          !strcmp(s->a->args->next->text, "1.0"));
    s = s->next->next->next->next; /* print(cumsum(x)[n - 1]) */
    CHECK(s->kind == N_EXPRSTMT && s->a->kind == N_CALL);
    Node *idx = s->a->args;
    CHECK(idx->kind == N_INDEX && idx->a->kind == N_CALL && idx->args->kind == N_BINARY);
    s = s->next;
    CHECK(s->kind == N_VAR && !strcmp(s->name, "acc"));
    s = s->next;
    CHECK(s->kind == N_FOR && !strcmp(s->name, "i") && s->a->ival == 0 && s->b->ival == 10);
    Node *as = s->body;
    CHECK(as->kind == N_ASSIGN && !strcmp(as->name, "acc"));
    Node *scan = as->a->b->a;
    CHECK(scan->kind == N_CALL && !strcmp(scan->name, "scan"));
    Node *lam = scan->args;
    CHECK(lam->kind == N_LAMBDA && lam->params && !strcmp(lam->params->name, "a") &&
          !lam->params->type && lam->params->next && lam->a->op == AOP_ADD);
    s = s->next;
    CHECK(s->a->args->kind == N_STR && !strcmp(s->a->args->sval, "acc.npy"));
    CHECK(s->next == NULL);

    char *d = dump_str(p);
    CHECK(strncmp(d, "(program\n  (fn saxpy\n    (param a f32)\n    (param x f32[n])", 59) == 0);
    CHECK(strstr(d, "(lambda (param a) (param b)\n"));
    free(d);
    arena_free(&a);
}

static void test_expressions(void) {
    /* Precedence and associativity. */
    expect_dump("fn f() = -x ** 2;", (const char *const[]){
        "(unary -\n    (binary **\n      (ident x)\n      (int 2)))", NULL});
    expect_dump("fn f() = 2 ** 3 ** 2;", (const char *const[]){
        "(binary **\n    (int 2)\n    (binary **\n      (int 3)\n      (int 2)))", NULL});
    expect_dump("fn f() = a - b - c;", (const char *const[]){
        "(binary -\n    (binary -\n      (ident a)\n      (ident b))\n    (ident c))", NULL});
    expect_dump("fn f() = a + b * c;", (const char *const[]){
        "(binary +\n    (ident a)\n    (binary *", NULL});
    expect_dump("fn f() = a || b && c | d ^ e & g == h < i << j + k * l;",
                (const char *const[]){"(binary ||", "(binary &&", "(binary |", "(binary ^",
                                      "(binary &", "(binary ==", "(binary <", "(binary <<",
                                      "(binary +", "(binary *", NULL});
    expect_dump("fn f() = c ? a : d ? b : e;", (const char *const[]){
        "(ternary\n    (ident c)\n    (ident a)\n    (ternary", NULL});
    expect_dump("fn f() = !a != ~b;", (const char *const[]){
        "(binary !=\n    (unary !\n      (ident a))\n    (unary ~\n      (ident b)))", NULL});
    expect_dump("fn f() = (a + b) * c;", (const char *const[]){
        "(binary *\n    (binary +", NULL});
    expect_dump("fn f() = -x[0];", (const char *const[]){"(unary -\n    (index", NULL});
    expect_dump("fn f() = a >= b && c <= d || e > g;", (const char *const[]){
        "(binary >=", "(binary <=", "(binary >", NULL});
    expect_dump("fn f() = a % b / c >> 1;", (const char *const[]){"(binary >>", "(binary /",
                                                                 "(binary %", NULL});
    /* Literals. */
    expect_dump("fn f() = 0xFF + 1e-3 + 2.5e10 + 1.5 + true + false;",
                (const char *const[]){"(int 0xFF)", "(float 1e-3)", "(float 2.5e10)",
                                      "(float 1.5)", "(bool true)", "(bool false)", NULL});
    expect_dump("fn f() = \"a\\\"b\\\\c\\nd\\te\";",
                (const char *const[]){"(str \"a\\\"b\\\\c\\nd\\te\")", NULL});
    /* Slices and indexing. */
    expect_dump("fn f() { x[i]; x[a:b]; x[::2]; x[::-1]; x[i, :]; x[:, 0]; x[a:b:s]; }",
                (const char *const[]){
                    "(index\n        (ident x)\n        (ident i))",
                    "(slice\n          (ident a)\n          (ident b))",
                    "(slice\n          _\n          _\n          (int 2))",
                    "(slice\n          _\n          _\n          (unary -",
                    "(ident i)\n        (slice\n          _\n          _)",
                    "(slice\n          _\n          _)\n        (int 0))",
                    "(slice\n          (ident a)\n          (ident b)\n          (ident s))", NULL});
    /* Lambdas: typed params, body extends right, zero-arg. */
    expect_dump("fn f() = reduce(|a: f32, b: f32| a + b ? 1 : 2, 0.0, x);",
                (const char *const[]){"(lambda (param a f32) (param b f32)\n      (ternary", NULL});
    expect_dump("fn f() = g(|| 1);", (const char *const[]){"(lambda\n      (int 1))", NULL});
    /* Calls: casts are calls; trailing commas. */
    expect_dump("fn f(a: i32,) = f32(a,);", (const char *const[]){"(call f32\n    (ident a))",
                                                                NULL});
}

static void test_statements(void) {
    expect_dump("fn f(n: i64, m: f32[n, 4]) -> bool {\n"
                "  let a: f32 = 1.0;\n"
                "  var t: f32[n] = zeros(n);\n"
                "  t = t + a;\n"
                "  if a > 0.0 { return true; } else if a < 0.0 { return false; } else { }\n"
                "  while t < 3.0 { t = t + 1.0; }\n"
                "  for i in 0..n { }\n"
                "  return;\n"
                "}\n",
                (const char *const[]){"(param m f32[n, 4])", "(ret bool)", "(let a f32\n",
                                      "(var t f32[n]\n", "(assign t\n",
                                      "(if\n", "(else\n        (if\n", "(else\n            (block))",
                                      "(while\n", "(for i\n", "(return)", NULL});
    /* Comments anywhere. */
    expect_dump("/* a */ fn /* b */ f() // c\n{ /* d\n e */ }\n",
                (const char *const[]){"(fn f\n    (block))", NULL});
}

static void test_errors(void) {
    expect_error("fn f() {\n  let x = ;\n}\n", "t.cuk:2:11: error: unexpected ';', expected an expression\n  let x = ;\n          ^\n", 1);
    expect_error("fn f() {\n  let x = 1\n  let y = 2;\n}\n",
                 "t.cuk:3:3: error: unexpected 'let', expected ';' after the statement", 1);
    expect_error("fn f() {\n  return 1\n}\n",
                 "t.cuk:3:1: error: unexpected '}', expected ';' after the statement", 1);
    expect_error("fn f() {\n  let x = 1;\n", "t.cuk:2:13: error: unexpected end of file", 1);
    expect_error("fn f() = 1", "t.cuk:1:11: error: unexpected end of file, expected ';'", 1);
    /* Several errors, one per bad statement, none invented. */
    expect_error("fn f() {\n  let a = ;\n  let b = 1 +;\n  print(a)\n}\nfn g(x: ) { }\n",
                 "t.cuk:6:9: error: unexpected ')', expected a type", 4);
    expect_error("fn f() {\n  if x = 1 { a; }\n  b = ;\n}\n", "t.cuk:3:7: error: unexpected ';'", 2);
    expect_error("fn f() {\n\tlet x = 1 $ 2;\n}\n",
                 "t.cuk:2:12: error: unexpected character '$'\n\tlet x = 1 $ 2;\n\t          ^\n",
                 1);
    expect_error("fn f() { let x = a[]; }", "t.cuk:1:20: error: unexpected ']', expected an expression or ':'", 1);
    expect_error("fn f() { g(a b); }", "t.cuk:1:14: error: unexpected name 'b', expected ')' or ','", 1);
    expect_error("fn (x: f32) { }", "t.cuk:1:4: error: unexpected '(', expected a name", 1);
    expect_error("fn f() { } }", "t.cuk:1:12: error: unexpected '}', expected end of file or 'fn'", 1);
    expect_error("fn f() { for i in 0 10 { } }", "t.cuk:1:21: error: unexpected number '10', expected '..'", 1);
    expect_error("fn f() { x += 1; }", "t.cuk:1:12: error: '+=' is not supported", 1);
    /* Lexical errors. */
    expect_error("fn f() = 99999999999999999999;", "t.cuk:1:10: error: integer literal '99999999999999999999' is too large for i64", 1);
    expect_error("fn f() = 1e999;", "t.cuk:1:10: error: float literal '1e999' is out of range", 1);
    expect_error("fn f() = 0x;", "t.cuk:1:10: error: hex literal '0x' has no digits", 1);
    expect_error("fn f() = 0x1G;", "t.cuk:1:10: error: invalid digit 'G' in hex literal '0x1G'", 1);
    expect_error("fn f() = 12ab;", "t.cuk:1:10: error: invalid suffix 'ab' on integer literal", 1);
    expect_error("fn f() = \"abc;\n", "t.cuk:1:10: error: unterminated string literal", 1);
    expect_error("fn f() = 1; /* x\n y", "t.cuk:1:13: error: unterminated comment", 1);
    expect_error("fn f() = \"a\\qb\";", "t.cuk:1:12: error: unknown escape sequence '\\q'", 1);
    expect_error("fn f() = x \x01;", "t.cuk:1:12: error: unexpected control character 0x01", 1);
    expect_error("fn f() = caf\xc3\xa9;", "t.cuk:1:13: error: unexpected character '\xc3\xa9'", 1);
    expect_error("fn f() = x\xff;", "t.cuk:1:11: error: unexpected byte 0xFF (not valid UTF-8)", 1);
    expect_error("fn f() = .5;", "a float literal needs a digit before '.'", 1);
}

static void test_int_max_ok(void) {
    Arena a;
    arena_init(&a);
    char *msgs;
    int nerr;
    Node *p = parse(&a, "fn f() = 9223372036854775807 + 0..1;", &msgs, &nerr);
    (void)p;
    /* 0..1 is not an expression: only the parse error, no literal error. */
    CHECK(nerr == 1 && strstr(msgs, "unexpected '..'"));
    free(msgs);
    p = parse(&a, "fn f() = 9223372036854775807 + 0x7fffffffffffffff;", &msgs, &nerr);
    CHECK(nerr == 0 && p->body->a->a->ival == INT64_MAX && p->body->a->b->ival == INT64_MAX);
    free(msgs);
    arena_free(&a);
}

static char *repeat(const char *pre, const char *unit, int n, const char *mid, const char *unit2,
                    int n2, const char *post) {
    size_t len = strlen(pre) + strlen(unit) * (size_t)n + strlen(mid) +
                 strlen(unit2) * (size_t)n2 + strlen(post) + 1;
    char *s = malloc(len), *p = s;
    p += sprintf(p, "%s", pre);
    for (int i = 0; i < n; i++) p += sprintf(p, "%s", unit);
    p += sprintf(p, "%s", mid);
    for (int i = 0; i < n2; i++) p += sprintf(p, "%s", unit2);
    sprintf(p, "%s", post);
    return s;
}

static void expect_deep(char *text, bool ok) {
    Arena a;
    arena_init(&a);
    char *msgs;
    int nerr;
    Node *p = parse(&a, text, &msgs, &nerr);
    if (ok) {
        CHECK(nerr == 0);
    } else {
        char want[64];
        snprintf(want, sizeof want, "nested too deeply (limit %d)", NEST_LIMIT);
        CHECK(nerr == 1 && strstr(msgs, want));
    }
    CHECK(tree_depth(p) <= NEST_LIMIT + 2);
    if ((ok && nerr) || (!ok && (nerr != 1 || !strstr(msgs, "too deeply"))))
        fprintf(stderr, "for %.60s...: %.300s\n", text, msgs);
    free(msgs);
    free(text);
    arena_free(&a);
}

static void test_deep(void) {
    expect_deep(repeat("fn f() = 1", "+1", 1000000, "", "", 0, ";"), false);
    expect_deep(repeat("fn f() = ", "(", 100000, "1", ")", 100000, ";"), false);
    expect_deep(repeat("fn f() = ", "-", 100000, "1", "", 0, ";"), false);
    expect_deep(repeat("fn f() = 2", "**2", 100000, "", "", 0, ";"), false);
    expect_deep(repeat("fn f() = ", "c ? 1 : ", 100000, "0", "", 0, ";"), false);
    expect_deep(repeat("fn f() = ", "|a| ", 100000, "0", "", 0, ";"), false);
    expect_deep(repeat("fn f() = ", "g(", 100000, "0", ")", 100000, ";"), false);
    expect_deep(repeat("fn f() = 0", "[0]", 100000, "", "", 0, ";"), false);
    expect_deep(repeat("fn f() { ", "if c { ", 100000, "", "}", 100000, " }"), false);
    expect_deep(repeat("fn f() { ", "while c { ", 100000, "", "}", 100000, " }"), false);
    /* At the limit is fine (an expression body of height h makes an N_FN node, which
       does not count); one more is not. */
    const int L = NEST_LIMIT;
    expect_deep(repeat("fn f() = 1", "+1", L - 1, "", "", 0, ";"), true);
    expect_deep(repeat("fn f() = 1", "+1", L, "", "", 0, ";"), false);
    expect_deep(repeat("fn f() = ", "-", L - 1, "x", "", 0, ";"), true);
    expect_deep(repeat("fn f() = ", "-", L, "x", "", 0, ";"), false);
    expect_deep(repeat("fn f() = ", "(", L, "1", ")", L, ";"), true);
    expect_deep(repeat("fn f() = ", "(", L + 1, "1", ")", L + 1, ";"), false);
    expect_deep(repeat("fn f() = ", "c ? 1 : ", L - 1, "0", "", 0, ";"), true);
    expect_deep(repeat("fn f() = ", "c ? 1 : ", L, "0", "", 0, ";"), false);
    expect_deep(repeat("fn f() = ", "g(1, ", L - 1, "0", ")", L - 1, ";"), true);
    expect_deep(repeat("fn f() = ", "g(1, ", L, "0", ")", L, ";"), false);
}

static void test_max_errors(void) {
    Arena a;
    arena_init(&a);
    char *text = repeat("fn f() {\n", "let x = ;\n", 200, "", "", 0, "}\n");
    Src src;
    src_from_string(&a, "t.cuk", text, &src);
    char *msgs;
    size_t len;
    FILE *out = open_memstream(&msgs, &len);
    Diag d;
    diag_init(&d, out);
    d.max_errors = 5;
    parse_program(&a, &d, &src);
    fclose(out);
    int shown = 0;
    for (char *p = msgs; (p = strstr(p, ": error: ")); p++) shown++;
    CHECK(shown == 5);
    CHECK(strstr(msgs, "too many errors"));
    free(msgs);
    free(text);
    arena_free(&a);
}

static void write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
}

static void expect_load(const char *path, bool ok, const char *want) {
    Arena a;
    arena_init(&a);
    char *msgs;
    size_t len;
    FILE *out = open_memstream(&msgs, &len);
    Diag d;
    diag_init(&d, out);
    Src s;
    bool r = src_load(&a, &d, path, &s);
    fclose(out);
    CHECK(r == ok);
    if (!strstr(msgs, want)) {
        failures++;
        fprintf(stderr, "src_load(%s): wanted '%s', got '%s'\n", path, want, msgs);
    }
    if (ok) CHECK(s.text[s.len] == 0);
    free(msgs);
    arena_free(&a);
}

static void test_src_load(void) {
    char dir[] = "/tmp/cuk_test_parse_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char p[4][128];
    for (int i = 0; i < 4; i++) snprintf(p[i], sizeof p[i], "%s/f%d.cuk", dir, i);
    write_file(p[0], "fn f() = 1;\n", 12);
    write_file(p[1], "fn f() = 1;\n\0x", 14);
    write_file(p[2], "fn f() {\n  x\xc3(\n}", 16);
    expect_load(p[0], true, "");
    expect_load(p[1], false, ":2:1: error: NUL byte in source");
    expect_load(p[2], false, ":2:4: error: invalid UTF-8 byte 0xC3");
    expect_load(p[3], false, "No such file or directory");
    expect_load(dir, false, "Is a directory");
    for (int i = 0; i < 3; i++) unlink(p[i]);
    rmdir(dir);
}

static void test_diag(void) {
    Arena a;
    arena_init(&a);
    Src src;
    src_from_string(&a, "d.cuk", "fn f() {\n\tlet \xc3\xa9 = 1;\n}\n", &src);
    char *msgs;
    size_t len;
    FILE *out = open_memstream(&msgs, &len);
    Diag d;
    diag_init(&d, out);
    Loc l = {&src, 2, 9, 17}; /* the '=' after a tab and a two-byte character */
    diag_error(&d, l, "bad %s", "thing");
    diag_note(&d, l, "see %d", 1);
    Loc none = {0};
    diag_error(&d, none, "no location");
    fclose(out);
    const char *want = "d.cuk:2:9: error: bad thing\n\tlet \xc3\xa9 = 1;\n\t      ^\n"
                       "d.cuk:2:9: note: see 1\n\tlet \xc3\xa9 = 1;\n\t      ^\n"
                       "error: no location\n";
    if (strcmp(msgs, want) != 0) {
        failures++;
        fprintf(stderr, "diag output:\n%s\nwanted:\n%s\n", msgs, want);
    }
    CHECK(d.errors == 2);
    free(msgs);
    arena_free(&a);
}

/* lang/tokens.h and the grammar's %token lines name the same tokens: a terminal missing
   from the table would vanish from "expected ..." lists, a row the grammar lacks would
   not compile (TK_NAME undefined) in parse.c. */
static void test_token_table(void) {
    static const char *const names[] = {
#define X(n, kind, text) #n,
        TOKENS(X)
#undef X
    };
    enum { N = sizeof names / sizeof names[0] };
    const char *dir = getenv("CUK_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/lang/grammar.y", dir ? dir : ".");
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return;
    int found[N] = {0}, declared = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "%token ", 7) != 0) continue;
        for (char *tok = strtok(line + 7, " .\n"); tok; tok = strtok(NULL, " .\n")) {
            declared++;
            int hit = 0;
            for (int i = 0; i < N; i++)
                if (strcmp(names[i], tok) == 0) found[i]++, hit = 1;
            if (!hit) fprintf(stderr, "grammar token %s is not in lang/tokens.h\n", tok);
            CHECK(hit);
        }
    }
    fclose(f);
    for (int i = 0; i < N; i++) CHECK(found[i] == 1);
    CHECK(declared == N);
}

int main(void) {
    test_token_table();
    test_diag();
    test_design_example();
    test_expressions();
    test_statements();
    test_errors();
    test_int_max_ok();
    test_deep();
    test_max_errors();
    test_src_load();
    if (failures) {
        fprintf(stderr, "test_parse: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_parse: ok\n");
    return 0;
}
