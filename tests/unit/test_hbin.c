/* histogram()'s bin function (kernels/ops.h cuk_hbin_f32/f64), shared by both backends,
   against the edge rule itself: the largest b < n with edge(b) <= x, edges as NumPy's
   linspace makes them. Values are drawn at and around every edge (up to 64 units in the
   last place either side), at fractions of a bin just inside and outside the fast
   path's margin, and at random, over ranges near 0 and far from it, narrow and wide,
   with 1 to 2^20 bins: the fast path (no edge looked at) must never pick another bin
   than the edges do. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The shared helpers compare unsigned values with 0 in code common to all widths. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "kernels/ops.h"
#pragma GCC diagnostic pop

static int failures;
static long checks;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }

/* The edge rule by bisection over the edges (the reference), for f32 and f64. */
#define REF(S, T)                                                                               \
    static int64_t ref_##S(T x, int64_t n, double lo, double step, T loT, T hiT) {              \
        if (!(x >= loT && x <= hiT)) return -1;                                                 \
        int64_t a = 0, b = n - 1;                                                               \
        while (a < b) {                                                                         \
            int64_t m = a + (b - a + 1) / 2;                                                    \
            if (x >= cuk_hedge_##S(m, step, lo)) a = m;                                         \
            else b = m - 1;                                                                     \
        }                                                                                       \
        return a;                                                                               \
    }
REF(f32, float)
REF(f64, double)

/* The scalars the compiler passes (sema's lowering of histogram(x, n, lo, hi)). */
typedef struct {
    int64_t n;
    double lo, hi, step;
} Range;

static void check_f32(const Range *r, float x) {
    float loT = (float)r->lo, hiT = (float)r->hi, norm = (float)((double)r->n / (r->hi - r->lo));
    int64_t got = cuk_hbin_f32(x, r->n, r->lo, r->step, loT, hiT, norm, NULL);
    int64_t want = ref_f32(x, r->n, r->lo, r->step, loT, hiT);
    checks++;
    if (got != want && failures++ < 20)
        fprintf(stderr, "f32: bins %lld over [%.17g, %.17g]: x = %.9g gives %lld, the edges %lld\n", (long long)r->n,
                r->lo, r->hi, (double)x, (long long)got, (long long)want);
}

static void check_f64(const Range *r, double x) {
    double norm = (double)r->n / (r->hi - r->lo);
    int64_t got = cuk_hbin_f64(x, r->n, r->lo, r->step, r->lo, r->hi, norm, NULL);
    int64_t want = ref_f64(x, r->n, r->lo, r->step, r->lo, r->hi);
    checks++;
    if (got != want && failures++ < 20)
        fprintf(stderr, "f64: bins %lld over [%.17g, %.17g]: x = %.17g gives %lld, the edges %lld\n", (long long)r->n,
                r->lo, r->hi, x, (long long)got, (long long)want);
}

static void one_range(int64_t n, double lo, double hi) {
    Range r = {n, lo, hi, (hi - lo) / (double)n};
    float loT = (float)lo, hiT = (float)hi, norm = (float)((double)n / (hi - lo));
    double m32 = cuk_hbin_margin_f32(n, loT, hiT, norm), m64 = cuk_hbin_margin_f64(n, lo, hi, (double)n / (hi - lo));
    /* edges: the bins to visit (all of them up to 4096, else a sample) */
    int64_t visits = n <= 4096 ? n + 1 : 4096;
    for (int64_t v = 0; v < visits; v++) {
        int64_t b = n <= 4096 ? v : (int64_t)(unit() * (double)(n + 1));
        if (b > n) b = n;
        float e32 = b == n ? hiT : cuk_hedge_f32(b, r.step, lo);
        double e64 = b == n ? hi : cuk_hedge_f64(b, r.step, lo);
        float u = e32, d = e32;
        double u6 = e64, d6 = e64;
        check_f32(&r, e32);
        check_f64(&r, e64);
        for (int k = 0; k < 64; k++) {
            u = nextafterf(u, INFINITY), d = nextafterf(d, -INFINITY);
            u6 = nextafter(u6, INFINITY), d6 = nextafter(d6, -INFINITY);
            check_f32(&r, u), check_f32(&r, d);
            check_f64(&r, u6), check_f64(&r, d6);
        }
        /* just inside and outside the margin from this edge, in bin units */
        if (b < n) {
            for (int s = -1; s <= 1; s += 2)
                for (int q = 0; q < 3; q++) {
                    double f = (double)b + s * (m32 < 1 ? m32 : 0.25) * (0.5 + 0.5 * q);
                    check_f32(&r, (float)(lo + f * (hi - lo) / (double)n));
                    f = (double)b + s * (m64 < 1 ? m64 : 0.25) * (0.5 + 0.5 * q);
                    check_f64(&r, lo + f * (hi - lo) / (double)n);
                }
        }
    }
    for (int k = 0; k < 2000; k++) {
        double x = lo + (unit() * 1.2 - 0.1) * (hi - lo);
        check_f32(&r, (float)x);
        check_f64(&r, x);
    }
}

int main(void) {
    static const int64_t bins[] = {1, 2, 3, 7, 10, 100, 255, 256, 1000, 1024, 4096, 65536, 1 << 20};
    static const double ranges[][2] = {{0, 1},          {-1, 1},     {0.1, 0.7},  {-3.3, 1e-3}, {1000, 1001},
                                       {1e6, 1e6 + 3},  {-1e30, 1e30}, {1e-30, 2e-30}, {-5, -4.99}, {0, 1e-7},
                                       {123.456, 789.1}, {-1, 0}};
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++)
        for (size_t j = 0; j < sizeof ranges / sizeof ranges[0]; j++) one_range(bins[i], ranges[j][0], ranges[j][1]);
    for (int k = 0; k < 200; k++) {
        double a = (unit() - 0.5) * pow(10, (int)(unit() * 12) - 4), w = pow(10, (int)(unit() * 10) - 6) * unit();
        if (w <= 0) continue;
        one_range(1 + (int64_t)(unit() * 3000), a, a + w);
    }
    printf("test_hbin: %ld checks, %d failed\n", checks, failures);
    return failures != 0;
}
