/* The GPU executor: runs a function's host statements on the CPU (through the shared
   statement walker, run.h) and its kernels (the pipeline's plans and CUDA C, compiled by
   NVRTC through runtime/cuk.h) on the device. Arrays live on the device; they come back
   only where printed, saved, indexed on the host or returned. Scalars live on the host.
   A GpuSession compiles each plan once, so that a call (gpu_call) costs little more
   than its kernel launches. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ops.h compares unsigned values with 0 in its shared integer helpers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#include "kernels/ops.h"
#pragma GCC diagnostic pop
#include "compiler/bundle.h"
#include "compiler/pipeline.h"
#include "exec/gpu/order.h"
#include "exec/gpu/sort.h"
#include "exec/run.h"
#include "runtime/cuk.h"

/* Device memory shared by Values. Argument memory is borrowed: never freed here. */
typedef struct DBuf {
    cuk_devptr p;
    int refs;
    bool borrowed;
    struct DBuf *next; /* the session's free list */
} DBuf;

/* A value: a host scalar (rank 0) or a reference-counted device array. A kernel's
   rank-0 result stays on the device (buf set, s not yet) until something reads it on
   the host (settle), so a returned sum goes back to a device caller without a copy to
   the host and back. */
typedef struct Value {
    DType dt;
    int rank;
    int64_t shape[MAXRANK];
    Scalar s;  /* rank 0, on the host (buf NULL) */
    DBuf *buf; /* rank > 0; rank 0 still on the device */
    bool set;
} Value;

typedef struct Frame Frame;

/* Per kernel: its function handle and the storage a launch fills, kept between calls. */
/* An update kernel's output (update_form): the array it updates, the values it
   computes from reads that could see that array, and whether they read it only at the
   iteration index (a mask); inker marks k's own Vals by id, seen is reads_buf's. */
typedef struct Upd {
    Val *dst, *roots[3];
    bool at_i;
    bool *inker, *seen;
} Upd;

typedef struct KState {
    cuk_function *fn;
    cuk_function *sp, *sf; /* a segmented reduction's prepass and fix-up (kernel_segred) */
    cuk_function *opt[KE_COUNT]; /* the other entries (kernel_entry_suffix), on first use */
    bool opt_missing[KE_COUNT];  /* ... which the module lacks (a bundle from before them) */
    Upd *upd;         /* the kernel's output is an update of an array (update_form) */
    Value *ins, *outs;
    long long *w;
    int *where; /* per parameter word: its index in ins (KP_IN) or outs (KP_OUT) */
    bool busy;  /* in use by a launch further up the stack (recursion) */
    int resident; /* blocks of fn resident on the device (kernel_needs_resident): 0 not yet
                     asked, -1 unknown */
} KState;

/* Per function (one per plan, same index): lookups precomputed at session creation. */
typedef struct FnState {
    const Fn *fn;
    const Plan *plan;
    int pi;
    const Kernel **writer; /* by Val id: the first kernel that writes it */
    Val **byid;            /* by Val id: the kernels' Vals, for error locations */
    KState *ks;            /* by kernel id */
    bool has_err;          /* some kernel takes a KP_ERR word */
    const Kernel *direct;  /* the function is one elementwise kernel of its parameters: see
                              call_direct */
    bool *returned;        /* by Val id: the value of a return statement (a single result) */
    Frame *spare;          /* a frame kept for the next call */
} FnState;

/* CUK_TRACE_INPLACE=1: a line on stderr per update kernel (a[...] = e, scatter, mask)
   saying whether it wrote into the array's own buffer (tests pin it, tests/gpu). */
static int trace_inplace = -1;

/* CUK_TIMING=1: start-up figures on stderr (bench/startup.py): when the context is
   ready and when the first kernel has finished, in ms since the process's first call
   here (cukc calls gpu_timing_start at the top of main). */
static double timing_t0 = -1;
static bool timing_on, timing_first_done;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void gpu_timing_start(void) {
    timing_on = getenv("CUK_TIMING") != NULL;
    timing_t0 = now_ms();
}

static void timing_mark(const char *what) {
    if (timing_on) fprintf(stderr, "cuk-timing: %s at %.3f ms\n", what, now_ms() - timing_t0);
}

struct GpuSession {
    const Compiled *c;   /* the program, its plans and their CUDA C */
    bool fast_math;      /* NVRTC --fmad=true (gpu_session_fast_math) */
    Profile *prof;       /* time per statement (gpu_session_profile), or NULL */
    cuk_event *pev[2];   /* with prof: the events around each launch */
    bool copy_measured;  /* with prof: the copy bandwidth was measured (prof_copy) */
    double copy_gbs;     /* its GB/s (0: unknown) */
    Arena arena;         /* per-function state */
    const PlanSet *ps;
    int nfs;
    FnState *fs;
    cuk_module **mods;   /* per plan, compiled on first use */
    cuk_module *sort_mods[DT_COUNT]; /* per element type, the sort kernels' (exec/gpu/sort.h) */
    const Bundle *bundle; /* when set, modules are loaded from its images, not compiled */
    pthread_mutex_t lock; /* one call at a time */
    DBuf *free_bufs;
    /* What calls on one stream reuse from call to call; a call on another stream has its
       own, so that calls on different streams never share memory while both run. */
    struct SState *sstates; /* most recently used first, at most MAX_SSTATES */
    struct SState *ss;      /* the running call's stream's */
    RowDevice row_dev;   /* what row launches need of the device (row_device) */
    bool row_dev_known;
    /* the call in progress */
    bool dev_scalars;    /* the caller takes a returned scalar on the device (GPU_CALL_DEVICE_SCALARS) */
    RtErr *err;
    Run *run;
    int depth;           /* run_fn's nesting: 1 in the called function's own frame */
    /* out=: where the result goes (gpu_call_into), when no argument overlaps it; the
       kernel that computes the returned value writes there (into_used) */
    const GpuVal *into;
    bool into_used;
};

/* Per stream (GpuSession.sstates): the scratch block (reduction partials, scan tile
   states), reused by the stream's calls in its order, and the bounds checks' error words. */
typedef struct SState {
    uintptr_t handle;    /* the stream's (cuk_stream_handle) */
    cuk_devptr scratch;
    size_t scratch_size;
    cuk_devptr errblk;   /* 4 words per plan for the kernels' bounds checks (KP_ERR) */
    bool err_pending;    /* a kernel with a KP_ERR word ran since the block was read */
    struct SState *next;
} SState;
#define MAX_SSTATES 16

/* The stream of the call this thread is making (order.h). */
static _Thread_local cuk_stream *call_stream;

/* gpu_read refused to wait during a capture (gpu_fail says so). */
static _Thread_local bool read_refused;

cuk_stream *gpu_stream(void) { return call_stream; }

bool gpu_read(void *dst, cuk_devptr src, size_t bytes) {
    if (cuk_capturing()) return !(read_refused = true); /* gpu_fail says why */
    return cuk_memcpy_dtoh_on(dst, src, bytes, call_stream) == CUK_OK;
}

bool gpu_write(cuk_devptr dst, const void *src, size_t bytes) {
    return cuk_memcpy_htod_on(dst, src, bytes, call_stream) == CUK_OK;
}

bool gpu_alloc(cuk_devptr *p, size_t bytes) { return cuk_mem_alloc_on(p, bytes, call_stream) == CUK_OK; }

static void sstate_free(SState *t) {
    cuk_mem_free(t->scratch); /* in the stream's order: no wait */
    cuk_mem_free(t->errblk);
    free(t);
}

/* The state of stream `on` (the call's), made the session's current one; NULL without
   host memory. Past MAX_SSTATES streams the least recently used one's goes. */
static SState *sstate_use(GpuSession *s, cuk_stream *on) {
    uintptr_t h = cuk_stream_handle(on);
    SState **pp = &s->sstates, *t;
    int n = 0;
    for (; (t = *pp); pp = &t->next, n++)
        if (t->handle == h) break;
    if (t) {
        *pp = t->next; /* to the front */
    } else {
        if (n >= MAX_SSTATES) {
            SState **q = &s->sstates;
            while ((*q)->next) q = &(*q)->next;
            sstate_free(*q);
            *q = NULL;
        }
        if (!(t = calloc(1, sizeof *t))) return NULL;
        t->handle = h;
    }
    t->next = s->sstates;
    s->sstates = t;
    s->ss = t;
    return t;
}

struct Frame {
    GpuSession *s;
    FnState *st;
    const Fn *fn;
    const Plan *plan;
    Value *slots;
    Value *memo;          /* per Val id, for the statement being run */
    bool *shaped;         /* memo holds at least the shape */
    unsigned char *tch;   /* per Val id: listed in touched */
    int *touched;         /* the ids whose memo or shape is set, cleared per statement */
    int ntouched;
    unsigned char *launching; /* per kernel id: a launch of it is under way here (its
                                 checks and shapes included: dim_leaves) */
    Value ret;
    Value rets[MAX_RESULTS]; /* several results */
    Operands ops; /* how the shape rules (run.h) read operands here */
    /* the S_SET being run (t_set): its value, and the slot's array when the slot alone
       holds it (see inplace_ok) */
    const Val *set_val;
    DBuf *own;
};

static int64_t nelem(const Value *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->shape[i];
    return n;
}

static void touch(Frame *f, int id) {
    if (!f->tch[id]) {
        f->tch[id] = 1;
        f->touched[f->ntouched++] = id;
    }
}

static void vrelease(GpuSession *s, Value *v) {
    DBuf *b = v->buf;
    if (b && --b->refs == 0) {
        if (!b->borrowed) cuk_mem_free(b->p);
        b->next = s->free_bufs;
        s->free_bufs = b;
    }
    v->buf = NULL;
    v->set = false;
}
static Value vretain(const Value *v) {
    Value r = *v;
    if (r.buf) r.buf->refs++;
    return r;
}

static DBuf *dbuf_new(GpuSession *s) {
    DBuf *b = s->free_bufs;
    if (b) s->free_bufs = b->next;
    else b = malloc(sizeof *b);
    if (b) *b = (DBuf){.refs = 1};
    return b;
}

static bool gpu_fail(GpuSession *s, Loc loc, const char *what) {
    /* a capture (cuk_stream_begin_capture) records work; it cannot wait for a value */
    if (!s->err->set && read_refused)
        rt_error(s->err, loc,
                 "%s: a CUDA graph cannot record a value coming back to the host (a size that depends on the data, a "
                 "scalar used by host code, print, or a reported bounds check); capture a function without one",
                 what);
    read_refused = false;
    if (!s->err->set) rt_error(s->err, loc, "%s: %s", what, cuk_last_error());
    return false;
}

static bool dalloc(GpuSession *s, Value *v, Loc loc) {
    v->buf = dbuf_new(s);
    if (!v->buf) return gpu_fail(s, loc, "out of host memory");
    size_t bytes = (size_t)nelem(v) * (size_t)dtype_info[v->dt].size;
    if (!gpu_alloc(&v->buf->p, bytes)) {
        v->buf->next = s->free_bufs;
        s->free_bufs = v->buf;
        v->buf = NULL;
        return gpu_fail(s, loc, "device allocation failed");
    }
    v->set = true;
    return true;
}

/* ---- device-side errors ---------------------------------------------------------------- */

/* Reads the kernels' error words (a synchronising copy) and reports the first error
   found, as the CPU backend words it. Clears the block. */
static bool check_dev_err(GpuSession *s) {
    if (!s->ss->err_pending || !s->ss->errblk || cuk_capturing()) return true;
    s->ss->err_pending = false;
    unsigned long long stack[4 * 16], *e = stack;
    size_t bytes = (size_t)s->nfs * 32;
    if (s->nfs > 16 && !(e = malloc(bytes))) return gpu_fail(s, (Loc){0}, "out of host memory");
    bool ok = gpu_read(e, s->ss->errblk, bytes);
    if (!ok) gpu_fail(s, (Loc){0}, "a kernel failed");
    for (int i = 0; ok && i < s->nfs; i++) {
        unsigned long long *w = &e[4 * i];
        if (!w[0]) continue;
        int id = (int)(w[0] - 1);
        const FnState *st = &s->fs[i];
        Loc loc = id >= 0 && id < st->fn->nvals && st->byid[id] ? st->byid[id]->loc : st->fn->loc;
        const Val *v = id >= 0 && id < st->fn->nvals ? st->byid[id] : NULL;
        if (v && v->op == OP_REDUCE && red_segs(v)) {
            /* a segmented reduction's offsets (emit_segred): the first bad one's key; word
               2 holds offs[i - 1] or n, whichever that key's message quotes */
            ok = shape_segments_error(s->err, v, (int64_t)(0x7fffffffffffffffull - w[3]), (int64_t)w[1], (int64_t)w[2],
                                      (int64_t)w[2]);
        } else {
            int64_t t;
            ok = shape_index(s->err, loc, (long long)w[1], v ? v->axis : 0, (long long)w[2], &t);
            ASSERT(!ok); /* a kernel only reports an index that is out of bounds */
        }
        if (cuk_memset_d8(s->ss->errblk, 0, bytes, gpu_stream()) != CUK_OK) break;
    }
    if (e != stack) free(e);
    return ok;
}

