/* Type checking and lowering: walks the AST once, checks types (weak literals, strict
   conversions, size variables, broadcasting ranks) and builds the IR of compiler/ir.h.
   Functions whose bodies are straight-line (lets and a return) are inlined at their
   call sites so that fusion sees whole expressions; the rest become OP_CALLs. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "instead.h"
#include "ir.h"

#define MAX_INLINE_DEPTH 64
/* Calls inlined per program: each call inlines its callee's body, so two calls per body
   nested 64 deep would be 2^64 inlines; stop (with an error) long before. */
#define MAX_INLINED 100000
/* IR values per program: inlining copies a callee's body at each call, so a few small
   functions that each call the last twice grow exponentially even within MAX_INLINED
   calls (17 levels of a 300-term body took 19 GB). 250,000 values take some 150 MB;
   real programs stay below a few thousand. */
#define MAX_VALS 250000

typedef enum { SYM_SLOT, SYM_VAL } SymKind;

typedef struct Sym Sym;
struct Sym {
    const char *name;
    SymKind kind;
    int slot;       /* SYM_SLOT */
    Val *val;       /* SYM_VAL: bound straight to a value (inlined let, param of an inlined call, size var) */
    bool mutable_;
    DType dt;
    int rank;
    Loc loc;
    Sym *next;
};

typedef struct Scope Scope;
struct Scope {
    Sym *syms;
    Scope *up;
    bool barrier; /* function boundary: lookups stop here (but see globals) */
};

/* An expression's value: weak literals keep their type open until they meet a typed
   operand (then they take its type) or are bound (then int -> i64, float -> f32). */
typedef struct Ex {
    Val *v;
    bool weak;
    bool wfloat; /* weak and contains a float literal */
    bool ok;     /* false after an error (already reported) */
    /* Several values (DESIGN.md part 2, "Several results"): a tuple (a, b) or an inlined
       call's results in tup[0..ntup), or, with tup NULL, the results of the host call v.
       Only lets and returns take them apart (lower_tuple); lower_expr refuses them. */
    int ntup;
    struct Ex *tup;
} Ex;

/* The type variables of one call, as bound from its arguments (one per distinct name;
   the arrays hold as many as the callee has parameters). */
typedef struct TypeVars {
    const char **name;
    DType *dt;
    int n;
} TypeVars;

/* The OP_SCALARCALLs made, checked at the end (shared by the nested contexts of lower_fn). */
typedef struct ScalarCalls {
    Val **v;
    int n, cap;
} ScalarCalls;

typedef struct Ctx {
    Arena *a;
    ScalarCalls *scalls;
    Diag *d;
    Node **decls; /* user functions first, then stdlib ones */
    int ndecls;
    int nuser;
    Program *prog;
    Fn *fn;          /* the IR function being built */
    Stmt **tail;     /* where statements are appended */
    Scope *scope;
    int inline_depth;
    long inlined;     /* calls inlined so far (MAX_INLINED) */
    struct StmtPos *spos;  /* mention_index's statements: node -> its block's index and ordinal */
    int spos_cap, spos_n;
    long nvals_made;  /* IR values made so far, every function (MAX_VALS) */
    bool inline_stop; /* an inline limit was hit: the calls being unwound give no more errors */
    const char *map_fn; /* non-NULL while inlining a scalar function applied elementwise */
    TypeVars *tv;       /* type variables of the function being inlined */
    Node *cur_decl;     /* the AST function being lowered (for returns) */
    DType ret_dt;
    int ret_rank;
    Val **ret_dims;     /* per result axis: the declared size, checked at each return */
    int nres;           /* several results: how many (0 otherwise), their types and sizes */
    Node **res_types;
    DType *res_dt;
    int *res_rank;
    Val ***res_dims;
    bool in_while_cond; /* lowering a while condition: no statements may be emitted */
    struct SizeFact *facts; /* sizes known equal where the function body runs */
    int nfacts, capfacts;
    bool in_lambda;
    int lambda_nargs;
    int loop_depth;
    unsigned char *decl_state; /* per decl: 0 unchecked, 1 checked ok, 2 has errors */
    Val **slot_cache; /* one OP_SLOT read per slot and statement, so a statement's DAG
                         shares its leaves (cleared at every statement) */
    int slot_cache_n;
    int depth;          /* lower_expr nesting, inlined bodies included (NEST_LIMIT) */
    bool deep_reported; /* the nesting error was reported (once per function) */
    const char **unbound; /* names of the function whose let failed with an error: */
    int nunbound, capunbound; /* their uses give no "unknown name" besides */
    int *height;        /* by value id in fn: the value's IR depth, 0 until known */
    int nheight;
    struct SizeMemo *szmemo; /* array_size's answers during one question */
    unsigned *seen;          /* by value id: reads_mutable_or_effects' visits */
    int nseen;
    unsigned seen_gen;
} Ctx;

static Ex ex_bad(void) { return (Ex){0}; }
static Ex ex_val(Val *v) { return (Ex){.v = v, .ok = true}; }

/* ---- small helpers ------------------------------------------------------------------ */

static Val *mk(Ctx *c, OpKind op, DType dt, int rank, int nargs, Loc loc) {
    c->nvals_made++;
    return val_new(c->a, c->fn, op, dt, rank, nargs, loc);
}

static Val *mk_i64(Ctx *c, int64_t x, Loc loc) {
    Val *v = mk(c, OP_CONST, DT_I64, 0, 0, loc);
    v->c.i = x;
    return v;
}

static Val *mk1(Ctx *c, OpKind op, DType dt, int rank, Val *a0, Loc loc) {
    Val *v = mk(c, op, dt, rank, 1, loc);
    v->args[0] = a0;
    return v;
}

static Val *mk2(Ctx *c, OpKind op, DType dt, int rank, Val *a0, Val *a1, Loc loc) {
    Val *v = mk(c, op, dt, rank, 2, loc);
    v->args[0] = a0;
    v->args[1] = a1;
    return v;
}

/* v, after checking at run time that the i64 scalars a and b are equal; else the
   error msg (two %lld: a's value, then b's). */
static Val *mk_check(Ctx *c, Val *v, Val *a, Val *b, const char *msg, Loc loc) {
    Val *r = mk(c, OP_CHECKDIM, v->dt, v->rank, 3, loc);
    r->args[0] = v, r->args[1] = a, r->args[2] = b;
    r->msg = msg;
    return r;
}

static const char *tname(Arena *a, DType dt, int rank) {
    const char *n = dt == DT_VOID ? "void" : dtype_info[dt].name;
    if (rank == 0) return n;
    char buf[64];
    int k = snprintf(buf, sizeof buf, "%s[", n);
    for (int i = 0; i < rank; i++) k += snprintf(buf + k, sizeof buf - (size_t)k, i ? ", _" : "_");
    snprintf(buf + k, sizeof buf - (size_t)k, "]");
    return arena_strdup(a, buf);
}

static const char *ex_tname(Ctx *c, Ex e) {
    if (e.weak) return e.wfloat ? "float literal" : "integer literal";
    return tname(c->a, e.v->dt, e.v->rank);
}

static int val_height(Ctx *c, Val *root);
static void check_height(Ctx *c, Val *v, Loc loc);

static void emit(Ctx *c, Stmt *s) {
    if (s->v) check_height(c, s->v, s->loc);
    if (s->v2) check_height(c, s->v2, s->loc);
    *c->tail = s;
    c->tail = &s->next;
}

static Stmt *stmt_new(Ctx *c, StmtKind k, Loc loc) {
    Stmt *s = NEW(c->a, Stmt);
    s->kind = k;
    s->loc = loc;
    return s;
}

static int slot_new(Ctx *c, const char *name, DType dt, int rank, bool mut) {
    Fn *f = c->fn;
    if (f->nslots % 16 == 0) {
        Slot *ns = NEWN(c->a, Slot, f->nslots + 16);
        if (f->nslots) memcpy(ns, f->slots, sizeof(Slot) * (size_t)f->nslots);
        f->slots = ns;
    }
    f->slots[f->nslots] = (Slot){name, dt, rank, mut};
    return f->nslots++;
}

static void scope_push(Ctx *c, bool barrier) {
    Scope *s = NEW(c->a, Scope);
    s->up = c->scope;
    s->barrier = barrier;
    c->scope = s;
}
static void scope_pop(Ctx *c) { c->scope = c->scope->up; }

static Sym *sym_add(Ctx *c, const char *name, Loc loc) {
    Sym *s = NEW(c->a, Sym);
    s->name = name;
    s->loc = loc;
    s->next = c->scope->syms;
    c->scope->syms = s;
    return s;
}

/* name bound to value v (a let, a function's inlined parameter, a tuple's part). */
static Sym *sym_val(Ctx *c, const char *name, Loc loc, Val *v) {
    Sym *sy = sym_add(c, name, loc);
    sy->kind = SYM_VAL;
    sy->val = v;
    sy->dt = v->dt;
    sy->rank = v->rank;
    return sy;
}

static Sym *sym_find(Ctx *c, const char *name) {
    for (Scope *sc = c->scope; sc; sc = sc->up) {
        for (Sym *s = sc->syms; s; s = s->next)
            if (strcmp(s->name, name) == 0) return s;
        if (sc->barrier) break;
    }
    return NULL;
}

static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 32 || lb > 32) return 99;
    int d[33][33];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int x = d[i - 1][j] + 1, y = d[i][j - 1] + 1, z = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            d[i][j] = x < y ? (x < z ? x : z) : (y < z ? y : z);
        }
    return d[la][lb];
}

/* ---- builtins ---------------------------------------------------------------------
   The elementwise builtins are EW_OPS' spelling column and the reductions and scans
   RED_OPS' (compiler/ir.h); casts are the dtype names. The rest are listed here once,
   with the kind of lowering each gets. */
typedef enum { B_EW, B_REDUCE, B_SCAN, B_MEAN, B_GENERIC, B_MAP, B_GEN, B_STRUCT, B_STMT, B_LOAD, B_HIST, B_COMPLEX } BuiltinKind;
#define OTHER_BUILTINS(X)                                                                        \
    X("mean", B_MEAN) X("reduce", B_GENERIC) X("scan", B_GENERIC) X("map", B_MAP)               \
    X("iota", B_GEN) X("zeros", B_GEN) X("ones", B_GEN) X("full", B_GEN) X("linspace", B_GEN)   \
    X("rand", B_GEN) X("randn", B_GEN)                                                          \
    X("len", B_STRUCT) X("reverse", B_STRUCT) X("concat", B_STRUCT) X("reshape", B_STRUCT)      \
    X("transpose", B_STRUCT) X("dot", B_STRUCT) X("pad", B_STRUCT) X("roll", B_STRUCT)          \
    X("stack", B_STRUCT) X("filter", B_STRUCT) X("nonzero", B_STRUCT)                           \
    X("partition", B_STRUCT) X("sort", B_STRUCT) X("argsort", B_STRUCT) X("searchsorted", B_STRUCT) \
    X("sort_by_key", B_STRUCT) X("unique", B_STRUCT) X("top_k", B_STRUCT)                      \
    X("scatter", B_HIST) X("reduce_by_index", B_HIST) X("bincount", B_HIST) X("histogram", B_HIST) \
    X("print", B_STMT) X("save", B_STMT) X("load", B_LOAD)                                      \
    X("complex", B_COMPLEX) X("real", B_COMPLEX) X("imag", B_COMPLEX) X("conj", B_COMPLEX)     \
    X("arg", B_COMPLEX)

typedef struct Builtin {
    const char *name;
    BuiltinKind kind;
    int op; /* B_EW: the OpKind; B_REDUCE, B_SCAN: the RedOp */
} Builtin;

/* The builtin called name, if any (a user function of that name shadows it). */
static bool builtin_find(const char *name, Builtin *b) {
    for (int op = 0; op < OP_EW_END; op++)
        if (ew_info[op].builtin && strcmp(ew_info[op].builtin, name) == 0) {
            *b = (Builtin){name, B_EW, op};
            return true;
        }
    for (int r = 0; r < RED_COUNT; r++) {
        if (red_info[r].reduce && strcmp(red_info[r].reduce, name) == 0) {
            *b = (Builtin){name, B_REDUCE, r};
            return true;
        }
        if (red_info[r].scan && strcmp(red_info[r].scan, name) == 0) {
            *b = (Builtin){name, B_SCAN, r};
            return true;
        }
    }
    static const Builtin others[] = {
#define X(s, k) {s, k, 0},
        OTHER_BUILTINS(X)
#undef X
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (strcmp(others[i].name, name) == 0) {
            *b = others[i];
            return true;
        }
    return false;
}

/* Every builtin's name, for "did you mean" (the tables above, then the dtypes). */
static int builtin_name_at(int i, const char **name) {
    static const char *const others[] = {
#define X(s, k) s,
        OTHER_BUILTINS(X)
#undef X
    };
    int n = 0;
    for (int op = 0; op < OP_EW_END; op++)
        if (ew_info[op].builtin && n++ == i) return *name = ew_info[op].builtin, 1;
    for (int r = 0; r < RED_COUNT; r++) {
        if (red_info[r].reduce && n++ == i) return *name = red_info[r].reduce, 1;
        if (red_info[r].scan && n++ == i) return *name = red_info[r].scan, 1;
    }
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
        if (n++ == i) return *name = others[k], 1;
    for (int dt = 0; dt < DT_COUNT; dt++)
        if (n++ == i) return *name = dtype_info[dt].name, 1;
    return 0;
}

/* Names that are weak float literals (like 1.0) where no variable of that name is in
   scope: a let, var or parameter called pi hides the constant, as in Python after
   `from numpy import pi`. */
#define FLOAT_CONSTANTS(X) X("inf", INFINITY) X("nan", NAN) X("pi", 3.14159265358979323846)

static bool float_constant(const char *name, double *x) {
#define X(s, v)                                                                                    \
    if (strcmp(name, s) == 0) return *x = (v), true;
    FLOAT_CONSTANTS(X)
#undef X
    return false;
}

static const char *suggest_name(Ctx *c, const char *name, bool functions) {
    const char *best = NULL;
    int bd = (int)strlen(name) <= 3 ? 1 : 2;
    bd++;
    if (!functions) {
        for (Scope *sc = c->scope; sc; sc = sc->up) {
            for (Sym *s = sc->syms; s; s = s->next) {
                int dd = edit_distance(name, s->name);
                if (dd < bd) bd = dd, best = s->name;
            }
            if (sc->barrier) break;
        }
        static const char *const consts[] = {
#define X(s, v) s,
            FLOAT_CONSTANTS(X)
#undef X
        };
        for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++) {
            int dd = edit_distance(name, consts[i]);
            if (dd < bd) bd = dd, best = consts[i];
        }
    } else {
        for (int i = 0; i < c->ndecls; i++) {
            int dd = edit_distance(name, c->decls[i]->name);
            if (dd < bd) bd = dd, best = c->decls[i]->name;
        }
        const char *b;
        for (int i = 0; builtin_name_at(i, &b); i++) {
            int dd = edit_distance(name, b);
            if (dd < bd) bd = dd, best = b;
        }
    }
    return best;
}

/* A NumPy, CuPy or Futhark name that cuk spells otherwise or lacks (compiler/instead.h):
   reports what to write instead and returns true. */
static bool instead_advice(Ctx *c, Loc loc, const char *name) {
    static const struct {
        const char *name;
        InsteadKind kind;
        const char *advice;
    } rows[] = {
#define X(n, from, kind, advice) {n, INSTEAD_##kind, advice},
        INSTEAD(X)
#undef X
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (strcmp(rows[i].name, name) != 0) continue;
        if (rows[i].kind == INSTEAD_PLANNED)
            diag_error(c->d, loc, "'%s' is not available yet in cuk (planned: %s; see docs/language.md)", name,
                       rows[i].advice);
        else if (rows[i].kind == INSTEAD_USE)
            diag_error(c->d, loc, "'%s' is not a cuk function; write %s", name, rows[i].advice);
        else
            diag_error(c->d, loc, "'%s' is not a cuk function; %s", name, rows[i].advice);
        return true;
    }
    return false;
}

static Node *find_decl(Ctx *c, const char *name) {
    for (int i = 0; i < c->ndecls; i++)
        if (strcmp(c->decls[i]->name, name) == 0) return c->decls[i];
    return NULL;
}

/* ---- how deep the IR nests -----------------------------------------------------------
   Every pass after sema (fusion, the emitter, both executors) recurses over a
   statement's values, so each statement's IR may be at most NEST_LIMIT deep, however it
   came to be: inlined calls and lets bound straight stack their bodies onto the
   expression that uses them. */

/* The depth of root's IR (a leaf is 1), lambda bodies and initial values included;
   computed without recursion and remembered per value. */
static int val_height(Ctx *c, Val *root) {
    int nv = c->fn->nvals;
    if (c->nheight < nv) {
        int nn = nv + nv / 2 + 64;
        int *nh = NEWN(c->a, int, nn);
        if (c->nheight) memcpy(nh, c->height, sizeof(int) * (size_t)c->nheight);
        c->height = nh;
        c->nheight = nn;
    }
    if (c->height[root->id]) return c->height[root->id];
    typedef struct {
        Val *v;
        int next; /* the next child to visit: args, then init, then lam */
    } Item;
    int cap = 64, n = 0;
    Item *st = malloc(sizeof(Item) * (size_t)cap);
    if (!st) die("out of memory");
    st[n++] = (Item){root, 0};
    while (n) {
        Item *it = &st[n - 1];
        Val *v = it->v, *child = NULL;
        while (!child && it->next < v->nargs + 2) {
            int k = it->next++;
            Val *x = k < v->nargs ? v->args[k] : k == v->nargs ? v->init : v->lam;
            if (x && !c->height[x->id]) child = x;
        }
        if (child) {
            if (n == cap) {
                cap *= 2;
                Item *ns = realloc(st, sizeof(Item) * (size_t)cap);
                if (!ns) die("out of memory");
                st = ns;
            }
            st[n++] = (Item){child, 0};
            continue;
        }
        int h = 0;
        for (int k = 0; k < v->nargs + 2; k++) {
            Val *x = k < v->nargs ? v->args[k] : k == v->nargs ? v->init : v->lam;
            if (x && c->height[x->id] > h) h = c->height[x->id];
        }
        c->height[v->id] = h + 1;
        n--;
    }
    free(st);
    return c->height[root->id];
}

static void check_height(Ctx *c, Val *v, Loc loc) {
    int h = val_height(c, v);
    if (h <= NEST_LIMIT || c->deep_reported) return;
    c->deep_reported = true;
    diag_error(c->d, loc, "this statement's operations nest %d deep once calls and lets are inlined (limit %d); "
               "compute part of it in a var first (var t = ...;), or move it into a function with an 'if' "
               "(which is not inlined)", h, NEST_LIMIT);
}

/* ---- weak literals -------------------------------------------------------------------- */

static bool is_numeric(DType dt) { return dt != DT_BOOL && dt < DT_COUNT; }
/* An error for an operation the complex numbers do not have: one that needs an order
   (order set), or one not done for them yet; true if x is not complex. */
static bool no_complex(Ctx *c, const Val *x, Loc loc, const char *what, bool order) {
    if (!x || x->dt >= DT_COUNT || !dtype_is_complex(x->dt)) return true;
    if (order)
        diag_error(c->d, loc, "%s needs an order, and complex numbers (%s) have none; use abs(z) or real(z)", what,
                   dtype_info[x->dt].name);
    else
        diag_error(c->d, loc, "%s of complex numbers (%s) is not supported yet; take real(z) and imag(z) apart", what,
                   dtype_info[x->dt].name);
    return false;
}
static bool is_float(DType dt) { return dt < DT_COUNT && dtype_info[dt].is_float; }
static bool is_int(DType dt) { return dt < DT_COUNT && dtype_info[dt].is_int; }

static bool const_fits(Val *v, DType to) {
    /* v is an integer literal (stored as i64). */
    int64_t x = v->c.i;
    switch (to) {
    case DT_I8: return x >= INT8_MIN && x <= INT8_MAX;
    case DT_I16: return x >= INT16_MIN && x <= INT16_MAX;
    case DT_I32: return x >= INT32_MIN && x <= INT32_MAX;
    case DT_U8: return x >= 0 && x <= UINT8_MAX;
    case DT_U16: return x >= 0 && x <= UINT16_MAX;
    case DT_U32: return x >= 0 && x <= (int64_t)UINT32_MAX;
    case DT_U64: return x >= 0;
    default: return true;
    }
}

/* Gives a weak expression tree the concrete type dt. Returns false (and reports) if a
   literal cannot take it. */
static bool retype(Ctx *c, Val *v, DType dt, Loc loc) {
    if (v->op == OP_CONST) {
        if (v->dt == dt) return true;
        if (dtype_is_complex(dt)) { /* 2 or 2.5 as a complex: the real part */
            if (!is_float(v->dt)) v->c.f = (double)v->c.i;
            v->c.z[1] = 0.0;
        } else if (is_float(v->dt)) {
            if (!is_float(dt)) {
                diag_error(c->d, v->loc, "float literal used where %s is expected; write an integer literal or convert with %s(...)",
                           dtype_info[dt].name, dtype_info[dt].name);
                return false;
            }
        } else if (is_float(dt)) {
            v->c.f = (double)v->c.i;
        } else if (dt == DT_BOOL) {
            diag_error(c->d, v->loc, "integer literal used where bool is expected; write true or false");
            return false;
        } else if (!const_fits(v, dt)) {
            diag_error(c->d, v->loc, "literal %lld does not fit in %s", (long long)v->c.i, dtype_info[dt].name);
            return false;
        } else if (!dtype_info[dt].is_signed) {
            v->c.u = (uint64_t)v->c.i;
        }
        v->dt = dt;
        return true;
    }
    if (v->op < OP_EW_END && ew_info[v->op].cls == OC_CMP) return true; /* result is bool already */
    bool ok = true;
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && !(v->op == OP_SELECT && i == 0)) ok &= retype(c, v->args[i], dt, loc);
    if (ok && v->op < OP_EW_END) {
        OpClass k = ew_info[v->op].cls;
        if (k == OC_FLOAT && !is_float(dt) && !dtype_is_complex(dt)) {
            diag_error(c->d, v->loc, "%s needs a float operand, not %s", ew_info[v->op].name, dtype_info[dt].name);
            return false;
        }
    }
    v->dt = dt;
    (void)loc;
    return ok;
}

static DType weak_default(Ex e) { return e.wfloat ? DT_F32 : DT_I64; }

/* Makes e concrete (binding a weak literal to its default type). */
static Ex concrete(Ctx *c, Ex e) {
    if (!e.ok || !e.weak) return e;
    if (!retype(c, e.v, weak_default(e), e.v->loc)) return ex_bad();
    e.weak = e.wfloat = false;
    return e;
}

/* Converts e to dtype dt if it is a weak literal, else checks it already is dt. */
static Ex coerce(Ctx *c, Ex e, DType dt, Loc loc, const char *what) {
    if (!e.ok) return e;
    if (e.weak) {
        if (!retype(c, e.v, dt, loc)) return ex_bad();
        e.weak = e.wfloat = false;
        return e;
    }
    if (e.v->dt != dt) {
        diag_error(c->d, loc, "%s has type %s but %s is expected; convert with %s(...)", what,
                   dtype_info[e.v->dt].name, dtype_info[dt].name, dtype_info[dt].name);
        return ex_bad();
    }
    return e;
}

/* An i64 scalar (sizes, indices, loop bounds, seeds): weak ints and any integer type. */
static Val *as_i64(Ctx *c, Ex e, Loc loc, const char *what) {
    if (!e.ok) return NULL;
    if (e.weak) {
        if (e.wfloat) {
            diag_error(c->d, loc, "%s must be an integer, not a float literal", what);
            return NULL;
        }
        e = concrete(c, e);
        if (!e.ok) return NULL;
    }
    if (e.v->rank != 0 || !is_int(e.v->dt)) {
        diag_error(c->d, loc, "%s must be an integer scalar, not %s", what, tname(c->a, e.v->dt, e.v->rank));
        return NULL;
    }
    if (e.v->dt == DT_I64) return e.v;
    return mk1(c, OP_CAST, DT_I64, 0, e.v, loc);
}

/* ---- expressions ------------------------------------------------------------------------ */

static Ex lower_expr(Ctx *c, Node *n);
static Ex lower_any(Ctx *c, Node *n);
static bool tuple_parts(Ctx *c, Ex e, int n, Loc loc, const char *fname, Ex *out);
static bool lower_let_tuple(Ctx *c, Node *s, Node *rest, bool inlined);
static void lower_block(Ctx *c, Node *body);
static Ex call_user(Ctx *c, Node *decl, Node *call, Ex *args, int nargs);

static OpKind binop_of(AstOp op) {
    switch (op) {
    case AOP_ADD: return OP_ADD;
    case AOP_SUB: return OP_SUB;
    case AOP_MUL: return OP_MUL;
    case AOP_DIV: return OP_DIV;
    case AOP_MOD: return OP_MOD;
    case AOP_POW: return OP_POW;
    case AOP_EQ: return OP_EQ;
    case AOP_NE: return OP_NE;
    case AOP_LT: return OP_LT;
    case AOP_LE: return OP_LE;
    case AOP_GT: return OP_GT;
    case AOP_GE: return OP_GE;
    case AOP_LAND: return OP_LAND;
    case AOP_LOR: return OP_LOR;
    case AOP_BAND: return OP_BAND;
    case AOP_BOR: return OP_BOR;
    case AOP_BXOR: return OP_BXOR;
    case AOP_SHL: return OP_SHL;
    case AOP_SHR: return OP_SHR;
    default: die("not a binary operator: %d", (int)op);
    }
}

/* Checks that operands of dtype dt suit the op's class; reports with the op's spelling. */
static bool class_ok(Ctx *c, OpKind op, DType dt, Loc loc, const char *spelling) {
    OpClass k = ew_info[op].cls;
    const char *tn = dtype_info[dt].name;
    if (dt < DT_COUNT && dtype_is_complex(dt)) {
        /* what compiler/widen.c takes apart into the real and imaginary parts */
        switch (op) {
        case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_NEG: case OP_ABS:
        case OP_EXP: case OP_LOG: case OP_SQRT: case OP_SIN: case OP_COS: case OP_TAN: case OP_SINH:
        case OP_COSH: case OP_TANH: case OP_EQ: case OP_NE: case OP_SELECT: case OP_ISNAN: case OP_ISINF:
            return true;
        default: break;
        }
        if (k == OC_CMP || op == OP_MINIMUM || op == OP_MAXIMUM || op == OP_CLAMP)
            diag_error(c->d, loc, "'%s' on %s: complex numbers have no order; compare abs(z) or real(z)", spelling, tn);
        else
            diag_error(c->d, loc, "'%s' is not defined for complex numbers (%s); take real(z) and imag(z) apart", spelling, tn);
        return false;
    }
    switch (k) {
    case OC_ARITH:
    case OC_NUM1:
    case OC_CLAMP:
        if (!is_numeric(dt)) {
            diag_error(c->d, loc, "'%s' needs numbers, not %s", spelling, tn);
            return false;
        }
        return true;
    case OC_FLOAT:
    case OC_PRED:
        if (!is_float(dt)) {
            diag_error(c->d, loc, "'%s' needs floats (f16, bf16, f32, f64), not %s; convert with f32(...) or f64(...)", spelling, tn);
            return false;
        }
        return true;
    case OC_CMP: return true;
    case OC_LOGIC:
        if (dt != DT_BOOL) {
            diag_error(c->d, loc, "'%s' needs bool operands, not %s; compare explicitly, e.g. x != 0", spelling, tn);
            return false;
        }
        return true;
    case OC_BITS:
        if (!is_int(dt) && !(dt == DT_BOOL && op != OP_SHL && op != OP_SHR)) {
            diag_error(c->d, loc, "'%s' needs integers, not %s", spelling, tn);
            return false;
        }
        return true;
    case OC_SELECT: return true;
    }
    return true;
}

