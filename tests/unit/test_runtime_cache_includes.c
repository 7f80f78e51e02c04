/* Cache keys follow included files: raw CUDA C that #includes a header (SourceModule's
   include_dirs) must be recompiled when the header changes, in the same process and
   from the disk cache, whichever way NVRTC finds it ("..." beside the includer or in
   -I, <...> in -I, nested, pre-included). What the key cannot follow (#include MACRO,
   __has_include) is never cached. Names NVRTC cannot find either (cuk's own kernels
   hold `#include <math.h>` in a branch NVRTC never takes) do not stop caching. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cuk.h"

#include "runtime_check.h"

static char base[4096];

static void put(const char *rel, const char *text) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "w");
    CHECK(f && fputs(text, f) >= 0);
    if (f) fclose(f);
}

/* The multiplier in the PTX of a kernel `p[0] *= K`: 3, 5, 7 or 9 (-1: none, or an error). */
static int compile_k(const char *src, const char *const *opts, int nopts, const char *pname) {
    cuk_compile_opts o = {.arch = "sm_90", .kind = CUK_IMAGE_PTX, .options = opts, .noptions = nopts,
                          .program_name = pname};
    cuk_image *im = NULL;
    if (cuk_compile(src, &o, &im) != CUK_OK) return -1;
    const void *d;
    size_t n;
    cuk_image_data(im, &d, &n);
    static const char *k[] = {"0f40400000", "0f40A00000", "0f40E00000", "0f41100000"};
    int r = -1;
    for (int i = 0; i < 4; i++)
        if (strstr(d, k[i])) r = 3 + 2 * i;
    cuk_image_free(im);
    return r;
}

static cuk_cache_stats stats(void) {
    cuk_cache_stats s;
    CHECK(cuk_cache_stats_get(&s) == CUK_OK);
    return s;
}

static const char *kern = "extern \"C\" __global__ void f(float *p) { p[0] *= K; }\n";

/* src (the include lines, then the kernel), compiled with K defined as 3, then as 7 by
   `edit`: each answer is right, and a third compile of the same text is a disk hit. */
static void case_changes(const char *what, const char *head, const char *file, const char *const *opts, int nopts,
                         const char *pname) {
    char src[1024];
    snprintf(src, sizeof src, "%s%s", head, kern);
    CHECK(cuk_cache_clear() == CUK_OK);
    put(file, "#define K 3.0f\n");
    int a = compile_k(src, opts, nopts, pname);
    put(file, "#define K 7.0f\n");
    int b = compile_k(src, opts, nopts, pname);
    int c = compile_k(src, opts, nopts, pname);
    cuk_cache_stats s = stats();
    CHECK(a == 3 && b == 7 && c == 7);
    CHECK(s.misses == 2 && s.disk_hits == 1 && s.entries == 2);
    printf("  %-34s K=3 -> %d, header edited to K=7 -> %d, again -> %d (misses %llu, disk hits %llu)\n", what, a, b,
           c, s.misses, s.disk_hits);
}

