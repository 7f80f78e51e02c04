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

/* What both rewrites keep per function, and the node builders they share. */
typedef struct Pass {
    Arena *a;
    Fn *f;
    int n0;     /* ids below this existed before the pass */
    bool *done; /* [n0]: visited */
} Pass;

static void pass_init(Pass *p, Arena *a, Fn *f) {
    p->a = a, p->f = f, p->n0 = f->nvals;
    p->done = NEWN(a, bool, (size_t)f->nvals + 1);
}

static Val *cnew(Pass *x, OpKind op, DType dt, int rank, Loc loc, int nargs) { return val_new(x->a, x->f, op, dt, rank, nargs, loc); }

static int rk(const Val *a, const Val *b) { return !b || a->rank >= b->rank ? a->rank : b->rank; }

static Val *e1(Pass *x, OpKind op, Val *a) {
    Val *v = cnew(x, op, op >= OP_EW_END || ew_info[op].cls != OC_PRED ? a->dt : DT_BOOL, a->rank, a->loc, 1);
    v->args[0] = a;
    return v;
}
static Val *e2(Pass *x, OpKind op, Val *a, Val *b) {
    OpClass k = ew_info[op].cls;
    Val *v = cnew(x, op, k == OC_CMP ? DT_BOOL : a->dt, rk(a, b), a->loc, 2);
    v->args[0] = a, v->args[1] = b;
    return v;
}
static Val *sel(Pass *x, Val *c, Val *a, Val *b) {
    Val *v = cnew(x, OP_SELECT, a->dt, rk(c, rk(a, b) == a->rank ? a : b), a->loc, 3);
    v->args[0] = c, v->args[1] = a, v->args[2] = b;
    return v;
}
static Val *rconst(Pass *x, DType dt, double c, Loc loc) {
    Val *v = cnew(x, OP_CONST, dt, 0, loc, 0);
    v->c.f = c;
    return v;
}
static Val *cast_to(Pass *x, Val *a, DType dt) {
    Val *v = e1(x, OP_CAST, a);
    v->dt = dt;
    return v;
}

/* v, in place, becomes r (a fresh node; v keeps its id, so its users see r). */
static void become(Val *v, const Val *r) {
    int id = v->id;
    *v = *r;
    v->id = id;
}

/* A copy of v (its op, fields and operands), typed dt. */
static Val *clone(Pass *x, const Val *v, DType dt) {
    Val *u = cnew(x, v->op, dt, v->rank, v->loc, 0);
    int id = u->id;
    *u = *v;
    u->id = id;
    u->dt = dt;
    u->args = v->nargs ? NEWN(x->a, Val *, v->nargs) : NULL;
    for (int i = 0; i < v->nargs; i++) u->args[i] = v->args[i];
    return u;
}

/* fn(ctx, v) for every value a statement of the list names, nested blocks included. */
static void stmts_each(Stmt *s, void (*fn)(void *, Val *), void *ctx) {
    for (; s; s = s->next) {
        fn(ctx, s->v);
        fn(ctx, s->v2);
        for (int k = 0; k < s->nvs && s->vs; k++) fn(ctx, s->vs[k]);
        stmts_each(s->body, fn, ctx);
        stmts_each(s->els, fn, ctx);
    }
}

/* ---- the narrow types ------------------------------------------------------------------- */

typedef struct Widen {
    Pass p;
    Val **wide;    /* [n0]: the shared cast of a value to its wide type */
    bool *ewsplit; /* [n0]: an elementwise op now cast(its wide copy) */
    Val **lam;     /* [n0]: a combine function's body, rewritten over wide values */
} Widen;

static bool narrow(DType dt) { return dt < DT_COUNT && dtype_wide(dt) != dt; }

/* x in its wide type (x itself where it is not narrow). */
static Val *widened(Widen *w, Val *x) {
    if (!x || !narrow(x->dt)) return x;
    if (x->id >= w->p.n0) return cast_to(&w->p, x, dtype_wide(x->dt));
    if (w->ewsplit[x->id]) return x->args[0]; /* still in the expression */
    if (!w->wide[x->id]) w->wide[x->id] = cast_to(&w->p, x, dtype_wide(x->dt));
    return w->wide[x->id];
}

/* v becomes cast(u) where u is a copy of v computing in type dt (returned). */
static Val *split(Pass *x, Val *v, DType dt) {
    Val *u = clone(x, v, dt);
    become(v, cast_to(x, u, v->dt));
    return u;
}

