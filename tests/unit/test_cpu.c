/* Unit tests of the CPU backend: IR programs built by hand, run by cpu_run, checked
   through their printed output, returned arrays and run-time errors. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "kernels/philox.h"
#pragma GCC diagnostic pop

static int failures, checks;
#define CHECK(c)                                                                           \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(c)) {                                                                        \
            failures++;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);          \
        }                                                                                  \
    } while (0)
#define CHECK_STR(got, want)                                                               \
    do {                                                                                   \
        const char *g_ = (got), *w_ = (want);                                              \
        checks++;                                                                          \
        if (!g_ || strcmp(g_, w_) != 0) {                                                  \
            failures++;                                                                    \
            fprintf(stderr, "%s:%d: got\n%s\nwant\n%s\n", __FILE__, __LINE__,              \
                    g_ ? g_ : "(null)", w_);                                               \
        }                                                                                  \
    } while (0)

/* ---- a tiny IR builder ------------------------------------------------------------ */

static Arena ar;
static const Loc L0;

static Fn *fn_new(const char *name, int nparams, int nslots) {
    Fn *f = NEW(&ar, Fn);
    f->name = name;
    f->nparams = nparams;
    f->nslots = nslots;
    f->slots = NEWN(&ar, Slot, nslots > 0 ? nslots : 1);
    for (int i = 0; i < nslots; i++) {
        f->slots[i].name = arena_printf(&ar, "s%d", i);
        f->slots[i].dt = DT_I64;
    }
    f->ret_dt = DT_VOID;
    return f;
}

static Val *mk(Fn *f, OpKind op, DType dt, int rank, int nargs, ...) {
    Val *v = val_new(&ar, f, op, dt, rank, nargs, L0);
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) v->args[i] = va_arg(ap, Val *);
    va_end(ap);
    return v;
}
static Val *ci(Fn *f, int64_t x) {
    Val *v = mk(f, OP_CONST, DT_I64, 0, 0);
    v->c.i = x;
    return v;
}
static Val *cf(Fn *f, double x) {
    Val *v = mk(f, OP_CONST, DT_F32, 0, 0);
    v->c.f = x;
    return v;
}
static Val *cd(Fn *f, double x) {
    Val *v = mk(f, OP_CONST, DT_F64, 0, 0);
    v->c.f = x;
    return v;
}
static Val *sl(Fn *f, int slot, DType dt, int rank) {
    Val *v = mk(f, OP_SLOT, dt, rank, 0);
    v->slot = slot;
    return v;
}
static Val *arg(Fn *f, int k, DType dt) {
    Val *v = mk(f, OP_ARG, dt, 0, 0);
    v->slot = k;
    return v;
}
static Val *bin(Fn *f, OpKind op, Val *a, Val *b) {
    DType dt = ew_info[op].cls == OC_CMP ? DT_BOOL : a->dt;
    return mk(f, op, dt, a->rank > b->rank ? a->rank : b->rank, 2, a, b);
}
static Val *red(Fn *f, RedOp r, DType dt, Val *x, int axis, bool keep) {
    int rank = axis == AXIS_ALL ? (keep ? x->rank : 0) : (keep ? x->rank : x->rank - 1);
    Val *v = mk(f, OP_REDUCE, dt, rank, 1, x);
    v->red = r;
    v->axis = axis;
    v->keepdims = keep;
    return v;
}
static Val *scan(Fn *f, RedOp r, Val *x, int axis, bool excl) {
    Val *v = mk(f, OP_SCAN, x->dt, axis == AXIS_ALL ? 1 : x->rank, 1, x);
    v->red = r;
    v->axis = axis;
    v->exclusive = excl;
    return v;
}
static Val *iota(Fn *f, DType dt, int64_t n) { return mk(f, OP_IOTA, dt, 1, 1, ci(f, n)); }
static Val *reshape2(Fn *f, Val *x, int64_t a, int64_t b) {
    return mk(f, OP_RESHAPE, x->dt, 2, 3, x, ci(f, a), ci(f, b));
}

static Stmt *stm(StmtKind k, int slot, Val *v) {
    Stmt *s = NEW(&ar, Stmt);
    s->kind = k;
    s->slot = slot;
    s->v = v;
    return s;
}
static Stmt *seq(Stmt *first, ...) {
    va_list ap;
    va_start(ap, first);
    Stmt *t = first;
    for (Stmt *n; (n = va_arg(ap, Stmt *));) t = t->next = n;
    va_end(ap);
    return first;
}

/* Runs fn; returns what it printed (malloc'd); *ok says whether it succeeded. */
static char *run(Fn *fn, Arr **args, Arr **res, RtErr *err, bool *ok) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    Arr *r = NULL;
    *ok = cpu_run(fn, args, &r, out, err);
    fclose(out);
    if (res)
        *res = r;
    else
        arr_release(r);
    return buf;
}

