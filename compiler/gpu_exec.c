/* The GPU executor: runs a function's host statements on the CPU and its kernels (the
   fusion plan, compiled by NVRTC through runtime/cuk.h) on the device. Arrays live on
   the device; they come back only where printed, saved, indexed on the host or
   returned. Scalars live on the host. Same contract as cpu_run (compiler/cpu.h). */
#include <stdlib.h>
#include <string.h>

/* ops.h compares unsigned values with 0 in its shared integer helpers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "../kernels/ops.h"
#pragma GCC diagnostic pop
#include "../runtime/cuk.h"
#include "cpu.h"
#include "gpu.h"
#include "kernel.h"

/* A value: a host scalar (rank 0) or a reference-counted device array. */
typedef struct DBuf {
    cuk_devptr p;
    int refs;
} DBuf;

typedef struct Value {
    DType dt;
    int rank;
    int64_t shape[MAXRANK];
    Scalar s;  /* rank 0 */
    DBuf *buf; /* rank > 0 */
    bool set;
} Value;

typedef struct Ctx {
    const Program *prog;
    FILE *out;
    RtErr *err;
    Arena arena; /* plans and sources, freed at the end */
    PlanSet *ps;
    cuk_module **mods; /* per plan, compiled on first use */
} Ctx;

typedef struct Frame {
    Ctx *c;
    const Fn *fn;
    const Plan *plan;
    Value *slots;
    Value *memo;   /* per Val id, for the statement being run */
    bool *shaped;  /* memo holds at least the shape */
    Value ret;
    bool returned;
} Frame;

static int64_t nelem(const Value *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->shape[i];
    return n;
}

static void vrelease(Value *v) {
    if (v->buf && --v->buf->refs == 0) {
        cuk_mem_free(v->buf->p);
        free(v->buf);
    }
    v->buf = NULL;
    v->set = false;
}
static Value vretain(const Value *v) {
    Value r = *v;
    if (r.buf) r.buf->refs++;
    return r;
}

static bool gpu_fail(Ctx *c, Loc loc, const char *what) {
    if (!c->err->set) rt_error(c->err, loc, "%s: %s", what, cuk_last_error());
    return false;
}

static bool dalloc(Ctx *c, Value *v, Loc loc) {
    v->buf = calloc(1, sizeof(DBuf));
    if (!v->buf) return gpu_fail(c, loc, "out of host memory");
    v->buf->refs = 1;
    size_t bytes = (size_t)nelem(v) * (size_t)dtype_info[v->dt].size;
    if (cuk_mem_alloc(&v->buf->p, bytes) != CUK_OK) {
        free(v->buf);
        v->buf = NULL;
        return gpu_fail(c, loc, "device allocation failed");
    }
    v->set = true;
    return true;
}

static Arr *download(Ctx *c, const Value *v, Loc loc) {
    if (v->rank == 0) return arr_scalar(v->dt, v->s);
    Arr *a = arr_new(v->dt, v->rank, v->shape);
    if (!a) {
        rt_error(c->err, loc, "out of host memory");
        return NULL;
    }
    size_t bytes = (size_t)a->size * (size_t)dtype_info[v->dt].size;
    if (bytes && cuk_memcpy_dtoh(a->data, v->buf->p, bytes) != CUK_OK) {
        arr_release(a);
        gpu_fail(c, loc, "copy from the device failed");
        return NULL;
    }
    return a;
}

static bool upload(Ctx *c, const Arr *a, Value *v, Loc loc) {
    memset(v, 0, sizeof *v);
    v->dt = a->dt;
    v->rank = a->rank;
    memcpy(v->shape, a->shape, sizeof(int64_t) * MAXRANK);
    if (a->rank == 0) {
        v->s = arr_get(a, 0);
        v->set = true;
        return true;
    }
    if (!dalloc(c, v, loc)) return false;
    size_t bytes = (size_t)a->size * (size_t)dtype_info[a->dt].size;
    if (bytes && cuk_memcpy_htod(v->buf->p, a->data, bytes) != CUK_OK) return gpu_fail(c, loc, "copy to the device failed");
    return true;
}

/* ---- host scalar arithmetic, from the same op table ---------------------------------- */

