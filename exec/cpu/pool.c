/* The CPU backend's worker threads (pool.h): started on first use, kept for the process
   and joined at exit (so that leak checkers see none still running), started again in a
   child after fork (the threads are not copied). */
#include "exec/cpu/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { MAX_THREADS = 256 };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pid_t pid;       /* the process that started the threads (0: none) */
    int nthreads;    /* started, besides the caller */
    pthread_t tid[MAX_THREADS];
    bool quit;       /* at exit: the workers return */
    unsigned long gen; /* bumped per loop: a worker runs each loop once */
    /* the loop */
    void (*fn)(void *, int, int64_t);
    void *ctx;
    int64_t n;
    int want;        /* workers that take part (indices 1 .. want - 1) */
    _Atomic int64_t next;
    int running;     /* workers still in the loop */
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* one loop at a time: a loop started while another runs (another thread's call, a nested
   loop) runs on its caller */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;

int pool_threads(void) {
    static _Atomic int found; /* read once; threads may race to store the same value */
    int n = atomic_load_explicit(&found, memory_order_relaxed);
    if (n) return n;
    const char *e = getenv("CUK_THREADS");
    long v = 0;
    if (e && *e) {
        char *end;
        v = strtol(e, &end, 10);
        if (*end || v < 1) v = 1;
    } else {
        v = sysconf(_SC_NPROCESSORS_ONLN);
    }
    if (v < 1) v = 1;
    if (v > MAX_THREADS) v = MAX_THREADS;
    n = (int)v;
    atomic_store_explicit(&found, n, memory_order_relaxed);
    return n;
}

static void run_chunks(int w) {
    for (;;) {
        int64_t k = atomic_fetch_add(&P.next, 1);
        if (k >= P.n) return;
        P.fn(P.ctx, w, k);
    }
}

static void *worker(void *arg) {
    int w = (int)(intptr_t)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&P.mu);
    for (;;) {
        while (P.gen == seen && !P.quit) pthread_cond_wait(&P.go, &P.mu);
        if (P.quit) break;
        seen = P.gen;
        if (w >= P.want) continue;
        pthread_mutex_unlock(&P.mu);
        run_chunks(w);
        pthread_mutex_lock(&P.mu);
        if (--P.running == 0) pthread_cond_signal(&P.done);
    }
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

/* atexit: the workers (of this process: not a child's inherited record) stop and are
   joined. */
static void stop_threads(void) {
    pthread_mutex_lock(&P.mu);
    int n = P.pid == getpid() ? P.nthreads : 0;
    P.quit = true;
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.mu);
    for (int i = 0; i < n; i++) pthread_join(P.tid[i], NULL);
}

/* The threads, started for this process: false when none could be. P.mu held. */
static bool start_threads(void) {
    pid_t me = getpid();
    if (P.pid == me) return P.nthreads > 0;
    /* first use, or a child after fork: the parent's threads are not here */
    if (!P.pid && atexit(stop_threads)) return false;
    P.pid = me;
    P.nthreads = 0;
    P.quit = false;
    for (int i = 1; i < pool_threads(); i++) {
        if (pthread_create(&P.tid[P.nthreads], NULL, worker, (void *)(intptr_t)i)) break;
        P.nthreads++;
    }
    return P.nthreads > 0;
}

void pool_for(int64_t n, int workers, void (*fn)(void *ctx, int worker, int64_t k), void *ctx) {
    pool_for_watch(n, workers, fn, ctx, NULL, NULL);
}

void pool_for_watch(int64_t n, int workers, void (*fn)(void *ctx, int worker, int64_t k), void *ctx,
                    bool (*watch)(void *wctx), void *wctx) {
    if (workers > pool_threads()) workers = pool_threads();
    if (n < 2 || workers < 2 || pthread_mutex_trylock(&busy)) {
        for (int64_t k = 0; k < n; k++) fn(ctx, 0, k);
        return;
    }
    pthread_mutex_lock(&P.mu);
    if (P.quit || !start_threads()) {
        pthread_mutex_unlock(&P.mu);
        pthread_mutex_unlock(&busy);
        for (int64_t k = 0; k < n; k++) fn(ctx, 0, k);
        return;
    }
    if (workers > P.nthreads + 1) workers = P.nthreads + 1;
    P.fn = fn, P.ctx = ctx, P.n = n, P.want = workers;
    atomic_store(&P.next, 0);
    P.running = workers - 1;
    P.gen++;
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.mu);
    run_chunks(0);
    pthread_mutex_lock(&P.mu);
    while (P.running > 0) {
        if (!watch) {
            pthread_cond_wait(&P.done, &P.mu);
            continue;
        }
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 20 * 1000000L;
        if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
        if (pthread_cond_timedwait(&P.done, &P.mu, &t) == 0 || P.running == 0) continue;
        pthread_mutex_unlock(&P.mu);
        if (!watch(wctx)) watch = NULL; /* told them: now wait for them to stop */
        pthread_mutex_lock(&P.mu);
    }
    pthread_mutex_unlock(&P.mu);
    pthread_mutex_unlock(&busy);
}
