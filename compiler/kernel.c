/* Kernel records (kernel.h): what the fusion pass builds and everything downstream
   reads. The parameter block, launch shapes and geometry, reduction identities, and the
   plan text `cukc emit-ir` prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/kernel.h"
/* cuk_red_group, shared with the kernels; its helpers compare unsigned values with 0 in
   code common to all widths */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "kernels/ops.h"
#pragma GCC diagnostic pop

const char *const kernel_kind_name[] = {"map", "reduce", "scan", "row", "matmul", "hist", "compact"};

Val *red_init(const Val *v) {
    if (v->init) return v->init;
    if ((v->op == OP_REDUCE || v->op == OP_SCAN) && v->nargs > 1) return v->args[1];
    return NULL;
}

/* ---- the parameter block: sizes first, then per leaf and per node, then pointers ---- */

static void add_param(Arena *a, Kernel *k, int *cap, KPKind kind, Val *v, int x, int y) {
    if (k->nparams == *cap) {
        int nc = *cap ? *cap * 2 : 32;
        KParam *np = NEWN(a, KParam, nc);
        if (k->nparams) memcpy(np, k->params, sizeof(KParam) * (size_t)k->nparams);
        k->params = np;
        *cap = nc;
    }
    k->params[k->nparams++] = (KParam){kind, v, x, y};
}

/* A per-row kernel's reshape of one of its row reductions ([r, 1] -> [r]): no index
   arithmetic (emit_cuda.c takes the reduction's value). */
bool row_value_reshape(const Kernel *k, const Val *v) {
    if (k->kind != K_ROW || !k->row_out || v->op != OP_RESHAPE) return false;
    for (int j = 0; j < k->nreds; j++)
        if (k->reds[j] == v->args[0]) return true;
    return false;
}

void kernel_layout_params(Arena *a, Kernel *k) {
    int cap = 0;
    add_param(a, k, &cap, KP_N, NULL, 0, 0);
    add_param(a, k, &cap, KP_FLAT, NULL, 0, 0);
    for (int i = 0; i < k->rank; i++) add_param(a, k, &cap, KP_SHAPE, NULL, i, 0);
    if (k->kind == K_REDUCE || k->kind == K_SCAN || k->kind == K_ROW) {
        add_param(a, k, &cap, KP_OUTER, NULL, 0, 0);
        add_param(a, k, &cap, KP_LEN, NULL, 0, 0);
        add_param(a, k, &cap, KP_INNER, NULL, 0, 0);
    }
    if (k->kind == K_MATMUL)
        for (int i = 0; i < 3; i++) add_param(a, k, &cap, KP_MM, NULL, i, 0);
    /* Leaves: materialised inputs, generators and index transforms each see the
       iteration index through their own broadcast strides. */
    for (int i = 0; i < k->nins; i++)
        for (int ax = 0; ax < k->rank && k->ins_direct[i]; ax++)
            add_param(a, k, &cap, KP_BSTRIDE, k->ins[i], ax, 0);
    for (int i = 0; i < k->nvals; i++) {
        Val *v = k->vals[i];
        if (!op_is_gen(v->op) && !op_is_index(v->op)) continue;
        if (row_value_reshape(k, v)) continue; /* the reduction's value itself, once per row */
        if (kernel_direct(k, v))
            for (int ax = 0; ax < k->rank; ax++) add_param(a, k, &cap, KP_BSTRIDE, v, ax, 0);
        for (int ax = 0; ax < v->rank; ax++) add_param(a, k, &cap, KP_OWNSHAPE, v, ax, 0);
        if (!op_is_index(v->op)) continue;
        for (int j = 0; j < v->nargs; j++) {
            Val *x = v->args[j];
            if (!x || !op_value_arg(v->op, j) || x->rank == 0) continue;
            if (v->op == OP_GATHER && j == 1) continue; /* idx is read at its own offset */
            if (kernel_chain_src(k, x)) continue; /* read through the chain */
            for (int ax = 0; ax < x->rank; ax++) add_param(a, k, &cap, KP_SRCSTRIDE, v, ax, j);
        }
        if (v->op == OP_SLICE || v->op == OP_UPDATE)
            for (int ax = 0; ax < v->args[0]->rank; ax++) {
                add_param(a, k, &cap, KP_SLSTART, v, ax, 0);
                add_param(a, k, &cap, KP_SLSTEP, v, ax, 0);
            }
        if (v->op == OP_UPDATE) {
            for (int ax = 0; ax < v->rank; ax++) add_param(a, k, &cap, KP_UPD, v, ax, 0);
            for (int ax = 0; ax < v->args[1]->rank; ax++) add_param(a, k, &cap, KP_UPD, v, ax, 1);
        }
        if (v->op == OP_CONCAT)
            for (int j = 0; j <= v->nargs; j++) add_param(a, k, &cap, KP_CATOFF, v, 0, j);
        if (v->op == OP_GATHER) add_param(a, k, &cap, KP_GLEN, v, 0, 0);
        if (v->op == OP_PAD) add_param(a, k, &cap, KP_PADW, v, 0, 0);
        if (v->op == OP_ROLL) add_param(a, k, &cap, KP_ROLLSHIFT, v, 0, 0);
    }
    for (int i = 0; i < k->nins; i++) add_param(a, k, &cap, KP_IN, k->ins[i], 0, 0);
    for (int i = 0; i < k->nscalars; i++) add_param(a, k, &cap, KP_SCALAR, k->scalars[i], 0, 0);
    for (int i = 0; i < k->nouts; i++) add_param(a, k, &cap, KP_OUT, k->outs[i], 0, 0);
    if (k->kind == K_REDUCE || k->kind == K_SCAN || k->kind == K_HIST || k->kind == K_COMPACT)
        add_param(a, k, &cap, KP_SCRATCH, NULL, 0, 0);
    if (k->kind == K_HIST) add_param(a, k, &cap, KP_HBINS, NULL, 0, 0);
    /* Gathers check their indices on the device and report the first bad one here, as
       segmented reductions do their offsets. */
    bool err = kernel_segred(k);
    for (int i = 0; i < k->nvals && !err; i++) err = k->vals[i]->op == OP_GATHER;
    if (err) add_param(a, k, &cap, KP_ERR, NULL, 0, 0);
}

