/* Host arrays (dense, C order, reference counted), scalar casts with the language's
   conversion rules, and run-time error records. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exec/exec.h"
/* The 16-bit float conversions, shared with the kernels. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "kernels/ops.h"
#pragma GCC diagnostic pop

/* Refuse sizes no machine here could hold, before asking malloc: under overcommit a
   huge malloc may "succeed" and the process die later, and sanitizers abort on it. */
uint64_t arr_max_bytes(void) {
    static _Atomic uint64_t lim; /* found once; threads may race to store the same value */
    uint64_t l = atomic_load_explicit(&lim, memory_order_relaxed);
    if (!l) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        uint64_t phys = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz : 0;
        l = (uint64_t)1 << 40;
        if (phys && phys * 2 < l) l = phys * 2;
        atomic_store_explicit(&lim, l, memory_order_relaxed);
    }
    return l;
}

/* A few freed large blocks kept for reuse: glibc returns big blocks to the kernel on
   free, and a host loop that makes a new array of the same size every iteration would
   otherwise pay a page fault per 4 KiB each time. Exact-size matches only. */
enum { CACHE_SLOTS = 8, CACHE_MIN = 1 << 16 };
#define CACHE_MAX_BYTES ((size_t)512 << 20)
static struct {
    void *p;
    size_t bytes;
} cache[CACHE_SLOTS];
static size_t cache_bytes;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

/* Large blocks are asked for in transparent huge pages where the kernel gives them on
   request (THP "madvise", Debian's and most distributions' default): a fresh block's
   first touch then costs a fault per 2 MiB, not per 4 KiB. A first write into fresh
   memory ran at 1.6-1.9 GB/s against 3.1-4.0 with the hint (a 2-core Debian machine,
   2026-12-06); a device-to-host copy into a new array is bound by exactly that. The
   hint is only a hint: where it fails, the block is an ordinary one. */
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)
static void *big_alloc(size_t bytes) {
    if (bytes < HUGE_MIN || bytes > SIZE_MAX - HUGE_PAGE) return aligned_alloc(64, bytes);
    size_t whole = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p = aligned_alloc(HUGE_PAGE, whole);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, whole, MADV_HUGEPAGE);
#endif
    return p;
}

static void *block_get(size_t bytes) {
    if (bytes >= CACHE_MIN) {
        void *p = NULL;
        pthread_mutex_lock(&cache_mu);
        for (int i = 0; i < CACHE_SLOTS; i++) {
            if (cache[i].p && cache[i].bytes == bytes) {
                p = cache[i].p;
                cache[i].p = NULL;
                cache_bytes -= bytes;
                break;
            }
        }
        pthread_mutex_unlock(&cache_mu);
        if (p) return p;
    }
    return big_alloc(bytes);
}

static void block_put(void *p, size_t bytes) {
    if (bytes >= CACHE_MIN && bytes <= CACHE_MAX_BYTES / 2) {
        pthread_mutex_lock(&cache_mu);
        /* Evict the oldest-looking entries until it fits, then take a free slot. */
        for (int i = 0; i < CACHE_SLOTS && cache_bytes + bytes > CACHE_MAX_BYTES; i++) {
            if (cache[i].p) {
                free(cache[i].p);
                cache_bytes -= cache[i].bytes;
                cache[i].p = NULL;
            }
        }
        int slot = -1;
        for (int i = 0; i < CACHE_SLOTS && slot < 0; i++)
            if (!cache[i].p) slot = i;
        if (slot < 0) {
            slot = (int)(((uintptr_t)p >> 12) % CACHE_SLOTS);
            free(cache[slot].p);
            cache_bytes -= cache[slot].bytes;
        }
        cache[slot].p = p;
        cache[slot].bytes = bytes;
        cache_bytes += bytes;
        pthread_mutex_unlock(&cache_mu);
        return;
    }
    free(p);
}

static size_t arr_bytes(const Arr *a) {
    size_t bytes = ((size_t)a->size * (size_t)dtype_info[a->dt].size + 63) & ~(size_t)63;
    return bytes ? bytes : 64;
}

