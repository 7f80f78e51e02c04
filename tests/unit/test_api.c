/* The program API's own calls beyond what Python reaches (api/cuk_program.h): .npy load
   and save, printing, ahead-of-time bundles built and loaded from C, the status of each
   kind of error; out= (cuk_fn_call_views_out); and the die guard (lang/arena.h) that turns a broken invariant inside
   the library into an error for its caller. Runs on the CPU backend (NVRTC, needed for
   bundles, works without a GPU). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/cuk_program.h"
#include "lang/arena.h"

static int failures, checks;
#define CHECK(c)                                                                           \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(c)) {                                                                        \
            failures++;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #c,      \
                    cuk_last_error());                                                     \
        }                                                                                  \
    } while (0)

static const char *src = "fn scale(a: f32, x: f32[n]) -> f32[n] = a * x;\n"
                         "fn total(x: f32[n]) -> f32 = sum(x);\n"
                         "fn bad(x: f32[n]) -> f32 = x[n];\n";

/* What cuk_array_print writes for a. */
static char *printed(const cuk_array *a) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(cuk_array_print(a, f) == CUK_OK);
    fclose(f);
    return buf;
}

static void test_arrays_npy_print(const char *dir) {
    float h[3] = {1.5f, -2.0f, 0.25f};
    int64_t n = 3;
    cuk_array *a = NULL, *b = NULL, *w = NULL;
    CHECK(cuk_array_from_host(&a, CUK_F32, 1, &n, h, CUK_ON_HOST) == CUK_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/a.npy", dir);
    CHECK(cuk_array_save(a, path) == CUK_OK);
    CHECK(cuk_array_load(&b, path) == CUK_OK);
    CHECK(b && cuk_array_dtype(b) == CUK_F32 && cuk_array_rank(b) == 1 && cuk_array_shape(b)[0] == 3);
    CHECK(b && memcmp(cuk_array_host_data(b), h, sizeof h) == 0);
    char *s = printed(b);
    CHECK(s && strcmp(s, "[1.5 -2 0.25]\n") == 0);
    free(s);
    /* a wrapped array prints and saves the caller's memory, and never frees it */
    CHECK(cuk_array_wrap_host(&w, CUK_F32, 1, &n, h) == CUK_OK);
    s = printed(w);
    CHECK(s && strcmp(s, "[1.5 -2 0.25]\n") == 0);
    free(s);
    CHECK(cuk_array_save(w, path) == CUK_OK);
    cuk_array_free(w);
    CHECK(h[0] == 1.5f);
    /* errors: a missing file, a file that is not .npy, NULL arguments */
    cuk_array *c = (cuk_array *)1;
    snprintf(path, sizeof path, "%s/missing.npy", dir);
    CHECK(cuk_array_load(&c, path) == CUK_ERR_INVALID && c == NULL);
    CHECK(strstr(cuk_last_error(), "missing.npy") != NULL);
    CHECK(cuk_array_load(NULL, path) == CUK_ERR_INVALID);
    CHECK(cuk_array_print(NULL, stdout) == CUK_ERR_INVALID);
    CHECK(cuk_array_save(a, NULL) == CUK_ERR_INVALID);
    cuk_array_free(a);
    cuk_array_free(b);
}

static void test_calls(void) {
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU, .name = "api.cuk"};
    cuk_program *p = NULL;
    CHECK(cuk_program_compile(&p, src, &o) == CUK_OK);
    if (!p) return;
    cuk_fn *f = NULL;
    CHECK(cuk_program_function(p, "scale", &f) == CUK_OK);
    float two = 2.0f, h[4] = {1, 2, 3, 4};
    int64_t n = 4;
    cuk_array *args[2] = {NULL, NULL}, *r = NULL;
    CHECK(cuk_array_scalar(&args[0], CUK_F32, &two) == CUK_OK);
    CHECK(cuk_array_from_host(&args[1], CUK_F32, 1, &n, h, CUK_ON_HOST) == CUK_OK);
    CHECK(cuk_fn_call(f, args, 2, &r) == CUK_OK);
    char *s = r ? printed(r) : NULL;
    CHECK(s && strcmp(s, "[2 4 6 8]\n") == 0);
    free(s);
    cuk_array_free(r);
    /* a run-time error: its status, and its location in cuk_program_error */
    CHECK(cuk_program_function(p, "bad", &f) == CUK_OK);
    r = NULL;
    CHECK(cuk_fn_call(f, &args[1], 1, &r) == CUK_ERR_RUNTIME && r == NULL);
    CHECK(strstr(cuk_last_error(), "out of bounds") != NULL);
    cuk_error_info info;
    CHECK(cuk_program_error(&info) == CUK_OK && info.line == 3 && strcmp(info.file, "api.cuk") == 0);
    /* a bad argument is the caller's error, not the program's */
    CHECK(cuk_fn_call(f, args, 1, &r) == CUK_ERR_INVALID);
    cuk_array_free(args[0]);
    cuk_array_free(args[1]);
    cuk_program_free(p);
    /* a compile error */
    CHECK(cuk_program_compile(&p, "fn f() -> f32 = 1.0;\nfn g( {}\n", &o) == CUK_ERR_COMPILE && p == NULL);
    CHECK(cuk_program_error(&info) == CUK_OK && info.line == 2);
}

