/* Host sorting (exec/sort.h): stable LSD radix sorts of (key, position) pairs, one row at
   a time; merge and insertion sorts for short rows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "exec/sort.h"

/* The key of element i of x (type dt) in w bytes (4 for types of up to 4 bytes, else 8):
   unsigned integers in the wanted order. Floats: the sign-magnitude bits flipped into
   two's order, -0.0 as 0.0, every NaN the largest key (last, and in input order among
   themselves, the sort being stable); signed integers: the sign bit flipped. Descending
   inverts the key, NaN staying last. */
static inline __attribute__((always_inline)) uint64_t sort_key(DType dt, const void *x, int64_t i, bool desc) {
    uint64_t k, top;
    bool nan = false;
    switch (dt) {
    case DT_BOOL: k = ((const uint8_t *)x)[i] != 0, top = 0xffffffffu; break;
    case DT_I32: k = (uint32_t)((const int32_t *)x)[i] ^ 0x80000000u, top = 0xffffffffu; break;
    case DT_U32: k = ((const uint32_t *)x)[i], top = 0xffffffffu; break;
    case DT_I64: k = (uint64_t)((const int64_t *)x)[i] ^ 0x8000000000000000ull, top = ~0ull; break;
    case DT_U64: k = ((const uint64_t *)x)[i], top = ~0ull; break;
    case DT_F32: { /* branch-free, so that the fill loop vectorises */
        uint32_t u;
        memcpy(&u, (const float *)x + i, 4);
        u = (u & 0x7fffffffu) == 0 ? 0 : u;
        nan = (u & 0x7fffffffu) > 0x7f800000u;
        const uint32_t m = (uint32_t)((int32_t)u >> 31) | 0x80000000u;
        k = u ^ m, top = 0xffffffffu;
        break;
    }
    default: { /* DT_F64 */
        uint64_t u;
        memcpy(&u, (const double *)x + i, 8);
        u = (u & ~(1ull << 63)) == 0 ? 0 : u;
        nan = (u & ~(1ull << 63)) > 0x7ff0000000000000ull;
        const uint64_t m = (uint64_t)((int64_t)u >> 63) | (1ull << 63);
        k = u ^ m, top = ~0ull;
        break;
    }
    }
    k = desc ? ~k & top : k;
    return nan ? top : k;
}

/* The key of element i into kk (kb bytes each: 4 or 8), i < n: one loop per type and
   width, sort_key's switch resolved outside it. */
static void fill_keys(DType dt, const void *x, int64_t n, bool desc, int kb, void *kk) {
    uint32_t *k4 = kk;
    uint64_t *k8 = kk;
    switch (dt) {
#define FILL(D)                                                                                     \
    case D:                                                                                         \
        if (kb == 4)                                                                                \
            for (int64_t i = 0; i < n; i++) k4[i] = (uint32_t)sort_key(D, x, i, desc);             \
        else                                                                                        \
            for (int64_t i = 0; i < n; i++) k8[i] = sort_key(D, x, i, desc);                       \
        break;
        FILL(DT_BOOL)
        FILL(DT_I32)
        FILL(DT_U32)
        FILL(DT_I64)
        FILL(DT_U64)
        FILL(DT_F32)
#undef FILL
    default:
        for (int64_t i = 0; i < n; i++) k8[i] = sort_key(DT_F64, x, i, desc);
        break;
    }
}

/* An element's bits (f32 and 4-byte integers in the low 4 bytes) from its key:
   sort_key's map undone, one-to-one for integers and bools; a float's -0.0 comes back as
   0.0 and every NaN as one NaN (sort_fixups puts the input's own back). */
static inline __attribute__((always_inline)) uint64_t unkey(DType dt, uint64_t k, bool desc) {
    const uint64_t top = dtype_info[dt].size > 4 ? ~0ull : 0xffffffffull;
    if (dt == DT_F32 || dt == DT_F64) {
        const uint64_t sign = top ^ (top >> 1);
        if (desc && k != top) k = ~k & top;
        return (k & sign) ? k & ~sign : ~k & top;
    }
    if (desc) k = ~k & top;
    if (dt == DT_I32) return k ^ 0x80000000u;
    if (dt == DT_I64) return k ^ 0x8000000000000000ull;
    return k;
}

