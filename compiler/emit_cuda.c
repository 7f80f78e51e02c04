/* The CUDA C emitter: one extern "C" __global__ function per kernel of a plan (kernel.h),
   built from the op tables in ir.h and the blocks in kernels/ (no system headers). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../lang/embedded.h"
/* The 16-bit floats' literals are emitted as their bits, rounded as the CPU rounds. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "../kernels/ops.h"
#pragma GCC diagnostic pop
#include "kernel.h"

/* ---- a growable string -------------------------------------------------------------- */

/* In the compile's arena (a grown buffer's old block stays there until the arena goes),
   so that a broken invariant caught by the pipeline's guard leaks nothing. */
typedef struct Buf {
    Arena *a;
    char *s;
    size_t n, cap;
} Buf;

static void bputs(Buf *b, const char *s) {
    size_t k = strlen(s);
    if (b->n + k + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->n + k + 1) nc *= 2;
        char *ns = arena_alloc(b->a, nc);
        if (b->n) memcpy(ns, b->s, b->n);
        b->s = ns;
        b->cap = nc;
    }
    memcpy(b->s + b->n, s, k + 1);
    b->n += k;
}

__attribute__((format(printf, 2, 3))) static void bprintf(Buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < (int)sizeof tmp) {
        bputs(b, tmp);
        return;
    }
    char *big = arena_alloc(b->a, (size_t)k + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    bputs(b, big);
}

/* ---- op table as text ---------------------------------------------------------------- */

static const char *const ew_text[OP_EW_END][3] = {
#define X(n, sp, bn, ar, cls, cost, ef, ed, ei) [OP_##n] = {#ef, #ed, #ei},
    EW_OPS(X)
#undef X
};

static const char *ctype(DType dt) { return dtype_info[dt].ctype; }
static const char *unsigned_twin(DType dt) {
    switch (dt) {
    case DT_I32:
    case DT_U32:
    case DT_F32: return "uint32_t";
    case DT_I64:
    case DT_U64:
    case DT_F64: return "uint64_t";
    default: return "uint8_t";
    }
}

/* A float to integer conversion: emitted as cuk_f2i (vec.cuh), NaN -> 0 as the CPU
   backend (a bare C cast of NaN is undefined; the H200 gave INT_MIN). */
static bool float_to_int(DType from, DType to) {
    return dtype_info[from].is_float && !dtype_info[to].is_float && to != DT_BOOL;
}

/* The expression converting x (of type from) to type to: bool is x != 0, float to
   integer cuk_f2i, the rest a C++ conversion (the 16-bit floats' constructors round as
   the CPU backend does, kernels/ops.h). A 16-bit float converts as its f32 value (exact),
   which is all it can be turned into. */
static const char *cast_text(Arena *a, DType to, DType from, const char *x) {
    if (dtype_is_half(from)) x = arena_printf(a, "(float)(%s)", x), from = DT_F32;
    if (to == DT_BOOL) return arena_printf(a, "(uint8_t)((%s) != 0)", x);
    if (float_to_int(from, to)) return arena_printf(a, "cuk_f2i<%s>(%s)", ctype(to), x);
    return arena_printf(a, "(%s)(%s)", ctype(to), x);
}

/* The elementwise ops outside the op table (casts, a complex number's parts and its
   packing, compiler/widen.c) as expressions of their operands' texts; NULL for the rest. */
static const char *special_text(Arena *a, const Val *v, const char *const *x) {
    switch (v->op) {
    case OP_CAST: return cast_text(a, v->dt, v->args[0]->dt, x[0]);
    case OP_CPART: return arena_printf(a, "(%s).%s", x[0], v->axis ? "im" : "re");
    case OP_CPACK: return arena_printf(a, "%s((%s), (%s))", ctype(v->dt), x[0], x[1]);
    default: return NULL;
    }
}

/* The dtype whose column and operand types an ew op uses. */
static DType ew_operand_dt(const Val *v) {
    if (v->op == OP_SELECT) return v->args[1]->dt;
    return v->args[0]->dt;
}

typedef struct E {
    Arena *a;
    Buf out;      /* the translation unit */
    Buf helpers;  /* elementwise helpers, emitted before the kernels */
    Buf funcs;    /* combine functors, after the helpers they call */
    bool *have;   /* helper (op, dtype) already emitted */
    int nlam;     /* combine functors emitted */
    const Fn **dfns; /* per-element functions emitted as __device__ functions */
    int ndfns, capdfns;
} E;

static void need_helper(E *e, const Val *v) {
    DType dt = ew_operand_dt(v);
    int key = v->op * DT_COUNT + dt;
    if (e->have[key]) return;
    e->have[key] = true;
    bool fl = dtype_info[dt].is_float;
    const char *expr = ew_text[v->op][fl ? (dt == DT_F32 ? 0 : 1) : 2];
    if (strcmp(expr, "0") == 0)
        die("op %s has no %s form (sema should have rejected it)", ew_info[v->op].name, dtype_info[dt].name);
    const OpInfo *oi = &ew_info[v->op];
    DType rdt = v->dt;
    bprintf(&e->helpers, "static __device__ __forceinline__ %s ew_%s_%s(", ctype(rdt), oi->name, dtype_info[dt].name);
    for (int i = 0; i < oi->arity; i++) {
        DType pdt = (v->op == OP_SELECT && i == 0) ? DT_BOOL : dt;
        bprintf(&e->helpers, "%s%s %c", i ? ", " : "", ctype(pdt), 'a' + i);
    }
    bprintf(&e->helpers, ") {\n    typedef %s T;\n    typedef %s U;\n    (void)sizeof(T); (void)sizeof(U);\n",
            ctype(dt), unsigned_twin(dt));
    bprintf(&e->helpers, "    return (%s)(%s);\n}\n", ctype(rdt), expr);
}

static void helper_name(char *buf, size_t n, const Val *v) {
    snprintf(buf, n, "ew_%s_%s", ew_info[v->op].name, dtype_info[ew_operand_dt(v)].name);
}

static void literal(char *buf, size_t n, DType dt, Scalar c) {
    switch (dt) {
    case DT_F32: {
        float f = (float)c.f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        snprintf(buf, n, "__int_as_float(0x%08x) /* %.9g */", bits, (double)f);
        break;
    }
    case DT_F64: {
        uint64_t bits;
        memcpy(&bits, &c.f, 8);
        snprintf(buf, n, "__longlong_as_double(0x%016llxLL) /* %.17g */", (unsigned long long)bits, c.f);
        break;
    }
    case DT_BOOL: snprintf(buf, n, "(uint8_t)%d", c.i ? 1 : 0); break;
    case DT_F16: snprintf(buf, n, "cuk_f16_of(0x%04x) /* %.5g */", cuk_d2h(c.f), c.f); break;
    case DT_C64: {
        float re = (float)c.z[0], im = (float)c.z[1];
        uint32_t br, bi;
        memcpy(&br, &re, 4);
        memcpy(&bi, &im, 4);
        snprintf(buf, n, "cuk_c64(__int_as_float(0x%08x), __int_as_float(0x%08x))", br, bi);
        break;
    }
    case DT_C128: {
        uint64_t br, bi;
        memcpy(&br, &c.z[0], 8);
        memcpy(&bi, &c.z[1], 8);
        snprintf(buf, n, "cuk_c128(__longlong_as_double(0x%016llxLL), __longlong_as_double(0x%016llxLL))",
                 (unsigned long long)br, (unsigned long long)bi);
        break;
    }
    case DT_BF16: snprintf(buf, n, "cuk_bf16_of(0x%04x) /* %.4g */", cuk_d2bf(c.f), c.f); break;
    case DT_U8:
    case DT_U16:
    case DT_U32:
    case DT_U64: snprintf(buf, n, "(%s)%lluull", ctype(dt), (unsigned long long)c.u); break;
    default:
        if (c.i == INT64_MIN) snprintf(buf, n, "(%s)(-9223372036854775807LL - 1)", ctype(dt));
        else snprintf(buf, n, "(%s)%lldLL", ctype(dt), (long long)c.i);
        break;
    }
}

/* ---- kernel context ----------------------------------------------------------------- */

typedef struct KE {
    E *e;
    const Kernel *k;
    Buf *b;
    bool *inval;   /* by id: in k->vals */
    bool *done;    /* by id: already has a variable in the current scope */
    bool *seen;    /* by id: scratch for collect_leaves */
    int nid;
    /* Fast paths: when set, a materialised input read at the iteration index is taken
       from a register vector, L<id><leaf_sel> (e.g. ".x[e_]" or "[r_].x[e_]"), and
       flatc says every leaf is known to match the iteration space (offset = i). */
    const char *leaf_sel;
    bool flatc;
    int uniq;      /* numbers the index arrays and values of index chains */
    bool ix_given; /* the caller declared ix<axis>, the multi-index of i, whether flat or not */
    bool ix_ok;    /* ix<axis> hold i's multi-index in the current scope (flat or not) */
    size_t body_at; /* where in b the body (after the index types) starts */
    const Val *etab; /* the OP_HBIN whose edges emit_hist put in shared memory (etab_) */
} KE;

static int W(const KE *ke, KPKind kind, const Val *v, int a, int b) {
    if (v && (kind == KP_IN || kind == KP_BSTRIDE)) v = kernel_canon(ke->k, (Val *)v);
    int i = kparam_find(ke->k, kind, v, a, b);
    if (i < 0) die("kernel %s: no parameter %d for %%%d", ke->k->name, (int)kind, v ? v->id : -1);
    return i;
}

static bool is_in(const KE *ke, const Val *v) {
    for (int i = 0; i < ke->k->nins; i++)
        if (ke->k->ins[i] == v) return true;
    return false;
}

static void ref(const KE *ke, const Val *v, char *buf, size_t n) {
    v = kernel_canon(ke->k, (Val *)v);
    if (v->op == OP_CONST) literal(buf, n, v->dt, v->c);
    else if (v->rank == 0 && !ke->inval[v->id]) snprintf(buf, n, "s%d", v->id);
    else snprintf(buf, n, "v%d", v->id);
}

static void ind(Buf *b, int d) {
    for (int i = 0; i < d; i++) bputs(b, "    ");
}

/* The own flat offset of leaf v at iteration index `i`: `i` itself when the launch says
   every leaf matches the iteration space, else the broadcast-stride dot product. */
static void emit_offset(KE *ke, const Val *v, int d) {
    ind(ke->b, d);
    if (ke->flatc) {
        bprintf(ke->b, "const IX o%d = (IX)i;\n", v->id);
        return;
    }
    bprintf(ke->b, "const IX o%d = flat ? (IX)i : (IX)(0", v->id);
    for (int ax = 0; ax < ke->k->rank; ax++)
        bprintf(ke->b, " + ix%d * (IX)p.w[%d]", ax, W(ke, KP_BSTRIDE, v, ax, 0));
    bputs(ke->b, ");\n");
}

/* Decomposes an own flat offset into the node's own multi-index j<id>_<axis>. When the
   launch is flat the node has the iteration space's shape (the executor sets flat only
   then) and its multi-index is the iteration's, ix<axis>, decomposed once per element. */
static void emit_own_index(KE *ke, const Val *v, int d) {
    bool same = ke->ix_ok && v->rank == ke->k->rank;
    ind(ke->b, d);
    bprintf(ke->b, "IX j%d_[%d];\n", v->id, v->rank);
    ind(ke->b, d);
    if (same) {
        if (!ke->flatc) bputs(ke->b, "if (flat) {");
        for (int ax = 0; ax < v->rank; ax++) bprintf(ke->b, " j%d_[%d] = ix%d;", v->id, ax, ax);
        if (ke->flatc) {
            bputs(ke->b, "\n");
            return;
        }
        bputs(ke->b, " } else");
    }
    bprintf(ke->b, "{ IX r = o%d;", v->id);
    for (int ax = v->rank - 1; ax >= 0; ax--) {
        int w = W(ke, KP_OWNSHAPE, v, ax, 0);
        bprintf(ke->b, " j%d_[%d] = cuk_divmod(r, (IX)p.w[%d]);", v->id, ax, w);
    }
    bputs(ke->b, " }\n");
}

/* ix<axis> of element e_ of a vector in the map kernel's vector path: the vector's
   first element (q * V) decomposed once, e_ added to its last index (the vector path
   runs only when a row holds whole vectors, so a vector never crosses one). */
static void emit_vec_iter_index(KE *ke, int V, int d) {
    Buf *b = ke->b;
    int rank = ke->k->rank, last = rank - 1;
    ind(b, d);
    if (rank == 1) {
        bputs(b, "IX ix0 = (IX)i; (void)ix0;\n");
        return;
    }
    for (int ax = 0; ax < rank; ax++) bprintf(b, "IX ix%d; ", ax);
    bprintf(b, "{ IX r = (IX)(q * %d);", V);
    for (int ax = last; ax > 0; ax--) bprintf(b, " ix%d = cuk_divmod(r, (IX)p.w[%d]);", ax, W(ke, KP_SHAPE, NULL, ax, 0));
    bprintf(b, " ix0 = r; ix%d += e_; }\n", last);
    ind(b, d);
    for (int ax = 0; ax < rank; ax++) bprintf(b, "(void)ix%d; ", ax);
    bputs(b, "\n");
}

/* Declares ix<axis>, the multi-index of iteration index i in the kernel's space. */
static void emit_iter_index(KE *ke, int d) {
    Buf *b = ke->b;
    int rank = ke->k->rank;
    ind(b, d);
    for (int ax = 0; ax < rank; ax++) bprintf(b, "IX ix%d = 0; ", ax);
    bputs(b, "\n");
    ind(b, d);
    bputs(b, "{ IX r = (IX)i;");
    for (int ax = rank - 1; ax > 0; ax--) bprintf(b, " ix%d = cuk_divmod(r, (IX)p.w[%d]);", ax, W(ke, KP_SHAPE, NULL, ax, 0));
    bputs(b, " ix0 = r; }\n"); /* i < n: no remainder on the first axis */
    ind(b, d);
    for (int ax = 0; ax < rank; ax++) bprintf(b, "(void)ix%d; ", ax);
    bputs(b, "\n");
}

static void emit_node(KE *ke, Val *v, int d);
static bool row_divisor(const Kernel *k, const Val *r);
static void emit_need(KE *ke, Val *v, int d);

/* The scalar operands of an index chain (pad's value, stack's scalars), computed once
   in the scope that reads the chain, before the chain's nested blocks. */
static void emit_chain_scalars(KE *ke, Val *v, int d, int depth) {
    if (depth > 64) die("index chain too deep");
    for (int i = 0; i < v->nargs; i++) {
        Val *x = v->args[i];
        if (!x || !op_value_arg(v->op, i)) continue;
        Val *n = kernel_chain_src(ke->k, x);
        if (n) emit_chain_scalars(ke, n, d, depth + 1);
        else if (kernel_ew_chain(ke->k, x)) emit_chain_scalars(ke, x, d, depth + 1);
        else if (x->rank == 0) emit_need(ke, x, d);
    }
}

/* Emits what v needs, then v, once per scope. */
static void emit_need(KE *ke, Val *v, int d) {
    if (v) v = kernel_canon(ke->k, v);
    if (!v || v->op == OP_CONST || ke->done[v->id]) return;
    if (v->rank == 0 && !ke->inval[v->id]) return; /* a scalar parameter */
    ke->done[v->id] = true;
    if (!ke->inval[v->id]) {
        /* a materialised input read at the iteration index */
        if (ke->leaf_sel) {
            ind(ke->b, d);
            bprintf(ke->b, "const %s v%d = L%d%s;\n", ctype(v->dt), v->id, v->id, ke->leaf_sel);
            return;
        }
        emit_offset(ke, v, d);
        ind(ke->b, d);
        bprintf(ke->b, "const %s v%d = ((const %s *)p.w[%d])[o%d];\n", ctype(v->dt), v->id, ctype(v->dt),
                W(ke, KP_IN, v, 0, 0), v->id);
        return;
    }
    if (v->op == OP_REDUCE) return; /* in a row kernel: set by its phase */
    if (op_is_ew(v->op))
        for (int i = 0; i < v->nargs; i++) emit_need(ke, v->args[i], d);
    else if (v->op == OP_CHECKDIM)
        emit_need(ke, v->args[0], d); /* the check itself ran on the host before the launch */
    else if (v->op == OP_FULL || v->op == OP_LINSPACE || v->op == OP_RAND || v->op == OP_RANDN) {
        /* scalar operands are parameters */
    } else if (v->op == OP_GATHER) {
        emit_need(ke, v->args[1], d);
    } else if (index_chains(v->op)) {
        emit_chain_scalars(ke, v, d, 0);
    }
    emit_node(ke, v, d);
}

static void emit_index_at(KE *ke, Val *v, const char *J, const char *out, int d, int depth);
static void emit_ew_at(KE *ke, Val *v, int q, Val *x, const char *S, const char *out, int d, int depth);

/* The source axis whose stride SRCSTRIDE parameter p holds (in the output's axis order
   for a transpose). */
static int srcstride_axis(const KParam *p) {
    return p->v->op == OP_TRANSPOSE ? p->v->perm[p->a] : p->a;
}

/* " * (IX)p.w[N]", the stride of source axis k of operand q of index transform v: the
   C strides of the operand's own shape, so nothing for the last axis (1), and for the
   others the first word of any transform that reads the same operand (a stencil's
   slices of one array share one row stride, and NVRTC then sees their reads as
   constant offsets from one address). */
static const char *src_stride(KE *ke, const Val *v, int k, int q) {
    const Val *x = v->args[q];
    if (k == x->rank - 1) return "";
    const Kernel *kn = ke->k;
    for (int i = 0; i < kn->nparams; i++) {
        const KParam *p = &kn->params[i];
        if (p->kind == KP_SRCSTRIDE && kernel_canon(kn, p->v->args[p->b]) == kernel_canon(kn, (Val *)x) &&
            srcstride_axis(p) == k)
            return arena_printf(ke->e->a, " * (IX)p.w[%d]", i);
    }
    die("kernel %s: no source stride %d of %%%d", kn->name, k, x->id);
}

/* The start and step of slice v's range on source axis ax when the program fixes them
   (a constant non-negative start and a constant positive step, or none): start > the
   axis only happens for an empty slice, which reads nothing, so the clamp the executor
   applies does not matter. */
static bool slice_fixed(const Val *v, int ax, long long *start, long long *step) {
    int nax = (v->nargs - 1) / 3;
    const Val *a0 = ax < nax ? v->args[1 + 3 * ax] : NULL, *a2 = ax < nax ? v->args[3 + 3 * ax] : NULL;
    *start = 0, *step = 1;
    if (a2 && (a2->op != OP_CONST || a2->c.i <= 0)) return false;
    if (a2) *step = a2->c.i;
    if (a0 && (a0->op != OP_CONST || a0->c.i < 0)) return false;
    if (a0) *start = a0->c.i;
    return true;
}

/* out = operand q of index transform v at its multi-index S (a C array, or unused for a
   scalar operand): from memory, or through the chain. */
static void emit_src_at(KE *ke, Val *v, int q, const char *S, const char *out, int d, int depth) {
    Buf *b = ke->b;
    Val *x = v->args[q];
    char r0[128];
    if (x->rank == 0) {
        ref(ke, x, r0, sizeof r0);
        ind(b, d);
        bprintf(b, "%s = %s;\n", out, r0);
        return;
    }
    Val *n = kernel_chain_src(ke->k, x);
    if (n) {
        emit_index_at(ke, n, S, out, d, depth + 1);
        return;
    }
    if (kernel_ew_chain(ke->k, x)) {
        emit_ew_at(ke, v, q, x, S, out, d, depth + 1);
        return;
    }
    ind(b, d);
    bprintf(b, "%s = ((const %s *)p.w[%d])[0", out, ctype(x->dt), W(ke, KP_IN, x, 0, 0));
    for (int k = 0; k < x->rank; k++) bprintf(b, " + %s[%d]%s", S, k, src_stride(ke, v, k, q));
    bputs(b, "];\n");
}

/* out = elementwise value x at multi-index S of its own shape, where index transform v
   reads it as operand q (or inside that operand: fuse.c's ew_chain_operand gives every
   array here x's shape, so v's source strides for q address them all): each array
   operand through its chain, elementwise again, or from memory. */
static void emit_ew_at(KE *ke, Val *v, int q, Val *x, const char *S, const char *out, int d, int depth) {
    Buf *b = ke->b;
    if (depth > 64) die("index chain too deep");
    ind(b, d);
    bputs(b, "{\n");
    d++;
    const char **names = NEWN(ke->e->a, const char *, x->nargs + 1);
    for (int i = 0; i < x->nargs; i++) {
        Val *a = x->args[i];
        char r[128];
        if (!a) continue;
        if (a->rank == 0) {
            ref(ke, a, r, sizeof r);
            names[i] = arena_printf(ke->e->a, "%s", r);
            continue;
        }
        names[i] = arena_printf(ke->e->a, "ea%d_", ke->uniq++);
        ind(b, d);
        bprintf(b, "%s %s;\n", ctype(a->dt), names[i]);
        Val *n = kernel_chain_src(ke->k, a);
        if (n) {
            emit_index_at(ke, n, S, names[i], d, depth + 1);
        } else if (kernel_ew_chain(ke->k, a)) {
            emit_ew_at(ke, v, q, a, S, names[i], d, depth + 1);
        } else {
            ind(b, d);
            bprintf(b, "%s = ((const %s *)p.w[%d])[0", names[i], ctype(a->dt), W(ke, KP_IN, a, 0, 0));
            for (int k = 0; k < a->rank; k++) bprintf(b, " + %s[%d]%s", S, k, src_stride(ke, v, k, q));
            bputs(b, "];\n");
        }
    }
    ind(b, d);
    const char *sp = special_text(ke->e->a, x, names);
    if (sp) {
        bprintf(b, "%s = %s;\n", out, sp);
    } else {
        need_helper(ke->e, x);
        char hn[64];
        helper_name(hn, sizeof hn, x);
        bprintf(b, "%s = %s(", out, hn);
        for (int i = 0; i < x->nargs; i++) bprintf(b, "%s%s", i ? ", " : "", names[i]);
        bputs(b, ");\n");
    }
    d--;
    ind(b, d);
    bputs(b, "}\n");
}

/* Declares a fresh index array for a source of rank r; returns its name. */
static const char *new_index(KE *ke, int r, int d) {
    const char *S = arena_printf(ke->e->a, "xs%d_", ke->uniq++);
    ind(ke->b, d);
    bprintf(ke->b, "IX %s[%d];\n", S, r > 0 ? r : 1);
    return S;
}

/* out = index transform v at its own multi-index J (a C array of v->rank entries): the
   source index it reads, by op, then the source read (from memory or a nested chain). */
