/* Limits and damaged inputs at the C level: arr_new with sizes near and above 2^63,
   .npy headers that lie, and bundles whose header or section names are damaged (the
   regressions of bugs found by fuzzing, tests/fuzz/). Each must fail with a message,
   never crash or allocate what the input claims. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/bundle.h"
#include "exec/exec.h"

static int failures, checks;
#define CHECK(c)                                                                           \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(c)) {                                                                        \
            failures++;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);          \
        }                                                                                  \
    } while (0)

/* ---- arr_new --------------------------------------------------------------------- */

static void test_arr_sizes(void) {
    const int64_t big = (int64_t)1 << 62, max = INT64_MAX;
    struct {
        int rank;
        int64_t shape[3];
        bool ok;
    } cases[] = {
        {1, {0}, true},
        {2, {3, 0}, true},
        {1, {-1}, false},
        {1, {INT64_MIN}, false},
        {1, {max}, false},
        {1, {big}, false},
        {2, {(int64_t)1 << 32, (int64_t)1 << 32}, false},
        {3, {max, max, 2}, false},
        /* NumPy's rule: the nonzero dims of an empty array must fit too. */
        {2, {big, 0}, false},
        {3, {0, max, max}, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Arr *a = arr_new(DT_F32, cases[i].rank, cases[i].shape);
        CHECK((a != NULL) == cases[i].ok);
        if (a) CHECK(a->size == 0);
        arr_release(a);
    }
    CHECK(arr_new(DT_F32, -1, NULL) == NULL);
    CHECK(arr_new(DT_F32, MAXRANK + 1, (int64_t[MAXRANK + 1]){0}) == NULL);
}

/* ---- .npy ------------------------------------------------------------------------ */

/* A version 1.0 .npy file with the given header dict text and `data` payload bytes. */
static size_t npy_make(unsigned char *buf, const char *dict, size_t data) {
    size_t hl = strlen(dict) + 1;
    size_t pad = (64 - (10 + hl) % 64) % 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((hl + pad) & 0xff);
    buf[9] = (unsigned char)((hl + pad) >> 8);
    memcpy(buf + 10, dict, hl - 1);
    memset(buf + 10 + hl - 1, ' ', pad);
    buf[10 + hl - 1 + pad] = '\n';
    size_t n = 10 + hl + pad;
    memset(buf + n, 0, data);
    return n + data;
}

static void test_npy(void) {
    static const struct {
        const char *dict;
        size_t data;
        bool ok;
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, true},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", 0, true},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 16, false},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807,), }", 16, false},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 16, false},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 16, false},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 16, false},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904), }", 0, false},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", 16, false},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, false},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, true},
        {"{'descr': '<c32', 'fortran_order': False, 'shape': (2,), }", 64, false}, /* complex256: none */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,", 8, false},
        {"{}", 8, false},
    };
    unsigned char buf[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = npy_make(buf, cases[i].dict, cases[i].data);
        char err[512] = "";
        Arr *a = npy_load_mem(buf, n, err, sizeof err);
        CHECK((a != NULL) == cases[i].ok);
        if (!a) CHECK(err[0] != 0);
        if (!cases[i].ok && a) fprintf(stderr, "  accepted: %s\n", cases[i].dict);
        arr_release(a);
        /* Every truncation of a valid or invalid file fails cleanly. */
        for (size_t k = 0; k < n; k += 7) {
            Arr *t = npy_load_mem(buf, k, err, sizeof err);
            arr_release(t);
        }
    }
}

/* ---- bundles ----------------------------------------------------------------------- */

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Fixes a bundle's version, size and checksum fields (compiler/bundle.c's layout), so
   that only what the test damages is wrong. */
static void bundle_seal(unsigned char *p, size_t n) {
    memset(p + 8, 0, 16);
    strncpy((char *)p + 8, CUK_VERSION, 15);
    uint64_t size = n;
    memcpy(p + 32, &size, 8);
    static const unsigned char zero[8];
    uint64_t h = fnv1a(p, 40, 1469598103934665603ull);
    h = fnv1a(zero, 8, h);
    h = fnv1a(p + 48, n - 48, h);
    memcpy(p + 40, &h, 8);
}