static Arr *download(GpuSession *s, const Value *v, Loc loc) {
    if (!check_dev_err(s)) return NULL;
    if (v->rank == 0) return arr_scalar(v->dt, v->s);
    Arr *a = arr_new(v->dt, v->rank, v->shape);
    if (!a) {
        rt_error(s->err, loc, "out of host memory");
        return NULL;
    }
    size_t bytes = (size_t)a->size * (size_t)dtype_info[v->dt].size;
    if (bytes && !gpu_read(a->data, v->buf->p, bytes)) {
        arr_release(a);
        gpu_fail(s, loc, "copy from the device failed");
        return NULL;
    }
    return a;
}


/* ---- host scalar arithmetic, from the same op table ---------------------------------- */

static double getf(Scalar s, DType dt) {
    if (dtype_info[dt].is_float) return s.f;
    if (dt == DT_U32 || dt == DT_U64) return (double)s.u;
    return (double)s.i;
}
static int64_t geti(Scalar s, DType dt) {
    if (dtype_info[dt].is_float) return (int64_t)s.f;
    return s.i;
}
static Scalar putf(DType dt, double x) {
    Scalar r = {0};
    if (dtype_info[dt].is_float) r.f = dt == DT_F32 ? (double)(float)x : x;
    else r.i = (int64_t)x;
    return r;
}
static Scalar puti(DType dt, int64_t x) {
    Scalar r = {0};
    switch (dt) {
    case DT_BOOL: r.i = x != 0; break;
    case DT_I32: r.i = (int32_t)x; break;
    case DT_U32: r.u = (uint32_t)x; break;
    case DT_F32:
    case DT_F64: r.f = (double)x; break;
    default: r.i = x; break;
    }
    return r;
}

#define INT_CASE(D, TT, UU, EI)                                                 \
    if (dt == D) {                                                              \
        typedef TT T;                                                           \
        typedef UU U;                                                           \
        T a = (T)geti(x[0], v->args[0]->dt);                                    \
        T b = (T)(v->nargs > 1 ? geti(x[1], v->args[1]->dt) : 0);               \
        T c = (T)(v->nargs > 2 ? geti(x[2], v->args[2]->dt) : 0);               \
        (void)a, (void)b, (void)c, (void)sizeof(U);                             \
        return puti(v->dt, (int64_t)(EI));                                      \
    }

static Scalar host_ew(const Val *v, const Scalar *x) {
    DType dt = v->op == OP_SELECT ? v->args[1]->dt : v->args[0]->dt;
    switch (v->op) {
#define X(n, sp, bn, ar, cls, cost, EF, ED, EI)                                         \
    case OP_##n:                                                                \
        if (dt == DT_F32) {                                                     \
            float a = (float)getf(x[0], v->args[0]->dt);                        \
            float b = v->nargs > 1 ? (float)getf(x[1], v->args[1]->dt) : 0.0f;  \
            float c = v->nargs > 2 ? (float)getf(x[2], v->args[2]->dt) : 0.0f;  \
            (void)a, (void)b, (void)c;                                          \
            return putf(v->dt, (double)(EF));                                   \
        }                                                                       \
        if (dt == DT_F64) {                                                     \
            double a = getf(x[0], v->args[0]->dt);                              \
            double b = v->nargs > 1 ? getf(x[1], v->args[1]->dt) : 0.0;         \
            double c = v->nargs > 2 ? getf(x[2], v->args[2]->dt) : 0.0;         \
            (void)a, (void)b, (void)c;                                          \
            return putf(v->dt, (double)(ED));                                   \
        }                                                                       \
        INT_CASE(DT_BOOL, uint8_t, uint8_t, EI)                                 \
        INT_CASE(DT_I32, int32_t, uint32_t, EI)                                 \
        INT_CASE(DT_I64, int64_t, uint64_t, EI)                                 \
        INT_CASE(DT_U32, uint32_t, uint32_t, EI)                                \
        INT_CASE(DT_U64, uint64_t, uint64_t, EI)                                \
        break;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
        EW_OPS(X)
#pragma GCC diagnostic pop
#undef X
    default: break;
    }
    die("host_ew: op %d", (int)v->op);
}

/* ---- shapes ----------------------------------------------------------------------------- */

static bool eval(Frame *f, Val *v, Value *out);
static bool eval_k(Frame *f, Val *v, Value *out, bool keep);

static bool scalar_of(Frame *f, Val *v, int64_t *out) {
    Value s;
    if (!eval(f, v, &s)) return false;
    *out = geti(s.s, s.dt);
    return true;
}

/* A checkdim's check: its two sizes, equal. */
static bool run_check(Frame *f, Val *v) {
    int64_t a, b;
    if (!scalar_of(f, v->args[1], &a) || !scalar_of(f, v->args[2], &b)) return false;
    if (a == b) return true;
    rt_error(f->s->err, v->loc, v->msg ? v->msg : "sizes %lld and %lld differ", (long long)a, (long long)b);
    return false;
}

/* The shape of v without computing it (fused values are never materialised): by the
   shape rules for the ops they cover, by evaluating v for the rest. */
static bool shape_of(Frame *f, Val *v, Value *out) {
    if (f->shaped[v->id] || f->memo[v->id].set) {
        *out = f->memo[v->id];
        return true;
    }
    Value r = {.dt = v->dt, .rank = v->rank};
    if (v->rank == 0) {
        *out = r; /* a scalar has no shape to compute */
        return true;
    }
    if (v->op == OP_CHECKDIM) {
        /* its check, then its operand's shape (also when a kernel computes it, fuse.c),
           as the CPU backend does even when only the shape is asked for */
        Value x;
        if (!run_check(f, v) || !shape_of(f, v->args[0], &x)) return false;
        memcpy(r.shape, x.shape, sizeof r.shape);
    } else if (!shape_rule_covers(v)) {
        if (!eval(f, v, &r)) return false;
        /* *out is a view: the memo keeps the reference eval took (callers of shape_of
           release nothing; keeping this one leaked a DBuf per call) */
        *out = r;
        vrelease(f->s, &r);
        return true;
    } else {
        Dims d;
        if (!shape_rule(&f->ops, v, &d, NULL)) return false;
        memcpy(r.shape, d.d, sizeof r.shape);
    }
    touch(f, v->id);
    f->memo[v->id].dt = r.dt;
    f->memo[v->id].rank = r.rank;
    memcpy(f->memo[v->id].shape, r.shape, sizeof r.shape);
    f->shaped[v->id] = true;
    *out = r;
    return true;
}

static bool op_dims(void *fr, const Val *v, Dims *out) {
    Value x;
    if (!shape_of(fr, (Val *)v, &x)) return false;
    out->rank = x.rank;
    memcpy(out->d, x.shape, sizeof out->d);
    return true;
}

static bool op_i64(void *fr, const Val *v, int64_t *out) { return scalar_of(fr, (Val *)v, out); }

/* Slice v's parameters on source axis k. */
static bool slice_axis(Frame *f, Val *v, int k, SliceAxis *ax) {
    Dims d;
    SliceAxis all[MAXRANK];
    if (!shape_rule(&f->ops, v, &d, all)) return false;
    *ax = all[k];
    return true;
}

/* ---- launching a kernel ---------------------------------------------------------------- */

static void c_strides(const Value *v, int64_t *st) {
    int64_t s = 1;
    for (int k = v->rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= v->shape[k];
    }
}

static bool same_dims(const Value *a, const Value *b) {
    if (a->rank != b->rank) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k]) return false;
    return true;
}

/* Entry e of k (kernel_entry_suffix), looked up on first use; NULL when the module lacks
   it (remembered, not looked up again). */
static cuk_function *opt_entry(Frame *f, const Kernel *k, KState *ks, int e) {
    if (!ks->opt[e] && !ks->opt_missing[e]) {
        char nm[300];
        snprintf(nm, sizeof nm, "%s%s", k->name, kernel_entry_suffix[e]);
        if (cuk_module_function(f->s->mods[f->st->pi], nm, &ks->opt[e]) != CUK_OK) ks->opt[e] = NULL, ks->opt_missing[e] = true;
    }
    return ks->opt[e];
}

/* The device facts row launches need (kernel_row_launch), found on the first one, with
   the switches for A/B runs (docs/gpu.md): CUK_ROW_L2CAP=0, CUK_ROW_CLUSTER=0,
   CUK_ROW_SHORT_BLOCK, CUK_ROW_ONLINE=0 (which the emitter also reads). */
static const RowDevice *row_device(GpuSession *s) {
    if (!s->row_dev_known) {
        cuk_device_props pr;
        int dev = 0;
        RowDevice d = {0};
        if (cuk_device_current(&dev) == CUK_OK && cuk_device_props_get(dev, &pr) == CUK_OK)
            d = (RowDevice){.l2_bytes = pr.l2_size, .sm_count = pr.sm_count, .clusters = pr.cc_major >= 9};
        const char *e = getenv("CUK_ROW_L2CAP");
        if (e && !strcmp(e, "0")) d.l2_bytes = 0;
        if ((e = getenv("CUK_ROW_CLUSTER")) && !strcmp(e, "0")) d.clusters = false;
        if ((e = getenv("CUK_ROW_SHORT_BLOCK"))) d.short_block = atoi(e);
        if ((e = getenv("CUK_ROW_ONLINE")) && !strcmp(e, "0")) d.two_pass = true;
        s->row_dev = d;
        s->row_dev_known = true;
    }
    return &s->row_dev;
}

/* A row kernel's entry and launch for rows of len (kernel_row_launch). An entry the
   module lacks (a bundle from before it): _lg for _cl, else the main entry as
   kernel_geometry launches it (*entry and the rest left as they are). */
static void row_config(Frame *f, const Kernel *k, KState *ks, int64_t len, int64_t rows, cuk_function **entry,
                       unsigned *grid, unsigned *block, unsigned *cluster) {
    RowDevice d = *row_device(f->s);
    RowLaunch l = kernel_row_launch(k, len, rows, &d);
    if (l.entry == KE_CL && !opt_entry(f, k, ks, KE_CL)) {
        d.clusters = false;
        l = kernel_row_launch(k, len, rows, &d);
    }
    if (l.entry != KE_MAIN && opt_entry(f, k, ks, l.entry))
        *entry = ks->opt[l.entry], *grid = l.grid, *block = l.block, *cluster = l.cluster;
}

/* The kernel's function handle: the plan's module (its CUDA C from the pipeline) is
   compiled on first use (the kernel cache makes that cheap across sessions and
   processes), or loaded from the bundle's image for this GPU. */
static bool kernel_fn(Frame *f, const Kernel *k, KState *ks) {
    GpuSession *s = f->s;
    int pi = f->st->pi;
    if (!s->mods[pi] && s->bundle) {
        /* Ahead-of-time: the bundle's image for this GPU, loaded without NVRTC. */
        int dev = 0;
        cuk_device_props props;
        char why[512];
        if (cuk_device_current(&dev) != CUK_OK || cuk_device_props_get(dev, &props) != CUK_OK)
            return gpu_fail(s, f->fn->loc, "querying the device failed");
        const BundleImage *im = bundle_pick(s->bundle, f->fn->name, props.cc_major, props.cc_minor, why, sizeof why);
        if (!im) {
            rt_error(s->err, f->fn->loc, "%s", why);
            return false;
        }
        if (cuk_module_load(&s->mods[pi], im->data, im->size) != CUK_OK)
            return gpu_fail(s, f->fn->loc, "loading the bundle's kernels failed");
    }
    if (!s->mods[pi]) {
        const char *src = s->c->cuda[pi];
        ASSERT(src);
        cuk_compile_opts o = {0};
        o.program_name = arena_printf(&s->arena, "%s.cu", f->fn->name);
        /* no contraction unless asked: the CPU backend's (and NumPy's) arithmetic */
        static const char *precise[] = {"--fmad=false"}, *fast[] = {"--fmad=true"};
        o.options = s->fast_math ? fast : precise;
        o.noptions = 1;
        if (cuk_module_compile(&s->mods[pi], src, &o) != CUK_OK)
            return gpu_fail(s, k->stmt ? k->stmt->loc : f->fn->loc, "compiling the kernels failed");
    }
    if (cuk_module_function(s->mods[pi], k->name, &ks->fn) != CUK_OK)
        return gpu_fail(s, k->outs[0]->loc, "kernel lookup failed");
    if (kernel_segred(k)) {
        char sp[200], sf[200];
        snprintf(sp, sizeof sp, "%s_sp", k->name);
        snprintf(sf, sizeof sf, "%s_sf", k->name);
        if (cuk_module_function(s->mods[pi], sp, &ks->sp) != CUK_OK ||
            cuk_module_function(s->mods[pi], sf, &ks->sf) != CUK_OK) {
            ks->fn = NULL;
            rt_error(s->err, k->outs[0]->loc,
                     "this bundle's segmented reduction predates its prepass and fix-up kernels; rebuild it with "
                     "cukc build");
            return false;
        }
    }
    return true;
}

