// Scan design experiments (issue 4): decoupled look-back variants on 2^28 elements,
// timed with CUDA events (median of 20), checked exactly on int32.
// nvcc -O3 -arch=sm_90 -o scan_variants scan_variants.cu && ./scan_variants
#include "exp.cuh"

template <class T> __device__ __forceinline__ unsigned long long pack(int flag, T v) {
    union { T t; unsigned u; } c; c.t = v; return ((unsigned long long)flag << 32) | c.u;
}
template <class T, int SP = 1> __device__ __forceinline__ void tset(unsigned long long *st, long long t, int flag, T v) {
    *(volatile unsigned long long *)(st + t * SP) = pack(flag, v);
}
template <class T, int SP = 1> __device__ __forceinline__ int tget(const unsigned long long *st, long long t, T *v) {
    unsigned long long w = *(const volatile unsigned long long *)(st + t * SP);
    union { T t; unsigned u; } c; c.u = (unsigned)w; *v = c.t; return (int)(w >> 32);
}
// warp-wide look-back (sum); returns exclusive prefix of tile in all lanes
template <class T, int SP = 1> __device__ T lookback(const unsigned long long *st, long long tile) {
    const int lane = threadIdx.x & 31;
    T run = 0;
    for (long long base = tile - 1;; base -= 32) {
        const long long p = base - lane;
        T v = 0; int f = 0;
        if (p < 0) f = 3;
        unsigned incl;
        for (;;) {
            if (f == 0) f = tget<T, SP>(st, p, &v);
            incl = __ballot_sync(FULL, f >= 2);
            unsigned ready = __ballot_sync(FULL, f != 0);
            if (incl) {
                int stop = __ffs(incl) - 1;
                unsigned need = stop == 31 ? FULL : (1u << (stop + 1)) - 1u;
                if ((ready & need) == need) break;
            } else if (ready == FULL) break;
        }
        const int stop = incl ? __ffs(incl) - 1 : 31;
        T x = (lane <= stop && f != 3) ? v : (T)0;
        for (int d = 16; d; d >>= 1) x += __shfl_xor_sync(FULL, x, d);
        run += x;
        if (incl) break;
    }
    return run;
}

template <class T> struct V4 { T x[4]; };
template <class T> __device__ __forceinline__ V4<T> ld4(const T *p) { V4<T> r; *(int4 *)r.x = __ldcs((const int4 *)p); return r; }
template <class T> __device__ __forceinline__ V4<T> ld4n(const T *p) { V4<T> r; *(int4 *)r.x = *(const int4 *)p; return r; }
template <class T> __device__ __forceinline__ void st4(T *p, V4<T> v) { __stcs((int4 *)p, *(int4 *)v.x); }

// Per-warp: ROWS rows of 32 x 4 elements. Returns per-thread scanned registers in-place
// (inclusive within warp-segment), plus warp total.
template <class T, int ROWS> __device__ __forceinline__ T warp_scan(V4<T> (&a)[ROWS], T (&excl)[ROWS]) {
    const int lane = threadIdx.x & 31;
    T carry = 0;
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
#pragma unroll
        for (int e = 1; e < 4; e++) a[r].x[e] += a[r].x[e - 1];
        T t = a[r].x[3];
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) { T o = __shfl_up_sync(FULL, t, d); if (lane >= d) t += o; }
        T tot = __shfl_sync(FULL, t, 31);
        excl[r] = carry + t - a[r].x[3];
        carry += tot;
    }
    return carry;
}

// The block's tile, by ticket (tiles go out in the order blocks start).
__device__ __forceinline__ long long take_tile(unsigned long long *ticket) {
    __shared__ long long s_tile;
    if (threadIdx.x == 0) s_tile = (long long)atomicAdd(ticket, 1ull);
    __syncthreads();
    return s_tile;
}