static int key_bytes(DType dt) { return dtype_info[dt].size > 4 ? 8 : 4; }

/* Rows of at least this many keys with payloads (argsort, sort_by_key) scatter through
   write-combining buffers (below): 2^24 f32 keys with their positions, 516 -> 457 ms on
   one core of the development machine (AMD EPYC, 2026-12-07); keys alone measured 4%
   faster with keys of the full range and 5% slower with floats in [0, 1), so they go
   direct. */
enum { RADIX_WC_MIN = 1 << 21 };
/* Rows of at most RADIX_INS_MAX keys sort by insertion (NAME##_ins); rows of
   RADIX_INS_MAX + 1 to RADIX_MERGE_MAX keys merge-sort (NAME##_merge) from insertion-sorted runs
   of RADIX_RUN: rows of 64 f32, 2^24 keys on one core of the development machine (AMD
   EPYC, 2026-12-07), 470 -> 365 ms; rows of 128 already sort faster by radix (373 ms
   against 400-490 merged: a scalar merge costs 2-3 ns a key a level there). */
enum { RADIX_INS_MAX = 48, RADIX_MERGE_MAX = 96, RADIX_RUN = 16 };

/* One full line of a write-combining buffer (bytes: 32 or 64, a multiple of 16) to dst:
   with non-temporal stores where dst is 16-byte aligned (nt), which write the line
   without first reading it into the cache; the caller fences after the pass. */
static inline __attribute__((always_inline)) void wc_line(void *dst, const void *src, size_t bytes, bool nt) {
#if defined(__SSE2__)
    if (nt) {
        for (size_t i = 0; i < bytes; i += 16)
            _mm_stream_si128((__m128i *)((char *)dst + i), _mm_load_si128((const __m128i *)((const char *)src + i)));
        return;
    }
#endif
    (void)nt;
    memcpy(dst, src, bytes);
}

