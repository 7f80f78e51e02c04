/* Several GPUs of one process through NCCL (libnccl.so.2, loaded with dlopen on first
   use, like the driver): communicators over a list of devices, one rank a device, each
   with a stream of its own in the device's primary context; all-reduce and broadcast
   queued on those streams. Loading NCCL sets NCCL_NVLS_ENABLE=0 in the process's
   environment first, so neither this process's communicators nor its children's use
   NVLink multicast (which can take a shared host's GPUs out of service); cuk never calls
   cuMulticastCreate. A communicator can also be one process's rank of a communicator
   across processes (on one host or several), from an id rank 0 made and handed out, e.g.
   through the TCP rendezvous at the end of this file. DESIGN.md, "Several GPUs". */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ---- NCCL subset (values from NCCL 2.28's nccl.h) ------------------------------------- */
typedef int ncclResult_t; /* 0 ncclSuccess, 7 ncclInProgress */
typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} ncclUniqueId;
_Static_assert(sizeof(ncclUniqueId) == sizeof(cuk_comm_id), "cuk_comm_id holds an ncclUniqueId");
enum { NCCL_SUCCESS = 0, NCCL_IN_PROGRESS = 7 };

#define NCCL_FUNCS(X)                                                                            \
    X(ncclGetVersion, (int *))                                                                   \
    X(ncclCommInitAll, (ncclComm_t *, int, const int *))                                         \
    X(ncclGetUniqueId, (ncclUniqueId *))                                                         \
    X(ncclCommInitRank, (ncclComm_t *, int, ncclUniqueId, int))                                  \
    X(ncclCommDestroy, (ncclComm_t))                                                             \
    X(ncclCommCount, (const ncclComm_t, int *))                                                  \
    X(ncclAllReduce, (const void *, void *, size_t, int, int, ncclComm_t, CUstream))             \
    X(ncclBroadcast, (const void *, void *, size_t, int, int, ncclComm_t, CUstream))             \
    X(ncclGroupStart, (void))                                                                    \
    X(ncclGroupEnd, (void))

typedef struct Nccl {
#define X(sym, args) ncclResult_t (*sym) args;
    NCCL_FUNCS(X)
#undef X
    const char *(*ncclGetErrorString)(ncclResult_t);
} Nccl;

static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static Nccl nc;
static bool nccl_ok;
static char nccl_msg[2048];

