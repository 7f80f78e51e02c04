/* What the two backends share (exec/cpu/eval.c, exec/gpu/exec.c): the shape rules with
   their run-time messages, written once; the statement walker over a small backend
   interface (QBE's struct Target); the checks every run makes (work budget, call depth,
   stack). Nothing here is seen outside exec/. */
#ifndef CUK_EXEC_RUN_H
#define CUK_EXEC_RUN_H
#include "exec/exec.h"

/* ---- shapes -------------------------------------------------------------------------- */

typedef struct Dims {
    int rank;
    int64_t d[MAXRANK]; /* zeros past rank */
} Dims;

/* How a backend answers the shape rules' questions about a value's operands. */
typedef struct Operands {
    void *fr;                                           /* the backend's frame */
    bool (*dims)(void *fr, const Val *v, Dims *out);    /* an operand's shape */
    bool (*i64)(void *fr, const Val *v, int64_t *out);  /* a scalar operand as i64 */
    RtErr *err;
} Operands;

/* One source axis of a slice: where it starts, its step and how many it takes. */
typedef struct SliceAxis {
    int64_t start, step, len;
} SliceAxis;

/* The shape of v from its operands, with NumPy's rules and messages, for every op
   whose shape does not need its value: elementwise ops (broadcasting), generators,
   reductions, scans, reverse, transpose, reshape, slice, gather, concat, matmul.
   *sl, if not NULL, gets a slice's source axes (OP_SLICE only). False with err set
   when the operands break a rule. */
bool shape_rule(const Operands *o, const Val *v, Dims *out, SliceAxis *sl);
/* True for the ops shape_rule knows. */
bool shape_rule_covers(const Val *v);

/* The rules shape_rule applies, for backends that have the operands in hand. */
bool shape_broadcast(RtErr *e, Loc loc, Dims *acc, const Dims *b);
/* A concatenation of n arrays along v->axis; offs (if not NULL) gets each one's offset. */
bool shape_concat(RtErr *e, const Val *v, const Dims *xs, int n, Dims *out, int64_t *offs);
/* Index i of an axis of size n (negative counts from the end): *t in 0..n-1. */
bool shape_index(RtErr *e, Loc loc, int64_t i, int axis, int64_t n, int64_t *t);
/* x[mask]: the mask has x's shape (NumPy's rule and message). */
bool shape_mask(RtErr *e, Loc loc, const Dims *x, const Dims *mask);
/* roll(): a shift taken modulo the length n, in [0, n) (0 when n is 0). */
int64_t shape_roll_shift(int64_t shift, int64_t n);
/* A reduction that needs a value (min, max, arg*, lambdas without an initial value)
   over an empty axis, with outputs to fill: NumPy's error. */
bool shape_reduce_has_identity(RtErr *e, const Val *r, const Dims *x);
/* The first bad offset, as a key in the order the offsets are checked: 0 for offs[0] =
   a != 0; i for offs[i] = a < offs[i - 1] = b; SEG_ERR_LAST + m - 1 for the last offset
   offs[m - 1] = a != n. The GPU's segmented reductions find it on the device
   (kernels/scan.cuh cuk_sr_err, the same keys). Reports it; returns false. */
#define SEG_ERR_LAST ((int64_t)1 << 62)
bool shape_segments_error(RtErr *e, const Val *r, int64_t key, int64_t a, int64_t b, int64_t n);
/* The offsets of segments=offs (m values) of a segmented reduce or scan r over n
   elements: offs[0] == 0, non-decreasing, offs[m - 1] == n; else an error at r naming
   the first offending position. */
bool shape_check_segments(RtErr *e, const Val *r, const int64_t *offs, int64_t m, int64_t n);
/* An array of dt and shape fits in memory: the limit arr_new applies, also to fused
   values that are never stored, so that a program fails the same way on both
   backends whether or not a value is stored. */
bool shape_fits(RtErr *e, Loc loc, DType dt, const Dims *s);

int64_t dims_count(const Dims *s); /* product; fits, as shape_fits checked */
bool dims_equal(const Dims *a, const Dims *b);
void dims_strides(const Dims *s, int64_t *st); /* C order, in elements */

