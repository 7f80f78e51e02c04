// 5-point stencil over pad(x, 1) design experiment (docs/performance.md): 16384 x 16384
// f32, out[r][c] = 0.25 * (x[r-1][c] + x[r+1][c] + x[r][c-1] + x[r][c+1]), zero outside.
// How should a map kernel read a leaf through an index chain whose last-axis index is
// the output's column plus a constant? Four outputs a thread (one 16-byte store):
//   scalar  - each shifted read is four scalar loads (what the emitter does today, minus
//             its per-element index arithmetic)
//   pair    - each shifted read is the two aligned 16-byte vectors that cover it, and a
//             register select by the shift modulo 4 (the second vector is the next
//             thread's first: an L1 hit)
//   reuse   - the row's centre vector serves the left and right reads, two scalar loads
//             for the ends (the best a stencil-aware kernel can do)
// and one output a thread (lane-contiguous, five scalar loads) for comparison.
//   nvcc -O3 -arch=sm_90 -o /tmp/st bench/exp/stencil_variants.cu && /tmp/st
#include "exp.cuh"
#include <cstdint>

__device__ __forceinline__ float ld(const float *x, int r, int c, int R, int C) {
    return (unsigned)r < (unsigned)R && (unsigned)c < (unsigned)C ? x[(long long)r * C + c] : 0.0f;
}
__device__ __forceinline__ float4 ld4(const float *x, int r, int c, int R, int C) {  // c % 4 == 0
    if ((unsigned)r < (unsigned)R && c >= 0 && c + 3 < C) return *(const float4 *)(x + (long long)r * C + c);
    return make_float4(ld(x, r, c, R, C), ld(x, r, c + 1, R, C), ld(x, r, c + 2, R, C), ld(x, r, c + 3, R, C));
}
// the four values x[r][c + s .. c + s + 3] for c % 4 == 0 and a shift s
__device__ __forceinline__ float4 shifted_pair(const float *x, int r, int c, int s, int R, int C) {
    const int a = c + s, base = a & ~3, m = a & 3;
    const float4 p = ld4(x, r, base, R, C);
    if (m == 0) return p;
    const float4 q = ld4(x, r, base + 4, R, C);
    if (m == 1) return make_float4(p.y, p.z, p.w, q.x);
    if (m == 2) return make_float4(p.z, p.w, q.x, q.y);
    return make_float4(p.w, q.x, q.y, q.z);
}
__device__ __forceinline__ float4 shifted_scalar(const float *x, int r, int c, int s, int R, int C) {
    return make_float4(ld(x, r, c + s, R, C), ld(x, r, c + s + 1, R, C), ld(x, r, c + s + 2, R, C),
                       ld(x, r, c + s + 3, R, C));
}
__device__ __forceinline__ float4 comb(float4 u, float4 d, float4 l, float4 rr) {
    return make_float4(0.25f * (u.x + d.x + l.x + rr.x), 0.25f * (u.y + d.y + l.y + rr.y),
                       0.25f * (u.z + d.z + l.z + rr.z), 0.25f * (u.w + d.w + l.w + rr.w));
}

template <int MODE, int U>
__global__ void __launch_bounds__(256) st4(const float *x, float *out, int R, int C) {
    const long long nvec = (long long)R * C / 4;
    const long long q0 = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
    float4 res[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const long long q = q0 + (long long)u * blockDim.x;
        if (q >= nvec) break;
        const int r = (int)(q * 4 / C), c = (int)(q * 4 - (long long)r * C);
        float4 up = ld4(x, r - 1, c, R, C), dn = ld4(x, r + 1, c, R, C), l, rt;
        if (MODE == 0) {
            l = shifted_scalar(x, r, c, -1, R, C);
            rt = shifted_scalar(x, r, c, 1, R, C);
        } else if (MODE == 1) {
            l = shifted_pair(x, r, c, -1, R, C);
            rt = shifted_pair(x, r, c, 1, R, C);
        } else {
            const float4 m = ld4(x, r, c, R, C);
            const float a = ld(x, r, c - 1, R, C), b = ld(x, r, c + 4, R, C);
            l = make_float4(a, m.x, m.y, m.z);
            rt = make_float4(m.y, m.z, m.w, b);
        }
        res[u] = comb(up, dn, l, rt);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const long long q = q0 + (long long)u * blockDim.x;
        if (q >= nvec) break;
        *(float4 *)(out + q * 4) = res[u];
    }
}

__global__ void __launch_bounds__(256) st1(const float *x, float *out, int R, int C) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)R * C) return;
    const int r = (int)(i / C), c = (int)(i - (long long)r * C);
    out[i] = 0.25f * (ld(x, r - 1, c, R, C) + ld(x, r + 1, c, R, C) + ld(x, r, c - 1, R, C) + ld(x, r, c + 1, R, C));
}

__global__ void copy4(const float4 *x, float4 *y, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) y[i] = x[i];
}

int main() {
    const int R = 16384, C = 16384;
    const long long n = (long long)R * C;
    float *x, *out, *ref;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&out, n * 4));
    CK(cudaMalloc(&ref, n * 4));
    const std::vector<float> hx = uniform_floats(n);
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    const double bytes = 8.0 * n;
    float t = median_ms([&] { copy4<<<(unsigned)((n / 4 + 255) / 256), 256>>>((const float4 *)x, (float4 *)ref, n / 4); });
    const double copy = bytes / t / 1e6;
    printf("copy: %.3f ms %.0f GB/s\n", t, copy);
    t = median_ms([&] { st1<<<(unsigned)((n + 255) / 256), 256>>>(x, ref, R, C); });
    printf("%-30s %.3f ms %6.0f GB/s %5.1f%% of copy\n", "one output a thread", t, bytes / t / 1e6, 100 * bytes / t / 1e6 / copy);
    std::vector<float> want(n), got(n);
    CK(cudaMemcpy(want.data(), ref, n * 4, cudaMemcpyDeviceToHost));
    auto check = [&](const char *name, int u, auto launch) {
        CK(cudaMemset(out, 0xff, n * 4));
        float tt = median_ms(launch);
        CK(cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost));
        bool ok = memcmp(got.data(), want.data(), n * 4) == 0;
        printf("%-22s U=%d   %.3f ms %6.0f GB/s %5.1f%% of copy %s\n", name, u, tt, bytes / tt / 1e6,
               100 * bytes / tt / 1e6 / copy, ok ? "ok" : "WRONG");
    };
    const long long nvec = n / 4;
#define RUN(MODE, U, NAME)                                                                                 \
    check(NAME, U, [&] { st4<MODE, U><<<(unsigned)((nvec + 256 * U - 1) / (256 * U)), 256>>>(x, out, R, C); });
    RUN(0, 1, "scalar") RUN(0, 2, "scalar") RUN(0, 4, "scalar")
    RUN(1, 1, "pair") RUN(1, 2, "pair") RUN(1, 4, "pair")
    RUN(2, 1, "reuse") RUN(2, 2, "reuse") RUN(2, 4, "reuse")
    return 0;
}
