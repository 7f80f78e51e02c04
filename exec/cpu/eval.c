/* The CPU backend's IR interpreter: host statements, and value DAGs evaluated with
   memoisation, maximal elementwise subtrees run in cache-sized chunks (numexpr-style)
   that feed reductions and scans directly, so elementwise temporaries never reach
   memory. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The shared helpers compare unsigned values with 0 in code common to all widths. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "kernels/ops.h"
#include "kernels/philox.h"
#pragma GCC diagnostic pop
#include "exec/cpu/pool.h"
#include "exec/run.h"
#include "exec/sort.h"

/* The per-op loops below are plain `for` loops over restrict pointers; GCC only
   vectorises them (with a scalar epilogue) from -O3's cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

enum {
    TILE = 256,         /* lines x elements per tile of a reduction along an axis */
    CHUNK = 2048,       /* elements per chunk: a few chunk buffers stay in L1/L2 */
    RED_SIBS = 8,       /* reductions folded in one pass over their input */
    RED_SIB_MIN = 16 * CHUNK, /* the smallest input whose siblings are looked for */
    AXIS_WIN_MAX = 1 << 22,   /* elements of a worker's window of an axis reduction's input */
};
/* The interpreter recurses (calls, nested expressions) on its own thread with a stack
   big enough for MAX_CALL_DEPTH calls even in unoptimised sanitizer builds; the pages
   are only committed when touched. */
#define RUN_STACK ((size_t)512 << 20)

/* The dtypes again, with what the per-type code below needs: the C type, its unsigned
   twin and which column of EW_OPS applies. (ir.h's DTYPES cannot be expanded inside
   an expansion of itself, so the inner level of the op x dtype tables uses this.) */
_Static_assert(DT_COUNT == 15, "a dtype was added to ir.h: add it to CTYPES or CTYPES_ALL too");
/* The types the IR computes in (compiler/widen.c takes the narrow ones there): every
   op's loop exists for these. */
#define CTYPES(M, ...)                                                                      \
    M(BOOL, uint8_t, uint8_t, INT, __VA_ARGS__)                                             \
    M(I32, int32_t, uint32_t, INT, __VA_ARGS__)                                             \
    M(I64, int64_t, uint64_t, INT, __VA_ARGS__)                                             \
    M(U32, uint32_t, uint32_t, INT, __VA_ARGS__)                                            \
    M(U64, uint64_t, uint64_t, INT, __VA_ARGS__)                                            \
    M(F32, float, float, F32, __VA_ARGS__)                                                  \
    M(F64, double, double, F64, __VA_ARGS__)
/* And every numeric type, for casts (the 16-bit floats apart: no C number holds them). */
#define CTYPES_ALL(M, ...)                                                                  \
    CTYPES(M, __VA_ARGS__)                                                                  \
    M(I8, int8_t, uint8_t, INT, __VA_ARGS__)                                                \
    M(I16, int16_t, uint16_t, INT, __VA_ARGS__)                                             \
    M(U8, uint8_t, uint8_t, INT, __VA_ARGS__)                                               \
    M(U16, uint16_t, uint16_t, INT, __VA_ARGS__)
#define PICK_INT(f, d, i) i
#define PICK_F32(f, d, i) f
#define PICK_F64(f, d, i) d
#define ISF_INT 0
#define ISF_F32 1
#define ISF_F64 1

/* A scalar register: one value of any dtype, stored at offset 0. */
typedef union Cell {
    uint8_t b;
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    double z[2];   /* c64 and c128 (cpart_n, cpack_n): room for the widest */
} Cell;

static inline int esize(DType dt) { return dtype_info[dt].size; }

/* ---- elementwise loops: EW_OPS x dtypes ------------------------------------------ */

/* Result and first-operand types per op class (the other operands are T). */
#define RT_OC_ARITH(T) T
#define RT_OC_NUM1(T) T
#define RT_OC_FLOAT(T) T
#define RT_OC_CMP(T) uint8_t
#define RT_OC_LOGIC(T) T
#define RT_OC_BITS(T) T
#define RT_OC_PRED(T) uint8_t
#define RT_OC_SELECT(T) T
#define RT_OC_CLAMP(T) T
#define AT_OC_ARITH(T) T
#define AT_OC_NUM1(T) T
#define AT_OC_FLOAT(T) T
#define AT_OC_CMP(T) T
#define AT_OC_LOGIC(T) T
#define AT_OC_BITS(T) T
#define AT_OC_PRED(T) T
#define AT_OC_SELECT(T) uint8_t
#define AT_OC_CLAMP(T) T

#define EW_LOOP_1(R, A, B, E)                                                               \
    const A *restrict xa = pa;                                                              \
    R *restrict xo = o;                                                                     \
    (void)pb, (void)pc;                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                       \
        A a = xa[i];                                                                        \
        (void)a;                                                                            \
        xo[i] = (R)(E);                                                                     \
    }
#define EW_LOOP_2(R, A, B, E)                                                               \
    const A *restrict xa = pa;                                                              \
    const B *restrict xb = pb;                                                              \
    R *restrict xo = o;                                                                     \
    (void)pc;                                                                               \
    for (int64_t i = 0; i < n; i++) {                                                       \
        A a = xa[i];                                                                        \
        B b = xb[i];                                                                        \
        (void)a, (void)b;                                                                   \
        xo[i] = (R)(E);                                                                     \
    }
#define EW_LOOP_3(R, A, B, E)                                                               \
    const A *restrict xa = pa;                                                              \
    const B *restrict xb = pb;                                                              \
    const B *restrict xc = pc;                                                              \
    R *restrict xo = o;                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                       \
        A a = xa[i];                                                                        \
        B b = xb[i], c = xc[i];                                                             \
        (void)a, (void)b, (void)c;                                                          \
        xo[i] = (R)(E);                                                                     \
    }

typedef void (*EwFn)(void *restrict o, const void *restrict pa, const void *restrict pb,
                     const void *restrict pc, int64_t n);

#define EW_FN(DTN, CT, UT, KIND, name, ar, cls, ef, ed, ei)                                 \
    static void ew_##name##_##DTN(void *restrict o, const void *restrict pa,                \
                                  const void *restrict pb, const void *restrict pc,         \
                                  int64_t n) {                                              \
        typedef CT T;                                                                       \
        typedef UT U;                                                                       \
        (void)sizeof(T), (void)sizeof(U);                                                   \
        EW_LOOP_##ar(RT_##cls(T), AT_##cls(T), T, PICK_##KIND(ef, ed, ei))                  \
    }
#define EW_OP_FNS(name, sp, bn, ar, cls, cost, ef, ed, ei) CTYPES(EW_FN, name, ar, cls, ef, ed, ei)
EW_OPS(EW_OP_FNS)

/* ---- f32 exp and log on four lanes (SSE2) ---------------------------------------- */

/* libm's expf one element at a time was most of a softmax's time (issue 18); here four
   at once, and logf likewise. Cephes' expf and logf: at most 0.99 and 0.83 ulp from the
   correctly rounded result over every f32 (subnormals included), specials as libm's
   (tests/python/test_cpu_exp.py). Tails go through the same four-lane code in a padded
   block, so an element's result never depends on where it sits, and one-element calls
   from scalar code get the chunks' bits. Needs MXCSR's default round-to-nearest
   (cvtps2dq rounds by it), as the rest of the backend does. Without SSE2 both stay
   libm's (the generic loops). */
#if defined(__SSE2__)
#include <emmintrin.h>

static inline __m128 pow2_ps(__m128i n) { /* 2^n for -126 <= n <= 127 */
    return _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n, _mm_set1_epi32(127)), 23));
}

/* x = n ln2 + r with |r| <= ln2/2, exp(r) by a degree-7 polynomial, times 2^n. C1 + C2 =
   ln2 with C1 short enough that n C1 and x - n C1 are exact (Cody-Waite). */
static inline __m128 exp_ps(__m128 x) {
    const __m128 c1 = _mm_set1_ps(0.693359375f), c2 = _mm_set1_ps(-2.12194440e-4f);
    /* |x| <= 87: n in [-126, 126] and the result is normal, so one 2^n scales it */
    __m128 ax = _mm_andnot_ps(_mm_set1_ps(-0.0f), x);
    int edge = _mm_movemask_ps(_mm_cmpnle_ps(ax, _mm_set1_ps(87.0f))); /* NaN too */
    /* past the clamp exp is 0 or inf whatever the rest says; NaN becomes -110 for now */
    __m128 xc = edge ? _mm_min_ps(_mm_max_ps(x, _mm_set1_ps(-110.0f)), _mm_set1_ps(89.0f)) : x;
    __m128i ni = _mm_cvtps_epi32(_mm_mul_ps(xc, _mm_set1_ps(1.44269504088896341f)));
    __m128 n = _mm_cvtepi32_ps(ni);
    __m128 r = _mm_sub_ps(_mm_sub_ps(xc, _mm_mul_ps(n, c1)), _mm_mul_ps(n, c2));
    __m128 z = _mm_mul_ps(r, r);
    __m128 p = _mm_set1_ps(1.9875691500e-4f);
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.3981999507e-3f));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(8.3334519073e-3f));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(4.1665795894e-2f));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.6666665459e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(5.0000001201e-1f));
    __m128 y = _mm_add_ps(_mm_add_ps(_mm_mul_ps(p, z), r), _mm_set1_ps(1.0f));
    if (!edge) return _mm_mul_ps(y, pow2_ps(ni));
    /* n in [-159, 128]: two factors, the first product exact, so a subnormal or
       overflowing result is rounded once; lanes also in the fast path get its bits */
    __m128i n1 = _mm_srai_epi32(ni, 1);
    y = _mm_mul_ps(_mm_mul_ps(y, pow2_ps(n1)), pow2_ps(_mm_sub_epi32(ni, n1)));
    __m128 nan = _mm_cmpunord_ps(x, x);
    return _mm_or_ps(_mm_andnot_ps(nan, y), _mm_and_ps(nan, _mm_add_ps(x, x))); /* quiet */
}

/* x = 2^e m with sqrt(1/2) <= m < sqrt(2), log(m) = t - t^2/2 + t^3 P(t) for t = m - 1,
   plus e ln2 in two parts as in exp_ps. */
