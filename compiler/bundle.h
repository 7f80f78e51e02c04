/* Ahead-of-time bundles (.cukb): a checked program with its kernels compiled for a list
   of GPU architectures, loadable without NVRTC. Format in docs/internals.md. This file
   writes and reads the format; compiling the images is the caller's (api/build.c). */
#ifndef CUK_BUNDLE_H
#define CUK_BUNDLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/kernel.h"
#include "lang/arena.h"

#define BUNDLE_MAGIC "CUKB"
#define BUNDLE_FORMAT 1

typedef enum { BS_SOURCE = 1, BS_ENTRY = 2, BS_IMAGE = 3, BS_PLAN = 4 } BundleSectionKind;
enum { BI_PTX = 0, BI_CUBIN = 1 };

typedef struct BundleImage {
    const char *fn;   /* the IR function whose kernels it holds */
    const char *arch; /* "sm_90" (cubin) or "compute_90" (PTX) */
    int kind;         /* BI_PTX or BI_CUBIN */
    const void *data; /* PTX text is NUL-terminated */
    size_t size;
} BundleImage;

typedef struct Bundle {
    char cuk_version[16];
    int nvrtc_major, nvrtc_minor;
    const char *source_path; /* the program's path when built */
    const char *source;      /* its text (the IR is rebuilt from it, see docs/aot.md) */
    const char *entries;     /* one signature per line */
    const char *plans;       /* the kernel plan, as `cukc emit-ir` prints it */
    BundleImage *images;
    int nimages;
    size_t file_size;
} Bundle;

/* Writes a bundle (atomically: a temporary file renamed) for the program at src_path
   with text src_text, whose plans are ps, holding the given images (compiled by NVRTC
   major.minor). Returns false with a message in err. */
bool bundle_write(const char *out_path, const char *src_path, const char *src_text, const PlanSet *ps,
                  const BundleImage *images, int nimages, int nvrtc_major, int nvrtc_minor, char *err, size_t errlen);

/* Reads and verifies a bundle (magic, format version, size, checksum, cuk version,
   section bounds). Everything the Bundle points at lives in a. */
bool bundle_read(Arena *a, const char *path, Bundle *b, char *err, size_t errlen);
bool bundle_read_mem(Arena *a, const void *buf, size_t len, Bundle *b, char *err, size_t errlen);
/* True if path names a bundle: a .cukb name, or a file that starts with the magic. */
bool bundle_is(const char *path);

/* The image to load on a device of compute capability major.minor for function fn: the
   exact cubin, else the newest PTX not newer than the device. NULL (with a message in err)
   when none can run there. */
const BundleImage *bundle_pick(const Bundle *b, const char *fn, int major, int minor, char *err, size_t errlen);

/* `cukc inspect`: kernels, archs, sizes, entry signatures. */
void bundle_print(FILE *out, const Bundle *b);

#endif
