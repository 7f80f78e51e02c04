// Elementwise design experiments (issue 4): the chain sin(x)*cos(y)+exp(-x*x)*0.5-sqrt(abs(y))
// on 2^28 f32, grid-stride vs one-shot grids, vectors per thread, occupancy.
// nvcc -O3 -arch=sm_90 -o chain_variants chain_variants.cu && ./chain_variants
#include <cmath>
#include "exp.cuh"

__device__ __forceinline__ float f(float x, float y) { return sinf(x) * cosf(y) + expf(-x * x) * 0.5f - sqrtf(fabsf(y)); }

template <int U, int MINB, bool STREAM>
__global__ void __launch_bounds__(256, MINB) gs(const float4 *x, const float4 *y, float4 *o, long long nv) {
    const long long gt = (long long)blockIdx.x * blockDim.x + threadIdx.x, gsd = (long long)gridDim.x * blockDim.x;
    for (long long q0 = gt; q0 < nv; q0 += U * gsd) {
        float4 a[U], b[U];
#pragma unroll
        for (int u = 0; u < U; u++) { long long q = q0 + u * gsd; if (q < nv) { a[u] = STREAM ? __ldcs(x + q) : x[q]; b[u] = STREAM ? __ldcs(y + q) : y[q]; } }
#pragma unroll
        for (int u = 0; u < U; u++) {
            long long q = q0 + u * gsd;
            if (q < nv) {
                float4 r = make_float4(f(a[u].x, b[u].x), f(a[u].y, b[u].y), f(a[u].z, b[u].z), f(a[u].w, b[u].w));
                if (STREAM) __stcs(o + q, r); else o[q] = r;
            }
        }
    }
}

// one-shot: each block handles 256*U consecutive vectors, no loop
template <int U, int MINB>
__global__ void __launch_bounds__(256, MINB) os(const float4 *x, const float4 *y, float4 *o, long long nv) {
    const long long base = (long long)blockIdx.x * 256 * U + threadIdx.x;
    float4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; u++) { long long q = base + u * 256; if (q < nv) { a[u] = __ldcs(x + q); b[u] = __ldcs(y + q); } }
#pragma unroll
    for (int u = 0; u < U; u++) {
        long long q = base + u * 256;
        if (q < nv) __stcs(o + q, make_float4(f(a[u].x, b[u].x), f(a[u].y, b[u].y), f(a[u].z, b[u].z), f(a[u].w, b[u].w)));
    }
}

int main() {
    const long long n = 1ll << 28, nv = n / 4;
    float *x, *y, *o;
    CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&o, n * 4));
    std::vector<float> hx(n), hy(n);
    unsigned s = 1;
    for (long long i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; hx[i] = (s >> 8) * (1.0f / 16777216.0f) * 2 - 1; s = s * 1664525u + 1013904223u; hy[i] = (s >> 8) * (1.0f / 16777216.0f) * 2 - 1; }
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(y, hy.data(), n * 4, cudaMemcpyHostToDevice));
    int nsm; CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    auto timeit = [](auto launch) { return median_ms(launch); };
    float cms = timeit([&] { CK(cudaMemcpyAsync(o, x, n * 4, cudaMemcpyDeviceToDevice)); });
    double copy = 2.0 * n * 4 / (cms * 1e6);
    printf("== chain n=2^28 copy %.0f GB/s\n", copy);
    auto check = [&]() {
        std::vector<float> h(n); CK(cudaMemcpy(h.data(), o, n * 4, cudaMemcpyDeviceToHost));
        double md = 0;
        for (long long i = 0; i < n; i += 4099) { double r = sin((double)hx[i]) * cos((double)hy[i]) + exp(-(double)hx[i] * hx[i]) * 0.5 - sqrt(fabs((double)hy[i])); md = std::max(md, fabs(r - h[i])); }
        CK(cudaMemset(o, 0, n * 4));
        return md < 1e-5;
    };
    auto rep = [&](const char *name, float ms, int regs, int occ, long long grid) {
        double gbs = 12.0 * n / (ms * 1e6);
        bool ok = check();
        printf("%-36s regs %2d occ %2d grid %8lld %7.3f ms %6.0f GB/s %5.1f%% %s\n", name, regs, occ, grid, ms, gbs, 100 * gbs / copy, ok ? "ok" : "WRONG");
    };
#define GS(U, M, S, MULT, NAME) { auto k = gs<U, M, S>; int occ; cudaFuncAttributes fa; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, 0)); CK(cudaFuncGetAttributes(&fa, k)); long long g = (long long)occ * nsm * MULT; float ms = timeit([&] { k<<<g, 256>>>((const float4 *)x, (const float4 *)y, (float4 *)o, nv); }); rep(NAME, ms, fa.numRegs, occ, g); }
#define OS(U, M, NAME) { auto k = os<U, M>; int occ; cudaFuncAttributes fa; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, 0)); CK(cudaFuncGetAttributes(&fa, k)); long long g = (nv + 256 * U - 1) / (256 * U); float ms = timeit([&] { k<<<g, 256>>>((const float4 *)x, (const float4 *)y, (float4 *)o, nv); }); rep(NAME, ms, fa.numRegs, occ, g); }
    GS(2, 1, false, 1, "gridstride U2 (as emitted)");
    GS(2, 1, true, 1, "gridstride U2 stream");
    GS(2, 8, true, 1, "gridstride U2 minb8");
    GS(1, 8, true, 1, "gridstride U1 minb8");
    GS(4, 1, true, 1, "gridstride U4");
    GS(4, 6, true, 1, "gridstride U4 minb6");
    GS(2, 1, true, 2, "gridstride U2 grid x2");
    GS(2, 1, true, 4, "gridstride U2 grid x4");
    GS(2, 8, true, 4, "gridstride U2 minb8 grid x4");
    OS(1, 8, "oneshot U1 minb8");
    OS(2, 1, "oneshot U2");
    OS(2, 8, "oneshot U2 minb8");
    OS(4, 1, "oneshot U4");
    OS(4, 6, "oneshot U4 minb6");
    OS(8, 1, "oneshot U8");
    return 0;
}
