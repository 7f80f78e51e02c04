/* The caching device-memory pool (size-class bins, no driver call on a hit), pinned
   host memory and memory copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "internal.h"

/* Size classes: 512 bytes, then powers of two to 1 MiB (classes 0..11), then four
   steps per power of two (at most 25% waste) up to 2^63. */
#define SMALL_CLASSES 12
#define NCLASS (SMALL_CLASSES + 4 * (63 - 20))
#define MAXDEV 64

typedef struct Block {
    CUdeviceptr ptr;
    size_t size; /* the class size: what the driver gave us */
    size_t req;  /* what the caller asked for (for stats) */
    Device *dev;
    /* Stream order: the stream the block was last handed out on (NULL: the legacy
       default stream), and when it was freed from a stream other than the legacy one, an
       event recorded there at the free. Reusing the block on another stream first makes
       that stream wait for the event (on the device), so no kernel still reading the
       block from its old stream sees it overwritten. */
    CUstream stream;
    CUevent ev;
    bool ev_pending; /* ev recorded at the last free, not yet waited for by a reuse */
    /* The stream is another library's (cuk_stream_is_foreign), which may be destroyed
       without cuk knowing: no driver call names it after the allocation. Freed, such a
       block is reused on its own stream as is, and on another only after the context's
       work is finished (foreign_pending). */
    bool foreign;
    bool foreign_pending;
    struct PoolCapture *cap; /* the graph it belongs to (pool_capture_begin), or NULL */
    bool cap_free;           /* freed by its user: the capture may reuse it */
    struct Block *cap_next;  /* in cap->all */
    struct Block *next; /* in a bin's free list or a hash chain */
} Block;

struct PoolCapture {
    bool active;
    Block *all; /* every block of the graph */
};
static _Thread_local PoolCapture *capturing;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static Block *bins[MAXDEV][NCLASS];
static Block **live; /* hash of live blocks by pointer, chained */
static size_t nlive, live_cap;
static cuk_mem_stats st;

static int clz64(uint64_t x) { return __builtin_clzll(x); }

/* Class index and size for a request; -1 if absurdly large. */
int pool_size_class(size_t bytes, size_t *size) {
    if (bytes <= 512) {
        *size = 512;
        return 0;
    }
    int k = 63 - clz64((uint64_t)bytes - 1); /* 2^k < bytes <= 2^(k+1) */
    if (k + 1 <= 20) {
        *size = (size_t)1 << (k + 1);
        return k + 1 - 9;
    }
    if (k >= 62) return -1;
    size_t base = (size_t)1 << k, q = base >> 2;
    size_t j = (bytes - base + q - 1) / q; /* 1..4 */
    *size = base + j * q;
    return SMALL_CLASSES + (k - 20) * 4 + (int)(j - 1);
}

static size_t slot(CUdeviceptr p) { return (size_t)(((p >> 8) * 0x9E3779B97F4A7C15ull) >> 20) & (live_cap - 1); }

static bool live_grow(void) {
    size_t ncap = live_cap ? live_cap * 2 : 1024;
    Block **nl = calloc(ncap, sizeof *nl);
    if (!nl) return false;
    Block **old = live;
    size_t ocap = live_cap;
    live = nl;
    live_cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        for (Block *b = old[i], *nx; b; b = nx) {
            nx = b->next;
            size_t h = slot(b->ptr);
            b->next = live[h];
            live[h] = b;
        }
    free(old);
    return true;
}

static bool live_insert(Block *b) {
    if (nlive + 1 > live_cap && !live_grow()) return false;
    size_t h = slot(b->ptr);
    b->next = live[h];
    live[h] = b;
    nlive++;
    return true;
}

static Block *live_remove(CUdeviceptr p) {
    if (!live_cap) return NULL;
    for (Block **pp = &live[slot(p)]; *pp; pp = &(*pp)->next)
        if ((*pp)->ptr == p) {
            Block *b = *pp;
            *pp = b->next;
            b->next = NULL;
            nlive--;
            return b;
        }
    return NULL;
}

static void note_peak(void) {
    if (st.in_use + st.cached > st.peak) st.peak = st.in_use + st.cached;
}

