/* Loads libcuda.so.1 and libnvrtc with dlopen on first use, and keeps the per-thread
   error message every public call reports through. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifndef CUK_VERSION
#define CUK_VERSION "0.0.0"
#endif

/* ---- errors ------------------------------------------------------------------------- */

/* Big enough for a typical NVRTC log; longer ones are cut with a note. */
static _Thread_local char errbuf[16384];

const char *cuk_last_error(void) { return errbuf; }
const char *cuk_version(void) { return CUK_VERSION; }
void err_clear(void) { errbuf[0] = 0; }

cuk_status err_set(cuk_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof errbuf) strcpy(errbuf + sizeof errbuf - 32, "\n... (message truncated)");
    return s;
}

const char *cuk_status_name(cuk_status s) {
    switch (s) {
    case CUK_OK: return "CUK_OK";
    case CUK_ERR_NO_DRIVER: return "CUK_ERR_NO_DRIVER";
    case CUK_ERR_NO_DEVICE: return "CUK_ERR_NO_DEVICE";
    case CUK_ERR_NO_NVRTC: return "CUK_ERR_NO_NVRTC";
    case CUK_ERR_COMPILE: return "CUK_ERR_COMPILE";
    case CUK_ERR_OUT_OF_MEMORY: return "CUK_ERR_OUT_OF_MEMORY";
    case CUK_ERR_INVALID: return "CUK_ERR_INVALID";
    case CUK_ERR_NOT_FOUND: return "CUK_ERR_NOT_FOUND";
    case CUK_ERR_DRIVER: return "CUK_ERR_DRIVER";
    case CUK_ERR_IO: return "CUK_ERR_IO";
    case CUK_ERR_NOT_READY: return "CUK_ERR_NOT_READY";
    case CUK_ERR_NO_BLAS: return "CUK_ERR_NO_BLAS";
    case CUK_ERR_NO_NCCL: return "CUK_ERR_NO_NCCL";
    }
    /* the program API's (api/cuk_program.h) */
    if ((int)s == 32) return "CUK_ERR_RUNTIME";
    if ((int)s == 33) return "CUK_ERR_INTERRUPTED";
    return "CUK_ERR_UNKNOWN";
}

cuk_status cu_fail(CUresult r, const char *call) {
    const char *name = NULL, *str = NULL;
    if (cu.cuGetErrorName) cu.cuGetErrorName(r, &name);
    if (cu.cuGetErrorString) cu.cuGetErrorString(r, &str);
    cuk_status s = CUK_ERR_DRIVER;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) s = CUK_ERR_OUT_OF_MEMORY;
    else if (r == CUDA_ERROR_NOT_READY) s = CUK_ERR_NOT_READY;
    else if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE) s = CUK_ERR_NO_DEVICE;
    char num[32];
    if (!name) {
        snprintf(num, sizeof num, "CUresult %d", r);
        name = num;
    }
    return err_set(s, "%s failed: %s (%s)", call, name, str ? str : "no description");
}

/* ---- the driver ----------------------------------------------------------------------- */

CuDriver cu;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static cuk_status driver_status;
static char driver_msg[1024];

static void driver_load_once(void) {
    /* CUK_LIBCUDA lets tests (and odd installs) point at another file. */
    const char *path = getenv("CUK_LIBCUDA");
    if (!path || !*path) path = "libcuda.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        driver_status = CUK_ERR_NO_DRIVER;
        snprintf(driver_msg, sizeof driver_msg, "no CUDA driver found (%s): %s; the CPU backend needs none", path,
                 dlerror());
        return;
    }
    CuDriver d;
    memset(&d, 0, sizeof d);
#define X(field, sym, req, args)                                                                  \
    *(void **)&d.field = dlsym(h, sym);                                                          \
    if (req && !d.field) {                                                                       \
        driver_status = CUK_ERR_NO_DRIVER;                                                       \
        snprintf(driver_msg, sizeof driver_msg,                                                  \
                 "the CUDA driver (%s) is too old: it lacks %s; update the NVIDIA driver or use " \
                 "--device cpu",                                                                 \
                 path, sym);                                                                     \
        dlclose(h);                                                                              \
        return;                                                                                  \
    }
    CU_FUNCS(X)
#undef X
    if (!d.cuEventElapsedTime_v1 && !d.cuEventElapsedTime_v2) {
        driver_status = CUK_ERR_NO_DRIVER;
        snprintf(driver_msg, sizeof driver_msg, "the CUDA driver (%s) lacks cuEventElapsedTime", path);
        dlclose(h);
        return;
    }
    cu = d;
    CUresult r = cu.cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL, *str = NULL;
        cu.cuGetErrorName(r, &name);
        cu.cuGetErrorString(r, &str);
        char num[32];
        snprintf(num, sizeof num, "CUresult %d", r);
        if (r == CUDA_ERROR_STUB_LIBRARY && !str)
            str = "this is the toolkit's stub libcuda, not an NVIDIA driver";
        driver_status = r == CUDA_ERROR_NO_DEVICE ? CUK_ERR_NO_DEVICE : CUK_ERR_NO_DRIVER;
        snprintf(driver_msg, sizeof driver_msg, "%s (%s): cuInit failed: %s (%s); the CPU backend needs no GPU",
                 r == CUDA_ERROR_NO_DEVICE ? "no CUDA device found" : "the CUDA driver cannot be used",
                 path, name ? name : num, str ? str : "no description");
        /* Keep the library loaded (cu's pointers stay valid for error names), but no
           other entry point will be called. */
        return;
    }
    driver_status = CUK_OK;
}

