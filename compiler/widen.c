/* The narrow types are storage types. f16 and bf16 are computed in f32 and rounded back
   (DESIGN.md, "Types") once per elementwise expression: an op's f32 result feeds the
   elementwise ops that use it unrounded, and is rounded where the value leaves the
   expression (a reduction, sort, index op or statement reads it, or an explicit cast),
   as torch.compile and XLA compute fused expressions, so both backends give the same
   bits whatever the kernels; the 8- and 16-bit integers are computed in i32 and wrapped back
   after every op,
   which gives the same bits as arithmetic in the narrow type for every op the language
   has (the ring ops, bitwise ops, shifts and powers agree modulo 2^8 and 2^16; division,
   comparisons, min and max see the same values). This pass rewrites every op that
   computes on a narrow type to compute in its wide type (dtype_wide) between casts, so
   the backends only ever load, store, copy and convert the narrow types: one rule, in one
   place, for both backends. Reductions and scans of f16 and bf16 accumulate in f32, as
   the design asks; sorting and searching see the same order in the wide type.

   An op v is rewritten in place: a copy u of it computes in the wide type, and v becomes
   a cast of u back to the narrow type (or stays the op itself where its result is not
   narrow: comparisons, argsort, reductions to an index), so every user of v sees the
   same value as before. Casts to the wide type are shared per operand, so sort_by_key's
   keys and values still name the same key array. */
#include <string.h>

#include "ir.h"

typedef struct Widen {
    Arena *a;
    Fn *f;
    int n0;        /* ids below this existed before the pass */
    bool *done;    /* [n0]: visited */
    Val **wide;    /* [n0]: the shared cast of a value to its wide type */
    bool *ewsplit; /* [n0]: an elementwise op now cast(its wide copy) */
    Val **lams;    /* lambda bodies rewritten (old root, new root), pairs */
    int nlams, caplams;
} Widen;

static bool narrow(DType dt) { return dt < DT_COUNT && dtype_wide(dt) != dt; }

static Val *cast_val(Widen *w, Val *x, DType dt) {
    Val *c = val_new(w->a, w->f, OP_CAST, dt, x->rank, 1, x->loc);
    c->args[0] = x;
    return c;
}

/* x in its wide type (x itself where it is not narrow). */
static Val *widened(Widen *w, Val *x) {
    if (!x || !narrow(x->dt)) return x;
    if (x->id < w->n0 && w->ewsplit[x->id]) return x->args[0]; /* still in the expression */
    if (x->id < w->n0) {
        if (!w->wide[x->id]) w->wide[x->id] = cast_val(w, x, dtype_wide(x->dt));
        return w->wide[x->id];
    }
    return cast_val(w, x, dtype_wide(x->dt));
}

/* v becomes cast(u) where u is a copy of v computing in type dt (returned). */
static Val *split(Widen *w, Val *v, DType dt) {
    Val *u = val_new(w->a, w->f, v->op, dt, v->rank, 0, v->loc);
    int id = u->id;
    *u = *v;
    u->id = id;
    u->dt = dt;
    u->args = v->nargs ? NEWN(w->a, Val *, v->nargs) : NULL;
    for (int i = 0; i < v->nargs; i++) u->args[i] = v->args[i];
    Val keep = *v;
    memset(v, 0, sizeof *v);
    v->op = OP_CAST;
    v->dt = keep.dt;
    v->rank = keep.rank;
    v->loc = keep.loc;
    v->id = keep.id;
    v->kernel = -1;
    for (int i = 0; i < MAXRANK; i++) v->perm[i] = i;
    v->nargs = 1;
    v->args = NEWN(w->a, Val *, 1);
    v->args[0] = u;
    return u;
}

static void visit(Widen *w, Val *v);

/* A combine function over narrow values (reduce, scan, reduce_by_index with a lambda), as
   one over wide values: its parameters narrowed on entry, its result widened. */
static Val *widen_lambda(Widen *w, Val *lam, DType dt) {
    for (int i = 0; i < w->nlams; i += 2)
        if (w->lams[i] == lam) return w->lams[i + 1];
    /* The parameters (OP_ARG of type dt) become casts of wide ones, in place. */
    Val **stack = NEWN(w->a, Val *, 64);
    int n = 0, cap = 64;
    bool *seen = NEWN(w->a, bool, (size_t)w->f->nvals);
    stack[n++] = lam;
    while (n) {
        Val *x = stack[--n];
        if (!x || x->id >= w->f->nvals || seen[x->id]) continue;
        seen[x->id] = true;
        if (x->op == OP_ARG && x->dt == dt) {
            Val *arg = split(w, x, dtype_wide(dt));
            (void)arg;
            continue;
        }
        for (int i = 0; i < x->nargs; i++) {
            if (n == cap) {
                Val **s2 = NEWN(w->a, Val *, (size_t)cap * 2);
                memcpy(s2, stack, sizeof *stack * (size_t)n);
                stack = s2, cap *= 2;
            }
            stack[n++] = x->args[i];
        }
    }
    visit(w, lam);
    Val *r = cast_val(w, lam, dtype_wide(dt));
    if (w->nlams + 2 > w->caplams) {
        int c2 = w->caplams ? w->caplams * 2 : 8;
        Val **l2 = NEWN(w->a, Val *, (size_t)c2);
        if (w->nlams) memcpy(l2, w->lams, sizeof *l2 * (size_t)w->nlams);
        w->lams = l2, w->caplams = c2;
    }
    w->lams[w->nlams++] = lam;
    w->lams[w->nlams++] = r;
    return r;
}