Val *kernel_region_update(const Kernel *k) {
    if (k->kind != K_MAP || k->nouts != 1 || k->outs[0]->op != OP_UPDATE || k->space != k->outs[0]) return NULL;
    return k->rank == k->outs[0]->rank && k->rank > 0 ? k->outs[0] : NULL;
}

bool index_chains(int op) {
    switch (op) {
    case OP_SLICE:
    case OP_REVERSE:
    case OP_TRANSPOSE:
    case OP_CONCAT:
    case OP_PAD:
    case OP_ROLL:
    case OP_STACK:
    case OP_UPDATE: return true;
    default: return false;
    }
}

static bool in_vals(const Kernel *k, const Val *v) {
    for (int i = 0; i < k->nvals; i++)
        if (k->vals[i] == v) return true;
    return false;
}

Val *kernel_chain_src(const Kernel *k, Val *x) {
    x = kernel_canon(k, x);
    if (x->rank == 0) return NULL;
    for (int depth = 0; depth < 64 && in_vals(k, x); depth++) {
        if (index_chains(x->op)) return x;
        if (x->op != OP_CHECKDIM) return NULL;
        x = kernel_canon(k, x->args[0]);
    }
    return NULL;
}

bool kernel_ew_chain(const Kernel *k, const Val *x) {
    return x->rank > 0 && op_is_ew(x->op) && x->op != OP_SCALARCALL && in_vals(k, x);
}

static bool direct_rec(const Kernel *k, const Val *v, int depth) {
    if (depth > 32) return true; /* (conservative: broadcast strides it does not need) */
    for (int i = 0; i < k->nouts; i++)
        if (k->outs[i] == v) return true;
    for (int i = 0; i < k->nvals; i++) {
        const Val *u = k->vals[i];
        for (int j = 0; j < u->nargs; j++) {
            if (!u->args[j] || kernel_canon(k, u->args[j]) != v || !op_value_arg(u->op, j)) continue;
            if (index_chains(u->op) && (kernel_chain_src(k, u->args[j]) == v || kernel_ew_chain(k, v))) continue;
            if (u->op == OP_GATHER && j == 0) continue; /* read at the indices it holds */
            if ((u->op == OP_CHECKDIM || u->op == OP_RESHAPE || kernel_ew_chain(k, u)) && !direct_rec(k, u, depth + 1))
                continue;
            return true;
        }
    }
    return false;
}

bool kernel_direct(const Kernel *k, const Val *v) { return direct_rec(k, v, 0); }

Val *kernel_canon(const Kernel *k, Val *v) {
    for (int i = 0; i < k->nalias; i++)
        if (k->alias[2 * i] == v) return k->alias[2 * i + 1];
    return v;
}

int kparam_find(const Kernel *k, KPKind kind, const Val *v, int a, int b) {
    for (int i = 0; i < k->nparams; i++) {
        const KParam *p = &k->params[i];
        if (p->kind == kind && p->v == v && p->a == a && p->b == b) return i;
    }
    return -1;
}

/* ---- launch shapes and geometry ---------------------------------------------------- */

/* Bytes of the widest element k reads or writes (at least 1). */
int kernel_widest_elem(const Kernel *k) {
    int m = 1;
    for (int i = 0; i < k->nins; i++)
        if (dtype_info[k->ins[i]->dt].size > m) m = dtype_info[k->ins[i]->dt].size;
    for (int i = 0; i < k->nouts; i++)
        if (dtype_info[k->outs[i]->dt].size > m) m = dtype_info[k->outs[i]->dt].size;
    return m;
}

