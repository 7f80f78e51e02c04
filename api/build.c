/* Ahead-of-time bundles (cuk_program_build): the program through the pipeline, each
   function's kernels compiled by NVRTC for every architecture asked for, written by the
   compiler's bundle writer (compiler/bundle.c). */
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

enum { MAX_ARCHS = 16 };

/* The arch list: sm_XY gives a cubin; the PTX is for compute_XY entries, or the lowest
   sm_XY when none is given, so newer GPUs can JIT it. */
typedef struct Archs {
    char list[256];
    const char *sm[MAX_ARCHS], *compute[MAX_ARCHS];
    int nsm, ncompute;
    char lowest_ptx[32];
} Archs;

static cuk_status parse_archs(const char *archs, Archs *a) {
    memset(a, 0, sizeof *a);
    if (strlen(archs) >= sizeof a->list) return err_set(CUK_ERR_INVALID, "--arch list too long");
    strcpy(a->list, archs);
    int lowest = 1000;
    char *save = NULL;
    for (char *t = strtok_r(a->list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int cc = 0;
        char tail[8] = "";
        if (sscanf(t, "sm_%d%7s", &cc, tail) >= 1 && cc >= 50 && cc < 200) {
            if (a->nsm == MAX_ARCHS) return err_set(CUK_ERR_INVALID, "too many architectures");
            a->sm[a->nsm++] = t;
            if (cc < lowest) lowest = cc;
        } else if (sscanf(t, "compute_%d%7s", &cc, tail) >= 1 && cc >= 50 && cc < 200) {
            if (a->ncompute == MAX_ARCHS) return err_set(CUK_ERR_INVALID, "too many architectures");
            a->compute[a->ncompute++] = t;
        } else {
            return err_set(CUK_ERR_INVALID, "--arch: '%s' is not an architecture like sm_90 or compute_90", t);
        }
    }
    if (!a->nsm && !a->ncompute) return err_set(CUK_ERR_INVALID, "--arch lists no architecture");
    if (!a->ncompute) {
        snprintf(a->lowest_ptx, sizeof a->lowest_ptx, "compute_%d", lowest);
        a->compute[a->ncompute++] = a->lowest_ptx;
    }
    return CUK_OK;
}

/* One image: the CUDA C of fn compiled for arch, its bytes copied into the arena. */
static cuk_status compile_image(Arena *ar, const char *cuda, const char *fn, const char *arch, int kind,
                                BundleImage *out) {
    cuk_compile_opts o = {0};
    static const char *precise[] = {"--fmad=false"}; /* as the GPU backend compiles by default */
    o.options = precise;
    o.noptions = 1;
    o.arch = arch;
    o.kind = kind == BI_CUBIN ? CUK_IMAGE_CUBIN : CUK_IMAGE_PTX;
    o.program_name = fn;
    cuk_image *im = NULL;
    if (cuk_compile(cuda, &o, &im) != CUK_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", cuk_last_error());
        return err_set(CUK_ERR_COMPILE, "compiling %s for %s: %s", fn, arch, why);
    }
    const void *data;
    size_t size;
    cuk_image_data(im, &data, &size);
    void *copy = arena_alloc(ar, size + 1); /* PTX stays NUL-terminated */
    memcpy(copy, data, size);
    cuk_image_free(im);
    *out = (BundleImage){.fn = fn, .arch = arch, .kind = kind, .data = copy, .size = size};
    return CUK_OK;
}

/* The bundle may go to out_path: a new file, or a regular file other than the source (the
   bundle replaces it by a rename, which would also replace a device node or swallow the
   source). */
static cuk_status out_path_ok(const char *src_path, const char *out_path) {
    struct stat so, ss;
    if (stat(out_path, &so) != 0) return CUK_OK; /* a new file (a bad directory fails at the write) */
    if (!S_ISREG(so.st_mode))
        return err_set(CUK_ERR_INVALID, "cannot write the bundle to '%s': it exists and is not a regular file (a %s); "
                       "choose a file path such as prog.cukb", out_path, S_ISDIR(so.st_mode) ? "directory" : "device, pipe or socket");
    if (stat(src_path, &ss) == 0 && ss.st_dev == so.st_dev && ss.st_ino == so.st_ino)
        return err_set(CUK_ERR_INVALID, "cannot write the bundle to '%s': it is the source file itself; choose another "
                       "name, such as prog.cukb", out_path);
    return CUK_OK;
}

cuk_status cuk_program_build(const char *src_path, const char *out_path, const char *archs) {
    if (!src_path || !out_path) return err_set(CUK_ERR_INVALID, "cuk_program_build: NULL argument");
    cuk_status os = out_path_ok(src_path, out_path);
    if (os) return os;
    Archs ar;
    cuk_status s = parse_archs(archs ? archs : "sm_80,sm_90", &ar);
    if (s) return s;
    int major = 0, minor = 0;
    if (cuk_nvrtc_version(&major, &minor) != CUK_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", cuk_last_error());
        return err_set(CUK_ERR_NO_DRIVER, "cannot build a bundle without NVRTC: %s", why);
    }
    if (bundle_is(src_path)) return err_set(CUK_ERR_INVALID, "%s is already a bundle", src_path);
    Arena a;
    arena_init(&a);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        arena_free(&a);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    Diag d;
    diag_init(&d, mem);
    Compiled c;
    bool ok = pipeline_file(&c, &a, &d, src_path, STAGE_CUDA);
    fclose(mem);
    if (!ok) {
        s = err_set(CUK_ERR_COMPILE, "%s", text && *text ? text : "compile error");
        free(text);
        arena_free(&a);
        return s;
    }
    free(text);
    int max = c.plans->nplans * (ar.nsm + ar.ncompute), n = 0;
    BundleImage *images = NEWN(&a, BundleImage, max + 1);
    for (int i = 0; !s && i < c.plans->nplans; i++) {
        if (!c.cuda[i]) continue; /* no kernels */
        const char *fn = c.plans->plans[i]->fn->name;
        for (int k = 0; !s && k < ar.nsm; k++) s = compile_image(&a, c.cuda[i], fn, ar.sm[k], BI_CUBIN, &images[n++]);
        for (int k = 0; !s && k < ar.ncompute; k++)
            s = compile_image(&a, c.cuda[i], fn, ar.compute[k], BI_PTX, &images[n++]);
    }
    char err[2048];
    if (!s && !bundle_write(out_path, src_path, c.src.text, c.plans, images, n, major, minor, err, sizeof err))
        s = err_set(CUK_ERR_INVALID, "%s", err);
    arena_free(&a);
    return s;
}