Arr *arr_new(DType dt, int rank, const int64_t *shape) {
    if (rank < 0 || rank > MAXRANK) return NULL;
    /* Like NumPy, the product of the nonzero dims must fit as well (see shape_size in
       exec/cpu/eval.c): loops over the axes of an empty array then stay in range. */
    uint64_t size = 1;
    bool empty = false;
    for (int k = 0; k < rank; k++) {
        if (shape[k] < 0) return NULL;
        if (!shape[k]) {
            empty = true;
            continue;
        }
        if (size > UINT64_MAX / (uint64_t)shape[k]) return NULL;
        size *= (uint64_t)shape[k];
    }
    uint64_t esz = (uint64_t)dtype_info[dt].size;
    if (size > arr_max_bytes() / esz) return NULL;
    if (empty) size = 0;
    /* Round up to the alignment (aligned_alloc wants a multiple) and never ask for 0. */
    size_t bytes = (size_t)((size * esz + 63) & ~(uint64_t)63);
    if (bytes == 0) bytes = 64;
    Arr *a = malloc(sizeof(Arr));
    if (!a) return NULL;
    a->data = block_get(bytes);
    if (!a->data) {
        free(a);
        return NULL;
    }
    a->dt = dt;
    a->rank = rank;
    memset(a->shape, 0, sizeof a->shape);
    for (int k = 0; k < rank; k++) a->shape[k] = shape[k];
    a->size = (int64_t)size;
    a->refs = 1;
    return a;
}

/* One element at p as a Scalar of its type, and back (the element's own bytes). */
Scalar scalar_load(DType dt, const void *p) {
    Scalar s;
    s.u = 0;
    switch (dt) {
#define X(n, st, ct, ut, isf, isi, iss, npy)                                                  \
    case DT_##n: {                                                                           \
        ct x;                                                                                \
        memcpy(&x, p, sizeof x);                                                             \
        if (isf)                                                                             \
            s.f = (double)x;                                                                 \
        else if (iss || DT_##n == DT_BOOL)                                                   \
            s.i = (int64_t)x;                                                                \
        else                                                                                 \
            s.u = (uint64_t)x;                                                               \
        break;                                                                               \
    }
        DTYPES_NUM(X)
#undef X
    case DT_F16: s.f = (double)cuk_h2f(((const cuk_f16 *)p)->bits); break;
    case DT_BF16: s.f = (double)cuk_bf2f(((const cuk_bf16 *)p)->bits); break;
    case DT_C64: {
        cuk_c64 z;
        memcpy(&z, p, sizeof z);
        s.z[0] = z.re, s.z[1] = z.im;
        break;
    }
    case DT_C128: memcpy(s.z, p, 16); break;
    default: die("bad dtype %d", (int)dt);
    }
    return s;
}

void scalar_store(DType dt, Scalar v, void *p) {
    switch (dt) {
#define X(n, s, ct, ut, isf, isi, iss, npy)                                                  \
    case DT_##n: {                                                                           \
        ct x = isf ? (ct)v.f : dt == DT_BOOL ? (ct)(v.i != 0) : iss ? (ct)v.i : (ct)v.u;     \
        memcpy(p, &x, sizeof x);                                                             \
        break;                                                                               \
    }
        DTYPES_NUM(X)
#undef X
    case DT_F16: ((cuk_f16 *)p)->bits = cuk_d2h(v.f); break;
    case DT_BF16: ((cuk_bf16 *)p)->bits = cuk_d2bf(v.f); break;
    case DT_C64: {
        cuk_c64 z = {(float)v.z[0], (float)v.z[1]};
        memcpy(p, &z, sizeof z);
        break;
    }
    case DT_C128: memcpy(p, v.z, 16); break;
    default: die("bad dtype %d", (int)dt);
    }
}