static inline void wc_fence(void) {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

/* One row: keys k[0..n) with their payloads perm[0..n) (positions for argsort, a float's
   own bits for sort; NULL, with p2, for keys alone) put in stable key order, in k and
   perm. K the key type, P the payload type. */
enum { RADIX_WIDE_MIN = 1 << 16 }; /* rows this long take 11-bit digits */
#define RADIX_ROW(NAME, K, P)                                                                       \
    /* One pass of a long row, keys (and payloads) by the digit at bit sh into their buckets \
       (c: each bucket's next place), through a line of buffer per bucket: a bucket's keys \
       gather in its line and go out as one whole cache line when it fills, where writing \
       each key to its own of 2048 places in memory costs a cache miss (and a TLB one) a  \
       key. A line is aligned with the output (L keys from a multiple of L); a bucket's   \
       first and last lines are partial and go out key by key. */                          \
    static void NAME##_wc(const K *ka, const P *pa, K *kb, P *pb, int64_t n, int sh, int NB, int64_t *c, \
                          K *wk, P *wp) {                                                   \
        enum { L = 64 / (sizeof(K) > sizeof(P) ? sizeof(K) : sizeof(P)) };                  \
        const bool nt = (((uintptr_t)kb | (uintptr_t)pb) & 15) == 0;                        \
        int64_t first[1 << 11];                                                             \
        memcpy(first, c, sizeof(int64_t) * (size_t)NB);                                     \
        for (int64_t i = 0; i < n; i++) {                                                   \
            const K v = ka[i];                                                              \
            const int64_t q = (int64_t)((v >> sh) & (K)(NB - 1)), o = c[q]++;               \
            const int64_t slot = q * L + (o & (L - 1));                                     \
            wk[slot] = v;                                                                   \
            if (pa) wp[slot] = pa[i];                                                       \
            if ((o & (L - 1)) != L - 1) continue;                                           \
            const int64_t st = o - (L - 1);                                                 \
            if (st >= first[q]) {                                                           \
                wc_line(kb + st, wk + q * L, L * sizeof(K), nt);                            \
                if (pa) wc_line(pb + st, wp + q * L, L * sizeof(P), nt);                    \
            } else {                                                                        \
                for (int64_t j = first[q]; j <= o; j++) {                                   \
                    kb[j] = wk[q * L + (j & (L - 1))];                                      \
                    if (pa) pb[j] = wp[q * L + (j & (L - 1))];                              \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        wc_fence();                                                                         \
        for (int64_t q = 0; q < NB; q++) {                                                  \
            int64_t st = c[q] & ~(int64_t)(L - 1);                                          \
            for (int64_t j = st > first[q] ? st : first[q]; j < c[q]; j++) {                \
                kb[j] = wk[q * L + (j & (L - 1))];                                          \
                if (pa) pb[j] = wp[q * L + (j & (L - 1))];                                  \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    /* after a pass: its output is the next pass's input */                                \
    static inline void NAME##_flip(K **ka, K **kb, P **pa, P **pb) {                        \
        K *tk = *ka;                                                                        \
        *ka = *kb, *kb = tk;                                                                \
        P *tp = *pa;                                                                        \
        *pa = *pb, *pb = tp;                                                                \
    }                                                                                       \
    /* the sorted row (ka, pa) back where the caller gave it (k, perm) */                   \
    static inline void NAME##_home(K *k, P *perm, const K *ka, const P *pa, int64_t n) {    \
        if (ka != k) memcpy(k, ka, sizeof(K) * (size_t)n);                                  \
        if (pa != perm) memcpy(perm, pa, sizeof(P) * (size_t)n);                            \
    }                                                                                       \
    /* insertion sort: stable, as it moves only past larger keys */                        \
    static inline __attribute__((always_inline)) void NAME##_ins(K *k, P *perm, int64_t n) { \
        for (int64_t i = 1; i < n; i++) {                                                   \
            K kk = k[i];                                                                    \
            P pp = perm ? perm[i] : 0;                                                      \
            int64_t j = i;                                                                  \
            for (; j > 0 && k[j - 1] > kk; j--) {                                           \
                k[j] = k[j - 1];                                                            \
                if (perm) perm[j] = perm[j - 1];                                            \
            }                                                                               \
            k[j] = kk;                                                                      \
            if (perm) perm[j] = pp;                                                         \
        }                                                                                   \
    }                                                                                       \
    /* Short rows: runs of RADIX_RUN by insertion, then merges, each taking the left key   \
       unless the right one is smaller (stable), without a branch on the keys: a radix     \
       row's four prefixes over 256 bins cost more than 64 keys do. */                      \
    static void NAME##_merge(K *k, P *perm, K *k2, P *p2, int64_t n) {                      \
        for (int64_t s = 0; s < n; s += RADIX_RUN)                                          \
            NAME##_ins(k + s, perm ? perm + s : NULL, n - s < RADIX_RUN ? n - s : RADIX_RUN); \
        K *ka = k, *kb = k2;                                                                \
        P *pa = perm, *pb = p2;                                                             \
        for (int64_t w = RADIX_RUN; w < n; w *= 2) {                                        \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                     \
                int64_t i = lo, mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n; \
                int64_t j = mid, o = lo;                                                    \
                while (i < mid && j < hi) {                                                 \
                    const K a = ka[i], b = ka[j];                                           \
                    const bool right = b < a;                                               \
                    kb[o] = right ? b : a;                                                  \
                    if (pa) pb[o] = right ? pa[j] : pa[i];                                  \
                    o++, j += right, i += !right;                                           \
                }                                                                           \
                for (; i < mid; i++, o++) {                                                 \
                    kb[o] = ka[i];                                                          \
                    if (pa) pb[o] = pa[i];                                                  \
                }                                                                           \
                for (; j < hi; j++, o++) {                                                  \
                    kb[o] = ka[j];                                                          \
                    if (pa) pb[o] = pa[j];                                                  \
                }                                                                           \
            }                                                                               \
            NAME##_flip(&ka, &kb, &pa, &pb);                                                \
        }                                                                                   \
        NAME##_home(k, perm, ka, pa, n);                                                    \
    }                                                                                       \
    static inline __attribute__((always_inline)) bool NAME##_b(K *k, P *perm, K *k2, P *p2, int64_t n, \
                                                               const int B, const bool WC) {        \
        /* 11-bit digits for long rows (3 passes over 4-byte keys, 6 over 8-byte ones, where  \
           8-bit digits take 4 and 8; 2048 buckets' write fronts still fit in L2); 8-bit     \
           ones for short rows, whose bins would otherwise cost more than their keys */     \
        const int NB = 1 << B, D = ((int)sizeof(K) * 8 + B - 1) / B;                       \
        int64_t cnt0[8 * 256], *cnt = cnt0;                                                 \
        if (B > 8 && !(cnt = calloc((size_t)(D * NB), sizeof *cnt))) return false;         \
        /* long rows: a line of write-combining buffer per bucket (NAME##_wc) */            \
        K *wk = NULL;                                                                       \
        P *wp = NULL;                                                                       \
        void *wbuf = NULL;                                                                  \
        if (WC) {                                                                           \
            wbuf = aligned_alloc(64, (size_t)NB * 128);                                     \
            if (!wbuf) {                                                                    \
                free(cnt);                                                                  \
                return false;                                                               \
            }                                                                               \
            wk = (K *)wbuf, wp = (P *)((char *)wbuf + (size_t)NB * 64);                     \
        }                                                                                   \
        if (B == 8) memset(cnt0, 0, sizeof(int64_t) * (size_t)(D * NB));                    \
        for (int64_t i = 0; i < n; i++) {                                                   \
            const K ki = k[i];                                                              \
            _Pragma("GCC unroll 8") for (int d = 0; d < D; d++) cnt[d * NB + (int64_t)((ki >> (B * d)) & (K)(NB - 1))]++; \
        }                                                                                   \
        K *ka = k, *kb = k2;                                                                \
        P *pa = perm, *pb = p2;                                                             \
        for (int d = 0; d < D; d++) {                                                       \
            int64_t *c = cnt + d * NB, s = 0;                                               \
            bool trivial = false;                                                           \
            for (int b = 0; b < NB; b++) {                                                  \
                if (c[b] == n) trivial = true;                                              \
                int64_t t = c[b];                                                           \
                c[b] = s, s += t;                                                           \
            }                                                                               \
            if (trivial) continue; /* every key has this digit: the order stands */         \
            if (WC) {                                                                       \
                NAME##_wc(ka, pa, kb, pb, n, B * d, NB, c, wk, wp);                         \
            } else {                                                                        \
                for (int64_t i = 0; i < n; i++) {                                           \
                    int64_t o = c[(ka[i] >> (B * d)) & (K)(NB - 1)]++;                      \
                    kb[o] = ka[i];                                                          \
                    if (pa) pb[o] = pa[i];                                                  \
                }                                                                           \
            }                                                                               \
            NAME##_flip(&ka, &kb, &pa, &pb);                                                \
        }                                                                                   \
        if (cnt != cnt0) free(cnt);                                                         \
        free(wbuf);                                                                         \
        NAME##_home(k, perm, ka, pa, n);                                                    \
        return true;                                                                                \
    }                                                                                               \
    /* the row's method by its length; the digit width and WC constants in each radix copy (a   \
       variable width cost 7% on 2^24 keys) */                                                      \
    static bool NAME(K *k, P *perm, K *k2, P *p2, int64_t n) {                                      \
        if (n <= RADIX_INS_MAX) {                                                                   \
            NAME##_ins(k, perm, n);                                                                 \
            return true;                                                                            \
        }                                                                                           \
        if (n <= RADIX_MERGE_MAX) {                                                                 \
            NAME##_merge(k, perm, k2, p2, n);                                                       \
            return true;                                                                            \
        }                                                                                           \
        return n >= RADIX_WC_MIN && perm ? NAME##_b(k, perm, k2, p2, n, 11, true)                   \
               : n >= RADIX_WIDE_MIN     ? NAME##_b(k, perm, k2, p2, n, 11, false)                  \
                                         : NAME##_b(k, perm, k2, p2, n, 8, false);                  \
    }