/* Whether k's code is heavy enough (val_code_weight of its values and inputs past
   KERNEL_VEC_WEIGHT) that the emitter writes its body once, without the unrolled vector
   path's eight copies: NVRTC's time is what such a kernel costs (64 sin terms: 5.4 s
   with the copies), and its elements take long enough to compute that 16-byte loads do
   not matter. */
bool kernel_code_heavy(const Kernel *k) {
    int64_t w = (int64_t)SPLIT_LEAF_WEIGHT * k->nins;
    for (int i = 0; i < k->nvals && w <= KERNEL_VEC_WEIGHT; i++) w += val_code_weight(k->vals[i]);
    return w > KERNEL_VEC_WEIGHT;
}

bool kernel_red_lambda(const Kernel *k) {
    for (int j = 0; j < k->nreds; j++)
        if (k->reds[j]->red == RED_LAMBDA) return true;
    return false;
}

bool kernel_segred(const Kernel *k) {
    return k->kind == K_REDUCE && k->nreds > 0 && red_segs(k->reds[0]);
}

/* A segmented reduction's offsets input when it is read only through the offsets
   pointer, never at the iteration index (so not Kernel.ins_direct), else NULL. */
static Val *offsets_only(const Kernel *k) {
    if (!kernel_segred(k)) return NULL;
    Val *in = kernel_canon(k, red_segs(k->reds[0]));
    for (int i = 0; i < k->nvals; i++) {
        const Val *v = k->vals[i];
        for (int j = 0; j < v->nargs; j++)
            if (v->args[j] && kernel_canon(k, v->args[j]) == in && !(j == 2 && red_segs(v))) return NULL;
    }
    return in;
}

/* Bytes of the widest input read at the iteration index (Kernel.ins_direct), and how
   many there are. */
static int widest_leaf(const Kernel *k, int *count) {
    int m = 1, c = 0;
    for (int i = 0; i < k->nins; i++)
        if (k->ins_direct[i]) {
            c++;
            if (dtype_info[k->ins[i]->dt].size > m) m = dtype_info[k->ins[i]->dt].size;
        }
    if (count) *count = c;
    return m;
}

void kernel_launch_shape(Kernel *k, Arena *a) {
    Val *offs = offsets_only(k);
    k->ins_direct = NEWN(a, bool, k->nins + 1);
    for (int i = 0; i < k->nins; i++) k->ins_direct[i] = k->ins[i] != offs && kernel_direct(k, k->ins[i]);
    /* The shapes the emitted kernels are tuned for (docs/performance.md): reductions use
       128-thread blocks so that a grid of up to 1024 blocks is resident at once (8 per
       SM); row kernels hold a row of up to 512 x 32 4-byte values in registers. */
    k->block = k->kind == K_REDUCE ? 128 : k->kind == K_ROW ? 512 : 256;
    k->items = 16;
    if (k->kind == K_ROW) {
        /* 128 bytes of the leaves read at the iteration index per thread (32 f32 with one
           leaf): more would spill under the 64-register cap that two resident blocks of
           512 impose; at least one 16-byte vector */
        int nl;
        int m = widest_leaf(k, &nl);
        for (int i = 0; i < k->nouts && !k->row_out; i++)
            if (dtype_info[k->outs[i]->dt].size > m) m = dtype_info[k->outs[i]->dt].size;
        k->items = 128 / (m * (nl > 1 ? nl : 1));
        if (k->items < 16 / m) k->items = 16 / m;
    }
    if (k->kind == K_SCAN) {
        /* Tiles of 512 x 32 elements of at most 4 bytes read from at most one array
           (larger tiles keep more loads in flight per block); 256 x 16 otherwise, to
           bound the registers a tile holds. */
        int m = kernel_widest_elem(k);
        if (dtype_info[k->scan->dt].size > m) m = dtype_info[k->scan->dt].size;
        k->items = m <= 4 && k->nins <= 1 ? 32 : 16;
        if (k->items == 32) k->block = 512;
    }
    if (kernel_segred(k)) {
        /* 32 consecutive elements a thread where one reduction's values and its leaves
           are at most 4 bytes (the block's fixed waits spread over twice the bytes:
           segmented sums of 2^28 f32 on an H100 ran at 2481 GB/s against 2120 with 16,
           copy 2968); 16 where a warp's staging of 32 would not fit */
        k->block = SEGRED_BLOCK;
        k->items = k->nreds == 1 && k->reds[0]->red != RED_ARGMIN && k->reds[0]->red != RED_ARGMAX &&
                           dtype_info[k->reds[0]->dt].size <= 4 && widest_leaf(k, NULL) <= 4
                       ? 2 * SEGRED_ITEMS
                       : SEGRED_ITEMS;
    }
    if (k->kind == K_MAP) {
        /* Values read through index transforms (slices, pad, concat, ...) keep
           MAP_CHAIN_UNROLL vectors per thread in flight: their loads through the chain
           are scalar and their index arithmetic long, so more independent elements per
           thread hide more latency (the 5-point stencil over pad: 2138 GB/s with 2,
           2287 with 4 on an H200; one element per thread, lane-contiguous, ran at 1450).
           With the index words pinned in registers (emit_cuda.c pin_index_words) the
           body is 40% shorter and 2 wins: on an H100, 1878 GB/s with 1, 2606 with 2,
           2524 with 4 (copy 2892).
           Any index op but a reshape reads its operand at computed indices: the body
           gets its 32-bit copy (KFLAT_IX32). */
        k->items = MAP_UNROLL;
        for (int i = 0; i < k->nvals; i++) {
            int op = k->vals[i]->op;
            if (index_chains(op)) k->items = MAP_CHAIN_UNROLL;
            if (op_is_index(op) && op != OP_RESHAPE) k->ix32 = true;
        }
    }
    if (k->kind == K_COMPACT) {
        /* Tiles of 256 x 32 elements when nothing read or written is wider than 4 bytes
           (256 x 16 otherwise): the kept ones are staged in at most 32 KiB of shared
           memory before the coalesced store. */
        k->block = 256;
        k->items = kernel_widest_elem(k) <= 4 ? 32 : 16;
    }
}

