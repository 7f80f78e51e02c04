/* The disk kernel cache trusts no directory and no entry: directories cuk creates are
   0700 and entries 0600 whatever the umask; a directory writable by group or others, or
   owned by someone else, is not used (the memory cache serves, with one warning, which
   CUK_QUIET hides), so an entry planted there is never run; a symlinked entry or one
   owned by someone else is ignored and replaced. The planted entry is a forgery any
   local user could make: x*7's image under the key of x*3, with valid checksums. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cuk.h"

#include "runtime_check.h"

static char base[4096];

static const char *src3 = "extern \"C\" __global__ void f(float *p) { p[0] *= 3.0f; }\n";
static const char *src7 = "extern \"C\" __global__ void f(float *p) { p[0] *= 7.0f; }\n";
#define PTX3 "0f40400000" /* 3.0f in PTX */
#define PTX7 "0f40E00000" /* 7.0f */

/* Compiles src to PTX for sm_90 in this process: 3, 7 (the constant in the PTX) or -1. */
static int compile_const(const char *src) {
    cuk_compile_opts o = {.arch = "sm_90", .kind = CUK_IMAGE_PTX};
    cuk_image *im = NULL;
    if (cuk_compile(src, &o, &im) != CUK_OK) return -1;
    const void *d;
    size_t n;
    cuk_image_data(im, &d, &n);
    int r = strstr(d, PTX3) ? 3 : strstr(d, PTX7) ? 7 : -1;
    cuk_image_free(im);
    return r;
}

typedef struct Result {
    int got[2];               /* the constants of two compiles of the source */
    unsigned long long disk_hits, misses, writes;
    char disk_off[1100];
    char err[4096];           /* what the child wrote on stderr */
} Result;

/* In a fresh process (empty memory cache) with CUK_CACHE_DIR=dir: compile src twice and
   report what happened, stderr included. */
static Result child(const char *dir, const char *src, bool quiet) {
    Result r;
    memset(&r, 0, sizeof r);
    int res[2], err[2];
    if (pipe(res) || pipe(err)) abort();
    pid_t pid = fork();
    if (pid == 0) {
        close(res[0]);
        close(err[0]);
        dup2(err[1], 2);
        setenv("CUK_CACHE_DIR", dir, 1);
        if (quiet) setenv("CUK_QUIET", "1", 1);
        else unsetenv("CUK_QUIET");
        Result c;
        memset(&c, 0, sizeof c);
        c.got[0] = compile_const(src);
        c.got[1] = compile_const(src);
        cuk_cache_stats s;
        cuk_cache_stats_get(&s);
        c.disk_hits = s.disk_hits, c.misses = s.misses, c.writes = s.disk_writes;
        snprintf(c.disk_off, sizeof c.disk_off, "%s", s.disk_off);
        if (write(res[1], &c, sizeof c) != sizeof c) _exit(2);
        _exit(0);
    }
    close(res[1]);
    close(err[1]);
    size_t got = 0;
    ssize_t n;
    while ((n = read(res[0], (char *)&r + got, sizeof r - got)) > 0) got += (size_t)n;
    CHECK(got == sizeof r);
    char tmp[4096];
    size_t used = 0;
    while ((n = read(err[0], tmp, sizeof tmp)) > 0) {
        size_t k = (size_t)n < sizeof r.err - 1 - used ? (size_t)n : sizeof r.err - 1 - used;
        memcpy(r.err + used, tmp, k);
        used += k;
    }
    r.err[used] = 0;
    close(res[0]);
    close(err[0]);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return r;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static unsigned mode_of(const char *path) {
    struct stat sb;
    return lstat(path, &sb) ? 0xffff : (unsigned)(sb.st_mode & 07777);
}

/* The one entry in dir (its full path in out); the number of entries. */
static int the_entry(const char *dir, char *out, size_t len) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strlen(e->d_name) == 37 && !strcmp(e->d_name + 32, ".cukc")) {
            snprintf(out, len, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void spit(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n);
    if (f) fclose(f);
}

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

/* The forgery (docs/gpu.md has the format): x*7's entry, its key (bytes 16-31) replaced
   by x*3's and the header checksum (56-63) recomputed. Written to dir/<x*3's name>. */
static char name3[64];
static unsigned char *forged;
static size_t forged_len;

static void make_forgery(void) {
    char d[4200], e[4400];
    snprintf(d, sizeof d, "%s/forge", base);
    CHECK(mkdir(d, 0700) == 0);
    setenv("CUK_CACHE_DIR", d, 1);
    CHECK(compile_const(src3) == 3);
    CHECK(the_entry(d, e, sizeof e) == 1);
    size_t n3;
    unsigned char *e3 = slurp(e, &n3);
    snprintf(name3, sizeof name3, "%s", strrchr(e, '/') + 1);
    CHECK(cuk_cache_clear() == CUK_OK);
    CHECK(compile_const(src7) == 7);
    CHECK(the_entry(d, e, sizeof e) == 1);
    forged = slurp(e, &forged_len);
    CHECK(e3 && forged && n3 >= 64 && forged_len >= 64);
    if (!e3 || !forged || n3 < 64 || forged_len < 64) exit(1);
    memcpy(forged + 16, e3 + 16, 16);
    uint64_t sum = fnv1a(forged, 56);
    memcpy(forged + 56, &sum, 8);
    free(e3);
    CHECK(cuk_cache_clear() == CUK_OK);
    rmdir(d);
}

static void plant(const char *dir) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name3);
    spit(p, forged, forged_len);
}

