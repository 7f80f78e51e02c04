/* libcuk's public C API: devices, pooled device memory, streams, events, NVRTC
   compilation with an in-memory and on-disk kernel cache, and kernel launch. */
#ifndef CUK_H
#define CUK_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every call returns a status; 0 is success. On failure cuk_last_error() holds a
   message for this thread that says what failed and what to do. */
typedef enum cuk_status {
    CUK_OK = 0,
    CUK_ERR_NO_DRIVER = 1,     /* libcuda.so.1 missing or unusable */
    CUK_ERR_NO_DEVICE = 2,     /* driver present, but no (such) GPU */
    CUK_ERR_NO_NVRTC = 3,      /* libnvrtc.so.13 missing */
    CUK_ERR_COMPILE = 4,       /* NVRTC rejected the source; the log is in the message */
    CUK_ERR_OUT_OF_MEMORY = 5, /* device (or pinned host) memory exhausted */
    CUK_ERR_INVALID = 6,       /* a bad argument */
    CUK_ERR_NOT_FOUND = 7,     /* no such kernel in the module */
    CUK_ERR_DRIVER = 8,        /* any other Driver API error (its name is in the message) */
    CUK_ERR_IO = 9,            /* the disk cache could not be read or written; cuk_comm_rendezvous: the network */
    CUK_ERR_NOT_READY = 10,    /* cuk_event_query / cuk_stream_query: work still pending */
    CUK_ERR_NO_BLAS = 11,      /* libcublasLt.so.13 missing (cuk_matmul) */
    CUK_ERR_NO_NCCL = 12,      /* libnccl.so.2 missing (cuk_comm_*, several GPUs) */
    /* 32 and up: the program API's (api/cuk_program.h: CUK_ERR_RUNTIME, CUK_ERR_INTERRUPTED) */
} cuk_status;

/* The message of this thread's last failed call ("" if none). Valid until the next
   failing call on this thread. */
const char *cuk_last_error(void);
/* "CUK_ERR_NO_DRIVER" etc. */
const char *cuk_status_name(cuk_status s);
/* The library version, e.g. "0.1.0". */
const char *cuk_version(void);

/* ---- initialisation and devices ---------------------------------------------------- */

/* Loads libcuda.so.1 and calls cuInit. Idempotent and thread-safe; every other GPU call
   does it implicitly. Without a driver: CUK_ERR_NO_DRIVER, message
   "no CUDA driver found (libcuda.so.1): ...; the CPU backend needs none" (no flag is
   named: cukc adds "--device cpu" where its user can pass it). */
cuk_status cuk_init(void);
/* *ok = 1 if a driver and at least one GPU are usable, else 0 (and cuk_last_error() says
   why). Returns CUK_OK either way: asking is never an error. */
cuk_status cuk_gpu_available(int *ok);
/* Releases everything the runtime holds (pool, modules, pinned buffers, the primary
   context references). Handles obtained before become invalid. Safe without a driver. */
void cuk_shutdown(void);

cuk_status cuk_device_count(int *n);

typedef struct cuk_device_props {
    char name[256];
    char arch[16]; /* "sm_90" */
    int index;
    int cc_major, cc_minor;
    size_t total_mem;                /* bytes */
    int sm_count;
    int l2_size;                     /* bytes */
    int max_threads_per_block;
    int shared_mem_per_block;        /* bytes, the default limit */
    int shared_mem_per_block_optin;  /* bytes, with the opt-in attribute */
    int max_threads_per_sm;
    int warp_size;
    int driver_version;              /* e.g. 13000 */
} cuk_device_props;
cuk_status cuk_device_props_get(int index, cuk_device_props *p);

/* *value = any CUdevice_attribute of device `index` (cuDeviceGetAttribute; the numbers
   of CUDA's cuda.h). An attribute this driver does not know: CUK_ERR_INVALID. */
cuk_status cuk_device_attribute(int index, int attribute, int *value);
/* A limit of the current device's primary context (cuCtxGetLimit / cuCtxSetLimit:
   CU_LIMIT_STACK_SIZE 0, PRINTF_FIFO_SIZE 1, MALLOC_HEAP_SIZE 2, ...). A limit this
   driver or device does not support: CUK_ERR_INVALID. */
cuk_status cuk_ctx_limit_get(int limit, size_t *value);
cuk_status cuk_ctx_limit_set(int limit, size_t value);

/* The device later calls use, process-wide. -1 picks $CUK_DEVICE, else 0. Before any
   selection the first GPU call behaves as cuk_device_select(-1). The device's primary
   context is retained once and made current on each calling thread as needed, so cuk
   shares the context (and its allocations) with CuPy, PyTorch and the Runtime API. */