/* Declared result sizes (DESIGN.md part 2, "Sizes"): an expression over the parameters'
   sizes and '?' are checked at the return; a mismatch is a run-time error (status, message
   with both sizes, location), and a '?' result's size is its array's shape. */
static void test_result_sizes(void) {
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU, .name = "sizes.cuk"};
    cuk_program *p = NULL;
    CHECK(cuk_program_compile(&p,
                              "fn grow(x: f32[n]) -> f32[n + 2] = concat(x, zeros(2));\n"
                              "fn bad(x: f32[n]) -> f32[n * 2] = concat(x, x[1:]);\n"
                              "fn head(x: f32[n], k: i64) -> f32[?] = x[:k];\n",
                              &o) == CUK_OK);
    if (!p) return;
    float h[3] = {1, 2, 3};
    int64_t n = 3, k = 2;
    cuk_array *args[2] = {NULL, NULL}, *r = NULL;
    CHECK(cuk_array_from_host(&args[0], CUK_F32, 1, &n, h, CUK_ON_HOST) == CUK_OK);
    CHECK(cuk_array_scalar(&args[1], CUK_I64, &k) == CUK_OK);
    cuk_fn *f = NULL;
    CHECK(cuk_program_function(p, "grow", &f) == CUK_OK);
    CHECK(cuk_fn_call(f, args, 1, &r) == CUK_OK);
    char *s = r ? printed(r) : NULL;
    CHECK(s && strcmp(s, "[1 2 3 0 0]\n") == 0);
    free(s);
    cuk_array_free(r);
    r = NULL;
    CHECK(cuk_program_function(p, "head", &f) == CUK_OK);
    CHECK(cuk_fn_call(f, args, 2, &r) == CUK_OK);
    s = r ? printed(r) : NULL;
    CHECK(s && strcmp(s, "[1 2]\n") == 0);
    free(s);
    cuk_array_free(r);
    r = NULL;
    CHECK(cuk_program_function(p, "bad", &f) == CUK_OK);
    CHECK(cuk_fn_call(f, args, 1, &r) == CUK_ERR_RUNTIME && r == NULL);
    CHECK(strstr(cuk_last_error(), "bad(): the result has size 5 on axis 0, but its declared size 'n * 2' is 6") != NULL);
    cuk_error_info info;
    CHECK(cuk_program_error(&info) == CUK_OK && info.line == 2 && info.col == 35 && strcmp(info.file, "sizes.cuk") == 0);
    cuk_array_free(args[0]);
    cuk_array_free(args[1]);
    cuk_program_free(p);
}

/* Several results (-> (T1, T2)): one output per result through cuk_fn_call_n and
   cuk_fn_call_views_n; cuk_fn_call refuses such a function and says what to use. */