static inline __m128 log_ps(__m128 x) {
    const __m128 tiny = _mm_set1_ps(0x1p-126f), inf = _mm_set1_ps(INFINITY);
    /* subnormals, zeros, negatives, inf and NaN */
    int edge = _mm_movemask_ps(_mm_or_ps(_mm_cmpnge_ps(x, tiny), _mm_cmpeq_ps(x, inf)));
    __m128 xs = x;
    __m128i eoff = _mm_set1_epi32(126);
    if (edge) { /* a subnormal times 2^23 is normal */
        __m128 sub = _mm_cmplt_ps(x, tiny);
        xs = _mm_or_ps(_mm_andnot_ps(sub, x), _mm_and_ps(sub, _mm_mul_ps(x, _mm_set1_ps(0x1p23f))));
        eoff = _mm_add_epi32(eoff, _mm_and_si128(_mm_castps_si128(sub), _mm_set1_epi32(23)));
    }
    __m128i b = _mm_castps_si128(xs);
    __m128i e = _mm_sub_epi32(_mm_srli_epi32(b, 23), eoff); /* x = 2^e m, 1/2 <= m < 1 */
    __m128 m = _mm_castsi128_ps(_mm_or_si128(_mm_and_si128(b, _mm_set1_epi32(0x007fffff)),
                                             _mm_set1_epi32(0x3f000000)));
    __m128 lo = _mm_cmplt_ps(m, _mm_set1_ps(0.707106781186547524f));
    e = _mm_add_epi32(e, _mm_castps_si128(lo));                               /* e - 1 */
    __m128 t = _mm_add_ps(_mm_sub_ps(m, _mm_set1_ps(1.0f)), _mm_and_ps(lo, m)); /* 2m - 1, exact */
    __m128 fe = _mm_cvtepi32_ps(e);
    __m128 z = _mm_mul_ps(t, t);
    __m128 p = _mm_set1_ps(7.0376836292e-2f);
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(-1.1514610310e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(1.1676998740e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(-1.2420140846e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(1.4249322787e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(-1.6668057665e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(2.0000714765e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(-2.4999993993e-1f));
    p = _mm_add_ps(_mm_mul_ps(p, t), _mm_set1_ps(3.3333331174e-1f));
    __m128 y = _mm_mul_ps(_mm_mul_ps(p, t), z);
    y = _mm_add_ps(y, _mm_mul_ps(fe, _mm_set1_ps(-2.12194440e-4f)));
    y = _mm_sub_ps(y, _mm_mul_ps(z, _mm_set1_ps(0.5f)));
    y = _mm_add_ps(t, y);
    y = _mm_add_ps(y, _mm_mul_ps(fe, _mm_set1_ps(0.693359375f)));
    if (!edge) return y;
    __m128 zero = _mm_cmpeq_ps(x, _mm_setzero_ps()), neg = _mm_cmplt_ps(x, _mm_setzero_ps());
    __m128 pinf = _mm_cmpeq_ps(x, inf), nan = _mm_cmpunord_ps(x, x);
    __m128 set = _mm_or_ps(_mm_or_ps(zero, neg), _mm_or_ps(pinf, nan));
    __m128 s = _mm_or_ps(_mm_and_ps(zero, _mm_set1_ps(-INFINITY)), _mm_and_ps(pinf, inf));
    s = _mm_or_ps(s, _mm_and_ps(neg, _mm_castsi128_ps(_mm_set1_epi32(0x7fc00000))));
    s = _mm_or_ps(s, _mm_and_ps(nan, _mm_add_ps(x, x))); /* quiet */
    return _mm_or_ps(_mm_andnot_ps(set, y), s);
}

#define EW_PS_FN(name, f)                                                                   \
    static void name(void *restrict o, const void *restrict pa, const void *restrict pb,    \
                     const void *restrict pc, int64_t n) {                                  \
        const float *restrict a = pa;                                                       \
        float *restrict y = o;                                                              \
        (void)pb, (void)pc;                                                                 \
        int64_t i = 0;                                                                      \
        for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, f(_mm_loadu_ps(a + i)));           \
        if (i < n) {                                                                        \
            float t[4] = {0};                                                               \
            memcpy(t, a + i, (size_t)(n - i) * sizeof *t);                                  \
            _mm_storeu_ps(t, f(_mm_loadu_ps(t)));                                           \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                  \
        }                                                                                   \
    }
EW_PS_FN(ew_exp_f32_sse2, exp_ps)
EW_PS_FN(ew_log_f32_sse2, log_ps)
#endif

#define EW_TAB_ENTRY(DTN, CT, UT, KIND, name) [DT_##DTN] = ew_##name##_##DTN,
#define EW_TAB_ROW(name, ...) [OP_##name] = {CTYPES(EW_TAB_ENTRY, name)},
/* The SSE2 kernels replace their generic loops' entries: a later initializer wins. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static const EwFn ew_tab[OP_EW_END][DT_COUNT] = {
    EW_OPS(EW_TAB_ROW)
#if defined(__SSE2__)
    [OP_EXP][DT_F32] = ew_exp_f32_sse2,
    [OP_LOG][DT_F32] = ew_log_f32_sse2,
#endif
};
#pragma GCC diagnostic pop

/* ---- casts: dtype x dtype -------------------------------------------------------- */

#define CVT_SRC_INT(TN, TT, TISF, TISS, v)                                                  \
    (DT_##TN == DT_BOOL ? (TT)((v) != 0) : (TT)(v))
#define CVT_SRC_F32(TN, TT, TISF, TISS, v)                                                  \
    (DT_##TN == DT_BOOL ? (TT)((v) != 0)                                                    \
     : TISF            ? (TT)(v)                                                            \
     : TISS            ? (TT)sat_s((double)(v), (int)sizeof(TT))                            \
                       : (TT)sat_u((double)(v), (int)sizeof(TT)))
#define CVT_SRC_F64 CVT_SRC_F32
/* A number as the double a 16-bit float is rounded from (kernels/ops.h). The signedness
   tests below are constant per type (and always false for the unsigned ones). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#define HDBL_INT(FT, v) (((FT)-1 < (FT)0) ? cuk_i2d_odd((int64_t)(v)) : cuk_u2d_odd((uint64_t)(v)))
#define HDBL_F32(FT, v) ((double)(v))
#define HDBL_F64 HDBL_F32

typedef void (*CastFn)(void *restrict o, const void *restrict in, int64_t n);
#define CAST_FN(FN, FT, FU, FK, TN, TT, TISF, TISS)                                         \
    static void cast_##FN##_##TN(void *restrict o, const void *restrict in, int64_t n) {    \
        const FT *restrict x = in;                                                          \
        TT *restrict y = o;                                                                 \
        for (int64_t i = 0; i < n; i++) y[i] = CVT_SRC_##FK(TN, TT, TISF, TISS, x[i]);     \
    }
#define CAST_TO(n, s, ct, ut, isf, isi, iss, npy) CTYPES_ALL(CAST_FN, n, ct, isf, iss)
DTYPES_NUM(CAST_TO)
/* The 16-bit floats: to them from every number, from them through f32 (exact). */
#define HCAST_FNS(FN, FT, FU, FK, HN, HT, D2, H2F)                                          \
    static void cast_##FN##_##HN(void *restrict o, const void *restrict in, int64_t n) {    \
        const FT *restrict x = in;                                                          \
        HT *restrict y = o;                                                                 \
        for (int64_t i = 0; i < n; i++) y[i].bits = D2(HDBL_##FK(FT, x[i]));               \
    }                                                                                       \
    static void cast_##HN##_##FN(void *restrict o, const void *restrict in, int64_t n) {    \
        const HT *restrict x = in;                                                          \
        FT *restrict y = o;                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                   \
            float v = H2F(x[i].bits);                                                       \
            y[i] = CVT_SRC_F32(FN, FT, ISF_##FK, ((FT)-1 < (FT)0), v);                      \
        }                                                                                   \
    }
CTYPES_ALL(HCAST_FNS, F16, cuk_f16, cuk_d2h, cuk_h2f)
CTYPES_ALL(HCAST_FNS, BF16, cuk_bf16, cuk_d2bf, cuk_bf2f)
#pragma GCC diagnostic pop
#define HH_CAST(A, AT, A2F, B, BT, F2B)                                                     \
    static void cast_##A##_##B(void *restrict o, const void *restrict in, int64_t n) {      \
        const AT *restrict x = in;                                                          \
        BT *restrict y = o;                                                                 \
        for (int64_t i = 0; i < n; i++) y[i].bits = F2B((double)A2F(x[i].bits));            \
    }
HH_CAST(F16, cuk_f16, cuk_h2f, BF16, cuk_bf16, cuk_d2bf)
HH_CAST(BF16, cuk_bf16, cuk_bf2f, F16, cuk_f16, cuk_d2h)
HH_CAST(F16, cuk_f16, cuk_h2f, F16, cuk_f16, cuk_d2h)
HH_CAST(BF16, cuk_bf16, cuk_bf2f, BF16, cuk_bf16, cuk_d2bf)
#define CAST_ENT(FN, FT, FU, FK, TN) [DT_##FN] = cast_##FN##_##TN,
#define CAST_ROW(n, ...) [DT_##n] = {CTYPES_ALL(CAST_ENT, n) [DT_F16] = cast_F16_##n, [DT_BF16] = cast_BF16_##n},
/* [to][from]; the complex types have none: widen.c takes their parts apart */
static const CastFn cast_tab[DT_COUNT][DT_COUNT] = {DTYPES_REAL(CAST_ROW)};

static void cell_set(Cell *c, DType dt, Scalar s) {
    memset(c, 0, sizeof *c);
    scalar_store(dt, s, c);
}

/* A complex number's re (k = 0) or im, of n elements, and n complex numbers packed from
   their parts (compiler/widen.c): for chunks and for registers alike. */
static void cpart_n(DType pt, int k, void *restrict o, const void *restrict z, int64_t n) {
    if (pt == DT_F32)
        for (int64_t i = 0; i < n; i++) ((float *)o)[i] = ((const float *)z)[2 * i + k];
    else
        for (int64_t i = 0; i < n; i++) ((double *)o)[i] = ((const double *)z)[2 * i + k];
}
static void cpack_n(DType ct, void *restrict o, const void *re, const void *im, int64_t n) {
    if (ct == DT_C64)
        for (int64_t i = 0; i < n; i++) ((float *)o)[2 * i] = ((const float *)re)[i], ((float *)o)[2 * i + 1] = ((const float *)im)[i];
    else
        for (int64_t i = 0; i < n; i++) ((double *)o)[2 * i] = ((const double *)re)[i], ((double *)o)[2 * i + 1] = ((const double *)im)[i];
}

/* ---- interpreter state ----------------------------------------------------------- */

typedef struct Frame {
    Run *c;
    const Fn *fn;
    Arr **slots;   /* fn->nslots */
    Arr **memo;    /* by Val id, for the statement being evaluated */
    int *touched;  /* ids set in memo, to clear it quickly */
    int ntouched;
    Arr *ret;      /* what a return statement gave */
    Arr *rets[MAX_RESULTS]; /* several results */
    Operands ops;  /* how the shape rules (run.h) read operands here */
    /* the statement being evaluated: its values' roots, and its whole-array reductions
       (stmt_reds), walked with seen[id] == gen marks */
    const Val *const *roots;
    const Val *root1;
    int nroots;
    bool reds_known;
    const Val **reds, **walk;
    int nreds;
    unsigned *seen, gen;
    int *uses;     /* by Val id, for seen ones: how many times the statement uses it */
    struct RowPlan *rows; /* while rows_eval builds its programs: their tile leaves */
} Frame;

static Arr *eval(Frame *f, const Val *v);
static bool call_fn(Run *c, const Fn *fn, Arr **args, Arr **result, Loc loc);

/* Keeps a value the statement has computed (takes the reference). */
static void memo_put(Frame *f, const Val *v, Arr *a) {
    f->memo[v->id] = a;
    f->touched[f->ntouched++] = v->id;
}

/* The statement's roots: what the walker asks for next. */
static void stmt_roots(Frame *f, const Val *const *vs, int n) {
    f->roots = vs;
    f->nroots = n;
    f->reds_known = false;
}

static Frame *stmt_root(void *fr, const Val *v) {
    Frame *f = fr;
    f->root1 = v;
    stmt_roots(f, &f->root1, 1);
    return f;
}

static void memo_clear(Frame *f) {
    for (int i = 0; i < f->ntouched; i++) {
        arr_release(f->memo[f->touched[i]]);
        f->memo[f->touched[i]] = NULL;
    }
    f->ntouched = 0;
}

static const char *shape_str(char *buf, size_t n, int rank, const int64_t *shape) {
    return fmt_shape(buf, n, rank, shape);
}

/* Product of dims, or -1 if it overflows. As in NumPy, the product of the nonzero dims
   must fit too: an empty array of shape (2^62, 0) would otherwise send loops over its
   outer axes round (almost) forever and overflow index arithmetic. */
static int64_t shape_size(int rank, const int64_t *shape) {
    int64_t s = 1;
    bool empty = false;
    for (int k = 0; k < rank; k++) {
        if (!shape[k]) {
            empty = true;
            continue;
        }
        if (s > INT64_MAX / shape[k]) return -1;
        s *= shape[k];
    }
    return empty ? 0 : s;
}

static Arr *new_arr(Frame *f, Loc loc, DType dt, int rank, const int64_t *shape) {
    if (!run_charge(f->c, loc, shape_size(rank, shape))) return NULL;
    Arr *a = arr_new(dt, rank, shape);
    if (!a) {
        char b[200];
        rt_error(f->c->err, loc, "cannot allocate an array of %s with shape %s: out of memory",
                 dtype_info[dt].name, shape_str(b, sizeof b, rank, shape));
    }
    return a;
}

/* A scalar operand (dims, indices, seeds, loop bounds) converted to dt. */
static bool get_scalar(Frame *f, const Val *v, DType dt, Scalar *out) {
    Arr *a = eval(f, v);
    if (!a) return false;
    ASSERT(a->size == 1);
    *out = scalar_cast(arr_get(a, 0), a->dt, dt);
    arr_release(a);
    return true;
}

static bool get_i64(Frame *f, const Val *v, int64_t *out) {
    Scalar s;
    if (!get_scalar(f, v, DT_I64, &s)) return false;
    *out = s.i;
    return true;
}

static bool get_cell(Frame *f, const Val *v, DType dt, Cell *out) {
    Scalar s;
    if (!get_scalar(f, v, dt, &s)) return false;
    cell_set(out, dt, s);
    return true;
}

static bool get_double(Frame *f, const Val *v, double *out) {
    Scalar s;
    if (!get_scalar(f, v, DT_F64, &s)) return false;
    *out = s.f;
    return true;
}

/* ---- index walks (broadcasting and strided views) -------------------------------- */

/* The C-order positions off, off + 1, ... of `shape` in an array with the given strides
   (0 on broadcast axes), by runs along the last axis: each run_next gives the offset of
   the run's first element and its length (at most `left`), the stride being the last
   axis's. */
typedef struct RunWalk {
    int rank;
    const int64_t *shape, *stride;
    int64_t idx[MAXRANK], pos;
} RunWalk;

static void run_start(RunWalk *w, int rank, const int64_t *shape, const int64_t *stride, int64_t off) {
    w->rank = rank, w->shape = shape, w->stride = stride, w->pos = 0;
    int64_t rem = off;
    for (int d = rank - 1; d >= 0; d--) {
        w->idx[d] = shape[d] ? rem % shape[d] : 0;
        rem = shape[d] ? rem / shape[d] : 0;
        w->pos += w->idx[d] * stride[d];
    }
}

static int64_t run_next(RunWalk *w, int64_t left, int64_t *pos) {
    int last = w->rank - 1;
    *pos = w->pos;
    if (w->rank == 0) return left; /* a scalar: every position is offset 0 */
    int64_t run = w->shape[last] - w->idx[last];
    if (run > left) run = left;
    w->pos += run * w->stride[last];
    w->idx[last] += run;
    for (int d = last; d > 0 && w->idx[d] == w->shape[d]; d--) {
        w->pos -= w->idx[d] * w->stride[d];
        w->idx[d] = 0;
        w->idx[d - 1]++;
        w->pos += w->stride[d - 1];
    }
    return run;
}

/* Offsets (in elements) of the positions off .. off+len-1 (RunWalk). */
static void walk_offsets(int rank, const int64_t *shape, const int64_t *stride, int64_t off,
                         int64_t len, int64_t *out) {
    RunWalk w;
    run_start(&w, rank, shape, stride, off);
    int64_t s = rank ? stride[rank - 1] : 0;
    for (int64_t k = 0, pos, run; k < len; k += run) {
        run = run_next(&w, len - k, &pos);
        for (int64_t t = 0; t < run; t++) out[k + t] = pos + t * s;
    }
}

static void gather_elems(void *dst, const void *src, const int64_t *offs, int64_t n, int esz) {
    switch (esz) {
    case 1:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ((const uint8_t *)src)[offs[i]];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = ((const uint16_t *)src)[offs[i]];
        break;
    case 4:
        for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = ((const uint32_t *)src)[offs[i]];
        break;
    case 8:
        for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = ((const uint64_t *)src)[offs[i]];
        break;
    case 16:
        for (int64_t i = 0; i < n; i++) memcpy((char *)dst + 16 * i, (const char *)src + 16 * offs[i], 16);
        break;
    default: die("bad element size %d", esz);
    }
}

/* dst[0 .. len) = the elements off .. off + len - 1 (C order of shape) of the strided
   view src, by runs (RunWalk): a copy when the last axis's stride is 1, one value
   repeated when it is 0 (a broadcast row or column), without an offsets array. */
static void gather_strided(void *dst, const void *src, int esz, int rank, const int64_t *shape, const int64_t *stride,
                           int64_t off, int64_t len) {
    RunWalk w;
    run_start(&w, rank, shape, stride, off);
    int64_t s = rank ? stride[rank - 1] : 0;
    char *o = dst;
    const char *in = src;
    for (int64_t k = 0, pos, run; k < len; k += run) {
        run = run_next(&w, len - k, &pos);
        if (s == 1) {
            memcpy(o + k * esz, in + pos * esz, (size_t)(run * esz));
        } else if (s == 0 && esz == 4) {
            uint32_t v;
            memcpy(&v, in + pos * 4, 4);
            for (int64_t t = 0; t < run; t++) ((uint32_t *)(void *)o)[k + t] = v;
        } else if (s == 0 && esz == 8) {
            uint64_t v;
            memcpy(&v, in + pos * 8, 8);
            for (int64_t t = 0; t < run; t++) ((uint64_t *)(void *)o)[k + t] = v;
        } else if (esz == 4) {
            for (int64_t t = 0; t < run; t++) ((uint32_t *)(void *)o)[k + t] = ((const uint32_t *)(const void *)in)[pos + t * s];
        } else if (esz == 8) {
            for (int64_t t = 0; t < run; t++) ((uint64_t *)(void *)o)[k + t] = ((const uint64_t *)(const void *)in)[pos + t * s];
        } else {
            for (int64_t t = 0; t < run; t++) memcpy(o + (k + t) * esz, in + (pos + t * s) * esz, (size_t)esz);
        }
    }
}

/* dst (contiguous, C order of shape) = the strided view of src starting at soff. */
static bool copy_strided(void *dst, const void *src, int esz, int rank, const int64_t *shape,
                         const int64_t *stride, int64_t soff) {
    gather_strided(dst, (const char *)src + soff * esz, esz, rank, shape, stride, 0, shape_size(rank, shape));
    return true;
}

static void c_strides(int rank, const int64_t *shape, int64_t *stride) {
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        stride[k] = s;
        s *= shape[k];
    }
}

/* Strides that read an array of shape (ra, a) broadcast to shape (r, out). */
static void bcast_strides(int ra, const int64_t *a, int r, const int64_t *out, int64_t *stride) {
    int64_t cs[MAXRANK];
    c_strides(ra, a, cs);
    for (int k = 0; k < r; k++) {
        int ia = k - (r - ra);
        stride[k] = (ia >= 0 && a[ia] == out[k] && a[ia] != 1) ? cs[ia] : 0;
    }
}

static bool same_shape(int ra, const int64_t *a, int rb, const int64_t *b) {
    if (ra != rb) return false;
    for (int k = 0; k < ra; k++)
        if (a[k] != b[k]) return false;
    return true;
}

static void splat(void *dst, const void *elem, int esz, int64_t n) {
    for (int64_t i = 0; i < n; i++) memcpy((char *)dst + i * esz, elem, (size_t)esz);
}

/* ---- per-element functions (OP_SCALARCALL) --------------------------------------- */

/* A function of scalars with control flow, applied to arrays, runs once per element. Its
   statements are compiled once per evaluation into a flat program over registers (its
   slots first), whose instructions are the elementwise loops above with n = 1, so both
   backends compute each operation alike; nothing is allocated per element. Loops charge
   the work limit once per iteration, as the statement walker does for host loops. Sema
   refuses recursion here, so each function has one activation at a time and owns its
   registers.

   Host code uses the same programs for a call of a function of scalars only (host_call):
   there a function may recurse, so a call of an active program saves its registers
   around the call, and calls enter and leave the run as the walker's do (the depth limit,
   the work charged). */
enum { FI_EW, FI_CAST, FI_MOV, FI_JZ, FI_JMP, FI_LOOP, FI_RET, FI_CALL, FI_CPART, FI_CPACK };

typedef struct FProg FProg;
typedef struct FIns {
    int kind, op;
    DType dt, adt;
    int in[3], out, tgt;
    FProg *callee;  /* FI_CALL */
    int *cargs;     /* FI_CALL: the argument registers, one per callee parameter */
    Loc loc;        /* FI_LOOP: charged against the work limit; FI_CALL: the call's */
} FIns;

struct FProg {
    const Fn *fn;
    FIns *ins;
    int n, cap;
    Cell *regs;
    int nregs, rcap;
    int *regof;     /* by Val id, while compiling one statement */
    DType *rdt;     /* by register: its type (the lanes of vexec are packed by it) */
    unsigned char *held; /* by register: live from one statement to another (slots, a for's
                            counter and bound), so vexec writes only its active lanes */
    int ret;        /* the register the last return left its value in */
    int active;     /* activations running (host code: recursion) */
    int vidx;       /* its place in the build's list (vexec's per-program state) */
    bool host;      /* built for host code (host_call): calls enter the run */
    FProg *next;    /* every program of one build, to free */
};

typedef struct FBuild {
    FProg *all;
    bool oom;
    bool host;      /* the programs are host code's (FProg.host) */
} FBuild;

static void fprog_free_all(FProg *p) {
    while (p) {
        FProg *nx = p->next;
        for (int i = 0; i < p->n; i++) free(p->ins[i].cargs);
        free(p->ins);
        free(p->regs);
        free(p->regof);
        free(p->rdt);
        free(p->held);
        free(p);
        p = nx;
    }
}

static int freg(FBuild *b, FProg *p, DType dt, bool held) {
    if (p->nregs == p->rcap) {
        int cap = p->rcap ? p->rcap * 2 : 32;
        Cell *r = realloc(p->regs, sizeof(Cell) * (size_t)cap);
        if (r) p->regs = r;
        DType *t = r ? realloc(p->rdt, sizeof(DType) * (size_t)cap) : NULL;
        if (t) p->rdt = t;
        unsigned char *h = t ? realloc(p->held, (size_t)cap) : NULL;
        if (!h) {
            b->oom = true;
            return 0;
        }
        p->held = h;
        p->rcap = cap;
    }
    memset(&p->regs[p->nregs], 0, sizeof(Cell));
    p->rdt[p->nregs] = dt;
    p->held[p->nregs] = held;
    return p->nregs++;
}

static FIns *fins(FBuild *b, FProg *p, int kind) {
    static FIns spare;
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 32;
        FIns *ni = realloc(p->ins, sizeof(FIns) * (size_t)cap);
        if (!ni) {
            b->oom = true;
            memset(&spare, 0, sizeof spare);
            return &spare;
        }
        p->ins = ni;
        p->cap = cap;
    }
    FIns *in = &p->ins[p->n++];
    memset(in, 0, sizeof *in);
    in->kind = kind;
    return in;
}

static FProg *fprog_get(FBuild *b, const Fn *fn, int depth);

static int fval(FBuild *b, FProg *p, const Val *v, int depth) {
    if (b->oom) return 0;
    if (v->op == OP_SLOT) return v->slot;
    ASSERT(v->id >= 0 && v->id < p->fn->nvals);
    if (p->regof[v->id] >= 0) return p->regof[v->id];
    int in[3] = {0, 0, 0}, r;
    if (v->op == OP_CONST) {
        r = freg(b, p, v->dt, false);
        if (!b->oom) cell_set(&p->regs[r], v->dt, v->c);
    } else if (v->op == OP_CALL || v->op == OP_SCALARCALL) {
        FProg *q = fprog_get(b, v->fn, depth + 1);
        int *cargs = malloc(sizeof(int) * (size_t)(v->nargs ? v->nargs : 1));
        if (!q || !cargs) {
            free(cargs);
            b->oom = true;
            return 0;
        }
        for (int k = 0; k < v->nargs; k++) cargs[k] = fval(b, p, v->args[k], depth);
        r = freg(b, p, v->dt, false);
        FIns *x = b->oom ? NULL : fins(b, p, FI_CALL);
        if (b->oom) { /* x, if any, is the spare: nothing holds cargs */
            free(cargs);
            return 0;
        }
        x->callee = q, x->cargs = cargs, x->out = r, x->loc = v->loc;
    } else {
        /* sema's check_scalar_calls; a complex number's parts (compiler/widen.c) */
        ASSERT(v->op < OP_EW_END || v->op == OP_CAST || v->op == OP_CPART || v->op == OP_CPACK);
        ASSERT(v->nargs <= 3);
        for (int k = 0; k < v->nargs; k++) in[k] = fval(b, p, v->args[k], depth);
        r = freg(b, p, v->dt, false);
        int kind = v->op == OP_CAST ? FI_CAST : v->op == OP_CPART ? FI_CPART : v->op == OP_CPACK ? FI_CPACK : FI_EW;
        FIns *x = fins(b, p, kind);
        if (b->oom) return 0;
        x->op = v->op == OP_CPART ? v->axis : (int)v->op, x->dt = v->dt, x->out = r;
        memcpy(x->in, in, sizeof in);
        x->adt = kind != FI_EW ? v->args[0]->dt : v->args[ew_info[v->op].cls == OC_SELECT ? 1 : 0]->dt;
    }
    p->regof[v->id] = r;
    return r;
}

/* A statement's value, computed afresh (its DAG may read slots set since). */
static int fstmt_val(FBuild *b, FProg *p, const Val *v, int depth) {
    for (int i = 0; i < p->fn->nvals; i++) p->regof[i] = -1;
    return fval(b, p, v, depth);
}

static void fjump_here(FProg *p, int at) {
    if (at < p->n) p->ins[at].tgt = p->n;
}

static void fstmts(FBuild *b, FProg *p, const Stmt *s, int depth) {
    for (; s && !b->oom; s = s->next) {
        switch (s->kind) {
        case S_SET: {
            int r = fstmt_val(b, p, s->v, depth);
            FIns *x = fins(b, p, FI_MOV);
            x->out = s->slot, x->in[0] = r;
            break;
        }
        case S_IF: {
            int r = fstmt_val(b, p, s->v, depth);
            int jz = p->n;
            fins(b, p, FI_JZ)->in[0] = r;
            fstmts(b, p, s->body, depth);
            int jmp = p->n;
            fins(b, p, FI_JMP);
            fjump_here(p, jz);
            fstmts(b, p, s->els, depth);
            fjump_here(p, jmp);
            break;
        }
        case S_WHILE: {
            int head = p->n;
            int r = fstmt_val(b, p, s->v, depth);
            int jz = p->n;
            fins(b, p, FI_JZ)->in[0] = r;
            fstmts(b, p, s->body, depth);
            FIns *x = fins(b, p, FI_LOOP);
            x->tgt = head, x->loc = s->loc;
            fjump_here(p, jz);
            break;
        }
        case S_FOR: {
            /* ctr = lo; hi fixed at entry; while ctr < hi: slot = ctr; body; ctr++ */
            int bound[2];
            for (int k = 0; k < 2; k++) {
                const Val *e = k ? s->v2 : s->v;
                int r = fstmt_val(b, p, e, depth);
                bound[k] = freg(b, p, DT_I64, true);
                FIns *x = fins(b, p, e->dt == DT_I64 ? FI_MOV : FI_CAST);
                x->out = bound[k], x->in[0] = r, x->dt = DT_I64, x->adt = e->dt;
            }
            int one = freg(b, p, DT_I64, false), test = freg(b, p, DT_BOOL, false);
            if (b->oom) return;
            p->regs[one].i64 = 1;
            int head = p->n;
            FIns *x = fins(b, p, FI_EW);
            x->op = OP_LT, x->dt = DT_BOOL, x->adt = DT_I64, x->out = test, x->in[0] = bound[0], x->in[1] = bound[1];
            int jz = p->n;
            fins(b, p, FI_JZ)->in[0] = test;
            DType sdt = p->fn->slots[s->slot].dt;
            x = fins(b, p, sdt == DT_I64 ? FI_MOV : FI_CAST);
            x->out = s->slot, x->in[0] = bound[0], x->dt = sdt, x->adt = DT_I64;
            fstmts(b, p, s->body, depth);
            x = fins(b, p, FI_EW);
            x->op = OP_ADD, x->dt = DT_I64, x->adt = DT_I64, x->out = bound[0], x->in[0] = bound[0], x->in[1] = one;
            x = fins(b, p, FI_LOOP);
            x->tgt = head, x->loc = s->loc;
            fjump_here(p, jz);
            break;
        }
        case S_RETURN: {
            int r = s->v ? fstmt_val(b, p, s->v, depth) : 0;
            fins(b, p, FI_RET)->in[0] = r;
            break;
        }
        default: die("IR: statement %d in a per-element function (sema's check_scalar_calls)", (int)s->kind);
        }
    }
}

static FProg *fprog_get(FBuild *b, const Fn *fn, int depth) {
    for (FProg *q = b->all; q; q = q->next)
        if (q->fn == fn) return q;
    if (depth > 1000) die("per-element call chain too deep (recursion: sema's check_scalar_calls)");
    FProg *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->fn = fn;
    p->host = b->host;
    p->next = b->all;
    b->all = p;
    p->regof = malloc(sizeof(int) * (size_t)(fn->nvals ? fn->nvals : 1));
    if (!p->regof) return NULL;
    for (int i = 0; i < fn->nslots; i++) freg(b, p, fn->slots[i].dt, true);
    int zero = freg(b, p, fn->ret_dt, false);
    fstmts(b, p, fn->body, depth);
    fins(b, p, FI_RET)->in[0] = zero; /* not reached: sema checks every path returns */
    return b->oom ? NULL : p;
}

static bool fprog_exec(Run *run, FProg *p) {
    Cell *r = p->regs;
    for (int pc = 0;;) {
        const FIns *in = &p->ins[pc];
        switch (in->kind) {
        case FI_EW:
            ew_tab[in->op][in->adt](&r[in->out], &r[in->in[0]], &r[in->in[1]], &r[in->in[2]], 1);
            pc++;
            break;
        case FI_CAST:
            cast_tab[in->dt][in->adt](&r[in->out], &r[in->in[0]], 1);
            pc++;
            break;
        case FI_CPART: /* in->op: 0 re, 1 im */
            cpart_n(in->dt, in->op, &r[in->out], &r[in->in[0]], 1);
            pc++;
            break;
        case FI_CPACK: {
            Cell c; /* out may be an operand */
            cpack_n(in->dt, &c, &r[in->in[0]], &r[in->in[1]], 1);
            r[in->out] = c;
            pc++;
            break;
        }
        case FI_MOV:
            r[in->out] = r[in->in[0]];
            pc++;
            break;
        case FI_JZ: pc = r[in->in[0]].b ? pc + 1 : in->tgt; break;
        case FI_JMP: pc = in->tgt; break;
        case FI_LOOP:
            if (!run_charge(run, in->loc, 1)) return false; /* the work limit, and interrupts */
            pc = in->tgt;
            break;
        case FI_RET: p->ret = in->in[0]; return true;
        case FI_CALL: {
            FProg *q = in->callee;
            Cell stack[32], *save = NULL; /* q's registers, if q is running (recursion) */
            if (q->active) {
                save = q->nregs <= 32 ? stack : malloc(sizeof(Cell) * (size_t)q->nregs);
                if (!save) {
                    rt_error(run->err, in->loc, "out of memory");
                    return false;
                }
                memcpy(save, q->regs, sizeof(Cell) * (size_t)q->nregs);
            }
            Cell a[16], *av = q->fn->nparams <= 16 ? a : malloc(sizeof(Cell) * (size_t)q->fn->nparams);
            bool ok = av && (!q->host || run_enter(run, in->loc, q->fn));
            if (!av) rt_error(run->err, in->loc, "out of memory");
            if (ok) {
                /* the arguments read before any is written: r may be q's own registers */
                for (int k = 0; k < q->fn->nparams; k++) av[k] = r[in->cargs[k]];
                for (int k = 0; k < q->fn->nparams; k++) q->regs[k] = av[k];
                q->active++;
                ok = fprog_exec(run, q);
                q->active--;
                if (q->host) run_leave(run);
            }
            if (av != a) free(av);
            Cell res = ok ? q->regs[q->ret] : (Cell){0};
            if (save) {
                memcpy(q->regs, save, sizeof(Cell) * (size_t)q->nregs);
                if (save != stack) free(save);
            }
            if (!ok) return false;
            r[in->out] = res; /* after the restore: r may be q's own registers */
            pc++;
            break;
        }
        default: die("bad per-element instruction %d", in->kind);
        }
    }
}

/* ---- per-element functions over blocks of lanes -------------------------------------- */

/* An array's per-element calls run VL elements at a time ("lanes"), each instruction one
   elementwise loop over the lanes (the chunk loops above, with n up to VL): the
   interpreter's cost is paid once per VL elements, and the loops vectorise. Lanes part
   where their branches do: the lanes at one instruction form a group with a mask; a
   conditional jump splits its group, and the group furthest behind in the program runs
   next, so a loop's lanes run it until the last leaves, the others waiting at its exit,
   where they merge again (structured code, so the smallest pc is always safe to run).
   Groups wait only at statement boundaries, where a statement's temporaries are dead, so
   an instruction computes every lane between the group's first and last, active or
   not, into a temporary; registers that live across statements (FProg.held) take only
   the active lanes. Calls run only for their group's lanes. Each lane computes exactly
   what fprog_exec computes for its element, with the same loops: the values are the
   same bits. */
enum { VL = 128 };
#define VREG ((size_t)VL * 16) /* bytes a register's lanes take (a c128 has 16 each) */

typedef struct VGroup {
    int pc, lo, hi, cnt; /* lanes lo..hi hold the cnt active ones */
    unsigned char m[VL];
} VGroup;

typedef struct VState {
    FProg *p;
    unsigned char *regs; /* p->nregs registers of VREG bytes */
    unsigned char *tmp;  /* VREG bytes: a held register's result before the masked store */
    VGroup *wait;        /* groups waiting at a later instruction, one per pc at most */
    int nwait;
} VState;

/* The states of one build's programs (FBuild.all, by FProg.vidx), for one thread. */
typedef struct VSet {
    VState *st;
    int n;
} VSet;

static void vset_free(VSet *v) {
    if (!v) return;
    for (int i = 0; i < v->n; i++) {
        free(v->st[i].regs);
        free(v->st[i].tmp);
        free(v->st[i].wait);
    }
    free(v->st);
    free(v);
}

/* Numbers the programs of a build (FProg.vidx); how many there are. */
static int fprog_number(FProg *all) {
    int n = 0;
    for (FProg *q = all; q; q = q->next) q->vidx = n++;
    return n;
}

/* all's lanes for one thread; all was numbered (fprog_number) when it was built. */
static VSet *vset_new(FProg *all) {
    VSet *v = calloc(1, sizeof *v);
    int n = 0;
    for (FProg *q = all; q; q = q->next) n++;
    if (!v || !(v->st = calloc((size_t)n, sizeof *v->st))) {
        free(v);
        return NULL;
    }
    v->n = n;
    for (FProg *q = all; q; q = q->next) {
        VState *s = &v->st[q->vidx];
        s->p = q;
        s->regs = aligned_alloc(64, VREG * (size_t)(q->nregs ? q->nregs : 1));
        s->tmp = aligned_alloc(64, VREG);
        s->wait = malloc(sizeof(VGroup) * (size_t)(q->n + 1));
        if (!s->regs || !s->tmp || !s->wait) {
            vset_free(v);
            return NULL;
        }
        /* every lane starts as the scalar register: constants splatted, the rest 0 */
        for (int r = 0; r < q->nregs; r++) splat(s->regs + VREG * (size_t)r, &q->regs[r], esize(q->rdt[r]), VL);
    }
    return v;
}

static inline unsigned char *vreg(const VState *s, int r) { return s->regs + VREG * (size_t)r; }

/* The group's lo, hi and cnt from its mask over lanes [0, n). */
static void vgroup_span(VGroup *g, int n) {
    g->lo = n, g->hi = -1, g->cnt = 0;
    for (int k = 0; k < n; k++)
        if (g->m[k]) {
            if (g->lo == n) g->lo = k;
            g->hi = k;
            g->cnt++;
        }
}

/* The group's active lanes of src into dst (esz bytes a lane). */
static void vstore(const VGroup *g, unsigned char *dst, const unsigned char *src, int esz) {
    if (g->cnt == g->hi - g->lo + 1) {
        memcpy(dst + (size_t)g->lo * esz, src + (size_t)g->lo * esz, (size_t)g->cnt * esz);
        return;
    }
    for (int k = g->lo; k <= g->hi; k++)
        if (g->m[k]) memcpy(dst + (size_t)k * esz, src + (size_t)k * esz, (size_t)esz);
}

static void vwait_push(VState *s, const VGroup *g, int n) {
    if (!g->cnt) return;
    for (int i = 0; i < s->nwait; i++) {
        VGroup *w = &s->wait[i];
        if (w->pc != g->pc) continue;
        for (int k = g->lo; k <= g->hi; k++) w->m[k] |= g->m[k];
        vgroup_span(w, n);
        return;
    }
    s->wait[s->nwait++] = *g;
}

/* Who runs the lanes: the run's own thread charges each loop iteration (the work limit,
   interrupts: run_charge), and where other threads run the same call's other chunks,
   tells them to stop through *halt; those threads only watch *halt. */
typedef struct VCtx {
    Run *run;          /* NULL on a worker thread */
    _Atomic int *halt; /* NULL on one thread */
} VCtx;

static bool vloop_charge(const VCtx *cx, Loc loc, int64_t n) {
    if (!cx->run) return !atomic_load_explicit(cx->halt, memory_order_relaxed);
    if (run_charge(cx->run, loc, n)) return true;
    if (cx->halt) atomic_store(cx->halt, 1);
    return false;
}

/* Runs s's program on lanes [0, n) where m0 is set (every one if NULL), its parameters
   already in registers 0..; the returned values go to ret (esize of the result a lane),
   for those lanes only. False when a loop hits the work limit or the run is interrupted
   (with the error set on the run's thread), or another thread said to stop. */
static bool vexec(VSet *vs, VState *s, const VCtx *cx, const unsigned char *m0, int n, unsigned char *ret) {
    const FProg *p = s->p;
    const DType *rdt = p->rdt;
    VGroup g;
    g.pc = 0;
    if (m0) memcpy(g.m, m0, (size_t)n);
    else memset(g.m, 1, (size_t)n);
    vgroup_span(&g, n);
    s->nwait = 0;
    for (;;) {
        /* the group furthest behind runs; one at the same instruction joins it */
        if (s->nwait) {
            int best = 0;
            for (int i = 1; i < s->nwait; i++)
                if (s->wait[i].pc < s->wait[best].pc) best = i;
            VGroup *w = &s->wait[best];
            if (!g.cnt || w->pc < g.pc) {
                VGroup t = *w;
                *w = s->wait[--s->nwait];
                vwait_push(s, &g, n);
                g = t;
            } else if (w->pc == g.pc) {
                for (int k = w->lo; k <= w->hi; k++) g.m[k] |= w->m[k];
                *w = s->wait[--s->nwait];
                vgroup_span(&g, n);
            }
        }
        if (!g.cnt) return true;
        const FIns *in = &p->ins[g.pc];
        const int lo = g.lo, len = g.hi - g.lo + 1;
        switch (in->kind) {
        case FI_EW:
        case FI_CAST:
        case FI_CPART:
        case FI_CPACK:
        case FI_MOV: {
            const int eo = esize(rdt[in->out]);
            const bool alias = in->out == in->in[0] || in->out == in->in[1] || in->out == in->in[2];
            const bool masked = p->held[in->out] && g.cnt != len;
            unsigned char *dst = (masked || alias) ? s->tmp : vreg(s, in->out);
            const void *a = vreg(s, in->in[0]) + (size_t)lo * esize(rdt[in->in[0]]);
            void *o = dst + (size_t)lo * eo;
            if (in->kind == FI_EW)
                ew_tab[in->op][in->adt](o, a, vreg(s, in->in[1]) + (size_t)lo * esize(rdt[in->in[1]]),
                                        vreg(s, in->in[2]) + (size_t)lo * esize(rdt[in->in[2]]), len);
            else if (in->kind == FI_CAST) cast_tab[in->dt][in->adt](o, a, len);
            else if (in->kind == FI_CPART) cpart_n(in->dt, in->op, o, a, len);
            else if (in->kind == FI_CPACK)
                cpack_n(in->dt, o, a, vreg(s, in->in[1]) + (size_t)lo * esize(rdt[in->in[1]]), len);
            else memcpy(o, a, (size_t)len * eo);
            if (dst == s->tmp) {
                if (masked) vstore(&g, vreg(s, in->out), s->tmp, eo);
                else memcpy(vreg(s, in->out) + (size_t)lo * eo, o, (size_t)len * eo);
            }
            g.pc++;
            break;
        }
        case FI_JZ: { /* lanes whose condition is false jump */
            const unsigned char *c = vreg(s, in->in[0]);
            int off = 0;
            for (int k = g.lo; k <= g.hi; k++) off += g.m[k] & !c[k];
            if (off == g.cnt) {
                g.pc = in->tgt;
            } else {
                if (off) {
                    VGroup t;
                    t.pc = in->tgt;
                    memset(t.m, 0, (size_t)n);
                    for (int k = g.lo; k <= g.hi; k++)
                        if (g.m[k] && !c[k]) g.m[k] = 0, t.m[k] = 1;
                    vgroup_span(&t, n);
                    vgroup_span(&g, n);
                    vwait_push(s, &t, n);
                }
                g.pc++;
            }
            break;
        }
        case FI_JMP: g.pc = in->tgt; break;
        case FI_LOOP:
            if (!vloop_charge(cx, in->loc, g.cnt)) return false; /* per lane, as fprog_exec */
            g.pc = in->tgt;
            break;
        case FI_RET:
            vstore(&g, ret, vreg(s, in->in[0]), esize(p->fn->ret_dt));
            g.cnt = 0;
            break;
        case FI_CALL: {
            VState *q = &vs->st[in->callee->vidx];
            for (int k = 0; k < q->p->fn->nparams; k++) {
                const int e = esize(rdt[in->cargs[k]]);
                memcpy(vreg(q, k) + (size_t)lo * e, vreg(s, in->cargs[k]) + (size_t)lo * e, (size_t)len * e);
            }
            if (!vexec(vs, q, cx, g.m, n, vreg(s, in->out))) return false;
            g.pc++;
            break;
        }
        default: die("bad per-element instruction %d", in->kind);
        }
    }
}

/* ---- host calls of functions of scalars -------------------------------------------- */

/* Per run (Run.host_progs): the functions host code called, whether each is a function of
   scalars only (host_ok), and their programs, built once in one FBuild. */
typedef struct HostProgs {
    FBuild b;
    const Fn **fns;
    signed char *ok; /* 1 yes, 0 no, -1 being decided (a recursive call: assumed yes) */
    int n, cap;
} HostProgs;

static bool host_ok(HostProgs *h, const Fn *fn);

/* v and what it reads: scalars, and ops a program has (fval); seen marks v by id. */
static bool host_val_ok(HostProgs *h, const Fn *fn, const Val *v, unsigned char *seen) {
    if (v->id < 0 || v->id >= fn->nvals) return false;
    if (seen[v->id]) return true;
    seen[v->id] = 1;
    if (v->rank != 0 || v->nargs > 3 || v->dt == DT_VOID) return false;
    for (int k = 0; k < v->nargs; k++)
        if (!host_val_ok(h, fn, v->args[k], seen)) return false;
    switch ((int)v->op) {
    case OP_SLOT: return v->slot >= 0 && v->slot < fn->nslots;
    case OP_CONST: return true;
    case OP_CALL:
    case OP_SCALARCALL: return v->fn && v->fn->nparams == v->nargs && host_ok(h, v->fn);
    case OP_CAST: return cast_tab[v->dt][v->args[0]->dt] != NULL;
    case OP_CPART:
    case OP_CPACK: return true;
    default:
        if (!op_is_ew(v->op) || op_is_gen(v->op) || v->op >= OP_EW_END) return false;
        return v->nargs > 0 && ew_tab[v->op][v->args[ew_info[v->op].cls == OC_SELECT ? 1 : 0]->dt] != NULL;
    }
}

static bool host_stmts_ok(HostProgs *h, const Fn *fn, const Stmt *s, unsigned char *seen) {
    for (; s; s = s->next) {
        switch (s->kind) {
        case S_SET:
            if (!host_val_ok(h, fn, s->v, seen)) return false;
            break;
        case S_RETURN:
            if (s->nvs || !s->v || !host_val_ok(h, fn, s->v, seen)) return false;
            break;
        case S_IF:
        case S_WHILE:
            if (s->v->dt != DT_BOOL || !host_val_ok(h, fn, s->v, seen) || !host_stmts_ok(h, fn, s->body, seen) ||
                !host_stmts_ok(h, fn, s->els, seen))
                return false;
            break;
        case S_FOR:
            if (!host_val_ok(h, fn, s->v, seen) || !host_val_ok(h, fn, s->v2, seen) ||
                !host_stmts_ok(h, fn, s->body, seen))
                return false;
            break;
        default: return false; /* print, save, several results, effects: the walker */
        }
    }
    return true;
}

/* fn takes scalars, returns one, and its body (and every function it calls) is what a
   per-element program can run: then host code calls it as a program (host_call). */
static bool host_ok(HostProgs *h, const Fn *fn) {
    for (int i = 0; i < h->n; i++)
        if (h->fns[i] == fn) return h->ok[i] != 0;
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 16;
        const Fn **fns = realloc(h->fns, sizeof *fns * (size_t)cap);
        if (fns) h->fns = fns;
        signed char *ok = fns ? realloc(h->ok, (size_t)cap) : NULL;
        if (!ok) return false;
        h->ok = ok;
        h->cap = cap;
    }
    int me = h->n++;
    h->fns[me] = fn;
    h->ok[me] = -1;
    bool ok = fn->nres == 0 && fn->ret_dt != DT_VOID && fn->ret_rank == 0 && fn->nvals > 0;
    for (int i = 0; ok && i < fn->nslots; i++) ok = fn->slots[i].rank == 0;
    unsigned char *seen = ok ? calloc((size_t)fn->nvals, 1) : NULL;
    ok = seen && host_stmts_ok(h, fn, fn->body, seen);
    free(seen);
    h->ok[me] = ok;
    return ok;
}

static void host_progs_free(HostProgs *h) {
    fprog_free_all(h->b.all);
    free(h->fns);
    free(h->ok);
}

/* A call from host code of a function of scalars (host_ok) as its program: registers for
   the walker's allocations and memo per operation. *handled is false when fn is not one. */
static bool host_call(Run *c, const Fn *fn, Arr **args, Arr **result, Loc loc, bool *handled) {
    HostProgs *h = c->host_progs;
    *handled = h && host_ok(h, fn);
    if (!*handled) return false;
    for (int i = 0; i < fn->nparams; i++)
        if (!args[i] || args[i]->rank != 0 || args[i]->dt != fn->slots[i].dt) return *handled = false;
    h->b.host = true;
    FProg *p = fprog_get(&h->b, fn, 0);
    if (!p || h->b.oom) {
        rt_error(c->err, loc, "out of memory");
        return false;
    }
    ASSERT(!p->active); /* programs do not call the walker */
    if (!run_enter(c, loc, fn)) return false;
    for (int i = 0; i < fn->nparams; i++) memcpy(&p->regs[i], args[i]->data, (size_t)esize(fn->slots[i].dt));
    p->active++;
    bool ok = fprog_exec(c, p);
    p->active--;
    run_leave(c);
    if (!ok) return false;
    Arr *r = arr_new(fn->ret_dt, 0, NULL);
    if (!r) {
        rt_error(c->err, loc, "out of memory");
        return false;
    }
    memcpy(r->data, &p->regs[p->ret], (size_t)esize(fn->ret_dt));
    *result = r;
    return true;
}

/* ---- fused elementwise programs -------------------------------------------------- */

static bool fusable(int op) { return op_is_ew(op) || op_is_gen(op); }
/* A checkdim is transparent to fusion: its check runs when the program is built
   (sema wraps inlined calls in them, which must not stop map-reduce fusion). */
static bool fusable_val(const Val *v) {
    return fusable(v->op) || (v->op == OP_CHECKDIM && fusable_val(v->args[0]));
}

static __attribute__((noinline)) bool check_dims(Frame *f, const Val *v) {
    int64_t a, b;
    if (!get_i64(f, v->args[1], &a) || !get_i64(f, v->args[2], &b)) return false;
    if (a != b) {
        rt_error(f->c->err, v->loc, v->msg ? v->msg : "size mismatch: %lld != %lld",
                 (long long)a, (long long)b);
        return false;
    }
    return true;
}

enum { NK_OP, NK_CAST, NK_LEAF, NK_GEN, NK_SCALL, NK_HBIN, NK_CPART, NK_CPACK, NK_CAT };

/* A piece of a 1-D concat read in place (NK_CAT): len elements of a from start. */
typedef struct CatPart {
    Arr *a;
    int64_t start, len;
} CatPart;
/* How a leaf's chunk is read: in place, one value splatted, walked with broadcast
   strides, or from the worker's tile of a value rows_eval computes a tile of rows at a
   time (RowPlan). */
enum { LM_DIRECT, LM_SPLAT, LM_WALK, LM_TILE };