/* Makes sure the session's scratch block holds bytes, zeroed (ordered on the stream). */
static bool scratch_get(GpuSession *s, size_t bytes, bool zero, Loc loc) {
    if (bytes > s->ss->scratch_size) {
        /* the old block goes back to the pool; later kernels that reuse it are queued
           after the ones that used it, on the same stream */
        cuk_mem_free(s->ss->scratch);
        s->ss->scratch = 0;
        size_t want = bytes < 2 * s->ss->scratch_size ? 2 * s->ss->scratch_size : bytes;
        if (!gpu_alloc(&s->ss->scratch, want)) {
            s->ss->scratch_size = 0;
            return gpu_fail(s, loc, "scratch allocation failed");
        }
        s->ss->scratch_size = want;
    }
    if (zero && cuk_memset_d8(s->ss->scratch, 0, bytes, gpu_stream()) != CUK_OK) return gpu_fail(s, loc, "clearing scratch failed");
    return true;
}

static bool errblk_get(GpuSession *s, Loc loc) {
    if (s->ss->errblk) return true;
    size_t bytes = (size_t)s->nfs * 32;
    if (!gpu_alloc(&s->ss->errblk, bytes)) return gpu_fail(s, loc, "device allocation failed");
    if (cuk_memset_d8(s->ss->errblk, 0, bytes, gpu_stream()) != CUK_OK) return gpu_fail(s, loc, "clearing memory failed");
    return true;
}

/* A rank-0 value still on the device (a kernel's 1-element result) comes to the host, a
   synchronising copy: the value itself is changed, so a memo entry or a slot is read from
   the device once. */
static bool settle(GpuSession *s, Value *v, Loc loc) {
    if (v->rank != 0 || !v->buf) return true;
    char bytes[16] = {0};
    bool ok = gpu_read(bytes, v->buf->p, (size_t)dtype_info[v->dt].size);
    if (!ok) gpu_fail(s, loc, "copy from the device failed");
    vrelease(s, v);
    v->s = scalar_load(v->dt, bytes);
    v->set = ok && check_dev_err(s);
    return v->set;
}

/* K_HIST: the result starts as a copy of the destination, or, for a full()/zeros() no
   kernel wrote (fuse.c, rule 6), filled with its value: no kernel for the fill. An empty
   destination is still evaluated (its prints and checks, as on the CPU backend: the
   differential run, seed 8004: scatter(softmax(x), ..) of an empty x skipped max(x)'s
   error). */
static bool hist_init(Frame *f, const Kernel *k, Value *out, Loc loc) {
    GpuSession *s = f->s;
    Val *d = k->outs[0]->args[0];
    size_t esz = (size_t)dtype_info[out->dt].size, bytes = (size_t)nelem(out) * esz;
    if (d->op == OP_FULL && !f->memo[d->id].set && !f->st->writer[d->id]) {
        Value x;
        if (!eval(f, d->args[0], &x)) return false;
        if (!bytes) return true;
        unsigned char one[16];
        scalar_store(out->dt, scalar_cast(x.s, x.dt, out->dt), one);
        bool zero = true;
        for (size_t i = 0; i < esz; i++) zero = zero && one[i] == 0;
        if (zero) {
            if (cuk_memset_d8(out->buf->p, 0, bytes, gpu_stream()) != CUK_OK) return gpu_fail(s, loc, "clearing memory failed");
            return true;
        }
        unsigned char *host = malloc(bytes);
        if (!host) return gpu_fail(s, loc, "out of host memory");
        for (size_t i = 0; i < bytes; i += esz) memcpy(host + i, one, esz);
        bool ok = gpu_write(out->buf->p, host, bytes);
        free(host);
        return ok ? true : gpu_fail(s, loc, "copy to the device failed");
    }
    Value dv;
    if (!eval(f, d, &dv)) return false;
    bool ok = !bytes || cuk_memcpy_dtod_async(out->buf->p, dv.buf->p, bytes, gpu_stream()) == CUK_OK;
    vrelease(s, &dv);
    return ok ? true : gpu_fail(s, loc, "copy on the device failed");
}

/* A compaction (rule 6) is launched over x's shape (after the CPU backend's check that
   the mask has it too) and its result allocated at x's size, the most it can keep:
   until the result is freed it holds n elements of memory however few were kept
   (shrinking it would cost a copy of the kept ones). */
static bool compact_space(Frame *f, const Kernel *k, const Value *space, Value *out) {
    Val *c = k->outs[0];
    Dims xd = {.rank = space->rank}, md;
    memcpy(xd.d, space->shape, sizeof xd.d);
    if (!op_dims(f, c->args[1], &md) || !shape_mask(f->s->err, c->loc, &xd, &md)) return false;
    *out = (Value){.dt = c->dt, .rank = 1};
    out->shape[0] = nelem(space);
    return true;
}

/* After the launch: the number of kept elements, which the last tile wrote to scratch
   (kernel.h, COMPACT_COUNT_OFFSET), becomes the result's size. */
static bool compact_count(GpuSession *s, Value *out, Loc loc) {
    long long cnt = 0;
    if (!gpu_read(&cnt, s->ss->scratch + COMPACT_COUNT_OFFSET, sizeof cnt))
        return gpu_fail(s, loc, "copy from the device failed");
    if (cnt < 0 || cnt > out->shape[0]) die("compaction kept %lld of %lld elements", cnt, (long long)out->shape[0]);
    out->shape[0] = cnt;
    return check_dev_err(s);
}

/* ---- in-place updates ------------------------------------------------------------------ */

/* Whether v's value, computed in k (inker: k's own Vals by id), reads buffer b through
   k's inputs at an index other than the iteration index: at_i says every op on the
   path so far is elementwise (an input of the iteration space's shape read at i). */
static bool reads_buf(const Kernel *k, const Value *ins, const bool *inker, bool *seen, int nv, Val *v, bool at_i,
                      DBuf *b) {
    Val *c = kernel_canon(k, v);
    for (int i = 0; i < k->nins; i++)
        if (k->ins[i] == c) return ins[i].buf == b && !at_i;
    if (v->id < 0 || v->id >= nv || !inker[v->id]) return false; /* a host scalar or constant */
    if (seen[v->id * 2 + at_i]) return false;
    seen[v->id * 2 + at_i] = true;
    bool ew = at_i && (op_is_ew(v->op) || v->op == OP_CAST || v->op == OP_CHECKDIM);
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && reads_buf(k, ins, inker, seen, nv, v->args[i], ew, b)) return true;
    return false;
}

/* Whether k's output is an update of an array (an element or slice update, a scatter,
   or where(mask, e, a)); if so, fills u's array and roots. */
static bool update_form(const Kernel *k, Upd *u) {
    Val *o = k->outs[0];
    memset(u->roots, 0, sizeof u->roots);
    u->at_i = false;
    if (k->nouts != 1) return false;
    if (kernel_region_update(k)) {
        u->dst = o->args[0], u->roots[0] = o->args[1];
    } else if (k->kind == K_MAP && o->op == OP_SELECT && o->rank > 0 && k->space == o) {
        u->dst = o->args[2], u->roots[0] = o->args[0], u->roots[1] = o->args[1], u->at_i = true;
    } else if (k->kind == K_HIST && o->op == OP_SCATTER) {
        u->dst = o->args[0], u->roots[0] = o->args[1], u->roots[1] = o->args[2];
        Val *vs = o->args[2], *g = vs->op == OP_SELECT ? vs->args[2] : NULL;
        /* sema's where(true, vals, a[idx]) (update_scatter): a is read for the check */
        if (g && vs->args[0]->op == OP_CONST && vs->args[0]->c.i && g->op == OP_GATHER &&
            kernel_canon(k, g->args[0]) == kernel_canon(k, u->dst))
            u->roots[1] = vs->args[1], u->roots[2] = g->args[1];
    } else {
        return false;
    }
    return true;
}

/* Whether update kernel k (u: its form), the kernel of the S_SET being run
   (f->set_val), may write into the slot's own array (f->own) instead of a new one:
   nothing outside the statement holds the array (t_set: the slot's is the only
   reference, and it is not a caller's argument), and the kernel reads it only where
   writing in place cannot change what it reads: nowhere for a region or a scatter
   (whose own gather of a is only a bounds check), at the iteration index only for a
   mask. Otherwise the update builds a new array, as before. *x gets the updated array's
   Value (a reference). */
static bool inplace_ok(Frame *f, const Kernel *k, const Upd *u, const Value *ins, Value *x) {
    Val *o = k->outs[0];
    Value sh;
    /* the array as sema reads it (a slot), an input of k: its value is in the memo */
    if (!f->own || u->dst->op != OP_SLOT || u->dst->rank != o->rank || !shape_of(f, o, &sh) || !eval(f, u->dst, x))
        return false;
    bool ok = x->buf == f->own && same_dims(x, &sh);
    int nv = f->fn->nvals;
    if (ok) memset(u->seen, 0, (size_t)nv * 2);
    for (int i = 0; ok && i < 3; i++)
        ok = !u->roots[i] || !reads_buf(k, ins, u->inker, u->seen, nv, u->roots[i], u->at_i, f->own);
    if (!ok) vrelease(f->s, x);
    return ok;
}

static void inplace_trace(const Kernel *k, Loc loc, bool in_place) {
    if (trace_inplace < 0) {
        const char *e = getenv("CUK_TRACE_INPLACE");
        trace_inplace = e && *e && strcmp(e, "0") != 0;
    }
    if (trace_inplace)
        fprintf(stderr, "cuk-inplace: %d:%d: %s %s\n", loc.line, loc.col, op_name[k->outs[0]->op],
                in_place ? "in place" : "into a new array");
}

/* A segmented reduction's three entries (emit_segred), in order on the stream: the
   prepass over max(nseg, ntiles) + 1 items, the tiles (none when n = 0), the fix-up (a
   warp per 32 tiles; it also completes an error report, so it always runs). */
static bool segred_launch(GpuSession *s, const Kernel *k, KState *ks, long long *w, unsigned ntiles, int64_t nseg,
                          Loc loc) {
    void *args[1] = {w};
    cuk_dim3 b = {(unsigned)k->block, 1, 1};
    int64_t items = (nseg > (int64_t)ntiles ? nseg : (int64_t)ntiles) + 1;
    int64_t bsp = (items + k->block - 1) / k->block, bsf = ((int64_t)ntiles + k->block - 1) / k->block;
    cuk_dim3 gsp = {(unsigned)(bsp > SEGRED_AUX_GRID ? SEGRED_AUX_GRID : bsp), 1, 1};
    cuk_dim3 gt = {ntiles, 1, 1};
    cuk_dim3 gsf = {(unsigned)(bsf < 1 ? 1 : bsf > SEGRED_AUX_GRID ? SEGRED_AUX_GRID : bsf), 1, 1};
    if (cuk_launch(ks->sp, gsp, b, 0, gpu_stream(), args) != CUK_OK ||
        (ntiles > 0 && cuk_launch(ks->fn, gt, b, 0, gpu_stream(), args) != CUK_OK) ||
        cuk_launch(ks->sf, gsf, b, 0, gpu_stream(), args) != CUK_OK)
        return gpu_fail(s, loc, "kernel launch failed");
    return true;
}

/* A kernel output's memory: out='s (gpu_call_into) for the value the called function
   returns, when its dtype and shape are the result's; else a new block. */
static bool out_alloc(Frame *f, const Val *o, Value *v, Loc loc) {
    GpuSession *s = f->s;
    const GpuVal *in = s->into;
    if (in && !s->into_used && s->depth == 1 && f->st->returned[o->id] && v->rank > 0 && in->dt == v->dt &&
        in->rank == v->rank && memcmp(in->shape, v->shape, sizeof(int64_t) * (size_t)v->rank) == 0) {
        if (!(v->buf = dbuf_new(s))) return gpu_fail(s, loc, "out of host memory");
        v->buf->p = in->p;
        v->buf->borrowed = true;
        v->set = true;
        s->into_used = true;
        return true;
    }
    return dalloc(s, v, loc);
}

/* An f32 or f64 matrix product (kernel_blas): one cuk_matmul over the dense row-major
   device arrays kernel_blas_call names, x [m, k] (or [k, m] read transposed) by y [k, n],
   [n, k] transposed or [k] (n = 1), with its epilogue: a scale, a bias along the rows
   (its length is n: the fusion checked the sizes' keys), relu. */
/* A launch over an empty space evaluates no element, so it checks no index: a gather's
   indices (a kernel input) are checked here instead, as the CPU backend and NumPy check them whatever the
   size of what they take (x of shape (1, 0) indexed by [1] is an error, not an empty
   result). */
static bool empty_gather_checks(Frame *f, const Kernel *k, const Value *ins, Loc loc) {
    for (int v = 0; v < k->nvals; v++) {
        Val *g = k->vals[v];
        if (g->op != OP_GATHER) continue;
        Value x;
        if (!shape_of(f, g->args[0], &x)) return false;
        for (int i = 0; i < k->nins; i++) {
            if (kernel_canon(k, k->ins[i]) != kernel_canon(k, g->args[1]) || !nelem(&ins[i])) continue;
            Arr *ix = download(f->s, &ins[i], loc);
            if (!ix) return false;
            bool ok = true;
            for (int64_t j = 0; ok && j < ix->size; j++) {
                int64_t t, q = scalar_cast(arr_get(ix, j), ix->dt, DT_I64).i;
                if (ix->dt == DT_U64 && arr_get(ix, j).u > INT64_MAX) q = INT64_MAX;
                ok = shape_index(f->s->err, g->loc, q, g->axis, x.shape[0], &t);
            }
            arr_release(ix);
            if (!ok) return false;
            break;
        }
    }
    return true;
}

