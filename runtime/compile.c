/* NVRTC compilation to PTX or cubin (no GPU needed) through the on-disk kernel cache:
   checksummed entries written atomically, verified on every read. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "internal.h"

#ifndef CUK_VERSION
#define CUK_VERSION "0.0.0"
#endif

/* ---- hashing -------------------------------------------------------------------------- */

static inline uint64_t mum(uint64_t a, uint64_t b) {
    __extension__ typedef unsigned __int128 u128;
    u128 r = (u128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t rd64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define P0 0xa0761d6478bd642full
#define P1 0xe7037ed1a0b428dbull
#define P2 0x8ebc6af09c88c6e3ull
#define P3 0x589965cc75374cc3ull

/* Two independent 64-bit chains in one pass (a wyhash-style multiply-mix): fast enough
   that hashing a kernel's source stays a small part of a memory-cache hit. */
static void hash128(const void *p, size_t n, uint64_t *h1, uint64_t *h2) {
    const unsigned char *s = p;
    uint64_t a = *h1 ^ mum(n ^ P0, P1), b = *h2 ^ mum(n ^ P2, P3);
    while (n >= 16) {
        uint64_t x = rd64(s), y = rd64(s + 8);
        a = mum(x ^ P1 ^ a, y ^ P2);
        b = mum(y ^ P3 ^ b, x ^ P0);
        s += 16;
        n -= 16;
    }
    unsigned char tail[16] = {0};
    memcpy(tail, s, n);
    uint64_t x = rd64(tail), y = rd64(tail + 8);
    a = mum(x ^ P1 ^ a, y ^ P2 ^ n);
    b = mum(y ^ P3 ^ b, x ^ P0 ^ n);
    *h1 = mum(a ^ P3, P0);
    *h2 = mum(b ^ P1, P2);
}

uint64_t hash64(const void *p, size_t n, uint64_t seed) {
    uint64_t a = seed, b = ~seed;
    hash128(p, n, &a, &b);
    return a;
}

/* FNV-1a 64: the entries' checksum, a well-known function anyone can re-check. */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_BASIS 0xcbf29ce484222325ull

/* ---- arch selection --------------------------------------------------------------------- */

/* "sm_90" / "sm_90a" / "compute_90" -> 90, virtual?; -1 if malformed. */
static int parse_arch(const char *arch, bool *virt) {
    const char *p;
    if (!strncmp(arch, "sm_", 3)) p = arch + 3, *virt = false;
    else if (!strncmp(arch, "compute_", 8)) p = arch + 8, *virt = true;
    else return -1;
    int v = 0, digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 4) v = v * 10 + (*p++ - '0'), digits++;
    if (digits < 2) return -1;
    if (*p == 'a' || *p == 'f') p++;
    return *p ? -1 : v;
}

static void arch_list(const Nvrtc *n, char *buf, size_t len) {
    size_t u = 0;
    buf[0] = 0;
    for (int i = 0; i < n->narchs && u < len; i++)
        u += (size_t)snprintf(buf + u, len - u, "%ssm_%d", i ? " " : "", n->archs[i]);
}

static bool nvrtc_knows(const Nvrtc *n, int v) {
    for (int i = 0; i < n->narchs; i++)
        if (n->archs[i] == v) return true;
    return n->narchs == 0; /* a list we could not read: let NVRTC decide */
}

cuk_status cuk_arch_for(int cc_major, int cc_minor, char *arch, size_t archlen, cuk_image_kind *kind) {
    if (!arch || !kind || archlen < 16) return err_set(CUK_ERR_INVALID, "cuk_arch_for: bad argument");
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    int v = cc_major * 10 + cc_minor;
    if (nvrtc_knows(n, v)) {
        snprintf(arch, archlen, "sm_%d", v);
        *kind = CUK_IMAGE_CUBIN;
        return CUK_OK;
    }
    /* A device newer than this NVRTC: PTX of the newest arch it knows, JIT-compiled
       by the driver. */
    int best = -1;
    for (int i = 0; i < n->narchs; i++)
        if (n->archs[i] <= v && n->archs[i] > best) best = n->archs[i];
    if (best < 0) {
        char list[512];
        arch_list(n, list, sizeof list);
        return err_set(CUK_ERR_COMPILE,
                       "NVRTC %d.%d cannot compile for compute capability %d.%d (it supports %s); use an "
                       "older CUDA toolkit's NVRTC (CUK_NVRTC=path) or --device cpu",
                       n->major, n->minor, cc_major, cc_minor, list);
    }
    snprintf(arch, archlen, "compute_%d", best);
    *kind = CUK_IMAGE_PTX;
    return CUK_OK;
}

/* ---- keys ------------------------------------------------------------------------------- */

static void mix_str(const char *s, uint64_t *a, uint64_t *b) {
    /* Length-prefixed (hash128 mixes n in), so ("ab","c") != ("a","bc"). */
    hash128(s ? s : "", s ? strlen(s) : 0, a, b);
}

cuk_status compile_key(const char *source, const cuk_compile_opts *o, const char *arch,
                       cuk_image_kind kind, Key *k) {
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
    uint64_t fixed[4] = {(uint64_t)n->major, (uint64_t)n->minor, (uint64_t)kind,
                         (uint64_t)(o ? o->noptions : 0) << 32 | (uint64_t)(o ? o->nnames : 0)};
    hash128(fixed, sizeof fixed, &a, &b);
    mix_str(CUK_VERSION, &a, &b);
    mix_str(arch, &a, &b);
    mix_str(source, &a, &b);
    for (int i = 0; o && i < o->noptions; i++) mix_str(o->options[i], &a, &b);
    for (int i = 0; o && i < o->nnames; i++) mix_str(o->names[i], &a, &b);
    /* program_name shows up in messages only on a failed compile (never cached), but
       also in __FILE__; include it so the cached output is exactly what NVRTC gives. */
    mix_str(o && o->program_name ? o->program_name : "", &a, &b);
    k->a = a;
    k->b = b;
    return CUK_OK;
}

/* ---- cache statistics --------------------------------------------------------------------- */

static _Atomic unsigned long long n_mem_hits, n_disk_hits, n_misses, n_writes, n_corrupt;

void cache_count_mem_hit(void) { atomic_fetch_add_explicit(&n_mem_hits, 1, memory_order_relaxed); }

/* ---- the disk cache ------------------------------------------------------------------------- */

#define MAGIC "CUKCACHE"
#define FORMAT_VERSION 1u
#define HDR_SIZE 64
#define ENTRY_EXT ".cukc"

/* Header layout (little-endian, as written by this machine): magic[8] version:u32
   kind:u32 key_a:u64 key_b:u64 names_len:u64 image_len:u64 payload_fnv:u64
   header_fnv:u64 (over the 56 bytes before it). The payload follows: names, image. */
typedef struct Hdr {
    char magic[8];
    uint32_t version, kind;
    uint64_t key_a, key_b, names_len, image_len, payload_sum, header_sum;
} Hdr;
_Static_assert(sizeof(Hdr) == HDR_SIZE, "cache header must be 64 bytes");

cuk_status cuk_cache_dir(char *buf, size_t len) {
    if (!buf || !len) return err_set(CUK_ERR_INVALID, "cuk_cache_dir: bad argument");
    const char *e = getenv("CUK_CACHE_DIR");
    int n;
    if (e && *e) n = snprintf(buf, len, "%s", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e) n = snprintf(buf, len, "%s/cuk", e);
    else if ((e = getenv("HOME")) && *e) n = snprintf(buf, len, "%s/.cache/cuk", e);
    else return err_set(CUK_ERR_IO, "no kernel cache directory: set CUK_CACHE_DIR (or HOME)");
    if (n < 0 || (size_t)n >= len) return err_set(CUK_ERR_IO, "kernel cache directory path too long");
    return CUK_OK;
}

static cuk_status mkdirs(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) && errno != EEXIST)
            return err_set(CUK_ERR_IO, "cannot create kernel cache directory %s: %s", p, strerror(errno));
        *s = '/';
    }
    if (mkdir(p, 0755) && errno != EEXIST)
        return err_set(CUK_ERR_IO, "cannot create kernel cache directory %s: %s", p, strerror(errno));
    return CUK_OK;
}