typedef struct PNode {
    const Val *v;
    int kind;
    DType dt, adt;   /* result type; operand type the loop is chosen by */
    int nin, in[3];
    int rank;
    int64_t shape[MAXRANK];
    Arr *arr;        /* NK_LEAF */
    int lmode;
    int tslot;       /* LM_TILE: which of the worker's tile buffers (Prog.tb) */
    int64_t stride[MAXRANK]; /* NK_LEAF walk / NK_GEN index map, over the program's shape */
    bool mapped;     /* NK_GEN: shape differs from the program's */
    Cell gval;       /* NK_GEN: OP_FULL's value */
    double g0, g1;   /* NK_GEN: linspace start, step (or delta) */
    int64_t gn;      /* NK_GEN: linspace n */
    uint64_t seed;
    void *buf;
    const void *cur; /* this chunk's values */
    int *xin;        /* NK_SCALL, NK_HBIN: the inputs, one per argument */
    FProg *fp;       /* NK_SCALL: the function's program, and those of its callees */
    VSet *vs;        /* NK_SCALL: their lanes (vexec), this Prog's own, made on first use */
    CatPart *cat;    /* NK_CAT: the pieces, in order */
    int ncat;
} PNode;

typedef struct Prog {
    PNode *nodes;
    int n, cap;
    int rank;
    int64_t shape[MAXRANK], size;
    int64_t chunk;
    int64_t *idx;    /* chunk offsets scratch */
    double *dtmp;    /* chunk of doubles for generators */
    void *mem;
    size_t per;      /* bytes of mem per node */
    Run *run;        /* NK_SCALL loops charge the work limit */
    bool failed;     /* a chunk stopped with an error */
    bool serial;     /* NK_SCALL: loops that charge the work limit, one thread where it is set */
    _Atomic int *halt; /* NK_SCALL on several threads (Workers.halt): stop, a thread failed */
    bool clone;      /* a worker's copy (prog_clone): frees only its buffers */
    char **tb;       /* LM_TILE leaves: the worker's tile buffers, holding elements */
    int64_t toff;    /* toff .. of the program's shape */
} Prog;

static void prog_free(Prog *p) {
    for (int i = 0; i < p->n && !p->clone; i++) {
        for (int k = 0; k < p->nodes[i].ncat; k++) arr_release(p->nodes[i].cat[k].a);
        free(p->nodes[i].cat);
        arr_release(p->nodes[i].arr);
        free(p->nodes[i].xin);
        fprog_free_all(p->nodes[i].fp);
    }
    for (int i = 0; i < p->n; i++) vset_free(p->nodes[i].vs); /* a clone's are its own */
    free(p->nodes);
    free(p->idx);
    free(p->dtmp);
    free(p->mem);
    memset(p, 0, sizeof *p);
}

static int prog_push(Frame *f, Prog *p, const Val *v) {
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        PNode *nn = realloc(p->nodes, sizeof(PNode) * (size_t)cap);
        if (!nn) {
            rt_error(f->c->err, v->loc, "out of memory");
            return -1;
        }
        p->nodes = nn;
        p->cap = cap;
    }
    PNode *nd = &p->nodes[p->n];
    memset(nd, 0, sizeof *nd);
    nd->v = v;
    nd->dt = v->dt;
    return p->n++;
}

/* Fused values are held to the sizes an array could have (shape_fits). */
static bool size_ok(Frame *f, Loc loc, DType dt, int rank, const int64_t *shape) {
    Dims d = {.rank = rank};
    memcpy(d.d, shape, sizeof(int64_t) * (size_t)rank);
    return shape_fits(f->c->err, loc, dt, &d);
}

/* A generator's shape, by the shape rules. */
static bool gen_dims(Frame *f, const Val *v, PNode *nd) {
    Dims d;
    if (!shape_rule(&f->ops, v, &d, NULL)) return false;
    nd->rank = d.rank;
    memcpy(nd->shape, d.d, sizeof nd->shape);
    return true;
}

static bool gen_setup(Frame *f, const Val *v, PNode *nd) {
    nd->kind = NK_GEN;
    switch (v->op) {
    case OP_IOTA: return gen_dims(f, v, nd);
    case OP_FULL: return get_cell(f, v->args[0], v->dt, &nd->gval) && gen_dims(f, v, nd);
    case OP_LINSPACE: {
        double start, stop;
        if (!get_double(f, v->args[0], &start) || !get_double(f, v->args[1], &stop) ||
            !gen_dims(f, v, nd))
            return false;
        /* NumPy: y = i * step + start, step = (stop - start) / (n - 1); when the step
           underflows to 0, y = i / (n - 1) * delta + start; the last is exactly stop. */
        nd->gn = nd->shape[0];
        nd->g0 = start;
        nd->g1 = stop;
        return true;
    }
    case OP_RAND:
    case OP_RANDN: {
        int64_t seed;
        if (!get_i64(f, v->args[0], &seed)) return false;
        nd->seed = (uint64_t)seed;
        return gen_dims(f, v, nd);
    }
    default: die("not a generator: %s", op_name[v->op]);
    }
}

static __attribute__((noinline)) int prog_add_gen(Frame *f, Prog *p, const Val *v) {
    PNode tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!gen_setup(f, v, &tmp)) return -1;
    int i = prog_push(f, p, v);
    if (i < 0) return -1;
    tmp.v = v;
    tmp.dt = v->dt;
    p->nodes[i] = tmp;
    return i;
}

static int prog_add(Frame *f, Prog *p, const Val *v);

/* An OP_SCALARCALL: its arguments broadcast together, the function compiled once. */
static __attribute__((noinline)) int prog_add_scall(Frame *f, Prog *p, const Val *v) {
    int *xin = malloc(sizeof(int) * (size_t)(v->nargs ? v->nargs : 1));
    if (!xin) {
        rt_error(f->c->err, v->loc, "out of memory");
        return -1;
    }
    Dims sh = {0};
    for (int k = 0; k < v->nargs; k++) {
        xin[k] = prog_add(f, p, v->args[k]);
        if (xin[k] < 0) {
            free(xin);
            return -1;
        }
        const PNode *a = &p->nodes[xin[k]];
        Dims ad = {.rank = a->rank};
        memcpy(ad.d, a->shape, sizeof ad.d);
        if (k == 0) sh = ad;
        else if (!shape_broadcast(f->c->err, v->loc, &sh, &ad)) {
            free(xin);
            return -1;
        }
    }
    FBuild b = {0};
    FProg *fp = fprog_get(&b, v->fn, 0);
    fprog_number(b.all);
    int i = fp ? prog_push(f, p, v) : -1;
    if (i < 0) {
        free(xin);
        fprog_free_all(b.all);
        if (!fp) rt_error(f->c->err, v->loc, "out of memory");
        return -1;
    }
    PNode *nd = &p->nodes[i];
    nd->kind = NK_SCALL;
    nd->nin = 0;
    nd->xin = xin;
    nd->fp = b.all;
    nd->rank = sh.rank;
    memcpy(nd->shape, sh.d, sizeof sh.d);
    return i;
}

/* An OP_HBIN (histogram()'s bins): x and its six scalars, the bin computed per
   element by cuk_hbin_* (kernels/ops.h) as the GPU does, edges computed, not tabled. */
static __attribute__((noinline)) int prog_add_hbin(Frame *f, Prog *p, const Val *v) {
    int *xin = malloc(sizeof(int) * (size_t)v->nargs);
    if (!xin) {
        rt_error(f->c->err, v->loc, "out of memory");
        return -1;
    }
    for (int k = 0; k < v->nargs; k++) {
        xin[k] = prog_add(f, p, v->args[k]);
        if (xin[k] < 0) {
            free(xin);
            return -1;
        }
        if (k > 0 && p->nodes[xin[k]].rank != 0) die("IR: hbin with a non-scalar operand %d", k);
    }
    int i = prog_push(f, p, v);
    if (i < 0) {
        free(xin);
        return -1;
    }
    PNode *nd = &p->nodes[i];
    const PNode *x = &p->nodes[xin[0]];
    nd->kind = NK_HBIN;
    nd->nin = 0;
    nd->xin = xin;
    nd->rank = x->rank;
    memcpy(nd->shape, x->shape, sizeof nd->shape);
    return i;
}

/* A 1-D concat read from its pieces in place (NK_CAT), where each piece is an array
   or a slice with step 1 of a 1-D array, read in its source: the left and right
   neighbours of a stencil, concat(zeros(1), x[0:n - 1]), are then never stored. */
static __attribute__((noinline)) int prog_add_cat(Frame *f, Prog *p, const Val *v) {
    int n = v->nargs;
    CatPart *cat = calloc((size_t)n, sizeof *cat);
    Dims *ds = calloc((size_t)n, sizeof *ds), od;
    int i = -1;
    if (!cat || !ds) {
        rt_error(f->c->err, v->loc, "out of memory");
        goto out;
    }
    for (int k = 0; k < n; k++) {
        const Val *x = v->args[k];
        SliceAxis ax[MAXRANK];
        Dims sd;
        if (x->op == OP_SLICE && !f->memo[x->id] && x->args[0]->rank == 1) {
            if (!shape_rule(&f->ops, x, &sd, ax)) goto out;
            if (sd.rank == 1 && (ax[0].step == 1 || ax[0].len <= 1)) {
                if (!(cat[k].a = eval(f, x->args[0]))) goto out;
                cat[k].start = ax[0].len > 0 ? ax[0].start : 0;
                cat[k].len = ax[0].len;
            }
        }
        if (!cat[k].a) {
            if (!(cat[k].a = eval(f, x))) goto out;
            cat[k].len = cat[k].a->size;
        }
        ASSERT(cat[k].a->dt == v->dt && cat[k].a->rank == 1);
        ds[k].rank = 1;
        ds[k].d[0] = cat[k].len;
    }
    if (!shape_concat(f->c->err, v, ds, n, &od, NULL) || !size_ok(f, v->loc, v->dt, 1, od.d) ||
        (i = prog_push(f, p, v)) < 0)
        goto out;
    PNode *nd = &p->nodes[i];
    nd->kind = NK_CAT;
    nd->cat = cat;
    nd->ncat = n;
    nd->rank = 1;
    nd->shape[0] = od.d[0];
    cat = NULL;
out:
    for (int k = 0; cat && k < n; k++) arr_release(cat[k].a);
    free(cat);
    free(ds);
    return i;
}

/* Elements [off, off + len) of an NK_CAT node's pieces into dst. */
static void cat_chunk(const PNode *nd, int64_t off, int64_t len, void *dst) {
    int esz = esize(nd->dt);
    char *o = dst;
    int64_t at = 0; /* where the piece starts in the concat */
    for (int k = 0; k < nd->ncat && len > 0; at += nd->cat[k].len, k++) {
        const CatPart *c = &nd->cat[k];
        if (off >= at + c->len) continue;
        int64_t from = off - at, take = c->len - from < len ? c->len - from : len;
        memcpy(o, (const char *)c->a->data + (c->start + from) * esz, (size_t)(take * esz));
        o += take * esz;
        off += take;
        len -= take;
    }
}

/* An NK_CAT node broadcast in a program of another shape: made an array, and read as a
   leaf by strides. */
static bool cat_to_leaf(Frame *f, PNode *nd) {
    Arr *a = new_arr(f, nd->v->loc, nd->dt, 1, nd->shape);
    if (!a) return false;
    cat_chunk(nd, 0, a->size, a->data);
    for (int k = 0; k < nd->ncat; k++) arr_release(nd->cat[k].a);
    free(nd->cat);
    nd->cat = NULL;
    nd->ncat = 0;
    nd->kind = NK_LEAF;
    nd->arr = a;
    return true;
}

/* Adds v (and what it needs) to the program; returns its node index or -1. */
static int prog_add_tile(Frame *f, Prog *p, const Val *v);
static bool rw_pending(const Frame *f, const Val *v);

static int prog_add(Frame *f, Prog *p, const Val *v) {
    for (int i = 0; i < p->n; i++)
        if (p->nodes[i].v == v) return i;
    if (f->rows) {
        int i = prog_add_tile(f, p, v);
        if (i != -2) return i;
    }
    if (v->op == OP_CHECKDIM && !f->memo[v->id] && fusable_val(v)) {
        if (!check_dims(f, v)) return -1;
        return prog_add(f, p, v->args[0]);
    }
    if (v->op == OP_CONCAT && v->rank == 1 && !f->memo[v->id]) return prog_add_cat(f, p, v);
    if (f->memo[v->id] || !fusable(v->op)) {
        Arr *a = eval(f, v);
        if (!a) return -1;
        int i = prog_push(f, p, v);
        if (i < 0) {
            arr_release(a);
            return -1;
        }
        PNode *nd = &p->nodes[i];
        nd->kind = NK_LEAF;
        nd->arr = a;
        nd->dt = a->dt;
        nd->rank = a->rank;
        memcpy(nd->shape, a->shape, sizeof nd->shape);
        return i;
    }
    if (op_is_gen(v->op)) return prog_add_gen(f, p, v);
    if (v->op == OP_SCALARCALL) return prog_add_scall(f, p, v);
    if (v->op == OP_HBIN) return prog_add_hbin(f, p, v);
    int in[3], nin = v->op == OP_CAST || v->op == OP_CPART ? 1 : v->op == OP_CPACK ? 2 : ew_info[v->op].arity;
    ASSERT(nin == v->nargs);
    for (int k = 0; k < nin; k++) {
        in[k] = prog_add(f, p, v->args[k]);
        if (in[k] < 0) return -1;
    }
    Dims sh = {.rank = p->nodes[in[0]].rank};
    memcpy(sh.d, p->nodes[in[0]].shape, sizeof sh.d);
    for (int k = 1; k < nin; k++) {
        const PNode *b = &p->nodes[in[k]];
        Dims bd = {.rank = b->rank};
        memcpy(bd.d, b->shape, sizeof bd.d);
        if (!shape_broadcast(f->c->err, v->loc, &sh, &bd)) return -1;
    }
    int i = prog_push(f, p, v);
    if (i < 0) return -1;
    PNode *nd = &p->nodes[i];
    nd->nin = nin;
    memcpy(nd->in, in, sizeof in);
    nd->rank = sh.rank;
    memcpy(nd->shape, sh.d, sizeof sh.d);
    if (v->op == OP_CAST || v->op == OP_CPART || v->op == OP_CPACK) {
        nd->kind = v->op == OP_CAST ? NK_CAST : v->op == OP_CPART ? NK_CPART : NK_CPACK;
        nd->adt = p->nodes[in[0]].dt;
    } else {
        nd->kind = NK_OP;
        OpClass cls = ew_info[v->op].cls;
        nd->adt = p->nodes[in[cls == OC_SELECT ? 1 : 0]].dt;
        for (int k = cls == OC_SELECT ? 1 : 0; k < nin; k++)
            if (p->nodes[in[k]].dt != nd->adt)
                die("IR: %s with operands of types %s and %s", op_name[v->op],
                    dtype_info[nd->adt].name, dtype_info[p->nodes[in[k]].dt].name);
    }
    return i;
}

/* Builds the chunk program of the elementwise DAG under root and sets up its buffers. */
static bool prog_build(Frame *f, const Val *root, Prog *p) {
    memset(p, 0, sizeof *p);
    p->run = f->c;
    if (prog_add(f, p, root) < 0) {
        prog_free(p);
        return false;
    }
    const PNode *r = &p->nodes[p->n - 1];
    p->rank = r->rank;
    memcpy(p->shape, r->shape, sizeof p->shape);
    if (!size_ok(f, root->loc, r->dt, p->rank, p->shape)) {
        prog_free(p);
        return false;
    }
    p->size = shape_size(p->rank, p->shape);
    p->chunk = p->size < CHUNK ? (p->size ? p->size : 1) : CHUNK;
    int wide = 8; /* bytes an element of the widest node (a c128 has 16) */
    for (int i = 0; i < p->n; i++)
        if (esize(p->nodes[i].dt) > wide) wide = esize(p->nodes[i].dt);
    size_t per = (size_t)((p->chunk * wide + 63) & ~63);
    p->per = per;
    p->mem = aligned_alloc(64, per * (size_t)p->n);
    p->idx = malloc(sizeof(int64_t) * (size_t)p->chunk);
    p->dtmp = malloc(sizeof(double) * (size_t)p->chunk);
    if (!p->mem || !p->idx || !p->dtmp) {
        rt_error(f->c->err, root->loc, "out of memory");
        prog_free(p);
        return false;
    }
    for (int i = 0; i < p->n; i++) {
        PNode *nd = &p->nodes[i];
        nd->buf = (char *)p->mem + per * (size_t)i;
        if (nd->kind == NK_SCALL) p->serial = true;
        if (nd->kind == NK_CAT && !same_shape(nd->rank, nd->shape, p->rank, p->shape) && !cat_to_leaf(f, nd)) {
            prog_free(p);
            return false;
        }
        if (nd->kind == NK_LEAF && nd->lmode != LM_TILE) {
            if (nd->arr->size == 1 && !rw_pending(f, nd->v)) {
                nd->lmode = LM_SPLAT;
                splat(nd->buf, nd->arr->data, esize(nd->dt), p->chunk);
            } else if (same_shape(nd->rank, nd->shape, p->rank, p->shape)) {
                nd->lmode = LM_DIRECT;
            } else {
                nd->lmode = LM_WALK;
                bcast_strides(nd->rank, nd->shape, p->rank, p->shape, nd->stride);
            }
        } else if (nd->kind == NK_GEN) {
            nd->mapped = !same_shape(nd->rank, nd->shape, p->rank, p->shape);
            if (nd->mapped) bcast_strides(nd->rank, nd->shape, p->rank, p->shape, nd->stride);
            if (nd->v->op == OP_FULL) splat(nd->buf, &nd->gval, esize(nd->dt), p->chunk);
        }
    }
    return true;
}

#define IOTA_FN(DTN, CT, UT, KIND, unused)                                                  \
    static void iota_##DTN(void *o, const int64_t *idx, int64_t off, int64_t n) {           \
        CT *y = o;                                                                          \
        if (idx)                                                                            \
            for (int64_t k = 0; k < n; k++) y[k] = (CT)idx[k];                              \
        else                                                                                \
            for (int64_t k = 0; k < n; k++) y[k] = (CT)(off + k);                           \
    }
CTYPES(IOTA_FN, 0)
#define IOTA_ENT(DTN, CT, UT, KIND, unused) [DT_##DTN] = iota_##DTN,
static void (*const iota_tab[DT_COUNT])(void *, const int64_t *, int64_t, int64_t) = {
    CTYPES(IOTA_ENT, 0)};

static void gen_chunk(Prog *p, PNode *nd, int64_t off, int64_t len) {
    const int64_t *idx = NULL;
    if (nd->mapped) {
        walk_offsets(p->rank, p->shape, nd->stride, off, len, p->idx);
        idx = p->idx;
    }
#define J(k) (idx ? idx[k] : off + (k))
    double *d = nd->dt == DT_F64 ? nd->buf : p->dtmp;
    switch (nd->v->op) {
    case OP_FULL: return; /* splatted once */
    case OP_IOTA: iota_tab[nd->dt](nd->buf, idx, off, len); return;
    case OP_LINSPACE: {
        double start = nd->g0, stop = nd->g1, delta = stop - start;
        int64_t n = nd->gn, div = n - 1;
        double step = div > 0 ? delta / (double)div : 0;
        for (int64_t k = 0; k < len; k++) {
            int64_t j = J(k);
            double y;
            if (div <= 0)
                y = (double)j * delta + start;
            else if (step == 0)
                y = (double)j / (double)div * delta + start;
            else
                y = (double)j * step + start;
            if (div > 0 && j == n - 1) y = stop;
            d[k] = y;
        }
        break;
    }
    /* Consecutive elements share Philox calls (4 per call, f64 uniforms 2): one call per
       group, the same words as the per-element functions give. */
#define PHILOX_LOOP(OUT, OF, PER)                                                           \
    do {                                                                                    \
        if (idx) {                                                                          \
            for (int64_t k = 0; k < len; k++) OUT[k] = OF(cuk_philox((uint64_t)idx[k] / PER, nd->seed), (uint64_t)idx[k]); \
            break;                                                                          \
        }                                                                                   \
        cuk_u32x4 r = cuk_philox((uint64_t)off / PER, nd->seed);                            \
        for (int64_t k = 0; k < len; k++) {                                                 \
            uint64_t i = (uint64_t)(off + k);                                               \
            if (k && i % PER == 0) r = cuk_philox(i / PER, nd->seed);                       \
            OUT[k] = OF(r, i);                                                              \
        }                                                                                   \
    } while (0)
    case OP_RAND:
        if (nd->dt == DT_F32) {
            float *y = nd->buf;
            PHILOX_LOOP(y, cuk_rand_f32_of, 4);
            return;
        }
        PHILOX_LOOP(d, cuk_rand_f64_of, 2);
        break;
    case OP_RANDN:
        if (nd->dt == DT_F32) {
            float *y = nd->buf;
            PHILOX_LOOP(y, cuk_randn_f32_of, 4);
            return;
        }
        PHILOX_LOOP(d, cuk_randn_f64_of, 4);
        break;
#undef PHILOX_LOOP
    default: die("not a generator");
    }
#undef J
    if (nd->dt != DT_F64) cast_tab[nd->dt][DT_F64](nd->buf, d, len);
}

/* Computes positions off .. off+len-1 of every node; the root writes to `out` if given.
   Returns the root's values. */
static const void *prog_chunk(Prog *p, int64_t off, int64_t len, void *out) {
    for (int i = 0; i < p->n; i++) {
        PNode *nd = &p->nodes[i];
        int esz = esize(nd->dt);
        void *dst = (i == p->n - 1 && out) ? out : nd->buf;
        switch (nd->kind) {
        case NK_LEAF:
            if (nd->lmode == LM_DIRECT) {
                nd->cur = (const char *)nd->arr->data + off * esz;
            } else if (nd->lmode == LM_TILE) {
                nd->cur = p->tb[nd->tslot] + (off - p->toff) * esz;
            } else if (nd->lmode == LM_SPLAT) {
                nd->cur = nd->buf;
            } else {
                gather_strided(nd->buf, nd->arr->data, esz, p->rank, p->shape, nd->stride, off, len);
                nd->cur = nd->buf;
            }
            if (dst != nd->buf) { /* a leaf as the root: only when materialising a copy */
                memcpy(dst, nd->cur, (size_t)(len * esz));
                nd->cur = dst;
            }
            break;
        case NK_CAT:
            cat_chunk(nd, off, len, dst);
            nd->cur = dst;
            break;
        case NK_GEN:
            gen_chunk(p, nd, off, len);
            nd->cur = nd->buf;
            if (dst != nd->buf) {
                memcpy(dst, nd->buf, (size_t)(len * esz));
                nd->cur = dst;
            }
            break;
        case NK_CAST:
            cast_tab[nd->dt][nd->adt](dst, p->nodes[nd->in[0]].cur, len);
            nd->cur = dst;
            break;
        case NK_CPART:
            cpart_n(nd->dt, nd->v->axis, dst, p->nodes[nd->in[0]].cur, len);
            nd->cur = dst;
            break;
        case NK_CPACK:
            cpack_n(nd->dt, dst, p->nodes[nd->in[0]].cur, p->nodes[nd->in[1]].cur, len);
            nd->cur = dst;
            break;
        case NK_SCALL: {
            /* nd->fp is the program of nd->v->fn: fprog_get put it last in its list */
            FProg *q = nd->fp;
            while (q->fn != nd->v->fn) q = q->next;
            if (!nd->vs && !(nd->vs = vset_new(nd->fp))) {
                rt_error(p->run->err, nd->v->loc, "out of memory");
                p->failed = true;
                return NULL;
            }
            VState *st = &nd->vs->st[q->vidx];
            int na = nd->v->nargs;
            for (int64_t k = 0; k < len; k += VL) {
                const int nl = len - k < VL ? (int)(len - k) : VL;
                for (int j = 0; j < na; j++) {
                    const PNode *x = &p->nodes[nd->xin[j]];
                    int xs = esize(x->dt);
                    memcpy(vreg(st, j), (const char *)x->cur + k * xs, (size_t)nl * xs);
                }
                const VCtx cx = {p->clone ? NULL : p->run, p->halt};
                if (!vexec(nd->vs, st, &cx, NULL, nl, (unsigned char *)dst + k * esz)) {
                    p->failed = true;
                    return NULL;
                }
            }
            nd->cur = dst;
            break;
        }
        case NK_HBIN: { /* the scalars were broadcast into their chunk buffers: take [0] */
            const void *c[7];
            for (int j = 0; j < 7; j++) c[j] = p->nodes[nd->xin[j]].cur;
            const int64_t nb = *(const int64_t *)c[1];
            const double lo = *(const double *)c[2], st = *(const double *)c[3];
            int64_t *o = dst;
            if (p->nodes[nd->xin[0]].dt == DT_F32) {
                const float *x = c[0], lt = *(const float *)c[4], ht = *(const float *)c[5], nm = *(const float *)c[6];
                for (int64_t k = 0; k < len; k++) o[k] = cuk_hbin_f32(x[k], nb, lo, st, lt, ht, nm, NULL);
            } else {
                const double *x = c[0], lt = *(const double *)c[4], ht = *(const double *)c[5], nm = *(const double *)c[6];
                for (int64_t k = 0; k < len; k++) o[k] = cuk_hbin_f64(x[k], nb, lo, st, lt, ht, nm, NULL);
            }
            nd->cur = dst;
            break;
        }
        case NK_OP:
            ew_tab[nd->v->op][nd->adt](dst, p->nodes[nd->in[0]].cur,
                                       nd->nin > 1 ? p->nodes[nd->in[1]].cur : NULL,
                                       nd->nin > 2 ? p->nodes[nd->in[2]].cur : NULL, len);
            nd->cur = dst;
            break;
        }
    }
    return p->nodes[p->n - 1].cur;
}

/* Elements [off, off + n) of program p into out, a chunk at a time; false when the
   program failed. */
static bool prog_fill(Prog *p, int64_t off, int64_t n, char *out) {
    int esz = esize(p->nodes[p->n - 1].dt);
    for (int64_t k = 0; k < n; k += p->chunk)
        if (!prog_chunk(p, off + k, n - k < p->chunk ? n - k : p->chunk, out + k * esz) && p->failed) return false;
    return true;
}

/* A stream of an array's values in chunks: a fused program or a materialised array. */
typedef struct Stream {
    Prog prog;
    Arr *arr;
    int rank;
    int64_t shape[MAXRANK], size;
    DType dt;
} Stream;

typedef bool (*SinkFn)(void *ctx, const void *vals, int64_t off, int64_t len);

static Arr *rows_eval(Frame *f, const Val *v, bool *handled, bool stream);

static bool stream_open(Frame *f, const Val *x, Stream *s) {
    memset(s, 0, sizeof *s);
    bool rows = false;
    if (fusable_val(x) && !f->memo[x->id] && x->rank >= 2) {
        /* a value computed from reductions along its last axis of values it uses again
           (softmax): stored once by rows_eval, rather than those values */
        s->arr = rows_eval(f, x, &rows, true);
        if (rows && !s->arr) return false;
        if (rows) memo_put(f, x, arr_retain(s->arr));
    }
    if (!rows && fusable_val(x) && !f->memo[x->id]) {
        if (!prog_build(f, x, &s->prog)) return false;
        s->rank = s->prog.rank;
        memcpy(s->shape, s->prog.shape, sizeof s->shape);
        s->size = s->prog.size;
        s->dt = x->dt;
        if (!run_charge(f->c, x->loc, s->size)) {
            prog_free(&s->prog);
            return false;
        }
        return true;
    }
    if (!rows) s->arr = eval(f, x);
    if (!s->arr) return false;
    s->rank = s->arr->rank;
    memcpy(s->shape, s->arr->shape, sizeof s->shape);
    s->size = s->arr->size;
    s->dt = s->arr->dt;
    if (!run_charge(f->c, x->loc, s->size)) {
        arr_release(s->arr);
        s->arr = NULL;
        return false;
    }
    return true;
}

static void stream_close(Stream *s) {
    if (s->arr)
        arr_release(s->arr);
    else
        prog_free(&s->prog);
    s->arr = NULL;
}

/* ---- every core (pool.h) ------------------------------------------------------------- */

/* Streams of at least this many elements are computed on every core: below, waking the
   threads costs more than it saves. */
enum { PAR_MIN = 16 * CHUNK };

/* A worker's copy of p: its own chunk buffers (the splatted ones copied) and scratch; the
   nodes' arrays and inputs stay p's. */
static bool prog_clone(const Prog *p, Prog *c) {
    *c = *p;
    c->clone = true;
    c->nodes = malloc(sizeof(PNode) * (size_t)p->n);
    c->mem = aligned_alloc(64, p->per * (size_t)p->n);
    c->idx = malloc(sizeof(int64_t) * (size_t)p->chunk);
    c->dtmp = malloc(sizeof(double) * (size_t)p->chunk);
    if (!c->nodes || !c->mem || !c->idx || !c->dtmp) {
        prog_free(c);
        return false;
    }
    memcpy(c->nodes, p->nodes, sizeof(PNode) * (size_t)p->n);
    memcpy(c->mem, p->mem, p->per * (size_t)p->n);
    for (int i = 0; i < p->n; i++) {
        c->nodes[i].buf = (char *)c->mem + p->per * (size_t)i;
        c->nodes[i].vs = NULL;
    }
    return true;
}

/* The worker programs of a parallel loop over s's chunks: worker 0 is s's own program,
   the others copies; how many there are (1: run on one thread). */
typedef struct Workers {
    Prog *progs[64];
    Prog copies[63];
    int n;
    _Atomic int halt; /* Prog.halt */
} Workers;

static int workers_open(Stream *s, Workers *w) {
    w->n = 1;
    w->progs[0] = &s->prog;
    atomic_init(&w->halt, 0);
    int want = pool_threads();
    if (want > 64) want = 64;
    if (want < 2 || s->size < PAR_MIN || (!s->arr && s->prog.serial && cpu_work_limit > 0)) return 1;
    if (!s->arr) s->prog.halt = &w->halt; /* the copies take it too */
    for (; w->n < want; w->n++) {
        if (!s->arr && !prog_clone(&s->prog, &w->copies[w->n - 1])) break;
        w->progs[w->n] = &w->copies[w->n - 1];
    }
    return w->n;
}

static void workers_close(Stream *s, Workers *w) {
    for (int i = 1; i < w->n && !s->arr; i++) prog_free(&w->copies[i - 1]);
    if (!s->arr) s->prog.halt = NULL;
    w->n = 0;
}

/* pool_for's watch while the caller waits for the other threads: an interrupt seen on
   the run's thread (the only one that may ask Python) stops them all. */
static bool workers_watch(void *ctx) {
    Workers *w = ctx;
    if (run_poll_now()) return true;
    atomic_store(&w->halt, 1);
    return false;
}