static void emit_index_at(KE *ke, Val *v, const char *J, const char *out, int d, int depth) {
    Buf *b = ke->b;
    Val *x = v->args[0];
    if (depth > 64) die("index chain too deep");
    ind(b, d);
    bputs(b, "{\n");
    d++;
    switch (v->op) {
    case OP_REVERSE:
    case OP_TRANSPOSE: {
        const char *S = new_index(ke, x->rank, d);
        for (int a = 0; a < v->rank; a++) {
            ind(b, d);
            if (v->op == OP_TRANSPOSE) bprintf(b, "%s[%d] = %s[%d];\n", S, v->perm[a], J, a);
            else if (a == 0) bprintf(b, "%s[0] = (IX)p.w[%d] - 1 - %s[0];\n", S, W(ke, KP_OWNSHAPE, v, 0, 0), J);
            else bprintf(b, "%s[%d] = %s[%d];\n", S, a, J, a);
        }
        emit_src_at(ke, v, 0, S, out, d, depth);
        break;
    }
    case OP_SLICE: {
        const char *S = new_index(ke, x->rank, d);
        int oax = 0;
        for (int ax = 0; ax < x->rank; ax++) {
            int st = W(ke, KP_SLSTART, v, ax, 0), sp = W(ke, KP_SLSTEP, v, ax, 0);
            long long c0, c1;
            ind(b, d);
            if (v->slmode[ax] == SL_INDEX) bprintf(b, "%s[%d] = (IX)p.w[%d];\n", S, ax, st);
            else if (!slice_fixed(v, ax, &c0, &c1)) bprintf(b, "%s[%d] = (IX)p.w[%d] + %s[%d] * (IX)p.w[%d];\n", S, ax, st, J, oax++, sp);
            else if (c1 == 1) bprintf(b, "%s[%d] = %s[%d] + %lld;\n", S, ax, J, oax++, c0);
            else bprintf(b, "%s[%d] = %lld + %s[%d] * %lld;\n", S, ax, c0, J, oax++, c1);
        }
        emit_src_at(ke, v, 0, S, out, d, depth);
        break;
    }
    case OP_CONCAT: {
        int ax = v->axis;
        for (int q = 0; q < v->nargs; q++) {
            ind(b, d);
            bprintf(b, "%sif (%s[%d] < (IX)p.w[%d]) {\n", q ? "else " : "", J, ax, W(ke, KP_CATOFF, v, 0, q + 1));
            const char *S = new_index(ke, v->rank, d + 1);
            for (int k = 0; k < v->rank; k++) {
                ind(b, d + 1);
                if (k == ax && q == 0) bprintf(b, "%s[%d] = %s[%d];\n", S, k, J, k); /* the first starts at 0 */
                else if (k == ax) bprintf(b, "%s[%d] = %s[%d] - (IX)p.w[%d];\n", S, k, J, k, W(ke, KP_CATOFF, v, 0, q));
                else bprintf(b, "%s[%d] = %s[%d];\n", S, k, J, k);
            }
            emit_src_at(ke, v, q, S, out, d + 1, depth);
            ind(b, d);
            bputs(b, "}\n");
        }
        ind(b, d);
        bprintf(b, "else %s = 0;\n", out);
        break;
    }
    case OP_PAD: {
        /* inside iff every source index is within the source: 0 <= J - w < own - 2w */
        int pw = W(ke, KP_PADW, v, 0, 0);
        char r0[128];
        const char *S = new_index(ke, v->rank, d);
        ind(b, d);
        bputs(b, "bool in_ = true;\n");
        for (int k = 0; k < v->rank; k++) {
            ind(b, d);
            bprintf(b, "%s[%d] = %s[%d] - (IX)p.w[%d]; in_ = in_ && (UX)%s[%d] < (UX)((IX)p.w[%d] - 2 * (IX)p.w[%d]);\n",
                    S, k, J, k, pw, S, k, W(ke, KP_OWNSHAPE, v, k, 0), pw);
        }
        ind(b, d);
        bputs(b, "if (in_) {\n");
        emit_src_at(ke, v, 0, S, out, d + 1, depth);
        ref(ke, v->args[2], r0, sizeof r0);
        ind(b, d);
        bprintf(b, "} else %s = %s;\n", out, r0);
        break;
    }
    case OP_UPDATE: {
        /* J is in the region iff on every axis J - start = r * step with 0 <= r < len
           (an index is start with step and len 1); there e is read at the region
           position r (0 on the axes where e broadcasts), elsewhere x at J */
        Val *e = v->args[1];
        const char *R = new_index(ke, v->rank, d);
        int kx[MAXRANK], q = 0;
        ind(b, d);
        bputs(b, "bool in_ = true;\n");
        for (int k = 0; k < v->rank; k++) {
            int st = W(ke, KP_SLSTART, v, k, 0), sp = W(ke, KP_SLSTEP, v, k, 0), ln = W(ke, KP_UPD, v, k, 0);
            if (v->slmode[k] != SL_INDEX) kx[q++] = k;
            ind(b, d);
            bprintf(b, "{ IX t_ = %s[%d] - (IX)p.w[%d]; %s[%d] = t_ / (IX)p.w[%d]; in_ = in_ && t_ %% (IX)p.w[%d] == 0 && "
                       "%s[%d] >= 0 && %s[%d] < (IX)p.w[%d]; }\n",
                    J, k, st, R, k, sp, sp, R, k, R, k, ln);
        }
        ind(b, d);
        bputs(b, "if (in_) {\n");
        const char *S = new_index(ke, e->rank, d + 1);
        for (int p = 0; p < e->rank; p++) {
            int dim = W(ke, KP_UPD, v, p, 1);
            ind(b, d + 1);
            bprintf(b, "%s[%d] = p.w[%d] == 1 ? (IX)0 : %s[%d];\n", S, p, dim, R, kx[q - e->rank + p]);
        }
        emit_src_at(ke, v, 1, S, out, d + 1, depth);
        ind(b, d);
        bputs(b, "} else {\n");
        emit_src_at(ke, v, 0, J, out, d + 1, depth);
        ind(b, d);
        bputs(b, "}\n");
        break;
    }
    case OP_ROLL: {
        int sh = W(ke, KP_ROLLSHIFT, v, 0, 0);
        const char *S = new_index(ke, v->rank, d);
        if (v->axis != AXIS_ALL) {
            int ax = v->axis;
            for (int k = 0; k < v->rank; k++) {
                ind(b, d);
                if (k == ax)
                    bprintf(b, "{ IX t_ = %s[%d] - (IX)p.w[%d]; %s[%d] = t_ < 0 ? t_ + (IX)p.w[%d] : t_; }\n", J, k,
                            sh, S, k, W(ke, KP_OWNSHAPE, v, k, 0));
                else bprintf(b, "%s[%d] = %s[%d];\n", S, k, J, k);
            }
        } else {
            /* over the flattened array: the C-order offset, rolled, back to an index */
            ind(b, d);
            bputs(b, "IX f_ = 0, n_ = 1;\n");
            for (int k = 0; k < v->rank; k++) {
                int os = W(ke, KP_OWNSHAPE, v, k, 0);
                ind(b, d);
                bprintf(b, "f_ = f_ * (IX)p.w[%d] + %s[%d]; n_ *= (IX)p.w[%d];\n", os, J, k, os);
            }
            ind(b, d);
            bprintf(b, "f_ -= (IX)p.w[%d]; if (f_ < 0) f_ += n_;\n", sh);
            for (int k = v->rank - 1; k >= 0; k--) {
                int os = W(ke, KP_OWNSHAPE, v, k, 0);
                ind(b, d);
                bprintf(b, "%s[%d] = f_ %% (IX)p.w[%d]; f_ /= (IX)p.w[%d];\n", S, k, os, os);
            }
        }
        emit_src_at(ke, v, 0, S, out, d, depth);
        break;
    }
    case OP_STACK: {
        int ax = v->axis;
        const char *S = new_index(ke, v->rank - 1, d);
        for (int k = 0, q = 0; k < v->rank; k++) {
            if (k == ax) continue;
            ind(b, d);
            bprintf(b, "%s[%d] = %s[%d];\n", S, q++, J, k);
        }
        ind(b, d);
        bprintf(b, "switch (%s[%d]) {\n", J, ax);
        for (int q = 0; q < v->nargs; q++) {
            ind(b, d);
            bprintf(b, "case %d:\n", q);
            emit_src_at(ke, v, q, S, out, d + 1, depth);
            ind(b, d + 1);
            bputs(b, "break;\n");
        }
        ind(b, d);
        bprintf(b, "default: %s = 0;\n", out);
        ind(b, d);
        bputs(b, "}\n");
        break;
    }
    default: die("emit_index_at: %s is not an index chain op", op_name[v->op]);
    }
    d--;
    ind(b, d);
    bputs(b, "}\n");
}

static void emit_index_load(KE *ke, Val *v, int d) {
    Buf *b = ke->b;
    Val *x = v->args[0];
    if (row_value_reshape(ke->k, v)) {
        /* a per-row value's reshape of its row's reduction ([r, 1] -> [r]): the value */
        ind(b, d);
        bprintf(b, "const %s v%d = v%d;\n", ctype(v->dt), v->id, x->id);
        return;
    }
    if (v->op == OP_RESHAPE && x->rank == 0) {
        /* reshape(6, 1): a scalar has no buffer (fuse.c passes it as a kernel scalar or
           a literal); its one element is the value itself (the executor checks the size). */
        char r0[128];
        ref(ke, x, r0, sizeof r0);
        ind(b, d);
        bprintf(b, "const %s v%d = %s;\n", ctype(v->dt), v->id, r0);
        return;
    }
    emit_offset(ke, v, d);
    if (v->op == OP_RESHAPE) {
        ind(b, d);
        bprintf(b, "const %s v%d = ((const %s *)p.w[%d])[o%d];\n", ctype(v->dt), v->id, ctype(v->dt),
                W(ke, KP_IN, x, 0, 0), v->id);
        return;
    }
    emit_own_index(ke, v, d);
    ind(b, d);
    bprintf(b, "%s v%d;\n", ctype(v->dt), v->id);
    if (index_chains(v->op)) {
        emit_index_at(ke, v, arena_printf(ke->e->a, "j%d_", v->id), arena_printf(ke->e->a, "v%d", v->id), d, 0);
        return;
    }
    ind(b, d);
    bputs(b, "{\n");
    switch (v->op) {
    case OP_GATHER: {
        /* out[j0..j(ri-1), rest] = x[idx[j0..], rest]; idx is contiguous, so its offset
           is the leading part of the own index in C order. */
        Val *idx = v->args[1];
        int ri = idx->rank;
        if (gather_computes(v, 1)) {
            /* of the gather's shape: emit_need computed it at the iteration index */
            char ri_[128];
            ref(ke, idx, ri_, sizeof ri_);
            ind(b, d + 1);
            bprintf(b, "const %s graw_ = %s;\n", ctype(idx->dt), ri_);
        } else {
            ind(b, d + 1);
            bputs(b, "long long io = 0;\n");
            for (int ax = 0; ax < ri; ax++) {
                ind(b, d + 1);
                bprintf(b, "io = io * p.w[%d] + j%d_[%d];\n", W(ke, KP_OWNSHAPE, v, ax, 0), v->id, ax);
            }
            ind(b, d + 1);
            bprintf(b, "const %s graw_ = ((const %s *)p.w[%d])[io];\n", ctype(idx->dt), ctype(idx->dt),
                    W(ke, KP_IN, idx, 0, 0));
        }
        /* NumPy's rules, as the CPU backend: a negative index counts from the end; one
           out of range reads nothing and records (value id + 1, index, size) in the
           plan's error block, first writer wins; gpu_exec reports it at its next sync. */
        ind(b, d + 1);
        if (idx->dt == DT_U64)
            bputs(b, "const long long g0_ = graw_ > 9223372036854775807ull ? 9223372036854775807LL : (long long)graw_;\n");
        else
            bputs(b, "const long long g0_ = (long long)graw_;\n");
        ind(b, d + 1);
        bprintf(b, "const long long gn_ = p.w[%d], g = g0_ < 0 ? g0_ + gn_ : g0_;\n", W(ke, KP_GLEN, v, 0, 0));
        ind(b, d + 1);
        bputs(b, "const bool gin_ = (unsigned long long)g < (unsigned long long)gn_;\n");
        ind(b, d + 1);
        bprintf(b,
                "if (!gin_) { unsigned long long *e_ = (unsigned long long *)p.w[%d]; "
                "if (atomicCAS(e_, 0ull, %dull) == 0ull) { e_[1] = (unsigned long long)g0_; e_[2] = "
                "(unsigned long long)gn_; } }\n",
                W(ke, KP_ERR, NULL, 0, 0), v->id + 1);
        if (ke->inval[x->id] && x->op == OP_IOTA) {
            /* a bounds check (x[rows, cols]): the element of iota is its index */
            ind(b, d + 1);
            bprintf(b, "v%d = gin_ ? (%s)g : (%s)0;\n", v->id, ctype(v->dt), ctype(v->dt));
            break;
        }
        /* a reshape computed here reads its operand's buffer in the reshape's layout
           (SRCSTRIDE and GLEN come from the reshape's shape) */
        const Val *buf = ke->inval[x->id] && x->op == OP_RESHAPE ? x->args[0] : x;
        ind(b, d + 1);
        bprintf(b, "long long src = g * p.w[%d]", W(ke, KP_SRCSTRIDE, v, 0, 0));
        for (int ax = 1; ax < x->rank; ax++)
            bprintf(b, " + j%d_[%d] * p.w[%d]", v->id, ri - 1 + ax, W(ke, KP_SRCSTRIDE, v, ax, 0));
        bputs(b, ";\n");
        ind(b, d + 1);
        bprintf(b, "v%d = gin_ ? ((const %s *)p.w[%d])[src] : (%s)0;\n", v->id, ctype(v->dt),
                W(ke, KP_IN, buf, 0, 0), ctype(v->dt));
        break;
    }
    default: die("not an index op");
    }
    ind(b, d);
    bputs(b, "}\n");
}

/* ---- per-element functions (OP_SCALARCALL) -------------------------------------------- */

/* A function of scalars with control flow, applied to arrays, becomes one __device__
   function `cukf_<name>` (once per translation unit, its callees before it) that the
   kernel body calls per element; its slots are locals s<N>, each statement's values
   temporaries t<id> in the statement's block. Float multiplies are __fmul_rn/__dmul_rn
   so NVRTC does not contract them into FMAs: the CPU backend rounds every operation, and
   an iteration count (a Mandelbrot escape test) must come out the same on both. A loop
   that never ends is the program's bug, as in CUDA C. */
typedef struct DF {
    E *e;
    const Fn *fn;
    Buf *b;
    bool *done; /* by value id: its temporary exists in the current statement */
} DF;

static const char *need_devfn(E *e, const Fn *fn);

static void df_ref(const Val *v, char *buf, size_t n) {
    if (v->op == OP_CONST) literal(buf, n, v->dt, v->c);
    else if (v->op == OP_SLOT) snprintf(buf, n, "s%d", v->slot);
    else snprintf(buf, n, "t%d", v->id);
}

static void df_val(DF *f, const Val *v, int d) {
    if (v->op == OP_CONST || v->op == OP_SLOT || f->done[v->id]) return;
    f->done[v->id] = true;
    for (int i = 0; i < v->nargs; i++) df_val(f, v->args[i], d);
    char r[128];
    const char *T = ctype(v->dt);
    Buf *b = f->b;
    if (v->op == OP_CAST || v->op == OP_CPART || v->op == OP_CPACK) {
        char r1[128] = "";
        df_ref(v->args[0], r, sizeof r);
        if (v->nargs > 1) df_ref(v->args[1], r1, sizeof r1);
        const char *xs[2] = {r, r1};
        ind(b, d);
        bprintf(b, "const %s t%d = %s;\n", T, v->id, special_text(f->e->a, v, xs));
        return;
    }
    const char *callee;
    char hn[64];
    if (v->op == OP_CALL) {
        callee = need_devfn(f->e, v->fn);
    } else if (v->op == OP_MUL && dtype_info[v->dt].is_float) {
        callee = v->dt == DT_F32 ? "__fmul_rn" : "__dmul_rn";
    } else {
        if (!(v->op < OP_EW_END)) die("per-element function: op %s (sema's check_scalar_calls)", op_name[v->op]);
        need_helper(f->e, v);
        helper_name(hn, sizeof hn, v);
        callee = hn;
    }
    ind(b, d);
    bprintf(b, "const %s t%d = %s(", T, v->id, callee);
    for (int i = 0; i < v->nargs; i++) {
        df_ref(v->args[i], r, sizeof r);
        bprintf(b, "%s%s", i ? ", " : "", r);
    }
    bputs(b, ");\n");
}

/* A statement's value: its temporaries, then its reference in buf. */
static void df_stmt_val(DF *f, const Val *v, int d, char *buf, size_t n, bool fresh) {
    if (fresh) memset(f->done, 0, (size_t)f->fn->nvals + 1);
    df_val(f, v, d);
    df_ref(v, buf, n);
}

static void df_stmts(DF *f, const Stmt *s, int d) {
    Buf *b = f->b;
    char r[128], r2[128];
    for (; s; s = s->next) {
        switch (s->kind) {
        case S_SET:
            ind(b, d), bputs(b, "{\n");
            df_stmt_val(f, s->v, d + 1, r, sizeof r, true);
            ind(b, d + 1), bprintf(b, "s%d = %s;\n", s->slot, r);
            ind(b, d), bputs(b, "}\n");
            break;
        case S_IF:
            ind(b, d), bputs(b, "{\n");
            df_stmt_val(f, s->v, d + 1, r, sizeof r, true);
            ind(b, d + 1), bprintf(b, "if (%s) {\n", r);
            df_stmts(f, s->body, d + 2);
            ind(b, d + 1), bputs(b, "} else {\n");
            df_stmts(f, s->els, d + 2);
            ind(b, d + 1), bputs(b, "}\n");
            ind(b, d), bputs(b, "}\n");
            break;
        case S_WHILE:
            ind(b, d), bputs(b, "for (;;) {\n");
            df_stmt_val(f, s->v, d + 1, r, sizeof r, true);
            ind(b, d + 1), bprintf(b, "if (!(%s)) break;\n", r);
            df_stmts(f, s->body, d + 1);
            ind(b, d), bputs(b, "}\n");
            break;
        case S_FOR: {
            ind(b, d), bputs(b, "{\n");
            df_stmt_val(f, s->v, d + 1, r, sizeof r, true);
            df_stmt_val(f, s->v2, d + 1, r2, sizeof r2, false);
            ind(b, d + 1), bprintf(b, "const long long lo%d_ = (long long)(%s), hi%d_ = (long long)(%s);\n", d, r, d, r2);
            ind(b, d + 1), bprintf(b, "for (long long c%d_ = lo%d_; c%d_ < hi%d_; c%d_++) {\n", d, d, d, d, d);
            ind(b, d + 2), bprintf(b, "s%d = (%s)c%d_;\n", s->slot, ctype(f->fn->slots[s->slot].dt), d);
            df_stmts(f, s->body, d + 2);
            ind(b, d + 1), bputs(b, "}\n");
            ind(b, d), bputs(b, "}\n");
            break;
        }
        case S_RETURN:
            ind(b, d), bputs(b, "{\n");
            df_stmt_val(f, s->v, d + 1, r, sizeof r, true);
            ind(b, d + 1), bprintf(b, "return %s;\n", r);
            ind(b, d), bputs(b, "}\n");
            break;
        default: die("per-element function: statement %d (sema's check_scalar_calls)", (int)s->kind);
        }
    }
}

/* The __device__ function of fn, emitted into e->funcs (after the helpers it calls). */
static const char *need_devfn(E *e, const Fn *fn) {
    const char *name = arena_printf(e->a, "cukf_%s", fn->name);
    for (int i = 0; i < e->ndfns; i++)
        if (e->dfns[i] == fn) return name;
    if (e->ndfns == e->capdfns) {
        int cap = e->capdfns ? e->capdfns * 2 : 8;
        const Fn **nd = NEWN(e->a, const Fn *, cap);
        if (e->ndfns) memcpy(nd, e->dfns, sizeof(Fn *) * (size_t)e->ndfns);
        e->dfns = nd;
        e->capdfns = cap;
    }
    e->dfns[e->ndfns++] = fn;
    Buf b = {.a = e->a};
    DF f = {e, fn, &b, NEWN(e->a, bool, (size_t)fn->nvals + 1)};
    bprintf(&b, "/* %s(): per element */\nstatic __device__ %s %s(", fn->name, ctype(fn->ret_dt), name);
    for (int i = 0; i < fn->nparams; i++) bprintf(&b, "%s%s s%d", i ? ", " : "", ctype(fn->slots[i].dt), i);
    bputs(&b, ") {\n");
    for (int i = fn->nparams; i < fn->nslots; i++)
        bprintf(&b, "    %s s%d = 0; /* %s */\n", ctype(fn->slots[i].dt), i, fn->slots[i].name);
    df_stmts(&f, fn->body, 1);
    bprintf(&b, "    return (%s)0; /* not reached: every path returns */\n}\n", ctype(fn->ret_dt));
    bputs(&e->funcs, b.s); /* callees were appended while the body was written */
    return name;
}

static void emit_node(KE *ke, Val *v, int d) {
    Buf *b = ke->b;
    char r0[128], r1[128], r2[128];
    const char *T = ctype(v->dt);
    if (v->op == OP_DIV && row_divisor(ke->k, v->args[1]) && v->args[0]->dt == v->dt && v->dt == v->args[1]->dt) {
        ref(ke, v->args[0], r0, sizeof r0);
        ind(b, d);
        bprintf(b, "const %s v%d = (%s) * rcp%d;\n", T, v->id, r0, v->args[1]->id);
        return;
    }
    if (v->op < OP_EW_END) {
        need_helper(ke->e, v);
        char hn[64];
        helper_name(hn, sizeof hn, v);
        ind(b, d);
        bprintf(b, "const %s v%d = %s(", T, v->id, hn);
        for (int i = 0; i < v->nargs; i++) {
            ref(ke, v->args[i], r0, sizeof r0);
            bprintf(b, "%s%s", i ? ", " : "", r0);
        }
        bputs(b, ");\n");
        return;
    }
    switch (v->op) {
    case OP_SCALARCALL: {
        const char *fnm = need_devfn(ke->e, v->fn);
        ind(b, d);
        bprintf(b, "const %s v%d = %s(", T, v->id, fnm);
        for (int i = 0; i < v->nargs; i++) {
            ref(ke, v->args[i], r0, sizeof r0);
            bprintf(b, "%s%s", i ? ", " : "", r0);
        }
        bputs(b, ");\n");
        return;
    }
    case OP_HBIN: { /* kernels/ops.h; the edges from etab_ in a hist kernel that has them */
        const char *S = dtype_info[v->args[0]->dt].name, *T0 = ctype(v->args[0]->dt);
        ind(b, d);
        /* one call, the table or none: most values take no edge at all (the margin in
           cuk_hbin_*), so the rare edge loads may be generic ones, and the element's
           code is not there twice */
        Buf args = {.a = ke->e->a};
        for (int i = 0; i < v->nargs; i++) {
            ref(ke, v->args[i], r0, sizeof r0);
            bprintf(&args, "%s, ", r0);
        }
        bprintf(b, "const int64_t v%d = ", v->id);
        if (ke->etab == v) bprintf(b, "cuk_hbin_%s(%setab_ ? (const %s *)(sh_ + at_) : (const %s *)0);\n", S, args.s, T0, T0);
        else bprintf(b, "cuk_hbin_%s(%s(const %s *)0);\n", S, args.s, T0);
        return;
    }
    case OP_CAST:
    case OP_CPART:
    case OP_CPACK: {
        ref(ke, v->args[0], r0, sizeof r0);
        if (v->nargs > 1) ref(ke, v->args[1], r1, sizeof r1);
        const char *xs[2] = {r0, r1};
        ind(b, d);
        bprintf(b, "const %s v%d = %s;\n", T, v->id, special_text(ke->e->a, v, xs));
        return;
    }
    case OP_IOTA:
        emit_offset(ke, v, d);
        ind(b, d);
        bprintf(b, "const %s v%d = (%s)o%d;\n", T, v->id, T, v->id);
        return;
    case OP_FULL:
        ref(ke, v->args[0], r0, sizeof r0);
        ind(b, d);
        bprintf(b, "const %s v%d = (%s)(%s);\n", T, v->id, T, r0);
        return;
    case OP_LINSPACE: {
        /* In double exactly as the CPU backend (cpu_eval.c): y = j * step + start with
           step = (stop - start) / (n - 1); j / (n - 1) * delta + start when the step
           underflows; the last element exactly stop; then converted. The __d*_rn forms
           keep NVRTC from contracting a multiply and an add into an FMA. */
        emit_offset(ke, v, d);
        ref(ke, v->args[0], r0, sizeof r0);
        ref(ke, v->args[1], r1, sizeof r1);
        int nw = W(ke, KP_OWNSHAPE, v, 0, 0), id = v->id;
        ind(b, d);
        bprintf(b, "double y%d;\n", id);
        ind(b, d);
        bprintf(b,
                "{ const double a_ = (double)(%s), b_ = (double)(%s), dl_ = __dsub_rn(b_, a_); "
                "const long long n_ = p.w[%d], dv_ = n_ - 1; const double j_ = (double)o%d; "
                "const double st_ = dv_ > 0 ? __ddiv_rn(dl_, (double)dv_) : 0.0; "
                "if (dv_ <= 0) y%d = __dadd_rn(__dmul_rn(j_, dl_), a_); "
                "else if (st_ == 0.0) y%d = __dadd_rn(__dmul_rn(__ddiv_rn(j_, (double)dv_), dl_), a_); "
                "else y%d = __dadd_rn(__dmul_rn(j_, st_), a_); "
                "if (dv_ > 0 && o%d == n_ - 1) y%d = b_; }\n",
                r0, r1, nw, id, id, id, id, id, id);
        ind(b, d);
        if (v->dt == DT_BOOL) bprintf(b, "const uint8_t v%d = (uint8_t)(y%d != 0.0);\n", id, id);
        else if (float_to_int(DT_F64, v->dt)) bprintf(b, "const %s v%d = cuk_f2i<%s>(y%d);\n", T, id, T, id);
        else bprintf(b, "const %s v%d = (%s)y%d;\n", T, id, T, id);
        return;
    }
    case OP_RAND:
    case OP_RANDN:
        emit_offset(ke, v, d);
        ref(ke, v->args[0], r0, sizeof r0);
        ind(b, d);
        bprintf(b, "const %s v%d = (%s)cuk_rand%s_%s((uint64_t)o%d, (uint64_t)(%s));\n", T, v->id, T,
                v->op == OP_RANDN ? "n" : "", v->dt == DT_F64 ? "f64" : "f32", v->id, r0);
        return;
    case OP_SLICE:
    case OP_GATHER:
    case OP_REVERSE:
    case OP_CONCAT:
    case OP_RESHAPE:
    case OP_TRANSPOSE:
    case OP_PAD:
    case OP_ROLL:
    case OP_STACK:
    case OP_UPDATE: emit_index_load(ke, v, d); return;
    case OP_CHECKDIM:
        ref(ke, v->args[0], r0, sizeof r0);
        ind(b, d);
        bprintf(b, "const %s v%d = %s;\n", T, v->id, r0);
        return;
    default: die("emit_node: op %s is not computed inside kernels", op_name[v->op]);
    }
    (void)r1, (void)r2;
}

/* Emits, at iteration index `i`, everything the targets need; declare_index declares
   ix<axis>, i's multi-index (read by broadcast offsets when not flat, and by index
   transforms when flat). */
