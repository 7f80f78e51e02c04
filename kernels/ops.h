/* Scalar helpers used by the op table's expressions (compiler/ir.h), valid both as C11
   (CPU backend, type-generic through _Generic) and as CUDA C (NVRTC, overloads). They
   give integer ops defined results where C leaves them undefined. */
#ifndef CUK_OPS_H
#define CUK_OPS_H

#ifdef __CUDACC_RTC__
#define CUK_FN static __device__ __forceinline__
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define INFINITY __int_as_float(0x7f800000)
#else
#include <math.h>
#include <stdint.h>
#define CUK_FN static inline
#endif

/* Axis reductions along the last axis (emit_cuda.c emit_axis_reduce, kernel.c
   kernel_geometry): the threads that share a row of len elements, 1, 8 or 32 lanes of
   a warp, or the whole block for rows of 1024 and more. */
CUK_FN int cuk_red_group(int64_t len, int block) { return len >= 1024 ? block : len >= 32 ? 32 : len >= 8 ? 8 : 1; }

/* Integer helpers: x/0 = 0, x%0 = 0, MIN/-1 wraps, shifts past the width give 0 (or the
   sign for >> of a negative), negative powers truncate toward zero. */
#define CUK_INT_HELPERS(S, T, U, SIGNED, BITS)                                          \
    CUK_FN T cuk_idiv_##S(T a, T b) {                                                   \
        if (b == 0) return 0;                                                           \
        if (SIGNED && b == (T)-1) return (T)(0u - (U)a);                                \
        return (T)(a / b);                                                              \
    }                                                                                   \
    CUK_FN T cuk_imod_##S(T a, T b) {                                                   \
        if (b == 0 || (SIGNED && b == (T)-1)) return 0;                                 \
        return (T)(a % b);                                                              \
    }                                                                                   \
    CUK_FN T cuk_iabs_##S(T a) { return (SIGNED && a < (T)0) ? (T)(0u - (U)a) : a; }    \
    CUK_FN T cuk_shl_##S(T a, T b) {                                                    \
        if (b < (T)0 || b >= (T)(BITS)) return 0;                                       \
        return (T)((U)a << b);                                                          \
    }                                                                                   \
    CUK_FN T cuk_shr_##S(T a, T b) {                                                    \
        if (b < (T)0 || b >= (T)(BITS)) return (SIGNED && a < (T)0) ? (T)-1 : (T)0;     \
        return (T)(a >> b);                                                             \
    }                                                                                   \
    CUK_FN T cuk_ipow_##S(T a, T b) {                                                   \
        if (b < (T)0) return a == 1 ? 1 : (SIGNED && a == (T)-1) ? ((b & 1) ? a : 1) : 0; \
        U r = 1, x = (U)a;                                                              \
        while (b) {                                                                     \
            if (b & 1) r *= x;                                                          \
            x *= x;                                                                     \
            b = (T)((U)b >> 1);                                                         \
        }                                                                               \
        return (T)r;                                                                    \
    }

CUK_INT_HELPERS(i32, int32_t, uint32_t, 1, 32)
CUK_INT_HELPERS(i64, int64_t, uint64_t, 1, 64)
CUK_INT_HELPERS(u32, uint32_t, uint32_t, 0, 32)
CUK_INT_HELPERS(u64, uint64_t, uint64_t, 0, 64)
CUK_INT_HELPERS(b, uint8_t, uint8_t, 0, 8)

/* NaN-propagating minimum/maximum, as NumPy's minimum/maximum. */
CUK_FN float cuk_fminf(float a, float b) { return (a != a || a < b) ? a : b; }
CUK_FN float cuk_fmaxf(float a, float b) { return (a != a || a > b) ? a : b; }
CUK_FN double cuk_fmin(double a, double b) { return (a != a || a < b) ? a : b; }
CUK_FN double cuk_fmax(double a, double b) { return (a != a || a > b) ? a : b; }