/* Elements [off, off + len) of s: the array's own, or computed by p (s's program or a
   worker's copy of it); copied or computed into out when it is given. NULL when the
   program failed. */
static const void *stream_vals(Stream *s, Prog *p, int64_t off, int64_t len, void *out) {
    if (s->arr) {
        const char *src = (const char *)s->arr->data + off * esize(s->dt);
        if (out) memcpy(out, src, (size_t)(len * esize(s->dt)));
        return src;
    }
    return prog_chunk(p, off, len, out);
}

/* Chunk k of s (CHUNK elements from k * CHUNK) on worker w's program; into out if given. */
static const void *chunk_of(Stream *s, Workers *w, int worker, int64_t k, void *out, int64_t *off, int64_t *len) {
    *off = k * CHUNK;
    *len = s->size - *off < CHUNK ? s->size - *off : CHUNK;
    return stream_vals(s, w->progs[worker], *off, *len, out);
}

typedef struct TakeJob {
    Stream *s;
    Workers *w;
    char *out;
} TakeJob;

static void take_chunk(void *ctx, int worker, int64_t k) {
    TakeJob *j = ctx;
    int64_t off, len;
    chunk_of(j->s, j->w, worker, k, j->out + k * CHUNK * esize(j->s->dt), &off, &len);
}

static bool stream_run(Stream *s, SinkFn sink, void *ctx) {
    for (int64_t off = 0; off < s->size; off += CHUNK) {
        if (!run_poll()) return false; /* interrupted: the API reports it (run_interrupted) */
        int64_t len = s->size - off < CHUNK ? s->size - off : CHUNK;
        const void *vals = stream_vals(s, &s->prog, off, len, NULL);
        if (!vals && s->prog.failed) return false;
        if (!sink(ctx, vals, off, len)) return false;
    }
    return true;
}

/* The values of a stream without an array into out; false when its program failed. */
static bool stream_fill(Stream *s, char *out) {
    Workers w;
    if (workers_open(s, &w) > 1) { /* every core: the chunks are independent */
        TakeJob j = {s, &w, out};
        pool_for_watch((s->size + CHUNK - 1) / CHUNK, w.n, take_chunk, &j, workers_watch, &w);
        workers_close(s, &w);
        return true;
    }
    int esz = esize(s->dt);
    for (int64_t off = 0; off < s->size; off += s->prog.chunk) {
        int64_t len = s->size - off < s->prog.chunk ? s->size - off : s->prog.chunk;
        if (!run_poll()) break; /* interrupted: the API reports it (run_interrupted) */
        if (!prog_chunk(&s->prog, off, len, out + off * esz) && s->prog.failed) return false;
    }
    return true;
}

/* The stream's values as an array (the array itself when there is one). */
static Arr *stream_take(Frame *f, Stream *s, Loc loc) {
    if (s->arr) {
        Arr *a = s->arr;
        s->arr = NULL;
        prog_free(&s->prog);
        return a;
    }
    Arr *a = new_arr(f, loc, s->dt, s->rank, s->shape);
    if (a && !stream_fill(s, a->data)) {
        arr_release(a);
        a = NULL;
    }
    prog_free(&s->prog);
    return a;
}

/* stream_take for a reduction or scan along an axis: the values are stored anyway, so
   they are memoised for the other consumers of x (softmax's exp(x - max) feeds both a
   sum and a division). */
static Arr *take_memo(Frame *f, Stream *s, const Val *x) {
    bool fused = s->arr == NULL;
    Arr *a = stream_take(f, s, x->loc);
    if (a && fused && !f->memo[x->id]) {
        memo_put(f, x, arr_retain(a));
    }
    return a;
}

static Arr *eval_fused(Frame *f, const Val *v) {
    if (v->rank >= 2) { /* reductions along the last axis that feed v: a tile of rows at a time */
        bool handled;
        Arr *r = rows_eval(f, v, &handled, false);
        if (handled) return r;
    }
    Stream s;
    if (!stream_open(f, v, &s)) return NULL;
    return stream_take(f, &s, v->loc);
}

/* ---- scalar programs: lambda bodies of generic reductions and scans -------------- */

typedef struct SIns {
    int op;         /* an EW op, OP_CAST or OP_SCALARCALL */
    DType dt, adt;
    int in[3], out; /* registers */
    FProg *callee;  /* OP_SCALARCALL: the function's program (in SProg.fb) */
    int *cargs;     /* OP_SCALARCALL: the argument registers */
} SIns;

typedef struct SProg {
    SIns *ins;
    int n, cap;
    Cell *regs;     /* 0 = accumulator, 1 = element, then constants and results */
    int nregs, rcap;
    int root;
    int *regof;     /* by Val id, while compiling */
    char *dep;      /* by Val id: 0 unknown, 1 invariant, 2 reads an argument */
    FBuild fb;      /* the programs of the functions with loops it calls */
    Run *run;       /* their loops charge the work limit */
    bool failed;    /* a call stopped (the work limit; the error is set): steps do nothing */
} SProg;

/* Frees s; false when a call in it failed (the run's error says why). */
static bool sprog_done(SProg *s) {
    bool ok = !s->failed;
    for (int i = 0; i < s->n; i++) free(s->ins[i].cargs);
    free(s->ins);
    free(s->regs);
    free(s->regof);
    free(s->dep);
    fprog_free_all(s->fb.all);
    memset(s, 0, sizeof *s);
    return ok;
}

static int sprog_reg(SProg *s) {
    if (s->nregs == s->rcap) {
        int cap = s->rcap ? s->rcap * 2 : 16;
        Cell *r = realloc(s->regs, sizeof(Cell) * (size_t)cap);
        if (!r) return -1;
        s->regs = r;
        s->rcap = cap;
    }
    s->regs[s->nregs].u64 = 0;
    return s->nregs++;
}

static bool reads_arg(SProg *s, const Val *v) {
    if (s->dep[v->id]) return s->dep[v->id] == 2;
    bool r = v->op == OP_ARG;
    for (int k = 0; k < v->nargs && !r; k++)
        if (v->args[k]) r = reads_arg(s, v->args[k]);
    s->dep[v->id] = r ? 2 : 1;
    return r;
}

static int sprog_add(Frame *f, SProg *s, const Val *v) {
    if (v->op == OP_ARG) {
        ASSERT(v->slot == 0 || v->slot == 1);
        return v->slot;
    }
    if (s->regof[v->id] >= 0) return s->regof[v->id];
    int r;
    if (!reads_arg(s, v)) {
        /* Invariant: evaluate once, like any other scalar. */
        Arr *a = eval(f, v);
        if (!a) return -1;
        if (a->size != 1) {
            arr_release(a);
            rt_error(f->c->err, v->loc, "a lambda body must compute a scalar");
            return -1;
        }
        r = sprog_reg(s);
        if (r >= 0) memcpy(&s->regs[r], a->data, (size_t)esize(a->dt));
        arr_release(a);
    } else if (v->op == OP_SCALARCALL || op_is_ew(v->op)) {
        SIns in;
        memset(&in, 0, sizeof in);
        in.op = v->op;
        in.dt = v->dt;
        if (v->op == OP_SCALARCALL) {
            in.callee = fprog_get(&s->fb, v->fn, 0);
            in.cargs = malloc(sizeof(int) * (size_t)(v->nargs ? v->nargs : 1));
            if (!in.callee || !in.cargs) {
                free(in.cargs);
                rt_error(f->c->err, v->loc, "out of memory");
                return -1;
            }
        }
        for (int k = 0; k < v->nargs; k++) {
            int a = sprog_add(f, s, v->args[k]);
            if (a < 0) {
                free(in.cargs);
                return -1;
            }
            if (in.cargs) in.cargs[k] = a;
            else in.in[k] = a;
        }
        if (v->op == OP_CAST)
            in.adt = v->args[0]->dt;
        else if (v->op != OP_SCALARCALL)
            in.adt = v->args[ew_info[v->op].cls == OC_SELECT ? 1 : 0]->dt;
        r = sprog_reg(s);
        if (r < 0) {
            free(in.cargs);
            return -1;
        }
        in.out = r;
        if (s->n == s->cap) {
            int cap = s->cap ? s->cap * 2 : 16;
            SIns *ni = realloc(s->ins, sizeof(SIns) * (size_t)cap);
            if (!ni) {
                free(in.cargs);
                return -1;
            }
            s->ins = ni;
            s->cap = cap;
        }
        s->ins[s->n++] = in;
    } else {
        rt_error(f->c->err, v->loc, "'%s' is not supported inside a lambda on the CPU backend",
                 op_name[v->op]);
        return -1;
    }
    if (r < 0) {
        rt_error(f->c->err, v->loc, "out of memory");
        return -1;
    }
    s->regof[v->id] = r;
    return r;
}

static bool sprog_build(Frame *f, const Val *lam, SProg *s) {
    memset(s, 0, sizeof *s);
    s->run = f->c;
    int nv = f->fn->nvals;
    s->regof = malloc(sizeof(int) * (size_t)(nv ? nv : 1));
    s->dep = calloc((size_t)(nv ? nv : 1), 1);
    if (!s->regof || !s->dep || sprog_reg(s) < 0 || sprog_reg(s) < 0) {
        rt_error(f->c->err, lam->loc, "out of memory");
        sprog_done(s);
        return false;
    }
    for (int i = 0; i < nv; i++) s->regof[i] = -1;
    s->root = sprog_add(f, s, lam);
    if (s->root < 0) {
        if (!f->c->err->set) rt_error(f->c->err, lam->loc, "out of memory");
        sprog_done(s);
        return false;
    }
    return true;
}

/* acc = lam(acc, x); nothing once a call has failed (sprog_done reports it) */
static inline void sprog_step(SProg *s, Cell *acc, const Cell *x) {
    if (s->failed) return;
    Cell *r = s->regs;
    r[0] = *acc;
    r[1] = *x;
    for (int i = 0; i < s->n; i++) {
        const SIns *in = &s->ins[i];
        if (in->op == OP_CAST) {
            cast_tab[in->dt][in->adt](&r[in->out], &r[in->in[0]], 1);
        } else if (in->op == OP_SCALARCALL) {
            FProg *q = in->callee;
            for (int k = 0; k < q->fn->nparams; k++) q->regs[k] = r[in->cargs[k]];
            if (!fprog_exec(s->run, q)) {
                s->failed = true;
                return;
            }
            r[in->out] = q->regs[q->ret];
        } else {
            ew_tab[in->op][in->adt](&r[in->out], &r[in->in[0]], &r[in->in[1]], &r[in->in[2]], 1);
        }
    }
    *acc = r[s->root];
}

/* ---- reductions ------------------------------------------------------------------ */

typedef struct RedSt {
    RedOp op;
    DType dt;       /* type of the values folded (after conversion) */
    bool have;      /* acc holds a value */
    bool nan;       /* min/max/argmin/argmax: a NaN was met; the result is fixed */
    Cell acc;
    double fsum, fcomp; /* float sums: Neumaier over per-chunk pairwise sums */
    double fprod;
    int64_t arg;
    SProg *lam;
} RedSt;

static inline void neumaier(RedSt *s, double x) {
    double t = s->fsum + x;
    if (fabs(s->fsum) >= fabs(x))
        s->fcomp += (s->fsum - t) + x;
    else
        s->fcomp += (x - t) + s->fsum;
    s->fsum = t;
}

/* The float sums' loops are compiled twice, for x86-64's baseline (SSE2) and for AVX2,
   and the AVX2 copy runs where the processor has it: four double lanes where SSE2 has
   two, for loops bound by their conversions and adds (an axis=0 sum of f32 ran at 2.6x
   NumPy's time on one thread). The two copies compute the same operations on each
   element in the same order (conversions to double are exact, the adds IEEE; AVX2 brings
   no FMA), so the bits do not depend on the processor. */
#if defined(__x86_64__) && defined(__GNUC__)
#define SIMD_AVX2 __attribute__((target("avx2")))
static bool have_avx2(void) {
    static _Atomic int known; /* 0: not asked yet, 1: no, 2: yes; threads may race to store the same */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        __builtin_cpu_init();
        const char *off = getenv("CUK_NO_AVX2"); /* the baseline loops (tests compare the two) */
        k = __builtin_cpu_supports("avx2") && !(off && *off && strcmp(off, "0")) ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}
#define SIMD_PICK(f, ...) (have_avx2() ? f##_avx2(__VA_ARGS__) : f##_base(__VA_ARGS__))
#else
#define SIMD_AVX2
#define SIMD_PICK(f, ...) f##_base(__VA_ARGS__)
#endif

/* Pairwise summation in double (NumPy's scheme: blocks of 128, 8 accumulators). */
#define PW_BODY(NAME, CT, ATTR)                                                             \
    ATTR static double NAME(const CT *x, int64_t n, int64_t st) {                           \
        if (n <= 128) {                                                                     \
            double r[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s;                                      \
            int64_t i = 0;                                                                  \
            for (; i + 8 <= n; i += 8)                                                      \
                for (int j = 0; j < 8; j++) r[j] += (double)x[(i + j) * st];                \
            s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));          \
            for (; i < n; i++) s += (double)x[i * st];                                      \
            return s;                                                                       \
        }                                                                                   \
        int64_t h = n / 2;                                                                  \
        h -= h % 8;                                                                         \
        return NAME(x, h, st) + NAME(x + h * st, n - h, st);                                \
    }
