/* Philox4x32-10 counter-based random numbers (Salmon et al., SC'11), shared by the CPU
   backend (C11) and the emitted CUDA, so both give the same values for the same seed.
   Every word of every call is used: with key (lo(s), hi(s)), the call on counter c
   gives f32 uniforms 4c .. 4c + 3 (one word each), f64 uniforms 2c and 2c + 1 (two
   words each), and normals 4c .. 4c + 3 (Box-Muller on the word pairs (x0, x1) and
   (x2, x3), each pair giving its cosine and its sine). A kernel that writes
   consecutive elements in 16-byte vectors computes one call per vector: after
   unrolling, the elements' counters are the same expression, which NVRTC computes
   once. */
#ifndef CUK_PHILOX_H
#define CUK_PHILOX_H
#ifndef CUK_FN
#include "ops.h"
#endif

typedef struct cuk_u32x4 {
    uint32_t x[4];
} cuk_u32x4;

CUK_FN void cuk_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
#ifdef __CUDACC_RTC__
    *hi = __umulhi(a, b); /* one IMAD.HI; the 64-bit product was a 64-bit multiply */
    *lo = a * b;
#else
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
#endif
}

CUK_FN cuk_u32x4 cuk_philox(uint64_t counter, uint64_t seed) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, lo0, hi1, lo1;
        cuk_mulhilo(0xD2511F53u, c0, &hi0, &lo0);
        cuk_mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    cuk_u32x4 r;
    r.x[0] = c0; r.x[1] = c1; r.x[2] = c2; r.x[3] = c3;
    return r;
}

/* Word j (0..3) of r, by selects (a dynamic index would put r in local memory). */
CUK_FN uint32_t cuk_word(cuk_u32x4 r, uint64_t j) {
    return (j & 2) ? ((j & 1) ? r.x[3] : r.x[2]) : ((j & 1) ? r.x[1] : r.x[0]);
}

/* Uniform in [0, 1): 24 random bits for f32, 53 for f64. The _of forms take the
   Philox call's words (r = cuk_philox(i >> 2, seed), for f64 i >> 1), so that a loop over
   consecutive elements makes one call per 4 (f64: 2) of them. */
CUK_FN float cuk_rand_f32_of(cuk_u32x4 r, uint64_t i) {
    return (float)(cuk_word(r, i) >> 8) * (1.0f / 16777216.0f);
}
CUK_FN float cuk_rand_f32(uint64_t i, uint64_t seed) { return cuk_rand_f32_of(cuk_philox(i >> 2, seed), i); }
CUK_FN double cuk_rand_f64_of(cuk_u32x4 r, uint64_t i) {
    const uint64_t j = (i & 1) * 2;
    uint64_t m = ((uint64_t)cuk_word(r, j) << 21) ^ (uint64_t)(cuk_word(r, j + 1) >> 11);
    return (double)m * (1.0 / 9007199254740992.0);
}
CUK_FN double cuk_rand_f64(uint64_t i, uint64_t seed) { return cuk_rand_f64_of(cuk_philox(i >> 1, seed), i); }
/* Standard normal by Box-Muller on two independent words, bit-identical on the CPU and
   the GPU (and in tests/python/philox.py): only IEEE-exact operations (+ - * / sqrt,
   integer and bit manipulation), with log and cos written out here rather than taken
   from libm or CUDA's math library (which differ by an ulp). In CUDA the __d*_rn
   intrinsics keep NVRTC from contracting a multiply and an add into an FMA; C11 (gcc
   -std=c11 on x86-64) does not contract. Accuracy: a few ulp of the exact transform. */