RADIX_ROW(radix_k4p4, uint32_t, uint32_t)
RADIX_ROW(radix_k4p8, uint32_t, uint64_t)
RADIX_ROW(radix_k8p4, uint64_t, uint32_t)
RADIX_ROW(radix_k8p8, uint64_t, uint64_t)

/* Elements from their keys k (key_bytes(dt) each) into v (len of them): one loop per
   type and direction, unkey's switch resolved outside it. */
static void unkey_row(DType dt, const void *k, int64_t len, bool desc, void *v) {
#define UNKEY(D, KT, VT, DESC)                                                                      \
    case D:                                                                                         \
        for (int64_t i = 0; i < len; i++) ((VT *)v)[i] = (VT)unkey(D, ((const KT *)k)[i], DESC);    \
        break;
#define UNKEYS(DESC)                                                                                \
    switch (dt) {                                                                                   \
        UNKEY(DT_BOOL, uint32_t, uint8_t, DESC)                                                     \
        UNKEY(DT_I32, uint32_t, uint32_t, DESC)                                                     \
        UNKEY(DT_U32, uint32_t, uint32_t, DESC)                                                     \
        UNKEY(DT_F32, uint32_t, uint32_t, DESC)                                                     \
        UNKEY(DT_I64, uint64_t, uint64_t, DESC)                                                     \
        UNKEY(DT_U64, uint64_t, uint64_t, DESC)                                                     \
    default: UNKEY(DT_F64, uint64_t, uint64_t, DESC)                                                \
    }
    if (desc) UNKEYS(true) else UNKEYS(false)
#undef UNKEYS
#undef UNKEY
}