/* Prints one statement's value: the output without its newline. */
static char *show(Fn *f, Val *v) {
    f->body = stm(S_PRINT, 0, v);
    RtErr e;
    bool ok;
    char *s = run(f, NULL, NULL, &e, &ok);
    if (!ok) {
        free(s);
        return strdup(e.msg);
    }
    size_t n = strlen(s);
    if (n && s[n - 1] == '\n') s[n - 1] = 0;
    return s;
}
/* The run-time error message of printing v ("" if none). */
static char *err_of(Fn *f, Val *v) {
    f->body = stm(S_PRINT, 0, v);
    RtErr e;
    bool ok;
    free(run(f, NULL, NULL, &e, &ok));
    return strdup(ok ? "" : e.msg);
}

static char *arr_str(const Arr *a) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    arr_print(out, a);
    fclose(out);
    if (len && buf[len - 1] == '\n') buf[len - 1] = 0;
    return buf;
}

static Arr *arr_f32(int rank, const int64_t *shape, const float *v) {
    Arr *a = arr_new(DT_F32, rank, shape);
    memcpy(a->data, v, sizeof(float) * (size_t)a->size);
    return a;
}

#define EXPECT(v, want)                                                                    \
    do {                                                                                   \
        char *s_ = show(f, (v));                                                           \
        CHECK_STR(s_, want);                                                               \
        free(s_);                                                                          \
    } while (0)
#define EXPECT_ERR(v, want)                                                                \
    do {                                                                                   \
        char *s_ = err_of(f, (v));                                                         \
        CHECK_STR(s_, want);                                                               \
        free(s_);                                                                          \
    } while (0)

/* ---- tests ------------------------------------------------------------------------- */

static void test_saxpy(void) {
    Fn *f = fn_new("saxpy", 3, 3);
    Val *a = sl(f, 0, DT_F32, 0), *x = sl(f, 1, DT_F32, 1), *y = sl(f, 2, DT_F32, 1);
    f->body = stm(S_RETURN, 0, bin(f, OP_ADD, bin(f, OP_MUL, a, x), y));
    int64_t n = 5000;
    Arr *args[3] = {arr_scalar(DT_F32, (Scalar){.f = 2}), arr_new(DT_F32, 1, &n),
                    arr_new(DT_F32, 1, &n)};
    for (int i = 0; i < n; i++) {
        ((float *)args[1]->data)[i] = (float)i;
        ((float *)args[2]->data)[i] = 0.5f;
    }
    RtErr e;
    bool ok;
    Arr *r = NULL;
    free(run(f, args, &r, &e, &ok));
    CHECK(ok && r && r->size == n && r->dt == DT_F32);
    bool good = r != NULL;
    for (int i = 0; good && i < n; i++) good = ((float *)r->data)[i] == 2.0f * (float)i + 0.5f;
    CHECK(good);
    arr_release(r);
    /* Broadcast mismatch. */
    int64_t m = 12;
    arr_release(args[2]);
    args[2] = arr_new(DT_F32, 1, &m);
    int64_t n10 = 10;
    arr_release(args[1]);
    args[1] = arr_new(DT_F32, 1, &n10);
    free(run(f, args, &r, &e, &ok));
    CHECK(!ok && r == NULL);
    CHECK_STR(e.msg, "shapes (10) and (12) cannot be broadcast together");
    for (int i = 0; i < 3; i++) arr_release(args[i]);
}

