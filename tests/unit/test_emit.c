/* Fusion plans and CUDA emission on hand-built IR: checks each program's kernel count
   and contents (compiler/fuse.c) and that the emitted CUDA compiles to sm_90 PTX with
   NVRTC (compiler/emit_cuda.c, runtime/cuk.h); no GPU needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir.h"
#include "compiler/kernel.h"
#include "compiler/pipeline.h"
#include "runtime/cuk.h"

static int failures;
#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static Arena A;
static Loc L0;

/* ---- building IR by hand ------------------------------------------------------------ */

static Fn *fn_new(const char *name, int nslots) {
    Fn *f = NEW(&A, Fn);
    f->name = name;
    f->nslots = nslots;
    f->slots = NEWN(&A, Slot, nslots);
    f->ret_dt = DT_VOID;
    return f;
}
static void slot_def(Fn *f, int s, const char *name, DType dt, int rank, bool param) {
    f->slots[s] = (Slot){name, dt, rank, false};
    if (param && s + 1 > f->nparams) f->nparams = s + 1;
}
static Val *slot(Fn *f, int s) {
    Val *v = val_new(&A, f, OP_SLOT, f->slots[s].dt, f->slots[s].rank, 0, L0);
    v->slot = s;
    return v;
}
static Val *cf(Fn *f, DType dt, double x) {
    Val *v = val_new(&A, f, OP_CONST, dt, 0, 0, L0);
    if (dtype_info[dt].is_float) v->c.f = x;
    else v->c.i = (int64_t)x;
    return v;
}
static Val *ew(Fn *f, OpKind op, Val *a, Val *b) {
    int rank = a->rank, n = ew_info[op].arity;
    if (b && b->rank > rank) rank = b->rank;
    DType dt = a->dt;
    OpClass c = ew_info[op].cls;
    if (c == OC_CMP || c == OC_PRED) dt = DT_BOOL;
    Val *v = val_new(&A, f, op, dt, rank, n, L0);
    v->args[0] = a;
    if (n > 1) v->args[1] = b;
    return v;
}
static Val *red(Fn *f, RedOp r, Val *x, int axis, bool keep) {
    int rank = axis == AXIS_ALL ? (keep ? x->rank : 0) : (keep ? x->rank : x->rank - 1);
    DType dt = (r == RED_ARGMIN || r == RED_ARGMAX) ? DT_I64 : x->dt;
    Val *v = val_new(&A, f, OP_REDUCE, dt, rank, 1, L0);
    v->args[0] = x;
    v->red = r;
    v->axis = axis;
    v->keepdims = keep;
    return v;
}
static Val *scan(Fn *f, RedOp r, Val *x) {
    Val *v = val_new(&A, f, OP_SCAN, x->dt, x->rank, 1, L0);
    v->args[0] = x;
    v->red = r;
    v->axis = AXIS_ALL;
    return v;
}
static Val *dim(Fn *f, Val *x, int axis) {
    Val *v = val_new(&A, f, OP_DIM, DT_I64, 0, 1, L0);
    v->args[0] = x;
    v->axis = axis;
    return v;
}
static Stmt *stmt(StmtKind k, Val *v) {
    Stmt *s = NEW(&A, Stmt);
    s->kind = k;
    s->v = v;
    return s;
}
static void append(Fn *f, Stmt *s) {
    Stmt **p = &f->body;
    while (*p) p = &(*p)->next;
    *p = s;
}
/* What sema emits for `x: T[n], y: T[n]`: a checkdim that ties y's axis to x's. */
static void tie(Fn *f, int y, int x) {
    Val *c = val_new(&A, f, OP_CHECKDIM, f->slots[y].dt, f->slots[y].rank, 3, L0);
    Val *sy = slot(f, y);
    c->args[0] = sy;
    c->args[1] = dim(f, sy, 0);
    c->args[2] = dim(f, slot(f, x), 0);
    append(f, stmt(S_EVAL, c));
}
static void ret(Fn *f, Val *v) {
    f->ret_dt = v->dt;
    f->ret_rank = v->rank;
    append(f, stmt(S_RETURN, v));
}