static const char *node_text(Ctx *c, Node *n) {
    if (n && n->kind == N_IDENT) return n->name;
    if (n && (n->kind == N_INT || n->kind == N_FLOAT) && n->text) return n->text;
    (void)c;
    return "...";
}

/* Unifies the element types of operands (weak literals adapt). */
static bool unify(Ctx *c, Ex *xs, int n, Node **nodes, Loc loc, const char *spelling) {
    int typed = -1;
    bool anyfloat = false;
    for (int i = 0; i < n; i++) {
        if (!xs[i].ok) return false;
        if (xs[i].v->dt == DT_VOID) {
            diag_error(c->d, nodes && nodes[i] ? nodes[i]->loc : loc,
                       "this call returns nothing, so it cannot be an operand of '%s'", spelling);
            return false;
        }
        if (!xs[i].weak && typed < 0) typed = i;
        anyfloat |= xs[i].wfloat;
    }
    if (typed < 0) {
        DType dt = anyfloat ? DT_F32 : DT_I64;
        for (int i = 0; i < n; i++)
            if (!retype(c, xs[i].v, dt, loc)) return false;
        return true; /* stays weak: caller marks */
    }
    DType dt = xs[typed].v->dt;
    for (int i = 0; i < n; i++) {
        if (xs[i].weak) {
            if (!retype(c, xs[i].v, dt, loc)) return false;
            xs[i].weak = xs[i].wfloat = false;
        } else if (xs[i].v->dt != dt) {
            const char *a = dtype_info[dt].name, *b = dtype_info[xs[i].v->dt].name;
            DType bt = xs[i].v->dt; /* convert towards the wider kind: integer, float, complex */
            bool conv_b_to_a = !((is_float(bt) && !is_float(dt) && !dtype_is_complex(dt)) ||
                                 (dtype_is_complex(bt) && !dtype_is_complex(dt)));
            Node *which = conv_b_to_a ? (nodes ? nodes[i] : NULL) : (nodes ? nodes[typed] : NULL);
            diag_error(c->d, loc, "'%s' between %s and %s: cuk has no implicit conversions; write %s(%s)",
                       spelling, typed < i ? a : b, typed < i ? b : a, conv_b_to_a ? a : b,
                       node_text(c, which));
            return false;
        }
    }
    return true;
}

static Ex mk_ew(Ctx *c, OpKind op, Ex *xs, int n, Node **nodes, Loc loc, const char *spelling) {
    bool allweak = true, wf = false;
    for (int i = 0; i < n; i++) {
        if (!xs[i].ok) return ex_bad();
        allweak &= xs[i].weak;
        wf |= xs[i].wfloat;
    }
    int first = op == OP_SELECT ? 1 : 0;
    if (op == OP_SELECT) {
        Ex cnd = xs[0];
        if (cnd.weak || cnd.v->dt != DT_BOOL) {
            if (cnd.v->dt == DT_VOID) {
                diag_error(c->d, loc, "this call returns nothing, so it cannot be the condition of '%s'", spelling);
                return ex_bad();
            }
            diag_error(c->d, loc, "the condition of '%s' must be bool, not %s", spelling, ex_tname(c, cnd));
            return ex_bad();
        }
        allweak = xs[1].weak && xs[2].weak;
        wf = xs[1].wfloat || xs[2].wfloat;
    }
    if (!unify(c, xs + first, n - first, nodes ? nodes + first : NULL, loc, spelling)) return ex_bad();
    DType dt = xs[first].v->dt;
    if (allweak && ew_info[op].cls == OC_FLOAT && !is_float(dt)) {
        for (int i = first; i < n; i++) retype(c, xs[i].v, DT_F32, loc);
        dt = DT_F32;
        wf = true;
    }
    if (!class_ok(c, op, dt, loc, spelling)) return ex_bad();
    int rank = 0;
    for (int i = 0; i < n; i++)
        if (xs[i].v->rank > rank) rank = xs[i].v->rank;
    OpClass k = ew_info[op].cls;
    DType rdt = (k == OC_CMP || k == OC_PRED) ? DT_BOOL : op == OP_ABS ? dtype_part(dt) : dt;
    Val *v = mk(c, op, rdt, rank, n, loc);
    for (int i = 0; i < n; i++) v->args[i] = xs[i].v;
    Ex r = ex_val(v);
    if (allweak && rdt != DT_BOOL) r.weak = true, r.wfloat = wf || is_float(dt);
    return r;
}



/* Named arguments of a builtin call. */
typedef struct Named {
    const char *name;
    Node *value;
    bool used;
} Named;

typedef struct CallArgs {
    Node *pos[32];
    int npos;
    Named named[8];
    int nnamed;
} CallArgs;

static bool split_args(Ctx *c, Node *call, CallArgs *ca) {
    ca->npos = ca->nnamed = 0;
    for (Node *a = call->args; a; a = a->next) {
        if (a->kind == N_NAMEDARG) {
            if (ca->nnamed == 8) {
                diag_error(c->d, a->loc, "too many named arguments");
                return false;
            }
            for (int i = 0; i < ca->nnamed; i++)
                if (strcmp(ca->named[i].name, a->name) == 0) {
                    diag_error(c->d, a->loc, "named argument '%s' given twice", a->name);
                    return false;
                }
            ca->named[ca->nnamed++] = (Named){a->name, a->a, false};
        } else {
            if (ca->nnamed) {
                diag_error(c->d, a->loc, "positional argument after a named one");
                return false;
            }
            if (ca->npos == 32) {
                diag_error(c->d, a->loc, "too many arguments (at most 32)");
                return false;
            }
            ca->pos[ca->npos++] = a;
        }
    }
    return true;
}

static Node *named_get(CallArgs *ca, const char *name) {
    for (int i = 0; i < ca->nnamed; i++)
        if (strcmp(ca->named[i].name, name) == 0) {
            ca->named[i].used = true;
            return ca->named[i].value;
        }
    return NULL;
}

static bool named_check(Ctx *c, CallArgs *ca, const char *fname) {
    for (int i = 0; i < ca->nnamed; i++)
        if (!ca->named[i].used) {
            diag_error(c->d, ca->named[i].value->loc, "%s() has no argument named '%s'", fname, ca->named[i].name);
            return false;
        }
    return true;
}

/* A compile-time integer (axis=, literal dims): an integer literal, possibly negated. */
static bool const_int(Ctx *c, Node *n, int64_t *out, const char *what) {
    if (n->kind == N_INT) {
        *out = n->ival;
        return true;
    }
    if (n->kind == N_UNARY && n->op == AOP_NEG && n->a->kind == N_INT) {
        *out = -n->a->ival;
        return true;
    }
    diag_error(c->d, n->loc, "%s must be an integer literal", what);
    return false;
}

static bool const_bool(Ctx *c, Node *n, bool *out, const char *what) {
    if (n->kind == N_BOOL) {
        *out = n->ival != 0;
        return true;
    }
    diag_error(c->d, n->loc, "%s must be true or false", what);
    return false;
}

static bool dtype_arg(Ctx *c, CallArgs *ca, DType *dt, bool *given) {
    Node *n = named_get(ca, "dtype");
    *given = n != NULL;
    if (!n) return true;
    if (n->kind != N_IDENT || !dtype_from_name(n->name, dt)) {
        diag_error(c->d, n->loc, "dtype= takes a type name: %s", dtype_names());
        return false;
    }
    return true;
}

static bool want_args(Ctx *c, Node *call, CallArgs *ca, int lo, int hi) {
    if (ca->npos < lo || ca->npos > hi) {
        if (lo == hi)
            diag_error(c->d, call->loc, "%s() takes %d argument%s, but %d %s given", call->name, lo,
                       lo == 1 ? "" : "s", ca->npos, ca->npos == 1 ? "was" : "were");
        else
            diag_error(c->d, call->loc, "%s() takes %d to %d arguments, but %d %s given", call->name, lo, hi,
                       ca->npos, ca->npos == 1 ? "was" : "were");
        return false;
    }
    return true;
}

static Ex arg_ex(Ctx *c, CallArgs *ca, int i) { return lower_expr(c, ca->pos[i]); }

static bool axis_arg(Ctx *c, CallArgs *ca, int rank, int *axis, const char *fname) {
    Node *n = named_get(ca, "axis");
    *axis = AXIS_ALL;
    if (!n) return true;
    int64_t ax;
    if (!const_int(c, n, &ax, "axis=")) return false;
    if (ax < -rank || ax >= rank) {
        diag_error(c->d, n->loc, "axis %lld is out of range for %s() of a %d-D array (valid: %d to %d)",
                   (long long)ax, fname, rank, -rank, rank - 1);
        return false;
    }
    *axis = (int)(ax < 0 ? ax + rank : ax);
    return true;
}

/* axis=n of roll(), stack() and concat() (what) over rank axes of the array or result
   (noun), normalised to 0 .. rank - 1; *axis is left as it is without one. */
static bool axis_of(Ctx *c, Node *n, int rank, int *axis, const char *what, const char *noun) {
    if (!n) return true;
    int64_t ax;
    if (!const_int(c, n, &ax, "axis=")) return false;
    if (ax < -rank || ax >= rank) {
        diag_error(c->d, n->loc, "%s(): axis %lld is out of range for a %d-D %s; use 0 to %d, or -%d to -1", what,
                   (long long)ax, rank, noun, rank - 1, rank);
        return false;
    }
    *axis = (int)(ax < 0 ? ax + rank : ax);
    return true;
}

/* Element count of x along axis (or in total) as an i64 scalar. */
static Val *count_of(Ctx *c, Val *x, int axis, Loc loc) {
    if (x->rank == 0) return mk_i64(c, 1, loc);
    if (axis != AXIS_ALL) {
        Val *d = mk1(c, OP_DIM, DT_I64, 0, x, loc);
        d->axis = axis;
        return d;
    }
    Val *acc = NULL;
    for (int i = 0; i < x->rank; i++) {
        Val *d = mk1(c, OP_DIM, DT_I64, 0, x, loc);
        d->axis = i;
        acc = acc ? mk2(c, OP_MUL, DT_I64, 0, acc, d, loc) : d;
    }
    return acc;
}

static int red_rank(int rank, int axis, bool keepdims) {
    if (keepdims) return rank;
    return axis == AXIS_ALL ? 0 : rank - 1;
}

/* Lowers a lambda or function name used as a combine operator into a scalar body over
   OP_ARG 0 and 1 of type dt. */
static Val *lower_combine(Ctx *c, Node *f, DType dt, const char *fname);

/* segments=offs (reductions and scans): offs is i64[k + 1], x is 1-D. The offsets become
   operand 2 of the reduce or scan (operand 1 is the initial value or NULL); the values
   are checked when the op runs (exec/shape.c, shape_check_segments). */
static bool segments_arg(Ctx *c, Node *call, CallArgs *ca, Val *x, const char *fname, Val **offs) {
    Node *n = named_get(ca, "segments");
    *offs = NULL;
    if (!n) return true;
    Node *ax = named_get(ca, "axis"), *kd = named_get(ca, "keepdims");
    if (ax || kd) {
        diag_error(c->d, (ax ? ax : kd)->loc, "%s() with segments= takes no %s: the segments run along the 1-D array",
                   fname, ax ? "axis=" : "keepdims=");
        return false;
    }
    if (x->rank != 1) {
        diag_error(c->d, call->loc,
                   "%s() with segments= needs a 1-D array, not %s; flatten it first, e.g. reshape(x, -1)", fname,
                   tname(c->a, x->dt, x->rank));
        return false;
    }
    Ex o = concrete(c, lower_expr(c, n));
    if (!o.ok) return false;
    if (o.v->dt != DT_I64 || o.v->rank != 1) {
        diag_error(c->d, n->loc, "segments= takes the segment offsets as i64[k + 1], not %s%s",
                   tname(c->a, o.v->dt, o.v->rank),
                   o.v->rank == 1 && dtype_info[o.v->dt].is_int ? "; convert with i64(offs)" : "");
        return false;
    }
    *offs = o.v;
    return true;
}

/* A reduce or scan over x with its segment offsets as operand 2. */
static Val *mk_seg(Ctx *c, OpKind op, DType dt, Val *x, Val *init, Val *offs, Loc loc) {
    Val *v = mk(c, op, dt, 1, 3, loc);
    v->args[0] = x;
    v->args[1] = init;
    v->args[2] = offs;
    v->axis = 0;
    return v;
}
static Val *rule6_masked(Ctx *c, Val *x, RedOp red, int axis, bool keep, Loc loc);
static Val *compact_count(Ctx *c, Val *x, Loc loc);

static Ex builtin_reduce(Ctx *c, Node *call, CallArgs *ca, RedOp red) {
    const char *fname = call->name;
    if (!want_args(c, call, ca, 1, 1)) return ex_bad();
    Ex x = concrete(c, arg_ex(c, ca, 0));
    if (!x.ok) return x;
    int axis;
    bool keep = false;
    Val *offs;
    if (!segments_arg(c, call, ca, x.v, fname, &offs)) return ex_bad();
    Node *kn = named_get(ca, "keepdims");
    if (!axis_arg(c, ca, x.v->rank, &axis, fname)) return ex_bad();
    if (kn && !const_bool(c, kn, &keep, "keepdims=")) return ex_bad();
    if (!named_check(c, ca, fname)) return ex_bad();
    DType dt = x.v->dt;
    if ((red == RED_ANY || red == RED_ALL) && dt != DT_BOOL) {
        diag_error(c->d, call->loc, "%s() needs a bool array, not %s; compare first, e.g. %s(x != 0)", fname,
                   tname(c->a, dt, x.v->rank), fname);
        return ex_bad();
    }
    if ((red == RED_SUM || red == RED_PROD) && dt == DT_BOOL) {
        diag_error(c->d, call->loc, "%s() of a bool array: convert first, e.g. %s(i64(b))", fname, fname);
        return ex_bad();
    }
    if (red != RED_SUM && !no_complex(c, x.v, call->loc, arena_printf(c->a, "%s()", fname), red != RED_PROD && red != RED_ANY && red != RED_ALL))
        return ex_bad();
    DType rdt = (red == RED_ARGMIN || red == RED_ARGMAX) ? DT_I64 : dt;
    if (offs) {
        Val *v = mk_seg(c, OP_REDUCE, rdt, x.v, NULL, offs, call->loc);
        v->red = red;
        return ex_val(v);
    }
    if (x.v->rank == 0 && (red == RED_ARGMIN || red == RED_ARGMAX)) return ex_val(mk_i64(c, 0, call->loc));
    Val *v = mk1(c, OP_REDUCE, rdt, red_rank(x.v->rank, axis, keep), x.v, call->loc);
    v->red = red;
    v->axis = axis;
    v->keepdims = keep;
    Val *masked = rule6_masked(c, x.v, red, axis, keep, call->loc);
    if (masked) v->args[0] = masked, v->axis = AXIS_ALL;
    return ex_val(v);
}

static Ex builtin_mean(Ctx *c, Node *call, CallArgs *ca) {
    if (!want_args(c, call, ca, 1, 1)) return ex_bad();
    Ex x = concrete(c, arg_ex(c, ca, 0));
    if (!x.ok) return x;
    if (!is_float(x.v->dt) && !dtype_is_complex(x.v->dt)) {
        diag_error(c->d, call->loc, "mean() needs floats (f16, bf16, f32, f64) or complex numbers, not %s; convert with f64(...)", dtype_info[x.v->dt].name);
        return ex_bad();
    }
    int axis;
    bool keep = false;
    Val *offs;
    if (!segments_arg(c, call, ca, x.v, "mean", &offs)) return ex_bad();
    if (offs) {
        if (!named_check(c, ca, "mean")) return ex_bad();
        /* sum per segment / its length (offs[1:] - offs[:-1]); an empty segment gives NaN */
        Val *s = mk_seg(c, OP_REDUCE, x.v->dt, x.v, NULL, offs, call->loc);
        s->red = RED_SUM;
        Val *hi = mk(c, OP_SLICE, DT_I64, 1, 4, call->loc), *lo = mk(c, OP_SLICE, DT_I64, 1, 4, call->loc);
        hi->args[0] = lo->args[0] = offs;
        hi->args[1] = mk_i64(c, 1, call->loc);
        lo->args[2] = mk_i64(c, -1, call->loc);
        Val *len = mk2(c, OP_SUB, DT_I64, 1, hi, lo, call->loc);
        Val *n = mk1(c, OP_CAST, x.v->dt, 1, len, call->loc);
        return ex_val(mk2(c, OP_DIV, x.v->dt, 1, s, n, call->loc));
    }
    Node *kn = named_get(ca, "keepdims");
    if (!axis_arg(c, ca, x.v->rank, &axis, "mean")) return ex_bad();
    if (kn && !const_bool(c, kn, &keep, "keepdims=")) return ex_bad();
    if (!named_check(c, ca, "mean")) return ex_bad();
    Val *s = mk1(c, OP_REDUCE, x.v->dt, red_rank(x.v->rank, axis, keep), x.v, call->loc);
    s->red = RED_SUM;
    s->axis = axis;
    s->keepdims = keep;
    Val *masked = rule6_masked(c, x.v, RED_SUM, axis, keep, call->loc);
    if (masked) s->args[0] = masked, s->axis = AXIS_ALL;
    Val *cnt = masked ? compact_count(c, x.v, call->loc) : count_of(c, x.v, axis, call->loc);
    Val *n = mk1(c, OP_CAST, x.v->dt, 0, cnt, call->loc);
    return ex_val(mk2(c, OP_DIV, x.v->dt, s->rank, s, n, call->loc));
}

static Ex builtin_generic_reduce(Ctx *c, Node *call, CallArgs *ca, bool scan) {
    const char *fname = call->name;
    if (!want_args(c, call, ca, 3, 3)) return ex_bad();
    Ex x = concrete(c, arg_ex(c, ca, 2));
    if (!x.ok) return x;
    if (!no_complex(c, x.v, call->loc, arena_printf(c->a, "%s() with a combine function", fname), false)) return ex_bad();
    Ex init = coerce(c, lower_expr(c, ca->pos[1]), x.v->dt, ca->pos[1]->loc, "the initial value");
    if (!init.ok) return init;
    if (init.v->rank != 0) {
        diag_error(c->d, ca->pos[1]->loc, "the initial value of %s() must be a scalar, not %s", fname,
                   tname(c->a, init.v->dt, init.v->rank));
        return ex_bad();
    }
    int axis;
    bool flag = false;
    Val *offs = NULL;
    if (!segments_arg(c, call, ca, x.v, fname, &offs)) return ex_bad();
    if (!axis_arg(c, ca, x.v->rank, &axis, fname)) return ex_bad();
    Node *fl = named_get(ca, scan ? "exclusive" : "keepdims");
    if (fl && !const_bool(c, fl, &flag, scan ? "exclusive=" : "keepdims=")) return ex_bad();
    if (!named_check(c, ca, fname)) return ex_bad();
    Val *lam = lower_combine(c, ca->pos[0], x.v->dt, fname);
    if (!lam) return ex_bad();
    Val *v;
    if (offs) {
        v = mk_seg(c, scan ? OP_SCAN : OP_REDUCE, x.v->dt, x.v, init.v, offs, call->loc);
        v->exclusive = scan && flag;
    } else if (scan) {
        v = mk2(c, OP_SCAN, x.v->dt, axis == AXIS_ALL ? (x.v->rank ? 1 : 1) : x.v->rank, x.v, init.v, call->loc);
        v->exclusive = flag;
    } else {
        v = mk2(c, OP_REDUCE, x.v->dt, red_rank(x.v->rank, axis, flag), x.v, init.v, call->loc);
        v->keepdims = flag;
    }
    v->red = RED_LAMBDA;
    v->lam = lam;
    v->init = init.v;
    if (!offs) v->axis = axis;
    return ex_val(v);
}

static Ex builtin_scan(Ctx *c, Node *call, CallArgs *ca, RedOp red) {
    const char *fname = call->name;
    if (!want_args(c, call, ca, 1, 1)) return ex_bad();
    Ex x = concrete(c, arg_ex(c, ca, 0));
    if (!x.ok) return x;
    int axis;
    bool excl = false;
    Val *offs;
    if (!segments_arg(c, call, ca, x.v, fname, &offs)) return ex_bad();
    if (!axis_arg(c, ca, x.v->rank, &axis, fname)) return ex_bad();
    Node *en = named_get(ca, "exclusive");
    if (en && !const_bool(c, en, &excl, "exclusive=")) return ex_bad();
    if (!named_check(c, ca, fname)) return ex_bad();
    if (!is_numeric(x.v->dt)) {
        diag_error(c->d, call->loc, "%s() needs numbers, not %s", fname, dtype_info[x.v->dt].name);
        return ex_bad();
    }
    if (red != RED_SUM && !no_complex(c, x.v, call->loc, arena_printf(c->a, "%s()", fname), red != RED_PROD))
        return ex_bad();
    Val *v = offs ? mk_seg(c, OP_SCAN, x.v->dt, x.v, NULL, offs, call->loc)
                  : mk1(c, OP_SCAN, x.v->dt, axis == AXIS_ALL ? 1 : x.v->rank, x.v, call->loc);
    v->red = red;
    if (!offs) v->axis = axis;
    v->exclusive = excl;
    return ex_val(v);
}

static Ex builtin_generator(Ctx *c, Node *call, CallArgs *ca, const char *g) {
    DType dt = DT_F32;
    bool given;
    if (!dtype_arg(c, ca, &dt, &given)) return ex_bad();
    Loc loc = call->loc;
    if (strcmp(g, "iota") == 0) {
        if (!want_args(c, call, ca, 1, 1) || !named_check(c, ca, g)) return ex_bad();
        Val *n = as_i64(c, arg_ex(c, ca, 0), ca->pos[0]->loc, "the length of iota()");
        if (!n) return ex_bad();
        return ex_val(mk1(c, OP_IOTA, given ? dt : DT_I64, 1, n, loc));
    }
    if (strcmp(g, "linspace") == 0) {
        if (!want_args(c, call, ca, 3, 3) || !named_check(c, ca, g)) return ex_bad();
        if (!is_float(dt)) {
            diag_error(c->d, loc, "linspace() makes float values (f16, bf16, f32, f64)");
            return ex_bad();
        }
        Ex a = coerce(c, arg_ex(c, ca, 0), dt, ca->pos[0]->loc, "the start of linspace()");
        Ex b = coerce(c, arg_ex(c, ca, 1), dt, ca->pos[1]->loc, "the stop of linspace()");
        Val *n = as_i64(c, arg_ex(c, ca, 2), ca->pos[2]->loc, "the length of linspace()");
        if (!a.ok || !b.ok || !n) return ex_bad();
        if (a.v->rank || b.v->rank) {
            diag_error(c->d, loc, "linspace() takes scalar start and stop");
            return ex_bad();
        }
        Val *v = mk(c, OP_LINSPACE, dt, 1, 3, loc);
        v->args[0] = a.v, v->args[1] = b.v, v->args[2] = n;
        return ex_val(v);
    }
    bool isfull = strcmp(g, "full") == 0;
    bool israndom = strcmp(g, "rand") == 0 || strcmp(g, "randn") == 0;
    int first = isfull ? 1 : 0;
    if (ca->npos < first + 1) {
        diag_error(c->d, loc, "%s() needs %sat least one size", g, isfull ? "a value and " : "");
        return ex_bad();
    }
    int ndims = ca->npos - first;
    if (ndims > MAXRANK) {
        diag_error(c->d, loc, "%s(): at most %d dimensions", g, MAXRANK);
        return ex_bad();
    }
    Val *lead;
    if (isfull) {
        Ex fv = lower_expr(c, ca->pos[0]);
        if (!fv.ok) return fv;
        if (!given) dt = fv.weak ? weak_default(fv) : fv.v->dt;
        fv = coerce(c, fv, dt, ca->pos[0]->loc, "the fill value");
        if (!fv.ok) return fv;
        if (fv.v->rank) {
            diag_error(c->d, ca->pos[0]->loc, "full() takes a scalar fill value");
            return ex_bad();
        }
        lead = fv.v;
    } else if (israndom) {
        Node *sn = named_get(ca, "seed");
        if (!is_float(dt)) {
            diag_error(c->d, loc, "%s() makes float values (f16, bf16, f32, f64)", g);
            return ex_bad();
        }
        lead = sn ? as_i64(c, lower_expr(c, sn), sn->loc, "seed=") : mk_i64(c, 0, loc);
        if (!lead) return ex_bad();
    } else {
        lead = mk(c, OP_CONST, dt, 0, 0, loc);
        bool one = strcmp(g, "ones") == 0;
        if (is_float(dt)) lead->c.f = one;
        else lead->c.i = one;
        if (dt == DT_U32 || dt == DT_U64) lead->c.u = one;
    }
    if (!named_check(c, ca, g)) return ex_bad();
    Val *v = mk(c, israndom ? (strcmp(g, "rand") == 0 ? OP_RAND : OP_RANDN) : OP_FULL, dt, ndims, ndims + 1, loc);
    v->args[0] = lead;
    for (int i = 0; i < ndims; i++) {
        v->args[1 + i] = as_i64(c, arg_ex(c, ca, first + i), ca->pos[first + i]->loc, "a size");
        if (!v->args[1 + i]) return ex_bad();
    }
    return ex_val(v);
}

static Ex builtin_cast(Ctx *c, Node *call, CallArgs *ca, DType dt) {
    if (!want_args(c, call, ca, 1, 1) || !named_check(c, ca, call->name)) return ex_bad();
    Ex x = lower_expr(c, ca->pos[0]);
    if (!x.ok) return x;
    if (x.weak) {
        if (x.wfloat && !is_float(dt)) {
            /* f32(1.5) is fine; i32(1.5) converts a float literal: make it f64 first. */
            if (!retype(c, x.v, DT_F64, call->loc)) return ex_bad();
        } else if (!is_float(dt) && dt != DT_BOOL) {
            if (!retype(c, x.v, dt, call->loc)) return ex_bad();
            return ex_val(x.v);
        } else {
            if (!retype(c, x.v, x.wfloat ? DT_F64 : DT_I64, call->loc)) return ex_bad();
        }
    }
    /* f16(e) of an f16 expression rounds it there (widen.c rounds once, at its end) */
    if (x.v->dt == dt && !dtype_is_half(dt)) return ex_val(x.v);
    return ex_val(mk1(c, OP_CAST, dt, x.v->rank, x.v, call->loc));
}

