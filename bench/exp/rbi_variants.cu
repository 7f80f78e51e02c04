// reduce_by_index design experiment (docs/performance.md): 2^26 f32 values added into
// 2^20 bins at uniform random i64 indices, as the part-2 benchmark does. What bounds it:
// the loads, or the rate of global atomics into an L2-resident array?
//   nvcc -O3 -arch=sm_90 -o /tmp/rbi bench/exp/rbi_variants.cu && /tmp/rbi
#include "exp.cuh"
#include <cstdint>

__host__ __device__ __forceinline__ unsigned hash(unsigned x) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}
// the kernel cuk emits today, in essence: grid-stride, i64 index and f32 value loads
template <class I> __global__ void base(const I *idx, const float *v, float *out, long long n, long long m) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        long long t = idx[i];
        if (t >= 0 && t < m) atomicAdd(&out[t], v[i]);
    }
}
// unrolled: 4 elements' loads in flight per thread before the atomics
__global__ void unroll4(const long long *idx, const float *v, float *out, long long n, long long m) {
    long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
    long long st = (long long)gridDim.x * blockDim.x * 4;
    for (long long i = i0; i + 3 < n; i += st) {
        longlong2 a = *(const longlong2 *)(idx + i), b = *(const longlong2 *)(idx + i + 2);
        float4 x = *(const float4 *)(v + i);
        if ((unsigned long long)a.x < (unsigned long long)m) atomicAdd(&out[a.x], x.x);
        if ((unsigned long long)a.y < (unsigned long long)m) atomicAdd(&out[a.y], x.y);
        if ((unsigned long long)b.x < (unsigned long long)m) atomicAdd(&out[b.x], x.z);
        if ((unsigned long long)b.y < (unsigned long long)m) atomicAdd(&out[b.y], x.w);
    }
}
// no loads: the atomic rate alone
__global__ void pure(float *out, long long n, unsigned mask) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&out[hash((unsigned)i) & mask], 1.0f);
}
// no atomics: the loads alone (a plain store of something dependent, rarely taken)
__global__ void loads(const long long *idx, const float *v, float *out, long long n) {
    float s = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        s += v[i] * (float)idx[i];
    if (s == 12345.f) out[0] = s;
}

int main() {
    const long long n = 1ll << 26, m = 1ll << 20;
    long long *idx; int *idx32; float *v, *out;
    CK(cudaMalloc(&idx, n * 8)); CK(cudaMalloc(&idx32, n * 4)); CK(cudaMalloc(&v, n * 4)); CK(cudaMalloc(&out, m * 4 * 64));
    std::vector<long long> h(n); std::vector<int> h32(n); std::vector<float> hv(n);
    for (long long i = 0; i < n; i++) { h[i] = hash((unsigned)i * 2654435761u + 7) % m; h32[i] = (int)h[i]; hv[i] = 1.0f; }
    CK(cudaMemcpy(idx, h.data(), n * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(idx32, h32.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(v, hv.data(), n * 4, cudaMemcpyHostToDevice));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    auto gbs = [&](float ms, double bytes) { return bytes / ms / 1e6; };
    for (int g : {sms * 4, sms * 8, sms * 16, sms * 32}) {
        float t = median_ms([&] { cudaMemsetAsync(out, 0, m * 4); base<long long><<<g, 256>>>(idx, v, out, n, m); });
        float t0 = median_ms([&] { cudaMemsetAsync(out, 0, m * 4); });
        printf("base i64 grid %d: %.3f ms (memset %.3f) %.0f GB/s (12 B/value)\n", g, t - t0, t0, gbs(t - t0, 12.0 * n));
    }
    float t0 = median_ms([&] { cudaMemsetAsync(out, 0, m * 4); });
    float t = median_ms([&] { cudaMemsetAsync(out, 0, m * 4); base<int><<<sms * 16, 256>>>(idx32, v, out, n, m); });
    printf("base i32: %.3f ms, %.1f G atomics/s\n", t - t0, n / ((t - t0) * 1e6));
    t = median_ms([&] { cudaMemsetAsync(out, 0, m * 4); unroll4<<<sms * 8, 256>>>(idx, v, out, n, m); });
    printf("unroll4 i64: %.3f ms %.0f GB/s\n", t - t0, gbs(t - t0, 12.0 * n));
    for (long long mm : {1ll << 14, 1ll << 17, 1ll << 20, 1ll << 22, 1ll << 24}) {
        t = median_ms([&] { pure<<<sms * 16, 256>>>(out, n, (unsigned)mm - 1); });
        printf("pure atomics into 2^%d bins: %.3f ms, %.1f G atomics/s (= %.0f GB/s at 12 B/value)\n", __builtin_ctzll(mm), t,
               n / (t * 1e6), gbs(t, 12.0 * n));
    }
    t = median_ms([&] { loads<<<sms * 16, 256>>>(idx, v, out, n); });
    printf("loads only: %.3f ms %.0f GB/s\n", t, gbs(t, 12.0 * n));
    return 0;
}
