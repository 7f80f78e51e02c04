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
