/* The statement walker (run.h): host statements (set, if, for, while, return, print,
   save, eval) run once for both backends over their Target hooks, with the checks every
   run makes: the work budget, the call depth and the stack. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/run.h"

/* The fuzzer's work limit (exec.h). */
int64_t cpu_work_limit;

/* Calls refuse to nest deeper once less than this much of the thread's stack is left:
   what one call level may still need below the check (nested expressions evaluated
   recursively, sanitizer builds' larger frames). */
enum { STACK_RESERVE = 256 << 10 };

/* This thread's stack floor (run.h), found once per thread: pthread_getattr_np reads
   /proc/self/maps for the main thread, too slow for every call. */
static uintptr_t stack_floor(void) {
    static _Thread_local bool known;
    static _Thread_local uintptr_t floor;
    if (!known) {
        known = true;
        pthread_attr_t at;
        if (pthread_getattr_np(pthread_self(), &at) == 0) {
            void *lo;
            size_t size;
            if (pthread_attr_getstack(&at, &lo, &size) == 0 && size > 2 * (size_t)STACK_RESERVE)
                floor = (uintptr_t)lo + STACK_RESERVE;
            pthread_attr_destroy(&at);
        }
    }
    return floor;
}

/* ---- interrupts (exec.h, run.h) ---------------------------------------------------------- */

static int (*_Atomic interrupt_hook)(void);
/* This thread's run: told to stop (sticky until run_interrupt_reset or the next run); the
   flag a waiting caller sets (run_bind), else NULL and the run asks the hook itself. */
static _Thread_local bool stopped;
static _Thread_local atomic_bool *stop_at;
static _Thread_local unsigned poll_count;
static _Thread_local int64_t poll_last; /* ms */

enum { POLL_MS = 20 };

static int64_t coarse_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void run_set_interrupt_hook(int (*hook)(void)) { atomic_store(&interrupt_hook, hook); }

bool run_ask_hook(void) {
    int (*hook)(void) = atomic_load(&interrupt_hook);
    return hook && hook();
}

void run_bind(atomic_bool *stop) { stop_at = stop; }

bool run_poll(void) {
    if (stopped) return false;
    if (stop_at) {
        if (atomic_load_explicit(stop_at, memory_order_relaxed)) stopped = true;
        return !stopped;
    }
    if (!atomic_load_explicit(&interrupt_hook, memory_order_relaxed) || (++poll_count & 63)) return true;
    int64_t now = coarse_ms();
    if (now - poll_last < POLL_MS) return true;
    poll_last = now;
    if (run_ask_hook()) stopped = true;
    return !stopped;
}

bool run_poll_now(void) {
    if (stopped) return false;
    if (stop_at) return run_poll();
    if (run_ask_hook()) stopped = true;
    return !stopped;
}

bool run_interrupted(void) { return stopped; }

void run_interrupt_reset(void) { stopped = false; }

void run_interrupt_set(void) { stopped = true; }

/* ---- profiles (exec.h) ------------------------------------------------------------------ */

typedef struct ProfEntry {
    const Fn *fn;
    const Stmt *s;
    int64_t runs, ns;
} ProfEntry;

typedef struct KProfEntry {
    const void *key;
    const char *name, *kind;
    Loc loc;
    int64_t runs, bytes;
    double ms;
} KProfEntry;

struct Profile {
    pthread_mutex_t mu;
    ProfEntry *e; /* open addressing by the statement's address, at most half full */
    int n, cap;
    int64_t calls, call_ns;
    KProfEntry *k; /* the GPU's kernels, in first-launch order */
    int nk, kcap;
    double copy_gbs; /* 0: not measured */
};