/* ---- the profile's kernel rows (gpu_session_profile) ------------------------------------- */

/* The device's copy bandwidth for the profile's "% copy": a 256 MiB device-to-device copy
   (read and write: 512 MiB moved) timed with events, once per session, where the memory
   is there to spare. */
static void prof_copy(GpuSession *s) {
    s->copy_measured = true;
    const size_t bytes = (size_t)256 << 20;
    cuk_devptr a = 0, b = 0;
    float ms = 0;
    if (cuk_mem_alloc(&a, bytes) == CUK_OK && cuk_mem_alloc(&b, bytes) == CUK_OK &&
        cuk_memcpy_dtod_async(b, a, bytes, gpu_stream()) == CUK_OK && /* a warm-up */
        cuk_event_record(s->pev[0], gpu_stream()) == CUK_OK &&
        cuk_memcpy_dtod_async(b, a, bytes, gpu_stream()) == CUK_OK &&
        cuk_event_record(s->pev[1], gpu_stream()) == CUK_OK && cuk_event_synchronize(s->pev[1]) == CUK_OK &&
        cuk_event_elapsed(&ms, s->pev[0], s->pev[1]) == CUK_OK && ms > 0)
        s->copy_gbs = 2.0 * (double)bytes / (ms * 1e6);
    if (a) cuk_mem_free(a);
    if (b) cuk_mem_free(b);
}

/* Before a launch, with s->prof: false when the launch goes untimed (no events). */
static bool prof_begin(GpuSession *s) {
    for (int i = 0; i < 2; i++)
        if (!s->pev[i] && cuk_event_create(&s->pev[i]) != CUK_OK) return false;
    if (!s->copy_measured) prof_copy(s);
    if (s->copy_gbs > 0) profile_copy_bandwidth(s->prof, s->copy_gbs); /* a later profile's too */
    return cuk_event_record(s->pev[0], gpu_stream()) == CUK_OK;
}

/* After it: the kernel's row gets the time and the bytes of its arrays: the outputs
   whole, each input at most once per element of the launch's space (n; a slice reads no
   more than it takes; -1: whole, as a matrix product reads them). */
static void prof_end(GpuSession *s, const Kernel *k, const Value *ins, int nins, const Value *outs, int nouts,
                     int64_t n) {
    float ms = 0;
    if (cuk_event_record(s->pev[1], gpu_stream()) != CUK_OK || cuk_event_synchronize(s->pev[1]) != CUK_OK ||
        cuk_event_elapsed(&ms, s->pev[0], s->pev[1]) != CUK_OK)
        return;
    int64_t bytes = 0;
    for (int i = 0; i < nins; i++)
        if (ins[i].buf) bytes += (n >= 0 && n < nelem(&ins[i]) ? n : nelem(&ins[i])) * dtype_info[ins[i].dt].size;
    for (int i = 0; i < nouts; i++)
        if (outs[i].buf) bytes += nelem(&outs[i]) * dtype_info[outs[i].dt].size;
    profile_kernel(s->prof, k, k->name, kernel_blas(k) ? "matmul (cublasLt)" : kernel_kind_name[k->kind],
                   k->outs[0]->loc, ms, bytes);
}

static bool blas_launch(Frame *f, const Kernel *k) {
    GpuSession *s = f->s;
    Val *mm = k->scan, *end = k->outs[0];
    Loc loc = mm->loc;
    BlasCall bc;
    kernel_blas_call(k, &bc);
    Value x = {0}, y = {0}, al = {0}, bias = {0}, sh, out = {0};
    cuk_matmul_args a = {.type = mm->dt == DT_F64 ? CUK_MM_F64 : mm->dt == DT_F16 ? CUK_MM_F16 : mm->dt == DT_BF16 ? CUK_MM_BF16 : CUK_MM_F32,
                         .tf32 = mm->exclusive,
                         .alpha = 1.0,
                         .trans_a = bc.trans_a,
                         .trans_b = bc.trans_b,
                         .epilogue = (bc.bias ? CUK_MM_BIAS : 0) | (bc.relu ? CUK_MM_RELU : 0)};
    bool ok = eval(f, bc.a, &x) && eval(f, bc.b, &y) && (!bc.alpha || eval(f, bc.alpha, &al)) &&
              (!bc.bias || eval(f, bc.bias, &bias)) && shape_of(f, end, &sh);
    if (bc.alpha) a.alpha = al.s.f;
    if (ok) {
        out = sh;
        out.buf = NULL;
        ok = out_alloc(f, end, &out, loc);
    }
    if (ok) {
        a.m = x.shape[a.trans_a], a.k = x.shape[!a.trans_a], a.n = y.rank == 2 ? y.shape[!a.trans_b] : 1;
        a.a = x.buf ? x.buf->p : 0, a.b = y.buf ? y.buf->p : 0, a.d = out.buf->p;
        a.bias = bias.buf ? bias.buf->p : 0;
        bool timed = s->prof && prof_begin(s);
        if (cuk_matmul(&a, gpu_stream()) != CUK_OK) ok = gpu_fail(s, loc, "the matrix product failed");
        if (ok && timed) {
            Value in3[3] = {x, y, bias};
            prof_end(s, k, in3, 3, &out, 1, -1);
        }
    }
    vrelease(s, &x);
    vrelease(s, &y);
    vrelease(s, &bias);
    if (!ok) {
        vrelease(s, &out);
        return false;
    }
    touch(f, end->id);
    vrelease(s, &f->memo[end->id]);
    f->memo[end->id] = out;
    return true;
}

static bool launch_marked(Frame *f, const Kernel *k);

static bool launch(Frame *f, const Kernel *k) {
    unsigned char was = f->launching[k->id];
    f->launching[k->id] = 1;
    bool ok = launch_marked(f, k);
    f->launching[k->id] = was;
    return ok;
}

static bool launch_marked(Frame *f, const Kernel *k) {
    GpuSession *s = f->s;
    KState *ks = &f->st->ks[k->id];
    Loc loc = k->outs[0]->loc;
    if (kernel_blas(k)) return blas_launch(f, k);
    if (!ks->fn && !kernel_fn(f, k, ks)) return false;

    /* the checks fused into the kernel (fuse.c classify) run before it */
    for (int i = 0; i < k->nvals; i++)
        if (k->vals[i]->op == OP_CHECKDIM && !run_check(f, k->vals[i])) return false;
    Value space;
    if (!shape_of(f, k->space, &space)) return false;
    int64_t n = nelem(&space);
    /* Launch storage: the kernel's own, unless a launch of it is already in progress
       further up the stack (a recursive call). */
    Value *ins = ks->ins, *outs = ks->outs;
    long long *w = ks->w;
    bool own = ks->busy;
    if (own) {
        ins = calloc((size_t)k->nins + 1, sizeof(Value));
        outs = calloc((size_t)k->nouts + 1, sizeof(Value));
        w = calloc((size_t)k->nparams + 1, sizeof(long long));
        if (!ins || !outs || !w) {
            free(ins), free(outs), free(w);
            return gpu_fail(s, loc, "out of host memory");
        }
    } else {
        memset(ins, 0, sizeof(Value) * (size_t)k->nins);
        memset(outs, 0, sizeof(Value) * (size_t)k->nouts);
        ks->busy = true;
    }
    bool ok = true;
    for (int i = 0; ok && i < k->nins; i++) ok = eval(f, k->ins[i], &ins[i]);
    /* an update of an array nothing else holds writes into it (inplace_ok); an element or
       slice update then runs over its region only */
    bool inplace = false, region = false;
    Value upd = {0};
    if (ok && ks->upd && f->set_val == k->outs[0]) {
        inplace = inplace_ok(f, k, ks->upd, ins, &upd);
        region = inplace && kernel_region_update(k);
        /* a bundle built before region entries existed has none: not in place */
        if (region && !opt_entry(f, k, ks, KE_RG)) {
            region = inplace = false;
            vrelease(s, &upd);
        }
        inplace_trace(k, k->outs[0]->loc, inplace);
    }
    for (int i = 0; ok && i < k->nouts; i++) {
        Value sh;
        ok = k->kind == K_COMPACT ? compact_space(f, k, &space, &sh) : shape_of(f, k->outs[i], &sh);
        if (!ok) break;
        if (inplace) {
            outs[i] = upd; /* the reference inplace_ok took */
            continue;
        }
        Value tmp = sh;
        tmp.buf = NULL;
        if (tmp.rank == 0) tmp.rank = 1, tmp.shape[0] = 1; /* rank-0 results land in a 1-element buffer */
        ok = k->kind != K_COMPACT && sh.rank > 0 ? out_alloc(f, k->outs[i], &tmp, loc) : dalloc(s, &tmp, loc);
        outs[i] = sh;
        outs[i].buf = tmp.buf;
        outs[i].set = ok;
    }
    int axis = k->axis == AXIS_ALL || space.rank <= 1 ? -1 : k->axis;
    if (k->kind == K_ROW) axis = space.rank - 1;
    int64_t outer = 1, len = 1, inner = 1;
    if (axis >= 0) {
        for (int q = 0; q < axis; q++) outer *= space.shape[q];
        len = space.shape[axis];
        for (int q = axis + 1; q < space.rank; q++) inner *= space.shape[q];
    }
    /* a scatter or histogram starts from its destination (the bins for kernel_geometry) */
    if (ok && k->kind == K_HIST) {
        if (!inplace) ok = hist_init(f, k, &outs[0], loc);
        inner = nelem(&outs[0]);
    }
    /* segments=offs: reductions run tile by tile and check the offsets on the device
       (emit_segred); scans run one block per segment, after the offsets are checked on
       the host (as the CPU backend checks them), which costs a copy of k + 1 values */
    Val *segs = k->kind == K_REDUCE ? red_segs(k->reds[0]) : k->kind == K_SCAN ? red_segs(k->scan) : NULL;
    for (int i = 0; ok && segs && i < k->nins; i++) {
        if (kernel_canon(k, k->ins[i]) != kernel_canon(k, segs)) continue;
        int64_t m = nelem(&ins[i]);
        if (m < 1) {
            rt_error(s->err, segs->loc, "segments= needs k + 1 offsets for k segments, not an empty array "
                                        "(no segments: offs = [0] over an empty array)");
            ok = false;
            break;
        }
        if (k->kind == K_SCAN) {
            Arr *oa = download(s, &ins[i], loc);
            ok = oa != NULL && shape_check_segments(s->err, k->scan, (const int64_t *)oa->data, oa->size, n);
            if (oa) arr_release(oa);
        }
        if (ok) axis = 0, outer = m - 1, len = n, inner = 1;
        break;
    }
    /* min/max/argmin/argmax without an initial value over an empty axis: the CPU
       backend's (and NumPy's) error, before any kernel runs */
    for (int i = 0; ok && (k->kind == K_REDUCE || k->kind == K_ROW) && i < k->nreds; i++) {
        Dims x;
        ok = op_dims(f, k->reds[i]->args[0], &x) && shape_reduce_has_identity(s->err, k->reds[i], &x);
    }
    unsigned grid;
    size_t scratch_bytes;
    if (ok && kernel_needs_resident(k, axis) && !ks->resident) {
        int r = 0;
        ks->resident = cuk_function_resident(ks->fn, (unsigned)k->block, (unsigned)kernel_shmem(k, inner), &r) == CUK_OK &&
                               r > 0 ? r : -1;
    }
    if (ok && !kernel_geometry(k, n, outer, inner, axis, ks->resident > 0 ? ks->resident : 0, &grid, &scratch_bytes)) {
        rt_error(s->err, k->outs[0]->loc, "%lld elements are too many for one kernel launch on the GPU",
                 (long long)n);
        ok = false;
    }
    /* ix32: every index word and element count of the launch small enough for the
       32-bit copy of an ix32 kernel's body (KFLAT_IX32) */
    bool flat = true, ix32 = k->ix32 && n < KIX32_LIMIT, tiled = false;
    for (int i = 0; ok && i < k->nins; i++) flat = flat && (!k->ins_direct[i] || same_dims(&ins[i], &space));
    Val *tt = kernel_tiled_transpose(k);
    if (ok && tt) { /* KFLAT_TILED: the tiles only where the transpose is not broadcast */
        Value tx;
        ok = shape_of(f, tt, &tx);
        tiled = ok && same_dims(&tx, &space);
    }
    /* the parameter words */
    for (int i = 0; ok && i < k->nparams; i++) {
        const KParam *p = &k->params[i];
        Value x;
        int64_t st[MAXRANK];
        w[i] = 0;
        switch (p->kind) {
        case KP_N: w[i] = n; break;
        case KP_FLAT: break; /* set below, once every leaf is known */
        case KP_SHAPE: w[i] = space.shape[p->a]; break;
        case KP_BSTRIDE: {
            ok = shape_of(f, p->v, &x);
            if (!ok) break;
            if (!same_dims(&x, &space)) flat = false;
            c_strides(&x, st);
            int ax = p->a - (space.rank - x.rank);
            w[i] = (ax < 0 || x.shape[ax] == 1) ? 0 : st[ax];
            break;
        }
        case KP_OWNSHAPE:
            ok = shape_of(f, p->v, &x);
            if (ok) w[i] = x.shape[p->a], ix32 = ix32 && nelem(&x) < KIX32_LIMIT;
            break;
        case KP_SRCSTRIDE: {
            ok = shape_of(f, p->v->args[p->b], &x);
            if (!ok) break;
            c_strides(&x, st);
            w[i] = p->v->op == OP_TRANSPOSE ? st[p->v->perm[p->a]] : st[p->a];
            break;
        }
        case KP_SLSTART:
        case KP_SLSTEP: {
            SliceAxis ax;
            ok = slice_axis(f, p->v, p->a, &ax);
            if (ok) w[i] = p->kind == KP_SLSTART ? ax.start : ax.step;
            break;
        }
        case KP_UPD: {
            SliceAxis ax;
            if (p->b == 0) ok = slice_axis(f, p->v, p->a, &ax), w[i] = ok ? ax.len : 0;
            else if ((ok = shape_of(f, p->v->args[1], &x))) w[i] = x.shape[p->a];
            break;
        }
        case KP_CATOFF: {
            int64_t off = 0;
            for (int q = 0; ok && q < p->b; q++) {
                ok = shape_of(f, p->v->args[q], &x);
                if (ok) off += x.shape[p->v->axis];
            }
            w[i] = off;
            break;
        }
        case KP_IN: {
            const Value *in = &ins[ks->where[i]];
            w[i] = in->buf ? (long long)in->buf->p : 0;
            ix32 = ix32 && nelem(in) < KIX32_LIMIT;
            break;
        }
        case KP_OUT:
            w[i] = (long long)outs[ks->where[i]].buf->p;
            ix32 = ix32 && nelem(&outs[ks->where[i]]) < KIX32_LIMIT;
            break;
        case KP_SCALAR:
            ok = eval(f, p->v, &x);
            if (ok) memcpy(&w[i], &x.s, 8);
            break;
        case KP_SCRATCH: break; /* set below: a nested launch may move the block */
        case KP_OUTER: w[i] = outer; break;
        case KP_LEN: w[i] = len; break;
        case KP_INNER: w[i] = inner; break;
        case KP_MM: {
            Value a, b;
            ok = shape_of(f, k->scan->args[0], &a) && shape_of(f, k->scan->args[1], &b);
            if (ok) w[i] = p->a == 0 ? a.shape[0] : p->a == 1 ? a.shape[1] : (b.rank == 2 ? b.shape[1] : 1);
            break;
        }
        case KP_ERR:
            ok = errblk_get(s, loc);
            if (ok) w[i] = (long long)(s->ss->errblk + (cuk_devptr)f->st->pi * 32);
            s->ss->err_pending = true;
            break;
        case KP_GLEN:
            ok = shape_of(f, p->v->args[0], &x);
            if (ok) w[i] = x.shape[0];
            break;
        case KP_PADW: {
            int64_t pw = 0;
            ok = scalar_of(f, p->v->args[1], &pw);
            w[i] = pw;
            break;
        }
        case KP_HBINS: w[i] = nelem(&outs[0]); break;
        case KP_ROLLSHIFT: {
            int64_t sh = 0;
            ok = scalar_of(f, p->v->args[1], &sh) && shape_of(f, p->v->args[0], &x);
            if (ok) w[i] = shape_roll_shift(sh, p->v->axis == AXIS_ALL ? nelem(&x) : x.shape[p->v->axis]);
            break;
        }
        }
        if (ix32 && kparam_is_index(p->kind)) ix32 = w[i] < KIX32_LIMIT && w[i] > -KIX32_LIMIT;
    }
    /* a segmented reduction writes every scratch word it reads (emit_segred) */
    if (ok && scratch_bytes) ok = scratch_get(s, scratch_bytes, !kernel_segred(k), loc);
    for (int i = 0; i < k->nparams; i++) {
        if (k->params[i].kind == KP_FLAT) w[i] = flat | (ix32 ? KFLAT_IX32 : 0) | (tiled ? KFLAT_TILED : 0);
        if (k->params[i].kind == KP_SCRATCH) w[i] = (long long)s->ss->scratch;
    }
    bool empty = (k->kind == K_MAP || k->kind == K_SCAN || k->kind == K_ROW || k->kind == K_MATMUL ||
                  k->kind == K_COMPACT) &&
                 nelem(&outs[0]) == 0;
    if (k->kind == K_HIST) empty = n == 0 || nelem(&outs[0]) == 0;
    cuk_function *entry = ks->fn;
    unsigned block = (unsigned)k->block, cluster = 0, grid0 = grid;
    if (ok && k->kind == K_ROW) row_config(f, k, ks, len, outer, &entry, &grid, &block, &cluster);
    if (ok && region) {
        /* the region's size (its lengths, KP_UPD), a grid-stride loop over it */
        int64_t rn = 1;
        for (int i = 0; i < k->nparams; i++)
            if (k->params[i].kind == KP_UPD && k->params[i].b == 0) rn *= w[i];
        empty = rn == 0;
        int64_t blocks = (rn + k->block - 1) / k->block;
        grid = (unsigned)(blocks < 65536 ? blocks : 65536);
        entry = ks->opt[KE_RG];
    }
    if (ok && n == 0) ok = empty_gather_checks(f, k, ins, loc);
    bool timed = s->prof && ok && (kernel_segred(k) || !empty) && prof_begin(s); /* one test when off */
    if (ok && kernel_segred(k)) {
        ok = segred_launch(s, k, ks, w, grid, outer, loc);
    } else if (ok && !empty) {
        void *args[1] = {w};
        cuk_dim3 g = {grid, 1, 1}, b = {block, 1, 1};
        bool launched = cluster && cuk_launch_cluster(entry, g, b, cluster, 0, gpu_stream(), args) == CUK_OK;
        if (cluster && !launched) {
            /* a device or driver that cannot: no clusters from now on */
            s->row_dev.clusters = false;
            entry = ks->fn, g.x = grid0, b.x = (unsigned)k->block, cluster = 0;
            row_config(f, k, ks, len, outer, &entry, &g.x, &b.x, &cluster);
        }
        if (!launched && cuk_launch(entry, g, b, (unsigned)kernel_shmem(k, inner), gpu_stream(), args) != CUK_OK)
            ok = gpu_fail(s, loc, "kernel launch failed");
        if (timing_on && !timing_first_done) {
            timing_first_done = true;
            cuk_stream_synchronize(gpu_stream());
            timing_mark("first kernel done");
        }
        /* a compaction's size: the total its last tile wrote (one word to the host) */
        if (ok && k->kind == K_COMPACT) ok = compact_count(s, &outs[0], loc);
    }
    if (ok && timed) prof_end(s, k, ins, k->nins, outs, k->nouts, n);
    for (int i = 0; i < k->nins; i++) vrelease(s, &ins[i]);
    for (int i = 0; i < k->nouts; i++) {
        Val *o = k->outs[i];
        if (ok) { /* a scalar stays on the device until read (settle) */
            touch(f, o->id);
            vrelease(s, &f->memo[o->id]);
            f->memo[o->id] = outs[i];
        } else {
            vrelease(s, &outs[i]);
        }
    }
    if (own) {
        free(ins);
        free(outs);
        free(w);
    } else {
        ks->busy = false;
    }
    return ok;
}