static void test_print(void) {
    int64_t s3 = 3, s22[2] = {2, 2}, s222[3] = {2, 2, 2}, s0 = 0;
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, h[3] = {0.5f, 1, 1.5f};
    Arr *a = arr_f32(1, &s3, v);
    char *s = arr_str(a);
    CHECK_STR(s, "[1 2 3]");
    free(s);
    arr_release(a);
    a = arr_f32(1, &s3, h);
    s = arr_str(a);
    CHECK_STR(s, "[0.5 1 1.5]");
    free(s);
    arr_release(a);
    a = arr_f32(2, s22, v);
    s = arr_str(a);
    CHECK_STR(s, "[[1 2]\n [3 4]]");
    free(s);
    arr_release(a);
    a = arr_f32(3, s222, v);
    s = arr_str(a);
    CHECK_STR(s, "[[[1 2]\n  [3 4]]\n\n [[5 6]\n  [7 8]]]");
    free(s);
    arr_release(a);
    a = arr_new(DT_I64, 1, &s0);
    s = arr_str(a);
    CHECK_STR(s, "[]");
    free(s);
    arr_release(a);
    struct {
        DType dt;
        Scalar v;
        const char *want;
    } sc[] = {
        {DT_F32, {.f = 0.1}, "0.100000001"},  {DT_F64, {.f = 0.1}, "0.10000000000000001"},
        {DT_BOOL, {.i = 1}, "true"},         {DT_BOOL, {.i = 0}, "false"},
        {DT_F32, {.f = NAN}, "nan"},         {DT_F64, {.f = -NAN}, "nan"},
        {DT_F64, {.f = -INFINITY}, "-inf"},  {DT_F32, {.f = INFINITY}, "inf"},
        {DT_I64, {.i = INT64_MIN}, "-9223372036854775808"},
        {DT_U64, {.u = UINT64_MAX}, "18446744073709551615"},
        {DT_I32, {.i = -7}, "-7"},           {DT_F32, {.f = 16777216}, "16777216"},
    };
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        a = arr_scalar(sc[i].dt, sc[i].v);
        s = arr_str(a);
        CHECK_STR(s, sc[i].want);
        free(s);
        arr_release(a);
    }
    /* Elision past 1000 elements, per axis. */
    int64_t n = 2000, s2[2] = {100, 100};
    a = arr_new(DT_I64, 1, &n);
    for (int i = 0; i < n; i++) ((int64_t *)a->data)[i] = i;
    s = arr_str(a);
    CHECK_STR(s, "[0 1 2 ... 1997 1998 1999]");
    free(s);
    arr_release(a);
    a = arr_new(DT_I64, 2, s2);
    for (int i = 0; i < 10000; i++) ((int64_t *)a->data)[i] = i;
    s = arr_str(a);
    CHECK_STR(s, "[[0 1 2 ... 97 98 99]\n [100 101 102 ... 197 198 199]\n [200 201 202 ... 297 "
                 "298 299]\n ...\n [9700 9701 9702 ... 9797 9798 9799]\n [9800 9801 9802 ... "
                 "9897 9898 9899]\n [9900 9901 9902 ... 9997 9998 9999]]");
    free(s);
    arr_release(a);
    a = arr_new(DT_BOOL, 1, &s3);
    memcpy(a->data, "\1\0\1", 3);
    s = arr_str(a);
    CHECK_STR(s, "[true false true]");
    free(s);
    arr_release(a);
}

static void test_generators(void) {
    Fn *f = fn_new("gen", 0, 1);
    EXPECT(iota(f, DT_I64, 5), "[0 1 2 3 4]");
    EXPECT(mk(f, OP_LINSPACE, DT_F32, 1, 3, cf(f, 0), cf(f, 1), ci(f, 5)), "[0 0.25 0.5 0.75 1]");
    EXPECT(mk(f, OP_LINSPACE, DT_F64, 1, 3, cd(f, 2), cd(f, 3), ci(f, 1)), "[2]");
    EXPECT(mk(f, OP_LINSPACE, DT_F64, 1, 3, cd(f, 0), cd(f, 1), ci(f, 0)), "[]");
    EXPECT(mk(f, OP_FULL, DT_F32, 2, 3, cf(f, 1.5), ci(f, 2), ci(f, 2)), "[[1.5 1.5]\n [1.5 1.5]]");
    EXPECT_ERR(mk(f, OP_FULL, DT_F32, 1, 2, cf(f, 0), ci(f, -3)),
               "negative dimensions are not allowed (got -3)");
    EXPECT_ERR(mk(f, OP_FULL, DT_F32, 1, 2, cf(f, 0), ci(f, (int64_t)1 << 62)),
               "cannot allocate an array of f32 with shape (4611686018427387904): out of memory");
    /* rand: element i is cuk_rand_f32(i, seed); the sum of 2^24 ones is exact. */
    Val *r = mk(f, OP_RAND, DT_F32, 1, 2, ci(f, 7), ci(f, 5000));
    f->body = stm(S_RETURN, 0, r);
    RtErr e;
    bool ok;
    Arr *res = NULL;
    free(run(f, NULL, &res, &e, &ok));
    CHECK(ok && res && res->size == 5000);
    bool good = res != NULL;
    for (int i = 0; good && i < 5000; i++)
        good = ((float *)res->data)[i] == cuk_rand_f32((uint64_t)i, 7);
    CHECK(good);
    arr_release(res);
    Val *rn = mk(f, OP_RANDN, DT_F64, 1, 2, ci(f, 3), ci(f, 100));
    f->body = stm(S_RETURN, 0, rn);
    free(run(f, NULL, &res, &e, &ok));
    CHECK(ok && res && ((double *)res->data)[99] == cuk_randn_f64(99, 3));
    arr_release(res);
    EXPECT(red(f, RED_SUM, DT_F32, mk(f, OP_FULL, DT_F32, 1, 2, cf(f, 1), ci(f, 1 << 24)),
               AXIS_ALL, false),
           "16777216");
    /* A broadcast generator: iota(3) against a (2, 3) full. */
    EXPECT(bin(f, OP_ADD, mk(f, OP_FULL, DT_I64, 2, 3, ci(f, 10), ci(f, 2), ci(f, 3)),
               iota(f, DT_I64, 3)),
           "[[10 11 12]\n [10 11 12]]");
}