#ifdef __CUDACC_RTC__
#define CUK_DMUL(a, b) __dmul_rn(a, b)
#define CUK_DADD(a, b) __dadd_rn(a, b)
#define CUK_DSUB(a, b) __dsub_rn(a, b)
#define CUK_DDIV(a, b) __ddiv_rn(a, b)
#define CUK_DSQRT(a) __dsqrt_rn(a)
#else
#define CUK_DMUL(a, b) ((a) * (b))
#define CUK_DADD(a, b) ((a) + (b))
#define CUK_DSUB(a, b) ((a) - (b))
#define CUK_DDIV(a, b) ((a) / (b))
#define CUK_DSQRT(a) sqrt(a)
#endif

/* -2 * log(k / 2^32) for an integer k in [1, 2^32]: k = m * 2^e with m in [sqrt(1/2),
   sqrt(2)), log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series to
   s^25; e * ln 2 with ln 2 split so that e * LN2_HI is exact. */
CUK_FN double cuk_m2log_u32(uint64_t k) {
#ifdef __CUDACC_RTC__
    int e = 63 - __clzll((long long)k); /* k >= 1: e = floor(log2(k)), 0..32 */
#elif defined(__GNUC__)
    int e = 63 - __builtin_clzll(k); /* the loop below was a third of a CPU randn's time */
#else
    int e = 63;
    while (!(k >> e)) e--;
#endif
    /* m = k / 2^e, exact: k < 2^53 and a power-of-two scale (a multiply by 2^-e is the
       same exact value as the division, and much cheaper on the GPU) */
    union {
        uint64_t u;
        double d;
    } p2 = {(uint64_t)(1023 - e) << 52}; /* 2^-e */
    double m = CUK_DMUL((double)k, p2.d);
    if (m > 1.4142135623730951) {
        m = CUK_DMUL(m, 0.5);
        e++;
    }
    const double s = CUK_DDIV(CUK_DSUB(m, 1.0), CUK_DADD(m, 1.0)), z = CUK_DMUL(s, s);
    double p = 0.08;
    p = CUK_DADD(CUK_DMUL(p, z), 0.08695652173913043);
    p = CUK_DADD(CUK_DMUL(p, z), 0.09523809523809523);
    p = CUK_DADD(CUK_DMUL(p, z), 0.10526315789473684);
    p = CUK_DADD(CUK_DMUL(p, z), 0.11764705882352941);
    p = CUK_DADD(CUK_DMUL(p, z), 0.13333333333333333);
    p = CUK_DADD(CUK_DMUL(p, z), 0.15384615384615385);
    p = CUK_DADD(CUK_DMUL(p, z), 0.18181818181818182);
    p = CUK_DADD(CUK_DMUL(p, z), 0.2222222222222222);
    p = CUK_DADD(CUK_DMUL(p, z), 0.2857142857142857);
    p = CUK_DADD(CUK_DMUL(p, z), 0.4);
    p = CUK_DADD(CUK_DMUL(p, z), 0.6666666666666666);
    /* log(m) = 2 s + s z p: the leading term kept apart for accuracy */
    const double lm = CUK_DADD(CUK_DMUL(2.0, s), CUK_DMUL(CUK_DMUL(s, z), p));
    const double ef = (double)(e - 32);
    /* log(k / 2^32) = ef * ln2 + log(m) */
    const double l = CUK_DADD(CUK_DMUL(ef, 6.93147180369123816490e-01), CUK_DADD(CUK_DMUL(ef, 1.90821492927058770002e-10), lm));
    return CUK_DMUL(l, -2.0);
}

/* sin(x) and cos(x) for x in [0, 7 pi / 16], Taylor series (the truncation is below
   1e-16 there; 1e-19 on [0, pi/4]). */
