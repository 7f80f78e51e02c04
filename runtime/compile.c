/* NVRTC compilation to PTX or cubin (no GPU needed) through the on-disk kernel cache:
   checksummed entries written atomically, verified on every read. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* ---- the directory: used only when it is ours and closed to others -------------------------

   Whoever can write the cache directory decides what the cached kernels compute: entries
   are named by their keys, so another user could plant one for a key we will look up
   (the checksums catch accidents, not people). So the directory must be a directory,
   owned by us (the effective uid) and not writable by group or others. If the last
   component of its path is a symbolic link (~/.cache on a bigger disk, say), the link
   must be ours or root's, and the directory it leads to must pass the same checks. Every
   access then goes through one descriptor of the checked directory (openat, renameat,
   unlinkat), so changing the path afterwards changes nothing. A directory that fails
   is not used at all: the memory cache alone serves, and a warning says so once per
   process. The levels cuk creates are 0700 and its files 0600, whatever the umask. */

typedef struct CacheDir {
    int fd; /* the checked directory, or -1 */
    char path[4096];
    char why[1024]; /* when fd < 0: what is wrong and what to do ("" if there is none yet) */
} CacheDir;

/* Creates the missing levels of cd->path, each 0700: mkdir's mode goes through the umask,
   which may take away the owner's bits too, so fchmod sets it exactly. */
static bool mkdirs(CacheDir *cd) {
    char p[4096];
    snprintf(p, sizeof p, "%s", cd->path);
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0700) == 0) {
            int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            bool ok = fd >= 0 && fchmod(fd, 0700) == 0;
            if (fd >= 0) close(fd);
            if (!ok) {
                snprintf(cd->why, sizeof cd->why, "cannot be given mode 700 (%.900s: %s)", p, strerror(errno));
                return false;
            }
        } else if (errno != EEXIST) {
            snprintf(cd->why, sizeof cd->why,
                     "cannot be created (%.900s: %s); set CUK_CACHE_DIR to a directory you can write", p,
                     strerror(errno));
            return false;
        }
        *s = c;
        if (!c) return true;
    }
}

/* Opens and checks the cache directory, creating it first if create; false with
   cd->why set (empty when create is false and there is no directory yet). */
static bool cache_dir_open(CacheDir *cd, bool create) {
    cd->fd = -1;
    cd->why[0] = 0;
    if (cuk_cache_dir(cd->path, sizeof cd->path)) {
        snprintf(cd->why, sizeof cd->why, "is unknown: %s", cuk_last_error());
        err_clear();
        return false;
    }
    struct stat ls, st;
    if (lstat(cd->path, &ls)) {
        if (errno == ENOENT && !create) return false;
        if (errno != ENOENT || !mkdirs(cd) || lstat(cd->path, &ls)) {
            if (!cd->why[0]) snprintf(cd->why, sizeof cd->why, "cannot be read (%s)", strerror(errno));
            return false;
        }
    }
    uid_t me = geteuid();
    if (S_ISLNK(ls.st_mode) && ls.st_uid != me && ls.st_uid != 0) {
        snprintf(cd->why, sizeof cd->why,
                 "is a symbolic link owned by uid %u, not by you (uid %u), who can point it anywhere; set "
                 "CUK_CACHE_DIR to a directory of your own",
                 (unsigned)ls.st_uid, (unsigned)me);
        return false;
    }
    int fd = open(cd->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(cd->why, sizeof cd->why, "%s%s%s; set CUK_CACHE_DIR to a directory of your own",
                 errno == ENOTDIR ? "is not a directory" : "cannot be opened (",
                 errno == ENOTDIR ? "" : strerror(errno), errno == ENOTDIR ? "" : ")");
    } else if (st.st_uid != me) {
        snprintf(cd->why, sizeof cd->why,
                 "is owned by uid %u, not by you (uid %u); set CUK_CACHE_DIR to a directory of your own",
                 (unsigned)st.st_uid, (unsigned)me);
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(cd->why, sizeof cd->why,
                 "is writable by %s (mode %03o); run 'chmod 700 %.900s' or set CUK_CACHE_DIR to a directory of "
                 "your own",
                 (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "group and others"
                 : st.st_mode & S_IWGRP                          ? "its group"
                                                                 : "others",
                 (unsigned)(st.st_mode & 07777), cd->path);
    } else {
        cd->fd = fd;
        return true;
    }
    if (fd >= 0) close(fd);
    return false;
}

/* One line on stderr when the disk cache is off for a reason the user did not choose,
   once per process (and directory). CUK_QUIET, set to anything, silences it, as it
   silences cukc's notes. */
static void warn_disk_off(const CacheDir *cd) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char warned[4096];
    if (!cd->why[0] || getenv("CUK_QUIET")) return;
    pthread_mutex_lock(&lock);
    if (strcmp(warned, cd->path)) {
        snprintf(warned, sizeof warned, "%s", cd->path);
        fprintf(stderr, "cuk: warning: not using the kernel cache directory %s: it %s (kernels are cached in "
                        "memory only; CUK_QUIET=1 hides this)\n",
                cd->path, cd->why);
    }
    pthread_mutex_unlock(&lock);
}

static void entry_name(char *buf, size_t len, Key k) {
    snprintf(buf, len, "%016llx%016llx" ENTRY_EXT, (unsigned long long)k.a, (unsigned long long)k.b);
}

/* Removes a bad entry, but only if the name still stands for the file we read: another
   process may have renamed a good entry over it meanwhile. */
static void drop_entry(int dfd, const char *name, int fd) {
    struct stat a, b;
    if (fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev)
        unlinkat(dfd, name, 0);
}

