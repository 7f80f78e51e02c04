/* What one statement holds, before fusion (issue 19): first, a var's value read by one
   later statement only is forwarded into it (below, forward_block), so chains of
   assignments fuse as chains of lets do; then statements too heavy for one kernel's
   compile time are cut.

   Fusion puts everything a statement computes
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
#include "lang/ast.h" /* NEST_LIMIT */

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
        if (f->nslots) memcpy(ns, f->slots, sizeof(Slot) * (size_t)f->nslots);
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

/* ---- vars forwarded into their one reader ----------------------------------------
   `var s = x0; s = s + x1; s = s * x2; return s;` sets the slot three times, and each
   statement became a kernel of its own (1000 inputs accumulated so: 999 kernels). A set
   of a var whose value is read by one later statement only, before the var is set again
   or dies, is forwarded into that statement: its reads of the var become the value, and
   the set goes. The reader must be a plain statement (a set, return, print, save or
   eval) in the same block with nothing between that writes a slot the value reads; the
   var then dies at the reader: the reader sets it again, returns, or is in the
   function's own block with no later mention. What it gives is what a chain of lets
   gives (sema's bind_value): one kernel, cut where the nesting would pass NEST_LIMIT / 2. */

typedef struct Fw {
    Arena *a;
    Fn *f;
    unsigned *mark; /* by value id (grown as values are cloned): visit stamps */
    int nmark;
    unsigned gen;
    int *height;    /* by value id: 0 until known */
    int nheight;
    int *rd;        /* fw_collect's slots */
    int nrd, caprd;
    unsigned char *inrd; /* by slot: a mutable slot the candidate reads */
} Fw;

static void fw_grow(Fw *w) {
    int nv = w->f->nvals;
    if (w->nmark < nv) {
        int nn = nv + nv / 2 + 64;
        unsigned *m = NEWN(w->a, unsigned, (size_t)nn);
        int *h = NEWN(w->a, int, (size_t)nn);
        if (w->nmark) {
            memcpy(m, w->mark, sizeof(unsigned) * (size_t)w->nmark);
            memcpy(h, w->height, sizeof(int) * (size_t)w->nmark);
        }
        w->mark = m, w->height = h, w->nmark = w->nheight = nn;
    }
}

/* The IR's height (a leaf is 1); statements' values nest at most NEST_LIMIT deep, so
   the recursion is bounded. */
static int fw_height(Fw *w, Val *v) {
    if (!v) return 0;
    if (w->height[v->id]) return w->height[v->id];
    int h = 0;
    for (int i = 0; i < v->nargs; i++) {
        int x = fw_height(w, v->args[i]);
        if (x > h) h = x;
    }
    int x = fw_height(w, v->init);
    if (x > h) h = x;
    x = fw_height(w, v->lam);
    if (x > h) h = x;
    return w->height[v->id] = h + 1;
}

/* Whether v's DAG reads slot k (k < 0: any mutable slot in set, a byte per slot) or
   holds an effect (a call, a load) when effects is set. */
static bool fw_reads(Fw *w, Val *v, int k, const unsigned char *set, bool effects) {
    if (!v || w->mark[v->id] == w->gen) return false;
    w->mark[v->id] = w->gen;
    if (v->op == OP_SLOT && (k >= 0 ? v->slot == k : set && set[v->slot])) return true;
    if (effects && (v->op == OP_CALL || v->op == OP_LOAD)) return true;
    for (int i = 0; i < v->nargs; i++)
        if (fw_reads(w, v->args[i], k, set, effects)) return true;
    return fw_reads(w, v->init, k, set, effects) || fw_reads(w, v->lam, k, set, effects);
}

/* Appends to w->rd every slot v's DAG reads (call after w->gen++; a slot may come twice). */
static void fw_collect(Fw *w, Val *v) {
    if (!v || w->mark[v->id] == w->gen) return;
    w->mark[v->id] = w->gen;
    if (v->op == OP_SLOT) {
        if (w->nrd == w->caprd) {
            int cap = 2 * w->caprd + 16;
            int *n = NEWN(w->a, int, (size_t)cap);
            if (w->nrd) memcpy(n, w->rd, sizeof(int) * (size_t)w->nrd);
            w->rd = n, w->caprd = cap;
        }
        w->rd[w->nrd++] = v->slot;
    }
    for (int i = 0; i < v->nargs; i++) fw_collect(w, v->args[i]);
    fw_collect(w, v->init);
    fw_collect(w, v->lam);
}