static Ex builtin_ew(Ctx *c, Node *call, CallArgs *ca, OpKind op) {
    int ar = ew_info[op].arity;
    if (!want_args(c, call, ca, ar, ar) || !named_check(c, ca, call->name)) return ex_bad();
    Ex xs[3];
    Node *nodes[3];
    for (int i = 0; i < ar; i++) {
        xs[i] = lower_expr(c, ca->pos[i]);
        nodes[i] = ca->pos[i];
        if (!xs[i].ok) return ex_bad();
    }
    return mk_ew(c, op, xs, ar, nodes, call->loc, call->name);
}

/* complex(re, im), real(z), imag(z), conj(z), arg(z) (abs is abs): c64 has f32 parts,
   c128 f64 ones. real() of a real number is itself, as NumPy's. */
static Ex builtin_complex(Ctx *c, Node *call, CallArgs *ca, const char *g) {
    bool pack = strcmp(g, "complex") == 0;
    if (!want_args(c, call, ca, pack ? 2 : 1, pack ? 2 : 1) || !named_check(c, ca, g)) return ex_bad();
    Ex xs[2];
    Node *nodes[2] = {ca->pos[0], pack ? ca->pos[1] : NULL};
    for (int i = 0; i < (pack ? 2 : 1); i++)
        if (!(xs[i] = lower_expr(c, ca->pos[i])).ok) return ex_bad();
    if (pack) {
        if (!unify(c, xs, 2, nodes, call->loc, "complex")) return ex_bad();
        if (xs[0].weak && !retype(c, xs[0].v, DT_F32, call->loc)) return ex_bad();
        if (xs[1].weak && !retype(c, xs[1].v, DT_F32, call->loc)) return ex_bad();
        DType dt = xs[0].v->dt;
        if (dt != DT_F32 && dt != DT_F64) {
            diag_error(c->d, call->loc, "complex() takes f32 parts (for a c64) or f64 parts (for a c128), not %s; convert with f32(...)",
                       dtype_info[dt].name);
            return ex_bad();
        }
        int rank = xs[0].v->rank > xs[1].v->rank ? xs[0].v->rank : xs[1].v->rank;
        Val *v = mk(c, OP_CPACK, dtype_complex_of(dt), rank, 2, call->loc);
        v->args[0] = xs[0].v, v->args[1] = xs[1].v;
        return ex_val(v);
    }
    Ex z = concrete(c, xs[0]);
    if (!z.ok) return z;
    DType dt = z.v->dt;
    if (dt == DT_VOID || !dtype_is_complex(dt)) {
        if (strcmp(g, "real") == 0 && dt != DT_VOID && is_numeric(dt)) return z;
        diag_error(c->d, call->loc, "%s() takes a complex number (c64 or c128), not %s", g, ex_tname(c, z));
        return ex_bad();
    }
    DType pt = dtype_part(dt);
    int rank = z.v->rank;
    Val *re = mk1(c, OP_CPART, pt, rank, z.v, call->loc), *im = mk1(c, OP_CPART, pt, rank, z.v, call->loc);
    im->axis = 1;
    if (strcmp(g, "real") == 0) return ex_val(re);
    if (strcmp(g, "imag") == 0) return ex_val(im);
    if (strcmp(g, "arg") == 0) return ex_val(mk2(c, OP_ATAN2, pt, rank, im, re, call->loc));
    Val *v = mk2(c, OP_CPACK, dt, rank, re, mk1(c, OP_NEG, pt, rank, im, call->loc), call->loc); /* conj */
    return ex_val(v);
}

static Ex index_expr(Ctx *c, Node *n);

/* dot(a, b) and a @ b (spelled `what` in messages): vector-vector is a fused multiply
   and sum, matrix-vector and matrix-matrix an OP_MATMUL. */
static Ex lower_dot(Ctx *c, Ex *xs, Node **nodes, Loc loc, const char *what) {
    if (!unify(c, xs, 2, nodes, loc, what[0] == 'd' ? "dot" : "@")) return ex_bad();
    xs[0] = concrete(c, xs[0]);
    xs[1] = concrete(c, xs[1]);
    if (!xs[0].ok || !xs[1].ok) return ex_bad();
    int ra = xs[0].v->rank, rb = xs[1].v->rank;
    if (!is_numeric(xs[0].v->dt)) {
        diag_error(c->d, loc, "%s needs numbers", what);
        return ex_bad();
    }
    if (ra == 1 && rb == 1) {
        Val *m = mk2(c, OP_MUL, xs[0].v->dt, 1, xs[0].v, xs[1].v, loc);
        Val *s = mk1(c, OP_REDUCE, xs[0].v->dt, 0, m, loc);
        s->red = RED_SUM;
        s->axis = AXIS_ALL;
        return ex_val(s);
    }
    if (ra == 2 && (rb == 1 || rb == 2)) return ex_val(mk2(c, OP_MATMUL, xs[0].v->dt, rb, xs[0].v, xs[1].v, loc));
    diag_error(c->d, loc, "%s takes two 1-D arrays, or a 2-D array and a 1-D or 2-D one (got %d-D and %d-D)", what, ra, rb);
    return ex_bad();
}

/* Argument 0 of fname() as an array: a scalar is an error that says how to make one. */
static Ex array_arg0(Ctx *c, CallArgs *ca, const char *fname) {
    Ex x = concrete(c, arg_ex(c, ca, 0));
    if (x.ok && x.v->rank == 0) {
        diag_error(c->d, ca->pos[0]->loc, "%s() needs an array, not a scalar; make it one with reshape(x, 1)", fname);
        return ex_bad();
    }
    return x;
}

/* pad(x, w [, value=v]): w elements of v (0 by default) on both sides of every axis,
   as np.pad(x, w, constant_values=v). Args: x, w (i64), v (a scalar of x's type). */
static Ex builtin_pad(Ctx *c, Node *call, CallArgs *ca) {
    Loc loc = call->loc;
    Node *vn = named_get(ca, "value");
    if (!want_args(c, call, ca, 2, 2) || !named_check(c, ca, "pad")) return ex_bad();
    Ex x = array_arg0(c, ca, "pad");
    if (!x.ok) return x;
    int64_t wc;
    Node *wn = ca->pos[1];
    if ((wn->kind == N_INT || (wn->kind == N_UNARY && wn->op == AOP_NEG && wn->a->kind == N_INT)) &&
        const_int(c, wn, &wc, "the width") && wc < 0) {
        diag_error(c->d, wn->loc, "pad() width must be 0 or more, got %lld", (long long)wc);
        return ex_bad();
    }
    Val *w = as_i64(c, arg_ex(c, ca, 1), wn->loc, "pad()'s width");
    if (!w) return ex_bad();
    Val *val;
    if (vn) {
        Ex e = lower_expr(c, vn);
        if (!e.ok) return e;
        if (e.v->rank != 0) {
            diag_error(c->d, vn->loc, "pad()'s value= must be a scalar of the array's type (%s), not %s",
                       dtype_info[x.v->dt].name, ex_tname(c, e));
            return ex_bad();
        }
        e = coerce(c, e, x.v->dt, vn->loc, "pad()'s value=");
        if (!e.ok) return e;
        val = e.v;
    } else {
        val = mk(c, OP_CONST, x.v->dt, 0, 0, loc); /* zero in every type's Scalar form */
    }
    Val *v = mk(c, OP_PAD, x.v->dt, x.v->rank, 3, loc);
    v->args[0] = x.v;
    v->args[1] = w;
    v->args[2] = val;
    return ex_val(v);
}

/* roll(x, shift [, axis=k]): np.roll. Without axis= the flattened array is rolled and
   the shape kept (v->axis = AXIS_ALL). Args: x, shift (i64). */
static Ex builtin_roll(Ctx *c, Node *call, CallArgs *ca) {
    Node *an = named_get(ca, "axis");
    if (!want_args(c, call, ca, 2, 2) || !named_check(c, ca, "roll")) return ex_bad();
    Ex x = array_arg0(c, ca, "roll");
    if (!x.ok) return x;
    int rank = x.v->rank;
    int axis = AXIS_ALL;
    if (!axis_of(c, an, rank, &axis, "roll", "array")) return ex_bad();
    Val *s = as_i64(c, arg_ex(c, ca, 1), ca->pos[1]->loc, "roll()'s shift");
    if (!s) return ex_bad();
    Val *v = mk2(c, OP_ROLL, x.v->dt, rank, x.v, s, call->loc);
    v->axis = axis;
    return ex_val(v);
}

/* The positional arguments of concat() or stack() (at least one, at most 32: CallArgs'
   limit), lowered and unified to one element type; *an: axis=, their one named argument. */
static bool lower_unified(Ctx *c, CallArgs *ca, Ex *xs, Node **nodes, Loc loc, const char *what, Node **an) {
    *an = named_get(ca, "axis");
    if (!named_check(c, ca, what)) return false;
    if (ca->npos < 1) {
        diag_error(c->d, loc, "%s() needs at least one array, e.g. %s(a, b)", what, what);
        return false;
    }
    for (int i = 0; i < ca->npos; i++) {
        xs[i] = lower_expr(c, ca->pos[i]);
        nodes[i] = ca->pos[i];
        if (!xs[i].ok) return false;
    }
    return unify(c, xs, ca->npos, nodes, loc, what);
}

/* stack(a, b, ..., axis=k): np.stack, a new axis k (0 by default; negative counts
   from the end of the result's axes). */
static Ex builtin_stack(Ctx *c, Node *call, CallArgs *ca) {
    Loc loc = call->loc;
    Ex xs[32];
    Node *nodes[32];
    Node *an;
    if (!lower_unified(c, ca, xs, nodes, loc, "stack", &an)) return ex_bad();
    for (int i = 0; i < ca->npos; i++) {
        xs[i] = concrete(c, xs[i]);
        if (!xs[i].ok) return ex_bad();
    }
    int rank = xs[0].v->rank;
    for (int i = 1; i < ca->npos; i++)
        if (xs[i].v->rank != rank) {
            diag_error(c->d, ca->pos[i]->loc, "stack() needs arrays of one shape, but this is %s and the first is %s",
                       tname(c->a, xs[i].v->dt, xs[i].v->rank), tname(c->a, xs[0].v->dt, rank));
            return ex_bad();
        }
    if (rank + 1 > MAXRANK) {
        diag_error(c->d, loc, "stack() of %d-D arrays would have more than %d dimensions", rank, MAXRANK);
        return ex_bad();
    }
    int axis = 0;
    if (!axis_of(c, an, rank + 1, &axis, "stack", "result")) return ex_bad();
    Val *v = mk(c, OP_STACK, xs[0].v->dt, rank + 1, ca->npos, loc);
    for (int i = 0; i < ca->npos; i++) v->args[i] = xs[i].v;
    v->axis = axis;
    return ex_val(v);
}

static Ex map_apply(Ctx *c, Node *call, Node *f, Ex *args, int n, const char *who);

/* ---- sorting (DESIGN.md part 2): computed by the executor (exec/sort.h), not fused --- */

static Ex make_compact(Ctx *c, Val *x, Val *mask, Loc loc, Loc mloc);

/* sort(x, axis=k, descending=b) and argsort(x, ...): along axis k (the last by default),
   stable, NaN last whichever the direction. */
static Ex builtin_sort(Ctx *c, Node *call, CallArgs *ca, bool arg) {
    const char *g = arg ? "argsort" : "sort";
    Node *an = named_get(ca, "axis"), *dn = named_get(ca, "descending");
    if (!want_args(c, call, ca, 1, 1) || !named_check(c, ca, g)) return ex_bad();
    Ex x = array_arg0(c, ca, g);
    if (!x.ok || !no_complex(c, x.v, call->loc, arena_printf(c->a, "%s()", g), true)) return ex_bad();
    int rank = x.v->rank;
    int axis = rank - 1;
    bool desc = false;
    if (!axis_of(c, an, rank, &axis, g, "array") || (dn && !const_bool(c, dn, &desc, "descending="))) return ex_bad();
    /* the executors sort along the last axis: another axis is swapped there and back */
    Val *in = x.v;
    int perm[MAXRANK] = {0};
    for (int i = 0; i < rank; i++) perm[i] = i;
    perm[axis] = rank - 1, perm[rank - 1] = axis;
    if (axis != rank - 1) {
        in = mk1(c, OP_TRANSPOSE, in->dt, rank, in, call->loc);
        memcpy(in->perm, perm, sizeof perm);
    }
    Val *v = mk1(c, arg ? OP_ARGSORT : OP_SORT, arg ? DT_I64 : x.v->dt, rank, in, call->loc);
    v->axis = rank - 1;
    v->exclusive = desc;
    if (axis != rank - 1) {
        v = mk1(c, OP_TRANSPOSE, v->dt, rank, v, call->loc);
        memcpy(v->perm, perm, sizeof perm);
    }
    return ex_val(v);
}

/* searchsorted(a, v, right=b): a sorted 1-D a (ascending, NaN last, as sort gives it),
   values v of any shape, in a common element type; i64 of v's shape. */
static Ex builtin_searchsorted(Ctx *c, Node *call, CallArgs *ca) {
    Node *rn = named_get(ca, "right");
    bool right = false;
    if (!want_args(c, call, ca, 2, 2) || !named_check(c, ca, "searchsorted")) return ex_bad();
    if (rn && !const_bool(c, rn, &right, "right=")) return ex_bad();
    Ex xs[2] = {lower_expr(c, ca->pos[0]), lower_expr(c, ca->pos[1])};
    if (!xs[0].ok || !xs[1].ok || !unify(c, xs, 2, ca->pos, call->loc, "searchsorted")) return ex_bad();
    for (int i = 0; i < 2; i++)
        if (!(xs[i] = concrete(c, xs[i])).ok) return ex_bad();
    if (!no_complex(c, xs[0].v, call->loc, "searchsorted()", true)) return ex_bad();
    if (xs[0].v->rank != 1) {
        diag_error(c->d, ca->pos[0]->loc,
                   "searchsorted() looks values up in a sorted 1-D array, not %s; pass sort(a) or one row of it",
                   tname(c->a, xs[0].v->dt, xs[0].v->rank));
        return ex_bad();
    }
    /* one value: looked up as an array of one, its element taken (the executors see
       arrays of values only) */
    Val *vals = xs[1].v;
    if (vals->rank == 0) vals = mk2(c, OP_RESHAPE, vals->dt, 1, vals, mk_i64(c, 1, call->loc), call->loc);
    Val *v = mk2(c, OP_SEARCHSORTED, DT_I64, vals->rank, xs[0].v, vals, call->loc);
    v->exclusive = right;
    if (xs[1].v->rank == 0) {
        Val *e = mk(c, OP_SLICE, DT_I64, 0, 4, call->loc);
        e->args[0] = v, e->args[1] = mk_i64(c, 0, call->loc);
        e->slmode[0] = SL_INDEX;
        v = e;
    }
    return ex_val(v);
}

/* sort_by_key(k, v, descending=b): the keys sorted as sort(k) sorts them and the values
   moved with them, two results: the values by OP_SORTKV, the keys by an OP_SORT that
   names it (the GPU computes the two in one sort when the keys come first). 1-D keys and
   values, one value a key (checked when it runs). */
static Ex builtin_sort_by_key(Ctx *c, Node *call, CallArgs *ca) {
    Node *dn = named_get(ca, "descending");
    bool desc = false;
    if (!want_args(c, call, ca, 2, 2) || !named_check(c, ca, "sort_by_key")) return ex_bad();
    if (dn && !const_bool(c, dn, &desc, "descending=")) return ex_bad();
    Ex kv[2];
    for (int i = 0; i < 2; i++) {
        if (!(kv[i] = concrete(c, arg_ex(c, ca, i))).ok) return ex_bad();
        if (!no_complex(c, kv[i].v, call->loc, i ? "sort_by_key()'s values" : "sort_by_key()", i == 0)) return ex_bad();
        if (kv[i].v->rank != 1) {
            diag_error(c->d, ca->pos[i]->loc, "sort_by_key() takes 1-D keys and values, not %s",
                       tname(c->a, kv[i].v->dt, kv[i].v->rank));
            return ex_bad();
        }
    }
    Loc loc = call->loc;
    Val *k = kv[0].v;
    Val *v = mk_check(c, kv[1].v, count_of(c, kv[1].v, 0, loc), count_of(c, k, 0, loc),
                      "sort_by_key(): %lld values for %lld keys; give each key one value", loc);
    Val *sv = mk2(c, OP_SORTKV, v->dt, 1, k, v, loc), *sk = mk2(c, OP_SORT, k->dt, 1, k, sv, loc);
    sv->exclusive = sk->exclusive = desc;
    sk->axis = 0;
    Ex *parts = NEWN(c->a, Ex, 2);
    parts[0] = ex_val(sk);
    parts[1] = ex_val(sv);
    return (Ex){.ok = true, .ntup = 2, .tup = parts};
}

/* top_k(x, k): along the last axis, the k largest elements in sort(x, descending=true)'s
   order (equal ones by position, NaN after every number) and their i64 positions, two
   results of x's shape with k last: each row's k positions found by selection (OP_TOPK,
   not a whole sort), a gather. */
static Ex builtin_top_k(Ctx *c, Node *call, CallArgs *ca) {
    if (!want_args(c, call, ca, 2, 2) || !named_check(c, ca, "top_k")) return ex_bad();
    Ex x = array_arg0(c, ca, "top_k");
    if (!x.ok || !no_complex(c, x.v, call->loc, "top_k()", true)) return ex_bad();
    Val *k = as_i64(c, arg_ex(c, ca, 1), ca->pos[1]->loc, "top_k()'s k");
    if (!k) return ex_bad();
    Loc loc = call->loc;
    Val *xv = x.v;
    const int r = xv->rank;
    const DType dt = xv->dt;
    Val *len = count_of(c, xv, r - 1, loc), *rows = mk_i64(c, 1, loc), *zero = mk_i64(c, 0, loc);
    for (int i = 0; i < r - 1; i++) rows = mk2(c, OP_MUL, DT_I64, 0, rows, count_of(c, xv, i, loc), loc);
    k = mk_check(c, k, mk2(c, OP_MAXIMUM, DT_I64, 0, k, zero, loc), k, "top_k(): k must be at least %lld, not %lld", loc);
    k = mk_check(c, k, mk2(c, OP_MINIMUM, DT_I64, 0, k, len, loc), k,
                "top_k(): the rows have %lld elements, fewer than k = %lld; ask for at most that many", loc);
    /* the positions of each row's k largest (x's shape, k last: x itself is what the
       executors read, not a copy of it as [rows, len]); the elements there: of a
       vector, a gather by them; else by their flat positions, row * len + position,
       back to x's leading axes */
    Val *idx = mk2(c, OP_TOPK, DT_I64, r, xv, k, loc);
    Val *vals;
    if (r == 1) vals = mk2(c, OP_GATHER, dt, 1, xv, idx, loc);
    else {
        Val *nk = mk2(c, OP_MUL, DT_I64, 0, rows, k, loc);
        Val *row = mk2(c, OP_DIV, DT_I64, 1, mk1(c, OP_IOTA, DT_I64, 1, nk, loc), k, loc);
        Val *flat = mk2(c, OP_ADD, DT_I64, 1, mk2(c, OP_MUL, DT_I64, 1, row, len, loc),
                        mk2(c, OP_RESHAPE, DT_I64, 1, idx, nk, loc), loc);
        Val *xf = mk2(c, OP_RESHAPE, dt, 1, xv, mk2(c, OP_MUL, DT_I64, 0, rows, len, loc), loc);
        vals = mk(c, OP_RESHAPE, dt, r, 1 + r, loc);
        vals->args[0] = mk2(c, OP_GATHER, dt, 1, xf, flat, loc);
        for (int j = 0; j < r - 1; j++) vals->args[1 + j] = count_of(c, xv, j, loc);
        vals->args[r] = k;
    }
    Ex *out = NEWN(c->a, Ex, 2);
    out[0] = ex_val(vals), out[1] = ex_val(idx);
    return (Ex){.ok = true, .ntup = 2, .tup = out};
}

/* unique(x): x's distinct values (all its elements), sorted, NaNs as one and -0.0 and
   0.0 as one (np.unique; the first of each in x's order kept): OP_UNIQUE of x and of the
   sorted values that differ from the one before (a compaction), which the CPU takes and
   the GPU where hashing does not fit the distinct values. */
static Ex builtin_unique(Ctx *c, Node *call, CallArgs *ca) {
    if (!want_args(c, call, ca, 1, 1) || !named_check(c, ca, "unique")) return ex_bad();
    Ex x = array_arg0(c, ca, "unique");
    if (!x.ok || !no_complex(c, x.v, call->loc, "unique()", true)) return ex_bad();
    Loc loc = call->loc;
    DType dt = x.v->dt;
    Val *flat = x.v;
    if (flat->rank > 1) flat = mk2(c, OP_RESHAPE, dt, 1, flat, mk_i64(c, -1, loc), loc);
    Val *s = mk1(c, OP_SORT, dt, 1, flat, loc);
    s->axis = 0;
    Val *io = mk1(c, OP_IOTA, DT_I64, 1, count_of(c, s, 0, loc), loc);
    Val *before = mk2(c, OP_MAXIMUM, DT_I64, 1, mk2(c, OP_SUB, DT_I64, 1, io, mk_i64(c, 1, loc), loc), mk_i64(c, 0, loc), loc);
    Val *prev = mk2(c, OP_GATHER, dt, 1, s, before, loc);
    Val *diff = mk2(c, OP_NE, DT_BOOL, 1, s, prev, loc);
    if (is_float(dt)) {
        Val *nans = mk2(c, OP_LAND, DT_BOOL, 1, mk1(c, OP_ISNAN, DT_BOOL, 1, s, loc), mk1(c, OP_ISNAN, DT_BOOL, 1, prev, loc), loc);
        diff = mk2(c, OP_LAND, DT_BOOL, 1, diff, mk1(c, OP_NOT, DT_BOOL, 1, nans, loc), loc);
    }
    Val *keep = mk2(c, OP_LOR, DT_BOOL, 1, mk2(c, OP_EQ, DT_BOOL, 1, io, mk_i64(c, 0, loc), loc), diff, loc);
    Ex sorted = make_compact(c, s, keep, loc, loc);
    if (!sorted.ok) return sorted;
    return ex_val(mk2(c, OP_UNIQUE, dt, 1, flat, sorted.v, loc));
}

/* ---- filters: x[mask], filter, nonzero ------------------------------------------------
   All three are OP_COMPACT(x, mask): x's elements where mask (bool, x's shape) is true,
   in row-major order, as a 1-D array whose size is known only at run time. */
static Ex make_compact(Ctx *c, Val *x, Val *mask, Loc loc, Loc mloc) {
    if (mask->dt != DT_BOOL) {
        diag_error(c->d, mloc, "a mask must be bool, not %s; compare first, e.g. x[x > 0.0]",
                   tname(c->a, mask->dt, mask->rank));
        return ex_bad();
    }
    if (mask->rank != x->rank) {
        diag_error(c->d, mloc, "the mask is %d-D but the array is %d-D; a mask has the shape of the array it selects from",
                   mask->rank, x->rank);
        return ex_bad();
    }
    return ex_val(mk2(c, OP_COMPACT, x->dt, 1, x, mask, loc));
}

/* rule6 (docs/fusion.md): a reduction over everything of a compaction is a masked
   reduction of its source, select(mask, x, identity), so the filter never reaches
   memory and its producers fuse into the reduction (rule 2). Only combines with an
   identity: min and max of an empty selection are errors, as in NumPy. */
static Val *rule6_masked(Ctx *c, Val *x, RedOp red, int axis, bool keep, Loc loc) {
    if (x->op != OP_COMPACT || keep || (axis != AXIS_ALL && axis != 0)) return NULL;
    Scalar id = {0};
    switch (red) {
    case RED_SUM:
    case RED_ANY: break;
    case RED_PROD:
    case RED_ALL:
        if (is_float(x->dt)) id.f = 1.0;
        else id.i = 1;
        break;
    default: return NULL;
    }
    Val *k = mk(c, OP_CONST, x->dt, 0, 0, loc);
    k->c = id;
    Val *src = x->args[0], *m = x->args[1];
    Val *sel = mk(c, OP_SELECT, x->dt, src->rank, 3, loc);
    sel->args[0] = m, sel->args[1] = src, sel->args[2] = k;
    return sel;
}

/* The number of true elements of a compaction's mask, for its size: a sum that fuses
   with the mask's producers instead of waiting for the compaction. */
static Val *compact_count(Ctx *c, Val *x, Loc loc) {
    Val *m = mk1(c, OP_CAST, DT_I64, x->args[1]->rank, x->args[1], loc);
    Val *s = mk1(c, OP_REDUCE, DT_I64, 0, m, loc);
    s->red = RED_SUM;
    s->axis = AXIS_ALL;
    return s;
}

/* filter(f, x) and partition(f, x): x (1-D) and the mask f(x) (bool, x's shape). */
static bool pred_mask(Ctx *c, Node *call, CallArgs *ca, const char *who, Ex *xo, Ex *mo) {
    if (!want_args(c, call, ca, 2, 2) || !named_check(c, ca, who)) return false;
    Ex x = concrete(c, lower_expr(c, ca->pos[1]));
    if (!x.ok) return false;
    if (x.v->rank != 1) {
        diag_error(c->d, ca->pos[1]->loc, "%s(f, x) needs a 1-D array, not %s; for other shapes use x[mask]%s", who,
                   tname(c->a, x.v->dt, x.v->rank), strcmp(who, "partition") == 0 ? " and x[!mask]" : "");
        return false;
    }
    Ex m = map_apply(c, call, ca->pos[0], &x, 1, arena_printf(c->a, "%s()", who));
    if (!m.ok) return false;
    m = concrete(c, m);
    if (!m.ok) return false;
    if (m.v->dt != DT_BOOL) {
        diag_error(c->d, ca->pos[0]->loc, "the predicate of %s() must return bool, not %s; compare, e.g. |v| v > 0.0",
                   who, dtype_info[m.v->dt].name);
        return false;
    }
    if (m.v->rank == 0) {
        /* a predicate that does not read its argument: every element or none */
        Val *f = mk(c, OP_FULL, DT_BOOL, 1, 2, call->loc);
        f->args[0] = m.v;
        Val *d = mk1(c, OP_DIM, DT_I64, 0, x.v, call->loc);
        d->axis = 0;
        f->args[1] = d;
        m.v = f;
    }
    *xo = x, *mo = m;
    return true;
}

static Ex builtin_filter(Ctx *c, Node *call, CallArgs *ca) {
    Ex x, m;
    if (!pred_mask(c, call, ca, "filter", &x, &m)) return ex_bad();
    return make_compact(c, x.v, m.v, call->loc, ca->pos[0]->loc);
}

/* partition(f, x) -> (yes, no), Futhark's meaning: two compactions of x, by the mask and
   by its negation (each its own rule6_compact kernel; the mask's producers are shared
   or recomputed as rule 7 decides). A tuple, so only a let (a, b) or a return takes it. */