/* Whether float row x (len elements) has a -0.0 or a NaN: their bits go back after the
   sort (sort_fixups), the keys having made every zero 0.0 and every NaN one NaN. */
static bool row_has_fixups(DType dt, const char *x, int64_t len) {
    if (dt == DT_F32) {
        const uint32_t *u = (const uint32_t *)x;
        uint32_t any = 0;
        for (int64_t i = 0; i < len; i++) /* -0.0, or exponent all ones with a mantissa */
            any |= (u[i] == 0x80000000u) | ((u[i] & 0x7fffffffu) > 0x7f800000u);
        return any != 0;
    }
    if (dt == DT_F64) {
        const uint64_t *u = (const uint64_t *)x;
        uint64_t any = 0;
        for (int64_t i = 0; i < len; i++)
            any |= (u[i] == 1ull << 63) | ((u[i] & ~(1ull << 63)) > 0x7ff0000000000000ull);
        return any != 0;
    }
    return false;
}

static inline bool is_zero_or_nan(DType dt, const char *e) {
    double v = dt == DT_F32 ? (double)*(const float *)e : *(const double *)e;
    return v == 0.0 || v != v;
}

/* The zeros and NaNs of float row x, in order, into a new array (*m of them): what
   sort_fixups needs of a row sorted in place. NULL when memory runs out. */
static char *row_specials(DType dt, const char *x, int64_t len, int64_t *m) {
    const size_t es = dtype_info[dt].size;
    int64_t c = 0;
    for (int64_t i = 0; i < len; i++) c += is_zero_or_nan(dt, x + (size_t)i * es);
    char *sp = malloc((size_t)(c ? c : 1) * es);
    if (!sp) return NULL;
    for (int64_t i = 0, j = 0; i < len; i++)
        if (is_zero_or_nan(dt, x + (size_t)i * es)) memcpy(sp + (size_t)j++ * es, x + (size_t)i * es, es);
    *m = c;
    return sp;
}

/* A sorted float row y, from its keys: its zeros are one run and its NaNs the last run,
   each in input order (the sort is stable), so the input's own bits go back into them
   in input order: -0.0 stays -0.0, a NaN keeps its payload. src holds the input's
   elements in order (the row itself, or only its zeros and NaNs: row_specials); the
   others are passed over. */
static void sort_fixups(DType dt, const char *src, int64_t nsrc, char *y, int64_t len) {
    const size_t es = dtype_info[dt].size;
    int64_t z = -1, nan = len;
    for (int64_t i = 0; i < len; i++) {
        double v = dt == DT_F32 ? (double)((const float *)y)[i] : ((const double *)y)[i];
        if (v == 0.0 && z < 0) z = i;
        if (v != v && nan == len) nan = i;
    }
    for (int64_t i = 0; i < nsrc; i++) {
        double v = dt == DT_F32 ? (double)((const float *)src)[i] : ((const double *)src)[i];
        if (v == 0.0) memcpy(y + (size_t)z++ * es, src + (size_t)i * es, es);
        else if (v != v) memcpy(y + (size_t)nan++ * es, src + (size_t)i * es, es);
    }
}