/* ---- evaluating values ------------------------------------------------------------------- */

static bool run_fn(GpuSession *s, FnState *st, Value *args, Value *result, Loc loc);

static FnState *fn_state(GpuSession *s, const Fn *fn) {
    for (int i = 0; i < s->nfs; i++)
        if (s->fs[i].fn == fn) return &s->fs[i];
    return NULL;
}

/* The cases of eval with large frames, kept out of it (noinline) so that its own frame,
   which recursion over nested expressions repeats, stays small. Each fills r. */
static __attribute__((noinline)) bool eval_load(Frame *f, Val *v, Value *r) {
    GpuSession *s = f->s;
    Arr *a = exec_load(s->err, v);
    if (!a) return false;
    memcpy(r->shape, a->shape, sizeof r->shape);
    bool ok = true;
    if (a->rank == 0) {
        r->s = arr_get(a, 0);
    } else if ((ok = dalloc(s, r, v->loc))) {
        size_t bytes = (size_t)a->size * (size_t)dtype_info[a->dt].size;
        if (bytes && !gpu_write(r->buf->p, a->data, bytes)) {
            ok = gpu_fail(s, v->loc, "copy to the device failed");
            vrelease(s, r);
        }
    }
    arr_release(a);
    return ok;
}

static __attribute__((noinline)) bool eval_call(Frame *f, Val *v, Value *r) {
    GpuSession *s = f->s;
    Value stack[8], *args = v->nargs <= 8 ? stack : calloc((size_t)v->nargs, sizeof(Value));
    if (!args) return gpu_fail(s, v->loc, "out of host memory");
    FnState *cs = fn_state(s, v->fn);
    ASSERT(cs);
    int got = 0;
    bool ok = true;
    for (; ok && got < v->nargs; got++) ok = eval(f, v->args[got], &args[got]);
    if (!ok) got--;
    if (ok) ok = run_fn(s, cs, args, r, v->loc);
    for (int i = 0; i < got; i++) vrelease(s, &args[i]);
    if (args != stack) free(args);
    return ok;
}

/* An element of a device array read on the host (a rank-0 slice or gather). */
static __attribute__((noinline)) bool eval_elem(Frame *f, Val *v, Value *r) {
    GpuSession *s = f->s;
    Value x;
    if (v->rank != 0) die("array %s outside a kernel", op_name[v->op]);
    if (!eval(f, v->args[0], &x)) return false;
    int64_t off = 0, st[MAXRANK];
    c_strides(&x, st);
    bool ok = true;
    if (v->op == OP_SLICE) {
        Dims d;
        SliceAxis ax[MAXRANK];
        ok = shape_rule(&f->ops, v, &d, ax);
        for (int q = 0; ok && q < x.rank; q++) off += ax[q].start * st[q];
    } else {
        int64_t i = 0, t = 0;
        ok = scalar_of(f, v->args[1], &i) && shape_index(s->err, v->loc, i, v->axis, x.shape[0], &t);
        off = t * st[0];
    }
    char bytes[16] = {0};
    int sz = dtype_info[v->dt].size;
    if (ok && !gpu_read(bytes, x.buf->p + (cuk_devptr)(off * sz), (size_t)sz))
        ok = gpu_fail(s, v->loc, "copy from the device failed");
    if (ok) ok = check_dev_err(s);
    vrelease(s, &x);
    if (ok) r->s = scalar_load(v->dt, bytes);
    return ok;
}

/* sort_by_key (OP_SORTKV, its values; the keys, when wanted, an OP_SORT naming it): one
   sort of keys and values. *keys gets the sorted keys (a reference the caller releases)
   or, when keys is NULL, they go to scratch. */
static bool sort_kv(Frame *f, Val *sv, Value *vals, Value *keys) {
    Value k, x, kscratch = {0};
    if (!eval(f, sv->args[0], &k)) return false;
    if (!eval(f, sv->args[1], &x)) return vrelease(f->s, &k), false;
    ASSERT(k.rank == 1 && x.rank == 1 && k.shape[0] == x.shape[0]);
    Value *ko = keys ? keys : &kscratch;
    *vals = (Value){.dt = sv->dt, .rank = 1, .set = true, .shape = {x.shape[0]}};
    *ko = (Value){.dt = k.dt, .rank = 1, .set = true, .shape = {k.shape[0]}};
    char why[1024];
    bool ok = dalloc(f->s, vals, sv->loc);
    if (ok && !(ok = dalloc(f->s, ko, sv->loc))) vrelease(f->s, vals);
    if (ok && !gpu_sort_kv(k.dt, k.buf->p, k.shape[0], sv->exclusive, x.dt, x.buf->p, ko->buf->p, vals->buf->p,
                           &f->s->sort_mods[k.dt], why, sizeof why)) {
        rt_error(f->s->err, sv->loc, "sort_by_key(): %s", why);
        vrelease(f->s, vals);
        vrelease(f->s, ko);
        ok = false;
    }
    if (ok && !keys) vrelease(f->s, &kscratch);
    vrelease(f->s, &k);
    vrelease(f->s, &x);
    return ok;
}

/* sort and argsort along the last axis (sema moves another axis there and back) and
   searchsorted: exec/gpu/sort.h. sort_by_key's keys, when their values are not yet
   computed, come with them from one sort (the values memoised). */
static __attribute__((noinline)) bool eval_sort(Frame *f, Val *v, Value *r) {
    if (v->op == OP_SORTKV) return sort_kv(f, v, r, NULL);
    if (v->op == OP_SORT && v->nargs > 1 && !f->memo[v->args[1]->id].set) {
        Value vals;
        if (!sort_kv(f, v->args[1], &vals, r)) return false;
        touch(f, v->args[1]->id);
        f->memo[v->args[1]->id] = vals;
        return true;
    }
    Value x;
    if (!eval(f, v->args[0], &x)) return false;
    ASSERT(x.rank >= 1 && v->axis == x.rank - 1);
    memcpy(r->shape, x.shape, sizeof r->shape);
    const int64_t len = x.shape[x.rank - 1], n = nelem(&x);
    char why[1024];
    bool ok = dalloc(f->s, r, v->loc);
    if (ok && !gpu_sort_rows(x.dt, x.buf->p, len ? n / len : 0, len, v->exclusive, v->op == OP_ARGSORT, r->buf->p,
                             &f->s->sort_mods[x.dt], why, sizeof why)) {
        rt_error(f->s->err, v->loc, "%s(): %s", op_name[v->op], why);
        vrelease(f->s, r);
        ok = false;
    }
    vrelease(f->s, &x);
    return ok;
}