static void nccl_load_once(void) {
    /* Before the library reads its environment; inherited by every child process. */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    void *h = lib_open("CUK_LIBNCCL", "libnccl.so.2", NULL, "NCCL",
                       "work over several GPUs needs NCCL (the CUDA toolkit's, or the nvidia-nccl wheel's): "
                       "install it, or set CUDA_HOME or CUK_LIBNCCL to its libnccl.so.2",
                       nccl_msg, sizeof nccl_msg);
    if (!h) return;
#define X(sym, args)                                                                             \
    *(void **)&nc.sym = dlsym(h, #sym);                                                          \
    if (!nc.sym) {                                                                               \
        snprintf(nccl_msg, sizeof nccl_msg, "NCCL is too old: it lacks %s; install NCCL 2.18 or later", #sym); \
        dlclose(h);                                                                              \
        return;                                                                                  \
    }
    NCCL_FUNCS(X)
#undef X
    *(void **)&nc.ncclGetErrorString = dlsym(h, "ncclGetErrorString");
    nccl_ok = true;
}

static const Nccl *nccl_load(void) {
    pthread_once(&nccl_once, nccl_load_once);
    if (!nccl_ok) {
        err_set(CUK_ERR_NO_NCCL, "%s", nccl_msg);
        return NULL;
    }
    return &nc;
}

static cuk_status nccl_fail(ncclResult_t r, const char *call) {
    const char *str = nc.ncclGetErrorString ? nc.ncclGetErrorString(r) : NULL;
    /* 1 unhandled CUDA error, 2 system error, 3 internal error, 4 invalid argument,
       5 invalid usage, 6 remote error */
    return err_set(r == 4 || r == 5 ? CUK_ERR_INVALID : CUK_ERR_DRIVER, "%s failed: %s (ncclResult %d)", call,
                   str ? str : "no description", r);
}
#define NCCL_CHECK(call, name)                                                                   \
    do {                                                                                         \
        ncclResult_t nccl_r_ = (call);                                                           \
        if (nccl_r_ != NCCL_SUCCESS && nccl_r_ != NCCL_IN_PROGRESS) return nccl_fail(nccl_r_, name); \
    } while (0)

cuk_status cuk_nccl_version(int *version) {
    if (!version) return err_set(CUK_ERR_INVALID, "cuk_nccl_version: NULL argument");
    *version = 0;
    const Nccl *n = nccl_load();
    if (!n) return CUK_ERR_NO_NCCL;
    NCCL_CHECK(n->ncclGetVersion(version), "ncclGetVersion");
    return CUK_OK;
}

/* ---- communicators -------------------------------------------------------------------- */

/* Ranks first .. first + n - 1 of a communicator of nranks ranks live in this process:
   every rank of cuk_comm_create's (first 0, n == nranks), or one of cuk_comm_create_rank's.
   Arrays (and the collectives' send/recv) are indexed by local entry i, rank first + i. */
struct cuk_comm_s {
    int n;            /* this process's ranks */
    int nranks;       /* the communicator's */
    int first;        /* the rank of entry 0 */
    Device **dev;     /* entry i's device */
    ncclComm_t *comm; /* entry i's communicator */
    CUstream *stream; /* entry i's stream, in its device's primary context */
};

static void comm_free(cuk_comm *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        if (c->comm && c->comm[i]) nc.ncclCommDestroy(c->comm[i]);
        if (c->stream && c->stream[i] && ctx_make_current(c->dev[i]) == CUK_OK) cu.cuStreamDestroy(c->stream[i]);
    }
    free(c->dev);
    free(c->comm);
    free(c->stream);
    free(c);
}

/* A communicator's host side for ranks first .. first + n - 1 on devices[0..n): each
   device opened, with a stream of its own; the NCCL communicators are the caller's to make.
   The driver and NCCL are loaded. */
static cuk_status comm_new(const char *call, cuk_comm **out, const int *devices, int n, int nranks, int first) {
    cuk_comm *c = calloc(1, sizeof *c);
    if (!c || !(c->dev = calloc((size_t)n, sizeof *c->dev)) || !(c->comm = calloc((size_t)n, sizeof *c->comm)) ||
        !(c->stream = calloc((size_t)n, sizeof *c->stream))) {
        comm_free(c);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "%s: out of host memory", call);
    }
    c->n = n;
    c->nranks = nranks;
    c->first = first;
    for (int i = 0; i < n; i++) {
        cuk_status s;
        if ((s = dev_open(devices[i], &c->dev[i])) || (s = ctx_make_current(c->dev[i]))) {
            comm_free(c);
            return s;
        }
        CUresult r = cu.cuStreamCreate(&c->stream[i], CU_STREAM_NON_BLOCKING);
        if (r) {
            c->stream[i] = NULL;
            comm_free(c);
            return cu_fail(r, "cuStreamCreate");
        }
    }
    *out = c;
    return CUK_OK;
}

cuk_status cuk_comm_create(cuk_comm **out, const int *devices, int n) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_comm_create: NULL argument");
    *out = NULL;
    if (n < 1 || !devices)
        return err_set(CUK_ERR_INVALID, "cuk_comm_create: %d devices: a communicator needs at least one", n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (devices[i] == devices[j])
                return err_set(CUK_ERR_INVALID,
                               "cuk_comm_create: device %d is listed twice (ranks %d and %d): one rank a device",
                               devices[i], j, i);
    cuk_status s = driver_load();
    if (s) return s;
    const Nccl *nl = nccl_load();
    if (!nl) return CUK_ERR_NO_NCCL;
    cuk_comm *c = NULL;
    if ((s = comm_new("cuk_comm_create", &c, devices, n, n, 0))) return s;
    ncclResult_t r = nl->ncclCommInitAll(c->comm, n, devices);
    if (r != NCCL_SUCCESS) {
        memset(c->comm, 0, sizeof *c->comm * (size_t)n);
        comm_free(c);
        return nccl_fail(r, "ncclCommInitAll");
    }
    *out = c;
    return CUK_OK;
}

cuk_status cuk_comm_id_new(cuk_comm_id *id) {
    if (!id) return err_set(CUK_ERR_INVALID, "cuk_comm_id_new: NULL argument");
    memset(id, 0, sizeof *id);
    const Nccl *nl = nccl_load();
    if (!nl) return CUK_ERR_NO_NCCL;
    ncclUniqueId u;
    NCCL_CHECK(nl->ncclGetUniqueId(&u), "ncclGetUniqueId");
    memcpy(id->bytes, u.internal, sizeof id->bytes);
    return CUK_OK;
}