/* Frees every cached block (all devices). Called with pool_lock held; the blocks are
   unlinked first so the driver calls can run without the lock held elsewhere. */
static Block *take_cached_locked(void) {
    Block *all = NULL;
    for (int d = 0; d < MAXDEV; d++)
        for (int c = 0; c < NCLASS; c++)
            while (bins[d][c]) {
                Block *b = bins[d][c];
                bins[d][c] = b->next;
                st.cached -= b->size;
                b->next = all;
                all = b;
            }
    return all;
}

static cuk_status free_blocks(Block *all) {
    cuk_status first = CUK_OK;
    char msg[1024] = "";
    for (Block *b = all, *nx; b; b = nx) {
        nx = b->next;
        cuk_status s = ctx_make_current(b->dev);
        if (!s && b->ev) cu.cuEventDestroy(b->ev);
        CUresult r = s ? CUDA_SUCCESS : cu.cuMemFree(b->ptr);
        if (!s && r) s = cu_fail(r, "cuMemFree_v2");
        if (s && !first) {
            first = s;
            snprintf(msg, sizeof msg, "%s", cuk_last_error());
        }
        free(b);
    }
    if (first) err_set(first, "%s", msg);
    return first;
}

cuk_status cuk_mem_trim(void) {
    pthread_mutex_lock(&pool_lock);
    Block *all = take_cached_locked();
    pthread_mutex_unlock(&pool_lock);
    return free_blocks(all);
}

static void human(char *buf, size_t n, size_t bytes) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int i = 0;
    while (v >= 1024 && i < 4) v /= 1024, i++;
    snprintf(buf, n, "%.1f %s", v, u[i]);
}

/* The legacy default stream has two names: NULL and CU_STREAM_LEGACY (0x1). */
static CUstream norm_stream(CUstream s) { return s == (CUstream)CUK_STREAM_LEGACY ? NULL : s; }

/* Makes `to` wait for the work queued on b's old stream up to its free: nothing when the
   streams are the same; the event recorded at the free when there is one; else (freed on
   the legacy stream, reused on another) an event recorded on the legacy stream now,
   which covers that work. Called without pool_lock. */
static cuk_status order_reuse(Block *b, CUstream to) {
    if (b->stream == to) return CUK_OK;
    cuk_status s = ctx_make_current(b->dev);
    if (s) return s;
    if (b->foreign_pending) {
        /* the stream that last used it cannot be named: wait for all the work */
        b->foreign_pending = false;
        CU_CHECK(cu.cuCtxSynchronize(), "cuCtxSynchronize");
        return CUK_OK;
    }
    if (b->ev_pending) {
        b->ev_pending = false;
        CU_CHECK(cu.cuStreamWaitEvent(to, b->ev, 0), "cuStreamWaitEvent");
        return CUK_OK;
    }
    return cuk_stream_wait_raw(to ? (uintptr_t)to : CUK_STREAM_LEGACY, CUK_STREAM_LEGACY);
}

cuk_status cuk_mem_alloc(cuk_devptr *out, size_t bytes) { return cuk_mem_alloc_on(out, bytes, NULL); }

