/* The shape rules and their run-time messages, once for both backends (run.h): NumPy's
   broadcasting, slicing, reshaping, concatenation and the rest, worded as NumPy words
   them. */
#include <stdlib.h>
#include <string.h>

#include "exec/run.h"

int64_t dims_count(const Dims *s) {
    int64_t n = 1;
    for (int k = 0; k < s->rank; k++) n *= s->d[k];
    return n;
}

bool dims_equal(const Dims *a, const Dims *b) {
    if (a->rank != b->rank) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->d[k] != b->d[k]) return false;
    return true;
}

void dims_strides(const Dims *s, int64_t *st) {
    int64_t n = 1;
    for (int k = s->rank - 1; k >= 0; k--) {
        st[k] = n;
        n *= s->d[k];
    }
}

static const char *dstr(char *buf, size_t n, const Dims *s) { return fmt_shape(buf, n, s->rank, s->d); }

bool shape_fits(RtErr *e, Loc loc, DType dt, const Dims *s) {
    /* As in NumPy, the product of the nonzero dims must fit too: an empty array of shape
       (2^62, 0) would otherwise send loops over its outer axes round almost for ever. */
    int64_t n = 1;
    bool empty = false, over = false;
    for (int k = 0; k < s->rank; k++) {
        if (!s->d[k]) empty = true;
        else if (n > INT64_MAX / s->d[k]) over = true;
        else n *= s->d[k];
    }
    if (!over && (empty || (uint64_t)n <= arr_max_bytes() / (uint64_t)dtype_info[dt].size)) return true;
    char b[200];
    rt_error(e, loc, "cannot allocate an array of %s with shape %s: out of memory", dtype_info[dt].name,
             dstr(b, sizeof b, s));
    return false;
}

bool shape_broadcast(RtErr *e, Loc loc, Dims *acc, const Dims *b) {
    Dims r = {0};
    if (broadcast_shapes(acc->rank, acc->d, b->rank, b->d, &r.rank, r.d)) {
        *acc = r;
        return true;
    }
    char s1[200], s2[200];
    rt_error(e, loc, "shapes %s and %s cannot be broadcast together", dstr(s1, sizeof s1, acc),
             dstr(s2, sizeof s2, b));
    return false;
}

bool shape_index(RtErr *e, Loc loc, int64_t i, int axis, int64_t n, int64_t *t) {
    int64_t j = i < 0 ? i + n : i;
    if (j < 0 || j >= n) {
        rt_error(e, loc, "index %lld is out of bounds for axis %d with size %lld", (long long)i, axis, (long long)n);
        return false;
    }
    *t = j;
    return true;
}

bool shape_mask(RtErr *e, Loc loc, const Dims *x, const Dims *mask) {
    ASSERT(x->rank == mask->rank);
    for (int k = 0; k < x->rank; k++)
        if (x->d[k] != mask->d[k]) {
            rt_error(e, loc,
                     "boolean index did not match indexed array along axis %d; size of axis is %lld but size of "
                     "corresponding boolean axis is %lld",
                     k, (long long)x->d[k], (long long)mask->d[k]);
            return false;
        }
    return true;
}

int64_t shape_roll_shift(int64_t shift, int64_t n) {
    if (n <= 0) return 0;
    int64_t r = shift % n;
    return r < 0 ? r + n : r;
}

bool shape_concat(RtErr *e, const Val *v, const Dims *xs, int n, Dims *out, int64_t *offs) {
    int axis = v->axis;
    ASSERT(n >= 1 && axis >= 0 && axis < xs[0].rank);
    *out = xs[0];
    if (offs) offs[0] = 0;
    for (int i = 1; i < n; i++) {
        ASSERT(xs[i].rank == xs[0].rank);
        for (int k = 0; k < xs[0].rank; k++)
            if (k != axis && xs[i].d[k] != xs[0].d[k]) {
                char s1[200], s2[200];
                rt_error(e, v->loc, "cannot concatenate arrays of shapes %s and %s along axis %d",
                         dstr(s1, sizeof s1, &xs[0]), dstr(s2, sizeof s2, &xs[i]), axis);
                return false;
            }
        if (offs) offs[i] = out->d[axis];
        if (xs[i].d[axis] > INT64_MAX - out->d[axis]) { /* only with empty arrays */
            rt_error(e, v->loc, "concatenated array is too large along axis %d", axis);
            return false;
        }
        out->d[axis] += xs[i].d[axis];
    }
    return true;
}