/* deterministic=true where atomics would make the bits depend on timing: float sums,
   products and lambdas (integer results and min/max are exact anyway). */
bool kernel_hist_ordered(const Val *h) {
    return h->op == OP_HIST && h->exclusive && dtype_info[h->dt].is_float && h->red != RED_MIN && h->red != RED_MAX;
}

/* Whether a reduce_by_index keeps its block's bins in shared memory (builtin add). */
bool kernel_hist_private(const Val *h) { return h->op == OP_HIST && h->red == RED_SUM && !kernel_hist_ordered(h); }

/* Counting (bincount, histogram: an integer add of the constant 1): private bins are
   32-bit counters (a block counts fewer than 2^32 elements), so twice as many fit and
   the shared atomics are 32-bit ones. */
bool kernel_hist_counts(const Val *h) {
    const Val *x = h->args[2];
    return kernel_hist_private(h) && !dtype_info[h->dt].is_float && x->op == OP_CONST && x->c.i == 1;
}

size_t kernel_shmem(const Kernel *k, int64_t inner) {
    if (k->kind != K_HIST || !kernel_hist_private(k->outs[0])) return 0;
    const Val *h = k->outs[0];
    int64_t cap = HIST_SHARED_BYTES / (kernel_hist_counts(h) ? 4 : dtype_info[h->dt].size);
    if (inner > cap) return 0;
    int64_t want = 8 * (3 * inner + 4);
    return (size_t)(want < HIST_SHARED_BYTES ? want : HIST_SHARED_BYTES);
}

bool kernel_blas(const Kernel *k) {
    return k->kind == K_MATMUL && (k->scan->dt == DT_F32 || k->scan->dt == DT_F64 || dtype_is_half(k->scan->dt));
}

/* The operand of v that the kernel does not compute (an epilogue step's scalar or bias). */
static Val *outside_operand(const Kernel *k, const Val *v) {
    for (int j = 0; j < v->nargs; j++)
        if (!in_vals(k, v->args[j])) return v->args[j];
    return NULL;
}

void kernel_blas_call(const Kernel *k, BlasCall *c) {
    Val *mm = k->scan;
    *c = (BlasCall){.a = mm->args[0], .b = mm->args[1]};
    if (c->a->op == OP_TRANSPOSE && in_vals(k, c->a)) c->trans_a = true, c->a = c->a->args[0];
    if (c->b->op == OP_TRANSPOSE && in_vals(k, c->b)) c->trans_b = true, c->b = c->b->args[0];
    for (int i = 0; i < k->nvals; i++) {
        Val *v = k->vals[i];
        if (v->op == OP_MAXIMUM) c->relu = true;
        else if (v->op == OP_MUL) c->alpha = outside_operand(k, v);
        else if (v->op == OP_ADD) c->bias = outside_operand(k, v);
    }
}

int kernel_entry_count(const Kernel *k) {
    if (kernel_blas(k)) return 0;
    int n = 1;
    if (kernel_segred(k)) n += 2;                              /* _sp, _sf */
    if (k->kind == K_ROW && !kernel_red_lambda(k)) n += 3;     /* _gr, _lg, _cl */
    if (kernel_region_update(k)) n += 1;                       /* _rg */
    return n;
}

const char *const kernel_entry_suffix[KE_COUNT] = {"", "_rg", "_gr", "_lg", "_cl"};

int kernel_row_entry(const Kernel *k, int64_t len) {
    if (k->kind != K_ROW || kernel_red_lambda(k)) return KE_MAIN;
    if (len <= (int64_t)(k->block / 2) * k->items) return KE_GR;
    return len > (int64_t)k->block * k->items ? KE_LG : KE_MAIN;
}

int kernel_short_row_threads(const Kernel *k, int64_t len) {
    int t = 32;
    while (t < k->block && (int64_t)t * k->items < len) t <<= 1;
    return t;
}