bool host_sort_rows(DType dt, const void *x, int64_t rows, int64_t len, bool desc, void *vals, int64_t *idx) {
    if (rows <= 0 || len <= 0) return true;
    /* A sort sorts the keys alone, in the output row itself where a key is an element's
       size, and turns them back into elements (unkey; a float's -0.0 and NaNs put back
       by sort_fixups): one scratch row of keys. argsort carries the positions with the
       keys, as 4-byte positions inside the output row of 8-byte ones when the row is
       short enough, widened in place at the end: two scratch rows of keys. vals may be x
       itself (a sort in place): a row's zeros and NaNs are then kept aside before its
       keys overwrite it. */
    const bool arg = idx != NULL;
    const int kb = key_bytes(dt);
    const size_t es = (size_t)dtype_info[dt].size, n = (size_t)len;
    const bool kin = !arg && es == (size_t)kb, pin = arg && len <= (int64_t)UINT32_MAX;
    const int pb = !arg ? 0 : pin ? 4 : 8;
    char *buf = malloc(n * (size_t)kb * (kin ? 1 : 2) + (arg && !pin ? 2 * n * 8 : 0));
    if (!buf) return false;
    for (int64_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + (size_t)r * n * es;
        char *vr = arg ? NULL : (char *)vals + (size_t)r * n * es;
        int64_t *ir = arg ? idx + (size_t)r * n : NULL;
        void *k = kin ? (void *)vr : buf, *k2 = kin ? buf : buf + n * (size_t)kb;
        void *p = NULL, *p2 = NULL;
        if (pin) p = ir, p2 = (uint32_t *)ir + n;
        else if (arg) p = buf + 2 * n * (size_t)kb, p2 = (char *)p + n * 8;
        const bool fix = !arg && row_has_fixups(dt, xr, len);
        char *sp = NULL;
        int64_t nsp = len;
        if (fix && xr == vr && !(sp = row_specials(dt, xr, len, &nsp))) {
            free(buf);
            return false;
        }
        fill_keys(dt, xr, len, desc, kb, k);
        if (pb == 4)
            for (int64_t i = 0; i < len; i++) ((uint32_t *)p)[i] = (uint32_t)i;
        else if (pb == 8)
            for (int64_t i = 0; i < len; i++) ((uint64_t *)p)[i] = (uint64_t)i;
        bool ok = kb == 4 && pb != 8 ? radix_k4p4(k, p, k2, p2, len)
                  : kb == 4          ? radix_k4p8(k, p, k2, p2, len)
                  : pb != 8          ? radix_k8p4(k, p, k2, p2, len)
                                     : radix_k8p8(k, p, k2, p2, len);
        if (!ok) {
            free(sp);
            free(buf);
            return false;
        }
        if (arg) {
            if (pin) /* from the end: ir[i] overlaps positions 2i and 2i + 1 >= i, read already */
                for (int64_t i = len - 1; i >= 0; i--) ir[i] = (int64_t)((uint32_t *)p)[i];
            else
                for (int64_t i = 0; i < len; i++) ir[i] = (int64_t)((uint64_t *)p)[i];
            continue;
        }
        unkey_row(dt, k, len, desc, vr);
        if (fix) sort_fixups(dt, sp ? sp : xr, nsp, vr, len);
        free(sp);
    }
    free(buf);
    return true;
}

bool host_searchsorted(DType dt, const void *a, int64_t m, const void *v, int64_t n, bool right, int64_t *out) {
    uint64_t *ka = malloc(sizeof(uint64_t) * (size_t)(m > 0 ? m : 1));
    if (!ka) return false;
    fill_keys(dt, a, m, false, 8, ka);
    for (int64_t j = 0; j < n; j++) {
        uint64_t kv = sort_key(dt, v, j, false);
        int64_t lo = 0, hi = m; /* the answer is in [lo, hi] */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (right ? ka[mid] <= kv : ka[mid] < kv) lo = mid + 1;
            else hi = mid;
        }
        out[j] = lo;
    }
    free(ka);
    return true;
}