static void visit(Widen *w, Val *v);

/* The parameters (OP_ARG of type dt) of a combine function's body x, in place, as casts
   of wide ones. */
static void widen_args(Pass *p, Val *x, DType dt, bool *seen, int n) {
    if (!x || x->id >= n || seen[x->id]) return;
    seen[x->id] = true;
    if (x->op == OP_ARG && x->dt == dt) split(p, x, dtype_wide(dt));
    else
        for (int i = 0; i < x->nargs; i++) widen_args(p, x->args[i], dt, seen, n);
}

/* A combine function over narrow values (reduce, scan, reduce_by_index with a lambda), as
   one over wide values: its parameters narrowed on entry, its result widened. */
static Val *widen_lambda(Widen *w, Val *lam, DType dt) {
    if (!w->lam[lam->id]) {
        int n = w->p.f->nvals;
        widen_args(&w->p, lam, dt, NEWN(w->p.a, bool, (size_t)n), n);
        visit(w, lam);
        w->lam[lam->id] = cast_to(&w->p, lam, dtype_wide(dt));
    }
    return w->lam[lam->id];
}

/* Whether v computes on a narrow operand or result (and so is rewritten). */
static bool computes_narrow(const Val *v) {
    /* a product of 16-bit floats is cuBLASLt's with f32 products and sums (and the CPU
       backend's the same): one rounding at the end, as the rule for expressions */
    if (v->op == OP_MATMUL && dtype_is_half(v->dt)) return false;
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
        split(&w->p, v, DT_I64);
        return;
    case OP_RAND: { /* f32 floored to the narrow grid, 2^-11 (f16) or 2^-8 (bf16): rounding
                       to nearest would give 1.0, outside [0, 1) */
        Pass *x = &w->p;
        double g = dt == DT_F16 ? 2048.0 : 256.0;
        Val *u = split(x, v, DT_F32);
        v->args[0] = e2(x, OP_MUL, e1(x, OP_FLOOR, e2(x, OP_MUL, u, rconst(x, DT_F32, g, v->loc))),
                        rconst(x, DT_F32, 1.0 / g, v->loc));
        return;
    }
    default: break;
    }
    if (narrow(dt)) {
        u = split(&w->p, v, dtype_wide(dt));
        /* the integers wrap after every op: (a + b) / 2 must see a + b wrapped */
        if (dtype_is_half(dt) && op_is_ew(u->op) && v->id < w->p.n0) w->ewsplit[v->id] = true;
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
    if (!v || v->id >= w->p.n0 || w->p.done[v->id]) return;
    w->p.done[v->id] = true;
    for (int i = 0; i < v->nargs; i++) visit(w, v->args[i]);
    visit(w, v->init);
    if (computes_narrow(v)) rewrite(w, v);
    else if (v->lam) visit(w, v->lam);
    sortkv_link(v);
}

static void visit_cb(void *w, Val *v) { visit(w, v); }

/* ---- the complex types ------------------------------------------------------------------
   c64 and c128 are pairs of f32 or f64 in memory (NumPy's layout). Every op on them is
   taken apart here into ops on the real and imaginary parts, before the narrow types'
   rewrite and fusion: a complex array is read with OP_CPART (its re or im, in the kernel
   that loads it) and made with OP_CPACK where it is stored, and what lies between is real
   arithmetic that fuses like any other (a complex sum is two sums of one pass, rule 4).
   The backends only load, store, move, split and pack complex elements. The formulas are
   NumPy's (npymath): Smith's division, csqrt's, Kahan's tanh; pow is exp(w log z). */

typedef struct Cx {
    Pass p;
    Val **part[2]; /* [n0]: the shared OP_CPART of a complex value that stays complex */
} Cx;

static Val *cpack(Pass *x, DType dt, Val *re, Val *im, int rank, Loc loc) {
    Val *v = cnew(x, OP_CPACK, dt, rank, loc, 2);
    v->args[0] = re, v->args[1] = im;
    return v;
}

/* The real (k = 0) or imaginary part of the complex value z, of z's full shape where
   full is set (an operand of a reduction or an index op), else perhaps broadcast. */
