/* The runtime on a real GPU: devices, the pool (reuse, stats, trim, OOM retry), copies,
   streams, events, compile + launch with a result check, the kernel cache across
   processes, fault reporting and threads. Prints one PASS/FAIL line per check. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cuk.h"

static int npass, nfail;
static void report(int ok, const char *name, const char *detail) {
    if (ok) {
        npass++;
        printf("PASS %s%s%s\n", name, detail && *detail ? ": " : "", detail ? detail : "");
    } else {
        nfail++;
        printf("FAIL %s: %s\n", name, detail && *detail ? detail : cuk_last_error());
    }
    fflush(stdout);
}
/* Each evaluates its expression exactly once (the calls have side effects). */
#define CHECK(name, c)                                                                           \
    do {                                                                                         \
        int ok_ = (c);                                                                           \
        report(ok_, name, ok_ ? NULL : cuk_last_error());                                        \
    } while (0)
#define OK(name, call) CHECK(name, (call) == CUK_OK)

static const char *saxpy_src =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void fill_gs(float *p, float v, long long n) {\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x)\n"
    "        p[i] = v;\n"
    "}\n"
    "extern \"C\" __global__ void spin(long long cycles) {\n"
    "    long long t0 = clock64();\n"
    "    while (clock64() - t0 < cycles) {}\n"
    "}\n"
    "template <typename T> __global__ void twice(T *p, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) p[i] = p[i] * 2;\n"
    "}\n";

static char self[4096];

/* NCCL communicators (runtime/nccl.c) over the first n GPUs: all-reduce (sum, then max in
   place) and broadcast of 1000 f32 a rank, each rank's values its own, checked on the
   host; NVLink multicast off after loading. One rank where there is one GPU. */
static void test_comm(int n) {
    char name[64], detail[256];
    snprintf(name, sizeof name, "NCCL communicator over %d GPU%s", n, n == 1 ? "" : "s");
    int v = 0;
    if (cuk_nccl_version(&v) != CUK_OK) {
        report(0, name, cuk_last_error());
        return;
    }
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    int devs[8], cur = 0;
    for (int i = 0; i < n; i++) devs[i] = i;
    cuk_device_current(&cur);
    cuk_comm *c = NULL;
    if (cuk_comm_create(&c, devs, n) != CUK_OK) {
        report(0, name, cuk_last_error());
        return;
    }
    enum { N = 1000 };
    cuk_devptr send[8] = {0}, recv[8] = {0};
    float h[N], want[N];
    int ok = 1, size = 0, dev = -1;
    ok &= cuk_comm_size(c, &size) == CUK_OK && size == n;
    ok &= cuk_comm_device(c, n - 1, &dev) == CUK_OK && dev == n - 1;
    for (int r = 0; r < n && ok; r++) { /* rank r's buffers on device r */
        ok &= cuk_device_select(r) == CUK_OK && cuk_mem_alloc(&send[r], sizeof h) == CUK_OK &&
              cuk_mem_alloc(&recv[r], sizeof h) == CUK_OK;
        for (int i = 0; i < N; i++) h[i] = (float)(r + 1) * (float)(i % 7) - (float)r;
        ok &= ok && cuk_memcpy_htod(send[r], h, sizeof h) == CUK_OK;
    }
    ok &= ok && cuk_comm_allreduce(c, send, recv, N, CUK_COMM_F32, CUK_COMM_SUM) == CUK_OK &&
          cuk_comm_synchronize(c) == CUK_OK;
    for (int i = 0; i < N; i++) {
        want[i] = 0;
        for (int r = 0; r < n; r++) want[i] += (float)(r + 1) * (float)(i % 7) - (float)r;
    }
    for (int r = 0; r < n && ok; r++)
        ok &= cuk_device_select(r) == CUK_OK && cuk_memcpy_dtoh(h, recv[r], sizeof h) == CUK_OK && !memcmp(h, want, sizeof h);
    /* in place: max over ranks of send; then everyone gets rank n - 1's */
    ok &= ok && cuk_comm_allreduce(c, send, send, N, CUK_COMM_F32, CUK_COMM_MAX) == CUK_OK &&
          cuk_comm_broadcast(c, send, recv, N, CUK_COMM_F32, n - 1) == CUK_OK && cuk_comm_synchronize(c) == CUK_OK;
    for (int i = 0; i < N; i++) {
        want[i] = -1e30f;
        for (int r = 0; r < n; r++) {
            float x = (float)(r + 1) * (float)(i % 7) - (float)r;
            want[i] = x > want[i] ? x : want[i];
        }
    }
    for (int r = 0; r < n && ok; r++)
        ok &= cuk_device_select(r) == CUK_OK && cuk_memcpy_dtoh(h, recv[r], sizeof h) == CUK_OK && !memcmp(h, want, sizeof h);
    /* a bad op and a bad root say so */
    ok &= cuk_comm_allreduce(c, send, recv, N, CUK_COMM_I32, CUK_COMM_AVG) == CUK_ERR_INVALID;
    ok &= cuk_comm_broadcast(c, send, recv, N, CUK_COMM_F32, n) == CUK_ERR_INVALID;
    snprintf(detail, sizeof detail, "NCCL %d, NCCL_NVLS_ENABLE=%s, sum, max in place, broadcast: %s", v,
             nvls ? nvls : "unset", ok ? "the host's values" : cuk_last_error());
    ok &= cuk_comm_destroy(c) == CUK_OK;
    for (int r = 0; r < n; r++) {
        cuk_device_select(r);
        cuk_mem_free(send[r]);
        cuk_mem_free(recv[r]);
    }
    cuk_device_select(cur);
    report(ok && nvls && !strcmp(nvls, "0"), name, detail);
}