/* The term of a row pair: d when reduction j sums outer(d) (exp(d), or d * d) and d is
   e - x with e the input of reduction j - 1 (whose combine is `first`), both float
   reductions of one type without init or segments; NULL if not. */
static Val *pair_term(const Kernel *k, int j, RedOp first, OpKind outer) {
    if (j < 1 || j >= k->nreds) return NULL;
    const Val *s = k->reds[j], *m = k->reds[j - 1];
    if (s->red != RED_SUM || m->red != first || red_init(s) || red_init(m) || red_segs(s) || red_segs(m)) return NULL;
    if (!dtype_info[s->dt].is_float || s->dt != m->dt) return NULL;
    Val *x = s->args[0];
    if (x->op != outer || x->dt != s->dt || (outer == OP_MUL && x->args[0] != x->args[1])) return NULL;
    Val *d = x->args[0];
    if (d->op != OP_SUB || d->dt != s->dt || d->args[1]->dt != s->dt) return NULL;
    return d->args[0] == m->args[0] || kernel_canon(k, d->args[0]) == kernel_canon(k, m->args[0]) ? d : NULL;
}

/* The online pair (softmax, logsumexp): reduction j sums exp(e - m), where m, reduction
   j - 1, is the max of the same e over the row (the same value or the same input).
   Then the two are computed in one pass as a (max, sum) pair (kernels/reduce.cuh
   cuk_ms): each thread sums exp(e - a max of its own: its warp's, or on `_lg` its
   running max), and the pairs combine by rescaling,
   one exchange a row instead of two (and on `_lg`, one read of the row instead of
   two). The sum differs from the two-pass one in rounding only (the exp of a
   difference against the product of two), with the same results for infinities and
   NaNs. Returns whether j is such a sum (kernel.h). */
bool kernel_row_online(const Kernel *k, int j) {
    const Val *d = pair_term(k, j, RED_MAX, OP_EXP);
    return d && d->args[1] == k->reds[j - 1];
}

/* v takes one value a row: the reduction r, scalars, and elementwise ops over them */
static bool row_uniform(const Val *v, const Val *r, int depth) {
    if (v == r || v->rank == 0 || v->op == OP_CONST) return true;
    if (!op_is_ew(v->op) || depth > 16) return false;
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && !row_uniform(v->args[i], r, depth + 1)) return false;
    return true;
}

/* The centred pair (layer norm): reduction j sums (e - a)^2, where a is any one value a
   row computed from reduction j - 1, the sum of the same e (a = sum / len: the mean).
   Then the two are exchanged as one: each warp centres its squares at its own mean,
   and the parts' (count, sum, squares) combine by Chan's rule,
   q = sum_i (q_i + n_i (mean_i - mean)^2), then q + n (mean - a)^2 for a; one exchange
   a row instead of two (emit_cuda.c; the short-row and cluster entries). Returns a
   (NULL when j is not such a sum). */
Val *kernel_row_centred(const Kernel *k, int j) {
    const Val *d = pair_term(k, j, RED_SUM, OP_MUL);
    if (!d) return NULL;
    /* (e - sum)^2 itself is no centring worth the pair */
    return d->args[1] != k->reds[j - 1] && row_uniform(d->args[1], k->reds[j - 1], 0) ? d->args[1] : NULL;
}

int kernel_row_passes(const Kernel *k, bool online) {
    int n = k->row_out ? 0 : 1;
    for (int j = 0; j < k->nreds; j++) n += !(online && kernel_row_online(k, j + 1));
    return n;
}

int kernel_row_cluster(const Kernel *k, int64_t len) {
    if (kernel_row_entry(k, len) != KE_LG || k->row_out) return 0;
    int64_t per = (int64_t)ROW_CLUSTER_BLOCK * k->items, c = (len + per - 1) / per;
    return c <= ROW_CLUSTER_MAX ? (int)c : 0;
}

/* n blocks (or clusters) as a grid: at least 1, at most 65535 (grid-stride loops over
   the rest) */
static unsigned row_grid(int64_t n) { return (unsigned)(n < 1 ? 1 : n > 65535 ? 65535 : n); }

RowLaunch kernel_row_launch(const Kernel *k, int64_t len, int64_t rows, const RowDevice *d) {
    RowLaunch l = {kernel_row_entry(k, len), row_grid(rows), (unsigned)k->block, 0};
    int c = d->clusters ? kernel_row_cluster(k, len) : 0;
    if (c) {
        l = (RowLaunch){KE_CL, row_grid(rows) * (unsigned)c, ROW_CLUSTER_BLOCK, (unsigned)c};
    } else if (l.entry == KE_LG && d->l2_bytes > 0 && kernel_row_passes(k, !d->two_pass) > 1) {
        int nd;
        widest_leaf(k, &nd); /* how many inputs a row reads */
        int64_t row_bytes = len * kernel_widest_elem(k) * (nd ? nd : 1), cap = d->l2_bytes / 2 / row_bytes;
        if (cap < d->sm_count) cap = d->sm_count;
        if (cap > 0 && l.grid > cap) l.grid = (unsigned)cap;
    } else if (l.entry == KE_GR) {
        int t = kernel_short_row_threads(k, len), b = d->short_block > 0 ? d->short_block : ROW_SHORT_BLOCK;
        if (b > k->block) b = k->block;
        if (b < t) b = t;
        l.block = (unsigned)b;
        l.grid = row_grid((rows + b / t - 1) / (b / t));
    }
    return l;
}