cuk_status cuk_comm_create_rank(cuk_comm **out, const cuk_comm_id *id, int nranks, int rank, int device) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_comm_create_rank: NULL argument");
    *out = NULL;
    if (!id)
        return err_set(CUK_ERR_INVALID, "cuk_comm_create_rank: NULL id: every rank needs rank 0's (cuk_comm_id_new "
                                        "makes it, cuk_comm_rendezvous hands it out)");
    if (nranks < 1)
        return err_set(CUK_ERR_INVALID, "cuk_comm_create_rank: %d ranks: a communicator needs at least one", nranks);
    if (rank < 0 || rank >= nranks)
        return err_set(CUK_ERR_INVALID,
                       "cuk_comm_create_rank: rank %d of %d: ranks are 0 to %d, one per process, each given its own",
                       rank, nranks, nranks - 1);
    if (device < 0)
        return err_set(CUK_ERR_INVALID, "cuk_comm_create_rank: device %d: device indices are 0 and up (cuk_device_count)",
                       device);
    cuk_status s = driver_load();
    if (s) return s;
    const Nccl *nl = nccl_load();
    if (!nl) return CUK_ERR_NO_NCCL;
    cuk_comm *c = NULL;
    if ((s = comm_new("cuk_comm_create_rank", &c, &device, 1, nranks, rank))) return s;
    /* NCCL takes the rank's device from the current context (comm_new left it current). */
    ncclUniqueId u;
    memcpy(u.internal, id->bytes, sizeof u.internal);
    ncclResult_t r = nl->ncclCommInitRank(&c->comm[0], nranks, u, rank);
    if (r != NCCL_SUCCESS) {
        c->comm[0] = NULL;
        comm_free(c);
        return nccl_fail(r, "ncclCommInitRank");
    }
    *out = c;
    return CUK_OK;
}

cuk_status cuk_comm_size(const cuk_comm *c, int *n) {
    if (!c || !n) return err_set(CUK_ERR_INVALID, "cuk_comm_size: NULL argument");
    *n = c->nranks;
    return CUK_OK;
}

cuk_status cuk_comm_device(const cuk_comm *c, int rank, int *device) {
    if (!c || !device) return err_set(CUK_ERR_INVALID, "cuk_comm_device: NULL argument");
    if (rank < 0 || rank >= c->nranks)
        return err_set(CUK_ERR_INVALID, "cuk_comm_device: rank %d of a communicator of %d", rank, c->nranks);
    if (rank < c->first || rank >= c->first + c->n)
        return err_set(CUK_ERR_INVALID,
                       "cuk_comm_device: rank %d runs in another process: this one holds rank %d of the %d",
                       rank, c->first, c->nranks);
    *device = c->dev[rank - c->first]->index;
    return CUK_OK;
}

static size_t type_size(cuk_comm_type t) {
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return (unsigned)t < sizeof sizes / sizeof sizes[0] ? sizes[t] : 0;
}

/* The arguments every collective shares; entry i's buffers (this process's i-th rank's)
   are device pointers of its device (the caller's to guarantee: NCCL reads them there). */
static cuk_status coll_args(const char *call, const cuk_comm *c, const cuk_devptr *send, const cuk_devptr *recv,
                            size_t count, cuk_comm_type t) {
    if (!c || !send || !recv) return err_set(CUK_ERR_INVALID, "%s: NULL argument", call);
    if (!type_size(t))
        return err_set(CUK_ERR_INVALID, "%s: element type %d is not a cuk_comm_type (CUK_COMM_I8 to CUK_COMM_BF16)", call,
                       (int)t);
    if (count > SIZE_MAX / type_size(t))
        return err_set(CUK_ERR_INVALID, "%s: %zu elements of %zu bytes overflow", call, count, type_size(t));
    if (count)
        for (int i = 0; i < c->n; i++)
            if (!send[i] || !recv[i]) return err_set(CUK_ERR_INVALID, "%s: rank %d's buffer is 0", call, c->first + i);
    return CUK_OK;
}

/* One collective on every rank of this process, as one NCCL group: all-reduce and broadcast take the same
   arguments, the reduction or the root rank in `arg`. */
typedef ncclResult_t (*Coll)(const void *, void *, size_t, int, int, ncclComm_t, CUstream);
static cuk_status coll_run(cuk_comm *c, Coll one, const char *name, const cuk_devptr *send, const cuk_devptr *recv,
                           size_t count, cuk_comm_type t, int arg) {
    if (!count) return CUK_OK;
    NCCL_CHECK(nc.ncclGroupStart(), "ncclGroupStart");
    for (int i = 0; i < c->n; i++) {
        ncclResult_t r =
            one((const void *)(uintptr_t)send[i], (void *)(uintptr_t)recv[i], count, (int)t, arg, c->comm[i], c->stream[i]);
        if (r != NCCL_SUCCESS && r != NCCL_IN_PROGRESS) {
            nc.ncclGroupEnd();
            return nccl_fail(r, name);
        }
    }
    NCCL_CHECK(nc.ncclGroupEnd(), "ncclGroupEnd");
    return CUK_OK;
}