/* ---- checking plans ----------------------------------------------------------------- */

static char *plan_text(const Plan *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    plan_print(m, p);
    fclose(m);
    return buf;
}

static void expect_plan(Fn *f, int nkernels, const char *const *lines) {
    Plan *p = fuse_fn(&A, f);
    char *t = plan_text(p);
    if (p->nkernels != nkernels) {
        fprintf(stderr, "%s: %d kernels, expected %d\n%s", f->name, p->nkernels, nkernels, t);
        failures++;
    }
    for (int i = 0; lines && lines[i]; i++)
        if (!strstr(t, lines[i])) {
            fprintf(stderr, "%s: plan lacks '%s':\n%s", f->name, lines[i], t);
            failures++;
        }
    if (getenv("VERBOSE")) fputs(t, stdout);
    free(t);
}

/* ---- the programs ------------------------------------------------------------------- */

static Fn *prog_fns[64];
static int nprog;

static Fn *saxpy(void) {
    Fn *f = fn_new("saxpy", 3);
    slot_def(f, 0, "a", DT_F32, 0, true);
    slot_def(f, 1, "x", DT_F32, 1, true);
    slot_def(f, 2, "y", DT_F32, 1, true);
    tie(f, 2, 1);
    ret(f, ew(f, OP_ADD, ew(f, OP_MUL, slot(f, 0), slot(f, 1)), slot(f, 2)));
    return f;
}

static Fn *chain(void) {
    /* sin(x)*cos(y) + exp(-x*x)*0.5 - sqrt(abs(y)) */
    Fn *f = fn_new("chain", 2);
    slot_def(f, 0, "x", DT_F32, 1, true);
    slot_def(f, 1, "y", DT_F32, 1, true);
    Val *x = slot(f, 0), *y = slot(f, 1);
    Val *a = ew(f, OP_MUL, ew(f, OP_SIN, x, NULL), ew(f, OP_COS, y, NULL));
    Val *b = ew(f, OP_MUL, ew(f, OP_EXP, ew(f, OP_NEG, ew(f, OP_MUL, x, x), NULL), NULL), cf(f, DT_F32, 0.5));
    ret(f, ew(f, OP_SUB, ew(f, OP_ADD, a, b), ew(f, OP_SQRT, ew(f, OP_ABS, y, NULL), NULL)));
    return f;
}

static Fn *sumsq(void) {
    Fn *f = fn_new("sumsq", 1);
    slot_def(f, 0, "x", DT_F32, 1, true);
    Val *x = slot(f, 0);
    ret(f, red(f, RED_SUM, ew(f, OP_MUL, x, x), AXIS_ALL, false));
    return f;
}

static Fn *maxmin(void) {
    Fn *f = fn_new("maxmin", 1);
    slot_def(f, 0, "x", DT_F32, 1, true);
    Val *x = slot(f, 0);
    ret(f, ew(f, OP_SUB, red(f, RED_MAX, x, AXIS_ALL, false), red(f, RED_MIN, x, AXIS_ALL, false)));
    return f;
}

static Fn *meanvar(void) {
    /* mean = sum(x)/n; var = sum(x*x)/n - mean*mean: one pass */
    Fn *f = fn_new("meanvar", 1);
    slot_def(f, 0, "x", DT_F64, 1, true);
    Val *x = slot(f, 0);
    Val *n = val_new(&A, f, OP_CAST, DT_F64, 0, 1, L0);
    n->args[0] = dim(f, x, 0);
    Val *mean = ew(f, OP_DIV, red(f, RED_SUM, x, AXIS_ALL, false), n);
    Val *ex2 = ew(f, OP_DIV, red(f, RED_SUM, ew(f, OP_MUL, x, x), AXIS_ALL, false), n);
    ret(f, ew(f, OP_SUB, ex2, ew(f, OP_MUL, mean, mean)));
    return f;
}