/* cuk creates each missing level 0700 and each entry 0600, with a permissive umask and
   with one that takes the owner's own bits. */
static void test_modes(mode_t mask) {
    char top[4200], mid[4300], dir[4400], e[4600];
    snprintf(top, sizeof top, "%s/umask%03o", base, (unsigned)mask);
    snprintf(mid, sizeof mid, "%s/a", top);
    snprintf(dir, sizeof dir, "%s/b", mid);
    mode_t old = umask(mask);
    setenv("CUK_CACHE_DIR", dir, 1);
    CHECK(compile_const(src3) == 3);
    umask(old);
    CHECK(mode_of(top) == 0700 && mode_of(mid) == 0700 && mode_of(dir) == 0700);
    CHECK(the_entry(dir, e, sizeof e) == 1 && mode_of(e) == 0600);
    /* ... and the temporaries are gone (they were 0600 too: created so, then renamed). */
    DIR *d = opendir(dir);
    int others = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) others++;
    if (d) closedir(d);
    CHECK(others == 0);
    printf("  umask %03o: directories %03o %03o %03o, entry %03o\n", (unsigned)mask, mode_of(top), mode_of(mid),
           mode_of(dir), mode_of(e));
    CHECK(cuk_cache_clear() == CUK_OK);
}

/* A directory the checks refuse: the planted entry is not run, the compile still works
   (memory only: nothing read, nothing written), one warning naming the directory and
   the fix, none with CUK_QUIET; stats say why; clear refuses. */
static void test_refused(const char *what, const char *dir, const char *reason, const char *fix) {
    plant(dir);
    Result r = child(dir, src3, false);
    CHECK(r.got[0] == 3 && r.got[1] == 3);
    CHECK(r.disk_hits == 0 && r.misses == 2 && r.writes == 0);
    CHECK(count(r.err, "cuk: warning:") == 1 && count(r.err, "\n") == 1);
    CHECK(strstr(r.err, dir) && strstr(r.err, reason) && strstr(r.err, fix));
    CHECK(strstr(r.disk_off, reason) != NULL);
    printf("  %s: refused; stderr: %s", what, r.err);
    r = child(dir, src3, true);
    CHECK(r.got[0] == 3 && r.err[0] == 0);
    setenv("CUK_CACHE_DIR", dir, 1);
    CHECK(cuk_cache_clear() == CUK_ERR_IO && strstr(cuk_last_error(), reason));
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name3);
    CHECK(unlink(p) == 0); /* the planted entry is still there: clear left it alone */
}

