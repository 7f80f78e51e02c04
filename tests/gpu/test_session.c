/* The GPU executor's session API on a real GPU: device arguments are borrowed, results
   are new pool blocks (never an argument), scalars come back on the host, errors carry
   their location, repeated calls leak nothing, and sessions work from several threads
   (one each, and one shared). Prints one PASS/FAIL line per check. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

static int npass, nfail;
static void check(int ok, const char *name, const char *detail) {
    if (ok) npass++;
    else nfail++;
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, detail && *detail ? ": " : "", detail ? detail : "");
    fflush(stdout);
}

static const char *src =
    "fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] {\n"
    "    return a * x + y;\n"
    "}\n"
    "fn ident(x: f32[n]) -> f32[n] {\n"
    "    return x;\n"
    "}\n"
    "fn total(x: f32[n]) -> f32 {\n"
    "    return sum(x);\n"
    "}\n"
    "fn centred(x: f32[n]) -> f32[n] {\n"
    "    return x - mean(x);\n"
    "}\n"
    "fn pick(x: f32[n], i: i64[m]) -> f32[m] {\n"
    "    return x[i];\n"
    "}\n"
    "fn twice(x: f32[n]) -> f32[n] {\n"
    "    return saxpy(1.0, x, x);\n"
    "}\n"
    "fn held(x: f32[n]) -> f32 {\n"
    "    let t = sum(x);\n"
    "    return t;\n"
    "}\n"
    "fn scaled(x: f32[n]) -> f32 {\n"
    "    let t = sum(x);\n"
    "    return t * 2.0;\n"
    "}\n"
    "fn both(x: f32[n]) -> (f32, f32) {\n"
    "    let t = sum(x);\n"
    "    return (t, t);\n"
    "}\n"
    "fn inner(x: f32[n]) -> f32 {\n"
    "    return total(x) + total(x);\n"
    "}\n"
    "fn csum(x: f32[n]) -> c64 {\n"
    "    return sum(complex(x, x * 2.0));\n"
    "}\n";

static Compiled comp;
static Program *prog;
static GpuVal farr(cuk_devptr p, int64_t n) {
    return (GpuVal){.dt = DT_F32, .rank = 1, .shape = {n}, .p = p, .borrowed = true};
}
static cuk_devptr upload_f32(const float *h, int64_t n) {
    cuk_devptr p = 0;
    if (cuk_mem_alloc(&p, (size_t)n * 4) != CUK_OK || cuk_memcpy_htod(p, h, (size_t)n * 4) != CUK_OK) return 0;
    return p;
}

/* Runs saxpy iters times on its own session (or the shared one) and checks each result. */
typedef struct Job {
    GpuSession *shared;
    int iters, bad;
} Job;
static void *worker(void *arg) {
    Job *j = arg;
    RtErr err = {0};
    GpuSession *s = j->shared ? j->shared : gpu_session_new(&comp, NULL, &err);
    Fn *fn = program_find(prog, "saxpy");
    enum { N = 1000 };
    float hx[N], hy[N], hz[N];
    for (int i = 0; i < N; i++) hx[i] = (float)i, hy[i] = 0.5f;
    cuk_devptr x = upload_f32(hx, N), y = upload_f32(hy, N);
    for (int it = 0; s && it < j->iters; it++) {
        GpuVal args[3] = {{.dt = DT_F32, .s.f = (double)(it % 7)}, farr(x, N), farr(y, N)}, r;
        if (!gpu_call(s, fn, args, &r, stdout, &err) || cuk_memcpy_dtoh(hz, r.p, sizeof hz) != CUK_OK) {
            j->bad++;
            break;
        }
        for (int i = 0; i < N; i++)
            if (hz[i] != (float)(it % 7) * hx[i] + 0.5f) {
                j->bad++;
                break;
            }
        cuk_mem_free(r.p);
    }
    if (!s) j->bad++;
    cuk_mem_free(x);
    cuk_mem_free(y);
    if (!j->shared) gpu_session_free(s);
    return NULL;
}