static Fn *cumsum(DType dt) {
    Fn *f = fn_new(dt == DT_I32 ? "cumsum_i32" : "cumsum", 1);
    slot_def(f, 0, "x", dt, 1, true);
    ret(f, scan(f, RED_SUM, slot(f, 0)));
    return f;
}

static Fn *mapscanmap(void) {
    /* cumsum(x*y+1)*0.5 - y */
    Fn *f = fn_new("mapscanmap", 2);
    slot_def(f, 0, "x", DT_F32, 1, true);
    slot_def(f, 1, "y", DT_F32, 1, true);
    tie(f, 1, 0);
    Val *x = slot(f, 0), *y = slot(f, 1);
    Val *s = scan(f, RED_SUM, ew(f, OP_ADD, ew(f, OP_MUL, x, y), cf(f, DT_F32, 1)));
    ret(f, ew(f, OP_SUB, ew(f, OP_MUL, s, cf(f, DT_F32, 0.5)), slot(f, 1)));
    return f;
}

static Fn *softmax(void) {
    Fn *f = fn_new("softmax", 1);
    slot_def(f, 0, "x", DT_F32, 2, true);
    Val *x = slot(f, 0);
    Val *e = ew(f, OP_EXP, ew(f, OP_SUB, x, red(f, RED_MAX, x, 1, true)), NULL);
    ret(f, ew(f, OP_DIV, e, red(f, RED_SUM, e, 1, true)));
    return f;
}

static Fn *rowsum(void) {
    /* sum along axis 1 and along axis 0 of a 2-D array */
    Fn *f = fn_new("colrow", 1);
    slot_def(f, 0, "x", DT_F32, 2, true);
    Val *x = slot(f, 0);
    append(f, stmt(S_PRINT, red(f, RED_SUM, x, 1, false)));
    append(f, stmt(S_PRINT, red(f, RED_ARGMAX, x, 0, false)));
    return f;
}

static Fn *lambdas(void) {
    /* scan(|a, b| a * b + a, 1.0, x) and reduce(|a, b| maximum(a, b) * k, 0.0, x) */
    Fn *f = fn_new("lambdas", 2);
    slot_def(f, 0, "x", DT_F32, 1, true);
    slot_def(f, 1, "k", DT_F32, 0, true);
    Val *a0 = val_new(&A, f, OP_ARG, DT_F32, 0, 0, L0), *a1 = val_new(&A, f, OP_ARG, DT_F32, 0, 0, L0);
    a0->slot = 0, a1->slot = 1;
    Val *body = ew(f, OP_ADD, ew(f, OP_MUL, a0, a1), a0);
    Val *s = scan(f, RED_LAMBDA, slot(f, 0));
    s->lam = body;
    s->init = cf(f, DT_F32, 1);
    s->exclusive = true;
    append(f, stmt(S_PRINT, s));
    Val *body2 = ew(f, OP_MUL, ew(f, OP_MAXIMUM, a0, a1), slot(f, 1));
    Val *r = red(f, RED_LAMBDA, slot(f, 0), AXIS_ALL, false);
    r->lam = body2;
    r->init = cf(f, DT_F32, 0);
    append(f, stmt(S_PRINT, r));
    return f;
}

static Fn *gens(void) {
    /* rand(n, seed=7) * linspace(0, 1, n) + f32(iota(n)) and randn; one kernel */
    Fn *f = fn_new("gens", 1);
    slot_def(f, 0, "n", DT_I64, 0, true);
    Val *n = slot(f, 0);
    Val *r = val_new(&A, f, OP_RAND, DT_F32, 1, 2, L0);
    r->args[0] = cf(f, DT_I64, 7), r->args[1] = n;
    Val *l = val_new(&A, f, OP_LINSPACE, DT_F32, 1, 3, L0);
    l->args[0] = cf(f, DT_F32, 0), l->args[1] = cf(f, DT_F32, 1), l->args[2] = n;
    Val *io = val_new(&A, f, OP_IOTA, DT_I64, 1, 1, L0);
    io->args[0] = n;
    Val *c = val_new(&A, f, OP_CAST, DT_F32, 1, 1, L0);
    c->args[0] = io;
    Val *rn = val_new(&A, f, OP_RANDN, DT_F64, 1, 2, L0);
    rn->args[0] = n, rn->args[1] = n;
    Val *c2 = val_new(&A, f, OP_CAST, DT_F32, 1, 1, L0);
    c2->args[0] = rn;
    append(f, stmt(S_PRINT, ew(f, OP_ADD, ew(f, OP_ADD, ew(f, OP_MUL, r, l), c), c2)));
    return f;
}

