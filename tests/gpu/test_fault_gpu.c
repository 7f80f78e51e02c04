/* Fault injection on a real GPU (runtime/fault.h), the half that needs the driver: a
   failing cuMemAlloc is retried once after the pool's cached blocks are released (and
   succeeds), or, failing again, gives a clear out-of-memory error with the pool's books
   unchanged; a failing cuModuleLoadDataEx gives a clear error, caches no broken module,
   and the next compile loads and runs the kernel from the disk cache. Also asks for
   twice the device memory. Prints one PASS/FAIL line per check and exits nonzero on
   any failure; exits 0 with SKIP where there is no GPU. Run it under compute-sanitizer
   and with LSan (ASan build) for the "leaks nothing" half. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cuk.h"
#include "runtime/fault.h"

static int npass, nfail;
static void check(int ok, const char *name) {
    if (ok) npass++;
    else nfail++;
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ", ok ? "" : cuk_last_error());
    fflush(stdout);
}

static const char *src =
    "extern \"C\" __global__ void inc(int *p, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) p[i] += 1;\n"
    "}\n";

static void test_alloc(void) {
    cuk_devptr a = 0, b = 0;
    cuk_mem_stats s0, s1;
    /* A cached block of another size class, for the retry to release. */
    check(cuk_mem_alloc(&a, 1 << 20) == CUK_OK && cuk_mem_free(a) == CUK_OK, "alloc: warm the pool");
    cuk_mem_stats_get(&s0);
    /* One failure: the pool releases its cache and the retry succeeds. */
    fault_set("alloc:1");
    check(cuk_mem_alloc(&b, 3 << 20) == CUK_OK && b != 0, "alloc:1 is retried and succeeds");
    cuk_mem_stats_get(&s1);
    check(s1.oom_retries == s0.oom_retries + 1 && s1.cached == 0, "alloc:1 retry released the cached blocks");
    check(cuk_mem_free(b) == CUK_OK, "alloc:1 block frees");
    /* Every call failing: a clear error, nothing handed out, nothing counted as in use. */
    fault_set("alloc:1+");
    cuk_mem_stats_get(&s0);
    b = 123;
    cuk_status st = cuk_mem_alloc(&b, 5 << 20);
    check(st == CUK_ERR_OUT_OF_MEMORY && b == 0, "alloc:1+ fails with CUK_ERR_OUT_OF_MEMORY");
    check(strstr(cuk_last_error(), "out of device memory") != NULL, "alloc:1+ message says out of device memory");
    cuk_mem_stats_get(&s1);
    check(s1.in_use == s0.in_use && s1.allocs == s0.allocs, "alloc:1+ leaves the pool's books unchanged");
    fault_set(NULL);
    check(cuk_mem_alloc(&b, 5 << 20) == CUK_OK && cuk_mem_free(b) == CUK_OK, "alloc works again after the faults");
    /* A request for twice the device memory: a clear error, not a crash. */
    cuk_device_props p;
    if (cuk_device_props_get(0, &p) == CUK_OK) {
        b = 0;
        st = cuk_mem_alloc(&b, p.total_mem * 2);
        check(st == CUK_ERR_OUT_OF_MEMORY && b == 0 && strstr(cuk_last_error(), "out of device memory"),
              "twice the device memory is CUK_ERR_OUT_OF_MEMORY");
        check(cuk_mem_alloc(&b, 1 << 20) == CUK_OK && cuk_mem_free(b) == CUK_OK, "alloc works after the huge request");
    }
    cuk_mem_trim();
}

/* Compiles src, runs inc over 1000 ints, returns true if every one went 0 -> 1. */
static bool run_inc(cuk_module *m) {
    cuk_function *f;
    cuk_devptr d = 0;
    int n = 1000, h[1000];
    memset(h, 0, sizeof h);
    bool ok = cuk_module_function(m, "inc", &f) == CUK_OK && cuk_mem_alloc(&d, sizeof h) == CUK_OK &&
              cuk_memcpy_htod(d, h, sizeof h) == CUK_OK;
    void *args[] = {&d, &n};
    cuk_dim3 grid = {4, 1, 1}, block = {256, 1, 1};
    ok = ok && cuk_launch(f, grid, block, 0, NULL, args) == CUK_OK && cuk_memcpy_dtoh(h, d, sizeof h) == CUK_OK;
    for (int i = 0; ok && i < n; i++) ok = h[i] == 1;
    cuk_mem_free(d);
    return ok;
}

static void test_module_load(void) {
    cuk_compile_opts o;
    memset(&o, 0, sizeof o);
    cuk_module *m = NULL;
    fault_set("module-load:1");
    cuk_status st = cuk_module_compile(&m, src, &o);
    check(st != CUK_OK && m == NULL, "module-load:1 fails the compile");
    check(strstr(cuk_last_error(), "cuModuleLoadDataEx") != NULL, "module-load:1 message names cuModuleLoadDataEx");
    /* No broken module was cached: the retry loads (the image from the disk cache, so
       NVRTC is not needed) and the kernel runs. */
    fault_set("nvrtc:1+");
    st = cuk_module_compile(&m, src, &o);
    check(st == CUK_OK && m != NULL, "after module-load:1 the next compile loads from the disk cache");
    check(m && run_inc(m), "the kernel runs");
    fault_set(NULL);
    /* cuk_module_load of an image, failing then succeeding. */
    cuk_compile_opts po;
    memset(&po, 0, sizeof po);
    cuk_device_props p;
    char arch[32];
    cuk_image_kind kind;
    cuk_image *im = NULL;
    if (cuk_device_props_get(0, &p) == CUK_OK && cuk_arch_for(p.cc_major, p.cc_minor, arch, sizeof arch, &kind) == CUK_OK) {
        po.arch = arch;
        po.kind = kind;
        check(cuk_compile(src, &po, &im) == CUK_OK, "compile an image");
        const void *data;
        size_t size;
        cuk_image_data(im, &data, &size);
        cuk_module *lm = NULL;
        fault_set("module-load:1");
        check(cuk_module_load(&lm, data, size) != CUK_OK && lm == NULL, "module-load:1 fails cuk_module_load");
        check(cuk_module_load(&lm, data, size) == CUK_OK && lm != NULL, "the second cuk_module_load works");
        check(lm && run_inc(lm), "its kernel runs");
        if (lm) cuk_module_unload(lm);
        cuk_image_free(im);
        fault_set(NULL);
    }
}

int main(void) {
    int n = 0;
    if (cuk_device_count(&n) != CUK_OK || n == 0) {
        printf("SKIP test_fault_gpu: no GPU (%s)\n", cuk_last_error());
        return 0;
    }
    char dir[] = "/tmp/cuk-fault-gpu-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("CUK_CACHE_DIR", dir, 1);
    test_alloc();
    test_module_load();
    cuk_cache_clear();
    rmdir(dir);
    /* Return the pool's blocks and the modules, so that a leak check sees none. */
    cuk_shutdown();
    printf("test_fault_gpu: %d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