static void emit_eval_at(KE *ke, Val **targets, int n, int d, bool declare_index) {
    if (ke->k->rank > 0 && declare_index) emit_iter_index(ke, d);
    ke->ix_ok = ke->k->rank > 0 && (declare_index || ke->ix_given);
    for (int i = 0; i < n; i++) emit_need(ke, targets[i], d);
    ke->ix_ok = false;
}

static void emit_eval(KE *ke, Val **targets, int n, int d) { emit_eval_at(ke, targets, n, d, true); }

/* ---- combine functors ---------------------------------------------------------------- */

/* The C type a reduction/scan accumulates in. */
static const char *acc_type(E *e, const Val *r) {
    if (r->red == RED_ARGMIN || r->red == RED_ARGMAX)
        return arena_printf(e->a, "cuk_arg<%s>", ctype(r->args[0]->dt));
    return ctype(r->dt);
}

static void emit_lam_val(E *e, Buf *b, Val *v, bool *seen, int base) {
    if (seen[v->id - base]) return;
    seen[v->id - base] = true;
    if (v->op == OP_ARG || v->op == OP_CONST) return;
    if (!(op_is_ew(v->op))) return; /* a captured host scalar: a functor member */
    for (int i = 0; i < v->nargs; i++) emit_lam_val(e, b, v->args[i], seen, base);
    char r[128];
    if (v->op == OP_CAST) {
        const Val *x = v->args[0];
        if (x->op == OP_CONST) literal(r, sizeof r, x->dt, x->c);
        else snprintf(r, sizeof r, "%s%d", x->op == OP_ARG ? "x" : "t", x->op == OP_ARG ? x->slot : x->id);
        bprintf(b, "        const %s t%d = %s;\n", ctype(v->dt), v->id, cast_text(e->a, v->dt, x->dt, r));
        return;
    }
    char hn[64];
    if (v->op == OP_SCALARCALL) { /* a function with loops: its __device__ form */
        snprintf(hn, sizeof hn, "%s", need_devfn(e, v->fn));
    } else {
        need_helper(e, v);
        helper_name(hn, sizeof hn, v);
    }
    bprintf(b, "        const %s t%d = %s(", ctype(v->dt), v->id, hn);
    for (int i = 0; i < v->nargs; i++) {
        const Val *x = v->args[i];
        if (x->op == OP_CONST) literal(r, sizeof r, x->dt, x->c);
        else if (x->op == OP_ARG) snprintf(r, sizeof r, "x%d", x->slot);
        else if (op_is_ew(x->op)) snprintf(r, sizeof r, "t%d", x->id);
        else snprintf(r, sizeof r, "c%d", x->id);
        bprintf(b, "%s%s", i ? ", " : "", r);
    }
    bputs(b, ");\n");
}

static void lam_captures(Val *v, Val **caps, int *n, int max, int depth) {
    if (!v || depth > 200) return;
    if (v->op == OP_ARG || v->op == OP_CONST) return;
    if (!op_is_ew(v->op)) {
        for (int i = 0; i < *n; i++)
            if (caps[i] == v) return;
        if (*n < max) caps[(*n)++] = v;
        return;
    }
    for (int i = 0; i < v->nargs; i++) lam_captures(v->args[i], caps, n, max, depth + 1);
}

static void lam_bounds(Val *v, int *lo, int *hi, int depth) {
    if (!v || depth > 200) return;
    if (v->id < *lo) *lo = v->id;
    if (v->id > *hi) *hi = v->id;
    if (op_is_ew(v->op))
        for (int i = 0; i < v->nargs; i++) lam_bounds(v->args[i], lo, hi, depth + 1);
}

/* Defines `struct <name>` whose operator() combines two accumulators of r. */
static const char *emit_combine(E *e, Val *r) {
    const char *name = arena_printf(e->a, "cmb%d", e->nlam++);
    const char *A = acc_type(e, r);
    DType dt = r->dt;
    if (r->red == RED_ARGMIN || r->red == RED_ARGMAX) {
        bprintf(&e->funcs, "typedef cuk_%s_op<%s> %s;\n", r->red == RED_ARGMIN ? "argmin" : "argmax",
                ctype(r->args[0]->dt), name);
        return name;
    }
    /* written apart and appended at the end: the body may define __device__ functions
       (need_devfn appends them to e->funcs) that must come before the functor */
    Buf sb = {.a = e->a};
    Buf *b = &sb;
    Val *caps[64];
    int ncaps = 0;
    if (r->red == RED_LAMBDA) lam_captures(r->lam, caps, &ncaps, 64, 0);
    bprintf(b, "struct %s {\n", name);
    for (int i = 0; i < ncaps; i++) bprintf(b, "    %s c%d;\n", ctype(caps[i]->dt), caps[i]->id);
    bprintf(b, "    __device__ __forceinline__ %s operator()(%s x0, %s x1) const {\n", A, A, A);
    switch (r->red) {
    case RED_SUM:
    case RED_PROD:
    case RED_MIN:
    case RED_MAX: {
        Val tmp = {0};
        tmp.op = r->red == RED_SUM ? OP_ADD : r->red == RED_PROD ? OP_MUL : r->red == RED_MIN ? OP_MINIMUM : OP_MAXIMUM;
        tmp.dt = dt;
        Val arg = {0};
        arg.dt = dt;
        Val *args[2] = {&arg, &arg};
        tmp.args = args;
        tmp.nargs = 2;
        need_helper(e, &tmp);
        char hn[64];
        helper_name(hn, sizeof hn, &tmp);
        bprintf(b, "        return %s(x0, x1);\n", hn);
        break;
    }
    case RED_ANY: bputs(b, "        return (uint8_t)(x0 || x1);\n"); break;
    case RED_ALL: bputs(b, "        return (uint8_t)(x0 && x1);\n"); break;
    case RED_LAMBDA: {
        if (!r->lam) die("lambda reduction without a body");
        if (r->lam->op == OP_ARG) {
            bprintf(b, "        return x%d;\n", r->lam->slot);
            break;
        }
        int lo = r->lam->id, hi = r->lam->id;
        lam_bounds(r->lam, &lo, &hi, 0);
        bool *seen = NEWN(e->a, bool, hi - lo + 1);
        emit_lam_val(e, b, r->lam, seen, lo);
        char rr[128];
        if (r->lam->op == OP_CONST) literal(rr, sizeof rr, r->lam->dt, r->lam->c);
        else if (op_is_ew(r->lam->op)) snprintf(rr, sizeof rr, "t%d", r->lam->id);
        else snprintf(rr, sizeof rr, "c%d", r->lam->id);
        bprintf(b, "        return (%s)(%s);\n", A, rr);
        break;
    }
    default: die("no combine for %s", red_name[r->red]);
    }
    bputs(b, "    }\n};\n");
    bputs(&e->funcs, sb.s);
    return name;
}

/* Declares the functor instance, filling captured scalars from kernel parameters. */
static void emit_combine_instance(KE *ke, Val *r, const char *type, int idx, int d) {
    ind(ke->b, d);
    bprintf(ke->b, "%s op%d;\n", type, idx);
    if (r->red != RED_LAMBDA) return;
    Val *caps[64];
    int ncaps = 0;
    lam_captures(r->lam, caps, &ncaps, 64, 0);
    for (int i = 0; i < ncaps; i++) {
        ind(ke->b, d);
        bprintf(ke->b, "op%d.c%d = s%d;\n", idx, caps[i]->id, caps[i]->id);
    }
}

/* ---- kernels ------------------------------------------------------------------------- */

static void emit_scalar_params(KE *ke) {
    for (int i = 0; i < ke->k->nscalars; i++) {
        Val *s = ke->k->scalars[i];
        int w = W(ke, KP_SCALAR, s, 0, 0);
        const char *T = ctype(s->dt);
        if (s->dt == DT_F32) bprintf(ke->b, "    const float s%d = (float)__longlong_as_double(p.w[%d]);\n", s->id, w);
        else if (s->dt == DT_F64) bprintf(ke->b, "    const double s%d = __longlong_as_double(p.w[%d]);\n", s->id, w);
        else if (dtype_is_half(s->dt)) bprintf(ke->b, "    const %s s%d = (%s)__longlong_as_double(p.w[%d]);\n", T, s->id, T, w);
        else bprintf(ke->b, "    const %s s%d = (%s)p.w[%d];\n", T, s->id, T, w);
        bprintf(ke->b, "    (void)s%d;\n", s->id);
    }
}

static void header(KE *ke) {
    const Kernel *k = ke->k;
    bprintf(ke->b, "struct %s_p { long long w[%d]; };\n", k->name, k->nparams);
    /* Minimum resident blocks per SM (caps registers): four segmented-reduction tiles
       (64 registers; the block waits on two dependent loads and four barriers, which
       other blocks hide: segmented sums of 2^28 f32 on an H100, 32 elements a thread,
       2360 GB/s with three, 2481 with four); all of a reduction's grid at once; two rows
       per SM for row kernels; two 512 x 32 scan tiles; four compaction tiles (at most 64
       registers a thread, 128 KiB of staging: x[x > 0] over 2^28 f32 on an H100 ran at
       2655 GB/s, against 2469 with three and 2136 with two). */
    int minb = kernel_segred(k)                                         ? 4
               : k->kind == K_REDUCE && (k->axis == AXIS_ALL || k->rank <= 1 || !kernel_red_lambda(k)) ? 8
               : k->kind == K_ROW                                           ? 2
               : k->kind == K_SCAN && k->items == 32                        ? 1024 / k->block
               : k->kind == K_COMPACT                                       ? 4
                                                                            : 0;
    char bounds[32];
    if (minb) snprintf(bounds, sizeof bounds, "%d, %d", k->block, minb);
    else snprintf(bounds, sizeof bounds, "%d", k->block);
    int fw = W(ke, KP_FLAT, NULL, 0, 0);
    bprintf(ke->b, "extern \"C\" __global__ void __launch_bounds__(%s) %s(const struct %s_p p) {\n", bounds, k->name,
            k->name);
    if (k->ix32) {
        /* The body twice (body_twice), the first with 32-bit index arithmetic for when the
           executor says every index and offset of the launch fits (KFLAT_IX32). Written
           out, not a template taking p by reference: that read every parameter word
           through memory (the stencil's memory pipe was 96% busy). */
        bprintf(ke->b, "    if (p.w[%d] & %d) {\n    typedef int IX;\n    typedef unsigned UX;\n", fw, KFLAT_IX32);
        ke->body_at = ke->b->n;
    } else {
        bputs(ke->b, "    typedef long long IX;\n    typedef unsigned long long UX;\n");
    }
    bprintf(ke->b, "    const long long n = p.w[%d];\n", W(ke, KP_N, NULL, 0, 0));
    bprintf(ke->b, "    const int flat = (int)(p.w[%d] & 1);\n", fw);
    bputs(ke->b, "    (void)n; (void)flat;\n");
    emit_scalar_params(ke);
}

static void reset_scope(KE *ke) { memset(ke->done, 0, (size_t)ke->nid); }

/* ---- fast-path support: direct leaves, vector width, alignment ------------------------ */

typedef struct Leaves {
    Val **v;
    int n;
} Leaves;

/* The materialised inputs that emit_need would load at the iteration index for
   targets (the same recursion), skipping what `done` already marks. */
static void collect_rec(KE *ke, Val *v, Leaves *L, bool *seen) {
    if (v) v = kernel_canon(ke->k, v);
    if (!v || v->op == OP_CONST || seen[v->id] || ke->done[v->id]) return;
    if (v->rank == 0 && !ke->inval[v->id]) return;
    seen[v->id] = true;
    if (!ke->inval[v->id]) {
        L->v[L->n++] = v;
        return;
    }
    if (v->op == OP_REDUCE || v->op == OP_SCAN) return;
    if (op_is_ew(v->op))
        for (int i = 0; i < v->nargs; i++) collect_rec(ke, v->args[i], L, seen);
    else if (v->op == OP_CHECKDIM)
        collect_rec(ke, v->args[0], L, seen);
    else if (v->op == OP_GATHER)
        collect_rec(ke, v->args[1], L, seen);
}

static void collect_leaves(KE *ke, Val **targets, int n, Leaves *L) {
    memset(ke->seen, 0, (size_t)ke->nid);
    for (int i = 0; i < n; i++) collect_rec(ke, targets[i], L, ke->seen);
}

static Leaves leaves_new(KE *ke) {
    Leaves L = {NEWN(ke->e->a, Val *, ke->k->nins + 1), 0};
    return L;
}

static void leaves_add(Leaves *L, Val *v) {
    for (int i = 0; i < L->n; i++)
        if (L->v[i] == v) return;
    L->v[L->n++] = v;
}

/* Elements per 16-byte vector of the widest type moved (leaves and outputs). */
static int vec_width(const Leaves *L, Val **outs, int nouts) {
    int m = 1;
    for (int i = 0; i < L->n; i++)
        if (dtype_info[L->v[i]->dt].size > m) m = dtype_info[L->v[i]->dt].size;
    for (int i = 0; i < nouts; i++)
        if (dtype_info[outs[i]->dt].size > m) m = dtype_info[outs[i]->dt].size;
    return 16 / m;
}

/* The run-time condition for the vector path: flat and every pointer 16-byte aligned. */
static const char *vec_cond(KE *ke, const Leaves *L, Val **outs, int nouts) {
    Buf c = {.a = ke->e->a};
    bputs(&c, "flat");
    for (int i = 0; i < L->n; i++) bprintf(&c, " && cuk_al16(p.w[%d])", W(ke, KP_IN, L->v[i], 0, 0));
    for (int i = 0; i < nouts; i++)
        if (outs[i]->rank > 0) bprintf(&c, " && cuk_al16(p.w[%d])", W(ke, KP_OUT, outs[i], 0, 0));
    return c.s;
}

/* Declares `cuk_vec<T, V> L<id>[cnt]` (cnt 0: a single vector) for each leaf. */
static void declare_leaf_regs(KE *ke, const Leaves *L, int V, int cnt, int d) {
    for (int i = 0; i < L->n; i++) {
        ind(ke->b, d);
        if (cnt) bprintf(ke->b, "cuk_vec<%s, %d> L%d[%d];\n", ctype(L->v[i]->dt), V, L->v[i]->id, cnt);
        else bprintf(ke->b, "cuk_vec<%s, %d> L%d;\n", ctype(L->v[i]->dt), V, L->v[i]->id);
    }
}

/* L<id><sel> = the V elements at flat element index `at`, for each leaf. */
static void load_leaf_regs(KE *ke, const Leaves *L, int V, const char *sel, const char *at, int d) {
    for (int i = 0; i < L->n; i++) {
        ind(ke->b, d);
        bprintf(ke->b, "L%d%s = cuk_ldv<%s, %d>((const void *)p.w[%d], %s);\n", L->v[i]->id, sel,
                ctype(L->v[i]->dt), V, W(ke, KP_IN, L->v[i], 0, 0), at);
    }
}

static void store(KE *ke, Val *out, const char *index, int d) {
    char r[128];
    ref(ke, out, r, sizeof r);
    ind(ke->b, d);
    bprintf(ke->b, "((%s *)p.w[%d])[%s] = %s;\n", ctype(out->dt), W(ke, KP_OUT, out, 0, 0), index, r);
}

/* The fast paths' evaluation: targets at element e_ of the register vectors
   L<id><sel> already loaded (every leaf laid out like the iteration space), in a fresh
   scope; regs_end when the vector's code is done. */
static void regs_eval(KE *ke, const char *sel, Val **tg, int n, int d) {
    ke->leaf_sel = sel;
    ke->flatc = true;
    reset_scope(ke);
    emit_eval_at(ke, tg, n, d, false);
}

static void regs_end(KE *ke) {
    ke->leaf_sel = NULL;
    ke->flatc = false;
}

/* The body text with its index words pinned in registers: each parameter word the body
   reads as an index ((IX)p.w[N]) at least twice, up to PIN_MAX of them (the most read
   first), becomes a local pwN_ that an empty asm statement makes opaque, so NVRTC keeps
   it in a register instead of reloading it from the constant bank at every use (the
   5-point stencil over pad reloaded 55 words per 4 elements: 288 instructions per
   vector, 173 with them pinned). The declarations go first, then the body. */
#define PIN_MAX 32
static char *pin_index_words(KE *ke, const char *body, bool wide) {
    int nw = ke->k->nparams, *uses = NEWN(ke->e->a, int, nw > 0 ? nw : 1);
    static const char pat[] = "(IX)p.w[";
    for (const char *q = strstr(body, pat); q; q = strstr(q + 1, pat)) {
        int w = atoi(q + sizeof pat - 1);
        if (w >= 0 && w < nw) uses[w]++;
    }
    bool *pin = NEWN(ke->e->a, bool, nw > 0 ? nw : 1);
    Buf out = {.a = ke->e->a};
    for (int c = 0; c < PIN_MAX; c++) {
        int best = -1;
        for (int w = 0; w < nw; w++)
            if (!pin[w] && uses[w] >= 2 && (best < 0 || uses[w] > uses[best])) best = w;
        if (best < 0) break;
        pin[best] = true;
        bprintf(&out, "    IX pw%d_ = (IX)p.w[%d];\n    asm(\"\" : \"+%s\"(pw%d_));\n", best, best, wide ? "l" : "r", best);
    }
    const char *from = body;
    for (const char *q = strstr(body, pat); q; q = strstr(q + 1, pat)) {
        int w = atoi(q + sizeof pat - 1);
        if (w < 0 || w >= nw || !pin[w]) continue;
        bprintf(&out, "%.*s", (int)(q - from), from);
        bprintf(&out, "pw%d_", w);
        from = strchr(q, ']') + 1;
        q = from - 1;
    }
    bputs(&out, from);
    return out.s;
}

/* Closes a kernel whose header opened the 32-bit copy of its body (k->ix32): the same
   body again with 64-bit index types, each copy with its index words pinned
   (pin_index_words). The body ends with the function's closing brace. */
static void body_twice(KE *ke) {
    if (!ke->k->ix32) return;
    Buf *b = ke->b;
    char *body = arena_strdup(ke->e->a, b->s + ke->body_at);
    size_t n = strlen(body);
    if (n < 3 || strcmp(body + n - 3, "}\n\n") != 0) die("body_twice: %s does not end its function", ke->k->name);
    n -= 3; /* the function's closing "}\n\n" */
    body[n] = 0;
    b->n = ke->body_at;
    b->s[b->n] = 0;
    bputs(b, pin_index_words(ke, body, false));
    bputs(b, "    } else {\n    typedef long long IX;\n    typedef unsigned long long UX;\n");
    bputs(b, pin_index_words(ke, body, true));
    bputs(b, "    }\n}\n\n");
}

/* Rule 1: fast path when every leaf is laid out like the iteration space and 16-byte
   aligned: each block moves chunks of block x MAP_UNROLL 16-byte vectors (a thread's
   vectors a block apart, all loads issued before any use, so that costly expressions
   overlap the loads), one chunk per block with kernel_geometry's grid; the tail and the
   general case take one element at a time in a grid-stride loop. */
/* The tiled transpose (kernel_tiled_transpose): a block per 32 x 32 tile of the output's last
   two axes, read from x coalesced (rows of x are columns of the tile) into shared
   memory (padded a column: no bank conflicts), each output element then computed with
   the transposed value from there and its other leaves read at its own index. */
static void emit_map_transposed(KE *ke, Val *t) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    Val *x = kernel_canon(k, t->args[0]);
    const char *T = ctype(x->dt);
    int r = k->rank;
    /* the shape from the launch's words: no 64-bit division (n / C_ cost 2 of them a
       thread, which with the tile arithmetic held the transpose at 77% of copy on an
       H100 against 99% for the same tiles without) */
    bprintf(b, "    {\n        const long long C_ = p.w[%d], R_ = p.w[%d], B_ = %s;\n", W(ke, KP_SHAPE, NULL, r - 1, 0),
            W(ke, KP_SHAPE, NULL, r - 2, 0), r == 3 ? arena_printf(ke->e->a, "p.w[%d]", W(ke, KP_SHAPE, NULL, 0, 0)) : "1");
    /* Tiles in groups of TRANSPOSE_GROUP tile rows, down each group's column of tiles
       first: the blocks in flight at once cover a square of about 32 x 32 tiles, so the
       reads and the writes each run along ~4 KiB of a row (in row order a wave read 32
       x-rows of 128 bytes at 32 x 32 places: 68% of copy on an H100). A thread moves
       32 / (blockDim / 32) elements, every load issued before the first shared store.
       Tile numbers in UX: 32-bit division where the indices fit (KFLAT_IX32). */
    int ny = 32 / (k->block / 32);
    bprintf(b, "        const UX tr_ = (UX)((R_ + 31) / 32), tc_ = (UX)((C_ + 31) / 32), nt_ = (UX)B_ * tr_ * tc_;\n"
               "        __shared__ %s tl_[32][33];\n"
               "        const int tx_ = threadIdx.x & 31, ty_ = threadIdx.x >> 5;\n"
               "        for (UX tile_ = blockIdx.x; tile_ < nt_; tile_ += gridDim.x) {\n"
               "            %s\n"
               "            const UX g0_ = rm_ / (%d * tc_) * %d, gw_ = rm_ %% (%d * tc_);\n"
               "            const UX gh_ = tr_ - g0_ < %d ? tr_ - g0_ : %d;\n"
               "            const long long r0_ = (long long)(g0_ + gw_ %% gh_) * 32, c0_ = (long long)(gw_ / gh_) * 32;\n"
               "            const %s *xs_ = (const %s *)p.w[%d] + bb_ * R_ * C_;\n"
               "            %s ld_[%d] = {};\n"
               "#pragma unroll\n"
               "            for (int u_ = 0; u_ < %d; u_++) {\n"
               "                const long long xr_ = c0_ + ty_ + u_ * %d, xc_ = r0_ + tx_;\n"
               "                if (xr_ < C_ && xc_ < R_) ld_[u_] = xs_[xr_ * R_ + xc_];\n"
               "            }\n"
               "#pragma unroll\n"
               "            for (int u_ = 0; u_ < %d; u_++) tl_[ty_ + u_ * %d][tx_] = ld_[u_];\n"
               "            __syncthreads();\n"
               "#pragma unroll\n"
               "            for (int u_ = 0; u_ < %d; u_++) {\n"
               "                const int yy_ = ty_ + u_ * %d;\n"
               "                const long long r_ = r0_ + yy_, c_ = c0_ + tx_;\n"
               "                if (r_ < R_ && c_ < C_) {\n"
               "                    const long long i = (bb_ * R_ + r_) * C_ + c_;\n",
            T, r == 3 ? "const UX bb_ = tile_ / (tr_ * tc_), rm_ = tile_ % (tr_ * tc_);" : "const UX bb_ = 0, rm_ = tile_;",
            TRANSPOSE_GROUP, TRANSPOSE_GROUP, TRANSPOSE_GROUP, TRANSPOSE_GROUP, TRANSPOSE_GROUP, T, T,
            W(ke, KP_IN, x, 0, 0), T, ny, ny, k->block / 32, ny, k->block / 32, ny, k->block / 32);
    if (r == 3) bputs(b, "                    const IX ix0 = (IX)bb_, ix1 = (IX)r_, ix2 = (IX)c_;\n");
    else bputs(b, "                    const IX ix0 = (IX)r_, ix1 = (IX)c_;\n");
    for (int a = 0; a < r; a++) bprintf(b, "                    (void)ix%d;\n", a);
    reset_scope(ke);
    bprintf(b, "                    const %s v%d = tl_[tx_][yy_];\n", ctype(t->dt), t->id);
    ke->done[t->id] = true;
    ke->ix_given = true;
    emit_eval_at(ke, k->outs, k->nouts, 5, false);
    ke->ix_given = false;
    for (int j = 0; j < k->nouts; j++) store(ke, k->outs[j], "i", 5);
    bputs(b, "                }\n            }\n            __syncthreads();\n        }\n        return;\n    }\n");
}

