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

/* The 16-bit floats' storage on the host: their bits (kernels/ops.h converts; on the GPU
   they are classes of the same layout). No arithmetic: the IR widens it to f32. */
typedef struct cuk_f16 { uint16_t bits; } cuk_f16;
typedef struct cuk_bf16 { uint16_t bits; } cuk_bf16;
/* The complex types' storage: NumPy's complex64 and complex128 (re, then im). */
typedef struct cuk_c64 { float re, im; } cuk_c64;
typedef struct cuk_c128 { double re, im; } cuk_c128;

/* X(NAME, spelling, C storage type, C unsigned twin, is_float, is_int, is_signed, npy code).
   New types go at the end: the codes are the C API's (api/cuk_program.h). DTYPES_NUM
   leaves out the 16-bit floats and the complex types, whose storage types are no C
   numbers. */
#define DTYPES_NUM(X)                                          \
    X(BOOL, "bool", uint8_t, uint8_t, 0, 0, 0, "|b1")           \
    X(I32, "i32", int32_t, uint32_t, 0, 1, 1, "<i4")            \
    X(I64, "i64", int64_t, uint64_t, 0, 1, 1, "<i8")            \
    X(U32, "u32", uint32_t, uint32_t, 0, 1, 0, "<u4")           \
    X(U64, "u64", uint64_t, uint64_t, 0, 1, 0, "<u8")           \
    X(F32, "f32", float, uint32_t, 1, 0, 1, "<f4")              \
    X(F64, "f64", double, uint64_t, 1, 0, 1, "<f8")             \
    X(I8, "i8", int8_t, uint8_t, 0, 1, 1, "|i1")                \
    X(I16, "i16", int16_t, uint16_t, 0, 1, 1, "<i2")            \
    X(U8, "u8", uint8_t, uint8_t, 0, 1, 0, "|u1")               \
    X(U16, "u16", uint16_t, uint16_t, 0, 1, 0, "<u2")
#define DTYPES_REAL(X)                                         \
    DTYPES_NUM(X)                                              \
    X(F16, "f16", cuk_f16, uint16_t, 1, 0, 1, "<f2")            \
    X(BF16, "bf16", cuk_bf16, uint16_t, 1, 0, 1, "<V2") /* NumPy has none: ml_dtypes saves it as V2 */
#define DTYPES(X)                                              \
    DTYPES_REAL(X)                                             \
    X(C64, "c64", cuk_c64, uint64_t, 0, 0, 1, "<c8")            \
    X(C128, "c128", cuk_c128, uint64_t, 0, 0, 1, "<c16")

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
/* "bool, i8, ..., c128": every type's name, for messages. */
const char *dtype_names(void);
/* The 16-bit floats, computed in f32; and the type the IR computes a narrow type in
   (compiler/widen.c): f32 for them, i32 for the 8- and 16-bit integers, else dt. */
static inline bool dtype_is_half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }
/* The complex types, and the real type of their parts (f32, f64; dt itself otherwise). */
static inline bool dtype_is_complex(DType dt) { return dt == DT_C64 || dt == DT_C128; }
static inline DType dtype_part(DType dt) { return dt == DT_C64 ? DT_F32 : dt == DT_C128 ? DT_F64 : dt; }
static inline DType dtype_complex_of(DType dt) { return dt == DT_F64 ? DT_C128 : DT_C64; }
static inline DType dtype_wide(DType dt) {
    return dtype_is_half(dt) ? DT_F32 : (dt == DT_I8 || dt == DT_I16 || dt == DT_U8 || dt == DT_U16) ? DT_I32 : dt;
}

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

/* Elementwise ops, one row each: X(NAME, IR spelling, builtin spelling (0 where only an
   operator reaches it), arity, class, cost, f32 expr, f64 expr, integer/bool expr).
   Sema takes the builtins from the spelling column, the fusion pass its recompute cost
   (rule 7, in units of one add; transcendentals 8). Expressions are plain C that is
   also valid CUDA C: operands are a, b, c; in integer expressions T is the storage type
   and U its unsigned twin (both typedef'd where the expression is expanded). Helpers
   (cuk_*) live in kernels/ops.h, shared by the CPU backend and the emitted CUDA. A 0
   expression means "not defined for that kind". Adding an elementwise builtin is one
   row here (and its helper in ops.h if it needs one). */
