/* print(): scalars and NumPy str()-style arrays (no padding, no line wrapping), elided
   past 1000 elements with the first and last 3 items of each long axis. */
#include <math.h>

#include "exec/exec.h"

enum { PRINT_THRESHOLD = 1000, EDGE_ITEMS = 3 };

static void print_float(FILE *out, double x, int digits) {
    if (x != x)
        fputs("nan", out);
    else if (isinf(x))
        fputs(x < 0 ? "-inf" : "inf", out);
    else
        fprintf(out, "%.*g", digits, x);
}

void scalar_print(FILE *out, DType dt, Scalar v) {
    switch (dt) {
    case DT_BOOL: fputs(v.i ? "true" : "false", out); break;
    case DT_I32:
    case DT_I64: fprintf(out, "%lld", (long long)v.i); break;
    case DT_U32:
    case DT_U64: fprintf(out, "%llu", (unsigned long long)v.u); break;
    case DT_F32: print_float(out, (double)(float)v.f, 9); break;
    case DT_F64: print_float(out, v.f, 17); break;
    default: die("bad dtype %d", (int)dt);
    }
}

/* NumPy's _formatArray: axis `axis` of the sub-array starting at flat offset `base`. */
static void print_axis(FILE *out, const Arr *a, int axis, int64_t base, const int64_t *stride,
                       bool summary) {
    int64_t len = a->shape[axis];
    bool elide = summary && len > 2 * EDGE_ITEMS;
    int left = a->rank - axis; /* axes from this one down */
    fputc('[', out);
    for (int64_t i = 0; i < len; i++) {
        if (elide && i == EDGE_ITEMS) {
            /* "..." stands for the middle items; skip to the trailing edge. */
            if (left == 1)
                fputs("... ", out);
            else {
                fputs("...", out);
                for (int k = 0; k < left - 1; k++) fputc('\n', out);
                for (int k = 0; k <= axis; k++) fputc(' ', out);
            }
            i = len - EDGE_ITEMS;
        }
        if (axis + 1 == a->rank)
            scalar_print(out, a->dt, arr_get(a, base + i * stride[axis]));
        else
            print_axis(out, a, axis + 1, base + i * stride[axis], stride, summary);
        if (i + 1 < len) {
            if (left == 1)
                fputc(' ', out);
            else {
                for (int k = 0; k < left - 1; k++) fputc('\n', out);
                for (int k = 0; k <= axis; k++) fputc(' ', out);
            }
        }
    }
    fputc(']', out);
}

void arr_print(FILE *out, const Arr *a) {
    if (a->rank == 0) {
        scalar_print(out, a->dt, arr_get(a, 0));
    } else if (a->size == 0) {
        fputs("[]", out);
    } else {
        int64_t stride[MAXRANK];
        int64_t s = 1;
        for (int k = a->rank - 1; k >= 0; k--) {
            stride[k] = s;
            s *= a->shape[k];
        }
        print_axis(out, a, 0, 0, stride, a->size > PRINT_THRESHOLD);
    }
    fputc('\n', out);
}