static void test_several_results(void) {
    const char *text = "fn mm(x: f32[n]) -> (f32, f32[n]) = (max(x), x - min(x));\n"
                       "fn hs(x: f32[n]) -> (i64, f32[2]) { if len(x) > 0 { return (len(x), x[0:2]); } return (0, x); }\n"
                       "fn one(x: f32[n]) -> f32 = sum(x);\n";
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU, .name = "several.cuk"};
    cuk_program *p = NULL;
    CHECK(cuk_program_compile(&p, text, &o) == CUK_OK);
    if (!p) return;
    cuk_fn *f = NULL, *g = NULL, *one = NULL;
    CHECK(cuk_program_function(p, "mm", &f) == CUK_OK);
    CHECK(cuk_program_function(p, "hs", &g) == CUK_OK);
    CHECK(cuk_program_function(p, "one", &one) == CUK_OK);
    CHECK(cuk_fn_nresults(f) == 2 && cuk_fn_nresults(one) == 1);
    cuk_dtype dt;
    int rank;
    CHECK(cuk_fn_result_at(f, 1, &dt, &rank) == CUK_OK && dt == CUK_F32 && rank == 1);
    CHECK(cuk_fn_result_at(g, 0, &dt, &rank) == CUK_OK && dt == CUK_I64 && rank == 0);
    CHECK(cuk_fn_result_at(f, 2, &dt, &rank) == CUK_ERR_INVALID);
    float h[4] = {3, 1, 4, 2};
    int64_t n = 4;
    cuk_array *x = NULL, *r[2] = {NULL, NULL};
    CHECK(cuk_array_from_host(&x, CUK_F32, 1, &n, h, CUK_ON_HOST) == CUK_OK);
    CHECK(cuk_fn_call_n(f, &x, 1, r, 2) == CUK_OK);
    char *s0 = r[0] ? printed(r[0]) : NULL, *s1 = r[1] ? printed(r[1]) : NULL;
    CHECK(s0 && strcmp(s0, "4\n") == 0);
    CHECK(s1 && strcmp(s1, "[2 0 3 1]\n") == 0);
    free(s0);
    free(s1);
    cuk_array_free(r[0]);
    cuk_array_free(r[1]);
    r[0] = r[1] = NULL;
    /* a host function (control flow) */
    CHECK(cuk_fn_call_n(g, &x, 1, r, 2) == CUK_OK);
    s0 = r[0] ? printed(r[0]) : NULL, s1 = r[1] ? printed(r[1]) : NULL;
    CHECK(s0 && strcmp(s0, "4\n") == 0);
    CHECK(s1 && strcmp(s1, "[3 1]\n") == 0);
    free(s0);
    free(s1);
    cuk_array_free(r[0]);
    cuk_array_free(r[1]);
    /* views */
    cuk_view xv, dres[2];
    const cuk_view *vp = &xv;
    cuk_array *hres[2] = {NULL, NULL};
    cuk_array_view(x, &xv);
    CHECK(cuk_fn_call_views_n(f, &vp, 1, dres, hres, 2) == CUK_OK);
    CHECK(dres[0].rank == -1 && hres[0] && hres[1] && cuk_array_size(hres[1]) == 4);
    cuk_array_free(hres[0]);
    cuk_array_free(hres[1]);
    /* the single-result call refuses, naming the way */
    cuk_array *one_r = NULL;
    CHECK(cuk_fn_call(f, &x, 1, &one_r) == CUK_ERR_INVALID && one_r == NULL);
    CHECK(strstr(cuk_last_error(), "cuk_fn_call_n") != NULL);
    CHECK(cuk_fn_call_n(f, &x, 1, r, 1) == CUK_ERR_INVALID);
    /* a single result through cuk_fn_call_n */
    CHECK(cuk_fn_call_n(one, &x, 1, &one_r, 1) == CUK_OK && one_r);
    cuk_array_free(one_r);
    cuk_array_free(x);
    cuk_program_free(p);
}