static double getf(Scalar s, DType dt) {
    if (dtype_info[dt].is_float) return s.f;
    if (dt == DT_U32 || dt == DT_U64) return (double)s.u;
    return (double)s.i;
}
static int64_t geti(Scalar s, DType dt) {
    if (dtype_info[dt].is_float) return (int64_t)s.f;
    return s.i;
}
static Scalar putf(DType dt, double x) {
    Scalar r = {0};
    if (dtype_info[dt].is_float) r.f = dt == DT_F32 ? (double)(float)x : x;
    else r.i = (int64_t)x;
    return r;
}
static Scalar puti(DType dt, int64_t x) {
    Scalar r = {0};
    switch (dt) {
    case DT_BOOL: r.i = x != 0; break;
    case DT_I32: r.i = (int32_t)x; break;
    case DT_U32: r.u = (uint32_t)x; break;
    case DT_F32:
    case DT_F64: r.f = (double)x; break;
    default: r.i = x; break;
    }
    return r;
}

#define INT_CASE(D, TT, UU, EI)                                                 \
    if (dt == D) {                                                              \
        typedef TT T;                                                           \
        typedef UU U;                                                           \
        T a = (T)geti(x[0], v->args[0]->dt);                                    \
        T b = (T)(v->nargs > 1 ? geti(x[1], v->args[1]->dt) : 0);               \
        T c = (T)(v->nargs > 2 ? geti(x[2], v->args[2]->dt) : 0);               \
        (void)a, (void)b, (void)c, (void)sizeof(U);                             \
        return puti(v->dt, (int64_t)(EI));                                      \
    }

static Scalar host_ew(const Val *v, const Scalar *x) {
    DType dt = v->op == OP_SELECT ? v->args[1]->dt : v->args[0]->dt;
    switch (v->op) {
#define X(n, s, ar, cls, EF, ED, EI)                                            \
    case OP_##n:                                                                \
        if (dt == DT_F32) {                                                     \
            float a = (float)getf(x[0], v->args[0]->dt);                        \
            float b = v->nargs > 1 ? (float)getf(x[1], v->args[1]->dt) : 0.0f;  \
            float c = v->nargs > 2 ? (float)getf(x[2], v->args[2]->dt) : 0.0f;  \
            (void)a, (void)b, (void)c;                                          \
            return putf(v->dt, (double)(EF));                                   \
        }                                                                       \
        if (dt == DT_F64) {                                                     \
            double a = getf(x[0], v->args[0]->dt);                              \
            double b = v->nargs > 1 ? getf(x[1], v->args[1]->dt) : 0.0;         \
            double c = v->nargs > 2 ? getf(x[2], v->args[2]->dt) : 0.0;         \
            (void)a, (void)b, (void)c;                                          \
            return putf(v->dt, (double)(ED));                                   \
        }                                                                       \
        INT_CASE(DT_BOOL, uint8_t, uint8_t, EI)                                 \
        INT_CASE(DT_I32, int32_t, uint32_t, EI)                                 \
        INT_CASE(DT_I64, int64_t, uint64_t, EI)                                 \
        INT_CASE(DT_U32, uint32_t, uint32_t, EI)                                \
        INT_CASE(DT_U64, uint64_t, uint64_t, EI)                                \
        break;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
        EW_OPS(X)
#pragma GCC diagnostic pop
#undef X
    default: break;
    }
    die("host_ew: op %d", (int)v->op);
}

/* ---- shapes ----------------------------------------------------------------------------- */

static bool eval(Frame *f, Val *v, Value *out);

static bool scalar_of(Frame *f, Val *v, int64_t *out) {
    Value s;
    if (!eval(f, v, &s)) return false;
    *out = geti(s.s, s.dt);
    return true;
}

/* NumPy slice normalisation for one axis of size n. */
static void norm_slice(int64_t n, bool hs, int64_t start, bool he, int64_t stop, int64_t step, int64_t *st,
                       int64_t *len) {
    if (step > 0) {
        start = !hs ? 0 : start < 0 ? (start + n < 0 ? 0 : start + n) : (start > n ? n : start);
        stop = !he ? n : stop < 0 ? (stop + n < 0 ? 0 : stop + n) : (stop > n ? n : stop);
        *len = stop > start ? (stop - start + step - 1) / step : 0;
    } else {
        start = !hs ? n - 1 : start < 0 ? (start + n < 0 ? -1 : start + n) : (start >= n ? n - 1 : start);
        stop = !he ? -1 : stop < 0 ? (stop + n < 0 ? -1 : stop + n) : (stop >= n ? n - 1 : stop);
        *len = start > stop ? (start - stop - step - 1) / (-step) : 0;
    }
    *st = start;
}