static Fn *indexing(void) {
    /* reverse(x)[1:n:2] is an index chain (rule 1): the slice reads the reverse at the
       indices it wants, one kernel; transpose(m) + 1; concat(x, x) * 2; x[idx] */
    Fn *f = fn_new("indexing", 3);
    slot_def(f, 0, "x", DT_F32, 1, true);
    slot_def(f, 1, "m", DT_I32, 2, true);
    slot_def(f, 2, "idx", DT_I64, 1, true);
    Val *rv = val_new(&A, f, OP_REVERSE, DT_F32, 1, 1, L0);
    rv->args[0] = slot(f, 0);
    Val *sl = val_new(&A, f, OP_SLICE, DT_F32, 1, 4, L0);
    sl->args[0] = rv, sl->args[1] = cf(f, DT_I64, 1), sl->args[3] = cf(f, DT_I64, 2);
    append(f, stmt(S_PRINT, ew(f, OP_MUL, sl, cf(f, DT_F32, 3))));
    Val *tr = val_new(&A, f, OP_TRANSPOSE, DT_I32, 2, 1, L0);
    tr->args[0] = slot(f, 1);
    tr->perm[0] = 1, tr->perm[1] = 0;
    append(f, stmt(S_PRINT, ew(f, OP_ADD, tr, cf(f, DT_I32, 1))));
    Val *ct = val_new(&A, f, OP_CONCAT, DT_F32, 1, 2, L0);
    ct->args[0] = slot(f, 0), ct->args[1] = slot(f, 0);
    ct->axis = 0;
    append(f, stmt(S_PRINT, ew(f, OP_MUL, ct, cf(f, DT_F32, 2))));
    Val *g = val_new(&A, f, OP_GATHER, DT_F32, 1, 2, L0);
    g->args[0] = slot(f, 0), g->args[1] = slot(f, 2);
    append(f, stmt(S_PRINT, g));
    return f;
}

static Fn *nofuse(void) {
    /* print(cumsum(x)[n-1]); let t = sin(x)*cos(x)*exp(x)*tanh(x) used by two reductions
       of different shapes: materialised */
    Fn *f = fn_new("nofuse", 2);
    slot_def(f, 0, "x", DT_F32, 1, true);
    slot_def(f, 1, "m", DT_F32, 2, true);
    Val *x = slot(f, 0);
    Val *s = scan(f, RED_SUM, x);
    Val *at = val_new(&A, f, OP_SLICE, DT_F32, 0, 4, L0);
    at->args[0] = s;
    at->args[1] = ew(f, OP_SUB, dim(f, x, 0), cf(f, DT_I64, 1));
    at->slmode[0] = SL_INDEX;
    append(f, stmt(S_PRINT, at));
    Val *t = ew(f, OP_MUL, ew(f, OP_MUL, ew(f, OP_SIN, x, NULL), ew(f, OP_COS, x, NULL)),
                ew(f, OP_MUL, ew(f, OP_EXP, x, NULL), ew(f, OP_TANH, x, NULL)));
    Val *m = slot(f, 1);
    Val *u = red(f, RED_SUM, ew(f, OP_MUL, m, t), 1, false); /* over m's shape */
    Val *w = red(f, RED_MAX, t, AXIS_ALL, false);
    append(f, stmt(S_PRINT, ew(f, OP_ADD, ew(f, OP_MUL, u, cf(f, DT_F32, 2)), w)));
    return f;
}

/* The plans of the functions in text (NULL, and a failed check, if it does not compile);
   they live in a, which the caller frees. */