cuk_status cuk_mem_alloc_on(cuk_devptr *out, size_t bytes, cuk_stream *on) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_mem_alloc: NULL argument");
    CUstream to = norm_stream(stream_raw(on));
    *out = 0;
    Device *d;
    cuk_status s = dev_selected(&d);
    if (s) return s;
    size_t size;
    int c = pool_size_class(bytes, &size);
    if (c < 0) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of device memory: asked for %zu bytes", bytes);

    bool foreign = cuk_stream_is_foreign(on);
    pthread_mutex_lock(&pool_lock);
    Block *b = NULL, **bp = &bins[d->index][c];
    if (!capturing && *bp) {
        /* a block of this stream if one of the first few is (no ordering needed), else
           the most recently freed */
        Block **q = bp;
        for (int k = 0; k < 8 && *q; k++, q = &(*q)->next)
            if ((*q)->stream == to) {
                bp = q;
                break;
            }
        b = *bp;
    }
    if (capturing) {
        /* a block this capture freed, of the same class: reused in the capture's order */
        for (Block *x = capturing->all; x; x = x->cap_next)
            if (x->cap_free && x->dev == d && x->size == size) {
                x->cap_free = false;
                x->req = bytes;
                if (!live_insert(x)) break;
                st.in_use += x->size;
                st.requested += bytes;
                st.allocs++;
                st.hits++;
                pthread_mutex_unlock(&pool_lock);
                *out = x->ptr;
                return CUK_OK;
            }
    }
    if (b) {
        *bp = b->next;
        st.cached -= b->size;
        b->req = bytes;
        if (!live_insert(b)) { /* host OOM: put it back */
            b->next = bins[d->index][c];
            bins[d->index][c] = b;
            st.cached += b->size;
            pthread_mutex_unlock(&pool_lock);
            return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_mem_alloc: out of host memory");
        }
        st.in_use += b->size;
        st.requested += bytes;
        st.allocs++;
        st.hits++;
        pthread_mutex_unlock(&pool_lock);
        if (b->stream != to || b->ev_pending) {
            /* a block of another stream (rare: streams mostly reuse their own blocks) */
            if ((s = order_reuse(b, to))) {
                cuk_mem_free(b->ptr);
                return s;
            }
            b->ev_pending = false;
            b->stream = to;
        }
        b->foreign = foreign;
        b->foreign_pending = false;
        *out = b->ptr;
        return CUK_OK;
    }
    pthread_mutex_unlock(&pool_lock);

    if ((s = ctx_make_current(d))) return s;
    b = malloc(sizeof *b);
    if (!b) return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_mem_alloc: out of host memory");
    CUdeviceptr p = 0;
    CUresult r = fault_hit(FAULT_ALLOC) ? CUDA_ERROR_OUT_OF_MEMORY : cu.cuMemAlloc(&p, size);
    bool retried = false;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        /* Cached blocks of other classes may be what stands in the way. */
        pthread_mutex_lock(&pool_lock);
        Block *all = take_cached_locked();
        st.oom_retries++;
        pthread_mutex_unlock(&pool_lock);
        free_blocks(all);
        ctx_make_current(d);
        r = fault_hit(FAULT_ALLOC) ? CUDA_ERROR_OUT_OF_MEMORY : cu.cuMemAlloc(&p, size);
        retried = true;
    }
    if (r) {
        free(b);
        if (r != CUDA_ERROR_OUT_OF_MEMORY) return cu_fail(r, "cuMemAlloc_v2");
        size_t fr = 0, tot = 0;
        cu.cuMemGetInfo(&fr, &tot);
        char hb[32], hf[32], ht[32];
        human(hb, sizeof hb, bytes), human(hf, sizeof hf, fr), human(ht, sizeof ht, tot);
        return err_set(CUK_ERR_OUT_OF_MEMORY,
                       "out of device memory: asked for %zu bytes (%s), %zu free of %zu (%s free of %s)%s",
                       bytes, hb, fr, tot, hf, ht, retried ? " after releasing the pool's cached blocks" : "");
    }
    b->ptr = p;
    b->size = size;
    b->req = bytes;
    b->dev = d;
    b->stream = to;
    b->ev = NULL;
    b->ev_pending = false;
    b->foreign = foreign;
    b->foreign_pending = false;
    b->cap = capturing;
    b->cap_free = false;
    b->cap_next = NULL;
    b->next = NULL;
    pthread_mutex_lock(&pool_lock);
    if (!live_insert(b)) {
        pthread_mutex_unlock(&pool_lock);
        cu.cuMemFree(p);
        free(b);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_mem_alloc: out of host memory");
    }
    st.in_use += size;
    st.requested += bytes;
    st.allocs++;
    st.driver_allocs++;
    if (b->cap) {
        b->cap_next = b->cap->all;
        b->cap->all = b;
    }
    note_peak();
    pthread_mutex_unlock(&pool_lock);
    *out = p;
    return CUK_OK;
}

