/* The program API of libcuk: compile a .cuk program and call its functions on host
   or device arrays, on the GPU backend or the CPU backend. */
#ifndef CUK_PROGRAM_H
#define CUK_PROGRAM_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "cuk.h" /* runtime/cuk.h; installed beside this header */

#ifdef __cplusplus
extern "C" {
#endif

/* A function of the program failed while running (a size check, an index out of
   range, ...). The message has file:line:col, the source line and a caret.
   (Statuses beside cuk.h's, from 32 up: the program API is the only one that runs
   programs.) */
#define CUK_ERR_RUNTIME ((cuk_status)32)
/* A call on the CPU backend stopped early because its interrupt check said so (Python:
   Ctrl-C, which then raises KeyboardInterrupt; cuk_program_interrupt_hook below). */
#define CUK_ERR_INTERRUPTED ((cuk_status)33)
/* hook is asked, on the thread running a program and at most every 20 ms, whether to
   stop (non-zero: stop); the call then fails with CUK_ERR_INTERRUPTED and its results are
   discarded. The Python extension sets one that checks for Ctrl-C. NULL removes it. */
void cuk_program_interrupt_hook(int (*hook)(void));

/* Element types, in the language's order (bool i32 i64 u32 u64 f32 f64, then the ones
   added later: i8 i16 u8 u16 f16 bf16 c64 c128). CUK_F16 and CUK_BF16 elements are the
   16 bits of an IEEE binary16 and of a bfloat16 (the top half of a float); CUK_C64 and
   CUK_C128 two floats or doubles, the real part first (C's and NumPy's layout). */
typedef enum cuk_dtype {
    CUK_BOOL = 0,
    CUK_I32 = 1,
    CUK_I64 = 2,
    CUK_U32 = 3,
    CUK_U64 = 4,
    CUK_F32 = 5,
    CUK_F64 = 6,
    CUK_I8 = 7,
    CUK_I16 = 8,
    CUK_U8 = 9,
    CUK_U16 = 10,
    CUK_F16 = 11,
    CUK_BF16 = 12,
    CUK_C64 = 13,
    CUK_C128 = 14,
} cuk_dtype;
#define CUK_DTYPE_COUNT 15
#define CUK_MAX_RANK 8

/* One element of any dtype, as the dtype stores it (a bool is one byte): what
   cuk_array_scalar and a rank-0 cuk_view's data point at. */
typedef union cuk_scalar {
    uint8_t b;
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    int8_t i8;
    int16_t i16;
    uint8_t u8;
    uint16_t u16;
    uint16_t f16;  /* the bits of the half */
    uint16_t bf16; /* the bits of the bfloat16 */
    float c64[2];  /* re, im */
    double c128[2];
} cuk_scalar;

/* *out = *in (a value of dtype from) converted to dtype to as the language's casts
   convert: integers wrap, one rounding to nearest even for floats (f16 and bf16 too),
   float to integer truncates and saturates (NaN gives 0), a real number becomes the real
   part of a complex one and a complex number's real part the real one. */
cuk_status cuk_scalar_convert(const cuk_scalar *in, cuk_dtype from, cuk_scalar *out, cuk_dtype to);

/* "f32" etc., NULL for a bad value. */
const char *cuk_dtype_name(cuk_dtype dt);
/* Bytes per element (bool is one byte), 0 for a bad value. */
size_t cuk_dtype_size(cuk_dtype dt);
/* The dtype of a name ("f32", "float32", "int64", "bool", ...); CUK_ERR_INVALID if none. */
cuk_status cuk_dtype_from_name(const char *name, cuk_dtype *dt);

/* ---- arrays ---------------------------------------------------------------------------- */

/* Where an array's elements live. */
typedef enum cuk_place { CUK_ON_HOST = 0, CUK_ON_DEVICE = 1 } cuk_place;

/* A dense, C-ordered array of rank 0 (a scalar) to CUK_MAX_RANK, on the host or on the
   current device. Arrays are not thread-safe objects: share them between threads only
   for reading. */
typedef struct cuk_array_s cuk_array;

/* A new array; its elements are zero. Device memory comes from the runtime's pool. */
cuk_status cuk_array_new(cuk_array **a, cuk_dtype dt, int rank, const int64_t *shape,
                         cuk_place where);
/* A new array holding a copy of data (size * cuk_dtype_size(dt) bytes, C order). */
cuk_status cuk_array_from_host(cuk_array **a, cuk_dtype dt, int rank, const int64_t *shape,
                               const void *data, cuk_place where);
/* A rank-0 array holding *value (a float for CUK_F32, an int64_t for CUK_I64, ...). */
cuk_status cuk_array_scalar(cuk_array **a, cuk_dtype dt, const void *value);
/* Wraps host memory without copying. The caller keeps data alive and unchanged while
   the array is in use; cuk_array_free does not free it. */
cuk_status cuk_array_wrap_host(cuk_array **a, cuk_dtype dt, int rank, const int64_t *shape,
                               void *data);
/* Wraps device memory (any CUdeviceptr of the current device's context, e.g. from CuPy
   or PyTorch) without copying; cuk_array_free does not free it. */
cuk_status cuk_array_wrap_device(cuk_array **a, cuk_dtype dt, int rank, const int64_t *shape,
                                 cuk_devptr ptr);
/* A copy of a on the host or the device. */
cuk_status cuk_array_copy(cuk_array **out, const cuk_array *a, cuk_place where);
/* Copies the elements into dst (bytes must be at least cuk_array_nbytes(a)). */
cuk_status cuk_array_to_host(const cuk_array *a, void *dst, size_t bytes);
/* Reads a .npy file (version 1-3, little-endian, C order, one of the dtypes above) into
   a new host array. A malformed file gives CUK_ERR_INVALID with the reason. */
cuk_status cuk_array_load(cuk_array **a, const char *path);
/* Writes a as a .npy file (a device array is copied to the host first). */
cuk_status cuk_array_save(const cuk_array *a, const char *path);
/* Prints a as the language's print() does: NumPy's style, one line, f32 with 9 and f64
   with 17 significant digits (a device array is copied to the host first). */
cuk_status cuk_array_print(const cuk_array *a, FILE *out);
/* Frees the array and the memory it owns (pooled device memory goes back to the pool).
   NULL is a no-op. */
void cuk_array_free(cuk_array *a);

cuk_dtype cuk_array_dtype(const cuk_array *a);
int cuk_array_rank(const cuk_array *a);
const int64_t *cuk_array_shape(const cuk_array *a); /* rank entries */
int64_t cuk_array_size(const cuk_array *a);         /* elements */
size_t cuk_array_nbytes(const cuk_array *a);
cuk_place cuk_array_place(const cuk_array *a);
/* The elements of a host array (NULL for a device array). */
void *cuk_array_host_data(const cuk_array *a);
/* The elements of a device array (0 for a host array). */
cuk_devptr cuk_array_device_ptr(const cuk_array *a);

/* ---- programs ---------------------------------------------------------------------------- */

typedef enum cuk_backend {
    CUK_BACKEND_DEFAULT = 0, /* $CUK_BACKEND (auto, gpu or cpu), else auto */
    CUK_BACKEND_AUTO = 1,    /* the GPU if one is usable, else the CPU */
    CUK_BACKEND_GPU = 2,
    CUK_BACKEND_CPU = 3,
} cuk_backend;

typedef struct cuk_program_opts {
    cuk_backend backend;
    /* For source text: the file name used in diagnostics (default "<string>"). */
    const char *name;
    /* 1: src_or_path must be a bundle (cuk_program_load_bundle sets it). */
    int require_bundle;
    /* 1: the GPU's kernels may contract a multiply and an add into one FMA (NVRTC's
       --fmad=true: faster compute-bound kernels, results that differ from the CPU
       backend's in the last bits). 0 (the default): no contraction, the CPU backend's
       arithmetic. */
    int fast_math;
    /* 1: time every statement of every call (cukc run --profile): wall time per statement,
       summed over its runs, with what it calls; on the GPU each statement waits for its
       kernels. cuk_program_profile_print writes the table. */
    int profile;
} cuk_program_opts;

typedef struct cuk_program_s cuk_program;
typedef struct cuk_fn_s cuk_fn;

/* Loads an ahead-of-time bundle written by `cukc build` (docs/aot.md). The program is
   rebuilt from the source the bundle holds; on the GPU its kernels are loaded from the
   bundle's cubin for this device (else its PTX), without NVRTC. A damaged, truncated,
   stale or foreign file gives CUK_ERR_INVALID with the reason. cuk_program_compile also
   accepts a bundle's path. */
cuk_status cuk_program_load_bundle(cuk_program **p, const char *path, const cuk_program_opts *o);

/* Compiles the program at src_path ahead of time into a bundle at out_path (docs/aot.md):
   a cubin for each sm_XY and PTX for each compute_XY in archs ("sm_80,sm_90" when NULL;
   without a compute_XY, PTX for the lowest sm_XY, so that newer GPUs can JIT it). Needs
   NVRTC, not a GPU. A compile error gives CUK_ERR_COMPILE with the diagnostics, a bad
   arch list or an unwritable out_path CUK_ERR_INVALID, no NVRTC CUK_ERR_NO_DRIVER. */
cuk_status cuk_program_build(const char *src_path, const char *out_path, const char *archs);

/* Compiles a program. src_or_path is a path if it has no newline and names an existing
   file or ends in ".cuk"; otherwise it is source text. o may be NULL. On a compile error:
   CUK_ERR_COMPILE, every diagnostic (file:line:col: error: ..., source line, caret) in
   cuk_last_error() and the first one's parts in cuk_program_error(). Asking for the GPU
   where none is usable gives CUK_ERR_NO_DRIVER or CUK_ERR_NO_DEVICE. */
cuk_status cuk_program_compile(cuk_program **p, const char *src_or_path, const cuk_program_opts *o);
void cuk_program_free(cuk_program *p);
/* The profile of the calls so far (opts.profile), heaviest statement first: CUK_OK, or
   CUK_ERR_INVALID when the program was not compiled with opts.profile. */
cuk_status cuk_program_profile_print(const cuk_program *p, FILE *out);
/* A profile of the calls between begin and end alone, whether or not the program was
   compiled with opts.profile (whose own profile is left as it was): end writes its table
   to out (NULL: none). Not while other threads call the program's functions. Python:
   `m.f.profile(args)`. CUK_ERR_INVALID for a begin inside a begin, or an end without one. */
cuk_status cuk_program_profile_begin(cuk_program *p);
cuk_status cuk_program_profile_end(cuk_program *p, FILE *out);
/* What the compiler makes of a program, as `cukc emit-ir`, `emit-ir --dot` and `emit-cuda`
   print it: the IR and the kernels each function fuses into (with what each fused), the
   same as a Graphviz graph, or the CUDA C of every kernel. Needs no GPU and no NVRTC.
   src_or_path as for cuk_program_compile (name: the source's name in messages, NULL:
   "<string>"). CUK_ERR_COMPILE with the diagnostics for a program that does not compile.
   Python: cuk.explain(src), and a lazy gpuarray expression's explain(). */
typedef enum { CUK_EXPLAIN_IR = 0, CUK_EXPLAIN_CUDA = 1, CUK_EXPLAIN_DOT = 2 } cuk_explain;
cuk_status cuk_program_explain(const char *src_or_path, const char *name, cuk_explain what, FILE *out);
/* CUK_BACKEND_GPU or CUK_BACKEND_CPU: where the functions run. */
cuk_backend cuk_program_backend(const cuk_program *p);
/* The program's own functions (not the stdlib's), in source order. */
int cuk_program_nfunctions(const cuk_program *p);
const char *cuk_program_function_name(const cuk_program *p, int i);

/* A function by name (the program's or the stdlib's); CUK_ERR_NOT_FOUND if none. The
   handle lives as long as the program. A generic function (see cuk_program_generic) has
   none: its message says so and shows a typed wrapper to compile instead. */
cuk_status cuk_program_function(cuk_program *p, const char *name, cuk_fn **f);
/* The signature of a generic function: one whose parameter or result element type is a
   type variable (one capital letter, `fn g(x: T[n]) -> T[n]`, and every function of the
   stdlib's stats.cuk: softmax, variance, layer_norm, relu, ...). Such a function is
   inlined at each call in cuk code, T bound from the arguments, so it has no cuk_fn; to
   call it, compile a typed wrapper (`fn g_f32(x: f32[n]) -> f32[n] = g(x);`) with the
   program. Writes NUL-terminated text into buf: one line per parameter,
   "name\telemtype\tdims\n", then the result's, "->\telemtype\tdims\n"; elemtype is as
   written ("T", "f32"), dims the sizes as written joined by ',' ("n", "r,c", "n + 2",
   "?"), empty for a scalar. buf may be NULL with len 0 to ask only whether name is
   generic. The user's functions shadow the stdlib's, as in calls. CUK_ERR_NOT_FOUND when
   name is not a generic function of the program (a concrete one, or none);
   CUK_ERR_INVALID when its result is a tuple or it returns nothing, or when the text
   needs more than len bytes (the message says how many). Python: `m.softmax(x)`. */
cuk_status cuk_program_generic(const cuk_program *p, const char *name, char *buf, size_t len);

typedef struct cuk_param_info {
    const char *name;
    cuk_dtype dtype;
    int rank;                       /* 0: a scalar */
    const char *dims[CUK_MAX_RANK]; /* size variable of each axis, NULL for a literal size */
    int64_t sizes[CUK_MAX_RANK];    /* the literal sizes (where dims[k] is NULL) */
} cuk_param_info;

const char *cuk_fn_name(const cuk_fn *f);
int cuk_fn_nparams(const cuk_fn *f);
cuk_status cuk_fn_param(const cuk_fn *f, int i, cuk_param_info *info);
/* The result's dtype and rank; *has_result = 0 for a function that returns nothing.
   For a function with several results (-> (T1, T2)), result 0's. */
cuk_status cuk_fn_result(const cuk_fn *f, int *has_result, cuk_dtype *dt, int *rank);
/* How many results f has: 0 (none), 1, or n for a function declared -> (T1, ..., Tn). */
int cuk_fn_nresults(const cuk_fn *f);
/* Result k's dtype and rank, k < cuk_fn_nresults(f). */
cuk_status cuk_fn_result_at(const cuk_fn *f, int k, cuk_dtype *dt, int *rank);

/* Calls f with one array per parameter (a rank-0 array for a scalar). Dtypes and ranks
   must match the parameters exactly and size variables must agree, else CUK_ERR_INVALID
   with a message naming the parameter. *result (NULL if the function returns nothing)
   is a new array the caller frees: on the device if any argument was a device array,
   else on the host. Arguments are only read. print() inside the function writes to
   stdout. Several threads may call functions of one program at once. */
cuk_status cuk_fn_call(cuk_fn *f, cuk_array *const *args, int nargs, cuk_array **result);
/* cuk_fn_call with one output per result: results[k] gets result k, as cuk_fn_call's
   *result would be (results may be NULL to drop them). nresults must be
   cuk_fn_nresults(f) (1 for a function of one result); a function with several results
   must be called this way (cuk_fn_call gives CUK_ERR_INVALID saying so). On an error
   every results[k] is NULL. */
cuk_status cuk_fn_call_n(cuk_fn *f, cuk_array *const *args, int nargs, cuk_array **results, int nresults);
/* A borrowed description of an argument or a result for cuk_fn_call_views: dtype, rank,
   shape and where the elements are. The view owns nothing. For a rank-0 value on the
   host, data points at the value (a float for CUK_F32, ...). */
typedef struct cuk_view {
    cuk_dtype dtype;
    int rank;
    cuk_place place;
    int64_t shape[CUK_MAX_RANK]; /* rank entries are used */
    void *data;                  /* CUK_ON_HOST: the elements, C order */
    cuk_devptr dev;              /* CUK_ON_DEVICE: the elements, C order (0 if there are none) */
} cuk_view;

/* The view of an array (valid while a lives and is not changed). */
void cuk_array_view(const cuk_array *a, cuk_view *v);

/* cuk_fn_call for callers that keep their own array objects (the Python extension):
   the same checks, errors and semantics, but the arguments are views and nothing is
   allocated for them. On success, a result on the device comes back in *dev_result (a
   view of a new pool block the caller owns: cuk_mem_free it after its last use is
   queued; dev 0 for an empty array), else dev_result->rank is -1 and *host_result is a
   host array (as from cuk_fn_call; NULL when the function returns nothing). */
cuk_status cuk_fn_call_views(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_view *dev_result,
                             cuk_array **host_result);
/* cuk_fn_call_views with one output per result: dev_results[k] and host_results[k] as
   above for result k, nresults as for cuk_fn_call_n. */
cuk_status cuk_fn_call_views_n(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_view *dev_results,
                               cuk_array **host_results, int nresults);
/* cuk_fn_call_views' fast path, which never waits on the device or compiles: when f
   runs on the GPU as one kernel already compiled and every array argument is a device
   view (scalars on the host) of one shape, queues it (a pool allocation and an
   asynchronous launch), sets *done to 1 and fills *dev_result as cuk_fn_call_views
   does. Otherwise *done is 0 and nothing was done: call cuk_fn_call_views. Errors (a
   bad argument, a failed launch) are reported as by cuk_fn_call_views. The Python
   extension calls it without releasing the GIL. */
cuk_status cuk_fn_call_quick(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_view *dev_result, int *done);
/* cuk_fn_call_views writing the result into out (NumPy's and CuPy's out=): a view of the
   function's declared result dtype and rank (else CUK_ERR_INVALID saying both) and of the
   result's shape (else an error after the call). On the GPU with out on the device, the
   kernel that computes the result writes into out directly, unless an argument overlaps
   it (then the result is copied there after the last kernel, as for a host out or the
   CPU backend). Nothing to free: out stays the caller's. A function that returns a
   scalar, nothing or several results takes no out. */
cuk_status cuk_fn_call_views_out(cuk_fn *f, const cuk_view *const *args, int nargs, const cuk_view *out);
/* cuk_fn_call_quick with out= (a device view): *done 1 when it was queued; else call
   cuk_fn_call_views_out. */
cuk_status cuk_fn_call_quick_out(cuk_fn *f, const cuk_view *const *args, int nargs, const cuk_view *out, int *done);
/* cuk_program_function + cuk_fn_call. */
cuk_status cuk_program_call(cuk_program *p, const char *name, cuk_array *const *args, int nargs,
                            cuk_array **result);

/* ---- streams ------------------------------------------------------------------------------ */

/* The stream this thread's calls of program functions queue on (every cuk_fn_call*
   variant; NULL, the start: the legacy default stream), as CuPy's current stream. A call
   is ordered after the work queued on its stream before it, and its kernels, copies and
   pool blocks go there: calls on different streams run concurrently, and a device result
   is a pool block of that stream (cuk_mem_free orders its reuse). A call waits for the
   host only for its own stream (a scalar or a result coming to the host, a bounds
   check). Arguments made on another stream must be ready on this one (cuk_stream_wait_*).
   The CPU backend ignores it. */
void cuk_call_stream_set(cuk_stream *s);
cuk_stream *cuk_call_stream_get(void);
/* cuk_program_call on stream s (this thread's call stream is restored after). */
cuk_status cuk_program_call_on(cuk_program *p, const char *name, cuk_array *const *args, int nargs,
                               cuk_array **result, cuk_stream *s);

/* ---- graphs ------------------------------------------------------------------------------ */

/* One call of a function recorded into a CUDA graph (every kernel, copy and fill of it,
   the host loops of the function unrolled), replayed with one driver call. The graph
   owns copies of the array arguments (its inputs), the memory of every intermediate and
   the results: a replay overwrites the results in place. Scalar arguments are recorded
   by value. A function that must bring a value back to the host during the call (a
   size that depends on the data, a scalar used by host code, print, a bounds check that
   reports) cannot be captured: CUK_ERR_RUNTIME or CUK_ERR_INVALID saying so. The call
   runs once normally (it is checked, and compiled, then), then is recorded; it queues
   after the work on this thread's call stream. GPU backend only. */
typedef struct cuk_capture_s cuk_capture;
cuk_status cuk_fn_capture(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_capture **c);
cuk_status cuk_program_capture(cuk_program *p, const char *name, cuk_array *const *args, int nargs,
                               cuk_capture **c);
/* Replays on stream s (NULL: the legacy default stream). args NULL: the inputs as they
   are; else one view per parameter, each copied into the graph's input (on s, before
   the graph) unless it is that input already or NULL; arrays must have the captured
   dtypes and shapes and scalars the captured values. Returns once queued. */
cuk_status cuk_capture_launch(cuk_capture *c, const cuk_view *const *args, int nargs, cuk_stream *s);
int cuk_capture_nresults(const cuk_capture *c);
/* Result k, in the graph's memory (valid until cuk_capture_free; a replay overwrites it). */
const cuk_view *cuk_capture_result(const cuk_capture *c, int k);
/* The graph's input for parameter i (a device array it owns; a scalar's recorded value). */
const cuk_view *cuk_capture_input(const cuk_capture *c, int i);
/* The nodes of the graph. */
size_t cuk_capture_nodes(const cuk_capture *c);
/* Waits for its last replay, then frees the graph and its memory. NULL is a no-op. */
void cuk_capture_free(cuk_capture *c);

/* The parts of this thread's last compile or run-time error of the program API. */
typedef struct cuk_error_info {
    char file[1024];
    int line, col;      /* 1-based; 0 if the error has no location */
    char message[2048]; /* the message alone, without location, source line or caret */
} cuk_error_info;
/* CUK_ERR_NOT_FOUND if the last failing program call had no such error. */
cuk_status cuk_program_error(cuk_error_info *info);

#ifdef __cplusplus
}
#endif
#endif