static void entry_path(char *buf, size_t len, const char *dir, Key k) {
    snprintf(buf, len, "%s/%016llx%016llx" ENTRY_EXT, dir, (unsigned long long)k.a,
             (unsigned long long)k.b);
}

static bool read_all(int fd, void *buf, size_t n) {
    unsigned char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t n) {
    const unsigned char *p = buf;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

/* Removes a bad entry, but only if the path still names the file we read: another
   process may have renamed a good entry over it meanwhile. */
static void drop_entry(const char *path, int fd) {
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
        unlink(path);
}

/* A verified image from disk, or NULL (missing, or corrupt: counted and deleted). */
static cuk_image *disk_read(const char *path, Key k, cuk_image_kind kind) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    cuk_image *im = NULL;
    unsigned char *buf = NULL;
    struct stat sb;
    Hdr h;
    bool bad = true;
    if (fstat(fd, &sb) || sb.st_size < HDR_SIZE || !read_all(fd, &h, sizeof h)) goto out;
    if (memcmp(h.magic, MAGIC, 8) || h.version != FORMAT_VERSION) goto out;
    if (fnv1a(&h, offsetof(Hdr, header_sum), FNV_BASIS) != h.header_sum) goto out;
    if (h.key_a != k.a || h.key_b != k.b || h.kind != (uint32_t)kind) goto out;
    if (h.names_len > (uint64_t)sb.st_size || h.image_len > (uint64_t)sb.st_size ||
        HDR_SIZE + h.names_len + h.image_len != (uint64_t)sb.st_size)
        goto out;
    size_t plen = (size_t)(h.names_len + h.image_len);
    buf = malloc(plen ? plen : 1);
    if (!buf) {
        bad = false; /* our problem, not the file's */
        goto out;
    }
    if (!read_all(fd, buf, plen) || fnv1a(buf, plen, FNV_BASIS) != h.payload_sum) goto out;
    if (h.names_len && buf[h.names_len - 1] != 0) goto out;
    im = calloc(1, sizeof *im);
    if (!im) {
        bad = false;
        goto out;
    }
    im->kind = kind;
    im->names_len = (size_t)h.names_len;
    im->size = (size_t)h.image_len;
    im->names = malloc(im->names_len + 1);
    im->data = malloc(im->size + 1);
    if (!im->names || !im->data) {
        cuk_image_free(im);
        im = NULL;
        bad = false;
        goto out;
    }
    memcpy(im->names, buf, im->names_len);
    memcpy(im->data, buf + im->names_len, im->size);
    bad = false;
out:
    if (bad) {
        atomic_fetch_add(&n_corrupt, 1);
        drop_entry(path, fd);
    }
    free(buf);
    close(fd);
    return im;
}

