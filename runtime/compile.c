/* NVRTC compilation to PTX or cubin (no GPU needed) through the on-disk kernel cache:
   checksummed entries written atomically, verified on every read. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
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

/* The NVRTC library in use: nvrtcVersion says 13.0 for every 13.0 update, but an update
   changes the code it generates and its built-in headers (crt/..., compiled into
   libnvrtc-builtins). So the key also holds the real path, size and mtime of both
   libraries, found once per process. */
static void nvrtc_identity(const Nvrtc *n, uint64_t *a, uint64_t *b) {
    static _Atomic int state; /* 0 not yet, 1 being computed, 2 done */
    static uint64_t id[2];
    if (atomic_load(&state) != 2) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&state, &expect, 1)) {
            uint64_t x = 0x452821e638d01377ull, y = 0xbe5466cf34e90c6cull;
            Dl_info info;
            char real[PATH_MAX], builtins[PATH_MAX + 64];
            if (dladdr(*(void **)&n->nvrtcVersion, &info) && info.dli_fname &&
                realpath(info.dli_fname, real)) {
                snprintf(builtins, sizeof builtins, "%s", real);
                char *slash = strrchr(builtins, '/');
                snprintf(slash ? slash + 1 : builtins, sizeof builtins - (size_t)(slash ? slash + 1 - builtins : 0),
                         "libnvrtc-builtins.so.%d.%d", n->major, n->minor);
                const char *files[2] = {real, builtins};
                for (int i = 0; i < 2; i++) {
                    struct stat sb;
                    uint64_t v[3] = {0, 0, 0};
                    if (stat(files[i], &sb) == 0)
                        v[0] = (uint64_t)sb.st_size, v[1] = (uint64_t)sb.st_mtim.tv_sec,
                        v[2] = (uint64_t)sb.st_mtim.tv_nsec;
                    mix_str(files[i], &x, &y);
                    hash128(v, sizeof v, &x, &y);
                }
            }
            id[0] = x, id[1] = y;
            atomic_store(&state, 2);
        } else {
            while (atomic_load(&state) != 2) sched_yield();
        }
    }
    hash128(id, sizeof id, a, b);
}

/* ---- included files in the key ----------------------------------------------------------

   Raw CUDA C may #include files (SourceModule's include_dirs): their contents decide the
   output as much as the source does, so the key hashes every file the source can include,
   found as NVRTC finds it: "name" in the including file's directory (for the source
   itself, the directory of its program name, by default the current one), then in the
   -I / --include-path directories in order; <name> in those directories only. NVRTC has
   no other search path (no system directories); its built-in headers are compiled into
   the library, whose identity is in the key. A name found nowhere is skipped: NVRTC
   cannot find it either, so it sits in a branch not taken or a comment, or the compile
   fails and nothing is cached. Files are scanned recursively; the scan over-approximates
   (it does not evaluate #if), which can only cost a miss, never a stale hit. What it
   cannot follow keeps the source out of both caches: #include MACRO, #include_next,
   __has_include in an #if (it asks whether a file exists), a header found but not a
   readable regular file, more than INC_MAX_FILES files or INC_MAX_BYTES bytes. The
   source's own #include lines are read once per process (inc_memo); cuk's kernels name
   only headers in branches NVRTC never takes (<math.h>, "ops.h"), which costs them one
   access() per key. */

enum { INC_MAX_FILES = 4096, INC_MAX_DEPTH = 64, INC_MAX_BYTES = 256 << 20 };

typedef struct IncScan {
    const char *const *dirs; /* -I directories, in order */
    int ndirs;
    struct {
        dev_t dev;
        ino_t ino;
    } *seen; /* files already hashed */
    int nseen, cap;
    size_t bytes;
    bool uncacheable;
    uint64_t *a, *b;
    /* When set, inc_scan_text lists the names ('"' or '<', the name, NUL) instead of
       looking them up: the top-level source's list is remembered (inc_memo). */
    char *list;
    size_t list_len, list_cap;
} IncScan;