static void test_casts(void) {
    Fn *f = fn_new("casts", 1, 1);
    int64_t n = 7;
    float v[7] = {1.9f, -1.9f, 3e9f, -3e9f, NAN, INFINITY, -0.5f};
    Arr *x = arr_f32(1, &n, v);
    f->body = stm(S_PRINT, 0, mk(f, OP_CAST, DT_I32, 1, 1, sl(f, 0, DT_F32, 1)));
    RtErr e;
    bool ok;
    char *s = run(f, &x, NULL, &e, &ok);
    CHECK_STR(s, "[1 -1 2147483647 -2147483648 0 2147483647 0]\n");
    free(s);
    f->body = stm(S_PRINT, 0, mk(f, OP_CAST, DT_U32, 1, 1, sl(f, 0, DT_F32, 1)));
    s = run(f, &x, NULL, &e, &ok);
    CHECK_STR(s, "[1 0 3000000000 0 0 4294967295 0]\n");
    free(s);
    f->body = stm(S_PRINT, 0, mk(f, OP_CAST, DT_BOOL, 1, 1, sl(f, 0, DT_F32, 1)));
    s = run(f, &x, NULL, &e, &ok);
    CHECK_STR(s, "[true true true true true true true]\n");
    free(s);
    arr_release(x);
    CHECK(scalar_cast((Scalar){.f = NAN}, DT_F64, DT_I64).i == 0);
    CHECK(scalar_cast((Scalar){.f = 1e300}, DT_F64, DT_I64).i == INT64_MAX);
    CHECK(scalar_cast((Scalar){.i = -1}, DT_I64, DT_U32).u == UINT32_MAX);
    CHECK(scalar_cast((Scalar){.i = (1LL << 53) + 1}, DT_I64, DT_F32).f == 9007199254740992.0);
    /* Integer ops follow ops.h: x / 0 = 0, wrapping overflow. */
    f = fn_new("intops", 0, 1);
    EXPECT(bin(f, OP_DIV, iota(f, DT_I64, 3), ci(f, 0)), "[0 0 0]");
    EXPECT(bin(f, OP_MUL, ci(f, INT64_MAX), ci(f, 2)), "-2");
}

