/* The fusion pass: groups each statement's array values into as few device kernels as
   the rules allow and records the plan in kernel.h's form. One function per rule, named
   as docs/fusion.md and the tests in tests/lit/fusion/ name it:

     rule1_vertical    elementwise chains, generators and index transforms (slices,
                       concat, gathers, ...) become one kernel body: only what must be in
                       memory is written
     rule2_map_reduce  each reduction is a kernel that reads its producers in place
     rule3_map_scan    producers fuse into a scan, and a chain of single consumers is
                       applied before its store (scan-map); a matrix product's scale,
                       bias and relu become cuBLASLt's epilogue (matmul_epilogue)
     rule4_horizontal  sibling reductions over one iteration space share one pass
     rule5_rows        last-axis reduce-then-broadcast steps are computed per row inside
                       the map that consumes them (softmax, layer norm)
     rule6_scatter     a scatter or histogram is a kernel over its indices that computes
                       its index and value producers inside it
     rule6_compact     a compaction (x[mask], filter, nonzero) is one kernel that
                       computes x and the mask in its body and writes only the kept
                       elements
     rule7_recompute   a value several kernels need is recomputed in each when cheap,
                       else written once

   (Rule 6's reductions of filters are rewritten by sema: rule6_masked in sema.c.) The
   kernel records, their parameter blocks, launch shapes and plan printing are in
   kernel.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/kernel.h"

/* What each Val is, for grouping. */
enum {
    C_CONST,  /* a literal: inlined into kernels */
    C_HOST,   /* a scalar computed on the host (or read back from the device) */
    C_LEAF,   /* an array that exists before any kernel runs: slot, load, call, checkdim */
    C_FUSE,   /* elementwise, generator or index transform: fusible */
    C_RED,    /* a reduction of an array */
    C_SCAN,   /* a scan */
    C_MATMUL, /* a matrix product */
    C_HIST,   /* a scatter or histogram (rule 6) */
    C_COMPACT,/* a compaction: x[mask], filter, nonzero */
};

/* A value costing more than this (op_info's costs) is materialised rather than
   recomputed when consumers in different kernels need it (rule 7): ~two
   transcendentals. */
#define RECOMPUTE_MAX 16

/* Index transforms chained in one kernel (rule 1) at most: a longer chain (x[0:][0:]...)
   writes every CHAIN_MAX-th value, so that the emitted code stays shallow. */
#define CHAIN_MAX 16

typedef struct IntVec {
    int *v;
    int n, cap;
} IntVec;

typedef struct F {
    Arena *a;
    Fn *fn;
    int nv;
    Val **val;       /* by id */
    int *region;     /* statement index a Val was first reached from, -1 if none */
    int *cls;
    bool *root;      /* a statement's value */
    bool *mat;       /* written to memory by some kernel (or already in memory) */
    IntVec *users;   /* distinct consumers in the same region, by id */
    int *rowof;      /* a reduction absorbed into the row kernel of this map root, else -1 */
    int *inscan;     /* epilogue node (or the scan itself) of this scan id, else -1 */
    int *scantop;    /* for a scan: the value its kernel writes */
    int *group;      /* for a reduction: the first reduction of its horizontal group */
    int64_t *keys;   /* symbolic dims, by id * MAXRANK + axis; 0 = not computed */
    int64_t *pkeys;  /* parameter dims, by slot * MAXRANK + axis, from checkdims */
    int64_t *offk;   /* slice_key's table: pairs (a dim's key, k) for the size n - k */
    int noffk, capoffk;
    int *nsets;      /* S_SET count per slot */
    Val **setval;    /* the value of the only S_SET of a slot */
    int cur_region;
    int *seen;       /* by id: the stamp of the last depends_on query that walked it */
    int stamp;
    IntVec order;    /* all region Vals, topological within each region, regions in order */
    Plan *plan;
} F;

static void iv_push(Arena *a, IntVec *iv, int x) {
    if (iv->n == iv->cap) {
        int nc = iv->cap ? iv->cap * 2 : 4;
        int *nvv = NEWN(a, int, nc);
        if (iv->n) memcpy(nvv, iv->v, sizeof(int) * (size_t)iv->n);
        iv->v = nvv;
        iv->cap = nc;
    }
    iv->v[iv->n++] = x;
}
static bool iv_has(const IntVec *iv, int x) {
    for (int i = 0; i < iv->n; i++)
        if (iv->v[i] == x) return true;
    return false;
}
static void iv_add(Arena *a, IntVec *iv, int x) {
    if (!iv_has(iv, x)) iv_push(a, iv, x);
}

static bool value_arg(const Val *v, int i) { return op_value_arg(v->op, i); }

static int classify(const Val *v) {
    switch (op_info[v->op].kind) {
    case OK_CONST: return C_CONST;
    case OK_REDUCE: return v->args[0]->rank > 0 ? C_RED : C_HOST;
    case OK_SCAN: return v->rank > 0 ? C_SCAN : C_HOST;
    case OK_MATMUL: return C_MATMUL;
    case OK_HIST: return C_HIST;
    case OK_COMPACT: return C_COMPACT;
    case OK_EW:
    case OK_GEN:
    case OK_INDEX: return v->rank == 0 ? C_HOST : C_FUSE;
    case OK_LEAF: return v->rank == 0 ? C_HOST : C_LEAF;
    case OK_CHECK:
        /* transparent over a fusible value: the executor checks before the kernel that
           computes it runs (as the CPU backend checks before it streams the value) */
        return v->rank == 0 ? C_HOST : classify(v->args[0]) == C_FUSE ? C_FUSE : C_LEAF;
    }
    return C_LEAF;
}

/* ---- regions: the Vals each statement needs ------------------------------------------ */

static void visit(F *f, Val *v) {
    if (!v) return;
    ASSERT(v->id >= 0 && v->id < f->nv);
    if (f->val[v->id]) {
        ASSERT(f->val[v->id] == v);
        return; /* seen in this region, or an earlier one (then it is an input here) */
    }
    f->val[v->id] = v;
    f->region[v->id] = f->cur_region;
    f->cls[v->id] = classify(v);
    for (int i = 0; i < v->nargs; i++) visit(f, v->args[i]);
    if (v->init) visit(f, v->init);
    iv_push(f->a, &f->order, v->id);
}

static void add_user(F *f, Val *arg, Val *user) {
    if (!arg || f->region[arg->id] != f->region[user->id]) return;
    iv_add(f->a, &f->users[arg->id], user->id);
}