int main(void) {
    const char *b = getenv("CUK_BUILD_DIR");
    snprintf(base, sizeof base, "%s/test_runtime_cache_includes.XXXXXX", b && *b ? b : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    CHECK(chdir(base) == 0); /* program names and the cases below are relative to it */
    char cache[4200], inc[4200], inc2[4200], opt[4300], opt2[4300], k2[4400];
    snprintf(cache, sizeof cache, "%s/cache", base);
    setenv("CUK_CACHE_DIR", cache, 1);
    unsetenv("CUK_DISABLE_DISK_CACHE");
    snprintf(inc, sizeof inc, "%s/inc", base);
    snprintf(inc2, sizeof inc2, "%s/inc2", base);
    CHECK(mkdir(inc, 0700) == 0 && mkdir(inc2, 0700) == 0);
    snprintf(opt, sizeof opt, "-I%s", inc);
    snprintf(opt2, sizeof opt2, "--include-path=%s", inc2);
    const char *o1[] = {opt}, *o2[] = {opt2, opt}, *o3[] = {"-I", inc};

    /* The ways NVRTC finds a header. */
    case_changes("\"k.h\" in -I", "#include \"k.h\"\n", "inc/k.h", o1, 1, NULL);
    case_changes("<k.h> in -I", "#include <k.h>\n", "inc/k.h", o3, 2, NULL);
    case_changes("\"k.h\" beside the program name", "#include \"k.h\"\n", "inc2/k.h", NULL, 0,
                 "inc2/kernel.cu");
    put("inc/outer.h", "#pragma once\n  #  include \"inner.h\" // nested, beside outer.h\n");
    case_changes("nested \"inner.h\"", "#include <outer.h>\n", "inc/inner.h", o1, 1, NULL);
    const char *o4[] = {opt, "--pre-include=pre.h"};
    case_changes("--pre-include", "", "inc/pre.h", o4, 2, NULL);
    /* The first directory that has it wins: a header added earlier in the path counts. */
    snprintf(k2, sizeof k2, "%s/k.h", inc2);
    CHECK(unlink(k2) == 0);
    put("inc/k.h", "#define K 5.0f\n");
    CHECK(cuk_cache_clear() == CUK_OK);
    char src[1024];
    snprintf(src, sizeof src, "#include \"k.h\"\n%s", kern);
    CHECK(compile_k(src, o2, 2, NULL) == 5);
    put("inc2/k.h", "#define K 9.0f\n");
    CHECK(compile_k(src, o2, 2, NULL) == 9);
    CHECK(unlink(k2) == 0);
    CHECK(compile_k(src, o2, 2, NULL) == 5 && stats().disk_hits == 1);

    /* An edit that keeps the size and the mtime is still seen: the key hashes contents. */
    CHECK(cuk_cache_clear() == CUK_OK);
    put("inc/k.h", "#define K 3.0f\n");
    char kh[4400];
    snprintf(kh, sizeof kh, "%s/k.h", inc);
    struct stat sb;
    CHECK(stat(kh, &sb) == 0);
    CHECK(compile_k(src, o1, 1, NULL) == 3);
    put("inc/k.h", "#define K 9.0f\n");
    struct timeval tv[2] = {{sb.st_atim.tv_sec, sb.st_atim.tv_nsec / 1000}, {sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec / 1000}};
    CHECK(utimes(kh, tv) == 0);
    CHECK(compile_k(src, o1, 1, NULL) == 9);

    /* Nothing found: NVRTC cannot find it either, so it is in a branch not taken (as in
       every kernel cuk emits), and caching goes on. */
    CHECK(cuk_cache_clear() == CUK_OK);
    snprintf(src, sizeof src, "#ifndef __CUDACC_RTC__\n#include <math.h>\n#include \"nowhere.h\"\n#endif\n#include "
                              "\"k.h\"\n%s", kern);
    CHECK(compile_k(src, o1, 1, NULL) == 9 && compile_k(src, o1, 1, NULL) == 9);
    CHECK(stats().misses == 1 && stats().disk_hits == 1);

    /* What the key cannot follow is compiled every time, and never written. */
    const char *uncacheable[] = {
        "#define H \"k.h\"\n#include H\n",
        "#if __has_include(\"k.h\")\n#include \"k.h\"\n#else\n#define K 5.0f\n#endif\n",
        "#include_next <k.h>\n",
    };
    for (int i = 0; i < 3; i++) {
        CHECK(cuk_cache_clear() == CUK_OK);
        snprintf(src, sizeof src, "%s%s", uncacheable[i], kern);
        int x = compile_k(src, o1, 1, NULL), y = compile_k(src, o1, 1, NULL);
        cuk_cache_stats s = stats();
        CHECK((i == 2 || (x == 9 && y == 9)) && s.misses == 2 && s.disk_hits == 0 && s.entries == 0);
    }
    /* ... nor is a pre-include found nowhere. */
    const char *o5[] = {opt, "-include", "missing.h"};
    CHECK(cuk_cache_clear() == CUK_OK);
    compile_k(kern, o5, 3, NULL);
    CHECK(stats().entries == 0);
    printf("  #include MACRO, __has_include, #include_next, a missing pre-include: never cached\n");

    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
    printf("%s: %s\n", __FILE__, fails ? "FAIL" : "PASS");
    return fails != 0;
}