cuk_status cuk_comm_allreduce(cuk_comm *c, const cuk_devptr *send, const cuk_devptr *recv, size_t count,
                              cuk_comm_type t, cuk_comm_op op) {
    cuk_status s = coll_args("cuk_comm_allreduce", c, send, recv, count, t);
    if (s) return s;
    if ((unsigned)op > CUK_COMM_AVG)
        return err_set(CUK_ERR_INVALID, "cuk_comm_allreduce: operation %d is not a cuk_comm_op (CUK_COMM_SUM to CUK_COMM_AVG)",
                       (int)op);
    if ((op == CUK_COMM_AVG) && t != CUK_COMM_F16 && t != CUK_COMM_F32 && t != CUK_COMM_F64 && t != CUK_COMM_BF16)
        return err_set(CUK_ERR_INVALID, "cuk_comm_allreduce: CUK_COMM_AVG takes float types only");
    return coll_run(c, nc.ncclAllReduce, "ncclAllReduce", send, recv, count, t, (int)op);
}

cuk_status cuk_comm_broadcast(cuk_comm *c, const cuk_devptr *send, const cuk_devptr *recv, size_t count,
                              cuk_comm_type t, int root) {
    cuk_status s = coll_args("cuk_comm_broadcast", c, send, recv, count, t);
    if (s) return s;
    if (root < 0 || root >= c->nranks)
        return err_set(CUK_ERR_INVALID, "cuk_comm_broadcast: root rank %d of a communicator of %d", root, c->nranks);
    return coll_run(c, nc.ncclBroadcast, "ncclBroadcast", send, recv, count, t, root);
}

cuk_status cuk_comm_synchronize(cuk_comm *c) {
    if (!c) return err_set(CUK_ERR_INVALID, "cuk_comm_synchronize: NULL argument");
    for (int i = 0; i < c->n; i++) {
        cuk_status s = ctx_make_current(c->dev[i]);
        if (s) return s;
        CU_CHECK(cu.cuStreamSynchronize(c->stream[i]), "cuStreamSynchronize");
    }
    return CUK_OK;
}

cuk_status cuk_comm_destroy(cuk_comm *c) {
    if (!c) return CUK_OK;
    cuk_status s = cuk_comm_synchronize(c);
    comm_free(c);
    return s;
}

/* ---- TCP rendezvous --------------------------------------------------------------------- */
/* Rank 0 listens on the port; every other rank connects (retrying: rank 0 may start
   later) and sends its hello, "CUKR", nranks, its rank (big-endian 32-bit words); rank 0
   answers each at once with "CUKR" and its nranks, and once all nranks - 1 have arrived
   sends each the 128 bytes of the id and closes. Anything else on the wire ends the
   rendezvous with an error where it was received (rank 0 ignores a connection that
   closes without a word or stays silent, a port probe); rank 0's failing closes every
   connection, so waiting ranks fail too: no rank gets the id unless every rank arrived.
   Sockets are non-blocking, close-on-exec, and every wait is a poll bounded by the
   deadline; sends use MSG_NOSIGNAL, so no signal handler is touched. */

enum { RDV_HELLO = 12, RDV_REPLY = 8, RDV_ID = 128 };
enum { IO_DONE, IO_TIMEOUT, IO_EOF, IO_ERROR };
static const unsigned char rdv_magic[4] = {'C', 'U', 'K', 'R'};

typedef struct Rdv {
    char addr[300];         /* "host:port", for messages */
    char host[256], port[8];
    int nranks, rank;
    double timeout, deadline;
} Rdv;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* poll's timeout for what is left until deadline, rounded up (0 once it passed). */
static int ms_left(double deadline) {
    double left = (deadline - now_s()) * 1e3;
    if (left <= 0) return 0;
    return left >= INT_MAX - 1 ? INT_MAX - 1 : (int)left + 1;
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}
static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static cuk_status rdv_fail(const Rdv *r, cuk_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cuk_status rdv_fail(const Rdv *r, cuk_status s, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return err_set(s, "cuk_comm_rendezvous at %s, rank %d of %d: %s", r->addr, r->rank, r->nranks, what);
}

/* 1 when fd is ready for events, 0 once deadline passed, -1 on an error (errno). */
static int wait_fd(int fd, short events, double deadline) {
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int k = poll(&p, 1, ms_left(deadline));
        if (k > 0) return 1;
        if (k == 0 && now_s() >= deadline) return 0;
        if (k < 0 && errno != EINTR) return -1;
    }
}

/* Exactly n bytes by deadline (*got says how many came): IO_DONE, IO_TIMEOUT, IO_EOF,
   or IO_ERROR (errno). */