// The tile's exclusive prefix plus the warps before this one: warp totals through shared
// memory, warp 0 publishes the tile aggregate and looks back (tile 0: inclusive at once).
template <class T, int NW, int SP>
__device__ __forceinline__ T block_prefix(long long tile, unsigned long long *st, T *s_wt, T wt) {
    __shared__ T s_pre;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) s_wt[warp] = wt;
    __syncthreads();
    if (warp == 0) {
        T agg = 0;
        for (int w = 0; w < NW; w++) agg += s_wt[w];
        if (tile == 0) { if (lane == 0) { tset<T, SP>(st, 0, 2, agg); s_pre = 0; } }
        else {
            if (lane == 0) tset<T, SP>(st, tile, 1, agg);
            T pre = lookback<T, SP>(st, tile);
            if (lane == 0) { tset<T, SP>(st, tile, 2, pre + agg); s_pre = pre; }
        }
    }
    __syncthreads();
    T base = s_pre;
    for (int w = 0; w < warp; w++) base += s_wt[w];
    return base;
}

// Variant A: one tile per block (dynamic ticket), registers, as cuk emits now.
template <class T, int BLOCK, int ROWS, int MINB, bool STREAMING, int SP>
__global__ void __launch_bounds__(BLOCK, MINB) scan_a(const T *in, T *out, long long n, unsigned long long *st, unsigned long long *ticket) {
    constexpr int NW = BLOCK / 32, TILE = BLOCK * ROWS * 4;
    __shared__ T s_wt[NW];
    const long long tile = take_tile(ticket);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long seg = tile * TILE + (long long)warp * (ROWS * 128);
    V4<T> a[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) a[r] = STREAMING ? ld4(in + seg + (r * 32 + lane) * 4) : ld4n(in + seg + (r * 32 + lane) * 4);
    T ex[ROWS];
    T wt = warp_scan<T, ROWS>(a, ex);
    const T base = block_prefix<T, NW, SP>(tile, st, s_wt, wt);
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
        V4<T> o;
#pragma unroll
        for (int e = 0; e < 4; e++) o.x[e] = a[r].x[e] + ex[r] + base;
        if (STREAMING) st4(out + seg + (r * 32 + lane) * 4, o); else *(int4 *)(out + seg + (r * 32 + lane) * 4) = *(int4 *)o.x;
    }
}

// Variant B: persistent blocks; the next tile is taken (and its loads issued) after this
// tile's aggregate is published, so loads are in flight during the look-back.
template <class T, int BLOCK, int ROWS, int MINB>
__global__ void __launch_bounds__(BLOCK, MINB) scan_b(const T *in, T *out, long long n, unsigned long long *st, unsigned long long *ticket) {
    constexpr int NW = BLOCK / 32, TILE = BLOCK * ROWS * 4;
    const long long ntiles = n / TILE;
    __shared__ long long s_tile[2];
    __shared__ T s_wt[2][NW];
    __shared__ T s_pre;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) s_tile[0] = (long long)atomicAdd(ticket, 1ull);
    __syncthreads();
    long long tile = s_tile[0];
    int buf = 0;
    V4<T> a[ROWS];
    if (tile < ntiles) {
        const long long seg = tile * TILE + (long long)warp * (ROWS * 128);
#pragma unroll
        for (int r = 0; r < ROWS; r++) a[r] = ld4(in + seg + (r * 32 + lane) * 4);
    }
    while (tile < ntiles) {
        const long long seg = tile * TILE + (long long)warp * (ROWS * 128);
        T ex[ROWS];
        T wt = warp_scan<T, ROWS>(a, ex);
        if (lane == 0) s_wt[buf][warp] = wt;
        __syncthreads();
        T agg = 0;
        if (warp == 0) {
            for (int w = 0; w < NW; w++) agg += s_wt[buf][w];
            if (lane == 0) tset(st, tile, tile == 0 ? 2 : 1, agg);
            if (lane == 0) s_tile[buf ^ 1] = (long long)atomicAdd(ticket, 1ull);
        }
        __syncthreads();
        const long long next = s_tile[buf ^ 1];
        V4<T> b[ROWS];
        if (next < ntiles) {
            const long long nseg = next * TILE + (long long)warp * (ROWS * 128);
#pragma unroll
            for (int r = 0; r < ROWS; r++) b[r] = ld4(in + nseg + (r * 32 + lane) * 4);
        }
        if (warp == 0) {
            T pre = 0;
            if (tile > 0) {
                pre = lookback<T>(st, tile);
                if (lane == 0) tset(st, tile, 2, pre + agg);
            }
            if (lane == 0) s_pre = pre;
        }
        __syncthreads();
        T base = s_pre;
        for (int w = 0; w < warp; w++) base += s_wt[buf][w];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            V4<T> o;
#pragma unroll
            for (int e = 0; e < 4; e++) o.x[e] = a[r].x[e] + ex[r] + base;
            st4(out + seg + (r * 32 + lane) * 4, o);
        }