static Ex builtin_partition(Ctx *c, Node *call, CallArgs *ca) {
    Ex x, m;
    if (!pred_mask(c, call, ca, "partition", &x, &m)) return ex_bad();
    Ex *parts = NEWN(c->a, Ex, 2);
    parts[0] = make_compact(c, x.v, m.v, call->loc, ca->pos[0]->loc);
    Val *not = mk1(c, OP_NOT, DT_BOOL, m.v->rank, m.v, call->loc);
    parts[1] = make_compact(c, x.v, not, call->loc, ca->pos[0]->loc);
    if (!parts[0].ok || !parts[1].ok) return ex_bad();
    return (Ex){.ok = true, .ntup = 2, .tup = parts};
}

static Ex builtin_nonzero(Ctx *c, Node *call, CallArgs *ca) {
    if (!want_args(c, call, ca, 1, 1) || !named_check(c, ca, "nonzero")) return ex_bad();
    Ex m = concrete(c, arg_ex(c, ca, 0));
    if (!m.ok) return m;
    if (m.v->dt != DT_BOOL || m.v->rank == 0) {
        diag_error(c->d, ca->pos[0]->loc, "nonzero() needs a bool array, not %s; compare first, e.g. nonzero(x != 0)",
                   tname(c->a, m.v->dt, m.v->rank));
        return ex_bad();
    }
    /* flat indices: compact iota(size) by the mask flattened */
    Val *mask = m.v;
    if (mask->rank > 1) {
        Val *r = mk(c, OP_RESHAPE, DT_BOOL, 1, 2, call->loc);
        r->args[0] = mask;
        r->args[1] = mk_i64(c, -1, call->loc);
        mask = r;
    }
    Val *n = count_of(c, m.v, AXIS_ALL, call->loc);
    Val *io = mk1(c, OP_IOTA, DT_I64, 1, n, call->loc);
    return make_compact(c, io, mask, call->loc, ca->pos[0]->loc);
}

static Ex builtin_struct(Ctx *c, Node *call, CallArgs *ca, const char *g) {
    Loc loc = call->loc;
    if (strcmp(g, "len") == 0) {
        if (!want_args(c, call, ca, 1, 1) || !named_check(c, ca, g)) return ex_bad();
        Ex x = concrete(c, arg_ex(c, ca, 0));
        if (!x.ok) return x;
        if (x.v->rank == 0) {
            diag_error(c->d, loc, "len() of a scalar");
            return ex_bad();
        }
        if (x.v->op == OP_COMPACT) return ex_val(compact_count(c, x.v, loc)); /* rule6 */
        Val *d = mk1(c, OP_DIM, DT_I64, 0, x.v, loc);
        d->axis = 0;
        return ex_val(d);
    }
    if (strcmp(g, "reverse") == 0) {
        if (!want_args(c, call, ca, 1, 1) || !named_check(c, ca, g)) return ex_bad();
        Ex x = concrete(c, arg_ex(c, ca, 0));
        if (!x.ok) return x;
        if (x.v->rank == 0) {
            diag_error(c->d, loc, "reverse() needs an array, not a scalar");
            return ex_bad();
        }
        return ex_val(mk1(c, OP_REVERSE, x.v->dt, x.v->rank, x.v, loc));
    }
    if (strcmp(g, "concat") == 0) {
        int axis = 0;
        Ex xs[32];
        Node *nodes[32];
        Node *an;
        if (!lower_unified(c, ca, xs, nodes, loc, "concat", &an)) return ex_bad();
        int rank = xs[0].v->rank;
        for (int i = 0; i < ca->npos; i++) {
            if (xs[i].v->rank == 0) {
                diag_error(c->d, ca->pos[i]->loc, "concat() joins arrays, and this is a scalar; "
                           "make it an array with reshape(x, 1)");
                return ex_bad();
            }
            if (xs[i].v->rank != rank) {
                diag_error(c->d, ca->pos[i]->loc, "concat() needs arrays of the same rank (got %s and %s)",
                           tname(c->a, xs[0].v->dt, rank), tname(c->a, xs[i].v->dt, xs[i].v->rank));
                return ex_bad();
            }
        }
        if (!axis_of(c, an, rank, &axis, "concat", "array")) return ex_bad();
        Val *v = mk(c, OP_CONCAT, xs[0].v->dt, rank, ca->npos, loc);
        for (int i = 0; i < ca->npos; i++) v->args[i] = xs[i].v;
        v->axis = axis;
        return ex_val(v);
    }
    if (strcmp(g, "pad") == 0) return builtin_pad(c, call, ca);
    if (strcmp(g, "roll") == 0) return builtin_roll(c, call, ca);
    if (strcmp(g, "stack") == 0) return builtin_stack(c, call, ca);
    if (strcmp(g, "reshape") == 0) {
        if (!named_check(c, ca, g)) return ex_bad();
        if (ca->npos < 2 || ca->npos - 1 > MAXRANK) {
            diag_error(c->d, loc, "reshape(x, sizes...) takes an array and 1 to %d sizes", MAXRANK);
            return ex_bad();
        }
        Ex x = concrete(c, arg_ex(c, ca, 0));
        if (!x.ok) return x;
        int nd = ca->npos - 1;
        Val *v = mk(c, OP_RESHAPE, x.v->dt, nd, nd + 1, loc);
        v->args[0] = x.v;
        for (int i = 0; i < nd; i++) {
            v->args[1 + i] = as_i64(c, arg_ex(c, ca, 1 + i), ca->pos[1 + i]->loc, "a size");
            if (!v->args[1 + i]) return ex_bad();
        }
        return ex_val(v);
    }
    if (strcmp(g, "transpose") == 0) {
        if (!named_check(c, ca, g)) return ex_bad();
        if (ca->npos < 1) return want_args(c, call, ca, 1, 1), ex_bad();
        Ex x = concrete(c, arg_ex(c, ca, 0));
        if (!x.ok) return x;
        int r = x.v->rank;
        /* A scalar is its own transpose (NumPy: np.transpose(6) is 6). */
        if (r == 0 && ca->npos == 1) return x;
        Val *v = mk1(c, OP_TRANSPOSE, x.v->dt, r, x.v, loc);
        if (ca->npos == 1) {
            for (int i = 0; i < r; i++) v->perm[i] = r - 1 - i;
        } else {
            if (ca->npos - 1 != r) {
                diag_error(c->d, loc, "transpose() of a %d-D array needs %d axes, got %d", r, r, ca->npos - 1);
                return ex_bad();
            }
            int seen = 0;
            for (int i = 0; i < r; i++) {
                int64_t ax;
                if (!const_int(c, ca->pos[1 + i], &ax, "an axis")) return ex_bad();
                if (ax < 0) ax += r;
                if (ax < 0 || ax >= r || (seen & (1 << ax))) {
                    diag_error(c->d, ca->pos[1 + i]->loc, "transpose() axes must be a permutation of 0..%d", r - 1);
                    return ex_bad();
                }
                seen |= 1 << ax;
                v->perm[i] = (int)ax;
            }
        }
        return ex_val(v);
    }
    if (strcmp(g, "dot") == 0) {
        /* tf32=true: an f32 matrix product may use TF32 tensor cores (OP_MATMUL's
           exclusive); a vector product is exact f32 either way */
        Node *tn = named_get(ca, "tf32");
        bool tf32 = false;
        if (!want_args(c, call, ca, 2, 2) || !named_check(c, ca, g)) return ex_bad();
        if (tn && !const_bool(c, tn, &tf32, "tf32=")) return ex_bad();
        Ex xs[2] = {arg_ex(c, ca, 0), arg_ex(c, ca, 1)};
        Node *nodes[2] = {ca->pos[0], ca->pos[1]};
        if (!xs[0].ok || !xs[1].ok) return ex_bad();
        Ex r = lower_dot(c, xs, nodes, loc, "dot()");
        if (r.ok && tf32 && r.v->dt != DT_F32) {
            diag_error(c->d, tn->loc, "tf32=true is for f32 products; these are %s (drop tf32=)",
                       dtype_info[r.v->dt].name);
            return ex_bad();
        }
        if (r.ok && r.v->op == OP_MATMUL) r.v->exclusive = tf32;
        return r;
    }
    if (strcmp(g, "filter") == 0) return builtin_filter(c, call, ca);
    if (strcmp(g, "nonzero") == 0) return builtin_nonzero(c, call, ca);
    if (strcmp(g, "partition") == 0) return builtin_partition(c, call, ca);
    if (strcmp(g, "sort") == 0 || strcmp(g, "argsort") == 0) return builtin_sort(c, call, ca, g[0] == 'a');
    if (strcmp(g, "searchsorted") == 0) return builtin_searchsorted(c, call, ca);
    if (strcmp(g, "sort_by_key") == 0) return builtin_sort_by_key(c, call, ca);
    if (strcmp(g, "unique") == 0) return builtin_unique(c, call, ca);
    if (strcmp(g, "top_k") == 0) return builtin_top_k(c, call, ca);
    die("unknown structural builtin %s", g);
}

/* ---- scatter and histograms (rule 6) --------------------------------------------------- */

static Val *mk3(Ctx *c, OpKind op, DType dt, int rank, Val *a0, Val *a1, Val *a2, Loc loc) {
    Val *v = mk(c, op, dt, rank, 3, loc);
    v->args[0] = a0;
    v->args[1] = a1;
    v->args[2] = a2;
    return v;
}

/* An elementwise op of already typed operands: the rank is the widest operand's. */
static Val *ew(Ctx *c, OpKind op, DType dt, Val *a, Val *b, Val *cc, Loc loc) {
    int n = cc ? 3 : b ? 2 : 1, r = a->rank;
    if (b && b->rank > r) r = b->rank;
    if (cc && cc->rank > r) r = cc->rank;
    Val *v = mk(c, op, dt, r, n, loc);
    v->args[0] = a;
    if (b) v->args[1] = b;
    if (cc) v->args[2] = cc;
    return v;
}

static Val *cast_to(Ctx *c, Val *x, DType dt, Loc loc) {
    return x->dt == dt ? x : mk1(c, OP_CAST, dt, x->rank, x, loc);
}

static Val *mk_f64(Ctx *c, double x, Loc loc) {
    Val *v = mk(c, OP_CONST, DT_F64, 0, 0, loc);
    v->c.f = x;
    return v;
}

/* A 1-D array argument of a scatter or histogram builtin. */
static Ex hist_array(Ctx *c, CallArgs *ca, int i, const char *fname, const char *what) {
    Ex e = concrete(c, arg_ex(c, ca, i));
    if (!e.ok) return e;
    if (e.v->rank != 1) {
        diag_error(c->d, ca->pos[i]->loc, "%s() takes %s as a 1-D array, not %s", fname, what,
                   tname(c->a, e.v->dt, e.v->rank));
        return ex_bad();
    }
    return e;
}

static Ex hist_index(Ctx *c, CallArgs *ca, int i, const char *fname) {
    Ex e = hist_array(c, ca, i, fname, "the indices");
    if (e.ok && e.v->dt != DT_I32 && e.v->dt != DT_I64) {
        diag_error(c->d, ca->pos[i]->loc, "%s() takes i32 or i64 indices, not %s; convert with i64(...)", fname,
                   dtype_info[e.v->dt].name);
        return ex_bad();
    }
    return e;
}

/* histogram()'s bin of each x, or -1 where x is outside [lo, hi] or NaN: NumPy's rule.
   The edges are linspace(lo, hi, nbins + 1) computed in f64 and rounded to x's type (a
   range lo == hi widened by 0.5 each way); x falls in the last bin whose edge is <= x
   (the last bin closed), which is where np.histogram puts it (its guess from the scale
   moved by one where it disagrees with the edges). One OP_HBIN of x and host scalars:
   the guess in x's type, the edges in f64 as NumPy's (kernels/ops.h cuk_hbin_*; a hist
   kernel keeps them in shared memory, compiler/emit_cuda.c emit_hist). */
static Val *hist_bins(Ctx *c, Val *x, Val *lo, Val *hi, Val *n, Loc loc) {
    DType T = x->dt, D = DT_F64;
    Val *lod = cast_to(c, lo, D, loc), *hid = cast_to(c, hi, D, loc);
    Val *eq = ew(c, OP_EQ, DT_BOOL, lod, hid, NULL, loc);
    Val *lo2 = ew(c, OP_SELECT, D, eq, ew(c, OP_SUB, D, lod, mk_f64(c, 0.5, loc), NULL, loc), lod, loc);
    Val *hi2 = ew(c, OP_SELECT, D, eq, ew(c, OP_ADD, D, hid, mk_f64(c, 0.5, loc), NULL, loc), hid, loc);
    Val *nd = cast_to(c, n, D, loc);
    Val *width = ew(c, OP_SUB, D, hi2, lo2, NULL, loc);
    Val *v = mk(c, OP_HBIN, DT_I64, x->rank, 7, loc);
    v->args[0] = x;
    v->args[1] = n;
    v->args[2] = lo2;
    v->args[3] = ew(c, OP_DIV, D, width, nd, NULL, loc); /* linspace's step */
    v->args[4] = cast_to(c, lo2, T, loc);
    v->args[5] = cast_to(c, hi2, T, loc);
    v->args[6] = cast_to(c, ew(c, OP_DIV, D, nd, width, NULL, loc), T, loc); /* the guess's scale */
    return v;
}

/* scatter(dest, idx, vals), reduce_by_index(dest, f, idx, vals), bincount(idx, nbins),
   histogram(x, nbins, lo, hi): one OP_SCATTER or OP_HIST each (docs/language.md). */
static Ex builtin_hist(Ctx *c, Node *call, CallArgs *ca, const char *g) {
    Loc loc = call->loc;
    if (strcmp(g, "bincount") == 0 || strcmp(g, "histogram") == 0) {
        bool hist = g[0] == 'h';
        if (!want_args(c, call, ca, hist ? 4 : 2, hist ? 4 : 2) || !named_check(c, ca, g)) return ex_bad();
        Ex x = hist ? hist_array(c, ca, 0, g, "the values") : hist_index(c, ca, 0, g);
        if (!x.ok) return x;
        Val *n = as_i64(c, arg_ex(c, ca, 1), ca->pos[1]->loc, arena_printf(c->a, "the number of bins of %s()", g));
        if (!n) return ex_bad();
        Val *zero = mk_i64(c, 0, loc), *one = mk_i64(c, 1, loc);
        Val *dest = mk2(c, OP_FULL, DT_I64, 1, zero, n, loc);
        if (!hist) {
            Val *v = mk3(c, OP_HIST, DT_I64, 1, dest, x.v, one, loc);
            v->red = RED_SUM;
            return ex_val(v);
        }
        if (!is_float(x.v->dt)) {
            diag_error(c->d, ca->pos[0]->loc, "histogram() takes float values (f16, bf16, f32, f64), not %s; convert with f64(...)",
                       dtype_info[x.v->dt].name);
            return ex_bad();
        }
        Ex lo = coerce(c, arg_ex(c, ca, 2), x.v->dt, ca->pos[2]->loc, "the low end of histogram()'s range");
        if (!lo.ok) return lo;
        Ex hi = coerce(c, arg_ex(c, ca, 3), x.v->dt, ca->pos[3]->loc, "the high end of histogram()'s range");
        if (!hi.ok) return hi;
        if (lo.v->rank || hi.v->rank) {
            diag_error(c->d, ca->pos[lo.v->rank ? 2 : 3]->loc, "histogram() takes a scalar range lo, hi");
            return ex_bad();
        }
        Val *lod = cast_to(c, lo.v, DT_F64, loc), *hid = cast_to(c, hi.v, DT_F64, loc);
        Val *fin = ew(c, OP_LAND, DT_BOOL, ew(c, OP_NOT, DT_BOOL, ew(c, OP_ISINF, DT_BOOL, lod, NULL, NULL, loc), NULL, NULL, loc),
                      ew(c, OP_NOT, DT_BOOL, ew(c, OP_ISINF, DT_BOOL, hid, NULL, NULL, loc), NULL, NULL, loc), NULL, loc);
        Val *ok = cast_to(c, ew(c, OP_LAND, DT_BOOL, ew(c, OP_LE, DT_BOOL, lod, hid, NULL, loc), fin, NULL, loc), DT_I64, loc);
        Val *v = mk(c, OP_HIST, DT_I64, 1, 4, loc);
        v->args[0] = dest;
        v->args[1] = hist_bins(c, x.v, lo.v, hi.v, n, loc);
        v->args[2] = one;
        v->args[3] = ok;
        v->red = RED_SUM;
        return ex_val(v);
    }
    bool scat = g[0] == 's';
    if (!want_args(c, call, ca, scat ? 3 : 4, scat ? 3 : 4)) return ex_bad();
    bool det = false;
    if (!scat) {
        Node *dn = named_get(ca, "deterministic");
        if (dn && !const_bool(c, dn, &det, "deterministic=")) return ex_bad();
    }
    if (!named_check(c, ca, g)) return ex_bad();
    int ii = scat ? 1 : 2;
    Ex dest = hist_array(c, ca, 0, g, "the destination");
    if (!dest.ok) return dest;
    DType dt = dest.v->dt;
    if (!scat && !is_numeric(dt)) {
        diag_error(c->d, ca->pos[0]->loc, "reduce_by_index() combines numbers, not %s", dtype_info[dt].name);
        return ex_bad();
    }
    Ex idx = hist_index(c, ca, ii, g);
    if (!idx.ok) return idx;
    Ex vals = coerce(c, arg_ex(c, ca, ii + 1), dt, ca->pos[ii + 1]->loc, arena_printf(c->a, "the values argument of %s()", g));
    if (!vals.ok) return vals;
    if (vals.v->rank > 1) {
        diag_error(c->d, ca->pos[ii + 1]->loc, "%s() takes its values as a 1-D array or a scalar, not %s", g,
                   tname(c->a, vals.v->dt, vals.v->rank));
        return ex_bad();
    }
    Val *v = mk3(c, scat ? OP_SCATTER : OP_HIST, dt, 1, dest.v, idx.v, vals.v, loc);
    if (scat) return ex_val(v);
    v->exclusive = det;
    Node *f = ca->pos[1];
    static const struct {
        const char *name;
        RedOp red;
    } named[] = {{"add", RED_SUM}, {"mul", RED_PROD}, {"min", RED_MIN}, {"max", RED_MAX}};
    v->red = RED_LAMBDA;
    for (size_t k = 0; f->kind == N_IDENT && k < sizeof named / sizeof named[0]; k++)
        if (strcmp(f->name, named[k].name) == 0) v->red = named[k].red;
    if (v->red != RED_SUM && !no_complex(c, dest.v, loc, "reduce_by_index() with another combination than add", v->red == RED_MIN || v->red == RED_MAX)) return ex_bad();
    if (v->red == RED_LAMBDA) {
        v->lam = lower_combine(c, f, dt, g);
        if (!v->lam) return ex_bad();
    }
    return ex_val(v);
}
static Ex map_apply(Ctx *c, Node *call, Node *f, Ex *args, int n, const char *who);

static Ex builtin_map(Ctx *c, Node *call, CallArgs *ca) {
    if (!named_check(c, ca, "map")) return ex_bad();
    if (ca->npos < 2) {
        diag_error(c->d, call->loc, "map(f, xs...) needs a function and at least one array");
        return ex_bad();
    }
    Node *f = ca->pos[0];
    int n = ca->npos - 1;
    Ex args[32];
    for (int i = 0; i < n; i++) {
        args[i] = lower_expr(c, ca->pos[1 + i]);
        if (!args[i].ok) return ex_bad();
    }
    return map_apply(c, call, f, args, n, "map()");
}

/* Applies f (a function name or a lambda) elementwise to args: map's body, and
   filter's predicate. */
static Ex map_apply(Ctx *c, Node *call, Node *f, Ex *args, int n, const char *who) {
    if (f->kind == N_IDENT) {
        Node *decl = find_decl(c, f->name);
        if (!decl) {
            diag_error(c->d, f->loc, "%s: unknown function '%s'", who, f->name);
            return ex_bad();
        }
        return call_user(c, decl, call, args, n);
    }
    if (f->kind != N_LAMBDA) {
        diag_error(c->d, f->loc, "%s needs a function name or a lambda |x| ... as its first argument", who);
        return ex_bad();
    }
    int np = 0;
    for (Node *p = f->params; p; p = p->next) np++;
    if (np != n) {
        diag_error(c->d, f->loc, "the lambda takes %d parameter%s but %s passes %d array%s", np, np == 1 ? "" : "s", who,
                   n, n == 1 ? "" : "s");
        return ex_bad();
    }
    scope_push(c, false);
    int i = 0;
    for (Node *p = f->params; p; p = p->next, i++) {
        Ex a = concrete(c, args[i]);
        if (!a.ok) return scope_pop(c), ex_bad();
        if (p->type) {
            DType want;
            if (!dtype_from_name(p->type->name, &want) || p->type->dims) {
                diag_error(c->d, p->type->loc, "lambda parameters take a scalar type such as f32");
                return scope_pop(c), ex_bad();
            }
            if (want != a.v->dt) {
                diag_error(c->d, p->loc, "lambda parameter '%s' is %s but %s passes %s", p->name,
                           dtype_info[want].name, who, dtype_info[a.v->dt].name);
                return scope_pop(c), ex_bad();
            }
        }
        sym_val(c, p->name, p->loc, a.v);
    }
    const char *saved = c->map_fn;
    c->map_fn = "the lambda";
    Ex r = concrete(c, lower_expr(c, f->a));
    c->map_fn = saved;
    scope_pop(c);
    return r;
}

static Val *lower_combine(Ctx *c, Node *f, DType dt, const char *fname) {
    Node *params = NULL, *body = NULL;
    Node *decl = NULL;
    if (f->kind == N_LAMBDA) {
        params = f->params;
        body = f->a;
    } else if (f->kind == N_IDENT) {
        decl = find_decl(c, f->name);
        if (!decl) {
            diag_error(c->d, f->loc, "%s(): unknown function '%s'", fname, f->name);
            return NULL;
        }
        params = decl->params;
        if (decl->a) body = decl->a;
        else if (decl->body && decl->body->kind == N_RETURN && !decl->body->next) body = decl->body->a;
        if (!body) {
            diag_error(c->d, f->loc, "%s(): '%s' must have an expression body to be used as a combine function", fname, f->name);
            return NULL;
        }
    } else {
        diag_error(c->d, f->loc, "%s() needs a lambda |a, b| ... or a function name as its first argument", fname);
        return NULL;
    }
    int np = 0;
    for (Node *p = params; p; p = p->next) np++;
    if (np != 2) {
        diag_error(c->d, f->loc, "the combine function of %s() must take 2 parameters, not %d", fname, np);
        return NULL;
    }
    Scope *saved_scope = c->scope;
    if (decl) scope_push(c, true);
    else scope_push(c, false);
    int i = 0;
    for (Node *p = params; p; p = p->next, i++) {
        if (p->type) {
            DType want;
            if (!dtype_from_name(p->type->name, &want) || p->type->dims) {
                if (!(decl && p->type->name && strlen(p->type->name) == 1)) {
                    diag_error(c->d, p->type->loc, "combine function parameters must be scalars");
                    c->scope = saved_scope;
                    return NULL;
                }
            } else if (want != dt) {
                diag_error(c->d, p->loc, "parameter '%s' is %s but %s() combines %s values", p->name,
                           dtype_info[want].name, fname, dtype_info[dt].name);
                c->scope = saved_scope;
                return NULL;
            }
        }
        Val *arg = mk(c, OP_ARG, dt, 0, 0, p->loc);
        arg->slot = i;
        sym_val(c, p->name, p->loc, arg);
    }
    bool saved_lam = c->in_lambda;
    c->in_lambda = true;
    Ex r = lower_expr(c, body);
    c->in_lambda = saved_lam;
    c->scope = saved_scope;
    if (!r.ok) return NULL;
    r = coerce(c, r, dt, body->loc, "the combine function's result");
    if (!r.ok) return NULL;
    if (r.v->rank != 0) {
        diag_error(c->d, body->loc, "the combine function of %s() must return a scalar", fname);
        return NULL;
    }
    return r.v;
}

static Ex lower_call(Ctx *c, Node *n) {
    const char *g = n->name;
    Node *decl = find_decl(c, g);
    /* User functions shadow builtins; stdlib ones don't. */
    bool user = false;
    for (int i = 0; i < c->nuser; i++)
        if (c->decls[i] == decl) user = true;
    CallArgs ca;
    if (!split_args(c, n, &ca)) return ex_bad();
    if (!user) {
        DType dt;
        if (dtype_from_name(g, &dt)) return builtin_cast(c, n, &ca, dt);
        if (c->tv)
            for (int i = 0; i < c->tv->n; i++)
                if (strcmp(c->tv->name[i], g) == 0) return builtin_cast(c, n, &ca, c->tv->dt[i]);
        Builtin b;
        bool in_map = c->map_fn != NULL;
        if (builtin_find(g, &b)) switch (b.kind) {
            case B_EW: return builtin_ew(c, n, &ca, (OpKind)b.op);
            case B_REDUCE:
                if (in_map) goto not_elementwise;
                return builtin_reduce(c, n, &ca, (RedOp)b.op);
            case B_SCAN:
                if (in_map) goto not_elementwise;
                return builtin_scan(c, n, &ca, (RedOp)b.op);
            case B_MEAN: return in_map ? ex_bad() : builtin_mean(c, n, &ca);
            case B_GENERIC:
                if (in_map) goto not_elementwise;
                return builtin_generic_reduce(c, n, &ca, g[0] == 's');
            case B_MAP: return builtin_map(c, n, &ca);
            case B_HIST:
                if (in_map) goto not_elementwise;
                return builtin_hist(c, n, &ca, g);
            case B_GEN:
                if (in_map) goto not_elementwise;
                return builtin_generator(c, n, &ca, g);
            case B_STRUCT:
                if (in_map) goto not_elementwise;
                return builtin_struct(c, n, &ca, g);
            case B_STMT:
                diag_error(c->d, n->loc, "%s() is a statement: write it on its own line, e.g. %s(...);", g, g);
                return ex_bad();
            case B_LOAD:
                diag_error(c->d, n->loc, "load() must initialise a let with a type, e.g. let x: f32[n] = load(\"x.npy\");");
                return ex_bad();
            case B_COMPLEX: return builtin_complex(c, n, &ca, g);
            }
    }
    if (!decl && sym_find(c, g)) {
        diag_error(c->d, n->loc, "'%s' is a variable, not a function, so it cannot be called", g);
        return ex_bad();
    }
    if (!decl && instead_advice(c, n->loc, g)) return ex_bad();
    if (!decl) {
        const char *s = suggest_name(c, g, true);
        if (s) diag_error(c->d, n->loc, "unknown function '%s'; did you mean '%s'?", g, s);
        else diag_error(c->d, n->loc, "unknown function '%s'", g);
        return ex_bad();
    }
    if (!named_check(c, &ca, g)) return ex_bad();
    Ex args[32];
    for (int i = 0; i < ca.npos; i++) {
        args[i] = lower_expr(c, ca.pos[i]);
        if (!args[i].ok) return ex_bad();
    }
    return call_user(c, decl, n, args, ca.npos);
not_elementwise:
    diag_error(c->d, n->loc, "%s is applied elementwise, so it may only use elementwise operations; %s() is not one",
               c->map_fn, g);
    return ex_bad();
}