cuk_status cuk_device_select(int index);
cuk_status cuk_device_current(int *index);

/* The calling thread's context stack, for code that manages it as PyCUDA does
   (Context.push/pop); cuk itself needs neither, since it makes the primary context
   current wherever it runs. A cuk_context is a CUcontext. */
typedef struct cuk_context_s cuk_context;
/* Pushes the selected device's primary context (cuCtxPushCurrent). */
cuk_status cuk_context_push(void);
/* Pops the calling thread's current context (cuCtxPopCurrent) into *popped (NULL: not
   wanted). An empty stack gives CUK_ERR_INVALID. */
cuk_status cuk_context_pop(cuk_context **popped);
/* The context current on the calling thread, NULL if none; makes none current. */
cuk_status cuk_context_current(cuk_context **c);
/* Waits for all work on the current device; reports any earlier asynchronous error
   (e.g. an illegal memory access in a kernel) with the call that found it. */
cuk_status cuk_synchronize(void);
/* free and total device memory in bytes (cuMemGetInfo). */
cuk_status cuk_mem_info(size_t *free_bytes, size_t *total_bytes);

/* ---- memory ------------------------------------------------------------------------- */

typedef unsigned long long cuk_devptr; /* a CUdeviceptr */

/* Device memory from the caching pool: requests are rounded to a size class (512 bytes
   minimum, powers of two up to 1 MiB, then quarter steps between powers of two) and a
   freed block is kept for the next request of its class. A cached block is handed out
   without a driver call. On out-of-memory every cached block is released and the
   allocation retried once. Size 0 gives a 512-byte block. The pool is stream-ordered:
   a block belongs to the stream it was allocated on (cuk_mem_alloc: the legacy default
   stream), and cuk_mem_free returns it in that stream's order, so work already queued
   there may still use it; a later allocation on the same stream reuses it at once, one
   on another stream first waits (on the device, not the host) for the work queued on the
   old stream before the free. */
cuk_status cuk_mem_alloc(cuk_devptr *p, size_t bytes);
typedef struct cuk_stream_s cuk_stream; /* NULL means the default (legacy) stream */
/* cuk_mem_alloc for use on stream s (NULL: the legacy default stream). */
cuk_status cuk_mem_alloc_on(cuk_devptr *p, size_t bytes, cuk_stream *s);
/* Returns the block to the pool, ordered on the stream it was allocated on (an event
   recorded there when that is not the legacy stream; else no driver call). A stream not
   made by cuk_stream_create (cuk_stream_wrap) must outlive the blocks allocated on it.
   0 is a no-op. */
cuk_status cuk_mem_free(cuk_devptr p);
/* Releases all cached (free) blocks to the driver. */
cuk_status cuk_mem_trim(void);

typedef struct cuk_mem_stats {
    size_t in_use;                  /* bytes in live blocks (size-class rounded) */
    size_t requested;               /* bytes callers asked for, in live blocks */
    size_t cached;                  /* bytes in free blocks kept by the pool */
    size_t peak;                    /* highest in_use + cached seen (bytes held from the driver) */
    unsigned long long allocs;      /* cuk_mem_alloc calls that succeeded */
    unsigned long long hits;        /* of those, served from the cache */
    unsigned long long driver_allocs; /* cuMemAlloc calls made */
    unsigned long long oom_retries; /* times the cache was flushed to retry an allocation */
} cuk_mem_stats;
cuk_status cuk_mem_stats_get(cuk_mem_stats *s);

/* Pinned (page-locked) host memory, portable across contexts. */
cuk_status cuk_host_alloc(void **p, size_t bytes);
cuk_status cuk_host_free(void *p);

typedef struct cuk_event_s cuk_event;

/* Managed (unified) memory: one address valid on the host and every device, its pages
   moved by the driver where they are used (cuMemAllocManaged, attached globally). cuk
   never oversubscribes: a request larger than the current device's free memory is
   CUK_ERR_OUT_OF_MEMORY, saying so, where the driver would accept it and page later.
   Size 0 gives a 1-byte block. Free with cuk_managed_free (not cuk_mem_free). */
cuk_status cuk_managed_alloc(cuk_devptr *p, size_t bytes);
cuk_status cuk_managed_free(cuk_devptr p);
/* A location for the calls below: a device ordinal; CUK_LOC_HOST, host memory;
   CUK_LOC_HOST_NUMA(n), host memory of NUMA node n; CUK_LOC_HOST_NUMA_CURRENT, that of
   the calling thread's node. CUK_LOC_NONE: none (what cuk_mem_range_get reports). */
