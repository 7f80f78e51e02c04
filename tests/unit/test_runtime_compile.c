/* NVRTC compilation without a GPU: PTX and cubin for sm_90, compile errors with the
   log, bad arches, C++ name expressions and the device-arch choice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuk.h"

#include "runtime_check.h"

static const char *saxpy =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

int main(void) {
    /* These checks are about NVRTC, not the cache: keep the user's cache out of it. */
    setenv("CUK_DISABLE_DISK_CACHE", "1", 1);
    int ma = 0, mi = 0;
    CHECK(cuk_nvrtc_version(&ma, &mi) == CUK_OK && ma >= 12);
    printf("  NVRTC %d.%d\n", ma, mi);

    /* PTX for sm_90: text, NUL-terminated, targeting sm_90, with the entry. */
    cuk_compile_opts o = {.arch = "sm_90", .kind = CUK_IMAGE_PTX};
    cuk_image *im = NULL;
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_OK && im);
    if (im) {
        const void *d;
        size_t n;
        CHECK(cuk_image_data(im, &d, &n) == CUK_OK);
        const char *ptx = d;
        CHECK(cuk_image_get_kind(im) == CUK_IMAGE_PTX);
        CHECK(n > 0 && ptx[n - 1] == 0 && strlen(ptx) == n - 1);
        CHECK(strstr(ptx, ".target sm_90"));
        CHECK(strstr(ptx, ".entry saxpy("));
        cuk_image_free(im);
    }

    /* Same via the virtual arch name. */
    o.arch = "compute_90";
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_OK);
    cuk_image_free(im);

    /* A cubin: an ELF image. */
    o.arch = "sm_90";
    o.kind = CUK_IMAGE_CUBIN;
    im = NULL;
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_OK && im);
    if (im) {
        const void *d;
        size_t n;
        cuk_image_data(im, &d, &n);
        CHECK(n > 64 && !memcmp(d, "\x7f" "ELF", 4));
        CHECK(cuk_image_get_kind(im) == CUK_IMAGE_CUBIN);
        cuk_image_free(im);
    }

    /* Extra options reach NVRTC (a bad one is NVRTC's error, reported). */
    const char *good[] = {"-lineinfo", "--use_fast_math"};
    o.options = good;
    o.noptions = 2;
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_OK);
    cuk_image_free(im);
    const char *bad[] = {"--no-such-option"};
    o.options = bad;
    o.noptions = 1;
    im = (cuk_image *)1;
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_ERR_COMPILE && im == NULL);
    o.options = NULL;
    o.noptions = 0;

    /* A compile error: the status, the program name, the line and NVRTC's log. */
    o.program_name = "broken.cu";
    CHECK(cuk_compile("extern \"C\" __global__ void k(float *p) {\n  p[0] = undefined_thing;\n}\n", &o,
                      &im) == CUK_ERR_COMPILE);
    const char *msg = cuk_last_error();
    CHECK(strstr(msg, "broken.cu(2): error"));
    CHECK(strstr(msg, "undefined_thing"));
    CHECK(strstr(msg, "sm_90"));
    o.program_name = NULL;

    /* Bad arches and arguments. */
    o.arch = "sm90";
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_ERR_INVALID && strstr(cuk_last_error(), "sm90"));
    o.arch = "sm_20";
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_ERR_INVALID && strstr(cuk_last_error(), "does not support sm_20"));
    o.arch = "compute_90";
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_ERR_INVALID); /* no cubin for a virtual arch */
    o.arch = NULL;
    CHECK(cuk_compile(saxpy, &o, &im) == CUK_ERR_INVALID && strstr(cuk_last_error(), "arch"));
    CHECK(cuk_compile(saxpy, NULL, &im) == CUK_ERR_INVALID);
    CHECK(cuk_compile(NULL, &o, &im) == CUK_ERR_INVALID);

    /* C++ kernels by name expression: the lowered (mangled) name comes back. */
    const char *tmpl = "template <typename T> __global__ void scale(T *p, T a) { p[threadIdx.x] *= a; }\n";
    const char *names[] = {"scale<float>", "scale<double>"};
    cuk_compile_opts t = {.arch = "sm_90", .kind = CUK_IMAGE_CUBIN, .names = names, .nnames = 2};
    im = NULL;
    CHECK(cuk_compile(tmpl, &t, &im) == CUK_OK && im);
    if (im) {
        const char *f = cuk_image_lowered_name(im, "scale<float>");
        const char *d = cuk_image_lowered_name(im, "scale<double>");
        CHECK(!strncmp(f, "_Z", 2) && strstr(f, "scale"));
        CHECK(!strncmp(d, "_Z", 2) && strcmp(f, d) != 0);
        CHECK(!strcmp(cuk_image_lowered_name(im, "other"), "other"));
        printf("  scale<float> -> %s\n", f);
        cuk_image_free(im);
    }

    /* What a device gets: a cubin for an arch NVRTC knows, PTX of the newest one for a
       device newer than NVRTC, an error for one older than it supports. */
    char arch[16];
    cuk_image_kind k;
    CHECK(cuk_arch_for(9, 0, arch, sizeof arch, &k) == CUK_OK && !strcmp(arch, "sm_90") && k == CUK_IMAGE_CUBIN);
    CHECK(cuk_arch_for(8, 0, arch, sizeof arch, &k) == CUK_OK && !strcmp(arch, "sm_80"));
    CHECK(cuk_arch_for(99, 9, arch, sizeof arch, &k) == CUK_OK && !strncmp(arch, "compute_", 8) &&
          k == CUK_IMAGE_PTX);
    printf("  cc 99.9 -> %s\n", arch);
    CHECK(cuk_arch_for(3, 0, arch, sizeof arch, &k) == CUK_ERR_COMPILE &&
          strstr(cuk_last_error(), "compute capability 3.0"));

    printf("%s: %s\n", __FILE__, fails ? "FAIL" : "PASS");
    return fails != 0;
}