/* One rank a process (cuk_comm_id_new, cuk_comm_create_rank) with a single rank on GPU 0:
   all-reduce of 1000 f32 gives its input back, broadcast too; ranks of other processes and
   roots out of range say so. */
static void test_comm_rank(void) {
    const char *name = "NCCL communicator of one rank a process (1 rank, GPU 0)";
    cuk_comm_id id;
    cuk_comm *c = NULL;
    int cur = 0;
    cuk_device_current(&cur);
    if (cuk_comm_id_new(&id) != CUK_OK || cuk_comm_create_rank(&c, &id, 1, 0, 0) != CUK_OK) {
        report(0, name, cuk_last_error());
        return;
    }
    enum { N = 1000 };
    float h[N], got[N];
    for (int i = 0; i < N; i++) h[i] = (float)(i % 13) - 4.5f;
    cuk_devptr send[1] = {0}, recv[1] = {0};
    int ok = 1, size = 0, dev = -1;
    ok &= cuk_comm_size(c, &size) == CUK_OK && size == 1;
    ok &= cuk_comm_device(c, 0, &dev) == CUK_OK && dev == 0;
    ok &= cuk_comm_device(c, 1, &dev) == CUK_ERR_INVALID;
    ok &= ok && cuk_device_select(0) == CUK_OK && cuk_mem_alloc(&send[0], sizeof h) == CUK_OK &&
          cuk_mem_alloc(&recv[0], sizeof h) == CUK_OK && cuk_memcpy_htod(send[0], h, sizeof h) == CUK_OK;
    ok &= ok && cuk_comm_allreduce(c, send, recv, N, CUK_COMM_F32, CUK_COMM_SUM) == CUK_OK &&
          cuk_comm_synchronize(c) == CUK_OK && cuk_memcpy_dtoh(got, recv[0], sizeof got) == CUK_OK &&
          !memcmp(got, h, sizeof h);
    ok &= ok && cuk_memset_d8(recv[0], 0, sizeof h, NULL) == CUK_OK && cuk_synchronize() == CUK_OK &&
          cuk_comm_broadcast(c, send, recv, N, CUK_COMM_F32, 0) == CUK_OK && cuk_comm_synchronize(c) == CUK_OK &&
          cuk_memcpy_dtoh(got, recv[0], sizeof got) == CUK_OK && !memcmp(got, h, sizeof h);
    ok &= cuk_comm_broadcast(c, send, recv, N, CUK_COMM_F32, 1) == CUK_ERR_INVALID;
    char detail[256];
    snprintf(detail, sizeof detail, "all-reduce and broadcast give the input back: %s", ok ? "yes" : cuk_last_error());
    ok &= cuk_comm_destroy(c) == CUK_OK;
    cuk_mem_free(send[0]);
    cuk_mem_free(recv[0]);
    cuk_device_select(cur);
    report(ok, name, detail);
}

/* Child (--child-comm-rank RANK HOST:PORT): rank RANK of 2 on GPU RANK, the id through
   cuk_comm_rendezvous; all-reduce (sum) of 1000 f32, rank r's values (r + 1) * (i % 7),
   then a broadcast from rank 1. Exit 0 when both match the host's. */
static int child_comm_rank(int rank, const char *addr) {
    alarm(60); /* a rank that never comes must not hang the test */
    cuk_comm_id id;
    cuk_comm *c = NULL;
    if ((rank == 0 && cuk_comm_id_new(&id) != CUK_OK) || cuk_comm_rendezvous(&id, addr, 2, rank, 30) != CUK_OK ||
        cuk_comm_create_rank(&c, &id, 2, rank, rank) != CUK_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, cuk_last_error());
        return 2;
    }
    enum { N = 1000 };
    float h[N], got[N];
    cuk_devptr send[1] = {0}, recv[1] = {0};
    for (int i = 0; i < N; i++) h[i] = (float)(rank + 1) * (float)(i % 7);
    int ok = 1, size = 0, dev = -1;
    ok &= cuk_comm_size(c, &size) == CUK_OK && size == 2 && cuk_comm_device(c, rank, &dev) == CUK_OK && dev == rank;
    ok &= cuk_comm_device(c, 1 - rank, &dev) == CUK_ERR_INVALID;
    ok &= ok && cuk_device_select(rank) == CUK_OK && cuk_mem_alloc(&send[0], sizeof h) == CUK_OK &&
          cuk_mem_alloc(&recv[0], sizeof h) == CUK_OK && cuk_memcpy_htod(send[0], h, sizeof h) == CUK_OK;
    ok &= ok && cuk_comm_allreduce(c, send, recv, N, CUK_COMM_F32, CUK_COMM_SUM) == CUK_OK &&
          cuk_comm_synchronize(c) == CUK_OK && cuk_memcpy_dtoh(got, recv[0], sizeof got) == CUK_OK;
    for (int i = 0; i < N && ok; i++) ok &= got[i] == 3.0f * (float)(i % 7);
    ok &= ok && cuk_comm_broadcast(c, send, recv, N, CUK_COMM_F32, 1) == CUK_OK && cuk_comm_synchronize(c) == CUK_OK &&
          cuk_memcpy_dtoh(got, recv[0], sizeof got) == CUK_OK;
    for (int i = 0; i < N && ok; i++) ok &= got[i] == 2.0f * (float)(i % 7);
    if (!ok) fprintf(stderr, "rank %d: wrong values or %s\n", rank, cuk_last_error());
    ok &= cuk_comm_destroy(c) == CUK_OK;
    cuk_mem_free(send[0]);
    cuk_mem_free(recv[0]);
    return ok ? 0 : 3;
}

static double now(void);

/* Two processes, ranks 0 and 1 on GPUs 0 and 1, meeting at 127.0.0.1 and a free port;
   rank 0 starts 0.5 s after rank 1. */