static void walk_stmts(F *f, Stmt *s, bool top) {
    for (; s; s = s->next) {
        if (s->kind == S_SET && s->slot >= 0 && s->slot < f->fn->nslots) {
            f->nsets[s->slot]++;
            f->setval[s->slot] = s->v;
        }
        if (s->kind == S_FOR && s->slot >= 0 && s->slot < f->fn->nslots) f->nsets[s->slot] += 2;
        f->cur_region++;
        visit(f, s->v);
        visit(f, s->v2);
        if (s->v && s->v->rank > 0) f->root[s->v->id] = true;
        if (s->v2 && s->v2->rank > 0) f->root[s->v2->id] = true;
        if (s->kind == S_RETURN)
            for (int k = 0; k < s->nvs; k++) {
                /* several results in one region: rule 4 may compute them in one kernel */
                visit(f, s->vs[k]);
                if (s->vs[k]->rank > 0) f->root[s->vs[k]->id] = true;
            }
        (void)top;
        walk_stmts(f, s->body, false);
        walk_stmts(f, s->els, false);
    }
}

/* ---- symbolic shapes ---------------------------------------------------------------- */
/* A dim key names a size: equal keys mean provably equal sizes within one region. */
#define DK(tag, x) (((int64_t)(tag) << 56) | ((int64_t)(x) & ((INT64_C(1) << 56) - 1)))
enum { T_UNIQ = 1, T_CONST, T_SSLOT, T_PSLOT, T_MSLOT, T_SUNIQ, T_OFFS };

static int64_t dkey(F *f, Val *v, int axis, int depth);

static int64_t scalar_key(F *f, Val *d, int depth) {
    if (!d) return DK(T_SUNIQ, 0x7fffff);
    if (d->op == OP_CONST) return DK(T_CONST, d->c.i);
    if (d->op == OP_DIM) return dkey(f, d->args[0], d->axis, depth + 1);
    if (d->op == OP_SLOT) {
        if (!f->fn->slots[d->slot].mutable_) return DK(T_SSLOT, d->slot);
        return DK(T_SSLOT, ((int64_t)f->region[d->id] << 20) | d->slot);
    }
    return DK(T_SUNIQ, d->id);
}

static int64_t slot_key(F *f, Val *v, int axis, int depth) {
    int s = v->slot;
    if (s < f->fn->nparams) {
        int64_t k = f->pkeys[s * MAXRANK + axis];
        return k ? k : DK(T_PSLOT, s * MAXRANK + axis);
    }
    if (!f->fn->slots[s].mutable_ && f->nsets[s] == 1 && f->setval[s] && depth < 64 &&
        f->setval[s]->rank == v->rank)
        return dkey(f, f->setval[s], axis, depth + 1);
    return DK(T_MSLOT, ((int64_t)f->region[v->id] << 24) | (s * MAXRANK + axis));
}

/* A constant slice bound on an axis of size n as a * n + c (a negative bound counts from
   the end, a missing one is 0 or n); false when it is not a constant. */
static bool bound_form(const Val *b, bool stop, int *a, int64_t *c) {
    if (!b) {
        *a = stop, *c = 0;
        return true;
    }
    if (b->op != OP_CONST || b->dt == DT_F32 || b->dt == DT_F64) return false;
    *a = b->c.i < 0, *c = b->c.i;
    return true;
}

/* Slices of step 1 with constant bounds from the start and from the end (x[1:-1],
   x[2:], x[0:-2]) have length n - k on an axis of size n: one key per (n's key, k), so
   the slices of a stencil have provably equal shapes. (All are empty when n < k.) */
static int64_t slice_key(F *f, Val *v, int axis, int depth) {
    int64_t uniq = DK(T_UNIQ, (int64_t)v->id * MAXRANK + axis);
    Val *x = v->args[0];
    int ax = -1;
    for (int k = 0, o = 0; k < x->rank; k++) {
        if (v->slmode[k] == SL_INDEX) continue;
        if (o++ == axis) {
            ax = k;
            break;
        }
    }
    if (ax < 0) return uniq;
    Val *step = v->args[3 + 3 * ax];
    if (step && !(step->op == OP_CONST && step->c.i == 1 && step->dt != DT_F32 && step->dt != DT_F64)) return uniq;
    int a0, a1;
    int64_t c0, c1;
    if (!bound_form(v->args[1 + 3 * ax], false, &a0, &c0) || !bound_form(v->args[2 + 3 * ax], true, &a1, &c1)) return uniq;
    if (a0 != 0 || a1 != 1 || c0 < 0 || c1 > 0) return uniq;
    int64_t off;
    if (__builtin_sub_overflow(c0, c1, &off)) return uniq; /* x[9223372036854775807:-2]: empty for every n */
    int64_t kx = dkey(f, x, ax, depth + 1);
    if (off == 0) return kx;
    for (int i = 0; i < f->noffk; i++)
        if (f->offk[2 * i] == kx && f->offk[2 * i + 1] == off) return DK(T_OFFS, i);
    if (f->noffk == f->capoffk) {
        int cap = f->capoffk ? 2 * f->capoffk : 16;
        int64_t *nk = NEWN(f->a, int64_t, 2 * (size_t)cap);
        if (f->noffk) memcpy(nk, f->offk, sizeof(int64_t) * 2 * (size_t)f->noffk);
        f->offk = nk, f->capoffk = cap;
    }
    f->offk[2 * f->noffk] = kx, f->offk[2 * f->noffk + 1] = off;
    return DK(T_OFFS, f->noffk++);
}