#define PW_FN(DTN, CT, UT, KIND, unused)                                                    \
    PW_BODY(pw_##DTN##_base, CT, )                                                          \
    PW_BODY(pw_##DTN##_avx2, CT, SIMD_AVX2)                                                 \
    static inline double pw_##DTN(const CT *x, int64_t n, int64_t st) { return SIMD_PICK(pw_##DTN, x, n, st); }
CTYPES(PW_FN, 0)

/* The extreme (mx: the maximum, else the minimum) of n >= 1 contiguous floats, in
   value, when none is NaN (false, *m unset, when one is). SIMD lanes on x86-64, where
   GCC leaves the compare-select folds scalar: MAXPS(y, r) is exactly `y > r ? y : r`.
   Lanes fold in another order than the sequential loop, which changes nothing but the
   sign of a zero extreme: the caller settles that (the first element equal to it). */
#define EXTREME_STEP(VT, W, LOADU, OP, UNORD, OR, p)                                        \
    do {                                                                                    \
        VT y0 = LOADU(p), y1 = LOADU((p) + W), y2 = LOADU((p) + 2 * W), y3 = LOADU((p) + 3 * W); \
        nan = OR(nan, OR(OR(UNORD(y0, y0), UNORD(y1, y1)), OR(UNORD(y2, y2), UNORD(y3, y3)))); \
        r0 = OP(y0, r0), r1 = OP(y1, r1), r2 = OP(y2, r2), r3 = OP(y3, r3);                 \
    } while (0)
#define EXTREME_FN(NAME, T, VT, W, LOADU, MAX, MIN, UNORD, OR, MASK)                         \
    static bool NAME(const T *x, int64_t n, bool mx, T *m) {                                \
        T a = x[0];                                                                         \
        if (n >= 4 * W) {                                                                   \
            VT r0 = LOADU(x), r1 = LOADU(x + W), r2 = LOADU(x + 2 * W), r3 = LOADU(x + 3 * W); \
            VT nan = OR(OR(UNORD(r0, r0), UNORD(r1, r1)), OR(UNORD(r2, r2), UNORD(r3, r3)));  \
            int64_t i = 4 * W;                                                              \
            /* the last block overlaps the one before: min and max are idempotent */        \
            if (mx) {                                                                       \
                for (; i + 4 * W <= n; i += 4 * W) EXTREME_STEP(VT, W, LOADU, MAX, UNORD, OR, x + i); \
                if (i < n) EXTREME_STEP(VT, W, LOADU, MAX, UNORD, OR, x + n - 4 * W);       \
            } else {                                                                        \
                for (; i + 4 * W <= n; i += 4 * W) EXTREME_STEP(VT, W, LOADU, MIN, UNORD, OR, x + i); \
                if (i < n) EXTREME_STEP(VT, W, LOADU, MIN, UNORD, OR, x + n - 4 * W);       \
            }                                                                               \
            if (MASK(nan)) return false;                                                    \
            VT r = mx ? MAX(MAX(r0, r1), MAX(r2, r3)) : MIN(MIN(r0, r1), MIN(r2, r3));      \
            T l[W];                                                                         \
            memcpy(l, &r, sizeof l);                                                        \
            a = l[0];                                                                       \
            for (int j = 1; j < W; j++) a = (mx ? l[j] > a : l[j] < a) ? l[j] : a;          \
            *m = a;                                                                         \
            return true;                                                                    \
        }                                                                                   \
        bool bad = false;                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                   \
            T y = x[i];                                                                     \
            bad |= y != y;                                                                  \
            a = (mx ? y > a : y < a) ? y : a;                                               \
        }                                                                                   \
        *m = a;                                                                             \
        return !bad;                                                                        \
    }
/* The index of the first of x[0..n) equal to m, which one of them is: blocks of four
   vectors compared at once, then the block's elements one by one. */
#define FIRST_EQ_FN(NAME, T, VT, W, LOADU, SET1, CMPEQ, OR, MASK)                           \
    static int64_t NAME(const T *x, int64_t n, T m) {                                       \
        int64_t i = 0;                                                                      \
        VT mv = SET1(m);                                                                    \
        for (; i + 4 * W <= n; i += 4 * W) {                                                \
            VT e = OR(OR(CMPEQ(LOADU(x + i), mv), CMPEQ(LOADU(x + i + W), mv)),             \
                      OR(CMPEQ(LOADU(x + i + 2 * W), mv), CMPEQ(LOADU(x + i + 3 * W), mv))); \
            if (MASK(e)) break;                                                             \
        }                                                                                   \
        while (!(x[i] == m)) i++;                                                           \
        return i;                                                                           \
    }
#if defined(__SSE2__)
#include <emmintrin.h>
#define OR_PS(a, b) _mm_or_ps(a, b)
#define OR_PD(a, b) _mm_or_pd(a, b)
EXTREME_FN(extreme_f32, float, __m128, 4, _mm_loadu_ps, _mm_max_ps, _mm_min_ps, _mm_cmpunord_ps, OR_PS, _mm_movemask_ps)
EXTREME_FN(extreme_f64, double, __m128d, 2, _mm_loadu_pd, _mm_max_pd, _mm_min_pd, _mm_cmpunord_pd, OR_PD, _mm_movemask_pd)
FIRST_EQ_FN(first_eq_f32, float, __m128, 4, _mm_loadu_ps, _mm_set1_ps, _mm_cmpeq_ps, OR_PS, _mm_movemask_ps)
FIRST_EQ_FN(first_eq_f64, double, __m128d, 2, _mm_loadu_pd, _mm_set1_pd, _mm_cmpeq_pd, OR_PD, _mm_movemask_pd)
#else
/* Elsewhere the same folds on one-element "vectors" (the loop the compiler vectorises as it
   can). */
#define ID_LOAD(p) (*(p))
#define ID_MAX(a, b) ((a) > (b) ? (a) : (b))
#define ID_MIN(a, b) ((a) < (b) ? (a) : (b))
#define ID_UNORD(a, b) ((a) != (a) || (b) != (b))
#define ID_OR(a, b) ((a) || (b))
#define ID_MASK(a) (a)
EXTREME_FN(extreme_f32, float, float, 1, ID_LOAD, ID_MAX, ID_MIN, ID_UNORD, ID_OR, ID_MASK)
EXTREME_FN(extreme_f64, double, double, 1, ID_LOAD, ID_MAX, ID_MIN, ID_UNORD, ID_OR, ID_MASK)
#define ID_SET1(a) (a)
#define ID_EQ(a, b) ((a) == (b))
FIRST_EQ_FN(first_eq_f32, float, float, 1, ID_LOAD, ID_SET1, ID_EQ, ID_OR, ID_MASK)
FIRST_EQ_FN(first_eq_f64, double, double, 1, ID_LOAD, ID_SET1, ID_EQ, ID_OR, ID_MASK)
#endif

#define ISNAN_T(a) (isf && isnan((double)(a)))
#define RED_FN(DTN, CT, UT, KIND, unused)                                                   \
    static void red_##DTN(RedSt *s, const void *pv, int64_t n, int64_t st, int64_t base) {  \
        typedef CT T;                                                                       \
        typedef UT U;                                                                       \
        const T *x = pv;                                                                    \
        const bool isf = ISF_##KIND;                                                        \
        T a;                                                                                \
        memcpy(&a, &s->acc, sizeof a);                                                      \
        if (n == 0 || s->nan) return;                                                       \
        switch (s->op) {                                                                    \
        case RED_SUM:                                                                       \
            if (isf) {                                                                      \
                neumaier(s, pw_##DTN(x, n, st));                                            \
            } else {                                                                        \
                U u = (U)a;                                                                 \
                for (int64_t i = 0; i < n; i++) u = (U)(u + (U)x[i * st]);                  \
                a = (T)u;                                                                   \
            }                                                                               \
            break;                                                                          \
        case RED_PROD:                                                                      \
            if (isf) {                                                                      \
                double p = s->fprod;                                                        \
                for (int64_t i = 0; i < n; i++) p *= (double)x[i * st];                     \
                s->fprod = p;                                                               \
            } else {                                                                        \
                U u = (U)a;                                                                 \
                for (int64_t i = 0; i < n; i++) u = (U)(u * (U)x[i * st]);                  \
                a = (T)u;                                                                   \
            }                                                                               \
            break;                                                                          \
        case RED_MIN:                                                                       \
        case RED_MAX:                                                                       \
        case RED_ARGMIN:                                                                    \
        case RED_ARGMAX: {                                                                  \
            bool mx = s->op == RED_MAX || s->op == RED_ARGMAX;                              \
            if (st == 1 && n >= 64 && isf && (sizeof(T) == 4 || sizeof(T) == 8)) {          \
                /* floats: SIMD lanes (extreme_*), then, for an arg* or a zero extreme, the \
                   first element equal to it: the sequential fold's element */              \
                T m;                                                                        \
                bool clean = sizeof(T) == 4 ? extreme_f32((const float *)(const void *)x, n, mx, (float *)(void *)&m) \
                                            : extreme_f64((const double *)(const void *)x, n, mx, (double *)(void *)&m); \
                if (clean) {                                                                \
                    int64_t k = 0;                                                          \
                    bool arg = s->op == RED_ARGMIN || s->op == RED_ARGMAX;                  \
                    if (arg || m == 0)                                                      \
                        k = sizeof(T) == 4 ? first_eq_f32((const float *)(const void *)x, n, (float)m) \
                                           : first_eq_f64((const double *)(const void *)x, n, (double)m); \
                    T v = arg || m == 0 ? x[k] : m;                                         \
                    if (!s->have || (mx ? v > a : v < a)) {                                 \
                        a = v;                                                              \
                        s->arg = base + k;                                                  \
                        s->have = true;                                                     \
                    }                                                                       \
                    break;                                                                  \
                }                                                                           \
            } else if (st == 1 && n >= 64) {                                                \
                /* no NaN here: 8 lanes, then the first element equal to their extreme,    \
                   folded as one value: the sequential fold's element */                    \
                int64_t bad = 0;                                                            \
                if (isf)                                                                    \
                    for (int64_t i = 0; i < n; i++) bad += x[i] != x[i];                    \
                if (!bad) {                                                                 \
                    T r[8];                                                                 \
                    for (int j = 0; j < 8; j++) r[j] = x[j];                                \
                    int64_t i = 8;                                                          \
                    if (mx)                                                                 \
                        for (; i + 8 <= n; i += 8)                                          \
                            for (int j = 0; j < 8; j++) r[j] = x[i + j] > r[j] ? x[i + j] : r[j]; \
                    else                                                                    \
                        for (; i + 8 <= n; i += 8)                                          \
                            for (int j = 0; j < 8; j++) r[j] = x[i + j] < r[j] ? x[i + j] : r[j]; \
                    T m = r[0];                                                             \
                    for (int j = 1; j < 8; j++) m = (mx ? r[j] > m : r[j] < m) ? r[j] : m;  \
                    for (; i < n; i++) m = (mx ? x[i] > m : x[i] < m) ? x[i] : m;           \
                    int64_t k = 0;                                                          \
                    while (!(x[k] == m)) k++;                                               \
                    if (!s->have || (mx ? x[k] > a : x[k] < a)) {                           \
                        a = x[k];                                                           \
                        s->arg = base + k;                                                  \
                        s->have = true;                                                     \
                    }                                                                       \
                    break;                                                                  \
                }                                                                           \
            }                                                                               \
            int64_t i = 0;                                                                  \
            if (!s->have) {                                                                 \
                a = x[0];                                                                   \
                s->arg = base;                                                              \
                s->have = true;                                                             \
                if (ISNAN_T(a)) {                                                           \
                    s->nan = true;                                                          \
                    break;                                                                  \
                }                                                                           \
                i = 1;                                                                      \
            }                                                                               \
            for (; i < n; i++) {                                                            \
                T y = x[i * st];                                                            \
                if (ISNAN_T(y)) { /* NaN wins, the first one for arg* */                    \
                    a = y;                                                                  \
                    s->arg = base + i;                                                      \
                    s->nan = true;                                                          \
                    break;                                                                  \
                }                                                                           \
                if (mx ? y > a : y < a) {                                                   \
                    a = y;                                                                  \
                    s->arg = base + i;                                                      \
                }                                                                           \
            }                                                                               \
            break;                                                                          \
        }                                                                                   \
        case RED_ANY:                                                                       \
            for (int64_t i = 0; i < n && !a; i++) a = (T)(x[i * st] != 0);                  \
            break;                                                                          \
        case RED_ALL:                                                                       \
            for (int64_t i = 0; i < n && a; i++) a = (T)(x[i * st] != 0);                   \
            break;                                                                          \
        default: die("bad reduction %d", (int)s->op);                                       \
        }                                                                                   \
        memcpy(&s->acc, &a, sizeof a);                                                      \
        (void)isf;                                                                          \
    }
CTYPES(RED_FN, 0)
#define RED_ENT(DTN, CT, UT, KIND, unused) [DT_##DTN] = red_##DTN,
static void (*const red_tab[DT_COUNT])(RedSt *, const void *, int64_t, int64_t, int64_t) = {
    CTYPES(RED_ENT, 0)};

/* The type values are folded in, and the combine that merges an init value. */
static DType red_fold_dt(RedOp op, DType in, DType out) {
    switch (op) {
    case RED_ARGMIN:
    case RED_ARGMAX: return in;
    case RED_ANY:
    case RED_ALL: return DT_BOOL;
    default: return out;
    }
}

static void red_start(RedSt *s, RedOp op, DType dt, SProg *lam) {
    memset(s, 0, sizeof *s);
    s->op = op;
    s->dt = dt;
    s->lam = lam;
    s->fprod = 1;
    if (op == RED_PROD) cell_set(&s->acc, dt, scalar_cast((Scalar){.i = 1}, DT_I64, dt));
    if (op == RED_ALL) s->acc.b = 1;
}

static void red_feed(RedSt *s, const void *x, int64_t n, int64_t st, int64_t base) {
    if (s->op != RED_LAMBDA) {
        red_tab[s->dt](s, x, n, st, base);
        return;
    }
    int esz = esize(s->dt);
    Cell e;
    e.u64 = 0;
    int64_t i = 0;
    if (!s->have && n > 0) {
        memcpy(&s->acc, x, (size_t)esz);
        s->have = true;
        i = 1;
    }
    for (; i < n; i++) {
        memcpy(&e, (const char *)x + i * st * esz, (size_t)esz);
        sprog_step(s->lam, &s->acc, &e);
    }
}

/* The result (in out's type) of a reduction fed at least... or no values. */
static void red_result(RedSt *s, DType out_dt, Cell *out) {
    out->u64 = 0;
    switch (s->op) {
    case RED_SUM:
    case RED_PROD:
        if (dtype_info[s->dt].is_float) {
            /* Once the sum is infinite the compensation is inf - inf = NaN: drop it, so
               that sum([inf, inf]) is inf as in NumPy (a NaN input keeps fsum NaN). */
            double r = s->op == RED_PROD ? s->fprod
                       : isfinite(s->fsum) ? s->fsum + s->fcomp : s->fsum;
            cell_set(out, s->dt, (Scalar){.f = r});
            return;
        }
        *out = s->acc;
        return;
    case RED_ARGMIN:
    case RED_ARGMAX: out->i64 = s->arg; return;
    default: *out = s->acc; (void)out_dt; return;
    }
}

typedef struct RedSink {
    RedSt st;
    DType in_dt;
    void *conv;     /* CHUNK elements of the fold type, when the input needs converting */
} RedSink;

/* Several reductions fed from one stream (sibling reductions of one input): n sinks. */
typedef struct RedSinks {
    RedSink *rs;
    int n;
} RedSinks;

static bool red_sink(void *ctx, const void *vals, int64_t off, int64_t len) {
    RedSinks *g = ctx;
    for (int k = 0; k < g->n; k++) {
        RedSink *r = &g->rs[k];
        const void *v = vals;
        if (r->conv) {
            cast_tab[r->st.dt][r->in_dt](r->conv, vals, len);
            v = r->conv;
        }
        red_feed(&r->st, v, len, 1, off);
    }
    return true;
}

/* A reduction whose chunks can fold on their own and combine in chunk order to the bits
   of one fold over the whole stream: float sums (each chunk's pairwise sum is what the
   Neumaier loop adds), integer sums and products (modular), min, max, their args (the
   earlier wins ties, the first NaN wins), any and all. Float products and lambdas fold
   one element after another: one thread. */
static bool red_splits(RedOp op, DType dt) {
    switch (op) {
    case RED_SUM:
    case RED_MIN:
    case RED_MAX:
    case RED_ARGMIN:
    case RED_ARGMAX:
    case RED_ANY:
    case RED_ALL: return true;
    case RED_PROD: return !dtype_info[dt].is_float;
    default: return false;
    }
}

/* Folds chunk p's state into g, as if g had been fed the chunk's values. */
static void red_merge(RedSt *g, const RedSt *p) {
    if (g->op == RED_SUM && dtype_info[g->dt].is_float) {
        neumaier(g, p->fsum); /* p->fsum is the chunk's pairwise sum exactly (p->fcomp is 0) */
        return;
    }
    bool ordered = g->op == RED_MIN || g->op == RED_MAX || g->op == RED_ARGMIN || g->op == RED_ARGMAX;
    if (ordered && !p->have) return;
    red_feed(g, &p->acc, 1, 1, p->arg); /* the chunk's result as one value, at its index */
}

enum { RED_BATCH = 4096 }; /* chunk states held at once, of every sink together */

typedef struct RedJob {
    Stream *s;
    Workers *w;
    RedSinks *g;
    RedSt *parts;     /* chunk i's state of sink k at i * g->n + k */
    int64_t first;    /* the batch's first chunk */
    void *conv[64];   /* per worker, when some sink's values need converting */
    atomic_bool failed; /* a chunk stopped */
} RedJob;

static void red_chunk(void *ctx, int worker, int64_t i) {
    RedJob *j = ctx;
    int64_t off, len;
    const void *vals = chunk_of(j->s, j->w, worker, j->first + i, NULL, &off, &len);
    for (int k = 0; k < j->g->n; k++) {
        RedSink *r = &j->g->rs[k];
        RedSt *p = &j->parts[i * j->g->n + k];
        red_start(p, r->st.op, r->st.dt, NULL);
        if (!vals) { /* stopped (an interrupt): the run reports it, the value is not used */
            atomic_store(&j->failed, true);
            continue;
        }
        const void *v = vals;
        if (r->conv) {
            cast_tab[r->st.dt][r->in_dt](j->conv[worker], vals, len);
            v = j->conv[worker];
        }
        red_feed(p, v, len, 1, off);
    }
}

/* stream_run(s, red_sink, g) on every core where every reduction splits (red_splits):
   the same bits whatever the number of threads. */
static void red_stream(Stream *s, RedSinks *g) {
    Workers w;
    bool split = true, conv = false;
    for (int k = 0; k < g->n; k++) {
        split &= red_splits(g->rs[k].st.op, g->rs[k].st.dt) && !g->rs[k].st.lam;
        conv |= g->rs[k].conv != NULL;
    }
    if (!split || workers_open(s, &w) < 2) {
        stream_run(s, red_sink, g);
        return;
    }
    RedJob j = {.s = s, .w = &w, .g = g};
    int64_t nchunks = (s->size + CHUNK - 1) / CHUNK, batch = RED_BATCH / g->n;
    if (batch > nchunks) batch = nchunks;
    j.parts = malloc(sizeof(RedSt) * (size_t)(batch * g->n));
    bool ok = j.parts != NULL;
    for (int i = 0; ok && i < w.n && conv; i++) ok = (j.conv[i] = malloc((size_t)CHUNK * 8)) != NULL;
    if (ok) {
        for (j.first = 0; j.first < nchunks; j.first += batch) {
            int64_t nb = nchunks - j.first < batch ? nchunks - j.first : batch;
            pool_for_watch(nb, w.n, red_chunk, &j, workers_watch, &w);
            if (atomic_load(&j.failed)) {
                s->prog.failed = true;
                break;
            }
            for (int64_t i = 0; i < nb; i++)
                for (int k = 0; k < g->n; k++) red_merge(&g->rs[k].st, &j.parts[i * g->n + k]);
        }
    }
    for (int i = 0; i < w.n && conv; i++) free(j.conv[i]);
    free(j.parts);
    workers_close(s, &w);
    if (!ok) stream_run(s, red_sink, g); /* out of memory for the states: one thread */
}

static int ew_of_red(RedOp op) {
    switch (op) {
    case RED_SUM: return OP_ADD;
    case RED_PROD: return OP_MUL;
    case RED_MIN: return OP_MINIMUM;
    case RED_MAX: return OP_MAXIMUM;
    case RED_ANY: return OP_LOR;
    case RED_ALL: return OP_LAND;
    default: return -1;
    }
}

/* One axis reduction over a materialised x of shape (outer, len, inner): tile k is the
   outer index k / ntiles and the TILE outputs from inner index (k % ntiles) * TILE,
   folded in tiles of TILE lines x TILE elements, so that lines next to each other share
   cache lines when the axis is not the last. */
typedef struct AxisJob {
    const Arr *x;   /* the values, or NULL: computed by the stream's programs (axis_win) */
    Workers *w;
    char *win[64];  /* per worker: a window of the values (wcap elements) */
    int64_t wcap;
    atomic_bool failed; /* a window's program failed */
    Arr *res;
    RedOp op;
    DType fdt, odt;
    SProg *lp;
    bool hasinit;
    Cell init;
    int64_t outer, len, inner, ntiles;
    int64_t ob;  /* outer indices per work item (short contiguous lines go in groups) */
    RedSt *sts; /* TILE per worker */
    /* float sums, minima and maxima (axis_cols): nrc chunks of TILE rows per tile, each
       chunk's partial results per column, folded in chunk order by axis_fold */
    int64_t nrc;
    double *psum;        /* [tile][chunk][TILE] */
    Cell *pmm;           /* [tile][chunk][TILE] */
    unsigned char *pnan; /* [tile][chunk][TILE] */
} AxisJob;

/* Whether axis_part/axis_fold do j's reduction: a float sum, min or max along a non-last
   axis. */
static bool axis_cols(const AxisJob *j) {
    return (j->op == RED_SUM || j->op == RED_MIN || j->op == RED_MAX) && j->inner > 1 &&
           (j->fdt == DT_F32 || j->fdt == DT_F64) && !j->hasinit;
}

/* pw_f32 / pw_f64 of nc neighbouring columns at once (column c: x[c], x[c + st], ...),
   each with exactly its own pw_* arithmetic (the same split, the same 8 accumulators, the
   same order), vectorised across the columns: an axis sum of a non-last axis reads its
   rows contiguously. out gets nc sums. */
#define PWC_BODY(NAME, CT, ATTR)                                                            \
    ATTR static void NAME(const CT *x, int64_t n, int64_t st, int64_t nc, double *out) {    \
        if (n <= 128) {                                                                     \
            double r[8][TILE];                                                              \
            for (int j = 0; j < 8; j++)                                                     \
                for (int64_t c = 0; c < nc; c++) r[j][c] = 0;                               \
            int64_t i = 0;                                                                  \
            for (; i + 8 <= n; i += 8)                                                      \
                for (int j = 0; j < 8; j++) {                                               \
                    const CT *row = x + (i + j) * st;                                       \
                    for (int64_t c = 0; c < nc; c++) r[j][c] += (double)row[c];             \
                }                                                                           \
            for (int64_t c = 0; c < nc; c++)                                                \
                out[c] = ((r[0][c] + r[1][c]) + (r[2][c] + r[3][c])) +                      \
                         ((r[4][c] + r[5][c]) + (r[6][c] + r[7][c]));                       \
            for (; i < n; i++) {                                                            \
                const CT *row = x + i * st;                                                 \
                for (int64_t c = 0; c < nc; c++) out[c] += (double)row[c];                  \
            }                                                                               \
            return;                                                                         \
        }                                                                                   \
        int64_t h = n / 2;                                                                  \
        h -= h % 8;                                                                         \
        double b[TILE];                                                                     \
        NAME(x, h, st, nc, out);                                                            \
        NAME(x + h * st, n - h, st, nc, b);                                                 \
        for (int64_t c = 0; c < nc; c++) out[c] += b[c];                                    \
    }
#define PWC_FN(DTN, CT)                                                                     \
    PWC_BODY(pwc_##DTN##_base, CT, )                                                        \
    PWC_BODY(pwc_##DTN##_avx2, CT, SIMD_AVX2)                                               \
    static void pwc_##DTN(const CT *x, int64_t n, int64_t st, int64_t nc, double *out) {    \
        SIMD_PICK(pwc_##DTN, x, n, st, nc, out);                                            \
    }
PWC_FN(F32, float)
PWC_FN(F64, double)

/* The no-NaN fold of mmc_*: a[c] = the extreme of column c over the n rows, each row
   folded in order with `y > a ? y : a` (MAXPS(y, a) exactly, so the same element as the
   sequential fold, zeros' signs included); false when a NaN is among the rows (a is then
   to be recomputed). SIMD across the columns on x86-64. */
#if defined(__SSE2__)
#define MMC_FAST_FN(DTN, CT, VT, W, LOADU, STOREU, MAX, MIN, UNORD, OR, MASK, ZERO)          \
    static bool mmc_fast_##DTN(const CT *x, int64_t n, int64_t st, int64_t nc, bool mx, CT *a) { \
        VT nan = ZERO();                                                                    \
        int64_t c = 0;                                                                      \
        for (; c + 4 * W <= nc; c += 4 * W) { /* a cache line of each row at a time */     \
            const CT *p = x + c;                                                            \
            VT r0 = LOADU(p), r1 = LOADU(p + W), r2 = LOADU(p + 2 * W), r3 = LOADU(p + 3 * W); \
            nan = OR(nan, OR(OR(UNORD(r0, r0), UNORD(r1, r1)), OR(UNORD(r2, r2), UNORD(r3, r3)))); \
            for (int64_t i = 1; i < n; i++) {                                               \
                p += st;                                                                    \
                VT y0 = LOADU(p), y1 = LOADU(p + W), y2 = LOADU(p + 2 * W), y3 = LOADU(p + 3 * W); \
                nan = OR(nan, OR(OR(UNORD(y0, y0), UNORD(y1, y1)), OR(UNORD(y2, y2), UNORD(y3, y3)))); \
                if (mx) r0 = MAX(y0, r0), r1 = MAX(y1, r1), r2 = MAX(y2, r2), r3 = MAX(y3, r3); \
                else r0 = MIN(y0, r0), r1 = MIN(y1, r1), r2 = MIN(y2, r2), r3 = MIN(y3, r3);  \
            }                                                                               \
            STOREU(a + c, r0), STOREU(a + c + W, r1), STOREU(a + c + 2 * W, r2), STOREU(a + c + 3 * W, r3); \
        }                                                                                   \
        bool bad = MASK(nan) != 0;                                                          \
        for (; c < nc; c++) {                                                               \
            CT r = x[c];                                                                    \
            bad |= r != r;                                                                  \
            for (int64_t i = 1; i < n; i++) {                                               \
                CT y = x[i * st + c];                                                       \
                bad |= y != y;                                                              \
                r = (mx ? y > r : y < r) ? y : r;                                           \
            }                                                                               \
            a[c] = r;                                                                       \
        }                                                                                   \
        return !bad;                                                                        \
    }
MMC_FAST_FN(F32, float, __m128, 4, _mm_loadu_ps, _mm_storeu_ps, _mm_max_ps, _mm_min_ps, _mm_cmpunord_ps, _mm_or_ps,
            _mm_movemask_ps, _mm_setzero_ps)
MMC_FAST_FN(F64, double, __m128d, 2, _mm_loadu_pd, _mm_storeu_pd, _mm_max_pd, _mm_min_pd, _mm_cmpunord_pd, _mm_or_pd,
            _mm_movemask_pd, _mm_setzero_pd)
#else
#define MMC_FAST_FN(DTN, CT)                                                                \
    static bool mmc_fast_##DTN(const CT *x, int64_t n, int64_t st, int64_t nc, bool mx, CT *a) { \
        bool bad = false;                                                                   \
        for (int64_t c = 0; c < nc; c++) a[c] = x[c], bad |= x[c] != x[c];                  \
        for (int64_t i = 1; i < n; i++) {                                                   \
            const CT *row = x + i * st;                                                     \
            for (int64_t c = 0; c < nc; c++) {                                              \
                bad |= row[c] != row[c];                                                    \
                a[c] = (mx ? row[c] > a[c] : row[c] < a[c]) ? row[c] : a[c];                \
            }                                                                               \
        }                                                                                   \
        return !bad;                                                                        \
    }
MMC_FAST_FN(F32, float)
MMC_FAST_FN(F64, double)
#endif

/* min or max (mx) of nc neighbouring columns over n rows from scratch, each column folded
   in row order exactly as red_feed folds it (the first NaN wins and fixes the result;
   otherwise a value replaces the accumulator only when strictly beyond it), contiguous
   across the columns: a[c] (the value's bits in a Cell), nan[c]. Without a NaN in the
   rows the fold runs without branches. */
#define MMC_FN(DTN, CT)                                                                     \
    static void mmc_##DTN(const CT *x, int64_t n, int64_t st, int64_t nc, bool mx, Cell *out, \
                          unsigned char *nan) {                                             \
        CT a[TILE];                                                                         \
        if (mmc_fast_##DTN(x, n, st, nc, mx, a)) {                                          \
            for (int64_t c = 0; c < nc; c++) nan[c] = 0;                                    \
        } else { /* a NaN: the sequential fold with its rule */                             \
            for (int64_t c = 0; c < nc; c++) a[c] = x[c], nan[c] = x[c] != x[c];            \
            for (int64_t i = 1; i < n; i++) {                                               \
                const CT *row = x + i * st;                                                 \
                for (int64_t c = 0; c < nc; c++) {                                          \
                    CT y = row[c];                                                          \
                    if (nan[c]) continue;                                                   \
                    if (y != y || (mx ? y > a[c] : y < a[c])) {                             \
                        a[c] = y;                                                           \
                        nan[c] = y != y;                                                    \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (int64_t c = 0; c < nc; c++) {                                                  \
            out[c].u64 = 0;                                                                 \
            memcpy(&out[c], &a[c], sizeof a[c]);                                            \
        }                                                                                   \
    }
MMC_FN(F32, float)
MMC_FN(F64, double)

/* Elements [off, off + n) of the stream into out (the worker's program). */
static bool axis_fill(AxisJob *j, int worker, int64_t off, int64_t n, char *out) {
    return prog_fill(j->w->progs[worker], off, n, out);
}

/* x[o, j0 .. j0 + nr, i0 .. i0 + nc) of the values seen as (outer, len, inner): a pointer
   to x[o, j0, i0], its rows *st elements apart; into the array, or computed into the
   worker's window (nr * nc <= wcap). NULL (and j->failed) when the program failed. */
static const char *axis_win(AxisJob *j, int worker, int64_t o, int64_t j0, int64_t nr, int64_t i0, int64_t nc,
                            int64_t *st) {
    int64_t at = (o * j->len + j0) * j->inner + i0;
    int fesz = esize(j->fdt);
    if (j->x) {
        *st = j->inner;
        return (const char *)j->x->data + at * fesz;
    }
    char *w = j->win[worker];
    *st = nc;
    bool ok = true;
    if (nc == j->inner) /* whole rows: one run */
        ok = axis_fill(j, worker, at, nr * nc, w);
    else
        for (int64_t r = 0; r < nr && ok; r++) ok = axis_fill(j, worker, at + r * j->inner, nc, w + r * nc * fesz);
    if (!ok) atomic_store(&j->failed, true);
    return ok ? w : NULL;
}

/* Chunk k % nrc (TILE rows) of tile k / nrc: each column's partial result, computed as
   red_feed computes a chunk (axis_cols), for axis_tile to fold in chunk order. */
static void axis_part(void *ctx, int worker, int64_t k) {
    AxisJob *j = ctx;
    int64_t t = k / j->nrc, r = k % j->nrc, o = t / j->ntiles, i0 = (t % j->ntiles) * TILE, inner = j->inner;
    int64_t nc = inner - i0 < TILE ? inner - i0 : TILE, j0 = r * TILE, nr = j->len - j0 < TILE ? j->len - j0 : TILE;
    int64_t st;
    const char *at = axis_win(j, worker, o, j0, nr, i0, nc, &st);
    size_t p = (size_t)(k * TILE);
    if (!at) return;
    if (j->op == RED_SUM) {
        if (j->fdt == DT_F32) pwc_F32((const float *)at, nr, st, nc, j->psum + p);
        else pwc_F64((const double *)at, nr, st, nc, j->psum + p);
    } else if (j->fdt == DT_F32) {
        mmc_F32((const float *)at, nr, st, nc, j->op == RED_MAX, j->pmm + p, j->pnan + p);
    } else {
        mmc_F64((const double *)at, nr, st, nc, j->op == RED_MAX, j->pmm + p, j->pnan + p);
    }
}

static void axis_tile1(AxisJob *j, int worker, int64_t k, const char *lines);

static void axis_tile(void *ctx, int worker, int64_t k) {
    AxisJob *j = ctx;
    int64_t b = k / j->ntiles, t = k % j->ntiles, o1 = (b + 1) * j->ob < j->outer ? (b + 1) * j->ob : j->outer;
    /* contiguous lines (inner 1): the group's lines at once */
    const char *lines = NULL;
    int64_t st;
    if (j->inner == 1 && j->len > 0 && !(lines = axis_win(j, worker, b * j->ob, 0, (o1 - b * j->ob) * j->len, 0, 1, &st)))
        return;
    for (int64_t o = b * j->ob; o < o1; o++)
        axis_tile1(j, worker, o * j->ntiles + t, lines ? lines + (o - b * j->ob) * j->len * esize(j->fdt) : NULL);
}

/* Outer index k / ntiles, tile k % ntiles; lines: the line's values when inner is 1. */
static void axis_tile1(AxisJob *j, int worker, int64_t k, const char *lines) {
    RedSt *sts = j->sts + (size_t)worker * TILE;
    int64_t o = k / j->ntiles, i0 = (k % j->ntiles) * TILE, len = j->len, inner = j->inner;
    int64_t nc = inner - i0 < TILE ? inner - i0 : TILE;
    int fesz = esize(j->fdt), oesz = esize(j->odt);
    for (int64_t c = 0; c < nc; c++) {
        red_start(&sts[c], j->op, j->fdt, j->lp);
        if (j->hasinit && j->op == RED_LAMBDA) {
            sts[c].acc = j->init;
            sts[c].have = true;
        }
    }
    int64_t step = inner == 1 ? len : TILE; /* whole lines when contiguous */
    bool cols = axis_cols(j);
    for (int64_t j0 = 0; j0 < len; j0 += step) {
        int64_t nr = len - j0 < step ? len - j0 : step;
        if (cols) { /* the chunk's partial results (axis_part), as red_feed would fold the chunk */
            size_t at = (size_t)((k * j->nrc + j0 / TILE) * TILE);
            for (int64_t c = 0; c < nc; c++) {
                if (j->op == RED_SUM) {
                    neumaier(&sts[c], j->psum[at + c]);
                    continue;
                }
                if (sts[c].nan) continue;
                Cell y = j->pmm[at + c];
                double yv = j->fdt == DT_F32 ? (double)y.f32 : y.f64;
                double av = j->fdt == DT_F32 ? (double)sts[c].acc.f32 : sts[c].acc.f64;
                bool mx = j->op == RED_MAX;
                if (j->pnan[at + c] || !sts[c].have || (mx ? yv > av : yv < av)) {
                    sts[c].acc = y;
                    sts[c].nan = j->pnan[at + c];
                    sts[c].have = true;
                }
            }
            continue;
        }
        int64_t st = 1;
        const char *at = lines ? lines : axis_win(j, worker, o, j0, nr, i0, nc, &st);
        if (!at) return;
        for (int64_t c = 0; c < nc; c++) red_feed(&sts[c], at + c * fesz, nr, st, j0);
    }
    for (int64_t c = 0; c < nc; c++) {
        Cell r;
        red_result(&sts[c], j->odt, &r);
        if (j->hasinit && j->op != RED_LAMBDA && ew_of_red(j->op) >= 0) {
            Cell t = r;
            if (len == 0)
                r = j->init;
            else
                ew_tab[ew_of_red(j->op)][j->odt](&r, &j->init, &t, NULL, 1);
        }
        memcpy((char *)j->res->data + (o * inner + i0 + c) * oesz, &r, (size_t)oesz);
    }
}

/* The shape of reduction v's result over the stream s; returns its rank. */
static int red_out_shape(const Val *v, const Stream *s, int64_t *oshape) {
    int orank = 0;
    for (int k = 0; k < s->rank; k++) {
        if (v->axis == AXIS_ALL || k == v->axis) {
            if (v->keepdims) oshape[orank++] = 1;
        } else {
            oshape[orank++] = s->shape[k];
        }
    }
    return orank;
}

/* Sibling reductions (the GPU's plan puts them in one kernel): the whole-array
   reductions of the statement being evaluated, found once per statement by a walk from
   its roots. Those of one input fold in one pass over it; only reductions that cannot
   fail on a non-empty input and split into chunks join (no lambda, no initial value, no
   segments), so folding one before the statement reaches it changes nothing but time.
   The same walk counts each value's uses in the statement (stmt_uses). */
static void stmt_reds(Frame *f);

/* One use of u (NULL: none) in the walk of stmt_reds. */
static void stmt_use(Frame *f, const Val *u, int *top) {
    if (!u) return;
    if (f->seen[u->id] != f->gen) {
        f->seen[u->id] = f->gen;
        f->uses[u->id] = 0;
        f->walk[(*top)++] = u;
    }
    f->uses[u->id]++;
}

static void stmt_reds(Frame *f) {
    f->nreds = 0;
    f->reds_known = true;
    int n = f->fn->nvals;
    if (!f->seen) {
        f->seen = calloc((size_t)n, sizeof *f->seen);
        f->walk = malloc((size_t)n * sizeof *f->walk);
        f->reds = malloc((size_t)n * sizeof *f->reds);
        f->uses = malloc((size_t)n * sizeof *f->uses);
        if (!f->seen || !f->walk || !f->reds || !f->uses) { /* nothing is grouped or streamed */
            free(f->seen), free(f->walk), free(f->reds), free(f->uses);
            f->seen = NULL, f->walk = NULL, f->reds = NULL, f->uses = NULL;
            return;
        }
    }
    if (++f->gen == 0) { /* the marks wrapped round: start them again */
        memset(f->seen, 0, (size_t)n * sizeof *f->seen);
        f->gen = 1;
    }
    int top = 0;
    /* every use counted: the roots' by the statement, each operand's by its user */
    for (int i = 0; i < f->nroots; i++) stmt_use(f, f->roots[i], &top);
    while (top > 0) {
        const Val *v = f->walk[--top];
        if (v->op == OP_REDUCE && v->nargs == 1 && !v->init && v->red != RED_LAMBDA) f->reds[f->nreds++] = v;
        for (int i = 0; i < v->nargs; i++) stmt_use(f, v->args[i], &top);
        stmt_use(f, v->init, &top);
    }
}

/* How many times the statement being evaluated uses x (0 when not known). */
static int stmt_uses(Frame *f, const Val *x) {
    if (!f->reds_known) stmt_reds(f);
    return f->seen && f->seen[x->id] == f->gen ? f->uses[x->id] : 0;
}

/* Up to max siblings of the whole-array reduction v (of the same input), not yet
   evaluated, into out; returns how many. */
static int red_siblings(Frame *f, const Val *v, const Val **out, int max) {
    if (!f->reds_known) stmt_reds(f);
    int n = 0;
    const Val *x = v->args[0];
    for (int i = 0; i < f->nreds && n < max; i++) {
        const Val *r = f->reds[i];
        if (r == v || r->args[0] != x || f->memo[r->id]) continue;
        if (r->axis != AXIS_ALL && x->rank > 1) continue;
        if (!red_splits(r->red, red_fold_dt(r->red, x->dt, r->dt))) continue;
        out[n++] = r;
    }
    return n;
}

static Arr *eval_reduce(Frame *f, const Val *v) {
    const Val *x = v->args[0];
    const Val *initv = v->init ? v->init : v->nargs > 1 ? v->args[1] : NULL;
    RedOp op = v->red;
    bool hasinit = initv != NULL;
    Cell init;
    init.u64 = 0;
    if (hasinit && !get_cell(f, initv, v->dt, &init)) return NULL;
    SProg lam, *lp = NULL;
    if (op == RED_LAMBDA) {
        ASSERT(v->lam);
        if (!sprog_build(f, v->lam, &lam)) return NULL;
        lp = &lam;
    }
    Stream s;
    Arr *res = NULL;
    void *conv = NULL;
    RedSt *sts = NULL;
    AxisJob j = {0};
    Workers wk;
    if (!stream_open(f, x, &s)) goto out;
    DType fdt = red_fold_dt(op, s.dt, v->dt);
    int axis = v->axis;
    int64_t len = axis == AXIS_ALL ? s.size : (axis < s.rank ? s.shape[axis] : -1);
    ASSERT(len >= 0);
    int64_t oshape[MAXRANK];
    int orank = red_out_shape(v, &s, oshape);
    Dims xd = {.rank = s.rank};
    memcpy(xd.d, s.shape, sizeof xd.d);
    if (!shape_reduce_has_identity(f->c->err, v, &xd)) goto out;
    res = new_arr(f, v->loc, v->dt, orank, oshape);
    if (!res) goto out;
    if (fdt != s.dt) {
        conv = malloc((size_t)CHUNK * 8);
        if (!conv) {
            rt_error(f->c->err, v->loc, "out of memory");
            goto fail;
        }
    }
    int oesz = esize(v->dt);
    if (axis == AXIS_ALL || s.rank <= 1) {
        /* v first, then its siblings: the statement's other reductions of x, folded in
           the same pass over x and kept for when the statement reaches them */
        const Val *sib[RED_SIBS] = {v};
        RedSink rs[RED_SIBS] = {{.in_dt = s.dt, .conv = conv}};
        int n = 1;
        if (s.size >= RED_SIB_MIN && !lp && red_splits(op, fdt)) n += red_siblings(f, v, sib + 1, RED_SIBS - 1);
        red_start(&rs[0].st, op, fdt, lp);
        if (hasinit && op == RED_LAMBDA) {
            rs[0].st.acc = init;
            rs[0].st.have = true;
        }
        for (int k = 1; k < n; k++) {
            DType kdt = red_fold_dt(sib[k]->red, s.dt, sib[k]->dt);
            rs[k] = (RedSink){.in_dt = s.dt, .conv = kdt != s.dt ? malloc((size_t)CHUNK * 8) : NULL};
            if (kdt != s.dt && !rs[k].conv) { /* out of memory: v and the siblings so far */
                n = k;
                break;
            }
            red_start(&rs[k].st, sib[k]->red, kdt, NULL);
        }
        red_stream(&s, &(RedSinks){rs, n});
        bool sibs_ok = true;
        for (int k = 1; k < n; k++) {
            Cell r;
            red_result(&rs[k].st, sib[k]->dt, &r);
            free(rs[k].conv);
            int64_t kshape[MAXRANK];
            int krank = red_out_shape(sib[k], &s, kshape);
            Arr *a = sibs_ok ? new_arr(f, sib[k]->loc, sib[k]->dt, krank, kshape) : NULL;
            if (!a) {
                sibs_ok = false;
                continue;
            }
            memcpy(a->data, &r, (size_t)esize(sib[k]->dt));
            memo_put(f, sib[k], a);
        }
        if (!sibs_ok) goto fail;
        Cell r;
        red_result(&rs[0].st, v->dt, &r);
        if (hasinit && op != RED_LAMBDA && ew_of_red(op) >= 0) {
            Cell c = r;
            if (len == 0)
                r = init;
            else
                ew_tab[ew_of_red(op)][v->dt](&r, &init, &c, NULL, 1);
        }
        memcpy(res->data, &r, (size_t)oesz);
    } else {
        /* Along one axis: fold the lines (outer, inner) in tiles of TILE lines x TILE
           elements, so that lines next to each other share cache lines when the axis is
           not the last. A fused input that only this reduction uses is computed a window
           at a time on each worker (axis_win: peak memory of the output and the windows);
           one used again in the statement is stored once and kept for the other uses
           (softmax's exp(x - max) feeds both a sum and a division), as is one whose values
           fold in another type (converted once, whole). */
        j.res = res, j.op = op, j.fdt = fdt, j.odt = v->dt, j.lp = lp, j.hasinit = hasinit, j.init = init;
        j.len = len;
        j.outer = 1;
        for (int k = 0; k < axis; k++) j.outer *= s.shape[k];
        j.inner = 1;
        for (int k = axis + 1; k < s.rank; k++) j.inner *= s.shape[k];
        j.ntiles = (j.inner + TILE - 1) / TILE;
        /* lines shorter than a chunk, in groups of about a chunk of elements per item */
        j.ob = j.inner == 1 && len > 0 && len < CHUNK ? CHUNK / len : 1;
        j.wcap = j.inner == 1 ? j.ob * len : (int64_t)TILE * TILE;
        int64_t items = (j.outer + j.ob - 1) / j.ob * j.ntiles;
        /* every (outer, tile) on its own: a tile's outputs fold their lines in the same
           order whatever the thread, so the bits do not depend on the thread count */
        int nw = lp || items < 2 ? 1 : pool_threads();
        if (nw > 64) nw = 64;
        if (!s.arr && !conv && j.wcap <= AXIS_WIN_MAX && stmt_uses(f, x) == 1) {
            if (workers_open(&s, &wk) < nw) nw = wk.n;
            j.w = &wk;
            for (int i = 0; i < wk.n; i++) {
                if (!(j.win[i] = malloc((size_t)(j.wcap * esize(fdt))))) {
                    rt_error(f->c->err, v->loc, "out of memory");
                    goto fail;
                }
            }
        } else {
            Arr *xa = take_memo(f, &s, x);
            if (!xa) goto fail;
            s.arr = xa;
            if (conv) {
                Arr *ca = new_arr(f, v->loc, fdt, xa->rank, xa->shape);
                if (!ca) goto fail;
                cast_tab[fdt][xa->dt](ca->data, xa->data, xa->size);
                arr_release(xa);
                s.arr = xa = ca;
            }
            j.x = xa;
        }
        sts = malloc(sizeof(RedSt) * TILE * (size_t)nw);
        if (!sts) {
            rt_error(f->c->err, v->loc, "out of memory");
            goto fail;
        }
        j.sts = sts;
        if (axis_cols(&j) && len > 0) {
            /* the chunks of rows on every core first, then their partials folded in
               order: the same bits as folding the rows one chunk after the other */
            j.nrc = (len + TILE - 1) / TILE;
            size_t np = (size_t)(j.outer * j.ntiles * j.nrc) * TILE;
            bool sum = op == RED_SUM;
            j.psum = sum ? malloc(np * sizeof(double)) : NULL;
            j.pmm = sum ? NULL : malloc(np * sizeof(Cell));
            j.pnan = sum ? NULL : malloc(np);
            if (sum ? !j.psum : !j.pmm || !j.pnan) {
                free(j.psum), free(j.pmm), free(j.pnan);
                rt_error(f->c->err, v->loc, "out of memory");
                goto fail;
            }
            int nparts = j.w ? wk.n : pool_threads() < 64 ? pool_threads() : 64;
            pool_for(j.outer * j.ntiles * j.nrc, nparts, axis_part, &j);
        }
        if (!atomic_load(&j.failed)) pool_for(items, nw, axis_tile, &j);
        free(j.psum), free(j.pmm), free(j.pnan);
        /* a program that failed recorded its error; an interrupt is the run's to report */
        if (atomic_load(&j.failed) && f->c->err->set) goto fail;
    }
    goto out;
fail:
    arr_release(res);
    res = NULL;
out:
    for (int i = 0; i < 64; i++) free(j.win[i]);
    if (j.w) workers_close(&s, &wk);
    free(sts);
    free(conv);
    stream_close(&s);
    if (lp && !sprog_done(lp)) {
        arr_release(res);
        res = NULL;
    }
    return res;
}

/* ---- rows: reductions along the last axis fused with what they feed ---------------- */

/* A value of rank >= 2 computed from reductions along its last axis of values computed
   from the same rows (softmax_rows, layer_norm, logsumexp with keepdims, x / sum(x,
   axis=-1, keepdims=true)), as the GPU's row kernels do: a tile of rows at a time on each
   worker, the tile's values that a reduction reads or that are used twice computed into
   the worker's tile buffers (L2-sized), the reductions' results ([..., 1], a row's worth
   of the output) stored whole, so nothing of the output's size is stored but the output
   (issue 18: softmax_rows of a fused input stored 3x its output). Each row folds as a
   reduction along the last axis of a stored input does (axis_tile1: red_feed over the
   whole line), so the bits are those of the stored path, on any number of threads. */
enum {
    ROW_TILE = 16 * CHUNK, /* elements of a tile: as many rows as fit, at least one */
    ROW_ITEMS = 24,        /* cached values, reductions and the root of one plan */
};
enum { RW_NONE, RW_REG, RW_RED, RW_LEAF, RW_DIM };
enum { RI_CACHE, RI_RED, RI_ROWV, RI_ROOT };

typedef struct RowItem {
    const Val *v;
    int kind;      /* RI_*, in an order where what an item reads comes first */
    int prog;      /* RI_CACHE, RI_ROOT: its program */
    int slot;      /* RI_CACHE: its tile buffer; RI_RED: its input's */
    Arr *res;      /* RI_RED, RI_ROWV: the values, one per row (memoised for the programs) */
    bool hasinit;
    Cell init;
} RowItem;

typedef struct RowPlan {
    Frame *f;
    const Val *root;
    unsigned char *mk;   /* by Val id: RW_* */
    int *ix;             /* by Val id: index in nodes (RW_REG, RW_RED) */
    const Val **nodes;   /* the region (fusable values and row reductions), post-order */
    Dims *dims;
    int *uses;           /* per node: how many region values use it */
    bool *xin;           /* per node: the input of a row reduction */
    bool *rowv;          /* per node: one value per row that a whole-row value reads */
    int nn, nred;
    const Val **leaves;  /* values the region reads that rows_eval evaluates first */
    int nl;
    RowItem it[ROW_ITEMS];
    int nit;
    const Val *cached[ROW_ITEMS]; /* by tile slot */
    int nc;
    Prog progs[ROW_ITEMS];
    int np;
    Prog *building;      /* prog_add makes tile leaves in this program only */
    const Val *self;     /* ... other than the value it computes */
    Dims shape;          /* the root's: every cached value's and reduction input's */
    int64_t len, rows, tr, ntiles;
    int nw;
    Prog *wp[64];        /* per worker: its programs (nw * np; worker 0: progs) */
    char *tmem[64];
    char **tb[64];       /* per worker: its tile buffers by slot */
    atomic_bool failed;  /* a program failed (its error is recorded, or an interrupt) */
    _Atomic int halt;
} RowPlan;

/* A tile leaf of the program being built: a cached value other than its own root;
   -2 when v is not one. */
static int prog_add_tile(Frame *f, Prog *p, const Val *v) {
    RowPlan *P = f->rows;
    if (p != P->building || v == P->self) return -2;
    for (int c = 0; c < P->nc; c++) {
        if (P->cached[c] != v) continue;
        int i = prog_push(f, p, v);
        if (i < 0) return -1;
        PNode *nd = &p->nodes[i];
        nd->kind = NK_LEAF;
        nd->lmode = LM_TILE;
        nd->tslot = c;
        nd->rank = P->shape.rank;
        memcpy(nd->shape, P->shape.d, sizeof nd->shape);
        return i;
    }
    return -2;
}

/* Whether v is one of the reductions of the plan being built: its memoised result is
   filled in a tile at a time, so a program must read it, not splat it when it is built. */
static bool rw_pending(const Frame *f, const Val *v) {
    const RowPlan *P = f->rows;
    return P && (P->mk[v->id] == RW_RED || (P->mk[v->id] == RW_REG && P->rowv && P->rowv[P->ix[v->id]]));
}

/* Whether v is a reduction along the last axis of a fused value of the root's rank, kept
   as [..., 1], that folds in its input's type. */
static bool rw_is_red(const RowPlan *P, const Val *v) {
    const Frame *f = P->f;
    if (v->op != OP_REDUCE || red_segs(v) || !v->keepdims || v->red == RED_LAMBDA || f->memo[v->id]) return false;
    const Val *x = v->args[0];
    return x->rank == P->root->rank && v->axis == x->rank - 1 && fusable_val(x) && !f->memo[x->id] &&
           red_fold_dt(v->red, x->dt, v->dt) == x->dt;
}

static const Val *rw_init(const Val *v) { return v->init ? v->init : v->nargs > 1 ? v->args[1] : NULL; }

static void rw_leaf(RowPlan *P, const Val *v) {
    if (!v || P->mk[v->id]) return;
    P->mk[v->id] = RW_LEAF;
    if (!P->f->memo[v->id]) P->leaves[P->nl++] = v;
}

/* The region under v: fused values and row reductions (post-order into nodes), and
   the leaves they read. A dim of a fused value is left for later: its shape needs the
   value's leaves, not its values (eval_dim). */
static void rw_walk(RowPlan *P, const Val *v) {
    Frame *f = P->f;
    if (P->mk[v->id]) return;
    if (f->memo[v->id]) {
        P->mk[v->id] = RW_LEAF;
        return;
    }
    if (v->op == OP_DIM && fusable_val(v->args[0]) && !f->memo[v->args[0]->id]) {
        P->mk[v->id] = RW_DIM;
        return;
    }
    if (rw_is_red(P, v)) {
        P->mk[v->id] = RW_RED;
        P->nred++;
        rw_walk(P, v->args[0]);
        rw_leaf(P, rw_init(v));
    } else if (fusable_val(v)) {
        P->mk[v->id] = RW_REG;
        for (int i = 0; i < v->nargs; i++) rw_walk(P, v->args[i]);
    } else {
        rw_leaf(P, v);
        return;
    }
    P->ix[v->id] = P->nn;
    P->nodes[P->nn++] = v;
}

static void rw_reset(RowPlan *P) {
    memset(P->mk, 0, (size_t)P->f->fn->nvals);
    P->nn = P->nred = P->nl = 0;
}

/* The shape rules' operands during rows_eval: the region's inferred shapes. */
static bool rw_dims(void *fr, const Val *v, Dims *out) {
    RowPlan *P = fr;
    switch (P->mk[v->id]) {
    case RW_REG:
    case RW_RED: *out = P->dims[P->ix[v->id]]; return true;
    case RW_DIM: *out = (Dims){.rank = 0}; return true;
    default: break;
    }
    const Arr *a = P->f->memo[v->id];
    if (!a) return false;
    out->rank = a->rank;
    memcpy(out->d, a->shape, sizeof out->d);
    return true;
}

static bool rw_i64(void *fr, const Val *v, int64_t *out) { return get_i64(((RowPlan *)fr)->f, v, out); }

/* prog_fill, a failure recorded in the plan. */
static bool rw_fill(RowPlan *P, Prog *p, int64_t off, int64_t n, char *out) {
    if (prog_fill(p, off, n, out)) return true;
    atomic_store(&P->failed, true);
    return false;
}

/* Tile t of rows on a worker: each item in order. */
static void rw_tile(void *ctx, int worker, int64_t t) {
    RowPlan *P = ctx;
    if (atomic_load(&P->halt) || atomic_load(&P->failed)) return;
    if (worker == 0 && !run_poll()) { /* interrupted: the API reports it (run_interrupted) */
        atomic_store(&P->halt, 1);
        return;
    }
    int64_t r0 = t * P->tr, nr = P->rows - r0 < P->tr ? P->rows - r0 : P->tr, C = P->len;
    int64_t toff = r0 * C, n = nr * C;
    Prog *ps = P->wp[worker];
    for (int i = 0; i < P->np; i++) ps[i].toff = toff;
    for (int i = 0; i < P->nit; i++) {
        const RowItem *it = &P->it[i];
        const Val *v = it->v;
        if (it->kind == RI_CACHE) {
            if (!rw_fill(P, &ps[it->prog], toff, n, P->tb[worker][it->slot])) return;
        } else if (it->kind == RI_ROWV) {
            int esz = esize(v->dt);
            if (!rw_fill(P, &ps[it->prog], r0, nr, (char *)it->res->data + r0 * esz)) return;
        } else if (it->kind == RI_ROOT) {
            Arr *out = P->it[P->nit - 1].res;
            int esz = esize(v->dt);
            if (!rw_fill(P, &ps[it->prog], toff, n, (char *)out->data + toff * esz)) return;
        } else {
            const char *x = P->tb[worker][it->slot];
            DType fdt = v->args[0]->dt;
            int fesz = esize(fdt), oesz = esize(v->dt);
            for (int64_t r = 0; r < nr; r++) {
                RedSt st;
                red_start(&st, v->red, fdt, NULL);
                red_feed(&st, x + r * C * fesz, C, 1, 0);
                Cell c;
                red_result(&st, v->dt, &c);
                if (it->hasinit && ew_of_red(v->red) >= 0) {
                    Cell q = c;
                    ew_tab[ew_of_red(v->red)][v->dt](&c, &it->init, &q, NULL, 1);
                }
                memcpy((char *)it->res->data + (r0 + r) * oesz, &c, (size_t)oesz);
            }
        }
    }
}

static bool rw_watch(void *ctx) {
    RowPlan *P = ctx;
    if (run_poll_now()) return true;
    atomic_store(&P->halt, 1);
    return false;
}

/* Frees the plan; the reductions' memoised results go too unless keep (they are
   complete). */
static void rw_free(RowPlan *P, bool keep) {
    Frame *f = P->f;
    f->rows = NULL;
    for (int w = 1; w < P->nw; w++) {
        for (int i = 0; i < P->np; i++) prog_free(&P->wp[w][i]);
        free(P->wp[w]);
    }
    for (int i = 0; i < P->np; i++) prog_free(&P->progs[i]);
    for (int w = 0; w < 64; w++) free(P->tmem[w]), free(P->tb[w]);
    for (int i = 0; i < P->nit; i++) {
        RowItem *it = &P->it[i];
        if ((it->kind == RI_RED || it->kind == RI_ROWV) && it->res && !keep && f->memo[it->v->id] == it->res) {
            arr_release(f->memo[it->v->id]);
            f->memo[it->v->id] = NULL;
        }
        if (it->kind != RI_ROOT) arr_release(it->res);
    }
    free(P->mk), free(P->ix), free(P->nodes), free(P->dims), free(P->uses), free(P->xin), free(P->rowv);
    free(P->leaves);
}

/* Evaluates v a tile of rows at a time when it is made of reductions along its last
   axis (*handled; else the caller evaluates it). For a stream (stream_open), only when
   that stores less than the ordinary path, which stores the input of such a reduction
   when something else uses it too (take_memo) and streams the rest. */
static Arr *rows_eval(Frame *f, const Val *v, bool *handled, bool stream) {
    *handled = false;
    int nv = f->fn->nvals;
    RowPlan *P = calloc(1, sizeof *P);
    if (!P) return NULL;
    P->f = f;
    P->root = v;
    P->mk = calloc((size_t)nv, 1);
    P->ix = malloc(sizeof(int) * (size_t)nv);
    P->nodes = malloc(sizeof(Val *) * (size_t)nv);
    P->leaves = malloc(sizeof(Val *) * (size_t)nv);
    Arr *res = NULL;
    if (!P->mk || !P->ix || !P->nodes || !P->leaves) goto bail;
    rw_walk(P, v);
    if (!P->nred) goto bail;
    /* The leaves first, as the programs would evaluate them: what they compute (a
       reduction that another value needs whole) is then a leaf of the region. */
    *handled = true;
    for (int i = 0; i < P->nl; i++) {
        Arr *a = eval(f, P->leaves[i]);
        if (!a) goto fail;
        arr_release(a);
    }
    *handled = false;
    rw_reset(P);
    rw_walk(P, v);
    if (!P->nred || P->nl) goto bail;
    int n = P->nn;
    P->dims = malloc(sizeof(Dims) * (size_t)n);
    P->uses = calloc((size_t)n, sizeof(int));
    P->xin = calloc((size_t)n, sizeof(bool));
    P->rowv = calloc((size_t)n, sizeof(bool));
    if (!P->dims || !P->uses || !P->xin || !P->rowv) goto bail;
    /* shapes by the shape rules, without computing anything; an error is left for the
       ordinary path to report where it finds it */
    RtErr scratch;
    rt_err_init(&scratch);
    Operands ops = {P, rw_dims, rw_i64, &scratch};
    for (int i = 0; i < n; i++) {
        const Val *u = P->nodes[i];
        if (u->op == OP_CHECKDIM) {
            if (!rw_dims(P, u->args[0], &P->dims[i])) goto bail;
        } else if (!shape_rule_covers(u) || !shape_rule(&ops, u, &P->dims[i], NULL)) {
            if (f->c->err->set) goto fail;
            goto bail;
        }
        if (P->mk[u->id] == RW_RED) {
            P->xin[P->ix[u->args[0]->id]] = true;
            continue;
        }
        for (int k = 0; k < u->nargs; k++)
            if (P->mk[u->args[k]->id] == RW_REG) P->uses[P->ix[u->args[k]->id]]++;
    }
    bool shared = false;
    for (int i = 0; i < n; i++) shared |= P->xin[i] && P->uses[i] > 0;
    if (stream && !shared) goto bail;
    P->shape = P->dims[n - 1];
    int rank = P->shape.rank;
    P->len = P->shape.d[rank - 1];
    /* values of one per row (the shape of the reductions' results) that whole-row values
       read: computed once per row (layer_norm's rsqrt(var + eps)), not per element */
    Dims rsh = P->shape;
    rsh.d[rank - 1] = 1;
    for (int i = 0; i < n; i++) {
        const Val *u = P->nodes[i];
        if (P->mk[u->id] != RW_REG || !dims_equal(&P->dims[i], &P->shape)) continue;
        for (int k = 0; k < u->nargs; k++) {
            const Val *a = u->args[k];
            if (P->mk[a->id] == RW_REG && dims_equal(&P->dims[P->ix[a->id]], &rsh) && P->len > 1)
                P->rowv[P->ix[a->id]] = true;
        }
    }
    int64_t size = dims_count(&P->shape);
    if (size <= 0 || P->len <= 0 || P->len > AXIS_WIN_MAX) goto bail;
    P->rows = size / P->len;
    /* the items: cached values (inputs of reductions, values used twice), reductions,
       the root, in post-order */
    for (int i = 0; i < n; i++) {
        const Val *u = P->nodes[i];
        bool same = dims_equal(&P->dims[i], &P->shape);
        RowItem it = {.v = u, .kind = RI_CACHE, .prog = -1, .slot = -1};
        if (P->mk[u->id] == RW_RED) {
            if (!dims_equal(&P->dims[P->ix[u->args[0]->id]], &P->shape)) goto bail;
            it.kind = RI_RED;
            for (int c = 0; c < P->nc; c++)
                if (P->cached[c] == u->args[0]) it.slot = c;
            ASSERT(it.slot >= 0);
        } else if (i == n - 1) {
            it.kind = RI_ROOT;
        } else if (P->rowv[i]) {
            it.kind = RI_ROWV;
        } else if (P->xin[i]) {
            if (!same) goto bail;
        } else if (P->uses[i] < 2 || !same) {
            continue;
        }
        if (P->nit == ROW_ITEMS) goto bail;
        if (it.kind == RI_CACHE) {
            it.slot = P->nc;
            P->cached[P->nc++] = u;
        }
        P->it[P->nit++] = it;
    }
    /* the reductions' results, memoised (the programs read them as leaves) */
    *handled = true;
    for (int i = 0; i < P->nit; i++) {
        RowItem *it = &P->it[i];
        if (it->kind != RI_RED) continue;
        const Val *init = rw_init(it->v);
        if (init && !get_cell(f, init, it->v->dt, &it->init)) goto fail;
        it->hasinit = init != NULL;
        Dims od;
        if (!shape_reduce_has_identity(f->c->err, it->v, &P->shape) ||
            !shape_rule(&ops, it->v, &od, NULL) || !(it->res = new_arr(f, it->v->loc, it->v->dt, od.rank, od.d)))
            goto fail;
        memo_put(f, it->v, arr_retain(it->res));
    }
    f->rows = P;
    for (int i = 0; i < P->nit; i++) {
        RowItem *it = &P->it[i];
        if (it->kind == RI_RED) continue;
        P->self = it->v;
        P->building = &P->progs[P->np];
        if (!prog_build(f, it->v, P->building)) goto fail;
        it->prog = P->np++;
        const Prog *p = &P->progs[it->prog];
        const Dims *want = it->kind == RI_ROWV ? &rsh : &P->shape;
        ASSERT(p->rank == rank && !memcmp(p->shape, want->d, sizeof(int64_t) * (size_t)rank));
        if (!run_charge(f->c, it->v->loc, it->kind == RI_ROWV ? P->rows : size)) goto fail;
        if (it->kind == RI_ROWV) { /* the later programs read it */
            if (!(it->res = new_arr(f, it->v->loc, it->v->dt, rank, rsh.d))) goto fail;
            memo_put(f, it->v, arr_retain(it->res));
        }
    }
    f->rows = NULL;
    res = new_arr(f, v->loc, v->dt, rank, P->shape.d);
    if (!res) goto fail;
    P->it[P->nit - 1].res = res;
    /* the tiles: whole rows, about ROW_TILE elements */
    P->tr = P->len >= ROW_TILE ? 1 : ROW_TILE / P->len;
    P->ntiles = (P->rows + P->tr - 1) / P->tr;
    int want = pool_threads() < 64 ? pool_threads() : 64;
    bool serial = false;
    for (int i = 0; i < P->np; i++) serial |= P->progs[i].serial;
    if (size < PAR_MIN || P->ntiles < 2 || (serial && cpu_work_limit > 0)) want = 1;
    size_t tbytes = 0;
    for (int c = 0; c < P->nc; c++) tbytes += (size_t)((P->tr * P->len * esize(P->cached[c]->dt) + 63) & ~63);
    P->wp[0] = P->progs;
    for (int w = 0; w < want; w++) {
        if (w > 0) {
            if (!(P->wp[w] = calloc((size_t)P->np, sizeof(Prog)))) break;
            int i = 0;
            while (i < P->np && prog_clone(&P->progs[i], &P->wp[w][i])) i++;
            if (i < P->np) {
                while (i-- > 0) prog_free(&P->wp[w][i]);
                free(P->wp[w]);
                break;
            }
        }
        P->tmem[w] = aligned_alloc(64, tbytes ? tbytes : 64);
        P->tb[w] = malloc(sizeof(char *) * (size_t)(P->nc ? P->nc : 1));
        if (!P->tmem[w] || !P->tb[w]) {
            if (w == 0) {
                rt_error(f->c->err, v->loc, "out of memory");
                goto fail;
            }
            for (int i = 0; i < P->np; i++) prog_free(&P->wp[w][i]);
            free(P->wp[w]);
            free(P->tmem[w]), free(P->tb[w]);
            P->tmem[w] = NULL, P->tb[w] = NULL;
            break;
        }
        size_t at = 0;
        for (int c = 0; c < P->nc; c++) {
            P->tb[w][c] = P->tmem[w] + at;
            at += (size_t)((P->tr * P->len * esize(P->cached[c]->dt) + 63) & ~63);
        }
        for (int i = 0; i < P->np; i++) P->wp[w][i].tb = P->tb[w];
        P->nw = w + 1;
    }
    if (P->nw > 1)
        for (int w = 0; w < P->nw; w++)
            for (int i = 0; i < P->np; i++) P->wp[w][i].halt = &P->halt;
    pool_for_watch(P->ntiles, P->nw, rw_tile, P, rw_watch, P);
    /* a program that failed recorded its error; an interrupt is the run's to report */
    if (atomic_load(&P->failed) && f->c->err->set) goto fail;
    *handled = true;
    rw_free(P, true);
    free(P);
    return res;
fail:
    *handled = true;
    arr_release(res);
    res = NULL;
bail:
    rw_free(P, false);
    free(P);
    return res;
}

/* ---- scans ----------------------------------------------------------------------- */

typedef struct ScanSt {
    RedOp op;
    DType dt;
    bool exclusive, have;
    Cell acc;
    SProg *lam;
} ScanSt;

/* NaN-propagating min/max for any T (isf is the function's "T is a float"). */
#define MINF(a, b) ((ISNAN_T(a) || (a) < (b)) ? (a) : (b))
#define MAXF(a, b) ((ISNAN_T(a) || (a) > (b)) ? (a) : (b))
#define SCAN_LOOP(E)                                                                        \
    for (; i < n; i++) {                                                                    \
        T v = x[i * ist], r = (E);                                                          \
        y[i * ost] = exc ? a : r;                                                           \
        a = r;                                                                              \
    }
#define SCAN_FN(DTN, CT, UT, KIND, unused)                                                  \
    static void scan_##DTN(ScanSt *s, const void *pin, void *pout, int64_t n, int64_t ist,  \
                           int64_t ost) {                                                   \
        typedef CT T;                                                                       \
        typedef UT U;                                                                       \
        const T *x = pin;                                                                   \
        T *y = pout;                                                                        \
        const bool isf = ISF_##KIND;                                                        \
        T a;                                                                                \
        memcpy(&a, &s->acc, sizeof a);                                                      \
        const bool exc = s->exclusive;                                                      \
        int64_t i = 0;                                                                      \
        if (!s->have && n > 0) { /* the first value starts the fold */                     \
            y[0] = exc ? a : x[0];                                                          \
            a = x[0];                                                                       \
            s->have = true;                                                                 \
            i = 1;                                                                          \
        }                                                                                   \
        /* one loop per combine, the switch out of it: the fold's latency is the loop's */ \
        switch (s->op) {                                                                    \
        case RED_SUM: SCAN_LOOP(isf ? (T)(a + v) : (T)((U)a + (U)v)); break;                \
        case RED_PROD: SCAN_LOOP(isf ? (T)(a * v) : (T)((U)a * (U)v)); break;               \
        case RED_MIN: SCAN_LOOP(MINF(a, v)); break;                                         \
        case RED_MAX: SCAN_LOOP(MAXF(a, v)); break;                                         \
        default: die("bad scan %d", (int)s->op);                                            \
        }                                                                                   \
        memcpy(&s->acc, &a, sizeof a);                                                      \
        (void)isf;                                                                          \
    }
CTYPES(SCAN_FN, 0)
#define SCAN_ENT(DTN, CT, UT, KIND, unused) [DT_##DTN] = scan_##DTN,
static void (*const scan_tab[DT_COUNT])(ScanSt *, const void *, void *, int64_t, int64_t,
                                        int64_t) = {CTYPES(SCAN_ENT, 0)};

/* The identity of a scan's combine in dtype dt (what an exclusive scan starts from). */
static Cell scan_identity(RedOp op, DType dt) {
    Cell c;
    c.u64 = 0;
    const DTypeInfo *di = &dtype_info[dt];
    Scalar s;
    s.u = 0;
    switch (op) {
    case RED_PROD: s.f = 1; break;
    case RED_MIN:
    case RED_MAX: {
        bool mn = op == RED_MIN; /* min's identity is the largest value */
        if (di->is_float) {
            s.f = mn ? INFINITY : -INFINITY;
            cell_set(&c, dt, s);
            return c;
        }
        int bits = 8 * di->size;
        if (dt == DT_BOOL)
            s.i = mn ? 1 : 0;
        else if (di->is_signed)
            s.i = mn ? (int64_t)(((uint64_t)1 << (bits - 1)) - 1)
                     : -(int64_t)(((uint64_t)1 << (bits - 1)) - 1) - 1;
        else
            s.u = mn ? (bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1) : 0;
        cell_set(&c, dt, s);
        return c;
    }
    default: break; /* sum, lambda without init: 0 */
    }
    cell_set(&c, dt, scalar_cast(s, DT_F64, dt));
    return c;
}

static void scan_feed(ScanSt *s, const void *x, void *y, int64_t n, int64_t ist, int64_t ost) {
    if (s->op != RED_LAMBDA) {
        scan_tab[s->dt](s, x, y, n, ist, ost);
        return;
    }
    size_t esz = (size_t)esize(s->dt);
    Cell e;
    e.u64 = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy(&e, (const char *)x + i * ist * (int64_t)esz, esz);
        char *dst = (char *)y + i * ost * (int64_t)esz;
        if (!s->have) {
            s->acc = e;
            s->have = true;
            memcpy(dst, &e, esz);
            continue;
        }
        if (s->exclusive) memcpy(dst, &s->acc, esz);
        sprog_step(s->lam, &s->acc, &e);
        if (!s->exclusive) memcpy(dst, &s->acc, esz);
    }
}

typedef struct ScanSink {
    ScanSt st;
    DType in_dt;
    void *conv;
    Arr *out;
} ScanSink;

static bool scan_sink(void *ctx, const void *vals, int64_t off, int64_t len) {
    ScanSink *r = ctx;
    if (r->conv) {
        cast_tab[r->st.dt][r->in_dt](r->conv, vals, len);
        vals = r->conv;
    }
    scan_feed(&r->st, vals, (char *)r->out->data + off * esize(r->st.dt), len, 1, 1);
    return true;
}

/* The builtin fold a lambda is, where it is exactly one: `|a, b| a + b` (or b + a) is
   RED_SUM, `a * b` RED_PROD, both of the scan's type; -1 otherwise. scan_tab then folds
   with the same operations in the same order (acc op element, as sprog_step), so the bits
   are the lambda's, without the interpreter per element. */
static int sprog_as_red(const SProg *s, DType dt) {
    if (s->n != 1 || s->root != s->ins[0].out) return -1;
    const SIns *in = &s->ins[0];
    if ((in->op != OP_ADD && in->op != OP_MUL) || in->dt != dt || in->adt != dt) return -1;
    if (!((in->in[0] == 0 && in->in[1] == 1) || (in->in[0] == 1 && in->in[1] == 0))) return -1;
    return in->op == OP_ADD ? RED_SUM : RED_PROD;
}

static void scan_start(ScanSt *st, const Val *v, SProg *lp, bool hasinit, const Cell *init) {
    memset(st, 0, sizeof *st);
    st->op = v->red;
    st->dt = v->dt;
    st->exclusive = v->exclusive;
    st->lam = lp;
    int bop = lp ? sprog_as_red(lp, v->dt) : -1;
    if (bop >= 0) {
        st->op = (RedOp)bop;
        st->lam = NULL;
    }
    if (hasinit) {
        st->acc = *init;
        st->have = true;
    } else if (v->exclusive) {
        st->acc = scan_identity(v->red, v->dt);
        st->have = true;
    }
}

typedef struct ScanJob {
    const Val *v;
    SProg *lp;
    bool hasinit;
    Cell init;
    const char *x; /* the values (the result's own memory when scanned in place) */
    char *y;
    int64_t outer, len, inner, ntiles;
    ScanSt *sts; /* TILE per worker */
} ScanJob;

/* Outer index k / ntiles, tile k % ntiles of a scan along an axis. */
static void scan_tile(void *ctx, int worker, int64_t k) {
    ScanJob *j = ctx;
    ScanSt *sts = j->sts + (size_t)worker * TILE;
    int64_t o = k / j->ntiles, i0 = (k % j->ntiles) * TILE, len = j->len, inner = j->inner;
    int64_t nc = inner - i0 < TILE ? inner - i0 : TILE;
    int esz = esize(j->v->dt);
    for (int64_t c = 0; c < nc; c++) scan_start(&sts[c], j->v, j->lp, j->hasinit, &j->init);
    int64_t step = inner == 1 ? len : TILE; /* whole lines when contiguous */
    for (int64_t j0 = 0; j0 < len; j0 += step) {
        int64_t nr = len - j0 < step ? len - j0 : step;
        for (int64_t c = 0; c < nc; c++) {
            int64_t at = ((o * len + j0) * inner + i0 + c) * esz;
            scan_feed(&sts[c], j->x + at, j->y + at, nr, inner, inner);
        }
    }
}

static Arr *eval_scan(Frame *f, const Val *v) {
    const Val *x = v->args[0];
    const Val *initv = v->init ? v->init : v->nargs > 1 ? v->args[1] : NULL;
    bool hasinit = initv != NULL;
    Cell init;
    init.u64 = 0;
    if (hasinit && !get_cell(f, initv, v->dt, &init)) return NULL;
    SProg lam, *lp = NULL;
    if (v->red == RED_LAMBDA) {
        ASSERT(v->lam);
        if (!sprog_build(f, v->lam, &lam)) return NULL;
        lp = &lam;
    }
    Stream s;
    Arr *res = NULL;
    void *conv = NULL;
    ScanSt *sts = NULL;
    if (!stream_open(f, x, &s)) goto out;
    bool needconv = s.dt != v->dt;
    if (v->axis == AXIS_ALL || s.rank <= 1) {
        int64_t n = s.size;
        res = new_arr(f, v->loc, v->dt, v->rank == 0 ? 0 : 1, &n);
        if (!res) goto out;
        if (needconv && !(conv = malloc((size_t)CHUNK * 8))) {
            rt_error(f->c->err, v->loc, "out of memory");
            goto fail;
        }
        ScanSink ss = {.in_dt = s.dt, .conv = conv, .out = res};
        scan_start(&ss.st, v, lp, hasinit, &init);
        stream_run(&s, scan_sink, &ss);
    } else {
        /* A fused input that only this scan uses is computed straight into the result
           and scanned in place (each element is read before it is written): peak memory
           of the output. Otherwise the input is stored once and kept for its other uses. */
        res = new_arr(f, v->loc, v->dt, s.rank, s.shape);
        if (!res) goto out;
        ScanJob j = {.v = v, .lp = lp, .hasinit = hasinit, .init = init, .y = res->data};
        if (!s.arr && !needconv && stmt_uses(f, x) == 1) {
            if (!stream_fill(&s, res->data)) goto fail;
            j.x = res->data;
        } else {
            Arr *xa = take_memo(f, &s, x);
            if (!xa) goto fail;
            s.arr = xa;
            if (needconv) {
                Arr *ca = new_arr(f, v->loc, v->dt, xa->rank, xa->shape);
                if (!ca) goto fail;
                cast_tab[v->dt][xa->dt](ca->data, xa->data, xa->size);
                arr_release(xa);
                s.arr = xa = ca;
            }
            j.x = xa->data;
        }
        int axis = v->axis;
        ASSERT(axis >= 0 && axis < s.rank);
        j.outer = 1, j.inner = 1, j.len = s.shape[axis];
        for (int k = 0; k < axis; k++) j.outer *= s.shape[k];
        for (int k = axis + 1; k < s.rank; k++) j.inner *= s.shape[k];
        j.ntiles = (j.inner + TILE - 1) / TILE;
        /* tiles of lines on every core, each line scanned in order: the same bits on any
           number of threads (a lambda's program has one set of registers: one thread) */
        int64_t items = j.outer * j.ntiles;
        int nw = lp || items < 2 ? 1 : pool_threads() < 64 ? pool_threads() : 64;
        sts = j.sts = malloc(sizeof(ScanSt) * TILE * (size_t)nw);
        if (!sts) {
            rt_error(f->c->err, v->loc, "out of memory");
            goto fail;
        }
        pool_for(items, nw, scan_tile, &j);
    }
    goto out;
fail:
    arr_release(res);
    res = NULL;
out:
    free(sts);
    free(conv);
    stream_close(&s);
    if (lp && !sprog_done(lp)) {
        arr_release(res);
        res = NULL;
    }
    return res;
}

/* ---- structural ops -------------------------------------------------------------- */

/* The operands of v as the shape rules ask for them: evaluated (memoised, so the op
   that asked reads them again for free). */
static bool op_dims(void *fr, const Val *v, Dims *out) {
    Arr *a = eval(fr, v);
    if (!a) return false;
    out->rank = a->rank;
    memcpy(out->d, a->shape, sizeof out->d);
    arr_release(a);
    return true;
}

static bool op_i64(void *fr, const Val *v, int64_t *out) { return get_i64(fr, v, out); }

static Arr *eval_slice(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]);
    if (!x) return NULL;
    Dims od;
    SliceAxis ax[MAXRANK];
    Arr *r = NULL;
    if (shape_rule(&f->ops, v, &od, ax)) {
        int64_t xs[MAXRANK], ostride[MAXRANK], soff = 0;
        int o = 0;
        c_strides(x->rank, x->shape, xs);
        for (int k = 0; k < x->rank; k++) {
            if (ax[k].len > 0) soff += ax[k].start * xs[k];
            if (k < (v->nargs - 1) / 3 && v->slmode[k] == SL_INDEX) continue;
            /* With one element or none the stride is never used (and step * stride may
               overflow when the step is huge). */
            ostride[o++] = ax[k].len > 1 ? ax[k].step * xs[k] : 0;
        }
        r = new_arr(f, v->loc, x->dt, od.rank, od.d);
        if (r && !copy_strided(r->data, x->data, esize(x->dt), od.rank, od.d, ostride, soff)) {
            arr_release(r);
            r = NULL;
            rt_error(f->c->err, v->loc, "out of memory");
        }
    }
    arr_release(x);
    return r;
}