static void test_comm_two_processes(int ngpu) {
    const char *name = "NCCL communicator of 2 processes through cuk_comm_rendezvous";
    if (ngpu < 2) {
        printf("  note: one GPU: \"%s\" needs two, not run\n", name);
        return;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &al)) {
        report(0, name, "no free port on 127.0.0.1");
        if (fd >= 0) close(fd);
        return;
    }
    close(fd);
    char addr[32], rank_s[2][4] = {"0", "1"};
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(a.sin_port));
    pid_t pid[2];
    double t0 = now();
    for (int r = 1; r >= 0; r--) {
        if (r == 0) usleep(500000);
        pid[r] = fork();
        if (pid[r] == 0) {
            execl(self, self, "--child-comm-rank", rank_s[r], addr, (char *)NULL);
            _exit(127);
        }
    }
    int st[2] = {0, 0};
    for (int r = 0; r < 2; r++) waitpid(pid[r], &st[r], 0);
    char detail[160];
    int ok = WIFEXITED(st[0]) && !WEXITSTATUS(st[0]) && WIFEXITED(st[1]) && !WEXITSTATUS(st[1]);
    snprintf(detail, sizeof detail, "at %s, all-reduce and broadcast: exit statuses %d and %d, %.2f s", addr, st[0],
             st[1], now() - t0);
    report(ok, name, detail);
}

/* cuk_matmul with CUK_LIBCUBLASLT pointing nowhere: CUK_ERR_NO_BLAS and a message that
   says what to do. Exit 0 when it does. */
static int child_noblas(void) {
    setenv("CUK_LIBCUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
    cuk_devptr d = 0;
    if (cuk_mem_alloc(&d, 64) != CUK_OK) return 2;
    cuk_matmul_args a = {.type = CUK_MM_F32, .m = 2, .n = 2, .k = 2, .a = d, .b = d, .d = d, .alpha = 1};
    cuk_status s = cuk_matmul(&a, NULL);
    const char *e = cuk_last_error();
    printf("  no cuBLASLt: %s: %s\n", cuk_status_name(s), e);
    return !(s == CUK_ERR_NO_BLAS && strstr(e, "CUK_LIBCUBLASLT") && strstr(e, "CPU backend"));
}

/* d = epi(alpha * a @ b + beta * c + bias) on the host, row-major, in double. */
static void mm_ref(int m, int n, int k, const float *a, const float *b, const float *c, const float *bias, double alpha,
                   double beta, int relu, double *d) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int q = 0; q < k; q++) acc += (double)a[i * k + q] * b[q * n + j];
            acc = alpha * acc + (c ? beta * c[i * n + j] : 0) + (bias ? bias[j] : 0);
            d[i * n + j] = relu && acc < 0 ? 0 : acc;
        }
}

