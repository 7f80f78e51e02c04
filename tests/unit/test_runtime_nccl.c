/* NCCL's loader and the communicator API without a GPU (runtime/nccl.c): the toolkit's
   libnccl loads and reports its version; loading it turns NVLink multicast off for this
   process and its children; a missing library, bad arguments and a missing driver fail
   with messages that say what to do, and nothing crashes. The TCP rendezvous between
   processes (cuk_comm_rendezvous) with forked ranks on 127.0.0.1: the id reaches every
   rank, and timeouts, disagreeing ranks and strangers on the port end in errors, in
   bounded time, without leaking a descriptor. */
#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cuk.h"

#include "runtime_check.h"

/* What a child process sees of NCCL_NVLS_ENABLE ("unset" if nothing). */
static void child_nvls(char *buf, size_t len) {
    FILE *p = popen("sh -c 'echo ${NCCL_NVLS_ENABLE:-unset}'", "r");
    buf[0] = 0;
    if (!p) return;
    if (!fgets(buf, (int)len, p)) buf[0] = 0;
    pclose(p);
    buf[strcspn(buf, "\n")] = 0;
}

/* Runs body in a child (NCCL loads once per process); its CHECK failures fail the test. */
static void in_child(void (*body)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        fails = 0;
        body();
        fflush(stdout);
        _exit(fails ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "child failed (status %d)\n", st);
        fails++;
    }
}

static void missing_library(void) {
    setenv("CUK_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    int v = 7;
    CHECK(cuk_nccl_version(&v) == CUK_ERR_NO_NCCL && v == 0);
    cuk_comm_id id;
    memset(&id, 1, sizeof id);
    CHECK(cuk_comm_id_new(&id) == CUK_ERR_NO_NCCL && id.bytes[0] == 0 && id.bytes[127] == 0);
    CHECK(strstr(cuk_last_error(), "NCCL not found (libnccl.so.2): /nonexistent/libnccl.so.2"));
    CHECK(strstr(cuk_last_error(), "CUK_LIBNCCL"));
    printf("  CUK_LIBNCCL=/nonexistent/libnccl.so.2: %s\n", cuk_last_error());
    CHECK(!strcmp(cuk_status_name(CUK_ERR_NO_NCCL), "CUK_ERR_NO_NCCL"));
}

static void toolkit_library(void) {
    setenv("NCCL_NVLS_ENABLE", "1", 1); /* the caller's choice does not survive the load */
    int v = 0;
    const char *lib = "/usr/local/cuda/lib64/libnccl.so.2";
    if (access(lib, R_OK) != 0) {
        printf("  note: %s not present; the version and NVLS cases were not exercised\n", lib);
        CHECK(cuk_nccl_version(&v) == CUK_ERR_NO_NCCL || v >= 21800);
        return;
    }
    CHECK(cuk_nccl_version(&v) == CUK_OK && v >= 21800);
    printf("  NCCL version %d\n", v);
    const char *e = getenv("NCCL_NVLS_ENABLE");
    CHECK(e && !strcmp(e, "0"));
    char got[32];
    child_nvls(got, sizeof got);
    CHECK(!strcmp(got, "0"));
    printf("  NCCL_NVLS_ENABLE after loading: %s, in a child process: %s\n", e ? e : "unset", got);
}

/* ncclGetUniqueId needs no GPU (NCCL 2.28: it picks a network interface and starts its
   bootstrap listener in this process): two ids, different, neither all zeros. */
static void comm_id(void) {
    cuk_comm_id a, b;
    static const cuk_comm_id zero;
    CHECK(cuk_comm_id_new(NULL) == CUK_ERR_INVALID);
    if (access("/usr/local/cuda/lib64/libnccl.so.2", R_OK) != 0) {
        cuk_status s = cuk_comm_id_new(&a);
        CHECK(s == CUK_OK || s == CUK_ERR_NO_NCCL);
        printf("  note: the toolkit's libnccl is not present; cuk_comm_id_new: %s\n", cuk_status_name(s));
        return;
    }
    CHECK(cuk_comm_id_new(&a) == CUK_OK && cuk_comm_id_new(&b) == CUK_OK);
    CHECK(memcmp(&a, &zero, sizeof a) && memcmp(&b, &zero, sizeof b) && memcmp(&a, &b, sizeof a));
    printf("  cuk_comm_id_new without a GPU: CUK_OK, id %02x%02x%02x%02x...\n", a.bytes[0], a.bytes[1], a.bytes[2],
           a.bytes[3]);
}

/* ---- the TCP rendezvous ---- */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* A listening socket on 127.0.0.1 and a free port (the kernel's pick), its port in *port. */
static int listen_any(int *port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 8) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        perror("listen_any");
        exit(2);
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* A free port for a rendezvous: one the kernel picked, let go again. */
static char rdv_addr[64];
static void new_addr(void) {
    int port, fd = listen_any(&port);
    close(fd);
    snprintf(rdv_addr, sizeof rdv_addr, "127.0.0.1:%d", port);
}

/* A raw connection to the rendezvous port, retried for up to 3 s while rank 0 starts. */
static int raw_connect(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)atoi(strchr(rdv_addr, ':') + 1))};
    for (double t0 = now(); now() - t0 < 3;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof a)) return fd;
        if (fd >= 0) close(fd);
        usleep(10000);
    }
    return -1;
}