Profile *profile_new(void) {
    Profile *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void profile_free(Profile *p) {
    if (!p) return;
    pthread_mutex_destroy(&p->mu);
    free(p->e);
    free(p->k);
    free(p);
}

static size_t prof_slot(const ProfEntry *e, int cap, const Stmt *s) {
    size_t i = ((uintptr_t)s >> 4) * 0x9E3779B97F4A7C15u & (size_t)(cap - 1);
    while (e[i].s && e[i].s != s) i = (i + 1) & (size_t)(cap - 1);
    return i;
}

void profile_add(Profile *p, const Fn *fn, const Stmt *s, int64_t ns) {
    pthread_mutex_lock(&p->mu);
    if (2 * (p->n + 1) > p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        ProfEntry *e = calloc((size_t)cap, sizeof *e);
        if (!e) { /* out of memory: this statement goes unrecorded */
            pthread_mutex_unlock(&p->mu);
            return;
        }
        for (int k = 0; k < p->cap; k++)
            if (p->e[k].s) e[prof_slot(e, cap, p->e[k].s)] = p->e[k];
        free(p->e);
        p->e = e, p->cap = cap;
    }
    ProfEntry *x = &p->e[prof_slot(p->e, p->cap, s)];
    if (!x->s) {
        *x = (ProfEntry){.fn = fn, .s = s};
        p->n++;
    }
    x->runs++;
    x->ns += ns;
    pthread_mutex_unlock(&p->mu);
}

void profile_call(Profile *p, int64_t ns) {
    pthread_mutex_lock(&p->mu);
    p->calls++;
    p->call_ns += ns;
    pthread_mutex_unlock(&p->mu);
}

void profile_kernel(Profile *p, const void *key, const char *name, const char *kind, Loc loc, double ms,
                    int64_t bytes) {
    pthread_mutex_lock(&p->mu);
    int i = 0;
    while (i < p->nk && p->k[i].key != key) i++;
    if (i == p->nk) {
        if (p->nk == p->kcap) {
            int cap = p->kcap ? 2 * p->kcap : 16;
            KProfEntry *k = realloc(p->k, sizeof *k * (size_t)cap);
            if (!k) { /* out of memory: this launch goes unrecorded */
                pthread_mutex_unlock(&p->mu);
                return;
            }
            p->k = k, p->kcap = cap;
        }
        p->k[p->nk++] = (KProfEntry){.key = key, .name = name, .kind = kind, .loc = loc};
    }
    p->k[i].runs++;
    p->k[i].ms += ms;
    p->k[i].bytes += bytes;
    pthread_mutex_unlock(&p->mu);
}

void profile_copy_bandwidth(Profile *p, double gbs) {
    pthread_mutex_lock(&p->mu);
    p->copy_gbs = gbs;
    pthread_mutex_unlock(&p->mu);
}

static int by_kernel_time(const void *a, const void *b) {
    const KProfEntry *x = a, *y = b;
    return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : 0;
}

/* The per-kernel table (the GPU's), heaviest first. p->mu held. */
static void kernels_print(const Profile *p, FILE *out) {
    KProfEntry *k = malloc(sizeof *k * (size_t)p->nk);
    if (!k) return;
    memcpy(k, p->k, sizeof *k * (size_t)p->nk);
    /* stable for equal times: first-launch order */
    for (int i = 1; i < p->nk; i++)
        for (int j = i; j > 0 && by_kernel_time(&k[j - 1], &k[j]) > 0; j--) {
            KProfEntry t = k[j];
            k[j] = k[j - 1], k[j - 1] = t;
        }
    double total = 0;
    for (int i = 0; i < p->nk; i++) total += k[i].ms;
    if (p->copy_gbs > 0)
        fprintf(out, "per kernel: %.3f ms on the GPU (events around each launch); bytes: the arrays it reads and "
                     "writes, once each; %% copy: of this device's copy bandwidth, %.0f GB/s (a device-to-device copy)\n",
                total, p->copy_gbs);
    else
        fprintf(out, "per kernel: %.3f ms on the GPU (events around each launch); bytes: the arrays it reads and "
                     "writes, once each\n", total);
    fprintf(out, "%10s %8s %10s %10s %8s %7s  %s\n", "ms", "launches", "ms/launch", "MB/launch", "GB/s", "% copy",
            "kernel");
    for (int i = 0; i < p->nk; i++) {
        double gbs = k[i].ms > 0 ? (double)k[i].bytes / (k[i].ms * 1e6) : 0;
        char pc[16] = "-";
        if (p->copy_gbs > 0 && k[i].ms > 0) snprintf(pc, sizeof pc, "%.1f%%", 100.0 * gbs / p->copy_gbs);
        const Loc *l = &k[i].loc;
        fprintf(out, "%10.3f %8lld %10.4f %10.3f %8.1f %7s  %s (%s)  %s:%d:%d\n", k[i].ms, (long long)k[i].runs,
                k[i].ms / (double)k[i].runs, (double)k[i].bytes / (double)k[i].runs / 1e6, gbs, pc, k[i].name,
                k[i].kind, l->src ? l->src->path : "?", l->line, l->col);
    }
    free(k);
}

static int by_time(const void *a, const void *b) {
    const ProfEntry *x = a, *y = b;
    if (x->ns != y->ns) return x->ns < y->ns ? 1 : -1;
    return x->s->loc.off < y->s->loc.off ? -1 : x->s->loc.off > y->s->loc.off;
}

/* The statement as written (its first line from the source, at most 60 bytes), else
   what it is. */
static const char *stmt_what(const Fn *fn, const Stmt *s, char *buf, size_t n) {
    const Src *src = s->loc.src;
    if (src && src->text && s->loc.off >= 0 && s->loc.off < src->len) {
        const char *a = src->text + s->loc.off, *e = a;
        while (*e && *e != '\n' && e - a < 60) e++;
        snprintf(buf, n, "%.*s%s", (int)(e - a), a, *e && *e != '\n' ? "..." : "");
        return buf;
    }
    switch (s->kind) {
    case S_SET:
        snprintf(buf, n, "%s = ...", s->slot >= 0 && s->slot < fn->nslots && fn->slots[s->slot].name ? fn->slots[s->slot].name : "?");
        return buf;
    case S_RETURN: return "return";
    case S_PRINT: return "print";
    case S_SAVE: return "save";
    case S_CALLN: return "let (...) = call";
    default: return "eval";
    }
}

void profile_print(const Profile *p, const char *backend, FILE *out) {
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    ProfEntry *e = p->n ? malloc(sizeof *e * (size_t)p->n) : NULL;
    int n = 0;
    for (int k = 0; k < p->cap && e; k++)
        if (p->e[k].s) e[n++] = p->e[k];
    int64_t calls = p->calls, total = p->call_ns;
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
    if (!n) {
        free(e);
        return;
    }
    qsort(e, (size_t)n, sizeof *e, by_time);
    fprintf(out, "profile (%s backend): %lld call%s, %.3f ms; time per statement, with what it calls%s\n",
            backend, (long long)calls, calls == 1 ? "" : "s", total / 1e6,
            strcmp(backend, "GPU") == 0 ? " (each statement waited for: its kernels' time)" : "");
    fprintf(out, "%10s %8s %10s %6s  %s\n", "ms", "runs", "ms/run", "%", "statement");
    for (int k = 0; k < n; k++) {
        char what[96];
        const Loc *l = &e[k].s->loc;
        fprintf(out, "%10.3f %8lld %10.4f %5.1f%%  %s:%d:%d  %s  (fn %s)\n", e[k].ns / 1e6, (long long)e[k].runs,
                e[k].ns / 1e6 / (double)e[k].runs, total > 0 ? 100.0 * (double)e[k].ns / (double)total : 0.0,
                l->src ? l->src->path : "?", l->line, l->col, stmt_what(e[k].fn, e[k].s, what, sizeof what),
                e[k].fn->name);
    }
    free(e);
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    if (p->nk) kernels_print(p, out);
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
}

int64_t profile_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void run_init(Run *r, RtErr *err, FILE *out) {
    r->err = err;
    r->out = out;
    r->work = 0;
    r->depth = 0;
    r->stack_floor = stack_floor();
    r->host_progs = NULL;
    r->prof = NULL;
    stopped = false;
    poll_last = coarse_ms();
}

bool run_charge(Run *r, Loc loc, int64_t n) {
    if (!run_poll()) {
        if (!r->err->set) rt_error(r->err, loc, "interrupted");
        return false;
    }
    if (cpu_work_limit <= 0 || n <= 0) return true;
    if (n <= cpu_work_limit - r->work) {
        r->work += n;
        return true;
    }
    rt_error(r->err, loc, "work limit of %lld exceeded", (long long)cpu_work_limit);
    return false;
}

bool run_enter(Run *r, Loc loc, const Fn *fn) {
    if (!run_charge(r, loc, 1)) return false;
    /* the frame's address, not a local's: ASan may keep locals on a heap "fake stack" */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (r->depth >= MAX_CALL_DEPTH) {
        rt_error(r->err, loc, "recursion too deep: more than %d nested calls (in '%s')", MAX_CALL_DEPTH, fn->name);
        return false;
    }
    if (r->stack_floor && here < r->stack_floor) {
        rt_error(r->err, loc,
                 "recursion too deep for this thread's stack: %d nested calls (in '%s'); call from a thread with "
                 "a larger stack, or recurse less deeply",
                 r->depth, fn->name);
        return false;
    }
    r->depth++;
    return true;
}

void run_leave(Run *r) { r->depth--; }

static bool scalar_i64(const Target *t, void *fr, const Val *v, int64_t *out) {
    Scalar s;
    if (!t->scalar(fr, v, &s)) return false;
    *out = scalar_cast(s, v->dt, DT_I64).i;
    return true;
}

static bool print_or_save(Run *r, const Target *t, void *fr, const Stmt *s) {
    Arr *a = t->host(fr, s->v);
    t->end(fr);
    if (!a) return false;
    bool ok = true;
    if (s->kind == S_PRINT) {
        arr_print(r->out, a);
    } else {
        char msg[512];
        if (!(ok = npy_save(s->path, a, msg, sizeof msg))) rt_error(r->err, s->loc, "%s", msg);
    }
    arr_release(a);
    return ok;
}

/* One statement of walk's, timed into r->prof around the statements that compute
   (control flow is timed through the statements inside it). */
static int walk_one(Run *r, const Target *t, void *fr, const Fn *fn, const Stmt *s);

int walk(Run *r, const Target *t, void *fr, const Fn *fn, const Stmt *s) {
    for (; s; s = s->next) {
        bool timed = r->prof && s->kind != S_IF && s->kind != S_WHILE && s->kind != S_FOR;
        int64_t t0 = timed ? profile_clock() : 0;
        int w = walk_one(r, t, fr, fn, s);
        if (timed && w != WALK_ERROR) {
            if (t->sync) t->sync(fr);
            profile_add(r->prof, fn, s, profile_clock() - t0);
        }
        if (w != WALK_OK || s->kind == S_RETURN) return w;
    }
    return WALK_OK;
}

static int walk_one(Run *r, const Target *t, void *fr, const Fn *fn, const Stmt *s) {
    {
        bool ok = true;
        switch (s->kind) {
        case S_SET:
            ok = t->set(fr, s->slot, s->v);
            t->end(fr);
            break;
        case S_EVAL:
            ok = t->effect(fr, s->v);
            t->end(fr);
            break;
        case S_PRINT:
        case S_SAVE: ok = print_or_save(r, t, fr, s); break;
        case S_CALLN:
            ok = t->call_n(fr, s->v, s->nvs, s->slots);
            t->end(fr);
            break;
        case S_RETURN:
            ok = s->nvs ? t->ret_n(fr, s->nvs, s->vs) : t->ret(fr, s->v);
            t->end(fr);
            return ok ? WALK_RETURN : WALK_ERROR;
        case S_IF: {
            Scalar c;
            ok = t->scalar(fr, s->v, &c);
            t->end(fr);
            if (!ok) return WALK_ERROR;
            int w = walk(r, t, fr, fn, scalar_cast(c, s->v->dt, DT_BOOL).i ? s->body : s->els);
            if (w != WALK_OK) return w;
            break;
        }
        case S_WHILE:
            for (;;) {
                Scalar c;
                if (!run_charge(r, s->loc, 1)) return WALK_ERROR;
                ok = t->scalar(fr, s->v, &c);
                t->end(fr);
                if (!ok) return WALK_ERROR;
                if (!scalar_cast(c, s->v->dt, DT_BOOL).i) break;
                int w = walk(r, t, fr, fn, s->body);
                if (w != WALK_OK) return w;
            }
            break;
        case S_FOR: {
            int64_t lo = 0, hi = 0;
            ok = scalar_i64(t, fr, s->v, &lo) && scalar_i64(t, fr, s->v2, &hi);
            t->end(fr);
            if (!ok) return WALK_ERROR;
            /* The loop variable has its slot's type (i64 unless sema says otherwise). */
            DType dt = fn->slots[s->slot].dt;
            for (int64_t i = lo; i < hi; i++) {
                if (!run_charge(r, s->loc, 1)) return WALK_ERROR;
                if (!t->set_scalar(fr, s->slot, dt, scalar_cast((Scalar){.i = i}, DT_I64, dt))) return WALK_ERROR;
                int w = walk(r, t, fr, fn, s->body);
                if (w != WALK_OK) return w;
            }
            break;
        }
        default: die("IR: unknown statement %d", (int)s->kind);
        }
        if (!ok) return WALK_ERROR;
    }
    return WALK_OK;
}