static int64_t dkey_compute(F *f, Val *v, int axis, int depth) {
    int64_t uniq = DK(T_UNIQ, (int64_t)v->id * MAXRANK + axis);
    if (depth > 200) return uniq;
    if (op_is_ew(v->op)) {
        int64_t k = 0;
        for (int i = 0; i < v->nargs; i++) {
            Val *x = v->args[i];
            int ax = axis - (v->rank - x->rank);
            if (ax < 0) continue;
            int64_t kx = dkey(f, x, ax, depth + 1);
            if (kx == DK(T_CONST, 1)) continue; /* a size-1 axis stretches */
            if (k && k != kx) return uniq;
            k = kx;
        }
        return k ? k : DK(T_CONST, 1);
    }
    switch (v->op) {
    case OP_SLOT: return slot_key(f, v, axis, depth);
    case OP_CHECKDIM: return dkey(f, v->args[0], axis, depth + 1);
    case OP_IOTA: return scalar_key(f, v->args[0], depth);
    case OP_LINSPACE: return scalar_key(f, v->args[2], depth);
    case OP_FULL:
    case OP_RAND:
    case OP_RANDN: return 1 + axis < v->nargs ? scalar_key(f, v->args[1 + axis], depth) : uniq;
    case OP_REDUCE: {
        Val *x = v->args[0];
        if (red_segs(v)) return uniq; /* one value per segment */
        if (v->axis == AXIS_ALL) return DK(T_CONST, 1);
        if (v->keepdims) return axis == v->axis ? DK(T_CONST, 1) : dkey(f, x, axis, depth + 1);
        return dkey(f, x, axis < v->axis ? axis : axis + 1, depth + 1);
    }
    case OP_SCAN:
        if (v->args[0]->rank != v->rank) return uniq;
        return dkey(f, v->args[0], axis, depth + 1);
    case OP_SLICE: return slice_key(f, v, axis, depth);
    case OP_REVERSE: return dkey(f, v->args[0], axis, depth + 1);
    case OP_ROLL:
    case OP_UPDATE: return dkey(f, v->args[0], axis, depth + 1);
    case OP_STACK:
        if (axis == v->axis) return DK(T_CONST, v->nargs);
        return dkey(f, v->args[0], axis < v->axis ? axis : axis - 1, depth + 1);
    case OP_TRANSPOSE: return dkey(f, v->args[0], v->perm[axis], depth + 1);
    case OP_SCATTER:
    case OP_HIST: return dkey(f, v->args[0], axis, depth + 1);
    case OP_MATMUL: return axis == 0 ? dkey(f, v->args[0], 0, depth + 1) : dkey(f, v->args[1], 1, depth + 1);
    default: return uniq;
    }
}

static int64_t dkey(F *f, Val *v, int axis, int depth) {
    if (v->op == OP_SLOT || v->op == OP_DIM) return dkey_compute(f, v, axis, depth);
    int64_t *k = &f->keys[(size_t)v->id * MAXRANK + axis];
    if (!*k) *k = dkey_compute(f, v, axis, depth);
    return *k;
}

static bool same_shape(F *f, Val *a, Val *b) {
    if (a->rank != b->rank) return false;
    for (int k = 0; k < a->rank; k++)
        if (dkey(f, a, k, 0) != dkey(f, b, k, 0)) return false;
    return true;
}

/* Parameters x: T[n] and y: T[n] share n: sema checks it at entry with checkdims,
   which tell us which parameter axes are equal. */
static void param_keys(F *f) {
    for (Stmt *s = f->fn->body; s; s = s->next) {
        if (s->kind != S_EVAL || !s->v) continue;
        for (Val *c = s->v; c->op == OP_CHECKDIM; c = c->args[0]) {
            Val *d = c->args[1], *o = c->args[2];
            if (!d || d->op != OP_DIM) continue;
            Val *src = d->args[0];
            while (src->op == OP_CHECKDIM) src = src->args[0]; /* the dims of a checked slot are its own */
            if (src->op != OP_SLOT) continue;
            int ps = src->slot;
            if (ps >= f->fn->nparams || d->axis >= MAXRANK) continue;
            int64_t ko = scalar_key(f, o, 0);
            int64_t mine = DK(T_PSLOT, ps * MAXRANK + d->axis);
            if (ko != mine) f->pkeys[ps * MAXRANK + d->axis] = ko;
        }
    }
}

/* ---- costs -------------------------------------------------------------------------- */

/* The cost of recomputing v's unmaterialised fusible subtree (a shared operand counts
   once per use, as each use recomputes it), up to limit: the walk stops once it is
   passed, so that a DAG whose tree is exponentially large costs little to judge. */
static int subtree_cost(F *f, Val *v, int depth, int limit) {
    if (f->cls[v->id] != C_FUSE || depth > 64) return 0;
    int c = op_info[v->op].cost;
    for (int i = 0; i < v->nargs && c <= limit; i++)
        if (v->args[i] && value_arg(v, i) && !f->mat[v->args[i]->id])
            c += subtree_cost(f, v->args[i], depth + 1, limit - c);
    return c;
}

/* ---- the rules ---------------------------------------------------------------------- */

/* Whether v depends on target within its region. `seen` marks the values this query has
   walked (stamped with f->stamp), so that a DAG is walked once, not as a tree. */
static bool depends_walk(F *f, Val *v, Val *target, int depth) {
    if (v == target) return true;
    if (!v || depth > 500 || f->region[v->id] != f->region[target->id] || f->seen[v->id] == f->stamp) return false;
    f->seen[v->id] = f->stamp;
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && depends_walk(f, v->args[i], target, depth + 1)) return true;
    return v->init ? depends_walk(f, v->init, target, depth + 1) : false;
}

static bool depends_on(F *f, Val *v, Val *target) {
    f->stamp++;
    return depends_walk(f, v, target, 0);
}

/* Nodes a map root m computes in-kernel: through unmaterialised fusible values and the
   reductions absorbed into its row kernel. */
static void row_reach(F *f, Val *v, int m, bool *in) {
    if (!v || in[v->id]) return;
    int c = f->cls[v->id];
    bool inside = v->id == m || (c == C_FUSE && !f->mat[v->id]) || (c == C_RED && f->rowof[v->id] == m);
    if (!inside) return;
    in[v->id] = true;
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && value_arg(v, i)) row_reach(f, v->args[i], m, in);
}

/* A last-axis keepdims reduction over the map m's own shape, consumed only inside m,
   is computed per row inside m's kernel. */
static void absorb_rows(F *f, Val *m, bool *in) {
    if (m->rank < 2) return;
    for (bool changed = true; changed;) {
        changed = false;
        memset(in, 0, sizeof(bool) * (size_t)f->nv);
        row_reach(f, m, m->id, in);
        for (int id = 0; id < f->nv; id++) {
            if (!in[id]) continue;
            Val *v = f->val[id];
            for (int i = 0; i < v->nargs; i++) {
                Val *r = v->args[i];
                if (!r || !value_arg(v, i) || f->cls[r->id] != C_RED || f->rowof[r->id] >= 0) continue;
                if (f->root[r->id] || f->region[r->id] != f->region[m->id]) continue;
                if (r->axis != m->rank - 1 || !r->keepdims || r->rank != m->rank) continue;
                if (r->red == RED_ARGMIN || r->red == RED_ARGMAX) continue;
                if (!same_shape(f, r->args[0], m)) continue;
                bool ok = true;
                for (int u = 0; u < f->users[r->id].n; u++)
                    if (!in[f->users[r->id].v[u]]) ok = false;
                if (!ok) continue;
                f->rowof[r->id] = m->id;
                f->mat[r->id] = false;
                changed = true;
            }
        }
    }
}

/* An index transform (through checks) that a consuming index transform can read at
   the indices it wants, inside the consumer's kernel (kernel.h, index chains). */