#define EW_OPS(X) \
    X(NEG, "neg", 0, 1, OC_NUM1, 1, (-a), (-a), (T)(0u - (U)a))                                                                             \
    X(ABS, "abs", "abs", 1, OC_NUM1, 1, fabsf(a), fabs(a), cuk_iabs(a))                                                                     \
    X(NOT, "not", 0, 1, OC_LOGIC, 1, 0, 0, (T)(!a))                                                                                         \
    X(BNOT, "bnot", 0, 1, OC_BITS, 1, 0, 0, (T)(~(U)a))                                                                                     \
    X(SQRT, "sqrt", "sqrt", 1, OC_FLOAT, 2, sqrtf(a), sqrt(a), 0)                                                                           \
    X(RSQRT, "rsqrt", "rsqrt", 1, OC_FLOAT, 2, (1.0f / sqrtf(a)), (1.0 / sqrt(a)), 0)                                                       \
    X(EXP, "exp", "exp", 1, OC_FLOAT, 8, expf(a), exp(a), 0)                                                                                \
    X(EXP2, "exp2", "exp2", 1, OC_FLOAT, 8, exp2f(a), exp2(a), 0)                                                                           \
    X(LOG, "log", "log", 1, OC_FLOAT, 8, logf(a), log(a), 0)                                                                                \
    X(LOG2, "log2", "log2", 1, OC_FLOAT, 8, log2f(a), log2(a), 0)                                                                           \
    X(LOG10, "log10", "log10", 1, OC_FLOAT, 8, log10f(a), log10(a), 0)                                                                      \
    X(SIN, "sin", "sin", 1, OC_FLOAT, 8, sinf(a), sin(a), 0)                                                                                \
    X(COS, "cos", "cos", 1, OC_FLOAT, 8, cosf(a), cos(a), 0)                                                                                \
    X(TAN, "tan", "tan", 1, OC_FLOAT, 8, tanf(a), tan(a), 0)                                                                                \
    X(ASIN, "asin", "asin", 1, OC_FLOAT, 8, asinf(a), asin(a), 0)                                                                           \
    X(ACOS, "acos", "acos", 1, OC_FLOAT, 8, acosf(a), acos(a), 0)                                                                           \
    X(ATAN, "atan", "atan", 1, OC_FLOAT, 8, atanf(a), atan(a), 0)                                                                           \
    X(SINH, "sinh", "sinh", 1, OC_FLOAT, 8, sinhf(a), sinh(a), 0)                                                                           \
    X(COSH, "cosh", "cosh", 1, OC_FLOAT, 8, coshf(a), cosh(a), 0)                                                                           \
    X(TANH, "tanh", "tanh", 1, OC_FLOAT, 8, tanhf(a), tanh(a), 0)                                                                           \
    X(ERF, "erf", "erf", 1, OC_FLOAT, 8, erff(a), erf(a), 0)                                                                                \
    X(FLOOR, "floor", "floor", 1, OC_FLOAT, 2, floorf(a), floor(a), 0)                                                                      \
    X(CEIL, "ceil", "ceil", 1, OC_FLOAT, 2, ceilf(a), ceil(a), 0)                                                                           \
    X(ROUND, "round", "round", 1, OC_FLOAT, 2, rintf(a), rint(a), 0) /* half to even */                                                                        \
    X(TRUNC, "trunc", "trunc", 1, OC_FLOAT, 2, truncf(a), trunc(a), 0)                                                                      \
    X(ISNAN, "isnan", "isnan", 1, OC_PRED, 1, (a != a), (a != a), 0)                                                                        \
    X(ISINF, "isinf", "isinf", 1, OC_PRED, 1, (fabsf(a) == INFINITY), (fabs(a) == INFINITY), 0)                                             \
    X(ADD, "add", 0, 2, OC_ARITH, 1, (a + b), (a + b), (T)((U)a + (U)b))                                                                    \
    X(SUB, "sub", 0, 2, OC_ARITH, 1, (a - b), (a - b), (T)((U)a - (U)b))                                                                    \
    X(MUL, "mul", 0, 2, OC_ARITH, 1, (a * b), (a * b), (T)((U)a * (U)b))                                                                    \
    X(DIV, "div", 0, 2, OC_ARITH, 4, (a / b), (a / b), cuk_idiv(a, b))                                                                      \
    X(MOD, "mod", 0, 2, OC_ARITH, 4, fmodf(a, b), fmod(a, b), cuk_imod(a, b))                                                               \
    X(POW, "pow", "pow", 2, OC_ARITH, 10, powf(a, b), pow(a, b), cuk_ipow(a, b))                                                            \
    X(MINIMUM, "minimum", "minimum", 2, OC_ARITH, 1, cuk_fminf(a, b), cuk_fmin(a, b), (a < b ? a : b))                                      \
    X(MAXIMUM, "maximum", "maximum", 2, OC_ARITH, 1, cuk_fmaxf(a, b), cuk_fmax(a, b), (a > b ? a : b))                                      \
    X(ATAN2, "atan2", "atan2", 2, OC_FLOAT, 8, atan2f(a, b), atan2(a, b), 0)                                                                \
    X(FMOD, "fmod", "fmod", 2, OC_FLOAT, 4, fmodf(a, b), fmod(a, b), 0)                                                                     \
    X(EQ, "eq", 0, 2, OC_CMP, 1, (a == b), (a == b), (a == b))                                                                              \
    X(NE, "ne", 0, 2, OC_CMP, 1, (a != b), (a != b), (a != b))                                                                              \
    X(LT, "lt", 0, 2, OC_CMP, 1, (a < b), (a < b), (a < b))                                                                                 \
    X(LE, "le", 0, 2, OC_CMP, 1, (a <= b), (a <= b), (a <= b))                                                                              \
    X(GT, "gt", 0, 2, OC_CMP, 1, (a > b), (a > b), (a > b))                                                                                 \
    X(GE, "ge", 0, 2, OC_CMP, 1, (a >= b), (a >= b), (a >= b))                                                                              \
    X(LAND, "and", 0, 2, OC_LOGIC, 1, 0, 0, (T)(a && b))                                                                                    \
    X(LOR, "or", 0, 2, OC_LOGIC, 1, 0, 0, (T)(a || b))                                                                                      \
    X(BAND, "band", 0, 2, OC_BITS, 1, 0, 0, (T)(a & b))                                                                                     \
    X(BOR, "bor", 0, 2, OC_BITS, 1, 0, 0, (T)(a | b))                                                                                       \
    X(BXOR, "bxor", 0, 2, OC_BITS, 1, 0, 0, (T)(a ^ b))                                                                                     \
    X(SHL, "shl", 0, 2, OC_BITS, 1, 0, 0, cuk_shl(a, b))                                                                                    \
    X(SHR, "shr", 0, 2, OC_BITS, 1, 0, 0, cuk_shr(a, b))                                                                                    \
    X(SELECT, "select", "where", 3, OC_SELECT, 1, (a ? b : c), (a ? b : c), (a ? b : c))                                                    \
    X(CLAMP, "clamp", "clamp", 3, OC_CLAMP, 1, cuk_fminf(cuk_fmaxf(a, b), c), cuk_fmin(cuk_fmax(a, b), c), (a < b ? b : (a > c ? c : a))) \
    X(HEDGE, "hedge", 0, 3, OC_CLAMP, 2, cuk_hedgef(a, b, c), cuk_hedge(a, b, c), 0) /* a * b + c, never contracted to an fma: histogram's bin edges, as NumPy's linspace */ \
    X(HYPOT, "hypot", "hypot", 2, OC_FLOAT, 8, hypotf(a, b), hypot(a, b), 0) /* sqrt(a^2 + b^2) without overflow: abs of a complex */

