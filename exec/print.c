/* print(): scalars and NumPy str()-style arrays (no padding, no line wrapping), elided
   past 1000 elements with the first and last 3 items of each long axis. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* A 16-bit float as NumPy prints one: the fewest significant digits that read back as
   the same value (at most 5 for f16, 4 for bf16), written out positionally (zeros
   after the digits where they run out: 60000, not 6e+04) between 1e-4 and 1e16. */
static void print_half(FILE *out, DType dt, double x) {
    if (x != x || isinf(x) || x == 0) {
        print_float(out, x, 1);
        return;
    }
    char buf[48];
    int d = 1;
    for (; d < 17; d++) {
        snprintf(buf, sizeof buf, "%.*e", d - 1, x);
        if (scalar_cast((Scalar){.f = strtod(buf, NULL)}, DT_F64, dt).f == x) break;
    }
    char *e = strchr(buf, 'e');
    int ex = atoi(e + 1);
    if (ex < -4 || ex >= 16) {
        fprintf(out, "%.*g", d, x);
        return;
    }
    char dig[24];
    int nd = 0;
    for (const char *q = buf; q < e; q++)
        if (*q >= '0' && *q <= '9') dig[nd++] = *q;
    if (x < 0) fputc('-', out);
    if (ex < 0) {
        fputs("0.", out);
        for (int i = -1; i > ex; i--) fputc('0', out);
        fwrite(dig, 1, (size_t)nd, out);
        return;
    }
    for (int i = 0; i <= ex; i++) fputc(i < nd ? dig[i] : '0', out);
    if (nd > ex + 1) {
        fputc('.', out);
        fwrite(dig + ex + 1, 1, (size_t)(nd - ex - 1), out);
    }
}

/* A complex number as NumPy prints one: (1+2j), (1-2j), (nan+infj); 2j where the real
   part is +0 (a scalar); in an array without the parentheses, re+imj. The parts as the
   part type prints them. */
static void print_elem(FILE *out, DType dt, Scalar v, bool in_array);

static void print_complex(FILE *out, DType dt, Scalar v, bool in_array) {
    DType pt = dtype_part(dt);
    double re = v.z[0], im = v.z[1];
    if (!in_array && re == 0 && !signbit(re)) {
        print_elem(out, pt, (Scalar){.f = im}, false);
        fputc('j', out);
        return;
    }
    if (!in_array) fputc('(', out);
    print_elem(out, pt, (Scalar){.f = re}, false);
    bool neg = im == im && signbit(im);
    fputc(neg ? '-' : '+', out);
    print_elem(out, pt, (Scalar){.f = neg ? -im : im}, false);
    fputs(in_array ? "j" : "j)", out);
}

/* One element; in_array: an item of a printed array (a complex one without parentheses). */
static void print_elem(FILE *out, DType dt, Scalar v, bool in_array) {
    switch (dt) {
    case DT_C64:
    case DT_C128: print_complex(out, dt, v, in_array); break;
    case DT_BOOL: fputs(v.i ? "true" : "false", out); break;
    case DT_I8:
    case DT_I16:
    case DT_I32:
    case DT_I64: fprintf(out, "%lld", (long long)v.i); break;
    case DT_U8:
    case DT_U16:
    case DT_U32:
    case DT_U64: fprintf(out, "%llu", (unsigned long long)v.u); break;
    case DT_F32: print_float(out, (double)(float)v.f, 9); break;
    case DT_F64: print_float(out, v.f, 17); break;
    case DT_F16:
    case DT_BF16: print_half(out, dt, v.f); break;
    default: die("bad dtype %d", (int)dt);
    }
}

void scalar_print(FILE *out, DType dt, Scalar v) { print_elem(out, dt, v, false); }

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
            print_elem(out, a->dt, arr_get(a, base + i * stride[axis]), true);
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