Val *kernel_tiled_transpose(const Kernel *k) {
    if (k->kind != K_MAP || k->nouts != 1 || (k->rank != 2 && k->rank != 3) || kernel_region_update(k)) return NULL;
    Val *t = NULL;
    for (int i = 0; i < k->nvals; i++) {
        Val *v = k->vals[i];
        if (!op_is_index(v->op)) continue;
        if (v->op != OP_TRANSPOSE || t) return NULL;
        t = v;
    }
    if (!t || t->rank != k->rank || t->args[0]->rank != k->rank || in_vals(k, t->args[0])) return NULL;
    for (int a = 0; a < k->rank; a++)
        if (t->perm[a] != (a == k->rank - 1 ? a - 1 : a == k->rank - 2 ? a + 1 : a)) return NULL;
    return t;
}

bool kernel_needs_resident(const Kernel *k, int axis) {
    return k->kind == K_REDUCE && axis >= 0 && !kernel_segred(k) && !kernel_red_lambda(k);
}

/* Bytes of one partial of reduction r of an axis split (emit_axis_reduce): the value
   alone when the fold has an identity, else the value and whether the part had any. */
int axis_rec_bytes(const Val *r) {
    return red_identity(r->red, r->dt) ? dtype_info[r->dt].size : 24;
}

bool kernel_geometry(const Kernel *k, int64_t n, int64_t outer, int64_t inner, int axis, int64_t resident,
                     unsigned *grid, size_t *scratch) {
    *grid = 1;
    *scratch = 0;
    switch (k->kind) {
    case K_MAP: {
        int m = kernel_widest_elem(k); /* the emitted vector holds 16 / m elements */
        int64_t per = (int64_t)k->block * k->items * (16 / m), nb = n / per + (n % per != 0);
        /* a 32 x 32 tile a block, or the general path's chunks (KFLAT_TILED): whichever
           takes more blocks, so that either path's grid covers the output */
        if (kernel_tiled_transpose(k) && n / 1024 + (n % 1024 != 0) > nb) nb = n / 1024 + (n % 1024 != 0);
        if (nb > 0x7fffffff) return false;
        *grid = (unsigned)(nb < 1 ? 1 : nb);
        break;
    }
    case K_MATMUL: *grid = 0; break;
    case K_HIST: {
        /* inner: the number of bins; deterministic=true keeps each block's bins (values
           and a byte saying whether the block touched it) in scratch (emit_cuda.c) */
        int64_t nb = n / HIST_PER_BLOCK + (n % HIST_PER_BLOCK != 0);
        *grid = (unsigned)(nb < 1 ? 1 : nb > HIST_MAX_GRID ? HIST_MAX_GRID : nb);
        const Val *h = k->outs[0];
        int esz = dtype_info[h->dt].size;
        if (h->op == OP_HIST && h->exclusive && dtype_info[h->dt].is_float && h->red != RED_MIN &&
            h->red != RED_MAX && inner <= HIST_SHARED_BYTES / (esz + 1))
            *scratch = 16 + (size_t)*grid * (size_t)inner * (size_t)(esz + 1);
        break;
    }
    case K_ROW: *grid = row_grid(outer); break;
    case K_REDUCE:
        if (kernel_segred(k)) {
            /* one tile per block (none for n = 0: the prepass writes the empty segments) */
            int64_t tile = (int64_t)k->block * k->items, nt = n / tile + (n % tile != 0);
            if (nt > 0x7fffffff) return false;
            *grid = (unsigned)nt;
            *scratch = (((size_t)8 * (2 * (size_t)nt + 1) + 31) & ~(size_t)31) +
                       (size_t)k->nreds * 2 * (size_t)nt * SEGRED_REC_BYTES;
        } else if (axis < 0) {
            int64_t nb = (n + k->block - 1) / k->block;
            *grid = (unsigned)(nb < 1 ? 1 : nb > 1024 ? 1024 : nb);
            *scratch = 16 + (size_t)k->nreds * *grid * 24;
        } else if (kernel_red_lambda(k)) {
            int64_t no = outer * inner;
            *grid = (unsigned)(no < 1 ? 1 : no > 65535 ? 65535 : no);
        } else if (inner == 1) {
            /* rows: cuk_red_group(len) threads a row, a grid-stride loop over rows */
            int64_t rpb = k->block / cuk_red_group(n / (outer > 0 ? outer : 1), k->block);
            int64_t nb = (outer + rpb - 1) / rpb;
            *grid = (unsigned)(nb < 1 ? 1 : nb > AXIS_MAX_GRID ? AXIS_MAX_GRID : nb);
        } else {
            /* columns: a thread per output; with fewer tiles of outputs than AXIS_BLOCKS,
               the axis is split into S parts of at least AXIS_MIN_PART (gridDim.x =
               tiles x S), the parts in scratch after a ticket per tile */
            int64_t cols = outer * inner, nt = (cols + k->block - 1) / k->block;
            int64_t len = cols > 0 ? n / cols : 0, parts = 1, fill = resident > 0 ? resident : AXIS_BLOCKS;
            if (nt > 0 && 2 * nt <= fill) {
                parts = fill / nt;
                if (parts > len / AXIS_MIN_PART) parts = len / AXIS_MIN_PART;
                if (parts < 1) parts = 1;
            }
            if (parts > 1) {
                *grid = (unsigned)(nt * parts);
                *scratch = ((size_t)nt * 4 + 15) & ~(size_t)15;
                for (int j = 0; j < k->nreds; j++)
                    *scratch += (size_t)axis_rec_bytes(k->reds[j]) * (size_t)parts * (size_t)cols;
            } else {
                *grid = (unsigned)(nt < 1 ? 1 : nt > AXIS_MAX_GRID ? AXIS_MAX_GRID : nt);
            }
        }
        break;
    case K_COMPACT: {
        int64_t tile = (int64_t)k->block * k->items, nt = n / tile + (n % tile != 0);
        if (nt > 0x7fffffff) return false;
        *grid = (unsigned)(nt < 1 ? 1 : nt);
        *scratch = SCAN_STATE_OFFSET + (size_t)*grid * SCAN_TILE_BYTES;
        break;
    }
    case K_SCAN:
        if (axis < 0) {
            int64_t tile = (int64_t)k->block * k->items, nt = n / tile + (n % tile != 0);
            if (nt > 0x7fffffff) return false;
            *grid = (unsigned)(nt < 1 ? 1 : nt);
            *scratch = SCAN_STATE_OFFSET + (size_t)*grid * SCAN_TILE_BYTES;
        } else {
            *grid = 0;
        }
        break;
    }
    return true;
}