static void test_reduce(void) {
    Fn *f = fn_new("red", 0, 1);
    Val *m = reshape2(f, iota(f, DT_F32, 12), 3, 4);
    EXPECT(red(f, RED_SUM, DT_F32, m, AXIS_ALL, false), "66");
    EXPECT(red(f, RED_SUM, DT_F32, m, 0, false), "[12 15 18 21]");
    EXPECT(red(f, RED_SUM, DT_F32, m, 1, false), "[6 22 38]");
    EXPECT(red(f, RED_SUM, DT_F32, m, 1, true), "[[6]\n [22]\n [38]]");
    EXPECT(red(f, RED_MAX, DT_F32, m, 0, false), "[8 9 10 11]");
    EXPECT(red(f, RED_MIN, DT_F32, m, 1, false), "[0 4 8]");
    EXPECT(red(f, RED_PROD, DT_F32, bin(f, OP_ADD, m, cf(f, 1)), 1, false), "[24 1680 11880]");
    EXPECT(red(f, RED_ARGMAX, DT_I64, m, 1, false), "[3 3 3]");
    EXPECT(red(f, RED_ARGMIN, DT_I64, m, AXIS_ALL, false), "0");
    EXPECT(red(f, RED_ANY, DT_BOOL, bin(f, OP_GT, m, cf(f, 10)), 0, false),
           "[false false false true]");
    EXPECT(red(f, RED_ALL, DT_BOOL, bin(f, OP_GE, m, cf(f, 0)), AXIS_ALL, false), "true");
    EXPECT(red(f, RED_SUM, DT_I64, iota(f, DT_I64, 100001), AXIS_ALL, false), "5000050000");
    /* sum of a bool array in i64: the input is converted chunk by chunk */
    EXPECT(red(f, RED_SUM, DT_I64, bin(f, OP_LT, iota(f, DT_I64, 5000), ci(f, 1234)), AXIS_ALL,
               false),
           "1234");
    /* NaN propagates; argmax gives the first NaN */
    Val *nanv = bin(f, OP_DIV, cf(f, 0), cf(f, 0));
    Val *withnan = mk(f, OP_SELECT, DT_F32, 1, 3, bin(f, OP_EQ, iota(f, DT_I64, 9000), ci(f, 4321)),
                      nanv, iota(f, DT_F32, 9000));
    EXPECT(red(f, RED_MAX, DT_F32, withnan, AXIS_ALL, false), "nan");
    EXPECT(red(f, RED_ARGMAX, DT_I64, withnan, AXIS_ALL, false), "4321");
    EXPECT(red(f, RED_ARGMAX, DT_I64, iota(f, DT_F32, 9000), AXIS_ALL, false), "8999");
    /* empty */
    Val *empty = iota(f, DT_F32, 0);
    EXPECT(red(f, RED_SUM, DT_F32, empty, AXIS_ALL, false), "0");
    EXPECT(red(f, RED_PROD, DT_F32, empty, AXIS_ALL, false), "1");
    EXPECT(red(f, RED_ANY, DT_BOOL, mk(f, OP_CAST, DT_BOOL, 1, 1, empty), AXIS_ALL, false), "false");
    EXPECT(red(f, RED_ALL, DT_BOOL, mk(f, OP_CAST, DT_BOOL, 1, 1, empty), AXIS_ALL, false), "true");
    EXPECT_ERR(red(f, RED_MIN, DT_F32, empty, AXIS_ALL, false),
               "zero-size array to reduction operation min which has no identity");
    /* generic reduce: lambda |a, b| a * 2 + b from init 1 over [0 1 2] = ((1*2+0)*2+1)*2+2 */
    Val *lam = bin(f, OP_ADD, bin(f, OP_MUL, arg(f, 0, DT_I64), ci(f, 2)), arg(f, 1, DT_I64));
    Val *g = red(f, RED_LAMBDA, DT_I64, iota(f, DT_I64, 3), AXIS_ALL, false);
    g->lam = lam;
    g->init = ci(f, 1);
    EXPECT(g, "12");
    Val *g2 = red(f, RED_LAMBDA, DT_I64, reshape2(f, iota(f, DT_I64, 6), 2, 3), 1, false);
    g2->lam = lam;
    g2->init = ci(f, 1);
    EXPECT(g2, "[12 33]");
    Val *g3 = red(f, RED_SUM, DT_F32, m, AXIS_ALL, false);
    g3->init = cf(f, 100);
    EXPECT(g3, "166");
    /* along axis 0 of a (300, 600) array: tiles of 256 lines x 256 elements */
    Val *big = reshape2(f, iota(f, DT_I64, 180000), 300, 600);
    EXPECT(red(f, RED_SUM, DT_I64, red(f, RED_SUM, DT_I64, big, 0, false), AXIS_ALL, false),
           "16199910000");
    Val *cols = red(f, RED_SUM, DT_I64, big, 0, false);
    Val *c599 = mk(f, OP_SLICE, DT_I64, 0, 4, cols, ci(f, 599), NULL, NULL);
    c599->slmode[0] = SL_INDEX;
    EXPECT(c599, "27089700");
    EXPECT(red(f, RED_SUM, DT_I64, red(f, RED_ARGMAX, DT_I64, big, 0, false), AXIS_ALL, false),
           "179400");
    EXPECT(red(f, RED_SUM, DT_I64, red(f, RED_ARGMIN, DT_I64, big, 1, false), AXIS_ALL, false),
           "0");
    Val *g4 = red(f, RED_LAMBDA, DT_I64, big, 0, false);
    g4->lam = bin(f, OP_MAXIMUM, arg(f, 0, DT_I64), arg(f, 1, DT_I64));
    EXPECT(red(f, RED_SUM, DT_I64, g4, AXIS_ALL, false), "107819700");
    /* accuracy: 0.1 summed 10^6 times in f64 */
    Val *tenth = mk(f, OP_FULL, DT_F64, 1, 2, cd(f, 0.1), ci(f, 1000000));
    EXPECT(red(f, RED_SUM, DT_F64, tenth, AXIS_ALL, false), "100000.00000000001");
}

static void test_scan(void) {
    Fn *f = fn_new("scan", 0, 1);
    Val *x = iota(f, DT_I64, 5);
    EXPECT(scan(f, RED_SUM, x, AXIS_ALL, false), "[0 1 3 6 10]");
    EXPECT(scan(f, RED_SUM, x, AXIS_ALL, true), "[0 0 1 3 6]");
    EXPECT(scan(f, RED_PROD, bin(f, OP_ADD, x, ci(f, 1)), AXIS_ALL, false), "[1 2 6 24 120]");
    EXPECT(scan(f, RED_MAX, bin(f, OP_MUL, bin(f, OP_MOD, x, ci(f, 2)), x), AXIS_ALL, false),
           "[0 1 1 3 3]");
    EXPECT(scan(f, RED_MIN, x, AXIS_ALL, true), "[9223372036854775807 0 0 0 0]");
    Val *m = reshape2(f, iota(f, DT_F32, 6), 2, 3);
    EXPECT(scan(f, RED_SUM, m, 1, false), "[[0 1 3]\n [3 7 12]]");
    EXPECT(scan(f, RED_SUM, m, 0, false), "[[0 1 2]\n [3 5 7]]");
    EXPECT(scan(f, RED_SUM, m, AXIS_ALL, false), "[0 1 3 6 10 15]");
    Val *bs = scan(f, RED_SUM, reshape2(f, iota(f, DT_I64, 180000), 300, 600), 0, false);
    Val *corner = mk(f, OP_SLICE, DT_I64, 0, 7, bs, ci(f, 299), NULL, NULL, ci(f, 599), NULL, NULL);
    corner->slmode[0] = corner->slmode[1] = SL_INDEX;
    EXPECT(corner, "27089700");
    Val *mid = mk(f, OP_SLICE, DT_I64, 0, 7, bs, ci(f, 257), NULL, NULL, ci(f, 300), NULL, NULL);
    mid->slmode[0] = mid->slmode[1] = SL_INDEX;
    EXPECT(mid, "19969200"); /* sum over r <= 257 of 600 r + 300 */
    /* generic scan with init: |a, b| a * 2 + b from 1 */
    Val *lam = bin(f, OP_ADD, bin(f, OP_MUL, arg(f, 0, DT_I64), ci(f, 2)), arg(f, 1, DT_I64));
    Val *g = scan(f, RED_LAMBDA, iota(f, DT_I64, 3), AXIS_ALL, false);
    g->lam = lam;
    g->init = ci(f, 1);
    EXPECT(g, "[2 5 12]");
    Val *ge = scan(f, RED_LAMBDA, iota(f, DT_I64, 3), AXIS_ALL, true);
    ge->lam = lam;
    ge->init = ci(f, 1);
    EXPECT(ge, "[1 2 5]");
    /* a long cumsum across chunks */
    Val *big = scan(f, RED_SUM, mk(f, OP_FULL, DT_I64, 1, 2, ci(f, 1), ci(f, 100000)), AXIS_ALL,
                    false);
    Val *last = mk(f, OP_SLICE, DT_I64, 0, 4, big, ci(f, -1), NULL, NULL);
    last->slmode[0] = SL_INDEX;
    EXPECT(last, "100000");
}

