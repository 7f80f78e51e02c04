/* The threaded paths under ThreadSanitizer (scripts/tsan.sh): threads calling one
   program's functions at once on the CPU backend (each call on the shared thread pool,
   the program's compiled state and the caches shared), threads compiling programs at once,
   and an interrupt hook that stops a long call from another thread's flag. Prints one
   PASS/FAIL line per check and "N passed, N failed"; a report from the sanitizer fails the
   run on its own (TSAN_OPTIONS exitcode). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/cuk_program.h"

static const char *SRC = "fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] = a * x + y;\n"
                         "fn total(x: f32[n]) -> f32 = sum(x);\n"
                         "fn cols(x: f32[r, c]) -> f32[c] = max(x, axis=0);\n"
                         "fn scan(x: i64[n]) -> i64[n] = cumsum(x);\n"
                         "fn order(x: f32[n]) -> f32[n] = sort(x);\n"
                         "fn spin(n: i64) -> f64 {\n"
                         "    var t = f64(0.0);\n"
                         "    for i in 0..n {\n"
                         "        t = t + f64(i);\n"
                         "    }\n"
                         "    return t;\n"
                         "}\n";

enum { N = 1 << 17, THREADS = 4 };
static cuk_program *prog;
static float xs[N], ys[N];
static int64_t ks[N];
static int npass, nfail;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void check(bool ok, const char *what) {
    pthread_mutex_lock(&mu);
    if (ok) npass++;
    else nfail++, printf("FAIL %s\n", what);
    pthread_mutex_unlock(&mu);
}

/* f(args) on host arrays; the result (NULL on an error) */
static cuk_array *call(const char *name, cuk_array **args, int n) {
    cuk_fn *f;
    cuk_array *r = NULL;
    if (cuk_program_function(prog, name, &f) != CUK_OK || cuk_fn_call(f, args, n, &r) != CUK_OK) return NULL;
    return r;
}

static void *caller(void *arg) {
    (void)arg;
    int64_t n = N, shp[2] = {N / 256, 256};
    for (int it = 0; it < 3; it++) {
        cuk_array *a, *x, *y, *k, *m;
        float two = 2.0f;
        cuk_array_scalar(&a, CUK_F32, &two);
        cuk_array_wrap_host(&x, CUK_F32, 1, &n, xs);
        cuk_array_wrap_host(&y, CUK_F32, 1, &n, ys);
        cuk_array_wrap_host(&k, CUK_I64, 1, &n, ks);
        cuk_array_wrap_host(&m, CUK_F32, 2, shp, xs);
        cuk_array *args[3] = {a, x, y};
        cuk_array *r = call("saxpy", args, 3);
        bool ok = r != NULL;
        for (int i = 0; ok && i < N; i++) ok = ((float *)cuk_array_host_data(r))[i] == 2.0f * xs[i] + ys[i];
        check(ok, "saxpy");
        cuk_array_free(r);
        r = call("total", &x, 1);
        check(r != NULL, "total");
        cuk_array_free(r);
        r = call("cols", &m, 1);
        ok = r != NULL;
        for (int c = 0; ok && c < 256; c++) {
            float w = xs[c];
            for (int i = 1; i < N / 256; i++) w = xs[i * 256 + c] > w ? xs[i * 256 + c] : w;
            ok = ((float *)cuk_array_host_data(r))[c] == w;
        }
        check(ok, "cols");
        cuk_array_free(r);
        r = call("scan", &k, 1);
        ok = r != NULL;
        int64_t acc = 0;
        for (int i = 0; ok && i < N; i++) ok = ((int64_t *)cuk_array_host_data(r))[i] == (acc += ks[i]);
        check(ok, "scan");
        cuk_array_free(r);
        r = call("order", &x, 1);
        ok = r != NULL;
        for (int i = 1; ok && i < N; i++) ok = ((float *)cuk_array_host_data(r))[i - 1] <= ((float *)cuk_array_host_data(r))[i];
        check(ok, "order");
        cuk_array_free(r);
        cuk_array_free(a), cuk_array_free(x), cuk_array_free(y), cuk_array_free(k), cuk_array_free(m);
    }
    return NULL;
}

static void *compiler(void *arg) {
    char src[256];
    snprintf(src, sizeof src, "fn f(x: f32[n]) -> f32 = sum(x * %d.0);\n", (int)(intptr_t)arg);
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU};
    cuk_program *p = NULL;
    check(cuk_program_compile(&p, src, &o) == CUK_OK, "compile");
    cuk_program_free(p);
    return NULL;
}

static atomic_int stop_now;
static int hook(void) { return atomic_load(&stop_now); }
static void *stopper(void *arg) {
    (void)arg;
    usleep(200000);
    atomic_store(&stop_now, 1);
    return NULL;
}

int main(void) {
    srand(3);
    for (int i = 0; i < N; i++) xs[i] = (float)(rand() % 65536) / 65536.0f, ys[i] = (float)(rand() % 65536) / 65536.0f, ks[i] = rand() % 11 - 5;
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU};
    if (cuk_program_compile(&prog, SRC, &o) != CUK_OK) {
        printf("FAIL compile: %s\n0 passed, 1 failed\n", cuk_last_error());
        return 1;
    }
    pthread_t t[THREADS * 2];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, caller, NULL);
    for (int i = 0; i < THREADS; i++) pthread_create(&t[THREADS + i], NULL, compiler, (void *)(intptr_t)i);
    for (int i = 0; i < 2 * THREADS; i++) pthread_join(t[i], NULL);
    /* an interrupt: the hook, asked by the waiting caller, stops a call that would run for
       hours; the next call runs */
    cuk_program_interrupt_hook(hook);
    pthread_t s;
    pthread_create(&s, NULL, stopper, NULL);
    int64_t big = (int64_t)1 << 50, four = 4;
    cuk_array *nb, *n4;
    cuk_array_scalar(&nb, CUK_I64, &big);
    cuk_array_scalar(&n4, CUK_I64, &four);
    cuk_fn *f;
    cuk_array *r = NULL;
    cuk_program_function(prog, "spin", &f);
    check(cuk_fn_call(f, &nb, 1, &r) == CUK_ERR_INTERRUPTED && !r, "interrupt");
    pthread_join(s, NULL);
    atomic_store(&stop_now, 0);
    check(cuk_fn_call(f, &n4, 1, &r) == CUK_OK && *(double *)cuk_array_host_data(r) == 6.0, "after the interrupt");
    cuk_array_free(r), cuk_array_free(nb), cuk_array_free(n4);
    cuk_program_interrupt_hook(NULL);
    cuk_program_free(prog);
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