static void test_bundles(const char *dir) {
    char srcpath[512], out[512];
    snprintf(srcpath, sizeof srcpath, "%s/p.cuk", dir);
    snprintf(out, sizeof out, "%s/p.cukb", dir);
    FILE *f = fopen(srcpath, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(src, f);
    fclose(f);
    cuk_status s = cuk_program_build(srcpath, out, "sm_90");
    if (s == CUK_ERR_NO_DRIVER) {
        printf("bundles skipped: %s\n", cuk_last_error()); /* no NVRTC here */
        return;
    }
    CHECK(s == CUK_OK);
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU};
    cuk_program *p = NULL;
    CHECK(cuk_program_load_bundle(&p, out, &o) == CUK_OK);
    cuk_fn *fn = NULL;
    if (p) CHECK(cuk_program_function(p, "total", &fn) == CUK_OK);
    if (fn) {
        float h[3] = {1, 2, 3.5f};
        int64_t n = 3;
        cuk_array *x = NULL, *r = NULL;
        CHECK(cuk_array_from_host(&x, CUK_F32, 1, &n, h, CUK_ON_HOST) == CUK_OK);
        CHECK(cuk_fn_call(fn, &x, 1, &r) == CUK_OK);
        char *t = r ? printed(r) : NULL;
        CHECK(t && strcmp(t, "6.5\n") == 0);
        free(t);
        cuk_array_free(x);
        cuk_array_free(r);
    }
    cuk_program_free(p);
    /* a bundle of a bundle, a bad arch list, a program that does not compile */
    CHECK(cuk_program_build(out, out, "sm_90") == CUK_ERR_INVALID);
    CHECK(cuk_program_build(srcpath, out, "sm_9x") == CUK_ERR_INVALID);
    CHECK(strstr(cuk_last_error(), "sm_9x") != NULL);
    f = fopen(srcpath, "w");
    if (f) {
        fputs("fn f() -> f32 = nothing;\n", f);
        fclose(f);
    }
    CHECK(cuk_program_build(srcpath, out, "sm_90") == CUK_ERR_COMPILE);
    CHECK(strstr(cuk_last_error(), "p.cuk:1:") != NULL);
}

/* The guard turns die() into a jump back to its owner, innermost guard first, and
   leaves no guard behind. */
static volatile int depth_reached;
static void dies_deep(int depth) {
    depth_reached = depth;
    die("broken at depth %d", depth);
}
static void dies(int depth) { dies_deep(depth + 3); }

static void test_guard(void) {
    DieGuard outer, inner;
    volatile int caught_outer = 0, caught_inner = 0;
    guard_push(&outer);
    if (setjmp(outer.jb) == 0) {
        guard_push(&inner);
        if (setjmp(inner.jb) == 0) {
            dies(0);
            guard_pop(&inner);
        } else {
            caught_inner = 1;
        }
        /* the inner guard is gone: the next die goes to the outer one */
        ASSERT(1 == 2);
        guard_pop(&outer);
    } else {
        caught_outer = 1;
    }
    CHECK(caught_inner && caught_outer && depth_reached == 3);
    CHECK(strstr(inner.msg, "internal error at") && strstr(inner.msg, "broken at depth 3"));
    CHECK(strstr(outer.msg, "assertion failed: 1 == 2"));
}

/* out= from C (cuk_fn_call_views_out) on the CPU backend: the result lands in the
   caller's memory; a wrong dtype or rank, a function without an array result, and a
   result of another shape are errors that say so, and out is left alone. */