/* ---- segments=offs: one reduction or scan per segment, restarted at each offset ---- */

/* The offsets of v's segments, checked against n elements (an array the caller
   releases), or NULL after an error. */
static Arr *seg_offsets(Frame *f, const Val *v, int64_t n) {
    Arr *o = eval(f, red_segs(v));
    if (!o) return NULL;
    ASSERT(o->dt == DT_I64 && o->rank == 1);
    if (o->size < 1) {
        rt_error(f->c->err, v->loc, "segments= needs k + 1 offsets for k segments, not an empty array "
                                    "(no segments: offs = [0] over an empty array)");
        arr_release(o);
        return NULL;
    }
    if (!shape_check_segments(f->c->err, v, (const int64_t *)o->data, o->size, n)) {
        arr_release(o);
        return NULL;
    }
    return o;
}

typedef struct SegRed {
    RedSt st;
    DType in_dt, out_dt;
    void *conv;
    const int64_t *offs;
    int64_t k, seg;  /* segments, the one being folded */
    int64_t cnt;     /* elements folded into it */
    SProg *lam;
    const Cell *init;
    Arr *res;
} SegRed;

static void segred_begin(SegRed *r) {
    red_start(&r->st, r->st.op, r->st.dt, r->lam);
    if (r->init) {
        r->st.acc = *r->init;
        r->st.have = true;
    }
    r->cnt = 0;
}