/* Whether v computes on a narrow operand or result (and so is rewritten). */
static bool computes_narrow(const Val *v) {
    switch (v->op) {
    case OP_CAST:        /* converts: both backends do it for every pair */
    case OP_SCALARCALL:  /* a function of narrow scalars: its body is rewritten itself */
    case OP_CONST: case OP_SLOT: case OP_ARG: case OP_DIM: case OP_CHECKDIM: case OP_LOAD: case OP_CALL:
    case OP_SLICE: case OP_GATHER: case OP_REVERSE: case OP_CONCAT: case OP_RESHAPE: case OP_TRANSPOSE:
    case OP_PAD: case OP_ROLL: case OP_STACK: case OP_UPDATE: /* move elements */
        return false;
    default: break;
    }
    if (narrow(v->dt)) return true;
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && op_value_arg(v->op, i) && narrow(v->args[i]->dt)) return true;
    return false;
}

static void rewrite(Widen *w, Val *v) {
    DType dt = v->dt;
    DType xdt = v->nargs && v->args[0] ? v->args[0]->dt : dt; /* a reduction's element type */
    Val *lam = v->lam;
    Val *u = v;
    switch (v->op) {
    case OP_IOTA: /* i64 then one conversion: exact where the type can hold it */
        u = split(w, v, DT_I64);
        return;
    case OP_RAND: { /* f32 floored to the narrow grid, 2^-11 (f16) or 2^-8 (bf16): rounding
                       to nearest would give 1.0, outside [0, 1) */
        u = split(w, v, DT_F32);
        double g = dt == DT_F16 ? 2048.0 : 256.0;
        Val *k = val_new(w->a, w->f, OP_CONST, DT_F32, 0, 0, v->loc), *ik = val_new(w->a, w->f, OP_CONST, DT_F32, 0, 0, v->loc);
        k->c.f = g, ik->c.f = 1.0 / g;
        Val *m = val_new(w->a, w->f, OP_MUL, DT_F32, v->rank, 2, v->loc);
        m->args[0] = u, m->args[1] = k;
        Val *fl = val_new(w->a, w->f, OP_FLOOR, DT_F32, v->rank, 1, v->loc);
        fl->args[0] = m;
        Val *r = val_new(w->a, w->f, OP_MUL, DT_F32, v->rank, 2, v->loc);
        r->args[0] = fl, r->args[1] = ik;
        v->args[0] = r;
        return;
    }
    default: break;
    }
    if (narrow(dt)) {
        u = split(w, v, dtype_wide(dt));
        /* the integers wrap after every op: (a + b) / 2 must see a + b wrapped */
        if (dtype_is_half(dt) && op_is_ew(u->op) && v->id < w->n0) w->ewsplit[v->id] = true;
    }
    /* Every narrow operand, widened: they are values, a scatter's destination, a
       generator's ends, unique's fallback; sizes and offsets are i64. sort's second
       operand is the sort_by_key it computes alongside (fixed in sortkv_link). */
    for (int i = 0; i < u->nargs; i++)
        if (u->args[i] && !(u->op == OP_SORT && i == 1)) u->args[i] = widened(w, u->args[i]);
    if (u->init) u->init = widened(w, u->init);
    if (lam && narrow(xdt) && (u->op == OP_REDUCE || u->op == OP_SCAN || u->op == OP_HIST))
        u->lam = widen_lambda(w, lam, xdt);
    else if (lam)
        visit(w, lam);
}

/* sort(k) computes sort_by_key(k, v) alongside (its operand 1, exec/sort.h): where either
   was rewritten, the pair is the two ops that compute. */
static void sortkv_link(Val *v) {
    Val *s = v->op == OP_CAST && v->args[0]->op == OP_SORT ? v->args[0] : v;
    if (s->op != OP_SORT || s->nargs < 2) return;
    Val *kv = s->args[1];
    if (kv->op == OP_CAST && kv->args[0]->op == OP_SORTKV) s->args[1] = kv->args[0];
}

static void visit(Widen *w, Val *v) {
    if (!v || v->id >= w->n0 || w->done[v->id]) return;
    w->done[v->id] = true;
    for (int i = 0; i < v->nargs; i++) visit(w, v->args[i]);
    visit(w, v->init);
    if (computes_narrow(v) || (v->op == OP_IOTA && narrow(v->dt))) rewrite(w, v);
    else if (v->lam) visit(w, v->lam);
    sortkv_link(v);
}

static void visit_stmts(Widen *w, Stmt *s) {
    for (; s; s = s->next) {
        visit(w, s->v);
        visit(w, s->v2);
        for (int k = 0; k < s->nvs && s->vs; k++) visit(w, s->vs[k]);
        visit_stmts(w, s->body);
        visit_stmts(w, s->els);
    }
}

void widen_program(Arena *a, Program *p) {
    for (int i = 0; i < p->nfns; i++) {
        Fn *f = p->fns[i];
        Widen w = {.a = a, .f = f, .n0 = f->nvals};
        w.done = NEWN(a, bool, (size_t)f->nvals + 1);
        w.wide = NEWN(a, Val *, (size_t)f->nvals + 1);
        w.ewsplit = NEWN(a, bool, (size_t)f->nvals + 1);
        visit_stmts(&w, f->body);
    }
}