/* ---- plans ------------------------------------------------------------------------- */

const Plan *planset_find(const PlanSet *ps, const Fn *fn) {
    for (int i = 0; i < ps->nplans; i++)
        if (ps->plans[i]->fn == fn) return ps->plans[i];
    return NULL;
}

/* How emit-ir names v: %name for a named slot's read, else %id. */
static const char *ref_name(const Fn *fn, const Val *v, char *buf, size_t n) {
    if (v->op == OP_SLOT && v->slot >= 0 && v->slot < fn->nslots && fn->slots[v->slot].name)
        snprintf(buf, n, "%%%s", fn->slots[v->slot].name);
    else
        snprintf(buf, n, "%%%d", v->id);
    return buf;
}

static void print_ref(FILE *out, const Fn *fn, const Val *v) {
    char name[512];
    fprintf(out, " %s", ref_name(fn, v, name, sizeof name));
}

/* The ops k fuses, as emit-ir lists them (" add mul red.sum ..."). */
static void print_ops(FILE *out, const Kernel *k) {
        for (int j = 0; j < k->nvals; j++) {
            const Val *v = k->vals[j];
            if (v->op == OP_HIST) {
                fprintf(out, " hist.%s%s", red_name[v->red], v->exclusive ? "(deterministic)" : "");
            } else if (v->op == OP_REDUCE || v->op == OP_SCAN) {
                fprintf(out, " %s.%s", v->op == OP_REDUCE ? "red" : "scan", red_name[v->red]);
                if (red_segs(v))
                    fprintf(out, "(segments)");
                else if (v->axis != AXIS_ALL && !(v->op == OP_SCAN && v->args[0]->rank == 1))
                    fprintf(out, "(axis=%d)", v->axis);
            } else if (v->op < OP_EW_END) {
                fprintf(out, " %s", ew_info[v->op].name);
            } else if (v->op == OP_CHECKDIM) {
                continue; /* checked on the host before the launch; computes nothing */
            } else {
                fprintf(out, " %s", op_name[v->op]);
            }
        }
}