bool shape_segments_error(RtErr *e, const Val *r, int64_t key, int64_t a, int64_t b, int64_t n) {
    const char *what = r->op == OP_SCAN ? "scan" : "reduction";
    if (key == 0)
        rt_error(e, r->loc, "segments=: offs[0] is %lld, but the first segment of a %s must start at 0", (long long)a,
                 what);
    else if (key < SEG_ERR_LAST)
        rt_error(e, r->loc,
                 "segments=: offsets must be non-decreasing, but offs[%lld] = %lld is less than offs[%lld] = %lld",
                 (long long)key, (long long)a, (long long)(key - 1), (long long)b);
    else
        rt_error(e, r->loc, "segments=: the last offset, offs[%lld] = %lld, must be the length of the array (%lld)",
                 (long long)(key - SEG_ERR_LAST), (long long)a, (long long)n);
    return false;
}

bool shape_check_segments(RtErr *e, const Val *r, const int64_t *offs, int64_t m, int64_t n) {
    ASSERT(m >= 1);
    if (offs[0] != 0) return shape_segments_error(e, r, 0, offs[0], 0, n);
    for (int64_t i = 1; i < m; i++)
        if (offs[i] < offs[i - 1]) return shape_segments_error(e, r, i, offs[i], offs[i - 1], n);
    if (offs[m - 1] != n) return shape_segments_error(e, r, SEG_ERR_LAST + m - 1, offs[m - 1], 0, n);
    return true;
}

bool shape_reduce_has_identity(RtErr *e, const Val *r, const Dims *x) {
    if (red_segs(r)) return true; /* an empty segment gives the identity (or -1: arg*) */
    bool needs_value = !red_init(r) &&
                       (r->red == RED_MIN || r->red == RED_MAX || r->red == RED_ARGMIN || r->red == RED_ARGMAX ||
                        r->red == RED_LAMBDA);
    if (!needs_value) return true;
    int64_t len = 1, nout = 1;
    for (int k = 0; k < x->rank; k++) {
        if (r->axis == AXIS_ALL || k == r->axis) len *= x->d[k];
        else nout *= x->d[k];
    }
    if (len != 0 || nout == 0) return true;
    rt_error(e, r->loc, "zero-size array to reduction operation %s which has no identity", red_name[r->red]);
    return false;
}

/* Generators' dims: the operands from first on. */
static bool gen_dims(const Operands *o, const Val *v, int first, Dims *out) {
    out->rank = v->nargs - first;
    ASSERT(out->rank >= 0 && out->rank <= MAXRANK);
    for (int k = 0; k < out->rank; k++) {
        if (!o->i64(o->fr, v->args[first + k], &out->d[k])) return false;
        if (out->d[k] < 0) {
            rt_error(o->err, v->loc, "negative dimensions are not allowed (got %lld)", (long long)out->d[k]);
            return false;
        }
    }
    return shape_fits(o->err, v->loc, v->dt, out);
}

/* Python's slice.indices() for one axis of size n; an index (SL_INDEX) takes one. An
   update's bounds start at args[2] (after x and the value), a slice's at args[1]. */
static bool slice_axis(const Operands *o, const Val *v, int k, int64_t n, SliceAxis *ax) {
    int base = v->op == OP_UPDATE ? 2 : 1;
    int nax = (v->nargs - base) / 3; /* axes past the last one given are taken whole */
    const Val *a0 = k < nax ? v->args[base + 3 * k] : NULL, *a1 = k < nax ? v->args[base + 1 + 3 * k] : NULL,
              *a2 = k < nax ? v->args[base + 2 + 3 * k] : NULL;
    if (k < nax && v->slmode[k] == SL_INDEX) {
        int64_t i;
        if (!o->i64(o->fr, a0, &i) || !shape_index(o->err, v->loc, i, k, n, &ax->start)) return false;
        ax->step = 1, ax->len = 1;
        return true;
    }
    int64_t start, stop, step = 1;
    if (a2 && !o->i64(o->fr, a2, &step)) return false;
    if (step == 0) {
        rt_error(o->err, v->loc, "slice step cannot be zero");
        return false;
    }
    if (step < -INT64_MAX) step = -INT64_MAX; /* as CPython does, so that -step exists */
    int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
    if (a0) {
        if (!o->i64(o->fr, a0, &start)) return false;
        if (start < 0) {
            start += n;
            if (start < lower) start = lower;
        } else if (start > upper) {
            start = upper;
        }
    } else {
        start = step > 0 ? lower : upper;
    }
    if (a1) {
        if (!o->i64(o->fr, a1, &stop)) return false;
        if (stop < 0) {
            stop += n;
            if (stop < lower) stop = lower;
        } else if (stop > upper) {
            stop = upper;
        }
    } else {
        stop = step > 0 ? upper : lower;
    }
    /* Not (stop - start + step - 1) / step: that overflows for steps near 2^63. */
    if (step > 0) ax->len = stop > start ? (stop - start - 1) / step + 1 : 0;
    else ax->len = start > stop ? (start - stop - 1) / (-step) + 1 : 0;
    ax->start = start;
    ax->step = step;
    return true;
}

