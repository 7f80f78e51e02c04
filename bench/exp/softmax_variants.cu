// Row softmax design experiments (issue 4): 16384 x 16384 f32, rows in registers vs an
// L2 re-read, exp once vs twice, block sizes. Checked against a float64 host reference.
// nvcc -O3 -arch=sm_90 -o softmax_variants softmax_variants.cu && ./softmax_variants
#include <cmath>
#include "exp.cuh"

template <int NT> __device__ __forceinline__ float block_max(float v, float *sh) {
    for (int d = 16; d; d >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL, v, d));
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    if (l == 0) sh[w] = v;
    __syncthreads();
    float r = sh[0];
#pragma unroll
    for (int i = 1; i < NT / 32; i++) r = fmaxf(r, sh[i]);
    __syncthreads();
    return r;
}
template <int NT> __device__ __forceinline__ float block_sum(float v, float *sh) {
    for (int d = 16; d; d >>= 1) v += __shfl_xor_sync(FULL, v, d);
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    if (l == 0) sh[w] = v;
    __syncthreads();
    float r = sh[0];
#pragma unroll
    for (int i = 1; i < NT / 32; i++) r += sh[i];
    __syncthreads();
    return r;
}

// Rows in registers: NT threads, R float4 per thread (row = NT*R*4), EXP2: exp once
template <int NT, int R, int MINB, bool ONCE>
__global__ void __launch_bounds__(NT, MINB) sm_reg(const float4 *x, float4 *o, int rows) {
    __shared__ float sh[NT / 32];
    const int row = blockIdx.x;
    const float4 *xr = x + (long long)row * NT * R;
    float4 *orow = o + (long long)row * NT * R;
    float4 v[R];
#pragma unroll
    for (int r = 0; r < R; r++) v[r] = __ldcs(xr + r * NT + threadIdx.x);
    float m = -INFINITY;
#pragma unroll
    for (int r = 0; r < R; r++) m = fmaxf(m, fmaxf(fmaxf(v[r].x, v[r].y), fmaxf(v[r].z, v[r].w)));
    m = block_max<NT>(m, sh);
    float s = 0;
#pragma unroll
    for (int r = 0; r < R; r++) {
        float4 e = make_float4(expf(v[r].x - m), expf(v[r].y - m), expf(v[r].z - m), expf(v[r].w - m));
        s += (e.x + e.y) + (e.z + e.w);
        if (ONCE) v[r] = e;
    }
    s = block_sum<NT>(s, sh);
    const float q = 1.0f / s;
#pragma unroll
    for (int r = 0; r < R; r++) {
        float4 e = ONCE ? v[r] : make_float4(expf(v[r].x - m), expf(v[r].y - m), expf(v[r].z - m), expf(v[r].w - m));
        __stcs(orow + r * NT + threadIdx.x, make_float4(e.x * q, e.y * q, e.z * q, e.w * q));
    }
}

// Online (max, sum) pass over the row, then a second pass that re-reads it (from L2).
template <int NT, int MINB>
__global__ void __launch_bounds__(NT, MINB) sm_online(const float4 *x, float4 *o, int rows, int len4) {
    __shared__ float sh[NT / 32];
    const int row = blockIdx.x;
    const float4 *xr = x + (long long)row * len4;
    float4 *orow = o + (long long)row * len4;
    float m = -INFINITY, s = 0;
    for (int c = threadIdx.x; c < len4; c += NT * 2) {
        float4 a = xr[c], b = c + NT < len4 ? xr[c + NT] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        float mm = fmaxf(fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)), fmaxf(fmaxf(b.x, b.y), fmaxf(b.z, b.w)));
        float nm = fmaxf(m, mm);
        s = s * expf(m - nm) + expf(a.x - nm) + expf(a.y - nm) + expf(a.z - nm) + expf(a.w - nm) +
            expf(b.x - nm) + expf(b.y - nm) + expf(b.z - nm) + expf(b.w - nm);
        m = nm;
    }
    const float bm = block_max<NT>(m, sh);
    s = block_sum<NT>(m == -INFINITY ? 0.f : s * expf(m - bm), sh);
    const float q = 1.0f / s;
    for (int c = threadIdx.x; c < len4; c += NT) {
        float4 a = __ldcs(xr + c);
        __stcs(orow + c, make_float4(expf(a.x - bm) * q, expf(a.y - bm) * q, expf(a.z - bm) * q, expf(a.w - bm) * q));
    }
}