/* Appends a section (kind, name, data) at *n. */
static void bundle_section(unsigned char *p, size_t *n, uint32_t kind, const char *name, const char *data) {
    uint32_t nl = (uint32_t)strlen(name);
    uint64_t dl = strlen(data);
    memcpy(p + *n, &kind, 4);
    memcpy(p + *n + 4, &nl, 4);
    memcpy(p + *n + 8, &dl, 8);
    memcpy(p + *n + 16, name, nl);
    memcpy(p + *n + 16 + nl, data, dl);
    *n += 16 + nl + dl;
}

static size_t bundle_header(unsigned char *p, uint32_t nsec) {
    memset(p, 0, 56);
    memcpy(p, BUNDLE_MAGIC, 4);
    uint32_t fmt = BUNDLE_FORMAT;
    memcpy(p + 4, &fmt, 4);
    memcpy(p + 48, &nsec, 4);
    return 56;
}

static void test_bundle(void) {
    unsigned char buf[4096];
    char err[512];
    Arena a;
    Bundle b;

    /* A valid bundle reads. */
    size_t n = bundle_header(buf, 2);
    bundle_section(buf, &n, BS_SOURCE, "p.cuk", "fn main() { print(1); }\n");
    bundle_section(buf, &n, BS_IMAGE, "main/sm_90/cubin", "\x7f" "ELF");
    bundle_seal(buf, n);
    arena_init(&a);
    CHECK(bundle_read_mem(&a, buf, n, &b, err, sizeof err));
    CHECK(b.nimages == 1 && bundle_pick(&b, "main", 9, 0, err, sizeof err) == &b.images[0]);
    CHECK(bundle_pick(&b, "main", 8, 0, err, sizeof err) == NULL && strstr(err, "sm_80"));
    arena_free(&a);

    /* Regression (fuzz_bundle): a section count of 4 billion sized the image table from
       the header before checking it against the file, and the arena aborted. */
    static const uint32_t counts[] = {0x10000000u, 0x7fffffffu, 0xffffffffu};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        n = bundle_header(buf, counts[i]);
        bundle_section(buf, &n, BS_SOURCE, "p.cuk", "fn main() { print(1); }\n");
        bundle_seal(buf, n);
        arena_init(&a);
        err[0] = 0;
        CHECK(!bundle_read_mem(&a, buf, n, &b, err, sizeof err) && strstr(err, "sections"));
        arena_free(&a);
    }
    for (uint32_t k = 2; k < 40; k += 5) { /* a count a little too large */
        n = bundle_header(buf, k);
        bundle_section(buf, &n, BS_SOURCE, "p.cuk", "fn main() { print(1); }\n");
        bundle_seal(buf, n);
        arena_init(&a);
        err[0] = 0;
        CHECK(!bundle_read_mem(&a, buf, n, &b, err, sizeof err) && err[0]);
        arena_free(&a);
    }

    /* Regression (code review): image names with an empty or foreign arch made
       bundle_pick read past the end of the name ("main//cubin" + 3). */
    n = bundle_header(buf, 4);
    bundle_section(buf, &n, BS_SOURCE, "p.cuk", "fn main() { print(1); }\n");
    bundle_section(buf, &n, BS_IMAGE, "main//cubin", "x");
    bundle_section(buf, &n, BS_IMAGE, "main/s/ptx", "x");
    bundle_section(buf, &n, BS_IMAGE, "main/compute_/ptx", "x");
    bundle_seal(buf, n);
    arena_init(&a);
    CHECK(bundle_read_mem(&a, buf, n, &b, err, sizeof err));
    err[0] = 0;
    CHECK(bundle_pick(&b, "main", 9, 0, err, sizeof err) == NULL || err[0] == 0);
    arena_free(&a);

    /* Every truncation and every single-byte change of the header is refused. */
    n = bundle_header(buf, 1);
    bundle_section(buf, &n, BS_SOURCE, "p.cuk", "fn main() { print(1); }\n");
    bundle_seal(buf, n);
    for (size_t k = 0; k < n; k++) {
        arena_init(&a);
        CHECK(!bundle_read_mem(&a, buf, k, &b, err, sizeof err));
        arena_free(&a);
    }
    for (size_t k = 0; k < 56; k++) {
        buf[k] ^= 0x40;
        arena_init(&a);
        CHECK(!bundle_read_mem(&a, buf, n, &b, err, sizeof err));
        arena_free(&a);
        buf[k] ^= 0x40;
    }
}

int main(void) {
    test_arr_sizes();
    test_npy();
    test_bundle();
    printf("test_limits: %d checks, %d failed\n", checks, failures);
    return failures != 0;
}