CUK_FN double cuk_sin_q(double x) {
    const double z = CUK_DMUL(x, x);
    double p = -8.22063524662433e-18;
    p = CUK_DADD(CUK_DMUL(p, z), 2.8114572543455206e-15);
    p = CUK_DADD(CUK_DMUL(p, z), -7.647163731819816e-13);
    p = CUK_DADD(CUK_DMUL(p, z), 1.6059043836821613e-10);
    p = CUK_DADD(CUK_DMUL(p, z), -2.505210838544172e-08);
    p = CUK_DADD(CUK_DMUL(p, z), 2.7557319223985893e-06);
    p = CUK_DADD(CUK_DMUL(p, z), -0.0001984126984126984);
    p = CUK_DADD(CUK_DMUL(p, z), 0.008333333333333333);
    p = CUK_DADD(CUK_DMUL(p, z), -0.16666666666666666);
    return CUK_DADD(x, CUK_DMUL(CUK_DMUL(x, z), p));
}
CUK_FN double cuk_cos_q(double x) {
    const double z = CUK_DMUL(x, x);
    double p = 4.110317623312165e-19;
    p = CUK_DADD(CUK_DMUL(p, z), -1.5619206968586225e-16);
    p = CUK_DADD(CUK_DMUL(p, z), 4.779477332387385e-14);
    p = CUK_DADD(CUK_DMUL(p, z), -1.1470745597729725e-11);
    p = CUK_DADD(CUK_DMUL(p, z), 2.08767569878681e-09);
    p = CUK_DADD(CUK_DMUL(p, z), -2.755731922398589e-07);
    p = CUK_DADD(CUK_DMUL(p, z), 2.48015873015873e-05);
    p = CUK_DADD(CUK_DMUL(p, z), -0.001388888888888889);
    p = CUK_DADD(CUK_DMUL(p, z), 0.041666666666666664);
    p = CUK_DADD(CUK_DMUL(p, z), -0.5);
    return CUK_DADD(1.0, CUK_DMUL(z, p));
}

/* The angle 2 pi w / 2^32 by quadrant: *q from the top two bits, *hi when the angle in
   the quadrant (the low 30 bits, f) is past `at`; the result is the angle folded back
   there (2^30 - f past it), all exact integer arithmetic. The quadrant's cosine is the
   folded angle's cosine where *hi equals the quadrant's parity, else its sine, negated
   in quadrants 1 and 2. */
CUK_FN uint32_t cuk_fold_u32(uint32_t w, uint32_t at, uint32_t *q, int *hi) {
    const uint32_t f = w & 0x3FFFFFFFu;
    *q = w >> 30;
    *hi = f > at;
    return *hi ? (1u << 30) - f : f;
}

/* cos(2 pi w / 2^32) for a 32-bit w: the quadrant from the top two bits, then the
   angle folded exactly (integer arithmetic on the low 30 bits). The fold is at 2^27 of
   the quadrant's 2^30 (pi/16, not pi/4 as first meant), so x lies in [0, 7 pi / 16];
   the series above are long enough there (truncation below 1e-16) and are kept as
   they are, since the f64 stream is fixed by them. */
CUK_FN double cuk_cos2pi_u32(uint32_t w) {
    uint32_t q;
    int hi;
    const uint32_t h = cuk_fold_u32(w, 1u << 27, &q, &hi);
    const double x = CUK_DMUL((double)h, 1.4629180792671596e-09); /* 2 pi / 2^32 */
    /* q even wants cos(2 pi f), odd sin(2 pi f); folding swaps sin and cos */
    const double r = ((q & 1) == 0) != (hi != 0) ? cuk_cos_q(x) : cuk_sin_q(x);
    return (q == 1 || q == 2) ? -r : r;
}

CUK_FN double cuk_randn_f64_of(cuk_u32x4 r, uint64_t i) {
    const uint64_t j = i & 2; /* the pair (x_j, x_j+1) */
    const double rad = CUK_DSQRT(cuk_m2log_u32((uint64_t)cuk_word(r, j) + 1)); /* u1 = (x_j + 1) / 2^32 in (0, 1] */
    /* u2 = x_j+1 / 2^32 in [0, 1); the odd element takes sin(2 pi u2) = cos(2 pi (u2 - 1/4)) */
    const uint32_t w = cuk_word(r, j + 1) - ((i & 1) ? (1u << 30) : 0u);
    return CUK_DMUL(rad, cuk_cos2pi_u32(w));
}
CUK_FN double cuk_randn_f64(uint64_t i, uint64_t seed) { return cuk_randn_f64_of(cuk_philox(i >> 2, seed), i); }