/* Writes segment r->seg's value and moves to the next one. An empty segment gives the
   combine's identity (min: +inf or the largest value, ...), argmin/argmax -1, a lambda
   its initial value. */
static void segred_put(RedSt *st, int64_t cnt, DType out_dt, Arr *res, int64_t seg) {
    Cell c;
    RedOp op = st->op;
    if (cnt == 0 && (op == RED_ARGMIN || op == RED_ARGMAX)) {
        c.u64 = 0;
        c.i64 = -1;
    } else if (cnt == 0 && (op == RED_MIN || op == RED_MAX)) {
        c = scan_identity(op, out_dt);
    } else {
        red_result(st, out_dt, &c);
    }
    int oesz = esize(out_dt);
    memcpy((char *)res->data + seg * oesz, &c, (size_t)oesz);
}

static void segred_end(SegRed *r) {
    segred_put(&r->st, r->cnt, r->out_dt, r->res, r->seg);
    r->seg++;
    segred_begin(r);
}

/* eval_segreduce on every core, for the folds that split (red_splits) without a lambda or
   an initial value. Chunk c (CHUNK elements, as the stream's) cuts the segments it meets
   into pieces exactly where the one-thread fold feeds them; a segment inside the chunk is
   folded and written there, the piece of the segment open at the chunk's start (head)
   and of the one that goes on past its end (tail) are kept, and a pass in chunk order
   merges them (red_merge: the piece's fold added as red_feed would add the piece), so
   the bits are the one-thread fold's. */
typedef struct SegJob {
    Stream *s;
    Workers *w;
    const SegRed *r;
    RedSt *head, *tail; /* per chunk */
    int64_t *hseg, *tseg; /* their segments, -1: none */
    void *conv[64];
    atomic_bool failed;
} SegJob;

static void seg_chunk(void *ctx, int worker, int64_t c) {
    SegJob *j = ctx;
    const SegRed *r = j->r;
    int64_t off, len;
    j->hseg[c] = j->tseg[c] = -1;
    const void *vals = chunk_of(j->s, j->w, worker, c, NULL, &off, &len);
    if (!vals) {
        atomic_store(&j->failed, true);
        return;
    }
    if (r->conv) {
        cast_tab[r->st.dt][r->in_dt](j->conv[worker], vals, len);
        vals = j->conv[worker];
    }
    const int64_t *o = r->offs, end = off + len;
    int esz = esize(r->st.dt);
    /* the first segment that ends past off: o[s + 1] > off */
    int64_t lo = 0, hi = r->k;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (o[mid + 1] > off) hi = mid;
        else lo = mid + 1;
    }
    for (int64_t sg = lo, at = off; sg < r->k && at < end; sg++) {
        if (o[sg + 1] <= at) continue; /* empty: the merge pass writes it */
        int64_t take = (o[sg + 1] < end ? o[sg + 1] : end) - at;
        RedSt t;
        red_start(&t, r->st.op, r->st.dt, NULL);
        red_feed(&t, (const char *)vals + (at - off) * esz, take, 1, at - o[sg]);
        if (o[sg] < off) { /* began in an earlier chunk */
            j->head[c] = t;
            j->hseg[c] = sg;
        } else if (o[sg + 1] > end) { /* goes on past this one */
            j->tail[c] = t;
            j->tseg[c] = sg;
        } else {
            segred_put(&t, take, r->out_dt, r->res, sg);
        }
        at += take;
    }
}

/* false where it does not apply (then the one-thread fold runs) or after an interrupt. */
static bool segred_par(Stream *s, SegRed *r) {
    if (r->lam || r->init || !red_splits(r->st.op, r->st.dt) || s->size == 0) return false;
    Workers w;
    if (workers_open(s, &w) < 2) {
        workers_close(s, &w);
        return false;
    }
    int64_t nc = (s->size + CHUNK - 1) / CHUNK;
    SegJob j = {.s = s, .w = &w, .r = r};
    atomic_init(&j.failed, false);
    j.head = malloc(sizeof(RedSt) * (size_t)nc);
    j.tail = malloc(sizeof(RedSt) * (size_t)nc);
    j.hseg = malloc(sizeof(int64_t) * (size_t)nc);
    j.tseg = malloc(sizeof(int64_t) * (size_t)nc);
    bool ok = j.head && j.tail && j.hseg && j.tseg;
    for (int i = 0; ok && i < w.n && r->conv; i++) ok = (j.conv[i] = malloc((size_t)CHUNK * 8)) != NULL;
    bool ran = false;
    if (ok) {
        pool_for_watch(nc, w.n, seg_chunk, &j, workers_watch, &w);
        ran = true;
        if (atomic_load(&j.failed)) {
            s->prog.failed = true;
        } else {
            const int64_t *o = r->offs;
            RedSt open;
            int64_t oseg = -1;
            for (int64_t c = 0; c < nc; c++) {
                if (j.hseg[c] >= 0) {
                    ASSERT(j.hseg[c] == oseg);
                    red_merge(&open, &j.head[c]);
                    if (o[oseg + 1] <= (c + 1) * CHUNK) {
                        segred_put(&open, o[oseg + 1] - o[oseg], r->out_dt, r->res, oseg);
                        oseg = -1;
                    }
                }
                if (j.tseg[c] >= 0) {
                    open = j.tail[c];
                    oseg = j.tseg[c];
                }
            }
            ASSERT(oseg < 0);
            for (int64_t sg = 0; sg < r->k; sg++) /* empty segments */
                if (o[sg + 1] == o[sg]) {
                    RedSt t;
                    red_start(&t, r->st.op, r->st.dt, NULL);
                    segred_put(&t, 0, r->out_dt, r->res, sg);
                }
        }
    }
    for (int i = 0; i < w.n && r->conv; i++) free(j.conv[i]);
    free(j.head), free(j.tail), free(j.hseg), free(j.tseg);
    workers_close(s, &w);
    return ran;
}

static bool segred_sink(void *ctx, const void *vals, int64_t off, int64_t len) {
    SegRed *r = ctx;
    if (r->conv) {
        cast_tab[r->st.dt][r->in_dt](r->conv, vals, len);
        vals = r->conv;
    }
    int esz = esize(r->st.dt);
    while (len > 0) {
        while (r->seg < r->k && r->offs[r->seg + 1] <= off) segred_end(r);
        ASSERT(r->seg < r->k);
        int64_t take = r->offs[r->seg + 1] - off;
        if (take > len) take = len;
        red_feed(&r->st, vals, take, 1, off - r->offs[r->seg]);
        r->cnt += take;
        vals = (const char *)vals + take * esz;
        off += take;
        len -= take;
    }
    return true;
}

/* What a segmented reduction (reduce) or scan runs with: v's initial value and
   lambda, x streamed, the offsets checked, the result ([k], or x's length) and, where
   x's type is not the fold type, a conversion buffer. */
typedef struct SegRun {
    Cell init;
    SProg lam, *lp;
    Stream s;
    bool opened; /* stream_open was called: stream_close is due */
    Arr *res, *offs;
    void *conv;
    DType fdt;
} SegRun;

/* false after an error (reported); seg_finish is due either way. */
static bool seg_start(Frame *f, const Val *v, bool reduce, SegRun *g) {
    memset(g, 0, sizeof *g);
    if (v->init && !get_cell(f, v->init, v->dt, &g->init)) return false;
    if (v->red == RED_LAMBDA) {
        ASSERT(v->lam);
        if (!sprog_build(f, v->lam, &g->lam)) return false;
        g->lp = &g->lam;
    }
    g->opened = true;
    if (!stream_open(f, v->args[0], &g->s)) return false;
    if (!(g->offs = seg_offsets(f, v, g->s.size))) return false;
    int64_t len = reduce ? g->offs->size - 1 : g->s.size;
    if (!(g->res = new_arr(f, v->loc, v->dt, 1, &len))) return false;
    g->fdt = reduce ? red_fold_dt(v->red, g->s.dt, v->dt) : v->dt;
    if (g->fdt != g->s.dt && !(g->conv = malloc((size_t)CHUNK * 8))) {
        rt_error(f->c->err, v->loc, "out of memory");
        arr_release(g->res);
        g->res = NULL;
        return false;
    }
    return true;
}

/* Frees what seg_start took; the result (NULL after an error). */
static Arr *seg_finish(SegRun *g) {
    free(g->conv);
    arr_release(g->offs);
    if (g->opened) stream_close(&g->s);
    if (g->lp && !sprog_done(g->lp)) {
        arr_release(g->res);
        g->res = NULL;
    }
    return g->res;
}

static Arr *eval_segreduce(Frame *f, const Val *v) {
    SegRun g;
    if (seg_start(f, v, true, &g)) {
        int64_t k = g.offs->size - 1;
        SegRed r = {.in_dt = g.s.dt, .out_dt = v->dt, .conv = g.conv, .offs = g.offs->data, .k = k, .lam = g.lp,
                    .init = v->init ? &g.init : NULL, .res = g.res};
        r.st.op = v->red;
        r.st.dt = g.fdt;
        if (!segred_par(&g.s, &r)) {
            segred_begin(&r);
            stream_run(&g.s, segred_sink, &r);
            while (r.seg < k) segred_end(&r); /* the last one and empty ones after it */
        }
    }
    return seg_finish(&g);
}

typedef struct SegScan {
    ScanSink sink;
    const Val *v;
    SProg *lam;
    const Cell *init;
    const int64_t *offs;
    int64_t k, seg;
} SegScan;

static bool segscan_sink(void *ctx, const void *vals, int64_t off, int64_t len) {
    SegScan *r = ctx;
    ScanSink *ss = &r->sink;
    if (ss->conv) {
        cast_tab[ss->st.dt][ss->in_dt](ss->conv, vals, len);
        vals = ss->conv;
    }
    int esz = esize(ss->st.dt);
    while (len > 0) {
        while (r->seg < r->k && r->offs[r->seg + 1] <= off) {
            r->seg++;
            scan_start(&ss->st, r->v, r->lam, r->init != NULL, r->init);
        }
        ASSERT(r->seg < r->k);
        int64_t take = r->offs[r->seg + 1] - off;
        if (take > len) take = len;
        scan_feed(&ss->st, vals, (char *)ss->out->data + off * esz, take, 1, 1);
        vals = (const char *)vals + take * esz;
        off += take;
        len -= take;
    }
    return true;
}

static Arr *eval_segscan(Frame *f, const Val *v) {
    SegRun g;
    if (seg_start(f, v, false, &g)) {
        SegScan r = {.sink = {.in_dt = g.s.dt, .conv = g.conv, .out = g.res}, .v = v, .lam = g.lp,
                     .init = v->init ? &g.init : NULL, .offs = g.offs->data, .k = g.offs->size - 1};
        scan_start(&r.sink.st, v, g.lp, v->init != NULL, &g.init);
        stream_run(&g.s, segscan_sink, &r);
    }
    return seg_finish(&g);
}

/* x[idx] for i64 and i32 indices: blocks of GATHER_BLOCK indices on every core, each
   row copied at its constant size. A block that meets an index out of bounds stops and
   says so; eval_gather then runs its checked loop, which reports the first such index. */
enum { GATHER_BLOCK = 8 * CHUNK };

typedef struct GatherJob {
    const void *idx;
    bool i32;
    const char *src;
    char *dst;
    size_t row;          /* bytes a row of x */
    int64_t n, nrows;    /* indices; rows of x */
    atomic_bool bad;
} GatherJob;

/* SZ: a constant where it can be, so that each copy is one load and store */
#define GATHER_ROWS(SZ)                                                                     \
    for (int64_t j = lo; j < hi; j++) {                                                     \
        int64_t i = g->i32 ? ((const int32_t *)g->idx)[j] : ((const int64_t *)g->idx)[j];   \
        i += i < 0 ? g->nrows : 0;                                                          \
        if ((uint64_t)i >= (uint64_t)g->nrows) {                                            \
            atomic_store(&g->bad, true);                                                    \
            return;                                                                         \
        }                                                                                   \
        memcpy(g->dst + (size_t)j * (SZ), g->src + (size_t)i * (SZ), (SZ));                \
    }

static void gather_block(void *ctx, int worker, int64_t k) {
    (void)worker;
    GatherJob *g = ctx;
    int64_t lo = k * GATHER_BLOCK, hi = g->n - lo < GATHER_BLOCK ? g->n : lo + GATHER_BLOCK;
    switch (g->row) {
    case 4: GATHER_ROWS(4); break;
    case 8: GATHER_ROWS(8); break;
    default: GATHER_ROWS(g->row); break;
    }
}
#undef GATHER_ROWS

static Arr *eval_gather(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]), *idx = NULL, *r = NULL;
    Dims od;
    if (!x || !(idx = eval(f, v->args[1])) || !shape_rule(&f->ops, v, &od, NULL)) goto out;
    if (!(r = new_arr(f, v->loc, x->dt, od.rank, od.d))) goto out;
    size_t row = (size_t)esize(x->dt);
    for (int k = 1; k < x->rank; k++) row *= (size_t)x->shape[k];
    if (idx->dt == DT_I64 || idx->dt == DT_I32) {
        GatherJob g = {idx->data, idx->dt == DT_I32, x->data, r->data, row, idx->size, x->shape[0], false};
        int64_t nb = (idx->size + GATHER_BLOCK - 1) / GATHER_BLOCK;
        pool_for(nb, pool_threads() < 64 ? pool_threads() : 64, gather_block, &g);
        if (!atomic_load(&g.bad)) goto out;
    }
    for (int64_t j = 0; j < idx->size; j++) {
        int64_t i = scalar_cast(arr_get(idx, j), idx->dt, DT_I64).i, t;
        if (idx->dt == DT_U64 && arr_get(idx, j).u > INT64_MAX) i = INT64_MAX;
        if (!shape_index(f->c->err, v->loc, i, v->axis, x->shape[0], &t)) {
            arr_release(r);
            r = NULL;
            goto out;
        }
        memcpy((char *)r->data + (size_t)j * row, (const char *)x->data + (size_t)t * row, row);
    }
out:
    arr_release(x);
    arr_release(idx);
    return r;
}

/* Integer sums into at most HIST_PRIV bins (bincount, histogram, reduce_by_index with
   add) on every core: each worker adds its chunks into bins of its own, then the
   workers' bins are added to the result. Integer adds wrap and commute, so the counts
   are the serial loop's whatever the order. */
enum { HIST_PRIV = 1 << 16 };

typedef struct HistJob {
    Stream *si, *sv;     /* indices; values (NULL: the one value cval) */
    Workers *wi, *wv;
    char *bins;          /* per worker, m bins of esz bytes */
    int64_t m;
    int esz;
    Cell cval;
    atomic_bool failed;
} HistJob;

#define HIST_ADD(T, IT)                                                                     \
    do {                                                                                    \
        const IT *q = ix;                                                                   \
        const T *x = xs;                                                                    \
        T *o = (T *)(void *)(j->bins + (size_t)worker * (size_t)j->m * sizeof(T)), c1;      \
        memcpy(&c1, &j->cval, sizeof c1);                                                   \
        for (int64_t t = 0; t < len; t++)                                                   \
            if (q[t] >= 0 && q[t] < j->m) o[q[t]] += x ? x[t] : c1;                         \
    } while (0)

static bool hist_watch(void *ctx) {
    Workers **w = ctx;
    if (workers_watch(w[0])) return true;
    atomic_store(&w[1]->halt, 1);
    return false;
}

static void hist_chunk(void *ctx, int worker, int64_t k) {
    HistJob *j = ctx;
    int64_t off, len;
    const void *ix = chunk_of(j->si, j->wi, worker, k, NULL, &off, &len), *xs = NULL;
    if (j->sv) xs = chunk_of(j->sv, j->wv, worker, k, NULL, &off, &len);
    if (!ix || (j->sv && !xs)) {
        atomic_store(&j->failed, true);
        return;
    }
    /* unsigned adds: wrapping, as the serial loop's */
    bool i64 = j->si->dt == DT_I64;
    if (i64 && j->esz == 8) HIST_ADD(uint64_t, int64_t);
    else if (i64) HIST_ADD(uint32_t, int64_t);
    else if (j->esz == 8) HIST_ADD(uint64_t, int32_t);
    else HIST_ADD(uint32_t, int32_t);
}
#undef HIST_ADD

/* eval_hist's integer sums on every core, into d (m bins, holding dest); false (d
   untouched) where they do not apply: the serial loop does them then. */
static bool hist_par(Stream *si, Stream *sv, int ew, DType dt, const Cell *cval, char *d, int64_t m) {
    if (ew != OP_ADD || !(dt == DT_I64 || dt == DT_U64 || dt == DT_I32 || dt == DT_U32) ||
        !(si->dt == DT_I64 || si->dt == DT_I32) || m > HIST_PRIV || m * 4 > si->size)
        return false;
    Workers wi, wv;
    if (workers_open(si, &wi) < 2) {
        workers_close(si, &wi);
        return false;
    }
    wv.n = 0;
    if (sv && workers_open(sv, &wv) < 2) {
        workers_close(sv, &wv);
        workers_close(si, &wi);
        return false;
    }
    int nw = sv && wv.n < wi.n ? wv.n : wi.n, esz = esize(dt);
    HistJob j = {si, sv, &wi, &wv, calloc((size_t)nw * (size_t)m, (size_t)esz), m, esz, *cval, false};
    bool ok = j.bins != NULL;
    if (ok) {
        Workers *both[2] = {&wi, sv ? &wv : &wi};
        pool_for_watch((si->size + CHUNK - 1) / CHUNK, nw, hist_chunk, &j, hist_watch, both);
        ok = !atomic_load(&j.failed);
    }
    for (int w = 0; ok && w < nw; w++) {
        const char *b = j.bins + (size_t)w * (size_t)m * (size_t)esz;
        for (int64_t t = 0; t < m; t++) {
            if (esz == 8) ((uint64_t *)(void *)d)[t] += ((const uint64_t *)(const void *)b)[t];
            else ((uint32_t *)(void *)d)[t] += ((const uint32_t *)(const void *)b)[t];
        }
    }
    free(j.bins);
    if (sv) workers_close(sv, &wv);
    workers_close(si, &wi);
    return ok;
}

/* scatter and reduce_by_index (bincount and histogram are reduce_by_index): a copy of
   dest, then idx and vals streamed in chunks in order, as np.add.at and friends go, so
   the results are NumPy's bit for bit. Indices outside dest are skipped. */
static Arr *eval_hist(Frame *f, const Val *v) {
    const Val *iv = v->args[1], *vv = v->args[2];
    Dims od;
    Arr *dest = NULL, *res = NULL;
    Stream si, sv;
    bool si_open = false, sv_open = false, ok = false;
    SProg lam;
    bool lam_built = false;
    if (!shape_rule(&f->ops, v, &od, NULL)) return NULL;
    if (!(dest = eval(f, v->args[0]))) return NULL;
    res = new_arr(f, v->loc, v->dt, 1, dest->shape);
    if (!res) goto out;
    int esz = esize(v->dt);
    memcpy(res->data, dest->data, (size_t)(dest->size * esz));
    int64_t m = dest->size;
    Cell cval;
    cval.u64 = 0;
    if (vv->rank == 0) {
        Scalar sc;
        if (!get_scalar(f, vv, v->dt, &sc)) goto out;
        cell_set(&cval, v->dt, sc);
    }
    if (v->op == OP_HIST && v->red == RED_LAMBDA) {
        if (!sprog_build(f, v->lam, &lam)) goto out;
        lam_built = true;
    }
    if (!(si_open = stream_open(f, iv, &si))) goto out;
    if (vv->rank && !(sv_open = stream_open(f, vv, &sv))) goto out;
    int ew = v->op == OP_SCATTER       ? -1
             : v->red == RED_SUM  ? OP_ADD
             : v->red == RED_PROD ? OP_MUL
             : v->red == RED_MIN  ? OP_MINIMUM
             : v->red == RED_MAX  ? OP_MAXIMUM
                                  : -2;
    char *d = res->data;
    if (hist_par(&si, sv_open ? &sv : NULL, ew, v->dt, &cval, d, m)) {
        ok = true;
        goto out;
    }
    for (int64_t off = 0; off < si.size; off += CHUNK) {
        int64_t len = si.size - off < CHUNK ? si.size - off : CHUNK;
        const void *ix = si.arr ? (const char *)si.arr->data + off * esize(si.dt) : prog_chunk(&si.prog, off, len, NULL);
        const char *xs = NULL;
        if (sv_open) xs = sv.arr ? (const char *)sv.arr->data + off * esz : prog_chunk(&sv.prog, off, len, NULL);
        /* the common cases without a call per element: counts and sums */
        if (ew == OP_ADD && v->dt == DT_I64 && si.dt == DT_I64 && !xs) {
            const int64_t *q = ix;
            int64_t *o = (int64_t *)(void *)d, c1 = cval.i64;
            for (int64_t j = 0; j < len; j++)
                if (q[j] >= 0 && q[j] < m) o[q[j]] = (int64_t)((uint64_t)o[q[j]] + (uint64_t)c1);
            continue;
        }
        for (int64_t j = 0; j < len; j++) {
            int64_t t = si.dt == DT_I32 ? ((const int32_t *)ix)[j] : ((const int64_t *)ix)[j];
            if (t < 0 || t >= m) continue;
            const void *x = xs ? xs + j * esz : (const void *)&cval;
            char *dst = d + t * esz;
            if (ew == -1) {
                memcpy(dst, x, (size_t)esz);
            } else if (ew >= 0) {
                Cell r;
                ew_tab[ew][v->dt](&r, dst, x, NULL, 1);
                memcpy(dst, &r, (size_t)esz);
            } else {
                Cell acc, xc;
                acc.u64 = xc.u64 = 0;
                memcpy(&acc, dst, (size_t)esz);
                memcpy(&xc, x, (size_t)esz);
                sprog_step(&lam, &acc, &xc);
                memcpy(dst, &acc, (size_t)esz);
            }
        }
    }
    ok = true;
out:
    if (si_open) stream_close(&si);
    if (sv_open) stream_close(&sv);
    if (lam_built && !sprog_done(&lam)) ok = false;
    arr_release(dest);
    if (!ok) {
        arr_release(res);
        res = NULL;
    }
    return res;
}

/* x[mask], filter, nonzero: the two operands stream chunk by chunk side by side, so a
   fused producer (x > 0.5, a * b) is never stored; the kept elements go straight to the
   result, allocated at x's size (the most it can hold) and copied into an array of the
   count's size when fewer are kept. */
static Arr *eval_compact(Frame *f, const Val *v) {
    Stream xs, ms;
    Arr *r = NULL;
    if (!stream_open(f, v->args[0], &xs)) return NULL;
    if (!stream_open(f, v->args[1], &ms)) {
        stream_close(&xs);
        return NULL;
    }
    Dims xd = {.rank = xs.rank}, md = {.rank = ms.rank};
    memcpy(xd.d, xs.shape, sizeof xd.d);
    memcpy(md.d, ms.shape, sizeof md.d);
    if (!shape_mask(f->c->err, v->loc, &xd, &md)) goto out;
    int64_t n = xs.size, cnt = 0;
    if (!(r = new_arr(f, v->loc, v->dt, 1, &n))) goto out;
    int esz = esize(v->dt);
    char *dst = r->data;
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t len = n - off < CHUNK ? n - off : CHUNK;
        const uint8_t *m = stream_vals(&ms, &ms.prog, off, len, NULL);
        const char *x = stream_vals(&xs, &xs.prog, off, len, NULL);
        switch (esz) {
#define COMPACT_LOOP(T)                                                                     \
    for (int64_t i = 0; i < len; i++) {                                                     \
        ((T *)dst)[cnt] = ((const T *)x)[i];                                                \
        cnt += m[i] != 0;                                                                   \
    }                                                                                       \
    break;
        case 1: COMPACT_LOOP(uint8_t)
        case 2: COMPACT_LOOP(uint16_t)
        case 4: COMPACT_LOOP(uint32_t)
        case 8: COMPACT_LOOP(uint64_t)
        default:
            for (int64_t i = 0; i < len; i++)
                if (m[i]) memcpy(dst + (cnt++) * esz, x + i * esz, (size_t)esz);
        }
#undef COMPACT_LOOP
    }
    if (cnt != n) {
        /* the pool (exec/arr.c) frees by the array's size, so a shorter one is a copy */
        Arr *t = new_arr(f, v->loc, v->dt, 1, &cnt);
        if (!t) {
            arr_release(r);
            r = NULL;
            goto out;
        }
        memcpy(t->data, r->data, (size_t)(cnt * esz));
        arr_release(r);
        r = t;
    }
out:
    stream_close(&xs);
    stream_close(&ms);
    return r;
}

/* sort and argsort along the last axis (exec/sort.h; sema moves another axis there and
   back): each row is sorted on its own. sort_by_key's keys (a second operand, their
   SORTKV) are sorted on their own here. A sort of a fused value that nothing has
   stored (sort(rand(n) * 2.0)) streams it into its output and sorts there, in place:
   the output and one row of keys, not the input besides. */
static Arr *eval_sort(Frame *f, const Val *v) {
    const bool arg = v->op == OP_ARGSORT;
    Stream s;
    if (!stream_open(f, v->args[0], &s)) return NULL;
    const bool fused = !s.arr; /* stream_take computes it into an array of our own */
    Arr *x = stream_take(f, &s, v->loc);
    if (!x) return NULL;
    ASSERT(v->axis == x->rank - 1);
    const int64_t len = x->shape[v->axis], rows = len ? x->size / len : 0;
    Arr *r = fused && !arg && x->dt == v->dt ? arr_retain(x) : new_arr(f, v->loc, v->dt, x->rank, x->shape);
    if (r && !host_sort_rows(x->dt, x->data, rows, len, v->exclusive, arg ? NULL : r->data, arg ? (int64_t *)r->data : NULL)) {
        rt_error(f->c->err, v->loc, "%s(): out of memory for its scratch", arg ? "argsort" : "sort");
        arr_release(r);
        r = NULL;
    }
    arr_release(x);
    return r;
}