/* Slice parameters of v on source axis k: start, step, output length. */
static bool slice_axis(Frame *f, Val *v, const Value *x, int k, int64_t *st, int64_t *step, int64_t *len) {
    int64_t n = x->shape[k], a = 0, b = 0, s = 1;
    Val *va = v->args[1 + 3 * k], *vb = v->args[2 + 3 * k], *vs = v->args[3 + 3 * k];
    if (va && !scalar_of(f, va, &a)) return false;
    if (v->slmode[k] == SL_INDEX) {
        if (a < 0) a += n;
        if (a < 0 || a >= n) {
            rt_error(f->c->err, v->loc, "index %lld is out of range for axis %d of size %lld", (long long)a, k,
                     (long long)n);
            return false;
        }
        *st = a, *step = 1, *len = 1;
        return true;
    }
    if (vb && !scalar_of(f, vb, &b)) return false;
    if (vs && !scalar_of(f, vs, &s)) return false;
    if (s == 0) {
        rt_error(f->c->err, v->loc, "slice step cannot be zero");
        return false;
    }
    *step = s;
    norm_slice(n, va != NULL, a, vb != NULL, b, s, st, len);
    return true;
}

/* The shape of v without computing it (fused values are never materialised). */
static bool shape_of(Frame *f, Val *v, Value *out) {
    if (f->shaped[v->id] || f->memo[v->id].set) {
        *out = f->memo[v->id];
        return true;
    }
    Value r = {.dt = v->dt, .rank = v->rank};
    bool fused = v->kernel >= 0 || op_is_ew(v->op) || v->op == OP_IOTA || v->op == OP_FULL || v->op == OP_LINSPACE ||
                 v->op == OP_RAND || v->op == OP_RANDN;
    if (v->rank == 0) {
        *out = r; /* a scalar has no shape to compute */
        return true;
    }
    if (!fused) {
        if (!eval(f, v, &r)) return false;
        *out = r;
        return true;
    }
    if (op_is_ew(v->op)) {
        int rk = 0;
        int64_t sh[MAXRANK];
        for (int i = 0; i < v->nargs; i++) {
            Value a;
            if (!shape_of(f, v->args[i], &a)) return false;
            if (!broadcast_shapes(rk, sh, a.rank, a.shape, &rk, sh)) {
                char b1[128], b2[128];
                rt_error(f->c->err, v->loc, "shapes %s and %s do not broadcast", fmt_shape(b1, sizeof b1, rk, sh),
                         fmt_shape(b2, sizeof b2, a.rank, a.shape));
                return false;
            }
        }
        memcpy(r.shape, sh, sizeof sh);
    } else {
        switch (v->op) {
        case OP_IOTA:
            if (!scalar_of(f, v->args[0], &r.shape[0])) return false;
            break;
        case OP_LINSPACE:
            if (!scalar_of(f, v->args[2], &r.shape[0])) return false;
            break;
        case OP_FULL:
        case OP_RAND:
        case OP_RANDN:
            for (int k = 0; k < v->rank; k++)
                if (!scalar_of(f, v->args[1 + k], &r.shape[k])) return false;
            break;
        case OP_REDUCE: {
            Value x;
            if (!shape_of(f, v->args[0], &x)) return false;
            int o = 0;
            for (int k = 0; k < x.rank; k++) {
                bool red = v->axis == AXIS_ALL || k == v->axis;
                if (!red) r.shape[o++] = x.shape[k];
                else if (v->keepdims) r.shape[o++] = 1;
            }
            break;
        }
        case OP_SCAN: {
            Value x;
            if (!shape_of(f, v->args[0], &x)) return false;
            if (x.rank == v->rank) memcpy(r.shape, x.shape, sizeof r.shape);
            else r.shape[0] = nelem(&x);
            break;
        }
        case OP_REVERSE:
        case OP_TRANSPOSE:
        case OP_RESHAPE:
        case OP_SLICE:
        case OP_GATHER:
        case OP_CONCAT: {
            Value x;
            if (!shape_of(f, v->args[0], &x)) return false;
            if (v->op == OP_REVERSE) memcpy(r.shape, x.shape, sizeof r.shape);
            else if (v->op == OP_TRANSPOSE)
                for (int k = 0; k < v->rank; k++) r.shape[k] = x.shape[v->perm[k]];
            else if (v->op == OP_RESHAPE) {
                int64_t known = 1;
                int neg = -1;
                for (int k = 0; k < v->rank; k++) {
                    if (!scalar_of(f, v->args[1 + k], &r.shape[k])) return false;
                    if (r.shape[k] < 0) neg = k;
                    else known *= r.shape[k];
                }
                if (neg >= 0) r.shape[neg] = known ? nelem(&x) / known : 0;
                if (nelem(&r) != nelem(&x)) {
                    rt_error(f->c->err, v->loc, "cannot reshape %lld elements into this shape", (long long)nelem(&x));
                    return false;
                }
            } else if (v->op == OP_SLICE) {
                int o = 0;
                for (int k = 0; k < x.rank; k++) {
                    int64_t st, sp, len;
                    if (!slice_axis(f, v, &x, k, &st, &sp, &len)) return false;
                    if (v->slmode[k] != SL_INDEX) r.shape[o++] = len;
                }
            } else if (v->op == OP_GATHER) {
                Value idx;
                if (!shape_of(f, v->args[1], &idx)) return false;
                int o = 0;
                for (int k = 0; k < idx.rank; k++) r.shape[o++] = idx.shape[k];
                for (int k = 1; k < x.rank; k++) r.shape[o++] = x.shape[k];
            } else {
                memcpy(r.shape, x.shape, sizeof r.shape);
                r.shape[v->axis] = 0;
                for (int q = 0; q < v->nargs; q++) {
                    Value xq;
                    if (!shape_of(f, v->args[q], &xq)) return false;
                    r.shape[v->axis] += xq.shape[v->axis];
                }
            }
            break;
        }
        case OP_MATMUL: {
            Value x, y;
            if (!shape_of(f, v->args[0], &x) || !shape_of(f, v->args[1], &y)) return false;
            r.shape[0] = x.shape[0];
            if (v->rank == 2) r.shape[1] = y.shape[1];
            if (x.shape[1] != y.shape[0]) {
                rt_error(f->c->err, v->loc, "matmul: inner sizes %lld and %lld differ", (long long)x.shape[1],
                         (long long)y.shape[0]);
                return false;
            }
            break;
        }
        default: die("shape_of: op %s", op_name[v->op]);
        }
    }
    f->memo[v->id].dt = r.dt;
    f->memo[v->id].rank = r.rank;
    memcpy(f->memo[v->id].shape, r.shape, sizeof r.shape);
    f->shaped[v->id] = true;
    *out = r;
    return true;
}

