/* The nesting limit (NEST_LIMIT, docs/language.md "Limits") holds on a 1 MiB stack, the
   size of a small thread's (a Python thread's may be): for each shape of nesting, the
   deepest program the compiler accepts goes through the whole pipeline (parse, sema,
   the IR printer, fusion, CUDA emission) on a thread with a 1 MiB stack and runs on the
   CPU backend, and one level more is a compile error with a location. Run under ASan too
   (make check), where frames are largest. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir.h"
#include "compiler/kernel.h"
#include "exec/exec.h"
#include "lang/ast.h"

static int failures, checks;
#define CHECK(c)                                                                           \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(c)) {                                                                        \
            failures++;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);          \
        }                                                                                  \
    } while (0)

/* ---- programs ------------------------------------------------------------------------ */

typedef struct Buf {
    char *s;
    size_t n, cap;
} Buf;

static void put(Buf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->s ? b->s + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if ((size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        b->cap = 2 * (b->cap + (size_t)k + 64);
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
}

static void rep(Buf *b, const char *s, int n) {
    for (int i = 0; i < n; i++) put(b, "%s", s);
}

/* One shape of nesting: its program at nesting n, and (if not NULL) what the deepest
   one prints. */
typedef struct Shape {
    const char *name;
    const char *open, *leaf, *close; /* the expression: open^n leaf close^n */
    int per;                         /* levels of nesting one repetition adds */
    const char *(*want)(int n);
} Shape;

static const char *const prelude =
    "fn sq(v: f32) -> f32 = v * 1.5;\n"
    "fn deep(x: f32[k]) -> f32[k] = -(-(-(-(-(-(-(-(-(-x)))))))));\n"
    "fn main() {\n"
    "    let x = linspace(0.0, 1.0, 4);\n"
    "    let s: f32 = 0.5;\n"
    "    let i = iota(4);\n";

static const char *want_x_or_neg(int n) { return n % 2 ? "[-0 -0.333333343 -0.666666687 -1]\n" : "[0 0.333333343 0.666666687 1]\n"; }
static const char *want_s_or_neg(int n) { return n % 2 ? "-0.5\n" : "0.5\n"; }
static const char *want_x(int n) { return (void)n, "[0 0.333333343 0.666666687 1]\n"; }
static const char *want_iota(int n) { return (void)n, "[0 1 2 3]\n"; }
static const char *want_zero(int n) { return (void)n, "0\n"; }
static const char *want_sum(int n) { return n % 2 ? "-2\n" : "2\n"; }
static const char *want_neg_x(int n) { return (void)n, "[-0 -0.333333343 -0.666666687 -1]\n"; }

static const Shape shapes[] = {
    {"unary minus on an array", "-", "x", "", 1, want_x_or_neg},
    {"unary minus on a host scalar", "-", "s", "", 1, want_s_or_neg},
    {"binary, leaning left", "", "x", " + x", 1, NULL},
    {"binary, leaning right", "(x + ", "x", ")", 1, NULL},
    {"builtin calls", "sin(", "x", ")", 1, NULL},
    {"user calls (inlined)", "sq(", "x", ")", 1, NULL},
    {"user calls with deep bodies", "deep(", "x", ")", 10, want_x},
    {"scalar indices", "i[", "0", "]", 1, want_zero},
    {"gathers", "i[", "i", "]", 1, want_iota},
    {"slices", "", "x", "[0:]", 1, want_x},
    {"parentheses in an index", "i[((((((((((", "0", "))))))))))]", 11, want_zero},
    {"a lambda's body", "reduce(|a, b| a + ", "-b", ", 0.0, x)", 1, want_sum},
    {"maps of lambdas", "map(|a| a * 1.0, ", "x", ")", 1, want_x},
    {"conditional expressions", "s > 0.0 ? ", "x", " : x", 1, want_x},
    {"if blocks", "if s > 0.0 { ", "print(-x);", " }", 1, want_neg_x},
};

static char *program(const Shape *sh, int n) {
    Buf b = {0};
    put(&b, "%s", prelude);
    if (sh->want == want_neg_x) {
        put(&b, "    ");
        rep(&b, sh->open, n);
        put(&b, "%s", sh->leaf);
        rep(&b, sh->close, n);
        put(&b, "\n}\n");
    } else if (sh->close[0] == ',') { /* the lambda: its body is what nests */
        put(&b, "    print(%s", sh->open);
        rep(&b, "-", n);
        put(&b, "b%s);\n}\n", sh->close);
    } else {
        put(&b, "    print(");
        rep(&b, sh->open, n);
        put(&b, "%s", sh->leaf);
        rep(&b, sh->close, n);
        put(&b, ");\n}\n");
    }
    return b.s;
}

/* ---- the pipeline, on a 1 MiB stack ------------------------------------------------- */

typedef struct Job {
    const char *text;
    bool run;       /* also run it on the CPU backend */
    int errors;     /* compile errors */
    char msgs[512]; /* the first of them */
    bool ran;
    char out[256];  /* what it printed */
} Job;

static void *pipeline(void *p) {
    Job *j = p;
    Arena a;
    arena_init(&a);
    char *msgs = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&msgs, &len);
    Diag d;
    diag_init(&d, err);
    Compiled c;
    Program *prog = pipeline_text(&c, &a, &d, "t.cuk", j->text, STAGE_CUDA) ? c.prog : NULL;
    j->errors = d.errors;
    if (prog) {
        FILE *null = fopen("/dev/null", "w");
        ir_print(null, prog);
        planset_print(null, c.plans);
        fclose(null);
        const char *cuda = pipeline_cuda_program(&c);
        if (!cuda || !strstr(cuda, "__global__")) j->errors = -1;
        if (j->run) {
            char *out = NULL;
            size_t olen = 0;
            FILE *o = open_memstream(&out, &olen);
            RtErr re;
            Arr *res = NULL;
            j->ran = cpu_run(program_find(prog, "main"), NULL, &res, o, &re);
            fclose(o);
            snprintf(j->out, sizeof j->out, "%s", out ? out : "");
            if (!j->ran) fprintf(stderr, "run-time error: %s\n", re.msg);
            free(out);
            arr_release(res);
        }
    }
    fclose(err);
    snprintf(j->msgs, sizeof j->msgs, "%s", msgs ? msgs : "");
    free(msgs);
    arena_free(&a);
    return NULL;
}

static void on_small_stack(Job *j) {
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    CHECK(pthread_attr_setstacksize(&at, (size_t)1 << 20) == 0);
    CHECK(pthread_create(&t, &at, pipeline, j) == 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&at);
}

static bool compiles(const Shape *sh, int n) {
    Job j = {.text = program(sh, n)};
    on_small_stack(&j);
    free((char *)j.text);
    return j.errors == 0;
}

static void test_shape(const Shape *sh) {
    /* The deepest program that compiles... */
    int lo = 1, hi = 2 * NEST_LIMIT;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (compiles(sh, mid)) lo = mid;
        else hi = mid - 1;
    }
    int n = lo;
    /* ...nests about as deep as the limit says (a few levels go to main and print)... */
    CHECK((n + 1) * sh->per > NEST_LIMIT - 16 && n * sh->per <= NEST_LIMIT);
    /* ...runs... */
    Job j = {.text = program(sh, n), .run = true};
    on_small_stack(&j);
    CHECK(j.errors == 0 && j.ran);
    if (sh->want) CHECK(strcmp(j.out, sh->want(n)) == 0);
    if (j.errors || !j.ran || (sh->want && strcmp(j.out, sh->want(n))))
        fprintf(stderr, "%s, %d deep: errors %d, printed %s%s", sh->name, n, j.errors, j.out, j.msgs);
    free((char *)j.text);
    /* ...and one level more is an error that says where and what to do. */
    Job k = {.text = program(sh, n + 1)};
    on_small_stack(&k);
    CHECK(k.errors == 1);
    CHECK(strncmp(k.msgs, "t.cuk:", 6) == 0 && strstr(k.msgs, ": error: "));
    CHECK(strstr(k.msgs, "too deeply") || strstr(k.msgs, " deep once calls"));
    CHECK(strstr(k.msgs, "let") || strstr(k.msgs, "var") || strstr(k.msgs, "function"));
    if (k.errors != 1) fprintf(stderr, "%s, %d deep: %s", sh->name, n + 1, k.msgs);
    free((char *)k.text);
}

/* A long chain of lets, each used once, is bound into one expression until it would
   get too deep; then it is stored, so any number of them compiles. */
static void test_let_chain(void) {
    Buf b = {0};
    put(&b, "%s    let a0 = x;\n", prelude);
    for (int k = 0; k < 4 * NEST_LIMIT; k++) put(&b, "    let a%d = -a%d;\n", k + 1, k);
    put(&b, "    print(a%d);\n}\n", 4 * NEST_LIMIT);
    Job j = {.text = b.s, .run = true};
    on_small_stack(&j);
    CHECK(j.errors == 0 && j.ran && strcmp(j.out, want_x(0)) == 0);
    if (j.errors || !j.ran || strcmp(j.out, want_x(0))) fprintf(stderr, "let chain: %s%s", j.out, j.msgs);
    free(b.s);
}

int main(void) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) test_shape(&shapes[i]);
    test_let_chain();
    if (failures) {
        fprintf(stderr, "test_deep: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("test_deep: ok (%d checks)\n", checks);
    return 0;
}
