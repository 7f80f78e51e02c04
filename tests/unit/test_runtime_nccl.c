/* NCCL's loader and the communicator API without a GPU (runtime/nccl.c): the toolkit's
   libnccl loads and reports its version; loading it turns NVLink multicast off for this
   process and its children; a missing library, bad arguments and a missing driver fail
   with messages that say what to do, and nothing crashes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

int main(void) {
    in_child(missing_library);
    in_child(toolkit_library);

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
