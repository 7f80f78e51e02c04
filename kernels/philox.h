/* Philox4x32-10 counter-based random numbers (Salmon et al., SC'11), shared by the CPU
   backend (C11) and the emitted CUDA, so both give the same values for the same seed.
   Element i of a stream with seed s uses counter (i, 0, 0, 0) and key (lo(s), hi(s)). */
#ifndef CUK_PHILOX_H
#define CUK_PHILOX_H
#ifndef CUK_FN
#include "ops.h"
#endif

typedef struct cuk_u32x4 {
    uint32_t x[4];
} cuk_u32x4;

CUK_FN void cuk_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
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

/* Uniform in [0, 1): 24 random bits for f32, 53 for f64. */
CUK_FN float cuk_rand_f32(uint64_t i, uint64_t seed) {
    cuk_u32x4 r = cuk_philox(i, seed);
    return (float)(r.x[0] >> 8) * (1.0f / 16777216.0f);
}
CUK_FN double cuk_rand_f64(uint64_t i, uint64_t seed) {
    cuk_u32x4 r = cuk_philox(i, seed);
    uint64_t m = ((uint64_t)r.x[0] << 21) ^ (uint64_t)(r.x[1] >> 11);
    return (double)m * (1.0 / 9007199254740992.0);
}
/* Standard normal by Box-Muller on two independent words; computed in double so the CPU
   and GPU agree to the last bits of an f32. */
CUK_FN double cuk_randn_f64(uint64_t i, uint64_t seed) {
    cuk_u32x4 r = cuk_philox(i, seed);
    double u1 = ((double)r.x[0] + 1.0) * (1.0 / 4294967296.0); /* (0, 1] */
    double u2 = (double)r.x[1] * (1.0 / 4294967296.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
CUK_FN float cuk_randn_f32(uint64_t i, uint64_t seed) { return (float)cuk_randn_f64(i, seed); }

#endif