cuk_status cuk_mem_free(cuk_devptr p) {
    if (!p) return CUK_OK;
    pthread_mutex_lock(&pool_lock);
    Block *b = live_remove(p);
    if (!b) {
        pthread_mutex_unlock(&pool_lock);
        return err_set(CUK_ERR_INVALID,
                       "cuk_mem_free: 0x%llx was not allocated by cuk_mem_alloc (or was freed already)", p);
    }
    if (b->cap || capturing) {
        /* a graph's block: reusable by its capture while that runs, else the graph's
           until it is destroyed. An ordinary block freed while this thread captures
           (work outside the capture may still use it) is retired into the capture:
           never reused by it, back to the pool with the graph. */
        st.in_use -= b->size;
        st.requested -= b->req;
        if (!b->cap) {
            b->cap = capturing;
            b->cap_next = capturing->all;
            capturing->all = b;
        } else {
            b->cap_free = b->cap->active || b->cap_free;
        }
        pthread_mutex_unlock(&pool_lock);
        return CUK_OK;
    }
    if (b->stream && b->foreign) {
        b->foreign_pending = true; /* another library's stream: not named again */
    } else if (b->stream) {
        /* freed from a non-legacy stream: remember where that stream is (an event) for a
           reuse on another one. A failure here (the stream is gone) leaves the block out
           of the cache: it is released to the driver, which orders that itself. */
        pthread_mutex_unlock(&pool_lock);
        cuk_status s = ctx_make_current(b->dev);
        CUresult r = s ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
        if (!r && !b->ev) r = cu.cuEventCreate(&b->ev, CU_EVENT_DISABLE_TIMING);
        if (!r) r = cu.cuEventRecord(b->ev, b->stream);
        pthread_mutex_lock(&pool_lock);
        if (r) {
            st.in_use -= b->size;
            st.requested -= b->req;
            pthread_mutex_unlock(&pool_lock);
            b->next = NULL;
            if (!s) cu.cuCtxSynchronize();
            return free_blocks(b);
        }
        b->ev_pending = true;
    }
    size_t ignored;
    int c = pool_size_class(b->size, &ignored);
    st.in_use -= b->size;
    st.requested -= b->req;
    st.cached += b->size;
    b->next = bins[b->dev->index][c];
    bins[b->dev->index][c] = b;
    pthread_mutex_unlock(&pool_lock);
    return CUK_OK;
}

PoolCapture *pool_capture_begin(void) {
    PoolCapture *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->active = true;
    capturing = c;
    return c;
}

void pool_capture_end(PoolCapture *c) {
    if (capturing == c) capturing = NULL;
    c->active = false;
}

bool pool_capture_adopt(PoolCapture *c, CUdeviceptr p) {
    pthread_mutex_lock(&pool_lock);
    Block *b = NULL;
    if (live_cap)
        for (b = live[slot(p)]; b && b->ptr != p; b = b->next) {}
    if (b && !b->cap) {
        b->cap = c;
        b->cap_next = c->all;
        c->all = b;
    }
    pthread_mutex_unlock(&pool_lock);
    return b != NULL;
}

void pool_capture_release(PoolCapture *c) {
    if (!c) return;
    if (capturing == c) capturing = NULL;
    pthread_mutex_lock(&pool_lock);
    for (Block *b = c->all, *nx; b; b = nx) {
        nx = b->cap_next;
        Block *x = NULL;
        if (live_cap)
            for (x = live[slot(b->ptr)]; x && x != b; x = x->next) {}
        b->cap = NULL;
        b->cap_next = NULL;
        b->cap_free = false;
        b->stream = NULL; /* the graph's work is finished */
        b->ev_pending = false;
        b->foreign = b->foreign_pending = false;
        if (x) continue; /* still held by a user: an ordinary block now */
        size_t ignored;
        int k = pool_size_class(b->size, &ignored);
        st.cached += b->size;
        b->next = bins[b->dev->index][k];
        bins[b->dev->index][k] = b;
    }
    pthread_mutex_unlock(&pool_lock);
    free(c);
}

void pool_stream_gone(CUstream gone) {
    if (!(gone = norm_stream(gone))) return;
    pthread_mutex_lock(&pool_lock);
    for (size_t i = 0; i < live_cap; i++)
        for (Block *b = live[i]; b; b = b->next)
            if (b->stream == gone) b->stream = NULL;
    for (int d = 0; d < MAXDEV; d++)
        for (int c = 0; c < NCLASS; c++)
            for (Block *b = bins[d][c]; b; b = b->next)
                if (b->stream == gone) b->stream = NULL, b->ev_pending = false;
    pthread_mutex_unlock(&pool_lock);
}

