/* The typed IR: per function, structured host statements whose values are DAGs of
   array operations. Op and dtype tables are written once here, as X-macros, and every
   pass (sema, printer, CPU backend, CUDA emitter) expands them. */
#ifndef CUK_IR_H
#define CUK_IR_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../lang/arena.h"
#include "../lang/ast.h"
#include "../lang/diag.h"

#define MAXRANK 8
#define AXIS_ALL (-100) /* reduce over every axis / scan over the flattened array */

/* X(NAME, spelling, C storage type, C unsigned twin, is_float, is_int, is_signed, npy code) */
#define DTYPES(X)                                              \
    X(BOOL, "bool", uint8_t, uint8_t, 0, 0, 0, "|b1")           \
    X(I32, "i32", int32_t, uint32_t, 0, 1, 1, "<i4")            \
    X(I64, "i64", int64_t, uint64_t, 0, 1, 1, "<i8")            \
    X(U32, "u32", uint32_t, uint32_t, 0, 1, 0, "<u4")           \
    X(U64, "u64", uint64_t, uint64_t, 0, 1, 0, "<u8")           \
    X(F32, "f32", float, uint32_t, 1, 0, 1, "<f4")              \
    X(F64, "f64", double, uint64_t, 1, 0, 1, "<f8")

typedef enum {
#define X(n, ...) DT_##n,
    DTYPES(X)
#undef X
        DT_COUNT,
    DT_VOID = DT_COUNT /* functions that return nothing */
} DType;

typedef struct DTypeInfo {
    const char *name;
    int size;
    bool is_float, is_int, is_signed;
    const char *npy;  /* numpy descr, little-endian */
    const char *ctype;/* C/CUDA spelling of the storage type */
} DTypeInfo;
extern const DTypeInfo dtype_info[DT_COUNT];
bool dtype_from_name(const char *name, DType *out);

/* Elementwise op classes: the typing rule sema applies and the operand kinds allowed. */
typedef enum {
    OC_ARITH, /* (T, T) -> T, T numeric */
    OC_NUM1,  /* T -> T, T numeric */
    OC_FLOAT, /* float T (1 or 2 operands) -> T */
    OC_CMP,   /* (T, T) -> bool, any T */
    OC_LOGIC, /* bool operands -> bool */
    OC_BITS,  /* integer or bool T (1 or 2 operands) -> T; shifts integer only */
    OC_PRED,  /* numeric T -> bool */
    OC_SELECT,/* (bool, T, T) -> T */
    OC_CLAMP, /* (T, T, T) -> T numeric */
} OpClass;

/* Elementwise ops. X(NAME, spelling, arity, class, f32 expr, f64 expr, integer/bool expr).
   Expressions are plain C that is also valid CUDA C: operands are a, b, c; in integer
   expressions T is the storage type and U its unsigned twin (both typedef'd where the
   expression is expanded). Helpers (cuk_*) live in kernels/ops.h, shared by the CPU
   backend and the emitted CUDA. A 0 column means "not defined for that kind". */