#pragma unroll
        for (int r = 0; r < ROWS; r++) a[r] = b[r];
        tile = next;
        buf ^= 1;
    }
}

// Variant C: one tile per block, the tile staged in shared memory with cp.async (so
// registers stay few and more blocks fit per SM).
template <class T, int BLOCK, int ROWS, int MINB, int SP>
__global__ void __launch_bounds__(BLOCK, MINB) scan_c(const T *in, T *out, long long n, unsigned long long *st, unsigned long long *ticket) {
    constexpr int NW = BLOCK / 32, TILE = BLOCK * ROWS * 4;
    extern __shared__ __align__(16) unsigned char smem[];
    T *sd = (T *)smem;
    __shared__ T s_wt[NW];
    const long long tile = take_tile(ticket);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long seg = tile * TILE + (long long)warp * (ROWS * 128);
    const int lseg = warp * (ROWS * 128);
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
        unsigned sa = (unsigned)__cvta_generic_to_shared(sd + lseg + (r * 32 + lane) * 4);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(in + seg + (r * 32 + lane) * 4));
    }
    asm volatile("cp.async.wait_all;\n" ::);
    // per-thread partial sums of its rows, warp scan of totals
    T carry = 0, ex[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
        V4<T> v = *(V4<T> *)(sd + lseg + (r * 32 + lane) * 4);
        T t = v.x[0] + v.x[1] + v.x[2] + v.x[3];
        T s = t;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) { T o = __shfl_up_sync(FULL, s, d); if (lane >= d) s += o; }
        T tot = __shfl_sync(FULL, s, 31);
        ex[r] = carry + s - t;
        carry += tot;
    }
    const T base = block_prefix<T, NW, SP>(tile, st, s_wt, carry);
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
        V4<T> v = *(V4<T> *)(sd + lseg + (r * 32 + lane) * 4);
        T run = ex[r] + base;
        V4<T> o;
#pragma unroll
        for (int e = 0; e < 4; e++) { run += v.x[e]; o.x[e] = run; }
        st4(out + seg + (r * 32 + lane) * 4, o);
    }
}

template <class T> struct Bench {
    long long n;
    T *din, *dout;
    unsigned long long *st;
    std::vector<T> ref;
    int nsm;
    Bench(long long n_) : n(n_) {
        CK(cudaMalloc(&din, n * sizeof(T)));
        CK(cudaMalloc(&dout, n * sizeof(T)));
        CK(cudaMalloc(&st, (n / 512 * 16 + 64) * 8));
        std::vector<T> h(n);
        unsigned s = 12345;
        for (long long i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; h[i] = (T)((s >> 28) & 3); }
        ref.resize(n);
        T acc = 0;
        for (long long i = 0; i < n; i++) { acc += h[i]; ref[i] = acc; }
        CK(cudaMemcpy(din, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
        CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    }
    template <class L> float time(L launch, size_t scratch) {
        return median_ms([&] {
            CK(cudaMemsetAsync(st, 0, scratch));
            launch();
        });
    }
    bool check() {
        std::vector<T> h(n);
        CK(cudaMemcpy(h.data(), dout, n * sizeof(T), cudaMemcpyDeviceToHost));
        for (long long i = 0; i < n; i++) if (h[i] != ref[i]) { printf("  MISMATCH at %lld: %lld vs %lld\n", i, (long long)h[i], (long long)ref[i]); return false; }
        return true;
    }
    void report(const char *name, float ms, double copy) {
        double gbs = 2.0 * n * sizeof(T) / (ms * 1e6);
        bool ok = check();
        CK(cudaMemset(dout, 0, n * sizeof(T)));
        printf("%-44s %8.3f ms %7.0f GB/s %6.1f%% of copy %s\n", name, ms, gbs, 100 * gbs / copy, ok ? "ok" : "WRONG");
    }
    template <int BLOCK, int ROWS, int MINB, bool S, int SP = 1> void a(const char *name, double copy) {
        constexpr int TILE = BLOCK * ROWS * 4;
        long long nt = n / TILE;
        auto k = scan_a<T, BLOCK, ROWS, MINB, S, SP>;
        int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, BLOCK, 0));
        cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
        float ms = time([&] { k<<<nt, BLOCK>>>(din, dout, n, st + 2, st); }, (nt * SP + 2) * 8);
        char buf[128]; snprintf(buf, sizeof buf, "%s regs %d occ %d", name, fa.numRegs, occ);
        report(buf, ms, copy);
    }
    template <int BLOCK, int ROWS, int MINB> void b(const char *name, double copy, int mult) {
        constexpr int TILE = BLOCK * ROWS * 4;
        long long nt = n / TILE;
        auto k = scan_b<T, BLOCK, ROWS, MINB>;
        int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, BLOCK, 0));
        cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
        int grid = occ * nsm * mult / 4;
        float ms = time([&] { k<<<grid, BLOCK>>>(din, dout, n, st + 2, st); }, (nt + 2 + grid) * 8);
        char buf[128]; snprintf(buf, sizeof buf, "%s regs %d occ %d grid %d", name, fa.numRegs, occ, grid);
        report(buf, ms, copy);
    }
    template <int BLOCK, int ROWS, int MINB, int SP = 1> void c(const char *name, double copy) {
        constexpr int TILE = BLOCK * ROWS * 4;
        long long nt = n / TILE;
        auto k = scan_c<T, BLOCK, ROWS, MINB, SP>;
        size_t sm = TILE * sizeof(T);
        CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm));
        int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, BLOCK, sm));
        cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
        float ms = time([&] { k<<<nt, BLOCK, sm>>>(din, dout, n, st + 2, st); }, (nt * SP + 2) * 8);
        char buf[128]; snprintf(buf, sizeof buf, "%s regs %d occ %d", name, fa.numRegs, occ);
        report(buf, ms, copy);
    }
};