/* cuk_matmul against mm_ref at awkward shapes, with each epilogue, then bad arguments. */
static void test_matmul(void) {
    static const int shapes[][3] = {{1, 1, 1}, {33, 17, 65}, {1025, 3, 7}, {5, 1031, 2}, {128, 256, 64}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
        size_t na = (size_t)m * k, nb = (size_t)k * n, nd = (size_t)m * n;
        float *ha = malloc(na * 4), *hb = malloc(nb * 4), *hc = malloc(nd * 4), *hbias = malloc((size_t)n * 4),
              *hd = malloc(nd * 4);
        double *ref = malloc(nd * 8);
        for (size_t i = 0; i < na; i++) ha[i] = (float)((int)(i * 7 % 13) - 6) / 4;
        for (size_t i = 0; i < nb; i++) hb[i] = (float)((int)(i * 5 % 11) - 5) / 2;
        for (size_t i = 0; i < nd; i++) hc[i] = (float)((int)(i % 9) - 4);
        for (int i = 0; i < n; i++) hbias[i] = (float)(i % 5) - 2;
        cuk_devptr da, db, dc, dbias, dd;
        int ok = cuk_mem_alloc(&da, na * 4) == CUK_OK && cuk_mem_alloc(&db, nb * 4) == CUK_OK &&
                 cuk_mem_alloc(&dc, nd * 4) == CUK_OK && cuk_mem_alloc(&dbias, (size_t)n * 4) == CUK_OK &&
                 cuk_mem_alloc(&dd, nd * 4) == CUK_OK && cuk_memcpy_htod(da, ha, na * 4) == CUK_OK &&
                 cuk_memcpy_htod(db, hb, nb * 4) == CUK_OK && cuk_memcpy_htod(dc, hc, nd * 4) == CUK_OK &&
                 cuk_memcpy_htod(dbias, hbias, (size_t)n * 4) == CUK_OK;
        /* the transposes of a and b, for trans_a and trans_b */
        float *hat = malloc(na * 4), *hbt = malloc(nb * 4);
        for (int i = 0; i < m; i++)
            for (int q = 0; q < k; q++) hat[(size_t)q * m + i] = ha[(size_t)i * k + q];
        for (int q = 0; q < k; q++)
            for (int j = 0; j < n; j++) hbt[(size_t)j * k + q] = hb[(size_t)q * n + j];
        cuk_devptr dat = 0, dbt = 0;
        ok = ok && cuk_mem_alloc(&dat, na * 4) == CUK_OK && cuk_mem_alloc(&dbt, nb * 4) == CUK_OK &&
             cuk_memcpy_htod(dat, hat, na * 4) == CUK_OK && cuk_memcpy_htod(dbt, hbt, nb * 4) == CUK_OK;
        /* plain; scaled with C; bias + relu; a, b, both given transposed */
        for (int form = 0; ok && form < 6; form++) {
            cuk_matmul_args a = {.type = CUK_MM_F32, .m = m, .n = n, .k = k, .a = da, .b = db, .d = dd, .alpha = 1};
            if (form == 1) a.alpha = 0.5, a.beta = 2, a.c = dc;
            if (form == 2) a.epilogue = CUK_MM_BIAS | CUK_MM_RELU, a.bias = dbias;
            if (form == 3 || form == 5) a.trans_a = 1, a.a = dat;
            if (form == 4 || form == 5) a.trans_b = 1, a.b = dbt;
            mm_ref(m, n, k, ha, hb, form == 1 ? hc : NULL, form == 2 ? hbias : NULL, a.alpha, a.beta, form == 2, ref);
            int good = cuk_matmul(&a, NULL) == CUK_OK && cuk_memcpy_dtoh(hd, dd, nd * 4) == CUK_OK;
            size_t bad = 0;
            /* the inputs are multiples of 1/8 with small sums: exact in f32 */
            for (size_t i = 0; good && i < nd; i++) bad += hd[i] != (float)ref[i];
            char name[96], det[96];
            static const char *const forms[] = {"plain", "alpha, beta, c", "bias, relu", "a transposed",
                                                "b transposed", "both transposed"};
            snprintf(name, sizeof name, "cuk_matmul %dx%dx%d %s", m, k, n, forms[form]);
            snprintf(det, sizeof det, "%zu of %zu elements differ", bad, nd);
            report(good && bad == 0, name, good ? det : NULL);
        }
        cuk_mem_free(da), cuk_mem_free(db), cuk_mem_free(dc), cuk_mem_free(dbias), cuk_mem_free(dd);
        cuk_mem_free(dat), cuk_mem_free(dbt);
        free(ha), free(hb), free(hc), free(hbias), free(hd), free(ref), free(hat), free(hbt);
    }
    /* k = 0: a product of zeros, then beta * c, the bias and relu */
    {
        float hb[4] = {-1, 0, 1, 2}, hc[12], hd[12];
        for (int i = 0; i < 12; i++) hc[i] = 1;
        cuk_devptr db0 = 0, dc0 = 0, dd0 = 0;
        int good = cuk_mem_alloc(&db0, 16) == CUK_OK && cuk_mem_alloc(&dc0, 48) == CUK_OK &&
                   cuk_mem_alloc(&dd0, 48) == CUK_OK && cuk_memcpy_htod(db0, hb, 16) == CUK_OK &&
                   cuk_memcpy_htod(dc0, hc, 48) == CUK_OK;
        cuk_matmul_args z = {.type = CUK_MM_F32, .m = 3, .n = 4, .k = 0, .c = dc0, .d = dd0, .alpha = 1, .beta = 1,
                             .epilogue = CUK_MM_BIAS | CUK_MM_RELU, .bias = db0};
        good = good && cuk_matmul(&z, NULL) == CUK_OK && cuk_memcpy_dtoh(hd, dd0, 48) == CUK_OK;
        for (int i = 0; good && i < 12; i++) good = hd[i] == (float)(i % 4); /* relu(1 + bias) */
        report(good, "cuk_matmul k = 0: beta * c + bias, relu", NULL);
        cuk_mem_free(db0), cuk_mem_free(dc0), cuk_mem_free(dd0);
    }
    cuk_matmul_args bad = {.type = CUK_MM_F32, .m = -1, .n = 2, .k = 2};
    CHECK("cuk_matmul: negative size is an error", cuk_matmul(&bad, NULL) == CUK_ERR_INVALID);
    bad = (cuk_matmul_args){.type = 7, .m = 1, .n = 1, .k = 1};
    CHECK("cuk_matmul: unknown type is an error", cuk_matmul(&bad, NULL) == CUK_ERR_INVALID);
    bad = (cuk_matmul_args){.type = CUK_MM_F64, .m = 1, .n = 1, .k = 1, .epilogue = CUK_MM_BIAS};
    CHECK("cuk_matmul: a bias epilogue without a bias is an error", cuk_matmul(&bad, NULL) == CUK_ERR_INVALID);
    int v = 0;
    OK("cuk_blas_version", cuk_blas_version(&v));
    printf("  cuBLASLt version %d\n", v);
}

/* Runs this program again with one argument (CUDA state does not survive fork, so a
   child must exec) and returns its exit status. */
