/* Host sorting (exec/sort.h): stable LSD radix sorts of (key, position) pairs, one row at
   a time; insertion sort for short rows. */
#include <stdlib.h>
#include <string.h>

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
    case DT_F32: {
        float f = ((const float *)x)[i];
        uint32_t u;
        if (f == 0.0f) f = 0.0f;
        memcpy(&u, &f, 4);
        nan = f != f;
        k = (u & 0x80000000u) ? (uint32_t)~u : (u | 0x80000000u), top = 0xffffffffu;
        break;
    }
    default: { /* DT_F64 */
        double f = ((const double *)x)[i];
        uint64_t u;
        if (f == 0.0) f = 0.0;
        memcpy(&u, &f, 8);
        nan = f != f;
        k = (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull), top = ~0ull;
        break;
    }
    }
    if (desc) k = ~k & top;
    return nan ? top : k;
}

/* kk[i] = the key of element i, i < n: one loop per type, sort_key's switch resolved
   outside it. */
static void fill_keys(DType dt, const void *x, int64_t n, bool desc, uint64_t *kk) {
    switch (dt) {
#define FILL(D)                                                                                     \
    case D:                                                                                         \
        for (int64_t i = 0; i < n; i++) kk[i] = sort_key(D, x, i, desc);                           \
        break;
        FILL(DT_BOOL)
        FILL(DT_I32)
        FILL(DT_U32)
        FILL(DT_I64)
        FILL(DT_U64)
        FILL(DT_F32)
#undef FILL
    default:
        for (int64_t i = 0; i < n; i++) kk[i] = sort_key(DT_F64, x, i, desc);
        break;
    }
}

/* An integer's or bool's bits from its key (sort_key is one-to-one for them). */
static uint64_t unkey(DType dt, uint64_t k, bool desc) {
    if (desc) k = ~k & (dtype_info[dt].size > 4 ? ~0ull : 0xffffffffull);
    if (dt == DT_I32) return k ^ 0x80000000u;
    if (dt == DT_I64) return k ^ 0x8000000000000000ull;
    return k;
}

static int key_bytes(DType dt) { return dtype_info[dt].size > 4 ? 8 : 4; }

/* One row: keys k[0..n) with their payloads perm[0..n) (positions for argsort, a float's
   own bits for sort; NULL, with p2, for keys alone) put in stable key order, in k and
   perm. K the key type, P the payload type. */
#define RADIX_ROW(NAME, K, P)                                                                       \
    static void NAME(K *k, P *perm, K *k2, P *p2, int64_t n) {                                      \
        if (n <= 48) { /* insertion sort: stable, as it moves only past larger keys */             \
            for (int64_t i = 1; i < n; i++) {                                                       \
                K kk = k[i];                                                                        \
                P pp = perm ? perm[i] : 0;                                                          \
                int64_t j = i;                                                                      \
                for (; j > 0 && k[j - 1] > kk; j--) {                                               \
                    k[j] = k[j - 1];                                                                \
                    if (perm) perm[j] = perm[j - 1];                                                \
                }                                                                                   \
                k[j] = kk;                                                                          \
                if (perm) perm[j] = pp;                                                             \
            }                                                                                       \
            return;                                                                                 \
        }                                                                                           \
        enum { D = (int)sizeof(K) };                                                                \
        int64_t cnt[sizeof(K)][256];                                                                \
        memset(cnt, 0, sizeof cnt);                                                                 \
        for (int64_t i = 0; i < n; i++)                                                             \
            for (int d = 0; d < D; d++) cnt[d][(k[i] >> (8 * d)) & 255]++;                          \
        K *ka = k, *kb = k2;                                                                        \
        P *pa = perm, *pb = p2;                                                                     \
        for (int d = 0; d < D; d++) {                                                               \
            int64_t *c = cnt[d], s = 0;                                                             \
            bool trivial = false;                                                                   \
            for (int b = 0; b < 256; b++) {                                                         \
                if (c[b] == n) trivial = true;                                                      \
                int64_t t = c[b];                                                                   \
                c[b] = s, s += t;                                                                   \
            }                                                                                       \
            if (trivial) continue; /* every key has this digit: the order stands */                 \
            for (int64_t i = 0; i < n; i++) {                                                       \
                int64_t o = c[(ka[i] >> (8 * d)) & 255]++;                                          \
                kb[o] = ka[i];                                                                      \
                if (pa) pb[o] = pa[i];                                                              \
            }                                                                                       \
            K *tk = ka;                                                                             \
            ka = kb, kb = tk;                                                                       \
            P *tp = pa;                                                                             \
            pa = pb, pb = tp;                                                                       \
        }                                                                                           \
        if (ka != k) memcpy(k, ka, sizeof(K) * (size_t)n);                                          \
        if (pa != perm) memcpy(perm, pa, sizeof(P) * (size_t)n);                                    \
    }
