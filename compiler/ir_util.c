/* The IR's tables (dtype, op and reduction names), expanded from the X-macros in ir.h,
   and small helpers every backend shares: node creation, broadcasting, shape text. */
#include <stdio.h>
#include <string.h>

#include "ir.h"

const DTypeInfo dtype_info[DT_COUNT] = {
#define X(n, s, ct, ut, isf, isi, iss, npy) {s, (int)sizeof(ct), isf, isi, iss, npy, #ct},
    DTYPES(X)
#undef X
};

bool dtype_from_name(const char *name, DType *out) {
    for (int i = 0; i < DT_COUNT; i++) {
        if (strcmp(dtype_info[i].name, name) == 0) {
            *out = (DType)i;
            return true;
        }
    }
    return false;
}

const char *dtype_names(void) {
    static char buf[160];
    if (!buf[0]) {
        /* the language's order: bool, the integers by width, the floats, the complex types */
        static const DType order[] = {DT_BOOL, DT_I8, DT_I16, DT_I32, DT_I64, DT_U8, DT_U16, DT_U32,
                                      DT_U64, DT_F16, DT_BF16, DT_F32, DT_F64, DT_C64, DT_C128};
        _Static_assert(sizeof order / sizeof order[0] == DT_COUNT, "a dtype is missing from dtype_names");
        size_t n = 0;
        for (int i = 0; i < DT_COUNT; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", dtype_info[order[i]].name);
    }
    return buf;
}

const char *const op_name[OP_COUNT] = {
#define X(n, s, ...) [OP_##n] = s,
    EW_OPS(X) OPS(X)
#undef X
};

const OpInfo ew_info[OP_EW_END] = {
#define X(n, s, b, ar, cls, cost, ...) [OP_##n] = {s, b, ar, cls, cost},
    EW_OPS(X)
#undef X
};

const OpClassInfo op_info[OP_COUNT] = {
#define X(n, s, b, ar, cls, cost, ...) [OP_##n] = {OK_EW, VA_ALL, cost},
    EW_OPS(X)
#undef X
#define X(n, s, kind, vargs, cost) [OP_##n] = {kind, vargs, cost},
    OPS(X)
#undef X
};

const char *const red_name[RED_COUNT] = {
#define X(n, s, ...) [RED_##n] = s,
    RED_OPS(X)
#undef X
};

const RedInfo red_info[RED_COUNT] = {
#define X(n, s, r, sc) [RED_##n] = {r, sc},
    RED_OPS(X)
#undef X
};

Val *val_new(Arena *a, Fn *f, OpKind op, DType dt, int rank, int nargs, Loc loc) {
    Val *v = NEW(a, Val);
    v->op = op;
    v->dt = dt;
    v->rank = rank;
    v->nargs = nargs;
    v->args = nargs > 0 ? NEWN(a, Val *, nargs) : NULL;
    v->loc = loc;
    v->id = f ? f->nvals++ : 0;
    v->kernel = -1;
    for (int i = 0; i < MAXRANK; i++) v->perm[i] = i;
    return v;
}

bool broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                      int64_t *out) {
    int r = ra > rb ? ra : rb;
    if (r > MAXRANK) return false;
    /* Trailing alignment: axis k of the result meets a's axis k-(r-ra), if any. */
    int64_t tmp[MAXRANK];
    for (int k = 0; k < r; k++) {
        int ia = k - (r - ra), ib = k - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1)
            tmp[k] = da;
        else if (da == 1)
            tmp[k] = db;
        else
            return false;
    }
    memcpy(out, tmp, sizeof(int64_t) * (size_t)r);
    *rout = r;
    return true;
}

const char *fmt_shape(char *buf, size_t n, int rank, const int64_t *shape) {
    size_t used = 0;
    if (n == 0) return buf;
    buf[0] = 0;
    used += (size_t)snprintf(buf, n, "(");
    for (int k = 0; k < rank && used < n; k++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", k ? "," : "",
                                 (long long)shape[k]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}