int main() {
    const int rows = 16384, cols = 16384;
    const long long n = (long long)rows * cols;
    float *x, *o;
    CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&o, n * 4));
    std::vector<float> hx(n);
    unsigned s = 7;
    for (long long i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; hx[i] = ((s >> 8) * (1.0f / 16777216.0f)) * 8 - 4; }
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    auto timeit = [](auto launch) { return median_ms(launch); };
    float cms = timeit([&] { CK(cudaMemcpyAsync(o, x, n * 4, cudaMemcpyDeviceToDevice)); });
    double copy = 2.0 * n * 4 / (cms * 1e6);
    printf("== softmax %d x %d, copy %.0f GB/s\n", rows, cols, copy);
    auto check = [&]() {
        std::vector<float> h(n); CK(cudaMemcpy(h.data(), o, n * 4, cudaMemcpyDeviceToHost));
        double md = 0;
        for (int r = 0; r < rows; r += 997) {
            const float *xr = &hx[(long long)r * cols];
            double m = -1e30, sum = 0;
            for (int c = 0; c < cols; c++) m = std::max(m, (double)xr[c]);
            for (int c = 0; c < cols; c++) sum += exp(xr[c] - m);
            for (int c = 0; c < cols; c++) md = std::max(md, fabs(exp(xr[c] - m) / sum - h[(long long)r * cols + c]) / (exp(xr[c] - m) / sum));
        }
        CK(cudaMemset(o, 0, n * 4));
        return md;
    };
    auto rep = [&](const char *name, const void *k, int nt, float ms) {
        cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, k));
        int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, nt, 0));
        double gbs = 2.0 * n * 4 / (ms * 1e6);
        double err = check();
        printf("%-34s regs %3d spill %4zu occ %d  %7.3f ms %6.0f GB/s %5.1f%% maxrel %.1e %s\n", name, fa.numRegs, fa.localSizeBytes, occ, ms, gbs, 100 * gbs / copy, err, err < 1e-5 ? "ok" : "WRONG");
    };
#define REG(NT, R, M, ONCE, NAME) { auto k = sm_reg<NT, R, M, ONCE>; float ms = timeit([&] { k<<<rows, NT>>>((const float4 *)x, (float4 *)o, rows); }); rep(NAME, (const void *)k, NT, ms); }
#define ONL(NT, M, NAME) { auto k = sm_online<NT, M>; float ms = timeit([&] { k<<<rows, NT>>>((const float4 *)x, (float4 *)o, rows, cols / 4); }); rep(NAME, (const void *)k, NT, ms); }
    REG(512, 8, 2, false, "reg 512x8v minb2 exp twice (emitted)");
    REG(512, 8, 2, true, "reg 512x8v minb2 exp once");
    REG(512, 8, 1, false, "reg 512x8v minb1 exp twice");
    REG(512, 8, 1, true, "reg 512x8v minb1 exp once");
    REG(1024, 4, 1, true, "reg 1024x4v minb1 exp once");
    REG(1024, 4, 2, true, "reg 1024x4v minb2 exp once");
    REG(256, 16, 1, true, "reg 256x16v exp once");
    REG(256, 16, 2, true, "reg 256x16v minb2 exp once");
    REG(256, 16, 3, true, "reg 256x16v minb3 exp once");
    ONL(256, 4, "online 256 minb4");
    ONL(256, 8, "online 256 minb8");
    ONL(512, 2, "online 512 minb2");
    ONL(512, 4, "online 512 minb4");
    ONL(1024, 2, "online 1024 minb2");
    return 0;
}