static Val *slice1(Fn *f, Val *x, Val *a, Val *b, Val *c) {
    Val *v = mk(f, OP_SLICE, x->dt, 1, 4, x, a, b, c);
    v->slmode[0] = SL_RANGE;
    return v;
}

static void test_struct(void) {
    Fn *f = fn_new("struct", 0, 1);
    Val *x = iota(f, DT_I64, 10);
    EXPECT(slice1(f, x, ci(f, 1), ci(f, 5), ci(f, 2)), "[1 3]");
    EXPECT(slice1(f, x, NULL, NULL, ci(f, -1)), "[9 8 7 6 5 4 3 2 1 0]");
    EXPECT(slice1(f, x, ci(f, -3), NULL, NULL), "[7 8 9]");
    EXPECT(slice1(f, x, ci(f, 8), ci(f, 100), NULL), "[8 9]");
    EXPECT(slice1(f, x, ci(f, 5), ci(f, 2), NULL), "[]");
    EXPECT(slice1(f, x, ci(f, 100), ci(f, -100), ci(f, -3)), "[9 6 3 0]");
    EXPECT_ERR(slice1(f, x, NULL, NULL, ci(f, 0)), "slice step cannot be zero");
    Val *ix = mk(f, OP_SLICE, DT_I64, 0, 4, x, ci(f, 10), NULL, NULL);
    ix->slmode[0] = SL_INDEX;
    EXPECT_ERR(ix, "index 10 is out of bounds for axis 0 with size 10");
    Val *m = reshape2(f, iota(f, DT_I64, 12), 3, 4);
    Val *row = mk(f, OP_SLICE, DT_I64, 1, 7, m, ci(f, -1), NULL, NULL, NULL, NULL, NULL);
    row->slmode[0] = SL_INDEX;
    EXPECT(row, "[8 9 10 11]");
    Val *col = mk(f, OP_SLICE, DT_I64, 1, 7, m, NULL, NULL, NULL, ci(f, 1), NULL, NULL);
    col->slmode[1] = SL_INDEX;
    EXPECT(col, "[1 5 9]");
    Val *sub = mk(f, OP_SLICE, DT_I64, 2, 7, m, ci(f, 1), NULL, NULL, NULL, NULL, ci(f, 2));
    EXPECT(sub, "[[4 6]\n [8 10]]");
    /* gather */
    Val *idx = bin(f, OP_SUB, iota(f, DT_I64, 3), ci(f, 1)); /* [-1 0 1] */
    EXPECT(mk(f, OP_GATHER, DT_I64, 1, 2, x, idx), "[9 0 1]");
    EXPECT(mk(f, OP_GATHER, DT_I64, 2, 2, m, idx), "[[8 9 10 11]\n [0 1 2 3]\n [4 5 6 7]]");
    EXPECT_ERR(mk(f, OP_GATHER, DT_I64, 1, 2, x, bin(f, OP_ADD, iota(f, DT_I64, 3), ci(f, 8))),
               "index 10 is out of bounds for axis 0 with size 10");
    EXPECT(mk(f, OP_REVERSE, DT_I64, 2, 1, m), "[[8 9 10 11]\n [4 5 6 7]\n [0 1 2 3]]");
    Val *c0 = mk(f, OP_CONCAT, DT_I64, 1, 2, iota(f, DT_I64, 2), iota(f, DT_I64, 3));
    c0->axis = 0;
    EXPECT(c0, "[0 1 0 1 2]");
    Val *c1 = mk(f, OP_CONCAT, DT_I64, 2, 2, m, reshape2(f, iota(f, DT_I64, 3), 3, 1));
    c1->axis = 1;
    EXPECT(c1, "[[0 1 2 3 0]\n [4 5 6 7 1]\n [8 9 10 11 2]]");
    Val *c2 = mk(f, OP_CONCAT, DT_I64, 2, 2, m, reshape2(f, iota(f, DT_I64, 3), 1, 3));
    c2->axis = 0;
    EXPECT_ERR(c2, "cannot concatenate arrays of shapes (3,4) and (1,3) along axis 0");
    EXPECT_ERR(reshape2(f, iota(f, DT_I64, 12), 5, 3),
               "cannot reshape array of size 12 into shape (5,3)");
    EXPECT(reshape2(f, iota(f, DT_I64, 6), -1, 2), "[[0 1]\n [2 3]\n [4 5]]");
    Val *t = mk(f, OP_TRANSPOSE, DT_I64, 2, 1, reshape2(f, iota(f, DT_I64, 6), 2, 3));
    t->perm[0] = 1;
    t->perm[1] = 0;
    EXPECT(t, "[[0 3]\n [1 4]\n [2 5]]");
    Val *a = reshape2(f, iota(f, DT_F32, 6), 2, 3), *b = reshape2(f, iota(f, DT_F32, 6), 3, 2);
    EXPECT(mk(f, OP_MATMUL, DT_F32, 2, 2, a, b), "[[10 13]\n [28 40]]");
    EXPECT(mk(f, OP_MATMUL, DT_F32, 1, 2, a, iota(f, DT_F32, 3)), "[5 14]");
    EXPECT_ERR(mk(f, OP_MATMUL, DT_F32, 2, 2, a, a),
               "shapes (2,3) and (2,3) not aligned: 3 (dim 1) != 2 (dim 0)");
    Val *d = mk(f, OP_DIM, DT_I64, 0, 1, bin(f, OP_ADD, m, ci(f, 1)));
    d->axis = 1;
    EXPECT(d, "4");
    Val *cd = mk(f, OP_CHECKDIM, DT_I64, 1, 3, x, ci(f, 10), ci(f, 12));
    cd->msg = "size n is %lld here but %lld there";
    EXPECT_ERR(cd, "size n is 10 here but 12 there");
    /* inside a fused reduction the check still runs (and fusion goes through it) */
    EXPECT_ERR(red(f, RED_SUM, DT_I64, bin(f, OP_ADD, cd, ci(f, 1)), AXIS_ALL, false),
               "size n is 10 here but 12 there");
    Val *okd = mk(f, OP_CHECKDIM, DT_I64, 1, 3, bin(f, OP_MUL, x, ci(f, 2)), ci(f, 10), ci(f, 10));
    EXPECT(red(f, RED_SUM, DT_I64, okd, AXIS_ALL, false), "90");
    EXPECT(okd, "[0 2 4 6 8 10 12 14 16 18]");
}