/* fn(arg) in a child process, bounded by an alarm (a hang kills it, and fails the test).
   It ends with exit, not _exit, so that under ASan LeakSanitizer checks it too. */
static pid_t spawn(void (*fn)(int), int arg) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        fails = 0;
        alarm(20);
        fn(arg);
        exit(fails ? 1 : 0);
    }
    return pid;
}
static void reap(pid_t pid, const char *what) {
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "%s: child failed (status %d%s)\n", what, st,
                WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? ": it hung" : "");
        fails++;
    }
}

/* Rank 0's id: bytes no NCCL made. */
static cuk_comm_id pattern;

/* One rendezvous call, its status, message and time kept for the checks. */
static cuk_status rdv(cuk_comm_id *id, const char *addr, int nranks, int rank, double timeout, double *took) {
    double t0 = now();
    cuk_status s = cuk_comm_rendezvous(id, addr, nranks, rank, timeout);
    *took = now() - t0;
    return s;
}
#define HAS(text) strstr(cuk_last_error(), text)

/* Four ranks: rank r of 4 gets rank 0's bytes; ranks 2 and 3 find the address in
   CUK_RENDEZVOUS. No descriptor is left open, SIGPIPE's disposition is left as it was. */
static void rank_of_4(int rank) {
    cuk_comm_id id;
    double took;
    if (rank == 0)
        id = pattern;
    else
        memset(&id, 0xee, sizeof id);
    struct sigaction before, after;
    sigaction(SIGPIPE, NULL, &before);
    int fds = open_fds();
    if (rank >= 2) setenv("CUK_RENDEZVOUS", rdv_addr, 1);
    CHECK(rdv(&id, rank >= 2 ? NULL : rdv_addr, 4, rank, 10, &took) == CUK_OK);
    CHECK(!memcmp(&id, &pattern, sizeof id));
    CHECK(open_fds() == fds);
    sigaction(SIGPIPE, NULL, &after);
    CHECK(before.sa_handler == after.sa_handler);
}

static void rendezvous_4(void) {
    new_addr();
    pid_t pid[4];
    for (int r = 3; r >= 1; r--) pid[r] = spawn(rank_of_4, r);
    usleep(300000); /* rank 0 last: the others retry until it listens */
    double t0 = now();
    pid[0] = spawn(rank_of_4, 0);
    for (int r = 0; r < 4; r++) reap(pid[r], "rendezvous of 4");
    printf("  rendezvous of 4 processes at %s, rank 0 started 0.3 s after the others: %.3f s\n", rdv_addr, now() - t0);
}

/* 2 of 3 ranks come: rank 0 times out after 3 s saying how many arrived; rank 1
   (a longer timeout) fails as soon as rank 0 closes. */
