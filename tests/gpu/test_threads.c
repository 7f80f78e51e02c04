/* Eight threads share one GPU, each compiling and running a different program (maps,
   reductions, scans, row kernels, lambdas, gathers) 20 times through its own session,
   and each result is compared with the CPU backend's (integers exactly, floats to a
   relative 1e-4; 1e-3 for the f32 scan). Prints one PASS/FAIL line per thread. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "exec/gpu/gpu.h"
#include "runtime/cuk.h"

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

static bool close_enough(const Arr *a, const Arr *b, double rtol, char *why, size_t n) {
    if (a->dt != b->dt || a->size != b->size) {
        snprintf(why, n, "type or size differs");
        return false;
    }
    for (int64_t i = 0; i < a->size; i++) {
        Scalar x = arr_get(a, i), y = arr_get(b, i);
        if (dtype_info[a->dt].is_float) {
            if (fabs(x.f - y.f) > rtol * (fabs(x.f) + fabs(y.f)) + 1e-30) {
                snprintf(why, n, "element %lld: gpu %.9g, cpu %.9g", (long long)i, x.f, y.f);
                return false;
            }
        } else if (x.i != y.i) {
            snprintf(why, n, "element %lld: gpu %lld, cpu %lld", (long long)i, (long long)x.i, (long long)y.i);
            return false;
        }
    }
    return true;
}

static void *worker(void *p) {
    Job *j = p;
    Arena a;
    arena_init(&a);
    Diag d;
    diag_init(&d, stderr);
    Src src;
    src_from_string(&a, "thread.cuk", progs[j->id], &src);
    Program *prog = compile_src(&a, &d, &src, NULL);
    const Fn *fn = prog ? program_find(prog, "f") : NULL;
    int64_t n = N;
    Arr *x = arr_new(DT_F32, 1, &n);
    for (int64_t i = 0; x && i < n; i++) ((float *)x->data)[i] = (float)((i * 7919 + j->id * 104729) % 1000) / 1000.0f;
    Arr *want = NULL;
    RtErr err = {0};
    if (!fn || !x || !cpu_run(prog, fn, &x, &want, stdout, &err)) {
        snprintf(j->why, sizeof j->why, "setup failed: %.200s", err.msg);
        j->bad = 1;
    }
    double rtol = j->id == 2 ? 1e-3 : 1e-4;
    for (int c = 0; c < CALLS && !j->bad; c++) {
        Arr *got = NULL;
        RtErr e2 = {0};
        if (!gpu_run(prog, fn, &x, &got, stdout, &e2)) {
            snprintf(j->why, sizeof j->why, "call %d failed: %.200s", c, e2.msg);
            j->bad = 1;
        } else if (!close_enough(got, want, rtol, j->why, sizeof j->why)) {
            j->bad = 1;
        }
        if (got) arr_release(got);
    }
    if (want) arr_release(want);
    if (x) arr_release(x);
    arena_free(&a);
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