/* ---- user function calls ------------------------------------------------------------- */

bool sema_is_typevar(const char *name) {
    DType dt;
    return name && !dtype_from_name(name, &dt) && name[0] >= 'A' && name[0] <= 'Z' && name[1] == 0;
}

/* True when a function's body is straight-line (lets and one final return, or an
   expression body), so calls inline into the caller's expression. */
static bool inlinable(Node *decl) {
    if (decl->a) return true;
    if (!decl->type) return false;
    for (Node *s = decl->body; s; s = s->next) {
        if (s->kind == N_LET || (s->kind == N_LETTUPLE && !s->ival)) continue;
        if (s->kind == N_RETURN && !s->next && s->a) return true;
        return false;
    }
    return false;
}

static bool type_dims(Node *t, int *rank) {
    int r = 0;
    for (Node *d = t ? t->dims : NULL; d; d = d->next) r++;
    *rank = r;
    return r <= MAXRANK;
}

static Fn *lower_fn(Ctx *c, Node *decl);

static bool is_generic(Node *decl) {
    for (Node *p = decl->params; p; p = p->next)
        if (sema_is_typevar(p->type->name)) return true;
    return decl->type && sema_is_typevar(decl->type->name);
}

static int decl_index(Ctx *c, Node *decl) {
    for (int i = 0; i < c->ndecls; i++)
        if (c->decls[i] == decl) return i;
    die("declaration not in the table");
}

static bool is_generic(Node *decl);

/* ---- declared result sizes -------------------------------------------------------------
   A function's declared result sizes are checked when it returns (DESIGN.md part 2,
   "Sizes"): each return value is wrapped in an OP_CHECKDIM per axis whose size is not
   already known to match. A size is known to match when a small symbolic evaluation of
   the value's shape gives the declared size: saxpy's `a * x + y` has x's size, which is n
   (and y's, as the check at entry made sure). Such results carry no check, so the plan
   and the GPU's direct call path stay as they were. */

typedef enum { SZ_UNKNOWN, SZ_CONST, SZ_DIM, SZ_SCALAR } SizeKind;

/* A size, symbolically: a constant, the size of an array value along an axis, or the
   value of an i64 scalar. */
typedef struct Size {
    SizeKind k;
    const Val *v; /* SZ_DIM: the array; SZ_SCALAR: the scalar */
    int axis;
    int64_t c;
} Size;

typedef struct SizeFact {
    Size a, b;
} SizeFact;

/* Two reads of one immutable slot are one value. */
static bool same_value(Ctx *c, const Val *a, const Val *b) {
    if (a == b) return true;
    return a->op == OP_SLOT && b->op == OP_SLOT && a->slot == b->slot && a->slot < c->fn->nslots &&
           !c->fn->slots[a->slot].mutable_;
}

static bool size_eq(Ctx *c, Size a, Size b) {
    if (a.k != b.k || a.k == SZ_UNKNOWN) return false;
    if (a.k == SZ_CONST) return a.c == b.c;
    return a.axis == b.axis && same_value(c, a.v, b.v);
}

static Size array_size(Ctx *c, const Val *v, int axis, int depth);
static bool size_same(Ctx *c, Size a, Size b);

/* The sizes found during one question (IR shares values, so without it a chain of
   `let b = a + a;` takes 2^length steps). */
typedef struct SizeMemo {
    const Val **v;
    int *axis;
    Size *size;
    int cap, n;
} SizeMemo;

static SizeMemo *memo_begin(Ctx *c) {
    SizeMemo *m = calloc(1, sizeof *m);
    if (!m) die("out of memory");
    c->szmemo = m;
    return m;
}

static void memo_end(Ctx *c, SizeMemo *m) {
    free(m->v);
    free(m->axis);
    free(m->size);
    free(m);
    c->szmemo = NULL;
}

static size_t memo_slot(const SizeMemo *m, const Val *v, int axis) {
    size_t h = ((size_t)(uintptr_t)v >> 4) * 31u + (size_t)axis;
    for (size_t i = h & (size_t)(m->cap - 1);; i = (i + 1) & (size_t)(m->cap - 1))
        if (!m->v[i] || (m->v[i] == v && m->axis[i] == axis)) return i;
}

static void memo_put(SizeMemo *m, const Val *v, int axis, Size s) {
    if (2 * (m->n + 1) > m->cap) {
        SizeMemo old = *m;
        m->cap = old.cap ? 2 * old.cap : 64;
        m->v = calloc((size_t)m->cap, sizeof *m->v);
        m->axis = calloc((size_t)m->cap, sizeof *m->axis);
        m->size = calloc((size_t)m->cap, sizeof *m->size);
        if (!m->v || !m->axis || !m->size) die("out of memory");
        m->n = 0;
        for (int i = 0; i < old.cap; i++)
            if (old.v[i]) memo_put(m, old.v[i], old.axis[i], old.size[i]);
        free(old.v);
        free(old.axis);
        free(old.size);
    }
    size_t i = memo_slot(m, v, axis);
    if (!m->v[i]) m->n++;
    m->v[i] = v, m->axis[i] = axis, m->size[i] = s;
}

static const Val *unchecked(const Val *v) {
    while (v->op == OP_CHECKDIM) v = v->args[0];
    return v;
}

static Size scalar_size(Ctx *c, const Val *s, int depth) {
    if (!s || depth > 2 * NEST_LIMIT) return (Size){SZ_UNKNOWN, NULL, 0, 0};
    if (s->op == OP_CONST && is_int(s->dt)) return (Size){SZ_CONST, NULL, 0, s->c.i};
    if (s->op == OP_DIM) return array_size(c, s->args[0], s->axis, depth + 1);
    return (Size){SZ_SCALAR, s, 0, 0};
}

static Size array_size_of(Ctx *c, const Val *v, int axis, int depth);

/* The size of array v along axis, as far as it follows from v's operands (the rules are
   the backends' shape rules: exec/cpu/eval.c, exec/gpu/exec.c shape_of). */
static Size array_size(Ctx *c, const Val *v, int axis, int depth) {
    SizeMemo *m = c->szmemo;
    if (m && m->cap) {
        size_t i = memo_slot(m, v, axis);
        if (m->v[i]) return m->size[i];
    }
    Size s = array_size_of(c, v, axis, depth);
    if (m) memo_put(m, v, axis, s);
    return s;
}

static Size array_size_of(Ctx *c, const Val *v, int axis, int depth) {
    const Size unknown = {SZ_UNKNOWN, NULL, 0, 0}, one = {SZ_CONST, NULL, 0, 1};
    if (depth > 2 * NEST_LIMIT) return unknown; /* deeper IR is an error anyway */
    if (op_is_ew(v->op)) {
        /* Broadcasting: operands of size 1 stretch; the others must agree. */
        Size k = one;
        for (int i = 0; i < v->nargs; i++) {
            const Val *x = v->args[i];
            int ax = axis - (v->rank - x->rank);
            if (ax < 0) continue;
            Size kx = array_size(c, x, ax, depth + 1);
            if (kx.k == SZ_UNKNOWN) return unknown;
            if (kx.k == SZ_CONST && kx.c == 1) continue;
            if (k.k == SZ_CONST && k.c == 1) k = kx;
            else if (!size_same(c, k, kx)) return unknown;
        }
        return k;
    }
    const Val *x = v->nargs ? v->args[0] : NULL;
    switch (v->op) {
    case OP_CHECKDIM: {
        /* Past the check, this axis has the size it was checked against. */
        const Val *d = v->args[1];
        if (d && d->op == OP_DIM && d->axis == axis && unchecked(d->args[0]) == unchecked(x)) {
            Size s = scalar_size(c, v->args[2], depth + 1);
            if (s.k != SZ_UNKNOWN) return s;
        }
        return array_size(c, x, axis, depth + 1);
    }
    case OP_IOTA: return scalar_size(c, v->args[0], depth + 1);
    case OP_LINSPACE: return scalar_size(c, v->args[2], depth + 1);
    case OP_FULL:
    case OP_RAND:
    case OP_RANDN: return scalar_size(c, v->args[1 + axis], depth + 1);
    case OP_REDUCE:
        if (red_segs(v)) return unknown; /* one value per segment */
        if (v->axis == AXIS_ALL) return one; /* keepdims: every axis has size 1 */
        if (v->keepdims) return axis == v->axis ? one : array_size(c, x, axis, depth + 1);
        return array_size(c, x, axis < v->axis ? axis : axis + 1, depth + 1);
    case OP_SCAN: return x->rank == v->rank ? array_size(c, x, axis, depth + 1) : unknown;
    case OP_REVERSE:
    case OP_SORT:
    case OP_SORTKV:
    case OP_ARGSORT: return array_size(c, x, axis, depth + 1);
    case OP_SEARCHSORTED: return array_size(c, v->args[1], axis, depth + 1);
    case OP_TOPK: return axis < v->rank - 1 ? array_size(c, x, axis, depth + 1) : scalar_size(c, v->args[1], depth + 1);
    case OP_TRANSPOSE: return array_size(c, x, v->perm[axis], depth + 1);
    case OP_RESHAPE: {
        /* A size given as a constant or another array's size (never -1). */
        Size s = scalar_size(c, v->args[1 + axis], depth + 1);
        return (s.k == SZ_CONST && s.c >= 0) || s.k == SZ_DIM ? s : unknown;
    }
    case OP_SLICE: {
        /* Only a whole axis (`:`) keeps its size. */
        int out = -1;
        for (int k = 0; k < x->rank; k++) {
            if (v->slmode[k] == SL_INDEX || ++out != axis) continue;
            if (v->args[1 + 3 * k] || v->args[2 + 3 * k] || v->args[3 + 3 * k]) return unknown;
            return array_size(c, x, k, depth + 1);
        }
        return unknown;
    }
    case OP_GATHER: {
        const Val *idx = v->args[1];
        if (axis < idx->rank) return array_size(c, idx, axis, depth + 1);
        return array_size(c, x, axis - idx->rank + 1, depth + 1);
    }
    case OP_CONCAT: return axis == v->axis ? unknown : array_size(c, x, axis, depth + 1);
    case OP_PAD: {
        /* pad(x, 0) keeps the sizes; otherwise they are only known at run time. */
        Size w = scalar_size(c, v->args[1], depth + 1);
        return w.k == SZ_CONST && w.c == 0 ? array_size(c, x, axis, depth + 1) : unknown;
    }
    case OP_ROLL:
    case OP_SCATTER:
    case OP_HIST: return array_size(c, x, axis, depth + 1);
    case OP_STACK:
        if (axis == v->axis) return (Size){SZ_CONST, NULL, 0, v->nargs};
        return array_size(c, x, axis < v->axis ? axis : axis - 1, depth + 1);
    case OP_MATMUL: return axis == 0 ? array_size(c, x, 0, depth + 1) : array_size(c, v->args[1], 1, depth + 1);
    default: return (Size){SZ_DIM, v, axis, 0}; /* slots, loads, calls: sizes only known at run time */
    }
}

/* Records that the i64 scalars a and b are equal wherever the current body runs (the
   size checks at a function's entry, or at an inlined call on its result). */
static void fact_add(Ctx *c, const Val *a, const Val *b) {
    SizeMemo *m = memo_begin(c);
    Size sa = scalar_size(c, a, 0), sb = scalar_size(c, b, 0);
    memo_end(c, m);
    if (sa.k == SZ_UNKNOWN || sb.k == SZ_UNKNOWN) return;
    if (c->nfacts == c->capfacts) {
        int nc = c->capfacts ? 2 * c->capfacts : 16;
        SizeFact *nf = NEWN(c->a, SizeFact, nc);
        if (c->nfacts) memcpy(nf, c->facts, sizeof(SizeFact) * (size_t)c->nfacts);
        c->facts = nf;
        c->capfacts = nc;
    }
    c->facts[c->nfacts++] = (SizeFact){sa, sb};
}

/* Whether a and b are equal: directly, or through a chain of recorded facts. */
static bool size_same(Ctx *c, Size a, Size b) {
    if (a.k == SZ_UNKNOWN || b.k == SZ_UNKNOWN) return false;
    if (size_eq(c, a, b)) return true;
    if (!c->nfacts) return false;
    Size *reach = malloc(sizeof(Size) * (size_t)(c->nfacts + 1));
    if (!reach) die("out of memory");
    int n = 0;
    reach[n++] = a;
    bool found = false;
    for (bool grew = true; grew && !found;) {
        grew = false;
        for (int i = 0; i < c->nfacts && !found; i++) {
            const SizeFact *f = &c->facts[i];
            for (int side = 0; side < 2; side++) {
                Size from = side ? f->b : f->a, to = side ? f->a : f->b;
                bool has_from = false, has_to = false;
                for (int j = 0; j < n; j++) {
                    has_from |= size_eq(c, reach[j], from);
                    has_to |= size_eq(c, reach[j], to);
                }
                if (!has_from || has_to) continue;
                reach[n++] = to;
                grew = true;
                if (size_eq(c, to, b)) found = true;
                break;
            }
        }
    }
    free(reach);
    return found;
}

/* One declared result size as an i64 value, read in the scope of decl's parameters: an
   integer literal, a parameter's size variable, an i64 scalar parameter (like a size in a
   let's type), or +, - and * of them (check_type_sizes allowed nothing else). Constant
   operands fold, so `2 * 3` is the constant 6. NULL after an error (reported). */
static Val *size_val(Ctx *c, Node *decl, Node *d) {
    if (d->kind == N_INT) return mk_i64(c, d->ival, d->loc);
    if (d->kind == N_BINARY) {
        Val *l = size_val(c, decl, d->a);
        Val *r = l ? size_val(c, decl, d->b) : NULL;
        if (!r) return NULL;
        if (l->op == OP_CONST && r->op == OP_CONST) {
            /* wrapping, as i64 arithmetic does at run time */
            uint64_t x = (uint64_t)l->c.i, y = (uint64_t)r->c.i;
            uint64_t z = d->op == AOP_ADD ? x + y : d->op == AOP_SUB ? x - y : x * y;
            return mk_i64(c, (int64_t)z, d->loc);
        }
        return mk2(c, d->op == AOP_ADD ? OP_ADD : d->op == AOP_SUB ? OP_SUB : OP_MUL, DT_I64, 0, l, r, d->loc);
    }
    Sym *s = sym_find(c, d->name);
    if (!s) {
        diag_error(c->d, d->loc, "size '%s' in the result type of %s() is not the size of any parameter; "
                   "use a parameter's size variable or an integer", d->name, decl->name);
        return NULL;
    }
    if (s->dt != DT_I64 || s->rank != 0) {
        diag_error(c->d, d->loc, "size '%s' in the result type of %s() must be an integer, but '%s' is %s",
                   d->name, decl->name, d->name, tname(c->a, s->dt, s->rank));
        return NULL;
    }
    if (s->kind == SYM_VAL) return s->val;
    Val *v = mk(c, OP_SLOT, DT_I64, 0, 0, d->loc);
    v->slot = s->slot;
    return v;
}

/* The declared result sizes of decl, one per axis (NULL for `?`, which is not checked). */
static Val **result_dims(Ctx *c, Node *decl, Node *type) {
    int rank;
    type_dims(type, &rank);
    Val **dims = NEWN(c->a, Val *, rank + 1);
    int ax = 0;
    for (Node *d = type->dims; d; d = d->next, ax++) {
        if (d->kind == N_ANYSIZE) continue;
        dims[ax] = size_val(c, decl, d);
        if (!dims[ax]) return NULL;
        if (dims[ax]->op == OP_CONST && dims[ax]->c.i < 0) {
            diag_error(c->d, node_first_loc(d), "size '%s' in the result type of %s() is %lld: a size cannot be negative",
                       size_text(c->a, d), decl->name, (long long)dims[ax]->c.i);
            return NULL;
        }
    }
    return dims;
}

/* Sizes in types (DESIGN.md part 2, "Sizes"): in a result type, a size is an integer, a
   name, `?`, or +, - and * of integers and names (the names are looked up when the
   function is lowered, result_dims); everywhere else (parameters, lets, lambdas) only
   an integer or a name. Checked once per function, before anything is lowered, so a
   bad size is reported once, at its place. */
static bool result_size_ok(Ctx *c, Node *d) {
    switch (d->kind) {
    case N_INT:
    case N_IDENT:
    case N_ANYSIZE: return true; /* the grammar takes '?' only as a whole size */
    case N_BINARY:
        if (d->op == AOP_ADD || d->op == AOP_SUB || d->op == AOP_MUL)
            return result_size_ok(c, d->a) && result_size_ok(c, d->b);
        if (d->op == AOP_DIV || d->op == AOP_MOD) {
            diag_error(c->d, d->loc, "'%s' in a size: sizes are built with +, - and * only (a quotient need not "
                       "be whole); declare such a size '?'", ast_op_spelling[d->op]);
            return false;
        }
        break;
    case N_UNARY:
        if (d->op == AOP_NEG && d->a->kind == N_INT) {
            diag_error(c->d, d->loc, "a size cannot be negative");
            return false;
        }
        break;
    case N_FLOAT:
        diag_error(c->d, d->loc, "size %s is not an integer: sizes are integers", d->text ? d->text : "");
        return false;
    default: break;
    }
    diag_error(c->d, node_first_loc(d), "this is not a size: a size in a result type is an integer, a size variable, "
               "+, - and * of them (f32[n + 2], f32[n * m]), or ? for a size known only when the function runs");
    return false;
}

static bool type_sizes_ok(Ctx *c, Node *t, bool result) {
    bool ok = true;
    for (Node *d = t ? t->dims : NULL; d; d = d->next) {
        if (result) {
            ok &= result_size_ok(c, d);
        } else if (d->kind == N_ANYSIZE) {
            diag_error(c->d, d->loc, "'?' is allowed in result types only: here a size is a size variable or an "
                       "integer (f32[n])");
            ok = false;
        } else if (d->kind == N_BINARY || d->kind == N_UNARY) {
            diag_error(c->d, node_first_loc(d), "size expressions such as '%s' are allowed in result types only: "
                       "here a size is a size variable or an integer (f32[n])", size_text(c->a, d));
            ok = false;
        } else if (d->kind != N_INT && d->kind != N_IDENT) {
            diag_error(c->d, node_first_loc(d), "this is not a size: here a size is a size variable or an integer (f32[n])");
            ok = false;
        }
    }
    return ok;
}

/* Every type under n (lets, vars, lambda parameters) takes plain sizes only. The parser
   bounds the tree's height (NEST_LIMIT), so the recursion is bounded too. */
static bool list_sizes_ok(Ctx *c, Node *list);

static bool body_sizes_ok(Ctx *c, Node *n) {
    if (!n) return true;
    bool ok = true;
    if (n->type && n->type->kind == N_TYPE) ok &= type_sizes_ok(c, n->type, false);
    Node *one[4] = {n->a, n->b, n->c, n->els};
    for (int i = 0; i < 4; i++) ok &= body_sizes_ok(c, one[i]);
    ok &= list_sizes_ok(c, n->args); /* every part checked, for every message */
    ok &= list_sizes_ok(c, n->params);
    ok &= list_sizes_ok(c, n->body);
    return ok;
}

static bool list_sizes_ok(Ctx *c, Node *list) {
    bool ok = true;
    for (; list; list = list->next) ok &= body_sizes_ok(c, list);
    return ok;
}

static bool check_type_sizes(Ctx *c, Node *decl) {
    bool ok = true;
    if (decl->type && decl->type->kind == N_TUPLE)
        for (Node *t = decl->type->args; t; t = t->next) ok &= type_sizes_ok(c, t, true);
    else
        ok = type_sizes_ok(c, decl->type, true);
    for (Node *p = decl->params; p; p = p->next) ok &= type_sizes_ok(c, p->type, false);
    ok &= body_sizes_ok(c, decl->a);
    ok &= list_sizes_ok(c, decl->body);
    return ok;
}

/* Wraps r, a value decl returns, in a check per axis whose size is not known to be the
   declared one; a mismatch is a run-time error at loc naming the function, the axis and
   both sizes. */
static Val *check_result(Ctx *c, Node *decl, Node *type, Val *r, Val **dims, Loc loc, bool own) {
    if (!dims) return r;
    Val *out = r;
    int ax = 0;
    for (Node *d = type->dims; d; d = d->next, ax++) {
        if (!dims[ax]) continue; /* `?` */
        SizeMemo *m = memo_begin(c);
        Size got = array_size(c, r, ax, 0), want = scalar_size(c, dims[ax], 0);
        bool known = size_same(c, got, want);
        memo_end(c, m);
        if (known) continue;
        if (own && got.k == SZ_CONST && want.k == SZ_CONST) {
            /* wrong whatever the arguments: say so now (own: the function on its own,
               not a call inlined with particular arguments, which may never run) */
            const char *named = d->kind == N_INT ? "" : arena_printf(c->a, " '%s'", size_text(c->a, d));
            diag_error(c->d, loc, "%s() returns size %lld on axis %d, but its declared size%s is %lld", decl->name,
                       (long long)got.c, ax, named, (long long)want.c);
            return NULL;
        }
        Val *dim = mk1(c, OP_DIM, DT_I64, 0, r, loc);
        dim->axis = ax;
        const char *msg =
            d->kind == N_INT
                ? arena_printf(c->a, "%s(): the result has size %%lld on axis %d, but its declared size is %%lld",
                               decl->name, ax)
                : arena_printf(c->a, "%s(): the result has size %%lld on axis %d, but its declared size '%s' is %%lld",
                               decl->name, ax, size_text(c->a, d));
        out = mk_check(c, out, dim, dims[ax], msg, loc);
    }
    return out;
}

/* A size check of an inlined call: a == b, else the run-time error msg (two %lld). */
typedef struct SizeCheck {
    Val *a, *b;
    const char *msg;
} SizeCheck;

static void check_add(Ctx *c, SizeCheck **v, int *n, int *cap, Val *a, Val *b, const char *msg) {
    /* A check that cannot fail (the same array twice, equal constants) would only keep
       fusion from seeing through it. */
    SizeMemo *m = memo_begin(c);
    bool known = size_same(c, scalar_size(c, a, 0), scalar_size(c, b, 0));
    memo_end(c, m);
    if (known) return;
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        SizeCheck *nv = NEWN(c->a, SizeCheck, nc);
        if (*n) memcpy(nv, *v, sizeof(SizeCheck) * (size_t)*n);
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = (SizeCheck){a, b, msg};
}

/* One result r of an inlined call of decl, declared type t: converted to it, checked
   against its declared sizes (dims, NULL for none) and wrapped in the call's size checks
   (outermost, so they run first). */
static Ex inline_result(Ctx *c, Node *decl, Node *t, Ex r, TypeVars *tv, bool map, Node *call, int di, Val **dims,
                        Loc retloc, SizeCheck *checks, int nchecks) {
    int rk;
    type_dims(t, &rk);
    DType want = DT_VOID;
    const char *tn = t->name;
    if (sema_is_typevar(tn)) {
        for (int k = 0; k < tv->n; k++)
            if (strcmp(tv->name[k], tn) == 0) want = tv->dt[k];
        if (want == DT_VOID) {
            diag_error(c->d, t->loc, "type variable '%s' in the result type of %s() is not the type of "
                       "any parameter; use one of the parameters' types", tn, decl->name);
            c->decl_state[di] = 2;
            return ex_bad();
        }
    } else if (!dtype_from_name(tn, &want)) {
        diag_error(c->d, t->loc, "unknown type '%s'", tn);
        return ex_bad();
    }
    r = coerce(c, r, want, decl->loc, arena_printf(c->a, "the result of %s()", decl->name));
    if (r.ok && !map && r.v->rank != rk) {
        diag_error(c->d, call->loc, "%s() is declared to return %s but returns %s", decl->name,
                   tname(c->a, want, rk), tname(c->a, r.v->dt, r.v->rank));
        return ex_bad();
    }
    if (r.ok) r = concrete(c, r);
    if (!r.ok) return r;
    r.v = check_result(c, decl, t, r.v, dims, retloc, false);
    for (int k = 0; k < nchecks; k++) {
        r.v = mk_check(c, r.v, checks[k].a, checks[k].b, checks[k].msg, call->loc);
    }
    return r;
}

/* A function of scalars with control flow applied to arrays: an OP_SCALARCALL, run per
   element inside the kernel. Its body is checked once every function is lowered
   (check_scalar_calls), when recursion through functions not yet lowered shows. */
static Ex scalar_call(Ctx *c, Node *decl, Node *call, Ex *args, int nargs, bool generic) {
    if (generic) {
        diag_error(c->d, call->loc, "%s() has type variables and control flow, so it cannot be applied to arrays; "
                   "give its parameters concrete types", decl->name);
        return ex_bad();
    }
    if (!decl->type) {
        diag_error(c->d, call->loc, "%s() is applied elementwise to arrays but returns nothing; give it a result type",
                   decl->name);
        return ex_bad();
    }
    Fn *f = lower_fn(c, decl);
    if (!f) return ex_bad();
    if (f->ret_rank != 0) {
        diag_error(c->d, call->loc, "%s() is applied elementwise to arrays, so it must return a scalar, not %s",
                   decl->name, tname(c->a, f->ret_dt, f->ret_rank));
        return ex_bad();
    }
    int rank = 0;
    for (int k = 0; k < nargs; k++)
        if (args[k].v->rank > rank) rank = args[k].v->rank;
    Val *v = mk(c, OP_SCALARCALL, f->ret_dt, rank, nargs, call->loc);
    for (int k = 0; k < nargs; k++) v->args[k] = args[k].v;
    v->fn = f;
    ScalarCalls *sc = c->scalls;
    if (sc->n == sc->cap) {
        int cap = sc->cap ? sc->cap * 2 : 8;
        Val **nv = NEWN(c->a, Val *, cap);
        if (sc->n) memcpy(nv, sc->v, sizeof(Val *) * (size_t)sc->n);
        sc->v = nv;
        sc->cap = cap;
    }
    sc->v[sc->n++] = v;
    return ex_val(v);
}

