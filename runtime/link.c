/* Linking with nvJitLink (dlopen'd on first use): relocatable device code, PTX, cubins,
   LTO-IR and libraries such as the toolkit's libcudadevrt.a into one cubin (or PTX), on
   the host: no GPU is needed until the result is loaded. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct NvJitLink NvJitLink;
static struct {
    int (*create)(NvJitLink **, unsigned, const char **);
    int (*destroy)(NvJitLink **);
    int (*add_data)(NvJitLink *, int, const void *, size_t, const char *);
    int (*add_file)(NvJitLink *, int, const char *);
    int (*complete)(NvJitLink *);
    int (*cubin_size)(NvJitLink *, size_t *);
    int (*cubin)(NvJitLink *, void *);
    int (*ptx_size)(NvJitLink *, size_t *);
    int (*ptx)(NvJitLink *, char *);
    int (*error_log_size)(NvJitLink *, size_t *);
    int (*error_log)(NvJitLink *, char *);
} jl;
static pthread_once_t jl_once = PTHREAD_ONCE_INIT;
static char jl_msg[2048], jl_path[1024];
static bool jl_ok;

static void jl_load_once(void) {
    void *h = lib_open("CUK_NVJITLINK", "libnvJitLink.so.13", "libnvJitLink.so.12", "nvJitLink",
                       "linking needs the CUDA toolkit's libnvJitLink; install it or set CUDA_HOME or CUK_NVJITLINK",
                       jl_msg, sizeof jl_msg);
    if (!h) return;
    const char *names[] = {"nvJitLinkCreate", "nvJitLinkDestroy", "nvJitLinkAddData", "nvJitLinkAddFile",
                           "nvJitLinkComplete", "nvJitLinkGetLinkedCubinSize", "nvJitLinkGetLinkedCubin",
                           "nvJitLinkGetLinkedPtxSize", "nvJitLinkGetLinkedPtx", "nvJitLinkGetErrorLogSize",
                           "nvJitLinkGetErrorLog"};
    void **slots[] = {(void **)&jl.create, (void **)&jl.destroy, (void **)&jl.add_data, (void **)&jl.add_file,
                      (void **)&jl.complete, (void **)&jl.cubin_size, (void **)&jl.cubin, (void **)&jl.ptx_size,
                      (void **)&jl.ptx, (void **)&jl.error_log_size, (void **)&jl.error_log};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (!(*slots[k] = dlsym(h, names[k]))) {
            snprintf(jl_msg, sizeof jl_msg, "nvJitLink lacks %s: it is too old; install CUDA 12.0 or later", names[k]);
            dlclose(h);
            return;
        }
    Dl_info info;
    if (dladdr((void *)jl.create, &info) && info.dli_fname) snprintf(jl_path, sizeof jl_path, "%s", info.dli_fname);
    jl_ok = true;
}

static cuk_status jl_load(void) {
    pthread_once(&jl_once, jl_load_once);
    return jl_ok ? CUK_OK : err_set(CUK_ERR_NO_NVRTC, "%s", jl_msg);
}

cuk_status cuk_nvjitlink_path(const char **path) {
    if (!path) return err_set(CUK_ERR_INVALID, "cuk_nvjitlink_path: NULL argument");
    cuk_status s = jl_load();
    *path = s ? NULL : jl_path;
    return s;
}

/* An nvJitLink failure as CUK_ERR_COMPILE with the linker's log. */
static cuk_status jl_fail(NvJitLink *h, int r, const char *what, const char *name) {
    size_t n = 0;
    char *log = NULL;
    if (h && !jl.error_log_size(h, &n) && n && (log = malloc(n + 1))) {
        log[0] = 0;
        if (jl.error_log(h, log)) log[0] = 0;
        log[n] = 0;
    }
    cuk_status s = err_set(CUK_ERR_COMPILE, "nvJitLink: %s%s failed (nvJitLinkResult %d)%s%s", what, name ? name : "", r,
                           log && *log ? ":\n" : "", log ? log : "");
    free(log);
    return s;
}

cuk_status cuk_link(const cuk_link_input *in, int n, const char *const *options, int noptions, int ptx,
                    unsigned char **out, size_t *size) {
    if (!out || !size || n < 0 || (n && !in) || noptions < 0 || (noptions && !options))
        return err_set(CUK_ERR_INVALID, "cuk_link: NULL argument");
    *out = NULL;
    *size = 0;
    cuk_status s = jl_load();
    if (s) return s;
    NvJitLink *h = NULL;
    int e = jl.create(&h, (unsigned)noptions, (const char **)options);
    if (e) {
        s = jl_fail(h, e, "nvJitLinkCreate (check the link options)", NULL);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (in[i].path) e = jl.add_file(h, in[i].kind, in[i].path);
        else e = jl.add_data(h, in[i].kind, in[i].data, in[i].size, in[i].name ? in[i].name : "input");
        if (e) {
            s = jl_fail(h, e, in[i].path ? "adding the file " : "adding ", in[i].path ? in[i].path : in[i].name);
            goto out;
        }
    }
    if ((e = jl.complete(h))) {
        s = jl_fail(h, e, "linking", NULL);
        goto out;
    }
    size_t sz = 0;
    if ((e = ptx ? jl.ptx_size(h, &sz) : jl.cubin_size(h, &sz)) || !sz) {
        s = jl_fail(h, e, ptx ? "nvJitLinkGetLinkedPtxSize (link with -ptx for PTX)" : "nvJitLinkGetLinkedCubinSize",
                    NULL);
        goto out;
    }
    unsigned char *buf = malloc(sz + 1);
    if (!buf) {
        s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        goto out;
    }
    if ((e = ptx ? jl.ptx(h, (char *)buf) : jl.cubin(h, buf))) {
        free(buf);
        s = jl_fail(h, e, ptx ? "nvJitLinkGetLinkedPtx" : "nvJitLinkGetLinkedCubin", NULL);
        goto out;
    }
    buf[sz] = 0;
    *out = buf;
    *size = ptx && sz && buf[sz - 1] == 0 ? sz - 1 : sz; /* PTX: the text, without its NUL */
out:
    if (h) jl.destroy(&h);
    return s;
}