static int recv_all(int fd, unsigned char *buf, size_t n, size_t *got, double deadline) {
    *got = 0;
    while (*got < n) {
        ssize_t k = recv(fd, buf + *got, n - *got, 0);
        if (k > 0) {
            *got += (size_t)k;
            continue;
        }
        if (k == 0) return IO_EOF;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return IO_ERROR;
        int w = wait_fd(fd, POLLIN, deadline);
        if (w <= 0) return w ? IO_ERROR : IO_TIMEOUT;
    }
    return IO_DONE;
}

static int send_all(int fd, const unsigned char *buf, size_t n, double deadline) {
    size_t sent = 0;
    while (sent < n) {
        ssize_t k = send(fd, buf + sent, n - sent, MSG_NOSIGNAL);
        if (k >= 0) {
            sent += (size_t)k;
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return IO_ERROR;
        int w = wait_fd(fd, POLLOUT, deadline);
        if (w <= 0) return w ? IO_ERROR : IO_TIMEOUT;
    }
    return IO_DONE;
}

static void addr_str(const struct sockaddr_in *a, char *buf, size_t len) {
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
}

/* Bytes a stranger sent, printable: "GET / HT" or "\x16\x03\x01...". */
static void bytes_str(const unsigned char *b, size_t n, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && o + 5 < len; i++)
        o += (size_t)snprintf(buf + o, len - o, b[i] >= 32 && b[i] < 127 && b[i] != '"' && b[i] != '\\' ? "%c" : "\\x%02x",
                              b[i]);
}

static cuk_status rdv_parse(Rdv *r, const char *addr) {
    const char *from = "";
    if (!addr) {
        addr = getenv("CUK_RENDEZVOUS");
        from = " (CUK_RENDEZVOUS)";
        if (!addr || !*addr)
            return err_set(CUK_ERR_INVALID, "cuk_comm_rendezvous: no address: pass \"host:port\" (rank 0's host and a "
                                            "free port, the same for every rank) or set CUK_RENDEZVOUS to it");
    }
    snprintf(r->addr, sizeof r->addr, "%s", addr);
    const char *colon = strrchr(addr, ':');
    size_t hl = colon ? (size_t)(colon - addr) : 0, pl = colon ? strlen(colon + 1) : 0;
    long port = 0;
    for (size_t i = 0; i < pl && i < 6; i++)
        port = colon[1 + i] >= '0' && colon[1 + i] <= '9' ? port * 10 + (colon[1 + i] - '0') : -1000000;
    if (!colon || !hl || hl >= sizeof r->host || !pl || pl > 5 || port < 1 || port > 65535)
        return err_set(CUK_ERR_INVALID,
                       "cuk_comm_rendezvous: address \"%s\"%s is not host:port (rank 0's IPv4 address or host name, "
                       "and a port 1 to 65535: e.g. \"node0:29500\" or \"127.0.0.1:29500\")",
                       addr, from);
    memcpy(r->host, addr, hl);
    r->host[hl] = 0;
    snprintf(r->port, sizeof r->port, "%ld", port);
    return CUK_OK;
}

/* ---- rank 0 ---- */

typedef struct Peer {
    int fd;
    int rank; /* -1 until its hello came */
    size_t got;
    unsigned char hello[RDV_HELLO];
    char from[32];
} Peer;

/* Connections rank 0 holds at once: the other ranks', and a few strangers' (a silent port
   probe is no reason to fail). */
#define RDV_MAX_PEERS(nranks) ((nranks) - 1 + 16)

typedef struct Serve {
    const Rdv *r;
    Peer *p;     /* the connections, npeer of them (at most RDV_MAX_PEERS) */
    int npeer;
    int *who;    /* rank -> index in p, or -1 */
    int arrived; /* ranks other than 0 whose hello came */
} Serve;

static void peer_drop(Serve *s, int j) {
    close(s->p[j].fd);
    if (s->p[j].rank > 0) {
        s->who[s->p[j].rank] = -1;
        s->arrived--;
    }
    s->p[j] = s->p[--s->npeer];
    if (s->p[j].rank > 0 && j < s->npeer) s->who[s->p[j].rank] = j;
}