static bool chain_operand(const Val *x) {
    for (int depth = 0; depth < 64; depth++, x = x->args[0]) {
        if (index_chains(x->op)) return x->rank > 0;
        if (x->op != OP_CHECKDIM) return false;
    }
    return false;
}

/* An elementwise operand x of an index chain (concat(u[:, 0:1], 0.25 * (u[0:-2, 1:-1] +
   ...), ...), pad(x * 2.0, 1)) computed where the chain reads it, at the source index it
   wants: every array it reads is an index chain, an array of x's own shape (in memory,
   or elementwise again by the same rule), so no broadcasting. Only when x has one
   consumer or is cheap to recompute (each consumer of a chain reads each element once).
   emit_cuda.c, emit_ew_at. */
static bool ew_chain_rec(F *f, Val *x, Val *top, int depth) {
    if (depth > 32 || f->cls[x->id] != C_FUSE || f->root[x->id] || !(op_is_ew(x->op) && x->op != OP_SCALARCALL))
        return false;
    for (int i = 0; i < x->nargs; i++) {
        Val *a = x->args[i];
        if (!a || !value_arg(x, i) || a->rank == 0) continue;
        if (!same_shape(f, a, top)) return false;
        int c = f->cls[a->id];
        if (c == C_LEAF || (c == C_FUSE && f->mat[a->id])) continue;
        if (c == C_FUSE && chain_operand(a)) continue;
        if (!ew_chain_rec(f, a, top, depth + 1)) return false;
    }
    return true;
}

static bool ew_chain_operand(F *f, Val *x) {
    if (x->rank == 0 || !ew_chain_rec(f, x, x, 0)) return false;
    return f->users[x->id].n <= 1 || subtree_cost(f, x, 0, RECOMPUTE_MAX) <= RECOMPUTE_MAX;
}

/* Operand j of gather v that its kernel computes rather than reads from memory: the
   index when it has the gather's shape (read at the iteration index, so x[i * 2 + 1]
   and the flat offset of x[rows, cols] fuse), a source that is iota (the bounds check
   x[rows, cols] lowers to: the value is the index itself) or a reshape of an array in
   memory (x[rows, cols] reads x as [n * m] from its own buffer). */
bool gather_computes(const Val *v, int j) {
    const Val *x = v->args[j];
    if (j == 1) return x->rank == v->rank;
    return (x->op == OP_IOTA && x->rank == 1) || (x->op == OP_RESHAPE && x->args[0]->rank > 0);
}

/* Operand x of matrix product v that cuBLASLt reads transposed where it lies (its
   TRANSA/TRANSB), so the transpose is never written: a 2-D transpose, used by v alone,
   of an array in memory. */
static bool mm_reads_transposed(F *f, Val *v, Val *x) {
    if ((v->dt != DT_F32 && v->dt != DT_F64) || x->op != OP_TRANSPOSE || x->rank != 2 || x->perm[0] != 1) return false;
    if (f->cls[x->id] != C_FUSE || f->root[x->id] || f->users[x->id].n != 1 || f->region[x->id] != f->region[v->id])
        return false;
    Val *src = x->args[0];
    return src->rank == 2 && (f->cls[src->id] == C_LEAF || f->mat[src->id]);
}

/* Rule 1: a fusible value (elementwise, generator, index transform) becomes part of the
   body of every kernel that consumes it, unless it must be in memory: a statement's
   value, the operand of an index transform (unless both are index transforms that
   chain: pad, roll, stack, concat, slices, reverse, transpose), a matrix product or a
   host operation, or a value an earlier statement computed. Non-fusible results are in memory anyway. */
static void rule1_vertical(F *f) {
    int *chain = NEWN(f->a, int, f->nv > 0 ? f->nv : 1); /* index transforms chained so far */
    for (int i = 0; i < f->order.n; i++) {
        int id = f->order.v[i];
        Val *v = f->val[id];
        int c = f->cls[id];
        if (c == C_RED || c == C_SCAN || c == C_MATMUL || c == C_LEAF || c == C_HIST || c == C_COMPACT) f->mat[id] = true;
        if (c == C_FUSE && f->root[id]) f->mat[id] = true;
        v->kernel = -1;
        bool needs_mem = op_is_index(v->op) || c == C_MATMUL || c == C_HOST || c == C_LEAF;
        /* segment offsets are read by position (binary search, bounds), not as elements */
        if (red_segs(v) && f->cls[red_segs(v)->id] == C_FUSE) f->mat[red_segs(v)->id] = true;
        if (v->op == OP_DIM) needs_mem = false; /* only the shape, known on the host */
        for (int j = 0; j < v->nargs; j++) {
            Val *x = v->args[j];
            if (!x || x->rank == 0 || !needs_mem) continue;
            /* (a rank-0 transform is an element read on the host: its operand is in memory) */
            if (v->op == OP_GATHER && gather_computes(v, j)) continue; /* computed in the gather's kernel */
            if (c == C_MATMUL && mm_reads_transposed(f, v, x)) {
                f->inscan[x->id] = v->id; /* part of the product's call (in_kernel) */
                continue;
            }
            if (index_chains(v->op) && v->rank > 0 && chain_operand(x) && chain[x->id] < CHAIN_MAX) {
                if (chain[x->id] + 1 > chain[id]) chain[id] = chain[x->id] + 1; /* read through the chain */
                continue;
            }
            if (index_chains(v->op) && v->rank > 0 && !f->mat[x->id] && ew_chain_operand(f, x)) {
                int cx = 0;
                for (int q = 0; q < x->nargs; q++)
                    if (x->args[q] && chain[x->args[q]->id] > cx) cx = chain[x->args[q]->id];
                if (cx < CHAIN_MAX) {
                    if (cx + 1 > chain[id]) chain[id] = cx + 1;
                    continue;
                }
            }
            if (f->cls[x->id] == C_FUSE) f->mat[x->id] = true;
        }
        if (v->op == OP_CHECKDIM && v->args[0] && chain[v->args[0]->id] > chain[id]) chain[id] = chain[v->args[0]->id];
        if (index_chains(v->op) && !chain[id]) chain[id] = 1;
        /* Reached from an earlier statement: that statement wrote it. */
        for (int j = 0; j < v->nargs; j++) {
            Val *x = v->args[j];
            if (x && f->region[x->id] != f->region[id] && f->cls[x->id] == C_FUSE) f->mat[x->id] = true;
        }
    }
}

/* Rule 6: a scatter or histogram is a kernel over its indices (the K_HIST that
   build_kernels makes) that computes its unmaterialised index and value producers
   inside it, like a reduction: histogram(x * 2.0 + 1.0, ...) reads x once. Its
   destination is copied into the result before the kernel runs, so it must be in
   memory, except a full()/zeros() of any size, which the executor fills instead:
   bincount(idx % 1000, 1000) is one kernel. */