/* a * b + c rounded twice (NumPy's linspace, whose edges histogram() compares with):
   NVRTC would otherwise contract it into one fma. */
#ifdef __CUDACC_RTC__
CUK_FN float cuk_hedgef(float a, float b, float c) { return __fadd_rn(__fmul_rn(a, b), c); }
CUK_FN double cuk_hedge(double a, double b, double c) { return __dadd_rn(__dmul_rn(a, b), c); }
#else
CUK_FN float cuk_hedgef(float a, float b, float c) {
    volatile float t = a * b;
    return t + c;
}
CUK_FN double cuk_hedge(double a, double b, double c) {
    volatile double t = a * b;
    return t + c;
}
#endif

/* histogram()'s bin of x (OP_HBIN): NumPy's bins exactly, cheaply. The edges are
   edge(i) = T(i * step + lo) for i < n, computed in f64 as NumPy's linspace and rounded to
   x's type (T), and hiT for i = n; they never decrease (rounding is monotone), and
   edge(0) = loT. The bin of x in [loT, hiT] is the largest b < n with edge(b) <= x (so
   the last bin is closed), -1 outside or for NaN. That is what np.histogram gives: its
   guess from the scale, moved by one where it disagrees with the edges, lands there
   whenever the guess is at most one bin off.
   Here the guess is (x - loT) * norm in T itself (norm = T(n / (hi - lo))): one T
   subtract, one multiply and one conversion, no f64 on the way. Its error is a few
   units in the last place of T relative to the bin number plus the edges' own rounding
   (half a unit of the ends), so with f32 it is at most one bin off while
   n * 2^-22 * (1 + max(|lo|, |hi|) / (hi - lo)) < 1, which covers 1024 bins over any
   range not narrower than ~1/4000 of its distance from 0. Beyond that (very many bins,
   or narrow ranges far from 0) the guess may be further off, and a bisection over the
   edges below or above the guess finds the bin anyway: the result never depends on the
   guess, only the work does. A guess within one costs two edges, edge(g) and
   edge(g + 1) (three when it is one too low). tab, where not NULL, holds edge(0 .. n-1)
   (a hist kernel's shared memory); else each edge is computed (one i64 -> f64, an
   unfused multiply and add in f64, one f64 -> T).
   Most values lie well inside their bin and need no edge at all: where the guess's
   fraction f - g is at least cuk_hbin_margin from 0 and from 1, no edge can fall
   between x and the guessed bin's interior. The margin bounds both errors in bin
   units: the guess's three roundings (u = half a unit in the last place of T) give at
   most 3.01 u n, the edges' rounding u max(|lo|, |hi|) times norm, and the error of loT
   as much again; the margin is twice their sum, 8 u n + 4 u M norm (about 2e-4 for 256
   bins over [0, 1] in f32, so 1 value in 2500 looks at an edge). Where it reaches 1/4,
   or is not finite, the edges always decide. */