/* The other ops, one row each: X(NAME, spelling, kind, value operands, cost). Value
   operands are a bit per operand (VA_ALL: every one) that a kernel reads as element
   values, as opposed to sizes, bounds or nothing it reads; cost is what recomputing the
   op in each consumer's kernel costs (rule 7). The fusion pass, both backends and the
   emitter read kinds and operands from here. */
typedef enum {
    OK_EW,     /* elementwise (OP_CAST; EW_OPS are all OK_EW) */
    OK_CONST,  /* a literal, inlined into kernels */
    OK_LEAF,   /* an array that exists before a kernel reads it, or a host value */
    OK_CHECK,  /* a check of host scalars that passes its operand 0 through */
    OK_GEN,    /* a generator: fused as an input computed from the index */
    OK_INDEX,  /* an index transform: fused as a load at transformed indices */
    OK_REDUCE,
    OK_SCAN,
    OK_MATMUL,
    OK_HIST,   /* a scatter or histogram into a copy of its dest (rule 6) */
    OK_COMPACT,/* a compaction (rule 6): its operands are computed inside its kernel */
} OpKindClass;
#define VA_ALL 0xffffffffu
#define OPS(X)                                                                                   \
    X(CAST, "cast", OK_EW, VA_ALL, 1)                                                            \
    X(CONST, "const", OK_CONST, 0u, 0)    /* scalar literal v->c of type v->dt */                \
    X(SLOT, "slot", OK_LEAF, 0u, 0)       /* read of host variable slot v->slot (params first) */\
    X(ARG, "arg", OK_LEAF, 0u, 0)         /* in a lambda body: argument number v->slot */        \
    X(DIM, "dim", OK_LEAF, 0u, 0)         /* i64 scalar: size of args[0] along axis v->axis */   \
    X(CHECKDIM, "checkdim", OK_CHECK, 1u, 0) /* args[0] after checking i64 args[1] == args[2]; \
                                              v->msg has two %lld for the two values */        \
    X(IOTA, "iota", OK_GEN, 0u, 1)        /* args: n -> i64[n] (or v->dt) 0, 1, ... */           \
    X(FULL, "full", OK_GEN, 1u, 1)        /* args: value (scalar of v->dt), dims... */           \
    X(LINSPACE, "linspace", OK_GEN, 3u, 2) /* args: start, stop (of v->dt), n; endpoint in */    \
    X(RAND, "rand", OK_GEN, 1u, 20)       /* args: seed (i64), dims...; uniform [0, 1), Philox */\
    X(RANDN, "randn", OK_GEN, 1u, 40)     /* args: seed (i64), dims...; normal, Box-Muller */    \
    X(REDUCE, "reduce", OK_REDUCE, 7u, 0) /* args: x [, init [, offs]]; v->red, v->axis,       \
                                             v->keepdims; offs (i64[k + 1], x 1-D): segments=  */ \
    X(SCAN, "scan", OK_SCAN, 7u, 0)       /* args: x [, init [, offs]]; v->red, v->axis,         \
                                             v->exclusive; offs as for reduce (init may be NULL) */\
    X(SLICE, "slice", OK_INDEX, 1u, 4)    /* args[0] = x; per input axis k, args[1+3k..3+3k] =   \
                                             start, stop, step (any may be NULL); v->slmode[k]:  \
                                             SL_INDEX (start only, axis dropped) or SL_RANGE */   \
    X(GATHER, "gather", OK_INDEX, VA_ALL, 4) /* args: x, idx (integers): idx.shape ++ x.shape[1:] */\
    X(REVERSE, "reverse", OK_INDEX, 1u, 4)   /* args: x; reverses axis 0 */                       \
    X(CONCAT, "concat", OK_INDEX, VA_ALL, 4) /* args: xs... along v->axis */                      \
    X(RESHAPE, "reshape", OK_INDEX, 1u, 4)   /* args: x, dims... (one dim may be -1) */           \
    X(TRANSPOSE, "transpose", OK_INDEX, 1u, 4) /* args: x; v->perm */                             \
    X(PAD, "pad", OK_INDEX, 5u, 4)       /* args: x, w (i64), value (scalar of v->dt): w values  \
                                            before and after every axis */                      \
    X(ROLL, "roll", OK_INDEX, 1u, 4)     /* args: x, shift (i64); along v->axis, or over the     \
                                            flattened array when AXIS_ALL (np.roll) */           \
    X(STACK, "stack", OK_INDEX, VA_ALL, 4) /* args: xs... (one shape): a new axis v->axis */      \
    X(UPDATE, "update", OK_INDEX, 3u, 4) /* args: x, e, then per axis k of x start, stop, step \
                                            at args[2+3k..4+3k] and v->slmode[k] as a slice's: \
                                            x with that part (the region) set to e, which     \
                                            broadcasts to the region (a[i, lo:hi] = e) */     \
    X(MATMUL, "matmul", OK_MATMUL, VA_ALL, 0) /* args: x (2-D), y (1-D or 2-D);        \
                                             exclusive: tf32=true */                          \
    X(SCATTER, "scatter", OK_HIST, 6u, 0) /* args: dest (1-D), idx (1-D integers), vals (idx's  \
                                             shape or a scalar): dest with dest[idx[j]] = vals[j],\
                                             indices outside dest skipped */                      \
    X(HIST, "hist", OK_HIST, 6u, 0)       /* args: dest, idx, vals as scatter; dest[idx[j]] =    \
                                             v->red(dest[idx[j]], vals[j]) (SUM PROD MIN MAX or  \
                                             LAMBDA with v->lam); v->exclusive: deterministic=true*/\
    X(LOAD, "load", OK_LEAF, 0u, 0)       /* v->path: a .npy file of type v->dt, rank v->rank */ \
    X(CALL, "call", OK_LEAF, 0u, 0)       /* v->fn(args...) run on the host with its own frame */\
    X(SORT, "sort", OK_LEAF, 1u, 0)       /* args: x; sorted along v->axis, stable, NaN last;   \
                                             v->exclusive: descending (exec/sort.h); sort_by_key's \
                                             keys have a second, its SORTKV (computed with it) */ \
    X(UNIQUE, "unique", OK_LEAF, 1u, 0)   /* args: x (1-D), the sort and compaction that give  \
                                             its distinct values (sema.c builtin_unique): the    \
                                             GPU hashes first, that when they do not fit */      \
    X(SORTKV, "sortkv", OK_LEAF, 3u, 0)   /* args: k, v (1-D, as many): v in the order sort(k)  \
                                             puts k in (v->exclusive: descending) */             \
    X(ARGSORT, "argsort", OK_LEAF, 1u, 0) /* as sort: the i64 positions along the axis that     \
                                             sort it */                                          \
    X(TOPK, "topk", OK_LEAF, 1u, 0)       /* args: x, k (i64 scalar): i64 of x's shape with k  \
                                             last, each row's first k positions of               \
                                             argsort(descending=true), found by selection */     \
    X(SEARCHSORTED, "searchsorted", OK_LEAF, 3u, 0) /* args: a (1-D, sorted, NaN last), v: i64 \
                                             of v's shape, the first i with a[i] >= v           \
                                             (v->exclusive: a[i] > v, right=true) */            \
    X(COMPACT, "compact", OK_COMPACT, 3u, 0) /* args: x, mask (bool, x's shape): x's elements   \
                                             where mask is true, row-major, 1-D (x[mask], filter) */ \
    X(HBIN, "hbin", OK_EW, VA_ALL, 6)   /* args: x (f32 or f64), n (i64), lo, step (f64),    \
                                             loT, hiT, norm (x's type): histogram()'s bin of  \
                                             each x, i64, -1 outside [loT, hiT] or NaN         \
                                             (cuk_hbin_*, kernels/ops.h; sema.c hist_bins) */   \
    X(CPART, "cpart", OK_EW, VA_ALL, 1) /* args: z (complex): its real (v->axis 0) or imaginary \
                                           (1) part, of type dtype_part(z) (compiler/widen.c) */ \
    X(CPACK, "cpack", OK_EW, VA_ALL, 1) /* args: re, im (one real type, broadcast): the complex \
                                           re + im i (compiler/widen.c) */                       \
    X(SCALARCALL, "scalarcall", OK_EW, VA_ALL, 40) /* v->fn(args...) per element (broadcast): a \
                                             function of scalars with control flow, run inside \
                                             the kernel (a __device__ function on the GPU) */

