/* Sorting on the GPU (exec/gpu/sort.c drives these; DESIGN.md part 2, "Sorting"): stable
   least-significant-digit radix sorts of 8-bit digits, with the same keys as the CPU
   backend (exec/sort.c): the element mapped to an unsigned integer whose order is the
   wanted one, -0.0 as 0.0, every NaN the largest key (last in either direction).

   One module per element type: the module's source defines CUK_SORT_T (the element's
   C type), CUK_SORT_K (its key: 32 or 64 bits), CUK_SORT_KB (the key's bytes),
   CUK_SORT_KIND (0 unsigned, 1 signed, 2 float, 3 bool) and CUK_SORT_ITEMS (keys per
   thread), then includes this file.

   Rows longer than a tile: onesweep (Adinets and Merrill, 2022). One kernel counts the
   digits of every pass at once (sort_hist), one turns the counts into each digit's
   first position (sort_bins), then one kernel per pass: each block takes the next tile
   (an atomic ticket, so tiles before it are running or done), counts its keys' digits
   and publishes the counts, ranks its keys by digit in shared memory, learns the
   counts of the tiles before it by a decoupled look-back, then writes its keys at their
   final places of the pass. A pass reads and writes the keys once.

   Rows of at most a tile: one block per row sorts it in shared memory (sort_rows_*),
   every pass without leaving the block. */

#define CUK_SORT_THREADS 256 /* one thread per digit value */
#ifndef CUK_SORT_LBW
#define CUK_SORT_LBW 8 /* tile states the look-back reads at once */
#endif
#ifndef CUK_SORT_NATIVE
#define CUK_SORT_NATIVE 3 /* every this many items ranked with __match_any_sync (0: none) */
#endif
#ifndef CUK_SORT_MINB
#define CUK_SORT_MINB 3 /* __launch_bounds__'s blocks per SM for the passes */
#endif
#define CUK_SORT_WARPS (CUK_SORT_THREADS / 32)
#define CUK_SORT_TILE (CUK_SORT_THREADS * CUK_SORT_ITEMS)
#define CUK_SORT_FULL 0xffffffffu

typedef CUK_SORT_T sort_t;
typedef CUK_SORT_K key_t_;
typedef unsigned int su32;
typedef unsigned long long su64;
typedef long long si64;

#define CUK_KEY_BITS (8 * (int)sizeof(key_t_))
#define CUK_KEY_TOP ((key_t_)1 << (CUK_KEY_BITS - 1))
#define CUK_KEY_MAX ((key_t_)~(key_t_)0)
/* passes of 8 bits: a bool's key is 0 or 1 (one pass) */
#define CUK_SORT_PASSES (CUK_SORT_KIND == 3 ? 1 : (int)sizeof(key_t_))

__device__ __forceinline__ key_t_ sort_bits(sort_t x) {
#if CUK_SORT_KIND == 2
    if (sizeof(sort_t) == 4) return (key_t_)__float_as_uint((float)x);
    return (key_t_)__double_as_longlong((double)x);
#else
    return (key_t_)x;
#endif
}

__device__ __forceinline__ sort_t sort_from_bits(key_t_ k) {
#if CUK_SORT_KIND == 2
    if (sizeof(sort_t) == 4) return (sort_t)__uint_as_float((su32)k);
    return (sort_t)__longlong_as_double((si64)k);
#else
    return (sort_t)k;
#endif
}

/* The key of x: ascending order of keys is the wanted order. */
__device__ __forceinline__ key_t_ sort_enc(sort_t x, int desc) {
    key_t_ k;
#if CUK_SORT_KIND == 2
    if (x != x) return CUK_KEY_MAX;
    if (x == (sort_t)0) x = (sort_t)0; /* -0.0 sorts as 0.0 */
    const key_t_ u = sort_bits(x);
    k = (u & CUK_KEY_TOP) ? (key_t_)~u : (key_t_)(u | CUK_KEY_TOP);
#elif CUK_SORT_KIND == 1
    k = (key_t_)x ^ CUK_KEY_TOP;
#elif CUK_SORT_KIND == 3
    k = x != 0;
#else
    k = (key_t_)x;
#endif
    return desc ? (key_t_)~k : k;
}

/* The element of key k: exact for integers and bools; a float's NaN comes back as the
   canonical NaN and -0.0 as 0.0 (sort_odd counts the elements for which that differs:
   the host then sorts positions and gathers). */
__device__ __forceinline__ sort_t sort_dec(key_t_ k, int desc) {
#if CUK_SORT_KIND == 2
    if (k == CUK_KEY_MAX) return sort_from_bits(sizeof(sort_t) == 4 ? (key_t_)0x7fc00000u : (key_t_)0x7ff8000000000000ull);
    if (desc) k = ~k;
    return sort_from_bits((k & CUK_KEY_TOP) ? (key_t_)(k & ~CUK_KEY_TOP) : (key_t_)~k);
#else
    if (desc) k = ~k;
#if CUK_SORT_KIND == 1
    return (sort_t)(k ^ CUK_KEY_TOP);
#elif CUK_SORT_KIND == 3
    return (sort_t)(k & 1);
#else
    return (sort_t)k;
#endif
#endif
}

/* An element whose value sort_dec(sort_enc(x)) does not give back bit for bit. */
__device__ __forceinline__ bool sort_odd(sort_t x) {
#if CUK_SORT_KIND == 2
    const key_t_ u = sort_bits(x);
    if (x != x) return u != (sizeof(sort_t) == 4 ? (key_t_)0x7fc00000u : (key_t_)0x7ff8000000000000ull);
    return u == CUK_KEY_TOP; /* -0.0 */
#else
    (void)x;
    return false;
#endif
}

__device__ __forceinline__ int sort_digit(key_t_ k, int shift) { return (int)((k >> shift) & 255u); }

/* T when B, else F. */
template <bool B, class T, class F> struct sort_pick { typedef T type; };
template <class T, class F> struct sort_pick<false, T, F> { typedef F type; };

/* The sum of v over this lane and the lanes below it in the warp. */
template <class T>
__device__ __forceinline__ T sort_warp_incl(T v) {
    const int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        const T y = __shfl_up_sync(CUK_SORT_FULL, v, o);
        if (lane >= o) v += y;
    }
    return v;
}

/* ---- ranking a block's keys by one digit ---------------------------------------------- */

/* The lanes of `among` whose digit d (8 bits) equals this lane's: eight ballots, which
   issue faster than __match_any_sync. */
__device__ __forceinline__ su32 sort_match(int d, su32 among) {
    su32 m = among;
#pragma unroll
    for (int b = 0; b < 8; b++) {
        const su32 set = __ballot_sync(CUK_SORT_FULL, (d >> b) & 1);
        m &= ((d >> b) & 1) ? set : ~set;
    }
    return m;
}

struct SortRank {
    su32 cnt[CUK_SORT_WARPS][256]; /* per warp and digit: count, then the warp's offset */
    su32 wsum[CUK_SORT_WARPS];
};

/* The block's items (warp-striped: item j of lane l of warp w is tile element
   (w * ITEMS + j) * 32 + l; elements at or past tn are absent), item j of digit
   digit(j) (0..255), get their positions pos in the tile ordered by digit, stably.
   Thread t returns the count of digit t and sets *first to the tile's first position
   of digit t. */