static void test_out(void) {
    const char *text = "fn scale(a: f32, x: f32[n]) -> f32[n] = a * x;\n"
                       "fn total(x: f32[n]) -> f32 = sum(x);\n"
                       "fn keep(x: f32[n]) -> f32[?] = x[x > 1.5];\n";
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU, .name = "out.cuk"};
    cuk_program *p = NULL;
    CHECK(cuk_program_compile(&p, text, &o) == CUK_OK);
    if (!p) return;
    cuk_fn *scale = NULL, *total = NULL, *keep = NULL;
    CHECK(cuk_program_function(p, "scale", &scale) == CUK_OK);
    CHECK(cuk_program_function(p, "total", &total) == CUK_OK);
    CHECK(cuk_program_function(p, "keep", &keep) == CUK_OK);
    float a = 2, h[3] = {1, 2, 3}, dst[3] = {-1, -1, -1};
    cuk_view av = {.dtype = CUK_F32, .rank = 0, .place = CUK_ON_HOST, .data = &a};
    cuk_view xv = {.dtype = CUK_F32, .rank = 1, .place = CUK_ON_HOST, .shape = {3}, .data = h};
    cuk_view ov = {.dtype = CUK_F32, .rank = 1, .place = CUK_ON_HOST, .shape = {3}, .data = dst};
    const cuk_view *args[2] = {&av, &xv};
    CHECK(cuk_fn_call_views_out(scale, args, 2, &ov) == CUK_OK);
    CHECK(dst[0] == 2 && dst[1] == 4 && dst[2] == 6);
    /* x = scale(a, x) in place */
    cuk_view iv = xv;
    iv.data = h;
    CHECK(cuk_fn_call_views_out(scale, args, 2, &iv) == CUK_OK && h[2] == 6);
    h[0] = 1, h[1] = 2, h[2] = 3;
    cuk_view bad = ov;
    bad.dtype = CUK_F64;
    CHECK(cuk_fn_call_views_out(scale, args, 2, &bad) == CUK_ERR_INVALID);
    CHECK(strstr(cuk_last_error(), "out= is a 1-D f64 array, but the function returns a 1-D f32 array") != NULL);
    CHECK(cuk_fn_call_views_out(total, &args[1], 1, &ov) == CUK_ERR_INVALID);
    CHECK(strstr(cuk_last_error(), "total() returns a scalar, so it takes no out=") != NULL);
    dst[0] = dst[1] = dst[2] = -1;
    CHECK(cuk_fn_call_views_out(keep, &args[1], 1, &ov) == CUK_ERR_RUNTIME);
    CHECK(strstr(cuk_last_error(), "out= is f32 (3), but the result is f32 (2)") != NULL);
    CHECK(dst[0] == -1 && dst[2] == -1);
    ov.shape[0] = 2;
    CHECK(cuk_fn_call_views_out(keep, &args[1], 1, &ov) == CUK_OK && dst[0] == 2 && dst[1] == 3 && dst[2] == -1);
    cuk_program_free(p);
}

/* cuk_scalar_convert: the language's conversions between every kind of type. */
static void test_scalar_convert(void) {
    cuk_scalar o;
    CHECK(cuk_scalar_convert(&(cuk_scalar){.f64 = 0.1}, CUK_F64, &o, CUK_F16) == CUK_OK && o.f16 == 0x2e66);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.f64 = 70000.0}, CUK_F64, &o, CUK_F16) == CUK_OK && o.f16 == 0x7c00);
    /* 2^60 + 2^52 + 1 rounds up to 2^60 + 2^53 in bf16: a double on the way would tie and go down */
    CHECK(cuk_scalar_convert(&(cuk_scalar){.i64 = (1LL << 60) + (1LL << 52) + 1}, CUK_I64, &o, CUK_BF16) == CUK_OK &&
          o.bf16 == 0x5d81);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.bf16 = 0x3fc0}, CUK_BF16, &o, CUK_F64) == CUK_OK && o.f64 == 1.5);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.f64 = -1e10}, CUK_F64, &o, CUK_I8) == CUK_OK && o.i8 == -128);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.i64 = 300}, CUK_I64, &o, CUK_U8) == CUK_OK && o.u8 == 44);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.c128 = {2.5, -1.0}}, CUK_C128, &o, CUK_F32) == CUK_OK && o.f32 == 2.5f);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.i64 = 3}, CUK_I64, &o, CUK_C64) == CUK_OK && o.c64[0] == 3.0f &&
          o.c64[1] == 0.0f);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.c64 = {1.0f, 2.0f}}, CUK_C64, &o, CUK_C128) == CUK_OK && o.c128[0] == 1.0 &&
          o.c128[1] == 2.0);
    CHECK(cuk_scalar_convert(&(cuk_scalar){.f64 = 1.0}, CUK_F64, &o, (cuk_dtype)99) == CUK_ERR_INVALID);
}