static int run_child(const char *arg) {
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, arg, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Child: compile saxpy_src as a module and exit 10 + (disk hit ? 1 : 0), 2 on error. */
static int child_compile(void) {
    cuk_module *m;
    if (cuk_module_compile(&m, saxpy_src, NULL)) {
        fprintf(stderr, "child: %s\n", cuk_last_error());
        return 2;
    }
    cuk_function *f;
    if (cuk_module_function(m, "saxpy", &f)) return 2;
    cuk_cache_stats s;
    cuk_cache_stats_get(&s);
    cuk_shutdown();
    if (s.corrupt) return 3;
    return 10 + (s.disk_hits == 1 && s.misses == 0);
}

/* Child: a kernel writes through a bad pointer; the launch succeeds, the next
   synchronising call must report the fault. Exit 0 if it does. */
static int child_fault(void) {
    const char *src = "extern \"C\" __global__ void bad(int *p) { p[threadIdx.x] = 1; }\n";
    cuk_module *m;
    cuk_function *f;
    if (cuk_module_compile(&m, src, NULL) || cuk_module_function(m, "bad", &f)) return 2;
    int *p = (int *)(uintptr_t)0x10;
    void *args[] = {&p};
    if (cuk_launch(f, (cuk_dim3){1, 1, 1}, (cuk_dim3){32, 1, 1}, 0, NULL, args)) return 3;
    cuk_status s = cuk_synchronize();
    printf("  fault reported as: %s\n", cuk_last_error());
    fflush(stdout);
    return s != CUK_OK && strstr(cuk_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS") &&
                   strstr(cuk_last_error(), "cuCtxSynchronize")
               ? 0
               : 4;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *thread_work(void *arg) {
    cuk_function *f = arg;
    int bad = 0;
    for (int it = 0; it < 200; it++) {
        cuk_devptr p;
        size_t n = 1000 + (size_t)it * 37;
        if (cuk_mem_alloc(&p, n * sizeof(float))) {
            bad++;
            continue;
        }
        float v = 3.0f;
        long long nn = (long long)n;
        void *args[] = {&p, &v, &nn};
        if (cuk_launch(f, (cuk_dim3){0}, (cuk_dim3){0}, 0, NULL, args)) bad++;
        float last = 0;
        if (cuk_memcpy_dtoh(&last, p + (n - 1) * sizeof(float), sizeof last) || last != 3.0f) bad++;
        if (cuk_mem_free(p)) bad++;
    }
    return (void *)(intptr_t)bad;
}

int main(int argc, char **argv) {
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    self[l > 0 ? l : 0] = 0;
    if (argc == 2 && !strcmp(argv[1], "--child-compile")) return child_compile();
    if (argc == 2 && !strcmp(argv[1], "--child-fault")) return child_fault();
    if (argc == 2 && !strcmp(argv[1], "--child-noblas")) return child_noblas();
    if (argc == 4 && !strcmp(argv[1], "--child-comm-rank")) return child_comm_rank(atoi(argv[2]), argv[3]);

    /* A private cache directory, so hits and misses are ours to count. */
    char dir[] = "/tmp/cuk_gpu_test.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("CUK_CACHE_DIR", dir, 1);

    /* No GPU: one clear line, not a cascade. (exec'd children are unaffected by the
       driver state this leaves in the parent.) */
    int ok = 0;
    cuk_gpu_available(&ok);
    if (!ok) {
        printf("FAIL no GPU: %s\n", cuk_last_error());
        rmdir(dir);
        return 1;
    }

    /* ---- children: the cross-process cache and a kernel fault ---- */
    int r1 = run_child("--child-compile"), r2 = run_child("--child-compile");
    char d[256];
    snprintf(d, sizeof d, "first process: %s, second: %s", r1 == 10 ? "compiled" : r1 == 11 ? "hit" : "error",
             r2 == 11 ? "disk hit" : r2 == 10 ? "compiled" : "error");
    report(r1 == 10 && r2 == 11, "cache hit across processes", d);
    report(run_child("--child-fault") == 0, "illegal address reported at the next synchronisation", "");
    report(run_child("--child-noblas") == 0, "no cuBLASLt: CUK_ERR_NO_BLAS with what to do", "");

    /* ---- devices ---- */
    int n = 0;
    OK("device count", cuk_device_count(&n));
    cuk_device_props p;
    OK("device props", cuk_device_props_get(0, &p));
    printf("  device 0: %s, %s (cc %d.%d), %.1f GiB, %d SMs, L2 %d KiB, %d threads/block, %d KiB shared/block "
           "(%d opt-in), driver %d\n",
           p.name, p.arch, p.cc_major, p.cc_minor, p.total_mem / 1073741824.0, p.sm_count, p.l2_size / 1024,
           p.max_threads_per_block, p.shared_mem_per_block / 1024, p.shared_mem_per_block_optin / 1024,
           p.driver_version);
    CHECK("device props sane", p.name[0] && p.cc_major >= 7 && p.total_mem > (1ull << 30) && p.sm_count > 0 &&
                                   p.l2_size > 0 && p.max_threads_per_block >= 1024 &&
                                   p.shared_mem_per_block >= 48 * 1024 && p.warp_size == 32);
    CHECK("bad device index is an error", cuk_device_select(n + 5) == CUK_ERR_NO_DEVICE &&
                                              strstr(cuk_last_error(), "no CUDA device"));
    OK("select device 0", cuk_device_select(0));
    int cur = -1;
    CHECK("current device", cuk_device_current(&cur) == CUK_OK && cur == 0);

    /* ---- the pool ---- */
    cuk_mem_stats s0, s1;
    cuk_mem_stats_get(&s0);
    cuk_devptr a = 0, b = 0, c = 0;
    OK("alloc", cuk_mem_alloc(&a, 1000));
    OK("free", cuk_mem_free(a));
    OK("alloc again", cuk_mem_alloc(&b, 1000));
    CHECK("same class gives the same block back", a == b);
    OK("alloc same class, other size", cuk_mem_alloc(&c, 900)); /* 1024-byte class, a new block */
    CHECK("live blocks differ", c != b);
    cuk_mem_stats_get(&s1);
    CHECK("stats: allocs, hits, driver allocs",
          s1.allocs - s0.allocs == 3 && s1.hits - s0.hits == 1 && s1.driver_allocs - s0.driver_allocs == 2);
    CHECK("stats: in use", s1.in_use - s0.in_use == 2048 && s1.requested - s0.requested == 1900);
    cuk_mem_free(b);
    cuk_mem_free(c);
    cuk_mem_stats_get(&s1);
    CHECK("stats: cached after free", s1.cached >= 2048 && s1.in_use == s0.in_use && s1.peak >= 2048);
    OK("trim", cuk_mem_trim());
    cuk_mem_stats_get(&s1);
    CHECK("trim empties the cache", s1.cached == 0);
    CHECK("double free is an error", cuk_mem_free(c) == CUK_ERR_INVALID);
    CHECK("foreign pointer is an error", cuk_mem_free(0x1234) == CUK_ERR_INVALID);

    /* OOM: twice the device is a clean error. */
    size_t fr = 0, tot = 0;
    OK("mem info", cuk_mem_info(&fr, &tot));
    cuk_devptr huge = 0;
    cuk_status st = cuk_mem_alloc(&huge, tot * 2);
    printf("  %s\n", cuk_last_error());
    CHECK("2x device memory: clean OOM", st == CUK_ERR_OUT_OF_MEMORY && huge == 0 &&
                                             strstr(cuk_last_error(), "out of device memory: asked for"));
    /* OOM retry: a cached block of another class stands in the way until released. */
    cuk_mem_info(&fr, &tot);
    cuk_devptr big1 = 0, big2 = 0;
    size_t sz1 = fr / 2, sz2 = fr / 10 * 7;
    if (cuk_mem_alloc(&big1, sz1) == CUK_OK) {
        cuk_mem_free(big1); /* cached, holding ~half of free memory */
        cuk_mem_stats_get(&s0);
        st = cuk_mem_alloc(&big2, sz2);
        cuk_mem_stats_get(&s1);
        CHECK("OOM retry after releasing cached blocks", st == CUK_OK && s1.oom_retries == s0.oom_retries + 1);
        cuk_mem_free(big2);
        cuk_mem_trim();
    } else {
        report(0, "OOM retry setup", cuk_last_error());
    }

    /* ---- copies ---- */
    enum { N = 1 << 20 };
    float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) hx[i] = (float)i, hy[i] = 1.0f;
    cuk_devptr dx, dy, dz;
    OK("alloc x", cuk_mem_alloc(&dx, N * sizeof(float)));
    OK("alloc y", cuk_mem_alloc(&dy, N * sizeof(float)));
    OK("alloc z", cuk_mem_alloc(&dz, N * sizeof(float)));
    OK("htod", cuk_memcpy_htod(dx, hx, N * sizeof(float)));
    OK("dtod", cuk_memcpy_dtod(dz, dx, N * sizeof(float)));
    OK("dtoh", cuk_memcpy_dtoh(out, dz, N * sizeof(float)));
    CHECK("round trip", !memcmp(out, hx, N * sizeof(float)));
    OK("memset", cuk_memset_d8(dz, 0, N * sizeof(float), NULL));
    OK("dtoh after memset", cuk_memcpy_dtoh(out, dz, N * sizeof(float)));
    CHECK("memset zeroes", out[0] == 0 && out[N - 1] == 0);

    /* Large pageable copies go through the staging buffers: odd sizes and offsets. */
    size_t big = (21u << 20) + 12;
    unsigned char *hb = malloc(big), *hb2 = malloc(big);
    for (size_t i = 0; i < big; i++) hb[i] = (unsigned char)(i * 131 + 7);
    cuk_devptr db;
    OK("alloc staged", cuk_mem_alloc(&db, big + 64));
    OK("staged htod", cuk_memcpy_htod(db + 4, hb, big));
    memset(hb2, 0, big);
    OK("staged dtoh", cuk_memcpy_dtoh(hb2, db + 4, big));
    CHECK("staged round trip (21 MiB + 12 bytes)", !memcmp(hb, hb2, big));
    setenv("CUK_NO_STAGING", "1", 1);
    memset(hb2, 0, big);
    OK("direct dtoh", cuk_memcpy_dtoh(hb2, db + 4, big));
    CHECK("direct agrees with staged", !memcmp(hb, hb2, big));
    unsetenv("CUK_NO_STAGING");
    cuk_mem_free(db);
    free(hb);
    free(hb2);

    /* ---- compile + launch ---- */
    cuk_module *m = NULL, *m2 = NULL;
    double t0 = now();
    OK("module compile", cuk_module_compile(&m, saxpy_src, NULL));
    double t1 = now();
    OK("module compile again", cuk_module_compile(&m2, saxpy_src, NULL));
    double t2 = now();
    CHECK("memory cache hit returns the same module", m == m2);
    printf("  compile (disk hit from the child) %.3f ms, memory hit %.2f us\n", (t1 - t0) * 1e3, (t2 - t1) * 1e6);
    cuk_cache_stats cs;
    cuk_cache_stats_get(&cs);
    CHECK("cache stats count the hits", cs.mem_hits >= 1 && cs.disk_hits >= 1 && cs.entries >= 1);
    cuk_function *saxpy = NULL, *fill = NULL, *spin = NULL, *nf = NULL;
    OK("function saxpy", cuk_module_function(m, "saxpy", &saxpy));
    OK("function fill_gs", cuk_module_function(m, "fill_gs", &fill));
    OK("function spin", cuk_module_function(m, "spin", &spin));
    CHECK("missing kernel is NOT_FOUND", cuk_module_function(m, "nope", &nf) == CUK_ERR_NOT_FOUND);
    OK("htod y", cuk_memcpy_htod(dy, hy, N * sizeof(float)));
    float alpha = 2.0f;
    int nn = N;
    void *args[] = {&alpha, &dx, &dy, &nn};
    cuk_dim3 grid, block;
    OK("1-D config", cuk_launch_config_1d(saxpy, N, 0, &grid, &block));
    printf("  saxpy config: grid %u block %u\n", grid.x, block.x);
    OK("launch saxpy", cuk_launch(saxpy, grid, block, 0, NULL, args));
    OK("dtoh result", cuk_memcpy_dtoh(out, dy, N * sizeof(float)));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += out[i] != 2.0f * (float)i + 1.0f;
    char msg[128];
    snprintf(msg, sizeof msg, "%d of %d wrong", bad, N);
    report(bad == 0, "saxpy result", msg);
    cuk_function_info fi;
    OK("function info", cuk_function_info_get(saxpy, &fi));
    printf("  saxpy: %d regs, occupancy block %d, %d blocks/SM\n", fi.num_regs, fi.occupancy_block, fi.blocks_per_sm);

    /* grid 0 / block 0: occupancy picks both (a grid-stride kernel). */
    float v = 7.0f;
    long long nl = N;
    void *fargs[] = {&dz, &v, &nl};
    OK("launch with occupancy defaults", cuk_launch(fill, (cuk_dim3){0}, (cuk_dim3){0}, 0, NULL, fargs));
    OK("dtoh fill", cuk_memcpy_dtoh(out, dz, N * sizeof(float)));
    CHECK("grid-stride fill result", out[0] == 7.0f && out[N / 2] == 7.0f && out[N - 1] == 7.0f);

    /* A launch error names the kernel and the call. */
    st = cuk_launch(saxpy, (cuk_dim3){1, 1, 1}, (cuk_dim3){4096, 1, 1}, 0, NULL, args);
    CHECK("bad launch is reported", st == CUK_ERR_DRIVER && strstr(cuk_last_error(), "saxpy") &&
                                        strstr(cuk_last_error(), "cuLaunchKernel"));

    /* C++ template kernels through name expressions. */
    const char *names[] = {"twice<float>"};
    cuk_compile_opts o = {.names = names, .nnames = 1};
    cuk_module *mt;
    cuk_function *tw;
    OK("template module", cuk_module_compile(&mt, saxpy_src, &o));
    OK("template function", cuk_module_function(mt, "twice<float>", &tw));
    void *targs[] = {&dx, &nn};
    OK("launch template", cuk_launch(tw, grid, block, 0, NULL, targs));
    OK("dtoh template", cuk_memcpy_dtoh(out, dx, N * sizeof(float)));
    CHECK("template result", out[3] == 6.0f && out[N - 1] == 2.0f * (float)(N - 1));

    /* Thread-block clusters: each block writes its rank in the cluster and the cluster's
       size; a grid that is not a whole number of clusters is refused before the driver. */
    {
        static const char *cl_src = "extern \"C\" __global__ void ranks(int *out) {\n"
                                    "    unsigned r = 0, n = 1;\n"
                                    "#if __CUDA_ARCH__ >= 900\n"
                                    "    asm(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n"
                                    "    asm(\"mov.u32 %0, %%cluster_nctarank;\" : \"=r\"(n));\n"
                                    "#endif\n"
                                    "    if (threadIdx.x == 0) out[blockIdx.x] = (int)(r * 100 + n);\n"
                                    "}\n";
        cuk_module *mc;
        cuk_function *rk;
        OK("cluster module", cuk_module_compile(&mc, cl_src, NULL));
        OK("cluster function", cuk_module_function(mc, "ranks", &rk));
        int hr[8] = {0};
        void *cargs[] = {&dz};
        st = cuk_launch_cluster(rk, (cuk_dim3){8, 1, 1}, (cuk_dim3){64, 1, 1}, 4, 0, NULL, cargs);
        if (p.cc_major >= 9) {
            CHECK("launch in clusters of 4", st == CUK_OK);
            OK("dtoh ranks", cuk_memcpy_dtoh(hr, dz, sizeof hr));
            int wrong = 0;
            for (int b = 0; b < 8; b++) wrong += hr[b] != (b % 4) * 100 + 4;
            CHECK("each block's rank in its cluster", wrong == 0);
        } else {
            CHECK("clusters below compute capability 9.0: CUK_ERR_DRIVER saying so",
                  st == CUK_ERR_DRIVER && strstr(cuk_last_error(), "9.0"));
        }
        st = cuk_launch_cluster(rk, (cuk_dim3){6, 1, 1}, (cuk_dim3){64, 1, 1}, 4, 0, NULL, cargs);
        CHECK("a grid not a multiple of the cluster is CUK_ERR_INVALID",
              st == CUK_ERR_INVALID && strstr(cuk_last_error(), "multiple of the cluster"));
    }

    /* Loading an image (PTX for the device's arch, as a bundle would carry). */
    cuk_compile_opts po = {.arch = p.arch, .kind = CUK_IMAGE_PTX};
    cuk_image *im;
    if (cuk_compile(saxpy_src, &po, &im) == CUK_OK) {
        const void *data;
        size_t sz;
        cuk_image_data(im, &data, &sz);
        cuk_module *ml;
        cuk_function *fl;
        OK("module load PTX", cuk_module_load(&ml, data, sz));
        OK("function from loaded module", cuk_module_function(ml, "saxpy", &fl));
        OK("unload", cuk_module_unload(ml));
        cuk_image_free(im);
    } else {
        report(0, "compile PTX for the device", cuk_last_error());
    }

    /* ---- streams and events ---- */
    cuk_stream *s = NULL;
    cuk_event *e0 = NULL, *e1 = NULL;
    OK("stream create", cuk_stream_create(&s));
    OK("event create", cuk_event_create(&e0));
    OK("event create 2", cuk_event_create(&e1));
    long long cycles = 20 * 1000 * 1000; /* ~10 ms at 2 GHz */
    void *sargs[] = {&cycles};
    OK("record start", cuk_event_record(e0, s));
    OK("launch on stream", cuk_launch(spin, (cuk_dim3){1, 1, 1}, (cuk_dim3){1, 1, 1}, 0, s, sargs));
    OK("record end", cuk_event_record(e1, s));
    CHECK("stream busy", cuk_stream_query(s) == CUK_ERR_NOT_READY);
    CHECK("event pending", cuk_event_query(e1) == CUK_ERR_NOT_READY);
    OK("event sync", cuk_event_synchronize(e1));
    float ms = 0;
    OK("elapsed", cuk_event_elapsed(&ms, e0, e1));
    snprintf(msg, sizeof msg, "%.3f ms", ms);
    report(ms > 1.0f && ms < 1000.0f, "event timing of a spinning kernel", msg);
    OK("stream idle", cuk_stream_query(s));
    /* Async copies with pinned memory, ordered after an event on another stream. */
    float *pin = NULL;
    OK("pinned alloc", cuk_host_alloc((void **)&pin, N * sizeof(float)));
    if (pin) {
        for (int i = 0; i < N; i++) pin[i] = (float)(N - i);
        OK("async htod", cuk_memcpy_htod_async(dz, pin, N * sizeof(float), s));
        OK("record", cuk_event_record(e0, s));
        OK("default stream waits", cuk_stream_wait_event(NULL, e0));
        OK("async dtod", cuk_memcpy_dtod_async(dy, dz, N * sizeof(float), NULL));
        float *pin2 = NULL; /* pin may still be read by the htod: land elsewhere */
        OK("pinned alloc 2", cuk_host_alloc((void **)&pin2, N * sizeof(float)));
        if (pin2) {
            OK("async dtoh", cuk_memcpy_dtoh_async(pin2, dy, N * sizeof(float), NULL));
            OK("stream sync", cuk_stream_synchronize(NULL));
            CHECK("async copy result", pin2[0] == (float)N && pin2[N - 1] == 1.0f);
            OK("pinned free 2", cuk_host_free(pin2));
        }
        OK("pinned free", cuk_host_free(pin));
    }
    /* Stream-ordered pool: a block freed on s while a kernel there still writes it, then
       taken on s2: s2's fill must land after s's (the wait on the free's event). */
    {
        cuk_stream *s2 = NULL;
        OK("stream create 2", cuk_stream_create(&s2));
        cuk_devptr blk = 0, blk2 = 0;
        long long nn = N;
        float one = 1.0f, two = 2.0f;
        OK("alloc on s", cuk_mem_alloc_on(&blk, N * sizeof(float), s));
        void *sp[] = {&cycles};
        OK("spin on s", cuk_launch(spin, (cuk_dim3){1, 1, 1}, (cuk_dim3){1, 1, 1}, 0, s, sp));
        void *f1[] = {&blk, &one, &nn};
        OK("fill 1 on s", cuk_launch(fill, (cuk_dim3){64, 1, 1}, (cuk_dim3){256, 1, 1}, 0, s, f1));
        OK("free on s (pending)", cuk_mem_free(blk));
        OK("alloc on s2", cuk_mem_alloc_on(&blk2, N * sizeof(float), s2));
        CHECK("the same block comes back", blk2 == blk);
        void *f2[] = {&blk2, &two, &nn};
        OK("fill 2 on s2", cuk_launch(fill, (cuk_dim3){64, 1, 1}, (cuk_dim3){256, 1, 1}, 0, s2, f2));
        float got[2] = {0, 0};
        OK("s2 sync", cuk_stream_synchronize(s2));
        OK("read back", cuk_memcpy_dtoh(got, blk2 + (N - 2) * sizeof(float), sizeof got));
        CHECK("s2's fill after s's (ordered by the free's event)", got[0] == 2.0f && got[1] == 2.0f);
        cuk_mem_free(blk2);

        /* A graph: spin + fill captured on s2, replayed twice on s. */
        cuk_devptr gb = 0;
        OK("alloc for graph", cuk_mem_alloc_on(&gb, N * sizeof(float), s2));
        OK("begin capture", cuk_stream_begin_capture(s2));
        CHECK("capturing", cuk_capturing() == 1);
        cuk_devptr tmp = 0;
        OK("alloc during capture", cuk_mem_alloc_on(&tmp, 4096, s2));
        float three = 3.0f;
        void *f3[] = {&gb, &three, &nn};
        OK("fill captured", cuk_launch(fill, (cuk_dim3){64, 1, 1}, (cuk_dim3){256, 1, 1}, 0, s2, f3));
        OK("free during capture", cuk_mem_free(tmp));
        cuk_graph *g = NULL;
        OK("end capture", cuk_stream_end_capture(s2, &g));
        CHECK("not capturing", cuk_capturing() == 0);
        CHECK("graph has its node", g && cuk_graph_nodes(g) >= 1);
        OK("clear", cuk_memset_d8(gb, 0, N * sizeof(float), s2));
        OK("graph launch", cuk_graph_launch(g, s));
        OK("graph launch again", cuk_graph_launch(g, s));
        OK("sync s", cuk_stream_synchronize(s));
        got[0] = 0;
        OK("read graph result", cuk_memcpy_dtoh(got, gb, sizeof(float)));
        CHECK("graph replay wrote", got[0] == 3.0f);
        CHECK("capture of a default stream refused", cuk_stream_begin_capture(NULL) == CUK_ERR_INVALID);
        OK("graph destroy", cuk_graph_destroy(g));
        cuk_mem_free(gb);
        OK("stream destroy 2", cuk_stream_destroy(s2));
    }
    OK("event destroy", cuk_event_destroy(e0));
    OK("event destroy 2", cuk_event_destroy(e1));
    OK("stream destroy", cuk_stream_destroy(s));

    /* ---- threads: pool and launch from 4 threads at once ---- */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, thread_work, fill);
    intptr_t tbad = 0;
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        tbad += (intptr_t)rv;
    }
    snprintf(msg, sizeof msg, "%ld failures", (long)tbad);
    report(tbad == 0, "4 threads alloc/launch/copy/free", msg);

    test_matmul();
    int ngpu = 0;
    cuk_device_count(&ngpu);
    test_comm(1);
    if (ngpu >= 2) test_comm(ngpu > 8 ? 8 : ngpu);
    test_comm_rank();
    test_comm_two_processes(ngpu);

    cuk_mem_free(dx);
    cuk_mem_free(dy);
    cuk_mem_free(dz);
    OK("synchronize", cuk_synchronize());
    cuk_shutdown();
    /* After shutdown the runtime starts again on demand. */
    cuk_devptr again = 0;
    OK("alloc after shutdown", cuk_mem_alloc(&again, 64));
    cuk_mem_free(again);
    cuk_shutdown();

    setenv("CUK_CACHE_DIR", dir, 1);
    cuk_cache_clear();
    rmdir(dir);
    free(hx);
    free(hy);
    free(out);
    printf("%s: %d passed, %d failed\n", nfail ? "FAIL" : "PASS", npass, nfail);
    return nfail != 0;
}