enum { CUK_LOC_HOST = -1, CUK_LOC_NONE = -2, CUK_LOC_HOST_NUMA_CURRENT = -3 };
#define CUK_LOC_HOST_NUMA(n) (-16 - (n))
/* Advice on bytes of managed memory at p (cuMemAdvise): what, one of CUK_ADVISE_*; loc
   the device or host it names (CUK_ADVISE_*_READ_MOSTLY ignore it). */
typedef enum cuk_advice {
    CUK_ADVISE_SET_READ_MOSTLY = 1,
    CUK_ADVISE_UNSET_READ_MOSTLY = 2,
    CUK_ADVISE_SET_PREFERRED_LOCATION = 3,
    CUK_ADVISE_UNSET_PREFERRED_LOCATION = 4,
    CUK_ADVISE_SET_ACCESSED_BY = 5,
    CUK_ADVISE_UNSET_ACCESSED_BY = 6,
} cuk_advice;
cuk_status cuk_mem_advise(cuk_devptr p, size_t bytes, cuk_advice what, int loc);
/* Moves bytes of managed memory at p to loc (a device or CUK_LOC_HOST), ordered on
   stream s (cuMemPrefetchAsync). */
cuk_status cuk_mem_prefetch(cuk_devptr p, size_t bytes, int loc, cuk_stream *s);
/* What the advice says of the range (cuMemRangeGetAttribute): read_mostly 0 or 1;
   preferred and last_prefetch a device, CUK_LOC_HOST or CUK_LOC_NONE; accessed_by (may be
   NULL) the devices (and CUK_LOC_HOST) given SET_ACCESSED_BY, up to max of them, their
   number in *naccessed. */
typedef struct cuk_mem_range {
    int read_mostly, preferred, last_prefetch;
} cuk_mem_range;
cuk_status cuk_mem_range_get(cuk_devptr p, size_t bytes, cuk_mem_range *r, int *accessed_by, int max,
                             int *naccessed);

/* Synchronous copies. A host pointer may be pageable; large pageable copies go through
   pinned staging buffers. */
cuk_status cuk_memcpy_htod(cuk_devptr dst, const void *src, size_t bytes);
cuk_status cuk_memcpy_dtoh(void *dst, cuk_devptr src, size_t bytes);
cuk_status cuk_memcpy_dtod(cuk_devptr dst, cuk_devptr src, size_t bytes);
/* Asynchronous copies on a stream. For the copy to overlap with the host the host
   buffer must be pinned (cuk_host_alloc); with pageable memory the driver copies
   synchronously. */
cuk_status cuk_memcpy_htod_async(cuk_devptr dst, const void *src, size_t bytes, cuk_stream *s);
cuk_status cuk_memcpy_dtoh_async(void *dst, cuk_devptr src, size_t bytes, cuk_stream *s);
cuk_status cuk_memcpy_dtod_async(cuk_devptr dst, cuk_devptr src, size_t bytes, cuk_stream *s);
/* Copies ordered on stream s, after the work queued there: to the host, returning when
   the bytes are there (waiting for s alone); from the host, returning once src may be
   reused. NULL: the synchronous copies above (pinned staging for large pageable
   buffers). */
cuk_status cuk_memcpy_dtoh_on(void *dst, cuk_devptr src, size_t bytes, cuk_stream *s);
cuk_status cuk_memcpy_htod_on(cuk_devptr dst, const void *src, size_t bytes, cuk_stream *s);
/* Fills bytes with value, ordered on stream s (NULL: the default stream). */
cuk_status cuk_memset_d8(cuk_devptr dst, unsigned char value, size_t bytes, cuk_stream *s);
/* Fills bytes (a multiple of width) with the width-byte pattern (1, 2 or 4: its bytes as
   they lie in memory), ordered on stream s. */
cuk_status cuk_memset_pattern(cuk_devptr dst, const void *pattern, int width, size_t bytes, cuk_stream *s);

/* ---- streams and events --------------------------------------------------------------- */

/* A non-blocking stream (does not synchronise with the legacy default stream). */
cuk_status cuk_stream_create(cuk_stream **s);
/* A stream that synchronises with the legacy default stream unless nonblocking, of the
   given priority (0 the default; lower numbers run first; a priority outside
   cuk_stream_priority_range is CUK_ERR_INVALID). */