template <class Digit>
__device__ __forceinline__ su32 sort_rank(const Digit &digit, int tn, SortRank &sm, su32 (&pos)[CUK_SORT_ITEMS],
                                          su32 *first) {
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    for (int i = 0; i < CUK_SORT_WARPS; i++) sm.cnt[i][tid] = 0;
    __syncthreads();
    const su32 lt = (1u << lane) - 1u;
    /* the lanes of a warp with the same digit: the highest adds their number to the
       warp's count of that digit (a shared atomic, so the items' updates pipeline) and
       every lane learns the count before them from it */
    su32 peers[CUK_SORT_ITEMS], old[CUK_SORT_ITEMS];
    const bool full = tn == CUK_SORT_TILE;
#pragma unroll
    for (int j = 0; j < CUK_SORT_ITEMS; j++) {
        const int li = (w * CUK_SORT_ITEMS + j) * 32 + lane;
        const bool ok = li < tn;
        const int d = digit(j);
        /* ballots load the ALU pipe, __match_any_sync the MIO pipe: a mix of the two */
        if (CUK_SORT_NATIVE && j % CUK_SORT_NATIVE == 0) peers[j] = __match_any_sync(CUK_SORT_FULL, ok ? d : 256 + lane);
        else peers[j] = sort_match(d, full ? CUK_SORT_FULL : __ballot_sync(CUK_SORT_FULL, ok));
        old[j] = 0;
        if (ok && lane == 31 - __clz(peers[j])) old[j] = atomicAdd(&sm.cnt[w][d], (su32)__popc(peers[j]));
    }
#pragma unroll
    for (int j = 0; j < CUK_SORT_ITEMS; j++)
        pos[j] = __shfl_sync(CUK_SORT_FULL, old[j], 31 - __clz(peers[j])) + __popc(peers[j] & lt);
    __syncthreads();
    /* thread t: digit t's offsets per warp and its count in the tile */
    su32 run = 0;
    for (int i = 0; i < CUK_SORT_WARPS; i++) {
        const su32 c = sm.cnt[i][tid];
        sm.cnt[i][tid] = run;
        run += c;
    }
    /* exclusive scan of the digits' counts over the block */
    const su32 incl = sort_warp_incl(run);
    if (lane == 31) sm.wsum[w] = incl;
    __syncthreads();
    su32 before = 0;
    for (int i = 0; i < w; i++) before += sm.wsum[i];
    *first = before + incl - run;
    for (int i = 0; i < CUK_SORT_WARPS; i++) sm.cnt[i][tid] += *first;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < CUK_SORT_ITEMS; j++) {
        const int li = (w * CUK_SORT_ITEMS + j) * 32 + lane;
        if (li < tn) pos[j] += sm.cnt[w][digit(j)];
    }
    return run;
}

/* ---- counting the digits of every pass ------------------------------------------------ */

/* Rows of len elements at x (blockIdx.y strides the rows): hist[row][pass][digit] gets
   the counts, *odd the number of elements sort_dec does not give back (floats). */
extern "C" __global__ void __launch_bounds__(256) sort_hist(const sort_t *__restrict__ x, si64 len, si64 rows,
                                                           int desc, su64 *__restrict__ hist, su64 *odd) {
    __shared__ su32 h[CUK_SORT_PASSES][256];
    const int tid = threadIdx.x;
    for (si64 row = blockIdx.y; row < rows; row += gridDim.y) {
        for (int p = 0; p < CUK_SORT_PASSES; p++) h[p][tid] = 0;
        __syncthreads();
        su32 nodd = 0;
        const sort_t *xr = x + row * len;
        for (si64 i = (si64)blockIdx.x * 256 + tid; i < len; i += (si64)gridDim.x * 256) {
            const sort_t e = xr[i];
            const key_t_ k = sort_enc(e, desc);
            nodd += sort_odd(e);
#pragma unroll
            for (int p = 0; p < CUK_SORT_PASSES; p++) atomicAdd(&h[p][sort_digit(k, 8 * p)], 1u);
        }
        __syncthreads();
        for (int p = 0; p < CUK_SORT_PASSES; p++)
            if (h[p][tid]) atomicAdd(&hist[(row * CUK_SORT_PASSES + p) * 256 + tid], (su64)h[p][tid]);
        for (int o = 16; o > 0; o >>= 1) nodd += __shfl_xor_sync(CUK_SORT_FULL, nodd, o);
        if ((tid & 31) == 0 && nodd) atomicAdd(odd, (su64)nodd);
        __syncthreads();
    }
}

/* bins[row][pass][d] = the number of keys of the row whose digit of the pass is below d
   (blockIdx.x the pass, blockIdx.y strides the rows); same[pass] counts the rows whose
   len keys all have one digit in the pass (a pass that moves nothing). */
extern "C" __global__ void __launch_bounds__(256) sort_bins(const su64 *__restrict__ hist, si64 rows, si64 len,
                                                           su64 *__restrict__ bins, su64 *same) {
    __shared__ su64 wsum[8];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    for (si64 row = blockIdx.y; row < rows; row += gridDim.y) {
        const si64 at = (row * CUK_SORT_PASSES + blockIdx.x) * 256 + tid;
        const su64 v = hist[at];
        if (v == (su64)len) atomicAdd(&same[blockIdx.x], 1ull);
        const su64 incl = sort_warp_incl(v);
        if (lane == 31) wsum[w] = incl;
        __syncthreads();
        su64 before = 0;
        for (int i = 0; i < w; i++) before += wsum[i];
        bins[at] = before + incl - v;
        __syncthreads();
    }
}

/* ---- one onesweep pass ------------------------------------------------------------------ */

/* A tile's state per digit: the flag (0 none, 1 the tile's count, 2 the count of it and
   every tile before) in the top two bits, the count below; a portion holds fewer than
   2^30 keys (the host splits longer rows). */
#define CUK_LB_AGG 0x40000000u
#define CUK_LB_INC 0x80000000u
#define CUK_LB_COUNT 0x3fffffffu

/* FIRST: reads the elements; else the keys of the pass before. LAST: writes the
   elements; else keys. PAY, what travels with each key: 0 nothing; 1 its position (made
   by the first pass, u32, written by the last as i64 instead of the elements: argsort);
   2 and 3 a value of 4 or 8 bytes (sort_by_key: read by the first pass from pin, written
   by the last to pout beside the elements). Rows of n keys, one after another (in, pin,
   out and pout at the first row's start), tpr tiles each: tile g of the launch is tile
   g % tpr of row g / tpr. A row longer than a portion goes one portion per launch
   (one row of n keys that starts at element `base` of its row; out and pout at the
   row's start). bins_in (bins_stride apart per row): each digit's first place in the
   row for this portion; the portion's last tile sets bins_out to the places after it
   (NULL for a row's last portion). */
