/* The on-disk kernel cache: keying, hits in a fresh process, corrupt and truncated
   entries detected, deleted and recompiled, 8 concurrent cold writers, stats and clear. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cuk.h"

#include "runtime_check.h"

static char dir[4096];

static const char *src_a =
    "extern \"C\" __global__ void add1(float *p, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) p[i] += 1.0f;\n"
    "}\n";

/* Files in the cache dir: entries (32 hex + .cukc) and anything else. */
static int list(char names[][4200], int max, int *others) {
    DIR *d = opendir(dir);
    int n = 0;
    *others = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t l = strlen(e->d_name);
        if (l == 37 && !strcmp(e->d_name + 32, ".cukc")) {
            if (n < max) snprintf(names[n], 4200, "%s/%s", dir, e->d_name);
            n++;
        } else {
            (*others)++;
        }
    }
    closedir(d);
    return n;
}

static cuk_cache_stats stats(void) {
    cuk_cache_stats s;
    CHECK(cuk_cache_stats_get(&s) == CUK_OK);
    return s;
}

/* Compiles and returns a copy of the image bytes (for comparing hit and miss output). */
static unsigned char *compile(const char *src, const char *arch, cuk_image_kind kind, const char *opt,
                              size_t *len) {
    const char *opts[1] = {opt};
    cuk_compile_opts o = {.arch = arch, .kind = kind, .options = opts, .noptions = opt ? 1 : 0};
    cuk_image *im = NULL;
    cuk_status s = cuk_compile(src, &o, &im);
    CHECK(s == CUK_OK);
    if (s) return NULL;
    const void *d;
    cuk_image_data(im, &d, len);
    unsigned char *copy = malloc(*len);
    memcpy(copy, d, *len);
    cuk_image_free(im);
    return copy;
}

/* In a child (a new process: cuk_compile keeps nothing in memory): compile and report
   the hit/miss counts of that one compile. */
static void child_compile(const char *src, unsigned long long *hits, unsigned long long *misses,
                          unsigned long long *corrupt) {
    int fd[2];
    if (pipe(fd)) abort();
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        fails = 0; /* the parent's count came along with fork */
        size_t n;
        cuk_cache_stats s0 = stats();
        free(compile(src, "sm_90", CUK_IMAGE_CUBIN, NULL, &n));
        cuk_cache_stats s = stats();
        unsigned long long v[3] = {s.disk_hits - s0.disk_hits, s.misses - s0.misses, s.corrupt - s0.corrupt};
        if (write(fd[1], v, sizeof v) != sizeof v) _exit(2);
        _exit(fails ? 1 : 0);
    }
    close(fd[1]);
    unsigned long long v[3] = {99, 99, 99};
    CHECK(read(fd[0], v, sizeof v) == sizeof v);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    *hits = v[0], *misses = v[1], *corrupt = v[2];
}

static void flip_byte(const char *path, long off) {
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    unsigned char c;
    CHECK(pread(fd, &c, 1, off) == 1);
    c ^= 0x40;
    CHECK(pwrite(fd, &c, 1, off) == 1);
    close(fd);
}

static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) ? -1 : (long)sb.st_size;
}

/* One damaged entry: the next compile must notice, delete, recompile and rewrite it. */
static void damage_case(const char *what, void (*damage)(const char *path)) {
    CHECK(cuk_cache_clear() == CUK_OK);
    size_t n0, n1;
    unsigned char *good = compile(src_a, "sm_90", CUK_IMAGE_CUBIN, NULL, &n0);
    char names[4][4200];
    int others;
    CHECK(list(names, 4, &others) == 1);
    damage(names[0]);
    unsigned long long h, m, c;
    child_compile(src_a, &h, &m, &c);
    CHECK(h == 0 && m == 1 && c == 1);
    if (!(h == 0 && m == 1 && c == 1)) fprintf(stderr, "  %s: hits %llu misses %llu corrupt %llu\n", what, h, m, c);
    /* The rewritten entry is whole again: a fresh process hits it. */
    child_compile(src_a, &h, &m, &c);
    CHECK(h == 1 && m == 0 && c == 0);
    unsigned char *again = compile(src_a, "sm_90", CUK_IMAGE_CUBIN, NULL, &n1);
    CHECK(good && again && n0 == n1 && !memcmp(good, again, n0));
    free(good);
    free(again);
    printf("  %s: detected, deleted, recompiled\n", what);
}

