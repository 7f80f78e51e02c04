/* A stand-in libcuda for measuring cuk's host-side call overhead on a machine without
   a GPU: every driver call succeeds at once, "device" memory is host memory, kernels do
   not run. Build and use:
     gcc -std=c11 -O2 -shared -fPIC -o /tmp/fake_libcuda.so bench/fake_libcuda.c
     CUK_LIBCUDA=/tmp/fake_libcuda.so CUK_FAKE_GPU=1 python3 bench/python_overhead.py
   Results of cuk functions are garbage (no kernel runs); only timings mean something. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static int dummy_ctx, dummy_mod, dummy_fn, dummy_stream;
static int64_t launches;

#define OK return 0
CUresult cuInit(unsigned f) { (void)f; OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; OK; }
CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_FAKE"; OK; }
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "fake driver"; OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; OK; }
CUresult cuDeviceGet(int *d, int i) { *d = i; OK; }
CUresult cuDeviceGetName(char *s, int n, int d) {
    (void)d;
    strncpy(s, "Fake GPU (no kernels run)", (size_t)n);
    OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
    (void)d;
    switch (attr) {
    case 1: *v = 1024; break;        /* max threads per block */
    case 8: *v = 49152; break;       /* shared memory per block */
    case 10: *v = 32; break;         /* warp size */
    case 16: *v = 132; break;        /* SMs */
    case 38: *v = 50 << 20; break;   /* L2 */
    case 39: *v = 2048; break;       /* threads per SM */
    case 75: *v = 9; break;          /* compute capability */
    case 76: *v = 0; break;
    case 97: *v = 232448; break;     /* opt-in shared memory */
    default: *v = 1; break;
    }
    OK;
}
CUresult cuDeviceTotalMem_v2(size_t *n, int d) { (void)d; *n = (size_t)80 << 30; OK; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &dummy_ctx; OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; OK; }
static _Thread_local void *cur;
CUresult cuCtxGetCurrent(void **c) { *c = cur; OK; }
CUresult cuCtxSetCurrent(void *c) { cur = c; OK; }
CUresult cuCtxPushCurrent_v2(void *c) { cur = c; OK; }
CUresult cuCtxPopCurrent_v2(void **c) { *c = cur; OK; }
CUresult cuCtxSynchronize(void) { OK; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = *t = (size_t)80 << 30; OK; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
    if (!m) return 2;
    *p = (CUdeviceptr)(uintptr_t)m;
    OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); OK; }
/* managed memory: host memory; the advice given to the last few ranges, kept by their start */
typedef struct {
    int type, id;
} CUmemLocation;
static struct {
    CUdeviceptr p;
    int read_mostly, preferred, accessed, last_prefetch;
} ranges[16];
static int range_of(CUdeviceptr p) {
    for (int i = 0; i < 16; i++)
        if (ranges[i].p == p) return i;
    static int next;
    int i = next++ % 16;
    ranges[i].p = p, ranges[i].read_mostly = 0, ranges[i].preferred = -2, ranges[i].accessed = -2;
    ranges[i].last_prefetch = -2;
    return i;
}
static int dev_of(CUmemLocation l) {
    return l.type == 1 ? l.id : l.type == 2 ? -1 : l.type == 3 ? -16 - l.id : l.type == 4 ? -3 : -2;
}
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned f) {
    if (f != 1 && f != 2) return 1;
    return cuMemAlloc_v2(p, n);
}
CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, CUmemLocation l) {
    (void)n;
    int i = range_of(p);
    switch (advice) {
    case 1: ranges[i].read_mostly = 1; break;
    case 2: ranges[i].read_mostly = 0; break;
    case 3: ranges[i].preferred = dev_of(l); break;
    case 4: ranges[i].preferred = -2; break;
    case 5: ranges[i].accessed = dev_of(l); break;
    case 6: ranges[i].accessed = -2; break;
    default: return 1;
    }
    OK;
}
CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned f, void *st) {
    (void)n, (void)f, (void)st;
    ranges[range_of(p)].last_prefetch = dev_of(l);
    OK;
}
CUresult cuMemRangeGetAttribute(void *data, size_t size, int attr, CUdeviceptr p, size_t n) {
    (void)n;
    int i = range_of(p), *v = data;
    switch (attr) {
    case 1: *v = ranges[i].read_mostly; break;
    case 2: *v = ranges[i].preferred; break;
    case 3:
        for (size_t k = 0; k < size / sizeof(int); k++) v[k] = -2;
        if (ranges[i].accessed != -2) v[0] = ranges[i].accessed;
        break;
    case 4: *v = ranges[i].last_prefetch; break;
    case 5: case 7: { /* location types: the numbers above are devices, -1 the host, -2 none, -3 the current NUMA node, -16 - n node n */
        int l = attr == 5 ? ranges[i].preferred : ranges[i].last_prefetch;
        *v = l >= 0 ? 1 : l == -1 ? 2 : l == -3 ? 4 : l <= -16 ? 3 : 0;
        break;
    }
    case 6: case 8: {
        int l = attr == 6 ? ranges[i].preferred : ranges[i].last_prefetch;
        *v = l >= 0 ? l : l <= -16 ? -16 - l : 0;
        break;
    }
    default: return 1;
    }
    OK;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned f) {
    (void)f;
    *p = malloc(n ? n : 1);
    return *p ? 0 : 2;
}
CUresult cuMemFreeHost(void *p) { free(p); OK; }
CUresult cuMemHostGetFlags(unsigned *f, void *p) { (void)p; *f = 0; OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); OK; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); OK; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
    memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) { (void)st; return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) { (void)st; return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) { (void)st; return cuMemcpyDtoD_v2(d, s, n); }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) {
    (void)st;
    memset((void *)(uintptr_t)d, v, n);
    OK;
}
CUresult cuStreamCreate(void **s, unsigned f) { (void)f; *s = &dummy_stream; OK; }
CUresult cuStreamDestroy_v2(void *s) {
    (void)s;
    OK;
}
/* priorities 0 (least) to -5 (greatest), as an H100's; prioritised streams are the
   entries of prio_streams (their handles), other streams have priority 0 */