int main(void) {
    const char *b = getenv("CUK_BUILD_DIR");
    snprintf(base, sizeof base, "%s/test_runtime_cache_safety.XXXXXX", b && *b ? b : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    unsetenv("CUK_DISABLE_DISK_CACHE");
    unsetenv("CUK_QUIET");
    make_forgery();

    test_modes(0);
    test_modes(0277);

    /* The forgery works where the checks pass (anyone who can write there could do it):
       so the refusals below are what keeps it out. */
    char dir[4200], p[4400], q[4400];
    snprintf(dir, sizeof dir, "%s/ok", base);
    CHECK(mkdir(dir, 0700) == 0);
    plant(dir);
    Result r = child(dir, src3, false);
    CHECK(r.got[0] == 7 && r.disk_hits == 2 && r.err[0] == 0 && r.disk_off[0] == 0);
    snprintf(p, sizeof p, "%s/%s", dir, name3);
    CHECK(unlink(p) == 0);

    /* Group-writable, world-writable (even sticky, as /tmp). */
    snprintf(dir, sizeof dir, "%s/group", base);
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0770) == 0);
    test_refused("group-writable", dir, "writable by its group (mode 770)", "chmod 700");
    snprintf(dir, sizeof dir, "%s/sticky", base);
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 01777) == 0);
    test_refused("world-writable, sticky", dir, "writable by group and others (mode 1777)", "chmod 700");

    /* Not a directory. */
    snprintf(dir, sizeof dir, "%s/file", base);
    spit(dir, "x", 1);
    r = child(dir, src3, false);
    CHECK(r.got[0] == 3 && strstr(r.err, "is not a directory") && count(r.err, "\n") == 1);

    /* Owned by someone else, and a symlink to our directory owned by someone else:
       root can make both. */
    if (geteuid() == 0) {
        snprintf(dir, sizeof dir, "%s/nobody", base);
        CHECK(mkdir(dir, 0755) == 0 && chown(dir, 65534, 65534) == 0);
        test_refused("owned by nobody", dir, "owned by uid 65534, not by you", "CUK_CACHE_DIR");

        snprintf(dir, sizeof dir, "%s/target", base);
        snprintf(q, sizeof q, "%s/link-nobody", base);
        CHECK(mkdir(dir, 0700) == 0 && symlink(dir, q) == 0 && lchown(q, 65534, 65534) == 0);
        test_refused("symlink owned by nobody", q, "symbolic link owned by uid 65534", "CUK_CACHE_DIR");
        /* ... also named with a trailing slash (lstat("link/") would follow the link). */
        char qs[4500];
        snprintf(qs, sizeof qs, "%s//", q);
        r = child(qs, src3, false);
        CHECK(r.got[0] == 3 && r.disk_hits == 0 && strstr(r.err, "symbolic link owned by uid 65534"));
    } else {
        printf("  (not root: the owned-by-someone-else cases are skipped)\n");
    }

    /* A symlink of our own to a good directory is followed. */
    snprintf(dir, sizeof dir, "%s/real", base);
    snprintf(q, sizeof q, "%s/link-mine", base);
    CHECK(mkdir(dir, 0700) == 0 && symlink(dir, q) == 0);
    r = child(q, src3, false);
    CHECK(r.got[0] == 3 && r.got[1] == 3 && r.misses == 1 && r.disk_hits == 1 && r.err[0] == 0);
    CHECK(the_entry(dir, p, sizeof p) == 1);

    /* A symlinked entry is not followed (it points at a valid forgery elsewhere): a miss,
       and the write replaces the link with a file. */
    snprintf(dir, sizeof dir, "%s/entries", base);
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(q, sizeof q, "%s/elsewhere.cukc", base);
    spit(q, forged, forged_len);
    snprintf(p, sizeof p, "%s/%s", dir, name3);
    CHECK(symlink(q, p) == 0);
    r = child(dir, src3, false);
    CHECK(r.got[0] == 3 && r.got[1] == 3 && r.misses == 1 && r.disk_hits == 1 && r.err[0] == 0);
    struct stat sb;
    CHECK(lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0777) == 0600);
    printf("  symlinked entry: not followed, replaced by a file\n");

    /* An entry owned by someone else in our directory is ignored and replaced. */
    if (geteuid() == 0) {
        CHECK(unlink(p) == 0);
        plant(dir);
        CHECK(chown(p, 65534, 65534) == 0);
        r = child(dir, src3, false);
        CHECK(r.got[0] == 3 && r.misses == 1 && r.disk_hits == 1);
        CHECK(lstat(p, &sb) == 0 && sb.st_uid == 0);
        printf("  entry owned by nobody: ignored, replaced\n");
    }

    free(forged);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
    printf("%s: %s\n", __FILE__, fails ? "FAIL" : "PASS");
    return fails != 0;
}