static void emit_map(KE *ke) {
    const Kernel *k = ke->k;
    header(ke);
    Buf *b = ke->b;
    Val *tt = kernel_tiled_transpose(k);
    if (tt) { /* the general path below when the transpose is broadcast (KFLAT_TILED) */
        bprintf(b, "    if (p.w[%d] & %d) {\n", W(ke, KP_FLAT, NULL, 0, 0), KFLAT_TILED);
        emit_map_transposed(ke, tt);
        bputs(b, "    }\n");
    }
    reset_scope(ke);
    Leaves L = leaves_new(ke);
    collect_leaves(ke, k->outs, k->nouts, &L);
    int V = 16 / kernel_widest_elem(k), U = k->items; /* as kernel_geometry's grid assumes */
    bputs(b, "    const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
             "    const long long gstride = (long long)gridDim.x * blockDim.x;\n"
             "    long long start_ = 0;\n");
    /* index transforms read ix: a row must hold whole vectors (emit_vec_iter_index);
       a heavy body is written once (kernel_code_heavy) */
    if (kernel_code_heavy(k)) bputs(b, "    if (0) {\n");
    else if (k->ix32 && k->rank > 1)
        bprintf(b, "    if (%s && p.w[%d] %% %d == 0) {\n", vec_cond(ke, &L, k->outs, k->nouts),
                W(ke, KP_SHAPE, NULL, k->rank - 1, 0), V);
    else bprintf(b, "    if (%s) {\n", vec_cond(ke, &L, k->outs, k->nouts));
    bprintf(b, "        const long long nvec = n / %d;\n", V);
    /* kernel_geometry's grid has one block per chunk: straight-line code (any loop
       around it, even one that never runs, measured 2.5 points of copy bandwidth slower
       on the chain) */
    bprintf(b, "        const long long q0 = (long long)blockIdx.x * blockDim.x * %d + threadIdx.x;\n"
               "        if (q0 < nvec) {\n", U);
    declare_leaf_regs(ke, &L, V, U, 3);
    bprintf(b, "#pragma unroll\n            for (int u_ = 0; u_ < %d; u_++) {\n", U);
    bputs(b, "                const long long q = q0 + u_ * (long long)blockDim.x;\n                if (q < nvec) {\n");
    load_leaf_regs(ke, &L, V, "[u_]", arena_printf(ke->e->a, "q * %d", V), 5);
    bputs(b, "                }\n            }\n");
    bprintf(b, "#pragma unroll\n            for (int u_ = 0; u_ < %d; u_++) {\n", U);
    bputs(b, "                const long long q = q0 + u_ * (long long)blockDim.x;\n                if (q < nvec) {\n");
    for (int j = 0; j < k->nouts; j++) bprintf(b, "                cuk_vec<%s, %d> S%d;\n", ctype(k->outs[j]->dt), V, j);
    bprintf(b, "#pragma unroll\n                for (int e_ = 0; e_ < %d; e_++) {\n", V);
    /* A vector's first index is a multiple of V, so `| e_` is `+ e_`; written so, NVRTC
       sees that the elements of a vector share i / V (and i >> 2): a generator's one
       Philox call a vector is computed once, not per element (here and in every
       vector loop below). */
    bprintf(b, "                    const long long i = q * %d | e_;\n                    (void)i;\n", V);
    if (k->rank > 0) /* unused (and removed by NVRTC) without index transforms */
        emit_vec_iter_index(ke, V, 5);
    ke->ix_given = k->rank > 0;
    regs_eval(ke, "[u_].x[e_]", k->outs, k->nouts, 5);
    ke->ix_given = false;
    regs_end(ke);
    char r[128];
    for (int j = 0; j < k->nouts; j++) {
        ref(ke, k->outs[j], r, sizeof r);
        bprintf(b, "                    S%d.x[e_] = %s;\n", j, r);
    }
    bputs(b, "                }\n");
    for (int j = 0; j < k->nouts; j++)
        bprintf(b, "                cuk_stv<%s, %d>((void *)p.w[%d], q * %d, S%d);\n", ctype(k->outs[j]->dt), V,
                W(ke, KP_OUT, k->outs[j], 0, 0), V, j);
    bputs(b, "                }\n            }\n");
    bputs(b, "        }\n");
    bprintf(b, "        start_ = nvec * %d;\n    }\n", V);
    bputs(b, "    for (long long i = start_ + gtid; i < n; i += gstride) {\n");
    reset_scope(ke);
    emit_eval(ke, k->outs, k->nouts, 2);
    for (int j = 0; j < k->nouts; j++) store(ke, k->outs[j], "i", 2);
    bputs(b, "    }\n}\n\n");
    body_twice(ke);
}

/* The region entry of an update's map kernel (kernel_region_update): thread g_ takes the
   g_-th element of the region in row-major order, finds its index i in a's shape
   (start + r * step per axis) and runs the whole-array kernel's code at i, where the
   update reads e; the result goes to i of the output, which the executor points at a's
   own buffer. Elements outside the region are not touched. */
static void emit_update_region(KE *ke) {
    const Kernel *k = ke->k;
    Val *u = k->outs[0];
    Buf *b = ke->b;
    int r = u->rank;
    bprintf(b, "extern \"C\" __global__ void __launch_bounds__(%d) %s%s(const struct %s_p p) {\n", k->block, k->name,
            kernel_entry_suffix[KE_RG], k->name);
    bputs(b, "    typedef long long IX;\n    typedef unsigned long long UX;\n");
    bprintf(b, "    const long long n = p.w[%d];\n", W(ke, KP_N, NULL, 0, 0));
    bprintf(b, "    const int flat = (int)(p.w[%d] & 1);\n", W(ke, KP_FLAT, NULL, 0, 0));
    bputs(b, "    (void)n; (void)flat;\n");
    emit_scalar_params(ke);
    bputs(b, "    long long rn_ = 1;\n");
    for (int ax = 0; ax < r; ax++) bprintf(b, "    rn_ *= p.w[%d];\n", W(ke, KP_UPD, u, ax, 0));
    bputs(b, "    for (long long g_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; g_ < rn_;\n"
             "         g_ += (long long)gridDim.x * blockDim.x) {\n");
    bprintf(b, "        long long i = 0, rr_ = g_, jr_[%d];\n        ", r);
    for (int ax = r - 1; ax > 0; ax--) bprintf(b, "jr_[%d] = cuk_divmod(rr_, p.w[%d]); ", ax, W(ke, KP_UPD, u, ax, 0));
    bputs(b, "jr_[0] = rr_;\n");
    for (int ax = 0; ax < r; ax++) {
        int st = W(ke, KP_SLSTART, u, ax, 0), sp = W(ke, KP_SLSTEP, u, ax, 0);
        if (ax == 0) bprintf(b, "        i = p.w[%d] + jr_[0] * p.w[%d];\n", st, sp);
        else
            bprintf(b, "        i = i * p.w[%d] + (p.w[%d] + jr_[%d] * p.w[%d]);\n", W(ke, KP_SHAPE, NULL, ax, 0), st, ax,
                    sp);
    }
    reset_scope(ke);
    emit_eval(ke, k->outs, 1, 2);
    store(ke, u, "i", 2);
    bputs(b, "    }\n}\n\n");
}

/* The value a builtin reduction's accumulator starts from, such that folding the first
   element gives that element's exact bits (x + -0.0 is x for every x, -0.0 included; a
   max from -inf; ...), or NULL (lambdas, argmin/argmax). With it each element's fold is
   `acc = op(acc, x); has = 1` instead of `acc = has ? op(acc, x) : x` (no select per
   element); `has` still says whether any element was folded, so empty ranges and the
   combines give the same bits as before. Row kernels drop `has` too (declare_accs_one):
   with both, softmax rows ran 7% faster (fewer registers, no spills in the fast path). */
static const char *fold_identity(const Val *r) {
    switch (r->red) {
    case RED_SUM:
        if (r->dt == DT_F32) return "-0.0f";
        if (r->dt == DT_F64) return "-0.0";
        return red_identity(r->red, r->dt);
    case RED_PROD:
    case RED_MIN:
    case RED_MAX:
    case RED_ANY:
    case RED_ALL: return red_identity(r->red, r->dt);
    default: return NULL;
    }
}

/* The value one reduction folds for the element at i (argmin/argmax carry `pos`). */
/* Folds value x (of r's input type) at position pos into acc<j>/has<j>. */
static void fold_val(KE *ke, Val *r, int j, const char *x, const char *pos, int d) {
    ind(ke->b, d);
    if (r->red == RED_ARGMIN || r->red == RED_ARGMAX)
        bprintf(ke->b, "{ cuk_arg<%s> e_; e_.v = %s; e_.i = %s; cuk_fold(acc%d, has%d, e_, op%d); }\n",
                ctype(r->args[0]->dt), x, pos, j, j, j);
    else if (fold_identity(r) && ke->k->kind == K_ROW)
        bprintf(ke->b, "acc%d = op%d(acc%d, (%s)(%s));\n", j, j, j, ctype(r->dt), x);
    else if (fold_identity(r))
        bprintf(ke->b, "acc%d = op%d(acc%d, (%s)(%s)); has%d = 1;\n", j, j, j, ctype(r->dt), x, j);
    else
        bprintf(ke->b, "cuk_fold(acc%d, has%d, (%s)(%s), op%d);\n", j, j, ctype(r->dt), x, j);
}

static void fold_expr(KE *ke, Val *r, int j, const char *pos, int d) {
    char x[128];
    ref(ke, r->args[0], x, sizeof x);
    fold_val(ke, r, j, x, pos, d);
}

/* acc/has -> the reduction's value: init first if given, identity if empty. */
static void finish_value(KE *ke, Val *r, int j, const char *dst, int d) {
    Buf *b = ke->b;
    Val *init = red_init(r);
    char iv[128];
    ind(b, d);
    if (r->red == RED_ARGMIN || r->red == RED_ARGMAX) {
        bprintf(b, "%s = has%d ? acc%d.i : %d;\n", dst, j, j, red_segs(r) ? -1 : 0);
        return;
    }
    if (init) {
        ref(ke, init, iv, sizeof iv);
        bprintf(b, "%s = has%d ? op%d((%s)(%s), acc%d) : (%s)(%s);\n", dst, j, j, ctype(r->dt), iv, j, ctype(r->dt), iv);
    } else {
        /* row kernels fold from the identity with has set (fold_identity), which for a
           float sum is -0.0: an empty row's sum is 0, as on the CPU backend */
        const char *id = red_identity(r->red, r->dt);
        bprintf(b, "%s = has%d%s ? acc%d : (%s)(%s);\n", dst, j, ke->k->kind == K_ROW ? " && len > 0" : "", j,
                ctype(r->dt), id ? id : "0");
    }
}

/* A loop over [lo, hi) split among the block's threads: strided for commutative
   builtins (coalesced), contiguous per thread for lambdas (order-preserving). */
static void block_loop(KE *ke, bool ordered, const char *var, const char *lo, const char *hi, int d) {
    ind(ke->b, d);
    if (ordered)
        bprintf(ke->b,
                "{ const long long span_ = (%s) - (%s), per_ = (span_ + blockDim.x - 1) / blockDim.x;\n", hi, lo);
    else
        bputs(ke->b, "{\n");
    ind(ke->b, d);
    if (ordered)
        bprintf(ke->b,
                "for (long long %s = (%s) + threadIdx.x * per_; %s < (%s) && %s < (%s) + (threadIdx.x + 1) * per_; "
                "%s++) {\n",
                var, lo, var, hi, var, lo, var);
    else
        bprintf(ke->b, "for (long long %s = (%s) + threadIdx.x; %s < (%s); %s += blockDim.x) {\n", var, lo, var, hi,
                var);
}

static bool any_lambda(const Kernel *k) {
    for (int j = 0; j < k->nreds; j++)
        if (k->reds[j]->red == RED_LAMBDA) return true;
    return false;
}

static void declare_accs_one(KE *ke, const char *type, int j, int d) {
    Val *r = ke->k->reds[j];
    emit_combine_instance(ke, r, type, j, d);
    ind(ke->b, d);
    const char *id = fold_identity(r);
    /* A row kernel's rows are never empty (a row of length 0 has no outputs): its
       accumulators count as full from the start, and a thread with no element of the
       row contributes the identity, which leaves every combine's bits as they were. */
    if (id)
        bprintf(ke->b, "%s acc%d = (%s)(%s); int has%d = %d;\n", acc_type(ke->e, r), j, acc_type(ke->e, r), id, j,
                ke->k->kind == K_ROW);
    else bprintf(ke->b, "%s acc%d; int has%d = 0;\n", acc_type(ke->e, r), j, j);
    ind(ke->b, d);
    bprintf(ke->b, "(void)acc%d;\n", j);
}

static void declare_accs(KE *ke, const char **types, int d) {
    for (int j = 0; j < ke->k->nreds; j++) declare_accs_one(ke, types[j], j, d);
}

/* The end of a kernel whose block reduces one line o at a time (an axis reduction's
   line, a segment): the block's partials combined, thread 0 writes result o. */
static void emit_line_results(KE *ke) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    bputs(b, "        }}\n");
    for (int j = 0; j < k->nreds; j++) {
        Val *r = k->reds[j];
        bprintf(b, "        cuk_block_reduce(acc%d, has%d, op%d);\n", j, j, j);
        bputs(b, "        if (threadIdx.x == 0) {\n");
        finish_value(ke, r, j, arena_printf(ke->e->a, "((%s *)p.w[%d])[o]", ctype(r->dt), W(ke, KP_OUT, r, 0, 0)), 3);
        bputs(b, "        }\n");
    }
    bputs(b, "        __syncthreads();\n    }\n}\n\n");
}

/* Per-element work of a chunked kernel (a reduction's folds, a histogram's update),
   emitted at depth d for the element at index i. */
typedef void (*EachFn)(KE *ke, int d, void *ctx);

/* A thread's strided walk over 16-byte vectors q = q, q + stride, ... < limit (q declared
   by the caller): U vectors per leaf in flight, then the rest one at a time. at and elem
   are formats of the vector index expression: at gives its first element's flat index
   (the leaves' load address), elem declares the element's i (and what else `each`
   reads) for element e_ of it; each element's targets are evaluated from the
   registers and `each` emitted. */
static void emit_vec_loop(KE *ke, const Leaves *L, int V, int U, const char *stride, const char *limit, const char *at,
                          const char *elem, Val **tg, int ntg, EachFn each, void *ctx, int d) {
    Buf *b = ke->b;
    for (int tail = 0; tail < 2; tail++) {
        int u = tail ? 1 : U;
        const char *vq = tail ? "q" : arena_printf(ke->e->a, "(q + u_ * (long long)(%s))", stride);
        ind(b, d);
        if (tail) bprintf(b, "for (; q < %s; q += %s) {\n", limit, stride);
        else bprintf(b, "for (; q + %d * (long long)(%s) < %s; q += %d * (long long)(%s)) {\n", U - 1, stride, limit, U, stride);
        const char *sel = tail ? "[0]" : "[u_]";
        if (!tail) {
            bprintf(b, "#pragma unroll\n");
            ind(b, d + 1);
            bprintf(b, "for (int u_ = 0; u_ < %d; u_++) {\n", u);
        }
        load_leaf_regs(ke, L, V, sel, arena_printf(ke->e->a, at, vq), d + 2);
        if (!tail) {
            ind(b, d + 1);
            bputs(b, "}\n#pragma unroll\n");
            ind(b, d + 1);
            bprintf(b, "for (int u_ = 0; u_ < %d; u_++) {\n", u);
        }
        bputs(b, "#pragma unroll\n");
        ind(b, d + 2);
        bprintf(b, "for (int e_ = 0; e_ < %d; e_++) {\n", V);
        ind(b, d + 3);
        bprintf(b, elem, vq);
        bputs(b, "\n");
        regs_eval(ke, arena_printf(ke->e->a, "%s.x[e_]", sel), tg, ntg, d + 3);
        each(ke, d + 3, ctx);
        ind(b, d + 2);
        bputs(b, "}\n");
        if (!tail) {
            ind(b, d + 1);
            bputs(b, "}\n");
        }
        ind(b, d);
        bputs(b, "}\n");
    }
    regs_end(ke);
}

/* The vector-aligned part of a kernel whose blocks each take a contiguous chunk:
   nvec 16-byte vectors per leaf, UNROLL of them in flight per thread, then the chunk's
   remaining vectors one at a time; each element's targets evaluated and `each` emitted.
   Returns the vector width; the caller goes on from element nvec * V one at a time. */
static int emit_vector_chunks(KE *ke, Val **tg, int ntg, EachFn each, void *ctx) {
    Buf *b = ke->b;
    const int U = 4;
    reset_scope(ke);
    Leaves L = leaves_new(ke);
    collect_leaves(ke, tg, ntg, &L);
    int V = vec_width(&L, NULL, 0);
    if (kernel_code_heavy(ke->k)) { /* the body once: all of it one element at a time */
        bputs(b, "    const long long nvec = 0;\n");
        return V;
    }
    bprintf(b, "    const long long nvec = (%s) ? n / %d : 0;\n", vec_cond(ke, &L, NULL, 0), V);
    bputs(b, "    {\n"
             "        const long long cv = (nvec + gridDim.x - 1) / gridDim.x;\n"
             "        const long long vlo = (long long)blockIdx.x * cv, vhi = vlo + cv < nvec ? vlo + cv : nvec;\n"
             "        long long q = vlo + threadIdx.x;\n");
    declare_leaf_regs(ke, &L, V, U, 2);
    emit_vec_loop(ke, &L, V, U, "blockDim.x", "vhi", arena_printf(ke->e->a, "%%s * %d", V),
                  arena_printf(ke->e->a, "const long long i = %%s * %d | e_;", V), tg, ntg, each, ctx, 2);
    bputs(b, "    }\n");
    return V;
}

/* A reduction kernel's folds of element i (ctx: the kernel). */
static void each_fold(KE *ke, int d, void *ctx) {
    const Kernel *k = ctx;
    for (int j = 0; j < k->nreds; j++) fold_expr(ke, k->reds[j], j, "i", d);
}

/* ... at position t along the reduced axis (axis reductions' rows). */
static void each_fold_at_t(KE *ke, int d, void *ctx) {
    const Kernel *k = ctx;
    for (int j = 0; j < k->nreds; j++) fold_expr(ke, k->reds[j], j, "t", d);
}

/* The element value reduction j stages for the element at i (argmin/argmax: the value
   and i, made relative to the segment's start when the result is written). */
static void seg_stage(KE *ke, int j, const char *dst, int d) {
    Val *r = ke->k->reds[j];
    char x[128];
    ref(ke, r->args[0], x, sizeof x);
    ind(ke->b, d);
    if (r->red == RED_ARGMIN || r->red == RED_ARGMAX)
        bprintf(ke->b, "{ cuk_arg<%s> e_; e_.v = %s; e_.i = i; %s = e_; }\n", ctype(r->args[0]->dt), x, dst);
    else bprintf(ke->b, "%s = (%s)(%s);\n", dst, ctype(r->dt), x);
}

/* Writes segment `seg`'s result of reduction j from acc<j>/has<j>. */
static void seg_write(KE *ke, int j, const char *seg, int d) {
    Val *r = ke->k->reds[j];
    const char *dst = arena_printf(ke->e->a, "((%s *)p.w[%d])[%s]", ctype(r->dt), W(ke, KP_OUT, r, 0, 0), seg);
    if (r->red == RED_ARGMIN || r->red == RED_ARGMAX) {
        ind(ke->b, d);
        bprintf(ke->b, "%s = has%d ? acc%d.i - offs_[%s] : -1;\n", dst, j, j, seg);
    } else {
        finish_value(ke, r, j, dst, d);
    }
}

/* Empties acc<j> after a segment boundary. */
static void seg_reset(KE *ke, int j, int d) {
    Val *r = ke->k->reds[j];
    const char *id = fold_identity(r);
    ind(ke->b, d);
    if (id) bprintf(ke->b, "acc%d = (%s)(%s); has%d = 0;\n", j, acc_type(ke->e, r), id, j);
    else bprintf(ke->b, "has%d = 0;\n", j);
}

/* Opens another entry point over kernel k's parameter block (the segmented reduction's
   prepass and fix-up): its name is k's with `suffix`, then n, flat and the scalars. */
static void entry_open(KE *ke, const char *suffix) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    /* a row kernel's entries: two resident blocks, as header() gives the first */
    bprintf(b, "extern \"C\" __global__ void __launch_bounds__(%d%s) %s%s(const struct %s_p p) {\n", k->block,
            k->kind == K_ROW ? ", 2" : "", k->name, suffix, k->name);
    bputs(b, "    typedef long long IX;\n    typedef unsigned long long UX;\n");
    bprintf(b, "    const long long n = p.w[%d];\n", W(ke, KP_N, NULL, 0, 0));
    bprintf(b, "    const int flat = (int)(p.w[%d] & 1);\n", W(ke, KP_FLAT, NULL, 0, 0));
    bputs(b, "    (void)n; (void)flat;\n");
    emit_scalar_params(ke);
}

/* The words every entry of a segmented reduction reads: scratch, the offsets, the number
   of segments and of tiles. */
static void segred_words(KE *ke, int TILE) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    bprintf(b, "    char *scratch = (char *)p.w[%d];\n", W(ke, KP_SCRATCH, NULL, 0, 0));
    bprintf(b, "    const long long *offs_ = (const long long *)p.w[%d];\n",
            W(ke, KP_IN, kernel_canon(k, red_segs(k->reds[0])), 0, 0));
    bprintf(b, "    const long long nseg = p.w[%d];\n", W(ke, KP_OUTER, NULL, 0, 0));
    bprintf(b, "    const long long ntiles_ = (n + %d) / %d;\n", TILE - 1, TILE);
    bprintf(b, "    unsigned long long *err_ = (unsigned long long *)p.w[%d];\n", W(ke, KP_ERR, NULL, 0, 0));
    bputs(b, "    (void)err_;\n");
}

/* The fix-up's fold of reduction j's first-run records of tiles [lo, hi) into acc<j>,
   in tile order. */
static void fold_first_runs(KE *ke, int j, const char *lo, const char *hi) {
    const char *A = acc_type(ke->e, ke->k->reds[j]);
    bprintf(ke->b, "                for (long long u_ = %s; u_ < %s; u_++) {\n", lo, hi);
    bprintf(ke->b, "                    const cuk_opt<%s> r_ = *cuk_sr_rec<%s>(scratch, ntiles_, %d, 0, u_);\n", A, A, j);
    bprintf(ke->b, "                    if (r_.h) cuk_fold(acc%d, has%d, r_.v, op%d);\n                }\n", j, j, j);
}

/* Segmented reductions (segments=offs), in three entries the executor launches in order
   over the same parameter block; only associativity is assumed (every combine keeps
   element order) and no atomics touch values, so results repeat bit for bit.
   <name>_sp, the prepass (grid-stride): checks the offsets as the CPU backend does
     (offs[0] == 0, non-decreasing, offs[k] == n; the first bad one goes to the error
     block, cuk_sr_err), writes every empty segment's result (the identity), and finds
     each tile's first segment, sot[t] = the last s with offs[s] <= t * TILE (a galloping
     search from a guess by the mean segment length; sot[ntiles] = k).
   <name>, one block per tile of BLOCK x ITEMS elements: each thread gets its ITEMS
     consecutive elements in registers (producers fused; where one reduction's values
     are as wide as the leaves, loaded coalesced by the warp and handed over through
     shared memory), the block marks where segments start in the tile (the offsets in
     (sot[t], sot[t + 1]], read coalesced: a bit per element, and for each start the
     first segment at that position, whose predecessor is the one that ends there), then
     each thread folds its elements, writing every segment that starts and ends inside
     its run; a segmented block scan (cuk_seg) gives each thread the carry into its
     first boundary. A segment that starts and ends in the tile is written here; the
     tile also records the fold of its first run and, when its last run's segment
     started in the tile and goes on past it, owns that segment (its number and fold).
   <name>_sf, the fix-up (a thread per tile, the warp for a segment over more than 16
     tiles): each owned segment is the owner's fold, then the first-run folds of the
     tiles it covers, in order; and the offsets an error message quotes. */