template <int FIRST, int LAST, int PAY>
__device__ __forceinline__ void sort_pass_body(const void *__restrict__ in, const void *__restrict__ pin,
                                               void *__restrict__ out, void *__restrict__ pout, si64 n, si64 base,
                                               int shift, int desc, const su64 *__restrict__ bins_in,
                                               su64 *__restrict__ bins_out, su32 *lookback, su32 *ticket, si64 tpr,
                                               si64 bins_stride) {
    typedef typename sort_pick<PAY == 3, su64, su32>::type pay_t;
    __shared__ SortRank sm;
    __shared__ key_t_ skeys[CUK_SORT_TILE];
    __shared__ pay_t spay[PAY ? CUK_SORT_TILE : 1];
    __shared__ si64 gbase[256];
    __shared__ su32 stile;
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    if (tid == 0) stile = atomicAdd(ticket, 1u);
    __syncthreads();
    const si64 row = stile / tpr, tile = stile % tpr;
    const si64 t0 = tile * CUK_SORT_TILE;
    if (row) {
        const si64 at = row * n;
        in = (const char *)in + at * (FIRST ? sizeof(sort_t) : sizeof(key_t_));
        if (PAY > 1 || (!FIRST && PAY)) pin = (const pay_t *)pin + at;
        if (LAST) out = (char *)out + at * sizeof(sort_t), pout = PAY == 1 ? (void *)((si64 *)pout + at) : (void *)((pay_t *)pout + at);
        else out = (key_t_ *)out + at, pout = (pay_t *)pout + at;
        bins_in += row * bins_stride;
        lookback += row * tpr * 256;
    }
    const int tn = (int)min((si64)CUK_SORT_TILE, n - t0);
    key_t_ k[CUK_SORT_ITEMS];
#pragma unroll
    for (int j = 0; j < CUK_SORT_ITEMS; j++) {
        const int li = (w * CUK_SORT_ITEMS + j) * 32 + lane;
        if (li < tn) {
            if (FIRST) k[j] = sort_enc(((const sort_t *)in)[t0 + li], desc);
            else k[j] = ((const key_t_ *)in)[t0 + li];
        }
    }
    /* this tile's count of digit tid, published before the keys are ranked (CUB's early
       counts): the look-backs of the tiles after it need only that, and ranking takes
       a while (H200, 2^28 u32: 8.69 -> 8.11 ms a sort, argsort 10.86 -> 9.36) */
    __shared__ su32 early[256];
    early[tid] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < CUK_SORT_ITEMS; j++)
        if ((w * CUK_SORT_ITEMS + j) * 32 + lane < tn) atomicAdd(&early[sort_digit(k[j], shift)], 1u);
    __syncthreads();
    const su32 count = early[tid];
    volatile su32 *mine = (volatile su32 *)lookback + tile * 256 + tid;
    *mine = (tile == 0 ? CUK_LB_INC : CUK_LB_AGG) | count;
    su32 pos[CUK_SORT_ITEMS], first;
    sort_rank([&](int j) { return sort_digit(k[j], shift); }, tn, sm, pos, &first);
    /* the payload is read only now (not held in registers through the ranking, where
       it spilled) and lands in shared memory after the look-back, which its loads
       overlap */
    pay_t p[PAY ? CUK_SORT_ITEMS : 1];
#pragma unroll
    for (int j = 0; j < CUK_SORT_ITEMS; j++) {
        const int li = (w * CUK_SORT_ITEMS + j) * 32 + lane;
        if (li < tn) {
            skeys[pos[j]] = k[j];
            if (PAY) p[PAY ? j : 0] = FIRST && PAY == 1 ? (pay_t)(base + t0 + li) : ((const pay_t *)pin)[t0 + li];
        }
    }
    /* the keys of digit tid in the tiles before this one: their states are read
       CUK_SORT_LBW at a time (independent loads in flight together), summed newest
       first up to the nearest inclusive count; a state not yet published is read again */
    su32 before = 0;
    const volatile su32 *col = (const volatile su32 *)lookback + tid;
    for (si64 t = tile - 1; t >= 0; t -= CUK_SORT_LBW) {
        su32 v[CUK_SORT_LBW];
#pragma unroll
        for (int i = 0; i < CUK_SORT_LBW; i++) v[i] = t - i >= 0 ? col[(t - i) * 256] : CUK_LB_INC;
        bool done = false;
#pragma unroll
        for (int i = 0; i < CUK_SORT_LBW; i++) {
            if (done) break;
            while ((v[i] & (CUK_LB_AGG | CUK_LB_INC)) == 0) v[i] = col[(t - i) * 256];
            before += v[i] & CUK_LB_COUNT;
            done = (v[i] & CUK_LB_INC) != 0;
        }
        if (done) break;
    }
    if (tile > 0) *mine = CUK_LB_INC | (before + count);
#pragma unroll
    for (int j = 0; PAY && j < CUK_SORT_ITEMS; j++)
        if ((w * CUK_SORT_ITEMS + j) * 32 + lane < tn) spay[pos[j]] = p[PAY ? j : 0];
    const su64 b0 = bins_in[tid];
    gbase[tid] = (si64)(b0 + before) - (si64)first;
    if (bins_out && t0 + tn == n) bins_out[tid] = b0 + before + count;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < CUK_SORT_ITEMS; j++) {
        const int i = j * CUK_SORT_THREADS + tid;
        if (i < tn) {
            const key_t_ key = skeys[i];
            const si64 at = gbase[sort_digit(key, shift)] + i;
            if (LAST) {
                if (PAY == 1) ((si64 *)pout)[at] = (si64)spay[i];
                else ((sort_t *)out)[at] = sort_dec(key, desc);
                if (PAY > 1) ((pay_t *)pout)[at] = spay[i];
            } else {
                ((key_t_ *)out)[at] = key;
                if (PAY) ((pay_t *)pout)[at] = spay[i];
            }
        }
    }
}

#define CUK_SORT_PASS(NAME, FIRST, LAST, PAY)                                                                      \
    extern "C" __global__ void __launch_bounds__(CUK_SORT_THREADS, CUK_SORT_MINB)                                  \
        NAME(const void *in, const void *pin, void *out, void *pout, si64 n, si64 base, int shift, int desc,       \
             const su64 *bins_in, su64 *bins_out, su32 *lookback, su32 *ticket, si64 tpr, si64 bins_stride) {     \
        sort_pass_body<FIRST, LAST, PAY>(in, pin, out, pout, n, base, shift, desc, bins_in, bins_out, lookback,   \
                                         ticket, tpr, bins_stride);                                                \
    }
/* keys only (sort of integers, and of floats without odd elements) */
CUK_SORT_PASS(sort_pass_f, 1, 0, 0)
CUK_SORT_PASS(sort_pass_m, 0, 0, 0)
CUK_SORT_PASS(sort_pass_l, 0, 1, 0)
CUK_SORT_PASS(sort_pass_fl, 1, 1, 0)
/* keys and positions (argsort) */
CUK_SORT_PASS(sort_pass_pf, 1, 0, 1)
CUK_SORT_PASS(sort_pass_pm, 0, 0, 1)
CUK_SORT_PASS(sort_pass_pl, 0, 1, 1)
CUK_SORT_PASS(sort_pass_pfl, 1, 1, 1)
/* keys and values of 4 bytes (sort_by_key; the middle passes are sort_pass_pm) */
CUK_SORT_PASS(sort_pass_vf, 1, 0, 2)
CUK_SORT_PASS(sort_pass_vl, 0, 1, 2)
CUK_SORT_PASS(sort_pass_vfl, 1, 1, 2)
#if CUK_SORT_KB == 8
/* keys and values of 8 bytes (a 4-byte key's tile has no room for them) */
CUK_SORT_PASS(sort_pass_wf, 1, 0, 3)
CUK_SORT_PASS(sort_pass_wm, 0, 0, 3)
CUK_SORT_PASS(sort_pass_wl, 0, 1, 3)
CUK_SORT_PASS(sort_pass_wfl, 1, 1, 3)
#endif

/* ---- rows of at most a tile: whole rows per block ------------------------------------------ */

