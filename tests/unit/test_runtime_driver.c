/* The runtime without a usable CUDA driver: every GPU call fails with a clear message,
   nothing crashes, and asking whether a GPU exists is not an error. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cuk.h"

#include "runtime_check.h"

/* Every GPU entry point must give `want` and a message containing `needle`. */
static void all_calls_fail(cuk_status want, const char *needle) {
    int ok = 7, n = 7;
    CHECK(cuk_gpu_available(&ok) == CUK_OK && ok == 0);
    CHECK(strstr(cuk_last_error(), needle));
    CHECK(cuk_init() == want && strstr(cuk_last_error(), needle));
    CHECK(cuk_device_count(&n) == want && n == 0);
    cuk_device_props p;
    CHECK(cuk_device_props_get(0, &p) == want);
    CHECK(cuk_device_select(0) == want);
    CHECK(cuk_device_select(-1) == want);
    cuk_devptr d = 1;
    CHECK(cuk_mem_alloc(&d, 1024) == want && d == 0);
    CHECK(strstr(cuk_last_error(), needle));
    CHECK(cuk_mem_free(0) == CUK_OK);
    CHECK(cuk_mem_trim() == CUK_OK); /* nothing cached: nothing to do */
    void *h = NULL;
    CHECK(cuk_host_alloc(&h, 64) == want && !h);
    cuk_stream *s = NULL;
    CHECK(cuk_stream_create(&s) == want && !s);
    cuk_event *e = NULL;
    CHECK(cuk_event_create(&e) == want && !e);
    CHECK(cuk_synchronize() == want);
    size_t fr, tot;
    CHECK(cuk_mem_info(&fr, &tot) == want);
    cuk_module *m = NULL;
    CHECK(cuk_module_compile(&m, "extern \"C\" __global__ void k() {}", NULL) == want && !m);
    CHECK(strstr(cuk_last_error(), needle));
    char buf[4] = {0};
    CHECK(cuk_memcpy_htod(0, buf, 4) == want);
    CHECK(cuk_memcpy_dtoh(buf, 0, 4) == want);
    CHECK(cuk_stream_destroy(NULL) == CUK_OK);
    CHECK(cuk_event_destroy(NULL) == CUK_OK);
    /* what the Python extension needs from the driver (contexts, globals, foreign streams) */
    CHECK(cuk_context_push() == want && strstr(cuk_last_error(), needle));
    cuk_context *c = (cuk_context *)&n;
    CHECK(cuk_context_pop(&c) == want && c == NULL);
    CHECK(cuk_context_pop(NULL) == want);
    c = (cuk_context *)&n;
    CHECK(cuk_context_current(&c) == want && c == NULL);
    CHECK(cuk_stream_wait_raw(0x7f00, CUK_STREAM_LEGACY) == want && strstr(cuk_last_error(), needle));
    CHECK(cuk_stream_wait_raw(CUK_STREAM_LEGACY, CUK_STREAM_PER_THREAD) == want);
    cuk_shutdown(); /* safe, and twice */
    cuk_shutdown();
    CHECK(cuk_init() == want); /* still answers after shutdown */
}

/* Runs fn in a child with CUK_LIBCUDA=lib (NULL: unset), so each child loads afresh. */
static int in_child(const char *lib, cuk_status want, const char *needle) {
    pid_t pid = fork();
    if (pid == 0) {
        if (lib) setenv("CUK_LIBCUDA", lib, 1);
        else unsetenv("CUK_LIBCUDA");
        all_calls_fail(want, needle);
        printf("  CUK_LIBCUDA=%s: %s\n", lib ? lib : "(unset)", cuk_last_error());
        fflush(stdout);
        _exit(fails ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

int main(void) {
    /* 1. A missing library (a path that cannot exist): the message names it and the way out. */
    if (in_child("/nonexistent/libcuda.so.1", CUK_ERR_NO_DRIVER,
                 "no CUDA driver found (/nonexistent/libcuda.so.1):"))
        fails++;
    if (in_child("/nonexistent/libcuda.so.1", CUK_ERR_NO_DRIVER, "; the CPU backend needs none")) fails++;

    /* 2. The toolkit's stub libcuda (what a container without the driver has): cuInit
       fails, which must read as "cannot be used", not crash. */
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) == 0) {
        if (in_child(stub, CUK_ERR_NO_DRIVER, "cuInit failed")) fails++;
    } else {
        printf("  note: %s not present; stub-driver case not exercised\n", stub);
    }

    /* 3. The default name, where this machine has no driver (CI). */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        if (in_child(NULL, CUK_ERR_NO_DRIVER, "no CUDA driver found (libcuda.so.1): ")) fails++;
    } else {
        dlclose(h);
        printf("  note: libcuda.so.1 is installed here; the default-name case was not exercised\n");
    }

    /* 4. No NVRTC (CUK_NVRTC names a missing file; an explicit choice has no fallback):
       compiling fails cleanly, and the message says what to install. */
    pid_t pid = fork();
    if (pid == 0) {
        setenv("CUK_NVRTC", "/nonexistent/libnvrtc.so.13", 1);
        fails = 0;
        cuk_compile_opts o = {.arch = "sm_90", .kind = CUK_IMAGE_PTX};
        cuk_image *im = (cuk_image *)1;
        CHECK(cuk_compile("__global__ void k() {}", &o, &im) == CUK_ERR_NO_NVRTC && im == NULL);
        CHECK(strstr(cuk_last_error(), "NVRTC not found (libnvrtc.so.13): /nonexistent/libnvrtc.so.13"));
        printf("  CUK_NVRTC=/nonexistent/libnvrtc.so.13: %s\n", cuk_last_error());
        int ma, mi;
        CHECK(cuk_nvrtc_version(&ma, &mi) == CUK_ERR_NO_NVRTC);
        char arch[16];
        cuk_image_kind k;
        CHECK(cuk_arch_for(9, 0, arch, sizeof arch, &k) == CUK_ERR_NO_NVRTC);
        fflush(stdout);
        _exit(fails ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) fails++;

    /* Argument errors of the interop calls come before the driver is needed. */
    CHECK(cuk_stream_wait_raw(0, CUK_STREAM_LEGACY) == CUK_ERR_INVALID && strstr(cuk_last_error(), "ambiguous"));
    CHECK(cuk_stream_wait_raw(0x7f00, 0) == CUK_ERR_INVALID && strstr(cuk_last_error(), "ambiguous"));
    /* the same stream: nothing to order, no driver call */
    CHECK(cuk_stream_wait_raw(CUK_STREAM_LEGACY, CUK_STREAM_LEGACY) == CUK_OK);
    CHECK(cuk_stream_wait_raw(0x7f00, 0x7f00) == CUK_OK);
    CHECK(cuk_context_current(NULL) == CUK_ERR_INVALID);
    cuk_devptr gp = 1;
    size_t gn = 1;
    CHECK(cuk_module_global(NULL, "x", &gp, &gn) == CUK_ERR_INVALID && gp == 0 && gn == 0);
    CHECK(strstr(cuk_last_error(), "cuk_module_global: NULL argument"));

    /* Status names are stable text. */
    CHECK(!strcmp(cuk_status_name(CUK_ERR_NO_DRIVER), "CUK_ERR_NO_DRIVER"));
    CHECK(!strcmp(cuk_status_name(CUK_OK), "CUK_OK"));
    CHECK(cuk_version()[0] != 0);

    printf("%s: %s\n", __FILE__, fails ? "FAIL" : "PASS");
    return fails != 0;
}
