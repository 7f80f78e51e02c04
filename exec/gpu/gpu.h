/* The GPU backend's entry points (gpu_exec.c): sessions that run a program's functions
   with arrays on the device, and gpu_run, cpu_run's twin for whole programs. */
#ifndef CUK_GPU_H
#define CUK_GPU_H
#include "runtime/cuk.h"
#include "exec/exec.h"

/* A compiled program on the current device: its fusion plans, emitted once, and its
   kernels (each plan compiled through the kernel cache on first use, each kernel handle
   looked up once), plus the storage calls reuse (frames, launch blocks, scratch).

   Threads: different sessions may be used from different threads at once. One session
   may be shared too: gpu_call takes the session's mutex, so calls on it run one at a
   time. gpu_session_new on one Program must not race with another pass writing the
   Program's Vals (the fusion pass numbers v->kernel; sessions serialise among
   themselves). The Program must outlive the session. All device work is queued on the
   legacy default stream, so it is ordered with CuPy's and PyTorch's default streams. */
typedef struct GpuSession GpuSession;

/* Initialises the runtime and fuses the program. NULL with err filled (no driver, no
   GPU) on failure. */
GpuSession *gpu_session_new(const Program *p, RtErr *err);
/* Frees the session and what it holds. No gpu_call may be running on it. Kernels queued
   by earlier calls may still be running; results they write stay valid. */
void gpu_session_free(GpuSession *s);

/* A value of a call: a host scalar (rank 0, in s) or a device array (p, C order, dense,
   of the current device's context). p may be 0 for an array with no elements. */
typedef struct GpuVal {
    DType dt; /* DT_VOID for the result of a function that returns nothing */
    int rank;
    int64_t shape[MAXRANK];
    Scalar s;     /* rank 0, as Scalar holds it: i for bool and signed, u, f for floats */
    cuk_devptr p; /* rank > 0 */
    /* Arguments: informational; gpu_call never frees or writes an argument's memory
       (borrowed CuPy/PyTorch pointers are safe). Results: always false. */
    bool borrowed;
} GpuVal;

/* Runs fn (a function of the session's program) with args (one per parameter, matching
   dtype and rank; shapes are checked where the function constrains them). On success
   *result holds the returned value: an array is a new pool allocation the caller owns
   (free it with cuk_mem_free, after its last use is queued), never one of the arguments;
   a scalar is on the host. print() goes to out. The call returns once its work is
   queued: it waits for the device only where a value must come to the host (print,
   save, a scalar read or returned, an index bounds check). Kernel faults therefore may
   surface at a later synchronising call. On a run-time error returns false and fills
   err (*result is then DT_VOID). */
bool gpu_call(GpuSession *s, const Fn *fn, const GpuVal *args, GpuVal *result, FILE *out, RtErr *err);

/* gpu_call's fast path, for a caller that must not block (the Python extension keeps
   the GIL for it): does the call only when fn is one kernel, already compiled, and the
   arguments fit it as they are (device arrays of one shape, host scalars), which costs
   one pool allocation and one asynchronous launch. Returns 1 when done (*result as from
   gpu_call), 0 when nothing was done and the call needs gpu_call, -1 on an error (err
   filled). */
int gpu_call_quick(GpuSession *s, const Fn *fn, const GpuVal *args, GpuVal *result, RtErr *err);

/* Same contract as cpu_run: runs fn with args (host arrays, uploaded here), *result gets
   the returned value downloaded to the host (NULL for none), print() goes to out. On a
   run-time error, or when no GPU or NVRTC is usable, returns false and fills err. A
   one-shot session: for repeated calls use gpu_session_new and gpu_call. */
bool gpu_run(const Program *p, const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err);

/* Ahead-of-time: kernels come from a bundle's images (bundle_pick: the exact cubin, else
   PTX), loaded with cuModuleLoadData; NVRTC is never loaded. The bundle must outlive the
   session and must hold this program (bundle_read + the program rebuilt from it). */
struct Bundle;
/* CUK_TIMING=1 makes the GPU backend print start-up marks on stderr; this sets time 0. */
void gpu_timing_start(void);
void gpu_session_use_bundle(GpuSession *s, const struct Bundle *b);
bool gpu_run_bundle(const Program *p, const struct Bundle *b, const Fn *fn, Arr **args, Arr **result, FILE *out,
                    RtErr *err);

#endif