/* cuk_program_profile_begin/end: the table of the calls between them, one profile at a
   time, whether or not the program was compiled with opts.profile. */
static void test_profile_begin_end(void) {
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU, .name = "api.cuk"};
    cuk_program *p = NULL;
    CHECK(cuk_program_compile(&p, src, &o) == CUK_OK);
    if (!p) return;
    cuk_fn *f = NULL;
    CHECK(cuk_program_function(p, "total", &f) == CUK_OK);
    float h[3] = {1, 2, 3};
    int64_t n = 3;
    cuk_array *x = NULL, *r = NULL;
    CHECK(cuk_array_from_host(&x, CUK_F32, 1, &n, h, CUK_ON_HOST) == CUK_OK);
    CHECK(cuk_program_profile_end(p, NULL) == CUK_ERR_INVALID); /* none begun */
    CHECK(cuk_program_profile_begin(p) == CUK_OK);
    CHECK(cuk_program_profile_begin(p) == CUK_ERR_INVALID && strstr(cuk_last_error(), "already") != NULL);
    for (int i = 0; i < 2; i++) {
        CHECK(cuk_fn_call(f, &x, 1, &r) == CUK_OK);
        cuk_array_free(r);
        r = NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    CHECK(cuk_program_profile_end(p, out) == CUK_OK);
    fclose(out);
    CHECK(buf && strncmp(buf, "profile (CPU backend): 2 calls, ", 32) == 0 && strstr(buf, "api.cuk:2:") != NULL);
    free(buf);
    CHECK(cuk_program_profile_print(p, stderr) == CUK_ERR_INVALID); /* its own: none, as before */
    cuk_array_free(x);
    cuk_program_free(p);
}

/* cuk_program_explain: emit-ir's text (the kernel each function fuses into), the CUDA C,
   and its errors. */
static void test_explain(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    CHECK(cuk_program_explain(src, "api.cuk", CUK_EXPLAIN_IR, out) == CUK_OK);
    fclose(out);
    CHECK(buf && strstr(buf, "plan total: 1 kernel") && strstr(buf, "kernel k0 reduce: red.sum"));
    free(buf);
    out = open_memstream(&buf, &len);
    CHECK(cuk_program_explain(src, NULL, CUK_EXPLAIN_CUDA, out) == CUK_OK);
    fclose(out);
    CHECK(buf && strstr(buf, "cuk_scale_k0"));
    free(buf);
    CHECK(cuk_program_explain(src, NULL, (cuk_explain)7, stdout) == CUK_ERR_INVALID);
    CHECK(cuk_program_explain(NULL, NULL, CUK_EXPLAIN_IR, stdout) == CUK_ERR_INVALID);
    cuk_error_info info;
    CHECK(cuk_program_explain("fn f( {}\n", "bad.cuk", CUK_EXPLAIN_DOT, stdout) == CUK_ERR_COMPILE);
    CHECK(cuk_program_error(&info) == CUK_OK && strcmp(info.file, "bad.cuk") == 0 && info.line == 1);
}

/* cuk_program_generic: a generic function's signature (the user's and the stdlib's), and
   cuk_program_function's message for one, which shows the typed wrapper to compile. */
