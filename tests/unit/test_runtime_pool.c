/* The device pool's size classes (the part of the pool that needs no GPU): every
   request fits its class, classes grow monotonically, and rounding wastes at most 2x
   below 1 MiB and 25% above. */
#include <stdio.h>

#include "runtime/internal.h"

static int fails;
#define CHECK(c)                                                                                 \
    do {                                                                                         \
        if (!(c)) {                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                 \
            fails++;                                                                             \
        }                                                                                        \
    } while (0)

int main(void) {
    size_t sz;
    CHECK(pool_size_class(0, &sz) == 0 && sz == 512);
    CHECK(pool_size_class(1, &sz) == 0 && sz == 512);
    CHECK(pool_size_class(512, &sz) == 0 && sz == 512);
    CHECK(pool_size_class(513, &sz) == 1 && sz == 1024);
    CHECK(pool_size_class(1 << 20, &sz) == 11 && sz == (1 << 20));
    CHECK(pool_size_class((1 << 20) + 1, &sz) == 12 && sz == (1 << 20) + (1 << 18));
    CHECK(pool_size_class(2 << 20, &sz) == 15 && sz == (2 << 20));
    CHECK(pool_size_class(3 << 20, &sz) == 17 && sz == (3 << 20));
    CHECK(pool_size_class(((size_t)1 << 62) + 1, &sz) == -1);

    /* Sweep: sizes around every power of two and a pseudo-random spread. */
    int last = -1;
    size_t lastsz = 0;
    unsigned long long x = 88172645463325252ull;
    for (int i = 0; i < 200000; i++) {
        size_t b;
        if (i < 60 * 5) {
            int k = i / 5, d = i % 5 - 2;
            long long v = (1ll << (k < 48 ? k : 48)) + d;
            b = v < 0 ? 0 : (size_t)v;
        } else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b = (size_t)(x % (1ull << (x % 40 + 1)));
        }
        int c = pool_size_class(b, &sz);
        CHECK(c >= 0 && sz >= b && sz >= 512);
        if (b > 512 && b <= (1u << 20)) CHECK(sz < 2 * b);
        if (b > (1u << 20)) CHECK(sz <= b + b / 4 + 1);
        /* The same class always means the same size. */
        size_t sz2;
        CHECK(pool_size_class(sz, &sz2) == c && sz2 == sz);
        (void)last, (void)lastsz;
    }
    /* Monotonic in the request. */
    for (size_t b = 1; b < (64u << 20); b += 4093) {
        int c = pool_size_class(b, &sz);
        CHECK(c >= last && (c != last || sz == lastsz));
        last = c;
        lastsz = sz;
    }
    printf("%s: %s\n", __FILE__, fails ? "FAIL" : "PASS");
    return fails != 0;
}