static void timeout_rank(int rank) {
    cuk_comm_id id = pattern;
    double took;
    int fds = open_fds();
    CHECK(rdv(&id, rdv_addr, 3, rank, rank ? 30 : 3, &took) == CUK_ERR_IO);
    CHECK(open_fds() == fds);
    if (rank == 0) {
        CHECK(HAS("2 of 3 ranks had arrived (missing: rank 2)") && HAS(rdv_addr) && HAS("rank 0 of 3"));
        CHECK(HAS("after 3 s") && HAS("raise the timeout"));
        CHECK(took >= 2.9 && took < 15);
        printf("  rank 0, 2 of 3 ranks, %.2f s: %s\n", took, cuk_last_error());
    } else {
        CHECK(HAS("rank 0 closed the connection before sending the id") && HAS("rank 1 of 3"));
        CHECK(took < 15);
        printf("  rank 1, 2 of 3 ranks, %.2f s: %s\n", took, cuk_last_error());
    }
}

/* No rank 0 at all: a bounded retry, then the reason. */
static void lonely_rank(int unused) {
    (void)unused;
    cuk_comm_id id;
    double took;
    CHECK(rdv(&id, rdv_addr, 2, 1, 0.3, &took) == CUK_ERR_IO);
    CHECK(HAS("no rank 0 answered within 0.3 s") && HAS(rdv_addr) && HAS("rank 1 of 2"));
    CHECK(took >= 0.25 && took < 15);
    printf("  rank 1 alone, %.2f s: %s\n", took, cuk_last_error());
}

/* Rank 0 says 3 ranks, rank 1 says 2: both fail at once, each saying so. */
static void disagree_rank(int rank) {
    cuk_comm_id id = pattern;
    double took;
    CHECK(rdv(&id, rdv_addr, rank ? 2 : 3, rank, 30, &took) == CUK_ERR_INVALID);
    CHECK(took < 15);
    if (rank == 0)
        CHECK(HAS("rank 1 (from 127.0.0.1:") && HAS("was started with 2 ranks, rank 0 with 3"));
    else
        CHECK(HAS("rank 0 was started with 3 ranks, this rank with 2: start every rank with the same count"));
    printf("  rank %d of %d, disagreeing: %s\n", rank, rank ? 2 : 3, cuk_last_error());
}

/* Two processes say they are rank 1: rank 0 fails; they both do too. */
static void twice_rank(int rank) {
    cuk_comm_id id = pattern;
    double took;
    cuk_status s = rdv(&id, rdv_addr, 3, rank ? 1 : 0, 30, &took);
    CHECK(took < 15);
    if (rank == 0) {
        CHECK(s == CUK_ERR_INVALID && HAS("rank 1 arrived twice"));
        printf("  rank 1 twice: %s\n", cuk_last_error());
    } else {
        CHECK(s == CUK_ERR_IO && HAS("closed the connection"));
    }
}

/* Rank 0 of 2, while the parent plays a stranger on its port (see garbage_to_rank0). */
static int stranger;
static void rank0_vs_stranger(int expect_ok) {
    cuk_comm_id id = pattern;
    double took;
    int fds = open_fds();
    cuk_status s = rdv(&id, rdv_addr, 2, 0, 30, &took);
    CHECK(open_fds() == fds);
    CHECK(took < 15);
    if (expect_ok) {
        CHECK(s == CUK_OK);
        return;
    }
    CHECK(s == CUK_ERR_IO);
    if (stranger == 0) CHECK(HAS("is not a cuk rank: it sent \"G") && HAS("another program using port"));
    if (stranger == 1) CHECK(HAS("closed its connection after 2 of the 12 bytes of a rank's hello"));
    printf("  rank 0 and a stranger: %s\n", cuk_last_error());
}

static void rank1_of_2(int unused) {
    (void)unused;
    cuk_comm_id id;
    double took;
    CHECK(rdv(&id, rdv_addr, 2, 1, 30, &took) == CUK_OK && !memcmp(&id, &pattern, sizeof id));
}

/* Junk sent to rank 0: an HTTP request, a hello cut short; both end rank 0's rendezvous
   with an error. A probe that connects and says nothing does not: a real rank 1 still
   gets the id. */