/* A block sorts R = min(256, TILE / len) whole rows at a time (they lie one after
   another): every pass of the key in shared memory, then, with several rows, one more
   by the row within the tile (the most significant digit, so each row's elements end up
   in its own place). Each item carries its position in the tile: MODE 0 writes the
   decoded key (integers), 1 the element found at that position (floats: bit for bit),
   2 the position in its row (argsort, i64). */
template <int MODE>
__device__ __forceinline__ void sort_rows_body(const sort_t *__restrict__ x, si64 len, si64 rows, void *__restrict__ out,
                                               int desc) {
    __shared__ SortRank sm;
    __shared__ key_t_ skeys[CUK_SORT_TILE];
    __shared__ su32 spay[CUK_SORT_TILE];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const si64 per = min((si64)256, (si64)CUK_SORT_TILE / len); /* rows per tile */
    const int ilen = (int)len;
    for (si64 r0 = (si64)blockIdx.x * per; r0 < rows; r0 += (si64)gridDim.x * per) {
        const int nr = (int)min(per, rows - r0), tn = nr * ilen;
        const sort_t *xr = x + r0 * len;
        key_t_ k[CUK_SORT_ITEMS];
        su32 p[CUK_SORT_ITEMS];
#pragma unroll
        for (int j = 0; j < CUK_SORT_ITEMS; j++) {
            const int li = (w * CUK_SORT_ITEMS + j) * 32 + lane;
            p[j] = (su32)li;
            if (li < tn) k[j] = sort_enc(xr[li], desc);
        }
        const int npass = CUK_SORT_PASSES + (nr > 1);
        for (int pass = 0; pass < npass; pass++) {
            su32 pos[CUK_SORT_ITEMS], first;
            if (pass < CUK_SORT_PASSES) sort_rank([&](int j) { return sort_digit(k[j], 8 * pass); }, tn, sm, pos, &first);
            else sort_rank([&](int j) { return (int)(p[j] / (su32)ilen); }, tn, sm, pos, &first);
#pragma unroll
            for (int j = 0; j < CUK_SORT_ITEMS; j++) {
                const int li = (w * CUK_SORT_ITEMS + j) * 32 + lane;
                if (li < tn) {
                    skeys[pos[j]] = k[j];
                    spay[pos[j]] = p[j];
                }
            }
            __syncthreads();
            if (pass + 1 < npass) {
#pragma unroll
                for (int j = 0; j < CUK_SORT_ITEMS; j++) {
                    const int li = (w * CUK_SORT_ITEMS + j) * 32 + lane;
                    if (li < tn) k[j] = skeys[li], p[j] = spay[li];
                }
            }
        }
        for (int i = tid; i < tn; i += CUK_SORT_THREADS) {
            const si64 at = r0 * len + i;
            if (MODE == 2) ((si64 *)out)[at] = (si64)(spay[i] % (su32)ilen);
            else if (MODE == 1) ((sort_t *)out)[at] = xr[spay[i]];
            else ((sort_t *)out)[at] = sort_dec(skeys[i], desc);
        }
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(CUK_SORT_THREADS) sort_rows_k(const sort_t *x, si64 len, si64 rows, void *out, int desc) {
    sort_rows_body<0>(x, len, rows, out, desc);
}
extern "C" __global__ void __launch_bounds__(CUK_SORT_THREADS) sort_rows_b(const sort_t *x, si64 len, si64 rows, void *out, int desc) {
    sort_rows_body<1>(x, len, rows, out, desc);
}
extern "C" __global__ void __launch_bounds__(CUK_SORT_THREADS) sort_rows_p(const sort_t *x, si64 len, si64 rows, void *out, int desc) {
    sort_rows_body<2>(x, len, rows, out, desc);
}

/* ---- the rest ------------------------------------------------------------------------------- */

/* out[i] = x[row's start + idx[i]]: a float sort with odd elements, from its argsort. */
extern "C" __global__ void sort_gather(const sort_t *__restrict__ x, const si64 *__restrict__ idx, si64 len, si64 n,
                                       sort_t *__restrict__ out) {
    for (si64 i = (si64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (si64)gridDim.x * blockDim.x)
        out[i] = x[i - i % len + idx[i]];
}

/* out[i] = v[idx[i]] for values of vb bytes (1, 2, 4 or 8): sort_by_key's values by
   the keys' argsort where they do not travel through the passes. */
extern "C" __global__ void sort_take(const void *__restrict__ v, const si64 *__restrict__ idx, si64 n, int vb,
                                     void *__restrict__ out) {
    for (si64 i = (si64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (si64)gridDim.x * blockDim.x) {
        const si64 j = idx[i];
        if (vb == 8) ((su64 *)out)[i] = ((const su64 *)v)[j];
        else if (vb == 4) ((su32 *)out)[i] = ((const su32 *)v)[j];
        else if (vb == 2) ((unsigned short *)out)[i] = ((const unsigned short *)v)[j];
        else ((unsigned char *)out)[i] = ((const unsigned char *)v)[j];
    }
}

/* searchsorted: for each of the n values v, the first place in the m sorted a whose key
   is at least v's (right: greater), as exec/sort.c's host_searchsorted. What costs is
   the scattered loads from a (each a 32-byte sector for one key), so the search takes
   one sector a level: level 0 is a, in sectors of G elements; level l >= 1 (built by
   search_build when the values are many beside a) has the key of every G * KB^(l-1)-th
   element, in sectors of KB keys. Each block keeps every r-th entry of the level
   `top` (the samples: at most CUK_SEARCH_CAP) in shared memory as an implicit binary
   tree (Eytzinger's order: node i's children at 2i and 2i + 1, so a level's nodes lie
   together and a warp's loads spread over the banks); the count of samples below v
   picks r entries of level top, whose count picks a sector of the level below, down to
   a's. Without levels (few values, `bin`), the samples are every stride-th element of
   a and a binary search in a ends it. */
#define CUK_SEARCH_CAP (32768 / (int)sizeof(key_t_)) /* samples: a tree of 2^h - 1 and sample 0 */
#define CUK_SEARCH_G (32 / (int)sizeof(sort_t))      /* elements of a in a sector */
#define CUK_SEARCH_KB (32 / (int)sizeof(key_t_))     /* keys of a level in a sector */
#define CUK_SEARCH_MAXL 24
struct SearchPlan {
    key_t_ *lev[CUK_SEARCH_MAXL]; /* level l's keys (l = 1..top), each padded to whole sectors */
    si64 size[CUK_SEARCH_MAXL];   /* entries of level l (size[0] = m) */
    si64 stride;                  /* elements of a from one sample to the next */
    si64 ns;                      /* samples (0: a is empty) */
    int top, r, h, bin;
};

__device__ __forceinline__ bool search_below(key_t_ k, key_t_ v, int right) { return right ? k <= v : k < v; }

/* The levels 1..top, each entry from a (one read of a sector of a per entry of level 1). */
extern "C" __global__ void __launch_bounds__(256) search_build(const sort_t *__restrict__ a, SearchPlan p) {
    for (si64 i = (si64)blockIdx.x * blockDim.x + threadIdx.x; i < p.size[1]; i += (si64)gridDim.x * blockDim.x) {
        const key_t_ k = sort_enc(a[i * CUK_SEARCH_G], 0);
        si64 j = i;
        p.lev[1][i] = k;
        for (int l = 2; l <= p.top && j % CUK_SEARCH_KB == 0; l++) {
            j /= CUK_SEARCH_KB;
            p.lev[l][j] = k;
        }
    }
}

/* The entries [at, at + n) of p (within one aligned sector of N; BOUND: below size)
   whose key (key(entry)) is below v: the sector in two 16-byte loads. */
template <class T, int N, bool BOUND, class Key>
__device__ __forceinline__ si64 search_count_sector(const T *__restrict__ p, si64 size, si64 at, si64 n, key_t_ v,
                                                    int right, Key key) {
    const si64 sb = at & ~(si64)(N - 1);
    union {
        uint4 q[2];
        T e[N];
    } u;
    u.q[0] = __ldg((const uint4 *)(p + sb));
    u.q[1] = __ldg((const uint4 *)(p + sb) + 1);
    si64 c = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const si64 e = sb + j;
        c += e >= at && e < at + n && (!BOUND || e < size) && search_below(key(u.e[j]), v, right);
    }
    return c;
}

/* The entries [at, at + n) of level l >= 1 (within one sector) whose key is below v. */
__device__ __forceinline__ si64 search_count_keys(const key_t_ *__restrict__ lev, si64 size, si64 at, si64 n, key_t_ v,
                                                  int right) {
    return search_count_sector<key_t_, CUK_SEARCH_KB, true>(lev, size, at, n, v, right, [](key_t_ k) { return k; });
}

/* The elements [at, at + n) of a (within one sector, n <= G) whose key is below v. */
__device__ __forceinline__ si64 search_count_elems(const sort_t *__restrict__ a, si64 m, si64 at, si64 n, key_t_ v,
                                                   int right) {
    if (((size_t)a & 31) == 0 && (at & ~(si64)(CUK_SEARCH_G - 1)) + CUK_SEARCH_G <= m)
        return search_count_sector<sort_t, CUK_SEARCH_G, false>(a, m, at, n, v, right, [](sort_t x) { return sort_enc(x, 0); });
    si64 c = 0;
    for (si64 e = at; e < at + n && e < m; e++) c += search_below(sort_enc(a[e], 0), v, right);
    return c;
}

extern "C" __global__ void __launch_bounds__(512) sort_search(const sort_t *__restrict__ a, si64 m,
                                                             const sort_t *__restrict__ v, si64 n, int right,
                                                             si64 *__restrict__ out, SearchPlan p) {
    /* tree[0]: sample 0; tree[1 .. 2^h - 1]: samples 1.. in Eytzinger's order, padded
       with the largest key (never below a value that is not itself the largest) */
    __shared__ key_t_ tree[CUK_SEARCH_CAP];
    const int nt = 1 << p.h;
    for (int t = threadIdx.x; t < nt; t += blockDim.x) {
        si64 j = 0; /* the sample at node t */
        if (t) {
            const int d = 31 - __clz(t);
            j = ((si64)(2 * (t - (1 << d)) + 1) << (p.h - 1 - d));
        }
        tree[t] = j >= p.ns ? CUK_KEY_MAX : p.top ? p.lev[p.top][j * p.r] : sort_enc(a[j * p.stride], 0);
    }
    __syncthreads();
    for (si64 i = (si64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (si64)gridDim.x * blockDim.x) {
        const key_t_ kv = sort_enc(v[i], 0);
        if (p.ns == 0) {
            out[i] = 0;
            continue;
        }
        /* c = the samples below kv */
        int t = 1;
        for (int d = 0; d < p.h; d++) t = 2 * t + search_below(tree[t], kv, right);
        si64 c = min((si64)(t - nt), p.ns - 1);
        c = c ? c + 1 : (si64)search_below(tree[0], kv, right);
        if (c == 0) {
            out[i] = 0;
            continue;
        }
        si64 at, cnt;
        if (p.bin) {
            /* a[(c - 1) * stride] is below kv, a[c * stride] is not (or past m) */
            si64 lo = (c - 1) * p.stride + 1, hi = min(c * p.stride, m);
            while (lo < hi) {
                const si64 mid = lo + ((hi - lo) >> 1);
                if (search_below(sort_enc(a[mid], 0), kv, right)) lo = mid + 1;
                else hi = mid;
            }
            out[i] = lo;
            continue;
        }
        /* the r entries of level top from sample c - 1 on, then a sector a level */
        at = (c - 1) * p.r;
        si64 nh = p.r;
        for (int l = p.top; l >= 1; l--) {
            cnt = search_count_keys(p.lev[l], p.size[l], at, nh, kv, right);
            nh = l == 1 ? CUK_SEARCH_G : CUK_SEARCH_KB;
            at = (at + max(cnt, (si64)1) - 1) * nh; /* at least 1 but where a is not sorted */
        }
        out[i] = at + search_count_elems(a, m, at, nh, kv, right);
    }
}

/* ---- unique by hashing ------------------------------------------------------------------ */

/* unique(x) where its distinct values are few: each key (sort_enc: -0.0 as 0.0, NaNs as
   one) goes into an open-addressing table of tmask + 1 slots (empty: the largest key,
   whose group is kept aside as the first position holding it), so x is read once and
   only the distinct values are sorted. The first position of the key of 0.0 is kept
   too for floats: its group's element is the first one in x (-0.0 or 0.0), as the
   stable sort gives. More distinct keys than half the table, or a long probe, set
   `full` and every block stops: the host then sorts. */
struct UniqState {
    su64 count; /* keys inserted */
    su32 full, pad;
    si64 pos_max;  /* the first position of the largest key (none: LLONG_MAX) */
    si64 pos_zero; /* floats: the first position of 0.0's key */
};
#define CUK_UNIQ_CHUNK 8 /* elements a thread takes between looks at `full` */
#define CUK_UNIQ_NONE 0x7fffffffffffffffll

__device__ __forceinline__ su64 uniq_hash(key_t_ k) {
    su64 h = (su64)k;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

extern "C" __global__ void __launch_bounds__(256) uniq_insert(const sort_t *__restrict__ x, si64 n,
                                                             key_t_ *table, si64 tmask,
                                                             UniqState *st) {
    __shared__ su32 s_ins;
    __shared__ long long s_max, s_zero;
    __shared__ int s_stop;
    const int tid = threadIdx.x;
    const key_t_ zero = sort_enc((sort_t)0, 0);
    for (si64 b0 = (si64)blockIdx.x * 256 * CUK_UNIQ_CHUNK; b0 < n; b0 += (si64)gridDim.x * 256 * CUK_UNIQ_CHUNK) {
        if (tid == 0) {
            s_ins = 0, s_max = CUK_UNIQ_NONE, s_zero = CUK_UNIQ_NONE;
            s_stop = *(volatile su32 *)&st->full;
        }
        __syncthreads();
        if (s_stop) break;
#pragma unroll 2
        for (int j = 0; j < CUK_UNIQ_CHUNK; j++) {
            const si64 i = b0 + j * 256 + tid;
            if (i >= n) break;
            const key_t_ k = sort_enc(x[i], 0);
            if (k == CUK_KEY_MAX) {
                atomicMin(&s_max, (long long)i);
                continue;
            }
            if (CUK_SORT_KIND == 2 && k == zero) atomicMin(&s_zero, (long long)i);
            si64 h = (si64)(uniq_hash(k) & (su64)tmask);
            for (int probe = 0;; probe++) {
                const key_t_ cur = table[h];
                if (cur == k) break;
                if (cur == CUK_KEY_MAX) {
                    const key_t_ old = atomicCAS(&table[h], CUK_KEY_MAX, k);
                    if (old == CUK_KEY_MAX) {
                        atomicAdd(&s_ins, 1u);
                        break;
                    }
                    if (old == k) break;
                }
                if (probe == 64) {
                    st->full = 1;
                    break;
                }
                h = (h + 1) & tmask;
            }
        }
        __syncthreads();
        if (tid == 0) {
            if (s_ins && atomicAdd(&st->count, (su64)s_ins) + s_ins > (su64)(tmask + 1) / 2) st->full = 1;
            if (s_max != CUK_UNIQ_NONE) atomicMin((long long *)&st->pos_max, s_max);
            if (s_zero != CUK_UNIQ_NONE) atomicMin((long long *)&st->pos_zero, s_zero);
        }
        __syncthreads();
    }
}

/* The table's keys as elements (and the largest key's group, slot tmask + 1), packed in
   any order into out: 0.0's group and the largest key's as their first element in x. */
extern "C" __global__ void __launch_bounds__(256) uniq_pack(const sort_t *__restrict__ x, const key_t_ *__restrict__ table,
                                                           si64 tmask, const UniqState *st, sort_t *__restrict__ out,
                                                           su64 *at) {
    const int lane = threadIdx.x & 31;
    const key_t_ zero = sort_enc((sort_t)0, 0);
    const si64 pz = st->pos_zero, pm = st->pos_max;
    for (si64 b = (si64)blockIdx.x * blockDim.x; b <= tmask + 1; b += (si64)gridDim.x * blockDim.x) {
        const si64 s = b + threadIdx.x;
        bool have = false;
        sort_t e = (sort_t)0;
        if (s <= tmask) {
            const key_t_ k = table[s];
            have = k != CUK_KEY_MAX;
            if (have) e = CUK_SORT_KIND == 2 && k == zero && pz != CUK_UNIQ_NONE ? x[pz] : sort_dec(k, 0);
        } else if (s == tmask + 1 && pm != CUK_UNIQ_NONE) {
            have = true;
            e = x[pm];
        }
        const su32 m = __ballot_sync(CUK_SORT_FULL, have);
        su64 base = 0;
        if (lane == 0 && m) base = atomicAdd(at, (su64)__popc(m));
        base = __shfl_sync(CUK_SORT_FULL, base, 0);
        if (have) out[base + __popc(m & ((1u << lane) - 1u))] = e;
    }
}

/* ---- top_k: selection, not a sort ------------------------------------------------------ */

/* The k smallest entries of a row by (key, position), the key sort_enc(x, descending):
   argsort(descending=true)'s first k, ties by position, as the CPU backend's. Entries
   are distinct, ties or not, so a sample of them tells how many of the row lie below
   any one: topk_sample draws entries at random and takes as the threshold the one
   below which about 2k + 8 row / samples entries should lie, enough to hold the k
   smallest but for bad luck (then the host sorts that row); topk_filter keeps every
   entry at most the threshold, one read of the row; on the kept ones the same again,
   until at most CUK_TOPK_M remain for one block (topk_final) to select the k smallest
   of and sort those. The counts (cnt, per row) say which rows failed: fewer than k
   kept, or more than the buffer's cap. */
#define CUK_TOPK_M (16384 / (int)sizeof(key_t_)) /* a block's entries: keys and positions in 32 or 24 KB */
#define CUK_TOPK_THREADS 512 /* at least 256: one thread per digit value in topk_select */

__device__ __forceinline__ bool topk_le(key_t_ ka, su32 ia, key_t_ kb, su32 ib) {
    return ka < kb || (ka == kb && ia <= ib);
}

struct TopkSel {
    su32 h[256];
    su32 wsum[8];
    key_t_ pk;
    su32 pi, r, one;
};

/* The entry of rank r (from 0) among the n in sk/si, into ss.pk/ss.pi: a radix select
   in shared memory, 8 bits of (key, position) a pass, from the top, until one entry
   has the digits chosen. */
__device__ void topk_select(const key_t_ *sk, const su32 *si, int n, su32 r, TopkSel &ss) {
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    if (tid == 0) ss.pk = 0, ss.pi = 0, ss.r = r, ss.one = 0;
    const int kp = CUK_KEY_BITS / 8;
    for (int p = 0; p < kp + 4; p++) {
        const bool kd = p < kp;
        const int sh = kd ? CUK_KEY_BITS - 8 * (p + 1) : 32 - 8 * (p - kp + 1);
        for (int j = tid; j < 256; j += blockDim.x) ss.h[j] = 0;
        __syncthreads();
        const key_t_ pk = ss.pk;
        const su32 pi = ss.pi, rr = ss.r;
        for (int j = tid; j < n; j += blockDim.x) {
            const key_t_ k = sk[j];
            const su32 i = si[j];
            /* the entries that share the digits chosen so far */
            const bool m = kd ? (p == 0 || (k >> (sh + 8)) == (pk >> (sh + 8)))
                              : (k == pk && (p == kp || (i >> (sh + 8)) == (pi >> (sh + 8))));
            if (m) atomicAdd(&ss.h[kd ? (int)((k >> sh) & 255u) : (int)((i >> sh) & 255u)], 1u);
        }
        __syncthreads();
        su32 c = 0, incl = 0;
        if (tid < 256) {
            c = ss.h[tid];
            incl = sort_warp_incl(c);
            if (lane == 31) ss.wsum[w] = incl;
        }
        __syncthreads();
        if (tid < 256) {
            su32 before = 0;
            for (int q = 0; q < w; q++) before += ss.wsum[q];
            const su32 excl = before + incl - c;
            if (excl <= rr && rr < excl + c) {
                if (kd) ss.pk = pk | ((key_t_)tid << sh);
                else ss.pi = pi | ((su32)tid << sh);
                ss.r = rr - excl;
                ss.one = c == 1;
            }
        }
        __syncthreads();
        if (ss.one) {
            /* one entry has the digits chosen so far: it is the one */
            const key_t_ qk = ss.pk;
            const su32 qi = ss.pi;
            __syncthreads();
            for (int j = tid; j < n; j += blockDim.x) {
                const key_t_ k = sk[j];
                const su32 i = si[j];
                if (kd ? (k >> sh) == (qk >> sh) : (k == qk && (i >> sh) == (qi >> sh))) ss.pk = k, ss.pi = i;
            }
            __syncthreads();
            break;
        }
    }
}

/* Sorts the n entries (a power of two) of sk/si by (key, position): a bitonic network
   in shared memory. */
__device__ void topk_block_sort(key_t_ *sk, su32 *si, int n) {
    for (int size = 2; size <= n; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            __syncthreads();
            for (int t = threadIdx.x; t < (n >> 1); t += blockDim.x) {
                const int i = 2 * stride * (t / stride) + t % stride, j = i + stride;
                const bool up = (i & size) == 0;
                const key_t_ ki = sk[i], kj = sk[j];
                const su32 ii = si[i], ij = si[j];
                if (topk_le(kj, ij, ki, ii) == up && (ki != kj || ii != ij)) {
                    sk[i] = kj, sk[j] = ki;
                    si[i] = ij, si[j] = ii;
                }
            }
        }
    __syncthreads();
}

/* bad rows: the filter before kept fewer than k entries or more than cap */
__device__ __forceinline__ bool topk_bad(si64 n, si64 k, si64 cap) { return n < k || n > cap; }

__device__ __forceinline__ su64 topk_mix(su64 z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One block per row (blockIdx.x strides the rows): thr_k/thr_i[row] = the threshold of
   the next filter, (KEY_MAX, ~0) to keep all. The row's entries: x's (from x; n = len;
   ns samples, at most CUK_TOPK_M) or the n = cnt[row] of the buffer bk/bi (cap per
   row; CUK_TOPK_M samples). */
extern "C" __global__ void __launch_bounds__(CUK_TOPK_THREADS) topk_sample(const sort_t *__restrict__ x, si64 len,
                                                              const key_t_ *__restrict__ bk, const su32 *__restrict__ bi,
                                                              const si64 *__restrict__ cnt, si64 cap, si64 rows, si64 k,
                                                              int round, int ns, key_t_ *__restrict__ thr_k,
                                                              su32 *__restrict__ thr_i) {
    __shared__ key_t_ sk[CUK_TOPK_M];
    __shared__ su32 si[CUK_TOPK_M];
    __shared__ TopkSel ss;
    const int s = x ? ns : CUK_TOPK_M;
    for (si64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const si64 n = x ? len : cnt[row];
        /* the sample below which 2 lambda + 8 are expected, lambda those of the k smallest */
        const double lambda = (double)k * s / (double)n;
        const double want = ceil(2.0 * lambda + 8.0);
        if ((!x && (topk_bad(n, k, cap) || n <= CUK_TOPK_M)) || want > s) {
            if (threadIdx.x == 0) thr_k[row] = CUK_KEY_MAX, thr_i[row] = ~0u;
            continue;
        }
        for (int j = threadIdx.x; j < s; j += blockDim.x) {
            const su64 h = topk_mix(((su64)row * 64 + (su64)round) * CUK_TOPK_M + (su64)j);
            const si64 p = (si64)__umul64hi(h, (su64)n);
            if (x) sk[j] = sort_enc(x[row * len + p], 1), si[j] = (su32)p;
            else sk[j] = bk[row * cap + p], si[j] = bi[row * cap + p];
        }
        __syncthreads();
        topk_select(sk, si, s, (su32)want - 1, ss);
        if (threadIdx.x == 0) thr_k[row] = ss.pk, thr_i[row] = ss.pi;
        __syncthreads();
    }
}

#define CUK_TOPK_ITEMS 8 /* entries a thread tests a step (scalar loads) */
#define CUK_TOPK_VB (sizeof(sort_t) == 1 ? 8 : 16) /* bytes of a vector load */
#define CUK_TOPK_VE (CUK_TOPK_VB / (int)sizeof(sort_t)) /* elements in it */
#define CUK_TOPK_VL 4 /* vector loads a thread makes a step */
typedef struct __align__(16) { su32 w[4]; } topk_v16;
typedef struct __align__(8) { su32 w[2]; } topk_v8;
typedef sort_pick<sizeof(sort_t) == 1, topk_v8, topk_v16>::type topk_vec;

/* A warp's kept entries wait in shared memory and go out CUK_TOPK_SW at a time: one
   atomic on the row's count per that many, not one per step that keeps any (the steps
   of every warp of the grid would queue on that one address). */
#define CUK_TOPK_SW 256
struct TopkStage {
    key_t_ k[8][CUK_TOPK_SW];
    su32 i[8][CUK_TOPK_SW];
};

/* The warp's sc staged entries to the row's next places of ok/oi (cap per row). */
__device__ __forceinline__ void topk_flush(TopkStage &st, su32 &sc, si64 row, si64 cap, key_t_ *__restrict__ ok,
                                           su32 *__restrict__ oi, si64 *__restrict__ ocnt) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (sc == 0) return;
    si64 base = 0;
    if (lane == 0) base = (si64)atomicAdd((su64 *)&ocnt[row], (su64)sc);
    base = __shfl_sync(CUK_SORT_FULL, base, 0);
    for (su32 j = lane; j < sc; j += 32)
        if (base + j < cap) ok[row * cap + base + j] = st.k[w][j], oi[row * cap + base + j] = st.i[w][j];
    __syncwarp();
    sc = 0;
}

/* The kept entries of a warp's threads (bit e of hits: the thread's entry e, got by
   entry(e) as key and position) staged (sc: the warp's count there), flushed when full. */
template <int E, class Entry>
__device__ __forceinline__ void topk_keep(su32 hits, const Entry &entry, TopkStage &st, su32 &sc, si64 row, si64 cap,
                                          key_t_ *__restrict__ ok, su32 *__restrict__ oi, si64 *__restrict__ ocnt) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const su32 c = __popc(hits), incl = sort_warp_incl(c);
    const su32 tot = __shfl_sync(CUK_SORT_FULL, incl, 31);
    if (sc + tot > CUK_TOPK_SW) topk_flush(st, sc, row, cap, ok, oi, ocnt);
    if (tot > CUK_TOPK_SW) {
        /* more than the stage holds (a threshold that keeps most): straight out */
        si64 base = 0;
        if (lane == 31) base = (si64)atomicAdd((su64 *)&ocnt[row], (su64)incl);
        base = __shfl_sync(CUK_SORT_FULL, base, 31) + (incl - c);
#pragma unroll
        for (int e = 0; e < E; e++)
            if ((hits >> e) & 1u) {
                if (base < cap) {
                    key_t_ k;
                    su32 i;
                    entry(e, k, i);
                    ok[row * cap + base] = k, oi[row * cap + base] = i;
                }
                base++;
            }
        return;
    }
    su32 at = sc + incl - c;
#pragma unroll
    for (int e = 0; e < E; e++)
        if ((hits >> e) & 1u) {
            entry(e, st.k[w][at], st.i[w][at]);
            at++;
        }
    __syncwarp();
    sc += tot;
}

/* Keeps the entries of each row at most its threshold: into ok/oi (cap per row, in no
   particular order), ocnt[row] their number (counted past cap: the host sees the
   overflow). grid.y strides the rows; the entries as for topk_sample (FROM_X: x's,
   by vector loads where the row is aligned for them). A bad row, or one with few
   enough entries for topk_final, keeps its count and nothing else. */
template <int FROM_X>
__device__ __forceinline__ void topk_filter_body(const sort_t *__restrict__ x, si64 len, const key_t_ *__restrict__ bk,
                                                 const su32 *__restrict__ bi, const si64 *__restrict__ cnt, si64 cap,
                                                 si64 rows, si64 k, const key_t_ *__restrict__ thr_k,
                                                 const su32 *__restrict__ thr_i, key_t_ *__restrict__ ok,
                                                 su32 *__restrict__ oi, si64 *__restrict__ ocnt) {
    __shared__ TopkStage st;
    su32 sc = 0; /* the warp's staged entries */
    for (si64 row = blockIdx.y; row < rows; row += gridDim.y) {
        const si64 n = FROM_X ? len : cnt[row];
        if (!FROM_X && (topk_bad(n, k, cap) || n <= CUK_TOPK_M)) {
            /* bad, or done: its entries stay in the buffer before (topk_final finds them) */
            if (blockIdx.x == 0 && threadIdx.x == 0) ocnt[row] = n;
            continue;
        }
        const key_t_ tk = thr_k[row];
        const su32 ti = thr_i[row];
        const sort_t *xr = x + row * len;
        const key_t_ *kr = bk + row * cap;
        const su32 *ir = bi + row * cap;
        si64 done = 0; /* entries before it are the vector loads' */
        if (FROM_X && ((unsigned long long)xr % CUK_TOPK_VB) == 0) {
            const topk_vec *vx = (const topk_vec *)xr;
            const si64 nv = n / CUK_TOPK_VE, step = (si64)gridDim.x * (256 * CUK_TOPK_VL);
            for (si64 b = (si64)blockIdx.x * (256 * CUK_TOPK_VL); b < nv; b += step) {
                topk_vec v[CUK_TOPK_VL];
                /* every load first, then the tests: a thread's loads overlap */
#pragma unroll
                for (int l = 0; l < CUK_TOPK_VL; l++) {
                    const si64 at = b + l * 256 + threadIdx.x;
                    if (at < nv) v[l] = vx[at];
                }
                su32 hits = 0;
#pragma unroll
                for (int l = 0; l < CUK_TOPK_VL; l++) {
                    const si64 at = b + l * 256 + threadIdx.x;
#pragma unroll
                    for (int e = 0; e < CUK_TOPK_VE; e++)
                        if (at < nv && topk_le(sort_enc(((const sort_t *)&v[l])[e], 1), (su32)(at * CUK_TOPK_VE + e), tk, ti))
                            hits |= 1u << (l * CUK_TOPK_VE + e);
                }
                if (!__any_sync(CUK_SORT_FULL, hits)) continue; /* the common case */
                topk_keep<CUK_TOPK_VL * CUK_TOPK_VE>(hits, [&](int e, key_t_ &kk, su32 &ii) {
                    const int l = e / CUK_TOPK_VE, q = e % CUK_TOPK_VE;
                    kk = sort_enc(((const sort_t *)&v[l])[q], 1);
                    ii = (su32)((b + l * 256 + threadIdx.x) * CUK_TOPK_VE + q);
                }, st, sc, row, cap, ok, oi, ocnt);
            }
            done = nv * CUK_TOPK_VE;
        }
        /* the rest (all of it unaligned or from the buffer), a few scalar loads a thread */
        const si64 step = (si64)gridDim.x * (256 * CUK_TOPK_ITEMS);
        for (si64 b = done + (si64)blockIdx.x * (256 * CUK_TOPK_ITEMS); b < n; b += step) {
            key_t_ ek[CUK_TOPK_ITEMS];
            su32 ei[CUK_TOPK_ITEMS];
#pragma unroll
            for (int j = 0; j < CUK_TOPK_ITEMS; j++) {
                const si64 i = b + j * 256 + threadIdx.x;
                if (i < n) {
                    if (FROM_X) ek[j] = sort_enc(xr[i], 1), ei[j] = (su32)i;
                    else ek[j] = kr[i], ei[j] = ir[i];
                }
            }
            su32 hits = 0;
#pragma unroll
            for (int j = 0; j < CUK_TOPK_ITEMS; j++)
                if (b + j * 256 + threadIdx.x < n && topk_le(ek[j], ei[j], tk, ti)) hits |= 1u << j;
            if (!__any_sync(CUK_SORT_FULL, hits)) continue;
            topk_keep<CUK_TOPK_ITEMS>(hits, [&](int j, key_t_ &kk, su32 &ii) { kk = ek[j], ii = ei[j]; }, st, sc, row,
                                      cap, ok, oi, ocnt);
        }
        topk_flush(st, sc, row, cap, ok, oi, ocnt);
    }
}

extern "C" __global__ void __launch_bounds__(256) topk_filter_x(const sort_t *__restrict__ x, si64 len, si64 cap,
                                                               si64 rows, si64 k, const key_t_ *__restrict__ thr_k,
                                                               const su32 *__restrict__ thr_i, key_t_ *__restrict__ ok,
                                                               su32 *__restrict__ oi, si64 *__restrict__ ocnt) {
    topk_filter_body<1>(x, len, nullptr, nullptr, nullptr, cap, rows, k, thr_k, thr_i, ok, oi, ocnt);
}
extern "C" __global__ void __launch_bounds__(256) topk_filter_b(const key_t_ *__restrict__ bk, const su32 *__restrict__ bi,
                                                               const si64 *__restrict__ cnt, si64 cap, si64 rows, si64 k,
                                                               const key_t_ *__restrict__ thr_k,
                                                               const su32 *__restrict__ thr_i, key_t_ *__restrict__ ok,
                                                               su32 *__restrict__ oi, si64 *__restrict__ ocnt) {
    topk_filter_body<0>(nullptr, 0, bk, bi, cnt, cap, rows, k, thr_k, thr_i, ok, oi, ocnt);
}

/* One block per row (blockIdx.x strides them): the row's kept entries, at most
   CUK_TOPK_M (those of the first of the rounds whose count, cnt[round][row], is that
   few: in buffer round % 2, bk0/bi0 or bk1/bi1), the k smallest (at most a quarter of
   CUK_TOPK_M) selected, sorted; out[row][j] = the position of the j-th. Rows with
   more, or bad ones, are left to the host. */
extern "C" __global__ void __launch_bounds__(CUK_TOPK_THREADS) topk_final(const key_t_ *__restrict__ bk0,
                                                                         const su32 *__restrict__ bi0,
                                                                         const key_t_ *__restrict__ bk1,
                                                                         const su32 *__restrict__ bi1,
                                                                         const si64 *__restrict__ cnt, int rounds,
                                                                         si64 cap, si64 rows, si64 k,
                                                                         si64 *__restrict__ out) {
    __shared__ key_t_ sk[CUK_TOPK_M], ck[CUK_TOPK_M / 4];
    __shared__ su32 si[CUK_TOPK_M], ci[CUK_TOPK_M / 4];
    __shared__ TopkSel ss;
    __shared__ su32 nk;
    for (si64 row = blockIdx.x; row < rows; row += gridDim.x) {
        si64 n = 0;
        int r = 0;
        for (; r < rounds; r++) {
            n = cnt[r * rows + row];
            if (topk_bad(n, k, cap) || n <= CUK_TOPK_M) break;
        }
        if (r == rounds || topk_bad(n, k, cap)) continue;
        const key_t_ *bk = r & 1 ? bk1 : bk0;
        const su32 *bi = r & 1 ? bi1 : bi0;
        for (int j = threadIdx.x; j < n; j += blockDim.x) sk[j] = bk[row * cap + j], si[j] = bi[row * cap + j];
        if (threadIdx.x == 0) nk = 0;
        __syncthreads();
        topk_select(sk, si, (int)n, (su32)k - 1, ss);
        /* the k entries at most the k-th, in any order, then sorted */
        int p2 = 1;
        while (p2 < k) p2 <<= 1;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            if (topk_le(sk[j], si[j], ss.pk, ss.pi)) {
                const su32 at = atomicAdd(&nk, 1u);
                ck[at] = sk[j], ci[at] = si[j];
            }
        for (int j = (int)k + threadIdx.x; j < p2; j += blockDim.x)
            ck[j] = CUK_KEY_MAX, ci[j] = ~0u; /* after every entry: positions are below 2^32 - 1 */
        __syncthreads();
        topk_block_sort(ck, ci, p2);
        for (int j = threadIdx.x; j < k; j += blockDim.x) out[row * k + j] = (si64)ci[j];
        __syncthreads();
    }
}

/* out[row][j] = idx[row][j], j < k: a row's first k positions of its whole argsort. */
extern "C" __global__ void topk_take(const si64 *__restrict__ idx, si64 len, si64 rows, si64 k, si64 *__restrict__ out) {
    const si64 n = rows * k;
    for (si64 i = (si64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (si64)gridDim.x * blockDim.x)
        out[i] = idx[i / k * len + i % k];
}