/* The f32 normal: the same transform in single precision (a double-precision
   Box-Muller was 0.26x torch.randn's speed: FP64 issue, not memory), still only
   IEEE-exact operations so that both backends and tests/python/philox.py agree bit for
   bit; series long enough that the truncation is below 2^-26 of the result. */
#ifdef __CUDACC_RTC__
#define CUK_FMUL(a, b) __fmul_rn(a, b)
#define CUK_FADD(a, b) __fadd_rn(a, b)
#define CUK_FSUB(a, b) __fsub_rn(a, b)
#define CUK_FDIV(a, b) __fdiv_rn(a, b)
#define CUK_FSQRT(a) __fsqrt_rn(a)
#else
#define CUK_FMUL(a, b) ((a) * (b))
#define CUK_FADD(a, b) ((a) + (b))
#define CUK_FSUB(a, b) ((a) - (b))
#define CUK_FDIV(a, b) ((a) / (b))
#define CUK_FSQRT(a) sqrtf(a)
#endif

/* sqrt(-2 log(u)) in float for u = (w + 1) / 2^32, w a 32-bit word: k = w + 1 = m * 2^e with m
   in [sqrt(1/2), sqrt(2)) (e from the top bits; the fold tested on k's top 24 bits),
   log(m) = 2 s (1 + z / 3 + z^2 / 5 + z^3 / 7 + z^4 / 9), z = s^2 < 0.03, and s = (m - 1)
   / (m + 1) = (k - 2^e) / (k + 2^e) from the exact integers (m - 1 from a rounded m lost
   the low bits of k that matter when u is near 1), each rounded to float once.
   In 32-bit integers (64-bit ones, a 64-bit count of leading zeros and 64-bit
   conversions were a fifth of the GPU kernel's instructions): k - 2^e always fits an
   int32 (|k - 2^e| < 0.42 * 2^31); k + 2^e fits a uint32 for e <= 30, and past that it
   is >= 2^31, so its float is twice the float of its half with the dropped bit kept as
   a sticky bit (below float's 24 bits there, it rounds the same). k = 2^32 (w all ones)
   is log 1: -0.0, as -2 * +0 gives, whose square root is -0.0. Integer-to-float
   conversions round to nearest on every backend. The result is the square root: the
   Box-Muller radius. */
CUK_FN float cuk_rad_u32_f(uint32_t w) {
    const uint32_t k = w == 0xFFFFFFFFu ? 1u : w + 1; /* k = 2^32 is answered below */
#ifdef __CUDACC_RTC__
    int e = 31 - __clz((int)k);
#elif defined(__GNUC__)
    int e = 31 - __builtin_clz(k);
#else
    int e = 31;
    while (!(k >> e)) e--;
#endif
    const uint32_t top = e >= 23 ? k >> (e - 23) : k << (23 - e); /* 1.xxx in 24 bits */
    if (top > 11863283u) e++; /* k / 2^e > sqrt(2) (11863283 = floor(sqrt(2) * 2^23)) */
    const uint32_t p2 = e < 32 ? 1u << e : 0u; /* 2^e mod 2^32 */
    const float d = (float)(int32_t)(k - p2);
    const int h = e >= 31; /* k + 2^e >= 2^31: halve it, keeping the dropped bit */
    const uint32_t y = ((k >> h) + (1u << (e - h))) | (k & (uint32_t)h);
    const float t = CUK_FMUL((float)y, h ? 2.0f : 1.0f);
    const float s = CUK_FDIV(d, t), z = CUK_FMUL(s, s);
    float p = 0.222222224f;
    p = CUK_FADD(CUK_FMUL(p, z), 0.285714298f);
    p = CUK_FADD(CUK_FMUL(p, z), 0.400000006f);
    p = CUK_FADD(CUK_FMUL(p, z), 0.666666687f);
    const float lm = CUK_FADD(CUK_FMUL(2.0f, s), CUK_FMUL(CUK_FMUL(s, z), p));
    const float ef = (float)(e - 32); /* exact; ef x 0.693145752 (15 bits) is exact */
    const float l = CUK_FADD(CUK_FMUL(ef, 0.693145752f), CUK_FADD(CUK_FMUL(ef, 1.42860677e-06f), lm));
    return CUK_FSQRT(CUK_FMUL(w == 0xFFFFFFFFu ? 0.0f : l, -2.0f));
}