/* The -I / --include-path directories and the -include / --pre-include files. */
static int inc_options(const cuk_compile_opts *o, const char **dirs, const char **pre, int *npre) {
    int nd = 0;
    *npre = 0;
    for (int i = 0; o && i < o->noptions; i++) {
        const char *s = o->options[i], *next = i + 1 < o->noptions ? o->options[i + 1] : "";
        if (!strcmp(s, "-I") || !strcmp(s, "--include-path")) dirs[nd++] = next, i++;
        else if (!strncmp(s, "--include-path=", 15)) dirs[nd++] = s + 15;
        else if (!strncmp(s, "-I", 2)) dirs[nd++] = s + 2;
        else if (!strcmp(s, "-include") || !strcmp(s, "--pre-include")) pre[(*npre)++] = next, i++;
        else if (!strncmp(s, "--pre-include=", 14)) pre[(*npre)++] = s + 14;
    }
    return nd;
}

static void inc_file(IncScan *sc, const char *path, int depth);

/* Hashes dir[0..dirlen)/name[0..len) if it exists; false if not. */
static bool inc_try(IncScan *sc, const char *dir, size_t dirlen, const char *name, size_t len, int depth) {
    char *path = malloc(dirlen + len + 2);
    if (!path) {
        sc->uncacheable = true;
        return false;
    }
    memcpy(path, dir, dirlen);
    size_t at = dirlen;
    if (dirlen) path[at++] = '/';
    memcpy(path + at, name, len);
    path[at + len] = 0;
    bool found = access(path, F_OK) == 0;
    if (found) inc_file(sc, path, depth + 1);
    free(path);
    return found;
}

/* Finds name[0..len) as NVRTC does and hashes it: "name" in the includer's directory
   dir[0..dirlen) first ("" is the current one), then the -I directories; false if it
   is nowhere. */
static bool inc_resolve(IncScan *sc, const char *name, size_t len, bool quoted, const char *dir, size_t dirlen,
                        int depth) {
    if (len == 0 || len > PATH_MAX) {
        sc->uncacheable = true;
        return false;
    }
    if (name[0] == '/') return inc_try(sc, "", 0, name, len, depth);
    if (quoted && inc_try(sc, dir, dirlen, name, len, depth)) return true;
    for (int i = 0; i < sc->ndirs; i++)
        if (inc_try(sc, sc->dirs[i], strlen(sc->dirs[i]), name, len, depth)) return true;
    return false;
}

/* The end of the directive that starts at p: the first newline not escaped by a
   backslash (memchr: the emitted kernels have long multi-line #defines). */
static const char *directive_end(const char *p, const char *end) {
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return end;
        if (nl[-1] != '\\' && !(nl[-1] == '\r' && nl - 1 > p && nl[-2] == '\\')) return nl;
        p = nl + 1;
    }
}

/* Scans one text for #include lines (and for what the key cannot follow). Only the
   directive names are read; a '#' not first on its line is no directive. */