static void emit_segred(KE *ke, const char **types) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    const int BLOCK = k->block, ITEMS = k->items, TILE = BLOCK * ITEMS;
    if (ITEMS != 8 && ITEMS != 16 && ITEMS != 32) die("emit_segred: %d items a thread", ITEMS);
    const long long ID1 = (long long)k->reds[0]->id + 1;
    Val **ins = NEWN(ke->e->a, Val *, k->nreds);
    for (int j = 0; j < k->nreds; j++) ins[j] = k->reds[j]->args[0];
    /* the segment closed by a boundary at tile position C: the one before the first
       segment starting there */
    const char *SEGID = "(big_ ? cuk_sr_clamp(cuk_upper_bound(offs_, s0_ + 1, s1_ + 1, tbase + (%s) - 1) - 1, nseg) "
                        ": s0_ + (long long)%s - 1)";
    segred_words(ke, TILE);
    bputs(b, "    if (nseg == 0) return; /* n > 0: the prepass reports the last offset */\n"
             "    const long long t_ = blockIdx.x, tbase = t_ * ");
    bprintf(b, "%dLL;\n    const int tn_ = (int)(n - tbase < %d ? n - tbase : %d);\n", TILE, TILE, TILE);
    bputs(b, "    const long long *sot_ = cuk_sr_sot(scratch);\n"
             "    const long long s0_ = sot_[t_], s1_ = sot_[t_ + 1];\n"
             "    const bool here0_ = offs_[s0_] == tbase; /* the tile's first segment starts at it */\n"
             "    const bool big_ = s1_ - s0_ > 0xffffffffLL; /* segment numbers not relative in 32 bits */\n");
    reset_scope(ke);
    Leaves L = leaves_new(ke);
    collect_leaves(ke, ins, k->nreds, &L);
    int V = vec_width(&L, NULL, 0);
    if (V > ITEMS) V = ITEMS;
    /* One reduction whose values are as wide as the widest leaf (sum(x), max(a * b)):
       the warp loads its 32 * ITEMS elements coalesced (lane l's row r at
       (r * 32 + l) * V, 512 bytes an instruction) and hands each thread its ITEMS
       consecutive ones through shared memory (padded by a vector per thread, so both
       sides are free of bank conflicts). Loading each thread's run directly (64 bytes a
       lane apart) kept the L1 91% busy at 45% of DRAM bandwidth (ncu, H100). */
    const Val *r0 = k->reds[0];
    const int asz = dtype_info[r0->dt].size;
    const int want_stage = BLOCK / 32 * 32 * (ITEMS + V) * asz;
    const bool staged = k->nreds == 1 && r0->red != RED_ARGMIN && r0->red != RED_ARGMAX && asz * V == 16 &&
                        want_stage <= 40960; /* static shared memory: 48 KiB with hb_ and the scans' */
    const int stage_bytes = staged ? want_stage : 0;
    bprintf(b, "    __shared__ __align__(16) unsigned char sm_[%d]; /* the stage, then fa_ */\n",
            stage_bytes > TILE * 4 ? stage_bytes : TILE * 4);
    bprintf(b, "    __shared__ unsigned int hb_[%d], fe_;\n    unsigned int *fa_ = (unsigned int *)sm_;\n", TILE / 32);
    bprintf(b, "    if (threadIdx.x < %d) hb_[threadIdx.x] = 0u;\n", TILE / 32);
    bputs(b, "    if (threadIdx.x == 0) fe_ = 0u;\n");
    bprintf(b, "    const int c0_ = (int)threadIdx.x * %d;\n", ITEMS);
    /* the thread's elements, in registers */
    for (int j = 0; j < k->nreds; j++) bprintf(b, "    %s xv%d_[%d];\n", acc_type(ke->e, k->reds[j]), j, ITEMS);
    bprintf(b, "    if ((%s) && tn_ == %d) {\n", vec_cond(ke, &L, NULL, 0), TILE);
    if (staged) {
        const char *A = acc_type(ke->e, r0);
        int R = ITEMS / V;
        bprintf(b, "        const int lane_ = threadIdx.x & 31;\n"
                   "        const long long wb_ = tbase + (long long)(threadIdx.x >> 5) * %d;\n"
                   "        %s *st_ = (%s *)sm_ + (threadIdx.x >> 5) * %d;\n",
                32 * ITEMS, A, A, 32 * (ITEMS + V));
        declare_leaf_regs(ke, &L, V, R, 2);
        bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);
        load_leaf_regs(ke, &L, V, "[r_]", arena_printf(ke->e->a, "wb_ + (r_ * 32 + lane_) * %d", V), 3);
        bputs(b, "        }\n");
        bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);
        bprintf(b, "            cuk_vec<%s, %d> sv_;\n", A, V);
        bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) {\n", V);
        bprintf(b, "                const long long i = (wb_ + (r_ * 32 + lane_) * %d) | e_;\n                (void)i;\n", V);
        regs_eval(ke, "[r_].x[e_]", ins, 1, 4);
        seg_stage(ke, 0, "sv_.x[e_]", 4);
        regs_end(ke);
        bputs(b, "            }\n");
        bprintf(b, "            const int c_ = (r_ * 32 + lane_) * %d;\n", V);
        bprintf(b, "            *(cuk_vec<%s, %d> *)(st_ + c_ + c_ / %d * %d) = sv_;\n        }\n", A, V, ITEMS, V);
        bputs(b, "        __syncwarp();\n");
        bprintf(b, "#pragma unroll\n        for (int q_ = 0; q_ < %d; q_++) {\n", R);
        bprintf(b, "            const cuk_vec<%s, %d> sv_ = *(const cuk_vec<%s, %d> *)(st_ + lane_ * %d + q_ * %d);\n", A, V,
                A, V, ITEMS + V, V);
        bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) xv0_[q_ * %d + e_] = sv_.x[e_];\n        }\n",
                V, V);
    } else {
        declare_leaf_regs(ke, &L, V, ITEMS / V, 2);
        bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", ITEMS / V);
        load_leaf_regs(ke, &L, V, "[r_]", arena_printf(ke->e->a, "tbase + c0_ + r_ * %d", V), 3);
        bputs(b, "        }\n");
        bprintf(b, "#pragma unroll\n        for (int q_ = 0; q_ < %d; q_++) {\n", ITEMS);
        bputs(b, "            const long long i = tbase + c0_ + q_;\n            (void)i;\n");
        regs_eval(ke, arena_printf(ke->e->a, "[q_ / %d].x[q_ %% %d]", V, V), ins, k->nreds, 3);
        for (int j = 0; j < k->nreds; j++) seg_stage(ke, j, arena_printf(ke->e->a, "xv%d_[q_]", j), 3);
        regs_end(ke);
        bputs(b, "        }\n");
    }
    bputs(b, "    } else {\n");
    bprintf(b, "#pragma unroll\n        for (int q_ = 0; q_ < %d; q_++) {\n", ITEMS);
    bputs(b, "            const long long i = tbase + c0_ + q_;\n            if (c0_ + q_ < tn_) {\n");
    reset_scope(ke);
    emit_eval(ke, ins, k->nreds, 4);
    for (int j = 0; j < k->nreds; j++) seg_stage(ke, j, arena_printf(ke->e->a, "xv%d_[q_]", j), 4);
    bputs(b, "            }\n        }\n    }\n");
    /* where segments start in the tile; with offsets out of order (an error the prepass
       reports) two segments may name one place: the stores are atomic, so that no two
       plain stores race (compute-sanitizer racecheck) */
    bputs(b, "    __syncthreads();\n");
    bprintf(b, "    for (long long s_ = s0_ + 1 + threadIdx.x; s_ <= s1_; s_ += %d) {\n", BLOCK);
    bputs(b, "        const long long o_ = offs_[s_], c_ = o_ - tbase;\n"
             "        if (c_ > 0 && c_ <= tn_ && offs_[s_ - 1] != o_) {\n"
             "            if (c_ < tn_) {\n"
             "                if (!big_) atomicExch(&fa_[c_], (unsigned int)(s_ - s0_));\n"
             "                atomicOr(&hb_[c_ >> 5], 1u << (c_ & 31));\n"
             "            } else {\n"
             "                atomicExch(&fe_, big_ ? 1u : (unsigned int)(s_ - s0_));\n"
             "            }\n"
             "        }\n"
             "    }\n"
             "    __syncthreads();\n");
    /* the thread's run: segments that start and end in it are written; the piece before
       its first boundary (hd) waits for the carry */
    bprintf(b, "    const unsigned int hm_ = (hb_[c0_ >> 5] >> (c0_ & 31)) & 0x%xu;\n",
            ITEMS == 32 ? 0xffffffffu : (1u << ITEMS) - 1);
    bputs(b, "    int closed_ = 0, fc_ = 0;\n");
    for (int j = 0; j < k->nreds; j++) {
        declare_accs_one(ke, types[j], j, 1);
        const char *A = acc_type(ke->e, k->reds[j]);
        bprintf(b, "    %s hd%d_ = %s(); int hh%d_ = 0;\n    (void)hd%d_; (void)hh%d_;\n", A, j, A, j, j, j);
    }
    Buf fold = {.a = ke->e->a};
    for (int j = 0; j < k->nreds; j++) {
        if (fold_identity(k->reds[j])) bprintf(&fold, "acc%d = op%d(acc%d, xv%d_[e_]); has%d = 1; ", j, j, j, j, j);
        else bprintf(&fold, "cuk_fold(acc%d, has%d, xv%d_[e_], op%d); ", j, j, j, j);
    }
    bprintf(b, "    if (hm_ == 0u && c0_ + %d <= tn_) {\n", ITEMS);
    bprintf(b, "#pragma unroll\n        for (int e_ = 0; e_ < %d; e_++) { %s}\n", ITEMS, fold.s);
    bputs(b, "    } else {\n");
    bprintf(b, "#pragma unroll\n        for (int e_ = 0; e_ < %d; e_++) {\n", ITEMS);
    bputs(b, "            if (c0_ + e_ >= tn_) break;\n"
             "            if ((hm_ >> e_) & 1u) {\n"
             "                if (!closed_) {\n"
             "                    closed_ = 1;\n"
             "                    fc_ = c0_ + e_;\n");
    for (int j = 0; j < k->nreds; j++) bprintf(b, "                    hd%d_ = acc%d; hh%d_ = has%d;\n", j, j, j, j);
    bputs(b, "                } else {\n");
    bprintf(b, "                    const long long sid_ = %s;\n", arena_printf(ke->e->a, SEGID, "c0_ + e_", "fa_[c0_ + e_]"));
    for (int j = 0; j < k->nreds; j++) seg_write(ke, j, "sid_", 5);
    bputs(b, "                }\n");
    for (int j = 0; j < k->nreds; j++) seg_reset(ke, j, 4);
    bputs(b, "            }\n");
    bprintf(b, "            %s\n", fold.s);
    bputs(b, "        }\n    }\n");
    /* per reduction: the carries (a segmented scan of the threads' pieces), the run each
       thread's first boundary closes, and the tile's first and last runs */
    for (int j = 0; j < k->nreds; j++) {
        const char *A = acc_type(ke->e, k->reds[j]);
        bputs(b, "    {\n");
        bprintf(b, "        cuk_seg_op<%s, %s> sop_;\n        sop_.op = op%d;\n", A, types[j], j);
        bprintf(b, "        cuk_seg<%s> pc_, ex_, tot_;\n        int hex_;\n", A);
        bprintf(b, "        pc_.v = acc%d;\n        pc_.h = has%d;\n        pc_.c = closed_;\n", j, j);
        bputs(b, "        cuk_block_exscan(pc_, sop_, ex_, hex_, tot_);\n");
        bputs(b, "        if (closed_) {\n");
        bprintf(b, "            %s acc%d = ex_.v;\n            int has%d = hex_ && ex_.h;\n", A, j, j);
        bprintf(b, "            if (hh%d_) cuk_fold(acc%d, has%d, hd%d_, op%d);\n", j, j, j, j, j);
        bputs(b, "            if (hex_ && ex_.c) {\n");
        bprintf(b, "                const long long sid_ = %s;\n", arena_printf(ke->e->a, SEGID, "fc_", "fa_[fc_]"));
        seg_write(ke, j, "sid_", 4);
        bputs(b, "            } else {\n");
        bprintf(b, "                cuk_opt<%s> r_;\n                r_.v = acc%d;\n                r_.h = has%d;\n", A, j, j);
        bprintf(b, "                *cuk_sr_rec<%s>(scratch, ntiles_, %d, 0, t_) = r_;\n", A, j);
        bputs(b, "                if (here0_) {\n");
        seg_write(ke, j, "s0_", 5);
        bputs(b, "                }\n            }\n        }\n");
        bputs(b, "        if (threadIdx.x == 0) {\n");
        bprintf(b, "            %s acc%d = tot_.v;\n            int has%d = tot_.h;\n", A, j, j);
        bprintf(b, "            cuk_opt<%s> r_;\n            r_.v = tot_.v;\n            r_.h = tot_.h;\n", A);
        bprintf(b, "            if (!tot_.c) *cuk_sr_rec<%s>(scratch, ntiles_, %d, 0, t_) = r_;\n", A, j);
        bputs(b, "            if (fe_ != 0u) {\n                if (tot_.c || here0_) {\n");
        bprintf(b, "                    const long long sid_ = %s;\n", arena_printf(ke->e->a, SEGID, "tn_", "fe_"));
        seg_write(ke, j, "sid_", 5);
        bputs(b, "                }\n");
        if (j == 0) bputs(b, "                cuk_sr_own(scratch, ntiles_)[t_] = -1;\n");
        bputs(b, "            } else if ((tot_.c || here0_) && s1_ < nseg) {\n");
        if (j == 0) bputs(b, "                cuk_sr_own(scratch, ntiles_)[t_] = s1_;\n");
        bprintf(b, "                *cuk_sr_rec<%s>(scratch, ntiles_, %d, 1, t_) = r_;\n", A, j);
        bputs(b, "            }");
        if (j == 0) bputs(b, " else {\n                cuk_sr_own(scratch, ntiles_)[t_] = -1;\n            }");
        bputs(b, "\n            (void)acc");
        bprintf(b, "%d; (void)has%d;\n        }\n    }\n", j, j);
    }
    bputs(b, "}\n\n");

    /* the prepass */
    entry_open(ke, "_sp");
    segred_words(ke, TILE);
    for (int j = 0; j < k->nreds; j++) declare_accs_one(ke, types[j], j, 1);
    bputs(b, "    const long long m_ = (nseg > ntiles_ ? nseg : ntiles_) + 1;\n"
             "    for (long long s_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; s_ < m_;\n"
             "         s_ += (long long)gridDim.x * blockDim.x) {\n"
             "        if (s_ <= nseg) {\n"
             "            const long long o_ = offs_[s_];\n"
             "            long long key_ = -1;\n"
             "            if (s_ == 0 && o_ != 0) key_ = 0;\n"
             "            else if (s_ > 0 && o_ < offs_[s_ - 1]) key_ = s_;\n"
             "            else if (s_ == nseg && o_ != n) key_ = (1LL << 62) + nseg;\n");
    bprintf(b, "            if (key_ >= 0) cuk_sr_err(err_, %lldull, key_);\n", ID1);
    bputs(b, "            if (s_ < nseg && offs_[s_ + 1] == o_) {\n");
    for (int j = 0; j < k->nreds; j++) seg_write(ke, j, "s_", 4);
    bputs(b, "            }\n        }\n");
    bprintf(b, "        if (s_ < ntiles_) {\n"
               "            const long long key_ = s_ * %dLL;\n"
               "            long long g_ = (long long)((double)key_ / (double)n * (double)nseg);\n"
               "            g_ = g_ < 0 ? 0 : g_ > nseg ? nseg : g_;\n"
               "            cuk_sr_sot(scratch)[s_] = cuk_sr_clamp(cuk_upper_bound_near(offs_, nseg + 1, key_, g_) - 1, nseg);\n"
               "        } else if (s_ == ntiles_) {\n"
               "            cuk_sr_sot(scratch)[s_] = nseg;\n"
               "        }\n",
            TILE);
    bputs(b, "    }\n}\n\n");

    /* the fix-up */
    entry_open(ke, "_sf");
    segred_words(ke, TILE);
    bprintf(b, "    if (blockIdx.x == 0 && threadIdx.x == 0 && err_[0] == %lldull && err_[3] != 0ull) {\n", ID1);
    bputs(b, "        const long long key_ = 0x7fffffffffffffffLL - (long long)err_[3];\n"
             "        if (key_ == 0) err_[1] = (unsigned long long)offs_[0];\n"
             "        else if (key_ <= nseg) { err_[1] = (unsigned long long)offs_[key_]; err_[2] = (unsigned long long)offs_[key_ - 1]; }\n"
             "        else { err_[1] = (unsigned long long)offs_[nseg]; err_[2] = (unsigned long long)n; }\n"
             "    }\n"
             "    if (nseg == 0) return;\n"
             "    const int lane_ = threadIdx.x & 31;\n"
             "    /* a thread per tile: the segment it owns, folded by the thread where it spans at\n"
             "       most 16 tiles, else by the warp (lanes take consecutive runs of tiles) */\n"
             "    for (long long w_ = (long long)blockIdx.x * blockDim.x; w_ < ntiles_; w_ += (long long)gridDim.x * blockDim.x) {\n"
             "        const long long t_ = w_ + threadIdx.x;\n"
             "        long long so_ = t_ < ntiles_ ? cuk_sr_own(scratch, ntiles_)[t_] : -1, te_ = t_;\n"
             "        if (so_ >= nseg) so_ = -1;\n"
             "        if (so_ >= 0) {\n");
    bprintf(b, "            te_ = (offs_[so_ + 1] - 1) / %d;\n", TILE);
    bputs(b, "            te_ = te_ >= ntiles_ ? ntiles_ - 1 : te_ < t_ ? t_ : te_;\n"
             "        }\n"
             "        if (so_ >= 0 && te_ - t_ <= 16) {\n");
    for (int j = 0; j < k->nreds; j++) {
        const char *A = acc_type(ke->e, k->reds[j]);
        bputs(b, "            {\n");
        declare_accs_one(ke, types[j], j, 4);
        bprintf(b, "                const cuk_opt<%s> r0_ = *cuk_sr_rec<%s>(scratch, ntiles_, %d, 1, t_);\n", A, A, j);
        bprintf(b, "                if (r0_.h) cuk_fold(acc%d, has%d, r0_.v, op%d);\n", j, j, j);
        fold_first_runs(ke, j, "t_ + 1", "te_ + 1");
        seg_write(ke, j, "so_", 4);
        bputs(b, "            }\n");
    }
    bputs(b, "        }\n"
             "        unsigned int ob_ = __ballot_sync(0xffffffffu, so_ >= 0 && te_ - t_ > 16);\n"
             "        while (ob_) {\n"
             "            const int l_ = __ffs(ob_) - 1;\n"
             "            ob_ &= ob_ - 1;\n"
             "            const long long tl_ = __shfl_sync(0xffffffffu, t_, l_), s_ = __shfl_sync(0xffffffffu, so_, l_);\n"
             "            const long long tel_ = __shfl_sync(0xffffffffu, te_, l_);\n"
             "            const long long per_ = (tel_ - tl_ + 31) / 32, u0_ = tl_ + 1 + lane_ * per_;\n"
             "            const long long u1_ = u0_ + per_ <= tel_ + 1 ? u0_ + per_ : tel_ + 1;\n");
    for (int j = 0; j < k->nreds; j++) {
        const char *A = acc_type(ke->e, k->reds[j]);
        bputs(b, "            {\n");
        declare_accs_one(ke, types[j], j, 4);
        fold_first_runs(ke, j, "u0_", "u1_");
        bprintf(b, "                cuk_warp_reduce(acc%d, has%d, op%d);\n", j, j, j);
        bputs(b, "                if (lane_ == 0) {\n");
        bprintf(b, "                    const cuk_opt<%s> r_ = *cuk_sr_rec<%s>(scratch, ntiles_, %d, 1, tl_);\n", A, A, j);
        bprintf(b, "                    if (r_.h) { acc%d = has%d ? op%d(r_.v, acc%d) : r_.v; has%d = 1; }\n", j, j, j, j, j);
        seg_write(ke, j, "s_", 5);
        bputs(b, "                }\n            }\n");
    }
    bputs(b, "        }\n    }\n}\n\n");
}

/* The parts of a split axis reduction in scratch, after a ticket per tile: reduction j's
   record of part q for output o at recs_ + (off_j + q * cols_ + o) * bytes_j, bytes_j =
   axis_rec_bytes (the value alone where the fold has an identity: every part of a
   split axis has elements, kernel_geometry splits only axes of AXIS_MIN_PART or more;
   else the value and its has flag). */
static const char *axis_rec(KE *ke, int j, const char *part) {
    const Kernel *k = ke->k;
    Buf off = {.a = ke->e->a};
    bputs(&off, "0");
    for (int q = 0; q < j; q++) bprintf(&off, " + S_ * cols_ * %d", axis_rec_bytes(k->reds[q]));
    return arena_printf(ke->e->a, "(recs_ + %s + ((%s) * cols_ + o) * %d)", off.s, part, axis_rec_bytes(k->reds[j]));
}

static void axis_rec_write(KE *ke, int d) {
    for (int j = 0; j < ke->k->nreds; j++) {
        Val *r = ke->k->reds[j];
        ind(ke->b, d);
        if (axis_rec_bytes(r) == 24)
            bprintf(ke->b, "{ char *r_ = %s; *(%s *)r_ = acc%d; *(long long *)(r_ + 16) = has%d; }\n", axis_rec(ke, j, "s_"),
                    acc_type(ke->e, r), j, j);
        else
            bprintf(ke->b, "*(%s *)%s = acc%d;\n", acc_type(ke->e, r), axis_rec(ke, j, "s_"), j);
    }
}

static void axis_rec_fold(KE *ke, int d) {
    for (int j = 0; j < ke->k->nreds; j++) {
        Val *r = ke->k->reds[j];
        const char *A = acc_type(ke->e, r);
        ind(ke->b, d);
        if (axis_rec_bytes(r) == 24)
            bprintf(ke->b,
                    "{ const char *r_ = %s; if (*(const volatile long long *)(r_ + 16)) { %s x_; "
                    "x_ = *(const %s *)r_; cuk_fold(acc%d, has%d, x_, op%d); } }\n",
                    axis_rec(ke, j, "q_"), A, A, j, j, j);
        else
            bprintf(ke->b, "acc%d = op%d(acc%d, *(const volatile %s *)%s); has%d = 1;\n", j, j, j, A,
                    axis_rec(ke, j, "q_"), j);
    }
}

/* The reduction inputs of element i (the kernel's iteration index), computed in a fresh
   scope; flatc: the launch is flat (every leaf laid out like the iteration space), so
   leaves are read at i with no multi-index. */
static void axis_eval(KE *ke, Val **ins, bool flatc, int d) {
    reset_scope(ke);
    ke->flatc = flatc;
    emit_eval_at(ke, ins, ke->k->nreds, d, !flatc);
    ke->flatc = false;
}

/* ... staged into xv<j>[u_]. */
static void axis_stage(KE *ke, Val **ins, bool flatc, int d) {
    const Kernel *k = ke->k;
    axis_eval(ke, ins, flatc, d);
    for (int j = 0; j < k->nreds; j++) {
        char x[128];
        ref(ke, ins[j], x, sizeof x);
        ind(ke->b, d);
        bprintf(ke->b, "xv%d[u_] = %s;\n", j, x);
    }
}

static void axis_fold_staged(KE *ke, const char *pos, int d) {
    for (int j = 0; j < ke->k->nreds; j++)
        fold_val(ke, ke->k->reds[j], j, arena_printf(ke->e->a, "xv%d[u_]", j), pos, d);
}

/* Every reduction's result o from acc<j>/has<j>. */
static void axis_results(KE *ke, int d) {
    for (int j = 0; j < ke->k->nreds; j++) {
        Val *r = ke->k->reds[j];
        finish_value(ke, r, j, arena_printf(ke->e->a, "((%s *)p.w[%d])[o]", ctype(r->dt), W(ke, KP_OUT, r, 0, 0)), d);
    }
}

/* Builtin reductions along an axis, the input viewed as [outer, len, inner] (each of
   a statement's sibling reductions folded in the same pass). Two forms, chosen at run
   time by inner, with the geometry kernel_geometry gives:
   - inner == 1, rows: a group of cuk_red_group(len) threads per row (1, 8 or 32 lanes,
     or the block for rows of 1024 and more), each thread folding every G-th 16-byte
     vector of the row (4 in flight) when the launch is flat and the row length a
     multiple of the vector, else every G-th element; the group combines by shuffles
     (the block by cuk_block_reduce) and its first thread writes the row's result.
   - inner > 1, columns: a thread per output (consecutive threads, consecutive kept
     elements: each load instruction coalesced), folding its column down the reduced
     axis with 8 loads in flight. When the outputs alone give too few blocks
     (kernel_geometry), the axis is split into S parts (gridDim.x = tiles x S): each
     block writes its partial to scratch, and the last of a tile's S blocks to finish
     (a ticket per tile) folds the parts in order, so results repeat bit for bit. */
