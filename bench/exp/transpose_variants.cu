// Transpose design experiments (issue 13): out[c][r] = x[r][c], f32, 16384 x 16384 and
// 4096 x 65536: tile size, threads a tile, and the order of the tiles (row order, or
// groups of G tile rows walked down each column of tiles). Checked against the host.
// nvcc -O3 -arch=sm_90 -o transpose_variants transpose_variants.cu && ./transpose_variants
#include "exp.cuh"

// TILE x TILE tiles, NT threads, tiles in groups of G tile rows (G = 0: row order)
template <int TILE, int NT, int G>
__global__ void __launch_bounds__(NT) tr(const float *__restrict__ x, float *__restrict__ o, unsigned R, unsigned C) {
    __shared__ float t[TILE][TILE + 1];
    constexpr int TX = TILE, TY = NT / TILE, NY = TILE / TY;
    const unsigned tr_ = (R + TILE - 1) / TILE, tc_ = (C + TILE - 1) / TILE;
    const unsigned tile = blockIdx.x;
    unsigned r0, c0;  // r0: rows of the output (columns of x); c0: columns of the output
    if constexpr (G == 0) {
        r0 = tile / tc_ * TILE, c0 = tile % tc_ * TILE;
    } else {
        const unsigned g0 = tile / (G * tc_) * G, gw = tile % (G * tc_), gh = tr_ - g0 < G ? tr_ - g0 : G;
        r0 = (g0 + gw % gh) * TILE, c0 = gw / gh * TILE;
    }
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    float v[NY];
#pragma unroll
    for (int u = 0; u < NY; u++) {
        const unsigned xr = c0 + ty + u * TY, xc = r0 + tx;
        v[u] = xr < C && xc < R ? x[(size_t)xr * R + xc] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < NY; u++) t[ty + u * TY][tx] = v[u];
    __syncthreads();
#pragma unroll
    for (int u = 0; u < NY; u++) {
        const unsigned r = r0 + ty + u * TY, c = c0 + tx;
        if (r < R && c < C) o[(size_t)r * C + c] = t[tx][ty + u * TY];
    }
}

__global__ void copy4(const float4 *x, float4 *o, size_t n4) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
        o[i] = x[i];
}

template <int TILE, int NT, int G> void run(const char *name, const float *x, float *o, unsigned R, unsigned C,
                                             const std::vector<float> &h, float copy_ms) {
    // x is C rows of R (x[c][r]); out is R rows of C
    unsigned tiles = ((R + TILE - 1) / TILE) * ((C + TILE - 1) / TILE);
    auto go = [&] { tr<TILE, NT, G><<<tiles, NT>>>(x, o, R, C); };
    CK(cudaMemset(o, 0, sizeof(float) * R * C));
    go();
    CK(cudaDeviceSynchronize());
    std::vector<float> g((size_t)R * C);
    CK(cudaMemcpy(g.data(), o, g.size() * 4, cudaMemcpyDeviceToHost));
    long bad = 0;
    for (size_t r = 0; r < R; r += 97)
        for (size_t c = 0; c < C; c += 89)
            bad += g[r * C + c] != h[c * R + r];
    float ms = median_ms(go);
    printf("%-34s %ux%u  %.4f ms  %6.0f GB/s  %5.1f%% of copy  %s\n", name, C, R, ms, 8.0 * R * C / ms / 1e6,
           100.0 * copy_ms / ms, bad ? "WRONG" : "ok");
}

int main() {
    const size_t n = 1ull << 28;
    std::vector<float> h = uniform_floats(n);
    float *x, *o;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&o, n * 4));
    CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
    float copy_ms = median_ms([&] { copy4<<<132 * 16, 256>>>((const float4 *)x, (float4 *)o, n / 4); });
    printf("copy %.4f ms %.0f GB/s\n", copy_ms, 8.0 * n / copy_ms / 1e6);
    unsigned shapes[3][2] = {{16384, 16384}, {4096, 65536}, {65536, 4096}};
    for (auto &s : shapes) {
        unsigned C = s[0], R = s[1];
        run<32, 256, 0>("32x32 256thr row order", x, o, R, C, h, copy_ms);
        run<32, 256, 8>("32x32 256thr G8", x, o, R, C, h, copy_ms);
        run<32, 256, 32>("32x32 256thr G32", x, o, R, C, h, copy_ms);
        run<32, 256, 128>("32x32 256thr G128", x, o, R, C, h, copy_ms);
        run<32, 128, 32>("32x32 128thr G32", x, o, R, C, h, copy_ms);
        run<32, 512, 32>("32x32 512thr G32", x, o, R, C, h, copy_ms);
        run<64, 256, 16>("64x64 256thr G16", x, o, R, C, h, copy_ms);
        run<64, 512, 16>("64x64 512thr G16", x, o, R, C, h, copy_ms);
        run<64, 1024, 16>("64x64 1024thr G16", x, o, R, C, h, copy_ms);
    }
    return 0;
}