static void inc_scan_text(IncScan *sc, const char *text, size_t n, const char *dir, size_t dirlen, int depth) {
    const char *end = text + n;
    for (const char *h = memchr(text, '#', n); h && !sc->uncacheable;
         h = h + 1 < end ? memchr(h + 1, '#', (size_t)(end - h - 1)) : NULL) {
        const char *q = h;
        while (q > text && (q[-1] == ' ' || q[-1] == '\t')) q--;
        if (q > text && q[-1] != '\n' && q[-1] != '\r') continue;
        const char *p = h + 1;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        size_t w = 0;
        while (p + w < end && w < 16 && ((p[w] >= 'a' && p[w] <= 'z') || p[w] == '_')) w++;
#define IS(word) (w == sizeof word - 1 && !memcmp(p, word, w))
        if (IS("if") || IS("elif")) {
            /* __has_include(x) asks whether a file exists, which the key cannot see when
               the text does not also #include x. */
            const char *eol = directive_end(p, end);
            if (memmem(p, (size_t)(eol - p), "__has_include", 13)) sc->uncacheable = true;
            h = eol - 1;
            continue;
        }
        if (IS("include_next") || IS("import")) sc->uncacheable = true;
        if (!IS("include")) continue;
#undef IS
        p += w;
        const char *eol = directive_end(p, end);
        while (p < eol && (*p == ' ' || *p == '\t')) p++;
        char close = p < eol && *p == '"' ? '"' : p < eol && *p == '<' ? '>' : 0;
        const char *nm = p + 1, *ne = close ? memchr(nm, close, (size_t)(eol - nm)) : NULL;
        if (!ne) { /* #include MACRO */
            sc->uncacheable = true;
            return;
        }
        if (!sc->list_cap) {
            inc_resolve(sc, nm, (size_t)(ne - nm), close == '"', dir, dirlen, depth);
        } else {
            size_t len = (size_t)(ne - nm), need = sc->list_len + len + 2;
            if (need > sc->list_cap) {
                size_t cap = 2 * need;
                char *l = realloc(sc->list, cap);
                if (!l) {
                    sc->uncacheable = true;
                    return;
                }
                sc->list = l, sc->list_cap = cap;
            }
            sc->list[sc->list_len] = close == '"' ? '"' : '<';
            memcpy(sc->list + sc->list_len + 1, nm, len);
            sc->list[sc->list_len + 1 + len] = 0;
            sc->list_len = need;
        }
        h = eol - 1;
    }
}

/* Hashes one header (its path and bytes) once, then what it includes. */
static void inc_file(IncScan *sc, const char *path, int depth) {
    int fd = depth > INC_MAX_DEPTH ? -1 : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        sc->uncacheable = true;
        return;
    }
    for (int i = 0; i < sc->nseen; i++)
        if (sc->seen[i].dev == sb.st_dev && sc->seen[i].ino == sb.st_ino) {
            close(fd);
            return;
        }
    sc->bytes += (size_t)sb.st_size;
    char *buf = NULL;
    if (sc->nseen == sc->cap && sc->nseen < INC_MAX_FILES) {
        int cap = sc->cap ? 2 * sc->cap : 16;
        void *s = realloc(sc->seen, sizeof *sc->seen * (size_t)cap);
        if (s) sc->seen = s, sc->cap = cap;
    }
    size_t n = (size_t)sb.st_size;
    if (sc->nseen < sc->cap && sc->bytes <= INC_MAX_BYTES) buf = malloc(n ? n : 1);
    bool ok = buf && read_all(fd, buf, n);
    close(fd);
    if (!ok) {
        free(buf);
        sc->uncacheable = true;
        return;
    }
    sc->seen[sc->nseen].dev = sb.st_dev;
    sc->seen[sc->nseen++].ino = sb.st_ino;
    mix_str(path, sc->a, sc->b);
    hash128(buf, n, sc->a, sc->b);
    const char *slash = strrchr(path, '/');
    inc_scan_text(sc, buf, n, path, slash ? (slash == path ? 1 : (size_t)(slash - path)) : 0, depth);
    free(buf);
}

/* The #include lines of recent sources, by the hash of their text: reading the
   directives of a 40 KB kernel costs a third of hashing it, so they are read once per
   process (the files they name are still looked up, and read, on every call). */
enum { MEMO_SLOTS = 64 };
typedef struct IncMemo {
    uint64_t a, b;
    bool used, uncacheable;
    char *list; /* as IncScan's */
    size_t len;
} IncMemo;
static IncMemo inc_memo[MEMO_SLOTS];
static pthread_mutex_t inc_memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* The source's include list (malloc'd, *len bytes; NULL if none) and whether it holds
   what the key cannot follow. */