/* ---- launching a kernel ---------------------------------------------------------------- */

static void c_strides(const Value *v, int64_t *st) {
    int64_t s = 1;
    for (int k = v->rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= v->shape[k];
    }
}

static bool same_dims(const Value *a, const Value *b) {
    if (a->rank != b->rank) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k]) return false;
    return true;
}

static bool launch(Frame *f, const Kernel *k) {
    Ctx *c = f->c;
    int pi = -1;
    for (int i = 0; i < c->ps->nplans; i++)
        if (c->ps->plans[i] == f->plan) pi = i;
    ASSERT(pi >= 0);
    if (!c->mods[pi]) {
        char *src = emit_cuda_plan(&c->arena, f->plan);
        cuk_compile_opts o = {0};
        o.program_name = arena_printf(&c->arena, "%s.cu", f->fn->name);
        if (cuk_module_compile(&c->mods[pi], src, &o) != CUK_OK)
            return gpu_fail(c, k->stmt ? k->stmt->loc : f->fn->loc, "compiling the kernels failed");
    }
    cuk_function *fn;
    Loc loc = k->outs[0]->loc;
    if (cuk_module_function(c->mods[pi], k->name, &fn) != CUK_OK) return gpu_fail(c, loc, "kernel lookup failed");

    /* inputs and outputs */
    Value space;
    if (!shape_of(f, k->space, &space)) return false;
    int64_t n = nelem(&space);
    Value *ins = calloc((size_t)k->nins + 1, sizeof(Value));
    Value *outs = calloc((size_t)k->nouts + 1, sizeof(Value));
    long long *w = calloc((size_t)k->nparams + 1, sizeof(long long));
    cuk_devptr scratch = 0;
    bool ok = ins && outs && w;
    for (int i = 0; ok && i < k->nins; i++) ok = eval(f, k->ins[i], &ins[i]);
    for (int i = 0; ok && i < k->nouts; i++) {
        Value s;
        ok = shape_of(f, k->outs[i], &s);
        if (!ok) break;
        outs[i] = s;
        outs[i].buf = NULL;
        Value tmp = outs[i];
        if (tmp.rank == 0) tmp.rank = 1, tmp.shape[0] = 1; /* rank-0 results land in a 1-element buffer */
        ok = dalloc(c, &tmp, loc);
        outs[i].buf = tmp.buf;
        outs[i].set = true;
    }
    int axis = k->axis == AXIS_ALL || space.rank <= 1 ? -1 : k->axis;
    if (k->kind == K_ROW) axis = space.rank - 1;
    int64_t outer = 1, len = 1, inner = 1;
    if (axis >= 0) {
        for (int q = 0; q < axis; q++) outer *= space.shape[q];
        len = space.shape[axis];
        for (int q = axis + 1; q < space.rank; q++) inner *= space.shape[q];
    }
    unsigned grid = 1;
    size_t scratch_bytes = 0;
    switch (k->kind) {
    case K_MAP:
    case K_MATMUL: grid = 0; break;
    case K_ROW: grid = (unsigned)(outer < 1 ? 1 : outer > 65535 ? 65535 : outer); break;
    case K_REDUCE:
        if (axis < 0) {
            int64_t nb = (n + k->block - 1) / k->block;
            grid = (unsigned)(nb < 1 ? 1 : nb > 1024 ? 1024 : nb);
            scratch_bytes = 16 + (size_t)k->nreds * grid * 24;
        } else {
            int64_t no = outer * inner;
            grid = (unsigned)(no < 1 ? 1 : no > 65535 ? 65535 : no);
        }
        break;
    case K_SCAN:
        if (axis < 0) {
            int64_t tile = (int64_t)k->block * k->items, nt = (n + tile - 1) / tile;
            grid = (unsigned)(nt < 1 ? 1 : nt);
            scratch_bytes = 16 + (size_t)grid * 24;
        } else {
            grid = 0;
        }
        break;
    }
    if (ok && scratch_bytes) {
        ok = cuk_mem_alloc(&scratch, scratch_bytes) == CUK_OK && cuk_memset_d8(scratch, 0, scratch_bytes, NULL) == CUK_OK;
        if (!ok) gpu_fail(c, loc, "scratch allocation failed");
    }
    bool flat = true;
    for (int i = 0; ok && i < k->nins; i++) flat = flat && same_dims(&ins[i], &space);
    /* the parameter words */
    for (int i = 0; ok && i < k->nparams; i++) {
        const KParam *p = &k->params[i];
        Value x;
        int64_t st[MAXRANK];
        switch (p->kind) {
        case KP_N: w[i] = n; break;
        case KP_FLAT: w[i] = 0; break; /* set below, once every leaf is known */
        case KP_SHAPE: w[i] = space.shape[p->a]; break;
        case KP_BSTRIDE: {
            ok = shape_of(f, p->v, &x);
            if (!ok) break;
            if (!same_dims(&x, &space)) flat = false;
            c_strides(&x, st);
            int ax = p->a - (space.rank - x.rank);
            w[i] = (ax < 0 || x.shape[ax] == 1) ? 0 : st[ax];
            break;
        }
        case KP_OWNSHAPE:
            ok = shape_of(f, p->v, &x);
            if (ok) w[i] = x.shape[p->a];
            break;
        case KP_SRCSTRIDE: {
            ok = shape_of(f, p->v->args[p->b], &x);
            if (!ok) break;
            c_strides(&x, st);
            w[i] = p->v->op == OP_TRANSPOSE ? st[p->v->perm[p->a]] : st[p->a];
            break;
        }
        case KP_SLSTART:
        case KP_SLSTEP: {
            ok = shape_of(f, p->v->args[0], &x);
            int64_t s0, sp, ln;
            if (ok) ok = slice_axis(f, p->v, &x, p->a, &s0, &sp, &ln);
            if (ok) w[i] = p->kind == KP_SLSTART ? s0 : sp;
            break;
        }
        case KP_CATOFF: {
            int64_t off = 0;
            for (int q = 0; ok && q < p->b; q++) {
                ok = shape_of(f, p->v->args[q], &x);
                if (ok) off += x.shape[p->v->axis];
            }
            w[i] = off;
            break;
        }
        case KP_IN:
            for (int q = 0; q < k->nins; q++)
                if (k->ins[q] == p->v) w[i] = (long long)ins[q].buf->p;
            break;
        case KP_OUT:
            for (int q = 0; q < k->nouts; q++)
                if (k->outs[q] == p->v) w[i] = (long long)outs[q].buf->p;
            break;
        case KP_SCALAR:
            ok = eval(f, p->v, &x);
            if (ok) memcpy(&w[i], &x.s, 8);
            break;
        case KP_SCRATCH: w[i] = (long long)scratch; break;
        case KP_OUTER: w[i] = outer; break;
        case KP_LEN: w[i] = len; break;
        case KP_INNER: w[i] = inner; break;
        case KP_MM: {
            Value a, b;
            ok = shape_of(f, k->outs[0]->args[0], &a) && shape_of(f, k->outs[0]->args[1], &b);
            if (ok) w[i] = p->a == 0 ? a.shape[0] : p->a == 1 ? a.shape[1] : (b.rank == 2 ? b.shape[1] : 1);
            break;
        }
        }
    }
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i].kind == KP_FLAT) w[i] = flat;
    bool empty = (k->kind == K_MAP || k->kind == K_SCAN || k->kind == K_ROW || k->kind == K_MATMUL) && nelem(&outs[0]) == 0;
    if (ok && !empty) {
        void *args[1] = {w};
        cuk_dim3 g = {grid, 1, 1}, b = {(unsigned)k->block, 1, 1};
        if (cuk_launch(fn, g, b, 0, NULL, args) != CUK_OK) ok = gpu_fail(c, loc, "kernel launch failed");
    }
    if (scratch) {
        /* the pool does not track streams: wait before the block can be reused */
        if (ok && cuk_synchronize() != CUK_OK) ok = gpu_fail(c, loc, "kernel failed");
        cuk_mem_free(scratch);
    }
    for (int i = 0; i < k->nins; i++) vrelease(&ins[i]);
    for (int i = 0; i < k->nouts; i++) {
        Val *o = k->outs[i];
        if (ok && o->rank == 0) {
            /* scalars come back to the host */
            Value s = outs[i];
            s.rank = 0;
            if (cuk_memcpy_dtoh(&s.s, outs[i].buf->p, (size_t)dtype_info[o->dt].size) != CUK_OK)
                ok = gpu_fail(c, loc, "copy from the device failed");
            Scalar v = {0};
            switch (o->dt) {
            case DT_F32: { float x; memcpy(&x, &s.s, 4); v.f = x; break; }
            case DT_F64: memcpy(&v.f, &s.s, 8); break;
            case DT_BOOL: { uint8_t x; memcpy(&x, &s.s, 1); v.i = x; break; }
            case DT_I32: { int32_t x; memcpy(&x, &s.s, 4); v.i = x; break; }
            case DT_U32: { uint32_t x; memcpy(&x, &s.s, 4); v.u = x; break; }
            default: memcpy(&v.i, &s.s, 8); break;
            }
            vrelease(&outs[i]);
            f->memo[o->id] = (Value){.dt = o->dt, .rank = 0, .s = v, .set = true};
        } else if (ok) {
            vrelease(&f->memo[o->id]);
            f->memo[o->id] = outs[i];
        } else {
            vrelease(&outs[i]);
        }
    }
    free(ins);
    free(outs);
    free(w);
    return ok;
}