static const PlanSet *plans_of(Arena *a, const char *name, const char *text) {
    arena_init(a);
    Diag d;
    diag_init(&d, stderr);
    Compiled c;
    CHECK(pipeline_text(&c, a, &d, name, text, STAGE_PLAN));
    return c.plans;
}

/* What the executor hands cuBLASLt for a product's kernel (kernel_blas_call): the
   arrays read, which are read transposed, the scale, the bias and relu, as fused. */
static void test_blas_call(void) {
    static const char *text = "fn d(x: f32[m, k], w: f32[n, k], c: f32[n], s: f32) -> f32[m, n] = "
                              "relu(s * (x @ transpose(w)) + c);\n"
                              "fn t(a: f64[k, m], b: f64[k, n]) -> f64[m, n] = transpose(a) @ b;\n"
                              "fn p(a: f32[m, k], b: f32[k, n]) -> f32[m, n] = a @ b * 2.0 + 1.0;\n";
    Arena a;
    const PlanSet *ps = plans_of(&a, "blas.cuk", text);
    for (int i = 0; ps && i < ps->nplans; i++) {
        const Plan *pl = ps->plans[i];
        const Kernel *k = pl->kernels[0];
        CHECK(kernel_blas(k));
        BlasCall bc;
        kernel_blas_call(k, &bc);
        const char *nm = pl->fn->name;
        if (!strcmp(nm, "d")) {
            CHECK(pl->nkernels == 1 && !bc.trans_a && bc.trans_b && bc.relu && bc.alpha && bc.bias);
            CHECK(bc.b->op == OP_SLOT && !strcmp(pl->fn->slots[bc.b->slot].name, "w"));
            CHECK(bc.alpha->op == OP_SLOT && !strcmp(pl->fn->slots[bc.alpha->slot].name, "s"));
            CHECK(bc.bias->op == OP_SLOT && !strcmp(pl->fn->slots[bc.bias->slot].name, "c"));
        } else if (!strcmp(nm, "t")) {
            CHECK(pl->nkernels == 1 && bc.trans_a && !bc.trans_b && !bc.relu && !bc.alpha && !bc.bias);
            CHECK(bc.a->op == OP_SLOT && !strcmp(pl->fn->slots[bc.a->slot].name, "a"));
        } else {
            /* the scale is the call's; the scalar add a map after it */
            CHECK(pl->nkernels == 2 && !bc.trans_a && !bc.trans_b && !bc.relu && bc.alpha && !bc.bias);
            CHECK(bc.alpha->op == OP_CONST && bc.alpha->c.f == 2.0);
        }
    }
    arena_free(&a);
}

/* How the executor launches a row kernel by its row length (kernel_row_entry,
   kernel_row_cluster, kernel_row_launch): f32 rows of one input hold 32
   values a thread, so a block of 512 holds 16384 and a cluster of 8 x 256 65536. */