static char *source_includes(const char *source, size_t n, uint64_t ha, uint64_t hb, size_t *len,
                             bool *uncacheable) {
    IncMemo *m = &inc_memo[ha % MEMO_SLOTS];
    char *list = NULL;
    pthread_mutex_lock(&inc_memo_lock);
    if (m->used && m->a == ha && m->b == hb) {
        *uncacheable = m->uncacheable;
        *len = m->len;
        if (m->len) {
            list = malloc(m->len);
            if (list) memcpy(list, m->list, m->len);
            else *uncacheable = true; /* out of memory: compile uncached */
        }
        pthread_mutex_unlock(&inc_memo_lock);
        return list;
    }
    pthread_mutex_unlock(&inc_memo_lock);
    IncScan sc = {.list_cap = 1};
    inc_scan_text(&sc, source, n, "", 0, 0);
    *uncacheable = sc.uncacheable;
    *len = sc.list_len;
    char *copy = sc.list_len ? malloc(sc.list_len) : NULL;
    if (copy) memcpy(copy, sc.list, sc.list_len);
    pthread_mutex_lock(&inc_memo_lock);
    free(m->list);
    *m = (IncMemo){.a = ha, .b = hb, .used = copy || !sc.list_len, .uncacheable = sc.uncacheable, .list = copy,
                   .len = copy ? sc.list_len : 0};
    pthread_mutex_unlock(&inc_memo_lock);
    return sc.list;
}

/* Mixes every file the source may include into the key; false if the key cannot
   account for them (the source is then kept out of both caches). ha, hb: a hash of
   the source text. */
static bool mix_includes(const char *source, size_t n, uint64_t ha, uint64_t hb, const cuk_compile_opts *o,
                         uint64_t *a, uint64_t *b) {
    int nopt = o ? o->noptions : 0;
    size_t len = 0;
    bool uncacheable = false;
    char *list = memchr(source, '#', n) ? source_includes(source, n, ha, hb, &len, &uncacheable) : NULL;
    if (uncacheable || (!list && nopt == 0)) {
        free(list);
        return !uncacheable;
    }
    const char **dirs = malloc(sizeof *dirs * (size_t)(2 * nopt + 1));
    if (!dirs) {
        free(list);
        return false;
    }
    const char **pre = dirs + nopt;
    int npre;
    IncScan sc = {.dirs = dirs, .a = a, .b = b};
    sc.ndirs = inc_options(o, dirs, pre, &npre);
    /* The source's own directory is its program name's (none: the current one). */
    const char *pname = o && o->program_name ? o->program_name : "";
    const char *slash = strrchr(pname, '/');
    size_t dirlen = slash ? (slash == pname ? 1 : (size_t)(slash - pname)) : 0;
    /* A pre-include is always read: one found nowhere is one we cannot account for. */
    for (int i = 0; i < npre && !sc.uncacheable; i++)
        if (!inc_resolve(&sc, pre[i], strlen(pre[i]), true, pname, dirlen, 0)) sc.uncacheable = true;
    for (size_t i = 0; i < len && !sc.uncacheable; i += strlen(list + i + 1) + 2)
        inc_resolve(&sc, list + i + 1, strlen(list + i + 1), list[i] == '"', pname, dirlen, 0);
    free(sc.seen);
    free(dirs);
    free(list);
    return !sc.uncacheable;
}