RADIX_ROW(radix_k4p4, uint32_t, uint32_t)
RADIX_ROW(radix_k4p8, uint32_t, uint64_t)
RADIX_ROW(radix_k8p4, uint64_t, uint32_t)
RADIX_ROW(radix_k8p8, uint64_t, uint64_t)

/* The payload of element i: its position (argsort) or its bits (sort), in pb bytes. */
static uint64_t payload(DType dt, const char *xr, int64_t i, bool arg) {
    if (arg) return (uint64_t)i;
    switch (dtype_info[dt].size) {
    case 1: return ((const uint8_t *)xr)[i];
    case 4: return ((const uint32_t *)xr)[i];
    default: return ((const uint64_t *)xr)[i];
    }
}

bool host_sort_rows(DType dt, const void *x, int64_t rows, int64_t len, bool desc, void *vals, int64_t *idx) {
    if (rows <= 0 || len <= 0) return true;
    /* argsort carries the positions with the keys; sort the floats' own bits (the
       output is then written in order, not gathered: 0.91 -> 0.56 s for 2^24 f32), and
       integers and bools their keys alone, turned back into elements (unkey) */
    const bool arg = idx != NULL, bare = !arg && !dtype_info[dt].is_float; /* keys alone: unkey() */
    const int kb = key_bytes(dt), pb = bare ? 0 : arg ? (len <= (int64_t)UINT32_MAX ? 4 : 8) : key_bytes(dt);
    const size_t es = (size_t)dtype_info[dt].size, n = (size_t)len;
    char *buf = malloc(n * 2 * (size_t)(kb + pb));
    if (!buf) return false;
    void *k = buf, *k2 = buf + n * (size_t)kb, *p = bare ? NULL : buf + 2 * n * (size_t)kb;
    void *p2 = bare ? NULL : (char *)p + n * (size_t)pb;
    for (int64_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + (size_t)r * n * es;
        for (int64_t i = 0; i < len; i++) {
            uint64_t key = sort_key(dt, xr, i, desc), pay = payload(dt, xr, i, arg);
            if (kb == 4) ((uint32_t *)k)[i] = (uint32_t)key;
            else ((uint64_t *)k)[i] = key;
            if (pb == 4) ((uint32_t *)p)[i] = (uint32_t)pay;
            else if (pb == 8) ((uint64_t *)p)[i] = pay;
        }
        if (kb == 4 && pb != 8) radix_k4p4(k, p, k2, p2, len);
        else if (kb == 4) radix_k4p8(k, p, k2, p2, len);
        else if (pb != 8) radix_k8p4(k, p, k2, p2, len);
        else radix_k8p8(k, p, k2, p2, len);
        for (int64_t i = 0; i < len; i++) {
            uint64_t pay = bare      ? unkey(dt, kb == 4 ? ((uint32_t *)k)[i] : ((uint64_t *)k)[i], desc)
                           : pb == 4 ? ((uint32_t *)p)[i]
                                     : ((uint64_t *)p)[i];
            size_t o = (size_t)r * n + (size_t)i;
            if (arg) idx[o] = (int64_t)pay;
            else if (es == 1) ((uint8_t *)vals)[o] = (uint8_t)pay;
            else if (es == 4) ((uint32_t *)vals)[o] = (uint32_t)pay;
            else ((uint64_t *)vals)[o] = pay;
        }
    }
    free(buf);
    return true;
}

bool host_searchsorted(DType dt, const void *a, int64_t m, const void *v, int64_t n, bool right, int64_t *out) {
    uint64_t *ka = malloc(sizeof(uint64_t) * (size_t)(m > 0 ? m : 1));
    if (!ka) return false;
    fill_keys(dt, a, m, false, ka);
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
            fill_keys(dt, xr, len, true, kk);
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
    radix_k8p8(ck, cp, k2, p2, c);
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