static bool reshape_rule(const Operands *o, const Val *v, const Dims *x, Dims *out) {
    int rank = v->nargs - 1, unknown = -1;
    int64_t known = 1;
    bool over = false;
    ASSERT(rank >= 0 && rank <= MAXRANK);
    out->rank = rank;
    for (int k = 0; k < rank; k++) {
        int64_t d;
        if (!o->i64(o->fr, v->args[1 + k], &d)) return false;
        out->d[k] = d;
        if (d == -1) {
            if (unknown >= 0) {
                rt_error(o->err, v->loc, "can only specify one unknown dimension");
                return false;
            }
            unknown = k;
        } else if (d < 0) {
            rt_error(o->err, v->loc, "negative dimensions are not allowed (got %lld)", (long long)d);
            return false;
        } else if (d && (over || known > INT64_MAX / d)) {
            over = true; /* NumPy: too big even beside a 0; every dim is still read, for the message */
        } else {
            known *= d;
        }
    }
    int64_t size = dims_count(x);
    if (over) known = -1;
    if (unknown >= 0 && known > 0 && size % known == 0) out->d[unknown] = size / known;
    if (known >= 0 && (unknown >= 0 ? known > 0 && size % known == 0 : known == size)) return true;
    char b[200];
    rt_error(o->err, v->loc, "cannot reshape array of size %lld into shape %s", (long long)size,
             dstr(b, sizeof b, out));
    return false;
}

static bool matmul_rule(const Operands *o, const Val *v, const Dims *x, const Dims *y, Dims *out) {
    ASSERT(x->rank >= 1 && x->rank <= 2 && y->rank >= 1 && y->rank <= 2);
    /* 1-D operands are a row (left) or a column (right), dropped from the result. */
    int64_t k = x->d[x->rank - 1], k2 = y->d[0];
    if (k != k2) {
        char s1[200], s2[200];
        rt_error(o->err, v->loc, "shapes %s and %s not aligned: %lld (dim %d) != %lld (dim 0)",
                 dstr(s1, sizeof s1, x), dstr(s2, sizeof s2, y), (long long)k, x->rank - 1, (long long)k2);
        return false;
    }
    *out = (Dims){0};
    if (x->rank == 2) out->d[out->rank++] = x->d[0];
    if (y->rank == 2) out->d[out->rank++] = y->d[1];
    return true;
}

/* scatter, reduce_by_index, bincount, histogram: vals has idx's length (or is a
   scalar); histogram's args[3] is 1 when its range is usable (sema). */
static bool hist_rule(const Operands *o, const Val *v, const Dims *dest, Dims *out) {
    Dims idx, vals;
    if (!o->dims(o->fr, v->args[1], &idx) || !o->dims(o->fr, v->args[2], &vals)) return false;
    if (vals.rank && !dims_equal(&idx, &vals)) {
        char s1[200], s2[200];
        rt_error(o->err, v->loc, "the indices have shape %s but the values have shape %s; give one value per index",
                 dstr(s1, sizeof s1, &idx), dstr(s2, sizeof s2, &vals));
        return false;
    }
    if (v->nargs > 3) {
        int64_t ok = 0;
        if (!o->i64(o->fr, v->args[3], &ok)) return false;
        if (!ok) {
            rt_error(o->err, v->loc, "histogram() needs a finite range with lo <= hi");
            return false;
        }
        if (dest->d[0] < 1) {
            rt_error(o->err, v->loc, "histogram() needs at least 1 bin, got %lld", (long long)dest->d[0]);
            return false;
        }
    }
    *out = *dest;
    return true;
}