static void garbage_to_rank0(void) {
    static const char *junk[2] = {"GET / HTTP/1.0\r\n\r\n", "CU"};
    for (stranger = 0; stranger < 2; stranger++) {
        new_addr();
        pid_t pid = spawn(rank0_vs_stranger, 0);
        int fd = raw_connect();
        CHECK(fd >= 0);
        if (fd >= 0) {
            CHECK(send(fd, junk[stranger], strlen(junk[stranger]), MSG_NOSIGNAL) > 0);
            if (stranger == 1) shutdown(fd, SHUT_WR);
            reap(pid, "rank 0 and a stranger");
            close(fd);
        } else {
            kill(pid, SIGKILL);
            reap(pid, "rank 0 and a stranger");
        }
    }
    new_addr();
    pid_t pid = spawn(rank0_vs_stranger, 1);
    int silent = raw_connect(), quits = raw_connect();
    CHECK(silent >= 0 && quits >= 0);
    if (quits >= 0) close(quits);
    pid_t one = spawn(rank1_of_2, 0);
    reap(one, "rank 1 beside a silent stranger");
    reap(pid, "rank 0 beside a silent stranger");
    if (silent >= 0) close(silent);
    printf("  a silent connection and one that closes at once are ignored: rank 1 got the id\n");
}

/* A rank 1 of 2 whose "rank 0" is the parent: it must fail on what the parent sends. */
static int fake;
static void rank1_vs_fake(int unused) {
    (void)unused;
    cuk_comm_id id;
    double took;
    int fds = open_fds();
    cuk_status s = rdv(&id, rdv_addr, 2, 1, fake == 3 ? 0.4 : 30, &took);
    CHECK(open_fds() == fds);
    CHECK(took < 15);
    static const cuk_comm_id zero;
    CHECK(!memcmp(&id, &zero, sizeof id));
    switch (fake) {
    case 0: CHECK(s == CUK_ERR_IO && HAS("is not a cuk rank 0: it answered \"HTTP/1.")); break;
    case 1: CHECK(s == CUK_ERR_IO && HAS("rank 0 closed the connection before sending the id (after 5 of 128 bytes)")); break;
    case 2: CHECK(s == CUK_ERR_INVALID && HAS("rank 0 was started with 7 ranks, this rank with 2")); break;
    case 3: CHECK(s == CUK_ERR_IO && HAS("did not answer within 0.4 s")); break;
    }
    printf("  rank 1 and a fake rank 0 (%d): %s\n", fake, cuk_last_error());
}

/* Junk sent to a connecting rank by a fake rank 0: an HTTP answer, a right answer and
   then a cut id, a count of 7, silence. The hello it reads is checked on the way. */
static void garbage_to_rank1(void) {
    for (fake = 0; fake < 4; fake++) {
        int port, lfd = listen_any(&port);
        snprintf(rdv_addr, sizeof rdv_addr, "127.0.0.1:%d", port);
        pid_t pid = spawn(rank1_vs_fake, 0);
        int fd = accept(lfd, NULL, NULL);
        unsigned char hello[12] = {0};
        size_t got = 0;
        while (fd >= 0 && got < sizeof hello) {
            ssize_t k = recv(fd, hello + got, sizeof hello - got, 0);
            if (k <= 0) break;
            got += (size_t)k;
        }
        static const unsigned char want[12] = {'C', 'U', 'K', 'R', 0, 0, 0, 2, 0, 0, 0, 1};
        CHECK(got == 12 && !memcmp(hello, want, 12));
        static const unsigned char ok7[8] = {'C', 'U', 'K', 'R', 0, 0, 0, 7}, ok2[13] = {'C', 'U', 'K', 'R', 0, 0, 0, 2, 1, 2, 3, 4, 5};
        if (fake == 0) CHECK(send(fd, "HTTP/1.1 400 Bad Request\r\n\r\n", 28, MSG_NOSIGNAL) > 0);
        if (fake == 1) CHECK(send(fd, ok2, sizeof ok2, MSG_NOSIGNAL) > 0);
        if (fake == 2) CHECK(send(fd, ok7, sizeof ok7, MSG_NOSIGNAL) > 0);
        if (fake == 1) shutdown(fd, SHUT_WR);
        reap(pid, "rank 1 and a fake rank 0");
        if (fd >= 0) close(fd);
        close(lfd);
    }
}