/* Peer j is readable: more of its hello, or (after it) its leaving. */
static cuk_status peer_read(Serve *s, int j) {
    const Rdv *r = s->r;
    Peer *p = &s->p[j];
    if (p->rank > 0) {
        unsigned char b;
        ssize_t k = recv(p->fd, &b, 1, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return CUK_OK;
        if (k > 0)
            return rdv_fail(r, CUK_ERR_IO, "rank %d (from %s) sent more than its hello: not a cuk rank?", p->rank, p->from);
        peer_drop(s, j); /* it left (timed out): it is not there any more */
        return CUK_OK;
    }
    ssize_t k = recv(p->fd, p->hello + p->got, RDV_HELLO - p->got, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return CUK_OK;
    if (k <= 0 && p->got == 0) { /* connected and left without a word (a port probe): ignored */
        peer_drop(s, j);
        return CUK_OK;
    }
    if (k <= 0)
        return rdv_fail(r, CUK_ERR_IO,
                        "a peer at %s closed its connection after %zu of the %d bytes of a rank's hello: not a cuk rank? "
                        "(is another program using port %s?)",
                        p->from, p->got, RDV_HELLO, r->port);
    p->got += (size_t)k;
    if (memcmp(p->hello, rdv_magic, p->got < 4 ? p->got : 4)) {
        char b[64];
        bytes_str(p->hello, p->got, b, sizeof b);
        return rdv_fail(r, CUK_ERR_IO,
                        "a peer at %s is not a cuk rank: it sent \"%s\", not \"CUKR\" (is another program using port %s?)",
                        p->from, b, r->port);
    }
    if (p->got < RDV_HELLO) return CUK_OK;
    uint32_t n = get32(p->hello + 4), rank = get32(p->hello + 8);
    unsigned char reply[RDV_REPLY];
    memcpy(reply, rdv_magic, 4);
    put32(reply + 4, (uint32_t)r->nranks);
    /* Answered first, so that a rank of another count learns it. */
    int io = send_all(p->fd, reply, sizeof reply, r->deadline);
    if (n != (uint32_t)r->nranks)
        return rdv_fail(r, CUK_ERR_INVALID,
                        "rank %u (from %s) was started with %u ranks, rank 0 with %d: start every rank with the same count",
                        rank, p->from, n, r->nranks);
    if (rank == 0 || rank >= n)
        return rdv_fail(r, CUK_ERR_INVALID, "a peer at %s says it is rank %u: ranks 1 to %d connect to rank 0", p->from,
                        rank, r->nranks - 1);
    if (s->who[rank] >= 0)
        return rdv_fail(r, CUK_ERR_INVALID, "rank %u arrived twice (from %s and %s): give each process its own rank",
                        rank, s->p[s->who[rank]].from, p->from);
    if (io != IO_DONE) { /* it left before hearing back */
        peer_drop(s, j);
        return CUK_OK;
    }
    p->rank = (int)rank;
    s->who[rank] = j;
    s->arrived++;
    return CUK_OK;
}

static cuk_status rdv_timeout_root(const Serve *s) {
    const Rdv *r = s->r;
    char miss[200] = "";
    size_t o = 0;
    int shown = 0;
    for (int k = 1; k < r->nranks && o + 16 < sizeof miss; k++)
        if (s->who[k] < 0) {
            if (shown == 8) {
                o += (size_t)snprintf(miss + o, sizeof miss - o, ", ...");
                break;
            }
            o += (size_t)snprintf(miss + o, sizeof miss - o, "%s%d", shown++ ? ", " : "", k);
        }
    return rdv_fail(r, CUK_ERR_IO,
                    "after %g s, %d of %d ranks had arrived (missing: %s %s): start every rank with this address and "
                    "rank count, or raise the timeout",
                    r->timeout, s->arrived + 1, r->nranks, r->nranks - 1 - s->arrived == 1 ? "rank" : "ranks", miss);
}

static cuk_status rdv_serve(const Rdv *r, const cuk_comm_id *id) {
    /* A loopback address (numeric, or "localhost"): listen there only. Any other: on
       every interface, since a host name may resolve to an address the other hosts cannot
       reach on its own host (Debian's 127.0.1.1). */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(r->port))};
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    struct in_addr a;
    if (!strcmp(r->host, "localhost"))
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, r->host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127)
        sa.sin_addr = a;
    Serve s = {.r = r};
    struct pollfd *pf = NULL;
    cuk_status st = CUK_OK;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
    if (lfd < 0) return rdv_fail(r, CUK_ERR_IO, "socket: %s", strerror(errno));
    if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(lfd, (struct sockaddr *)&sa, sizeof sa) || listen(lfd, r->nranks < SOMAXCONN ? r->nranks : SOMAXCONN)) {
        int e = errno;
        close(lfd);
        return rdv_fail(r, CUK_ERR_IO, "rank 0 cannot listen on port %s: %s%s", r->port, strerror(e),
                        e == EADDRINUSE ? " (another program, or another rendezvous, has it: pick a free port)" : "");
    }
    int cap = RDV_MAX_PEERS(r->nranks);
    if (!(s.p = calloc((size_t)cap, sizeof *s.p)) || !(s.who = malloc((size_t)r->nranks * sizeof *s.who)) ||
        !(pf = calloc((size_t)cap + 1, sizeof *pf))) {
        st = rdv_fail(r, CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        goto out;
    }
    for (int k = 0; k < r->nranks; k++) s.who[k] = -1;
    while (s.arrived < r->nranks - 1) {
        if (now_s() >= r->deadline) {
            st = rdv_timeout_root(&s);
            goto out;
        }
        pf[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int j = 0; j < s.npeer; j++) pf[j + 1] = (struct pollfd){.fd = s.p[j].fd, .events = POLLIN};
        int np = s.npeer, k = poll(pf, (nfds_t)np + 1, ms_left(r->deadline));
        if (k < 0 && errno != EINTR) {
            st = rdv_fail(r, CUK_ERR_IO, "poll: %s", strerror(errno));
            goto out;
        }
        if (k <= 0) continue;
        /* Downwards: a dropped peer's slot takes the last one's, already seen. */
        for (int j = np - 1; j >= 0; j--)
            if (pf[j + 1].revents && (st = peer_read(&s, j))) goto out;
        if (!pf[0].revents) continue;
        for (;;) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            int fd = accept4(lfd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                st = rdv_fail(r, CUK_ERR_IO, "accept: %s", strerror(errno));
                goto out;
            }
            if (s.npeer == cap) {
                char b[32];
                addr_str(&from, b, sizeof b);
                st = rdv_fail(r, CUK_ERR_IO,
                              "a connection from %s is one too many (%d open, for %d other ranks): is another "
                              "program using port %s?",
                              b, cap, r->nranks - 1, r->port);
                close(fd);
                goto out;
            }
            Peer *p = &s.p[s.npeer++];
            *p = (Peer){.fd = fd, .rank = -1};
            addr_str(&from, p->from, sizeof p->from);
        }
    }
    for (int j = 0; j < s.npeer; j++)
        if (s.p[j].rank > 0 && send_all(s.p[j].fd, id->bytes, RDV_ID, r->deadline) != IO_DONE) {
            st = rdv_fail(r, CUK_ERR_IO, "rank %d (from %s) left before it got the id: every rank must stay until it has it",
                          s.p[j].rank, s.p[j].from);
            goto out;
        }
