/* The CPU backend's worker threads: a loop over chunk indices shared by every core.

   Which thread computes a chunk never changes what the chunk computes, and results are
   combined in chunk order by the caller, so the CPU backend's outputs do not depend on
   the number of threads (CUK_THREADS=1 gives the same bits as the default). */
#ifndef CUK_EXEC_CPU_POOL_H
#define CUK_EXEC_CPU_POOL_H

#include <stdbool.h>
#include <stdint.h>

/* How many threads the CPU backend uses: $CUK_THREADS (1 .. 256) if set, else the
   machine's online processors. */
int pool_threads(void);

/* Calls fn(ctx, worker, k) once for every k in [0, n), on at most `workers` threads
   (worker indices 0 .. workers - 1; the caller is worker 0), handing out k in increasing
   order from a shared counter. Runs everything on the caller when the pool is busy with
   another loop, cannot start its threads, or workers or n is 1. */
void pool_for(int64_t n, int workers, void (*fn)(void *ctx, int worker, int64_t k), void *ctx);

/* pool_for, where the caller, once out of chunks, calls watch(wctx) every 20 ms while it
   waits for the other threads, until it returns false: the
   caller's thread is the one that may see an interrupt, and watch tells the others to
   stop (they read a flag of their own). */
void pool_for_watch(int64_t n, int workers, void (*fn)(void *ctx, int worker, int64_t k), void *ctx,
                    bool (*watch)(void *wctx), void *wctx);

#endif
