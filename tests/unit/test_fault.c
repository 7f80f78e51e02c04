/* Fault injection in the runtime without a GPU (runtime/fault.h): a failing NVRTC compile
   and a failing disk-cache write each give a clear error (or, for the cache, no error and
   no entry), leave no stray file, and leave the cache usable: the next compile succeeds
   and writes one valid entry that a later compile reads without NVRTC. Run under ASan in
   the sanitizer build for the "leaks nothing" half. Skips where NVRTC is missing. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cuk.h"
#include "runtime/fault.h"
#include "runtime_check.h"

static char dir[4096];

/* Entries (*.cukc) and other files (temporaries) in the cache directory. */
static void count(int *entries, int *others) {
    *entries = *others = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t n = strlen(e->d_name);
        if (n > 5 && !strcmp(e->d_name + n - 5, ".cukc")) (*entries)++;
        else (*others)++;
    }
    closedir(d);
}

static cuk_status compile(const char *src, cuk_image **im) {
    cuk_compile_opts o;
    memset(&o, 0, sizeof o);
    o.arch = "sm_90";
    o.kind = CUK_IMAGE_PTX;
    return cuk_compile(src, &o, im);
}

static unsigned long long stat_of(int which) {
    cuk_cache_stats s;
    if (cuk_cache_stats_get(&s)) return ~0ull;
    return which == 0 ? s.disk_hits : which == 1 ? s.misses : s.disk_writes;
}

static const char *src_a = "extern \"C\" __global__ void twice(float *p) { p[threadIdx.x] *= 2.0f; }\n";
static const char *src_b = "extern \"C\" __global__ void thrice(float *p) { p[threadIdx.x] *= 3.0f; }\n";
static const char *src_c = "extern \"C\" __global__ void neg(float *p) { p[threadIdx.x] = -p[threadIdx.x]; }\n";

static void test_spec(void) {
    CHECK(fault_set("alloc:3,nvrtc:1,cache-write:2,module-load:1"));
    CHECK(fault_set("nvrtc:2+"));
    CHECK(fault_set(""));
    CHECK(!fault_set("nvrtc"));
    CHECK(!fault_set("nvrtc:0"));
    CHECK(!fault_set("disk:1"));
    CHECK(!fault_set("nvrtc:1x"));
    CHECK(!fault_hit(FAULT_NVRTC)); /* a bad spec means no faults */
    CHECK(fault_set("alloc:2"));
    CHECK(!fault_hit(FAULT_ALLOC) && fault_hit(FAULT_ALLOC) && !fault_hit(FAULT_ALLOC));
    CHECK(fault_set("alloc:2+"));
    CHECK(!fault_hit(FAULT_ALLOC) && fault_hit(FAULT_ALLOC) && fault_hit(FAULT_ALLOC));
    CHECK(fault_set(NULL));
}

static void test_nvrtc(void) {
    int e, o;
    cuk_image *im = NULL;
    /* The compile fails with NVRTC's error, and nothing reaches the cache. */
    CHECK(fault_set("nvrtc:1"));
    CHECK(compile(src_a, &im) == CUK_ERR_COMPILE && im == NULL);
    CHECK(strstr(cuk_last_error(), "NVRTC") && strstr(cuk_last_error(), "failed to compile"));
    count(&e, &o);
    CHECK(e == 0 && o == 0);
    /* The next compile works and writes one entry... */
    CHECK(compile(src_a, &im) == CUK_OK && im);
    cuk_image_free(im);
    count(&e, &o);
    CHECK(e == 1 && o == 0);
    /* ...which is valid: read back with NVRTC failing every call. */
    CHECK(fault_set("nvrtc:1+"));
    unsigned long long hits = stat_of(0);
    im = NULL;
    CHECK(compile(src_a, &im) == CUK_OK && im);
    CHECK(stat_of(0) == hits + 1);
    cuk_image_free(im);
    /* An uncached source does need NVRTC, and fails cleanly every time. */
    CHECK(compile(src_c, &im) == CUK_ERR_COMPILE && im == NULL);
    CHECK(compile(src_c, &im) == CUK_ERR_COMPILE && im == NULL);
    count(&e, &o);
    CHECK(e == 1 && o == 0);
    CHECK(fault_set(NULL));
}

static void test_cache_write(void) {
    int e, o;
    cuk_image *im = NULL;
    /* A failed write costs nothing but the entry: the compile succeeds, the half-written
       temporary is removed. */
    CHECK(fault_set("cache-write:1"));
    unsigned long long writes = stat_of(2);
    CHECK(compile(src_b, &im) == CUK_OK && im);
    const void *data = NULL;
    size_t size = 0;
    CHECK(im && cuk_image_data(im, &data, &size) == CUK_OK && size > 0 && strstr(data, "thrice"));
    cuk_image_free(im);
    CHECK(stat_of(2) == writes);
    count(&e, &o);
    CHECK(e == 1 && o == 0);
    /* No entry was written: without NVRTC the same compile fails. */
    CHECK(fault_set("nvrtc:1+"));
    im = NULL;
    CHECK(compile(src_b, &im) == CUK_ERR_COMPILE && im == NULL);
    /* The cache still works: the next compile writes a valid entry that serves a hit. */
    CHECK(fault_set(NULL));
    CHECK(compile(src_b, &im) == CUK_OK && im);
    cuk_image_free(im);
    count(&e, &o);
    CHECK(e == 2 && o == 0);
    CHECK(fault_set("nvrtc:1+"));
    CHECK(compile(src_b, &im) == CUK_OK && im);
    cuk_image_free(im);
    CHECK(fault_set(NULL));
}

int main(void) {
    test_spec();
    int mj, mn;
    if (cuk_nvrtc_version(&mj, &mn) != CUK_OK) {
        printf("test_fault: SKIP the NVRTC parts (%s); %d checks, %d failed\n", cuk_last_error(), checks, fails);
        return fails != 0;
    }
    snprintf(dir, sizeof dir, "/tmp/cuk-fault-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("CUK_CACHE_DIR", dir, 1);
    unsetenv("CUK_DISABLE_DISK_CACHE");
    unsetenv("CUK_FAULT");
    test_nvrtc();
    test_cache_write();
    cuk_cache_clear();
    rmdir(dir);
    printf("test_fault: %d checks, %d failed\n", checks, fails);
    return fails != 0;
}