#define CUK_HBIN(S, T)                                                                           \
    CUK_FN T cuk_hedge_##S(int64_t i, double step, double lo) { return (T)cuk_hedge((double)i, step, lo); } \
    CUK_FN T cuk_hbin_margin_##S(int64_t n, T loT, T hiT, T norm) {                              \
        const T u = sizeof(T) == 4 ? (T)5.9604644775390625e-08 : (T)1.1102230246251565e-16;      \
        const T al = loT < (T)0 ? -loT : loT, ah = hiT < (T)0 ? -hiT : hiT;                      \
        const T m = (T)8 * u * (T)n + (T)4 * u * (al > ah ? al : ah) * norm;                     \
        return m < (T)0.25 ? m : (T)2; /* NaN, inf: 2, so no fraction passes */                \
    }                                                                                            \
    CUK_FN int64_t cuk_hbin_##S(T x, int64_t n, double lo, double step, T loT, T hiT, T norm,        \
                                const T *tab) {                                                  \
        if (!(x >= loT && x <= hiT)) return -1; /* NaN too */                                    \
        const T f = (x - loT) * norm;           /* inf or NaN for extreme ranges: clamped */     \
        int64_t g = 0, a, b;                                                                     \
        const int n32 = n <= 0x7fffffff; /* 32-bit conversions, cheaper on the GPU */           \
        if (f > (T)0) g = f < (T)(n - 1) ? (n32 ? (int64_t)(int32_t)f : (int64_t)f) : n - 1;    \
        {                                                                                        \
            const T fr = f - (n32 ? (T)(int32_t)g : (T)g), m = cuk_hbin_margin_##S(n, loT, hiT, norm); \
            if (fr >= m && fr <= (T)1 - m) return g;                                             \
        }                                                                                        \
        if (x < (tab ? tab[g] : cuk_hedge_##S(g, step, lo))) { /* g > 0: edge(0) = loT <= x */    \
            if (x >= (tab ? tab[g - 1] : cuk_hedge_##S(g - 1, step, lo))) return g - 1;           \
            a = 0, b = g - 2; /* edge(0) <= x < edge(g - 1) */                                   \
        } else {                                                                                 \
            if (g == n - 1 || x < (tab ? tab[g + 1] : cuk_hedge_##S(g + 1, step, lo))) return g;  \
            if (g + 1 == n - 1 || x < (tab ? tab[g + 2] : cuk_hedge_##S(g + 2, step, lo)))        \
                return g + 1;                                                                    \
            a = g + 2, b = n - 1; /* edge(g + 2) <= x */                                         \
        }                                                                                        \
        while (a < b) { /* edge(a) <= x; the bin is in [a, b] */                                 \
            const int64_t m = a + (b - a + 1) / 2;                                               \
            if (x >= (tab ? tab[m] : cuk_hedge_##S(m, step, lo))) a = m;                          \
            else b = m - 1;                                                                      \
        }                                                                                        \
        return a;                                                                                \
    }
CUK_HBIN(f32, float)
CUK_HBIN(f64, double)

#ifdef __CUDACC_RTC__
#define CUK_OVERLOADS(NAME)                                                              \
    CUK_FN int32_t NAME(int32_t a, int32_t b) { return NAME##_i32(a, b); }               \
    CUK_FN int64_t NAME(int64_t a, int64_t b) { return NAME##_i64(a, b); }               \
    CUK_FN uint32_t NAME(uint32_t a, uint32_t b) { return NAME##_u32(a, b); }            \
    CUK_FN uint64_t NAME(uint64_t a, uint64_t b) { return NAME##_u64(a, b); }            \
    CUK_FN uint8_t NAME(uint8_t a, uint8_t b) { return NAME##_b(a, b); }
CUK_OVERLOADS(cuk_idiv)
CUK_OVERLOADS(cuk_imod)
CUK_OVERLOADS(cuk_shl)
CUK_OVERLOADS(cuk_shr)
CUK_OVERLOADS(cuk_ipow)
CUK_FN int32_t cuk_iabs(int32_t a) { return cuk_iabs_i32(a); }
CUK_FN int64_t cuk_iabs(int64_t a) { return cuk_iabs_i64(a); }
CUK_FN uint32_t cuk_iabs(uint32_t a) { return a; }
CUK_FN uint64_t cuk_iabs(uint64_t a) { return a; }
CUK_FN uint8_t cuk_iabs(uint8_t a) { return a; }
#else
#define CUK_GENERIC(NAME, a)                                                             \
    _Generic((a), int32_t: NAME##_i32, int64_t: NAME##_i64, uint32_t: NAME##_u32,        \
             uint64_t: NAME##_u64, uint8_t: NAME##_b)
#define cuk_idiv(a, b) CUK_GENERIC(cuk_idiv, a)(a, b)
#define cuk_imod(a, b) CUK_GENERIC(cuk_imod, a)(a, b)
#define cuk_shl(a, b) CUK_GENERIC(cuk_shl, a)(a, b)
#define cuk_shr(a, b) CUK_GENERIC(cuk_shr, a)(a, b)
#define cuk_ipow(a, b) CUK_GENERIC(cuk_ipow, a)(a, b)
#define cuk_iabs(a) CUK_GENERIC(cuk_iabs, a)(a)
#endif


/* The 16-bit floats (f16: IEEE binary16; bf16: the top half of an f32), stored as their
   bits. They are storage types: the IR computes on them in f32 (compiler/widen.c), so
   what both backends need is conversion, the same bits on both. From a double the
   rounding is one round-to-nearest-even; f32 and integers of up to 53 bits convert to
   double exactly, and wider integers go through cuk_i2d_odd (round to odd), after
   which the rounding to 11 or 8 bits is still correct. Every NaN becomes the quiet NaN. */
CUK_FN double cuk_u2d_odd(uint64_t v) {
    if (v < (1ull << 53)) return (double)v;
    int s = 0;
    while ((v >> s) >= (1ull << 53)) s++;
    uint64_t m = v >> s;
    if (v & ((1ull << s) - 1)) m |= 1; /* sticky: odd when bits were lost */
    return (double)m * (double)(1ull << s);
}
CUK_FN double cuk_i2d_odd(int64_t v) {
    return v < 0 ? -cuk_u2d_odd(0ull - (uint64_t)v) : cuk_u2d_odd((uint64_t)v);
}
CUK_FN uint64_t cuk_dbits(double x) {
#ifdef __CUDACC_RTC__
    return (uint64_t)__double_as_longlong(x);
#else
    union { double d; uint64_t u; } u = {x};
    return u.u;
#endif
}
/* x rounded to a float of mb mantissa and eb exponent bits (1 + eb + mb = 16). */
CUK_FN uint16_t cuk_d2narrow(double x, int mb, int eb) {
    const uint64_t b = cuk_dbits(x);
    const uint16_t sign = (uint16_t)((b >> 63) << 15);
    const int ex = (int)((b >> 52) & 0x7ff);
    const uint64_t man = b & ((1ull << 52) - 1);
    const int emax = (1 << eb) - 1, bias = (1 << (eb - 1)) - 1;
    if (ex == 0x7ff) /* inf; NaN becomes the quiet NaN (0x7e00, 0x7fc0), the same on the GPU, whose
                        conversions drop NaNs' signs and payloads */
        return man ? (uint16_t)((emax << mb) | (1u << (mb - 1))) : (uint16_t)(sign | (emax << mb));
    if (ex == 0) return sign; /* zero, and doubles far below either type's subnormals */
    const int e = ex - 1023 + bias; /* the target's biased exponent */
    if (e >= emax) return (uint16_t)(sign | (emax << mb));
    const uint64_t m = man | (1ull << 52);
    const int sh = 52 - mb + (e < 1 ? 1 - e : 0);
    if (sh >= 64) return sign;
    const uint64_t keep = m >> sh, rem = m & ((1ull << sh) - 1), half = 1ull << (sh - 1);
    uint32_t r = e < 1 ? (uint32_t)keep : ((uint32_t)e << mb) | (uint32_t)(keep & ((1ull << mb) - 1));
    if (rem > half || (rem == half && (keep & 1))) r++; /* a carry moves up the exponent, to inf */
    return (uint16_t)(sign | r);
}
CUK_FN uint16_t cuk_d2h(double x) { return cuk_d2narrow(x, 10, 5); }
CUK_FN uint16_t cuk_d2bf(double x) { return cuk_d2narrow(x, 7, 8); }
CUK_FN float cuk_bf2f(uint16_t h) {
#ifdef __CUDACC_RTC__
    return __uint_as_float((unsigned)h << 16);
#else
    union { uint32_t u; float f; } u = {(uint32_t)h << 16};
    return u.f;
#endif
}
CUK_FN float cuk_h2f_soft(uint16_t h) {
    const int ex = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (ex == 0x1f) v = man ? cuk_bf2f(0x7fc0) : INFINITY;
    else if (ex == 0) v = (float)man * 5.9604644775390625e-08f; /* 2^-24 */
    else v = (float)(man | 0x400) * (ex >= 25 ? (float)(1u << (ex - 25)) : 1.0f / (float)(1u << (25 - ex)));
    return (h & 0x8000) ? -v : v;
}
#ifdef __CUDACC_RTC__
CUK_FN float cuk_h2f(uint16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
CUK_FN uint16_t cuk_f2h(float x) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return x != x ? (uint16_t)0x7e00 : h; /* NaN: the quiet NaN, as the CPU's (cuk_d2narrow) */
}
CUK_FN uint16_t cuk_f2bf(float x) {
#if __CUDA_ARCH__ >= 800
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return x != x ? (uint16_t)0x7fc0 : h;
#else
    return cuk_d2bf((double)x);
#endif
}
/* The storage types in kernels: built from any number (rounded once, as above), turned
   into a number only explicitly, and with no arithmetic, so an op the widening pass
   missed is a compile error, not a silent loss of precision. */
#define CUK_NARROW_FLOAT(N, TOF, FROMF, FROMD)                                          \
    struct N {                                                                          \
        unsigned short bits;                                                            \
        N() = default;                                                                  \
        __device__ N(float x) : bits(FROMF(x)) {}                                       \
        __device__ N(double x) : bits(FROMD(x)) {}                                      \
        __device__ N(int x) : bits(FROMD((double)x)) {}                                 \
        __device__ N(long long x) : bits(FROMD(cuk_i2d_odd(x))) {}                      \
        __device__ N(unsigned long long x) : bits(FROMD(cuk_u2d_odd(x))) {}             \
        __device__ N(unsigned x) : bits(FROMD((double)x)) {}                            \
        __device__ N(short x) : bits(FROMF((float)x)) {}                                \
        __device__ N(unsigned short x) : bits(FROMF((float)x)) {}                       \
        __device__ N(signed char x) : bits(FROMF((float)x)) {}                          \
        __device__ N(unsigned char x) : bits(FROMF((float)x)) {}                        \
        __device__ explicit operator float() const { return TOF(bits); }                \
        __device__ explicit operator double() const { return (double)TOF(bits); }       \
    };
CUK_NARROW_FLOAT(cuk_f16, cuk_h2f, cuk_f2h, cuk_d2h)
CUK_NARROW_FLOAT(cuk_bf16, cuk_bf2f, cuk_f2bf, cuk_d2bf)
/* The complex types in kernels: storage and the parts (compiler/widen.c does the math). */
struct cuk_c64 {
    float re, im;
    cuk_c64() = default;
    __device__ cuk_c64(float r, float i) : re(r), im(i) {}
    __device__ cuk_c64(int zero) : re((float)zero), im(0.0f) {} /* (T)0 */
};
struct cuk_c128 {
    double re, im;
    cuk_c128() = default;
    __device__ cuk_c128(double r, double i) : re(r), im(i) {}
    __device__ cuk_c128(int zero) : re((double)zero), im(0.0) {}
};
CUK_FN cuk_f16 cuk_f16_of(unsigned short b) { cuk_f16 h; h.bits = b; return h; }
CUK_FN cuk_bf16 cuk_bf16_of(unsigned short b) { cuk_bf16 h; h.bits = b; return h; }
#else
CUK_FN float cuk_h2f(uint16_t h) { return cuk_h2f_soft(h); }
CUK_FN uint16_t cuk_f2h(float x) { return cuk_d2h((double)x); }
CUK_FN uint16_t cuk_f2bf(float x) { return cuk_d2bf((double)x); }
#endif

#endif