static void dmg_payload(const char *p) { flip_byte(p, file_size(p) / 2 + 64 / 2); }
static void dmg_last(const char *p) { flip_byte(p, file_size(p) - 1); }
static void dmg_header(const char *p) { flip_byte(p, 20); } /* inside key_a */
static void dmg_magic(const char *p) { flip_byte(p, 0); }
static void dmg_truncate(const char *p) { CHECK(truncate(p, file_size(p) - 100) == 0); }
static void dmg_truncate_hdr(const char *p) { CHECK(truncate(p, 10) == 0); }
static void dmg_empty(const char *p) { CHECK(truncate(p, 0) == 0); }
static void dmg_extend(const char *p) {
    int fd = open(p, O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, "x", 1) == 1);
    close(fd);
}

static void concurrent_writers(void) {
    CHECK(cuk_cache_clear() == CUK_OK);
    const char *srcs[3] = {
        src_a,
        "extern \"C\" __global__ void mul2(float *p) { p[threadIdx.x] *= 2.0f; }\n",
        "extern \"C\" __global__ void neg(double *p) { p[threadIdx.x] = -p[threadIdx.x]; }\n",
    };
    enum { NPROC = 8 };
    int go[2];
    if (pipe(go)) abort();
    pid_t pids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(go[1]);
            fails = 0;
            cuk_cache_stats s0 = stats();
            char c;
            /* Wait for the start signal so all eight race on the cold directory. */
            if (read(go[0], &c, 1) != 0) _exit(3);
            for (int j = 0; j < 3; j++) {
                const char *src = srcs[(i + j) % 3];
                size_t n;
                unsigned char *img = compile(src, "sm_90", CUK_IMAGE_CUBIN, NULL, &n);
                if (!img || n < 4 || memcmp(img, "\x7f" "ELF", 4)) _exit(4);
                free(img);
            }
            cuk_cache_stats s = stats();
            if (s.corrupt != s0.corrupt) _exit(5); /* a reader must never see a half-written entry */
            _exit(fails ? 1 : 0);
        }
    }
    close(go[0]);
    close(go[1]); /* EOF: go */
    int ok = 0;
    for (int i = 0; i < NPROC; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ok++;
        else fprintf(stderr, "  writer %d: exit status %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    CHECK(ok == NPROC);
    char names[8][4200];
    int others;
    int n = list(names, 8, &others);
    CHECK(n == 3 && others == 0); /* one entry per key, no temporary files left */
    for (int j = 0; j < 3; j++) {
        unsigned long long h, m, c;
        child_compile(srcs[j], &h, &m, &c);
        CHECK(h == 1 && m == 0 && c == 0);
    }
    printf("  %d concurrent writers: %d succeeded, %d entries, %d stray files\n", NPROC, ok, n, others);
}

int main(void) {
    const char *base = getenv("CUK_BUILD_DIR");
    snprintf(dir, sizeof dir, "%s/test_runtime_cache.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    /* A subdirectory that does not exist yet: the cache must create it. */
    strcat(dir, "/cache");
    setenv("CUK_CACHE_DIR", dir, 1);
    unsetenv("CUK_DISABLE_DISK_CACHE");

    char got[4096];
    CHECK(cuk_cache_dir(got, sizeof got) == CUK_OK && !strcmp(got, dir));
    cuk_cache_stats s = stats();
    CHECK(s.entries == 0 && s.misses == 0 && !strcmp(s.dir, dir));

    /* Miss, then write; the second compile in this process reads the disk. */
    size_t n1, n2;
    unsigned char *a1 = compile(src_a, "sm_90", CUK_IMAGE_CUBIN, NULL, &n1);
    s = stats();
    CHECK(s.misses == 1 && s.disk_hits == 0 && s.disk_writes == 1 && s.entries == 1 && s.bytes > n1);
    unsigned char *a2 = compile(src_a, "sm_90", CUK_IMAGE_CUBIN, NULL, &n2);
    s = stats();
    CHECK(s.misses == 1 && s.disk_hits == 1 && s.entries == 1);
    CHECK(a1 && a2 && n1 == n2 && !memcmp(a1, a2, n1));
    free(a1);
    free(a2);

    /* A fresh process (empty memory) hits what this one wrote. */
    unsigned long long h, m, c;
    child_compile(src_a, &h, &m, &c);
    CHECK(h == 1 && m == 0 && c == 0);

    /* Keying: options, arch, kind and source each make a different entry. */
    size_t n;
    free(compile(src_a, "sm_90", CUK_IMAGE_CUBIN, "-lineinfo", &n));
    CHECK(stats().entries == 2);
    free(compile(src_a, "sm_80", CUK_IMAGE_CUBIN, NULL, &n));
    CHECK(stats().entries == 3);
    free(compile(src_a, "sm_90", CUK_IMAGE_PTX, NULL, &n));
    CHECK(stats().entries == 4);
    free(compile("extern \"C\" __global__ void other() {}\n", "sm_90", CUK_IMAGE_CUBIN, NULL, &n));
    CHECK(stats().entries == 5);
    /* ... and repeating them all hits. */
    unsigned long long before = stats().misses;
    free(compile(src_a, "sm_90", CUK_IMAGE_CUBIN, "-lineinfo", &n));
    free(compile(src_a, "sm_80", CUK_IMAGE_CUBIN, NULL, &n));
    free(compile(src_a, "sm_90", CUK_IMAGE_PTX, NULL, &n));
    s = stats();
    CHECK(s.misses == before && s.entries == 5);

    /* A failed compile is never cached. */
    cuk_compile_opts o = {.arch = "sm_90", .kind = CUK_IMAGE_CUBIN};
    cuk_image *im = NULL;
    CHECK(cuk_compile("__global__ void broken( {", &o, &im) == CUK_ERR_COMPILE);
    CHECK(stats().entries == 5);

    /* no_disk_cache neither reads nor writes. */
    o.no_disk_cache = 1;
    CHECK(cuk_compile("extern \"C\" __global__ void nc() {}\n", &o, &im) == CUK_OK);
    cuk_image_free(im);
    CHECK(stats().entries == 5);

    /* Clear removes every entry and resets the counters. */
    CHECK(cuk_cache_clear() == CUK_OK);
    s = stats();
    CHECK(s.entries == 0 && s.bytes == 0 && s.misses == 0 && s.disk_hits == 0);

    /* Damaged entries, one kind at a time. */
    damage_case("flipped payload byte", dmg_payload);
    damage_case("flipped last byte", dmg_last);
    damage_case("flipped header byte", dmg_header);
    damage_case("flipped magic", dmg_magic);
    damage_case("truncated payload", dmg_truncate);
    damage_case("truncated header", dmg_truncate_hdr);
    damage_case("empty file", dmg_empty);
    damage_case("trailing garbage", dmg_extend);

    concurrent_writers();

    /* An unusable cache directory costs the cache, not the compile. */
    setenv("CUK_CACHE_DIR", "/dev/null/cuk-cache", 1);
    o.no_disk_cache = 0;
    im = NULL;
    CHECK(cuk_compile(src_a, &o, &im) == CUK_OK && im);
    cuk_image_free(im);

    /* The default locations. */
    unsetenv("CUK_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/x/y", 1);
    CHECK(cuk_cache_dir(got, sizeof got) == CUK_OK && !strcmp(got, "/x/y/cuk"));
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    CHECK(cuk_cache_dir(got, sizeof got) == CUK_OK && !strcmp(got, "/home/u/.cache/cuk"));

    /* Tidy up. */
    setenv("CUK_CACHE_DIR", dir, 1);
    CHECK(cuk_cache_clear() == CUK_OK);
    rmdir(dir);
    *strrchr(dir, '/') = 0;
    rmdir(dir);

    printf("%s: %s\n", __FILE__, fails ? "FAIL" : "PASS");
    return fails != 0;
}