cuk_status cuk_stream_create_ex(cuk_stream **s, int nonblocking, int priority);
/* The current device's priorities: least (0) down to greatest (e.g. -5). */
cuk_status cuk_stream_priority_range(int *least, int *greatest);
cuk_status cuk_stream_priority(cuk_stream *s, int *priority);
/* Device index's primary context (a CUcontext), retained by cuk for the process. */
cuk_status cuk_device_context(int index, uintptr_t *ctx);
/* Device index's UUID (cuDeviceGetUuid), 16 bytes. */
cuk_status cuk_device_uuid(int index, unsigned char uuid[16]);
/* Waits for the stream's work, then destroys it (a wrapped stream: only the wrapper). */
cuk_status cuk_stream_destroy(cuk_stream *s);
/* A cuk_stream for another library's stream, by raw handle (CUK_STREAM_LEGACY,
   CUK_STREAM_PER_THREAD or a CUstream of the current device, as for
   cuk_stream_wait_raw; 0 is rejected): cuk's work on it is ordered with the library's.
   cuk_stream_destroy frees the wrapper and leaves the stream alone; the stream must
   outlive it. */
cuk_status cuk_stream_wrap(uintptr_t handle, cuk_stream **s);
/* The raw handle of s: its CUstream, or CUK_STREAM_LEGACY for NULL (the legacy default
   stream). What __cuda_array_interface__'s "stream" and DLPack's stream= take. */
uintptr_t cuk_stream_handle(const cuk_stream *s);
/* Whether s is another library's stream (cuk_stream_wrap of a CUstream), which that
   library may destroy at any time without telling cuk: cuk names it in driver calls only
   while work is being queued on it (a call on it), never later (a free, a wait). */
int cuk_stream_is_foreign(const cuk_stream *s); /* 1 or 0 */
cuk_status cuk_stream_synchronize(cuk_stream *s);
/* CUK_OK if all work is done, CUK_ERR_NOT_READY if not (no message set). */
cuk_status cuk_stream_query(cuk_stream *s);
cuk_status cuk_stream_wait_event(cuk_stream *s, cuk_event *e);

cuk_status cuk_event_create(cuk_event **e); /* with timing */
/* flags: CUK_EVENT_BLOCKING_SYNC (the host sleeps in cuk_event_synchronize rather than
   spinning), CUK_EVENT_DISABLE_TIMING (cheaper; cuk_event_elapsed refuses it) */
enum { CUK_EVENT_BLOCKING_SYNC = 1, CUK_EVENT_DISABLE_TIMING = 2 };
cuk_status cuk_event_create_ex(cuk_event **e, unsigned flags);
cuk_status cuk_event_destroy(cuk_event *e);
/* The driver's handles behind cuk's objects (a CUevent, CUfunction, CUmodule), for other
   libraries; 0 for NULL. */
uintptr_t cuk_event_handle(const cuk_event *e);
cuk_status cuk_event_record(cuk_event *e, cuk_stream *s);
cuk_status cuk_event_synchronize(cuk_event *e);
cuk_status cuk_event_query(cuk_event *e); /* CUK_OK or CUK_ERR_NOT_READY */
/* Milliseconds between two recorded, completed events. */
cuk_status cuk_event_elapsed(float *ms, cuk_event *start, cuk_event *end);

/* Other libraries name their streams by raw handle (the CUDA Array Interface's "stream",
   DLPack's __dlpack__(stream=)): CUK_STREAM_LEGACY is the legacy default stream (the one
   a NULL cuk_stream means, where cuk queues its work), CUK_STREAM_PER_THREAD the
   per-thread default stream, any other value a CUstream (cudaStream_t) of the current
   device. 0 is ambiguous between those and is rejected (CUK_ERR_INVALID). */
#define CUK_STREAM_LEGACY ((uintptr_t)1)
#define CUK_STREAM_PER_THREAD ((uintptr_t)2)
/* Makes stream `waiter` wait, on the device, for the work queued so far on stream
   `producer`: an event recorded on producer and waited for on waiter (cuEventRecord,
   cuStreamWaitEvent); the host does not block. When both are the same stream there is
   nothing to do, and no driver call is made. */
cuk_status cuk_stream_wait_raw(uintptr_t waiter, uintptr_t producer);
/* Makes stream `waiter` (a raw handle, as above) wait for event e on the device. */
cuk_status cuk_stream_wait_event_raw(uintptr_t waiter, cuk_event *e);

/* ---- graphs ------------------------------------------------------------------------------ */

/* Stream capture into a CUDA graph (relaxed mode): the work this thread queues on s (a
   stream from cuk_stream_create; the default streams cannot be captured) until
   cuk_stream_end_capture is recorded, not run. Meanwhile the pool gives this thread
   blocks that belong to the graph (their addresses are in it): blocks freed during the
   capture are reused by it, and all of them stay the graph's until cuk_graph_destroy. A
   copy to the host or a synchronisation cannot be recorded: the capture then fails at
   its end. */