cuk_status driver_load(void) {
    pthread_once(&driver_once, driver_load_once);
    if (driver_status != CUK_OK) return err_set(driver_status, "%s", driver_msg);
    return CUK_OK;
}

cuk_status cuk_init(void) { return driver_load(); }

/* ---- NVRTC ------------------------------------------------------------------------------- */

static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static Nvrtc nv;
static bool nvrtc_ok;
static char nvrtc_msg[2048];

void *lib_open(const char *env_var, const char *file, const char *older, const char *name, const char *what, char *msg,
               size_t msglen) {
    char cands[5][1024];
    int n = 0;
    const char *env = getenv(env_var);
    if (env && *env) {
        /* An explicit choice is final: no quiet fallback to another library. */
        snprintf(cands[n++], sizeof cands[0], "%s", env);
    } else {
        snprintf(cands[n++], sizeof cands[0], "%s", file);
        snprintf(cands[n++], sizeof cands[0], "/usr/local/cuda/lib64/%s", file);
        const char *home = getenv("CUDA_HOME");
        if (home && *home) snprintf(cands[n++], sizeof cands[0], "%s/lib64/%s", home, file);
        /* An older toolkit's still works (NVRTC: for the archs it knows). */
        if (older) snprintf(cands[n++], sizeof cands[0], "%s", older);
    }
    void *h = NULL;
    char tried[1024] = "";
    size_t used = 0;
    for (int i = 0; i < n && !h; i++) {
        h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
        if (!h && used < sizeof tried)
            used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s", i ? "; " : "", dlerror());
    }
    if (!h) snprintf(msg, msglen, "%s not found (%s): %s; %s", name, file, tried, what);
    return h;
}

static void nvrtc_load_once(void) {
    void *h = lib_open("CUK_NVRTC", "libnvrtc.so.13", "libnvrtc.so.12", "NVRTC",
                       "install the CUDA toolkit's NVRTC or set CUDA_HOME or CUK_NVRTC", nvrtc_msg, sizeof nvrtc_msg);
    if (!h) return;
    if (!dlsym(h, "nvrtcCreateProgram")) { /* every NVRTC has it: this is another library */
        const char *env = getenv("CUK_NVRTC");
        snprintf(nvrtc_msg, sizeof nvrtc_msg,
                 "%s%s%s is not NVRTC (it has no nvrtcCreateProgram); set CUK_NVRTC to the toolkit's libnvrtc.so.13 "
                 "or unset it", env && *env ? "CUK_NVRTC=" : "the library loaded as NVRTC", env && *env ? env : "",
                 "");
        dlclose(h);
        return;
    }
#define X(field, sym, req, args)                                                                  \
    *(void **)&nv.field = dlsym(h, sym);                                                         \
    if (!nv.field) {                                                                             \
        snprintf(nvrtc_msg, sizeof nvrtc_msg, "NVRTC is too old: it lacks %s", sym);             \
        dlclose(h);                                                                              \
        return;                                                                                  \
    }
    NVRTC_FUNCS(X)
#undef X
    *(void **)&nv.nvrtcGetErrorString = dlsym(h, "nvrtcGetErrorString");
    if (!nv.nvrtcGetErrorString) {
        snprintf(nvrtc_msg, sizeof nvrtc_msg, "NVRTC is too old: it lacks nvrtcGetErrorString");
        dlclose(h);
        return;
    }
    nv.nvrtcVersion(&nv.major, &nv.minor);
    int na = 0;
    if (nv.nvrtcGetNumSupportedArchs(&na) == NVRTC_SUCCESS && na > 0 && na <= 64) {
        nv.nvrtcGetSupportedArchs(nv.archs);
        nv.narchs = na;
    }
    nvrtc_ok = true;
}

const Nvrtc *nvrtc_load(void) {
    pthread_once(&nvrtc_once, nvrtc_load_once);
    if (!nvrtc_ok) {
        err_set(CUK_ERR_NO_NVRTC, "%s", nvrtc_msg);
        return NULL;
    }
    return &nv;
}

cuk_status cuk_nvrtc_version(int *major, int *minor) {
    if (!major || !minor) return err_set(CUK_ERR_INVALID, "cuk_nvrtc_version: NULL argument");
    const Nvrtc *n = nvrtc_load();
    if (!n) return CUK_ERR_NO_NVRTC;
    *major = n->major;
    *minor = n->minor;
    return CUK_OK;
}