/* Every IR op: the elementwise ones first, so op < OP_EW_END means elementwise. */
typedef enum {
#define X(n, ...) OP_##n,
    EW_OPS(X)
#undef X
        OP_EW_END,
    OP_BEFORE_OPS = OP_EW_END - 1,
#define X(n, ...) OP_##n,
    OPS(X)
#undef X
        OP_COUNT
} OpKind;

extern const char *const op_name[OP_COUNT];
typedef struct OpInfo {
    const char *name;
    const char *builtin; /* the builtin function's name, or NULL */
    int arity;
    OpClass cls;
    int cost;
} OpInfo;
extern const OpInfo ew_info[OP_EW_END];
/* Per op (elementwise ones too): its kind, value operands and recompute cost. */
typedef struct OpClassInfo {
    OpKindClass kind;
    unsigned vargs;
    int cost;
} OpClassInfo;
extern const OpClassInfo op_info[OP_COUNT];
static inline bool op_is_ew(int op) { return op_info[op].kind == OK_EW; }
static inline bool op_is_gen(int op) { return op_info[op].kind == OK_GEN; }
static inline bool op_is_index(int op) { return op_info[op].kind == OK_INDEX; }
/* Whether op reads its operand i as element values inside a kernel. */
static inline bool op_value_arg(int op, int i) {
    unsigned m = op_info[op].vargs;
    return m == VA_ALL || (i < 32 && ((m >> i) & 1u));
}

