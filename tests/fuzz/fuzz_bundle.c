/* libFuzzer target for the .cukb bundle reader (bundle_read_mem, bundle_pick,
   bundle_print). Each input is read twice: as given (header checks: magic, format, size,
   checksum, version) and with its size, checksum and version fields patched to be right,
   so that mutations reach the section parser behind the checksum. Any bytes must give a
   bundle or a clear error. */
#include <string.h>

#include "compiler/bundle.h"
#include "fuzz_common.h"

/* The header layout of compiler/bundle.c (HDR_SIZE, OFF_SIZE, OFF_SUM). */
enum { HDR = 56, OFF_VERSION = 8, OFF_SIZE = 32, OFF_SUM = 40 };

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void read_one(const unsigned char *p, size_t n) {
    Arena a;
    arena_init(&a);
    Bundle b;
    char err[512];
    err[0] = 0;
    if (bundle_read_mem(&a, p, n, &b, err, sizeof err)) {
        bundle_print(devnull(), &b);
        static const int ccs[][2] = {{5, 0}, {8, 0}, {8, 6}, {9, 0}, {12, 0}};
        for (int i = 0; i < b.nimages; i++)
            for (size_t k = 0; k < sizeof ccs / sizeof ccs[0]; k++) {
                const BundleImage *im = bundle_pick(&b, b.images[i].fn, ccs[k][0], ccs[k][1], err, sizeof err);
                if (!im && !err[0]) abort();
            }
        bundle_pick(&b, "no_such_fn", 9, 0, err, sizeof err);
    } else if (!err[0]) {
        abort();
    }
    arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    read_one(data, size);
    if (size < HDR) return 0;
    unsigned char *p = malloc(size);
    if (!p) return 0;
    memcpy(p, data, size);
    memcpy(p, BUNDLE_MAGIC, 4);
    uint32_t fmt = BUNDLE_FORMAT;
    memcpy(p + 4, &fmt, 4);
    memset(p + OFF_VERSION, 0, 16);
    strncpy((char *)p + OFF_VERSION, CUK_VERSION, 15);
    uint64_t n = size;
    memcpy(p + OFF_SIZE, &n, 8);
    static const unsigned char zero[8];
    uint64_t h = fnv1a(p, OFF_SUM, 1469598103934665603ull);
    h = fnv1a(zero, 8, h);
    h = fnv1a(p + OFF_SUM + 8, size - OFF_SUM - 8, h);
    memcpy(p + OFF_SUM, &h, 8);
    read_one(p, size);
    free(p);
    return 0;
}