#define EW_OPS(X)                                                                              \
    X(NEG, "neg", 1, OC_NUM1, (-a), (-a), (T)(0u - (U)a))                                     \
    X(ABS, "abs", 1, OC_NUM1, fabsf(a), fabs(a), cuk_iabs(a))                                 \
    X(NOT, "not", 1, OC_LOGIC, 0, 0, (T)(!a))                                                 \
    X(BNOT, "bnot", 1, OC_BITS, 0, 0, (T)(~(U)a))                                             \
    X(SQRT, "sqrt", 1, OC_FLOAT, sqrtf(a), sqrt(a), 0)                                        \
    X(RSQRT, "rsqrt", 1, OC_FLOAT, (1.0f / sqrtf(a)), (1.0 / sqrt(a)), 0)                      \
    X(EXP, "exp", 1, OC_FLOAT, expf(a), exp(a), 0)                                            \
    X(EXP2, "exp2", 1, OC_FLOAT, exp2f(a), exp2(a), 0)                                        \
    X(LOG, "log", 1, OC_FLOAT, logf(a), log(a), 0)                                            \
    X(LOG2, "log2", 1, OC_FLOAT, log2f(a), log2(a), 0)                                        \
    X(LOG10, "log10", 1, OC_FLOAT, log10f(a), log10(a), 0)                                    \
    X(SIN, "sin", 1, OC_FLOAT, sinf(a), sin(a), 0)                                            \
    X(COS, "cos", 1, OC_FLOAT, cosf(a), cos(a), 0)                                            \
    X(TAN, "tan", 1, OC_FLOAT, tanf(a), tan(a), 0)                                            \
    X(ASIN, "asin", 1, OC_FLOAT, asinf(a), asin(a), 0)                                        \
    X(ACOS, "acos", 1, OC_FLOAT, acosf(a), acos(a), 0)                                        \
    X(ATAN, "atan", 1, OC_FLOAT, atanf(a), atan(a), 0)                                        \
    X(SINH, "sinh", 1, OC_FLOAT, sinhf(a), sinh(a), 0)                                        \
    X(COSH, "cosh", 1, OC_FLOAT, coshf(a), cosh(a), 0)                                        \
    X(TANH, "tanh", 1, OC_FLOAT, tanhf(a), tanh(a), 0)                                        \
    X(ERF, "erf", 1, OC_FLOAT, erff(a), erf(a), 0)                                            \
    X(FLOOR, "floor", 1, OC_FLOAT, floorf(a), floor(a), 0)                                    \
    X(CEIL, "ceil", 1, OC_FLOAT, ceilf(a), ceil(a), 0)                                        \
    X(ROUND, "round", 1, OC_FLOAT, rintf(a), rint(a), 0) /* half to even, like NumPy */       \
    X(TRUNC, "trunc", 1, OC_FLOAT, truncf(a), trunc(a), 0)                                    \
    X(ISNAN, "isnan", 1, OC_PRED, (a != a), (a != a), 0)                                      \
    X(ISINF, "isinf", 1, OC_PRED, (fabsf(a) == INFINITY), (fabs(a) == INFINITY), 0)           \
    X(ADD, "add", 2, OC_ARITH, (a + b), (a + b), (T)((U)a + (U)b))                            \
    X(SUB, "sub", 2, OC_ARITH, (a - b), (a - b), (T)((U)a - (U)b))                            \
    X(MUL, "mul", 2, OC_ARITH, (a * b), (a * b), (T)((U)a * (U)b))                            \
    X(DIV, "div", 2, OC_ARITH, (a / b), (a / b), cuk_idiv(a, b))                              \
    X(MOD, "mod", 2, OC_ARITH, fmodf(a, b), fmod(a, b), cuk_imod(a, b))                       \
    X(POW, "pow", 2, OC_ARITH, powf(a, b), pow(a, b), cuk_ipow(a, b))                         \
    X(MINIMUM, "minimum", 2, OC_ARITH, cuk_fminf(a, b), cuk_fmin(a, b), (a < b ? a : b))      \
    X(MAXIMUM, "maximum", 2, OC_ARITH, cuk_fmaxf(a, b), cuk_fmax(a, b), (a > b ? a : b))      \
    X(ATAN2, "atan2", 2, OC_FLOAT, atan2f(a, b), atan2(a, b), 0)                              \
    X(FMOD, "fmod", 2, OC_FLOAT, fmodf(a, b), fmod(a, b), 0)                                  \
    X(EQ, "eq", 2, OC_CMP, (a == b), (a == b), (a == b))                                      \
    X(NE, "ne", 2, OC_CMP, (a != b), (a != b), (a != b))                                      \
    X(LT, "lt", 2, OC_CMP, (a < b), (a < b), (a < b))                                         \
    X(LE, "le", 2, OC_CMP, (a <= b), (a <= b), (a <= b))                                      \
    X(GT, "gt", 2, OC_CMP, (a > b), (a > b), (a > b))                                         \
    X(GE, "ge", 2, OC_CMP, (a >= b), (a >= b), (a >= b))                                      \
    X(LAND, "and", 2, OC_LOGIC, 0, 0, (T)(a && b))                                            \
    X(LOR, "or", 2, OC_LOGIC, 0, 0, (T)(a || b))                                              \
    X(BAND, "band", 2, OC_BITS, 0, 0, (T)(a & b))                                             \
    X(BOR, "bor", 2, OC_BITS, 0, 0, (T)(a | b))                                               \
    X(BXOR, "bxor", 2, OC_BITS, 0, 0, (T)(a ^ b))                                             \
    X(SHL, "shl", 2, OC_BITS, 0, 0, cuk_shl(a, b))                                            \
    X(SHR, "shr", 2, OC_BITS, 0, 0, cuk_shr(a, b))                                            \
    X(SELECT, "select", 3, OC_SELECT, (a ? b : c), (a ? b : c), (a ? b : c))                  \
    X(CLAMP, "clamp", 3, OC_CLAMP, cuk_fminf(cuk_fmaxf(a, b), c), cuk_fmin(cuk_fmax(a, b), c), \
      (a < b ? b : (a > c ? c : a)))

