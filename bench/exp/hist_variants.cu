// histogram design experiment (docs/performance.md): 2^28 f32 values in [0, 1) into 256
// and 1024 bins, as the part-2 benchmark does. What bounds the hist kernel: the bin's
// edge lookups, the shared-memory atomics, their conflicts, or the grid?
//   nvcc -O3 -arch=sm_90 -o /tmp/hist bench/exp/hist_variants.cu && /tmp/hist
#include "exp.cuh"
#include <cstdint>

// The bin as kernels/ops.h computes it: guess, then edges from a shared table unless the
// guess's fraction is a margin inside the bin (FAST).
template <bool FAST>
__device__ __forceinline__ int bin_of(float x, int n, float norm, float margin, const float *tab) {
    if (!(x >= 0.0f && x <= 1.0f)) return -1;
    const float f = x * norm;
    int g = 0;
    if (f > 0.0f) g = f < (float)(n - 1) ? (int)f : n - 1;
    if (FAST) {
        const float fr = f - (float)g;
        if (fr >= margin && fr <= 1.0f - margin) return g;
    }
    if (x < tab[g]) return g - 1;
    if (g == n - 1 || x < tab[g + 1]) return g;
    return g + 1;
}

// One kernel shape for every variant: a contiguous chunk per block, 16-byte loads, U
// vectors in flight per thread, COPIES sub-histograms per block (warp w uses copy
// w % COPIES), the edge table after them; at the end each block adds its counts.
template <int MODE, int COPIES, int U>
__global__ void __launch_bounds__(256) hist(const float4 *x, long long nvec, int n, unsigned long long *out,
                                           float norm, float margin) {
    extern __shared__ unsigned int sh[];
    unsigned int *h = sh;
    float *tab = (float *)(sh + COPIES * n);
    for (int q = threadIdx.x; q < COPIES * n; q += blockDim.x) h[q] = 0;
    for (int q = threadIdx.x; q < n; q += blockDim.x) tab[q] = (float)q / (float)n;
    __syncthreads();
    unsigned int *mine = h + ((threadIdx.x >> 5) % COPIES) * n;
    const long long cv = (nvec + gridDim.x - 1) / gridDim.x;
    const long long lo = blockIdx.x * cv, hi = lo + cv < nvec ? lo + cv : nvec;
    for (long long q = lo + threadIdx.x; q < hi; q += (long long)U * blockDim.x) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (q + u * blockDim.x < hi) v[u] = x[q + u * blockDim.x];
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (q + u * blockDim.x >= hi) break;
            float e[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
            for (int k = 0; k < 4; k++) {
                int b;
                if (MODE == 0) b = bin_of<false>(e[k], n, norm, margin, tab);
                else if (MODE == 1) b = bin_of<true>(e[k], n, norm, margin, tab);
                else b = (int)(e[k] * norm) & (n - 1);  // atomics alone
                if (MODE == 3) {
                    if (b == 12345678) mine[0] = 1;  // loads alone
                } else if (b >= 0) {
                    atomicAdd(&mine[b], 1u);
                }
            }
        }
    }
    __syncthreads();
    for (int q = threadIdx.x; q < n; q += blockDim.x) {
        unsigned int s = 0;
        for (int c = 0; c < COPIES; c++) s += h[c * n + q];
        if (s) atomicAdd(&out[q], (unsigned long long)s);
    }
}

template <int MODE, int COPIES, int U>
void run(const char *name, const float4 *x, long long n4, int bins, unsigned long long *out, int grid,
         const std::vector<unsigned long long> &want) {
    size_t shm = (size_t)(COPIES + 1) * bins * 4;
    if (shm > 48 * 1024)
        CK(cudaFuncSetAttribute(hist<MODE, COPIES, U>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
    float norm = (float)bins, margin = 8 * 5.96e-8f * bins + 4 * 5.96e-8f * norm;
    float t = median_ms([&] {
        cudaMemsetAsync(out, 0, bins * 8);
        hist<MODE, COPIES, U><<<grid, 256, shm>>>(x, n4, bins, out, norm, margin);
    });
    std::vector<unsigned long long> got(bins);
    CK(cudaMemcpy(got.data(), out, bins * 8, cudaMemcpyDeviceToHost));
    bool ok = MODE >= 2 || got == want;
    printf("%-28s bins %4d grid %5d: %.3f ms %6.0f GB/s %s\n", name, bins, grid, t, 4.0 * n4 * 4 / t / 1e6,
           MODE >= 2 ? "" : ok ? "ok" : "WRONG");
}

int main() {
    const long long n = 1ll << 28;
    float *x;
    unsigned long long *out;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&out, 4096 * 8));
    const std::vector<float> hx = uniform_floats(n);
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const float4 *x4 = (const float4 *)x;
    for (int bins : {256, 1024}) {
        std::vector<unsigned long long> want(bins, 0);
        for (long long i = 0; i < n; i++) {  // edges q / bins are exact in f32 for these bins
            int b = (int)(hx[i] * bins);
            want[b < bins ? b : bins - 1]++;
        }
        for (int g : {sms * 6, sms * 12, sms * 24}) {
            run<0, 1, 4>("edges, 1 copy (as now)", x4, n / 4, bins, out, g, want);
            run<1, 1, 4>("fast bin, 1 copy", x4, n / 4, bins, out, g, want);
            run<1, 2, 4>("fast bin, 2 copies", x4, n / 4, bins, out, g, want);
            run<1, 8, 4>("fast bin, a copy per warp", x4, n / 4, bins, out, g, want);
            run<2, 1, 4>("atomics alone, 1 copy", x4, n / 4, bins, out, g, want);
            run<2, 8, 4>("atomics alone, per warp", x4, n / 4, bins, out, g, want);
        }
        run<3, 1, 4>("loads alone", x4, n / 4, bins, out, sms * 12, want);
    }
    return 0;
}