Arr *arr_scalar(DType dt, Scalar v) {
    Arr *a = arr_new(dt, 0, NULL);
    if (!a) return NULL;
    scalar_store(dt, v, a->data);
    return a;
}

Arr *arr_retain(Arr *a) {
    if (a) a->refs++;
    return a;
}

void arr_release(Arr *a) {
    if (!a) return;
    ASSERT(a->refs > 0);
    if (--a->refs == 0) {
        block_put(a->data, arr_bytes(a));
        free(a);
    }
}

Scalar arr_get(const Arr *a, int64_t i) {
    ASSERT(i >= 0 && i < a->size);
    return scalar_load(a->dt, (const char *)a->data + i * dtype_info[a->dt].size);
}

/* x rounded to the float type dt (once, to nearest even). */
static double fround(DType dt, double x) {
    return dt == DT_F32 ? (double)(float)x : dt == DT_F16 ? (double)cuk_h2f(cuk_d2h(x)) : dt == DT_BF16 ? (double)cuk_bf2f(cuk_d2bf(x)) : x;
}

/* Float to integer (sat_s, sat_u). */
static Scalar f_to_int(double x, DType to) {
    Scalar r;
    if (dtype_info[to].is_signed) r.i = sat_s(x, dtype_info[to].size);
    else r.u = sat_u(x, dtype_info[to].size);
    return r;
}

/* An integer's bits wrapped to `to` (two's complement), sign- or zero-extended. */
static Scalar int_wrap(uint64_t bits, DType to) {
    Scalar r;
    int n = 8 * dtype_info[to].size;
    uint64_t m = n == 64 ? ~0ull : (1ull << n) - 1;
    bits &= m;
    if (dtype_info[to].is_signed && n < 64 && (bits >> (n - 1)) & 1) bits |= ~m;
    r.u = bits;
    return r;
}

Scalar scalar_cast(Scalar v, DType from, DType to) {
    Scalar r;
    memset(&r, 0, sizeof r);
    if (dtype_is_complex(to)) { /* the parts; a real number is the real part */
        DType pt = dtype_part(to);
        if (dtype_is_complex(from)) {
            r.z[0] = scalar_cast((Scalar){.f = v.z[0]}, dtype_part(from), pt).f;
            r.z[1] = scalar_cast((Scalar){.f = v.z[1]}, dtype_part(from), pt).f;
        } else {
            r.z[0] = scalar_cast(v, from, pt).f;
        }
        return r;
    }
    if (dtype_is_complex(from)) return scalar_cast((Scalar){.f = v.z[0]}, dtype_part(from), to); /* astype */
    const DTypeInfo *fi = &dtype_info[from];
    if (to == DT_BOOL) {
        r.i = fi->is_float ? (v.f != 0) : (v.u != 0);
        return r;
    }
    if (fi->is_float) {
        double x = fround(from, v.f); /* a literal's value may not be rounded to its type yet */
        if (dtype_info[to].is_float) r.f = fround(to, x);
        else r = f_to_int(x, to);
        return r;
    }
    /* From an integer or bool: C's conversions (wrap for integers; one rounding for
       floats, so int64 -> f32 goes directly, not through double, and the halves round
       from an odd-rounded double, which is as good). */
    bool sgn = from == DT_BOOL || fi->is_signed;
    switch (to) {
    case DT_F32: r.f = sgn ? (double)(float)v.i : (double)(float)v.u; break;
    case DT_F64: r.f = sgn ? (double)v.i : (double)v.u; break;
    case DT_F16:
    case DT_BF16: r.f = fround(to, sgn ? cuk_i2d_odd(v.i) : cuk_u2d_odd(v.u)); break;
    default: r = int_wrap(v.u, to);
    }
    return r;
}

void rt_error(RtErr *e, Loc loc, const char *fmt, ...) {
    if (!e || e->set) return; /* the first error is the one that explains the others */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->loc = loc;
    e->set = true;
}

void rt_report(const RtErr *e, Diag *d) {
    if (e && e->set) diag_error(d, e->loc, "%s", e->msg);
}
