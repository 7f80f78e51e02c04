/* Runtime micro-benchmarks on a GPU: launch overhead (bare cuLaunchKernel vs cuk),
   compile paths (cold, disk hit, memory hit), pool vs driver allocation, copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h" /* the driver table, for the bare baselines */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die_if(cuk_status s, const char *what) {
    if (s) {
        fprintf(stderr, "FAIL %s: %s\n", what, cuk_last_error());
        exit(1);
    }
}

static void row(const char *what, double us, const char *note) {
    printf("| %-50s | %12.3f | %s\n", what, us, note ? note : "");
}

static const char *kernel_src =
    "extern \"C\" __global__ void empty(float *p, int n) { if (n < 0) p[0] = 1.0f; }\n";

/* Disk and memory cache hits of the compile paths. */
static void compile_paths(const cuk_compile_opts *io) {
    cuk_image *im;
    double t0;
    /* Disk hit: the image API has no memory layer, so each call reads the entry. */
    die_if(cuk_compile(kernel_src, io, &im), "image");
    cuk_image_free(im);
    int nd = 200;
    t0 = now();
    for (int i = 0; i < nd; i++) {
        die_if(cuk_compile(kernel_src, io, &im), "disk hit");
        cuk_image_free(im);
    }
    double disk = (now() - t0) / nd;
    t0 = now();
    for (int i = 0; i < nd; i++) {
        die_if(cuk_compile(kernel_src, io, &im), "disk hit");
        const void *d;
        size_t sz;
        cuk_image_data(im, &d, &sz);
        cuk_module *ml;
        die_if(cuk_module_load(&ml, d, sz), "load");
        cuk_module_unload(ml);
        cuk_image_free(im);
    }
    double diskload = (now() - t0) / nd;
    row("disk-cache hit (read + verify)", disk * 1e6, NULL);
    row("disk-cache hit + cuModuleLoadData", diskload * 1e6, NULL);

    int nm = 100000;
    t0 = now();
    for (int i = 0; i < nm; i++) {
        cuk_module *m2;
        die_if(cuk_module_compile(&m2, kernel_src, NULL), "mem hit");
    }
    double memhit = (now() - t0) / nm;
    row("memory-cache hit (cuk_module_compile)", memhit * 1e6, NULL);
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 100000;
    /* `bench_runtime ITERS launch`: the launch rows alone (bench/python_overhead.py runs
       it between its own measurements) */
    const bool launch_only = argc > 2 && strcmp(argv[2], "launch") == 0;
    char dir[] = "/tmp/cuk_bench.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("CUK_CACHE_DIR", dir, 1);

    die_if(cuk_device_select(-1), "device");
    cuk_device_props p;
    int cur;
    cuk_device_current(&cur);
    cuk_device_props_get(cur, &p);
    printf("device: %s (%s, %d SMs), driver %d, %d launches per loop\n\n", p.name, p.arch, p.sm_count,
           p.driver_version, iters);
    printf("| %-50s | %12s | %s\n", "operation", "us per op", "note");
    printf("|%s|%s|%s\n", "----------------------------------------------------", "--------------", "------");

    /* ---- compile paths ---- */
    double t0 = now();
    cuk_module *m;
    die_if(cuk_module_compile(&m, kernel_src, NULL), "compile");
    double cold = now() - t0;
    row("cold compile (NVRTC + write + load)", cold * 1e6, NULL);

    char arch[16];
    cuk_image_kind kind;
    die_if(cuk_arch_for(p.cc_major, p.cc_minor, arch, sizeof arch, &kind), "arch");
    cuk_compile_opts io = {.arch = arch, .kind = kind};
    cuk_image *im;
    if (!launch_only) compile_paths(&io);

    /* ---- launches ---- */
    cuk_function *f;
    die_if(cuk_module_function(m, "empty", &f), "function");
    CUfunction raw;
    CUmodule rawmod;
    {
        /* The baseline uses its own module so nothing of cuk's is on its path. */
        const void *d;
        size_t sz;
        die_if(cuk_compile(kernel_src, &io, &im), "image");
        cuk_image_data(im, &d, &sz);
        if (cu.cuModuleLoadDataEx(&rawmod, d, 0, NULL, NULL) ||
            cu.cuModuleGetFunction(&raw, rawmod, "empty")) {
            fprintf(stderr, "FAIL baseline module\n");
            return 1;
        }
        cuk_image_free(im);
    }
    cuk_devptr buf;
    die_if(cuk_mem_alloc(&buf, 4096), "alloc");
    int n = 1;
    void *args[] = {&buf, &n};
    cuk_dim3 g1 = {1, 1, 1}, b1 = {128, 1, 1};
    double best_bare = 1e9, best_cuk = 1e9, best_full = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        cu.cuCtxSynchronize();
        t0 = now();
        for (int i = 0; i < iters; i++) cu.cuLaunchKernel(raw, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL);
        cu.cuCtxSynchronize();
        double bare = (now() - t0) / iters;
        t0 = now();
        for (int i = 0; i < iters; i++) cuk_launch(f, g1, b1, 0, NULL, args);
        die_if(cuk_synchronize(), "sync");
        double ck = (now() - t0) / iters;
        t0 = now();
        for (int i = 0; i < iters; i++) {
            cuk_module *m2;
            cuk_function *f2;
            cuk_module_compile(&m2, kernel_src, NULL);
            cuk_module_function(m2, "empty", &f2);
            cuk_launch(f2, g1, b1, 0, NULL, args);
        }
        die_if(cuk_synchronize(), "sync");
        double full = (now() - t0) / iters;
        if (bare < best_bare) best_bare = bare;
        if (ck < best_cuk) best_cuk = ck;
        if (full < best_full) best_full = full;
    }
    char note[128];
    row("bare cuLaunchKernel loop", best_bare * 1e6, "baseline (best of 3)");
    snprintf(note, sizeof note, "%+.1f%% vs bare", (best_cuk / best_bare - 1) * 100);
    row("cuk_launch (held function)", best_cuk * 1e6, note);
    snprintf(note, sizeof note, "%+.1f%% vs bare (target <= +10%%)", (best_full / best_bare - 1) * 100);
    row("memory-cache hit + function lookup + launch", best_full * 1e6, note);
    if (launch_only) return 0;
    cuk_dim3 g0 = {0, 0, 0};
    t0 = now();
    for (int i = 0; i < iters; i++) cuk_launch(f, g0, g0, 0, NULL, args);
    die_if(cuk_synchronize(), "sync");
    row("cuk_launch, occupancy-chosen grid/block", (now() - t0) / iters * 1e6, "launches a full grid");
    cu.cuModuleUnload(rawmod);

    /* ---- allocation ---- */
    size_t sizes[] = {4096, 16u << 20};
    for (int si = 0; si < 2; si++) {
        size_t sz = sizes[si];
        int na = 100000;
        cuk_devptr q;
        die_if(cuk_mem_alloc(&q, sz), "warm");
        cuk_mem_free(q);
        t0 = now();
        for (int i = 0; i < na; i++) {
            cuk_mem_alloc(&q, sz);
            cuk_mem_free(q);
        }
        double pool = (now() - t0) / na;
        int nr = si ? 2000 : 20000;
        t0 = now();
        for (int i = 0; i < nr; i++) {
            CUdeviceptr r;
            if (cu.cuMemAlloc(&r, sz)) die_if(CUK_ERR_DRIVER, "cuMemAlloc");
            cu.cuMemFree(r);
        }
        double drv = (now() - t0) / nr;
        double asy = -1;
        if (cu.cuMemAllocAsync && cu.cuMemFreeAsync) {
            t0 = now();
            for (int i = 0; i < na; i++) {
                CUdeviceptr r;
                if (cu.cuMemAllocAsync(&r, sz, NULL)) break;
                cu.cuMemFreeAsync(r, NULL);
            }
            cu.cuStreamSynchronize(NULL);
            asy = (now() - t0) / na;
        }
        char what[80];
        snprintf(what, sizeof what, "pool alloc+free, %zu bytes", sz);
        row(what, pool * 1e6, si == 0 ? "target <= 0.3 us" : NULL);
        snprintf(what, sizeof what, "cuMemAlloc+cuMemFree, %zu bytes", sz);
        row(what, drv * 1e6, NULL);
        snprintf(what, sizeof what, "cuMemAllocAsync+cuMemFreeAsync, %zu bytes", sz);
        if (asy >= 0) row(what, asy * 1e6, "stream-ordered driver pool");
        else row(what, 0, "not supported by this driver");
    }
    die_if(cuk_mem_trim(), "trim");

    /* ---- copies: pageable vs pinned, 64 MiB ---- */
    size_t cb = 64u << 20;
    cuk_devptr dbuf;
    die_if(cuk_mem_alloc(&dbuf, cb), "alloc copy");
    char *pageable = malloc(cb);
    memset(pageable, 1, cb);
    void *pinned;
    die_if(cuk_host_alloc(&pinned, cb), "pinned");
    memset(pinned, 1, cb);
    const char *names[3] = {"pageable (staged)", "pageable (driver, CUK_NO_STAGING)", "pinned"};
    for (int k = 0; k < 3; k++) {
        void *src = k == 2 ? pinned : pageable;
        if (k == 1) setenv("CUK_NO_STAGING", "1", 1);
        else unsetenv("CUK_NO_STAGING");
        cuk_memcpy_htod(dbuf, src, cb);
        t0 = now();
        for (int i = 0; i < 10; i++) cuk_memcpy_htod(dbuf, src, cb);
        double h2d = (now() - t0) / 10;
        t0 = now();
        for (int i = 0; i < 10; i++) cuk_memcpy_dtoh(src, dbuf, cb);
        double d2h = (now() - t0) / 10;
        char what[80];
        snprintf(note, sizeof note, "%.1f GB/s", cb / h2d / 1e9);
        snprintf(what, sizeof what, "htod 64 MiB, %s", names[k]);
        row(what, h2d * 1e6, note);
        snprintf(note, sizeof note, "%.1f GB/s", cb / d2h / 1e9);
        snprintf(what, sizeof what, "dtoh 64 MiB, %s", names[k]);
        row(what, d2h * 1e6, note);
    }
    free(pageable);
    cuk_host_free(pinned);
    cuk_mem_free(dbuf);
    cuk_mem_free(buf);

    cuk_mem_stats ms;
    cuk_mem_stats_get(&ms);
    cuk_cache_stats cs;
    cuk_cache_stats_get(&cs);
    printf("\npool: %llu allocs, %llu hits, %llu driver allocs, peak %zu bytes\n", ms.allocs, ms.hits,
           ms.driver_allocs, ms.peak);
    printf("cache: %llu memory hits, %llu disk hits, %llu compiles, %llu entries\n", cs.mem_hits, cs.disk_hits,
           cs.misses, cs.entries);
    cuk_cache_clear();
    rmdir(dir);
    cuk_shutdown();
    return 0;
}