/* Writes an entry to a unique temporary file and renames it into place: readers see
   either no entry or a whole one. Failure only costs a recompile later. */
static void disk_write(const char *dir, const char *path, Key k, const cuk_image *im) {
    static _Atomic unsigned seq;
    char tmp[4200];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%016llx-%ld-%u-%lx", dir, (unsigned long long)k.a, (long)getpid(),
             atomic_fetch_add(&seq, 1), (unsigned long)ts.tv_nsec);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;
    Hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, 8);
    h.version = FORMAT_VERSION;
    h.kind = (uint32_t)im->kind;
    h.key_a = k.a;
    h.key_b = k.b;
    h.names_len = im->names_len;
    h.image_len = im->size;
    h.payload_sum = fnv1a(im->data, im->size, fnv1a(im->names, im->names_len, FNV_BASIS));
    h.header_sum = fnv1a(&h, offsetof(Hdr, header_sum), FNV_BASIS);
    bool ok = write_all(fd, &h, sizeof h) && !fault_hit(FAULT_CACHE_WRITE) &&
              write_all(fd, im->names, im->names_len) && write_all(fd, im->data, im->size);
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0) {
        atomic_fetch_add(&n_writes, 1);
        return;
    }
    unlink(tmp);
}

/* ---- NVRTC ------------------------------------------------------------------------------------ */