/* top_k's positions by selection: the row's keys (descending) computed once into kk;
   T, the k-th smallest, found digit by digit from the top (the first digit counted over
   them all, then only the keys that share the digits chosen so far kept in buf and
   counted); then, in position order, the keys below T and the first of those equal to
   it, k in all, sorted stably (ties by position). A few passes over the keys, not
   their sort. */
static bool topk_select_row(DType dt, const char *xr, int64_t len, int64_t k, uint64_t *kk, uint64_t **buf,
                            size_t *bufcap, uint64_t *ck, uint64_t *cp, uint64_t *k2, uint64_t *p2, int64_t *out) {
    const int bits = 8 * key_bytes(dt);
    uint64_t prefix = 0;
    int64_t need = k, m = len; /* need: the rank (from 1) of T among the keys kept */
    for (int sh = bits - 8; sh >= 0; sh -= 8) {
        int64_t h[256] = {0};
        if (sh == bits - 8) {
            fill_keys(dt, xr, len, true, 8, kk);
            for (int64_t i = 0; i < len; i++) h[(kk[i] >> sh) & 255]++;
        } else
            for (int64_t j = 0; j < m; j++) h[((*buf)[j] >> sh) & 255]++;
        int d = 0;
        int64_t cum = 0;
        for (; d < 255 && cum + h[d] < need; d++) cum += h[d];
        need -= cum;
        prefix |= (uint64_t)d << sh;
        if (sh == 0) break;
        /* keep the keys with this digit too */
        const uint64_t *from = sh == bits - 8 ? kk : *buf;
        if (sh == bits - 8 && (size_t)h[d] > *bufcap) {
            uint64_t *nb = realloc(*buf, sizeof(uint64_t) * (size_t)h[d]);
            if (!nb) return false;
            *buf = nb, *bufcap = (size_t)h[d];
        }
        int64_t j = 0;
        for (int64_t t = 0; t < m; t++)
            if ((from[t] >> sh) == (prefix >> sh)) (*buf)[j++] = from[t];
        m = j;
    }
    /* prefix is T; the k - need keys below it come with the first need equal to it */
    int64_t c = 0, eq = need;
    for (int64_t i = 0; i < len && c < k; i++)
        if (kk[i] < prefix || (kk[i] == prefix && eq-- > 0)) ck[c] = kk[i], cp[c] = (uint64_t)i, c++;
    if (!radix_k8p8(ck, cp, k2, p2, c)) return false;
    for (int64_t j = 0; j < c; j++) out[j] = (int64_t)cp[j];
    return true;
}

bool host_topk_rows(DType dt, const void *x, int64_t rows, int64_t len, int64_t k, int64_t *idx) {
    if (rows <= 0 || k <= 0) return true;
    const size_t es = (size_t)dtype_info[dt].size;
    bool ok = true;
    if (len < 256 || k * 4 > len) {
        /* a large share of the row: its argsort, the first k kept */
        int64_t *tmp = malloc(sizeof(int64_t) * (size_t)len);
        if (!tmp) return false;
        for (int64_t r = 0; ok && r < rows; r++) {
            ok = host_sort_rows(dt, (const char *)x + (size_t)(r * len) * es, 1, len, true, NULL, tmp);
            if (ok) memcpy(idx + r * k, tmp, sizeof(int64_t) * (size_t)k);
        }
        free(tmp);
        return ok;
    }
    uint64_t *buf = NULL, *s = malloc(sizeof(uint64_t) * (4 * (size_t)k + (size_t)len));
    size_t bufcap = 0;
    if (!s) return false;
    for (int64_t r = 0; ok && r < rows; r++)
        ok = topk_select_row(dt, (const char *)x + (size_t)(r * len) * es, len, k, s + 4 * k, &buf, &bufcap, s, s + k,
                             s + 2 * k, s + 3 * k, idx + r * k);
    free(buf);
    free(s);
    return ok;
}