/* Arguments, checked before any network. */
static void rendezvous_args(void) {
    cuk_comm_id id = pattern;
    double took;
    CHECK(cuk_comm_rendezvous(NULL, "127.0.0.1:1", 2, 0, 1) == CUK_ERR_INVALID && HAS("NULL id"));
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 0, 0, 1) == CUK_ERR_INVALID && HAS("0 ranks"));
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 3, 3, 1) == CUK_ERR_INVALID && HAS("rank 3 of 3: ranks are 0 to 2"));
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 3, -1, 1) == CUK_ERR_INVALID);
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 2, 1, 0) == CUK_ERR_INVALID && HAS("positive number of seconds"));
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 2, 1, -1) == CUK_ERR_INVALID);
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 2, 1, NAN) == CUK_ERR_INVALID);
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 2, 1, INFINITY) == CUK_ERR_INVALID);
    static const char *bad[] = {"", "localhost", ":29500", "node0:", "node0:0", "node0:65536", "node0:29a", "node0:-1",
                                "node0:+80", "node0:123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(cuk_comm_rendezvous(&id, bad[i], 2, 1, 1) == CUK_ERR_INVALID && HAS("is not host:port"));
        CHECK(HAS("e.g. \"node0:29500\""));
    }
    unsetenv("CUK_RENDEZVOUS");
    CHECK(cuk_comm_rendezvous(&id, NULL, 2, 1, 1) == CUK_ERR_INVALID && HAS("set CUK_RENDEZVOUS"));
    setenv("CUK_RENDEZVOUS", "nocolon", 1);
    CHECK(cuk_comm_rendezvous(&id, NULL, 2, 1, 1) == CUK_ERR_INVALID && HAS("\"nocolon\" (CUK_RENDEZVOUS)"));
    unsetenv("CUK_RENDEZVOUS");
    static const cuk_comm_id zero;
    id = zero;
    CHECK(cuk_comm_rendezvous(&id, "127.0.0.1:1", 2, 0, 1) == CUK_ERR_INVALID && HAS("all zeros") &&
          HAS("cuk_comm_id_new"));
    printf("  rank 0 without an id: %s\n", cuk_last_error());
    /* one rank: nothing to exchange, nothing opened */
    id = pattern;
    CHECK(rdv(&id, "127.0.0.1:1", 1, 0, 1, &took) == CUK_OK && !memcmp(&id, &pattern, sizeof id) && took < 2);
    /* an unknown host fails, whether the resolver says so or the time runs out */
    memset(&id, 1, sizeof id);
    cuk_status s = rdv(&id, "no-such-host.invalid:29500", 2, 1, 0.5, &took);
    CHECK((s == CUK_ERR_INVALID || s == CUK_ERR_IO) && HAS("host \"no-such-host.invalid\" has no IPv4 address"));
    CHECK(id.bytes[0] == 0);
    printf("  an unknown host: %s\n", cuk_last_error());
}

static void create_rank_args(void) {
    cuk_comm *c = (cuk_comm *)&fails;
    cuk_comm_id id = pattern;
    CHECK(cuk_comm_create_rank(NULL, &id, 2, 0, 0) == CUK_ERR_INVALID);
    CHECK(cuk_comm_create_rank(&c, NULL, 2, 0, 0) == CUK_ERR_INVALID && c == NULL && HAS("cuk_comm_id_new"));
    c = (cuk_comm *)&fails;
    CHECK(cuk_comm_create_rank(&c, &id, 0, 0, 0) == CUK_ERR_INVALID && c == NULL && HAS("0 ranks"));
    CHECK(cuk_comm_create_rank(&c, &id, 2, -1, 0) == CUK_ERR_INVALID && HAS("rank -1 of 2: ranks are 0 to 1"));
    CHECK(cuk_comm_create_rank(&c, &id, 2, 2, 0) == CUK_ERR_INVALID && HAS("rank 2 of 2"));
    CHECK(cuk_comm_create_rank(&c, &id, 2, 1, -1) == CUK_ERR_INVALID && HAS("device -1"));
    int ok = 1;
    CHECK(cuk_gpu_available(&ok) == CUK_OK);
    if (!ok) { /* the driver's message, as for cuk_comm_create */
        c = (cuk_comm *)&fails;
        cuk_status s = cuk_comm_create_rank(&c, &id, 2, 1, 0);
        CHECK((s == CUK_ERR_NO_DRIVER || s == CUK_ERR_NO_DEVICE) && c == NULL);
        printf("  cuk_comm_create_rank without a GPU: %s: %s\n", cuk_status_name(s), cuk_last_error());
    }
}