/* Every IR op. The elementwise ones come first, so op < OP_EW_END means elementwise. */
typedef enum {
#define X(n, ...) OP_##n,
    EW_OPS(X)
#undef X
        OP_EW_END,
    OP_CAST = OP_EW_END, /* args[0] converted to v->dt (elementwise) */
    OP_CONST,     /* scalar literal v->c of type v->dt */
    OP_SLOT,      /* read of host variable slot v->slot (params come first) */
    OP_ARG,       /* inside a lambda body: argument number v->slot */
    OP_DIM,       /* i64 scalar: size of args[0] along axis v->axis */
    OP_CHECKDIM,  /* passes args[0] through after checking i64 args[1] == args[2]; v->msg has
                     two %lld for the two values */
    /* generators: fused as kernel inputs; dims are i64 scalar operands */
    OP_IOTA,      /* args: n -> i64[n] (or v->dt) 0, 1, ... */
    OP_FULL,      /* args: value (scalar of v->dt), dims... */
    OP_LINSPACE,  /* args: start, stop (scalars of v->dt), n (i64); endpoint included */
    OP_RAND,      /* args: seed (i64), dims... uniform [0, 1), Philox (kernels/philox.h) */
    OP_RANDN,     /* args: seed (i64), dims... standard normal, Philox + Box-Muller */
    /* reductions and scans: v->red names the combine, v->axis (AXIS_ALL or 0..rank-1) */
    OP_REDUCE,    /* args: x [, init]; v->keepdims */
    OP_SCAN,      /* args: x [, init]; v->exclusive */
    /* structure */
    OP_SLICE,     /* args[0] = x; for input axis k, args[1+3k .. 3+3k] = start, stop, step
                     (any may be NULL); v->slmode[k] says SL_INDEX (start only, axis dropped)
                     or SL_RANGE. Negative indices count from the end, as in NumPy. */
    OP_GATHER,    /* args: x, idx (integer array): result idx.shape ++ x.shape[1:] */
    OP_REVERSE,   /* args: x; reverses axis 0 */
    OP_CONCAT,    /* args: xs... along v->axis */
    OP_RESHAPE,   /* args: x, dims... (one dim may be -1) */
    OP_TRANSPOSE, /* args: x; v->perm */
    OP_MATMUL,    /* args: x (2-D), y (1-D or 2-D) */
    OP_LOAD,      /* v->path: read a .npy file of type v->dt and rank v->rank */
    OP_CALL,      /* v->fn(args...) run on the host with its own frame */
    OP_COUNT
} OpKind;

extern const char *const op_name[OP_COUNT];
typedef struct OpInfo {
    const char *name;
    int arity;
    OpClass cls;
} OpInfo;
extern const OpInfo ew_info[OP_EW_END];
static inline bool op_is_ew(int op) { return op < OP_EW_END || op == OP_CAST; }

/* Combine operators for OP_REDUCE / OP_SCAN. */
#define RED_OPS(X)                                   \
    X(SUM, "sum") X(PROD, "prod") X(MIN, "min") X(MAX, "max") X(ANY, "any") X(ALL, "all") \
    X(ARGMIN, "argmin") X(ARGMAX, "argmax") X(LAMBDA, "lambda")
typedef enum {
#define X(n, s) RED_##n,
    RED_OPS(X)
#undef X
        RED_COUNT
} RedOp;
extern const char *const red_name[RED_COUNT];

enum { SL_RANGE = 0, SL_INDEX = 1 };

