// Shared by the design experiments in bench/exp/*.cu: error checks and the timing rule
// of the benchmarks (CUDA events, 3 warm-ups, median of 20).
#ifndef CUK_EXP_CUH
#define CUK_EXP_CUH
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_) {                                                                                 \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                   \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)
#define FULL 0xffffffffu

// Median milliseconds of launch() (which may queue several things), events around it.
template <class L> float median_ms(L launch) {
    static cudaEvent_t a, b;
    if (!a) {
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
    }
    std::vector<float> ms;
    for (int it = 0; it < 23; it++) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        if (it >= 3) ms.push_back(t);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}
// n uniform values in [0, 1) from a fixed xorshift stream (the same data every run).
inline std::vector<float> uniform_floats(long long n) {
    std::vector<float> h(n);
    unsigned long long s = 88172645463325252ull;
    for (long long i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = (float)((s >> 40) * (1.0 / 16777216.0));
    }
    return h;
}
#endif