/* A verified image from disk, or NULL: missing; not a regular file of ours (a symlink,
   say: ignored, and replaced by the next write); or corrupt (counted and deleted). */
static cuk_image *disk_read(int dfd, const char *name, Key k, cuk_image_kind kind) {
    /* O_NONBLOCK: a FIFO must not hang the open; a regular file does not notice it. */
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    cuk_image *im = NULL;
    unsigned char *buf = NULL;
    struct stat sb;
    Hdr h;
    bool bad = true;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
        close(fd);
        return NULL;
    }
    if (sb.st_size < HDR_SIZE || !read_all(fd, &h, sizeof h)) goto out;
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
        drop_entry(dfd, name, fd);
    }
    free(buf);
    close(fd);
    return im;
}

/* Writes an entry to a unique temporary file (0600) and renames it into place: readers
   see either no entry or a whole one. Failure only costs a recompile later. */
static void disk_write(int dfd, const char *name, Key k, const cuk_image *im) {
    static _Atomic unsigned seq;
    char tmp[128];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, sizeof tmp, ".tmp-%016llx-%ld-%u-%lx", (unsigned long long)k.a, (long)getpid(),
             atomic_fetch_add(&seq, 1), (unsigned long)ts.tv_nsec);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
    /* fchmod: the umask may have taken the owner's bits too. */
    bool ok = fchmod(fd, 0600) == 0 && write_all(fd, &h, sizeof h) && !fault_hit(FAULT_CACHE_WRITE) &&
              write_all(fd, im->names, im->names_len) && write_all(fd, im->data, im->size);
    ok = close(fd) == 0 && ok;
    if (ok && renameat(dfd, tmp, dfd, name) == 0) {
        atomic_fetch_add(&n_writes, 1);
        return;
    }
    unlinkat(dfd, tmp, 0);
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

static bool disk_cache_disabled_by_env(void) {
    const char *e = getenv("CUK_DISABLE_DISK_CACHE");
    return e && *e && strcmp(e, "0");
}

cuk_status compile_keyed(const char *source, const cuk_compile_opts *o, const char *arch,
                         cuk_image_kind kind, Key k, cuk_image **out) {
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    char name[64];
    CacheDir cd = {.fd = -1};
    /* A cache we cannot use is not a reason to fail the compile. */
    if (!(o && o->no_disk_cache) && !disk_cache_disabled_by_env() && !cache_dir_open(&cd, true))
        warn_disk_off(&cd);
    if (cd.fd >= 0) {
        entry_name(name, sizeof name, k);
        cuk_image *im = disk_read(cd.fd, name, k, kind);
        if (im) {
            close(cd.fd);
            atomic_fetch_add(&n_disk_hits, 1);
            *out = im;
            return CUK_OK;
        }
    }
    atomic_fetch_add(&n_misses, 1);
    cuk_status s = nvrtc_compile(n, source, o, arch, kind, out);
    if (!s && cd.fd >= 0) disk_write(cd.fd, name, k, *out);
    if (cd.fd >= 0) close(cd.fd);
    return s;
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
    CacheDir cd;
    bool ok = cache_dir_open(&cd, false);
    if (disk_cache_disabled_by_env()) snprintf(s->disk_off, sizeof s->disk_off, "CUK_DISABLE_DISK_CACHE is set");
    else if (cd.why[0]) snprintf(s->disk_off, sizeof s->disk_off, "the directory %s", cd.why);
    if (!ok) return CUK_OK; /* none yet (zero entries), or one we do not read */
    DIR *d = fdopendir(cd.fd);
    if (!d) {
        close(cd.fd);
        return CUK_OK;
    }
    struct dirent *e;
    uid_t me = geteuid();
    while ((e = readdir(d))) {
        struct stat sb;
        if (!is_entry(e->d_name) || fstatat(cd.fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode) ||
            sb.st_uid != me)
            continue;
        s->entries++;
        s->bytes += (unsigned long long)sb.st_size;
    }
    closedir(d);
    return CUK_OK;
}

cuk_status cuk_cache_clear(void) {
    atomic_store(&n_mem_hits, 0);
    atomic_store(&n_disk_hits, 0);
    atomic_store(&n_misses, 0);
    atomic_store(&n_writes, 0);
    atomic_store(&n_corrupt, 0);
    CacheDir cd;
    if (!cache_dir_open(&cd, false)) {
        /* None yet: nothing to clear. One that fails the checks may hold other users'
           files: not ours to delete. */
        if (!cd.why[0]) return CUK_OK;
        return err_set(CUK_ERR_IO, "not clearing the kernel cache directory %s: it %s", cd.path, cd.why);
    }
    DIR *d = fdopendir(cd.fd);
    if (!d) {
        int e = errno;
        close(cd.fd);
        return err_set(CUK_ERR_IO, "cannot read %s: %s", cd.path, strerror(e));
    }
    struct dirent *e;
    cuk_status res = CUK_OK;
    while ((e = readdir(d))) {
        /* Only our files: entries and temporary files older than a minute (a younger
           one may be a concurrent writer's). */
        bool tmp = !strncmp(e->d_name, ".tmp-", 5);
        if (!is_entry(e->d_name) && !tmp) continue;
        if (tmp) {
            struct stat sb;
            if (fstatat(cd.fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || time(NULL) - sb.st_mtime < 60) continue;
        }
        if (unlinkat(cd.fd, e->d_name, 0) && errno != ENOENT && !res)
            res = err_set(CUK_ERR_IO, "cannot delete %s/%s: %s", cd.path, e->d_name, strerror(errno));
    }
    closedir(d);
    return res;
}
