/* The single-pass decoupled look-back scan (Merrill and Garland, 2016) the emitted scan
   kernels use for any associative combine, user lambdas included: tile status words,
   a warp-parallel look-back, and the dynamic tile ticket. */
#ifndef CUK_SCAN_CUH
#define CUK_SCAN_CUH

/* Tile states in scratch, after the ticket's 128-byte line: one 128-byte line per tile
   (compiler/kernel.h, SCAN_TILE_BYTES), so that a state being polled shares its line
   with no state being written (8 bytes apart, the scan ran at 65% of copy bandwidth; 128
   bytes apart, at 83%, on an H200). Values of at most 4 bytes share one 64-bit word with
   their flag (0 none, 1 aggregate, 2 inclusive prefix), so one store publishes both and
   no fence is needed; wider values use a flag word and two value words, ordered by
   fences. */
#define CUK_STATE_OFFSET 128
#define CUK_TILE_BYTES 128

/* Values wider than 8 bytes (a segmented reduction's cuk_seg) keep the inclusive prefix
   at byte 64 of the line, apart from the aggregate at byte 8; they move as volatile words
   (a struct has no volatile copy). Values of 8 bytes move as one word, as before. */
#define CUK_WIDE_INCL 64
template <class T> CUK_FN void cuk_vput(char *dst, const T &v) {
    static_assert((sizeof(T) <= 4 || sizeof(T) % 4 == 0) && sizeof(T) <= 56, "tile state value too wide");
    union {
        T t;
        unsigned long long d[sizeof(T) / 8 + 1];
        unsigned int w[sizeof(T) / 4 + 1];
    } c;
    c.t = v;
    if (sizeof(T) % 8 == 0)
        for (int q = 0; q < (int)(sizeof(T) / 8); q++) ((volatile unsigned long long *)dst)[q] = c.d[q];
    else
        for (int q = 0; q < (int)(sizeof(T) / 4); q++) ((volatile unsigned int *)dst)[q] = c.w[q];
}
template <class T> CUK_FN void cuk_vget(const char *src, T *v) {
    union {
        T t;
        unsigned long long d[sizeof(T) / 8 + 1];
        unsigned int w[sizeof(T) / 4 + 1];
    } c;
    if (sizeof(T) % 8 == 0)
        for (int q = 0; q < (int)(sizeof(T) / 8); q++) c.d[q] = ((const volatile unsigned long long *)src)[q];
    else
        for (int q = 0; q < (int)(sizeof(T) / 4); q++) c.w[q] = ((const volatile unsigned int *)src)[q];
    *v = c.t;
}

template <class T> CUK_FN void cuk_tile_set(char *scratch, long long tile, int flag, T v) {
    char *st = scratch + CUK_STATE_OFFSET + tile * CUK_TILE_BYTES;
    if (sizeof(T) <= 4) {
        union {
            T t;
            unsigned int u;
        } c;
        c.u = 0;
        c.t = v;
        *(volatile unsigned long long *)st = ((unsigned long long)flag << 32) | c.u;
    } else if (sizeof(T) <= 8) {
        cuk_vput(st + (flag == 2 ? 16 : 8), v);
        __threadfence();
        *(volatile long long *)st = flag;
    } else {
        cuk_vput(st + (flag == 2 ? CUK_WIDE_INCL : 8), v);
        __threadfence();
        *(volatile long long *)st = flag;
    }
}

/* Reads tile's state: returns its flag (0 while unpublished) and sets *v when nonzero. */
template <class T> CUK_FN int cuk_tile_get(const char *scratch, long long tile, T *v) {
    const char *st = scratch + CUK_STATE_OFFSET + tile * CUK_TILE_BYTES;
    if (sizeof(T) <= 4) {
        unsigned long long w = *(const volatile unsigned long long *)st;
        union {
            T t;
            unsigned int u;
        } c;
        c.u = (unsigned int)w;
        *v = c.t;
        return (int)(w >> 32);
    }
    long long f = *(const volatile long long *)st;
    if (f == 0) return 0;
    __threadfence();
    cuk_vget(st + (f == 2 ? (sizeof(T) <= 8 ? 16 : CUK_WIDE_INCL) : 8), v);
    return (int)f;
}

/* Run by a whole warp for tile > 0 (after the tile published its aggregate): returns,
   in every lane, the combine of all earlier tiles, oldest first (so only associativity
   is assumed). Lane l watches tile base - l for a window of 32 predecessors: once every
   lane has a value, the lanes up to the nearest inclusive prefix (or all 32) are
   combined by a shuffle tree and the walk moves 32 tiles further back if no inclusive
   prefix was seen. Integer scans give the same result on every run; floating-point
   ones can differ in the last bits between runs, as the tree's shape depends on where
   the walk found an inclusive prefix (as with CUB). */
