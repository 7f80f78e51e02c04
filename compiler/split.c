/* What one statement may hold (issue 19): fusion puts everything a statement computes
   elementwise into one kernel, and NVRTC's time grows with the kernel's code, by far
   most with the inlined math functions (sinf with its slow path is about 230 adds of
   compile time) and the inputs (each a vector load and its index arithmetic). A
   statement of 2048 sin terms took more than 5 minutes in NVRTC, one with 1000 inputs
   33 s. This pass weighs each statement's values (val_code_weight, in add-equivalents
   of NVRTC time) and, where a subtree would push a statement past SPLIT_WEIGHT, moves the
   heaviest operands into statements of their own just before it (a new slot set once,
   as a let that is not bound straight), so that every kernel stays under about a second
   of NVRTC. Values are unchanged: the moved operand is the same computation, stored and
   read back. The nesting limit (NEST_LIMIT) already cuts deep chains; this cuts wide
   ones.

   An operand is moved only where it is a value operand (op_value_arg), holds no lambda
   argument, call or load (whose order against the statement's other effects must stay),
   and weighs more than a read of what it would become. Shared operands may stay inline
   in a parent seen before the move: recomputed, never wrong. */
#include <string.h>

#include "ir.h"

/* About 0.4 s of NVRTC for a kernel whose vector path (8 copies of the body) is kept,
   and at most about a second without it (docs/internals.md, "Kernel size"). */
#define SPLIT_WEIGHT 4096

int val_code_weight(const Val *v) {
    switch (v->op) {
    case OP_SIN:
    case OP_COS:
    case OP_TAN: return 240; /* the slow path's argument reduction (Payne-Hanek) inlined */
    case OP_POW: return 100;
    case OP_ATAN2:
    case OP_ASIN:
    case OP_ACOS:
    case OP_ATAN:
    case OP_ERF:
    case OP_SINH:
    case OP_COSH: return 40;
    case OP_CONST:
    case OP_DIM:
    case OP_CHECKDIM: return 0;
    case OP_SLOT:
    case OP_LOAD:
    case OP_CALL:
    case OP_ARG: return v->rank > 0 ? SPLIT_LEAF_WEIGHT : 0;
    case OP_SCALARCALL: return 40;
    case OP_RAND: return 20;
    case OP_RANDN: return 60;
    default: break;
    }
    if (v->op < OP_EW_END) return ew_info[v->op].cost >= 8 ? 12 : ew_info[v->op].cost >= 2 ? 4 : 1;
    return op_is_index(v->op) ? 4 : 16;
}

typedef struct S {
    Arena *a;
    Fn *f;
    int n0;          /* ids below this existed before the pass */
    int64_t *acc;    /* [n0]: the subtree's weight as it now stands */
    int *seen;       /* [n0]: the statement (1, 2, ...) that weighed it, 0 until then */
    int cur;         /* the statement being weighed */
    unsigned char *pin; /* [n0]: holds an arg, call or load (not movable) */
    Val **moved;     /* [n0]: the slot read a moved value became (in statement seen) */
    int slots_cap;
    Stmt **before;   /* where moved statements go: the link that points at the statement */
} S;

static int new_slot(S *s, const Val *v) {
    Fn *f = s->f;
    if (f->nslots == s->slots_cap) {
        int cap = s->slots_cap * 2 + 8;
        Slot *ns = NEWN(s->a, Slot, (size_t)cap);
        memcpy(ns, f->slots, sizeof(Slot) * (size_t)f->nslots);
        f->slots = ns;
        s->slots_cap = cap;
    }
    int k = f->nslots++;
    f->slots[k] = (Slot){arena_printf(s->a, "_part%d", k), v->dt, v->rank, false};
    return k;
}

/* v becomes a statement `_part<k> = v` before the current one; returns the read. */
static Val *move_out(S *s, Val *v) {
    if (s->moved[v->id]) return s->moved[v->id];
    int k = new_slot(s, v);
    Stmt *st = NEW(s->a, Stmt);
    st->kind = S_SET;
    st->loc = v->loc;
    st->slot = k;
    st->v = v;
    st->next = *s->before;
    *s->before = st;
    s->before = &st->next;
    Val *r = val_new(s->a, s->f, OP_SLOT, v->dt, v->rank, 0, v->loc);
    r->slot = k;
    s->moved[v->id] = r;
    return r;
}

