/* 16-byte vectorised loads and stores for the emitted fast paths (compiler/emit_cuda.c):
   V consecutive elements of one array moved by one instruction (LDG.128/STG.128 when
   V * sizeof(T) is 16), so a warp's access is 512 contiguous bytes. */
#ifndef CUK_VEC_CUH
#define CUK_VEC_CUH

typedef struct __align__(16) cuk_u32x4_raw { unsigned int a, b, c, d; } cuk_u32x4_raw;
typedef struct __align__(8) cuk_u32x2_raw { unsigned int a, b; } cuk_u32x2_raw;

/* The raw word type of B bytes. */
template <int B> struct cuk_raw_t;
template <> struct cuk_raw_t<16> { typedef cuk_u32x4_raw t; };
template <> struct cuk_raw_t<8> { typedef cuk_u32x2_raw t; };
template <> struct cuk_raw_t<4> { typedef unsigned int t; };
template <> struct cuk_raw_t<2> { typedef unsigned short t; };
template <> struct cuk_raw_t<1> { typedef unsigned char t; };

template <class T, int V> struct alignas(sizeof(T) * V) cuk_vec {
    T x[V];
};

/* p + i must be aligned to V elements (the kernels check the base pointers at run time
   and only take the vector path when i is a multiple of V). */
template <class T, int V> static __device__ __forceinline__ cuk_vec<T, V> cuk_ldv(const void *p, long long i) {
    typedef typename cuk_raw_t<sizeof(T) * V>::t R;
    union {
        R r;
        cuk_vec<T, V> v;
    } u;
    u.r = *((const R *)((const T *)p + i));
    return u.v;
}

template <class T, int V> static __device__ __forceinline__ void cuk_stv(void *p, long long i, const cuk_vec<T, V> &v) {
    typedef typename cuk_raw_t<sizeof(T) * V>::t R;
    union {
        R r;
        cuk_vec<T, V> v;
    } u;
    u.v = v;
    *((R *)((T *)p + i)) = u.r;
}

/* Float to integer as the CPU backend converts (exec/cpu/eval.c, sat_s/sat_u):
   truncate toward zero, saturate at the type's range, NaN -> 0. A bare cast leaves
   NaN and out-of-range values to the hardware's conversion, which differs. */
template <class T> static __device__ __forceinline__ T cuk_f2i(double x) {
    const bool sgn = (T)-1 < (T)0;
    const int bits = 8 * (int)sizeof(T) - (sgn ? 1 : 0);
    const double hi = bits == 64 ? 18446744073709551616.0 : (double)(1ull << bits); /* 2^bits */
    if (x != x) return (T)0;
    if (!sgn && x <= 0.0) return (T)0;
    if (x >= hi) return (T)~(T)0 > (T)0 ? (T)~(T)0 : (T)((~0ull) >> (65 - 8 * sizeof(T)));
    if (sgn && x <= -hi) return (T)(1ull << (8 * sizeof(T) - 1));
    return (T)x;
}

/* r % s, leaving r / s in r (r >= 0, s > 0): a multi-index from a flat offset. In 32
   bits when both fit, where a 64-bit division is a long software routine (the 5-point
   stencil over pad(x, 1) did 16 of them per element and ran at 12% of copy). */
static __device__ __forceinline__ long long cuk_divmod(long long &r, long long s) {
    if ((((unsigned long long)r) | ((unsigned long long)s)) <= 0xffffffffull) {
        const unsigned q = (unsigned)r / (unsigned)s;
        const long long m = (long long)((unsigned)r - q * (unsigned)s);
        r = q;
        return m;
    }
    const long long q = r / s;
    const long long m = r - q * s;
    r = q;
    return m;
}

/* The same in 32-bit index arithmetic (kernels whose every index fits: KFLAT_IX32). */
static __device__ __forceinline__ int cuk_divmod(int &r, int s) {
    const unsigned q = (unsigned)r / (unsigned)s;
    const int m = (int)((unsigned)r - q * (unsigned)s);
    r = (int)q;
    return m;
}

/* Whether a device address is 16-byte aligned (so every vector width divides it). */
static __device__ __forceinline__ int cuk_al16(long long p) { return (p & 15) == 0; }

#endif