static void rule6_scatter(F *f) {
    for (int i = 0; i < f->order.n; i++) {
        int id = f->order.v[i];
        if (f->cls[id] != C_HIST) continue;
        Val *d = f->val[id]->args[0];
        if (f->cls[d->id] == C_FUSE && d->op != OP_FULL) f->mat[d->id] = true;
    }
}

/* Rule 3, scan-map: single consumers of the same shape are applied in the scan kernel
   before its store, so the scan itself is never written. (Map-scan needs nothing here:
   the scan kernel reads its unmaterialised producers like any kernel.) */
static void scan_epilogue(F *f, Val *s) {
    f->inscan[s->id] = s->id;
    Val *t = s;
    if (s->args[0]->rank == s->rank) {
        while (!f->root[t->id] && f->users[t->id].n == 1) {
            Val *u = f->val[f->users[t->id].v[0]];
            if (f->cls[u->id] != C_FUSE || !op_is_ew(u->op) || !same_shape(f, u, s)) break;
            if (f->inscan[u->id] >= 0) break;
            f->inscan[u->id] = s->id;
            if (t != s) f->mat[t->id] = false;
            t = u;
        }
    }
    if (t != s) {
        f->mat[s->id] = false;
        f->mat[t->id] = true;
    }
    f->scantop[s->id] = t->id;
}

/* The operand of elementwise u that is not t (NULL when both are t). */
static Val *other_arg(Val *u, Val *t) {
    if (u->nargs != 2) return NULL;
    return u->args[0] == t ? u->args[1] : u->args[1] == t ? u->args[0] : NULL;
}

/* A constant +0 (or a cast of one: relu's T(0)). */
static bool is_zero(const Val *o) {
    if (o->op == OP_CAST && o->args[0]->rank == 0) return is_zero(o->args[0]);
    if (o->op != OP_CONST) return false;
    return dtype_info[o->dt].is_float ? o->c.f == 0.0 && !signbit(o->c.f) : o->c.i == 0;
}

/* Rule 3 for an f32 or f64 matrix product (kernel_blas): the epilogue cuBLASLt applies
   in the same call, act(alpha * (a @ b) + bias), taken from its single consumers in
   that order: a multiply by a scalar, an add of a vector along the rows (of the
   product's last axis, known equal: the same size key), max(., 0). Each is optional;
   whatever follows is a map kernel over the result as before. (A transposed operand
   is the call's too: rule1_vertical, mm_reads_transposed.) */
static void matmul_epilogue(F *f, Val *mm) {
    f->inscan[mm->id] = mm->id;
    f->scantop[mm->id] = mm->id;
    if (mm->rank != 2 || (mm->dt != DT_F32 && mm->dt != DT_F64)) return;
    Val *t = mm;
    int stage = 0; /* 1 after alpha, 2 after the bias, 3 after relu */
    while (stage < 3 && !f->root[t->id] && f->users[t->id].n == 1) {
        Val *u = f->val[f->users[t->id].v[0]];
        Val *o = other_arg(u, t);
        if (!o || f->cls[u->id] != C_FUSE || u->dt != mm->dt || o->dt != mm->dt || !same_shape(f, u, mm) ||
            f->inscan[u->id] >= 0)
            break;
        int next;
        if (u->op == OP_MUL && o->rank == 0 && stage < 1) next = 1;
        else if (u->op == OP_ADD && o->rank == 1 && stage < 2 && dkey(f, o, 0, 0) == dkey(f, mm, 1, 0)) next = 2;
        else if (u->op == OP_MAXIMUM && is_zero(o)) next = 3;
        else break;
        /* the bias is read from memory: cuBLASLt takes a pointer */
        if (next == 2 && f->cls[o->id] == C_FUSE) f->mat[o->id] = true;
        f->inscan[u->id] = mm->id;
        if (t != mm) f->mat[t->id] = false;
        t = u;
        stage = next;
    }
    if (t != mm) {
        f->mat[mm->id] = false;
        f->mat[t->id] = true;
    }
    f->scantop[mm->id] = t->id;
}

static void rule3_map_scan(F *f) {
    for (int i = 0; i < f->order.n; i++) {
        int c = f->cls[f->order.v[i]];
        if (c == C_SCAN) scan_epilogue(f, f->val[f->order.v[i]]);
        if (c == C_MATMUL) matmul_epilogue(f, f->val[f->order.v[i]]);
    }
}

/* Rule 5, over the maps that are written (last ones first, so that an outer map takes
   the rows it can). */
/* Rule 5's second form, per-row values: a value P with one element per row (a statement's
   value or a value written for later) computed elementwise from last-axis reductions over
   one array shape S, where some reduction's input needs another's value (logsumexp:
   log(sum(exp(x - m), axis=1)) + m[:, 0] with m = max(x, axis=1, keepdims=true)), or
   such a reduction itself (sum(exp(x - max(x, axis=1, keepdims=true)), axis=1)). The
   reductions become phases of one row kernel over S (the row read once) and P is
   written once per row. RowWalk collects the reductions; false when something else is
   in the way (an array of another shape in P's elementwise part, argmin/argmax, ...). */
typedef struct RowWalk {
    Val *P, *S;    /* the root; the reductions' input shape (the first one's input) */
    IntVec reds;   /* candidate reductions */
    bool nested;   /* some reduction is inside another's input */
} RowWalk;

static bool row_cand(F *f, RowWalk *w, Val *r) {
    if (r->op != OP_REDUCE || red_segs(r) || r->red == RED_ARGMIN || r->red == RED_ARGMAX) return false;
    Val *in = r->args[0];
    if (in->rank < 2 || r->axis != in->rank - 1) return false;
    if (f->region[r->id] != f->region[w->P->id] || (r != w->P && (f->root[r->id] || f->rowof[r->id] >= 0)))
        return false;
    if (!w->S) w->S = in;
    else if (!same_shape(f, in, w->S)) return false;
    iv_add(f->a, &w->reds, r->id);
    return true;
}

static bool row_space_walk(F *f, RowWalk *w, Val *v, int depth);

