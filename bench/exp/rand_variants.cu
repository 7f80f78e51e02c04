// Philox rand design experiments (issue 13: rand at >= 95% of the write bandwidth):
// 2^28 f32 uniforms, Philox4x32-10 as kernels/philox.h computes it, by work per thread,
// conversion and launch shape; against a plain write of the same bytes. The values of
// every variant that must equal kernels/philox.h's are checked against a host Philox.
// nvcc -O3 -arch=sm_90 -o rand_variants rand_variants.cu && ./rand_variants
#include <cstdint>
#include <cstring>
#include "exp.cuh"

struct U4 {
    uint32_t x[4];
};
template <int ROUNDS> __host__ __device__ __forceinline__ U4 philox(uint64_t ctr, uint64_t seed) {
    uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#pragma unroll
    for (int r = 0; r < ROUNDS; r++) {
#ifdef __CUDA_ARCH__
        uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
#else
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = p0 >> 32, lo0 = (uint32_t)p0, hi1 = p1 >> 32, lo1 = (uint32_t)p1;
#endif
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    U4 r = {{c0, c1, c2, c3}};
    return r;
}
__device__ __forceinline__ float4 conv(U4 r) {
    const float s = 1.0f / 16777216.0f;
    return make_float4((float)(r.x[0] >> 8) * s, (float)(r.x[1] >> 8) * s, (float)(r.x[2] >> 8) * s,
                       (float)(r.x[3] >> 8) * s);
}

// V vec4 a thread, one chunk a block (cuk's emitted shape: V = 2)
template <int V, int ROUNDS> __global__ void __launch_bounds__(256) chunk(float4 *o, long long nv, uint64_t seed) {
    const long long q0 = (long long)blockIdx.x * 256 * V + threadIdx.x;
#pragma unroll
    for (int u = 0; u < V; u++) {
        const long long q = q0 + u * 256;
        if (q < nv) o[q] = conv(philox<ROUNDS>(q, seed));
    }
}
// 32-bit counters: the vector index as an unsigned int where it fits
template <int V> __global__ void __launch_bounds__(256) chunk32(float4 *o, unsigned nv, uint64_t seed) {
    const unsigned q0 = blockIdx.x * 256u * V + threadIdx.x;
#pragma unroll
    for (int u = 0; u < V; u++) {
        const unsigned q = q0 + u * 256u;
        if (q < nv) o[q] = conv(philox<10>(q, seed));
    }
}
// grid-stride over a grid of blocks_per_sm x SMs
__global__ void __launch_bounds__(256) stride(float4 *o, long long nv, uint64_t seed) {
    for (long long q = (long long)blockIdx.x * 256 + threadIdx.x; q < nv; q += (long long)gridDim.x * 256)
        o[q] = conv(philox<10>(q, seed));
}
// raw words (no conversion)
__global__ void __launch_bounds__(256) raw(uint4 *o, long long nv, uint64_t seed) {
    const long long q0 = (long long)blockIdx.x * 512 + threadIdx.x;
#pragma unroll
    for (int u = 0; u < 2; u++) {
        const long long q = q0 + u * 256;
        if (q < nv) {
            U4 r = philox<10>(q, seed);
            o[q] = make_uint4(r.x[0], r.x[1], r.x[2], r.x[3]);
        }
    }
}
// streaming stores (st.global.cs)
__global__ void __launch_bounds__(256) chunk_cs(float4 *o, long long nv, uint64_t seed) {
    const long long q0 = (long long)blockIdx.x * 512 + threadIdx.x;
#pragma unroll
    for (int u = 0; u < 2; u++) {
        const long long q = q0 + u * 256;
        if (q < nv) __stcs(o + q, conv(philox<10>(q, seed)));
    }
}
// the write alone, same shape
__global__ void __launch_bounds__(256) fill(float4 *o, long long nv) {
    const long long q0 = (long long)blockIdx.x * 512 + threadIdx.x;
#pragma unroll
    for (int u = 0; u < 2; u++) {
        const long long q = q0 + u * 256;
        if (q < nv) o[q] = make_float4(1.f, 1.f, 1.f, 1.f);
    }
}

int main() {
    const long long n = 1ll << 28, nv = n / 4;
    float *o;
    CK(cudaMalloc(&o, n * 4));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const uint64_t seed = 1;
    std::vector<float> h(n);
    auto check = [&](const char *name) {
        CK(cudaMemcpy(h.data(), o, n * 4, cudaMemcpyDeviceToHost));
        for (long long q : {0ll, 1ll, 12345ll, nv / 2 + 7, nv - 1}) {
            U4 r = philox<10>(q, seed);
            for (int e = 0; e < 4; e++) {
                float want = (float)(r.x[e] >> 8) * (1.0f / 16777216.0f);
                if (h[q * 4 + e] != want) {
                    printf("%s: WRONG at %lld: %g want %g\n", name, q * 4 + e, h[q * 4 + e], want);
                    return;
                }
            }
        }
    };
    auto rep = [&](const char *name, float ms) {
        printf("%-40s %8.4f ms %7.0f GB/s\n", name, ms, n * 4 / ms / 1e6);
    };
    float4 *o4 = (float4 *)o;
    rep("fill (write only), 2 vec4/thread", median_ms([&] { fill<<<(nv + 511) / 512, 256>>>(o4, nv); }));
    CK(cudaMemset(o, 0, n * 4));
    rep("philox10 1 vec4/thread", median_ms([&] { chunk<1, 10><<<(nv + 255) / 256, 256>>>(o4, nv, seed); }));
    check("1 vec4");
    rep("philox10 2 vec4/thread (cuk's shape)", median_ms([&] { chunk<2, 10><<<(nv + 511) / 512, 256>>>(o4, nv, seed); }));
    check("2 vec4");
    rep("philox10 4 vec4/thread", median_ms([&] { chunk<4, 10><<<(nv + 1023) / 1024, 256>>>(o4, nv, seed); }));
    check("4 vec4");
    rep("philox10 2 vec4/thread, 32-bit counter", median_ms([&] { chunk32<2><<<(nv + 511) / 512, 256>>>(o4, (unsigned)nv, seed); }));
    check("32-bit");
    rep("philox10 2 vec4/thread, st.cs", median_ms([&] { chunk_cs<<<(nv + 511) / 512, 256>>>(o4, nv, seed); }));
    check("st.cs");
    for (int b : {4, 8, 16})
        rep(b == 4 ? "philox10 grid-stride 4 blocks/SM" : b == 8 ? "philox10 grid-stride 8 blocks/SM" : "philox10 grid-stride 16 blocks/SM",
            median_ms([&] { stride<<<sms * b, 256>>>(o4, nv, seed); }));
    check("stride");
    rep("philox10 raw words", median_ms([&] { raw<<<(nv + 511) / 512, 256>>>((uint4 *)o, nv, seed); }));
    rep("philox7 2 vec4/thread (not cuk's stream)", median_ms([&] { chunk<2, 7><<<(nv + 511) / 512, 256>>>(o4, nv, seed); }));
    rep("philox0 2 vec4/thread (counter only)", median_ms([&] { chunk<2, 0><<<(nv + 511) / 512, 256>>>(o4, nv, seed); }));
    CK(cudaFree(o));
    return 0;
}