static void test_generic(void) {
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU, .name = "gen.cuk"};
    cuk_program *p = NULL;
    CHECK(cuk_program_compile(&p,
                              "fn g(x: T[r, c], k: f32) -> T[r + 1, c] = concat(x, x[:1, :]) * T(k);\n"
                              "fn pair(x: T) -> (T, T) = (x, x);\n"
                              "fn plain(x: f32[n]) -> f32[n] = softmax(x);\n",
                              &o) == CUK_OK);
    if (!p) return;
    char buf[256];
    CHECK(cuk_program_generic(p, "g", buf, sizeof buf) == CUK_OK);
    CHECK(strcmp(buf, "x\tT\tr,c\nk\tf32\t\n->\tT\tr + 1,c\n") == 0);
    CHECK(cuk_program_generic(p, "softmax", buf, sizeof buf) == CUK_OK);
    CHECK(strcmp(buf, "x\tT\tn\n->\tT\tn\n") == 0);
    CHECK(cuk_program_generic(p, "relu", buf, sizeof buf) == CUK_OK);
    CHECK(strcmp(buf, "v\tT\t\n->\tT\t\n") == 0);
    CHECK(cuk_program_generic(p, "layer_norm", NULL, 0) == CUK_OK);
    CHECK(cuk_program_generic(p, "g", buf, 8) == CUK_ERR_INVALID && strstr(cuk_last_error(), "needs 29 bytes"));
    CHECK(cuk_program_generic(p, "pair", buf, sizeof buf) == CUK_ERR_INVALID && strstr(cuk_last_error(), "tuple"));
    CHECK(cuk_program_generic(p, "plain", buf, sizeof buf) == CUK_ERR_NOT_FOUND);
    CHECK(cuk_program_generic(p, "mean", buf, sizeof buf) == CUK_ERR_NOT_FOUND); /* a builtin */
    CHECK(cuk_program_generic(p, "nothere", buf, sizeof buf) == CUK_ERR_NOT_FOUND);
    CHECK(cuk_program_generic(NULL, "g", buf, sizeof buf) == CUK_ERR_INVALID);
    cuk_fn *f = (cuk_fn *)1;
    CHECK(cuk_program_function(p, "softmax", &f) == CUK_ERR_NOT_FOUND && f == NULL);
    CHECK(strcmp(cuk_last_error(), "'softmax' is generic (its element type T is bound at each call); to call it on "
                                   "its own, add a typed wrapper to the program, e.g. fn softmax_f32(x: f32[n]) -> "
                                   "f32[n] = softmax(x);") == 0);
    CHECK(cuk_program_function(p, "g", &f) == CUK_ERR_NOT_FOUND &&
          strstr(cuk_last_error(), "e.g. fn g_f32(x: f32[r, c], k: f32) -> f32[r + 1, c] = g(x, k);"));
    CHECK(cuk_program_function(p, "pair", &f) == CUK_ERR_NOT_FOUND && strstr(cuk_last_error(), "returns a tuple"));
    CHECK(cuk_program_function(p, "nothere", &f) == CUK_ERR_NOT_FOUND &&
          strstr(cuk_last_error(), "the program has no function 'nothere'; it has plain"));
    cuk_program_free(p);
    /* the wrapper the message shows compiles and runs */
    CHECK(cuk_program_compile(&p, "fn softmax_f32(x: f32[n]) -> f32[n] = softmax(x);\n", &o) == CUK_OK);
    if (!p) return;
    float h[2] = {1, 1};
    int64_t n = 2;
    cuk_array *x = NULL, *r = NULL;
    CHECK(cuk_array_from_host(&x, CUK_F32, 1, &n, h, CUK_ON_HOST) == CUK_OK);
    CHECK(cuk_program_call(p, "softmax_f32", &x, 1, &r) == CUK_OK);
    CHECK(r && ((const float *)cuk_array_host_data(r))[0] == 0.5f);
    cuk_array_free(x);
    cuk_array_free(r);
    cuk_program_free(p);
}

int main(void) {
    char dir[] = "/tmp/cuk-test-api-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_arrays_npy_print(dir);
    test_calls();
    test_result_sizes();
    test_several_results();
    test_out();
    test_bundles(dir);
    test_guard();
    test_scalar_convert();
    test_profile_begin_end();
    test_explain();
    test_generic();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("test_api: %d checks, %d failed\n", checks, failures);
    return failures != 0;
}