/* Combine operators for OP_REDUCE / OP_SCAN: X(NAME, spelling, reduction builtin, scan
   builtin), the builtins 0 where there is none (lambdas come through reduce and scan). */
#define RED_OPS(X)                                                                               \
    X(SUM, "sum", "sum", "cumsum")                                                               \
    X(PROD, "prod", "prod", "cumprod")                                                           \
    X(MIN, "min", "min", "cummin")                                                               \
    X(MAX, "max", "max", "cummax")                                                               \
    X(ANY, "any", "any", 0)                                                                      \
    X(ALL, "all", "all", 0)                                                                      \
    X(ARGMIN, "argmin", "argmin", 0)                                                             \
    X(ARGMAX, "argmax", "argmax", 0)                                                             \
    X(LAMBDA, "lambda", 0, 0)
typedef enum {
#define X(n, ...) RED_##n,
    RED_OPS(X)
#undef X
        RED_COUNT
} RedOp;
extern const char *const red_name[RED_COUNT];
typedef struct RedInfo {
    const char *reduce, *scan; /* the builtins' names, or NULL */
} RedInfo;
extern const RedInfo red_info[RED_COUNT];

enum { SL_RANGE = 0, SL_INDEX = 1 };

typedef union Scalar {
    int64_t i; /* bool and signed ints */
    uint64_t u;/* unsigned ints */
    double f;  /* f32 and f64 (and the 16-bit floats) */
    double z[2]; /* c64 and c128: re (z[0], which is f), im */
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
    int axis;      /* OP_DIM, OP_REDUCE, OP_SCAN, OP_CONCAT, OP_ROLL, OP_STACK */
    bool keepdims; /* OP_REDUCE */
    bool exclusive;/* OP_SCAN; OP_HIST: deterministic=true */
    RedOp red;     /* OP_REDUCE, OP_SCAN, OP_HIST */
    Val *lam;      /* RED_LAMBDA: body over OP_ARG 0 (accumulator) and 1 (element), type v->dt */
    Val *init;     /* OP_REDUCE/OP_SCAN: initial value (scalar of v's element type) or NULL */
    int perm[MAXRANK];            /* OP_TRANSPOSE */
    unsigned char slmode[MAXRANK];/* OP_SLICE */
    const char *path;             /* OP_LOAD */
    const char *msg;              /* OP_CHECKDIM */
    Fn *fn;                       /* OP_CALL, OP_SCALARCALL */
    int kernel;                   /* fusion group, -1 until the fusion pass runs */
};