int main(void) {
    in_child(missing_library);
    in_child(toolkit_library);
    in_child(comm_id);
    for (int i = 0; i < 128; i++) pattern.bytes[i] = (unsigned char)(i * 7 + 3);

    rendezvous_args();
    create_rank_args();
    rendezvous_4();
    new_addr();
    pid_t one = spawn(timeout_rank, 1);
    usleep(100000);
    pid_t zero = spawn(timeout_rank, 0);
    reap(zero, "timeout, rank 0");
    reap(one, "timeout, rank 1");
    new_addr();
    reap(spawn(lonely_rank, 0), "rank 1 alone");
    new_addr();
    one = spawn(disagree_rank, 1);
    zero = spawn(disagree_rank, 0);
    reap(zero, "disagreeing, rank 0");
    reap(one, "disagreeing, rank 1");
    new_addr();
    zero = spawn(twice_rank, 0);
    one = spawn(twice_rank, 1);
    pid_t two = spawn(twice_rank, 2);
    reap(zero, "rank 1 twice, rank 0");
    reap(one, "rank 1 twice, one");
    reap(two, "rank 1 twice, the other");
    garbage_to_rank0();
    garbage_to_rank1();

    /* Arguments are checked before anything is loaded. */
    cuk_comm *c = (cuk_comm *)&fails;
    int devs[3] = {0, 1, 0};
    CHECK(cuk_comm_create(NULL, devs, 1) == CUK_ERR_INVALID);
    CHECK(cuk_comm_create(&c, devs, 0) == CUK_ERR_INVALID && c == NULL);
    CHECK(strstr(cuk_last_error(), "at least one"));
    CHECK(cuk_comm_create(&c, NULL, 2) == CUK_ERR_INVALID && c == NULL);
    CHECK(cuk_comm_create(&c, devs, 3) == CUK_ERR_INVALID && c == NULL);
    CHECK(strstr(cuk_last_error(), "device 0 is listed twice (ranks 0 and 2)"));
    int n = 5;
    CHECK(cuk_comm_size(NULL, &n) == CUK_ERR_INVALID);
    CHECK(cuk_comm_device(NULL, 0, &n) == CUK_ERR_INVALID);
    cuk_devptr p[1] = {0};
    CHECK(cuk_comm_allreduce(NULL, p, p, 4, CUK_COMM_F32, CUK_COMM_SUM) == CUK_ERR_INVALID);
    CHECK(cuk_comm_broadcast(NULL, p, p, 4, CUK_COMM_F32, 0) == CUK_ERR_INVALID);
    CHECK(cuk_comm_synchronize(NULL) == CUK_ERR_INVALID);
    CHECK(cuk_comm_destroy(NULL) == CUK_OK);

    /* No usable driver here (CI): the driver's message, not NCCL's, and no communicator. */
    int ok = 1;
    CHECK(cuk_gpu_available(&ok) == CUK_OK);
    if (!ok) {
        c = (cuk_comm *)&fails;
        cuk_status s = cuk_comm_create(&c, devs, 2);
        CHECK((s == CUK_ERR_NO_DRIVER || s == CUK_ERR_NO_DEVICE) && c == NULL);
        printf("  cuk_comm_create without a GPU: %s: %s\n", cuk_status_name(s), cuk_last_error());
    } else {
        printf("  note: a GPU is present; the no-driver case was not exercised\n");
    }

    printf("%s: %s\n", __FILE__, fails ? "FAIL" : "PASS");
    return fails != 0;
}