typedef union Scalar {
    int64_t i; /* bool and signed ints */
    uint64_t u;/* unsigned ints */
    double f;  /* f32 and f64 */
} Scalar;

typedef struct Fn Fn;
typedef struct Val Val;
struct Val {
    OpKind op;
    DType dt;
    int rank;      /* static rank; 0 = scalar */
    int nargs;
    Val **args;
    Loc loc;       /* for run-time errors (shape mismatch, index out of range) */
    int id;        /* numbering within its function, for printing */
    Scalar c;      /* OP_CONST */
    int slot;      /* OP_SLOT slot, OP_ARG index */
    int axis;      /* OP_DIM, OP_REDUCE, OP_SCAN, OP_CONCAT */
    bool keepdims; /* OP_REDUCE */
    bool exclusive;/* OP_SCAN */
    RedOp red;     /* OP_REDUCE, OP_SCAN */
    Val *lam;      /* RED_LAMBDA: body over OP_ARG 0 (accumulator) and 1 (element), type v->dt */
    Val *init;     /* OP_REDUCE/OP_SCAN: initial value (scalar of v's element type) or NULL */
    int perm[MAXRANK];            /* OP_TRANSPOSE */
    unsigned char slmode[MAXRANK];/* OP_SLICE */
    const char *path;             /* OP_LOAD */
    const char *msg;              /* OP_CHECKDIM */
    Fn *fn;                       /* OP_CALL */
    int kernel;                   /* fusion group, -1 until the fusion pass runs */
};

typedef enum {
    S_SET,    /* slots[slot] = v (let, var, assignment) */
    S_IF,     /* if v { body } else { els } */
    S_FOR,    /* for slot in v .. v2 { body } (i64, half-open) */
    S_WHILE,  /* while v { body } */
    S_RETURN, /* return v (v NULL for none) */
    S_PRINT,  /* print(v) */
    S_SAVE,   /* save(path, v) */
    S_EVAL,   /* evaluate v for its effects (a call whose result is dropped) */
} StmtKind;

typedef struct Stmt Stmt;
struct Stmt {
    StmtKind kind;
    Loc loc;
    Stmt *next;
    int slot;
    Val *v, *v2;
    Stmt *body, *els;
    const char *path;
};

typedef struct Slot {
    const char *name;
    DType dt;
    int rank;
    bool mutable_;
} Slot;

struct Fn {
    const char *name;
    Loc loc;
    int nparams;   /* slots 0 .. nparams-1 are the parameters */
    int nslots;
    Slot *slots;
    DType ret_dt;  /* DT_VOID for none */
    int ret_rank;
    Stmt *body;
    int nvals;     /* ids handed out so far */
    bool from_stdlib;
};

typedef struct Program {
    Arena *arena;
    int nfns;
    Fn **fns;      /* the user's functions and the stdlib functions they reach */
} Program;

/* sema.c: type-checks the user's program (with the stdlib's functions in scope) and
   lowers it to IR. Returns NULL after reporting errors to d. */
Program *sema_program(Arena *a, Diag *d, Node *user, Node *stdlib);
Fn *program_find(const Program *p, const char *name);

/* frontend.c: parse + stdlib + sema in one call (NULL after reporting errors to d; *ast,
   if given, gets the user's syntax tree even then). stdlib_parse gives the embedded
   stdlib's functions as one N_PROGRAM. */
Program *compile_src(Arena *a, Diag *d, const Src *src, Node **ast);
Node *stdlib_parse(Arena *a, Diag *d);

/* ir_print.c: the stable text form printed by `cukc emit-ir`. */
void ir_print(FILE *out, const Program *p);

/* Runs fn(arg) to completion on a thread of its own with a large stack, for the passes
   whose recursion follows the program's nesting (sema, the CUDA emitter), so that they
   do not depend on the caller's stack (a Python thread may have 1 MiB). */
void run_deep(void (*fn)(void *), void *arg);

/* Helpers shared by the backends. */
Val *val_new(Arena *a, Fn *f, OpKind op, DType dt, int rank, int nargs, Loc loc);
/* NumPy broadcasting of two shapes; false if incompatible. */
bool broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                      int64_t *out);
const char *fmt_shape(char *buf, size_t n, int rank, const int64_t *shape);

#endif