static void emit_axis_reduce(KE *ke, const char **types, Val **ins) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    bprintf(b, "    char *scratch = (char *)p.w[%d];\n    (void)scratch;\n", W(ke, KP_SCRATCH, NULL, 0, 0));
    /* rows */
    bputs(b, "    if (inner == 1) {\n"
             "        const int G_ = cuk_red_group(len, blockDim.x), lane_ = threadIdx.x & (G_ - 1);\n"
             "        const long long rpb_ = blockDim.x / G_;\n"
             "        for (long long rb_ = (long long)blockIdx.x * rpb_; rb_ < outer; rb_ += (long long)gridDim.x * rpb_) {\n"
             "            const long long o = rb_ + threadIdx.x / G_;\n");
    declare_accs(ke, types, 3);
    bputs(b, "            if (o < outer) {\n");
    reset_scope(ke);
    Leaves L = leaves_new(ke);
    collect_leaves(ke, ins, k->nreds, &L);
    int V = vec_width(&L, NULL, 0);
    const int U = 4;
    bprintf(b, "                if ((%s) && len %% %d == 0) {\n", vec_cond(ke, &L, NULL, 0), V);
    bprintf(b, "                    const long long nv_ = len / %d, rv_ = o * nv_;\n", V);
    bputs(b, "                    long long q = lane_;\n");
    declare_leaf_regs(ke, &L, V, U, 5);
    emit_vec_loop(ke, &L, V, U, "G_", "nv_", arena_printf(ke->e->a, "(rv_ + %%s) * %d", V),
                  arena_printf(ke->e->a, "const long long i = (o * len + %%s * %d) | e_, t = i - o * len;", V), ins, k->nreds,
                  each_fold_at_t, (void *)k, 5);
    for (int fl = 1; fl >= 0; fl--) {
        bputs(b, fl ? "                } else if (flat) {\n" : "                } else {\n");
        bputs(b, "                    for (long long t = lane_; t < len; t += G_) {\n"
                 "                        const long long i = o * len + t;\n");
        axis_eval(ke, ins, fl, 6);
        for (int j = 0; j < k->nreds; j++) fold_expr(ke, k->reds[j], j, "t", 6);
        bputs(b, "                    }\n");
    }
    bputs(b, "                }\n            }\n");
    for (int j = 0; j < k->nreds; j++) {
        Val *r = k->reds[j];
        bprintf(b, "            if (G_ == (int)blockDim.x) cuk_block_reduce(acc%d, has%d, op%d);\n"
                   "            else cuk_group_reduce(acc%d, has%d, op%d, G_);\n", j, j, j, j, j, j);
        bputs(b, "            if (lane_ == 0 && o < outer) {\n");
        finish_value(ke, r, j, arena_printf(ke->e->a, "((%s *)p.w[%d])[o]", ctype(r->dt), W(ke, KP_OUT, r, 0, 0)), 4);
        bputs(b, "            }\n");
    }
    bputs(b, "            if (G_ == (int)blockDim.x) __syncthreads();\n        }\n        return;\n    }\n");
    /* columns */
    bputs(b, "    const long long cols_ = outer * inner, ntile_ = (cols_ + blockDim.x - 1) / blockDim.x;\n"
             "    const long long S_ = ntile_ > 0 && gridDim.x > ntile_ ? gridDim.x / ntile_ : 1;\n"
             "    const long long s_ = S_ > 1 ? blockIdx.x / ntile_ : 0, chunk_ = (len + S_ - 1) / S_;\n"
             "    const long long t0_ = s_ * chunk_, t1_ = t0_ + chunk_ < len ? t0_ + chunk_ : len;\n"
             "    for (long long tile_ = S_ > 1 ? blockIdx.x % ntile_ : blockIdx.x; tile_ < ntile_;"
             " tile_ += S_ > 1 ? ntile_ : gridDim.x) {\n"
             "        const long long o = tile_ * blockDim.x + threadIdx.x;\n");
    declare_accs(ke, types, 2);
    bputs(b, "        if (o < cols_) {\n"
             "            const long long oo_ = o / inner, base_ = oo_ * len * inner + (o - oo_ * inner);\n");
    for (int j = 0; j < k->nreds; j++)
        bprintf(b, "            %s xv%d[8];\n", ctype(ins[j]->dt), j);
    bputs(b, "            long long t0 = t0_;\n");
    for (int fl = 1; fl >= 0; fl--) {
        bputs(b, fl ? "            if (flat) {\n" : "            } else {\n");
        bputs(b, "            for (; t0 + 7 < t1_; t0 += 8) {\n"
                 "#pragma unroll\n                for (int u_ = 0; u_ < 8; u_++) {\n"
                 "                    const long long i = base_ + (t0 + u_) * inner;\n");
        axis_stage(ke, ins, fl, 5);
        bputs(b, "                }\n"
                 "#pragma unroll\n                for (int u_ = 0; u_ < 8; u_++) {\n");
        axis_fold_staged(ke, "t0 + u_", 5);
        bputs(b, "                }\n            }\n"
                 "            for (; t0 < t1_; t0++) {\n"
                 "                const int u_ = 0;\n"
                 "                const long long i = base_ + t0 * inner;\n");
        axis_stage(ke, ins, fl, 4);
        axis_fold_staged(ke, "t0", 4);
        bputs(b, "            }\n");
    }
    bputs(b, "            }\n        }\n");
    /* one part: the result; else the part to scratch and the tile's last block folds */
    bputs(b, "        if (S_ == 1) {\n            if (o < cols_) {\n");
    axis_results(ke, 4);
    bputs(b, "            }\n            continue;\n        }\n"
             "        char *recs_ = scratch + ((ntile_ * 4 + 15) & ~15LL);\n"
             "        if (o < cols_) {\n");
    axis_rec_write(ke, 3);
    bputs(b, "        }\n"
             "        if (!cuk_last_arrival((unsigned int *)scratch + tile_, (unsigned)S_)) continue;\n"
             "        if (o < cols_) {\n");
    for (int j = 0; j < k->nreds; j++) seg_reset(ke, j, 3);
    bputs(b, "            for (long long q_ = 0; q_ < S_; q_++) {\n");
    axis_rec_fold(ke, 4);
    bputs(b, "            }\n");
    axis_results(ke, 3);
    bputs(b, "        }\n"
             "        if (threadIdx.x == 0) ((unsigned int *)scratch)[tile_] = 0;\n"
             "    }\n}\n\n");
}

static void emit_reduce(KE *ke) {
    const Kernel *k = ke->k;
    const char **types = NEWN(ke->e->a, const char *, k->nreds);
    for (int j = 0; j < k->nreds; j++) types[j] = emit_combine(ke->e, k->reds[j]);
    header(ke);
    Buf *b = ke->b;
    bool ordered = any_lambda(k);
    Val **ins = NEWN(ke->e->a, Val *, k->nreds);
    for (int j = 0; j < k->nreds; j++) ins[j] = k->reds[j]->args[0];
    Val *segs = red_segs(k->reds[0]);
    if (segs) {
        emit_segred(ke, types);
        return;
    }
    if (k->axis == AXIS_ALL || k->rank <= 1) {
        bprintf(b, "    char *scratch = (char *)p.w[%d];\n", W(ke, KP_SCRATCH, NULL, 0, 0));
        declare_accs(ke, types, 1);
        const char *lo0 = "0";
        if (!ordered) {
            /* Fast path: the vector-aligned part in per-block contiguous chunks, each
               thread with UNROLL 16-byte vectors in flight per input; the rest (a tail
               under one vector, or everything when not flat) one element at a time. */
            int V = emit_vector_chunks(ke, ins, k->nreds, each_fold, (void *)k);
            lo0 = arena_printf(ke->e->a, "nvec * %d", V);
        }
        bprintf(b, "    const long long rs_ = %s;\n", lo0);
        bputs(b, "    const long long chunk = (n - rs_ + gridDim.x - 1) / gridDim.x;\n"
                 "    const long long lo = rs_ + (long long)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;\n");
        block_loop(ke, ordered, "i", "lo", "hi", 1);
        reset_scope(ke);
        emit_eval(ke, ins, k->nreds, 2);
        for (int j = 0; j < k->nreds; j++) fold_expr(ke, k->reds[j], j, "i", 2);
        bputs(b, "    }}\n");
        /* block partials, then the last block folds them in block order */
        for (int j = 0; j < k->nreds; j++) {
            bprintf(b, "    cuk_block_reduce(acc%d, has%d, op%d);\n", j, j, j);
            bprintf(b,
                    "    if (threadIdx.x == 0) { char *rec = scratch + 16 + ((long long)%d * gridDim.x + blockIdx.x) * 24;"
                    " *(%s *)rec = acc%d; *(long long *)(rec + 16) = has%d; }\n",
                    j, acc_type(ke->e, k->reds[j]), j, j);
        }
        bputs(b, "    if (!cuk_last_block((unsigned int *)scratch)) return;\n");
        for (int j = 0; j < k->nreds; j++) {
            Val *r = k->reds[j];
            const char *A = acc_type(ke->e, r);
            bprintf(b, "    has%d = 0;\n", j);
            block_loop(ke, ordered, "q", "0", "gridDim.x", 1);
            bprintf(b,
                    "        const volatile char *rec = scratch + 16 + ((long long)%d * gridDim.x + q) * 24;\n"
                    "        if (*(const volatile long long *)(rec + 16)) { %s x_; x_ = *(const %s *)(const char *)rec;"
                    " cuk_fold(acc%d, has%d, x_, op%d); }\n    }}\n",
                    j, A, A, j, j, j);
            bprintf(b, "    cuk_block_reduce(acc%d, has%d, op%d);\n", j, j, j);
            bputs(b, "    if (threadIdx.x == 0) {\n");
            finish_value(ke, r, j, arena_printf(ke->e->a, "((%s *)p.w[%d])[0]", ctype(r->dt), W(ke, KP_OUT, r, 0, 0)), 2);
            bputs(b, "    }\n");
        }
        bputs(b, "    if (threadIdx.x == 0) *(unsigned int *)scratch = 0;\n}\n\n");
        return;
    }
    int wo = W(ke, KP_OUTER, NULL, 0, 0), wl = W(ke, KP_LEN, NULL, 0, 0), wi = W(ke, KP_INNER, NULL, 0, 0);
    bprintf(b, "    const long long outer = p.w[%d], len = p.w[%d], inner = p.w[%d];\n", wo, wl, wi);
    if (!ordered) {
        emit_axis_reduce(ke, types, ins);
        return;
    }
    /* a lambda along an axis: one block per output element, the axis split among its
       threads in order */
    bputs(b, "    for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {\n"
             "        const long long oo = o / inner, ii = o % inner;\n");
    declare_accs(ke, types, 2);
    block_loop(ke, ordered, "t", "0", "len", 2);
    bputs(b, "            const long long i = (oo * len + t) * inner + ii;\n");
    reset_scope(ke);
    emit_eval(ke, ins, k->nreds, 3);
    for (int j = 0; j < k->nreds; j++) fold_expr(ke, k->reds[j], j, "t", 3);
    emit_line_results(ke);
}

/* A row reduction r divides some element of the kernel (softmax's e / sum(e)): the
   division becomes a multiply by the row's reciprocal, computed once per row. That
   can differ from e / s by an ulp (the CPU backend divides; the GPU tests compare
   floats with a tolerance), and it keeps IEEE division's slow path out of the
   per-element loop (softmax: 0.96x -> 1.07x torch.softmax together with the
   one-barrier reductions, docs/performance.md run 3). */
static bool row_divisor(const Kernel *k, const Val *r) {
    if (k->kind != K_ROW || !dtype_info[r->dt].is_float) return false;
    bool red = false;
    for (int j = 0; j < k->nreds; j++) red = red || k->reds[j] == r;
    if (!red) return false;
    for (int i = 0; i < k->nvals; i++) {
        const Val *v = k->vals[i];
        if (v->op == OP_DIV && v->args[1] == r && v->args[0]->dt == r->dt && v->dt == r->dt) return true;
    }
    return false;
}

/* The row pairs (kernel_row_online, kernel_row_centred), unless CUK_ROW_ONLINE=0 (A/B
   runs, docs/gpu.md) */
static bool row_pairs_on(void) {
    const char *e = getenv("CUK_ROW_ONLINE");
    return !(e && !strcmp(e, "0"));
}
static bool row_pair(const Kernel *k, int j) { return row_pairs_on() && kernel_row_online(k, j); }
static Val *row_centred(const Kernel *k, int j) { return row_pairs_on() ? kernel_row_centred(k, j) : NULL; }

/* The in-row value of reduction j, broadcast from shared memory (and its reciprocal). */
static void row_red_value(KE *ke, Val *r, int j, const char *src) {
    const char *T = ctype(r->dt);
    bprintf(ke->b, "        const %s v%d = %s%d;\n", T, r->id, src, j);
    if (row_divisor(ke->k, r)) bprintf(ke->b, "        const %s rcp%d = (%s)1 / v%d;\n", T, r->id, T, r->id);
}

/* Every thread's value of reduction j from its accumulator (after the exchange). */
static void row_own_value(KE *ke, int j) {
    Val *r = ke->k->reds[j];
    bprintf(ke->b, "        %s rv%d;\n", ctype(r->dt), j);
    finish_value(ke, r, j, arena_printf(ke->e->a, "rv%d", j), 2);
    row_red_value(ke, r, j, "rv");
}

/* A per-row kernel's outputs (Kernel.row_out), from the row's reductions (every thread
   has their values): the thread `writer` says writes element `row`. */
static void emit_row_outputs(KE *ke, const char *row, const char *writer, int d) {
    const Kernel *k = ke->k;
    reset_scope(ke);
    for (int q = 0; q < k->nreds; q++) ke->done[k->reds[q]->id] = true;
    ind(ke->b, d);
    bprintf(ke->b, "if (%s) {\n", writer);
    emit_eval_at(ke, k->outs, k->nouts, d + 1, false);
    for (int j = 0; j < k->nouts; j++) store(ke, k->outs[j], row, d + 1);
    ind(ke->b, d);
    bputs(ke->b, "}\n");
}

/* Rows longer than a block holds, when the launch is flat and aligned: each phase reads
   the row again (the block's row is likely still in L2), the block's threads striding
   over its 16-byte vectors with 4 in flight; then the outputs. */
static void emit_row_long_vec(KE *ke, const char **types, int V) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    const int U = 4;
    bprintf(b, "    const long long nv_ = len / %d;\n", V);
    bputs(b, "    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n"
             "        const long long rb = row * len;\n");
    int nmo = k->row_out ? 0 : k->nouts;
    for (int j = 0; j <= k->nreds; j++) {
        if (j == k->nreds && !nmo) break;
        Val **tg = j < k->nreds ? &k->reds[j]->args[0] : k->outs;
        int ntg = j < k->nreds ? 1 : nmo;
        if (j < k->nreds) declare_accs_one(ke, types[j], j, 2);
        /* an online pair (row_online): the max's pass is the sum's; the thread's
           (max, sum) runs over the chunks, rescaled when a chunk raises the max */
        if (row_pair(k, j + 1)) continue;
        bool psum = row_pair(k, j);
        Val *mx = psum ? k->reds[j - 1] : NULL, *pt[2];
        const char *T = psum ? ctype(mx->dt) : NULL;
        if (psum) pt[0] = mx->args[0], pt[1] = k->reds[j]->args[0], tg = pt, ntg = 2;
        reset_scope(ke);
        for (int q = 0; q < j && q < k->nreds; q++) ke->done[k->reds[q]->id] = true;
        Leaves L = leaves_new(ke);
        collect_leaves(ke, tg, ntg, &L);
        if (psum) tg = &k->reds[j]->args[0], ntg = 1;
        bputs(b, "        {\n");
        declare_leaf_regs(ke, &L, V, U, 3);
        bputs(b, "        long long q = threadIdx.x;\n");
        for (int tail = 0; tail < 2; tail++) {
            int u = tail ? 1 : U;
            if (tail) bputs(b, "        for (; q < nv_; q += blockDim.x) {\n");
            else bprintf(b, "        for (; q + %d * (long long)blockDim.x < nv_; q += %d * (long long)blockDim.x) {\n", U - 1, U);
            bprintf(b, "#pragma unroll\n            for (int u_ = 0; u_ < %d; u_++) {\n", u);
            load_leaf_regs(ke, &L, V, "[u_]", arena_printf(ke->e->a, "rb + (q + u_ * (long long)blockDim.x) * %d", V), 4);
            bputs(b, "            }\n");
            if (psum) {
                bprintf(b, "            %s cm_ = (%s)(%s);\n", T, T, fold_identity(mx));
                bprintf(b, "#pragma unroll\n            for (int u_ = 0; u_ < %d; u_++) {\n", u);
                bprintf(b, "#pragma unroll\n                for (int e_ = 0; e_ < %d; e_++) {\n", V);
                bprintf(b, "                    const long long i = (rb + (q + u_ * (long long)blockDim.x) * %d) | e_, c = i - rb;\n", V);
                bputs(b, "                    (void)i; (void)c;\n");
                ke->leaf_sel = "[u_].x[e_]";
                ke->flatc = true;
                reset_scope(ke);
                for (int q = 0; q < j - 1; q++) ke->done[k->reds[q]->id] = true;
                emit_eval_at(ke, &mx->args[0], 1, 5, false);
                char x[128];
                ref(ke, mx->args[0], x, sizeof x);
                bprintf(b, "                    cm_ = op%d(cm_, (%s)(%s));\n                }\n            }\n", j - 1, T, x);
                bprintf(b, "            {\n                cuk_ms<%s> t_; t_.m = acc%d; t_.s = acc%d;\n"
                           "                cuk_ms_rescale<%s, %s>(t_, cm_);\n                acc%d = t_.m; acc%d = t_.s;\n"
                           "            }\n            const %s v%d = acc%d;\n",
                        T, j - 1, j, T, types[j - 1], j - 1, j, T, mx->id, j - 1);
            }
            bprintf(b, "#pragma unroll\n            for (int u_ = 0; u_ < %d; u_++) {\n", u);
            if (j == k->nreds)
                for (int o = 0; o < nmo; o++) bprintf(b, "                cuk_vec<%s, %d> S%d;\n", ctype(k->outs[o]->dt), V, o);
            bprintf(b, "#pragma unroll\n                for (int e_ = 0; e_ < %d; e_++) {\n", V);
            bprintf(b, "                    const long long i = (rb + (q + u_ * (long long)blockDim.x) * %d) | e_, c = i - rb;\n", V);
            ke->leaf_sel = "[u_].x[e_]";
            ke->flatc = true;
            reset_scope(ke);
            for (int q = 0; q < j && q < k->nreds; q++) ke->done[k->reds[q]->id] = true;
            emit_eval_at(ke, tg, ntg, 5, false);
            if (j < k->nreds) {
                fold_expr(ke, k->reds[j], j, "c", 5);
            } else {
                for (int o = 0; o < nmo; o++) {
                    char rr[128];
                    ref(ke, k->outs[o], rr, sizeof rr);
                    bprintf(b, "                    S%d.x[e_] = %s;\n", o, rr);
                }
            }
            ke->leaf_sel = NULL;
            ke->flatc = false;
            bputs(b, "                }\n");
            if (j == k->nreds)
                for (int o = 0; o < nmo; o++)
                    bprintf(b, "                cuk_stv<%s, %d>((void *)p.w[%d], rb + (q + u_ * (long long)blockDim.x) * %d, S%d);\n",
                            ctype(k->outs[o]->dt), V, W(ke, KP_OUT, k->outs[o], 0, 0), V, o);
            bputs(b, "            }\n        }\n");
        }
        bputs(b, "        }\n");
        if (j < k->nreds) {
            /* thread 0 gets the row's value (the pair's two), then every thread */
            int q0 = psum ? j - 1 : j;
            if (psum) {
                /* named by the pair: a row kernel may have several (softmax of a softmax) */
                bprintf(b, "        cuk_ms<%s> ms%d_; ms%d_.m = acc%d; ms%d_.s = acc%d; int hms%d_ = 1;\n", T, j, j,
                        j - 1, j, j, j);
                bprintf(b, "        cuk_block_reduce(ms%d_, hms%d_, cuk_ms_op<%s, %s>());\n", j, j, T, types[j - 1]);
                bprintf(b, "        if (threadIdx.x == 0) {\n            acc%d = ms%d_.m; acc%d = ms%d_.s;\n", j - 1, j, j,
                        j);
            } else {
                bprintf(b, "        cuk_block_reduce(acc%d, has%d, op%d);\n", j, j, j);
                bputs(b, "        if (threadIdx.x == 0) {\n");
            }
            for (int q = q0; q <= j; q++) finish_value(ke, k->reds[q], q, arena_printf(ke->e->a, "sh%d", q), 3);
            bputs(b, "        }\n        __syncthreads();\n");
            for (int q = q0; q <= j; q++) row_red_value(ke, k->reds[q], q, "sh");
        }
    }
    if (k->row_out) emit_row_outputs(ke, "row", "threadIdx.x == 0", 2);
    bputs(b, "        __syncthreads();\n    }\n");
}

/* Rule 5: one block per row. Rows of up to blockDim.x * ITEMS elements are read once
   into registers (16-byte vectors, striped over the threads so each load instruction
   is coalesced), every in-row reduction is a phase over the registers, its value
   broadcast through shared memory, and the map is computed and stored from them: one
   read and one write of the row. Longer rows, and lambda reductions (which need
   element order inside each thread), re-read the row in each phase. */
static void emit_row_entry(KE *ke, const char **types, int e);

/* The row kernel's four entries: <name> takes rows of more than half a block's worth
   up to a block's (a row to the block), <name>_gr shorter ones (blockDim.x / T_ rows at
   a time), <name>_cl longer ones that a thread-block cluster holds and <name>_lg the
   rest (each phase reads the row again, 16-byte vectors); the GPU executor picks by the
   row length (kernel_row_launch). Apart, because one body
   with all of them spilled more registers on the whole-block path (layer norm over
   16384 x 16384 on an H100: 87% of copy before, 73-76% with them). Each entry is
   correct for any row: the others' cases take the per-element copies. */
static void emit_row(KE *ke) {
    const Kernel *k = ke->k;
    const char **types = NEWN(ke->e->a, const char *, k->nreds);
    for (int j = 0; j < k->nreds; j++) types[j] = emit_combine(ke->e, k->reds[j]);
    header(ke);
    emit_row_entry(ke, types, KE_MAIN);
    if (!any_lambda(k))
        for (int e = KE_GR; e <= KE_CL; e++) {
            entry_open(ke, kernel_entry_suffix[e]);
            emit_row_entry(ke, types, e);
        }
}