typedef struct cuk_graph_s cuk_graph;
cuk_status cuk_stream_begin_capture(cuk_stream *s);
/* Ends the capture and instantiates the graph (*g; destroy with cuk_graph_destroy). */
cuk_status cuk_stream_end_capture(cuk_stream *s, cuk_graph **g);
/* 1 while this thread captures. */
int cuk_capturing(void);
/* Queues the whole graph on s, after s's earlier work (one driver call; a launch on
   another stream than the last one first waits for the last one). */
cuk_status cuk_graph_launch(cuk_graph *g, cuk_stream *s);
/* Makes s wait for the graph's last launch (or, before the first, for the stream it was
   captured on) unless that was on s; later launches on s need no wait. For work on s
   that touches the graph's memory before a launch. */
cuk_status cuk_graph_join(cuk_graph *g, cuk_stream *s);
/* How many nodes (kernels, copies, fills) the graph holds. */
size_t cuk_graph_nodes(const cuk_graph *g);
/* Makes the pool block p (allocated before the capture) the graph's: freed with it. */
cuk_status cuk_graph_adopt(cuk_graph *g, cuk_devptr p);
/* Waits for its last launch, then frees the graph and returns its blocks to the pool
   (blocks still held by their users stay theirs). */
cuk_status cuk_graph_destroy(cuk_graph *g);

/* ---- compilation (needs NVRTC, no GPU) ------------------------------------------------ */

/* LTO-IR (NVRTC with -dlto) is for linking with nvJitLink, not for loading. */
typedef enum cuk_image_kind { CUK_IMAGE_PTX = 0, CUK_IMAGE_CUBIN = 1, CUK_IMAGE_LTOIR = 2 } cuk_image_kind;

typedef struct cuk_compile_opts {
    /* Target: "sm_90" (also "sm_90a", "compute_90"). cuk_compile needs it; for
       cuk_module_compile leave it NULL (the current device's arch is used). */
    const char *arch;
    cuk_image_kind kind;         /* cuk_compile only; modules choose themselves */
    const char *const *options;  /* extra NVRTC options, e.g. "-lineinfo" */
    int noptions;
    /* C++ names to look up later (templates, namespaces): passed to
       nvrtcAddNameExpression. extern "C" kernels need none. */
    const char *const *names;
    int nnames;
    const char *program_name;    /* shown in NVRTC's messages; default "cuk_kernel.cu" */
    int no_disk_cache;           /* 1: neither read nor write the disk cache */
} cuk_compile_opts;

typedef struct cuk_image_s cuk_image;

/* Compiles CUDA C to PTX or a cubin for o->arch without touching a GPU, through the
   disk cache. A compile error gives CUK_ERR_COMPILE with NVRTC's log in the message. */
cuk_status cuk_compile(const char *source, const cuk_compile_opts *o, cuk_image **out);
/* The bytes (PTX text is NUL-terminated; size counts the NUL). */
cuk_status cuk_image_data(const cuk_image *im, const void **data, size_t *size);
cuk_image_kind cuk_image_get_kind(const cuk_image *im);
/* The mangled name NVRTC gave a name expression (or the name itself if none). */
const char *cuk_image_lowered_name(const cuk_image *im, const char *name);
void cuk_image_free(cuk_image *im);

cuk_status cuk_nvrtc_version(int *major, int *minor);

/* Links relocatable device code with nvJitLink (loaded on first use: $CUK_NVJITLINK, else
   the toolkit's, found as NVRTC is): inputs of nvJitLink's kinds (1 cubin, 2 PTX, 3
   LTO-IR, 4 fatbin, 5 object, 6 library such as libcudadevrt.a, 10 any), each bytes in
   memory (data, size, name) or a file (path), with nvJitLink's options ("-arch=sm_90",
   "-lto", ...). *out (malloc'ed, free() it) is the cubin, or the PTX text with ptx set
   (and "-ptx" among the options). No nvJitLink: CUK_ERR_NO_NVRTC saying what to
   install; a link error: CUK_ERR_COMPILE with nvJitLink's log. No GPU needed. */
typedef struct cuk_link_input {
    int kind;
    const void *data;
    size_t size;
    const char *name;
    const char *path; /* instead of data: a file to add */
} cuk_link_input;
cuk_status cuk_link(const cuk_link_input *in, int n, const char *const *options, int noptions, int ptx,
                    unsigned char **out, size_t *size);
/* The file nvJitLink was loaded from (loads it). */
cuk_status cuk_nvjitlink_path(const char **path);
/* The arch cuk compiles for on a device of compute capability major.minor: "sm_XY" if
   NVRTC knows it, else "compute_NN" of the newest NVRTC supports (the driver JITs the
   PTX). kind gets CUBIN or PTX accordingly. */
cuk_status cuk_arch_for(int cc_major, int cc_minor, char *arch, size_t archlen, cuk_image_kind *kind);