/* unique(x): by hashing where the distinct values fit (exec/gpu/sort.h), else its
   second operand, the sort and compaction. */
typedef struct UniqOut {
    Frame *f;
    Value *r;
    Loc loc;
} UniqOut;
static cuk_devptr uniq_alloc(void *ctx, int64_t count) {
    UniqOut *u = ctx;
    u->r->rank = 1;
    u->r->shape[0] = count;
    return dalloc(u->f->s, u->r, u->loc) ? u->r->buf->p : 0;
}
static __attribute__((noinline)) bool eval_unique(Frame *f, Val *v, Value *r) {
    Value x;
    if (!eval(f, v->args[0], &x)) return false;
    ASSERT(x.rank == 1);
    char why[1024];
    bool fits = false;
    UniqOut u = {f, r, v->loc};
    bool ok = gpu_unique(x.dt, x.buf->p, x.shape[0], uniq_alloc, &u, &fits, &f->s->sort_mods[x.dt], why, sizeof why);
    vrelease(f->s, &x);
    if (!ok) {
        if (!f->s->err->set) rt_error(f->s->err, v->loc, "unique(): %s", why);
        if (r->buf) vrelease(f->s, r);
        return false;
    }
    return fits || eval(f, v->args[1], r);
}

static __attribute__((noinline)) bool eval_topk(Frame *f, Val *v, Value *r) {
    Value x, k;
    if (!eval(f, v->args[1], &k)) return false;
    if (!eval(f, v->args[0], &x)) return false;
    const int64_t len = x.shape[x.rank - 1], n = nelem(&x);
    ASSERT(x.rank >= 1 && k.s.i >= 0 && k.s.i <= len);
    memcpy(r->shape, x.shape, sizeof r->shape);
    r->shape[x.rank - 1] = k.s.i;
    char why[1024];
    bool ok = dalloc(f->s, r, v->loc);
    if (ok && !gpu_topk_rows(x.dt, x.buf->p, len ? n / len : 0, len, k.s.i, r->buf->p, &f->s->sort_mods[x.dt], why,
                             sizeof why)) {
        rt_error(f->s->err, v->loc, "top_k(): %s", why);
        vrelease(f->s, r);
        ok = false;
    }
    vrelease(f->s, &x);
    return ok;
}

static __attribute__((noinline)) bool eval_searchsorted(Frame *f, Val *v, Value *r) {
    Value a, x;
    if (!eval(f, v->args[0], &a)) return false;
    if (!eval(f, v->args[1], &x)) return vrelease(f->s, &a), false;
    ASSERT(x.rank >= 1); /* sema looks one value up as an array of one */
    char why[1024];
    memcpy(r->shape, x.shape, sizeof r->shape);
    bool ok = dalloc(f->s, r, v->loc);
    if (ok && !gpu_searchsorted(a.dt, a.buf->p, a.shape[0], x.buf->p, nelem(&x), v->exclusive, r->buf->p,
                                &f->s->sort_mods[a.dt], why, sizeof why)) {
        rt_error(f->s->err, v->loc, "searchsorted(): %s", why);
        vrelease(f->s, r);
        ok = false;
    }
    vrelease(f->s, &a);
    vrelease(f->s, &x);
    return ok;
}

/* The scalar leaves of an expression whose shape alone is asked for (a dim: len(x * g(x))),
   evaluated (a kernel that computes one is launched, not waited for), and the kernels of
   its gathers and segmented reductions and scans run: the CPU backend evaluates every
   leaf of a fused value for its shape (exec/cpu/eval.c, eval_dim), so a call's prints,
   an index out of bounds (a scalar index or an array of them: the differential run,
   seed 11011), offsets out of order or a reduce_by_index of mismatched shapes there
   happen on the GPU too. The shape rules themselves need no scalar (shape_of). */
static bool dim_leaves(Frame *f, Val *v, unsigned char *seen) {
    if (seen[v->id] || f->memo[v->id].set || f->shaped[v->id]) return true;
    seen[v->id] = 1;
    if (v->rank == 0) {
        Value x;
        if (!eval_k(f, v, &x, true)) return false;
        vrelease(f->s, &x);
        return true;
    }
    if (v->op != OP_CHECKDIM && !shape_rule_covers(v)) return true; /* shape_of evaluates it whole */
    bool checks = v->op == OP_GATHER || ((v->op == OP_REDUCE || v->op == OP_SCAN) && red_segs(v));
    if (checks && v->kernel >= 0) {
        /* its check, as the CPU backend makes it when only the shape is asked for: a
           gather's indices (len(x[idx])), a segmented reduction's or scan's offsets
           (len(cumsum(x, segments=offs))): the kernel that computes it runs (fuse.c gives
           every gather one; a reduction or scan is always a kernel's) */
        const Kernel *k = f->st->plan->kernels[v->kernel];
        /* (not while it is being launched: its own checks ask for the gather's shape) */
        if (!f->launching[k->id] && !f->memo[k->outs[0]->id].set) {
            Value x;
            if (!eval_k(f, k->outs[0], &x, true)) return false;
            vrelease(f->s, &x);
        }
    }
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i] && !dim_leaves(f, v->args[i], seen)) return false;
    return true;
}

static __attribute__((noinline)) bool eval_dim(Frame *f, Val *v, Value *r) {
    Value x;
    Val *a = v->args[0];
    if (!f->memo[a->id].set && !f->shaped[a->id]) {
        unsigned char *seen = calloc((size_t)f->fn->nvals, 1);
        if (!seen) {
            rt_error(f->s->err, v->loc, "out of host memory");
            return false;
        }
        bool ok = dim_leaves(f, a, seen);
        free(seen);
        if (!ok) return false;
    }
    if (!shape_of(f, a, &x)) return false;
    r->s.i = x.shape[v->axis];
    return true;
}

/* A host scalar of an elementwise op. */
static __attribute__((noinline)) bool eval_scalar_ew(Frame *f, Val *v, Value *r) {
    Scalar x[3] = {{0}};
    for (int i = 0; i < v->nargs && i < 3; i++) {
        Value a;
        if (!eval(f, v->args[i], &a)) return false;
        x[i] = a.s;
    }
    r->s = host_ew(v, x);
    return true;
}

/* *out gets a reference the caller releases. */
/* eval_k with keep: a rank-0 kernel result may stay on the device (settle). */
static bool eval_k(Frame *f, Val *v, Value *out, bool keep) {
    if (f->memo[v->id].set) {
        if (!keep && !settle(f->s, &f->memo[v->id], v->loc)) return false;
        *out = vretain(&f->memo[v->id]);
        return true;
    }
    const Kernel *k = f->st->writer[v->id];
    if (k) {
        if (!launch(f, k) || (!keep && !settle(f->s, &f->memo[v->id], v->loc))) return false;
        *out = vretain(&f->memo[v->id]);
        return true;
    }
    Value r = {.dt = v->dt, .rank = v->rank, .set = true};
    bool ok;
    switch (v->op) {
    case OP_CONST: r.s = v->c; ok = true; break;
    case OP_SLOT:
        if (!(ok = f->slots[v->slot].set))
            rt_error(f->s->err, v->loc, "variable '%s' is used before it is assigned", f->fn->slots[v->slot].name);
        else if ((ok = keep || settle(f->s, &f->slots[v->slot], v->loc)))
            r = vretain(&f->slots[v->slot]);
        break;
    case OP_DIM: ok = eval_dim(f, v, &r); break;
    case OP_CHECKDIM: ok = run_check(f, v) && eval(f, v->args[0], &r); break;
    case OP_CAST:
        ok = eval(f, v->args[0], &r);
        if (ok) r.s = scalar_cast(r.s, v->args[0]->dt, v->dt), r.dt = v->dt;
        break;
    case OP_CPART: /* of a host scalar: its re or im (compiler/widen.c) */
        ok = eval(f, v->args[0], &r);
        if (ok) r.s = (Scalar){.f = r.s.z[v->axis]}, r.dt = v->dt;
        break;
    case OP_CPACK: {
        /* of two scalars; parts still on the device (a complex sum being returned, keep)
           are packed there, without a read */
        Value a, b;
        ok = eval_k(f, v->args[0], &a, keep);
        if (ok && !(ok = eval_k(f, v->args[1], &b, keep))) vrelease(f->s, &a);
        if (!ok) break;
        if (a.buf && b.buf) {
            size_t ps = (size_t)dtype_info[a.dt].size;
            ok = dalloc(f->s, &r, v->loc);
            if (ok && (cuk_memcpy_dtod_async(r.buf->p, a.buf->p, ps, gpu_stream()) != CUK_OK ||
                       cuk_memcpy_dtod_async(r.buf->p + ps, b.buf->p, ps, gpu_stream()) != CUK_OK)) {
                ok = gpu_fail(f->s, v->loc, "device copy failed");
                vrelease(f->s, &r);
            }
        } else if ((ok = settle(f->s, &a, v->loc) && settle(f->s, &b, v->loc))) {
            r.s.z[0] = a.s.f, r.s.z[1] = b.s.f;
        }
        vrelease(f->s, &a), vrelease(f->s, &b);
        break;
    }
    case OP_LOAD: ok = eval_load(f, v, &r); break;
    case OP_CALL: ok = eval_call(f, v, &r); break;
    case OP_SCALARCALL: /* of scalars only (arrays make it part of a kernel): a host call */
        if (v->rank == 0) ok = eval_call(f, v, &r);
        else die("array scalarcall outside a kernel");
        break;
    case OP_SLICE:
    case OP_GATHER: ok = eval_elem(f, v, &r); break;
    case OP_SORT:
    case OP_ARGSORT:
    case OP_SORTKV: ok = eval_sort(f, v, &r); break;
    case OP_SEARCHSORTED: ok = eval_searchsorted(f, v, &r); break;
    case OP_TOPK: ok = eval_topk(f, v, &r); break;
    case OP_UNIQUE: ok = eval_unique(f, v, &r); break;
    default:
        if ((ok = op_is_ew(v->op) && v->rank == 0)) ok = eval_scalar_ew(f, v, &r);
        else rt_error(f->s->err, v->loc, "the GPU backend cannot evaluate '%s' here yet; the CPU backend can", op_name[v->op]);
    }
    if (!ok) return false;
    touch(f, v->id);
    f->memo[v->id] = vretain(&r);
    *out = r;
    return true;
}

/* *out gets a reference the caller releases; a scalar is on the host. */
static bool eval(Frame *f, Val *v, Value *out) { return eval_k(f, v, out, false); }

static void clear_memo(Frame *f) {
    for (int i = 0; i < f->ntouched; i++) {
        int id = f->touched[i];
        vrelease(f->s, &f->memo[id]);
        f->shaped[id] = false;
        f->tch[id] = 0;
    }
    f->ntouched = 0;
}

/* ---- statements: the walker's hooks (run.h) ----------------------------------------- */

static bool t_set(void *fr, int slot, const Val *v) {
    Frame *f = fr;
    Value x;
    /* the slot's array may be updated in place (inplace_ok) when the slot is all that
       holds it: no other name, memo or frame, and not a caller's argument (borrowed) */
    Value *sv = &f->slots[slot];
    f->own = sv->set && sv->rank > 0 && sv->buf && sv->buf->refs == 1 && !sv->buf->borrowed ? sv->buf : NULL;
    f->set_val = v;
    bool ok = eval_k(f, (Val *)v, &x, true); /* a scalar may stay on the device: settled when read */
    f->own = NULL;
    f->set_val = NULL;
    if (!ok) return false;
    vrelease(f->s, &f->slots[slot]);
    f->slots[slot] = x;
    return true;
}

static bool t_set_scalar(void *fr, int slot, DType dt, Scalar x) {
    Frame *f = fr;
    vrelease(f->s, &f->slots[slot]);
    f->slots[slot] = (Value){.dt = dt, .rank = 0, .s = x, .set = true};
    return true;
}

static bool t_scalar(void *fr, const Val *v, Scalar *out) {
    Value x;
    if (!eval(fr, (Val *)v, &x)) return false;
    *out = x.s;
    return true;
}

static Arr *t_host(void *fr, const Val *v) {
    Frame *f = fr;
    Value x;
    if (!eval(f, (Val *)v, &x)) return NULL;
    Arr *a = download(f->s, &x, v->loc);
    vrelease(f->s, &x);
    return a;
}

static bool t_effect(void *fr, const Val *v) {
    Frame *f = fr;
    Value x = {0};
    bool ok = eval(f, (Val *)v, &x);
    vrelease(f->s, &x);
    return ok;
}

/* A returned scalar stays on the device only for the called function itself and a
   caller that takes it there (GPU_CALL_DEVICE_SCALARS). */
static bool keep_returned(const Frame *f) { return f->s->dev_scalars && f->s->depth == 1; }

static bool t_ret(void *fr, const Val *v) {
    Frame *f = fr;
    return !v || eval_k(f, (Val *)v, &f->ret, keep_returned(f));
}

static void t_end(void *fr) { clear_memo(fr); }