/* ---- evaluating values ------------------------------------------------------------------- */

static bool run_fn(Ctx *c, const Fn *fn, Value *args, Value *result);

static const Kernel *kernel_writing(const Plan *pl, const Val *v) {
    for (int i = 0; i < pl->nkernels; i++)
        for (int j = 0; j < pl->kernels[i]->nouts; j++)
            if (pl->kernels[i]->outs[j] == v) return pl->kernels[i];
    return NULL;
}

/* *out gets a reference the caller releases. */
static bool eval(Frame *f, Val *v, Value *out) {
    Ctx *c = f->c;
    if (f->memo[v->id].set) {
        *out = vretain(&f->memo[v->id]);
        return true;
    }
    const Kernel *k = kernel_writing(f->plan, v);
    if (k) {
        if (!launch(f, k)) return false;
        *out = vretain(&f->memo[v->id]);
        return true;
    }
    Value r = {.dt = v->dt, .rank = v->rank, .set = true};
    switch (v->op) {
    case OP_CONST: r.s = v->c; break;
    case OP_SLOT:
        if (!f->slots[v->slot].set) {
            rt_error(c->err, v->loc, "'%s' is used before it is set", f->fn->slots[v->slot].name);
            return false;
        }
        r = vretain(&f->slots[v->slot]);
        break;
    case OP_DIM: {
        Value x;
        if (!shape_of(f, v->args[0], &x)) return false;
        r.s.i = x.shape[v->axis];
        break;
    }
    case OP_CHECKDIM: {
        int64_t a, b;
        if (!scalar_of(f, v->args[1], &a) || !scalar_of(f, v->args[2], &b)) return false;
        if (a != b) {
            rt_error(c->err, v->loc, v->msg ? v->msg : "sizes %lld and %lld differ", (long long)a, (long long)b);
            return false;
        }
        if (!eval(f, v->args[0], &r)) return false;
        break;
    }
    case OP_CAST: {
        Value x;
        if (!eval(f, v->args[0], &x)) return false;
        r.s = scalar_cast(x.s, x.dt, v->dt);
        break;
    }
    case OP_LOAD: {
        char msg[512];
        Arr *a = npy_load(v->path, msg, sizeof msg);
        if (!a) {
            rt_error(c->err, v->loc, "%s", msg);
            return false;
        }
        bool ok = upload(c, a, &r, v->loc);
        arr_release(a);
        if (!ok) return false;
        break;
    }
    case OP_CALL: {
        Value *args = calloc((size_t)v->nargs + 1, sizeof(Value));
        bool ok = args != NULL;
        for (int i = 0; ok && i < v->nargs; i++) ok = eval(f, v->args[i], &args[i]);
        if (ok) ok = run_fn(c, v->fn, args, &r);
        for (int i = 0; args && i < v->nargs; i++) vrelease(&args[i]);
        free(args);
        if (!ok) return false;
        break;
    }
    case OP_SLICE:
    case OP_GATHER: {
        /* an element read on the host (rank 0): one element comes back */
        Value x;
        if (v->rank != 0 || !eval(f, v->args[0], &x)) {
            if (v->rank != 0) die("array %s outside a kernel", op_name[v->op]);
            return false;
        }
        int64_t off = 0, st[MAXRANK];
        c_strides(&x, st);
        bool ok = true;
        if (v->op == OP_SLICE) {
            for (int q = 0; ok && q < x.rank; q++) {
                int64_t s0, sp, ln;
                ok = slice_axis(f, v, &x, q, &s0, &sp, &ln);
                off += s0 * st[q];
            }
        } else {
            int64_t i;
            ok = scalar_of(f, v->args[1], &i);
            if (i < 0) i += x.shape[0];
            if (ok && (i < 0 || i >= x.shape[0])) {
                rt_error(c->err, v->loc, "index out of range");
                ok = false;
            }
            off = i * st[0];
        }
        char bytes[8] = {0};
        int sz = dtype_info[v->dt].size;
        if (ok && cuk_memcpy_dtoh(bytes, x.buf->p + (cuk_devptr)(off * sz), (size_t)sz) != CUK_OK)
            ok = gpu_fail(c, v->loc, "copy from the device failed");
        vrelease(&x);
        if (!ok) return false;
        Arr tmp = {.dt = v->dt, .rank = 0, .size = 1, .data = bytes};
        r.s = arr_get(&tmp, 0);
        break;
    }
    default:
        if (op_is_ew(v->op) && v->rank == 0) {
            Scalar x[3] = {{0}};
            for (int i = 0; i < v->nargs && i < 3; i++) {
                Value a;
                if (!eval(f, v->args[i], &a)) return false;
                x[i] = a.s;
            }
            r.s = host_ew(v, x);
            break;
        }
        rt_error(c->err, v->loc, "the GPU backend cannot evaluate '%s' here yet; use --device cpu", op_name[v->op]);
        return false;
    }
    f->memo[v->id] = vretain(&r);
    *out = r;
    return true;
}