/* ---- modules, kernels and launch ------------------------------------------------------ */

typedef struct cuk_module_s cuk_module;
typedef struct cuk_function_s cuk_function;

/* Compiles for the current device and loads the result, through the in-memory cache
   (key: source, the files it #includes, options, names, arch, NVRTC and cuk versions ->
   loaded module) and the disk cache. Modules belong to the runtime and live until cuk_shutdown(), so a
   repeated call with the same source returns the same module cheaply. */
cuk_status cuk_module_compile(cuk_module **m, const char *source, const cuk_compile_opts *o);
/* Loads a PTX or cubin image (e.g. from a bundle). Unload with cuk_module_unload. */
cuk_status cuk_module_load(cuk_module **m, const void *image, size_t size);
cuk_status cuk_module_unload(cuk_module *m); /* no-op for cached (compiled) modules */
/* A kernel by its name (a name expression given at compile time, or an extern "C"
   name). The handle lives as long as the module. */
cuk_status cuk_module_function(cuk_module *m, const char *name, cuk_function **f);
/* The address and size in bytes of a __device__ or __constant__ variable of the module
   (cuModuleGetGlobal; bytes may be NULL). No such variable: CUK_ERR_NOT_FOUND. */
cuk_status cuk_module_global(cuk_module *m, const char *name, cuk_devptr *p, size_t *bytes);

typedef struct cuk_dim3 {
    unsigned x, y, z;
} cuk_dim3;

/* Launches f. args is cuLaunchKernel's kernelParams: one pointer per kernel parameter,
   pointing at its value. block.x == 0 picks the block size from the occupancy
   calculator; grid.x == 0 picks enough blocks to fill every SM once at full occupancy
   (for grid-stride kernels). A zero y or z means 1. Launch errors are reported here;
   faults inside the kernel at the next synchronising call. */
cuk_status cuk_launch(cuk_function *f, cuk_dim3 grid, cuk_dim3 block, unsigned shared_bytes,
                      cuk_stream *s, void **args);
/* Launches f as clusters of `cluster` blocks along x (thread-block clusters, compute
   capability 9.0 and later; cuLaunchKernelEx): grid.x must be a multiple of cluster and
   block given. A driver without cuLaunchKernelEx, or a device or cluster size that
   cannot run it: CUK_ERR_DRIVER with the reason, nothing launched. */
cuk_status cuk_launch_cluster(cuk_function *f, cuk_dim3 grid, cuk_dim3 block, unsigned cluster,
                              unsigned shared_bytes, cuk_stream *s, void **args);
/* cuk_launch with everything cuLaunchKernelEx offers that cuk uses: thread-block
   clusters (cluster: blocks per cluster in each dimension, zero for none; the grid a
   multiple of it; compute capability 9.0) and cooperative launches (grid-wide sync; the
   grid must fit on the device at once). Without either it is cuk_launch (block and grid
   must be given). */
typedef struct cuk_launch_opts {
    cuk_dim3 grid, block;
    unsigned shared;
    cuk_stream *stream;
    cuk_dim3 cluster;
    int cooperative;
} cuk_launch_opts;
cuk_status cuk_launch_ex(cuk_function *f, const cuk_launch_opts *o, void **args);
/* A 1-D configuration covering n threads: block from occupancy, grid = ceil(n / block)
   (at least 1). */
cuk_status cuk_launch_config_1d(cuk_function *f, size_t n, unsigned shared_bytes, cuk_dim3 *grid,
                                cuk_dim3 *block);

typedef struct cuk_function_info {
    int max_threads_per_block;
    int num_regs;
    int shared_bytes;       /* static shared memory */
    int occupancy_block;    /* block size the occupancy calculator suggests */
    int blocks_per_sm;      /* resident blocks per SM at that block size */
} cuk_function_info;
cuk_status cuk_function_info_get(cuk_function *f, cuk_function_info *info);
/* *value = the kernel's CUfunction_attribute `attr` (the driver's numbering: 0 max threads
   per block, 1 static shared bytes, 2 constant bytes, 3 local bytes, 4 registers, 5 PTX
   version, 6 binary version, ...). */
cuk_status cuk_function_attribute(cuk_function *f, int attr, int *value);
uintptr_t cuk_function_handle(const cuk_function *f);
/* The dynamic shared memory a block of `block` threads may use with blocks_per_sm of them
   resident on each SM (cuOccupancyAvailableDynamicSMemPerBlock). */
cuk_status cuk_function_smem_available(cuk_function *f, int blocks_per_sm, int block, size_t *bytes);
uintptr_t cuk_module_handle(const cuk_module *m);
/* Parameter index's byte offset and size in the kernel's parameter buffer
   (cuFuncGetParamInfo); past the last parameter: CUK_ERR_NOT_FOUND. */