/* last[k] = ord for every slot st mentions (reads or sets, in its bodies too). */
static void stmt_mentions(Fw *w, const Stmt *st, int *last, int ord) {
    w->gen++;
    w->nrd = 0;
    fw_collect(w, st->v);
    fw_collect(w, st->v2);
    for (int i = 0; i < st->nvs; i++)
        if (st->vs) fw_collect(w, st->vs[i]);
    for (int i = 0; i < w->nrd; i++) last[w->rd[i]] = ord;
    if (st->slot >= 0 && (st->kind == S_SET || st->kind == S_FOR)) last[st->slot] = ord;
    for (int i = 0; i < st->nvs; i++)
        if (st->kind == S_CALLN && st->slots && st->slots[i] >= 0) last[st->slots[i]] = ord;
    for (const Stmt *b = st->body; b; b = b->next) stmt_mentions(w, b, last, ord);
    for (const Stmt *b = st->els; b; b = b->next) stmt_mentions(w, b, last, ord);
}

static bool stmt_reads(Fw *w, const Stmt *st, int k, const unsigned char *set) {
    for (; st; st = NULL) {
        w->gen++;
        if (fw_reads(w, st->v, k, set, false) || fw_reads(w, st->v2, k, set, false)) return true;
        for (int i = 0; i < st->nvs; i++)
            if (st->vs && fw_reads(w, st->vs[i], k, set, false)) return true;
        for (const Stmt *b = st->body; b; b = b->next)
            if (stmt_reads(w, b, k, set)) return true;
        for (const Stmt *b = st->els; b; b = b->next)
            if (stmt_reads(w, b, k, set)) return true;
    }
    return false;
}

/* Whether st (or a statement in its bodies) sets slot k (k < 0: any slot in set). */
static bool stmt_writes(const Stmt *st, int k, const unsigned char *set) {
#define HIT(x) ((x) >= 0 && (k >= 0 ? (x) == k : set[(x)]))
    if ((st->kind == S_SET || st->kind == S_FOR) && HIT(st->slot)) return true;
    if (st->kind == S_CALLN)
        for (int i = 0; i < st->nvs; i++)
            if (st->slots && HIT(st->slots[i])) return true;
#undef HIT
    for (const Stmt *b = st->body; b; b = b->next)
        if (stmt_writes(b, k, set)) return true;
    for (const Stmt *b = st->els; b; b = b->next)
        if (stmt_writes(b, k, set)) return true;
    return false;
}

/* v with every read of slot k replaced by by: the values on the way cloned, the rest
   shared (another statement may hold them). */
static Val *fw_subst(Fw *w, Val *v, int k, Val *by, Val **memo) {
    if (!v) return NULL;
    if (v->op == OP_SLOT && v->slot == k) return by;
    if (v->id < w->nmark && w->mark[v->id] == w->gen) return memo[v->id] ? memo[v->id] : v;
    Val *r = v;
    for (int i = 0; i < v->nargs; i++) {
        Val *x = fw_subst(w, v->args[i], k, by, memo);
        if (x != v->args[i] && r == v) {
            r = val_new(w->a, w->f, v->op, v->dt, v->rank, v->nargs, v->loc);
            int id = r->id;
            Val **args = r->args;
            *r = *v;
            r->id = id, r->args = args;
            memcpy(args, v->args, sizeof(Val *) * (size_t)v->nargs);
        }
        if (r != v) r->args[i] = x;
    }
    /* lambda bodies and initial values are scalars of their own (no slot of an array) */
    w->mark[v->id] = w->gen;
    memo[v->id] = r != v ? r : NULL;
    return r;
}

/* last (top only): by slot, the ordinal of the last statement of the function's block
   that mentions it; ord: the first statement's ordinal there. */
/* Whether v (checks aside) is an element, slice or scatter update (of slot k; any
   array when k < 0): those run in place over the region on the GPU (exec/gpu/exec.c,
   inplace_ok) and stay statements of their own, as a chain of them would become one
   pass over the whole array. */
static bool is_update(const Val *v, int k) {
    while (v && v->op == OP_CHECKDIM) v = v->args[0];
    if (!v || (v->op != OP_UPDATE && v->op != OP_SCATTER && v->op != OP_HIST)) return false;
    return k < 0 || (v->args[0]->op == OP_SLOT && v->args[0]->slot == k);
}