cuk_status cuk_mem_stats_get(cuk_mem_stats *s) {
    if (!s) return err_set(CUK_ERR_INVALID, "cuk_mem_stats_get: NULL argument");
    pthread_mutex_lock(&pool_lock);
    *s = st;
    pthread_mutex_unlock(&pool_lock);
    return CUK_OK;
}

static void stage_release_all(void);

void pool_release_all(void) {
    pthread_mutex_lock(&pool_lock);
    Block *all = take_cached_locked();
    /* Live blocks the caller never freed: the context keeps them until it goes, but
       our bookkeeping must not leak. */
    for (size_t i = 0; i < live_cap; i++)
        for (Block *b = live[i], *nx; b; b = nx) {
            nx = b->next;
            b->next = all;
            all = b;
        }
    free(live);
    live = NULL;
    live_cap = nlive = 0;
    memset(&st, 0, sizeof st);
    pthread_mutex_unlock(&pool_lock);
    free_blocks(all);
    stage_release_all();
}

/* ---- pinned host memory ------------------------------------------------------------------ */

cuk_status cuk_host_alloc(void **p, size_t bytes) {
    if (!p) return err_set(CUK_ERR_INVALID, "cuk_host_alloc: NULL argument");
    *p = NULL;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CUresult r = cu.cuMemHostAlloc(p, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of pinned host memory: asked for %zu bytes", bytes);
    if (r) return cu_fail(r, "cuMemHostAlloc");
    return CUK_OK;
}

cuk_status cuk_host_free(void *p) {
    if (!p) return CUK_OK;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CU_CHECK(cu.cuMemFreeHost(p), "cuMemFreeHost");
    return CUK_OK;
}

/* ---- copies ---------------------------------------------------------------------------------- */

#define WITH_DEV()                                                                               \
    Device *d;                                                                                   \
    cuk_status s_ = dev_current(&d);                                                             \
    if (s_) return s_;                                                                           \
    (void)d

/* Pageable copies go through two pinned staging buffers per device: the host memcpy
   of one chunk overlaps the DMA of the other. The driver's own pageable path reached
   only 8 GB/s htod on an H200 against 55 GB/s pinned. The staging stream is a blocking
   one, so like cuMemcpyHtoD it is ordered after work on the legacy default stream. */
#define STAGE_CHUNK ((size_t)8 << 20)
#define STAGE_MIN ((size_t)1 << 20) /* below this a direct copy is as fast */

typedef struct Staging {
    pthread_mutex_t lock;
    bool ready, failed;
    void *buf[2];
    CUevent ev[2];
    CUstream s;
    Device *d;
} Staging;
static Staging stage[MAXDEV];
static pthread_once_t stage_once = PTHREAD_ONCE_INIT;
static void stage_init_locks(void) {
    for (int i = 0; i < MAXDEV; i++) pthread_mutex_init(&stage[i].lock, NULL);
}

/* One thread copies pageable memory at about 11 GB/s, below what the DMA engines do,
   so the host side of a staged copy is split over a few helper threads. */
#define NCOPY 4
static struct {
    pthread_mutex_t m;
    pthread_cond_t go, done;
    pthread_t th[NCOPY];
    int nthreads, gen, pending;
    bool quit;
    unsigned char *dst;
    const unsigned char *src;
    size_t len;
} cp = {.m = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static void slice(int w, int n, size_t len, size_t *off, size_t *sz) {
    size_t per = (len / (size_t)n + 63) & ~(size_t)63;
    *off = per * (size_t)w < len ? per * (size_t)w : len;
    *sz = *off + per < len ? per : len - *off;
}

static void *copier(void *arg) {
    int w = (int)(intptr_t)arg, seen = 0;
    pthread_mutex_lock(&cp.m);
    for (;;) {
        while (!cp.quit && cp.gen == seen) pthread_cond_wait(&cp.go, &cp.m);
        if (cp.quit) break;
        seen = cp.gen;
        unsigned char *dst = cp.dst;
        const unsigned char *src = cp.src;
        size_t off, sz;
        slice(w, cp.nthreads + 1, cp.len, &off, &sz);
        pthread_mutex_unlock(&cp.m);
        if (sz) memcpy(dst + off, src + off, sz);
        pthread_mutex_lock(&cp.m);
        if (--cp.pending == 0) pthread_cond_signal(&cp.done);
    }
    pthread_mutex_unlock(&cp.m);
    return NULL;
}

/* memcpy over the helper threads (started on first use); the caller takes slice 0.
   Only one staged copy runs per device at a time, but several devices may: cp.m
   serialises them. */
static pthread_mutex_t cp_user = PTHREAD_MUTEX_INITIALIZER;
static void par_memcpy(void *dst, const void *src, size_t len) {
    pthread_mutex_lock(&cp_user);
    pthread_mutex_lock(&cp.m);
    if (!cp.nthreads && !cp.quit) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int want = ncpu > NCOPY ? NCOPY - 1 : (int)ncpu - 1;
        for (int i = 0; i < want; i++)
            if (pthread_create(&cp.th[i], NULL, copier, (void *)(intptr_t)(i + 1)) == 0) cp.nthreads++;
            else break;
    }
    int n = cp.nthreads;
    if (n == 0) {
        pthread_mutex_unlock(&cp.m);
        memcpy(dst, src, len);
        pthread_mutex_unlock(&cp_user);
        return;
    }
    cp.dst = dst;
    cp.src = src;
    cp.len = len;
    cp.pending = n;
    cp.gen++;
    pthread_cond_broadcast(&cp.go);
    pthread_mutex_unlock(&cp.m);
    size_t off, sz;
    slice(0, n + 1, len, &off, &sz);
    memcpy(dst, src, sz);
    pthread_mutex_lock(&cp.m);
    while (cp.pending) pthread_cond_wait(&cp.done, &cp.m);
    pthread_mutex_unlock(&cp.m);
    pthread_mutex_unlock(&cp_user);
}

static void copiers_stop(void) {
    pthread_mutex_lock(&cp_user);
    pthread_mutex_lock(&cp.m);
    int n = cp.nthreads;
    cp.quit = true;
    pthread_cond_broadcast(&cp.go);
    pthread_mutex_unlock(&cp.m);
    for (int i = 0; i < n; i++) pthread_join(cp.th[i], NULL);
    pthread_mutex_lock(&cp.m);
    cp.nthreads = 0;
    cp.quit = false;
    pthread_mutex_unlock(&cp.m);
    pthread_mutex_unlock(&cp_user);
}

static bool staging_wanted(const void *host, size_t bytes) {
    if (bytes < STAGE_MIN) return false;
    const char *e = getenv("CUK_NO_STAGING");
    if (e && *e && strcmp(e, "0")) return false;
    /* Already pinned memory gains nothing from another copy. cuPointerGetAttributes
       (unlike cuMemHostGetFlags) answers for any pointer without failing, so probing
       pageable memory raises no API error under compute-sanitizer. */
    unsigned memtype = 0;
    int attr = 2; /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */
    void *data = &memtype;
    if (cu.cuPointerGetAttributes &&
        cu.cuPointerGetAttributes(1, &attr, &data, (CUdeviceptr)(uintptr_t)host) == CUDA_SUCCESS &&
        memtype == 1 /* CU_MEMORYTYPE_HOST: page-locked */)
        return false;
    return true;
}

/* The device's staging set, locked; NULL (use a direct copy) if busy or unavailable. */
static Staging *stage_acquire(Device *d) {
    pthread_once(&stage_once, stage_init_locks);
    Staging *g = &stage[d->index];
    if (pthread_mutex_trylock(&g->lock)) return NULL; /* another thread is copying */
    if (!g->ready && !g->failed) {
        g->d = d;
        bool ok = cu.cuStreamCreate(&g->s, 0) == CUDA_SUCCESS;
        for (int i = 0; i < 2 && ok; i++)
            ok = cu.cuMemHostAlloc(&g->buf[i], STAGE_CHUNK, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS &&
                 cu.cuEventCreate(&g->ev[i], CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
        g->ready = ok;
        g->failed = !ok; /* no pinned memory to spare: direct copies from now on */
    }
    if (!g->ready) {
        pthread_mutex_unlock(&g->lock);
        return NULL;
    }
    return g;
}

static void stage_release_all(void) {
    pthread_once(&stage_once, stage_init_locks);
    copiers_stop();
    for (int i = 0; i < MAXDEV; i++) {
        Staging *g = &stage[i];
        pthread_mutex_lock(&g->lock);
        if (g->d && (g->buf[0] || g->s) && ctx_make_current(g->d)) {
            pthread_mutex_unlock(&g->lock);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            if (g->buf[k]) cu.cuMemFreeHost(g->buf[k]);
            if (g->ev[k]) cu.cuEventDestroy(g->ev[k]);
            g->buf[k] = NULL;
            g->ev[k] = NULL;
        }
        if (g->s) cu.cuStreamDestroy(g->s);
        g->s = NULL;
        g->ready = g->failed = false;
        pthread_mutex_unlock(&g->lock);
    }
}

static cuk_status staged_htod(Staging *g, CUdeviceptr dst, const unsigned char *src, size_t bytes) {
    for (size_t off = 0, k = 0; off < bytes; off += STAGE_CHUNK, k++) {
        size_t len = bytes - off < STAGE_CHUNK ? bytes - off : STAGE_CHUNK;
        int i = (int)(k & 1);
        if (k >= 2) CU_CHECK(cu.cuEventSynchronize(g->ev[i]), "cuEventSynchronize");
        par_memcpy(g->buf[i], src + off, len);
        CU_CHECK(cu.cuMemcpyHtoDAsync(dst + off, g->buf[i], len, g->s), "cuMemcpyHtoDAsync_v2");
        CU_CHECK(cu.cuEventRecord(g->ev[i], g->s), "cuEventRecord");
    }
    CU_CHECK(cu.cuStreamSynchronize(g->s), "cuStreamSynchronize");
    return CUK_OK;
}

static cuk_status staged_dtoh(Staging *g, unsigned char *dst, CUdeviceptr src, size_t bytes) {
    size_t nchunk = (bytes + STAGE_CHUNK - 1) / STAGE_CHUNK;
    for (size_t k = 0; k < nchunk && k < 2; k++) {
        size_t off = k * STAGE_CHUNK, len = bytes - off < STAGE_CHUNK ? bytes - off : STAGE_CHUNK;
        CU_CHECK(cu.cuMemcpyDtoHAsync(g->buf[k], src + off, len, g->s), "cuMemcpyDtoHAsync_v2");
        CU_CHECK(cu.cuEventRecord(g->ev[k], g->s), "cuEventRecord");
    }
    for (size_t k = 0; k < nchunk; k++) {
        int i = (int)(k & 1);
        size_t off = k * STAGE_CHUNK, len = bytes - off < STAGE_CHUNK ? bytes - off : STAGE_CHUNK;
        CU_CHECK(cu.cuEventSynchronize(g->ev[i]), "cuEventSynchronize");
        par_memcpy(dst + off, g->buf[i], len);
        if (k + 2 < nchunk) {
            size_t o2 = (k + 2) * STAGE_CHUNK, l2 = bytes - o2 < STAGE_CHUNK ? bytes - o2 : STAGE_CHUNK;
            CU_CHECK(cu.cuMemcpyDtoHAsync(g->buf[i], src + o2, l2, g->s), "cuMemcpyDtoHAsync_v2");
            CU_CHECK(cu.cuEventRecord(g->ev[i], g->s), "cuEventRecord");
        }
    }
    return CUK_OK;
}

cuk_status cuk_memcpy_htod(cuk_devptr dst, const void *src, size_t bytes) {
    WITH_DEV();
    if (!bytes) return CUK_OK;
    Staging *g = staging_wanted(src, bytes) ? stage_acquire(d) : NULL;
    if (g) {
        cuk_status s = staged_htod(g, dst, src, bytes);
        pthread_mutex_unlock(&g->lock);
        return s;
    }
    CU_CHECK(cu.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD_v2");
    return CUK_OK;
}

cuk_status cuk_memcpy_dtoh(void *dst, cuk_devptr src, size_t bytes) {
    WITH_DEV();
    if (!bytes) return CUK_OK;
    Staging *g = staging_wanted(dst, bytes) ? stage_acquire(d) : NULL;
    if (g) {
        cuk_status s = staged_dtoh(g, dst, src, bytes);
        pthread_mutex_unlock(&g->lock);
        return s;
    }
    CU_CHECK(cu.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH_v2");
    return CUK_OK;
}

cuk_status cuk_memcpy_dtoh_on(void *dst, cuk_devptr src, size_t bytes, cuk_stream *s) {
    if (!s) return cuk_memcpy_dtoh(dst, src, bytes);
    cuk_status st = cuk_memcpy_dtoh_async(dst, src, bytes, s);
    return st ? st : cuk_stream_synchronize(s);
}

cuk_status cuk_memcpy_htod_on(cuk_devptr dst, const void *src, size_t bytes, cuk_stream *s) {
    return s ? cuk_memcpy_htod_async(dst, src, bytes, s) : cuk_memcpy_htod(dst, src, bytes);
}

cuk_status cuk_memcpy_dtod(cuk_devptr dst, cuk_devptr src, size_t bytes) {
    WITH_DEV();
    if (!bytes) return CUK_OK;
    CU_CHECK(cu.cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD_v2");
    return CUK_OK;
}

cuk_status cuk_memcpy_htod_async(cuk_devptr dst, const void *src, size_t bytes, cuk_stream *s) {
    WITH_DEV();
    if (!bytes) return CUK_OK;
    CU_CHECK(cu.cuMemcpyHtoDAsync(dst, src, bytes, stream_raw(s)), "cuMemcpyHtoDAsync_v2");
    return CUK_OK;
}

cuk_status cuk_memcpy_dtoh_async(void *dst, cuk_devptr src, size_t bytes, cuk_stream *s) {
    WITH_DEV();
    if (!bytes) return CUK_OK;
    CU_CHECK(cu.cuMemcpyDtoHAsync(dst, src, bytes, stream_raw(s)), "cuMemcpyDtoHAsync_v2");
    return CUK_OK;
}

cuk_status cuk_memcpy_dtod_async(cuk_devptr dst, cuk_devptr src, size_t bytes, cuk_stream *s) {
    WITH_DEV();
    if (!bytes) return CUK_OK;
    CU_CHECK(cu.cuMemcpyDtoDAsync(dst, src, bytes, stream_raw(s)), "cuMemcpyDtoDAsync_v2");
    return CUK_OK;
}

cuk_status cuk_memset_pattern(cuk_devptr dst, const void *pattern, int width, size_t bytes, cuk_stream *s) {
    if (!pattern) return err_set(CUK_ERR_INVALID, "cuk_memset_pattern: NULL pattern");
    if (width != 1 && width != 2 && width != 4)
        return err_set(CUK_ERR_INVALID, "cuk_memset_pattern: a pattern is 1, 2 or 4 bytes, not %d", width);
    if (bytes % (size_t)width)
        return err_set(CUK_ERR_INVALID, "cuk_memset_pattern: %zu bytes are not a whole number of %d-byte patterns", bytes,
                       width);
    if (width == 1) return cuk_memset_d8(dst, *(const unsigned char *)pattern, bytes, s);
    WITH_DEV();
    if (!bytes) return CUK_OK;
    if (width == 2) {
        unsigned short v;
        memcpy(&v, pattern, 2);
        if (!cu.cuMemsetD16Async) return err_set(CUK_ERR_DRIVER, "this CUDA driver has no cuMemsetD16Async");
        CU_CHECK(cu.cuMemsetD16Async(dst, v, bytes / 2, stream_raw(s)), "cuMemsetD16Async");
    } else {
        unsigned v;
        memcpy(&v, pattern, 4);
        if (!cu.cuMemsetD32Async) return err_set(CUK_ERR_DRIVER, "this CUDA driver has no cuMemsetD32Async");
        CU_CHECK(cu.cuMemsetD32Async(dst, v, bytes / 4, stream_raw(s)), "cuMemsetD32Async");
    }
    return CUK_OK;
}

cuk_status cuk_memset_d8(cuk_devptr dst, unsigned char value, size_t bytes, cuk_stream *s) {
    WITH_DEV();
    if (!bytes) return CUK_OK;
    CU_CHECK(cu.cuMemsetD8Async(dst, value, bytes, stream_raw(s)), "cuMemsetD8Async");
    return CUK_OK;
}