static Val *cpart(Cx *cx, Val *z, int k, bool full) {
    Pass *x = &cx->p;
    DType pt = dtype_part(z->dt);
    if (z->op == OP_CONST) return rconst(x, pt, z->c.z[k], z->loc);
    if (z->op == OP_CPACK && (!full || z->args[k]->rank == z->rank)) return z->args[k];
    if (z->id < x->n0 && cx->part[k][z->id]) return cx->part[k][z->id];
    Val *v = cnew(x, OP_CPART, pt, z->rank, z->loc, 1);
    v->args[0] = z;
    v->axis = k;
    if (z->id < x->n0) cx->part[k][z->id] = v;
    return v;
}

static bool cplx(const Val *v) { return v && v->dt < DT_COUNT && dtype_is_complex(v->dt); }

/* exp of (a, b): NumPy keeps b when it is 0 (no inf * 0 for real arguments). */
static void cexp_parts(Pass *x, Val *a, Val *b, Val **re, Val **im) {
    Val *e = e1(x, OP_EXP, a), *z = e2(x, OP_EQ, b, rconst(x, b->dt, 0, b->loc));
    *re = sel(x, z, e, e2(x, OP_MUL, e, e1(x, OP_COS, b)));
    *im = sel(x, z, b, e2(x, OP_MUL, e, e1(x, OP_SIN, b)));
}

/* tanh of (a, b), Kahan's form: robust where tanh a is +-1. */
static void ctanh_parts(Pass *x, Val *a, Val *b, Val **re, Val **im) {
    DType t = a->dt;
    Val *one = rconst(x, t, 1, a->loc);
    Val *tx = e1(x, OP_TANH, a), *ty = e1(x, OP_TAN, b);
    Val *tx2 = e2(x, OP_MUL, tx, tx), *ty2 = e2(x, OP_MUL, ty, ty);
    Val *den = e2(x, OP_ADD, one, e2(x, OP_MUL, tx2, ty2));
    *re = e2(x, OP_DIV, e2(x, OP_MUL, tx, e2(x, OP_ADD, one, ty2)), den);
    *im = e2(x, OP_DIV, e2(x, OP_MUL, ty, e2(x, OP_SUB, one, tx2)), den);
}

/* (ar + ai i)(br + bi i) */
static void cmul(Pass *x, Val *ar, Val *ai, Val *br, Val *bi, Val **re, Val **im) {
    *re = e2(x, OP_SUB, e2(x, OP_MUL, ar, br), e2(x, OP_MUL, ai, bi));
    *im = e2(x, OP_ADD, e2(x, OP_MUL, ar, bi), e2(x, OP_MUL, ai, br));
}

/* (ar + ai i) / (br + bi i): Smith's, as NumPy's loop and npymath compute it (a reciprocal
   of the scale, then products), and a zero divisor as NumPy: (ar / |br|, ai / |br|). */
static void cdiv(Pass *x, Val *ar, Val *ai, Val *br, Val *bi, Val **re, Val **im) {
    DType pt = ar->dt;
    Loc loc = ar->loc;
    Val *abr = e1(x, OP_ABS, br), *abi = e1(x, OP_ABS, bi), *zero = rconst(x, pt, 0, loc), *one = rconst(x, pt, 1, loc);
    Val *big = e2(x, OP_GE, abr, abi), *zd = e2(x, OP_LAND, e2(x, OP_EQ, abr, zero), e2(x, OP_EQ, abi, zero));
    Val *r1 = e2(x, OP_DIV, bi, br), *s1 = e2(x, OP_DIV, one, e2(x, OP_ADD, br, e2(x, OP_MUL, bi, r1)));
    Val *r2 = e2(x, OP_DIV, br, bi), *s2 = e2(x, OP_DIV, one, e2(x, OP_ADD, bi, e2(x, OP_MUL, br, r2)));
    Val *re1 = e2(x, OP_MUL, e2(x, OP_ADD, ar, e2(x, OP_MUL, ai, r1)), s1);
    Val *im1 = e2(x, OP_MUL, e2(x, OP_SUB, ai, e2(x, OP_MUL, ar, r1)), s1);
    Val *re2 = e2(x, OP_MUL, e2(x, OP_ADD, e2(x, OP_MUL, ar, r2), ai), s2);
    Val *im2 = e2(x, OP_MUL, e2(x, OP_SUB, e2(x, OP_MUL, ai, r2), ar), s2);
    *re = sel(x, big, sel(x, zd, e2(x, OP_DIV, ar, abr), re1), re2);
    *im = sel(x, big, sel(x, zd, e2(x, OP_DIV, ai, abr), im1), im2);
}