typedef enum {
    S_SET,    /* slots[slot] = v (let, var, assignment) */
    S_IF,     /* if v { body } else { els } */
    S_FOR,    /* for slot in v .. v2 { body } (i64, half-open) */
    S_WHILE,  /* while v { body } */
    S_RETURN, /* return v (v NULL for none); several results: return vs[0..nvs) */
    S_CALLN,  /* slots[slots[k]] = result k of the OP_CALL v, k < nvs (slot -1: dropped);
                 a call of a function with several results (let (a, b) = f(x)) */
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
    int nvs;   /* S_RETURN of several results, S_CALLN: how many */
    Val **vs;  /* S_RETURN: the results */
    int *slots;/* S_CALLN: where each result goes */
};

/* How many results a function may return (-> (T1, ..., Tn)). */
#define MAX_RESULTS 16

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
    DType ret_dt;  /* DT_VOID for none, and for several results */
    int ret_rank;
    int nres;      /* 0 for none or one result (ret_dt says), else 2..MAX_RESULTS */
    DType *res_dt; /* nres entries: each result's type and rank */
    int *res_rank;
    Stmt *body;
    int nvals;     /* ids handed out so far */
    bool from_stdlib;
};

typedef struct Program {
    Arena *arena;
    int nfns;
    Fn **fns;      /* the user's functions and the stdlib functions they reach */
} Program;

