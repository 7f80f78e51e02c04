/* Writes, verifies and reads .cukb bundles: a header, length-prefixed sections (the
   source, entry signatures, the kernel plan, one image per function and arch) and an
   FNV-1a 64 checksum over the whole file. */
#include "compiler/bundle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/kernel.h"

/* Header: magic[4] format:u32 cuk_version[16] nvrtc_major:u32 nvrtc_minor:u32
   file_size:u64 checksum:u64 nsections:u32 reserved:u32 = 56 bytes. Each section:
   kind:u32 name_len:u32 data_len:u64 name data. The checksum covers the file with its own
   8 bytes read as zero. */
#define HDR_SIZE 56
#define OFF_SIZE 32
#define OFF_SUM 40

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint64_t file_checksum(const unsigned char *p, size_t n) {
    static const unsigned char zero[8];
    uint64_t h = fnv1a(p, OFF_SUM, 1469598103934665603ull);
    h = fnv1a(zero, 8, h);
    return fnv1a(p + OFF_SUM + 8, n - OFF_SUM - 8, h);
}

static bool fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- writing --------------------------------------------------------------------------- */

typedef struct Buf {
    unsigned char *p;
    size_t n, cap;
    bool oom;
} Buf;

static void put(Buf *b, const void *d, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put32(Buf *b, uint32_t x) { put(b, &x, 4); }
static void put64(Buf *b, uint64_t x) { put(b, &x, 8); }

static void section(Buf *b, uint32_t kind, const char *name, const void *data, size_t len, uint32_t *count) {
    put32(b, kind);
    put32(b, (uint32_t)strlen(name));
    put64(b, len);
    put(b, name, strlen(name));
    put(b, data, len);
    (*count)++;
}

static void signature(Buf *b, const Fn *f) {
    char line[1024];
    size_t k = (size_t)snprintf(line, sizeof line, "%s(", f->name);
    for (int i = 0; i < f->nparams && k < sizeof line; i++) {
        k += (size_t)snprintf(line + k, sizeof line - k, "%s%s: %s", i ? ", " : "", f->slots[i].name,
                              dtype_info[f->slots[i].dt].name);
        for (int r = 0; r < f->slots[i].rank && k < sizeof line; r++)
            k += (size_t)snprintf(line + k, sizeof line - k, r ? ",_" : "[_");
        if (f->slots[i].rank && k < sizeof line) k += (size_t)snprintf(line + k, sizeof line - k, "]");
    }
    if (k < sizeof line && f->nres) {
        /* several results: -> (f32, i64[..]) */
        k += (size_t)snprintf(line + k, sizeof line - k, ") -> (");
        for (int r = 0; r < f->nres && k < sizeof line; r++)
            k += (size_t)snprintf(line + k, sizeof line - k, "%s%s%s", r ? ", " : "", dtype_info[f->res_dt[r]].name,
                                  f->res_rank[r] ? "[..]" : "");
        if (k < sizeof line) k += (size_t)snprintf(line + k, sizeof line - k, ")\n");
    } else if (k < sizeof line) {
        const char *rt = f->ret_dt == DT_VOID ? "void" : dtype_info[f->ret_dt].name;
        k += (size_t)snprintf(line + k, sizeof line - k, ") -> %s%s\n", rt, f->ret_rank ? "[..]" : "");
    }
    put(b, line, strlen(line));
}

bool bundle_write(const char *out_path, const char *src_path, const char *src_text, const PlanSet *ps,
                  const BundleImage *images, int nimages, int nvrtc_major, int nvrtc_minor, char *err, size_t errlen) {
    const Program *prog = ps->prog;
    Buf b = {0};
    uint32_t count = 0;
    unsigned char hdr[HDR_SIZE] = {0};
    put(&b, hdr, HDR_SIZE);
    section(&b, BS_SOURCE, src_path, src_text, strlen(src_text), &count);
    Buf sig = {0};
    for (int i = 0; i < prog->nfns; i++) signature(&sig, prog->fns[i]);
    section(&b, BS_ENTRY, "entries", sig.p ? (const char *)sig.p : "", sig.n, &count);
    free(sig.p);
    char *plan_text = NULL;
    size_t plan_len = 0;
    FILE *pf = open_memstream(&plan_text, &plan_len);
    if (pf) {
        planset_print(pf, ps);
        fclose(pf);
        section(&b, BS_PLAN, "plan", plan_text, plan_len, &count);
        free(plan_text);
    }
    for (int i = 0; i < nimages; i++) {
        const BundleImage *im = &images[i];
        char name[512];
        snprintf(name, sizeof name, "%s/%s/%s", im->fn, im->arch, im->kind == BI_CUBIN ? "cubin" : "ptx");
        section(&b, BS_IMAGE, name, im->data, im->size, &count);
    }
    bool ok = true;
    if (b.oom) ok = fail(err, errlen, "out of memory writing the bundle");
    if (ok) {
        memcpy(b.p, BUNDLE_MAGIC, 4);
        uint32_t fmt = BUNDLE_FORMAT;
        memcpy(b.p + 4, &fmt, 4);
        strncpy((char *)b.p + 8, CUK_VERSION, 15);
        uint32_t mj = (uint32_t)nvrtc_major, mn = (uint32_t)nvrtc_minor;
        memcpy(b.p + 24, &mj, 4);
        memcpy(b.p + 28, &mn, 4);
        uint64_t size = b.n;
        memcpy(b.p + OFF_SIZE, &size, 8);
        memcpy(b.p + 48, &count, 4);
        uint64_t sum = file_checksum(b.p, b.n);
        memcpy(b.p + OFF_SUM, &sum, 8);
        /* Write to a temporary name and rename, so a reader never sees half a bundle. */
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        if (!f) ok = fail(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
        else {
            bool wok = fwrite(b.p, 1, b.n, f) == b.n;
            wok &= fclose(f) == 0;
            if (!wok || rename(tmp, out_path) != 0) {
                ok = fail(err, errlen, "cannot write '%s': %s", out_path, strerror(errno));
                remove(tmp);
            }
        }
    }
    free(b.p);
    return ok;
}

/* ---- reading --------------------------------------------------------------------------- */

bool bundle_read_mem(Arena *a, const void *buf, size_t len, Bundle *b, char *err, size_t errlen) {
    const unsigned char *p = buf;
    memset(b, 0, sizeof *b);
    if (len < HDR_SIZE || memcmp(p, BUNDLE_MAGIC, 4) != 0) return fail(err, errlen, "not a cuk bundle (bad magic)");
    uint32_t fmt, nsec, mj, mn;
    uint64_t size, sum;
    memcpy(&fmt, p + 4, 4);
    memcpy(&mj, p + 24, 4);
    memcpy(&mn, p + 28, 4);
    memcpy(&size, p + OFF_SIZE, 8);
    memcpy(&sum, p + OFF_SUM, 8);
    memcpy(&nsec, p + 48, 4);
    if (fmt != BUNDLE_FORMAT)
        return fail(err, errlen, "bundle format version %u, but this cuk reads version %d; rebuild it with cukc build", fmt,
                    BUNDLE_FORMAT);
    if (size != len)
        return fail(err, errlen, "bundle is %zu bytes but its header says %llu: truncated or damaged", len,
                    (unsigned long long)size);
    if (file_checksum(p, len) != sum) return fail(err, errlen, "bundle checksum mismatch: the file is damaged");
    memcpy(b->cuk_version, p + 8, 15);
    if (strcmp(b->cuk_version, CUK_VERSION) != 0)
        return fail(err, errlen, "bundle was built by cuk %s, this is cuk %s; rebuild it with cukc build", b->cuk_version,
                    CUK_VERSION);
    b->nvrtc_major = (int)mj;
    b->nvrtc_minor = (int)mn;
    b->file_size = len;
    /* Every section takes at least 16 bytes: a damaged count must not size the table. */
    if (nsec > (len - HDR_SIZE) / 16)
        return fail(err, errlen, "bundle header lists %u sections, more than its %zu bytes can hold: damaged", nsec,
                    len);
    b->images = NEWN(a, BundleImage, nsec + 1);
    size_t off = HDR_SIZE;
    for (uint32_t i = 0; i < nsec; i++) {
        uint32_t kind, nlen;
        uint64_t dlen;
        if (len - off < 16) return fail(err, errlen, "bundle section %u runs past the end", i);
        memcpy(&kind, p + off, 4);
        memcpy(&nlen, p + off + 4, 4);
        memcpy(&dlen, p + off + 8, 8);
        off += 16;
        if (nlen > len - off || dlen > len - off - nlen) return fail(err, errlen, "bundle section %u runs past the end", i);
        char *name = arena_strndup(a, (const char *)p + off, nlen);
        off += nlen;
        char *data = arena_alloc(a, dlen + 1); /* NUL-terminated copy */
        memcpy(data, p + off, dlen);
        off += dlen;
        switch (kind) {
        case BS_SOURCE: b->source_path = name, b->source = data; break;
        case BS_ENTRY: b->entries = data; break;
        case BS_PLAN: b->plans = data; break;
        case BS_IMAGE: {
            char *s1 = strchr(name, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
            if (!s2) return fail(err, errlen, "bundle image '%s' has a malformed name", name);
            *s1 = *s2 = 0;
            BundleImage *im = &b->images[b->nimages++];
            im->fn = name;
            im->arch = s1 + 1;
            im->kind = strcmp(s2 + 1, "cubin") == 0 ? BI_CUBIN : BI_PTX;
            im->data = data;
            im->size = dlen;
            break;
        }
        default: return fail(err, errlen, "bundle section %u has unknown kind %u", i, kind);
        }
    }
    if (off != len) return fail(err, errlen, "bundle has %zu stray bytes after its sections", len - off);
    if (!b->source) return fail(err, errlen, "bundle holds no program");
    return true;
}

bool bundle_read(Arena *a, const char *path, Bundle *b, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return fail(err, errlen, "cannot read '%s': it is %s, not a bundle file", path,
                    S_ISDIR(st.st_mode) ? "a directory" : "not a regular file (a device, pipe or socket)");
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap && cap >= ((size_t)1 << 32)) { /* 4 GiB: no bundle is that large */
            free(buf);
            fclose(f);
            return fail(err, errlen, "cannot read '%s': larger than 4 GiB, not a cuk bundle", path);
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return fail(err, errlen, "out of memory reading '%s'", path);
            }
            buf = nb;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    fclose(f);
    char e2[512];
    bool ok = bundle_read_mem(a, buf, n, b, e2, sizeof e2);
    if (!ok) fail(err, errlen, "%s: %s", path, e2);
    free(buf);
    return ok;
}

bool bundle_is(const char *path) {
    /* A .cukb name counts even with a wrong magic, so a damaged bundle is refused as a
       bundle rather than read as source. */
    size_t n = strlen(path);
    if (n > 5 && strcmp(path + n - 5, ".cukb") == 0) return true;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char m[4] = {0};
    bool is = fread(m, 1, 4, f) == 4 && memcmp(m, BUNDLE_MAGIC, 4) == 0;
    fclose(f);
    return is;
}

const BundleImage *bundle_pick(const Bundle *b, const char *fn, int major, int minor, char *err, size_t errlen) {
    int dev = major * 10 + minor;
    const BundleImage *best = NULL;
    int best_cc = -1;
    bool any = false;
    for (int i = 0; i < b->nimages; i++) {
        const BundleImage *im = &b->images[i];
        if (strcmp(im->fn, fn) != 0) continue;
        any = true;
        /* The arch comes from the file: read its number only behind the right prefix. */
        const char *pre = im->kind == BI_CUBIN ? "sm_" : "compute_";
        if (strncmp(im->arch, pre, strlen(pre)) != 0) continue;
        int cc = atoi(im->arch + strlen(pre));
        if (im->kind == BI_CUBIN && cc == dev) return im;
        if (im->kind == BI_PTX && cc <= dev && cc > best_cc) best = im, best_cc = cc;
    }
    if (best) return best;
    if (!any) fail(err, errlen, "the bundle has no kernels for %s()", fn);
    else {
        char archs[256] = "";
        for (int i = 0; i < b->nimages; i++)
            if (strcmp(b->images[i].fn, fn) == 0 && strlen(archs) + 20 < sizeof archs) {
                strcat(archs, " ");
                strcat(archs, b->images[i].arch);
            }
        fail(err, errlen, "the bundle's kernels for %s() were built for%s, none of which runs on this sm_%d GPU; rebuild with --arch sm_%d",
             fn, archs, dev, dev);
    }
    return NULL;
}

void bundle_print(FILE *out, const Bundle *b) {
    fprintf(out, "bundle: %s, %zu bytes, cuk %s, NVRTC %d.%d\n", b->source_path, b->file_size, b->cuk_version,
            b->nvrtc_major, b->nvrtc_minor);
    fprintf(out, "entries:\n");
    for (const char *l = b->entries; l && *l;) {
        const char *e = strchr(l, '\n');
        int n = e ? (int)(e - l) : (int)strlen(l);
        fprintf(out, "  %.*s\n", n, l);
        l += n + (e ? 1 : 0);
    }
    fprintf(out, "images:\n");
    for (int i = 0; i < b->nimages; i++)
        fprintf(out, "  %-20s %-12s %-5s %zu bytes\n", b->images[i].fn, b->images[i].arch,
                b->images[i].kind == BI_CUBIN ? "cubin" : "ptx", b->images[i].size);
    if (b->plans) fprintf(out, "kernels:\n%s", b->plans);
}