static void forward_block(Fw *w, Stmt **link, int *last, int ord) {
    Fn *f = w->f;
    for (Stmt **pp = link; *pp; ord++) {
        Stmt *st = *pp;
        if (st->body) forward_block(w, &st->body, NULL, 0);
        if (st->els) forward_block(w, &st->els, NULL, 0);
        int k = st->slot, jord = ord;
        bool cand = st->kind == S_SET && k >= f->nparams && k < f->nslots && f->slots[k].mutable_ && st->v &&
                    !is_update(st->v, -1);
        Stmt *j = NULL;
        if (cand) {
            fw_grow(w);
            w->gen++;
            cand = !fw_reads(w, st->v, -1, NULL, true); /* no effects: its place may move */
        }
        if (cand) {
            /* the mutable slots st->v reads, which nothing may set before the reader */
            for (int i = 0; i < w->nrd; i++) w->inrd[w->rd[i]] = 0;
            w->gen++;
            w->nrd = 0;
            fw_collect(w, st->v);
            bool any = false;
            for (int i = 0; i < w->nrd; i++)
                if (f->slots[w->rd[i]].mutable_) w->inrd[w->rd[i]] = 1, any = true;
            unsigned char *rd = w->inrd;
            for (j = st->next, jord = ord + 1; j; j = j->next, jord++) {
                if (stmt_reads(w, j, k, NULL) || stmt_writes(j, k, NULL)) break;
                if (any && stmt_writes(j, -1, rd)) {
                    j = NULL;
                    break;
                }
            }
            bool plain = j && (j->kind == S_SET || j->kind == S_RETURN || j->kind == S_PRINT || j->kind == S_SAVE ||
                               j->kind == S_EVAL);
            bool dies = plain && (j->kind == S_RETURN || (j->kind == S_SET && j->slot == k) || (last && last[k] == jord));
            if (!plain || !dies || (j->kind == S_SET && is_update(j->v, k)) || !stmt_reads(w, j, k, NULL)) j = NULL;
        }
        if (j) {
            fw_grow(w);
            int hj = fw_height(w, j->v);
            for (int i = 0; i < j->nvs; i++)
                if (j->vs && fw_height(w, j->vs[i]) > hj) hj = fw_height(w, j->vs[i]);
            if (hj + fw_height(w, st->v) > NEST_LIMIT / 2) j = NULL;
        }
        if (!j) {
            pp = &st->next;
            continue;
        }
        Val **memo = NEWN(w->a, Val *, (size_t)f->nvals + 1);
        w->gen++;
        j->v = fw_subst(w, j->v, k, st->v, memo);
        j->v2 = fw_subst(w, j->v2, k, st->v, memo);
        for (int i = 0; i < j->nvs; i++)
            if (j->vs) j->vs[i] = fw_subst(w, j->vs[i], k, st->v, memo);
        fw_grow(w); /* the clones' ids */
        if (last) /* st->v's reads now happen at j */
            for (int i = 0; i < w->nrd; i++)
                if (last[w->rd[i]] < jord) last[w->rd[i]] = jord;
        *pp = st->next; /* the set goes; j is looked at in its turn */
    }
}

void split_program(Arena *a, Program *p) {
    for (int i = 0; i < p->nfns; i++) {
        Fn *f = p->fns[i];
        Fw w = {.a = a, .f = f};
        fw_grow(&w);
        int *last = NEWN(a, int, (size_t)f->nslots + 1);
        w.inrd = NEWN(a, unsigned char, (size_t)f->nslots + 1);
        int ord = 0;
        for (Stmt *st = f->body; st; st = st->next, ord++) stmt_mentions(&w, st, last, ord);
        w.nrd = 0;
        forward_block(&w, &f->body, last, 0);
        S s = {.a = a, .f = f, .n0 = f->nvals, .slots_cap = f->nslots};
        s.acc = NEWN(a, int64_t, (size_t)f->nvals + 1);
        s.seen = NEWN(a, int, (size_t)f->nvals + 1);
        s.pin = NEWN(a, unsigned char, (size_t)f->nvals + 1);
        s.moved = NEWN(a, Val *, (size_t)f->nvals + 1);
        split_block(&s, &f->body);
    }
}