cuk_status cuk_function_param_info(cuk_function *f, size_t index, size_t *offset, size_t *size);
/* *blocks = how many blocks of `block` threads with `shared_bytes` of dynamic shared
   memory the device holds at once (resident blocks per SM times the SMs). */
cuk_status cuk_function_resident(cuk_function *f, unsigned block, unsigned shared_bytes, int *blocks);

/* ---- matrix products (cuBLASLt, loaded with dlopen on first use) ----------------------- */

typedef enum cuk_mm_type { CUK_MM_F32 = 0, CUK_MM_F64 = 1, CUK_MM_F16 = 2, CUK_MM_BF16 = 3 } cuk_mm_type;
enum { CUK_MM_BIAS = 1, CUK_MM_RELU = 2 }; /* cuk_matmul_args.epilogue, or-ed */

/* d[m, n] = epilogue(alpha * a[m, k] @ b[k, n] + beta * c[m, n]), every matrix dense and
   row-major (c may be d itself, or 0 when beta is 0). CUK_MM_BIAS adds bias[n] to
   every row, then CUK_MM_RELU takes max(x, 0). CUK_MM_F16 and CUK_MM_BF16: every matrix
   (and the bias) of that type, products and sums in f32, alpha and beta f32, the result
   rounded once (tensor cores). tf32 (f32 only): TF32 tensor cores,
   about 10 mantissa bits per product; else full f32. Queued on s; the library, its
   handle and a 32 MiB workspace per device come on first use, and each shape's
   algorithm is chosen once and kept. k = 0: a product of zeros (then beta * c, the
   bias and relu as usual). No cuBLASLt: CUK_ERR_NO_BLAS. */
typedef struct cuk_matmul_args {
    cuk_mm_type type;
    int tf32;
    int64_t m, n, k;
    cuk_devptr a, b, c, d;
    double alpha, beta;
    int epilogue;
    cuk_devptr bias;
    int trans_a, trans_b; /* a is given as its transpose (row-major [k, m]); b as [n, k] */
} cuk_matmul_args;
cuk_status cuk_matmul(const cuk_matmul_args *args, cuk_stream *s);
/* cublasLtGetVersion() of the library cuk_matmul uses (e.g. 130000). */
cuk_status cuk_blas_version(int *version);

/* ---- several GPUs: NCCL communicators --------------------------------------------------- */

/* NCCL (libnccl.so.2: the CUDA toolkit's, $CUDA_HOME/lib64's, or exactly $CUK_LIBNCCL) is
   loaded on first use. Loading it sets NCCL_NVLS_ENABLE=0 in this process's environment
   (inherited by its children): NVLink multicast stays off, whatever the caller had set.
   No NCCL: CUK_ERR_NO_NCCL, with what was tried. */
/* ncclGetVersion(), e.g. 22803 for NCCL 2.28.3. */
cuk_status cuk_nccl_version(int *version);

typedef struct cuk_comm_s cuk_comm;
/* NCCL's element types and reductions, by the same numbers. */
typedef enum cuk_comm_type {
    CUK_COMM_I8 = 0, CUK_COMM_U8 = 1, CUK_COMM_I32 = 2, CUK_COMM_U32 = 3, CUK_COMM_I64 = 4,
    CUK_COMM_U64 = 5, CUK_COMM_F16 = 6, CUK_COMM_F32 = 7, CUK_COMM_F64 = 8, CUK_COMM_BF16 = 9
} cuk_comm_type;
typedef enum cuk_comm_op {
    CUK_COMM_SUM = 0, CUK_COMM_PROD = 1, CUK_COMM_MAX = 2, CUK_COMM_MIN = 3, CUK_COMM_AVG = 4 /* floats */
} cuk_comm_op;
/* A communicator over this process's GPUs devices[0..n) (distinct device indices): rank
   i runs on devices[i], with a stream of its own in that device's primary context. */
cuk_status cuk_comm_create(cuk_comm **c, const int *devices, int n);

/* One rank a process (on one host or several): every rank calls cuk_comm_create_rank
   with the same id, made once by rank 0's process with cuk_comm_id_new (it needs no GPU,
   and starts NCCL's bootstrap listener in that process, which must live until every rank
   has its communicator) and handed to the others, e.g. by cuk_comm_rendezvous. */
typedef struct cuk_comm_id {
    unsigned char bytes[128]; /* an ncclUniqueId */
} cuk_comm_id;
cuk_status cuk_comm_id_new(cuk_comm_id *id);
/* This process's rank `rank` (0 <= rank < nranks) of an nranks communicator, on GPU
   `device` (its primary context made current, a stream of its own). Blocks until every
   rank has called it. Its collectives take one buffer, this rank's: send[0], recv[0]. */