bool shape_rule_covers(const Val *v) {
    switch (v->op) {
    case OP_IOTA:
    case OP_FULL:
    case OP_LINSPACE:
    case OP_RAND:
    case OP_RANDN:
    case OP_REDUCE:
    case OP_SCAN:
    case OP_REVERSE:
    case OP_TRANSPOSE:
    case OP_RESHAPE:
    case OP_SLICE:
    case OP_UPDATE:
    case OP_GATHER:
    case OP_CONCAT:
    case OP_PAD:
    case OP_ROLL:
    case OP_STACK:
    case OP_MATMUL:
    case OP_SCATTER:
    case OP_HIST: return true;
    default: return op_is_ew(v->op);
    }
}

bool shape_rule(const Operands *o, const Val *v, Dims *out, SliceAxis *sl) {
    Dims x = {0};
    *out = (Dims){0};
    if (op_is_ew(v->op)) {
        for (int i = 0; i < v->nargs; i++) {
            if (!o->dims(o->fr, v->args[i], &x)) return false;
            if (i == 0) *out = x;
            else if (!shape_broadcast(o->err, v->loc, out, &x)) return false;
        }
        return true;
    }
    switch (v->op) {
    case OP_IOTA: return gen_dims(o, v, 0, out);
    case OP_FULL: return gen_dims(o, v, 1, out);
    case OP_LINSPACE: return gen_dims(o, v, 2, out);
    case OP_RAND:
    case OP_RANDN: return gen_dims(o, v, 1, out);
    default: break;
    }
    if (!o->dims(o->fr, v->args[0], &x)) return false;
    if (red_segs(v)) {
        Dims od;
        if (!o->dims(o->fr, red_segs(v), &od)) return false;
        ASSERT(od.rank == 1 && x.rank == 1);
        if (od.d[0] < 1) {
            rt_error(o->err, v->loc, "segments= needs k + 1 offsets for k segments, not an empty array "
                                     "(no segments: offs = [0] over an empty array)");
            return false;
        }
        if (v->op == OP_SCAN) *out = x;
        else out->rank = 1, out->d[0] = od.d[0] - 1;
        return true;
    }
    switch (v->op) {
    case OP_REDUCE:
        for (int k = 0; k < x.rank; k++) {
            bool red = v->axis == AXIS_ALL || k == v->axis;
            if (!red) out->d[out->rank++] = x.d[k];
            else if (v->keepdims) out->d[out->rank++] = 1;
        }
        /* min, max, argmin, argmax or a lambda with no initial value over an empty axis: an error also
           where only the result's shape is asked for (len(min(m, axis=1))) */
        return shape_reduce_has_identity(o->err, v, &x);
    case OP_SCAN:
        /* over every axis, the flattened array */
        if (x.rank == v->rank) *out = x;
        else out->rank = 1, out->d[0] = dims_count(&x);
        return true;
    case OP_REVERSE: *out = x; return true;
    case OP_TRANSPOSE:
        out->rank = x.rank;
        for (int k = 0; k < x.rank; k++) {
            ASSERT(v->perm[k] >= 0 && v->perm[k] < x.rank);
            out->d[k] = x.d[v->perm[k]];
        }
        return true;
    case OP_RESHAPE: return reshape_rule(o, v, &x, out);
    case OP_SLICE:
        for (int k = 0; k < x.rank; k++) {
            SliceAxis ax;
            if (!slice_axis(o, v, k, x.d[k], &ax)) return false;
            if (sl) sl[k] = ax;
            if (k >= (v->nargs - 1) / 3 || v->slmode[k] != SL_INDEX) out->d[out->rank++] = ax.len;
        }
        return true;
    case OP_UPDATE: {
        /* x's shape; the value broadcasts to the region (NumPy's rule, trailing axes) */
        Dims e;
        int64_t len[MAXRANK];
        int q = 0;
        for (int k = 0; k < x.rank; k++) {
            SliceAxis ax;
            if (!slice_axis(o, v, k, x.d[k], &ax)) return false;
            if (sl) sl[k] = ax;
            if (v->slmode[k] != SL_INDEX) len[q++] = ax.len;
        }
        if (!o->dims(o->fr, v->args[1], &e)) return false;
        ASSERT(e.rank <= q);
        for (int p = 0; p < e.rank; p++)
            if (e.d[p] != 1 && e.d[p] != len[q - e.rank + p]) {
                Dims rg = {.rank = q};
                memcpy(rg.d, len, sizeof(int64_t) * (size_t)q);
                char s1[200], s2[200];
                rt_error(o->err, v->loc, "could not broadcast the assigned value of shape %s into the updated part of "
                                         "shape %s",
                         dstr(s1, sizeof s1, &e), dstr(s2, sizeof s2, &rg));
                return false;
            }
        *out = x;
        return true;
    }
    case OP_GATHER: {
        Dims idx;
        if (!o->dims(o->fr, v->args[1], &idx)) return false;
        ASSERT(x.rank >= 1 && idx.rank + x.rank - 1 <= MAXRANK);
        *out = idx;
        for (int k = 1; k < x.rank; k++) out->d[out->rank++] = x.d[k];
        return true;
    }
    case OP_CONCAT: {
        Dims xs[8], *p = v->nargs <= 8 ? xs : malloc(sizeof(Dims) * (size_t)v->nargs);
        if (!p) {
            rt_error(o->err, v->loc, "out of memory");
            return false;
        }
        bool ok = true;
        p[0] = x;
        for (int i = 1; ok && i < v->nargs; i++) ok = o->dims(o->fr, v->args[i], &p[i]);
        if (ok) ok = shape_concat(o->err, v, p, v->nargs, out, NULL);
        if (p != xs) free(p);
        return ok;
    }
    case OP_PAD: {
        int64_t w;
        if (!o->i64(o->fr, v->args[1], &w)) return false;
        if (w < 0) {
            rt_error(o->err, v->loc, "pad() width must be 0 or more, got %lld", (long long)w);
            return false;
        }
        *out = x;
        for (int k = 0; k < x.rank; k++) {
            if (w > (INT64_MAX - x.d[k]) / 2) {
                rt_error(o->err, v->loc, "pad() width %lld makes axis %d too large", (long long)w, k);
                return false;
            }
            out->d[k] = x.d[k] + 2 * w;
        }
        return shape_fits(o->err, v->loc, v->dt, out);
    }
    case OP_ROLL: *out = x; return true;
    case OP_STACK: {
        ASSERT(v->axis >= 0 && v->axis <= x.rank && x.rank < MAXRANK);
        for (int i = 1; i < v->nargs; i++) {
            Dims y;
            if (!o->dims(o->fr, v->args[i], &y)) return false;
            if (!dims_equal(&x, &y)) {
                char s1[200], s2[200];
                rt_error(o->err, v->loc,
                         "all input arrays must have the same shape: stack() argument 1 has shape %s and argument "
                         "%d has shape %s",
                         dstr(s1, sizeof s1, &x), i + 1, dstr(s2, sizeof s2, &y));
                return false;
            }
        }
        out->rank = x.rank + 1;
        for (int k = 0, q = 0; k < out->rank; k++) out->d[k] = k == v->axis ? v->nargs : x.d[q++];
        return shape_fits(o->err, v->loc, v->dt, out);
    }
    case OP_MATMUL: {
        Dims y;
        return o->dims(o->fr, v->args[1], &y) && matmul_rule(o, v, &x, &y, out);
    }
    case OP_SCATTER:
    case OP_HIST: return hist_rule(o, v, &x, out);
    default: die("shape_rule: op %s", op_name[v->op]);
    }
}

Arr *exec_load(RtErr *e, const Val *v) {
    char msg[512];
    Arr *a = npy_load(v->path, msg, sizeof msg);
    if (!a) {
        rt_error(e, v->loc, "%s", msg);
        return NULL;
    }
    if (a->dt != v->dt || a->rank != v->rank) {
        char b[200];
        rt_error(e, v->loc, "%s holds a %s array of shape %s, but the program expects %s with %d dimension%s", v->path,
                 dtype_info[a->dt].name, fmt_shape(b, sizeof b, a->rank, a->shape), dtype_info[v->dt].name, v->rank,
                 v->rank == 1 ? "" : "s");
        arr_release(a);
        return NULL;
    }
    return a;
}