void plan_print(FILE *out, const Plan *p) {
    fprintf(out, "plan %s: %d kernel%s\n", p->fn->name, p->nkernels, p->nkernels == 1 ? "" : "s");
    for (int i = 0; i < p->nkernels; i++) {
        const Kernel *k = p->kernels[i];
        fprintf(out, "kernel k%d %s%s:", k->id, kernel_kind_name[k->kind], kernel_blas(k) ? "(cublasLt)" : "");
        print_ops(out, k);
        fprintf(out, "  inputs:");
        for (int j = 0; j < k->nins; j++) print_ref(out, p->fn, k->ins[j]);
        for (int j = 0; j < k->nscalars; j++) print_ref(out, p->fn, k->scalars[j]);
        if (!k->nins && !k->nscalars) fprintf(out, " -");
        fprintf(out, "  outputs:");
        for (int j = 0; j < k->nouts; j++) print_ref(out, p->fn, k->outs[j]);
        if (k->kind == K_HIST) {
            /* what the executor copies into the output first, or "fill" for a zeros() or
               full() that no kernel writes (rule 6) */
            const Val *d = k->outs[0]->args[0];
            bool written = d->op != OP_FULL;
            for (int q = 0; q < p->nkernels && !written; q++)
                for (int j = 0; j < p->kernels[q]->nouts; j++) written = written || p->kernels[q]->outs[j] == d;
            fprintf(out, "  dest:");
            if (written) print_ref(out, p->fn, d);
            else fprintf(out, " fill");
        }
        fputc('\n', out);
    }
}

void planset_print(FILE *out, const PlanSet *ps) {
    for (int i = 0; i < ps->nplans; i++) plan_print(out, ps->plans[i]);
}

/* An array node of the graph, declared ("fn.%name" for a slot, "fn.%id" for a value,
   labelled as emit-ir names it); its id goes to id. */
static void dot_array(FILE *out, const Fn *fn, const Val *v, char *id, size_t n) {
    char name[512];
    ref_name(fn, v, name, sizeof name);
    snprintf(id, n, "%s.%s", fn->name, name);
    fprintf(out, "    \"%s\" [label=\"%s\"];\n", id, name);
}

/* Graphviz: per function a cluster of its kernels (boxes: kind and fused ops) and the
   arrays they read and write (ellipses; scalars passed by value on dashed edges), so that what fused where, and what goes
   through memory between kernels, is visible (`cukc emit-ir --dot F | dot -Tsvg`). */
void planset_print_dot(FILE *out, const PlanSet *ps) {
    fputs("digraph cuk {\n  rankdir=LR;\n  node [fontname=\"monospace\", fontsize=10];\n", out);
    for (int i = 0; i < ps->nplans; i++) {
        const Plan *p = ps->plans[i];
        if (!p->nkernels) continue;
        fprintf(out, "  subgraph \"cluster_%s\" {\n    label=\"fn %s: %d kernel%s\";\n", p->fn->name, p->fn->name,
                p->nkernels, p->nkernels == 1 ? "" : "s");
        for (int q = 0; q < p->nkernels; q++) {
            const Kernel *k = p->kernels[q];
            fprintf(out, "    \"%s.k%d\" [shape=box, style=filled, fillcolor=\"#dde8f8\", label=\"k%d %s%s\\n", p->fn->name,
                    k->id, k->id, kernel_kind_name[k->kind], kernel_blas(k) ? "(cublasLt)" : "");
            print_ops(out, k);
            fputs("\"];\n", out);
            char id[640];
            for (int j = 0; j < k->nins; j++) {
                dot_array(out, p->fn, k->ins[j], id, sizeof id);
                fprintf(out, "    \"%s\" -> \"%s.k%d\";\n", id, p->fn->name, k->id);
            }
            for (int j = 0; j < k->nscalars; j++) { /* passed by value: dashed */
                dot_array(out, p->fn, k->scalars[j], id, sizeof id);
                fprintf(out, "    \"%s\" -> \"%s.k%d\" [style=dashed];\n", id, p->fn->name, k->id);
            }
            for (int j = 0; j < k->nouts; j++) {
                dot_array(out, p->fn, k->outs[j], id, sizeof id);
                fprintf(out, "    \"%s.k%d\" -> \"%s\";\n", p->fn->name, k->id, id);
            }
        }
        fputs("  }\n", out);
    }
    fputs("}\n", out);
}

/* ---- identities, shared by the emitter -------------------------------------------- */

const char *red_identity(RedOp r, DType dt) {
    bool fl = dtype_info[dt].is_float;
    switch (r) {
    case RED_SUM: return fl ? (dt == DT_F32 ? "0.0f" : "0.0") : "0";
    case RED_PROD: return fl ? (dt == DT_F32 ? "1.0f" : "1.0") : "1";
    case RED_ANY: return "0";
    case RED_ALL: return "1";
    case RED_MIN:
        switch (dt) {
        case DT_F32: return "__int_as_float(0x7f800000)";
        case DT_F64: return "__longlong_as_double(0x7ff0000000000000LL)";
        case DT_I32: return "2147483647";
        case DT_I64: return "9223372036854775807LL";
        case DT_U32: return "4294967295u";
        case DT_U64: return "18446744073709551615ull";
        default: return "1";
        }
    case RED_MAX:
        switch (dt) {
        case DT_F32: return "__int_as_float(0xff800000)";
        case DT_F64: return "__longlong_as_double(0xfff0000000000000LL)";
        case DT_I32: return "(-2147483647 - 1)";
        case DT_I64: return "(-9223372036854775807LL - 1)";
        default: return "0";
        }
    default: return NULL;
    }
}