static cuk_status nvrtc_compile(const Nvrtc *n, const char *source, const cuk_compile_opts *o,
                                const char *arch, cuk_image_kind kind, cuk_image **out) {
    const char *pname = o && o->program_name ? o->program_name : "cuk_kernel.cu";
    nvrtcProgram prog;
    nvrtcResult r = n->nvrtcCreateProgram(&prog, source, pname, 0, NULL, NULL);
    if (r) return err_set(CUK_ERR_COMPILE, "nvrtcCreateProgram failed: %s", n->nvrtcGetErrorString(r));
    cuk_status s = CUK_OK;
    char *log = NULL;
    cuk_image *im = NULL;
    int nopt = o ? o->noptions : 0;
    const char **opts = malloc(sizeof *opts * (size_t)(nopt + 1));
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    if (!opts) {
        s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    opts[0] = archopt;
    for (int i = 0; i < nopt; i++) opts[i + 1] = o->options[i];
    for (int i = 0; o && i < o->nnames; i++)
        if ((r = n->nvrtcAddNameExpression(prog, o->names[i]))) {
            s = err_set(CUK_ERR_INVALID, "nvrtcAddNameExpression(\"%s\") failed: %s", o->names[i],
                        n->nvrtcGetErrorString(r));
            goto done;
        }
    r = fault_hit(FAULT_NVRTC) ? 1 /* NVRTC_ERROR_OUT_OF_MEMORY */ : n->nvrtcCompileProgram(prog, nopt + 1, opts);
    size_t loglen = 0;
    n->nvrtcGetProgramLogSize(prog, &loglen);
    log = malloc(loglen + 1);
    if (log) {
        log[0] = 0;
        if (loglen) n->nvrtcGetProgramLog(prog, log);
        log[loglen] = 0;
    }
    if (r) {
        s = err_set(CUK_ERR_COMPILE, "NVRTC %d.%d failed to compile %s for %s: %s\n%s", n->major, n->minor,
                    pname, arch, n->nvrtcGetErrorString(r), log && *log ? log : "(no log)");
        goto done;
    }
    im = calloc(1, sizeof *im);
    if (!im) {
        s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    im->kind = kind;
    /* Names: "expr\0lowered\0" pairs, saved with the image so a disk hit needs no NVRTC. */
    size_t nl = 0;
    for (int i = 0; o && i < o->nnames; i++) {
        const char *low = NULL;
        if ((r = n->nvrtcGetLoweredName(prog, o->names[i], &low)) || !low) {
            s = err_set(CUK_ERR_NOT_FOUND, "nvrtcGetLoweredName(\"%s\") failed: %s", o->names[i],
                        n->nvrtcGetErrorString(r));
            goto done;
        }
        size_t a = strlen(o->names[i]) + 1, b = strlen(low) + 1;
        char *nn = realloc(im->names, nl + a + b);
        if (!nn) {
            s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
            goto done;
        }
        im->names = nn;
        memcpy(nn + nl, o->names[i], a);
        memcpy(nn + nl + a, low, b);
        nl += a + b;
    }
    if (!im->names) im->names = malloc(1);
    im->names_len = nl;
    size_t sz = 0;
    r = kind == CUK_IMAGE_CUBIN ? n->nvrtcGetCUBINSize(prog, &sz) : n->nvrtcGetPTXSize(prog, &sz);
    if (r || sz == 0) {
        s = err_set(CUK_ERR_COMPILE, "NVRTC produced no %s for %s: %s", kind == CUK_IMAGE_CUBIN ? "cubin" : "PTX",
                    arch, r ? n->nvrtcGetErrorString(r) : "empty output");
        goto done;
    }
    im->data = malloc(sz + 1);
    if (!im->data || !im->names) {
        s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    r = kind == CUK_IMAGE_CUBIN ? n->nvrtcGetCUBIN(prog, (char *)im->data) : n->nvrtcGetPTX(prog, (char *)im->data);
    if (r) {
        s = err_set(CUK_ERR_COMPILE, "NVRTC could not return the output: %s", n->nvrtcGetErrorString(r));
        goto done;
    }
    im->data[sz] = 0;
    im->size = sz;
done:
    n->nvrtcDestroyProgram(&prog);
    free(opts);
    free(log);
    if (s) {
        cuk_image_free(im);
        return s;
    }
    *out = im;
    return CUK_OK;
}

static bool disk_cache_enabled(const cuk_compile_opts *o) {
    if (o && o->no_disk_cache) return false;
    const char *e = getenv("CUK_DISABLE_DISK_CACHE");
    return !(e && *e && strcmp(e, "0"));
}

cuk_status compile_keyed(const char *source, const cuk_compile_opts *o, const char *arch,
                         cuk_image_kind kind, Key k, cuk_image **out) {
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    char dir[4096], path[4200];
    bool use_disk = disk_cache_enabled(o);
    if (use_disk) {
        /* A cache we cannot use is not a reason to fail the compile. */
        if (cuk_cache_dir(dir, sizeof dir) || mkdirs(dir)) use_disk = false;
        err_clear();
    }
    if (use_disk) {
        entry_path(path, sizeof path, dir, k);
        cuk_image *im = disk_read(path, k, kind);
        if (im) {
            atomic_fetch_add(&n_disk_hits, 1);
            *out = im;
            return CUK_OK;
        }
    }
    atomic_fetch_add(&n_misses, 1);
    cuk_status s = nvrtc_compile(n, source, o, arch, kind, out);
    if (s) return s;
    if (use_disk) disk_write(dir, path, k, *out);
    return CUK_OK;
}

cuk_status cuk_compile(const char *source, const cuk_compile_opts *o, cuk_image **out) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_compile: NULL output");
    *out = NULL;
    if (!source) return err_set(CUK_ERR_INVALID, "cuk_compile: NULL source");
    if (!o || !o->arch) return err_set(CUK_ERR_INVALID, "cuk_compile: no target arch (e.g. \"sm_90\")");
    if ((o->noptions && !o->options) || (o->nnames && !o->names) || o->noptions < 0 || o->nnames < 0)
        return err_set(CUK_ERR_INVALID, "cuk_compile: bad option or name list");
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    bool virt;
    int v = parse_arch(o->arch, &virt);
    if (v < 0 || strlen(o->arch) > 20)
        return err_set(CUK_ERR_INVALID, "bad GPU architecture '%s': expected sm_XY (e.g. sm_90) or compute_XY",
                       o->arch);
    if (!nvrtc_knows(n, v)) {
        char list[512];
        arch_list(n, list, sizeof list);
        return err_set(CUK_ERR_INVALID, "NVRTC %d.%d does not support %s (it supports %s)", n->major, n->minor,
                       o->arch, list);
    }
    char arch[32];
    if (o->kind == CUK_IMAGE_CUBIN) {
        if (virt)
            return err_set(CUK_ERR_INVALID, "cannot make a cubin for the virtual architecture %s; use sm_%s",
                           o->arch, o->arch + 8);
        snprintf(arch, sizeof arch, "%s", o->arch);
    } else if (o->kind == CUK_IMAGE_PTX) {
        /* PTX for a real arch means the virtual arch behind it. */
        snprintf(arch, sizeof arch, virt ? "%s" : "compute_%s", virt ? o->arch : o->arch + 3);
    } else {
        return err_set(CUK_ERR_INVALID, "cuk_compile: bad image kind %d", (int)o->kind);
    }
    Key k;
    cuk_status s = compile_key(source, o, arch, o->kind, &k);
    if (s) return s;
    return compile_keyed(source, o, arch, o->kind, k, out);
}

cuk_status cuk_image_data(const cuk_image *im, const void **data, size_t *size) {
    if (!im || !data || !size) return err_set(CUK_ERR_INVALID, "cuk_image_data: NULL argument");
    /* NVRTC's PTX size already counts the terminating NUL cuModuleLoadData wants. */
    *data = im->data;
    *size = im->size;
    return CUK_OK;
}

cuk_image_kind cuk_image_get_kind(const cuk_image *im) { return im ? im->kind : CUK_IMAGE_PTX; }

const char *cuk_image_lowered_name(const cuk_image *im, const char *name) {
    if (!im || !name) return name;
    for (size_t i = 0; i < im->names_len;) {
        const char *expr = im->names + i;
        const char *low = expr + strlen(expr) + 1;
        if (!strcmp(expr, name)) return low;
        i = (size_t)(low + strlen(low) + 1 - im->names);
    }
    return name;
}

void cuk_image_free(cuk_image *im) {
    if (!im) return;
    free(im->data);
    free(im->names);
    free(im);
}

/* ---- cache stats and clear ----------------------------------------------------------------------- */

static bool is_entry(const char *name) {
    size_t n = strlen(name);
    return n == 32 + strlen(ENTRY_EXT) && !strcmp(name + 32, ENTRY_EXT) && strspn(name, "0123456789abcdef") == 32;
}

cuk_status cuk_cache_stats_get(cuk_cache_stats *s) {
    if (!s) return err_set(CUK_ERR_INVALID, "cuk_cache_stats_get: NULL argument");
    memset(s, 0, sizeof *s);
    s->mem_hits = atomic_load(&n_mem_hits);
    s->disk_hits = atomic_load(&n_disk_hits);
    s->misses = atomic_load(&n_misses);
    s->disk_writes = atomic_load(&n_writes);
    s->corrupt = atomic_load(&n_corrupt);
    cuk_status st = cuk_cache_dir(s->dir, sizeof s->dir);
    if (st) return st;
    DIR *d = opendir(s->dir);
    if (!d) return CUK_OK; /* no cache yet: zero entries */
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d))) {
        if (!is_entry(e->d_name)) continue;
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        if (stat(path, &sb)) continue;
        s->entries++;
        s->bytes += (unsigned long long)sb.st_size;
    }
    closedir(d);
    return CUK_OK;
}

cuk_status cuk_cache_clear(void) {
    char dir[4096];
    cuk_status st = cuk_cache_dir(dir, sizeof dir);
    if (st) return st;
    atomic_store(&n_mem_hits, 0);
    atomic_store(&n_disk_hits, 0);
    atomic_store(&n_misses, 0);
    atomic_store(&n_writes, 0);
    atomic_store(&n_corrupt, 0);
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? CUK_OK : err_set(CUK_ERR_IO, "cannot read %s: %s", dir, strerror(errno));
    struct dirent *e;
    char path[8192];
    cuk_status res = CUK_OK;
    while ((e = readdir(d))) {
        /* Only our files: entries and temporary files older than a minute (a younger
           one may be a concurrent writer's). */
        bool tmp = !strncmp(e->d_name, ".tmp-", 5);
        if (!is_entry(e->d_name) && !tmp) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (tmp) {
            struct stat sb;
            if (stat(path, &sb) || time(NULL) - sb.st_mtime < 60) continue;
        }
        if (unlink(path) && errno != ENOENT && !res)
            res = err_set(CUK_ERR_IO, "cannot delete %s: %s", path, strerror(errno));
    }
    closedir(d);
    return res;
}
