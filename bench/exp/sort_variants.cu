// Radix sort design experiment (docs/performance.md, "Sorting on the GPU"): the
// onesweep passes of kernels/sort.cuh on one row of 2^LOGN keys, driven as
// exec/gpu/sort.c drives them, timed per kernel kind and whole; the result checked
// against a host sort. Compile-time knobs pick the variant:
//   nvcc -O3 -arch=sm_90 -DCUK_SORT_ITEMS=16 -DCUK_SORT_MINB=3 -o /tmp/sv bench/exp/sort_variants.cu && /tmp/sv
#ifndef CUK_SORT_T
#define CUK_SORT_T unsigned int
#define CUK_SORT_K unsigned int
#define CUK_SORT_KIND 0
#endif
#ifndef CUK_SORT_ITEMS
#define CUK_SORT_ITEMS 16
#endif
#ifndef LOGN
#define LOGN 28
#endif
#include "exp.cuh"
#include "../../kernels/sort.cuh"

int main() {
    const long long n = 1LL << LOGN, tile = CUK_SORT_TILE, tiles = (n + tile - 1) / tile;
    const int passes = CUK_SORT_PASSES;
    std::vector<sort_t> h(n);
    unsigned long long s = 88172645463325252ull;
    for (long long i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = (sort_t)(s >> 11);
    }
    sort_t *x, *out;
    key_t_ *kb[2];
    su32 *pb[2], *lb;
    si64 *idx;
    su64 *hist, *bins;
    CK(cudaMalloc(&x, n * sizeof(sort_t)));
    CK(cudaMalloc(&out, n * sizeof(sort_t)));
    CK(cudaMalloc(&idx, n * 8));
    for (int i = 0; i < 2; i++) {
        CK(cudaMalloc(&kb[i], n * sizeof(key_t_)));
        CK(cudaMalloc(&pb[i], n * 4));
    }
    CK(cudaMalloc(&lb, (tiles * 256 + 1) * 4));
    CK(cudaMalloc(&hist, passes * 256 * 8 + 8 * 9));
    CK(cudaMalloc(&bins, passes * 256 * 8));
    CK(cudaMemcpy(x, h.data(), n * sizeof(sort_t), cudaMemcpyHostToDevice));
    su64 *odd = hist + passes * 256;
    const long long rows = 1;
    auto run_hist = [&] {
        CK(cudaMemsetAsync(hist, 0, passes * 256 * 8 + 8 * 9));
        sort_hist<<<(unsigned)std::min(tiles, 1024LL), 256>>>(x, n, rows, 0, hist, odd);
        sort_bins<<<passes, 256>>>(hist, rows, n, bins, odd + 1);
    };
    auto run_pass = [&](int p, bool arg) {
        const bool first = p == 0, last = p == passes - 1;
        const void *in = first ? (const void *)x : (const void *)kb[(p - 1) & 1];
        const su32 *pin = first ? nullptr : pb[(p - 1) & 1];
        void *o = last ? (arg ? nullptr : (void *)out) : (void *)kb[p & 1];
        void *po = last ? (arg ? (void *)idx : nullptr) : (void *)pb[p & 1];
        CK(cudaMemsetAsync(lb, 0, (tiles * 256 + 1) * 4));
        su32 *ticket = lb + tiles * 256;
        const su64 *bi = bins + p * 256;
        if (!arg) {
            if (first && last) sort_pass_fl<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
            else if (first) sort_pass_f<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
            else if (last) sort_pass_l<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
            else sort_pass_m<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
        } else {
            if (first && last) sort_pass_pfl<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
            else if (first) sort_pass_pf<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
            else if (last) sort_pass_pl<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
            else sort_pass_pm<<<tiles, 256>>>(in, pin, o, po, n, 0, 8 * p, 0, bi, nullptr, lb, ticket, tiles, 0);
        }
    };
    float th = median_ms(run_hist);
    float tp = median_ms([&] { run_pass(1 < passes - 1 ? 1 : 0, false); });
    float tk = median_ms([&] {
        run_hist();
        for (int p = 0; p < passes; p++) run_pass(p, false);
    });
    float ta = median_ms([&] {
        run_hist();
        for (int p = 0; p < passes; p++) run_pass(p, true);
    });
    // check (unless NOCHECK is set): keys sorted, argsort a stable permutation
    long long bad = 0;
    if (!getenv("NOCHECK")) {
    std::vector<sort_t> got(n), want(h);
    std::vector<si64> gi(n);
    CK(cudaMemcpy(got.data(), out, n * sizeof(sort_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gi.data(), idx, n * 8, cudaMemcpyDeviceToHost));
    std::stable_sort(want.begin(), want.end());
    for (long long i = 0; i < n; i++) bad += got[i] != want[i];
    for (long long i = 1; i < n; i++) bad += !(h[gi[i - 1]] < h[gi[i]] || (h[gi[i - 1]] == h[gi[i]] && gi[i - 1] < gi[i]));
    }
    printf("ITEMS %d MINB %d key %zuB n 2^%d: hist %.3f ms, a middle pass %.3f ms (%.0f GB/s), sort %.3f ms "
           "(%.1f GKey/s), argsort %.3f ms (%.1f GKey/s)%s\n",
           CUK_SORT_ITEMS, CUK_SORT_MINB, sizeof(key_t_), LOGN, th, tp, 2.0 * n * sizeof(key_t_) / tp / 1e6, tk,
           n / tk / 1e6, ta, n / ta / 1e6, bad ? " WRONG" : "");
    return bad != 0;
}