static Ex call_user(Ctx *c, Node *decl, Node *call, Ex *args, int nargs) {

    /* Check the callee on its own first, so errors in its body are reported once, at
       their place, and not again at every call that inlines it. */
    int di = decl_index(c, decl);
    if (!is_generic(decl) && c->decl_state[di] == 0) {
        int before = c->d->errors;
        lower_fn(c, decl);
        c->decl_state[di] = c->d->errors > before ? 2 : 1;
    }
    if (c->decl_state[di] == 2) return ex_bad();
    int np = 0;
    for (Node *p = decl->params; p; p = p->next) np++;
    if (np != nargs) {
        diag_error(c->d, call->loc, "%s() takes %d argument%s, but %d %s given", decl->name, np, np == 1 ? "" : "s",
                   nargs, nargs == 1 ? "was" : "were");
        diag_note(c->d, decl->loc, "'%s' is defined here", decl->name);
        return ex_bad();
    }
    if (c->inline_stop) return ex_bad();
    if (c->inline_depth >= MAX_INLINE_DEPTH) {
        diag_error(c->d, call->loc, "calls nest too deeply here (is '%s' recursive? straight-line functions are inlined, so they cannot recurse)",
                   decl->name);
        c->inline_stop = true; /* else every sibling call down the chain reports it again */
        return ex_bad();
    }
    if (c->nvals_made > MAX_VALS) {
        diag_error(c->d, call->loc, "the program grows to more than %d operations once its calls are inlined: "
                   "functions without control flow are inlined at every call, and these call each other too "
                   "often; add an 'if' to '%s' to make it a host function", MAX_VALS, decl->name);
        c->inline_stop = c->inline_depth > 0; /* cleared when the outermost call returns */
        return ex_bad();
    }
    if (++c->inlined > MAX_INLINED) {
        diag_error(c->d, call->loc, "too many calls to inline (more than %d): functions without control flow are "
                   "inlined at every call, and these call each other too often; add an 'if' to '%s' to make it "
                   "a host function", MAX_INLINED, decl->name);
        c->inline_stop = c->inline_depth > 0; /* cleared when the outermost call returns */
        return ex_bad();
    }
    /* Type variables and elementwise application. */
    TypeVars tv = {NEWN(c->a, const char *, np + 1), NEWN(c->a, DType, np + 1), 0};
    bool map = false;
    int i = 0;
    for (Node *p = decl->params; p; p = p->next, i++) {
        int prank;
        type_dims(p->type, &prank);
        const char *tn = p->type->name;
        DType want;
        bool isvar = sema_is_typevar(tn);
        if (!isvar && !dtype_from_name(tn, &want)) {
            diag_error(c->d, p->type->loc, "unknown type '%s'", tn);
            return ex_bad();
        }
        if (isvar) {
            int k = 0;
            while (k < tv.n && strcmp(tv.name[k], tn) != 0) k++;
            if (k == tv.n) {
                Ex a = args[i].weak ? concrete(c, args[i]) : args[i];
                if (!a.ok) return ex_bad();
                args[i] = a;
                tv.name[tv.n] = tn;
                tv.dt[tv.n++] = a.v->dt;
            }
            want = tv.dt[k];
        }
        args[i] = coerce(c, args[i], want, call->loc, arena_printf(c->a, "argument '%s' of %s()", p->name, decl->name));
        if (!args[i].ok) return ex_bad();
        if (args[i].v->rank != prank) {
            if (prank == 0 && args[i].v->rank > 0) map = true;
            else {
                diag_error(c->d, call->loc, "argument '%s' of %s() must be %s, not %s", p->name, decl->name,
                           tname(c->a, want, prank), tname(c->a, args[i].v->dt, args[i].v->rank));
                return ex_bad();
            }
        }
    }
    if (map) {
        i = 0;
        for (Node *p = decl->params; p; p = p->next, i++)
            if (p->type->dims) {
                diag_error(c->d, call->loc, "%s() has array parameter '%s', so it cannot be applied elementwise to arrays",
                           decl->name, p->name);
                return ex_bad();
            }
        if (!inlinable(decl)) return scalar_call(c, decl, call, args, nargs, tv.n > 0);
    }
    if (!inlinable(decl)) {
        /* A host call: the callee gets its own IR function and frame. */
        /* Inside a lambda or an elementwise body its scalar arguments are per element
           too (|a, b| gcd(a, b)): the same per-element call. */
        if (c->in_lambda || c->map_fn) return scalar_call(c, decl, call, args, nargs, tv.n > 0);
        Fn *f = lower_fn(c, decl);
        if (!f) return ex_bad();
        if (tv.n) {
            diag_error(c->d, call->loc, "generic functions (type variables) must be straight-line to be called");
            return ex_bad();
        }
        Val *v = mk(c, OP_CALL, f->ret_dt, f->ret_rank, nargs, call->loc);
        for (int k = 0; k < nargs; k++) v->args[k] = args[k].v;
        v->fn = f;
        Ex e = ex_val(v);
        e.ntup = f->nres; /* several results: taken apart by an S_CALLN (tuple_parts) */
        return e;
    }
    /* Inline: bind params (and their size variables) to the argument values. */
    Scope *saved = c->scope;
    TypeVars *saved_tv = c->tv;
    Node *saved_decl = c->cur_decl;
    const char *saved_map = c->map_fn;
    int saved_nfacts = c->nfacts;
    scope_push(c, true);
    c->tv = &tv;
    if (map && !c->map_fn) c->map_fn = arena_printf(c->a, "%s()", decl->name);
    c->inline_depth++;
    /* The size checks of this call: sizes that must agree, with their messages. */
    SizeCheck *checks = NULL;
    int nchecks = 0, capchecks = 0;
    i = 0;
    bool ok = true;
    for (Node *p = decl->params; p; p = p->next, i++) {
        Sym *s = sym_val(c, p->name, p->loc, args[i].v);
        int ax = 0;
        if (map) continue;
        for (Node *d = p->type->dims; d; d = d->next, ax++) {
            Val *dim = mk1(c, OP_DIM, DT_I64, 0, args[i].v, call->loc);
            dim->axis = ax;
            if (d->kind == N_INT) {
                check_add(c, &checks, &nchecks, &capchecks, dim, mk_i64(c, d->ival, d->loc),
                          arena_printf(c->a, "%s(): axis %d of '%s' has size %%lld but the declared size is %%lld",
                                       decl->name, ax, p->name));
                continue;
            }
            Sym *prev = NULL;
            for (Sym *q = c->scope->syms; q; q = q->next)
                if (strcmp(q->name, d->name) == 0 && q != s) prev = q;
            if (prev) {
                check_add(c, &checks, &nchecks, &capchecks, prev->val, dim,
                          arena_printf(c->a, "%s(): size '%s' is %%lld from an earlier parameter but %%lld from '%s'",
                                       decl->name, d->name, p->name));
                continue;
            }
            sym_val(c, d->name, d->loc, dim);
        }
    }
    /* The checks wrap the result, so wherever the result is used they have passed. */
    for (int k = 0; k < nchecks; k++) fact_add(c, checks[k].a, checks[k].b);
    bool several = decl->type && decl->type->kind == N_TUPLE;
    /* The declared result sizes, before the body's lets can shadow a size's name. */
    int nres = 0;
    for (Node *t = several ? decl->type->args : NULL; t; t = t->next) nres++;
    Val ***rdims = NEWN(c->a, Val **, nres + 1);
    Val **dims = NULL;
    if (several) {
        int k = 0;
        for (Node *t = decl->type->args; t; t = t->next, k++)
            if (t->dims && !map && !(rdims[k] = result_dims(c, decl, t))) ok = false;
    } else if (decl->type && decl->type->dims && !map) {
        ok = (dims = result_dims(c, decl, decl->type)) != NULL;
    }
    if (!ok) c->decl_state[di] = 2; /* a generic function: report it at the first call only */
    Ex r = ex_bad();
    Loc retloc = decl->loc;
    if (!ok) {
        /* reported */
    } else if (decl->a) {
        r = several ? lower_any(c, decl->a) : lower_expr(c, decl->a);
        retloc = node_first_loc(decl->a);
    } else {
        for (Node *s = decl->body; s && ok; s = s->next) {
            if (s->kind == N_LETTUPLE) {
                ok = lower_let_tuple(c, s, NULL, true);
            } else if (s->kind == N_LET) {
                Ex v = lower_expr(c, s->a);
                if (!v.ok) {
                    ok = false;
                    break;
                }
                if (s->type) {
                    int rk;
                    type_dims(s->type, &rk);
                    DType want;
                    if (dtype_from_name(s->type->name, &want)) v = coerce(c, v, want, s->loc, arena_printf(c->a, "'%s'", s->name));
                    if (v.ok && v.v->rank != rk) {
                        diag_error(c->d, s->loc, "'%s' is declared %s but its value is %s", s->name,
                                   tname(c->a, v.v->dt, rk), tname(c->a, v.v->dt, v.v->rank));
                        v = ex_bad();
                    }
                }
                if (!v.ok) {
                    ok = false;
                    break;
                }
                v = concrete(c, v);
                sym_val(c, s->name, s->loc, v.v);
            } else {
                r = several ? lower_any(c, s->a) : lower_expr(c, s->a);
                retloc = s->loc;
            }
        }
    }
    if (ok && r.ok && several) {
        /* Each result as a single one would be: its type, its sizes, the call's checks. */
        int n = 0;
        for (Node *t = decl->type->args; t; t = t->next) n++;
        Ex *parts = NEWN(c->a, Ex, n);
        if (!tuple_parts(c, r, n, retloc, decl->name, parts)) {
            r = ex_bad();
        } else {
            int k = 0;
            for (Node *t = decl->type->args; t && r.ok; t = t->next, k++) {
                parts[k] = inline_result(c, decl, t, parts[k], &tv, map, call, di, rdims[k], retloc, checks, nchecks);
                if (!parts[k].ok) r = ex_bad();
            }
            if (r.ok) r = (Ex){.ok = true, .ntup = n, .tup = parts};
        }
    } else if (ok && r.ok && decl->type) {
        r = inline_result(c, decl, decl->type, r, &tv, map, call, di, dims, retloc, checks, nchecks);
    } else if (ok && r.ok) {
        r = concrete(c, r);
    }
    c->inline_depth--;
    if (c->inline_depth == 0) c->inline_stop = false;
    c->scope = saved;
    c->tv = saved_tv;
    c->cur_decl = saved_decl;
    c->map_fn = saved_map;
    c->nfacts = saved_nfacts;
    return ok ? r : ex_bad();
}

static bool cheap(Val *v) { return v->op == OP_CONST || v->op == OP_SLOT || v->op == OP_DIM; }

/* ---- indexing ------------------------------------------------------------------------ */

/* x[i0, i1, ...] with integer arrays (NumPy's advanced indexing): the index arrays
   broadcast together and pick x[i0[j], i1[j], ..., :]. Each index is normalised and
   checked against its axis by a gather from iota(size) (the same check and message as
   x[idx], naming the axis), then the flat offset into x's leading axes is one gather
   from x reshaped: all of it is index arithmetic that fuses into the consumer.
   Returns false (nothing lowered) when no item is an array: plain indices and slices. */
static bool advanced_index(Ctx *c, Node *n, Val *x, int nitems, Ex *items, Ex *out) {
    bool any = false;
    int k = 0;
    for (Node *a = n->args; a; a = a->next, k++)
        if (a->kind != N_SLICE && items[k].v->rank > 0) any = true;
    if (!any) return false;
    k = 0;
    for (Node *a = n->args; a; a = a->next, k++) {
        if (a->kind == N_SLICE) {
            diag_error(c->d, a->loc, "index arrays cannot be mixed with slices; index with arrays on every "
                                     "leading axis, or slice first and index the result");
            return *out = ex_bad(), true;
        }
        Val *v = items[k].v;
        if (v->rank > 0 && v->dt == DT_BOOL) {
            diag_error(c->d, a->loc, "a bool mask must be the only index (x[mask], of x's shape)");
            return *out = ex_bad(), true;
        }
        if (!is_int(v->dt)) {
            diag_error(c->d, a->loc, "an index array must hold integers, not %s", dtype_info[v->dt].name);
            return *out = ex_bad(), true;
        }
    }
    if (nitems > x->rank) {
        diag_error(c->d, n->loc, "too many index arrays: %d for a %d-D array", nitems, x->rank);
        return *out = ex_bad(), true;
    }
    Val *flat = NULL;
    int brank = 1; /* the broadcast rank of the index arrays (a scalar index becomes [1]) */
    for (int i = 0; i < nitems; i++)
        if (items[i].v->rank > brank) brank = items[i].v->rank;
    for (int i = 0; i < nitems; i++) {
        Val *v = items[i].v;
        Val *d = mk1(c, OP_DIM, DT_I64, 0, x, n->loc);
        d->axis = i;
        if (v->rank == 0) v = mk2(c, OP_RESHAPE, v->dt, 1, v, mk_i64(c, 1, n->loc), n->loc);
        Val *io = mk1(c, OP_IOTA, DT_I64, 1, d, n->loc);
        Val *g = mk2(c, OP_GATHER, DT_I64, v->rank, io, v, n->loc);
        g->axis = i; /* the axis its bounds message names */
        flat = flat ? mk2(c, OP_ADD, DT_I64, brank, mk2(c, OP_MUL, DT_I64, flat->rank, flat, d, n->loc), g, n->loc)
                    : g;
    }
    /* x viewed as [d0 * ... * d(k-1), rest...] */
    int rest = x->rank - nitems;
    Val *xr = x;
    if (nitems > 1) {
        xr = mk(c, OP_RESHAPE, x->dt, 1 + rest, 2 + rest, n->loc);
        xr->args[0] = x;
        xr->args[1] = mk_i64(c, -1, n->loc);
        for (int j = 0; j < rest; j++) {
            Val *d = mk1(c, OP_DIM, DT_I64, 0, x, n->loc);
            d->axis = nitems + j;
            xr->args[2 + j] = d;
        }
    }
    *out = ex_val(mk2(c, OP_GATHER, x->dt, flat->rank + rest, xr, flat, n->loc));
    return true;
}

static Ex index_expr(Ctx *c, Node *n) {
    Ex x = concrete(c, lower_expr(c, n->a));
    if (!x.ok) return x;
    if (c->map_fn) {
        diag_error(c->d, n->loc, "%s is applied elementwise, so it cannot index arrays", c->map_fn);
        return ex_bad();
    }
    int nitems = 0;
    for (Node *a = n->args; a; a = a->next) nitems++;
    int rank = x.v->rank;
    if (rank == 0) {
        diag_error(c->d, n->loc, "cannot index a scalar");
        return ex_bad();
    }
    /* Gather: one integer array as the index. (A scalar index goes on below with the
       value lowered here: lowering it again made nested x[x[x[0]]] take 2^depth.) */
    Ex first = {0};
    if (nitems == 1 && n->args->kind != N_SLICE) {
        Ex ix = lower_expr(c, n->args);
        if (!ix.ok) return ix;
        first = ix;
        ix = concrete(c, ix);
        if (ix.v->rank > 0 && ix.v->dt == DT_BOOL) return make_compact(c, x.v, ix.v, n->loc, n->args->loc);
        if (ix.v->rank > 0) {
            if (!is_int(ix.v->dt)) {
                diag_error(c->d, n->args->loc, "an index array must hold integers, not %s", dtype_info[ix.v->dt].name);
                return ex_bad();
            }
            Val *v = mk2(c, OP_GATHER, x.v->dt, ix.v->rank + rank - 1, x.v, ix.v, n->loc);
            return ex_val(v);
        }
    }
    Ex items[MAXRANK];
    bool pre = nitems > 1 && nitems <= MAXRANK;
    if (pre) {
        /* lowered once here, for both advanced_index and the slice below */
        int k = 0;
        for (Node *a = n->args; a; a = a->next, k++) {
            if (a->kind == N_SLICE) continue;
            items[k] = concrete(c, lower_expr(c, a));
            if (!items[k].ok) return ex_bad();
        }
        Ex r;
        if (advanced_index(c, n, x.v, nitems, items, &r)) return r;
    }
    if (nitems > rank) {
        diag_error(c->d, n->loc, "too many indices: %d for a %d-D array", nitems, rank);
        return ex_bad();
    }
    Val *v = mk(c, OP_SLICE, x.v->dt, 0, 1 + 3 * rank, n->loc);
    v->args[0] = x.v;
    int out = rank, k = 0;
    for (Node *a = n->args; a; a = a->next, k++) {
        if (a->kind == N_SLICE) {
            v->slmode[k] = SL_RANGE;
            Node *parts[3] = {a->a, a->b, a->c};
            for (int j = 0; j < 3; j++)
                if (parts[j]) {
                    v->args[1 + 3 * k + j] = as_i64(c, lower_expr(c, parts[j]), parts[j]->loc, "a slice bound");
                    if (!v->args[1 + 3 * k + j]) return ex_bad();
                }
        } else {
            v->slmode[k] = SL_INDEX;
            v->args[1 + 3 * k] = as_i64(c, first.ok ? first : pre ? items[k] : lower_expr(c, a), a->loc, "an index");
            if (!v->args[1 + 3 * k]) return ex_bad();
            out--;
        }
    }
    for (; k < rank; k++) v->slmode[k] = SL_RANGE;
    v->rank = out;
    return ex_val(v);
}

/* ---- expressions: the dispatcher ------------------------------------------------------ */

static Ex lower_ident(Ctx *c, Node *n) {
    Sym *s = sym_find(c, n->name);
    double fc;
    if (!s && float_constant(n->name, &fc)) {
        Val *v = mk(c, OP_CONST, DT_F32, 0, 0, n->loc);
        v->c.f = fc;
        Ex e = ex_val(v);
        e.weak = e.wfloat = true;
        return e;
    }
    if (!s) {
        for (int i = 0; i < c->nunbound; i++)
            if (strcmp(c->unbound[i], n->name) == 0) return ex_bad();
        const char *sg = suggest_name(c, n->name, false);
        if (sg) diag_error(c->d, n->loc, "unknown name '%s'; did you mean '%s'?", n->name, sg);
        else if (find_decl(c, n->name)) diag_error(c->d, n->loc, "'%s' is a function; call it with %s(...)", n->name, n->name);
        else diag_error(c->d, n->loc, "unknown name '%s'", n->name);
        return ex_bad();
    }
    if (s->kind == SYM_VAL) {
        if (c->in_lambda && s->val->op != OP_ARG && !cheap(s->val)) {
            if (s->val->rank) {
                diag_error(c->d, n->loc, "a lambda can only capture scalars, and '%s' is an array", n->name);
                return ex_bad();
            }
            /* Hoist the captured scalar into a slot set before this statement, so the
               lambda body stays a small scalar expression. */
            int slot = slot_new(c, s->name, s->val->dt, 0, false);
            Stmt *st = stmt_new(c, S_SET, n->loc);
            st->slot = slot;
            st->v = s->val;
            emit(c, st);
            Val *v = mk(c, OP_SLOT, s->val->dt, 0, 0, n->loc);
            v->slot = slot;
            return ex_val(v);
        }
        return ex_val(s->val);
    }
    if (c->in_lambda && s->rank) {
        diag_error(c->d, n->loc, "a lambda can only capture scalars, and '%s' is an array", n->name);
        return ex_bad();
    }
    if (c->slot_cache_n < c->fn->nslots) {
        Val **nc = NEWN(c->a, Val *, c->fn->nslots + 16);
        if (c->slot_cache_n) memcpy(nc, c->slot_cache, sizeof(Val *) * (size_t)c->slot_cache_n);
        c->slot_cache = nc;
        c->slot_cache_n = c->fn->nslots + 16;
    }
    if (c->slot_cache[s->slot]) return ex_val(c->slot_cache[s->slot]);
    Val *v = mk(c, OP_SLOT, s->dt, s->rank, 0, n->loc);
    v->slot = s->slot;
    c->slot_cache[s->slot] = v;
    return ex_val(v);
}

static Ex lower_expr_node(Ctx *c, Node *n);

/* Lowering recurses once per level of the expression, and again into each inlined
   body: NEST_LIMIT levels at most, as for the syntax tree. */
static Ex lower_any(Ctx *c, Node *n) {
    if (c->depth >= NEST_LIMIT) {
        if (!c->deep_reported)
            diag_error(c->d, n->loc, "expression nested too deeply once calls are inlined (limit %d); "
                       "compute part of it in a var first (var t = ...;), or give a function an 'if' "
                       "(which is not inlined)", NEST_LIMIT);
        c->deep_reported = true;
        return ex_bad();
    }
    c->depth++;
    Ex r = lower_expr_node(c, n);
    c->depth--;
    return r;
}

/* One value: tuples exist for results and lets only (DESIGN.md part 2). */
static Ex lower_expr(Ctx *c, Node *n) {
    Ex r = lower_any(c, n);
    if (!r.ok || !r.ntup) return r;
    if (n->kind == N_CALL)
        diag_error(c->d, n->loc, "%s() returns %d results, which cannot be used as one value; bind them first "
                   "with let (a, b) = %s(...); and use the names", n->name, r.ntup, n->name);
    else
        diag_error(c->d, n->loc, "a tuple can only be returned by a function with several results (-> (T1, T2)) "
                   "or bound with let (a, b) = ...; here one value is needed");
    return ex_bad();
}

/* The n parts of e, which must have n of them; the results of a host call go through
   an S_CALLN into slots of their own, read back as values. */
static bool tuple_parts(Ctx *c, Ex e, int n, Loc loc, const char *fname, Ex *out) {
    if (!e.ntup) {
        diag_error(c->d, loc, "%s() is declared with %d results, but this is one value of type %s; return (a, b) "
                   "with one value per result", fname, n, ex_tname(c, e));
        return false;
    }
    if (e.ntup != n) {
        diag_error(c->d, loc, "%s() is declared with %d results, but this gives %d", fname, n, e.ntup);
        return false;
    }
    if (e.tup) {
        for (int k = 0; k < n; k++) out[k] = e.tup[k];
        return true;
    }
    const Fn *g = e.v->fn;
    if (c->in_while_cond) {
        diag_error(c->d, loc, "%s() has several results and control flow, so it cannot run inside a while "
                   "condition; bind its results with let before the loop", g->name);
        return false;
    }
    Stmt *st = stmt_new(c, S_CALLN, loc);
    st->v = e.v;
    st->nvs = n;
    st->slots = NEWN(c->a, int, n);
    for (int k = 0; k < n; k++) {
        st->slots[k] = slot_new(c, arena_printf(c->a, "%s.%d", g->name, k), g->res_dt[k], g->res_rank[k], false);
        Val *r = mk(c, OP_SLOT, g->res_dt[k], g->res_rank[k], 0, loc);
        r->slot = st->slots[k];
        out[k] = ex_val(r);
    }
    emit(c, st);
    return true;
}

static Ex lower_expr_node(Ctx *c, Node *n) {
    switch (n->kind) {
    case N_INT: {
        Val *v = mk(c, OP_CONST, DT_I64, 0, 0, n->loc);
        v->c.i = n->ival;
        Ex e = ex_val(v);
        e.weak = true;
        return e;
    }
    case N_FLOAT: {
        Val *v = mk(c, OP_CONST, DT_F32, 0, 0, n->loc);
        v->c.f = n->fval;
        Ex e = ex_val(v);
        e.weak = e.wfloat = true;
        return e;
    }
    case N_BOOL: {
        Val *v = mk(c, OP_CONST, DT_BOOL, 0, 0, n->loc);
        v->c.i = n->ival != 0;
        return ex_val(v);
    }
    case N_STR:
        diag_error(c->d, n->loc, "a string can only be a file name in load() or save()");
        return ex_bad();
    case N_IDENT: return lower_ident(c, n);
    case N_UNARY: {
        Ex a = lower_expr(c, n->a);
        if (!a.ok) return a;
        if (n->op == AOP_PLUS) {
            if (!a.weak && !is_numeric(a.v->dt)) {
                diag_error(c->d, n->loc, "unary '+' needs a number, not %s", ex_tname(c, a));
                return ex_bad();
            }
            return a;
        }
        if (n->op == AOP_NEG && a.weak && a.v->op == OP_CONST) {
            if (a.wfloat) a.v->c.f = -a.v->c.f;
            else a.v->c.i = (int64_t)(0u - (uint64_t)a.v->c.i);
            a.v->loc = n->loc;
            return a;
        }
        OpKind op = n->op == AOP_NEG ? OP_NEG : n->op == AOP_NOT ? OP_NOT : OP_BNOT;
        const char *sp = n->op == AOP_NEG ? "-" : n->op == AOP_NOT ? "!" : "~";
        if (op == OP_NOT && a.weak) {
            diag_error(c->d, n->loc, "'!' needs a bool, not an %s", ex_tname(c, a));
            return ex_bad();
        }
        if (op == OP_NEG && !a.weak && a.v->dt == DT_BOOL) {
            diag_error(c->d, n->loc, "unary '-' needs a number, not bool; use ! for logical not");
            return ex_bad();
        }
        if (op == OP_NEG && !a.weak && a.v->dt < DT_COUNT && !dtype_info[a.v->dt].is_signed) {
            diag_error(c->d, n->loc, "unary '-' on unsigned %s; write 0 - x if wrapping is meant", dtype_info[a.v->dt].name);
            return ex_bad();
        }
        Node *nodes[1] = {n->a};
        return mk_ew(c, op, &a, 1, nodes, n->loc, sp);
    }
    case N_BINARY: {
        if (n->op == AOP_MATMUL && c->map_fn) {
            diag_error(c->d, n->loc, "%s is applied elementwise, so it may only use elementwise operations; '@' (dot) is not one",
                       c->map_fn);
            return ex_bad();
        }
        Ex xs[2] = {lower_expr(c, n->a), lower_expr(c, n->b)};
        if (!xs[0].ok || !xs[1].ok) return ex_bad();
        Node *nodes[2] = {n->a, n->b};
        if (n->op == AOP_MATMUL) return lower_dot(c, xs, nodes, n->loc, "'@'");
        return mk_ew(c, binop_of(n->op), xs, 2, nodes, n->loc, ast_op_spelling[n->op]);
    }
    case N_TERNARY: {
        Ex xs[3] = {lower_expr(c, n->a), lower_expr(c, n->b), lower_expr(c, n->c)};
        if (!xs[0].ok || !xs[1].ok || !xs[2].ok) return ex_bad();
        Node *nodes[3] = {n->a, n->b, n->c};
        return mk_ew(c, OP_SELECT, xs, 3, nodes, n->loc, "?:");
    }
    case N_CALL: return lower_call(c, n);
    case N_TUPLE: {
        int k = 0;
        for (Node *a = n->args; a; a = a->next) k++;
        if (k > MAX_RESULTS) {
            diag_error(c->d, n->loc, "a tuple of %d values: at most %d", k, MAX_RESULTS);
            return ex_bad();
        }
        Ex *parts = NEWN(c->a, Ex, k);
        k = 0;
        for (Node *a = n->args; a; a = a->next, k++) {
            if (a->kind == N_TUPLE) {
                diag_error(c->d, a->loc, "tuples do not nest: a function's results are one flat tuple (a, b, c)");
                return ex_bad();
            }
            parts[k] = lower_expr(c, a);
            if (!parts[k].ok) return ex_bad();
        }
        return (Ex){.ok = true, .ntup = k, .tup = parts};
    }
    case N_INDEX: return index_expr(c, n);
    case N_LAMBDA:
        diag_error(c->d, n->loc, "a lambda can only be an argument of reduce(), scan() or map()");
        return ex_bad();
    case N_NAMEDARG:
        diag_error(c->d, n->loc, "named argument '%s' outside a call", n->name);
        return ex_bad();
    case N_SLICE:
        diag_error(c->d, n->loc, "a slice a:b can only appear inside [ ]");
        return ex_bad();
    default: die("lower_expr: unexpected node kind %d", (int)n->kind);
    }
}

