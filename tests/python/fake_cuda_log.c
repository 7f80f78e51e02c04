/* A logging layer over bench/fake_libcuda.c for tests/python/test_api_streams.py: it
   defines the stream, event and context calls that cuk's interop makes and writes one
   line per call to $CUK_FAKE_LOG; every other entry point comes from the fake driver it
   is linked against (dlsym on this library finds its own definitions first, then its
   dependencies'). Build:
     cc -shared -fPIC -o libfakecuda.so bench/fake_libcuda.c
     cc -shared -fPIC -o libcudalog.so tests/python/fake_cuda_log.c -L. -lfakecuda -Wl,-rpath,$PWD */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

static void say(const char *fmt, ...) {
    const char *path = getenv("CUK_FAKE_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

/* Events are numbered e1, e2, ... (the handle is the number), so that the log says
   which record a wait refers to. Streams are logged as the handles cuk passed. */
static long nevents;
CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    *e = (void *)(uintptr_t)__atomic_add_fetch(&nevents, 1, __ATOMIC_RELAXED);
    return 0;
}
CUresult cuEventDestroy_v2(void *e) {
    say("destroy e%lu", (unsigned long)(uintptr_t)e);
    return 0;
}
CUresult cuEventRecord(void *e, void *stream) {
    say("record e%lu on 0x%lx", (unsigned long)(uintptr_t)e, (unsigned long)(uintptr_t)stream);
    return 0;
}
CUresult cuStreamWaitEvent(void *stream, void *e, unsigned flags) {
    (void)flags;
    say("wait 0x%lx for e%lu", (unsigned long)(uintptr_t)stream, (unsigned long)(uintptr_t)e);
    return 0;
}
CUresult cuEventSynchronize(void *e) {
    (void)e;
    return 0;
}
CUresult cuEventQuery(void *e) {
    (void)e;
    return 0;
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
    (void)a, (void)b;
    *ms = 0.001f;
    return 0;
}
CUresult cuStreamSynchronize(void *stream) {
    say("sync 0x%lx", (unsigned long)(uintptr_t)stream);
    return 0;
}
CUresult cuCtxSynchronize(void) {
    say("ctxsync");
    return 0;
}
CUresult cuCtxPushCurrent_v2(void *c) {
    (void)c;
    say("push");
    return 0;
}
CUresult cuCtxPopCurrent_v2(void **c) {
    *c = NULL;
    say("pop");
    return 0;
}

/* Streams get handles of their own (0x1001, 0x1002, ...), so that the log tells them
   apart; launches, copies and fills say their stream; stream capture and graphs are
   logged and answered with dummies (a graph's "nodes" are the launches captured). */
static long nstreams;
CUresult cuStreamCreate(void **s, unsigned flags) {
    (void)flags;
    *s = (void *)(uintptr_t)(0x1000 + __atomic_add_fetch(&nstreams, 1, __ATOMIC_RELAXED));
    return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
    say("destroy stream 0x%lx", (unsigned long)(uintptr_t)s);
    return 0;
}
static _Thread_local void *capturing;
static _Thread_local long captured;
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *s, void **params, void **extra) {
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)params, (void)extra;
    if (capturing == s) captured++;
    say("launch on 0x%lx", (unsigned long)(uintptr_t)s);
    return 0;
}
CUresult cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void *s) {
    memset((void *)(uintptr_t)d, v, n);
    say("fill on 0x%lx", (unsigned long)(uintptr_t)s);
    return 0;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void *src, size_t n, void *s) {
    memcpy((void *)(uintptr_t)d, src, n);
    say("htod on 0x%lx", (unsigned long)(uintptr_t)s);
    return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, unsigned long long src, size_t n, void *s) {
    memcpy(d, (void *)(uintptr_t)src, n);
    say("dtoh on 0x%lx", (unsigned long)(uintptr_t)s);
    return 0;
}
CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long src, size_t n, void *s) {
    memmove((void *)(uintptr_t)d, (void *)(uintptr_t)src, n);
    say("dtod on 0x%lx", (unsigned long)(uintptr_t)s);
    return 0;
}
static int dummy_graph, dummy_exec;
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
    capturing = s;
    captured = 0;
    say("capture begin 0x%lx mode %d", (unsigned long)(uintptr_t)s, mode);
    return 0;
}
CUresult cuStreamEndCapture(void *s, void **g) {
    say("capture end 0x%lx (%ld launches)", (unsigned long)(uintptr_t)s, captured);
    capturing = NULL;
    *g = &dummy_graph;
    return 0;
}
CUresult cuGraphInstantiateWithFlags(void **x, void *g, unsigned long long f) {
    (void)g, (void)f;
    *x = &dummy_exec;
    return 0;
}
CUresult cuGraphGetNodes(void *g, void **nodes, size_t *n) {
    (void)g, (void)nodes;
    *n = (size_t)captured;
    return 0;
}
CUresult cuGraphLaunch(void *x, void *s) {
    (void)x;
    say("graph launch on 0x%lx", (unsigned long)(uintptr_t)s);
    return 0;
}
CUresult cuGraphExecDestroy(void *x) {
    (void)x;
    say("graph destroy");
    return 0;
}
CUresult cuGraphDestroy(void *g) {
    (void)g;
    return 0;
}