/* cos and sin of the angle 2 pi w / 2^32 folded into [0, pi/4] of its quadrant (the
   quadrant and the fold as cuk_cos2pi_u32; x = h * 2 pi / 2^32, h <= 2^29 rounded to a
   float, to nearest): *c = 1 + z P(z), *s = x + x z Q(z). A pair of normals takes both
   from one word: the odd element's angle is a quarter turn less (its sine), the same
   fold in the next quadrant down, so one fold and two series serve the pair. */
CUK_FN void cuk_cossin2pi_u32_f(uint32_t w, float *c, float *s, uint32_t *q, int *hi) {
    const uint32_t h = cuk_fold_u32(w, 1u << 29, q, hi); /* past pi/4 in the quadrant: fold */
    const float x = CUK_FMUL((float)h, 1.46291812e-09f); /* 2 pi / 2^32 */
    const float z = CUK_FMUL(x, x);
    float pc = -2.75573200e-07f, ps = -2.50521079e-08f;
    pc = CUK_FADD(CUK_FMUL(pc, z), 2.48015876e-05f);
    ps = CUK_FADD(CUK_FMUL(ps, z), 2.75573188e-06f);
    pc = CUK_FADD(CUK_FMUL(pc, z), -1.38888892e-03f);
    ps = CUK_FADD(CUK_FMUL(ps, z), -1.98412701e-04f);
    pc = CUK_FADD(CUK_FMUL(pc, z), 4.16666679e-02f);
    ps = CUK_FADD(CUK_FMUL(ps, z), 8.33333377e-03f);
    pc = CUK_FADD(CUK_FMUL(pc, z), -0.5f);
    ps = CUK_FADD(CUK_FMUL(ps, z), -0.166666672f);
    *c = CUK_FADD(1.0f, CUK_FMUL(z, pc));
    *s = CUK_FADD(x, CUK_FMUL(CUK_FMUL(x, z), ps));
}

/* Element i of the call's normals: the pair (x_j, x_j+1), j = i & 2, radius from x_j,
   angle from x_j+1; the even element takes its cosine, the odd one its sine (the cosine
   a quarter turn back: quadrant q - 1). Within quadrant q the cosine is the folded
   angle's cosine where the fold matches q's parity, else its sine, negated in quadrants
   1 and 2. Everything but the last selects depends on the pair only, so a kernel that
   computes the pair's elements together computes it once. */
CUK_FN float cuk_randn_f32_of(cuk_u32x4 r, uint64_t i) {
    const uint64_t j = i & 2;
    const float rad = cuk_rad_u32_f(cuk_word(r, j));
    float c, s;
    uint32_t q0;
    int hi;
    cuk_cossin2pi_u32_f(cuk_word(r, j + 1), &c, &s, &q0, &hi);
    const uint32_t q = (q0 - (uint32_t)(i & 1)) & 3u;
    const float v = (((q & 1) == 0) != (hi != 0)) ? c : s;
    return CUK_FMUL(rad, (q == 1 || q == 2) ? -v : v);
}
CUK_FN float cuk_randn_f32(uint64_t i, uint64_t seed) { return cuk_randn_f32_of(cuk_philox(i >> 2, seed), i); }

#endif