/* sort_by_key's values: gathered by the keys' argsort. */
static Arr *eval_sortkv(Frame *f, const Val *v) {
    Arr *k = eval(f, v->args[0]);
    if (!k) return NULL;
    Arr *x = eval(f, v->args[1]);
    if (!x) return arr_release(k), NULL;
    ASSERT(k->rank == 1 && x->rank == 1 && k->size == x->size);
    Arr *r = new_arr(f, v->loc, v->dt, 1, x->shape);
    int64_t *idx = r ? malloc(sizeof(int64_t) * (size_t)(k->size ? k->size : 1)) : NULL;
    if (r && (!idx || !host_sort_rows(k->dt, k->data, 1, k->size, v->exclusive, NULL, idx))) {
        rt_error(f->c->err, v->loc, "sort_by_key(): out of memory for its scratch");
        arr_release(r);
        r = NULL;
    }
    if (r) gather_elems(r->data, x->data, idx, x->size, esize(v->dt));
    free(idx);
    arr_release(k);
    arr_release(x);
    return r;
}

/* top_k's positions along the last axis (exec/sort.h: a selection where k is small
   beside the row, else each row's argsort). */
static Arr *eval_topk(Frame *f, const Val *v) {
    int64_t k = 0;
    Arr *x = get_i64(f, v->args[1], &k) ? eval(f, v->args[0]) : NULL;
    if (!x) return NULL;
    const int64_t len = x->shape[x->rank - 1], rows = len ? x->size / len : 0;
    ASSERT(x->rank >= 1 && k >= 0 && k <= len);
    int64_t shape[MAXRANK];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->rank);
    shape[x->rank - 1] = k;
    Arr *r = new_arr(f, v->loc, DT_I64, x->rank, shape);
    if (r && !host_topk_rows(x->dt, x->data, rows, len, k, (int64_t *)r->data)) {
        rt_error(f->c->err, v->loc, "top_k(): out of memory for its scratch");
        arr_release(r);
        r = NULL;
    }
    arr_release(x);
    return r;
}

static Arr *eval_searchsorted(Frame *f, const Val *v) {
    Arr *a = eval(f, v->args[0]), *x = a ? eval(f, v->args[1]) : NULL;
    Arr *r = x ? new_arr(f, v->loc, DT_I64, x->rank, x->shape) : NULL;
    if (r && !host_searchsorted(a->dt, a->data, a->size, x->data, x->size, v->exclusive, (int64_t *)r->data)) {
        rt_error(f->c->err, v->loc, "searchsorted(): out of memory for its scratch");
        arr_release(r);
        r = NULL;
    }
    if (a) arr_release(a);
    if (x) arr_release(x);
    return r;
}

static Arr *eval_reverse(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]);
    if (!x) return NULL;
    ASSERT(x->rank >= 1);
    Arr *r = new_arr(f, v->loc, x->dt, x->rank, x->shape);
    if (r) {
        int64_t n = x->shape[0];
        size_t row = n ? (size_t)(x->size / n) * (size_t)esize(x->dt) : 0;
        for (int64_t i = 0; i < n; i++)
            memcpy((char *)r->data + (size_t)i * row, (const char *)x->data + (size_t)(n - 1 - i) * row,
                   row);
    }
    arr_release(x);
    return r;
}

/* The operands of concat or stack, each evaluated (*xsp, v->nargs of them, for the
   caller to release) and the result allocated by v's shape rule (*rp). false after an
   error, with *xsp NULL only when it could not be allocated. */
static bool eval_joined(Frame *f, const Val *v, Arr ***xsp, Arr **rp, Dims *od) {
    Arr **xs = calloc((size_t)v->nargs, sizeof(Arr *));
    *xsp = xs;
    *rp = NULL;
    if (!xs) {
        rt_error(f->c->err, v->loc, "out of memory");
        return false;
    }
    for (int i = 0; i < v->nargs; i++)
        if (!(xs[i] = eval(f, v->args[i]))) return false;
    return shape_rule(&f->ops, v, od, NULL) && (*rp = new_arr(f, v->loc, xs[0]->dt, od->rank, od->d)) != NULL;
}

static Arr *eval_concat(Frame *f, const Val *v) {
    int n = v->nargs;
    Arr **xs, *r;
    Dims od;
    if (!eval_joined(f, v, &xs, &r, &od)) {
        if (!xs) return NULL;
        goto out;
    }
    int axis = v->axis;
    int64_t outer = 1;
    for (int k = 0; k < axis; k++) outer *= od.d[k];
    size_t inner = (size_t)esize(r->dt);
    for (int k = axis + 1; k < r->rank; k++) inner *= (size_t)od.d[k];
    char *dst = r->data;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            size_t part = (size_t)xs[i]->shape[axis] * inner;
            memcpy(dst, (const char *)xs[i]->data + (size_t)o * part, part);
            dst += part;
        }
out:
    for (int i = 0; i < n; i++) arr_release(xs[i]);
    free(xs);
    return r;
}

/* pad(x, w, value): the padded array filled with value, then x's rows copied in. */
static Arr *eval_pad(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]), *val = NULL, *r = NULL;
    int64_t w;
    Dims od;
    if (!x || !get_i64(f, v->args[1], &w) || !(val = eval(f, v->args[2]))) goto out;
    if (!shape_rule(&f->ops, v, &od, NULL) || !(r = new_arr(f, v->loc, x->dt, od.rank, od.d))) goto out;
    int esz = esize(x->dt), rank = x->rank;
    ASSERT(val->dt == x->dt && val->size == 1 && rank >= 1);
    for (int64_t i = 0; i < r->size; i++) memcpy((char *)r->data + i * esz, val->data, (size_t)esz);
    if (x->size == 0) goto out;
    int64_t rst[MAXRANK], idx[MAXRANK] = {0}, row = x->shape[rank - 1], nrows = x->size / row;
    c_strides(rank, od.d, rst);
    for (int64_t q = 0; q < nrows; q++) {
        int64_t off = w;
        for (int k = 0; k < rank - 1; k++) off += (idx[k] + w) * rst[k];
        memcpy((char *)r->data + off * esz, (const char *)x->data + q * row * esz, (size_t)(row * esz));
        for (int k = rank - 2; k >= 0 && ++idx[k] == x->shape[k]; k--) idx[k] = 0;
    }
out:
    arr_release(x);
    arr_release(val);
    return r;
}

/* x with its region (a[i, lo:hi:st] = e) set to e, broadcast to the region: a copy of
   x, then each region element written from e. In place when x is the var's array and
   nothing else holds it: sema makes an update the whole value of an S_SET of the very
   slot it reads (args[0]), so held by that slot, this statement's memo and us alone
   (3 references) the old value has no other reader once e is computed (e is a separate
   array, or the check below sees it is x itself). */
static Arr *eval_update(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]), *e = NULL, *r = NULL;
    Dims od;
    SliceAxis ax[MAXRANK];
    if (!x || !(e = eval(f, v->args[1])) || !shape_rule(&f->ops, v, &od, ax)) goto out;
    int esz = esize(x->dt), rank = x->rank, q = 0;
    if (v->args[0]->op == OP_SLOT && f->slots[v->args[0]->slot] == x && x->refs == 3 && e != x) {
        r = arr_retain(x);
    } else {
        if (!(r = new_arr(f, v->loc, x->dt, x->rank, x->shape))) goto out;
        if (x->size) memcpy(r->data, x->data, (size_t)(x->size * esz));
    }
    int64_t xs[MAXRANK], es[MAXRANK], est[MAXRANK] = {0}, idx[MAXRANK] = {0}, total = 1;
    int qof[MAXRANK];
    c_strides(rank, x->shape, xs);
    c_strides(e->rank, e->shape, es);
    for (int k = 0; k < rank; k++) {
        qof[k] = v->slmode[k] == SL_INDEX ? -1 : q++;
        total *= ax[k].len;
    }
    /* e's stride for each region axis: 0 where it broadcasts */
    for (int p = 0; p < e->rank; p++)
        if (e->shape[p] != 1) est[q - e->rank + p] = es[p];
    for (int64_t t = 0; t < total; t++) {
        int64_t xo = 0, eo = 0;
        for (int k = 0; k < rank; k++) {
            xo += (ax[k].start + idx[k] * ax[k].step) * xs[k];
            if (qof[k] >= 0) eo += idx[k] * est[qof[k]];
        }
        memcpy((char *)r->data + xo * esz, (const char *)e->data + eo * esz, (size_t)esz);
        for (int k = rank - 1; k >= 0 && ++idx[k] == ax[k].len; k--) idx[k] = 0;
    }
out:
    arr_release(x);
    arr_release(e);
    return r;
}

/* roll(x, shift): along v->axis, or over the flattened array (np.roll). */
static Arr *eval_roll(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]), *r = NULL;
    int64_t shift;
    if (!x || !get_i64(f, v->args[1], &shift) || !(r = new_arr(f, v->loc, x->dt, x->rank, x->shape))) goto out;
    int64_t outer = 1, n = x->size, inner = esize(x->dt);
    if (v->axis != AXIS_ALL) {
        n = x->shape[v->axis];
        for (int k = 0; k < v->axis; k++) outer *= x->shape[k];
        for (int k = v->axis + 1; k < x->rank; k++) inner *= x->shape[k];
    }
    if (x->size == 0) goto out;
    int64_t s = shape_roll_shift(shift, n);
    for (int64_t o = 0; o < outer; o++) {
        const char *src = (const char *)x->data + o * n * inner;
        char *dst = (char *)r->data + o * n * inner;
        memcpy(dst + s * inner, src, (size_t)((n - s) * inner));
        memcpy(dst, src + (n - s) * inner, (size_t)(s * inner));
    }
out:
    arr_release(x);
    return r;
}

/* stack(xs..., axis=k): per index before the new axis, each operand's block in turn. */
static Arr *eval_stack(Frame *f, const Val *v) {
    int n = v->nargs;
    Arr **xs, *r;
    Dims od;
    if (!eval_joined(f, v, &xs, &r, &od)) {
        if (!xs) return NULL;
        goto out;
    }
    int64_t outer = 1, inner = esize(r->dt);
    for (int k = 0; k < v->axis; k++) outer *= od.d[k];
    for (int k = v->axis + 1; k < od.rank; k++) inner *= od.d[k];
    char *dst = r->data;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++, dst += inner) memcpy(dst, (const char *)xs[i]->data + o * inner, (size_t)inner);
out:
    for (int i = 0; i < n; i++) arr_release(xs[i]);
    free(xs);
    return r;
}

static Arr *eval_reshape(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]), *r = NULL;
    if (!x) return NULL;
    Dims od;
    if (shape_rule(&f->ops, v, &od, NULL) && (r = new_arr(f, v->loc, x->dt, od.rank, od.d)))
        memcpy(r->data, x->data, (size_t)x->size * (size_t)esize(x->dt));
    arr_release(x);
    return r;
}

static Arr *eval_transpose(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]), *r = NULL;
    if (!x) return NULL;
    int64_t xs[MAXRANK], oshape[MAXRANK], ost[MAXRANK];
    c_strides(x->rank, x->shape, xs);
    for (int k = 0; k < x->rank; k++) {
        ASSERT(v->perm[k] >= 0 && v->perm[k] < x->rank);
        oshape[k] = x->shape[v->perm[k]];
        ost[k] = xs[v->perm[k]];
    }
    if ((r = new_arr(f, v->loc, x->dt, x->rank, oshape)) &&
        !copy_strided(r->data, x->data, esize(x->dt), x->rank, oshape, ost, 0)) {
        rt_error(f->c->err, v->loc, "out of memory");
        arr_release(r);
        r = NULL;
    }
    arr_release(x);
    return r;
}

#define MM_F32(DTN, c, a, b) (T)((c) + (a) * (b))
#define MM_F64 MM_F32
#define MM_INT(DTN, c, a, b)                                                                \
    (DT_##DTN == DT_BOOL ? (T)((c) | ((a) & (b))) : (T)((U)(c) + (U)(a) * (U)(b)))
#define MM_FN(DTN, CT, UT, KIND, unused)                                                    \
    static void mm_##DTN(const void *pa, const void *pb, void *pc, int64_t m, int64_t k,    \
                         int64_t n) {                                                       \
        typedef CT T;                                                                       \
        typedef UT U;                                                                       \
        const T *A = pa, *B = pb;                                                           \
        T *C = pc;                                                                          \
        (void)sizeof(U);                                                                    \
        memset(C, 0, sizeof(T) * (size_t)(m * n));                                          \
        for (int64_t i = 0; i < m; i++)                                                     \
            for (int64_t p = 0; p < k; p++) {                                               \
                T a = A[i * k + p];                                                         \
                T *c = C + i * n;                                                           \
                const T *b = B + p * n;                                                     \
                for (int64_t j = 0; j < n; j++)                                             \
                    c[j] = MM_##KIND(DTN, c[j], a, b[j]);                                   \
            }                                                                               \
    }
CTYPES(MM_FN, 0)
#define MM_ENT(DTN, CT, UT, KIND, unused) [DT_##DTN] = mm_##DTN,
static void (*const mm_tab[DT_COUNT])(const void *, const void *, void *, int64_t, int64_t,
                                      int64_t) = {CTYPES(MM_ENT, 0)};

static Arr *eval_matmul(Frame *f, const Val *v) {
    Arr *x = eval(f, v->args[0]), *y = NULL, *r = NULL;
    if (!x || !(y = eval(f, v->args[1]))) goto out;
    ASSERT(x->dt == y->dt);
    Dims od;
    if (!shape_rule(&f->ops, v, &od, NULL)) goto out;
    /* 1-D operands are a row (left) or a column (right), dropped from the result. */
    int64_t m = x->rank == 2 ? x->shape[0] : 1, k = x->shape[x->rank - 1], n = y->rank == 2 ? y->shape[1] : 1;
    int64_t mk = m && k > INT64_MAX / m ? INT64_MAX : m * k;
    if (!run_charge(f->c, v->loc, n && mk > INT64_MAX / n ? INT64_MAX : mk * n)) goto out;
    if (dtype_is_half(x->dt)) { /* in f32 (the products of halves are exact there), rounded once */
        Arr *xf = new_arr(f, v->loc, DT_F32, x->rank, x->shape), *yf = xf ? new_arr(f, v->loc, DT_F32, y->rank, y->shape) : NULL;
        Arr *rf = yf ? new_arr(f, v->loc, DT_F32, od.rank, od.d) : NULL;
        if (rf && (r = new_arr(f, v->loc, x->dt, od.rank, od.d))) {
            cast_tab[DT_F32][x->dt](xf->data, x->data, x->size);
            cast_tab[DT_F32][y->dt](yf->data, y->data, y->size);
            mm_tab[DT_F32](xf->data, yf->data, rf->data, m, k, n);
            cast_tab[x->dt][DT_F32](r->data, rf->data, rf->size);
        }
        arr_release(xf), arr_release(yf), arr_release(rf);
    } else if ((r = new_arr(f, v->loc, x->dt, od.rank, od.d))) {
        mm_tab[x->dt](x->data, y->data, r->data, m, k, n);
    }
out:
    arr_release(x);
    arr_release(y);
    return r;
}

/* Runs an OP_CALL; *res may be NULL for a function that returns nothing. res holds one
   entry per result of a function with several results. */
static bool eval_call(Frame *f, const Val *v, Arr **res) {
    Arr *argv[8], **args = v->nargs <= 8 ? argv : calloc((size_t)v->nargs, sizeof(Arr *));
    bool ok = args != NULL;
    int got = 0;
    *res = NULL;
    if (!ok) rt_error(f->c->err, v->loc, "out of memory");
    for (; ok && got < v->nargs; got++)
        if (!(args[got] = eval(f, v->args[got]))) ok = false;
    if (ok) ok = call_fn(f->c, v->fn, args, res, v->loc);
    for (int i = 0; i < got; i++) arr_release(args[i]);
    if (args != argv) free(args);
    return ok;
}

static Arr *eval_dim(Frame *f, const Val *v) {
    const Val *x = v->args[0];
    int rank;
    int64_t shape[MAXRANK];
    if (f->memo[x->id] || !fusable_val(x)) {
        Arr *a = eval(f, x);
        if (!a) return NULL;
        rank = a->rank;
        memcpy(shape, a->shape, sizeof shape);
        arr_release(a);
    } else {
        /* The shape of a fused expression needs its leaves, not its values. */
        Prog p;
        if (!prog_build(f, x, &p)) return NULL;
        rank = p.rank;
        memcpy(shape, p.shape, sizeof shape);
        prog_free(&p);
    }
    ASSERT(v->axis >= 0 && v->axis < rank);
    return arr_scalar(DT_I64, (Scalar){.i = shape[v->axis]});
}

static Arr *eval_uncached(Frame *f, const Val *v) {
    if (fusable_val(v)) return eval_fused(f, v);
    switch (v->op) {
    case OP_CONST: return arr_scalar(v->dt, v->c);
    case OP_SLOT: {
        ASSERT(v->slot >= 0 && v->slot < f->fn->nslots);
        Arr *a = f->slots[v->slot];
        if (!a) {
            rt_error(f->c->err, v->loc, "variable '%s' is used before it is assigned",
                     f->fn->slots ? f->fn->slots[v->slot].name : "?");
            return NULL;
        }
        return arr_retain(a);
    }
    case OP_ARG: die("IR: an argument of a lambda outside its body");
    case OP_DIM: return eval_dim(f, v);
    case OP_CHECKDIM: return check_dims(f, v) ? eval(f, v->args[0]) : NULL;
    case OP_REDUCE: return red_segs(v) ? eval_segreduce(f, v) : eval_reduce(f, v);
    case OP_SCAN: return red_segs(v) ? eval_segscan(f, v) : eval_scan(f, v);
    case OP_SLICE: return eval_slice(f, v);
    case OP_GATHER: return eval_gather(f, v);
    case OP_COMPACT: return eval_compact(f, v);
    case OP_SORT:
    case OP_ARGSORT: return eval_sort(f, v);
    case OP_SORTKV: return eval_sortkv(f, v);
    case OP_UNIQUE: return eval(f, v->args[1]); /* the sort and compaction */
    case OP_SEARCHSORTED: return eval_searchsorted(f, v);
    case OP_TOPK: return eval_topk(f, v);
    case OP_REVERSE: return eval_reverse(f, v);
    case OP_CONCAT: return eval_concat(f, v);
    case OP_PAD: return eval_pad(f, v);
    case OP_ROLL: return eval_roll(f, v);
    case OP_UPDATE: return eval_update(f, v);
    case OP_STACK: return eval_stack(f, v);
    case OP_RESHAPE: return eval_reshape(f, v);
    case OP_TRANSPOSE: return eval_transpose(f, v);
    case OP_MATMUL: return eval_matmul(f, v);
    case OP_SCATTER:
    case OP_HIST: return eval_hist(f, v);
    case OP_LOAD: return exec_load(f->c->err, v);
    case OP_CALL: {
        Arr *r;
        if (!eval_call(f, v, &r)) return NULL;
        if (!r) die("IR: the value of a call to %s, which returns nothing", v->fn->name);
        return r;
    }
    default: die("IR: unknown op %d", (int)v->op);
    }
}

/* Returns a new reference, or NULL after an error was recorded. */
static Arr *eval(Frame *f, const Val *v) {
    ASSERT(v->id >= 0 && v->id < f->fn->nvals);
    if (f->memo[v->id]) return arr_retain(f->memo[v->id]);
    Arr *r = eval_uncached(f, v);
    if (!r) {
        if (!f->c->err->set) rt_error(f->c->err, v->loc, "out of memory");
        return NULL;
    }
    memo_put(f, v, arr_retain(r));
    return r;
}

/* ---- statements: the walker's hooks (run.h) ----------------------------------------- */

static void set_slot(Frame *f, int slot, Arr *a) {
    ASSERT(slot >= 0 && slot < f->fn->nslots);
    arr_release(f->slots[slot]);
    f->slots[slot] = a;
}

static bool t_set(void *fr, int slot, const Val *v) {
    Arr *a = eval(stmt_root(fr, v), v);
    if (a) set_slot(fr, slot, a);
    return a != NULL;
}

static bool t_set_scalar(void *fr, int slot, DType dt, Scalar x) {
    Frame *f = fr;
    Arr *a = arr_scalar(dt, x);
    if (!a) {
        rt_error(f->c->err, f->fn->loc, "out of memory");
        return false;
    }
    set_slot(f, slot, a);
    return true;
}

static bool t_scalar(void *fr, const Val *v, Scalar *out) { return get_scalar(stmt_root(fr, v), v, v->dt, out); }

static Arr *t_host(void *fr, const Val *v) { return eval(stmt_root(fr, v), v); }

static bool t_effect(void *fr, const Val *v) {
    Arr *a = NULL;
    stmt_root(fr, v);
    bool ok = v->op == OP_CALL ? eval_call(fr, v, &a) : (a = eval(fr, v)) != NULL;
    arr_release(a);
    return ok;
}

static bool t_ret(void *fr, const Val *v) {
    Frame *f = stmt_root(fr, v);
    return !v || (f->ret = eval(f, v)) != NULL;
}

static void t_end(void *fr) { memo_clear(fr); }

static bool t_ret_n(void *fr, int n, Val *const *vs) {
    Frame *f = fr;
    ASSERT(n == f->fn->nres);
    stmt_roots(f, (const Val *const *)vs, n);
    for (int k = 0; k < n; k++)
        if (!(f->rets[k] = eval(f, vs[k]))) return false;
    return true;
}

static bool t_call_n(void *fr, const Val *v, int n, const int *slots) {
    Frame *f = stmt_root(fr, v);
    Arr *res[MAX_RESULTS];
    ASSERT(n == v->fn->nres && n <= MAX_RESULTS);
    if (!eval_call(f, v, res)) return false;
    for (int k = 0; k < n; k++) {
        if (slots[k] >= 0) set_slot(f, slots[k], res[k]);
        else arr_release(res[k]);
    }
    return true;
}

static const Target cpu_target = {t_set, t_set_scalar, t_scalar, t_host, t_effect, t_ret, t_end, t_ret_n, t_call_n, NULL};

/* result: one entry, or fn->nres for a function with several results. */
static bool call_fn(Run *c, const Fn *fn, Arr **args, Arr **result, Loc loc) {
    int nout = fn->nres ? fn->nres : 1;
    for (int k = 0; k < nout; k++) result[k] = NULL;
    bool handled;
    bool hok = host_call(c, fn, args, result, loc, &handled);
    if (handled) return hok;
    if (!run_enter(c, loc, fn)) return false;
    Frame f;
    memset(&f, 0, sizeof f);
    f.c = c;
    f.fn = fn;
    f.ops = (Operands){&f, op_dims, op_i64, c->err};
    size_t nv = fn->nvals > 0 ? (size_t)fn->nvals : 1, ns = fn->nslots > 0 ? (size_t)fn->nslots : 1;
    f.slots = calloc(ns, sizeof(Arr *));
    f.memo = calloc(nv, sizeof(Arr *));
    f.touched = malloc(nv * sizeof(int));
    bool ok = f.slots && f.memo && f.touched;
    if (!ok) rt_error(c->err, loc, "out of memory");
    if (ok) {
        for (int i = 0; i < fn->nparams; i++) f.slots[i] = arr_retain(args[i]);
        ok = walk(c, &cpu_target, &f, fn, fn->body) != WALK_ERROR;
        memo_clear(&f);
        if (fn->nres && ok)
            for (int k = 0; k < fn->nres; k++) ok &= (result[k] = f.rets[k]) != NULL;
        else if (ok) *result = f.ret;
        if (!ok) {
            arr_release(f.ret);
            for (int k = 0; k < fn->nres; k++) {
                arr_release(f.rets[k]);
                result[k] = NULL;
            }
        }
        for (int i = 0; i < fn->nslots; i++) arr_release(f.slots[i]);
    }
    run_leave(c);
    free(f.slots);
    free(f.memo);
    free(f.touched);
    free(f.seen);
    free(f.walk);
    free(f.reds);
    free(f.uses);
    return ok;
}

typedef struct Job {
    const Fn *fn;
    Arr **args, *result[MAX_RESULTS];
    FILE *out;
    RtErr *err;
    Profile *prof;            /* time per statement (cpu_run_profiled), or NULL */
    bool ok;
    atomic_bool stop;         /* the waiting caller was told to stop (run_bind) */
    bool threaded, done;      /* on a thread of its own; finished */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} Job;

/* The run, on the thread that has the stack for it. A broken invariant becomes the
   run's error ("internal error at ..."); what the run held then is not freed. */
static void *run_job(void *arg) {
    Job *j = arg;
    Run r;
    if (j->threaded) run_bind(&j->stop); /* the caller asks the interrupt hook */
    run_init(&r, j->err, j->out);
    r.prof = j->prof;
    HostProgs hp = {0};
    if (!getenv("CUK_NO_HOST_PROGS")) r.host_progs = &hp;
    DieGuard g;
    guard_push(&g);
    if (setjmp(g.jb) == 0) {
        if (die_injected("cpu")) die("injected (CUK_DIE_AT=cpu)");
        j->ok = call_fn(&r, j->fn, j->args, j->result, j->fn->loc);
        guard_pop(&g);
    } else {
        j->ok = false;
        memset(j->result, 0, sizeof j->result);
        rt_error(j->err, j->fn->loc, "%s (this is a bug in cuk; please report it with the program)", g.msg);
    }
    host_progs_free(&hp);
    return NULL;
}

/* Runner threads, with the deep stack (RUN_STACK), kept for the next call: a call hands
   its Job to an idle one, or starts one when none is idle (a thread and its 512 MiB of
   address space cost more than a small call); a runner parks again after the job, up to
   MAX_IDLE of them, and ends beyond; at exit the parked ones end and are joined. A forked
   child forgets its parent's (they are not in it). */
typedef struct Runner {
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    Job *job;
    bool quit; /* at exit: end (runners_shutdown joins it) */
    struct Runner *next;
} Runner;
enum { MAX_IDLE_RUNNERS = 8 };
static pthread_mutex_t runners_mu = PTHREAD_MUTEX_INITIALIZER;
static Runner *idle_runners;
static int n_idle_runners;
static pthread_once_t runners_once = PTHREAD_ONCE_INIT;

static void runners_forget(void) {
    idle_runners = NULL; /* (the child has one thread: the structures leak, harmlessly) */
    n_idle_runners = 0;
    pthread_mutex_init(&runners_mu, NULL);
}
/* At exit the parked runners end and are joined, so that nothing of theirs is left (a
   leak checker would count their stacks); one busy with another thread's call is left
   to the process's end. */
static void runners_shutdown(void) {
    pthread_mutex_lock(&runners_mu);
    Runner *r = idle_runners;
    idle_runners = NULL;
    n_idle_runners = 0;
    pthread_mutex_unlock(&runners_mu);
    while (r) {
        Runner *next = r->next;
        pthread_mutex_lock(&r->mu);
        r->quit = true;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->t, NULL);
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        r = next;
    }
}
static void runners_init(void) {
    pthread_atfork(NULL, NULL, runners_forget);
    atexit(runners_shutdown);
}

/* A threaded job's end, told to its caller (who may then free j and even end the process). */
static void job_done(Job *j) {
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void *runner_main(void *arg) {
    Runner *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (!r->job && !r->quit) pthread_cond_wait(&r->cv, &r->mu);
        if (!r->job) { /* told to end (runners_shutdown) */
            pthread_mutex_unlock(&r->mu);
            return NULL;
        }
        Job *j = r->job;
        r->job = NULL;
        pthread_mutex_unlock(&r->mu);
        run_job(j);
        /* parked before the caller hears of the end: a caller that then ends the process
           finds this runner among the parked ones, which runners_shutdown joins (told
           first, the runner could still be on its way there at exit, its stack left for a
           leak checker to count) */
        pthread_mutex_lock(&runners_mu);
        bool keep = n_idle_runners < MAX_IDLE_RUNNERS;
        if (keep) {
            r->next = idle_runners;
            idle_runners = r;
            n_idle_runners++;
        }
        pthread_mutex_unlock(&runners_mu);
        if (!keep) { /* enough are parked: this one ends, and no one joins it */
            pthread_detach(pthread_self());
            pthread_mutex_destroy(&r->mu);
            pthread_cond_destroy(&r->cv);
            free(r);
            job_done(j);
            return NULL;
        }
        job_done(j); /* r may already have another job: the loop takes it */
    }
}

/* j on a runner thread (true), or false when no thread can be had. */
static bool runner_start(Job *j) {
    pthread_once(&runners_once, runners_init);
    pthread_mutex_lock(&runners_mu);
    Runner *r = idle_runners;
    if (r) {
        idle_runners = r->next;
        n_idle_runners--;
    }
    pthread_mutex_unlock(&runners_mu);
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return false;
        pthread_mutex_init(&r->mu, NULL);
        pthread_cond_init(&r->cv, NULL);
        pthread_attr_t at;
        bool ok = false;
        if (pthread_attr_init(&at) == 0) {
            ok = pthread_attr_setstacksize(&at, RUN_STACK) == 0 && pthread_create(&r->t, &at, runner_main, r) == 0;
            pthread_attr_destroy(&at);
        }
        if (!ok) {
            pthread_mutex_destroy(&r->mu);
            pthread_cond_destroy(&r->cv);
            free(r);
            return false;
        }
    }
    pthread_mutex_lock(&r->mu);
    r->job = j;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return true;
}

bool cpu_run(const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err) {
    return cpu_run_profiled(fn, args, result, out, err, NULL);
}

bool cpu_run_profiled(const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err, Profile *prof) {
    Job j = {.fn = fn, .args = args, .out = out, .err = err, .prof = prof};
    atomic_init(&j.stop, false);
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    rt_err_init(err);
    j.threaded = true;
    if (runner_start(&j)) {
        /* wait, asking the interrupt hook on this (the caller's) thread every 20 ms */
        pthread_mutex_lock(&j.mu);
        while (!j.done) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 20 * 1000000;
            if (dl.tv_nsec >= 1000000000) dl.tv_sec++, dl.tv_nsec -= 1000000000;
            if (pthread_cond_timedwait(&j.cv, &j.mu, &dl) != 0 && !j.done && !atomic_load(&j.stop)) {
                pthread_mutex_unlock(&j.mu);
                if (run_ask_hook()) atomic_store(&j.stop, true);
                pthread_mutex_lock(&j.mu);
            }
        }
        pthread_mutex_unlock(&j.mu);
        if (atomic_load(&j.stop)) run_interrupt_set(); /* for the API: the results are incomplete */
    } else {
        j.threaded = false;
        run_job(&j); /* no thread to be had: the caller's stack, fewer levels; it asks the hook */
    }
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.cv);
    for (int k = 0; k < (fn->nres ? fn->nres : 1); k++) {
        if (result) result[k] = j.result[k];
        else arr_release(j.result[k]);
    }
    return j.ok;
}