static void clear_memo(Frame *f) {
    for (int i = 0; i < f->fn->nvals; i++) {
        vrelease(&f->memo[i]);
        f->shaped[i] = false;
    }
}

static bool cond_true(Frame *f, Val *v, bool *out) {
    Value x;
    if (!eval(f, v, &x)) return false;
    *out = x.s.i != 0;
    return true;
}

static bool run_stmts(Frame *f, const Stmt *s) {
    Ctx *c = f->c;
    for (; s && !f->returned; s = s->next) {
        bool ok = true;
        Value x = {0};
        switch (s->kind) {
        case S_SET:
            ok = eval(f, s->v, &x);
            if (ok) {
                vrelease(&f->slots[s->slot]);
                f->slots[s->slot] = x;
            }
            clear_memo(f);
            break;
        case S_EVAL:
            ok = eval(f, s->v, &x);
            vrelease(&x);
            clear_memo(f);
            break;
        case S_PRINT:
        case S_SAVE: {
            ok = eval(f, s->v, &x);
            Arr *a = ok ? download(c, &x, s->loc) : NULL;
            vrelease(&x);
            clear_memo(f);
            if (!a) return false;
            if (s->kind == S_PRINT) {
                arr_print(c->out, a);
            } else {
                char msg[512];
                if (!npy_save(s->path, a, msg, sizeof msg)) {
                    rt_error(c->err, s->loc, "%s", msg);
                    ok = false;
                }
            }
            arr_release(a);
            break;
        }
        case S_RETURN:
            if (s->v) ok = eval(f, s->v, &f->ret);
            clear_memo(f);
            f->returned = true;
            break;
        case S_IF: {
            bool t = false;
            ok = cond_true(f, s->v, &t);
            clear_memo(f);
            if (ok) ok = run_stmts(f, t ? s->body : s->els);
            break;
        }
        case S_WHILE:
            for (;;) {
                bool t = false;
                ok = cond_true(f, s->v, &t);
                clear_memo(f);
                if (!ok || !t) break;
                if (!(ok = run_stmts(f, s->body)) || f->returned) break;
            }
            break;
        case S_FOR: {
            int64_t a = 0, b = 0;
            ok = scalar_of(f, s->v, &a) && scalar_of(f, s->v2, &b);
            clear_memo(f);
            for (int64_t i = a; ok && i < b && !f->returned; i++) {
                vrelease(&f->slots[s->slot]);
                f->slots[s->slot] = (Value){.dt = DT_I64, .rank = 0, .s.i = i, .set = true};
                ok = run_stmts(f, s->body);
            }
            break;
        }
        }
        if (!ok) return false;
    }
    return true;
}