static bool t_ret_n(void *fr, int n, Val *const *vs) {
    Frame *f = fr;
    ASSERT(n == f->fn->nres);
    for (int k = 0; k < n; k++)
        if (!eval_k(f, vs[k], &f->rets[k], keep_returned(f))) return false;
    return true;
}

static bool t_call_n(void *fr, const Val *v, int n, const int *slots) {
    Frame *f = fr;
    Value res[MAX_RESULTS];
    ASSERT(n == v->fn->nres && n <= MAX_RESULTS);
    if (!eval_call(f, (Val *)v, res)) return false;
    for (int k = 0; k < n; k++) {
        if (slots[k] >= 0) {
            vrelease(f->s, &f->slots[slots[k]]);
            f->slots[slots[k]] = res[k];
        } else {
            vrelease(f->s, &res[k]);
        }
    }
    return true;
}

/* Profiles: the statement's kernels done (their time is the statement's). */
static void t_sync(void *fr) {
    (void)fr;
    cuk_stream_synchronize(gpu_stream());
}

static const Target gpu_target = {t_set, t_set_scalar, t_scalar, t_host, t_effect, t_ret, t_end, t_ret_n, t_call_n, t_sync};

/* ---- frames ---------------------------------------------------------------------------- */

static void frame_free(Frame *f) {
    if (!f) return;
    free(f->slots);
    free(f->memo);
    free(f->shaped);
    free(f->tch);
    free(f->touched);
    free(f->launching);
    free(f);
}

/* A clean frame for st: the one kept from an earlier call, or a new one (recursion). */
static Frame *frame_get(GpuSession *s, FnState *st) {
    Frame *f = st->spare;
    if (f) {
        st->spare = NULL;
        return f;
    }
    const Fn *fn = st->fn;
    size_t ns = fn->nslots > 0 ? (size_t)fn->nslots : 1, nv = fn->nvals > 0 ? (size_t)fn->nvals : 1;
    f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->s = s;
    f->st = st;
    f->fn = fn;
    f->plan = st->plan;
    f->ops = (Operands){f, op_dims, op_i64, NULL};
    f->slots = calloc(ns, sizeof(Value));
    f->memo = calloc(nv, sizeof(Value));
    f->shaped = calloc(nv, sizeof(bool));
    f->tch = calloc(nv, 1);
    f->touched = calloc(nv, sizeof(int));
    f->launching = calloc(st->plan->nkernels > 0 ? (size_t)st->plan->nkernels : 1, 1);
    if (!f->slots || !f->memo || !f->shaped || !f->tch || !f->touched || !f->launching) {
        frame_free(f);
        return NULL;
    }
    return f;
}

static void frame_put(FnState *st, Frame *f) {
    if (!st->spare) st->spare = f;
    else frame_free(f);
}

/* Runs st's function with args; loc is the call's (the function's own for an entry).
   result: one entry, or fn->nres for a function with several results. */
static bool run_fn(GpuSession *s, FnState *st, Value *args, Value *result, Loc loc) {
    const Fn *fn = st->fn;
    if (!run_enter(s->run, loc, fn)) return false;
    Frame *f = frame_get(s, st);
    if (!f) {
        run_leave(s->run);
        return gpu_fail(s, fn->loc, "out of host memory");
    }
    s->depth++;
    f->ops.err = s->err;
    f->ret = (Value){0};
    for (int k = 0; k < fn->nres; k++) f->rets[k] = (Value){0};
    for (int i = 0; i < fn->nparams; i++) f->slots[i] = vretain(&args[i]);
    bool ok = walk(s->run, &gpu_target, f, fn, fn->body) != WALK_ERROR;
    for (int k = 0; ok && k < fn->nres; k++) ok = f->rets[k].set;
    if (ok && fn->nres) {
        for (int k = 0; k < fn->nres; k++) result[k] = f->rets[k];
    } else if (ok) {
        *result = f->ret;
    } else {
        vrelease(s, &f->ret);
        for (int k = 0; k < fn->nres; k++) vrelease(s, &f->rets[k]);
    }
    f->ret = (Value){0};
    for (int k = 0; k < fn->nres; k++) f->rets[k] = (Value){0};
    for (int i = 0; i < fn->nslots; i++) vrelease(s, &f->slots[i]);
    clear_memo(f);
    frame_put(st, f);
    s->depth--;
    run_leave(s->run);
    return ok;
}

/* ---- sessions ---------------------------------------------------------------------------- */

/* A parameter of fn read as it is (no checkdim around it). */
static bool is_param(const Fn *fn, const Val *v) {
    return v && v->op == OP_SLOT && v->slot >= 0 && v->slot < fn->nparams;
}

/* fn's whole body is `checkdims between parameter dims; return <one map kernel>` and that
   kernel reads only parameters, all of the iteration shape, and host scalars that are
   parameters (saxpy, the chain, most small functions called from Python): then a call
   whose array arguments all have one shape can skip the interpreter (call_direct). */
static const Kernel *direct_kernel(const Fn *fn, const Plan *pl) {
    if (pl->nkernels != 1) return NULL;
    const Kernel *k = pl->kernels[0];
    if (k->kind != K_MAP || k->nouts != 1 || k->space != k->outs[0] || k->rank < 1 || k->nparams > 64) return NULL;
    const Stmt *st = fn->body;
    for (; st && st->kind == S_EVAL; st = st->next) {
        const Val *c = st->v;
        for (; c && c->op == OP_CHECKDIM; c = c->args[0]) {
            /* the same axis of two parameters: equal shapes pass it */
            for (int i = 1; i <= 2; i++)
                if (!c->args[i] || c->args[i]->op != OP_DIM || !is_param(fn, c->args[i]->args[0])) return NULL;
            if (c->args[1]->axis != c->args[2]->axis) return NULL;
        }
        if (!is_param(fn, c)) return NULL;
    }
    if (!st || st->kind != S_RETURN || st->next || st->v != k->outs[0]) return NULL;
    for (int i = 0; i < k->nvals; i++)
        if (!op_is_ew(k->vals[i]->op) && k->vals[i]->op != OP_CAST) return NULL;
    for (int i = 0; i < k->nins; i++)
        if (!is_param(fn, k->ins[i]) || k->ins[i]->rank != k->rank) return NULL;
    for (int i = 0; i < k->nscalars; i++)
        if (!is_param(fn, k->scalars[i]) || k->scalars[i]->rank != 0) return NULL;
    for (int i = 0; i < k->nparams; i++) {
        KPKind kind = k->params[i].kind;
        if (kind != KP_N && kind != KP_FLAT && kind != KP_SHAPE && kind != KP_BSTRIDE && kind != KP_IN &&
            kind != KP_SCALAR && kind != KP_OUT)
            return NULL;
    }
    return k;
}

static void mark_returns(const Stmt *st, bool *ret) {
    for (; st; st = st->next) {
        if (st->kind == S_RETURN && st->v && !st->nvs) ret[st->v->id] = true;
        mark_returns(st->body, ret);
        mark_returns(st->els, ret);
    }
}

static void fnstate_init(GpuSession *s, FnState *st, int pi) {
    Arena *a = &s->arena;
    const Plan *pl = s->ps->plans[pi];
    const Fn *fn = pl->fn;
    int nv = fn->nvals > 0 ? fn->nvals : 1;
    st->fn = fn;
    st->plan = pl;
    st->pi = pi;
    st->writer = NEWN(a, const Kernel *, nv);
    st->byid = NEWN(a, Val *, nv);
    st->returned = NEWN(a, bool, nv);
    mark_returns(fn->body, st->returned);
    st->ks = NEWN(a, KState, pl->nkernels + 1);
    for (int i = 0; i < pl->nkernels; i++) {
        const Kernel *k = pl->kernels[i];
        ASSERT(k->id == i);
        for (int j = 0; j < k->nvals; j++) {
            Val *v = k->vals[j];
            if (v->id < 0 || v->id >= nv) continue; /* not one of fn's own Vals */
            st->byid[v->id] = v;
        }
        for (int j = 0; j < k->nouts; j++) {
            Val *v = k->outs[j];
            ASSERT(v->id >= 0 && v->id < nv); /* eval memoises outputs by id */
            if (!st->writer[v->id]) st->writer[v->id] = k;
            st->byid[v->id] = v;
        }
        KState *ks = &st->ks[i];
        ks->ins = NEWN(a, Value, k->nins + 1);
        ks->outs = NEWN(a, Value, k->nouts + 1);
        ks->w = NEWN(a, long long, k->nparams + 1);
        ks->where = NEWN(a, int, k->nparams + 1);
        for (int p = 0; p < k->nparams; p++) {
            const KParam *kp = &k->params[p];
            if (kp->kind == KP_IN)
                for (int q = 0; q < k->nins; q++)
                    if (k->ins[q] == kp->v) ks->where[p] = q;
            if (kp->kind == KP_OUT)
                for (int q = 0; q < k->nouts; q++)
                    if (k->outs[q] == kp->v) ks->where[p] = q;
            if (kp->kind == KP_ERR) st->has_err = true;
        }
        Upd u;
        if (update_form(k, &u)) {
            u.inker = NEWN(a, bool, (size_t)nv);
            u.seen = NEWN(a, bool, (size_t)nv * 2);
            for (int j = 0; j < k->nvals; j++)
                if (k->vals[j]->id >= 0 && k->vals[j]->id < nv) u.inker[k->vals[j]->id] = true;
            ks->upd = NEW(a, Upd);
            *ks->upd = u;
        }
    }
    /* CUK_NO_DIRECT=1 sends every call through the interpreter (to compare the two) */
    const char *nd = getenv("CUK_NO_DIRECT");
    st->direct = nd && *nd && strcmp(nd, "0") != 0 ? NULL : direct_kernel(fn, pl);
}

int gpu_session_take_stream(GpuSession *s, cuk_stream *stream, cuk_devptr blocks[2]) {
    pthread_mutex_lock(&s->lock);
    uintptr_t h = cuk_stream_handle(stream);
    int n = 0;
    for (SState **pp = &s->sstates, *t; (t = *pp); pp = &t->next)
        if (t->handle == h) {
            *pp = t->next;
            if (t->scratch) blocks[n++] = t->scratch;
            if (t->errblk) blocks[n++] = t->errblk;
            free(t);
            break;
        }
    s->ss = NULL;
    pthread_mutex_unlock(&s->lock);
    return n;
}

GpuSession *gpu_session_new(const Compiled *c, const Bundle *b, RtErr *err) {
    ASSERT(c->prog && c->plans && c->cuda); /* compiled to STAGE_CUDA */
    if (cuk_init() != CUK_OK) {
        rt_error(err, (Loc){0}, "%s", cuk_last_error());
        return NULL;
    }
    if (timing_on && !timing_first_done) {
        int dev;
        cuk_device_current(&dev); /* retains the primary context and makes it current */
        cuk_synchronize();
        timing_mark("context ready");
    }
    GpuSession *s = calloc(1, sizeof *s);
    if (!s) {
        rt_error(err, (Loc){0}, "out of host memory");
        return NULL;
    }
    s->c = c;
    s->bundle = b;
    arena_init(&s->arena);
    pthread_mutex_init(&s->lock, NULL);
    s->ps = c->plans;
    s->nfs = s->ps->nplans;
    s->fs = NEWN(&s->arena, FnState, s->nfs + 1);
    s->mods = NEWN(&s->arena, cuk_module *, s->nfs + 1);
    for (int i = 0; i < s->nfs; i++) fnstate_init(s, &s->fs[i], i);
    return s;
}

void gpu_session_fast_math(GpuSession *s, bool on) { s->fast_math = on; }
void gpu_session_profile(GpuSession *s, Profile *prof) { s->prof = prof; }

void gpu_session_free(GpuSession *s) {
    if (!s) return;
    for (int i = 0; i < 2; i++)
        if (s->pev[i]) cuk_event_destroy(s->pev[i]);
    for (int i = 0; i < s->nfs; i++) frame_free(s->fs[i].spare);
    while (s->sstates) {
        SState *t = s->sstates;
        s->sstates = t->next;
        sstate_free(t);
    }
    while (s->free_bufs) {
        DBuf *b = s->free_bufs;
        s->free_bufs = b->next;
        free(b);
    }
    pthread_mutex_destroy(&s->lock);
    arena_free(&s->arena); /* modules belong to the runtime's cache */
    free(s);
}

/* The fast path for a direct function (direct_kernel): the parameter words straight
   from the arguments, one allocation, one launch; the interpreter's answer exactly, as
   every checkdim compares parameter dims that are equal here. *handled is false (and
   nothing done) when the call does not fit: the caller then takes the general path,
   which also words any error. */