static void test_row_launch(void) {
    static const char *text = "fn ln(x: f32[r, c]) -> f32[r, c] {\n"
                              "    let d = x - mean(x, axis=1, keepdims=true);\n"
                              "    return d / sqrt(mean(d * d, axis=1, keepdims=true));\n"
                              "}\n"
                              "fn lse(x: f32[r, c]) -> f32[r] {\n"
                              "    let m = max(x, axis=1, keepdims=true);\n"
                              "    return log(sum(exp(x - m), axis=1)) + reshape(m, r);\n"
                              "}\n";
    Arena a;
    const PlanSet *ps = plans_of(&a, "rows.cuk", text);
    for (int i = 0; ps && i < ps->nplans; i++) {
        const Plan *pl = ps->plans[i];
        CHECK(pl->nkernels == 1 && pl->kernels[0]->kind == K_ROW);
        const Kernel *k = pl->kernels[0];
        CHECK(k->block == 512 && k->items == 32);
        CHECK(kernel_row_entry(k, 8192) == KE_GR && kernel_row_entry(k, 8193) == KE_MAIN);
        CHECK(kernel_row_entry(k, 16384) == KE_MAIN && kernel_row_entry(k, 16385) == KE_LG);
        if (!strcmp(pl->fn->name, "ln")) {
            /* 8192 values a block of the cluster */
            CHECK(kernel_row_cluster(k, 16384) == 0 && kernel_row_cluster(k, 16385) == 3);
            CHECK(kernel_row_cluster(k, 65536) == 8 && kernel_row_cluster(k, 65537) == 0);
        } else {
            /* one value a row: the _lg entry at every length */
            CHECK(k->row_out && kernel_row_cluster(k, 16385) == 0 && kernel_row_cluster(k, 65536) == 0);
        }
        /* short rows: T threads a row, blocks of 128 (or T), the grid covering the rows once */
        CHECK(kernel_short_row_threads(k, 1) == 32 && kernel_short_row_threads(k, 1024) == 32);
        CHECK(kernel_short_row_threads(k, 1025) == 64 && kernel_short_row_threads(k, 8192) == 256);
        RowDevice dv = {.l2_bytes = 0, .sm_count = 132, .clusters = true}, big = dv;
        big.short_block = 4096;
        RowLaunch l = kernel_row_launch(k, 4096, 65536, &dv);
        CHECK(l.entry == KE_GR && l.block == 128 && l.grid == 65535 && !l.cluster);
        CHECK(kernel_row_launch(k, 8192, 10, &dv).block == 256);
        l = kernel_row_launch(k, 100, 1000, &dv);
        CHECK(l.block == 128 && l.grid == 250 && kernel_row_launch(k, 100, 0, &dv).grid == 1);
        CHECK(kernel_row_launch(k, 100, 1000, &big).block == 512);
        /* a row to a block; a row to a cluster where the kernel and the device take it */
        l = kernel_row_launch(k, 16384, 7, &dv);
        CHECK(l.entry == KE_MAIN && l.grid == 7 && l.block == 512 && !l.cluster);
        l = kernel_row_launch(k, 65536, 7, &dv);
        if (k->row_out) CHECK(l.entry == KE_LG && l.grid == 7 && l.block == 512 && !l.cluster);
        else CHECK(l.entry == KE_CL && l.grid == 56 && l.block == ROW_CLUSTER_BLOCK && l.cluster == 8);
        dv.clusters = false;
        CHECK(kernel_row_launch(k, 65536, 7, &dv).entry == KE_LG);
        /* long rows in L2-sized waves: 4 rows of 256 KiB in half of 2 MiB, the SMs at least;
           logsumexp's one pass (an online pair) a row for every block */
        bool lse = !strcmp(pl->fn->name, "lse");
        CHECK(kernel_row_online(k, 1) == lse && !kernel_row_online(k, 0) && !kernel_row_online(k, 2));
        /* layer norm's variance about the mean: a centred pair, whose centre is the mean */
        Val *a = kernel_row_centred(k, 1);
        CHECK(lse ? !a : a && a->op == OP_DIV && a->args[0] == k->reds[0]);
        CHECK(!kernel_row_centred(k, 0) && !kernel_row_centred(k, 2));
        CHECK(kernel_row_passes(k, true) == (lse ? 1 : 3) && kernel_row_passes(k, false) == (lse ? 2 : 3));
        dv.l2_bytes = 2 << 20, dv.sm_count = 2;
        CHECK(kernel_row_launch(k, 65536, 100, &dv).grid == (lse ? 100 : 4));
        dv.sm_count = 132;
        CHECK(kernel_row_launch(k, 65536, 100, &dv).grid == 100);
        CHECK(kernel_row_launch(k, 65536, 200, &dv).grid == (lse ? 200 : 132));
        dv.two_pass = true;
        CHECK(kernel_row_launch(k, 65536, 200, &dv).grid == 132);
    }
    arena_free(&a);
}