/* v's weight in the current statement: a value weighed before in it counts once (it is
   one value of the kernel, however many use it). */
static int64_t weigh(S *s, Val *v) {
    if (!v || v->id >= s->n0) return 0;
    if (s->seen[v->id] == s->cur) return 0;
    /* a value an earlier statement weighed too (sizes, mostly) is left as it is there */
    if (s->seen[v->id]) return s->acc[v->id];
    s->seen[v->id] = s->cur;
    bool pin = v->op == OP_ARG || v->op == OP_CALL || v->op == OP_LOAD;
    int64_t w = val_code_weight(v), small[16];
    int64_t *part = v->nargs <= 16 ? small : NEWN(s->a, int64_t, (size_t)v->nargs);
    for (int i = 0; i < v->nargs; i++) {
        Val *x = v->args[i];
        part[i] = 0;
        if (!x) continue;
        if (x->id < s->n0 && s->moved[x->id] && s->seen[x->id] == s->cur) x = v->args[i] = s->moved[x->id];
        w += part[i] = weigh(s, x);
        if (x->id < s->n0 && s->pin[x->id]) pin = true;
    }
    /* lambda bodies and initial values are small and stay (scalars, no inputs) */
    if (v->lam) w += weigh(s, v->lam);
    if (v->init) w += weigh(s, v->init);
    if ((v->lam && v->lam->id < s->n0 && s->pin[v->lam->id]) || (v->init && v->init->id < s->n0 && s->pin[v->init->id]))
        pin = true;
    while (w > SPLIT_WEIGHT) {
        int best = -1;
        for (int i = 0; i < v->nargs; i++) {
            Val *x = v->args[i];
            if (!x || x->id >= s->n0 || s->seen[x->id] != s->cur || !op_value_arg(v->op, i) || s->pin[x->id] ||
                part[i] <= (best < 0 ? SPLIT_LEAF_WEIGHT : part[best]))
                continue;
            best = i;
        }
        if (best < 0) break;
        Val *x = v->args[best];
        Val *r = move_out(s, x);
        for (int i = 0; i < v->nargs; i++)
            if (v->args[i] == x) {
                v->args[i] = r;
                w -= part[i] - (i == best ? SPLIT_LEAF_WEIGHT : 0);
                part[i] = i == best ? SPLIT_LEAF_WEIGHT : 0;
            }
    }
    s->acc[v->id] = w;
    s->pin[v->id] = pin;
    return w;
}

static void split_stmt(S *s, Stmt **link) {
    Stmt *st = *link;
    s->before = link;
    s->cur++;
    switch (st->kind) {
    case S_SET:
    case S_RETURN:
    case S_PRINT:
    case S_SAVE:
    case S_EVAL:
    case S_CALLN:
        if (st->v) weigh(s, st->v);
        for (int i = 0; i < st->nvs; i++)
            if (st->vs && st->vs[i]) weigh(s, st->vs[i]);
        break;
    default: break; /* conditions and bounds stay where they are evaluated */
    }
}

static void split_block(S *s, Stmt **link) {
    while (*link) {
        Stmt *st = *link;
        split_stmt(s, link);
        /* moved statements were linked in before st: step over them to st */
        while (*link != st) link = &(*link)->next;
        if (st->body) split_block(s, &st->body);
        if (st->els) split_block(s, &st->els);
        link = &st->next;
    }
}

void split_program(Arena *a, Program *p) {
    for (int i = 0; i < p->nfns; i++) {
        Fn *f = p->fns[i];
        S s = {.a = a, .f = f, .n0 = f->nvals, .slots_cap = f->nslots};
        s.acc = NEWN(a, int64_t, (size_t)f->nvals + 1);
        s.seen = NEWN(a, int, (size_t)f->nvals + 1);
        s.pin = NEWN(a, unsigned char, (size_t)f->nvals + 1);
        s.moved = NEWN(a, Val *, (size_t)f->nvals + 1);
        split_block(&s, &f->body);
    }
}
