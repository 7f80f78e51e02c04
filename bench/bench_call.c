/* Call overhead of the GPU executor: a cached saxpy called through gpu_call on device
   arrays in a loop, against a bare launch loop of an equivalent hand-written kernel
   (through cuk_launch, and straight through the driver's cuLaunchKernel), in one run.
   Usage: bench_call [n=4096] [iters=20000]. Prints microseconds per call. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/exec.h"

static const char *prog_src =
    "fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] {\n"
    "    return a * x + y;\n"
    "}\n";

/* The same work, written by hand: one grid-stride loop, parameters by value. */
static const char *bare_src =
    "extern \"C\" __global__ void saxpy_bare(float a, const float *x, const float *y, float *z, long long n) {\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x)\n"
    "        z[i] = a * x[i] + y[i];\n"
    "}\n";

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

#define CHECK(c, what)                                                                  \
    do {                                                                                \
        if (!(c)) {                                                                     \
            fprintf(stderr, "bench_call: %s failed: %s\n", what, cuk_last_error());    \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

/* The driver's own launch, for the barest loop (types as in cuda.h). */
typedef int (*PFN_launch)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void *stream, void **params, void **extra);
typedef int (*PFN_modload)(void **mod, const void *image);
typedef int (*PFN_getfn)(void **f, void *mod, const char *name);
typedef int (*PFN_sync)(void);

int main(int argc, char **argv) {
    long long n = argc > 1 ? atoll(argv[1]) : 4096;
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    CHECK(cuk_init() == CUK_OK, "cuk_init");
    cuk_device_props props;
    CHECK(cuk_device_props_get(0, &props) == CUK_OK, "cuk_device_props_get");

    Arena a;
    arena_init(&a);
    Diag d;
    diag_init(&d, stderr);
    Compiled c;
    if (!pipeline_text(&c, &a, &d, "bench_call.cuk", prog_src, STAGE_CUDA)) return 1;
    Fn *fn = program_find(c.prog, "saxpy");
    RtErr err = {0};
    GpuSession *s = gpu_session_new(&c, NULL, &err);
    if (!s) {
        fprintf(stderr, "bench_call: %s\n", err.msg);
        return 1;
    }

    size_t bytes = (size_t)n * 4;
    float *hx = malloc(bytes), *hy = malloc(bytes), *hz = malloc(bytes);
    for (long long i = 0; i < n; i++) hx[i] = (float)i, hy[i] = 1.0f;
    cuk_devptr x, y, z;
    CHECK(cuk_mem_alloc(&x, bytes) == CUK_OK && cuk_mem_alloc(&y, bytes) == CUK_OK &&
              cuk_mem_alloc(&z, bytes) == CUK_OK,
          "cuk_mem_alloc");
    CHECK(cuk_memcpy_htod(x, hx, bytes) == CUK_OK && cuk_memcpy_htod(y, hy, bytes) == CUK_OK, "upload");

    GpuVal args[3] = {{.dt = DT_F32, .rank = 0, .s.f = 2.0},
                      {.dt = DT_F32, .rank = 1, .shape = {n}, .p = x, .borrowed = true},
                      {.dt = DT_F32, .rank = 1, .shape = {n}, .p = y, .borrowed = true}};
    GpuVal r;
    /* warm up: compiles (or loads from the cache) and fills the pool */
    for (int i = 0; i < 50; i++) {
        if (!gpu_call(s, fn, args, &r, stdout, &err)) {
            fprintf(stderr, "bench_call: gpu_call: %s\n", err.msg);
            return 1;
        }
        if (i < 49) cuk_mem_free(r.p);
    }
    CHECK(cuk_memcpy_dtoh(hz, r.p, bytes) == CUK_OK, "download");
    cuk_mem_free(r.p);
    for (long long i = 0; i < n; i++)
        if (hz[i] != 2.0f * (float)i + 1.0f) {
            fprintf(stderr, "bench_call: wrong result at %lld: %g\n", i, (double)hz[i]);
            return 1;
        }

    /* gpu_call, result freed each time (the pool hands the block back next call) */
    CHECK(cuk_synchronize() == CUK_OK, "sync");
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
        gpu_call(s, fn, args, &r, stdout, &err);
        cuk_mem_free(r.p);
    }
    CHECK(cuk_synchronize() == CUK_OK, "sync");
    double t_call = (now_us() - t0) / iters;

    /* host time alone: few enough calls that the driver's launch queue never fills */
    enum { FEW = 256 };
    CHECK(cuk_synchronize() == CUK_OK, "sync");
    t0 = now_us();
    for (int i = 0; i < FEW; i++) {
        gpu_call(s, fn, args, &r, stdout, &err);
        cuk_mem_free(r.p);
    }
    double h_call = (now_us() - t0) / FEW;
    CHECK(cuk_synchronize() == CUK_OK, "sync");

    /* the very kernel gpu_call launches (same module, same parameter words), bare */
    double t_same = -1, h_same = -1;
    {
        const Plan *pl = pipeline_plan(&c, fn);
        cuk_module *em;
        cuk_function *ef;
        cuk_compile_opts eo = {0};
        eo.program_name = "saxpy.cu";
        if (pl && pl->nkernels == 1 && cuk_module_compile(&em, pipeline_cuda(&c, fn), &eo) == CUK_OK &&
            cuk_module_function(em, pl->kernels[0]->name, &ef) == CUK_OK) {
            const Kernel *k = pl->kernels[0];
            long long w[256] = {0};
            double av2 = 2.0;
            for (int i = 0; i < k->nparams && i < 256; i++) {
                const KParam *kp = &k->params[i];
                const Val *v = kp->v;
                while (v && v->op == OP_CHECKDIM) v = v->args[0];
                int slot = v && v->op == OP_SLOT ? v->slot : -1;
                switch (kp->kind) {
                case KP_N:
                case KP_SHAPE: w[i] = n; break;
                case KP_FLAT:
                case KP_BSTRIDE: w[i] = 1; break;
                case KP_IN: w[i] = (long long)(slot == 1 ? x : y); break;
                case KP_OUT: w[i] = (long long)z; break;
                case KP_SCALAR: memcpy(&w[i], &av2, 8); break;
                default: break;
                }
            }
            void *ep[1] = {w};
            cuk_dim3 eg = {0, 1, 1}, eb = {(unsigned)k->block, 1, 1};
            for (int i = 0; i < 50; i++) CHECK(cuk_launch(ef, eg, eb, 0, NULL, ep) == CUK_OK, "launch");
            CHECK(cuk_memcpy_dtoh(hz, z, bytes) == CUK_OK, "download");
            bool same = true;
            for (long long i = 0; i < n; i++) same = same && hz[i] == 2.0f * (float)i + 1.0f;
            if (same) {
                t0 = now_us();
                for (int i = 0; i < iters; i++) cuk_launch(ef, eg, eb, 0, NULL, ep);
                CHECK(cuk_synchronize() == CUK_OK, "sync");
                t_same = (now_us() - t0) / iters;
                t0 = now_us();
                for (int i = 0; i < FEW; i++) cuk_launch(ef, eg, eb, 0, NULL, ep);
                h_same = (now_us() - t0) / FEW;
                CHECK(cuk_synchronize() == CUK_OK, "sync");
            } else {
                fprintf(stderr, "bench_call: could not drive the emitted kernel by hand (parameter layout)\n");
            }
        }
    }

    /* bare: cuk_launch of the hand-written kernel, same grid rule as the executor's maps */
    cuk_module *m;
    cuk_function *bf;
    cuk_compile_opts o = {0};
    CHECK(cuk_module_compile(&m, bare_src, &o) == CUK_OK, "compile");
    CHECK(cuk_module_function(m, "saxpy_bare", &bf) == CUK_OK, "function");
    float av = 2.0f;
    void *kp[5] = {&av, &x, &y, &z, &n};
    cuk_dim3 g = {0, 1, 1}, b = {256, 1, 1};
    for (int i = 0; i < 50; i++) CHECK(cuk_launch(bf, g, b, 0, NULL, kp) == CUK_OK, "launch");
    CHECK(cuk_synchronize() == CUK_OK, "sync");
    t0 = now_us();
    for (int i = 0; i < iters; i++) cuk_launch(bf, g, b, 0, NULL, kp);
    CHECK(cuk_synchronize() == CUK_OK, "sync");
    double t_cuk = (now_us() - t0) / iters;

    /* barest: the driver's cuLaunchKernel on a module loaded here, fixed grid */
    double t_drv = -1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    PFN_launch launch = lib ? (PFN_launch)dlsym(lib, "cuLaunchKernel") : NULL;
    PFN_modload modload = lib ? (PFN_modload)dlsym(lib, "cuModuleLoadData") : NULL;
    PFN_getfn getfn = lib ? (PFN_getfn)dlsym(lib, "cuModuleGetFunction") : NULL;
    cuk_image *im = NULL;
    char arch[16];
    cuk_image_kind kind;
    cuk_arch_for(props.cc_major, props.cc_minor, arch, sizeof arch, &kind);
    cuk_compile_opts co = {.arch = arch, .kind = kind};
    if (launch && modload && getfn && cuk_compile(bare_src, &co, &im) == CUK_OK) {
        const void *data;
        size_t size;
        void *mod = NULL, *f = NULL;
        cuk_image_data(im, &data, &size);
        if (modload(&mod, data) == 0 && getfn(&f, mod, "saxpy_bare") == 0) {
            cuk_function_info fi;
            cuk_function_info_get(bf, &fi);
            unsigned grid = (unsigned)(fi.blocks_per_sm > 0 ? fi.blocks_per_sm : 1) * (unsigned)props.sm_count;
            for (int i = 0; i < 50; i++) launch(f, grid, 1, 1, 256, 1, 1, 0, NULL, kp, NULL);
            CHECK(cuk_synchronize() == CUK_OK, "sync");
            t0 = now_us();
            for (int i = 0; i < iters; i++) launch(f, grid, 1, 1, 256, 1, 1, 0, NULL, kp, NULL);
            CHECK(cuk_synchronize() == CUK_OK, "sync");
            t_drv = (now_us() - t0) / iters;
        }
    }
    cuk_image_free(im);

    printf("device: %s (%s), n = %lld f32, %d iterations\n", props.name, props.arch, n, iters);
    printf("gpu_call (cached saxpy, device arrays, result alloc+free): %.2f us/call\n", t_call);
    printf("  host time alone (%d calls, queue not full):              %.2f us/call\n", FEW, h_call);
    if (t_same > 0)
        printf("bare cuk_launch loop of the same emitted kernel:           %.2f us/launch (host alone %.2f)\n",
               t_same, h_same);
    printf("bare cuk_launch loop (hand-written saxpy):                 %.2f us/launch\n", t_cuk);
    if (t_drv > 0) printf("bare cuLaunchKernel loop (driver, module loaded here):     %.2f us/launch\n", t_drv);
    double base = t_drv > 0 ? t_drv : t_cuk;
    printf("gpu_call / bare driver loop: %.3f (target <= 1.15)\n", t_call / base);
    if (t_same > 0) printf("gpu_call / same kernel bare: %.3f\n", t_call / t_same);

    cuk_mem_free(x);
    cuk_mem_free(y);
    cuk_mem_free(z);
    free(hx), free(hy), free(hz);
    gpu_session_free(s);
    arena_free(&a);
    return 0;
}
