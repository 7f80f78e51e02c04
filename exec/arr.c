/* Host arrays (dense, C order, reference counted), scalar casts with the language's
   conversion rules, and run-time error records. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec.h"

/* Refuse sizes no machine here could hold, before asking malloc: under overcommit a
   huge malloc may "succeed" and the process die later, and sanitizers abort on it. */
uint64_t arr_max_bytes(void) {
    static uint64_t lim;
    if (!lim) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        uint64_t phys = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz : 0;
        lim = (uint64_t)1 << 40;
        if (phys && phys * 2 < lim) lim = phys * 2;
    }
    return lim;
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
    return aligned_alloc(64, bytes);
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

Arr *arr_scalar(DType dt, Scalar v) {
    Arr *a = arr_new(dt, 0, NULL);
    if (!a) return NULL;
    switch (dt) {
#define X(n, s, ct, ut, isf, isi, iss, npy)                                                  \
    case DT_##n:                                                                             \
        *(ct *)a->data = isf ? (ct)v.f : dt == DT_BOOL ? (ct)(v.i != 0) : iss ? (ct)v.i : (ct)v.u; \
        break;
        DTYPES(X)
#undef X
    default: die("bad dtype %d", (int)dt);
    }
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
    Scalar s;
    s.u = 0;
    ASSERT(i >= 0 && i < a->size);
    switch (a->dt) {
#define X(n, st, ct, ut, isf, isi, iss, npy)                                                  \
    case DT_##n: {                                                                           \
        ct x = ((const ct *)a->data)[i];                                                     \
        if (isf)                                                                             \
            s.f = (double)x;                                                                 \
        else if (iss || DT_##n == DT_BOOL)                                                   \
            s.i = (int64_t)x;                                                                \
        else                                                                                 \
            s.u = (uint64_t)x;                                                               \
        break;                                                                               \
    }
        DTYPES(X)
#undef X
    default: die("bad dtype %d", (int)a->dt);
    }
    return s;
}

/* Float to integer: truncate toward zero, saturate at the range, NaN -> 0 (as CUDA's
   cvt.rzi.sat). The bounds are exact powers of two, so the comparisons are exact. */
static int64_t f_to_i64(double x, double lo, double hi_excl, int64_t lo_i, int64_t hi_i) {
    if (x != x) return 0;
    if (x >= hi_excl) return hi_i;
    if (x <= lo) return lo_i;
    return (int64_t)x;
}
static uint64_t f_to_u64(double x, double hi_excl, uint64_t hi_u) {
    if (x != x || x <= 0) return 0;
    if (x >= hi_excl) return hi_u;
    return (uint64_t)x;
}

Scalar scalar_cast(Scalar v, DType from, DType to) {
    Scalar r;
    r.u = 0;
    const DTypeInfo *fi = &dtype_info[from];
    if (to == DT_BOOL) {
        r.i = fi->is_float ? (v.f != 0) : (v.u != 0);
        return r;
    }
    if (fi->is_float) {
        double x = from == DT_F32 ? (double)(float)v.f : v.f;
        switch (to) {
        case DT_I32: r.i = f_to_i64(x, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX); break;
        case DT_I64:
            r.i = f_to_i64(x, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX);
            break;
        case DT_U32: r.u = f_to_u64(x, 4294967296.0, UINT32_MAX); break;
        case DT_U64: r.u = f_to_u64(x, 18446744073709551616.0, UINT64_MAX); break;
        case DT_F32: r.f = (double)(float)x; break;
        case DT_F64: r.f = x; break;
        default: die("bad cast target %d", (int)to);
        }
        return r;
    }
    /* From an integer or bool: C's conversions (wrap for integers; one rounding for
       floats, so int64 -> f32 goes directly, not through double). */
    bool sgn = from == DT_BOOL || fi->is_signed;
    switch (to) {
    case DT_I32: r.i = sgn ? (int64_t)(int32_t)v.i : (int64_t)(int32_t)(uint32_t)v.u; break;
    case DT_I64: r.i = sgn ? v.i : (int64_t)v.u; break;
    case DT_U32: r.u = sgn ? (uint64_t)(uint32_t)v.i : (uint64_t)(uint32_t)v.u; break;
    case DT_U64: r.u = sgn ? (uint64_t)v.i : v.u; break;
    case DT_F32: r.f = sgn ? (double)(float)v.i : (double)(float)v.u; break;
    case DT_F64: r.f = sgn ? (double)v.i : (double)v.u; break;
    default: die("bad cast target %d", (int)to);
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