int main(void) {
    if (cuk_init() != CUK_OK) {
        printf("SKIP no GPU: %s\n", cuk_last_error());
        return 0;
    }
    Arena a;
    arena_init(&a);
    Diag d;
    diag_init(&d, stderr);
    if (!pipeline_text(&comp, &a, &d, "session.cuk", src, STAGE_CUDA)) {
        printf("FAIL compile\n");
        return 1;
    }
    prog = comp.prog;
    RtErr err = {0};
    GpuSession *s = gpu_session_new(&comp, NULL, &err);
    check(s != NULL, "session_new", err.msg);
    if (!s) return 1;
    char msg[1200];

    enum { N = 4097 };
    float *h = malloc(N * 4), *g = malloc(N * 4);
    for (int i = 0; i < N; i++) h[i] = (float)(i % 100) * 0.25f;
    cuk_devptr x = upload_f32(h, N);

    /* saxpy on borrowed device arrays */
    GpuVal args[3] = {{.dt = DT_F32, .s.f = 2.0}, farr(x, N), farr(x, N)}, r;
    bool ok = gpu_call(s, program_find(prog, "saxpy"), args, &r, stdout, &err);
    ok = ok && r.dt == DT_F32 && r.rank == 1 && r.shape[0] == N && r.p && r.p != x && !r.borrowed;
    ok = ok && cuk_memcpy_dtoh(g, r.p, N * 4) == CUK_OK;
    for (int i = 0; ok && i < N; i++) ok = g[i] == 3.0f * h[i];
    check(ok, "saxpy result on the device", err.msg);
    cuk_mem_free(r.p);

    /* an argument passed through comes back as a copy */
    ok = gpu_call(s, program_find(prog, "ident"), &args[1], &r, stdout, &err) && r.p && r.p != x;
    ok = ok && cuk_memcpy_dtoh(g, r.p, N * 4) == CUK_OK && memcmp(g, h, N * 4) == 0;
    check(ok, "pass-through result is a copy", err.msg);
    cuk_mem_free(r.p);
    ok = cuk_memcpy_dtoh(g, x, N * 4) == CUK_OK && memcmp(g, h, N * 4) == 0;
    check(ok, "arguments untouched", NULL);

    /* a scalar result on the host */
    double want = 0;
    for (int i = 0; i < N; i++) want += h[i];
    ok = gpu_call(s, program_find(prog, "total"), &args[1], &r, stdout, &err) && r.rank == 0 && r.p == 0;
    snprintf(msg, sizeof msg, "got %.9g want %.9g %s", r.s.f, want, err.msg);
    check(ok && fabs(r.s.f - want) <= 1e-5 * want, "scalar result", msg);

    /* GPU_CALL_DEVICE_SCALARS: a kernel's scalar stays on the device (a one-element
       block the caller owns); one the host computed from it comes back on the host */
    const char *dev_fns[] = {"total", "held", "scaled", "inner"};
    for (int q = 0; q < 4; q++) {
        err = (RtErr){0};
        ok = gpu_call_into(s, program_find(prog, dev_fns[q]), &args[1], NULL, &r, stdout, &err,
                           GPU_CALL_DEVICE_SCALARS, NULL) && r.rank == 0;
        double got = r.s.f, scale = q >= 2 ? 2.0 : 1.0;
        bool on_dev = r.p != 0;
        float fv = 0;
        if (ok && on_dev) ok = cuk_memcpy_dtoh(&fv, r.p, 4) == CUK_OK, got = fv, cuk_mem_free(r.p);
        ok = ok && on_dev == (q < 2);
        snprintf(msg, sizeof msg, "%s: got %.9g want %.9g (on the device: %d) %s", dev_fns[q], got, scale * want, on_dev,
                 err.msg);
        check(ok && fabs(got - scale * want) <= 1e-5 * scale * want, "scalar result left on the device", msg);
    }
    GpuVal r2[2];
    err = (RtErr){0};
    ok = gpu_call_into(s, program_find(prog, "both"), &args[1], NULL, r2, stdout, &err, GPU_CALL_DEVICE_SCALARS, NULL);
    ok = ok && r2[0].p && r2[1].p && r2[0].p != r2[1].p; /* one block returned twice: two blocks */
    float f2[2] = {0, 0};
    ok = ok && cuk_memcpy_dtoh(&f2[0], r2[0].p, 4) == CUK_OK && cuk_memcpy_dtoh(&f2[1], r2[1].p, 4) == CUK_OK;
    ok = ok && f2[0] == f2[1] && fabs(f2[0] - want) <= 1e-5 * want;
    check(ok, "one device scalar returned twice", err.msg);
    if (r2[0].p) cuk_mem_free(r2[0].p);
    if (r2[1].p && r2[1].p != r2[0].p) cuk_mem_free(r2[1].p);

    /* a complex sum: its two part sums packed on the device */
    err = (RtErr){0};
    ok = gpu_call_into(s, program_find(prog, "csum"), &args[1], NULL, &r, stdout, &err, GPU_CALL_DEVICE_SCALARS, NULL);
    ok = ok && r.dt == DT_C64 && r.rank == 0 && r.p;
    float cz[2] = {0, 0};
    ok = ok && cuk_memcpy_dtoh(cz, r.p, 8) == CUK_OK;
    snprintf(msg, sizeof msg, "got %.9g%+.9gj want %.9g%+.9gj %s", cz[0], cz[1], want, 2 * want, err.msg);
    check(ok && fabs(cz[0] - want) <= 1e-5 * want && fabs(cz[1] - 2 * want) <= 2e-5 * want,
          "complex sum packed on the device", msg);
    if (r.p) cuk_mem_free(r.p);
    err = (RtErr){0};
    ok = gpu_call(s, program_find(prog, "csum"), &args[1], &r, stdout, &err) && r.rank == 0 && r.p == 0;
    snprintf(msg, sizeof msg, "got %.9g%+.9gj %s", r.s.z[0], r.s.z[1], err.msg);
    check(ok && fabs(r.s.z[0] - want) <= 1e-5 * want && fabs(r.s.z[1] - 2 * want) <= 2e-5 * want,
          "complex sum on the host", msg);

    /* a reduction feeding a kernel; a call of another function */
    ok = gpu_call(s, program_find(prog, "centred"), &args[1], &r, stdout, &err);
    ok = ok && cuk_memcpy_dtoh(g, r.p, N * 4) == CUK_OK;
    for (int i = 0; ok && i < N; i++) ok = fabs(g[i] - (h[i] - want / N)) <= 1e-4;
    check(ok, "reduction then map", err.msg);
    cuk_mem_free(r.p);
    ok = gpu_call(s, program_find(prog, "twice"), &args[1], &r, stdout, &err);
    ok = ok && cuk_memcpy_dtoh(g, r.p, N * 4) == CUK_OK;
    for (int i = 0; ok && i < N; i++) ok = g[i] == 2.0f * h[i];
    check(ok, "call inside a call", err.msg);
    cuk_mem_free(r.p);

    /* size mismatch: a run-time error with a location, the session still usable */
    GpuVal bad[3] = {args[0], farr(x, N), farr(x, N - 1)};
    err = (RtErr){0};
    ok = !gpu_call(s, program_find(prog, "saxpy"), bad, &r, stdout, &err) && err.set && r.dt == DT_VOID;
    check(ok, "shape mismatch reported", err.msg);
    err = (RtErr){0};
    check(gpu_call(s, program_find(prog, "total"), &args[1], &r, stdout, &err), "usable after an error", err.msg);

    /* gather: in bounds, negative, out of bounds */
    int64_t hi[4] = {0, 5, N - 1, -1};
    cuk_devptr ip = 0;
    cuk_mem_alloc(&ip, sizeof hi);
    cuk_memcpy_htod(ip, hi, sizeof hi);
    GpuVal gargs[2] = {farr(x, N), {.dt = DT_I64, .rank = 1, .shape = {3}, .p = ip}};
    err = (RtErr){0};
    ok = gpu_call(s, program_find(prog, "pick"), gargs, &r, stdout, &err) && cuk_memcpy_dtoh(g, r.p, 12) == CUK_OK;
    ok = ok && g[0] == h[0] && g[1] == h[5] && g[2] == h[N - 1];
    check(ok, "gather", err.msg);
    cuk_mem_free(r.p);
    gargs[1].shape[0] = 4;
    err = (RtErr){0};
    ok = gpu_call(s, program_find(prog, "pick"), gargs, &r, stdout, &err) && cuk_memcpy_dtoh(g, r.p, 16) == CUK_OK;
    ok = ok && g[3] == h[N - 1];
    check(ok, "gather with a negative index (needs the emitter's wrap)", err.msg);
    cuk_mem_free(r.p);
    hi[1] = N;
    cuk_memcpy_htod(ip, hi, sizeof hi);
    err = (RtErr){0};
    ok = !gpu_call(s, program_find(prog, "pick"), gargs, &r, stdout, &err) && strstr(err.msg, "out of bounds");
    snprintf(msg, sizeof msg, "%s (needs the emitter's KP_ERR check)", err.set ? err.msg : "no error");
    check(ok, "gather out of bounds reported", msg);
    cuk_mem_free(r.p);
    cuk_mem_free(ip);
    check(cuk_synchronize() == CUK_OK, "no fault", cuk_last_error());

    /* repeated calls leak nothing: pool bytes in use return to where they were */
    cuk_mem_stats m0, m1;
    cuk_mem_stats_get(&m0);
    for (int i = 0; i < 2000; i++) {
        if (!gpu_call(s, program_find(prog, "saxpy"), args, &r, stdout, &err)) break;
        cuk_mem_free(r.p);
        if (!gpu_call(s, program_find(prog, "total"), &args[1], &r, stdout, &err)) break;
    }
    cuk_mem_stats_get(&m1);
    snprintf(msg, sizeof msg, "in use %zu -> %zu bytes, %llu driver allocs -> %llu", m0.in_use, m1.in_use,
             m0.driver_allocs, m1.driver_allocs);
    check(m1.in_use == m0.in_use && m1.driver_allocs <= m0.driver_allocs + 2, "no leak over 4000 calls", msg);

    /* threads: four sessions, then four threads on one session */
    pthread_t th[4];
    Job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (Job){.shared = NULL, .iters = 200};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    int nbad = 0;
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL), nbad += jobs[i].bad;
    check(nbad == 0, "four threads, a session each", NULL);
    for (int i = 0; i < 4; i++) {
        jobs[i] = (Job){.shared = s, .iters = 200};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    nbad = 0;
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL), nbad += jobs[i].bad;
    check(nbad == 0, "four threads sharing a session", NULL);

    cuk_mem_free(x);
    free(h), free(g);
    gpu_session_free(s);
    arena_free(&a);
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
