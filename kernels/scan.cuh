/* Block scans and the single-pass decoupled look-back (Merrill and Garland, 2016) the
   emitted scan kernels use for any associative combine, user lambdas included. */
#ifndef CUK_SCAN_CUH
#define CUK_SCAN_CUH

/* Inclusive scan of one value per thread across the block, in thread order. Threads at
   the end may hold garbage: no result before them depends on it. Returns this thread's
   inclusive value; *excl gets the previous thread's (has_excl = 0 for thread 0) and
   *total the last thread's. */
template <class T, class Op>
CUK_FN T cuk_block_scan(T v, Op op, T *excl, int *has_excl, T *total) {
    __shared__ T s_w[32];
    __shared__ T s_prev[1024];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int d = 1; d < 32; d <<= 1) {
        T o = cuk_shfl_up(v, d);
        if (lane >= d) v = op(o, v);
    }
    __syncthreads();
    if (lane == 31) s_w[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T w = s_w[lane < nw ? lane : 0];
        for (int d = 1; d < 32; d <<= 1) {
            T o = cuk_shfl_up(w, d);
            if (lane >= d) w = op(o, w);
        }
        if (lane < nw) s_w[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v = op(s_w[warp - 1], v);
    s_prev[threadIdx.x] = v;
    __syncthreads();
    *has_excl = threadIdx.x > 0;
    if (threadIdx.x > 0) *excl = s_prev[threadIdx.x - 1];
    *total = s_prev[blockDim.x - 1];
    __syncthreads();
    return v;
}

/* Tile states in scratch, after a 16-byte ticket: per tile a flag (0 none, 1 aggregate,
   2 inclusive prefix) and two 8-byte values. */
#define CUK_TILE_BYTES 24
template <class T> CUK_FN void cuk_tile_publish(char *scratch, long long tile, int flag, T v) {
    char *st = scratch + 16 + tile * CUK_TILE_BYTES;
    *(volatile T *)(st + (flag == 2 ? 16 : 8)) = v;
    __threadfence();
    *(volatile long long *)st = flag;
}

/* Run by one thread: publishes the tile's aggregate, walks back over predecessors until
   one has its inclusive prefix, publishes this tile's inclusive prefix and returns the
   exclusive prefix (tile > 0). */
template <class T, class Op>
CUK_FN T cuk_lookback(char *scratch, long long tile, T aggregate, Op op) {
    cuk_tile_publish(scratch, tile, 1, aggregate);
    T prefix;
    int have = 0;
    for (long long p = tile - 1; p >= 0; p--) {
        char *st = scratch + 16 + p * CUK_TILE_BYTES;
        long long f;
        while ((f = *(volatile long long *)st) == 0) {
        }
        __threadfence();
        T x = *(volatile T *)(st + (f == 2 ? 16 : 8));
        prefix = have ? op(x, prefix) : x;
        have = 1;
        if (f == 2) break;
    }
    cuk_tile_publish(scratch, tile, 2, op(prefix, aggregate));
    return prefix;
}

/* Dynamic tile numbering keeps the look-back free of deadlock: a tile only waits for
   tiles handed out before it, whose blocks are already running. */
CUK_FN long long cuk_next_tile(char *scratch) {
    __shared__ long long s_tile;
    if (threadIdx.x == 0) s_tile = (long long)atomicAdd((unsigned long long *)scratch, 1ull);
    __syncthreads();
    long long t = s_tile;
    __syncthreads();
    return t;
}

#endif