/* ---- statements ---------------------------------------------------------------------- */

/* How many later statements of the block mention name, and whether any mention is
   inside a loop (then the value would be recomputed every iteration). */
static int count_ident(Node *n, const char *name, int depth) {
    if (!n || depth > 2000) return 0;
    int k = 0;
    if (n->kind == N_IDENT && strcmp(n->name, name) == 0) k++;
    k += count_ident(n->a, name, depth + 1) + count_ident(n->b, name, depth + 1) + count_ident(n->c, name, depth + 1);
    for (Node *x = n->args; x; x = x->next) k += count_ident(x, name, depth + 1);
    for (Node *x = n->body; x; x = x->next) k += count_ident(x, name, depth + 1);
    for (Node *x = n->els; x; x = x->next) k += count_ident(x, name, depth + 1);
    return k;
}

/* c->seen[id] == c->seen_gen: value id was already looked at in this question (the IR
   shares values: without it a chain of `let b = a + a;` took 2^length steps). */
static bool reads_mutable_rec(Ctx *c, Val *v, int depth) {
    if (depth > 200) return true;
    if (c->seen[v->id] == c->seen_gen) return false;
    c->seen[v->id] = c->seen_gen;
    if (v->op == OP_SLOT && c->fn->slots[v->slot].mutable_) return true;
    if (v->op == OP_CALL || v->op == OP_LOAD) return true;
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && reads_mutable_rec(c, v->args[i], depth + 1)) return true;
    return false;
}

static bool reads_mutable_or_effects(Ctx *c, Val *v) {
    int nv = c->fn->nvals;
    if (c->nseen < nv) {
        int nn = nv + nv / 2 + 64;
        unsigned *ns = NEWN(c->a, unsigned, nn);
        if (c->nseen) memcpy(ns, c->seen, sizeof(unsigned) * (size_t)c->nseen);
        c->seen = ns;
        c->nseen = nn;
    }
    c->seen_gen++;
    return reads_mutable_rec(c, v, 0);
}


static bool bind_size_vars(Ctx *c, Node *type, Val *x, Loc loc, Val **out) {
    int ax = 0;
    for (Node *d = type->dims; d; d = d->next, ax++) {
        Val *dim = mk1(c, OP_DIM, DT_I64, 0, x, loc);
        dim->axis = ax;
        Val *other = NULL;
        const char *what;
        if (d->kind == N_INT) {
            other = mk_i64(c, d->ival, d->loc);
            what = arena_printf(c->a, "axis %d has size %%lld but the declared size is %%lld", ax);
        } else {
            Sym *s = sym_find(c, d->name);
            if (s) {
                if (!(s->dt == DT_I64 && s->rank == 0)) {
                    diag_error(c->d, d->loc, "size '%s' must be an integer, but '%s' is %s", d->name, d->name,
                               tname(c->a, s->dt, s->rank));
                    return false;
                }
                if (s->kind == SYM_VAL) other = s->val;
                else {
                    other = mk(c, OP_SLOT, DT_I64, 0, 0, d->loc);
                    other->slot = s->slot;
                }
                what = arena_printf(c->a, "size '%s': axis %d has %%lld but '%s' is %%lld", d->name, ax, d->name);
            } else {
                sym_val(c, d->name, d->loc, dim);
                continue;
            }
        }
        x = mk_check(c, x, dim, other, what, loc);
    }
    *out = x;
    return true;
}

static bool check_decl_type(Ctx *c, Node *type, Ex *v, const char *name) {
    int rk;
    if (!type_dims(type, &rk)) {
        diag_error(c->d, type->loc, "at most %d dimensions", MAXRANK);
        return false;
    }
    DType want;
    if (!dtype_from_name(type->name, &want)) {
        diag_error(c->d, type->loc, "unknown type '%s'; the types are %s", type->name, dtype_names());
        return false;
    }
    *v = coerce(c, *v, want, type->loc, arena_printf(c->a, "the value of '%s'", name));
    if (!v->ok) return false;
    if (v->v->rank != rk) {
        diag_error(c->d, type->loc, "'%s' is declared %s but its value is %s", name, tname(c->a, want, rk),
                   tname(c->a, v->v->dt, v->v->rank));
        return false;
    }
    return true;
}

static void bind_value(Ctx *c, const char *name, Loc loc, Val *val, bool mut, Node *rest);

/* A let whose value had an error (reported there, or earlier): its name is remembered,
   so the statements after it do not each add "unknown name" to the error that matters. */
static void unbound_add(Ctx *c, const char *name) {
    if (c->nunbound == c->capunbound) {
        int cap = c->capunbound ? 2 * c->capunbound : 8;
        const char **u = NEWN(c->a, const char *, cap);
        if (c->nunbound) memcpy(u, c->unbound, sizeof *u * (size_t)c->nunbound);
        c->unbound = u, c->capunbound = cap;
    }
    c->unbound[c->nunbound++] = name;
}

static bool lower_let_checked(Ctx *c, Node *s, Node *rest);

static void lower_let(Ctx *c, Node *s, Node *rest) {
    if (!lower_let_checked(c, s, rest)) unbound_add(c, s->name);
}

static bool lower_let_checked(Ctx *c, Node *s, Node *rest) {
    bool mut = s->kind == N_VAR;
    Ex v;
    if (s->a->kind == N_CALL && strcmp(s->a->name, "load") == 0 && !find_decl(c, "load")) {
        if (!s->type) {
            diag_error(c->d, s->loc, "load() needs the type of '%s', e.g. let %s: f32[n] = load(\"x.npy\");", s->name, s->name);
            return false;
        }
        Node *arg = s->a->args;
        if (!arg || arg->next || arg->kind != N_STR) {
            diag_error(c->d, s->a->loc, "load() takes one file name in quotes");
            return false;
        }
        DType dt;
        int rk;
        type_dims(s->type, &rk);
        if (!dtype_from_name(s->type->name, &dt)) {
            diag_error(c->d, s->type->loc, "unknown type '%s'", s->type->name);
            return false;
        }
        Val *lv = mk(c, OP_LOAD, dt, rk, 0, s->a->loc);
        lv->path = arg->sval;
        v = ex_val(lv);
    } else {
        v = lower_expr(c, s->a);
        if (!v.ok) return false;
        if (s->type && !check_decl_type(c, s->type, &v, s->name)) return false;
    }
    v = concrete(c, v);
    if (!v.ok) return false;
    if (v.v->dt == DT_VOID) {
        diag_error(c->d, s->a->loc, "this call returns nothing, so it cannot initialise '%s'", s->name);
        return false;
    }
    Val *val = v.v;
    if (s->type && !bind_size_vars(c, s->type, val, s->loc, &val)) return false;
    bind_value(c, s->name, s->loc, val, mut, rest);
    return true;
}

/* The statements of rest that use name, looking through the lets that will most
   likely be bound straight themselves (each used in one statement after it, by the same
   rule, however many lets deep): in `let d = x - m; let v = mean(d * d); return d / v;`
   d's one use is the return, so d fuses into it with v. At most max are recorded;
   *loop_use when one is a loop. Returns the count (max + 1 when there are more). A
   let's own answer depends only on the statements after it, so let_uses keeps it: a
   chain of lets (a generator's rounds, a long formula) is walked once, not once per
   path through it. */
#define USES_DEPTH 256 /* a guard on the recursion only */
static int stmt_uses(Ctx *c, Node *rest, const char *name, Node **set, int max, bool *loop_use, int depth);
struct StmtPos;
static struct StmtPos *spos_find(Ctx *c, const Node *node);
static struct StmtPos *mention_index(Ctx *c, Node *rest);

/* stmt_uses(let->next, let->name, sub, 1, ...), remembered on the let's StmtPos (the let
   is a statement of a block mention_index has seen). */
static int let_uses(Ctx *c, Node *let, Node **sub, bool *loop_use, int depth);

/* Which statements of a block mention each name (count_ident(r, name) > 0) or rebind it
   (let/var name): built once per block when a let first asks, so that stmt_uses walks a
   name's own statements instead of rescanning the rest of the block for every let (that
   made checking a block of n lets take n^2 steps). */
typedef struct NameOcc {
    const char *name;
    int *ords; /* ordinals in the block, increasing */
    int n, cap;
} NameOcc;
typedef struct BlockIx {
    Node **stmts;
    int nstmts;
    NameOcc *tab; /* open addressing by the name's hash, at most half full */
    int cap, used;
} BlockIx;
typedef struct StmtPos {
    const Node *node;
    BlockIx *b;
    int ord;
    /* for a let: let_uses's answer once known */
    bool known, loop_use;
    int uses;
    Node *sub;
} StmtPos;

static size_t name_hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}
static size_t ptr_hash(const void *p) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15u; }

static NameOcc *occ_find(Ctx *c, BlockIx *b, const char *name, bool add) {
    if (add && 2 * (b->used + 1) > b->cap) {
        int cap = 2 * b->cap;
        NameOcc *t = NEWN(c->a, NameOcc, (size_t)cap);
        for (int k = 0; k < b->cap; k++) {
            if (!b->tab[k].name) continue;
            size_t j = name_hash(b->tab[k].name) & (size_t)(cap - 1);
            while (t[j].name) j = (j + 1) & (size_t)(cap - 1);
            t[j] = b->tab[k];
        }
        b->tab = t, b->cap = cap;
    }
    for (size_t i = name_hash(name) & (size_t)(b->cap - 1);; i = (i + 1) & (size_t)(b->cap - 1)) {
        NameOcc *o = &b->tab[i];
        if (!o->name) {
            if (!add) return NULL;
            o->name = name;
            b->used++;
            return o;
        }
        if (strcmp(o->name, name) == 0) return o;
    }
}
static void occ_add(Ctx *c, BlockIx *b, const char *name, int ord) {
    NameOcc *o = occ_find(c, b, name, true);
    if (o->n && o->ords[o->n - 1] == ord) return;
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 4;
        int *nw = NEWN(c->a, int, (size_t)cap);
        if (o->n) memcpy(nw, o->ords, sizeof(int) * (size_t)o->n);
        o->ords = nw, o->cap = cap;
    }
    o->ords[o->n++] = ord;
}
/* The names statement n mentions, as count_ident sees them. */
static void occ_walk(Ctx *c, BlockIx *b, Node *n, int ord, int depth) {
    if (!n || depth > 2000) return;
    if (n->kind == N_IDENT) occ_add(c, b, n->name, ord);
    occ_walk(c, b, n->a, ord, depth + 1), occ_walk(c, b, n->b, ord, depth + 1), occ_walk(c, b, n->c, ord, depth + 1);
    for (Node *x = n->args; x; x = x->next) occ_walk(c, b, x, ord, depth + 1);
    for (Node *x = n->body; x; x = x->next) occ_walk(c, b, x, ord, depth + 1);
    for (Node *x = n->els; x; x = x->next) occ_walk(c, b, x, ord, depth + 1);
}
static StmtPos *spos_find(Ctx *c, const Node *node) { /* (declared above) */
    if (!c->spos_cap) return NULL;
    for (size_t i = ptr_hash(node) & (size_t)(c->spos_cap - 1);; i = (i + 1) & (size_t)(c->spos_cap - 1)) {
        if (!c->spos[i].node) return NULL;
        if (c->spos[i].node == node) return &c->spos[i];
    }
}
static void spos_put(Ctx *c, const Node *node, BlockIx *b, int ord) {
    if (2 * (c->spos_n + 1) > c->spos_cap) {
        int cap = c->spos_cap ? 2 * c->spos_cap : 1024;
        while (2 * (c->spos_n + 1) > cap) cap *= 2;
        StmtPos *t = NEWN(c->a, StmtPos, (size_t)cap);
        for (int i = 0; i < c->spos_cap; i++) {
            if (!c->spos[i].node) continue;
            size_t j = ptr_hash(c->spos[i].node) & (size_t)(cap - 1);
            while (t[j].node) j = (j + 1) & (size_t)(cap - 1);
            t[j] = c->spos[i];
        }
        c->spos = t, c->spos_cap = cap;
    }
    size_t i = ptr_hash(node) & (size_t)(c->spos_cap - 1);
    while (c->spos[i].node) i = (i + 1) & (size_t)(c->spos_cap - 1);
    c->spos[i] = (StmtPos){.node = node, .b = b, .ord = ord};
    c->spos_n++;
}
/* rest's position in its block's index, the index built (from rest on) the first time. */
static StmtPos *mention_index(Ctx *c, Node *rest) { /* (declared above) */
    StmtPos *p = spos_find(c, rest);
    if (p) return p;
    BlockIx *b = NEW(c->a, BlockIx);
    for (Node *r = rest; r; r = r->next) b->nstmts++;
    b->stmts = NEWN(c->a, Node *, (size_t)b->nstmts);
    b->cap = 64;
    b->tab = NEWN(c->a, NameOcc, (size_t)b->cap);
    int ord = 0;
    for (Node *r = rest; r; r = r->next, ord++) {
        b->stmts[ord] = r;
        occ_walk(c, b, r, ord, 0);
        if ((r->kind == N_LET || r->kind == N_VAR) && r->name) occ_add(c, b, r->name, ord);
        spos_put(c, r, b, ord);
    }
    return spos_find(c, rest);
}

static int let_uses(Ctx *c, Node *let, Node **sub, bool *loop_use, int depth) {
    StmtPos *p = spos_find(c, let);
    if (p && p->known) {
        *sub = p->sub, *loop_use = p->loop_use;
        return p->uses;
    }
    Node *s1[1] = {NULL};
    bool lu = false;
    int n = stmt_uses(c, let->next, let->name, s1, 1, &lu, depth);
    if ((p = spos_find(c, let))) /* again: the table may have grown meanwhile */
        p->known = true, p->uses = n, p->sub = s1[0], p->loop_use = lu;
    *sub = s1[0], *loop_use = lu;
    return n;
}

static int stmt_uses(Ctx *c, Node *rest, const char *name, Node **set, int max, bool *loop_use, int depth) {
    int n = 0;
    StmtPos *at = rest ? mention_index(c, rest) : NULL;
    NameOcc *o = at ? occ_find(c, at->b, name, false) : NULL;
    if (!o) return 0;
    int lo = 0, hi = o->n; /* the first of name's statements at or after rest */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (o->ords[mid] < at->ord) lo = mid + 1;
        else hi = mid;
    }
    for (int q = lo; q < o->n && n <= max; q++) {
        Node *r = at->b->stmts[o->ords[q]];
        if (count_ident(r, name, 0)) {
            Node *u = r;
            if (r->kind == N_LET && depth < USES_DEPTH && strcmp(r->name, name) != 0) {
                Node *sub = NULL;
                bool lu = false;
                int ns = let_uses(c, r, &sub, &lu, depth + 1);
                if (ns == 0) u = NULL;            /* never used: bound straight and unread */
                else if (ns == 1 && !lu) u = sub; /* bound straight: its use is this one's */
            }
            if (u == r && (r->kind == N_FOR || r->kind == N_WHILE)) *loop_use = true;
            bool dup = u == NULL;
            for (int i = 0; i < n && i < max && !dup; i++) dup = set[i] == u;
            if (!dup) {
                if (n < max) set[n] = u;
                n++;
            }
        }
        if ((r->kind == N_LET || r->kind == N_VAR) && strcmp(r->name, name) == 0) break; /* rebound */
    }
    return n;
}

/* Binds name to val: straight (fusion across lets) or materialised in a slot. */
static void bind_value(Ctx *c, const char *name, Loc loc, Val *val, bool mut, Node *rest) {
    /* Decide: bind the value straight (fusion across lets) or materialise in a slot. */
    if (!mut) {
        bool loop_use = false;
        Node *set[2];
        int stmts_using = stmt_uses(c, rest, name, set, 1, &loop_use, 0);
        /* Half the nesting limit is left to the statement that uses it. */
        bool shallow = val_height(c, val) <= NEST_LIMIT / 2;
        /* A var's slot read is not cheap to bind straight: the var may change before the
           name is read (value semantics: the name keeps the value it was bound to). */
        bool var_read = val->op == OP_SLOT && c->fn->slots[val->slot].mutable_;
        if ((cheap(val) && !var_read) || (stmts_using <= 1 && !loop_use && shallow && !reads_mutable_or_effects(c, val))) {
            sym_val(c, name, loc, val);
            return;
        }
    }
    int slot = slot_new(c, name, val->dt, val->rank, mut);
    Stmt *st = stmt_new(c, S_SET, loc);
    st->slot = slot;
    st->v = val;
    emit(c, st);
    Sym *sy = sym_add(c, name, loc);
    sy->kind = SYM_SLOT;
    sy->slot = slot;
    sy->mutable_ = mut;
    sy->dt = val->dt;
    sy->rank = val->rank;
}

/* let (a, _, b) = e; (var (a, b) = e;): one name per result of e, `_` drops one. In an
   inlined body (inlined) every name is bound straight to its value. */
static bool lower_let_tuple(Ctx *c, Node *s, Node *rest, bool inlined) {
    int n = 0;
    for (Node *x = s->args; x; x = x->next) {
        n++;
        if (strcmp(x->name, "_") == 0) continue;
        for (Node *y = s->args; y != x; y = y->next)
            if (strcmp(y->name, x->name) == 0) {
                diag_error(c->d, x->loc, "'%s' is bound twice in this let", x->name);
                return false;
            }
    }
    if (n == 1) {
        diag_error(c->d, s->loc, "a let of one name needs no parentheses: write let %s = ...;", s->args->name);
        return false;
    }
    Ex v = lower_any(c, s->a);
    if (!v.ok) return false;
    const char *what = s->ival ? "var" : "let";
    if (!v.ntup) {
        v = concrete(c, v);
        diag_error(c->d, s->a->loc, "this %s binds %d names, but its value is one value of type %s; a %s (a, b) "
                   "takes the results of a function with several results", what, n, ex_tname(c, v), what);
        return false;
    }
    if (v.ntup != n) {
        const char *src = s->a->kind == N_CALL ? arena_printf(c->a, "%s() returns", s->a->name) : "the value has";
        diag_error(c->d, s->loc, "this %s binds %d name%s, but %s %d results; give one name per result (_ for one "
                   "you do not need)", what, n, n == 1 ? "" : "s", src, v.ntup);
        return false;
    }
    if (!v.tup && !inlined) {
        /* a host call: its results go straight into the names' slots */
        const Fn *g = v.v->fn;
        Stmt *st = stmt_new(c, S_CALLN, s->loc);
        st->v = v.v;
        st->nvs = n;
        st->slots = NEWN(c->a, int, n);
        int k = 0;
        for (Node *x = s->args; x; x = x->next, k++) {
            st->slots[k] = -1;
            if (strcmp(x->name, "_") == 0) continue;
            st->slots[k] = slot_new(c, x->name, g->res_dt[k], g->res_rank[k], s->ival != 0);
        }
        emit(c, st);
        k = 0;
        for (Node *x = s->args; x; x = x->next, k++) {
            if (st->slots[k] < 0) continue;
            Sym *sy = sym_add(c, x->name, x->loc);
            sy->kind = SYM_SLOT;
            sy->slot = st->slots[k];
            sy->mutable_ = s->ival != 0;
            sy->dt = g->res_dt[k];
            sy->rank = g->res_rank[k];
        }
        return true;
    }
    Ex *parts = NEWN(c->a, Ex, n);
    if (!tuple_parts(c, v, n, s->a->loc, "?", parts)) return false;
    int k = 0;
    for (Node *x = s->args; x; x = x->next, k++) {
        if (strcmp(x->name, "_") == 0) continue;
        Ex p = concrete(c, parts[k]);
        if (!p.ok) return false;
        if (inlined) {
            sym_val(c, x->name, x->loc, p.v);
        } else {
            bind_value(c, x->name, x->loc, p.v, s->ival != 0, rest);
        }
    }
    return true;
}

static Val *cond_val(Ctx *c, Node *e, const char *what) {
    Ex v = lower_expr(c, e);
    if (!v.ok) return NULL;
    if (v.weak || v.v->dt != DT_BOOL || v.v->rank != 0) {
        diag_error(c->d, e->loc, "the condition of %s must be a bool scalar, not %s%s", what, ex_tname(c, v),
                   (!v.weak && v.v->rank) ? "; reduce it with any() or all()" : "");
        return NULL;
    }
    return v.v;
}

/* return (a, b) in a function with several results (lower_fn set c->nres and the rest):
   each result converted, rank-checked and size-checked as a single result is. */
static void return_tuple(Ctx *c, Node *e, Loc loc) {
    Ex v = lower_any(c, e);
    if (!v.ok) return;
    int n = c->nres;
    Ex *parts = NEWN(c->a, Ex, n);
    if (!tuple_parts(c, v, n, node_first_loc(e), c->cur_decl->name, parts)) return;
    Stmt *st = stmt_new(c, S_RETURN, loc);
    st->nvs = n;
    st->vs = NEWN(c->a, Val *, n);
    Node *pn = e->kind == N_TUPLE ? e->args : NULL;
    for (int k = 0; k < n; k++, pn = pn ? pn->next : NULL) {
        Loc at = pn ? node_first_loc(pn) : node_first_loc(e);
        Ex p = coerce(c, parts[k], c->res_dt[k], at, arena_printf(c->a, "result %d of %s()", k, c->cur_decl->name));
        if (!p.ok) return;
        if (p.v->rank != c->res_rank[k]) {
            diag_error(c->d, at, "result %d of %s() is declared %s, but this is %s", k, c->cur_decl->name,
                       tname(c->a, c->res_dt[k], c->res_rank[k]), tname(c->a, p.v->dt, p.v->rank));
            return;
        }
        st->vs[k] = check_result(c, c->cur_decl, c->res_types[k], p.v, c->res_dims[k], loc, true);
        if (!st->vs[k]) return;
    }
    emit(c, st);
}

static Stmt *lower_sub_block(Ctx *c, Node *body) {
    Stmt *head = NULL, **saved = c->tail;
    c->tail = &head;
    scope_push(c, false);
    lower_block(c, body);
    scope_pop(c);
    c->tail = saved;
    return head;
}

/* ---- updates: a[...] = e on a var ------------------------------------------------------ */

/* An update is lowered to a new value of the whole array, set into its slot: value
   semantics come from that (the right side and every other name read the old value).
   Element and slice updates are an OP_UPDATE, index arithmetic over a's shape that
   fuses into one map kernel with the right side's producers; a[idx] = vals is a
   scatter, a[mask] = e a where. */

static Val *dim_of(Ctx *c, Val *x, int axis, Loc loc) {
    Val *d = mk1(c, OP_DIM, DT_I64, 0, x, loc);
    d->axis = axis;
    return d;
}

/* One item of an update's index list: an index or array (v), or a slice lo:hi:st (each
   may be NULL). */
typedef struct UpdItem {
    Val *v, *hi, *st;
} UpdItem;

/* a[mask] = e: where(mask, e, a); mask and an array e have a's shape. */
static Val *update_mask(Ctx *c, Node *s, Val *x, Val *mask, Val *e) {
    Loc loc = s->loc;
    if (mask->rank != x->rank || (e->rank && e->rank != x->rank)) {
        bool m = mask->rank != x->rank;
        diag_error(c->d, m ? node_first_loc(s->b->args) : node_first_loc(s->a),
                   "%s of '%s[mask] = ...' must have %s's shape%s, but it is %s and '%s' is %s", m ? "the mask" : "the value",
                   s->name, s->name, m ? "" : " or be a scalar", tname(c->a, m ? mask->dt : e->dt, m ? mask->rank : e->rank),
                   s->name, tname(c->a, x->dt, x->rank));
        return NULL;
    }
    for (int k = 0; k < x->rank; k++) {
        for (int w = 0; w < 2; w++) {
            Val **p = w ? &e : &mask;
            if (w && !e->rank) continue;
            *p = mk_check(c, *p, dim_of(c, *p, k, loc), dim_of(c, x, k, loc),
                          arena_printf(c->a, "%s of '%s[mask] = ...' has size %%lld along axis %d but '%s' has size %%lld",
                                       w ? "the value" : "the mask", s->name, k, s->name),
                          loc);
        }
    }
    return ew(c, OP_SELECT, x->dt, mask, e, x, loc);
}

/* a[idx] = vals (a and idx 1-D): scatter(a, idx, vals) with negative indices counted
   from the end and every index checked as a[idx] checks it: the values are taken
   through where(true, vals, a[idx]), so that the gather (its check, and its message)
   runs inside the scatter's kernel on the elements a already has in memory. */
static Val *update_scatter(Ctx *c, Node *s, Val *x, Val *idx, Val *e) {
    Loc loc = s->loc;
    if (x->rank != 1 || idx->rank != 1 || e->rank > 1) {
        Node *at = x->rank != 1 ? s->b->a : idx->rank != 1 ? s->b->args : s->a;
        diag_error(c->d, at->loc,
                   "'%s[idx] = vals' needs a 1-D array, 1-D integer indices and 1-D values (or a scalar); here "
                   "'%s' is %s, idx is %s and the values are %s",
                   s->name, s->name, tname(c->a, x->dt, x->rank), tname(c->a, idx->dt, idx->rank), tname(c->a, e->dt, e->rank));
        return NULL;
    }
    Val *i = cast_to(c, idx, DT_I64, loc), *zero = mk_i64(c, 0, loc);
    Val *n = dim_of(c, x, 0, loc);
    Val *ni = ew(c, OP_SELECT, DT_I64, ew(c, OP_LT, DT_BOOL, i, zero, NULL, loc), ew(c, OP_ADD, DT_I64, i, n, NULL, loc), i, loc);
    if (e->rank == 1) {
        e = mk_check(c, e, dim_of(c, e, 0, loc), dim_of(c, idx, 0, loc),
                     arena_printf(c->a, "'%s[idx] = vals' got %%lld values for %%lld indices", s->name), loc);
    }
    Val *t = mk(c, OP_CONST, DT_BOOL, 0, 0, loc);
    t->c.i = 1;
    Val *vals = ew(c, OP_SELECT, x->dt, t, e, mk2(c, OP_GATHER, x->dt, 1, x, idx, loc), loc);
    return mk3(c, OP_SCATTER, x->dt, 1, x, ni, vals, loc);
}

/* a[i, lo:hi:st, ...] = e: an OP_UPDATE, an index transform over a's shape that reads e
   inside the region and a elsewhere (one map kernel with its producers). */
static Val *update_region(Ctx *c, Node *s, Val *x, UpdItem *items, Val *e) {
    int r = x->rank, q = 0, k = 0;
    Val *v = mk(c, OP_UPDATE, x->dt, r, 2 + 3 * r, s->loc);
    v->args[0] = x;
    v->args[1] = e;
    for (Node *a = s->b->args; a; a = a->next, k++) {
        v->args[2 + 3 * k] = items[k].v;
        if (a->kind == N_SLICE) {
            v->slmode[k] = SL_RANGE, q++;
            v->args[3 + 3 * k] = items[k].hi;
            v->args[4 + 3 * k] = items[k].st;
        } else {
            v->slmode[k] = SL_INDEX;
        }
    }
    for (; k < r; k++) v->slmode[k] = SL_RANGE, q++;
    if (e->rank > q) {
        diag_error(c->d, s->a->loc, "the value is %s but the part of '%s' it is assigned to is %d-D", tname(c->a, e->dt, e->rank),
                   s->name, q);
        return NULL;
    }
    return v;
}