out:
    for (int j = 0; j < s.npeer; j++) close(s.p[j].fd);
    close(lfd);
    free(s.p);
    free(s.who);
    free(pf);
    return st;
}

/* ---- ranks 1 and up ---- */

/* Linux can connect a socket to itself when nothing listens on a local port of the
   ephemeral range; that is no rank 0. */
static int self_connected(int fd) {
    struct sockaddr_in a, b;
    socklen_t la = sizeof a, lb = sizeof b;
    return !getsockname(fd, (struct sockaddr *)&a, &la) && !getpeername(fd, (struct sockaddr *)&b, &lb) &&
           a.sin_port == b.sin_port && a.sin_addr.s_addr == b.sin_addr.s_addr;
}

/* A connection to rank 0, retried until the deadline (rank 0 may start later). */
static cuk_status rdv_connect(const Rdv *r, int *out) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int e;
    while ((e = getaddrinfo(r->host, r->port, &hints, &res)) == EAI_AGAIN && now_s() < r->deadline)
        poll(NULL, 0, ms_left(r->deadline) < 100 ? ms_left(r->deadline) : 100);
    if (e)
        return rdv_fail(r, e == EAI_NONAME ? CUK_ERR_INVALID : CUK_ERR_IO, "host \"%s\" has no IPv4 address: %s", r->host,
                        gai_strerror(e));
    struct sockaddr_in sa;
    memcpy(&sa, res->ai_addr, sizeof sa);
    freeaddrinfo(res);
    int pause_ms = 10, err = 0, tries = 0;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return rdv_fail(r, CUK_ERR_IO, "socket: %s", strerror(errno));
        tries++;
        err = 0;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
            err = errno;
            if (err == EINPROGRESS || err == EINTR) {
                int w = wait_fd(fd, POLLOUT, r->deadline);
                socklen_t el = sizeof err;
                if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el)) err = errno;
                if (w == 0) err = ETIMEDOUT;
                if (w < 0) err = errno;
            }
        }
        if (!err && self_connected(fd)) err = ECONNREFUSED;
        if (!err) {
            *out = fd;
            return CUK_OK;
        }
        close(fd);
        int left = ms_left(r->deadline);
        if (left <= 0)
            return rdv_fail(r, CUK_ERR_IO,
                            "no rank 0 answered within %g s (%d tries, the last: %s): start rank 0 with this address "
                            "(it may start after the others, within the timeout), or raise the timeout",
                            r->timeout, tries, strerror(err));
        poll(NULL, 0, left < pause_ms ? left : pause_ms);
        pause_ms = pause_ms < 250 ? pause_ms * 2 : 250;
    }
}

