/* Eight threads share one GPU, each compiling (through the program API) and running a
   different program (maps, reductions, scans, row kernels, lambdas, gathers) 20 times,
   and each result is compared with the CPU backend's (integers exactly, floats to a
   relative 1e-4; 1e-3 for the f32 scan). Prints one PASS/FAIL line per thread. */
#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cuk_program.h"

#define N 100003
#define CALLS 20

static const char *const progs[8] = {
    "fn f(x: f32[n]) -> f32[n] = x * 2.0 + 1.0;\n",
    "fn f(x: f32[n]) -> f32 = sum(x * x);\n",
    "fn f(x: f32[n]) -> f32[n] = cumsum(x);\n",
    "fn f(x: f32[n]) -> f32 = max(x) - min(x);\n",
    "fn f(x: f32[n]) -> i64 = argmax(sin(x * 100.0));\n",
    "fn f(x: f32[n]) -> f32[n] = softmax(x);\n",
    "fn f(x: f32[n]) -> f32[n] = reverse(x) + x[iota(n) / 2];\n",
    "fn f(x: f32[n]) -> f32 = reduce(|a, b| maximum(a, b), -1000.0, x * 3.0 - 1.0);\n",
};

typedef struct Job {
    int id;
    char why[256];
    int bad;
} Job;

/* Element i of a host array as a double (the results are f32, i64 or f32 scalars). */
static double elem(const cuk_array *a, int64_t i) {
    const void *d = cuk_array_host_data(a);
    switch (cuk_array_dtype(a)) {
    case CUK_F32: return ((const float *)d)[i];
    case CUK_I64: return (double)((const int64_t *)d)[i];
    default: return NAN;
    }
}

static bool close_enough(const cuk_array *a, const cuk_array *b, double rtol, char *why, size_t n) {
    if (cuk_array_dtype(a) != cuk_array_dtype(b) || cuk_array_size(a) != cuk_array_size(b)) {
        snprintf(why, n, "type or size differs");
        return false;
    }
    for (int64_t i = 0; i < cuk_array_size(a); i++) {
        double x = elem(a, i), y = elem(b, i);
        bool exact = cuk_array_dtype(a) != CUK_F32;
        if (exact ? x != y : !(fabs(x - y) <= rtol * (fabs(x) + fabs(y)) + 1e-30)) {
            snprintf(why, n, "element %lld: gpu %.9g, cpu %.9g", (long long)i, x, y);
            return false;
        }
    }
    return true;
}

/* Compiles progs[j->id] for both backends through the program API, as Python does. */
static void *worker(void *p) {
    Job *j = p;
    cuk_program *gpu = NULL, *cpu = NULL;
    cuk_fn *fg = NULL, *fc = NULL;
    cuk_array *x = NULL, *want = NULL;
    cuk_program_opts og = {.backend = CUK_BACKEND_GPU, .name = "thread.cuk"};
    cuk_program_opts oc = {.backend = CUK_BACKEND_CPU, .name = "thread.cuk"};
    int64_t n = N;
    float *h = malloc(sizeof(float) * N);
    for (int64_t i = 0; h && i < n; i++) h[i] = (float)((i * 7919 + j->id * 104729) % 1000) / 1000.0f;
    if (!h || cuk_program_compile(&gpu, progs[j->id], &og) || cuk_program_compile(&cpu, progs[j->id], &oc) ||
        cuk_program_function(gpu, "f", &fg) || cuk_program_function(cpu, "f", &fc) ||
        cuk_array_from_host(&x, CUK_F32, 1, &n, h, CUK_ON_HOST) || cuk_fn_call(fc, &x, 1, &want)) {
        snprintf(j->why, sizeof j->why, "setup failed: %.200s", cuk_last_error());
        j->bad = 1;
    }
    double rtol = j->id == 2 ? 1e-3 : 1e-4;
    for (int c = 0; c < CALLS && !j->bad; c++) {
        cuk_array *got = NULL;
        if (cuk_fn_call(fg, &x, 1, &got)) {
            snprintf(j->why, sizeof j->why, "call %d failed: %.200s", c, cuk_last_error());
            j->bad = 1;
        } else if (!close_enough(got, want, rtol, j->why, sizeof j->why)) {
            j->bad = 1;
        }
        cuk_array_free(got);
    }
    cuk_array_free(want);
    cuk_array_free(x);
    cuk_program_free(gpu);
    cuk_program_free(cpu);
    free(h);
    return NULL;
}

int main(void) {
    int ok = 0;
    if (cuk_gpu_available(&ok) != CUK_OK || !ok) {
        printf("FAIL no GPU: %s\n", cuk_last_error());
        return 1;
    }
    pthread_t th[8];
    Job jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (Job){.id = i};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    int nbad = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        printf("%s thread %d: %s%s%s\n", jobs[i].bad ? "FAIL" : "PASS", i, progs[i], jobs[i].bad ? "  " : "",
               jobs[i].why);
        nbad += jobs[i].bad;
    }
    printf("%d passed, %d failed\n", 8 - nbad, nbad);
    return nbad != 0;
}
