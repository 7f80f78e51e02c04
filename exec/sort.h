/* Sorting on the host (the CPU backend's sort, argsort and searchsorted; DESIGN.md part 2,
   "Sorting"): stable, ascending or descending, NaN last either way, -0.0 equal to 0.0,
   for every element type. Keys are the elements mapped to unsigned integers whose
   order is the wanted one (sort_key), sorted by a least-significant-digit radix sort. */
#ifndef CUK_EXEC_SORT_H
#define CUK_EXEC_SORT_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler/ir.h"

/* Sorts `rows` rows of len elements of type dt at x (row-major, contiguous): for each
   row, vals gets its elements in order (sort), or, when idx is not NULL, idx their
   positions in the row (argsort). Returns false when memory runs out (nothing else
   fails). */
bool host_sort_rows(DType dt, const void *x, int64_t rows, int64_t len, bool descending, void *vals, int64_t *idx);

/* top_k's positions: idx (rows x k) gets each row's first k positions of its
   descending argsort (ties by position, NaN last), by selection where k is small
   beside the row (a few passes over it, not its sort). False when memory runs out. */
bool host_topk_rows(DType dt, const void *x, int64_t rows, int64_t len, int64_t k, int64_t *idx);

/* For each of the n values v of type dt, the first position in the m sorted values a
   (ascending, NaN last) where a[i] >= v (right: a[i] > v), as out[k]. Returns false
   when memory runs out. */
bool host_searchsorted(DType dt, const void *a, int64_t m, const void *v, int64_t n, bool right, int64_t *out);

#endif