/* ---- loads --------------------------------------------------------------------------- */

/* OP_LOAD: the .npy file v names, checked against v's dtype and rank. */
Arr *exec_load(RtErr *e, const Val *v);

/* ---- the statement walker ------------------------------------------------------------ */

/* A backend as the walker sees it. fr is the backend's frame for one call. Every hook
   reports its errors into the run's RtErr and returns false. */
typedef struct Target {
    /* slots[slot] = the value of v */
    bool (*set)(void *fr, int slot, const Val *v);
    /* slots[slot] = a host scalar (a loop variable) */
    bool (*set_scalar)(void *fr, int slot, DType dt, Scalar x);
    /* the value of scalar v on the host (conditions, loop bounds) */
    bool (*scalar)(void *fr, const Val *v, Scalar *out);
    /* the value of v as a host array, a new reference (print, save) */
    Arr *(*host)(void *fr, const Val *v);
    /* evaluates v for its effects (a call whose result is dropped) */
    bool (*effect)(void *fr, const Val *v);
    /* the function's result is the value of v (NULL for none) */
    bool (*ret)(void *fr, const Val *v);
    /* the statement is over: drop what was memoised for it */
    void (*end)(void *fr);
    /* the function's several results are the values of vs[0..n) */
    bool (*ret_n)(void *fr, int n, Val *const *vs);
    /* runs the OP_CALL v of a function with n results: slots[slots[k]] = result k
       (a slot of -1 drops its result) */
    bool (*call_n)(void *fr, const Val *v, int n, const int *slots);
    /* waits until the statement's work is done (the GPU's queued kernels), for
       profiles; NULL where it is done when the hook returns (the CPU backend) */
    void (*sync)(void *fr);
} Target;

/* What one run (a cpu_run or a gpu_call) carries through all its calls. */
typedef struct Run {
    RtErr *err;
    FILE *out;      /* print() */
    int64_t work;   /* spent against cpu_work_limit */
    int depth;      /* nested calls */
    /* the lowest address this thread's stack may grow to before calls refuse to nest
       deeper (0: not known, no check) */
    uintptr_t stack_floor;
    void *host_progs; /* the CPU backend's compiled scalar functions for this run (or NULL) */
    Profile *prof;    /* time per statement, when profiling (exec.h), else NULL */
} Run;

enum { MAX_CALL_DEPTH = 1000 }; /* nested calls before a run-time error, on both backends */

void run_init(Run *r, RtErr *err, FILE *out);
/* Whether this thread's run may go on (exec.h's interrupt hook, asked at most every
   20 ms): false once it said stop; run_charge then fails with "interrupted" and the CPU
   backend's chunk loops stop. */
bool run_poll(void);
/* run_poll without its rate limit: asks the interrupt hook now (the run's thread only). */
bool run_poll_now(void);
/* A run on a thread of its own whose caller waits: the caller asks the hook
   (run_ask_hook) while it waits and sets *stop; run_bind(stop) on the run's thread makes
   its polls read that flag. */
#include <stdatomic.h>
void run_bind(atomic_bool *stop);
bool run_ask_hook(void);
/* Counts n units of work (elements allocated or streamed, loop iterations, calls)
   against cpu_work_limit; false with the error once it is exceeded. */
bool run_charge(Run *r, Loc loc, int64_t n);
/* Entering and leaving a call of fn: refuses past MAX_CALL_DEPTH nested calls or when
   the thread's stack runs low, so that deep recursion is an error on either backend,
   never a crash. */
bool run_enter(Run *r, Loc loc, const Fn *fn);
void run_leave(Run *r);

/* Runs statements s of fn with target t on frame fr. Returns WALK_OK (fell off the end),
   WALK_RETURN (a return statement ran: t->ret or t->ret_n has the values) or WALK_ERROR. */
enum { WALK_OK, WALK_RETURN, WALK_ERROR };
int walk(Run *r, const Target *t, void *fr, const Fn *fn, const Stmt *s);

#endif