static bool run_fn(Ctx *c, const Fn *fn, Value *args, Value *result) {
    Frame fr = {.c = c, .fn = fn, .plan = planset_find(c->ps, fn)};
    ASSERT(fr.plan);
    int ns = fn->nslots > 0 ? fn->nslots : 1, nv = fn->nvals > 0 ? fn->nvals : 1;
    fr.slots = calloc((size_t)ns, sizeof(Value));
    fr.memo = calloc((size_t)nv, sizeof(Value));
    fr.shaped = calloc((size_t)nv, sizeof(bool));
    bool ok = fr.slots && fr.memo && fr.shaped;
    for (int i = 0; ok && i < fn->nparams; i++) fr.slots[i] = vretain(&args[i]);
    if (ok) ok = run_stmts(&fr, fn->body);
    if (ok) *result = fr.ret;
    else vrelease(&fr.ret);
    for (int i = 0; fr.slots && i < fn->nslots; i++) vrelease(&fr.slots[i]);
    if (fr.memo) clear_memo(&fr);
    free(fr.slots);
    free(fr.memo);
    free(fr.shaped);
    return ok;
}

bool gpu_run(const Program *p, const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err) {
    Ctx c = {.prog = p, .out = out, .err = err};
    if (result) *result = NULL;
    if (cuk_init() != CUK_OK) {
        rt_error(err, fn->loc, "%s", cuk_last_error());
        return false;
    }
    arena_init(&c.arena);
    /* Plans for every function (the fusion pass also numbers v->kernel). */
    c.ps = fuse_program(&c.arena, p);
    c.mods = calloc((size_t)c.ps->nplans + 1, sizeof(cuk_module *));
    Value *vargs = calloc((size_t)fn->nparams + 1, sizeof(Value));
    bool ok = c.mods && vargs;
    for (int i = 0; ok && i < fn->nparams; i++) ok = upload(&c, args[i], &vargs[i], fn->loc);
    Value r = {0};
    if (ok) ok = run_fn(&c, fn, vargs, &r);
    if (ok && r.set && result) {
        *result = download(&c, &r, fn->loc);
        ok = *result != NULL;
    }
    vrelease(&r);
    for (int i = 0; vargs && i < fn->nparams; i++) vrelease(&vargs[i]);
    if (ok && cuk_synchronize() != CUK_OK) ok = gpu_fail(&c, fn->loc, "the device reported an error");
    free(vargs);
    free(c.mods);
    arena_free(&c.arena);
    return ok;
}
