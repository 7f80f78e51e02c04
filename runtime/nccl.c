/* Several GPUs of one process through NCCL (libnccl.so.2, loaded with dlopen on first
   use, like the driver): communicators over a list of devices, one rank a device, each
   with a stream of its own in the device's primary context; all-reduce and broadcast
   queued on those streams. Loading NCCL sets NCCL_NVLS_ENABLE=0 in the process's
   environment first, so neither this process's communicators nor its children's use
   NVLink multicast (which can take a shared host's GPUs out of service); cuk never calls
   cuMulticastCreate. DESIGN.md, "Several GPUs". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- NCCL subset (values from NCCL 2.28's nccl.h) ------------------------------------- */
typedef int ncclResult_t; /* 0 ncclSuccess, 7 ncclInProgress */
typedef struct ncclComm *ncclComm_t;
enum { NCCL_SUCCESS = 0, NCCL_IN_PROGRESS = 7 };

#define NCCL_FUNCS(X)                                                                            \
    X(ncclGetVersion, (int *))                                                                   \
    X(ncclCommInitAll, (ncclComm_t *, int, const int *))                                         \
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

struct cuk_comm_s {
    int n;
    Device **dev;     /* rank i's device */
    ncclComm_t *comm; /* rank i's communicator */
    CUstream *stream; /* rank i's stream, in its device's primary context */
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
    cuk_comm *c = calloc(1, sizeof *c);
    if (!c || !(c->dev = calloc((size_t)n, sizeof *c->dev)) || !(c->comm = calloc((size_t)n, sizeof *c->comm)) ||
        !(c->stream = calloc((size_t)n, sizeof *c->stream))) {
        comm_free(c);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_comm_create: out of host memory");
    }
    c->n = n;
    for (int i = 0; i < n; i++) {
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
    ncclResult_t r = nl->ncclCommInitAll(c->comm, n, devices);
    if (r != NCCL_SUCCESS) {
        memset(c->comm, 0, sizeof *c->comm * (size_t)n);
        comm_free(c);
        return nccl_fail(r, "ncclCommInitAll");
    }
    *out = c;
    return CUK_OK;
}

cuk_status cuk_comm_size(const cuk_comm *c, int *n) {
    if (!c || !n) return err_set(CUK_ERR_INVALID, "cuk_comm_size: NULL argument");
    *n = c->n;
    return CUK_OK;
}

cuk_status cuk_comm_device(const cuk_comm *c, int rank, int *device) {
    if (!c || !device) return err_set(CUK_ERR_INVALID, "cuk_comm_device: NULL argument");
    if (rank < 0 || rank >= c->n)
        return err_set(CUK_ERR_INVALID, "cuk_comm_device: rank %d of a communicator of %d", rank, c->n);
    *device = c->dev[rank]->index;
    return CUK_OK;
}

static size_t type_size(cuk_comm_type t) {
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return (unsigned)t < sizeof sizes / sizeof sizes[0] ? sizes[t] : 0;
}

/* The arguments every collective shares; rank i's buffers are device pointers of
   devices[i] (the caller's to guarantee: NCCL reads them on that device). */
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
            if (!send[i] || !recv[i]) return err_set(CUK_ERR_INVALID, "%s: rank %d's buffer is 0", call, i);
    return CUK_OK;
}

/* One collective on every rank, as one NCCL group: all-reduce and broadcast take the same
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
    if (root < 0 || root >= c->n)
        return err_set(CUK_ERR_INVALID, "cuk_comm_broadcast: root rank %d of a communicator of %d", root, c->n);
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