static int prio_streams[64], nprio;
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
    *least = 0, *greatest = -5;
    OK;
}
CUresult cuStreamCreateWithPriority(void **s, unsigned f, int prio) {
    (void)f;
    if (nprio == 64) return 2;
    prio_streams[nprio] = prio;
    *s = &prio_streams[nprio++];
    OK;
}
CUresult cuStreamGetPriority(void *s, int *prio) {
    *prio = 0;
    for (int i = 0; i < nprio; i++)
        if (s == &prio_streams[i]) *prio = prio_streams[i];
    OK;
}
CUresult cuDeviceGetUuid_v2(unsigned char *u, int d) {
    for (int i = 0; i < 16; i++) u[i] = (unsigned char)(16 * d + i);
    OK;
}
CUresult cuStreamSynchronize(void *s) { (void)s; OK; }
CUresult cuStreamQuery(void *s) { (void)s; OK; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s, (void)e, (void)f; OK; }
CUresult cuEventCreate(void **e, unsigned f) {
    (void)f;
    *e = malloc(8);
    return *e ? 0 : 2;
}
CUresult cuEventDestroy_v2(void *e) { free(e); OK; }
CUresult cuEventRecord(void *e, void *s) { (void)e, (void)s; OK; }
CUresult cuEventSynchronize(void *e) { (void)e; OK; }
CUresult cuEventQuery(void *e) { (void)e; OK; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a, (void)b; *ms = 0.001f; OK; }
CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) {
    (void)img, (void)n, (void)o, (void)v;
    *m = &dummy_mod;
    OK;
}
CUresult cuModuleUnload(void *m) { (void)m; OK; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { (void)m, (void)name; *f = &dummy_fn; OK; }
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *n, void *m, const char *name) {
    (void)m, (void)name;
    static _Alignas(16) unsigned char g[65536];
    *p = (CUdeviceptr)(uintptr_t)g;
    *n = sizeof g;
    OK;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
    (void)f;
    *v = attr == 0 ? 1024 : attr == 4 ? 32 : 0;
    OK;
}
CUresult cuOccupancyMaxPotentialBlockSize(int *grid, int *block, void *f, size_t (*b2d)(int), size_t dyn, int lim) {
    (void)f, (void)b2d, (void)dyn, (void)lim;
    *grid = 264;
    *block = 256;
    OK;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int block, size_t dyn) {
    (void)f, (void)block, (void)dyn;
    *n = 8;
    OK;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *s, void **params, void **extra) {
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)s, (void)params, (void)extra;
    __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
    OK;
}

/* For cuda.bindings (which finds every entry point through this): the fake's own
   definition of symbol, or of symbol_v3 / symbol_v2; a missing one is reported as such
   (status 1, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND). */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
    (void)version, (void)flags;
    static const char *const sfx[] = {"_v3", "_v2", ""};
    *pfn = NULL;
    for (int i = 0; i < 3 && !*pfn; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s%s", symbol, sfx[i]);
        *pfn = dlsym(RTLD_DEFAULT, name);
    }
    if (status) *status = *pfn ? 0 : 1;
    return *pfn ? 0 : 500; /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuDevicePrimaryCtxSetFlags_v2(int d, unsigned f) {
    (void)d, (void)f;
    OK;
}
/* NVRTC, finding this library as libcuda.so.1, asks for the driver's private tables:
   there are none (it then works as without a driver) */
CUresult cuGetExportTable(const void **table, const void *id) {
    (void)id;
    *table = NULL;
    return 500; /* CUDA_ERROR_NOT_FOUND */
}
/* every fake kernel has no parameters */
CUresult cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) {
    (void)f, (void)i;
    *off = *size = 0;
    return 1; /* CUDA_ERROR_INVALID_VALUE: past the last one */
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *st) {
    (void)st;
    for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)d + 2 * i, &v, 2);
    OK;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *st) {
    (void)st;
    for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)d + 4 * i, &v, 4);
    OK;
}
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *b, void *f, int n, int block) {
    (void)f, (void)block;
    *b = n > 0 ? (size_t)(228 << 10) / (size_t)n : 0;
    OK;
}