template <class T> void run_all(long long n, const char *tn) {
    Bench<T> B(n);
    float cms = B.time([&] { CK(cudaMemcpyAsync(B.dout, B.din, n * sizeof(T), cudaMemcpyDeviceToDevice)); }, 8);
    double copy = 2.0 * n * sizeof(T) / (cms * 1e6);
    printf("== %s n=%lld copy %.0f GB/s\n", tn, n, copy);
    B.template a<256, 4, 6, true, 1>("A 256x16 minb6 sp8B", copy);
    B.template a<256, 4, 6, true, 3>("A 256x16 minb6 sp24B", copy);
    B.template a<256, 4, 6, true, 4>("A 256x16 minb6 sp32B", copy);
    B.template a<256, 4, 6, true, 8>("A 256x16 minb6 sp64B", copy);
    B.template a<256, 4, 6, true, 16>("A 256x16 minb6 sp128B", copy);
    B.template a<256, 4, 8, true, 3>("A 256x16 minb8 sp24B", copy);
    B.template a<256, 4, 8, true, 16>("A 256x16 minb8 sp128B", copy);
    B.template a<256, 8, 4, true, 1>("A 256x32 minb4 sp8B", copy);
    B.template a<256, 8, 4, true, 3>("A 256x32 minb4 sp24B", copy);
    B.template a<256, 8, 4, true, 16>("A 256x32 minb4 sp128B", copy);
    B.template a<512, 8, 2, true, 3>("A 512x32 minb2 sp24B", copy);
    B.template a<512, 8, 2, true, 16>("A 512x32 minb2 sp128B", copy);
    B.template a<128, 8, 8, true, 3>("A 128x32 minb8 sp24B", copy);
    B.template a<128, 8, 8, true, 16>("A 128x32 minb8 sp128B", copy);
    B.template b<256, 4, 4>("B persist 256x16 minb4 sp8B", copy, 4);
    B.template b<512, 4, 2>("B persist 512x16 minb2 sp8B", copy, 4);
    B.template c<256, 8, 6, 3>("C smem 256x32 minb6 sp24B", copy);
    B.template c<256, 8, 6, 16>("C smem 256x32 minb6 sp128B", copy);
    B.template c<512, 8, 3, 16>("C smem 512x32 minb3 sp128B", copy);
    B.template c<256, 16, 3, 16>("C smem 256x64 minb3 sp128B", copy);
}

int main(int argc, char **argv) {
    long long n = 1ll << 28;
    run_all<int>(n, "int32");
    return 0;
}