static void lower_update(Ctx *c, Node *s) {
    Node *t = s->b;
    if (!t || t->kind != N_INDEX) return;
    if (!s->name) {
        diag_error(c->d, s->loc, "only a var array can be updated, by its name: write name[i, j] = ... (one index list "
                                 "on the name)");
        return;
    }
    Sym *sy = sym_find(c, s->name);
    if (!sy) {
        diag_error(c->d, t->a->loc, "update of unknown name '%s'; declare it first with var %s = ...;", s->name, s->name);
        return;
    }
    if (sy->kind != SYM_SLOT || !sy->mutable_) {
        diag_error(c->d, s->loc, "'%s' is not a var: declare it with `var %s = ...` to update it", s->name, s->name);
        diag_note(c->d, sy->loc, "'%s' is bound here", s->name);
        return;
    }
    if (sy->rank == 0) {
        diag_error(c->d, t->loc, "cannot index a scalar: '%s' is %s", s->name, tname(c->a, sy->dt, 0));
        return;
    }
    Ex xe = lower_expr(c, t->a);
    if (!xe.ok) return;
    Val *x = xe.v;
    /* the right side first: it reads the old value */
    Ex e = coerce(c, lower_expr(c, s->a), x->dt, s->a->loc, "the assigned value");
    if (!e.ok) return;
    int nitems = 0;
    for (Node *a = t->args; a; a = a->next) nitems++;
    if (nitems > x->rank) {
        diag_error(c->d, t->loc, "too many indices: %d for a %d-D array", nitems, x->rank);
        return;
    }
    UpdItem items[MAXRANK] = {{0}};
    bool arrays = false;
    int k = 0;
    for (Node *a = t->args; a; a = a->next, k++) {
        if (a->kind == N_SLICE) {
            Node *parts[3] = {a->a, a->b, a->c};
            Val **out[3] = {&items[k].v, &items[k].hi, &items[k].st};
            for (int j = 0; j < 3; j++)
                if (parts[j] && !(*out[j] = as_i64(c, lower_expr(c, parts[j]), parts[j]->loc, "a slice bound"))) return;
            continue;
        }
        Ex ix = lower_expr(c, a);
        if (!ix.ok) return;
        if (ix.v->rank > 0) {
            arrays = true;
            items[k].v = concrete(c, ix).v;
        } else if (!(items[k].v = as_i64(c, ix, a->loc, "an index"))) {
            return;
        }
    }
    Val *v = NULL;
    if (arrays) {
        Val *ix = items[0].v;
        if (nitems != 1) {
            diag_error(c->d, t->loc, "an update takes integer indices and slices, or one index array "
                                     "(a[idx] = vals), or one bool mask (a[mask] = e)");
            return;
        }
        if (ix->dt == DT_BOOL) {
            v = update_mask(c, s, x, ix, e.v);
        } else if (!is_int(ix->dt)) {
            diag_error(c->d, t->args->loc, "an index array must hold integers, not %s", dtype_info[ix->dt].name);
            return;
        } else {
            v = update_scatter(c, s, x, ix, e.v);
        }
    } else {
        v = update_region(c, s, x, items, e.v);
    }
    if (!v) return;
    Stmt *st = stmt_new(c, S_SET, s->loc);
    st->slot = sy->slot;
    st->v = v;
    emit(c, st);
}

static void lower_stmt(Ctx *c, Node *s) {
    if (c->slot_cache_n) memset(c->slot_cache, 0, sizeof(Val *) * (size_t)c->slot_cache_n);
    switch (s->kind) {
    case N_LET:
    case N_VAR: lower_let(c, s, s->next); return;
    case N_LETTUPLE:
        if (!lower_let_tuple(c, s, s->next, false))
            for (Node *x = s->args; x; x = x->next) unbound_add(c, x->name);
        return;
    case N_ASSIGN: {
        Sym *sy = sym_find(c, s->name);
        if (!sy) {
            const char *sg = suggest_name(c, s->name, false);
            if (sg) diag_error(c->d, s->loc, "assignment to unknown name '%s'; did you mean '%s'? (declare new variables with var)", s->name, sg);
            else diag_error(c->d, s->loc, "assignment to unknown name '%s'; declare it first with var %s = ...;", s->name, s->name);
            return;
        }
        if (sy->kind != SYM_SLOT || !sy->mutable_) {
            diag_error(c->d, s->loc, "cannot assign to '%s': it was bound with let (or is a parameter); use var to make it mutable", s->name);
            diag_note(c->d, sy->loc, "'%s' is bound here", s->name);
            return;
        }
        Ex v = lower_expr(c, s->a);
        if (!v.ok) return;
        v = coerce(c, v, sy->dt, s->a->loc, "the assigned value");
        if (!v.ok) return;
        if (v.v->rank != sy->rank) {
            diag_error(c->d, s->a->loc, "'%s' is %s but the assigned value is %s", s->name, tname(c->a, sy->dt, sy->rank),
                       tname(c->a, v.v->dt, v.v->rank));
            return;
        }
        Stmt *st = stmt_new(c, S_SET, s->loc);
        st->slot = sy->slot;
        st->v = v.v;
        emit(c, st);
        return;
    }
    case N_UPDATE: lower_update(c, s); return;
    case N_IF: {
        Val *cv = cond_val(c, s->a, "if");
        Stmt *st = stmt_new(c, S_IF, s->loc);
        st->v = cv;
        st->body = lower_sub_block(c, s->body);
        if (s->els) {
            if (s->els->kind == N_IF) {
                Stmt *head = NULL, **saved = c->tail;
                c->tail = &head;
                scope_push(c, false);
                lower_stmt(c, s->els);
                scope_pop(c);
                c->tail = saved;
                st->els = head;
            } else {
                st->els = lower_sub_block(c, s->els->kind == N_BLOCK ? s->els->body : s->els);
            }
        }
        if (cv) emit(c, st);
        return;
    }
    case N_FOR: {
        Val *lo = as_i64(c, lower_expr(c, s->a), s->a->loc, "the start of a for range");
        Val *hi = as_i64(c, lower_expr(c, s->b), s->b->loc, "the end of a for range");
        scope_push(c, false);
        int slot = slot_new(c, s->name, DT_I64, 0, false);
        Sym *sy = sym_add(c, s->name, s->loc);
        sy->kind = SYM_SLOT;
        sy->slot = slot;
        sy->dt = DT_I64;
        Stmt *st = stmt_new(c, S_FOR, s->loc);
        st->slot = slot;
        st->v = lo;
        st->v2 = hi;
        c->loop_depth++;
        st->body = lower_sub_block(c, s->body);
        c->loop_depth--;
        scope_pop(c);
        if (lo && hi) emit(c, st);
        return;
    }
    case N_WHILE: {
        c->in_while_cond = true;
        Val *cv = cond_val(c, s->a, "while");
        c->in_while_cond = false;
        Stmt *st = stmt_new(c, S_WHILE, s->loc);
        st->v = cv;
        c->loop_depth++;
        st->body = lower_sub_block(c, s->body);
        c->loop_depth--;
        if (cv) emit(c, st);
        return;
    }
    case N_RETURN: {
        Stmt *st = stmt_new(c, S_RETURN, s->loc);
        if (s->a && c->nres) {
            return_tuple(c, s->a, s->loc);
            return;
        }
        if (!s->a && c->nres) {
            diag_error(c->d, s->loc, "%s() must return its %d results: return (a, b);", c->cur_decl->name, c->nres);
            return;
        }
        if (s->a) {
            if (c->ret_dt == DT_VOID) {
                diag_error(c->d, s->loc, "%s() returns a value but declares no result type; add -> type after the parameters",
                           c->cur_decl->name);
                return;
            }
            Ex v = lower_expr(c, s->a);
            if (!v.ok) return;
            v = coerce(c, v, c->ret_dt, s->a->loc, "the returned value");
            if (!v.ok) return;
            if (v.v->rank != c->ret_rank) {
                diag_error(c->d, s->a->loc, "%s() is declared to return %s but this returns %s", c->cur_decl->name,
                           tname(c->a, c->ret_dt, c->ret_rank), tname(c->a, v.v->dt, v.v->rank));
                return;
            }
            st->v = check_result(c, c->cur_decl, c->cur_decl->type, v.v, c->ret_dims, s->loc, true);
            if (!st->v) return;
        } else if (c->ret_dt != DT_VOID) {
            diag_error(c->d, s->loc, "%s() must return a value of type %s", c->cur_decl->name, tname(c->a, c->ret_dt, c->ret_rank));
            return;
        }
        emit(c, st);
        return;
    }
    case N_EXPRSTMT: {
        Node *e = s->a;
        if (e->kind == N_CALL && (!strcmp(e->name, "print") || !strcmp(e->name, "save")) && !find_decl(c, e->name)) {
            bool isprint = e->name[0] == 'p';
            int na = 0;
            for (Node *a = e->args; a; a = a->next) na++;
            if (na != (isprint ? 1 : 2)) {
                diag_error(c->d, e->loc, isprint ? "print() takes one value" : "save() takes a file name and a value: save(\"x.npy\", x);");
                return;
            }
            Node *val = isprint ? e->args : e->args->next;
            if (!isprint && e->args->kind != N_STR) {
                diag_error(c->d, e->args->loc, "save() needs a file name in quotes as its first argument");
                return;
            }
            if (val->kind == N_NAMEDARG) {
                diag_error(c->d, val->loc, "%s() takes no named arguments", e->name);
                return;
            }
            Ex v = concrete(c, lower_expr(c, val));
            if (!v.ok) return;
            if (v.v->dt == DT_VOID) {
                diag_error(c->d, val->loc, "this call returns nothing, so there is nothing to %s", e->name);
                return;
            }
            Stmt *st = stmt_new(c, isprint ? S_PRINT : S_SAVE, e->loc);
            st->v = v.v;
            if (!isprint) st->path = e->args->sval;
            emit(c, st);
            return;
        }
        Ex v = lower_expr(c, e);
        if (!v.ok) return;
        if (v.v->op != OP_CALL) {
            diag_error(c->d, e->loc, "this expression's value is not used; bind it with let or print it");
            return;
        }
        Stmt *st = stmt_new(c, S_EVAL, s->loc);
        st->v = v.v;
        emit(c, st);
        return;
    }
    case N_BLOCK: {
        Stmt *b = lower_sub_block(c, s->body);
        Stmt *st = stmt_new(c, S_IF, s->loc);
        Val *t = mk(c, OP_CONST, DT_BOOL, 0, 0, s->loc);
        t->c.i = 1;
        st->v = t;
        st->body = b;
        emit(c, st);
        return;
    }
    default: diag_error(c->d, s->loc, "this is not a statement"); return;
    }
}

static void lower_block(Ctx *c, Node *body) {
    for (Node *s = body; s; s = s->next) {
        if (c->d->errors >= (c->d->max_errors ? c->d->max_errors : 50)) return;
        lower_stmt(c, s);
    }
}

static bool always_returns(Node *s) {
    Node *last = NULL;
    for (Node *x = s; x; x = x->next) last = x;
    if (!last) return false;
    if (last->kind == N_RETURN) return true;
    if (last->kind == N_IF && last->els) {
        Node *e = last->els->kind == N_IF ? last->els : last->els->body;
        return always_returns(last->body) && (last->els->kind == N_IF ? always_returns(e) : always_returns(e));
    }
    if (last->kind == N_BLOCK) return always_returns(last->body);
    return false;
}

/* Lowers decl as an IR function of its own (entry points and functions with control flow). */
static Fn *lower_fn(Ctx *c, Node *decl) {
    for (int i = 0; i < c->prog->nfns; i++)
        if (strcmp(c->prog->fns[i]->name, decl->name) == 0) return c->prog->fns[i];
    for (Node *p = decl->params; p; p = p->next)
        if (sema_is_typevar(p->type->name)) return NULL; /* generic: only inlined */
    Fn *f = NEW(c->a, Fn);
    f->name = decl->name;
    f->loc = decl->loc;
    f->ret_dt = DT_VOID;
    /* Register first so recursion finds it. */
    if (c->prog->nfns % 16 == 0) {
        Fn **nf = NEWN(c->a, Fn *, c->prog->nfns + 16);
        if (c->prog->nfns) memcpy(nf, c->prog->fns, sizeof(Fn *) * (size_t)c->prog->nfns);
        c->prog->fns = nf;
    }
    c->prog->fns[c->prog->nfns++] = f;
    Ctx saved = *c;
    c->fn = f;
    c->scope = NULL;
    c->nunbound = c->capunbound = 0;
    c->unbound = NULL;
    c->slot_cache = NULL;
    c->slot_cache_n = 0;
    scope_push(c, true);
    c->tv = NULL;
    c->map_fn = NULL;
    c->in_lambda = false;
    c->loop_depth = 0;
    c->cur_decl = decl;
    c->ret_dt = DT_VOID;
    c->ret_rank = 0;
    c->ret_dims = NULL;
    c->nres = 0;
    c->in_while_cond = false;
    c->facts = NULL;
    c->nfacts = c->capfacts = 0;
    c->depth = 0;
    c->deep_reported = false;
    c->height = NULL;
    c->nheight = 0;
    c->seen = NULL;
    c->nseen = 0;
    bool ok = true;
    if (decl->type && decl->type->kind == N_TUPLE) {
        int n = 0;
        for (Node *t = decl->type->args; t; t = t->next) n++;
        if (n == 1) {
            diag_error(c->d, decl->type->loc, "one result is written without parentheses (-> %s); a tuple of results "
                       "has two or more", decl->type->args->name);
            ok = false;
        } else if (n > MAX_RESULTS) {
            diag_error(c->d, decl->type->loc, "%s() declares %d results: at most %d", decl->name, n, MAX_RESULTS);
            ok = false;
        } else {
            c->nres = n;
            c->res_types = NEWN(c->a, Node *, n);
            c->res_dt = NEWN(c->a, DType, n);
            c->res_rank = NEWN(c->a, int, n);
            c->res_dims = NEWN(c->a, Val **, n);
            int k = 0;
            for (Node *t = decl->type->args; t; t = t->next, k++) {
                c->res_types[k] = t;
                c->res_dt[k] = DT_F32;
                if (!type_dims(t, &c->res_rank[k])) {
                    diag_error(c->d, t->loc, "at most %d dimensions", MAXRANK);
                    ok = false;
                }
                if (!dtype_from_name(t->name, &c->res_dt[k])) {
                    diag_error(c->d, t->loc, "unknown type '%s'; the types are %s", t->name, dtype_names());
                    ok = false;
                }
            }
            f->nres = n;
            f->res_dt = c->res_dt;
            f->res_rank = c->res_rank;
        }
    } else if (decl->type) {
        int rk;
        type_dims(decl->type, &rk);
        if (!dtype_from_name(decl->type->name, &c->ret_dt)) {
            diag_error(c->d, decl->type->loc, "unknown type '%s'; the types are %s", decl->type->name, dtype_names());
            ok = false;
        }
        c->ret_rank = rk;
    }
    f->ret_dt = c->ret_dt;
    f->ret_rank = c->ret_rank;
    Stmt *head = NULL;
    c->tail = &head;
    /* Parameters take the first slots; their size variables follow. */
    int np = 0;
    for (Node *p = decl->params; p; p = p->next) {
        for (Node *q = decl->params; q != p; q = q->next)
            if (strcmp(q->name, p->name) == 0) {
                diag_error(c->d, p->loc, "parameter '%s' is declared twice", p->name);
                ok = false;
            }
        int rk;
        DType dt = DT_F32;
        if (!type_dims(p->type, &rk)) {
            diag_error(c->d, p->type->loc, "at most %d dimensions", MAXRANK);
            ok = false;
        }
        if (!dtype_from_name(p->type->name, &dt)) {
            diag_error(c->d, p->type->loc, "unknown type '%s'; the types are %s", p->type->name, dtype_names());
            ok = false;
        }
        slot_new(c, p->name, dt, rk, false);
        Sym *s = sym_add(c, p->name, p->loc);
        s->kind = SYM_SLOT;
        s->slot = np++;
        s->dt = dt;
        s->rank = rk;
    }
    f->nparams = np;
    if (ok) {
        int i = 0;
        for (Node *p = decl->params; p; p = p->next, i++) {
            if (!p->type->dims) continue;
            Val *x = mk(c, OP_SLOT, f->slots[i].dt, f->slots[i].rank, 0, p->loc);
            x->slot = i;
            Val *checked;
            if (!bind_size_vars(c, p->type, x, p->loc, &checked)) {
                ok = false;
                continue;
            }
            if (checked != x) {
                Stmt *st = stmt_new(c, S_EVAL, p->loc);
                st->v = checked;
                emit(c, st);
                /* these run first, so the body may rely on them */
                for (Val *cv = checked; cv->op == OP_CHECKDIM; cv = cv->args[0]) fact_add(c, cv->args[1], cv->args[2]);
            }
        }
    }
    if (ok && decl->type && decl->type->dims) {
        c->ret_dims = result_dims(c, decl, decl->type);
        ok = c->ret_dims != NULL;
    }
    for (int k = 0; ok && k < c->nres; k++)
        if (c->res_types[k]->dims) ok = (c->res_dims[k] = result_dims(c, decl, c->res_types[k])) != NULL;
    if (ok && c->nres) {
        if (decl->a) {
            return_tuple(c, decl->a, decl->a->loc);
        } else {
            lower_block(c, decl->body);
            if (!always_returns(decl->body))
                diag_error(c->d, decl->loc, "%s() may end without returning its %d results", decl->name, c->nres);
        }
    } else if (ok) {
        if (decl->a) {
            Ex v = lower_expr(c, decl->a);
            if (v.ok && c->ret_dt != DT_VOID) {
                v = coerce(c, v, c->ret_dt, decl->a->loc, "the result");
                if (v.ok && v.v->rank != c->ret_rank) {
                    diag_error(c->d, decl->a->loc, "%s() is declared to return %s but its body is %s", decl->name,
                               tname(c->a, c->ret_dt, c->ret_rank), tname(c->a, v.v->dt, v.v->rank));
                    v = ex_bad();
                }
            } else if (v.ok) {
                diag_error(c->d, decl->loc, "%s() has an expression body, so it needs a result type: fn %s(...) -> T = ...;",
                           decl->name, decl->name);
                v = ex_bad();
            }
            if (v.ok) {
                Stmt *st = stmt_new(c, S_RETURN, decl->a->loc);
                st->v = check_result(c, decl, decl->type, v.v, c->ret_dims, node_first_loc(decl->a), true);
                if (st->v) emit(c, st);
            }
        } else {
            lower_block(c, decl->body);
            if (c->ret_dt != DT_VOID && !always_returns(decl->body))
                diag_error(c->d, decl->loc, "%s() may end without returning a value of type %s", decl->name,
                           tname(c->a, c->ret_dt, c->ret_rank));
        }
    }
    f->body = head;
    Program *prog = c->prog;
    *c = saved;
    c->prog = prog;
    return f;
}

/* Every user function gets an IR function (they are all possible entry points);
   generic ones (type variables) are only ever inlined. Lowering recurses once per level
   of nesting (more in sanitizer builds): the pipeline runs it on a deep stack. */
static void lower_all(Ctx *c) {
    for (int i = 0; i < c->nuser; i++) {
        if (c->decl_state[i] == 0 && !is_generic(c->decls[i])) {
            int before = c->d->errors;
            lower_fn(c, c->decls[i]);
            c->decl_state[i] = c->d->errors > before ? 2 : 1;
        }
        if (c->d->errors >= (c->d->max_errors ? c->d->max_errors : 50)) break;
    }
}

/* ---- per-element functions ----------------------------------------------------------- */

/* A function applied to arrays with control flow runs once per element inside a kernel
   (a __device__ function on the GPU, a scalar interpreter on the CPU): its body may use
   scalars, set/if/for/while/return and calls of such functions, and may not recurse. */
typedef struct ElemCheck {
    Ctx *c;
    const Val *site; /* the OP_SCALARCALL being checked */
    Fn **stack;      /* the calls being followed, for recursion */
    int depth;
    Fn **ok;         /* functions found fine */
    int nok;
} ElemCheck;

static bool elem_fn_ok(ElemCheck *e, Fn *f);

static bool elem_fail(ElemCheck *e, Loc loc, const char *fmt, const char *fname, const char *what) {
    diag_error(e->c->d, loc, fmt, fname, what);
    diag_note(e->c->d, e->site->loc, "%s() is applied elementwise to arrays here, so it runs once per element",
              e->site->fn->name);
    return false;
}

static bool elem_val_ok(ElemCheck *e, Fn *f, Val *v, unsigned char *seen) {
    if (!v || (v->id < f->nvals && seen[v->id])) return true;
    if (v->id < f->nvals) seen[v->id] = 1;
    const char *opn = v->op < OP_EW_END ? ew_info[v->op].name : op_name[v->op];
    if (v->rank > 0)
        return elem_fail(e, v->loc, "%s() runs per element where it is applied to arrays, so it may only use scalars; "
                         "this value is %s", f->name, tname(e->c->a, v->dt, v->rank));
    if (!(v->op < OP_EW_END || v->op == OP_CAST || v->op == OP_CONST || v->op == OP_SLOT || v->op == OP_CALL))
        return elem_fail(e, v->loc, "%s() runs per element where it is applied to arrays, so it may only use scalar "
                         "operations; '%s' is not one", f->name, opn);
    for (int k = 0; k < v->nargs; k++)
        if (!elem_val_ok(e, f, v->args[k], seen)) return false;
    if (v->op == OP_CALL) {
        if (v->fn->ret_dt == DT_VOID || v->fn->ret_rank != 0)
            return elem_fail(e, v->loc, "%s() runs per element where it is applied to arrays, so the functions it "
                             "calls must return a scalar; %s() does not", f->name, v->fn->name);
        for (int k = 0; k < e->depth; k++)
            if (e->stack[k] == v->fn) {
                const char *chain = "";
                for (int j = k; j < e->depth; j++) chain = arena_printf(e->c->a, "%s%s() -> ", chain, e->stack[j]->name);
                diag_error(e->c->d, v->loc, "%s() calls itself (%s%s()), so it cannot run per element: functions "
                           "applied elementwise to arrays cannot recurse; write the recursion as a loop "
                           "(called on scalars, it runs on the host and may recurse)",
                           v->fn->name, chain, v->fn->name);
                diag_note(e->c->d, e->site->loc, "%s() is applied elementwise to arrays here", e->site->fn->name);
                return false;
            }
        if (!elem_fn_ok(e, v->fn)) return false;
    }
    return true;
}

static bool elem_stmts_ok(ElemCheck *e, Fn *f, Stmt *s, unsigned char *seen) {
    for (; s; s = s->next) {
        switch (s->kind) {
        case S_SET:
        case S_IF:
        case S_FOR:
        case S_WHILE:
        case S_RETURN: break;
        default:
            return elem_fail(e, s->loc, "%s() runs per element where it is applied to arrays, so it cannot %s",
                             f->name, s->kind == S_PRINT ? "print" : s->kind == S_SAVE ? "save" : "call functions for their effects");
        }
        memset(seen, 0, (size_t)f->nvals + 1);
        if (!elem_val_ok(e, f, s->v, seen)) return false;
        memset(seen, 0, (size_t)f->nvals + 1);
        if (!elem_val_ok(e, f, s->v2, seen)) return false;
        if (!elem_stmts_ok(e, f, s->body, seen) || !elem_stmts_ok(e, f, s->els, seen)) return false;
    }
    return true;
}

static bool elem_fn_ok(ElemCheck *e, Fn *f) {
    for (int k = 0; k < e->nok; k++)
        if (e->ok[k] == f) return true;
    if (e->depth >= e->c->prog->nfns + 1) die("per-element check: call chain longer than the program");
    e->stack[e->depth++] = f;
    unsigned char *seen = NEWN(e->c->a, unsigned char, (size_t)f->nvals + 1);
    bool ok = elem_stmts_ok(e, f, f->body, seen);
    e->depth--;
    for (int k = 0; k < f->nslots && ok; k++)
        if (f->slots[k].rank > 0)
            ok = elem_fail(e, f->loc, "%s() runs per element where it is applied to arrays, so it may only use "
                           "scalars; '%s' is an array", f->name, f->slots[k].name);
    if (ok) e->ok[e->nok++] = f;
    return ok;
}

static void check_scalar_calls(Ctx *c) {
    for (int i = 0; i < c->scalls->n; i++) {
        int n = c->prog->nfns + 1;
        ElemCheck e = {c, c->scalls->v[i], NEWN(c->a, Fn *, n), 0, NEWN(c->a, Fn *, n), 0};
        elem_fn_ok(&e, c->scalls->v[i]->fn);
    }
}

Program *sema_program(Arena *a, Diag *d, Node *user, Node *stdlib) {
    Ctx c = {0};
    c.a = a;
    c.d = d;
    int n = 0;
    for (Node *f = user ? user->body : NULL; f; f = f->next) n++;
    for (Node *f = stdlib ? stdlib->body : NULL; f; f = f->next) n++;
    c.decls = NEWN(a, Node *, n + 1);
    for (Node *f = user ? user->body : NULL; f; f = f->next) {
        Node *prev = NULL;
        for (int i = 0; i < c.ndecls; i++)
            if (strcmp(c.decls[i]->name, f->name) == 0) prev = c.decls[i];
        if (prev) {
            diag_error(d, f->loc, "function '%s' is defined twice", f->name);
            diag_note(d, prev->loc, "the first definition is here");
            continue;
        }
        c.decls[c.ndecls++] = f;
    }
    c.nuser = c.ndecls;
    for (Node *f = stdlib ? stdlib->body : NULL; f; f = f->next)
        if (!find_decl(&c, f->name)) c.decls[c.ndecls++] = f;
    Program *p = NEW(a, Program);
    p->arena = a;
    c.prog = p;
    c.decl_state = NEWN(a, unsigned char, n + 1);
    for (int i = 0; i < c.nuser; i++)
        if (!check_type_sizes(&c, c.decls[i])) c.decl_state[i] = 2;
    ScalarCalls scalls = {0};
    c.scalls = &scalls;
    lower_all(&c);
    check_scalar_calls(&c);
    /* Calls can lower a callee before its turn: list functions in source order. */
    int k = 0;
    for (int i = 0; i < c.ndecls; i++)
        for (int j = k; j < p->nfns; j++)
            if (strcmp(p->fns[j]->name, c.decls[i]->name) == 0) {
                Fn *t = p->fns[k];
                p->fns[k++] = p->fns[j];
                p->fns[j] = t;
                break;
            }
    /* Stdlib functions are type-checked where they are used (tests/lit runs them all). */
    if (d->errors) return NULL;
    return p;
}

Fn *program_find(const Program *p, const char *name) {
    for (int i = 0; i < p->nfns; i++)
        if (strcmp(p->fns[i]->name, name) == 0) return p->fns[i];
    return NULL;
}