cuk_status compile_key(const char *source, const cuk_compile_opts *o, const char *arch,
                       cuk_image_kind kind, Key *k) {
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
    uint64_t fixed[4] = {(uint64_t)n->major, (uint64_t)n->minor, (uint64_t)kind,
                         (uint64_t)(o ? o->noptions : 0) << 32 | (uint64_t)(o ? o->nnames : 0)};
    hash128(fixed, sizeof fixed, &a, &b);
    nvrtc_identity(n, &a, &b);
    mix_str(CUK_VERSION, &a, &b);
    mix_str(arch, &a, &b);
    size_t srclen = strlen(source);
    hash128(source, srclen, &a, &b);
    uint64_t ha = a, hb = b; /* stands for the source (with the fields above) */
    for (int i = 0; o && i < o->noptions; i++) mix_str(o->options[i], &a, &b);
    for (int i = 0; o && i < o->nnames; i++) mix_str(o->names[i], &a, &b);
    /* program_name shows up in messages only on a failed compile (never cached), but
       also in __FILE__; include it so the cached output is exactly what NVRTC gives. */
    mix_str(o && o->program_name ? o->program_name : "", &a, &b);
    k->nocache = !mix_includes(source, srclen, ha, hb, o, &a, &b);
    if (k->nocache) {
        /* A key no other compile has: the memory cache never hits it either. */
        static _Atomic uint64_t nonce;
        uint64_t v[3] = {atomic_fetch_add(&nonce, 1), (uint64_t)getpid(), (uint64_t)time(NULL)};
        hash128(v, sizeof v, &a, &b);
    }
    k->a = a;
    k->b = b;
    return CUK_OK;
}

/* ---- cache statistics --------------------------------------------------------------------- */

static _Atomic unsigned long long n_mem_hits, n_disk_hits, n_misses, n_writes, n_corrupt, n_evicted;

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
    else if ((e = getenv("XDG_CACHE_HOME")) && e[0] == '/') n = snprintf(buf, len, "%s/cuk", e); /* relative: ignored */
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
    /* lstat("link/") follows the link: drop trailing slashes so that a symlink is seen. */
    for (size_t n = strlen(cd->path); n > 1 && cd->path[n - 1] == '/';) cd->path[--n] = 0;
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
    if (kind == CUK_IMAGE_LTOIR && (!n->nvrtcGetLTOIRSize || !n->nvrtcGetLTOIR)) {
        s = err_set(CUK_ERR_COMPILE, "this NVRTC cannot produce LTO-IR (CUDA 12.0 or later needed)");
        goto done;
    }
    r = kind == CUK_IMAGE_CUBIN ? n->nvrtcGetCUBINSize(prog, &sz)
        : kind == CUK_IMAGE_LTOIR ? n->nvrtcGetLTOIRSize(prog, &sz)
                                  : n->nvrtcGetPTXSize(prog, &sz);
    if (r || sz == 0) {
        s = err_set(CUK_ERR_COMPILE, "NVRTC produced no %s for %s: %s%s",
                    kind == CUK_IMAGE_CUBIN ? "cubin" : kind == CUK_IMAGE_LTOIR ? "LTO-IR" : "PTX", arch,
                    r ? n->nvrtcGetErrorString(r) : "empty output",
                    kind == CUK_IMAGE_LTOIR ? " (LTO-IR needs the option -dlto)" : "");
        goto done;
    }
    im->data = malloc(sz + 1);
    if (!im->data || !im->names) {
        s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    r = kind == CUK_IMAGE_CUBIN ? n->nvrtcGetCUBIN(prog, (char *)im->data)
        : kind == CUK_IMAGE_LTOIR ? n->nvrtcGetLTOIR(prog, (char *)im->data)
                                  : n->nvrtcGetPTX(prog, (char *)im->data);
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

/* ---- housekeeping: the size cap and dead writers' temporaries -------------------------------- */

enum { TMP_STALE_S = 3600 }; /* a writer takes seconds: a temporary an hour old is a killed one's */

/* CUK_CACHE_MAX: bytes, with an optional K, M or G (powers of 1024); default 1 GiB; 0 or
   an unreadable value: the default. */
static unsigned long long cache_max(void) {
    const char *e = getenv("CUK_CACHE_MAX");
    unsigned long long def = 1ULL << 30;
    if (!e || !*e) return def;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    if (errno || end == e || e[0] == '-') return def;
    int sh = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 0;
    if (sh) end++;
    if (*end || !v || v > (~0ULL >> sh)) return def;
    return v << sh;
}

typedef struct Ent {
    char name[64]; /* an entry's name: 32 hex digits and the extension */
    unsigned long long size;
    struct timespec used;
} Ent;

static int ent_older(const void *a, const void *b) {
    const Ent *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

static bool is_entry(const char *name);

/* After a write: deletes killed writers' temporaries, then, past the cap, the least
   recently used entries down to 90% of it. Only the user's own regular files. */
static void cache_housekeep(int dfd) {
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    Ent *es = NULL;
    size_t n = 0, cap = 0;
    unsigned long long total = 0, max = cache_max();
    uid_t me = geteuid();
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        bool tmp = !strncmp(e->d_name, ".tmp-", 5);
        if (!tmp && !is_entry(e->d_name)) continue;
        struct stat sb;
        if (fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode) || sb.st_uid != me) continue;
        if (tmp) {
            if (now - sb.st_mtime > TMP_STALE_S) unlinkat(dfd, e->d_name, 0);
            continue;
        }
        total += (unsigned long long)sb.st_size;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            Ent *ne = realloc(es, nc * sizeof *ne);
            if (!ne) break;
            es = ne, cap = nc;
        }
        if (strlen(e->d_name) >= sizeof es[n].name) continue;
        memcpy(es[n].name, e->d_name, strlen(e->d_name) + 1);
        es[n].size = (unsigned long long)sb.st_size;
        es[n].used = sb.st_mtim;
        n++;
    }
    closedir(d);
    if (total > max && es) {
        qsort(es, n, sizeof *es, ent_older);
        for (size_t i = 0; i < n && total > max - max / 10; i++)
            if (unlinkat(dfd, es[i].name, 0) == 0) {
                total -= es[i].size;
                atomic_fetch_add(&n_evicted, 1);
            }
    }
    free(es);
}