cuk_status cuk_comm_create_rank(cuk_comm **c, const cuk_comm_id *id, int nranks, int rank, int device);
/* Hands rank 0's id to ranks 1 .. nranks - 1 over TCP, without MPI. addr is "host:port"
   (rank 0's IPv4 address or host name, and a free port; NULL: $CUK_RENDEZVOUS), the same
   for every rank. Rank 0 passes its id filled (cuk_comm_id_new), listens on the port
   (SO_REUSEADDR; a loopback address: there only, else every interface) and returns once
   every other rank has the id; the others connect, retrying while rank 0 has not started,
   and get the id in *id. Nobody waits past timeout_s seconds (> 0). A timeout or a broken
   connection: CUK_ERR_IO, naming the address, the rank and, on rank 0, how many ranks had
   arrived; ranks started with other counts, or twice the same rank: CUK_ERR_INVALID. When
   rank 0 fails, every rank does: none gets the id unless all arrived. */
cuk_status cuk_comm_rendezvous(cuk_comm_id *id, const char *addr, int nranks, int rank, double timeout_s);

/* Ranks in the communicator (every process's). */
cuk_status cuk_comm_size(const cuk_comm *c, int *n);
/* rank's device index (a rank of this process: else CUK_ERR_INVALID). */
cuk_status cuk_comm_device(const cuk_comm *c, int rank, int *device);
/* For every rank i at once: recv[i] = op over the ranks of send[i] (count elements of
   type t each; send[i] == recv[i] works in place). Rank i's buffers are memory of
   devices[i]. Queued on the ranks' streams: cuk_comm_synchronize waits for them. The
   arrays have an entry for each rank of this process only (one: cuk_comm_create_rank). */
cuk_status cuk_comm_allreduce(cuk_comm *c, const cuk_devptr *send, const cuk_devptr *recv, size_t count,
                              cuk_comm_type t, cuk_comm_op op);
/* recv[i] = send[root] for every rank i (send[i] of the other ranks is not read). */
cuk_status cuk_comm_broadcast(cuk_comm *c, const cuk_devptr *send, const cuk_devptr *recv, size_t count,
                              cuk_comm_type t, int root);
cuk_status cuk_comm_synchronize(cuk_comm *c);
/* Waits for the ranks' work, then frees the communicator. NULL: nothing. */
cuk_status cuk_comm_destroy(cuk_comm *c);

/* ---- kernel cache ----------------------------------------------------------------------- */

typedef struct cuk_cache_stats {
    char dir[4096];                 /* the disk cache directory */
    unsigned long long entries;     /* files in it */
    unsigned long long bytes;
    /* this process: */
    unsigned long long mem_hits;    /* cuk_module_compile served from memory */
    unsigned long long disk_hits;   /* images read from disk */
    unsigned long long misses;      /* NVRTC compiles */
    unsigned long long disk_writes; /* entries written */
    unsigned long long corrupt;     /* bad entries found, deleted and recompiled */
    /* "" when the disk cache is in use (or will be, once created); else why not, e.g.
       "the directory is writable by its group (mode 775); run 'chmod 700 DIR' ..." */
    char disk_off[1100];
    unsigned long long tmp_files;   /* temporary files of writers (an hour old: of killed ones, */
    unsigned long long tmp_bytes;   /* which the next write or cuk_cache_clear deletes) */
    unsigned long long max_bytes;   /* the size cap (CUK_CACHE_MAX, default 1 GiB) */
    unsigned long long evicted;     /* this process: entries deleted to stay under it */
} cuk_cache_stats;

/* The disk cache directory: $CUK_CACHE_DIR, else $XDG_CACHE_HOME/cuk (an absolute
   path; a relative one is ignored, as the XDG spec says), else ~/.cache/cuk. Its size is
   kept under $CUK_CACHE_MAX bytes (a number with an optional K, M or G; default 1G): after
   a write, the least recently used entries (a hit refreshes an entry's time) go. It is used only if it is a directory owned by the user and not writable
   by group or others (docs/gpu.md, "The kernel cache"); else compiles use the memory
   cache alone, with one warning on stderr per process. */
cuk_status cuk_cache_dir(char *buf, size_t len);
cuk_status cuk_cache_stats_get(cuk_cache_stats *s);
/* Deletes every entry of the disk cache and resets this process's counters. Loaded
   modules stay loaded. A directory that fails the checks above is left alone (an
   error). */
cuk_status cuk_cache_clear(void);

#ifdef __cplusplus
}
#endif
#endif