/* The body of entry e (KE_MAIN, KE_GR, KE_LG or KE_CL) of a row kernel. */
static void emit_row_entry(KE *ke, const char **types, int e) {
    const Kernel *k = ke->k;
    Buf *b = ke->b;
    bool ordered = any_lambda(k);
    /* KE_CL: the main entry's code over a thread-block cluster (launched
       with kernel_row_cluster blocks of ROW_CLUSTER_BLOCK threads a cluster): a row to
       the cluster, block r of it
       holding the r-th stretch of block x items elements in registers (constant offsets
       from one base: a stride of csize_ blocks spilled the addresses), the reductions
       combined across the cluster through distributed shared memory (kernels/reduce.cuh
       cuk_cluster_allreduce), so that rows of up to csize_ x block x items elements are
       still read once */
    bool cl = e == KE_CL, gr = e == KE_GR, lg = e == KE_LG;
    int wl = W(ke, KP_LEN, NULL, 0, 0), wo = W(ke, KP_OUTER, NULL, 0, 0);
    /* the rows from their own word: with rows of length 0 (n is 0) a row kernel that ends
       in a reduction over the rows still writes each row's empty value */
    bprintf(b, "    const long long len = p.w[%d], rows = p.w[%d];\n", wl, wo);
    for (int j = 0; j < k->nreds; j++) bprintf(b, "    __shared__ %s sh%d;\n", ctype(k->reds[j]->dt), j);
    if (!ordered) {
        reset_scope(ke);
        Leaves L = leaves_new(ke);
        Val **tg = NEWN(ke->e->a, Val *, k->nreds + k->nouts);
        int nt = 0, nmo = k->row_out ? 0 : k->nouts; /* outputs over the rows' shape */
        for (int j = 0; j < k->nreds; j++) tg[nt++] = k->reds[j]->args[0];
        for (int j = 0; j < nmo; j++) tg[nt++] = k->outs[j];
        collect_leaves(ke, tg, nt, &L);
        int V = vec_width(&L, k->outs, nmo);
        int items = k->items; /* kernel_launch_shape: a row of up to block x items in registers */
        if (items < V) items = V;
        int R = items / V;
        bprintf(b, "    const int vfast = (%s) && len %% %d == 0;\n", vec_cond(ke, &L, k->outs, nmo), V);
        if (cl) bputs(b, "    const unsigned crank_ = cuk_cluster_rank(), csize_ = cuk_cluster_size();\n");
        bprintf(b, "    if (len <= (long long)blockDim.x * %d%s) {\n", lg ? 0 : items, cl ? " * csize_" : "");
        /* the row fits an int here: 32-bit bounds tests (64-bit ones kept a sign-extended
           pair a vector live across the row loop, and spilled: softmax over 16384 x 16384
           reloaded them from local memory before each row's loads) */
        bputs(b, "    const int ilen_ = (int)len;\n");
        /* T_ threads a row (a power of two from a warp to the block, the fewest that hold
           the row), blockDim.x / T_ rows at a time: short rows keep every thread busy */
        bprintf(b, "    int T_ = 32;\n    while (T_ < (int)blockDim.x && (long long)T_ * %d < len) T_ <<= 1;\n", items);
        bputs(b, "    const int l_ = (int)threadIdx.x & (T_ - 1), G_ = (int)blockDim.x / T_, g_ = (int)threadIdx.x / T_;\n");
        /* Copies of the row loop: `fast` (flat, aligned, whole vectors: flat is known,
           one bounds test per vector) with the thread count a row a constant, then with
           any T_, and the general one (per element). The main and cluster entries take a
           row to the whole block (the thread counts constants: a runtime T_ there cost
           registers, 98% -> 78% of copy for logsumexp over 16384 x 16384 on an H100); the
           short-row entry one fast copy for each T_ from a warp to 256 threads (with a
           runtime T_, layer norm over 65536 x 4096 spilled and ran at 77%). */
        int nsp = 0, spv[8], spt[8];
        int bk = cl ? ROW_CLUSTER_BLOCK : k->block; /* the block it is launched with */
        if (gr) {
            /* kernel_row_entry: T_ <= block / 2 here; a runtime-T_ copy only for T_ past 256 */
            for (int t = 32; t <= 256 && t <= k->block / 2; t <<= 1) spv[nsp] = 1, spt[nsp++] = t;
            if (k->block / 2 > 256) spv[nsp] = 1, spt[nsp++] = 0;
        } else if (!lg) {
            spv[nsp] = 2, spt[nsp++] = bk;
        }
        spv[nsp] = 0, spt[nsp++] = gr ? 0 : bk;
        for (int sp = 0; sp < nsp; sp++) {
            int variant = spv[sp], tc = spt[sp]; /* tc: T_ as a constant (0: runtime) */
            int fast = variant > 0;
            bool cst = !gr; /* a row to the block */
            const char *TT = tc ? arena_printf(ke->e->a, "%d", tc) : "T_";
            const char *LL = cst ? "(int)threadIdx.x" : tc ? arena_printf(ke->e->a, "((int)threadIdx.x & %d)", tc - 1) : "l_";
            bool first = sp == 0;
            const char *cond = fast && tc ? arena_printf(ke->e->a, "(vfast && T_ == %d)", tc) : fast ? "(vfast)" : "(true)";
            bprintf(b, "    %s%s {\n", first ? "if " : fast ? "else if " : "else", fast || first ? cond : "");
            const char *C0 = cl ? arena_printf(ke->e->a, "(int)crank_ * %d + (r_ * %s + %s) * %d", bk * items, TT, LL, V)
                                : arena_printf(ke->e->a, "(r_ * %s + %s) * %d", TT, LL, V);
            bprintf(b, "    int par_ = 0;\n"
                       "    for (long long rg_ = (long long)%s * %s; rg_ < rows; rg_ += (long long)%s * %s) {\n"
                       "        const long long row = rg_ + %s;\n"
                       "        const bool rv_ = %s;\n"
                       "        const long long rb = row * len;\n",
                    cl ? "cuk_cluster_id()" : "blockIdx.x", cst ? "1" : "G_", cl ? "cuk_cluster_count()" : "gridDim.x",
                    cst ? "1" : "G_", cst ? "0" : "g_", cst ? "true" : "row < rows");
            declare_leaf_regs(ke, &L, V, R, 2);
            /* the loop nest over this thread's elements: opens r_ (and for the general
               copy e_ and the test); `i` is the flat element index */
#define ROW_OPEN(D)                                                                                              \
    do {                                                                                                         \
        bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);                         \
        bprintf(b, "            const int c0 = %s;\n", C0);                            \
        if (fast) {                                                                                              \
            bputs(b, "            if (rv_ && c0 < ilen_) {\n");                                                   \
            D;                                                                                                   \
            bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) {\n", V);                 \
            bputs(b, "                const long long i = (rb + c0) | e_;\n");                                  \
        } else {                                                                                                 \
            D;                                                                                                   \
            bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) {\n", V);                 \
            bputs(b, "                if (rv_ && c0 + e_ < ilen_) {\n                const long long i = rb + c0 + e_;\n"); \
        }                                                                                                        \
    } while (0)
            if (fast) {
                bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);
                bprintf(b, "            const int c0 = %s;\n", C0);
                bputs(b, "            if (rv_ && c0 < ilen_) {\n");
                load_leaf_regs(ke, &L, V, "[r_]", "rb + c0", 4);
                bputs(b, "            }\n        }\n");
            } else {
                ROW_OPEN((void)0);
                for (int q = 0; q < L.n; q++) {
                    bputs(b, "                {\n");
                    reset_scope(ke);
                    emit_eval(ke, &L.v[q], 1, 5);
                    bprintf(b, "                    L%d[r_].x[e_] = v%d;\n", L.v[q]->id, L.v[q]->id);
                    bputs(b, "                }\n");
                }
                bputs(b, "            }}\n        }\n");
            }
            ke->leaf_sel = "[r_].x[e_]";
            ke->flatc = fast;
            for (int j = 0; j < k->nreds; j++) {
                Val *r = k->reds[j];
                /* an online pair (row_online): the max stays the thread's own until the
                   sum is folded against it; then one exchange of the pair */
                bool pmax = row_pair(k, j + 1), psum = row_pair(k, j);
                /* the centred pair on the short-row and cluster entries only: on a row to a
                   block (layer norm over 16384 x 16384, H100) its means' divisions cost
                   more than the barrier it saves (0.727 -> 0.752 ms), while 65536 x 4096
                   went 0.776 -> 0.733 ms and 4096 x 65536 0.852 -> 0.836 ms */
                Val *cmean = e != KE_MAIN ? row_centred(k, j + 1) : NULL, *csq = e != KE_MAIN ? row_centred(k, j) : NULL;
                const char *T = ctype(r->dt);
                declare_accs_one(ke, types[j], j, 2);
                /* against the warp's max (every row here has a warp or more): the warp
                   folds its sums at one max, rescaling only across warps */
                if (psum)
                    bprintf(b, "        acc%d = cuk_warp_all(acc%d, op%d);\n        { const %s v%d = acc%d;\n", j - 1, j - 1,
                            j - 1, T, k->reds[j - 1]->id, j - 1);
                /* a centred pair's squares about the warp's mean (row_centred) */
                if (csq) bprintf(b, "        { const %s v%d = cw%d_;\n", T, csq->id, j - 1);
                if (cmean) bprintf(b, "        int cnt%d_ = 0;\n", j);
                ROW_OPEN((void)0);
                reset_scope(ke);
                for (int q = 0; q < j; q++) ke->done[k->reds[q]->id] = true;
                if (csq) ke->done[csq->id] = true;
                Val *in = r->args[0];
                emit_eval_at(ke, &in, 1, 4, !fast);
                fold_expr(ke, r, j, "(c0 + e_)", 4);
                if (cmean) bprintf(b, "                cnt%d_ += 1;\n", j);
                bputs(b, "            }}\n        }\n");
                if (cmean)
                    bprintf(b, "        int nw%d_ = cuk_warp_sum_all(cnt%d_);\n        %s sw%d_ = cuk_warp_sum_all(acc%d);\n"
                               "        const %s cw%d_ = cuk_cs_mean(nw%d_, sw%d_);\n",
                            j, j, T, j, j, T, j, j, j);
                if (pmax || cmean) continue;
                if (csq) {
                    /* the row's (count, sum, squares about its mean), then the squares
                       about the program's centre a: + n (mean - a)^2 */
                    bprintf(b, "        }\n        cuk_cs_%s_allreduce<%s>(nw%d_, sw%d_, acc%d, par_%s%s);\n", cl ? "cluster" : "group",
                            T, j - 1, j - 1, j, cl ? "" : ", ", cl ? "" : TT);
                    bprintf(b, "        acc%d = sw%d_;\n", j - 1, j - 1);
                    row_own_value(ke, j - 1);
                    bputs(b, "        {\n");
                    reset_scope(ke);
                    for (int q = 0; q < j; q++) ke->done[k->reds[q]->id] = true;
                    emit_eval_at(ke, &csq, 1, 3, false);
                    char a[128];
                    ref(ke, csq, a, sizeof a);
                    bprintf(b, "            const %s d_ = cuk_cs_mean(nw%d_, sw%d_) - (%s);\n"
                               "            acc%d += (%s)nw%d_ * d_ * d_;\n        }\n",
                            T, j - 1, j - 1, a, j, T, j - 1);
                    row_own_value(ke, j);
                    continue;
                }
                /* every thread gets the row's value: one barrier per reduction (per pair) */
                if (psum && cl)
                    bprintf(b, "        }\n        cuk_ms_cluster_allreduce<%s, %s>(acc%d, acc%d, par_);\n", ctype(r->dt),
                            types[j - 1], j - 1, j);
                else if (psum)
                    bprintf(b, "        }\n        cuk_ms_group_allreduce<%s, %s>(acc%d, acc%d, par_, %s);\n", ctype(r->dt),
                            types[j - 1], j - 1, j, TT);
                else if (cl) bprintf(b, "        cuk_cluster_allreduce(acc%d, has%d, op%d, par_);\n", j, j, j);
                else bprintf(b, "        cuk_group_allreduce(acc%d, has%d, op%d, par_, %s);\n", j, j, j, TT);
                for (int q = psum ? j - 1 : j; q <= j; q++) row_own_value(ke, q);
            }
            char rr[128];
            if (k->row_out) {
                ke->leaf_sel = NULL;
                ke->flatc = false;
                emit_row_outputs(ke, "row", cl ? "threadIdx.x == 0 && crank_ == 0" : cst ? "threadIdx.x == 0" : "l_ == 0 && rv_", 2);
                bputs(b, "    }\n    }\n");
                continue;
            }
            if (fast) {
                ROW_OPEN(for (int j = 0; j < k->nouts; j++) bprintf(b, "            cuk_vec<%s, %d> S%d;\n",
                                                                    ctype(k->outs[j]->dt), V, j));
            } else {
                ROW_OPEN((void)0);
            }
            reset_scope(ke);
            for (int q = 0; q < k->nreds; q++) ke->done[k->reds[q]->id] = true;
            emit_eval_at(ke, k->outs, k->nouts, 4, !fast);
            for (int j = 0; j < k->nouts; j++) {
                ref(ke, k->outs[j], rr, sizeof rr);
                if (fast) bprintf(b, "                S%d.x[e_] = %s;\n", j, rr);
                else store(ke, k->outs[j], "i", 4);
            }
            if (fast) {
                bputs(b, "            }\n");
                for (int j = 0; j < k->nouts; j++)
                    bprintf(b, "            cuk_stv<%s, %d>((void *)p.w[%d], rb + c0, S%d);\n", ctype(k->outs[j]->dt),
                            V, W(ke, KP_OUT, k->outs[j], 0, 0), j);
                bputs(b, "            }\n        }\n");
            } else {
                bputs(b, "            }}\n        }\n");
            }
#undef ROW_OPEN
            ke->leaf_sel = NULL;
            ke->flatc = false;
            bputs(b, "    }\n    }\n");
        }
        /* no block of a cluster leaves while another may still read its shared memory */
        bprintf(b, "    %sreturn;\n    }\n", cl ? "cuk_cluster_sync();\n    " : "");
        ke->leaf_sel = NULL;
        if (lg) {
            bputs(b, "    if (vfast) {\n");
            emit_row_long_vec(ke, types, V);
            bputs(b, "    return;\n    }\n");
        }
    }
    bputs(b, "    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n");
    declare_accs(ke, types, 2);
    for (int j = 0; j < k->nreds; j++) {
        Val *r = k->reds[j];
        block_loop(ke, ordered, "c", "0", "len", 2);
        bputs(b, "            const long long i = row * len + c;\n");
        reset_scope(ke);
        for (int q = 0; q < j; q++) ke->done[k->reds[q]->id] = true;
        Val *in = r->args[0];
        emit_eval(ke, &in, 1, 3);
        fold_expr(ke, r, j, "c", 3);
        bputs(b, "        }}\n");
        bprintf(b, "        cuk_block_reduce(acc%d, has%d, op%d);\n", j, j, j);
        bputs(b, "        if (threadIdx.x == 0) {\n");
        finish_value(ke, r, j, arena_printf(ke->e->a, "sh%d", j), 3);
        bputs(b, "        }\n        __syncthreads();\n");
        row_red_value(ke, r, j, "sh");
    }
    if (k->row_out) {
        emit_row_outputs(ke, "row", "threadIdx.x == 0", 2);
        bputs(b, "        __syncthreads();\n    }\n}\n\n");
        return;
    }
    bputs(b, "        for (long long c = threadIdx.x; c < len; c += blockDim.x) {\n"
             "            const long long i = row * len + c;\n");
    reset_scope(ke);
    for (int q = 0; q < k->nreds; q++) ke->done[k->reds[q]->id] = true;
    emit_eval(ke, k->outs, k->nouts, 3);
    for (int j = 0; j < k->nouts; j++) store(ke, k->outs[j], "i", 3);
    bputs(b, "        }\n        __syncthreads();\n    }\n}\n\n");
}

/* The scan value at element i in `dst` given `before` (combine of the earlier elements,
   valid when has_before) and the element x, for inclusive or exclusive scans. */
static void scan_value(KE *ke, Val *s, const char *dst, const char *before, const char *has_before, const char *x,
                       int d) {
    Buf *b = ke->b;
    Val *init = red_init(s);
    char iv[128];
    const char *T = ctype(s->dt);
    if (init) ref(ke, init, iv, sizeof iv);
    const char *id = red_identity(s->red, s->dt);
    ind(b, d);
    if (!s->exclusive) {
        if (init)
            bprintf(b, "%s = %s ? op0(op0((%s)(%s), %s), %s) : op0((%s)(%s), %s);\n", dst, has_before, T, iv, before, x, T,
                    iv, x);
        else
            bprintf(b, "%s = %s ? op0(%s, %s) : %s;\n", dst, has_before, before, x, x);
    } else {
        if (init)
            bprintf(b, "%s = %s ? op0((%s)(%s), %s) : (%s)(%s);\n", dst, has_before, T, iv, before, T, iv);
        else
            bprintf(b, "%s = %s ? %s : (%s)(%s);\n", dst, has_before, before, T, id ? id : "0");
    }
}

static void emit_scan(KE *ke) {
    const Kernel *k = ke->k;
    Val *s = k->scan;
    const char *type = emit_combine(ke->e, s);
    header(ke);
    Buf *b = ke->b;
    const char *T = ctype(s->dt);
    Val *in = s->args[0];
    emit_combine_instance(ke, s, type, 0, 1);
    if (red_segs(s)) {
        /* segments=offs: one block per segment (grid-stride over segments), scanned in
           chunks of blockDim.x elements with a carry (kernels/scan.cuh) */
        Val *init = red_init(s);
        const char *id = red_identity(s->red, s->dt);
        char iv[128], x[128];
        if (init) ref(ke, init, iv, sizeof iv);
        bprintf(b, "    const long long *offs_ = (const long long *)p.w[%d];\n",
                W(ke, KP_IN, kernel_canon(k, red_segs(s)), 0, 0));
        bprintf(b, "    const long long nseg = p.w[%d];\n", W(ke, KP_OUTER, NULL, 0, 0));
        bputs(b, "    for (long long o = blockIdx.x; o < nseg; o += gridDim.x) {\n"
                 "        const long long lo_ = offs_[o], hi_ = offs_[o + 1];\n");
        bprintf(b, "        cuk_opt<%s> carry_;\n        carry_.h = 0;\n", T);
        bputs(b, "        for (long long c_ = lo_; c_ < hi_; c_ += blockDim.x) {\n"
                 "            const long long i = c_ + threadIdx.x;\n");
        bprintf(b, "            cuk_opt<%s> x_, inc_, exc_, tot_;\n            x_.h = 0;\n", T);
        bputs(b, "            if (i < hi_) {\n");
        reset_scope(ke);
        emit_eval(ke, &in, 1, 4);
        ref(ke, in, x, sizeof x);
        bprintf(b, "                x_.v = (%s)(%s);\n                x_.h = 1;\n            }\n", T, x);
        bputs(b, "            cuk_block_scan_opt(x_, op0, inc_, exc_, tot_);\n"
                 "            if (i < hi_) {\n");
        bprintf(b, "                %s v%d;\n", T, s->id);
        if (!s->exclusive) {
            bprintf(b, "                const cuk_opt<%s> F_ = cuk_opt_cat(carry_, inc_, op0);\n", T);
            if (init) bprintf(b, "                v%d = op0((%s)(%s), F_.v);\n", s->id, T, iv);
            else bprintf(b, "                v%d = F_.v;\n", s->id);
        } else {
            bprintf(b, "                const cuk_opt<%s> F_ = cuk_opt_cat(carry_, exc_, op0);\n", T);
            if (init) bprintf(b, "                v%d = F_.h ? op0((%s)(%s), F_.v) : (%s)(%s);\n", s->id, T, iv, T, iv);
            else bprintf(b, "                v%d = F_.h ? F_.v : (%s)(%s);\n", s->id, T, id ? id : "0");
        }
        reset_scope(ke);
        ke->done[s->id] = true;
        emit_eval(ke, k->outs, k->nouts, 4);
        store(ke, k->outs[0], "i", 4);
        bputs(b, "            }\n"
                 "            carry_ = cuk_opt_cat(carry_, tot_, op0);\n"
                 "        }\n    }\n}\n\n");
        return;
    }
    if (k->axis != AXIS_ALL && k->rank > 1) {
        /* along an axis: one thread per line, in order */
        int wo = W(ke, KP_OUTER, NULL, 0, 0), wl = W(ke, KP_LEN, NULL, 0, 0), wi = W(ke, KP_INNER, NULL, 0, 0);
        bprintf(b, "    const long long outer = p.w[%d], len = p.w[%d], inner = p.w[%d];\n", wo, wl, wi);
        bputs(b, "    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < outer * inner;\n"
                 "         o += (long long)gridDim.x * blockDim.x) {\n"
                 "        const long long oo = o / inner, ii = o % inner;\n");
        bprintf(b, "        %s run; int has = 0; (void)run;\n", T);
        bputs(b, "        for (long long t = 0; t < len; t++) {\n"
                 "            const long long i = (oo * len + t) * inner + ii;\n");
        reset_scope(ke);
        emit_eval(ke, &in, 1, 3);
        char x[128];
        ref(ke, in, x, sizeof x);
        bprintf(b, "            const %s x_ = (%s)(%s);\n", T, T, x);
        bprintf(b, "            %s v%d;\n", T, s->id);
        scan_value(ke, s, arena_printf(ke->e->a, "v%d", s->id), "run", "has", "x_", 3);
        bputs(b, "            run = has ? op0(run, x_) : x_; has = 1;\n");
        ke->done[s->id] = true;
        emit_eval_at(ke, k->outs, k->nouts, 3, false);
        store(ke, k->outs[0], "i", 3);
        bputs(b, "        }\n    }\n}\n\n");
        return;
    }
    /* Flattened: single-pass decoupled look-back over tiles of blockDim.x * ITEMS.
       Warp w owns a contiguous segment of 32 * ITEMS elements, held as R rows of V-wide
       vectors: lane l's row r is elements seg + (r * 32 + l) * V .. + V, so each load
       and store instruction of the warp is 512 contiguous bytes. Scan order inside a
       row is lane-major, so each row is a within-vector scan plus a warp shuffle scan,
       and rows chain through a running carry. */
    reset_scope(ke);
    Leaves L = leaves_new(ke);
    collect_leaves(ke, &in, 1, &L);
    ke->done[s->id] = true;
    {
        /* epilogue leaves the prologue did not load */
        Leaves E = leaves_new(ke);
        collect_leaves(ke, k->outs, k->nouts, &E);
        for (int q = 0; q < E.n; q++) leaves_add(&L, E.v[q]);
    }
    reset_scope(ke);
    int V = vec_width(&L, k->outs, k->nouts);
    int ITEMS = k->items, R = ITEMS / V;
    char xv[128];
    bprintf(b, "    char *scratch = (char *)p.w[%d];\n", W(ke, KP_SCRATCH, NULL, 0, 0));
    bprintf(b, "    const long long tile = cuk_next_tile(scratch);\n"
               "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;\n"
               "    const long long tbase = tile * (long long)blockDim.x * %d;\n"
               "    const long long seg = tbase + (long long)warp * %d;\n", ITEMS, 32 * ITEMS);
    bprintf(b, "    const int fast = (%s) && tbase + (long long)blockDim.x * %d <= n;\n", vec_cond(ke, &L, k->outs, k->nouts),
            ITEMS);
    declare_leaf_regs(ke, &L, V, R, 1);
    bprintf(b, "    %s xs[%d][%d];\n", T, R, V);
    bputs(b, "    if (fast) {\n");
    bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);
    load_leaf_regs(ke, &L, V, "[r_]", arena_printf(ke->e->a, "seg + ((long long)r_ * 32 + lane) * %d", V), 3);
    bputs(b, "        }\n");
    bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);
    bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) {\n", V);
    bprintf(b, "                const long long i = (seg + ((long long)r_ * 32 + lane) * %d) | e_;\n", V);
    regs_eval(ke, "[r_].x[e_]", &in, 1, 4);
    ref(ke, in, xv, sizeof xv);
    bprintf(b, "                xs[r_][e_] = (%s)(%s);\n", T, xv);
    regs_end(ke);
    bputs(b, "            }\n        }\n    } else {\n");
    bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);
    bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) {\n", V);
    bprintf(b, "                const long long i = (seg + ((long long)r_ * 32 + lane) * %d) | e_;\n", V);
    bputs(b, "                if (i < n) {\n");
    reset_scope(ke);
    emit_eval(ke, &in, 1, 5);
    ref(ke, in, xv, sizeof xv);
    bprintf(b, "                    xs[r_][e_] = (%s)(%s);\n", T, xv);
    bprintf(b, "                } else {\n                    xs[r_][e_] = (%s)0;\n                }\n", T);
    bputs(b, "            }\n        }\n    }\n");
    /* within vectors, then each row across the warp */
    bprintf(b, "#pragma unroll\n    for (int r_ = 0; r_ < %d; r_++) {\n", R);
    bprintf(b, "#pragma unroll\n        for (int e_ = 1; e_ < %d; e_++) xs[r_][e_] = op0(xs[r_][e_ - 1], xs[r_][e_]);\n", V);
    bputs(b, "    }\n");
    bprintf(b, "    cuk_opt<%s> lex[%d];\n    %s rowtot[%d];\n", T, R, T, R);
    bprintf(b, "#pragma unroll\n    for (int r_ = 0; r_ < %d; r_++) {\n", R);
    bprintf(b, "        %s t_ = xs[r_][%d];\n", T, V - 1);
    bprintf(b, "        for (int d_ = 1; d_ < 32; d_ <<= 1) {\n"
               "            const %s o_ = cuk_shfl_up(t_, d_);\n"
               "            if (lane >= d_) t_ = op0(o_, t_);\n"
               "        }\n", T);
    bputs(b, "        lex[r_].v = cuk_shfl_up(t_, 1);\n"
             "        lex[r_].h = lane > 0;\n"
             "        rowtot[r_] = cuk_shfl_idx(t_, 31);\n"
             "    }\n");
    /* warp totals, warp prefixes, then warp 0 publishes and looks back */
    bprintf(b, "    __shared__ %s s_wt[32];\n    __shared__ %s s_prefix;\n", T, T);
    bprintf(b, "    {\n        %s wt_ = rowtot[0];\n", T);
    bprintf(b, "#pragma unroll\n        for (int r_ = 1; r_ < %d; r_++) wt_ = op0(wt_, rowtot[r_]);\n", R);
    bputs(b, "        if (lane == 0) s_wt[warp] = wt_;\n    }\n    __syncthreads();\n");
    bprintf(b, "    cuk_opt<%s> base_;\n    base_.h = 0;\n", T);
    bprintf(b, "    if (warp == 0) {\n"
               "        %s agg_ = s_wt[0];\n"
               "        for (int w_ = 1; w_ < nw; w_++) agg_ = op0(agg_, s_wt[w_]);\n"
               "        if (tile == 0) {\n"
               "            if (lane == 0) cuk_tile_set(scratch, 0, 2, agg_);\n"
               "        } else {\n"
               "            if (lane == 0) cuk_tile_set(scratch, tile, 1, agg_);\n"
               "            const %s pre_ = cuk_warp_lookback<%s>(scratch, tile, op0);\n"
               "            if (lane == 0) {\n"
               "                cuk_tile_set(scratch, tile, 2, op0(pre_, agg_));\n"
               "                s_prefix = pre_;\n"
               "            }\n"
               "        }\n"
               "    }\n"
               "    __syncthreads();\n", T, T, T);
    bputs(b, "    if (tile > 0) {\n        base_.v = s_prefix;\n        base_.h = 1;\n    }\n"
             "    for (int w_ = 0; w_ < warp; w_++) {\n"
             "        base_.v = base_.h ? op0(base_.v, s_wt[w_]) : s_wt[w_];\n"
             "        base_.h = 1;\n"
             "    }\n");
    bprintf(b, "    cuk_opt<%s> carry_;\n    carry_.h = 0;\n", T);
    Val *init = red_init(s);
    const char *id = red_identity(s->red, s->dt);
    char iv[128];
    if (init) ref(ke, init, iv, sizeof iv);
    for (int pass = 0; pass < 2; pass++) {
        bprintf(b, "    %s {\n", pass == 0 ? "if (fast)" : "else");
        bprintf(b, "#pragma unroll\n    for (int r_ = 0; r_ < %d; r_++) {\n", R);
        bprintf(b, "        const cuk_opt<%s> F_ = cuk_opt_cat(cuk_opt_cat(base_, carry_, op0), lex[r_], op0);\n", T);
        bputs(b, "        (void)F_;\n");
        if (pass == 0)
            for (int j = 0; j < k->nouts; j++) bprintf(b, "        cuk_vec<%s, %d> S%d;\n", ctype(k->outs[j]->dt), V, j);
        bprintf(b, "#pragma unroll\n        for (int e_ = 0; e_ < %d; e_++) {\n", V);
        bprintf(b, "            const long long i = (seg + ((long long)r_ * 32 + lane) * %d) | e_;\n", V);
        int d = 3;
        if (pass == 1) {
            bputs(b, "            if (i < n) {\n");
            d = 4;
        }
        ind(b, d);
        bprintf(b, "%s v%d;\n", T, s->id);
        ind(b, d);
        if (!s->exclusive) {
            bprintf(b, "const %s incl_ = F_.h ? op0(F_.v, xs[r_][e_]) : xs[r_][e_];\n", T);
            ind(b, d);
            if (init) bprintf(b, "v%d = op0((%s)(%s), incl_);\n", s->id, T, iv);
            else bprintf(b, "v%d = incl_;\n", s->id);
        } else {
            bprintf(b, "const int hb_ = e_ > 0 || F_.h;\n");
            ind(b, d);
            bprintf(b, "const %s ex_ = e_ > 0 ? (F_.h ? op0(F_.v, xs[r_][e_ > 0 ? e_ - 1 : 0]) : xs[r_][e_ > 0 ? e_ - 1 : 0]) : F_.v;\n", T);
            ind(b, d);
            if (init) bprintf(b, "v%d = hb_ ? op0((%s)(%s), ex_) : (%s)(%s);\n", s->id, T, iv, T, iv);
            else bprintf(b, "v%d = hb_ ? ex_ : (%s)(%s);\n", s->id, T, id ? id : "0");
        }
        reset_scope(ke);
        ke->done[s->id] = true;
        if (pass == 0) {
            ke->leaf_sel = "[r_].x[e_]";
            ke->flatc = true;
            emit_eval_at(ke, k->outs, k->nouts, d, false);
            ke->leaf_sel = NULL;
            ke->flatc = false;
            char rr[128];
            for (int j = 0; j < k->nouts; j++) {
                ref(ke, k->outs[j], rr, sizeof rr);
                ind(b, d);
                bprintf(b, "S%d.x[e_] = %s;\n", j, rr);
            }
            bputs(b, "        }\n");
            for (int j = 0; j < k->nouts; j++)
                bprintf(b, "        cuk_stv<%s, %d>((void *)p.w[%d], seg + ((long long)r_ * 32 + lane) * %d, S%d);\n",
                        ctype(k->outs[j]->dt), V, W(ke, KP_OUT, k->outs[j], 0, 0), V, j);
        } else {
            emit_eval(ke, k->outs, k->nouts, d);
            store(ke, k->outs[0], "i", d);
            bputs(b, "            }\n        }\n");
        }
        bputs(b, "        carry_.v = carry_.h ? op0(carry_.v, rowtot[r_]) : rowtot[r_];\n"
                 "        carry_.h = 1;\n"
                 "    }\n    }\n");
    }
    bputs(b, "}\n\n");
    (void)scan_value;
}