/* v in P's per-row part: elementwise on per-row values of P's rank */
static bool row_value_walk(F *f, RowWalk *w, Val *v, int depth) {
    if (!v || depth > 200) return false;
    int c = f->cls[v->id];
    if (v->rank == 0 || c == C_CONST || c == C_HOST) return true;
    if (c == C_RED) {
        if (iv_has(&w->reds, v->id)) return true;
        return v->rank == w->P->rank && row_cand(f, w, v) && row_space_walk(f, w, v->args[0], depth + 1);
    }
    if (c != C_FUSE || (f->mat[v->id] && v != w->P) || v->rank != w->P->rank) return false;
    if (v->op == OP_RESHAPE && f->cls[v->args[0]->id] == C_RED && v->args[0]->keepdims &&
        v->args[0]->rank == v->rank + 1) {
        Val *r = v->args[0];
        return iv_has(&w->reds, r->id) || (row_cand(f, w, r) && row_space_walk(f, w, r->args[0], depth + 1));
    }
    if (!op_is_ew(v->op) && v->op != OP_CHECKDIM) return false;
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && value_arg(v, i) && !row_value_walk(f, w, v->args[i], depth + 1)) return false;
    return true;
}

/* v inside a reduction's input (over S): any producer; a last-axis keepdims reduction
   over S in it is another phase */
static bool row_space_walk(F *f, RowWalk *w, Val *v, int depth) {
    if (!v || depth > 200) return false;
    int c = f->cls[v->id];
    if (c == C_RED && v->keepdims && v->rank == w->S->rank && !f->root[v->id] && f->rowof[v->id] < 0 &&
        v->axis == v->rank - 1 && f->region[v->id] == f->region[w->P->id]) {
        w->nested = true;
        if (iv_has(&w->reds, v->id)) return true;
        return row_cand(f, w, v) && row_space_walk(f, w, v->args[0], depth + 1);
    }
    if (c != C_FUSE || f->mat[v->id]) return true; /* read from memory (or a scalar) */
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && value_arg(v, i) && !row_space_walk(f, w, v->args[i], depth + 1)) return false;
    return true;
}

static void absorb_row_values(F *f, Val *P, bool *in) {
    RowWalk w = {.P = P};
    bool ok = f->cls[P->id] == C_RED ? row_cand(f, &w, P) && row_space_walk(f, &w, P->args[0], 0)
                                      : row_value_walk(f, &w, P, 0);
    if (!ok || !w.nested || !w.S || (P->rank != w.S->rank - 1 && P->rank != w.S->rank)) return;
    for (int i = 0; i < w.reds.n; i++) f->rowof[w.reds.v[i]] = P->id;
    /* every use of a phase must be inside the kernel */
    memset(in, 0, sizeof(bool) * (size_t)f->nv);
    row_reach(f, P, P->id, in);
    for (int i = 0; i < w.reds.n && ok; i++) {
        int r = w.reds.v[i];
        for (int u = 0; u < f->users[r].n && ok; u++) ok = in[f->users[r].v[u]];
    }
    for (int i = 0; i < w.reds.n; i++) {
        int r = w.reds.v[i];
        if (!ok) f->rowof[r] = -1;
        else if (r != P->id) f->mat[r] = false;
    }
}

static void rule5_rows(F *f) {
    bool *in = NEWN(f->a, bool, f->nv);
    for (int i = f->order.n - 1; i >= 0; i--) {
        int id = f->order.v[i];
        if (f->cls[id] == C_FUSE && f->mat[id] && f->inscan[id] < 0) absorb_rows(f, f->val[id], in);
    }
    for (int i = f->order.n - 1; i >= 0; i--) {
        int id = f->order.v[i];
        Val *v = f->val[id];
        if (f->rowof[id] >= 0 || f->inscan[id] >= 0 || v->rank < 1) continue;
        if ((f->cls[id] == C_FUSE && f->mat[id]) || (f->cls[id] == C_RED && f->mat[id])) absorb_row_values(f, v, in);
    }
}

/* Rule 2: every reduction a row kernel did not take is a kernel of its own, with its
   unmaterialised producers computed inside it (kernel_members). */
static void rule2_map_reduce(F *f) {
    for (int i = 0; i < f->order.n; i++) {
        int a = f->order.v[i];
        if (f->cls[a] == C_RED && f->rowof[a] < 0) f->group[a] = a;
    }
}

/* Rule 4: reductions over the same iteration space, neither needing the other, join
   the first one's kernel. */
static void rule4_horizontal(F *f) {
    for (int i = 0; i < f->order.n; i++) {
        int a = f->order.v[i];
        if (f->cls[a] != C_RED || f->group[a] != a) continue;
        Val *ra = f->val[a];
        for (int j = i + 1; j < f->order.n; j++) {
            int b = f->order.v[j];
            Val *rb = f->val[b];
            if (f->cls[b] != C_RED || f->group[b] != b) continue;
            if (f->region[b] != f->region[a] || rb->axis != ra->axis) continue;
            if (red_segs(rb) != red_segs(ra)) continue; /* segmented ones share their offsets */
            if (!same_shape(f, rb->args[0], ra->args[0])) continue;
            bool dep = false;
            for (int k = 0; k < f->order.n && !dep; k++) {
                int g = f->order.v[k];
                if (f->group[g] == a && depends_on(f, rb, f->val[g])) dep = true;
            }
            if (!dep) f->group[b] = a;
        }
    }
}

/* The kernel that computes a consumer u's use of its operands, or -1 (host). */
static int owner_of_user(F *f, int u) {
    int c = f->cls[u];
    if (f->inscan[u] >= 0) return f->inscan[u];
    if (c == C_RED) return f->rowof[u] >= 0 ? f->rowof[u] : f->group[u];
    if (c == C_SCAN || c == C_HIST || c == C_COMPACT || (c == C_FUSE && f->mat[u])) return u;
    return -1;
}

/* Rule 7: values wanted by several kernels are recomputed in each when cheap, else
   written once. Consumers come after producers in `order`, so walk it backwards. */
static void rule7_recompute(F *f) {
    IntVec *own = NEWN(f->a, IntVec, f->nv);
    for (int i = f->order.n - 1; i >= 0; i--) {
        int v = f->order.v[i];
        if (f->cls[v] != C_FUSE || f->inscan[v] >= 0) continue;
        if (f->mat[v]) {
            iv_add(f->a, &own[v], v);
            continue;
        }
        for (int k = 0; k < f->users[v].n; k++) {
            int u = f->users[v].v[k];
            int o = owner_of_user(f, u);
            if (o >= 0) iv_add(f->a, &own[v], o);
            else if (f->cls[u] == C_FUSE && !f->mat[u])
                for (int j = 0; j < own[u].n; j++) iv_add(f->a, &own[v], own[u].v[j]);
        }
        /* A gather checks its indices (a run-time error on the GPU as on the CPU backend)
           even where nothing reads its elements, only its shape (len(x[idx])): one that
           no kernel computes gets its own. */
        if ((own[v].n > 1 && subtree_cost(f, f->val[v], 0, RECOMPUTE_MAX) > RECOMPUTE_MAX) ||
            (own[v].n == 0 && f->val[v]->op == OP_GATHER)) {
            f->mat[v] = true;
            own[v].n = 0;
            iv_add(f->a, &own[v], v);
        }
    }
}