static bool call_direct(GpuSession *s, FnState *st, const GpuVal *args, GpuVal *result, bool *handled) {
    const Fn *fn = st->fn;
    const Kernel *k = st->direct;
    KState *ks = &st->ks[k->id];
    *handled = false;
    if (!ks->fn || ks->busy || timing_on || s->prof) return true; /* a profile times launch() */
    const GpuVal *shape = NULL;
    for (int i = 0; i < fn->nparams; i++) {
        const GpuVal *a = &args[i];
        if (a->dt != fn->slots[i].dt || a->rank != fn->slots[i].rank) return true;
        if (a->rank == 0) continue;
        if (!shape) shape = a;
        if (a->rank != shape->rank || memcmp(a->shape, shape->shape, sizeof(int64_t) * (size_t)a->rank) != 0)
            return true;
    }
    if (!shape || shape->rank != k->rank) return true;
    int64_t n = 1, cs[MAXRANK];
    for (int a = k->rank - 1; a >= 0; a--) {
        cs[a] = n;
        n *= shape->shape[a];
    }
    unsigned grid;
    size_t scratch;
    if (!kernel_geometry(k, n, 1, n, -1, 0, &grid, &scratch)) return true; /* the general path reports it */
    const Val *o = k->outs[0];
    cuk_devptr out = 0;
    const GpuVal *in = s->into;
    bool into = in && in->dt == o->dt && in->rank == k->rank &&
                memcmp(in->shape, shape->shape, sizeof(int64_t) * (size_t)k->rank) == 0;
    if (s->into && !into) return true; /* the general path says what differs */
    if (into) out = in->p;
    else if (!gpu_alloc(&out, (size_t)n * (size_t)dtype_info[o->dt].size))
        return true; /* the general path reports it */
    long long w[64];
    for (int i = 0; i < k->nparams; i++) {
        const KParam *p = &k->params[i];
        w[i] = 0;
        switch (p->kind) {
        case KP_N: w[i] = n; break;
        case KP_FLAT: w[i] = 1; break;
        case KP_SHAPE: w[i] = shape->shape[p->a]; break;
        case KP_BSTRIDE: w[i] = shape->shape[p->a] == 1 ? 0 : cs[p->a]; break;
        case KP_IN: w[i] = (long long)args[p->v->slot].p; break;
        case KP_SCALAR: memcpy(&w[i], &args[p->v->slot].s, 8); break;
        case KP_OUT: w[i] = (long long)out; break;
        default: die("call_direct: parameter kind %d", (int)p->kind);
        }
    }
    *handled = true;
    if (n > 0) {
        void *kargs[1] = {w};
        cuk_dim3 g = {grid, 1, 1}, b = {(unsigned)k->block, 1, 1};
        if (cuk_launch(ks->fn, g, b, 0, gpu_stream(), kargs) != CUK_OK) {
            if (!into) cuk_mem_free(out);
            return gpu_fail(s, o->loc, "kernel launch failed");
        }
    }
    *result = (GpuVal){.dt = o->dt, .rank = k->rank, .p = out, .borrowed = into};
    memcpy(result->shape, shape->shape, sizeof(int64_t) * (size_t)k->rank);
    return true;
}

/* Whether [a, a + an) and [b, b + bn) share a byte. */
static bool overlaps(cuk_devptr a, size_t an, cuk_devptr b, size_t bn) { return an && bn && a < b + bn && b < a + an; }

static size_t gv_bytes(const GpuVal *g) {
    size_t n = g->dt < DT_COUNT ? (size_t)dtype_info[g->dt].size : 0;
    for (int k = 0; k < g->rank; k++) n *= (size_t)g->shape[k];
    return n;
}

/* out= (into): the result has its dtype and shape; it is in into's memory already
   (written by its kernel) or is copied there. */
static bool into_finish(GpuSession *s, const Fn *fn, const GpuVal *into, Value *r, GpuVal *res) {
    char a[96], b[96];
    if (r->rank != into->rank || r->dt != into->dt ||
        memcmp(r->shape, into->shape, sizeof(int64_t) * (size_t)r->rank) != 0) {
        rt_error(s->err, fn->loc, "%s(): out= is %s %s, but the result is %s %s", fn->name, dtype_info[into->dt].name,
                 fmt_shape(a, sizeof a, into->rank, into->shape), dtype_info[r->dt].name,
                 fmt_shape(b, sizeof b, r->rank, r->shape));
        return false;
    }
    size_t bytes = gv_bytes(into);
    if (r->buf->p != into->p && bytes && cuk_memcpy_dtod_async(into->p, r->buf->p, bytes, gpu_stream()) != CUK_OK)
        return gpu_fail(s, fn->loc, "copying the result into out= failed");
    *res = *into;
    res->borrowed = true;
    return true;
}

/* Whether st's function is one kernel that reads each array argument only at the
   element it writes: an elementwise map or a 1-D scan (a tile reads its own elements
   before it writes them, and no other tile reads them), every input read at the
   iteration index, no index transform. out= may then be such an argument itself. */
static bool pointwise_plan(const FnState *st) {
    const Plan *pl = st->plan;
    if (pl->nkernels != 1) return false;
    const Kernel *k = pl->kernels[0];
    if ((k->kind != K_MAP && k->kind != K_SCAN) || (k->kind == K_SCAN && k->rank != 1) || kernel_region_update(k) ||
        kernel_tiled_transpose(k))
        return false;
    for (int i = 0; i < k->nins; i++)
        if (!k->ins_direct[i]) return false;
    for (int i = 0; i < k->nvals; i++)
        if (op_is_index(k->vals[i]->op)) return false;
    return true;
}

/* Where the kernels may write the result of a call with out= into: into itself, or NULL
   when an argument overlaps it (the result is then copied there at the end, not written
   while the arguments are still being read), except an argument that is into, of its
   shape, which a pointwise plan reads only where it writes (x = f(x) in place). */
static const GpuVal *into_target(const FnState *st, const GpuVal *args, const GpuVal *into) {
    for (int i = 0; into && i < st->fn->nparams; i++)
        if (args[i].rank > 0 && overlaps(args[i].p, gv_bytes(&args[i]), into->p, gv_bytes(into)) &&
            !(args[i].p == into->p && args[i].rank == into->rank &&
              memcmp(args[i].shape, into->shape, sizeof(int64_t) * (size_t)into->rank) == 0 && pointwise_plan(st)))
            return NULL;
    return into;
}

static bool call_locked(GpuSession *s, FnState *st, const GpuVal *args, GpuVal *result, const GpuVal *into) {
    const Fn *fn = st->fn;
    s->into = into_target(st, args, into);
    s->into_used = false;
    s->depth = 0;
    if (st->direct && !s->ss->err_pending && (!into || s->into)) {
        bool handled;
        bool ok = call_direct(s, st, args, result, &handled);
        if (handled || !ok) return ok;
    }
    Value stack[8], *va = fn->nparams <= 8 ? stack : calloc((size_t)fn->nparams, sizeof(Value));
    if (!va) return gpu_fail(s, fn->loc, "out of host memory");
    int made = 0;
    bool ok = true;
    for (; ok && made < fn->nparams; made++) {
        const GpuVal *a = &args[made];
        Value *v = &va[made];
        *v = (Value){.dt = a->dt, .rank = a->rank, .set = true};
        if (a->dt != fn->slots[made].dt || a->rank != fn->slots[made].rank) {
            rt_error(s->err, fn->loc, "%s(): argument %d is a %d-D %s value, but parameter '%s' is %d-D %s", fn->name,
                     made, a->rank, a->dt < DT_COUNT ? dtype_info[a->dt].name : "void", fn->slots[made].name,
                     fn->slots[made].rank, dtype_info[fn->slots[made].dt].name);
            ok = false;
            break;
        }
        if (a->rank == 0) {
            v->s = a->s;
            continue;
        }
        memcpy(v->shape, a->shape, sizeof v->shape);
        if (!(v->buf = dbuf_new(s))) {
            ok = gpu_fail(s, fn->loc, "out of host memory");
            break;
        }
        v->buf->p = a->p;
        v->buf->borrowed = true;
    }
    Value rs[MAX_RESULTS];
    int nout = fn->nres ? fn->nres : 1;
    for (int k = 0; k < nout; k++) rs[k] = (Value){0};
    if (ok) ok = run_fn(s, st, va, rs, fn->loc);
    if (ok) ok = check_dev_err(s);
    if (ok && into) {
        if (!rs[0].set || rs[0].rank == 0) {
            rt_error(s->err, fn->loc, "%s() returns %s, so it takes no out=", fn->name, rs[0].set ? "a scalar" : "nothing");
            ok = false;
        } else {
            ok = into_finish(s, fn, into, &rs[0], &result[0]);
        }
        nout = 0; /* result[0] is into (or nothing) */
    }
    for (int k = 0; ok && k < nout; k++) {
        Value *r = &rs[k];
        if (!r->set) continue;
        result[k].dt = r->dt;
        result[k].rank = r->rank;
        memcpy(result[k].shape, r->shape, sizeof r->shape);
        result[k].s = r->s;
        /* r->buf: an array, or a scalar still on the device (GPU_CALL_DEVICE_SCALARS) */
        bool passed = r->buf && r->buf->borrowed;
        for (int j = 0; j < k && r->buf && !passed; j++) passed = rs[j].buf == r->buf;
        if (passed) {
            /* an argument passed through (or one array returned twice): the caller
               gets its own copy */
            size_t bytes = (size_t)nelem(r) * (size_t)dtype_info[r->dt].size;
            ok = gpu_alloc(&result[k].p, bytes);
            if (!ok) gpu_fail(s, fn->loc, "device allocation failed");
            else if (bytes && cuk_memcpy_dtod_async(result[k].p, r->buf->p, bytes, gpu_stream()) != CUK_OK) {
                ok = gpu_fail(s, fn->loc, "device copy failed");
                cuk_mem_free(result[k].p);
                result[k].p = 0;
            }
        } else if (r->buf) {
            /* hand the block over: the DBuf goes, the memory stays */
            result[k].p = r->buf->p;
            r->buf->borrowed = true;
        }
    }
    if (!ok)
        for (int k = 0; k < nout; k++) {
            /* blocks already handed over or copied are the caller's no more */
            if (result[k].dt != DT_VOID && result[k].p) cuk_mem_free(result[k].p);
            result[k] = (GpuVal){.dt = DT_VOID};
        }
    if (!ok && into) result[0] = (GpuVal){.dt = DT_VOID};
    for (int k = 0; k < (fn->nres ? fn->nres : 1); k++) vrelease(s, &rs[k]);
    for (int i = 0; i < made && i < fn->nparams; i++) vrelease(s, &va[i]);
    if (va != stack) free(va);
    return ok;
}

bool gpu_call(GpuSession *s, const Fn *fn, const GpuVal *args, GpuVal *result, FILE *out, RtErr *err) {
    return gpu_call_into(s, fn, args, NULL, result, out, err, 0, NULL);
}

bool gpu_call_into(GpuSession *s, const Fn *fn, const GpuVal *args, const GpuVal *into, GpuVal *result, FILE *out,
                   RtErr *err, unsigned flags, cuk_stream *stream) {
    for (int k = 0; k < (fn->nres ? fn->nres : 1); k++) result[k] = (GpuVal){.dt = DT_VOID};
    FnState *st = fn_state(s, fn);
    if (!st) {
        rt_error(err, fn->loc, "%s() is not a function of this session's program", fn->name);
        return false;
    }
    pthread_mutex_lock(&s->lock);
    if (!sstate_use(s, stream)) {
        pthread_mutex_unlock(&s->lock);
        rt_error(err, fn->loc, "%s(): out of host memory", fn->name);
        return false;
    }
    call_stream = stream;
    Run run;
    run_init(&run, err, out);
    run.prof = s->prof;
    s->err = err;
    s->run = &run;
    s->dev_scalars = flags & GPU_CALL_DEVICE_SCALARS;
    /* A broken invariant becomes the call's error ("internal error at ..."); what the
       call held then is not freed, but the session stays usable. */
    bool ok;
    DieGuard g;
    guard_push(&g);
    if (setjmp(g.jb) == 0) {
        if (die_injected("gpu")) die("injected (CUK_DIE_AT=gpu)");
        ok = call_locked(s, st, args, result, into);
        guard_pop(&g);
    } else {
        ok = false;
        for (int k = 0; k < (fn->nres ? fn->nres : 1); k++) result[k] = (GpuVal){.dt = DT_VOID};
        rt_error(err, fn->loc, "%s (this is a bug in cuk; please report it with the program)", g.msg);
    }
    s->err = NULL;
    s->run = NULL;
    s->into = NULL;
    s->dev_scalars = false;
    call_stream = NULL;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

int gpu_call_quick(GpuSession *s, const Fn *fn, const GpuVal *args, GpuVal *result, RtErr *err) {
    return gpu_call_quick_into(s, fn, args, NULL, result, err, NULL);
}

int gpu_call_quick_into(GpuSession *s, const Fn *fn, const GpuVal *args, const GpuVal *into, GpuVal *result,
                        RtErr *err, cuk_stream *stream) {
    *result = (GpuVal){.dt = DT_VOID};
    FnState *st = fn_state(s, fn);
    if (!st || !st->direct) return 0;
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    if (!sstate_use(s, stream)) {
        pthread_mutex_unlock(&s->lock);
        return 0; /* the general path reports it */
    }
    call_stream = stream;
    if (!s->ss->err_pending) {
        s->err = err;
        s->into = into_target(st, args, into); /* NULL (an overlap): the general path copies */
        bool handled = false, ok = true;
        if (!into || s->into) ok = call_direct(s, st, args, result, &handled);
        rc = !ok ? -1 : handled ? 1 : 0;
        s->err = NULL;
        s->into = NULL;
    }
    call_stream = NULL;
    pthread_mutex_unlock(&s->lock);
    return rc;
}