cuk_status compile_keyed(const char *source, const cuk_compile_opts *o, const char *arch,
                         cuk_image_kind kind, Key k, cuk_image **out) {
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    char name[64];
    CacheDir cd = {.fd = -1};
    /* A cache we cannot use is not a reason to fail the compile. */
    if (!k.nocache && !(o && o->no_disk_cache) && !disk_cache_disabled_by_env() && !cache_dir_open(&cd, true))
        warn_disk_off(&cd);
    if (cd.fd >= 0) {
        entry_name(name, sizeof name, k);
        cuk_image *im = disk_read(cd.fd, name, k, kind);
        if (im) {
            utimensat(cd.fd, name, NULL, AT_SYMLINK_NOFOLLOW); /* used now: last to be evicted */
            close(cd.fd);
            atomic_fetch_add(&n_disk_hits, 1);
            *out = im;
            return CUK_OK;
        }
    }
    atomic_fetch_add(&n_misses, 1);
    cuk_status s = nvrtc_compile(n, source, o, arch, kind, out);
    if (!s && cd.fd >= 0) {
        disk_write(cd.fd, name, k, *out);
        cache_housekeep(cd.fd);
    }
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
    if (o->kind == CUK_IMAGE_CUBIN || o->kind == CUK_IMAGE_LTOIR) {
        if (virt)
            return err_set(CUK_ERR_INVALID, "cannot make a %s for the virtual architecture %s; use sm_%s",
                           o->kind == CUK_IMAGE_CUBIN ? "cubin" : "LTO-IR", o->arch, o->arch + 8);
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
    s->evicted = atomic_load(&n_evicted);
    s->max_bytes = cache_max();
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
        bool tmp = !strncmp(e->d_name, ".tmp-", 5);
        if ((!tmp && !is_entry(e->d_name)) || fstatat(cd.fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(sb.st_mode) || sb.st_uid != me)
            continue;
        if (tmp) {
            s->tmp_files++;
            s->tmp_bytes += (unsigned long long)sb.st_size;
            continue;
        }
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
    atomic_store(&n_evicted, 0);
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