/* Whether w is a literal integer n (its imaginary part 0), |n| <= 100. */
static bool int_power(const Val *w, int64_t *n) {
    double re, im;
    if (w->op == OP_CONST) re = w->c.z[0], im = w->c.z[1];
    else if (w->op == OP_CPACK && w->args[0]->op == OP_CONST && w->args[1]->op == OP_CONST)
        re = w->args[0]->c.f, im = w->args[1]->c.f;
    else return false;
    if (im != 0 || !(re >= -100 && re <= 100) || re != (double)(int64_t)re) return false;
    *n = (int64_t)re;
    return true;
}

/* z^n by squaring (1 for n = 0), and 1 / z^-n for n < 0, as NumPy's cpow does. */
static void cpow_int(Pass *x, Val *ar, Val *ai, int64_t n, Val **re, Val **im) {
    DType t = ar->dt;
    Loc loc = ar->loc;
    uint64_t m = n < 0 ? (uint64_t)-n : (uint64_t)n;
    Val *pr = rconst(x, t, 1, loc), *pi = rconst(x, t, 0, loc), *sr = ar, *si = ai;
    bool first = true;
    while (m) {
        if (m & 1) {
            if (first) pr = sr, pi = si, first = false;
            else cmul(x, pr, pi, sr, si, &pr, &pi);
        }
        m >>= 1;
        if (m) cmul(x, sr, si, sr, si, &sr, &si);
    }
    if (n < 0) { /* 1 / p */
        cdiv(x, rconst(x, t, 1, loc), rconst(x, t, 0, loc), pr, pi, re, im);
        return;
    }
    *re = pr, *im = pi;
}