static cuk_status rdv_join(const Rdv *r, cuk_comm_id *id) {
    int fd = -1;
    cuk_status st = rdv_connect(r, &fd);
    if (st) return st;
    unsigned char hello[RDV_HELLO], reply[RDV_REPLY], got_id[RDV_ID];
    memcpy(hello, rdv_magic, 4);
    put32(hello + 4, (uint32_t)r->nranks);
    put32(hello + 8, (uint32_t)r->rank);
    size_t got = 0;
    int io = send_all(fd, hello, sizeof hello, r->deadline);
    if (io == IO_DONE) io = recv_all(fd, reply, sizeof reply, &got, r->deadline);
    int e = errno;
    char b[64];
    bytes_str(reply, got, b, sizeof b);
    if (got && memcmp(reply, rdv_magic, got < 4 ? got : 4))
        st = rdv_fail(r, CUK_ERR_IO, "the program on port %s is not a cuk rank 0: it answered \"%s\", not \"CUKR\"", r->port,
                      b);
    else if (io == IO_TIMEOUT)
        st = rdv_fail(r, CUK_ERR_IO,
                      "the program on port %s did not answer within %g s as a cuk rank 0 would at once "
                      "(is another program using the port?)",
                      r->port, r->timeout);
    else if (io == IO_EOF)
        st = rdv_fail(r, CUK_ERR_IO,
                      "rank 0 closed the connection after %zu of the %d bytes of its answer: it failed (see its error), "
                      "or another program has port %s",
                      got, RDV_REPLY, r->port);
    else if (io != IO_DONE)
        st = rdv_fail(r, CUK_ERR_IO, "talking to rank 0: %s", strerror(e));
    else if (get32(reply + 4) != (uint32_t)r->nranks)
        st = rdv_fail(r, CUK_ERR_INVALID, "rank 0 was started with %u ranks, this rank with %d: start every rank with the same count",
                      get32(reply + 4), r->nranks);
    if (!st) {
        io = recv_all(fd, got_id, sizeof got_id, &got, r->deadline);
        if (io == IO_TIMEOUT)
            st = rdv_fail(r, CUK_ERR_IO,
                          "rank 0 answered, but not every rank had arrived after %g s: start all %d with this address, "
                          "or raise the timeout",
                          r->timeout, r->nranks);
        else if (io == IO_EOF)
            st = rdv_fail(r, CUK_ERR_IO,
                          "rank 0 closed the connection before sending the id (after %zu of %d bytes): it failed or "
                          "timed out (see its error)",
                          got, RDV_ID);
        else if (io != IO_DONE)
            st = rdv_fail(r, CUK_ERR_IO, "waiting for the id from rank 0: %s", strerror(errno));
        else
            memcpy(id->bytes, got_id, RDV_ID);
    }
    close(fd);
    return st;
}

cuk_status cuk_comm_rendezvous(cuk_comm_id *id, const char *addr, int nranks, int rank, double timeout_s) {
    if (!id) return err_set(CUK_ERR_INVALID, "cuk_comm_rendezvous: NULL id");
    if (nranks < 1 || nranks > 1 << 20)
        return err_set(CUK_ERR_INVALID, "cuk_comm_rendezvous: %d ranks: a communicator needs at least one (and at most %d)",
                       nranks, 1 << 20);
    if (rank < 0 || rank >= nranks)
        return err_set(CUK_ERR_INVALID, "cuk_comm_rendezvous: rank %d of %d: ranks are 0 to %d, one per process", rank,
                       nranks, nranks - 1);
    if (!(timeout_s > 0 && timeout_s <= 1e9))
        return err_set(CUK_ERR_INVALID,
                       "cuk_comm_rendezvous: timeout %g s: give a positive number of seconds (the rendezvous never "
                       "waits without bound)",
                       timeout_s);
    Rdv r = {.nranks = nranks, .rank = rank, .timeout = timeout_s, .deadline = now_s() + timeout_s};
    cuk_status s = rdv_parse(&r, addr);
    if (s) return s;
    if (rank) {
        memset(id->bytes, 0, sizeof id->bytes);
        return rdv_join(&r, id);
    }
    static const unsigned char zero[RDV_ID];
    if (!memcmp(id->bytes, zero, RDV_ID))
        return rdv_fail(&r, CUK_ERR_INVALID, "rank 0's id is all zeros: fill it with cuk_comm_id_new first (the other "
                                             "ranks get it from rank 0)");
    return nranks == 1 ? CUK_OK : rdv_serve(&r, id);
}