static void test_stmts(void) {
    /* var acc = 0; for i in 0..10 { acc = acc + i }; while acc > 40 { acc = acc - 7 };
       if acc == 38 { print(1) } else { print(0) }; print(acc) */
    Fn *f = fn_new("loops", 0, 2);
    Val *acc = sl(f, 0, DT_I64, 0), *i = sl(f, 1, DT_I64, 0);
    Stmt *loop = stm(S_FOR, 1, ci(f, 0));
    loop->v2 = ci(f, 10);
    loop->body = stm(S_SET, 0, bin(f, OP_ADD, acc, i));
    Stmt *wh = stm(S_WHILE, 0, bin(f, OP_GT, acc, ci(f, 40)));
    wh->body = stm(S_SET, 0, bin(f, OP_SUB, acc, ci(f, 7)));
    Stmt *iff = stm(S_IF, 0, bin(f, OP_EQ, acc, ci(f, 38)));
    iff->body = stm(S_PRINT, 0, ci(f, 1));
    iff->els = stm(S_PRINT, 0, ci(f, 0));
    f->body = seq(stm(S_SET, 0, ci(f, 0)), loop, wh, iff, stm(S_PRINT, 0, acc), NULL);
    RtErr e;
    bool ok;
    char *s = run(f, NULL, NULL, &e, &ok);
    CHECK(ok);
    CHECK_STR(s, "1\n38\n");
    free(s);

    /* fact(n) = n <= 1 ? 1 : n * fact(n - 1), recursion through OP_CALL */
    Fn *fact = fn_new("fact", 1, 1);
    Val *n = sl(fact, 0, DT_I64, 0);
    Val *rec = mk(fact, OP_CALL, DT_I64, 0, 1, bin(fact, OP_SUB, n, ci(fact, 1)));
    rec->fn = fact;
    Stmt *base = stm(S_IF, 0, bin(fact, OP_LE, n, ci(fact, 1)));
    base->body = stm(S_RETURN, 0, ci(fact, 1));
    fact->body = seq(base, stm(S_RETURN, 0, bin(fact, OP_MUL, n, rec)), NULL);
    fact->ret_dt = DT_I64;
    Arr *a = arr_scalar(DT_I64, (Scalar){.i = 20});
    Arr *r = NULL;
    free(run(fact, &a, &r, &e, &ok));
    CHECK(ok && r && ((int64_t *)r->data)[0] == 2432902008176640000LL);
    arr_release(r);
    arr_release(a);
    a = arr_scalar(DT_I64, (Scalar){.i = 5000});
    free(run(fact, &a, &r, &e, &ok));
    CHECK(!ok && !r);
    CHECK(strstr(e.msg, "recursion too deep") != NULL);
    arr_release(a);

    /* save and load round trip, and a load of the wrong type */
    char path[] = "/tmp/cuk_test_cpu_XXXXXX.npy";
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0);
    close(fd);
    Fn *g = fn_new("io", 0, 1);
    Stmt *sv = stm(S_SAVE, 0, reshape2(g, iota(g, DT_F32, 6), 2, 3));
    sv->path = path;
    Val *ld = mk(g, OP_LOAD, DT_F32, 2, 0);
    ld->path = path;
    g->body = seq(sv, stm(S_PRINT, 0, ld), NULL);
    s = run(g, NULL, NULL, &e, &ok);
    CHECK(ok);
    CHECK_STR(s, "[[0 1 2]\n [3 4 5]]\n");
    free(s);
    Val *bad = mk(g, OP_LOAD, DT_F64, 1, 0);
    bad->path = path;
    g->body = stm(S_PRINT, 0, bad);
    free(run(g, NULL, NULL, &e, &ok));
    CHECK(!ok && strstr(e.msg, "holds a f32 array of shape (2,3)") != NULL);
    unlink(path);
}