/* v (complex-typed, or reading complex values) rewritten into real parts. */
static void cx_rewrite(Cx *cx, Val *v) {
    Pass *x = &cx->p;
    DType dt = v->dt, pt = dtype_part(v->dt);
    Loc loc = v->loc;
    Val *z0 = v->nargs ? v->args[0] : NULL, *z1 = v->nargs > 1 ? v->args[1] : NULL;
    Val *ar = NULL, *ai = NULL, *br = NULL, *bi = NULL, *re = NULL, *im = NULL;
    bool full = !op_is_ew(v->op);
    if (cplx(z0)) ar = cpart(cx, z0, 0, full), ai = cpart(cx, z0, 1, full);
    if (cplx(z1) && v->op != OP_SELECT) br = cpart(cx, z1, 0, full), bi = cpart(cx, z1, 1, full);
    switch (v->op) {
    case OP_CPART:
        if (!cplx(z0) || (z0->op != OP_CONST && z0->op != OP_CPACK)) return; /* reads a stored complex */
        become(v, v->axis ? ai : ar);
        return;
    case OP_CAST:
        if (cplx(v) && cplx(z0)) re = cast_to(x, ar, pt), im = cast_to(x, ai, pt);
        else if (cplx(v)) re = cast_to(x, z0, pt), im = rconst(x, pt, 0, loc); else if (dt == DT_BOOL) {
            Val *zr = rconst(x, ar->dt, 0, loc);
            become(v, e2(x, OP_LOR, e2(x, OP_NE, ar, zr), e2(x, OP_NE, ai, zr)));
            return;
        } else { /* NumPy's astype: the real part */
            become(v, cast_to(x, ar, dt));
            return;
        }
        break;
    case OP_ADD:
    case OP_SUB:
        re = e2(x, v->op, ar, br), im = e2(x, v->op, ai, bi);
        break;
    case OP_NEG: re = e1(x, OP_NEG, ar), im = e1(x, OP_NEG, ai); break;
    case OP_MUL: cmul(x, ar, ai, br, bi, &re, &im); break;
    case OP_DIV: cdiv(x, ar, ai, br, bi, &re, &im); break;
    case OP_ABS: become(v, e2(x, OP_HYPOT, ar, ai)); return;
    case OP_EQ: become(v, e2(x, OP_LAND, e2(x, OP_EQ, ar, br), e2(x, OP_EQ, ai, bi))); return;
    case OP_NE: become(v, e2(x, OP_LOR, e2(x, OP_NE, ar, br), e2(x, OP_NE, ai, bi))); return;
    case OP_ISNAN:
    case OP_ISINF: become(v, e2(x, OP_LOR, e1(x, v->op, ar), e1(x, v->op, ai))); return;
    case OP_SELECT: {
        Val *b = v->args[1], *c = v->args[2];
        re = sel(x, z0, cpart(cx, b, 0, false), cpart(cx, c, 0, false));
        im = sel(x, z0, cpart(cx, b, 1, false), cpart(cx, c, 1, false));
        break;
    }
    case OP_EXP: cexp_parts(x, ar, ai, &re, &im); break;
    case OP_LOG: re = e1(x, OP_LOG, e2(x, OP_HYPOT, ar, ai)), im = e2(x, OP_ATAN2, ai, ar); break;
    case OP_SQRT: { /* C99's csqrt: t = sqrt((|a| + |z|) / 2) */
        Val *zero = rconst(x, pt, 0, loc), *half = rconst(x, pt, 0.5, loc);
        Val *t = e1(x, OP_SQRT, e2(x, OP_MUL, e2(x, OP_ADD, e1(x, OP_ABS, ar), e2(x, OP_HYPOT, ar, ai)), half));
        Val *t2 = e2(x, OP_ADD, t, t), *pos = e2(x, OP_GE, ar, zero);
        Val *z = e2(x, OP_LAND, e2(x, OP_EQ, ar, zero), e2(x, OP_EQ, ai, zero));
        re = sel(x, z, zero, sel(x, pos, t, e2(x, OP_DIV, e1(x, OP_ABS, ai), t2)));
        im = sel(x, z, ai, sel(x, pos, e2(x, OP_DIV, ai, t2), sel(x, e2(x, OP_LT, ai, zero), e1(x, OP_NEG, t), t)));
        Val *inf = e1(x, OP_ISINF, ai); /* C99: sqrt(x + inf i) = inf + inf i, whatever x */
        re = sel(x, inf, e1(x, OP_ABS, ai), re), im = sel(x, inf, ai, im);
        break;
    }
    case OP_SIN:
    case OP_COS:
    case OP_SINH:
    case OP_COSH: { /* re = f(a) g(b), im = +-h(a) k(b): sin z = sin a cosh b + i cos a sinh b, ... */
        static const struct { OpKind op, f, g, h, k; bool neg; } T[] = {
            {OP_SIN, OP_SIN, OP_COSH, OP_COS, OP_SINH, false},  {OP_COS, OP_COS, OP_COSH, OP_SIN, OP_SINH, true},
            {OP_SINH, OP_SINH, OP_COS, OP_COSH, OP_SIN, false}, {OP_COSH, OP_COSH, OP_COS, OP_SINH, OP_SIN, false}};
        int t = 0;
        while (T[t].op != v->op) t++;
        re = e2(x, OP_MUL, e1(x, T[t].f, ar), e1(x, T[t].g, ai));
        im = e2(x, OP_MUL, e1(x, T[t].h, ar), e1(x, T[t].k, ai));
        if (T[t].neg) im = e1(x, OP_NEG, im);
        break;
    }
    case OP_TANH: ctanh_parts(x, ar, ai, &re, &im); break;
    case OP_TAN: { /* tan z = -i tanh(i z) */
        Val *p, *q;
        ctanh_parts(x, e1(x, OP_NEG, ai), ar, &p, &q);
        re = q, im = e1(x, OP_NEG, p);
        break;
    }
    case OP_POW: { /* an integer literal n, |n| <= 100: products (NumPy's exact path); else
                      exp(w log z), with z = 0: 0 for re(w) > 0, and w = 0: 1 */
        int64_t n = 0;
        if (int_power(z1, &n)) {
            cpow_int(x, ar, ai, n, &re, &im);
            break;
        }
        Val *zero = rconst(x, pt, 0, loc), *one = rconst(x, pt, 1, loc);
        Val *lr = e1(x, OP_LOG, e2(x, OP_HYPOT, ar, ai)), *li = e2(x, OP_ATAN2, ai, ar);
        Val *mr = e2(x, OP_SUB, e2(x, OP_MUL, br, lr), e2(x, OP_MUL, bi, li));
        Val *mi = e2(x, OP_ADD, e2(x, OP_MUL, br, li), e2(x, OP_MUL, bi, lr));
        Val *er, *ei;
        cexp_parts(x, mr, mi, &er, &ei);
        Val *zz = e2(x, OP_LAND, e2(x, OP_EQ, ar, zero), e2(x, OP_EQ, ai, zero));
        Val *wz = e2(x, OP_LAND, e2(x, OP_EQ, br, zero), e2(x, OP_EQ, bi, zero));
        Val *zpos = e2(x, OP_LAND, zz, e2(x, OP_GT, br, zero));
        re = sel(x, wz, one, sel(x, zpos, zero, er));
        im = sel(x, wz, zero, sel(x, zpos, zero, ei));
        break;
    }
    case OP_REDUCE: /* sum (mean divides it) */
    case OP_SCAN: /* cumsum */
    case OP_COMPACT: /* x[mask], filter: the parts with the same mask */
    case OP_PAD: /* the value's parts pad the parts */
    case OP_UPDATE: { /* the parts of e into the parts of x */
        Val *u0 = clone(x, v, pt), *u1 = clone(x, v, pt);
        u0->args[0] = ar, u1->args[0] = ai;
        if (v->op == OP_PAD || v->op == OP_UPDATE) {
            int k = v->op == OP_PAD ? 2 : 1;
            u0->args[k] = cpart(cx, v->args[k], 0, false), u1->args[k] = cpart(cx, v->args[k], 1, false);
        } else if (cplx(z1)) { /* an init */
            u0->args[1] = br, u1->args[1] = bi;
        }
        if (v->init) u0->init = cpart(cx, v->init, 0, false), u1->init = cpart(cx, v->init, 1, false);
        re = u0, im = u1;
        break;
    }
    case OP_FULL: {
        Val *u0 = clone(x, v, pt), *u1 = clone(x, v, pt);
        u0->args[0] = ar, u1->args[0] = ai;
        re = u0, im = u1;
        break;
    }
    case OP_IOTA: re = clone(x, v, pt), im = rconst(x, pt, 0, loc); break;
    case OP_SCATTER:
    case OP_HIST: { /* args dest, idx, vals; with duplicate indices a scatter's two parts may
                       come from different values */
        Val *vals = v->args[2];
        Val *u0 = clone(x, v, pt), *u1 = clone(x, v, pt);
        u0->args[0] = ar, u1->args[0] = ai;
        u0->args[2] = cpart(cx, vals, 0, vals->rank > 0), u1->args[2] = cpart(cx, vals, 1, vals->rank > 0);
        re = u0, im = u1;
        break;
    }
    case OP_MATMUL: { /* four real products */
        Val *p[4];
        Val *xs[4][2] = {{ar, br}, {ai, bi}, {ar, bi}, {ai, br}};
        for (int i = 0; i < 4; i++) {
            p[i] = clone(x, v, pt);
            p[i]->args[0] = xs[i][0], p[i]->args[1] = xs[i][1];
        }
        re = e2(x, OP_SUB, p[0], p[1]), im = e2(x, OP_ADD, p[2], p[3]);
        break;
    }
    default:
        return; /* leaves, moves (slices, gathers, concat, ...), calls: complex elements as they are */
    }
    become(v, cpack(x, dt, re, im, v->rank, loc));
}

