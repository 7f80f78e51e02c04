/* Sorting on the GPU: sort, argsort and searchsorted of device arrays (kernels/sort.cuh,
   compiled through NVRTC on first use, one module per element type). Every launch goes
   on the running call's stream (order.h), as the executor's kernels do. */
#ifndef CUK_EXEC_GPU_SORT_H
#define CUK_EXEC_GPU_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/ir.h"
#include "runtime/cuk.h"

/* Sorts `rows` rows of len elements of type dt at x (row-major, contiguous) into out:
   the elements (sort) or, when arg, their i64 positions in the row (argsort); stable,
   NaN last, -0.0 equal to 0.0, as exec/sort.h on the host. *mod is the caller's slot
   for dt's module (NULL: compiled on this first use and kept there, so later calls
   neither build nor hash the source). False with why set (what failed and what to do)
   on failure. */
bool gpu_sort_rows(DType dt, cuk_devptr x, int64_t rows, int64_t len, bool desc, bool arg, cuk_devptr out,
                   cuk_module **mod, char *why, size_t whylen);

/* sort_by_key: the n keys k (of type kdt) sorted into kout as gpu_sort_rows sorts one row,
   and the n values v (of type vdt) into vout in the same order; mod as for
   gpu_sort_rows (kdt's module). */
bool gpu_sort_kv(DType kdt, cuk_devptr k, int64_t n, bool desc, DType vdt, cuk_devptr v, cuk_devptr kout,
                 cuk_devptr vout, cuk_module **mod, char *why, size_t whylen);

/* unique(x) of the n elements x by hashing (kernels/sort.cuh, uniq_*): where the
   distinct values fit the table (at most half of its slots, the table at most 32 MB),
   *fits is set and the result (sorted, NaNs as one, -0.0 and 0.0 as one, each group
   as its first element in x) is written to alloc(actx, count) (which returns 0 with its
   error set on failure). Otherwise (or n small) *fits stays false and nothing is
   written: the caller sorts. False with why set on failure. */
bool gpu_unique(DType dt, cuk_devptr x, int64_t n, cuk_devptr (*alloc)(void *ctx, int64_t count), void *actx,
                bool *fits, cuk_module **mod, char *why, size_t whylen);

/* top_k's positions: out (i64, rows x k) gets each row's first k positions of its
   argsort(descending=true) (ties by position, NaN last), found by selection where k is
   small beside the row (kernels/sort.cuh, topk_*), else by sorting the rows; mod as for
   gpu_sort_rows. */
bool gpu_topk_rows(DType dt, cuk_devptr x, int64_t rows, int64_t len, int64_t k, cuk_devptr out, cuk_module **mod,
                   char *why, size_t whylen);

/* out[k] (i64) = the first place in the m sorted a (ascending, NaN last) whose element
   is at least v[k] (right: greater), for the n values v; mod as for gpu_sort_rows. */
bool gpu_searchsorted(DType dt, cuk_devptr a, int64_t m, cuk_devptr v, int64_t n, bool right, cuk_devptr out,
                      cuk_module **mod, char *why, size_t whylen);

/* The sort module's CUDA C for dt (malloc'ed; NULL without memory): what CI compiles. */
char *gpu_sort_source(DType dt);

#endif
