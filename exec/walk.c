/* The statement walker (run.h): host statements (set, if, for, while, return, print,
   save, eval) run once for both backends over their Target hooks, with the checks every
   run makes: the work budget, the call depth and the stack. */
#include <pthread.h>
#include <stdatomic.h>
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

bool run_interrupted(void) { return stopped; }

void run_interrupt_reset(void) { stopped = false; }

void run_interrupt_set(void) { stopped = true; }

void run_init(Run *r, RtErr *err, FILE *out) {
    r->err = err;
    r->out = out;
    r->work = 0;
    r->depth = 0;
    r->stack_floor = stack_floor();
    r->host_progs = NULL;
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

int walk(Run *r, const Target *t, void *fr, const Fn *fn, const Stmt *s) {
    for (; s; s = s->next) {
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