static void cx_visit(Cx *cx, Val *v) {
    if (!v || v->id >= cx->p.n0 || cx->p.done[v->id]) return;
    cx->p.done[v->id] = true;
    for (int i = 0; i < v->nargs; i++) cx_visit(cx, v->args[i]);
    cx_visit(cx, v->init);
    bool reads = false;
    for (int i = 0; i < v->nargs; i++) reads |= cplx(v->args[i]);
    if (cplx(v) || reads) cx_rewrite(cx, v);
}

static void cx_visit_cb(void *x, Val *v) { cx_visit(x, v); }

void widen_program(Arena *a, Program *p) {
    for (int i = 0; i < p->nfns; i++) {
        Cx x;
        pass_init(&x.p, a, p->fns[i]);
        x.part[0] = NEWN(a, Val *, (size_t)x.p.n0 + 1);
        x.part[1] = NEWN(a, Val *, (size_t)x.p.n0 + 1);
        stmts_each(p->fns[i]->body, cx_visit_cb, &x);
    }
    for (int i = 0; i < p->nfns; i++) {
        Widen w;
        pass_init(&w.p, a, p->fns[i]);
        w.wide = NEWN(a, Val *, (size_t)w.p.n0 + 1);
        w.ewsplit = NEWN(a, bool, (size_t)w.p.n0 + 1);
        w.lam = NEWN(a, Val *, (size_t)w.p.n0 + 1);
        stmts_each(p->fns[i]->body, visit_cb, &w);
    }
}