int main(void) {
    arena_init(&A);
    test_blas_call();
    test_row_launch();
    /* ---- plans ---- */
    Fn *f;
    f = saxpy();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 map: mul add  inputs: %x %y %a  outputs: %", NULL});
    f = chain();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 map: sin cos mul mul neg exp mul add abs sqrt sub", NULL});
    f = sumsq();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 reduce: mul red.sum  inputs: %x", NULL});
    f = maxmin();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 reduce: red.max red.min  inputs: %x", NULL});
    f = meanvar();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 reduce: mul red.sum red.sum  inputs: %x", NULL});
    f = cumsum(DT_F32);
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 scan: scan.sum  inputs: %x", NULL});
    f = cumsum(DT_I32);
    prog_fns[nprog++] = f;
    expect_plan(f, 1, NULL);
    f = mapscanmap();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 scan: mul add scan.sum mul sub  inputs: %x %y", NULL});
    f = softmax();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 row: red.max(axis=1) sub exp red.sum(axis=1) div", NULL});
    f = rowsum();
    prog_fns[nprog++] = f;
    expect_plan(f, 2, (const char *[]){"red.sum(axis=1)", "red.argmax(axis=0)", NULL});
    f = lambdas();
    prog_fns[nprog++] = f;
    expect_plan(f, 2, (const char *[]){"kernel k0 scan: scan.lambda", "kernel k1 reduce: red.lambda  inputs: %x %k", NULL});
    f = gens();
    prog_fns[nprog++] = f;
    expect_plan(f, 1, (const char *[]){"kernel k0 map: rand linspace mul iota cast add randn cast add  inputs: %n", NULL});
    f = indexing();
    prog_fns[nprog++] = f;
    expect_plan(f, 4, (const char *[]){"map: reverse slice mul  inputs: %x", "map: transpose add  inputs: %m",
                                       "map: concat mul  inputs: %x", "map: gather  inputs: %x %idx", NULL});
    f = nofuse();
    prog_fns[nprog++] = f;
    expect_plan(f, 5, (const char *[]){"kernel k0 scan: scan.sum  inputs: %x", "map: sin cos mul exp tanh mul mul",
                                       "reduce: mul red.sum(axis=1)", "reduce: red.max", "map: mul add", NULL});

    /* ---- CUDA: the whole program in one translation unit, through NVRTC ---- */
    Program prog = {.arena = &A, .nfns = nprog, .fns = prog_fns};
    for (int i = 0; i < nprog; i++)
        for (int j = 0; j < prog_fns[i]->nvals; j++) (void)0;
    PlanSet *ps = fuse_program(&A, &prog);
    char *src = emit_cuda_program(&A, &prog, ps);
    CHECK(src && strstr(src, "extern \"C\" __global__"));
    if (getenv("EMIT_DUMP")) {
        FILE *o = fopen(getenv("EMIT_DUMP"), "w");
        if (o) fputs(src, o), fclose(o);
    }
    cuk_compile_opts o = {.arch = "sm_90", .kind = CUK_IMAGE_PTX, .no_disk_cache = 1};
    cuk_image *im = NULL;
    cuk_status st = cuk_compile(src, &o, &im);
    if (st == CUK_ERR_NO_NVRTC) {
        printf("test_emit: NVRTC not found, PTX compile skipped\n");
    } else {
        if (st != CUK_OK) fprintf(stderr, "NVRTC: %s\n", cuk_last_error());
        CHECK(st == CUK_OK);
        if (st == CUK_OK) {
            const void *data;
            size_t size;
            cuk_image_data(im, &data, &size);
            int entries = 0;
            for (const char *q = data; (q = strstr(q, ".visible .entry")); q++) entries++;
            int want = 0;
            for (int i = 0; i < ps->nplans; i++)
                for (int k = 0; k < ps->plans[i]->nkernels; k++) want += kernel_entry_count(ps->plans[i]->kernels[k]);
            if (entries != want) fprintf(stderr, "PTX has %d entries, expected %d\n", entries, want);
            CHECK(entries == want);
            for (int i = 0; i < ps->nplans; i++)
                for (int k = 0; k < ps->plans[i]->nkernels; k++)
                    CHECK(strstr(data, ps->plans[i]->kernels[k]->name) != NULL);
            cuk_image_free(im);
        }
    }
    arena_free(&A);
    if (failures) {
        fprintf(stderr, "test_emit: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_emit: ok\n");
    return 0;
}