/* ---- building kernels --------------------------------------------------------------- */

typedef struct KB {
    Kernel *k;
    int region;
    IntVec vals, ins, scalars, alias;
    bool *seen;
} KB;

static bool in_kernel(F *f, const Kernel *k, Val *v) {
    int c = f->cls[v->id];
    switch (k->kind) {
    case K_MAP:
    case K_ROW: {
        int m = k->outs[0]->id;
        return v->id == m || (c == C_FUSE && !f->mat[v->id] && f->inscan[v->id] < 0) ||
               (c == C_RED && f->rowof[v->id] == m);
    }
    case K_REDUCE:
        return (c == C_RED && f->rowof[v->id] < 0 && f->group[v->id] == k->reds[0]->id) ||
               (c == C_FUSE && !f->mat[v->id] && f->inscan[v->id] < 0);
    case K_SCAN:
        return f->inscan[v->id] == k->scan->id ||
               (c == C_FUSE && !f->mat[v->id] && f->inscan[v->id] < 0);
    case K_MATMUL: return f->inscan[v->id] == k->scan->id;
    case K_HIST: return v == k->outs[0] || (c == C_FUSE && !f->mat[v->id] && f->inscan[v->id] < 0);
    case K_COMPACT: return v == k->scan || (c == C_FUSE && !f->mat[v->id] && f->inscan[v->id] < 0);
    }
    return false;
}

/* Host scalars a lambda body captures become kernel parameters. */
static void lam_scalars(F *f, KB *b, Val *v, int depth) {
    if (!v || depth > 200 || v->op == OP_ARG || v->op == OP_CONST) return;
    if (!op_is_ew(v->op)) {
        if (!iv_has(&b->scalars, v->id) && v->id < f->nv) {
            if (!f->val[v->id]) f->val[v->id] = v;
            iv_push(f->a, &b->scalars, v->id);
        }
        return;
    }
    for (int i = 0; i < v->nargs; i++) lam_scalars(f, b, v->args[i], depth + 1);
}

static void kb_visit(F *f, KB *b, Val *v) {
    if (!v || b->seen[v->id]) return;
    b->seen[v->id] = true;
    if (f->cls[v->id] == C_CONST) return;
    if (f->region[v->id] == b->region && in_kernel(f, b->k, v)) {
        for (int i = 0; i < v->nargs; i++)
            if (v->args[i] && value_arg(v, i)) kb_visit(f, b, v->args[i]);
        if (v->init && (v->nargs < 2 || v->init != v->args[1])) kb_visit(f, b, v->init);
        if (v->lam) lam_scalars(f, b, v->lam, 0);
        iv_push(f->a, &b->vals, v->id);
        if (v->kernel < 0) v->kernel = b->k->id;
        return;
    }
    if (v->rank == 0) {
        if (!iv_has(&b->scalars, v->id)) iv_push(f->a, &b->scalars, v->id);
    } else {
        /* Within one statement every read of a slot sees the same array. */
        if (v->op == OP_SLOT)
            for (int i = 0; i < b->ins.n; i++) {
                Val *w = f->val[b->ins.v[i]];
                if (w->op == OP_SLOT && w->slot == v->slot && f->region[w->id] == f->region[v->id]) {
                    iv_push(f->a, &b->alias, v->id);
                    iv_push(f->a, &b->alias, w->id);
                    return;
                }
            }
        iv_push(f->a, &b->ins, v->id);
    }
}

static Val **to_vals(F *f, IntVec *iv, int *n) {
    Val **out = NEWN(f->a, Val *, iv->n + 1);
    for (int i = 0; i < iv->n; i++) out[i] = f->val[iv->v[i]];
    *n = iv->n;
    return out;
}

static Kernel *new_kernel(F *f, KernelKind kind, Val *space, const Stmt *st) {
    Kernel *k = NEW(f->a, Kernel);
    k->kind = kind;
    k->space = space;
    k->rank = space->rank;
    k->axis = AXIS_ALL;
    k->stmt = st;
    return k;
}

static void finish_kernel(F *f, Kernel *k, Val **starts, int nstarts) {
    Plan *p = f->plan;
    k->id = p->nkernels;
    k->name = arena_printf(f->a, "cuk_%s_k%d", f->fn->name, k->id);
    KB b = {.k = k, .seen = NEWN(f->a, bool, f->nv), .region = f->region[starts[0]->id]};
    for (int i = 0; i < nstarts; i++) kb_visit(f, &b, starts[i]);
    k->vals = to_vals(f, &b.vals, &k->nvals);
    k->ins = to_vals(f, &b.ins, &k->nins);
    k->scalars = to_vals(f, &b.scalars, &k->nscalars);
    k->alias = to_vals(f, &b.alias, &k->nalias);
    k->nalias /= 2;
    kernel_launch_shape(k, f->a);
    kernel_layout_params(f->a, k);
    Kernel **nk = NEWN(f->a, Kernel *, p->nkernels + 1);
    if (p->nkernels) memcpy(nk, p->kernels, sizeof(Kernel *) * (size_t)p->nkernels);
    nk[p->nkernels++] = k;
    p->kernels = nk;
}

/* Rule 6: a compaction is a kernel over x's shape whose body computes x and the mask
   (their unmaterialised producers, as a scan's or a reduction's are: rule1_vertical
   marks the compaction in memory but not its operands), so x[x > 0.5] and
   filter(|v| v > 0.0, a * b) read their leaves once and write only the kept
   elements. */
static void rule6_compact(F *f, Val *v, const Stmt *st) {
    Kernel *k = new_kernel(f, K_COMPACT, v->args[0], st);
    k->scan = v;
    k->outs = NEWN(f->a, Val *, 1);
    k->outs[0] = v;
    k->nouts = 1;
    finish_kernel(f, k, &v, 1);
}

static const Stmt *stmt_of_region(Stmt *s, int *counter, int want) {
    for (; s; s = s->next) {
        if (++*counter == want) return s;
        const Stmt *r = stmt_of_region(s->body, counter, want);
        if (r) return r;
        r = stmt_of_region(s->els, counter, want);
        if (r) return r;
    }
    return NULL;
}

/* A map root's kernel, or the row kernel of its nr row reductions; per-row values
   (absorb_row_values) iterate over their reductions' input. */