/* The segment offsets of a segmented reduce or scan (segments=offs), or NULL. */
static inline Val *red_segs(const Val *v) {
    return (v->op == OP_REDUCE || v->op == OP_SCAN) && v->nargs > 2 ? v->args[2] : NULL;
}

/* sema.c: type-checks the user's program (with the stdlib's functions in scope) and
   lowers it to IR. Returns NULL after reporting errors to d. */
Program *sema_program(Arena *a, Diag *d, Node *user, Node *stdlib);
/* A type variable: one capital letter that names no dtype (`T` in `fn g(x: T[n])`). */
bool sema_is_typevar(const char *name);
Fn *program_find(const Program *p, const char *name);

/* widen.c: ops on the narrow types (f16, bf16, 8- and 16-bit integers) rewritten to
   compute in f32 or i32 between casts, before fusion. */
void widen_program(Arena *a, Program *p);

/* split.c, before fusion: a var's value forwarded into its one reader; statements too
   heavy for one kernel's compile time (by val_code_weight) have their heaviest operands
   moved into statements of their own. */
void split_program(Arena *a, Program *p);
/* What v adds to a kernel's NVRTC time, in adds (a read of an array: SPLIT_LEAF_WEIGHT). */
int val_code_weight(const Val *v);
#define SPLIT_LEAF_WEIGHT 24

/* ir_print.c: the stable text form printed by `cukc emit-ir`. */
void ir_print(FILE *out, const Program *p);


/* Helpers shared by the backends. */
Val *val_new(Arena *a, Fn *f, OpKind op, DType dt, int rank, int nargs, Loc loc);
/* NumPy broadcasting of two shapes; false if incompatible. */
bool broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                      int64_t *out);
const char *fmt_shape(char *buf, size_t n, int rank, const int64_t *shape);

#endif
