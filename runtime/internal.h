/* Internals shared by the runtime/ sources: the Driver API and NVRTC declared by hand (values
   copied from CUDA 13's cuda.h and nvrtc.h; we never include them, so cuk builds
   without the toolkit), the dlopen'd function tables and error helpers. */
#ifndef CUK_RUNTIME_INTERNAL_H
#define CUK_RUNTIME_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuk.h"

/* ---- Driver API subset ------------------------------------------------------------- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
enum { CU_STREAM_CAPTURE_MODE_RELAXED = 2 };
typedef size_t (*CUoccupancyB2DSize)(int blockSize);
/* cuLaunchKernelEx's configuration (cuda.h's CUlaunchConfig, CUlaunchAttribute), with
   the one attribute we set: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION. */
enum { CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4 };
typedef struct CUlaunchAttribute {
    int id;
    char pad[4];
    union {
        char pad[64];
        struct {
            unsigned x, y, z;
        } clusterDim;
        int cooperative;
    } value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig {
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    struct CUstream_st *hStream;
    CUlaunchAttribute *attrs;
    unsigned numAttrs;
} CUlaunchConfig;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
};
enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
};
enum { CU_STREAM_NON_BLOCKING = 0x1 };
enum { CU_EVENT_DEFAULT = 0x0, CU_EVENT_DISABLE_TIMING = 0x2 };
enum { CU_MEMHOSTALLOC_PORTABLE = 0x01 };
/* Managed memory (cuda.h's CUmemLocation, CUmem_advise, CUmem_range_attribute). */
typedef struct CUmemLocation {
    int type; /* CU_MEM_LOCATION_TYPE_* */
    int id;
} CUmemLocation;
enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0,
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_LOCATION_TYPE_HOST = 2,
    CU_MEM_LOCATION_TYPE_HOST_NUMA = 3,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4,
};
enum { CU_MEM_ATTACH_GLOBAL = 0x1 };
enum { CU_DEVICE_CPU = -1, CU_DEVICE_INVALID = -2 };
enum {
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* One X-macro row per driver entry point: our field name, the exported symbol
   (the versioned one where cuda.h #defines it so), whether it is required,
   and the signature. */
#define CU_FUNCS(X)                                                                              \
    X(cuInit, "cuInit", 1, (unsigned))                                                           \
    X(cuDriverGetVersion, "cuDriverGetVersion", 1, (int *))                                      \
    X(cuGetErrorName, "cuGetErrorName", 1, (CUresult, const char **))                           \
    X(cuGetErrorString, "cuGetErrorString", 1, (CUresult, const char **))                       \
    X(cuDeviceGetCount, "cuDeviceGetCount", 1, (int *))                                          \
    X(cuDeviceGet, "cuDeviceGet", 1, (CUdevice *, int))                                          \
    X(cuDeviceGetName, "cuDeviceGetName", 1, (char *, int, CUdevice))                            \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 1, (int *, int, CUdevice))                  \
    X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", 1, (size_t *, CUdevice))                          \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1, (CUcontext *, CUdevice))          \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 1, (CUdevice))                  \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", 1, (CUcontext *))                                      \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", 1, (CUcontext))                                        \
    X(cuCtxSynchronize, "cuCtxSynchronize", 1, (void))                                           \
    X(cuCtxGetLimit, "cuCtxGetLimit", 0, (size_t *, int))                                        \
    X(cuCtxSetLimit, "cuCtxSetLimit", 0, (int, size_t))                                          \
    X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", 1, (CUcontext))                                   \
    X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", 1, (CUcontext *))                                   \
    X(cuMemGetInfo, "cuMemGetInfo_v2", 1, (size_t *, size_t *))                                  \
    X(cuMemAlloc, "cuMemAlloc_v2", 1, (CUdeviceptr *, size_t))                                   \
    X(cuMemFree, "cuMemFree_v2", 1, (CUdeviceptr))                                               \
    X(cuMemHostAlloc, "cuMemHostAlloc", 1, (void **, size_t, unsigned))                          \
    X(cuMemFreeHost, "cuMemFreeHost", 1, (void *))                                               \
    X(cuPointerGetAttributes, "cuPointerGetAttributes", 0, (unsigned, int *, void **, CUdeviceptr)) \
    X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 1, (CUdeviceptr, const void *, size_t))                   \
    X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 1, (void *, CUdeviceptr, size_t))                         \
    X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", 1, (CUdeviceptr, CUdeviceptr, size_t))                    \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", 1, (CUdeviceptr, const void *, size_t, CUstream)) \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 1, (void *, CUdeviceptr, size_t, CUstream))     \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", 1, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
    X(cuMemsetD8Async, "cuMemsetD8Async", 1, (CUdeviceptr, unsigned char, size_t, CUstream))     \
    X(cuMemsetD16Async, "cuMemsetD16Async", 0, (CUdeviceptr, unsigned short, size_t, CUstream))  \
    X(cuMemsetD32Async, "cuMemsetD32Async", 0, (CUdeviceptr, unsigned, size_t, CUstream))        \
    X(cuMemAllocAsync, "cuMemAllocAsync", 0, (CUdeviceptr *, size_t, CUstream))                  \
    X(cuMemFreeAsync, "cuMemFreeAsync", 0, (CUdeviceptr, CUstream))                              \
    X(cuMemAllocManaged, "cuMemAllocManaged", 0, (CUdeviceptr *, size_t, unsigned))               \
    X(cuMemAdvise, "cuMemAdvise_v2", 0, (CUdeviceptr, size_t, int, CUmemLocation))                \
    X(cuMemPrefetchAsync, "cuMemPrefetchAsync_v2", 0, (CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream)) \
    X(cuMemRangeGetAttribute, "cuMemRangeGetAttribute", 0, (void *, size_t, int, CUdeviceptr, size_t)) \
    X(cuStreamCreate, "cuStreamCreate", 1, (CUstream *, unsigned))                               \
    X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", 0, (CUstream *, unsigned, int))    \
    X(cuStreamGetPriority, "cuStreamGetPriority", 0, (CUstream, int *))                          \
    X(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", 0, (int *, int *))             \
    X(cuDeviceGetUuid, "cuDeviceGetUuid_v2", 0, (unsigned char *, CUdevice))                     \
    X(cuStreamDestroy, "cuStreamDestroy_v2", 1, (CUstream))                                      \
    X(cuStreamSynchronize, "cuStreamSynchronize", 1, (CUstream))                                 \
    X(cuStreamQuery, "cuStreamQuery", 1, (CUstream))                                             \
    X(cuStreamWaitEvent, "cuStreamWaitEvent", 1, (CUstream, CUevent, unsigned))                  \
    X(cuEventCreate, "cuEventCreate", 1, (CUevent *, unsigned))                                  \
    X(cuEventDestroy, "cuEventDestroy_v2", 1, (CUevent))                                         \
    X(cuEventRecord, "cuEventRecord", 1, (CUevent, CUstream))                                    \
    X(cuEventSynchronize, "cuEventSynchronize", 1, (CUevent))                                    \
    X(cuEventQuery, "cuEventQuery", 1, (CUevent))                                                \
    X(cuEventElapsedTime_v1, "cuEventElapsedTime", 0, (float *, CUevent, CUevent))               \
    X(cuEventElapsedTime_v2, "cuEventElapsedTime_v2", 0, (float *, CUevent, CUevent))            \
    X(cuModuleLoadDataEx, "cuModuleLoadDataEx", 1, (CUmodule *, const void *, unsigned, int *, void **)) \
    X(cuModuleUnload, "cuModuleUnload", 1, (CUmodule))                                           \
    X(cuModuleGetFunction, "cuModuleGetFunction", 1, (CUfunction *, CUmodule, const char *))     \
    X(cuModuleGetGlobal, "cuModuleGetGlobal_v2", 1, (CUdeviceptr *, size_t *, CUmodule, const char *)) \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", 1, (int *, int, CUfunction))                     \
    X(cuFuncGetParamInfo, "cuFuncGetParamInfo", 0, (CUfunction, size_t, size_t *, size_t *))     \
    X(cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize", 1,                   \
      (int *, int *, CUfunction, CUoccupancyB2DSize, size_t, int))                               \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 1, \
      (int *, CUfunction, int, size_t))                                                          \
    X(cuOccupancyAvailableDynamicSMemPerBlock, "cuOccupancyAvailableDynamicSMemPerBlock", 0,       \
      (size_t *, CUfunction, int, int))                                                          \
    X(cuLaunchKernel, "cuLaunchKernel", 1,                                                       \
      (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
       void **, void **))                                                                        \
    X(cuLaunchKernelEx, "cuLaunchKernelEx", 0, (const CUlaunchConfig *, CUfunction, void **, void **)) \
    X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", 0, (CUstream, int))                      \
    X(cuStreamEndCapture, "cuStreamEndCapture", 0, (CUstream, CUgraph *))                        \
    X(cuStreamIsCapturing, "cuStreamIsCapturing", 0, (CUstream, int *))                          \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 0, (CUgraphExec *, CUgraph, unsigned long long)) \
    X(cuGraphLaunch, "cuGraphLaunch", 0, (CUgraphExec, CUstream))                                \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", 0, (CUgraphExec))                                \
    X(cuGraphDestroy, "cuGraphDestroy", 0, (CUgraph))                                            \
    X(cuGraphGetNodes, "cuGraphGetNodes", 0, (CUgraph, CUgraphNode *, size_t *))

