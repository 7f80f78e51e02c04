/* The exec layer: what runs a checked program. Host arrays (arr.c), .npy I/O (npy.c)
   and NumPy-style printing (print.c), shared by both backends; the CPU backend
   (cpu/eval.c, cpu_run); the GPU executor (gpu/exec.c, sessions and gpu_call). The
   shape rules and the statement walker the two backends share are in run.h. */
#ifndef CUK_EXEC_H
#define CUK_EXEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler/bundle.h"
#include "compiler/pipeline.h"
#include "runtime/cuk.h"

/* A dense, C-ordered, reference-counted host array. rank 0 is a scalar (size 1). */
typedef struct Arr {
    DType dt;
    int rank;
    int64_t shape[MAXRANK];
    int64_t size;  /* product of shape */
    void *data;    /* size * dtype_info[dt].size bytes, 64-byte aligned */
    int refs;
} Arr;

/* Returns NULL if the size overflows or memory runs out (then *err, if given, says so). */
Arr *arr_new(DType dt, int rank, const int64_t *shape);
Arr *arr_scalar(DType dt, Scalar v);
/* The most bytes arr_new will try to allocate (about twice the physical memory, at
   most 1 TiB); fused values that are never stored are held to the same limit. */
uint64_t arr_max_bytes(void);
Arr *arr_retain(Arr *a);
void arr_release(Arr *a);
/* Element i (flat index) as a Scalar of the array's own type. */
Scalar arr_get(const Arr *a, int64_t i);
/* One element's bytes at p as a Scalar of type dt, and a Scalar stored there. */
Scalar scalar_load(DType dt, const void *p);
void scalar_store(DType dt, Scalar v, void *p);
/* Converts a scalar between dtypes with the language's cast rules. */
Scalar scalar_cast(Scalar v, DType from, DType to);
/* Float to an integer of size bytes: truncate toward zero, saturate at the range, NaN -> 0
   (CUDA's cvt.rzi.sat). The bounds, 2^(bits - 1) and 2^bits, are exact doubles; with a
   constant size they fold (the CPU backend's cast loops). */
static inline int64_t sat_s(double x, int size) {
    double hi = size == 8 ? 9223372036854775808.0 : (double)(1ull << (8 * size - 1));
    int64_t him = size == 8 ? INT64_MAX : (int64_t)((1ull << (8 * size - 1)) - 1);
    if (x != x) return 0;
    if (x >= hi) return him;
    if (x <= -hi) return -him - 1;
    return (int64_t)x;
}
static inline uint64_t sat_u(double x, int size) {
    double hi = size == 8 ? 18446744073709551616.0 : (double)(1ull << (8 * size));
    if (x != x || x <= 0) return 0;
    if (x >= hi) return size == 8 ? UINT64_MAX : (1ull << (8 * size)) - 1;
    return (uint64_t)x;
}

/* A run-time error: where (the IR node's location) and what. */
/* Interrupts (exec/walk.c): hook (set once, by the Python extension: Ctrl-C) is asked
   on the thread running a program, at most every 20 ms, whether to stop; the run then
   ends early and run_interrupted() is true until run_interrupt_reset(), which the API
   calls before each call (and reports CUK_ERR_INTERRUPTED after one). */
void run_set_interrupt_hook(int (*hook)(void));
bool run_interrupted(void);
void run_interrupt_reset(void);
void run_interrupt_set(void);