static void emit_matmul(KE *ke) {
    const Kernel *k = ke->k;
    Val *mm = k->scan, *x = mm->args[0], *y = mm->args[1];
    header(ke);
    Buf *b = ke->b;
    const char *T = ctype(mm->dt);
    bprintf(b, "    const long long M = p.w[%d], K = p.w[%d], N = p.w[%d];\n", W(ke, KP_MM, NULL, 0, 0),
            W(ke, KP_MM, NULL, 1, 0), W(ke, KP_MM, NULL, 2, 0));
    bprintf(b, "    const %s *X = (const %s *)p.w[%d];\n", ctype(x->dt), ctype(x->dt), W(ke, KP_IN, x, 0, 0));
    bprintf(b, "    const %s *Y = (const %s *)p.w[%d];\n", ctype(y->dt), ctype(y->dt), W(ke, KP_IN, y, 0, 0));
    bprintf(b, "    %s *Z = (%s *)p.w[%d];\n", T, T, W(ke, KP_OUT, mm, 0, 0));
    bputs(b, "    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < M * N;\n"
             "         o += (long long)gridDim.x * blockDim.x) {\n"
             "        const long long r = o / N, c = o % N;\n");
    bprintf(b, "        %s acc = 0;\n", T);
    bputs(b, "        for (long long q = 0; q < K; q++) acc += X[r * K + q] * Y[q * N + c];\n"
             "        Z[o] = acc;\n    }\n}\n\n");
}

/* ---- rule 6: scatter and reduce_by_index (K_HIST) ------------------------------------ */

/* The bits of an untouched private bin: -0.0 for floats (x + -0.0 is x), else 0. */
static const char *hist_zero(DType dt) { return dt == DT_F32 ? "-0.0f" : dt == DT_F64 ? "-0.0" : "0"; }

/* At iteration index i (everything emitted for it): the element's bin t_ (skipped when
   outside [0, m_)) and its update. */
static void emit_hist_update(KE *ke, int d) {
    Val *h = ke->k->outs[0];
    const char *T = ctype(h->dt);
    char ix[128], x[128];
    ref(ke, h->args[1], ix, sizeof ix);
    ref(ke, h->args[2], x, sizeof x);
    ind(ke->b, d);
    bprintf(ke->b,
            "{ const long long t_ = (long long)(%s); if ((unsigned long long)t_ < (unsigned long long)m_) { "
            "const %s x_ = (%s)(%s); ",
            ix, T, T, x);
    /* private bins: m_ fits the shared array, so a 32-bit index */
    if (h->op == OP_SCATTER) bputs(ke->b, "out_[t_] = x_;");
    else if (kernel_hist_counts(h))
        bputs(ke->b, "if (priv_) atomicAdd(&sh_[(unsigned)t_], 1u); else cuk_atomic_add(&out_[t_], x_);");
    else if (kernel_hist_private(h))
        bputs(ke->b, "if (priv_) cuk_atomic_add(&sh_[(unsigned)t_], x_); else cuk_atomic_add(&out_[t_], x_);");
    else if (h->red == RED_SUM) bputs(ke->b, "cuk_atomic_add(&out_[t_], x_);");
    else if ((h->red == RED_MIN || h->red == RED_MAX) && !dtype_info[h->dt].is_float)
        bprintf(ke->b, "cuk_atomic_%s(&out_[t_], x_);", h->red == RED_MIN ? "min" : "max");
    else bputs(ke->b, "cuk_atomic_apply(&out_[t_], x_, op0);");
    bputs(ke->b, " } }\n");
}

/* A histogram kernel's update of element i. */
static void each_hist(KE *ke, int d, void *ctx) {
    (void)ctx;
    emit_hist_update(ke, d);
}

/* deterministic=true: each block folds its contiguous chunk in element order (one
   thread folds each tile of block values that all threads computed) into private bins,
   writes them to scratch, and the last block folds the blocks' bins in block order into
   the result. More bins than fit in shared memory: one thread folds everything, in
   order (slow; docs/language.md says so). */
static void emit_hist_ordered(KE *ke, Val *h, const char *T, int cap) {
    Buf *b = ke->b;
    Val *tg[2] = {h->args[1], h->args[2]};
    char ix[128], x[128];
    bprintf(b, "    char *scratch = (char *)p.w[%d];\n", W(ke, KP_SCRATCH, NULL, 0, 0));
    bprintf(b, "    __shared__ %s dv_[%d];\n    __shared__ unsigned char dh_[%d];\n", T, cap, cap);
    bprintf(b, "    __shared__ long long tt_[%d];\n    __shared__ %s tv_[%d];\n", ke->k->block, T, ke->k->block);
    bprintf(b, "    if (m_ <= %d) {\n", cap);
    bputs(b, "        for (long long q = threadIdx.x; q < m_; q += blockDim.x) dh_[q] = 0;\n"
             "        const long long chunk = (n + gridDim.x - 1) / gridDim.x;\n"
             "        const long long lo = (long long)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;\n"
             "        for (long long base = lo; base < hi; base += blockDim.x) {\n"
             "            const long long i = base + threadIdx.x;\n");
    bprintf(b, "            long long tk_ = -1;\n            %s vk_ = (%s)0;\n            if (i < hi) {\n", T, T);
    reset_scope(ke);
    emit_eval(ke, tg, 2, 4);
    ref(ke, h->args[1], ix, sizeof ix);
    ref(ke, h->args[2], x, sizeof x);
    bprintf(b, "                const long long t_ = (long long)(%s);\n"
               "                if (t_ >= 0 && t_ < m_) { tk_ = t_; vk_ = (%s)(%s); }\n            }\n",
            ix, T, x);
    bputs(b, "            __syncthreads();\n"
             "            tt_[threadIdx.x] = tk_;\n            tv_[threadIdx.x] = vk_;\n"
             "            __syncthreads();\n"
             "            if (threadIdx.x == 0) {\n"
             "                const long long e_ = hi - base < (long long)blockDim.x ? hi - base : (long long)blockDim.x;\n"
             "                for (long long j = 0; j < e_; j++) {\n"
             "                    const long long t = tt_[j];\n"
             "                    if (t >= 0) { dv_[t] = dh_[t] ? op0(dv_[t], tv_[j]) : tv_[j]; dh_[t] = 1; }\n"
             "                }\n            }\n        }\n        __syncthreads();\n");
    bprintf(b, "        %s *part = (%s *)(scratch + 16);\n", T, T);
    bputs(b, "        unsigned char *ph = (unsigned char *)(part + (long long)gridDim.x * m_);\n"
             "        for (long long q = threadIdx.x; q < m_; q += blockDim.x) {\n"
             "            part[(long long)blockIdx.x * m_ + q] = dv_[q];\n"
             "            ph[(long long)blockIdx.x * m_ + q] = dh_[q];\n        }\n"
             "        if (!cuk_last_block((unsigned int *)scratch)) return;\n"
             "        for (long long q = threadIdx.x; q < m_; q += blockDim.x) {\n");
    bprintf(b, "            %s acc = out_[q];\n", T);
    bprintf(b, "            for (long long g = 0; g < gridDim.x; g++)\n"
               "                if (((const volatile unsigned char *)ph)[g * m_ + q]) acc = op0(acc, ((const volatile %s *)part)[g * m_ + q]);\n"
               "            out_[q] = acc;\n        }\n"
               "        if (threadIdx.x == 0) *(unsigned int *)scratch = 0;\n", T);
    bputs(b, "    } else if (blockIdx.x == 0 && threadIdx.x == 0) {\n"
             "        for (long long i = 0; i < n; i++) {\n");
    reset_scope(ke);
    emit_eval(ke, tg, 2, 3);
    ref(ke, h->args[1], ix, sizeof ix);
    ref(ke, h->args[2], x, sizeof x);
    bprintf(b, "            const long long t_ = (long long)(%s);\n"
               "            if (t_ >= 0 && t_ < m_) out_[t_] = op0(out_[t_], (%s)(%s));\n        }\n    }\n}\n\n",
            ix, T, x);
}

/* histogram() (an OP_HBIN counted): its nbins edges edge(0 .. n-1) (kernels/ops.h
   cuk_hbin_*) go into the private bins' shared memory after the counters, 8-byte
   aligned, where both fit; then an element costs its guess (one conversion), two
   shared loads and a shared atomic instead of computing two edges in f64. Emitted
   before the counters' zeroing, whose __syncthreads() publishes the edges too. Only
   for edges of host scalars (the kernel's parameters), which the prologue can read. */
static void emit_hist_edges(KE *ke, Val *h) {
    Val *hb = kernel_canon(ke->k, h->args[1]);
    if (hb->op != OP_HBIN || !ke->inval[hb->id]) return;
    for (int i = 1; i < 4; i++) {
        const Val *a = kernel_canon(ke->k, hb->args[i]);
        if (a->op != OP_CONST && (a->rank != 0 || ke->inval[a->id])) return;
    }
    char rn[128], rl[128], rs[128];
    ref(ke, hb->args[1], rn, sizeof rn);
    ref(ke, hb->args[2], rl, sizeof rl);
    ref(ke, hb->args[3], rs, sizeof rs);
    DType xt = hb->args[0]->dt;
    const char *T = ctype(xt), *S = dtype_info[xt].name;
    int w = dtype_info[xt].size / 4; /* counters per edge */
    Buf *b = ke->b;
    bprintf(b, "    const long long ne_ = (long long)(%s), at_ = (m_ + 1) & ~1LL;\n", rn);
    bprintf(b, "    const bool etab_ = priv_ && ne_ >= 1 && ne_ <= (cap_ - at_) / %d;\n", w);
    bprintf(b, "    if (etab_) {\n        %s *e_ = (%s *)(sh_ + at_);\n", T, T);
    bprintf(b, "        for (long long q = threadIdx.x; q < ne_; q += blockDim.x) e_[q] = cuk_hedge_%s(q, %s, %s);\n    }\n", S, rs, rl);
    ke->etab = hb;
}

/* Rule 6: a kernel over the indices with their (and the values') producers computed
   inside it; the executor has copied or filled the destination into out_ already.
   Each block takes a contiguous chunk, its flat and aligned part in 16-byte vectors
   (four per thread in flight, as reductions do), the rest one element at a time. A
   builtin add whose bins fit in shared memory accumulates them there (shared
   atomics) and adds each touched bin to the result once per block. */
static void emit_hist(KE *ke) {
    const Kernel *k = ke->k;
    Val *h = k->outs[0];
    const char *T = ctype(h->dt);
    const char *type = h->op == OP_HIST ? emit_combine(ke->e, h) : NULL;
    header(ke);
    Buf *b = ke->b;
    bprintf(b, "    %s *out_ = (%s *)p.w[%d];\n", T, T, W(ke, KP_OUT, h, 0, 0));
    bprintf(b, "    const long long m_ = p.w[%d];\n", W(ke, KP_HBINS, NULL, 0, 0));
    if (type) emit_combine_instance(ke, h, type, 0, 1);
    if (type) bputs(b, "    (void)op0;\n");
    int esz = dtype_info[h->dt].size;
    if (kernel_hist_ordered(h)) {
        emit_hist_ordered(ke, h, T, HIST_SHARED_BYTES / (esz + 1));
        return;
    }
    bool priv = kernel_hist_private(h), cnt = kernel_hist_counts(h);
    const char *ST = cnt ? "unsigned int" : T;
    if (priv) {
        /* the private bins (and edges) in dynamic shared memory, as much as the launch
           gave (kernel_shmem: what m_ bins need, so that small histograms keep every
           block resident) */
        bprintf(b, "    extern __shared__ __align__(16) unsigned char cuk_dsm_[];\n"
                   "    %s *sh_ = (%s *)cuk_dsm_;\n"
                   "    const long long cap_ = (long long)(cuk_dyn_smem() / sizeof(%s));\n"
                   "    const bool priv_ = m_ <= cap_;\n",
                ST, ST, ST);
        if (cnt) emit_hist_edges(ke, h);
        bprintf(b, "    if (priv_) {\n        for (long long q = threadIdx.x; q < m_; q += blockDim.x) sh_[q] = %s;\n"
                   "        __syncthreads();\n    }\n",
                cnt ? "0u" : hist_zero(h->dt));
    }
    Val *tg[2] = {h->args[1], h->args[2]};
    int V = emit_vector_chunks(ke, tg, 2, each_hist, NULL);
    bprintf(b, "    const long long rs_ = nvec * %d;\n", V);
    bputs(b, "    const long long chunk = (n - rs_ + gridDim.x - 1) / gridDim.x;\n"
             "    const long long lo = rs_ + (long long)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;\n"
             "    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {\n");
    reset_scope(ke);
    emit_eval(ke, tg, 2, 2);
    emit_hist_update(ke, 2);
    bputs(b, "    }\n");
    if (priv) {
        const char *zero = h->dt == DT_F32   ? "__float_as_uint(x_) != 0x80000000u"
                           : h->dt == DT_F64 ? "__double_as_longlong(x_) != (long long)0x8000000000000000ull"
                                             : "x_ != 0";
        bprintf(b, "    if (priv_) {\n        __syncthreads();\n"
                   "        for (long long q = threadIdx.x; q < m_; q += blockDim.x) {\n"
                   "            const %s x_ = sh_[q];\n            if (%s) cuk_atomic_add(&out_[q], (%s)x_);\n        }\n    }\n",
                ST, cnt ? "x_ != 0u" : zero, T);
    }
    bputs(b, "}\n\n");
}

/* Rule 6: x[mask], filter, nonzero in one pass over tiles of blockDim.x * ITEMS
   elements, laid out as the scan's (warp w owns 32 * ITEMS contiguous elements as R
   rows of V-wide vectors, lane l's row r at seg + (r * 32 + l) * V), so loads are 512
   contiguous bytes per warp instruction. Each thread computes x and the mask for its
   elements (their producers fused: nothing but x's and the mask's leaves is read) and
   keeps a V-bit mask per row; ballots give each lane's rank among the warp's kept
   elements (row-major order is row, then lane, then element), warp counts give the
   warp's rank in the tile, and warp 0 publishes the tile's count and looks back for
   the kept elements of all earlier tiles (kernels/compact.cuh). The kept elements are
   staged in shared memory at their rank in the tile, so the global store of the tile's
   run is coalesced; the last tile writes the total to scratch + COMPACT_COUNT_OFFSET.
   Offsets are 64-bit throughout; positions inside a tile (< ITEMS * blockDim.x) int. */
static void emit_compact(KE *ke) {
    const Kernel *k = ke->k;
    Val *c = k->scan, *x = c->args[0], *m = c->args[1];
    header(ke);
    Buf *b = ke->b;
    const char *T = ctype(c->dt);
    Val *targets[2] = {x, m};
    reset_scope(ke);
    Leaves L = leaves_new(ke);
    collect_leaves(ke, targets, 2, &L);
    reset_scope(ke);
    int V = vec_width(&L, &c, 1);
    int ITEMS = k->items, R = ITEMS / V, NB = 1;
    while ((1 << NB) <= V) NB++; /* bits of a row's count, 0..V */
    int TILE = k->block * ITEMS;
    char xr[128], mr[128];
    bprintf(b, "    char *scratch = (char *)p.w[%d];\n", W(ke, KP_SCRATCH, NULL, 0, 0));
    bprintf(b, "    %s *out_ = (%s *)p.w[%d];\n", T, T, W(ke, KP_OUT, c, 0, 0));
    bprintf(b, "    const long long tile = cuk_next_tile(scratch);\n"
               "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;\n"
               "    const long long tbase = tile * %d;\n"
               "    const long long seg = tbase + (long long)warp * %d;\n", TILE, 32 * ITEMS);
    bprintf(b, "    const int fast = (%s) && tbase + %d <= n;\n", vec_cond(ke, &L, NULL, 0), TILE);
    declare_leaf_regs(ke, &L, V, R, 1);
    bprintf(b, "    %s xs[%d][%d];\n    unsigned mk[%d];\n", T, R, V, R);
    bputs(b, "    if (fast) {\n");
    bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n", R);
    load_leaf_regs(ke, &L, V, "[r_]", arena_printf(ke->e->a, "seg + ((long long)r_ * 32 + lane) * %d", V), 3);
    bputs(b, "        }\n");
    bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n            mk[r_] = 0;\n", R);
    bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) {\n", V);
    bprintf(b, "                const long long i = (seg + ((long long)r_ * 32 + lane) * %d) | e_;\n"
               "                (void)i;\n", V);
    regs_eval(ke, "[r_].x[e_]", targets, 2, 4);
    ref(ke, x, xr, sizeof xr);
    ref(ke, m, mr, sizeof mr);
    bprintf(b, "                xs[r_][e_] = (%s)(%s);\n", T, xr);
    bprintf(b, "                mk[r_] |= (unsigned)((%s) != 0) << e_;\n", mr);
    regs_end(ke);
    bputs(b, "            }\n        }\n    } else {\n");
    bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n            mk[r_] = 0;\n", R);
    bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++) {\n", V);
    bprintf(b, "                const long long i = (seg + ((long long)r_ * 32 + lane) * %d) | e_;\n", V);
    bprintf(b, "                xs[r_][e_] = (%s)0;\n", T);
    bputs(b, "                if (i < n) {\n");
    reset_scope(ke);
    emit_eval(ke, targets, 2, 5);
    ref(ke, x, xr, sizeof xr);
    ref(ke, m, mr, sizeof mr);
    bprintf(b, "                    xs[r_][e_] = (%s)(%s);\n", T, xr);
    bprintf(b, "                    mk[r_] |= (unsigned)((%s) != 0) << e_;\n", mr);
    bputs(b, "                }\n            }\n        }\n    }\n");
    /* ranks: each lane's first kept element of row r is at rk[r] among the warp's */
    bprintf(b, "    int rk[%d], wc_ = 0;\n", R);
    bprintf(b, "#pragma unroll\n    for (int r_ = 0; r_ < %d; r_++) {\n"
               "        int t_;\n"
               "        rk[r_] = wc_ + cuk_warp_count_prefix(__popc(mk[r_]), %d, &t_);\n"
               "        wc_ += t_;\n"
               "    }\n", R, NB);
    bputs(b, "    __shared__ int s_wc[32];\n"
             "    __shared__ long long s_prefix, s_agg;\n"
             "    if (lane == 0) s_wc[warp] = wc_;\n"
             "    __syncthreads();\n");
    bprintf(b, "    if (warp == 0) {\n"
               "        long long agg_ = 0;\n"
               "        for (int w_ = 0; w_ < nw; w_++) agg_ += s_wc[w_];\n"
               "        long long pre_ = 0;\n"
               "        if (tile == 0) {\n"
               "            if (lane == 0) cuk_count_set(scratch, 0, 2, agg_);\n"
               "        } else {\n"
               "            if (lane == 0) cuk_count_set(scratch, tile, 1, agg_);\n"
               "            pre_ = cuk_count_lookback(scratch, tile);\n"
               "            if (lane == 0) cuk_count_set(scratch, tile, 2, pre_ + agg_);\n"
               "        }\n"
               "        if (lane == 0) {\n"
               "            s_prefix = pre_;\n"
               "            s_agg = agg_;\n"
               "            if (tile == (n > 0 ? (n - 1) / %d : 0)) *(long long *)(scratch + %d) = pre_ + agg_;\n"
               "        }\n"
               "    }\n", TILE, COMPACT_COUNT_OFFSET);
    /* stage the kept elements at their rank in the tile */
    bprintf(b, "    __shared__ %s s_out[%d];\n", T, TILE);
    bputs(b, "    {\n        int wb_ = 0;\n        for (int w_ = 0; w_ < warp; w_++) wb_ += s_wc[w_];\n");
    bprintf(b, "#pragma unroll\n        for (int r_ = 0; r_ < %d; r_++) {\n"
               "            int q_ = wb_ + rk[r_];\n", R);
    bprintf(b, "#pragma unroll\n            for (int e_ = 0; e_ < %d; e_++)\n"
               "                if ((mk[r_] >> e_) & 1u) s_out[q_++] = xs[r_][e_];\n"
               "        }\n    }\n", V);
    bputs(b, "    __syncthreads();\n"
             "    {\n"
             "        const long long pre_ = s_prefix;\n"
             "        const int agg_ = (int)s_agg;\n"
             "        for (int j_ = threadIdx.x; j_ < agg_; j_ += blockDim.x) out_[pre_ + j_] = s_out[j_];\n"
             "    }\n"
             "}\n\n");
}

/* marks: three arrays of nid flags, the plan's, cleared here for k */
static void emit_kernel(E *e, const Kernel *k, int nid, bool *marks) {
    if (kernel_blas(k)) return; /* a library call */
    Buf kb = {.a = e->a};
    KE ke = {.e = e, .k = k, .b = &kb, .nid = nid, .inval = marks, .done = marks + nid, .seen = marks + 2 * nid};
    memset(marks, 0, 3 * (size_t)nid);
    for (int i = 0; i < k->nvals; i++) ke.inval[k->vals[i]->id] = true;
    (void)is_in;
    switch (k->kind) {
    case K_MAP:
        emit_map(&ke);
        if (kernel_region_update(k)) emit_update_region(&ke);
        break;
    case K_REDUCE: emit_reduce(&ke); break;
    case K_ROW: emit_row(&ke); break;
    case K_SCAN: emit_scan(&ke); break;
    case K_MATMUL: emit_matmul(&ke); break;
    case K_HIST: emit_hist(&ke); break;
    case K_COMPACT: emit_compact(&ke); break;
    }
    /* helpers the kernel needed go first */
    if (e->helpers.s) bputs(&e->out, e->helpers.s);
    if (e->funcs.s) bputs(&e->out, e->funcs.s);
    e->helpers = (Buf){.a = e->a};
    e->funcs = (Buf){.a = e->a};
    bprintf(&e->out, "/* %s: %s */\n", k->name, kernel_kind_name[k->kind]);
    if (kb.s) bputs(&e->out, kb.s);
}

static void prelude(E *e) {
    bputs(&e->out, "/* Generated by cukc (compiler/emit_cuda.c). */\n");
    static const char *const files[] = {"ops.h", "philox.h", "reduce.cuh", "scan.cuh", "compact.cuh", "vec.cuh", "hist.cuh"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *t = embedded_find(files[i]);
        if (!t) die("embedded file %s missing (scripts/embed.cmake)", files[i]);
        bputs(&e->out, t);
        bputs(&e->out, "\n");
    }
}

static char *finish(E *e) { return e->out.s ? e->out.s : arena_strdup(e->a, ""); }

static void emit_plan_into(E *e, const Plan *pl) {
    int nid = pl->fn->nvals > 0 ? pl->fn->nvals : 1;
    /* lambda bodies may number their values past nvals */
    for (int i = 0; i < pl->nkernels; i++)
        for (int j = 0; j < pl->kernels[i]->nvals; j++)
            if (pl->kernels[i]->vals[j]->id + 1 > nid) nid = pl->kernels[i]->vals[j]->id + 1;
    bool *marks = NEWN(e->a, bool, 3 * ((size_t)nid + 1));
    for (int i = 0; i < pl->nkernels; i++) emit_kernel(e, pl->kernels[i], nid + 1, marks);
}

/* The emitter recurses once per level of a kernel's expression: the pipeline runs it on
   a deep stack. */
static char *emit_plans(Arena *a, const Plan *const *plans, int nplans) {
    E e = {.a = a, .out = {.a = a}, .helpers = {.a = a}, .funcs = {.a = a}};
    e.have = NEWN(a, bool, (size_t)OP_COUNT * DT_COUNT);
    prelude(&e);
    for (int i = 0; i < nplans; i++) emit_plan_into(&e, plans[i]);
    return finish(&e);
}

char *emit_cuda_plan(Arena *a, const Plan *pl) { return emit_plans(a, &pl, 1); }

char *emit_cuda_program(Arena *a, const Program *p, const PlanSet *ps) {
    (void)p;
    return emit_plans(a, (const Plan *const *)ps->plans, ps->nplans);
}