template <class T, class Op> CUK_FN T cuk_warp_lookback(const char *scratch, long long tile, Op op) {
    const int lane = threadIdx.x & 31;
    T run;
    int have = 0;
    for (long long base = tile - 1;; base -= 32) {
        const long long p = base - lane;
        T v;
        int f = 0;
        if (p < 0) f = 3; /* before tile 0: never combined (tile 0 is inclusive) */
        unsigned incl;
        for (;;) {
            if (f == 0) f = cuk_tile_get(scratch, p, &v);
            incl = __ballot_sync(CUK_FULL_MASK, f >= 2);
            unsigned ready = __ballot_sync(CUK_FULL_MASK, f != 0);
            if (incl) {
                int stop = __ffs(incl) - 1;
                unsigned need = stop == 31 ? 0xffffffffu : (1u << (stop + 1)) - 1u;
                if ((ready & need) == need) break;
            } else if (ready == 0xffffffffu) {
                break;
            }
        }
        const int stop = incl ? __ffs(incl) - 1 : 31;
        /* lanes 0..stop, combined older (higher lane) first */
        int h = lane <= stop;
        for (int d = 1; d < 32; d <<= 1) {
            T o = cuk_shfl_down(v, d);
            int oh = __shfl_down_sync(CUK_FULL_MASK, h, d);
            if ((lane & (2 * d - 1)) == 0 && lane + d < 32 && oh) {
                v = h ? op(o, v) : o;
                h = 1;
            }
        }
        const T win = cuk_shfl_idx(v, 0);
        run = have ? op(win, run) : win;
        have = 1;
        if (incl) break;
    }
    return run;
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

/* Segmented reductions (segments=offs; compiler/emit_cuda.c emit_segred): the smallest m
   in [lo, hi) with offs[m] > key, offs sorted, else hi (with key - 1: offs[m] >= key). */
CUK_FN long long cuk_upper_bound(const long long *offs, long long lo, long long hi, long long key) {
    while (lo < hi) {
        const long long m = lo + ((hi - lo) >> 1);
        if (offs[m] > key) hi = m;
        else lo = m + 1;
    }
    return lo;
}
/* The same, near a guess g in [0, hi): galloping out from g, so a good guess (each
   tile's first segment, guessed from the mean segment length) costs a few loads, not
   log2(hi). */
CUK_FN long long cuk_upper_bound_near(const long long *offs, long long hi, long long key, long long g) {
    long long d = 1;
    if (offs[g] > key) {
        long long b = g - 1, top = g;
        while (b >= 0 && offs[b] > key) top = b, d <<= 1, b = g - d;
        return cuk_upper_bound(offs, b < 0 ? 0 : b + 1, top, key);
    }
    long long lo = g + 1, t = g + 1;
    while (t < hi && offs[t] <= key) lo = t + 1, d <<= 1, t = g + d;
    return cuk_upper_bound(offs, lo, t < hi ? t : hi, key);
}
/* x clamped to a segment number, [0, k - 1] (k >= 1): bad offsets (reported) never
   send a read or a write outside the arrays. */
CUK_FN long long cuk_sr_clamp(long long x, long long k) { return x < 0 ? 0 : x > k - 1 ? k - 1 : x; }
/* Their scratch, for nt tiles (compiler/kernel.h, SEGRED_REC_BYTES): each tile's first
   segment (nt + 1 words, the last one k), each tile's owned segment (nt words, -1 for
   none), then per fused reduction j two records a tile (which = 0: the fold of the
   tile's first run; 1: of its last run, for the segment the tile owns). */
CUK_FN long long *cuk_sr_sot(char *scratch) { return (long long *)scratch; }
CUK_FN long long *cuk_sr_own(char *scratch, long long nt) { return (long long *)scratch + nt + 1; }
template <class T> struct cuk_opt;
template <class T> CUK_FN cuk_opt<T> *cuk_sr_rec(char *scratch, long long nt, int j, int which, long long t) {
    static_assert(sizeof(cuk_opt<T>) <= 32, "segment record too wide");
    const long long r0 = (8 * (2 * nt + 1) + 31) & ~31LL;
    return (cuk_opt<T> *)(scratch + r0 + ((2LL * j + which) * nt + t) * 32);
}
/* A bad offset found on the device: the plan's error block (compiler/kernel.h KP_ERR)
   names the reduction (word 0, first claimant wins) and keeps the smallest key (word 3
   holds INT64_MAX - key): 0 for offs[0] != 0, i for offs[i] < offs[i - 1], 2^62 + k
   for offs[k] != n, the order in which the CPU backend checks them. The fix-up entry
   adds the offsets the message quotes (words 1 and 2). */
CUK_FN void cuk_sr_err(unsigned long long *e, unsigned long long id1, long long key) {
    const unsigned long long old = atomicCAS(e, 0ull, id1);
    if (old == 0ull || old == id1) atomicMax(e + 3, (unsigned long long)(0x7fffffffffffffffLL - key));
}
/* An optional value (no identity needed, so lambdas work): combine keeps order. */
template <class T> struct cuk_opt {
    T v;
    int h;
};
template <class T, class Op> CUK_FN cuk_opt<T> cuk_opt_cat(cuk_opt<T> a, cuk_opt<T> b, Op op) {
    if (!a.h) return b;
    if (!b.h) return a;
    cuk_opt<T> r;
    r.v = op(a.v, b.v);
    r.h = 1;
    return r;
}

/* Segmented scans (segments=offs): a block scans one segment in chunks of blockDim.x
   elements, one per thread, in thread order. Gives each thread the combine of the
   chunk's elements up to its own (inc) and before it (exc), and the chunk's total;
   threads past the segment's end pass x.h = 0. Every thread must call it. */
template <class T, class Op>
CUK_FN void cuk_block_scan_opt(cuk_opt<T> x, Op op, cuk_opt<T> &inc, cuk_opt<T> &exc, cuk_opt<T> &total) {
    __shared__ T s_v[32];
    __shared__ int s_h[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int d = 1; d < 32; d <<= 1) {
        cuk_opt<T> o;
        o.v = cuk_shfl_up(x.v, d);
        o.h = __shfl_up_sync(CUK_FULL_MASK, x.h, d);
        if (lane >= d) x = cuk_opt_cat(o, x, op);
    }
    cuk_opt<T> wex;
    wex.v = cuk_shfl_up(x.v, 1);
    wex.h = __shfl_up_sync(CUK_FULL_MASK, x.h, 1);
    if (lane == 0) wex.h = 0;
    __syncthreads(); /* s_v may still be read by the previous chunk */
    if (lane == 31) {
        s_v[warp] = x.v;
        s_h[warp] = x.h;
    }
    __syncthreads();
    cuk_opt<T> pre, tot;
    pre.h = 0;
    tot.h = 0;
    for (int w = 0; w < nw; w++) {
        cuk_opt<T> sw;
        sw.v = s_v[w];
        sw.h = s_h[w];
        if (w < warp) pre = cuk_opt_cat(pre, sw, op);
        tot = cuk_opt_cat(tot, sw, op);
    }
    inc = cuk_opt_cat(pre, x, op);
    exc = cuk_opt_cat(pre, wex, op);
    total = tot;
}

/* Segmented reductions (segments=offs) over tiles: a piece of consecutive elements is
   (v, h, c): v the combine of its elements after the last segment boundary inside it
   (h: whether there are any), c whether a boundary falls inside it. The segmented
   combine a . b = b.c ? b : (a.v op b.v, a.c) is associative, so the tile look-back
   above carries open segments across tiles; only op's associativity is assumed. */
template <class T> struct cuk_seg {
    T v;
    int h;
    int c;
};
template <class T, class Op> struct cuk_seg_op {
    Op op;
    __device__ __forceinline__ cuk_seg<T> operator()(cuk_seg<T> a, cuk_seg<T> b) const {
        cuk_seg<T> r;
        r.c = a.c | b.c;
        if (b.c || !a.h) {
            r.v = b.v;
            r.h = b.h;
        } else if (!b.h) {
            r.v = a.v;
            r.h = a.h;
        } else {
            r.v = op(a.v, b.v);
            r.h = 1;
        }
        return r;
    }
};
#define CUK_SEG_FIELDS(F) F(v) F(h) F(c)
CUK_SHFL_STRUCT(cuk_seg, CUK_SEG_FIELDS)

/* Exclusive scan of x over the block's threads in thread order: exc (valid when hexc;
   thread 0 has none) and the block's total. Every thread must call it. Warp scans by
   shuffles, then warp 0 scans the warp totals, so each thread reads two values from
   shared memory (a loop over the warp totals in every thread kept the segmented
   reduction's L1 90% busy). */
template <class T, class Op> CUK_FN void cuk_block_exscan(T x, Op op, T &exc, int &hexc, T &total) {
    __shared__ T s_w[32], s_p[33]; /* warp totals; warp w's exclusive prefix, the total at 32 */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    T inc = x;
    for (int d = 1; d < 32; d <<= 1) {
        T o = cuk_shfl_up(inc, d);
        if (lane >= d) inc = op(o, inc);
    }
    T wex = cuk_shfl_up(inc, 1);
    /* no barrier first: a thread reaches a later call's writes only after every thread
       passed this call's barriers, after warp 0's last read of s_w and before s_p is
       written again */
    if (lane == 31) s_w[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        T v = s_w[lane < nw ? lane : 0];
        for (int d = 1; d < 32; d <<= 1) {
            T o = cuk_shfl_up(v, d);
            if (lane >= d && lane < nw) v = op(o, v);
        }
        T pv = cuk_shfl_up(v, 1);
        if (lane > 0 && lane < nw) s_p[lane] = pv;
        if (lane == nw - 1) s_p[32] = v;
    }
    __syncthreads();
    total = s_p[32];
    if (lane > 0) {
        exc = warp > 0 ? op(s_p[warp], wex) : wex;
        hexc = 1;
    } else {
        exc = warp > 0 ? s_p[warp] : x; /* thread 0: none (x only keeps exc defined) */
        hexc = warp > 0;
    }
}
#endif