static void build_row_or_map(F *f, Val *v, const Stmt *st) {
    int id = v->id, nr = 0;
    /* the reductions of v's rows: v itself where it is one (the last, over the rows of
       the map it ends), and those the map's values read before it */
    for (int j = 0; j < f->order.n; j++)
        if (f->cls[f->order.v[j]] == C_RED && f->rowof[f->order.v[j]] == id) nr++;
    Val **reds = nr ? NEWN(f->a, Val *, nr) : NULL;
    int n = 0;
    for (int j = 0; j < f->order.n && nr; j++)
        if (f->cls[f->order.v[j]] == C_RED && f->rowof[f->order.v[j]] == id) reds[n++] = f->val[f->order.v[j]];
    Val *space = v;
    bool per_row = n > 0 && (v->op == OP_REDUCE || !same_shape(f, v, reds[0]->args[0]));
    if (per_row) space = reds[0]->args[0];
    Kernel *k = new_kernel(f, n ? K_ROW : K_MAP, space, st);
    k->outs = NEWN(f->a, Val *, 1);
    k->outs[0] = v;
    k->nouts = 1;
    k->row_out = per_row;
    if (n) {
        k->axis = space->rank - 1;
        k->reds = reds;
        k->nreds = n;
    }
    finish_kernel(f, k, &v, 1);
}

static void build_kernels(F *f) {
    for (int i = 0; i < f->order.n; i++) {
        int id = f->order.v[i];
        Val *v = f->val[id];
        int c = f->cls[id];
        int counter = 0;
        const Stmt *st = stmt_of_region(f->fn->body, &counter, f->region[id]);
        if (c == C_FUSE && f->mat[id] && f->inscan[id] < 0) {
            /* A check whose operand is in memory anyway computes nothing: its consumers
               read the operand, and the executor checks when it reads the value. */
            if (v->op == OP_CHECKDIM && f->mat[v->args[0]->id]) continue;
            build_row_or_map(f, v, st);
        } else if (c == C_RED && f->rowof[id] == id) {
            build_row_or_map(f, v, st); /* a per-row value that is a reduction */
        } else if (c == C_RED && f->rowof[id] < 0 && f->group[id] == id) {
            Kernel *k = new_kernel(f, K_REDUCE, v->args[0], st);
            k->axis = v->axis;
            int nr = 0;
            for (int j = 0; j < f->order.n; j++)
                if (f->cls[f->order.v[j]] == C_RED && f->rowof[f->order.v[j]] < 0 &&
                    f->group[f->order.v[j]] == id)
                    nr++;
            k->reds = NEWN(f->a, Val *, nr);
            for (int j = 0; j < f->order.n; j++)
                if (f->cls[f->order.v[j]] == C_RED && f->rowof[f->order.v[j]] < 0 &&
                    f->group[f->order.v[j]] == id)
                    k->reds[k->nreds++] = f->val[f->order.v[j]];
            k->outs = k->reds;
            k->nouts = k->nreds;
            finish_kernel(f, k, k->reds, k->nreds);
        } else if (c == C_SCAN) {
            Kernel *k = new_kernel(f, K_SCAN, v->args[0], st);
            k->axis = v->args[0]->rank == 1 ? AXIS_ALL : v->axis;
            k->scan = v;
            k->outs = NEWN(f->a, Val *, 1);
            k->outs[0] = f->val[f->scantop[id]];
            k->nouts = 1;
            finish_kernel(f, k, k->outs, 1);
        } else if (c == C_HIST) {
            Kernel *k = new_kernel(f, K_HIST, v->args[1], st);
            k->outs = NEWN(f->a, Val *, 1);
            k->outs[0] = v;
            k->nouts = 1;
            finish_kernel(f, k, &v, 1);
        } else if (c == C_COMPACT) {
            rule6_compact(f, v, st);
        } else if (c == C_MATMUL) {
            Kernel *k = new_kernel(f, K_MATMUL, v, st);
            k->scan = v;
            k->outs = NEWN(f->a, Val *, 1);
            k->outs[0] = f->val[f->scantop[id]];
            k->nouts = 1;
            finish_kernel(f, k, k->outs, 1);
        }
    }
}

Plan *fuse_fn(Arena *a, Fn *fn) {
    F f = {.a = a, .fn = fn, .nv = fn->nvals};
    int nv = fn->nvals > 0 ? fn->nvals : 1, ns = fn->nslots > 0 ? fn->nslots : 1;
    f.val = NEWN(a, Val *, nv);
    f.region = NEWN(a, int, nv);
    f.cls = NEWN(a, int, nv);
    f.root = NEWN(a, bool, nv);
    f.mat = NEWN(a, bool, nv);
    f.users = NEWN(a, IntVec, nv);
    f.rowof = NEWN(a, int, nv);
    f.inscan = NEWN(a, int, nv);
    f.scantop = NEWN(a, int, nv);
    f.group = NEWN(a, int, nv);
    f.seen = NEWN(a, int, nv);
    f.keys = NEWN(a, int64_t, (size_t)nv * MAXRANK);
    f.pkeys = NEWN(a, int64_t, (size_t)ns * MAXRANK);
    f.nsets = NEWN(a, int, ns);
    f.setval = NEWN(a, Val *, ns);
    for (int i = 0; i < nv; i++) f.region[i] = f.rowof[i] = f.inscan[i] = f.scantop[i] = f.group[i] = -1;
    Plan *p = NEW(a, Plan);
    p->fn = fn;
    f.plan = p;

    walk_stmts(&f, fn->body, true);
    param_keys(&f);
    /* Every shape key, producers first: each is then one step from its operands' (already
       known), however deep the expression (a first query from the top of a long chain
       would pass dkey_compute's depth limit and split the kernel on a shape it could not
       prove equal). */
    for (int i = 0; i < f.order.n; i++) {
        Val *v = f.val[f.order.v[i]];
        for (int k = 0; k < v->rank; k++) dkey(&f, v, k, 0);
    }
    for (int i = 0; i < f.order.n; i++) {
        Val *v = f.val[f.order.v[i]];
        for (int j = 0; j < v->nargs; j++) add_user(&f, v->args[j], v);
        if (v->init) add_user(&f, v->init, v);
    }
    rule1_vertical(&f);
    rule3_map_scan(&f);
    rule5_rows(&f);
    rule2_map_reduce(&f);
    rule4_horizontal(&f);
    rule6_scatter(&f);
    rule7_recompute(&f);
    build_kernels(&f);
    return p;
}

PlanSet *fuse_program(Arena *a, const Program *p) {
    PlanSet *ps = NEW(a, PlanSet);
    ps->prog = p;
    ps->nplans = p->nfns;
    ps->plans = NEWN(a, Plan *, p->nfns + 1);
    for (int i = 0; i < p->nfns; i++) ps->plans[i] = fuse_fn(a, p->fns[i]);
    return ps;
}