typedef struct CuDriver {
#define X(field, sym, req, args) CUresult (*field) args;
    CU_FUNCS(X)
#undef X
} CuDriver;

/* ---- NVRTC subset ------------------------------------------------------------------- */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_COMPILATION = 6 };

#define NVRTC_FUNCS(X)                                                                           \
    X(nvrtcVersion, "nvrtcVersion", 1, (int *, int *))                                           \
    X(nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", 1, (int *))                        \
    X(nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", 1, (int *))                              \
    X(nvrtcCreateProgram, "nvrtcCreateProgram", 1,                                               \
      (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *)) \
    X(nvrtcDestroyProgram, "nvrtcDestroyProgram", 1, (nvrtcProgram *))                           \
    X(nvrtcCompileProgram, "nvrtcCompileProgram", 1, (nvrtcProgram, int, const char *const *))   \
    X(nvrtcGetPTXSize, "nvrtcGetPTXSize", 1, (nvrtcProgram, size_t *))                           \
    X(nvrtcGetPTX, "nvrtcGetPTX", 1, (nvrtcProgram, char *))                                     \
    X(nvrtcGetCUBINSize, "nvrtcGetCUBINSize", 1, (nvrtcProgram, size_t *))                       \
    X(nvrtcGetCUBIN, "nvrtcGetCUBIN", 1, (nvrtcProgram, char *))                                 \
    X(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", 1, (nvrtcProgram, size_t *))             \
    X(nvrtcGetProgramLog, "nvrtcGetProgramLog", 1, (nvrtcProgram, char *))                       \
    X(nvrtcAddNameExpression, "nvrtcAddNameExpression", 1, (nvrtcProgram, const char *))         \
    X(nvrtcGetLoweredName, "nvrtcGetLoweredName", 1, (nvrtcProgram, const char *, const char **)) \
    X(nvrtcGetLTOIRSize, "nvrtcGetLTOIRSize", 0, (nvrtcProgram, size_t *))                       \
    X(nvrtcGetLTOIR, "nvrtcGetLTOIR", 0, (nvrtcProgram, char *))

typedef struct Nvrtc {
#define X(field, sym, req, args) nvrtcResult (*field) args;
    NVRTC_FUNCS(X)
#undef X
    const char *(*nvrtcGetErrorString)(nvrtcResult);
    int major, minor;   /* nvrtcVersion */
    int archs[64];      /* nvrtcGetSupportedArchs, ascending: 75, 80, ..., 120 */
    int narchs;
} Nvrtc;

/* loader.c: dlopen of a CUDA toolkit library: exactly $env_var when set, else file
   ("libnvrtc.so.13"), /usr/local/cuda/lib64/<file>, $CUDA_HOME/lib64/<file>, then older
   (another major version's name, or NULL). NULL on failure with msg: "<name> not found",
   what was tried, `what` to do. */
void *lib_open(const char *env_var, const char *file, const char *older, const char *name, const char *what, char *msg,
               size_t msglen);
/* loader.c: dlopen on first use (thread-safe). NULL on failure with the error set. */
extern CuDriver cu;             /* valid after driver_load() returned CUK_OK */
cuk_status driver_load(void);   /* loads libcuda and calls cuInit(0) */
const Nvrtc *nvrtc_load(void);

/* ---- errors --------------------------------------------------------------------------- */
cuk_status err_set(cuk_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "what failed: CUDA_ERROR_X (string)" mapped to a status (OOM, NOT_READY, DRIVER...). */
cuk_status cu_fail(CUresult r, const char *call);
/* Checks one driver call; on failure returns from the enclosing function. */
#define CU_CHECK(call, name)                                                                     \
    do {                                                                                         \
        CUresult cu_r_ = (call);                                                                 \
        if (cu_r_ != CUDA_SUCCESS) return cu_fail(cu_r_, name);                                  \
    } while (0)
void err_clear(void);

/* ---- devices (device.c) ----------------------------------------------------------------- */
typedef struct Pool Pool;
typedef struct Device {
    int index;
    CUdevice dev;
    CUcontext ctx; /* the primary context, retained once; NULL until first use */
    cuk_device_props props;
    char arch[16];           /* what we compile for: "sm_90" or "compute_90" */
    cuk_image_kind kind;     /* CUBIN for sm_, PTX for compute_ */
    bool arch_known;
} Device;

/* The selected device with its primary context current on this thread. */
cuk_status dev_current(Device **d);
/* The selected device (opened), without touching this thread's current context: for
   paths that may not need the driver at all (a pool hit). */
cuk_status dev_selected(Device **d);
CUstream stream_raw(cuk_stream *s); /* NULL for the default stream */
/* Device `index` with its primary context retained (any device, selected or not), for
   work over several GPUs (nccl.c); CUK_ERR_NO_DEVICE for an index the driver lacks. */
cuk_status dev_open(int index, Device **d);
/* Device `index`'s CUdevice, checked, without opening the device or retaining its
   context (attributes, UUIDs, managed-memory locations). */
cuk_status dev_handle(int index, CUdevice *dev);
/* Makes d's context current on this thread if it is not (cheap when it is). */
cuk_status ctx_make_current(Device *d);

/* pool.c */
void pool_release_all(void); /* at shutdown: frees every block (driver present) */
/* The size class of a request: its index (-1 if too large) and rounded size. */
int pool_size_class(size_t bytes, size_t *size);
/* Stream capture (graph.c): while this thread captures, the pool hands out blocks that
   need no wait on another stream (a wait on an event from outside a capture cannot be
   recorded): blocks freed during the capture, else new ones from the driver. Every
   block allocated meanwhile belongs to the graph: freeing it during the capture makes
   it reusable by the capture, after it does nothing, and the graph returns them all to
   the pool when it is destroyed. */
typedef struct PoolCapture PoolCapture;
PoolCapture *pool_capture_begin(void); /* NULL without host memory */
void pool_capture_end(PoolCapture *c);       /* the capture is over; c stays the graph's */
/* The graph is gone (its work finished): its blocks go back to the pool; frees c. */
void pool_capture_release(PoolCapture *c);
/* Makes p (a live block) the graph's: freed when the graph is destroyed. */
bool pool_capture_adopt(PoolCapture *c, CUdeviceptr p);

/* A stream is being destroyed, its work finished: its blocks become the legacy
   stream's (nothing of theirs is pending). */
void pool_stream_gone(CUstream gone);

/* compile.c */
struct cuk_image_s {
    cuk_image_kind kind;
    unsigned char *data;
    size_t size;
    char *names; /* "expr\0lowered\0expr\0lowered\0...", names_len bytes */
    size_t names_len;
};
/* The cache key of one compile: two 64-bit hashes of everything that decides the
   output (source, the files it includes, options, names, arch, kind, the NVRTC library,
   cuk version). */
typedef struct Key {
    uint64_t a, b;
    bool nocache; /* a source whose includes the key cannot follow: a one-off key, no disk */
} Key;
cuk_status compile_key(const char *source, const cuk_compile_opts *o, const char *arch,
                       cuk_image_kind kind, Key *k);
/* Compiles (or reads the disk cache) with a precomputed key. */
cuk_status compile_keyed(const char *source, const cuk_compile_opts *o, const char *arch,
                         cuk_image_kind kind, Key k, cuk_image **out);
uint64_t hash64(const void *p, size_t n, uint64_t seed);
void cache_count_mem_hit(void);

/* module.c */
void modules_release_all(void);
/* blas.c: at shutdown, cuBLASLt's handles, plans and workspaces */
void blas_release_all(void);

#endif
