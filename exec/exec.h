/* The CPU backend: host arrays, the IR interpreter (chunked, fused elementwise
   evaluation), .npy I/O and NumPy-style printing. */
#ifndef CUK_CPU_H
#define CUK_CPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler/ir.h"

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
/* Converts a scalar between dtypes with the language's cast rules. */
Scalar scalar_cast(Scalar v, DType from, DType to);

/* A run-time error: where (the IR node's location) and what. */
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
   *result gets the returned value (NULL for none). print() output goes to out.
   Returns false and fills err on a run-time error. */
bool cpu_run(const Program *p, const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err);
/* For the fuzzer (tests/fuzz/): when > 0, cpu_run stops with a run-time error once the
   elements it has allocated or streamed, plus loop iterations and calls, pass this, so
   that generated programs with huge sizes or endless loops finish. 0 (the default) means
   no limit. Not thread-safe to change during a run. */
extern int64_t cpu_work_limit;

/* npy.c: .npy version 1.0/2.0/3.0, little-endian, C order; bool i32 i64 u32 u64 f32 f64.
   On failure returns NULL / false with a message in err. */
Arr *npy_load(const char *path, char *err, size_t errlen);
Arr *npy_load_mem(const void *buf, size_t len, char *err, size_t errlen);
bool npy_save(const char *path, const Arr *a, char *err, size_t errlen);

/* print.c: one value as DESIGN.md says: integers exact, f32 with 9 and f64 with 17
   significant digits, true/false, arrays NumPy-style, elided past 1000 elements. Ends
   with a newline. */
void arr_print(FILE *out, const Arr *a);
void scalar_print(FILE *out, DType dt, Scalar v);

#endif