static void test_npy(void) {
    char err[256];
    int64_t sh[2] = {2, 3};
    Arr *a = arr_new(DT_I32, 2, sh);
    for (int i = 0; i < 6; i++) ((int32_t *)a->data)[i] = i * 7 - 3;
    char path[] = "/tmp/cuk_npy_XXXXXX.npy";
    int fd = mkstemps(path, 4);
    close(fd);
    CHECK(npy_save(path, a, err, sizeof err));
    /* numpy reads what we write (when python3 with numpy is around) */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import numpy as n; a=n.load('%s'); "
             "assert a.dtype==n.int32 and a.shape==(2,3) and a.tolist()==[[-3,4,11],[18,25,32]]\" "
             "2>/dev/null",
             path);
    if (access("/usr/bin/python3", X_OK) == 0) CHECK(system(cmd) == 0);
    Arr *b = npy_load(path, err, sizeof err);
    CHECK(b && b->dt == DT_I32 && b->rank == 2 && memcmp(a->data, b->data, 24) == 0);
    arr_release(b);
    /* Every truncation and many corruptions of a valid file fail cleanly. */
    FILE *fp = fopen(path, "rb");
    unsigned char buf[512];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    for (size_t len = 0; len < n; len++) {
        Arr *t = npy_load_mem(buf, len, err, sizeof err);
        CHECK(t == NULL);
    }
    srand(1);
    for (int it = 0; it < 20000; it++) {
        unsigned char c[512];
        memcpy(c, buf, n);
        int k = 1 + rand() % 4;
        for (int j = 0; j < k; j++) c[rand() % (int)n] = (unsigned char)rand();
        Arr *t = npy_load_mem(c, n, err, sizeof err);
        arr_release(t);
    }
    const char *hdrs[] = {
        "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<f16', 'fortran_order': False, 'shape': (2,), }", /* long double: none */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,99999999999), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
    };
    const char *want[] = {"Fortran", "big-endian", "unsupported dtype", "too large", "more than",
                          "malformed", NULL, NULL};
    for (size_t i = 0; i < sizeof hdrs / sizeof hdrs[0]; i++) {
        unsigned char f[256];
        size_t hl = strlen(hdrs[i]);
        memcpy(f, "\x93NUMPY\x01\x00", 8);
        f[8] = (unsigned char)hl;
        f[9] = 0;
        memcpy(f + 10, hdrs[i], hl);
        memset(f + 10 + hl, 0, 8);
        err[0] = 0;
        Arr *t = npy_load_mem(f, 10 + hl + 8, err, sizeof err);
        if (want[i]) {
            CHECK(t == NULL && strstr(err, want[i]) != NULL);
            if (!t && !strstr(err, want[i])) fprintf(stderr, "  (%s)\n", err);
        } else {
            CHECK(t != NULL);
        }
        arr_release(t);
    }
    arr_release(a);
    unlink(path);
}

int main(void) {
    arena_init(&ar);
    test_saxpy();
    test_print();
    test_generators();
    test_casts();
    test_reduce();
    test_scan();
    test_struct();
    test_stmts();
    test_npy();
    arena_free(&ar);
    printf("test_cpu: %d checks, %d failed\n", checks, failures);
    return failures != 0;
}