typedef struct RtErr {
    bool set;
    Loc loc;
    char msg[1024];
} RtErr;
/* An empty error, without clearing the message buffer (per-call paths make one). */
static inline void rt_err_init(RtErr *e) {
    e->set = false;
    e->loc = (Loc){0};
    e->msg[0] = 0;
}
void rt_error(RtErr *e, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints "file:line:col: error: msg" with the source line and caret (via diag). */
void rt_report(const RtErr *e, Diag *d);

/* Runs fn with the given arguments (one Arr per parameter, matching dtype and rank).
   *result gets the returned value (NULL for none); for a function with several results,
   result[0..fn->nres) gets them. print() output goes to out.
   Returns false and fills err on a run-time error. */
bool cpu_run(const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err);
/* Profiles (cukc run --profile, cuk_program_opts.profile): wall time per statement,
   summed over the calls that ran it, inclusive of what it calls; on the GPU each
   statement waits for its kernels, so its time is theirs (and the run is slower by those
   waits). Safe to share between threads. */
typedef struct Profile Profile;
Profile *profile_new(void);
void profile_free(Profile *p);
/* Adds ns nanoseconds to statement s of fn (walk.c), and a whole call's time. */
void profile_add(Profile *p, const Fn *fn, const Stmt *s, int64_t ns);
void profile_call(Profile *p, int64_t ns);
/* On the GPU, per kernel (key: the plan's Kernel, one row each): a launch's time between
   events around it, and the bytes of the arrays it reads and writes (each once); the
   device's copy bandwidth (a device-to-device copy, measured once), GB/s, for the
   table's "% copy". */
void profile_kernel(Profile *p, const void *key, const char *name, const char *kind, Loc loc, double ms,
                    int64_t bytes);
void profile_copy_bandwidth(Profile *p, double gbs);
/* The clock both use (CLOCK_MONOTONIC, ns). */
int64_t profile_clock(void);
/* The table, heaviest first (backend: its name in the heading); nothing when empty. */
void profile_print(const Profile *p, const char *backend, FILE *out);
/* cpu_run with a profile (NULL: none). */
bool cpu_run_profiled(const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err, Profile *prof);
/* For the fuzzer (tests/fuzz/): when > 0, cpu_run stops with a run-time error once the
   elements it has allocated or streamed, plus loop iterations and calls, pass this, so
   that generated programs with huge sizes or endless loops finish. 0 (the default) means
   no limit. Not thread-safe to change during a run. */
extern int64_t cpu_work_limit;

/* npy.c: .npy version 1.0/2.0/3.0, little-endian, C order; every dtype (bf16 as V2).
   On failure returns NULL / false with a message in err. */
Arr *npy_load(const char *path, char *err, size_t errlen);
Arr *npy_load_mem(const void *buf, size_t len, char *err, size_t errlen);
bool npy_save(const char *path, const Arr *a, char *err, size_t errlen);

/* print.c: one value as docs/language.md ("print") says: integers exact, f32 with 9 and f64 with 17
   significant digits, true/false, arrays NumPy-style, elided past 1000 elements. Ends
   with a newline. */
void arr_print(FILE *out, const Arr *a);
void scalar_print(FILE *out, DType dt, Scalar v);

/* ---- the GPU executor (gpu/exec.c) -------------------------------------------------- */

/* A compiled program on the current device: the pipeline's plans and CUDA C, and its
   kernels (each plan compiled through the kernel cache on first use, or loaded from a
   bundle's image; each kernel handle looked up once), plus the storage calls reuse
   (frames, launch blocks, scratch).

   Threads: different sessions may be used from different threads at once. One session
   may be shared too: gpu_call takes the session's mutex, so calls on it run one at a
   time. The Compiled program (and the bundle) must outlive the session. All device work
   is queued on the legacy default stream, so it is ordered with CuPy's and PyTorch's
   default streams. */
typedef struct GpuSession GpuSession;

/* Initialises the runtime for a program compiled to STAGE_CUDA. With a bundle b (read
   by bundle_read, holding this program), kernels come from its images (bundle_pick: the
   exact cubin, else PTX), loaded with cuModuleLoadData, and NVRTC is never loaded. NULL
   with err filled (no driver, no GPU) on failure. */
GpuSession *gpu_session_new(const Compiled *c, const Bundle *b, RtErr *err);
/* Kernels compiled from now on contract multiplies and adds into FMAs (NVRTC --fmad=true);
   by default they do not (--fmad=false: the CPU backend's arithmetic). */
void gpu_session_fast_math(GpuSession *s, bool on);
/* Calls on s add to prof (exec.h's Profile; NULL: none). */
void gpu_session_profile(GpuSession *s, Profile *prof);
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
   a scalar is on the host (rank 0, p 0; see gpu_call_into's flags). print() goes to out. The call returns once its work is
   queued: it waits for the device only where a value must come to the host (print,
   save, a scalar read or returned, an index bounds check). Kernel faults therefore may
   surface at a later synchronising call. On a run-time error returns false and fills
   err (*result is then DT_VOID). For a function with several results, result has
   fn->nres entries and each gets one as above. */
bool gpu_call(GpuSession *s, const Fn *fn, const GpuVal *args, GpuVal *result, FILE *out, RtErr *err);
/* gpu_call with the result written into `into` (out=): a device array that must have
   the result's dtype and shape (else a run-time error saying both). The kernel that
   computes the returned value writes there directly unless an argument overlaps it;
   otherwise the result is copied there at the end. *result then describes into, with
   borrowed set (the memory stays the caller's). A function that returns a scalar,
   nothing or several results is an error. With GPU_CALL_DEVICE_SCALARS in flags, a
   returned scalar that a kernel computed stays on the device: the result then has rank
   0 and p set, a one-element pool block the caller owns as an array's (a returned sum
   goes back to a caller on the device without a synchronising copy to the host and
   back); other scalars have p 0 and s set. Every launch, copy and allocation of the call
   is queued on `stream` (NULL: the legacy default stream), after the work queued there
   before; where a value must come to the host the call waits for that stream alone.
   Results are pool blocks of that stream (cuk_mem_free orders their reuse after it). */
enum { GPU_CALL_DEVICE_SCALARS = 1 };
bool gpu_call_into(GpuSession *s, const Fn *fn, const GpuVal *args, const GpuVal *into, GpuVal *result, FILE *out,
                   RtErr *err, unsigned flags, cuk_stream *stream);

/* gpu_call's fast path, for a caller that must not block (the Python extension keeps
   the GIL for it): does the call only when fn is one kernel, already compiled, and the
   arguments fit it as they are (device arrays of one shape, host scalars), which costs
   one pool allocation and one asynchronous launch. Returns 1 when done (*result as from
   gpu_call), 0 when nothing was done and the call needs gpu_call, -1 on an error (err
   filled). */
int gpu_call_quick(GpuSession *s, const Fn *fn, const GpuVal *args, GpuVal *result, RtErr *err);
/* gpu_call_quick writing into `into` as gpu_call_into does (0 when it does not fit), on
   `stream` as gpu_call_into. */
int gpu_call_quick_into(GpuSession *s, const Fn *fn, const GpuVal *args, const GpuVal *into, GpuVal *result,
                        RtErr *err, cuk_stream *stream);

/* The session's state for calls on `stream` (its scratch and error-word blocks) is
   removed without freeing them: they go to blocks (returns how many, at most 2), for a
   CUDA graph that captured calls on that stream and keeps using them. */
int gpu_session_take_stream(GpuSession *s, cuk_stream *stream, cuk_devptr blocks[2]);

/* CUK_TIMING=1 makes the GPU executor print start-up marks on stderr; this sets time 0. */
void gpu_timing_start(void);

#endif
