/* Matrix products through cuBLASLt (libcublasLt.so, loaded with dlopen on first use, like
   the driver): cuk_matmul. Row-major operands go in as their column-major transposes
   (D^T = B^T A^T), which is cuBLASLt's native layout, so no copy and the library's
   fastest kernels. Per device: one handle, one workspace; per shape, a plan (descriptors
   and the heuristic's first algorithm) kept in a small cache, so a repeated product
   costs one cublasLtMatmul. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- cuBLASLt subset (values from CUDA 13's cublasLt.h, cublas_api.h, library_types.h) -- */
typedef int cublasStatus_t;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct { uint64_t data[32]; } *cublasLtMatmulDesc_t;
typedef struct { uint64_t data[8]; } *cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum { CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4, CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
       CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8 };
enum { CUBLAS_OP_T = 1 };
enum { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_RELU = 2, CUBLASLT_EPILOGUE_BIAS = 4 };
enum {
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

#define LT_FUNCS(X)                                                                              \
    X(cublasLtCreate, "cublasLtCreate", (cublasLtHandle_t *))                                    \
    X(cublasLtDestroy, "cublasLtDestroy", (cublasLtHandle_t))                                    \
    X(cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate", (cublasLtMatmulDesc_t *, int, int))  \
    X(cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy", (cublasLtMatmulDesc_t))            \
    X(cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute",                          \
      (cublasLtMatmulDesc_t, int, const void *, size_t))                                         \
    X(cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate",                                  \
      (cublasLtMatrixLayout_t *, int, uint64_t, uint64_t, int64_t))                              \
    X(cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy", (cublasLtMatrixLayout_t))      \
    X(cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate", (cublasLtMatmulPreference_t *)) \
    X(cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy", (cublasLtMatmulPreference_t)) \
    X(cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute",              \
      (cublasLtMatmulPreference_t, int, const void *, size_t))                                   \
    X(cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic",                          \
      (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,   \
       cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,          \
       cublasLtMatmulHeuristicResult_t *, int *))                                                \
    X(cublasLtMatmul, "cublasLtMatmul",                                                          \
      (cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t, \
       const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,  \
       void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t, CUstream))

typedef struct Lt {
#define X(field, sym, args) cublasStatus_t (*field) args;
    LT_FUNCS(X)
#undef X
    const char *(*cublasLtGetStatusString)(cublasStatus_t);
    size_t (*cublasLtGetVersion)(void);
} Lt;

static pthread_once_t lt_once = PTHREAD_ONCE_INIT;
static Lt lt;
static bool lt_ok;
static char lt_msg[2048];

static void lt_load_once(void) {
    void *h = lib_open("CUK_LIBCUBLASLT", "libcublasLt.so.13", "libcublasLt.so.12", "cuBLASLt",
                       "matrix products (dot, @) on the GPU need the CUDA toolkit's cuBLASLt: install it, or set "
                       "CUDA_HOME or CUK_LIBCUBLASLT, or run on the CPU backend",
                       lt_msg, sizeof lt_msg);
    if (!h) return;
#define X(field, sym, args)                                                                      \
    *(void **)&lt.field = dlsym(h, sym);                                                         \
    if (!lt.field) {                                                                             \
        snprintf(lt_msg, sizeof lt_msg, "cuBLASLt is too old: it lacks %s; install CUDA 12 or 13's", sym); \
        dlclose(h);                                                                              \
        return;                                                                                  \
    }
    LT_FUNCS(X)
#undef X
    *(void **)&lt.cublasLtGetStatusString = dlsym(h, "cublasLtGetStatusString");
    *(void **)&lt.cublasLtGetVersion = dlsym(h, "cublasLtGetVersion");
    lt_ok = true;
}

static const Lt *lt_load(void) {
    pthread_once(&lt_once, lt_load_once);
    if (!lt_ok) {
        err_set(CUK_ERR_NO_BLAS, "%s", lt_msg);
        return NULL;
    }
    return &lt;
}

static cuk_status lt_fail(cublasStatus_t r, const char *call) {
    const char *str = lt.cublasLtGetStatusString ? lt.cublasLtGetStatusString(r) : NULL;
    return err_set(r == 3 ? CUK_ERR_OUT_OF_MEMORY : CUK_ERR_DRIVER, "%s failed: %s (cublasStatus %d)", call,
                   str ? str : "no description", r);
}
#define LT_CHECK(call, name)                                                                     \
    do {                                                                                         \
        cublasStatus_t lt_r_ = (call);                                                           \
        if (lt_r_ != 0) return lt_fail(lt_r_, name);                                             \
    } while (0)

cuk_status cuk_blas_version(int *version) {
    if (!version) return err_set(CUK_ERR_INVALID, "cuk_blas_version: NULL argument");
    const Lt *l = lt_load();
    if (!l) return CUK_ERR_NO_BLAS;
    *version = l->cublasLtGetVersion ? (int)l->cublasLtGetVersion() : 0;
    return CUK_OK;
}

/* ---- plans ---------------------------------------------------------------------------------- */

/* Everything that decides the descriptors and the algorithm. */
typedef struct PlanKey {
    int dev, type, tf32, epi, beta, trans_a, trans_b, align[4];
    int64_t m, n, k;
} PlanKey;

typedef struct LtPlan {
    PlanKey key;
    bool used;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc; /* the column-major A' = B, B' = A, C' = D */
    cublasLtMatmulAlgo_t algo;
} LtPlan;

/* 32 MiB: what NVIDIA recommends for Hopper's cuBLASLt kernels. */
#define WORKSPACE_BYTES ((size_t)32 << 20)
#define NPLANS 64

typedef struct DevBlas {
    cublasLtHandle_t handle;
    cuk_devptr ws;
    CUstream last; /* the stream of the last product: the workspace's user */
    CUevent done;  /* recorded after each product on a stream other than the default */
    bool used_any;
} DevBlas;

static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static DevBlas devblas[64];
static LtPlan plans[NPLANS];
static int next_evict;

static void plan_drop(LtPlan *p) {
    if (!p->used) return;
    lt.cublasLtMatrixLayoutDestroy(p->la);
    lt.cublasLtMatrixLayoutDestroy(p->lb);
    lt.cublasLtMatrixLayoutDestroy(p->lc);
    lt.cublasLtMatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}

static const char *mm_name(cuk_mm_type t) {
    return t == CUK_MM_F64 ? "f64" : t == CUK_MM_F16 ? "f16" : t == CUK_MM_BF16 ? "bf16" : "f32";
}

static int align_of(cuk_devptr p) {
    int a = 256;
    while (a > 1 && (p % (cuk_devptr)a)) a /= 2;
    return a;
}

/* Builds the descriptors and picks the algorithm for key (blas_lock held). */
static cuk_status plan_make(const DevBlas *db, const PlanKey *key, LtPlan *p) {
    memset(p, 0, sizeof *p);
    int dt = key->type == CUK_MM_F64 ? CUDA_R_64F : key->type == CUK_MM_F16 ? CUDA_R_16F : key->type == CUK_MM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    int ct = key->type == CUK_MM_F64 ? CUBLAS_COMPUTE_64F
             : key->tf32             ? CUBLAS_COMPUTE_32F_FAST_TF32
                                     : CUBLAS_COMPUTE_32F;
    /* the scale type: f32 for the 16-bit floats too (their products and sums are f32) */
    LT_CHECK(lt.cublasLtMatmulDescCreate(&p->desc, ct, key->type == CUK_MM_F64 ? CUDA_R_64F : CUDA_R_32F),
             "cublasLtMatmulDescCreate");
    /* A' is the caller's b: [k, n] row-major is n x k column-major; given transposed
       ([n, k]) it is k x n, read with TRANSA. B' is a: k x m, or m x k with TRANSB. */
    cublasStatus_t r = key->trans_b
                           ? lt.cublasLtMatrixLayoutCreate(&p->la, dt, (uint64_t)key->k, (uint64_t)key->n, key->k)
                           : lt.cublasLtMatrixLayoutCreate(&p->la, dt, (uint64_t)key->n, (uint64_t)key->k, key->n);
    if (!r)
        r = key->trans_a ? lt.cublasLtMatrixLayoutCreate(&p->lb, dt, (uint64_t)key->m, (uint64_t)key->k, key->m)
                         : lt.cublasLtMatrixLayoutCreate(&p->lb, dt, (uint64_t)key->k, (uint64_t)key->m, key->k);
    int32_t op_t = CUBLAS_OP_T;
    if (!r && key->trans_b) r = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t);
    if (!r && key->trans_a) r = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_t, sizeof op_t);
    if (!r) r = lt.cublasLtMatrixLayoutCreate(&p->lc, dt, (uint64_t)key->n, (uint64_t)key->m, key->n);
    int32_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (key->epi & CUK_MM_BIAS) epi = CUBLASLT_EPILOGUE_BIAS;
    if (key->epi & CUK_MM_RELU) epi = epi == CUBLASLT_EPILOGUE_BIAS ? CUBLASLT_EPILOGUE_BIAS | CUBLASLT_EPILOGUE_RELU
                                                                    : CUBLASLT_EPILOGUE_RELU;
    if (!r) r = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    cublasLtMatmulPreference_t pref = NULL;
    if (!r) r = lt.cublasLtMatmulPreferenceCreate(&pref);
    uint64_t wsb = WORKSPACE_BYTES;
    if (!r) r = lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    /* the pointers' real alignment, or cuBLASLt may pick a kernel that needs more; A' is
       the caller's B, B' its A */
    static const int attr[4] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && !r; i++) {
        uint32_t al = (uint32_t)key->align[i];
        r = lt.cublasLtMatmulPreferenceSetAttribute(pref, attr[i], &al, sizeof al);
    }
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    memset(&h, 0, sizeof h);
    if (!r) r = lt.cublasLtMatmulAlgoGetHeuristic(db->handle, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &h, &found);
    if (pref) lt.cublasLtMatmulPreferenceDestroy(pref);
    p->used = true; /* so plan_drop frees what was made */
    if (r) {
        plan_drop(p);
        return lt_fail(r, "cublasLtMatmulAlgoGetHeuristic");
    }
    if (found < 1) {
        plan_drop(p);
        return err_set(CUK_ERR_INVALID,
                       "cuBLASLt has no algorithm for a %s product of %lld x %lld by %lld x %lld (operand "
                       "alignments %d, %d, %d bytes)",
                       mm_name(key->type), (long long)key->m, (long long)key->k,
                       (long long)key->k, (long long)key->n, key->align[1], key->align[0], key->align[3]);
    }
    p->algo = h.algo;
    p->key = *key;
    return CUK_OK;
}

static cuk_status devblas_get(Device *d, DevBlas **out) {
    DevBlas *db = &devblas[d->index];
    if (!db->handle) {
        LT_CHECK(lt.cublasLtCreate(&db->handle), "cublasLtCreate");
        cuk_status s = cuk_mem_alloc(&db->ws, WORKSPACE_BYTES);
        CUresult r = s ? CUDA_SUCCESS : cu.cuEventCreate(&db->done, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) s = cu_fail(r, "cuEventCreate");
        if (s) {
            lt.cublasLtDestroy(db->handle);
            cuk_mem_free(db->ws);
            memset(db, 0, sizeof *db);
            return s;
        }
    }
    *out = db;
    return CUK_OK;
}

cuk_status cuk_matmul(const cuk_matmul_args *a, cuk_stream *stream) {
    if (!a) return err_set(CUK_ERR_INVALID, "cuk_matmul: NULL argument");
    if (a->type != CUK_MM_F32 && a->type != CUK_MM_F64 && a->type != CUK_MM_F16 && a->type != CUK_MM_BF16)
        return err_set(CUK_ERR_INVALID, "cuk_matmul: type %d is not CUK_MM_F32, F64, F16 or BF16", (int)a->type);
    if (a->m < 0 || a->n < 0 || a->k < 0)
        return err_set(CUK_ERR_INVALID, "cuk_matmul: negative size (m %lld, n %lld, k %lld)", (long long)a->m,
                       (long long)a->n, (long long)a->k);
    if ((a->epilogue & ~(CUK_MM_BIAS | CUK_MM_RELU)) || ((a->epilogue & CUK_MM_BIAS) && !a->bias))
        return err_set(CUK_ERR_INVALID, "cuk_matmul: epilogue %d needs CUK_MM_BIAS with a bias pointer, or CUK_MM_RELU",
                       a->epilogue);
    if (a->beta != 0 && !a->c) return err_set(CUK_ERR_INVALID, "cuk_matmul: beta is not 0 but c is NULL");
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    if (a->m == 0 || a->n == 0) return CUK_OK;
    size_t esz = a->type == CUK_MM_F64 ? 8 : a->type == CUK_MM_F32 ? 4 : 2;
    if (a->k == 0 && !a->epilogue && a->beta == 0) /* an empty sum: cuBLASLt wants k >= 1 */
        return cuk_memset_d8(a->d, 0, (size_t)a->m * (size_t)a->n * esz, stream);
    if (a->k == 0) {
        /* the product is zeros, the rest (beta * c, the bias, relu) still applies: the
           same call with k = 1 over a zero column and row */
        int64_t mx = a->m > a->n ? a->m : a->n;
        cuk_devptr z = 0;
        s = cuk_mem_alloc(&z, (size_t)mx * esz);
        if (!s) s = cuk_memset_d8(z, 0, (size_t)mx * esz, stream);
        if (!s) {
            cuk_matmul_args one = *a;
            one.k = 1, one.a = z, one.b = z;
            s = cuk_matmul(&one, stream);
        }
        cuk_mem_free(z); /* reused only by work queued after this call's */
        return s;
    }
    if (!lt_load()) return CUK_ERR_NO_BLAS;

    pthread_mutex_lock(&blas_lock);
    DevBlas *db = NULL;
    s = devblas_get(d, &db);
    PlanKey key;
    memset(&key, 0, sizeof key);
    key.dev = d->index, key.type = a->type, key.tf32 = a->type == CUK_MM_F32 && a->tf32;
    key.epi = a->epilogue, key.beta = a->beta != 0, key.trans_a = a->trans_a != 0, key.trans_b = a->trans_b != 0;
    key.m = a->m, key.n = a->n, key.k = a->k;
    key.align[0] = align_of(a->b), key.align[1] = align_of(a->a);
    cuk_devptr cptr = a->c ? a->c : a->d; /* C is D when c is 0 */
    key.align[2] = align_of(cptr), key.align[3] = align_of(a->d);
    LtPlan *p = NULL;
    for (int i = 0; !s && i < NPLANS && !p; i++)
        if (plans[i].used && memcmp(&plans[i].key, &key, sizeof key) == 0) p = &plans[i];
    if (!s && !p) {
        int slot = -1;
        for (int i = 0; i < NPLANS && slot < 0; i++)
            if (!plans[i].used) slot = i;
        if (slot < 0) {
            slot = next_evict;
            next_evict = (next_evict + 1) % NPLANS;
            plan_drop(&plans[slot]);
        }
        s = plan_make(db, &key, &plans[slot]);
        if (!s) p = &plans[slot];
    }
    CUstream cs = stream_raw(stream);
    /* One workspace per device: a product on another stream than the last one's waits
       for it (the event recorded after it, or, after one on the default stream, for
       everything queued there: no event is ever recorded on a stream that may be gone). */
    if (!s && db->used_any && db->last != cs) {
        CUresult r = db->last ? CUDA_SUCCESS : cu.cuEventRecord(db->done, NULL);
        if (r == CUDA_SUCCESS) r = cu.cuStreamWaitEvent(cs, db->done, 0);
        if (r != CUDA_SUCCESS) s = cu_fail(r, "ordering cuBLASLt's workspace between streams");
    }
    if (!s && p && (a->epilogue & CUK_MM_BIAS)) {
        const void *bp = (const void *)(uintptr_t)a->bias;
        cublasStatus_t r = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp);
        if (r) s = lt_fail(r, "cublasLtMatmulDescSetAttribute");
    }
    if (!s && p) {
        float af = (float)a->alpha, bf = (float)a->beta;
        const void *al = a->type == CUK_MM_F64 ? (const void *)&a->alpha : (const void *)&af;
        const void *be = a->type == CUK_MM_F64 ? (const void *)&a->beta : (const void *)&bf;
        const void *A = (const void *)(uintptr_t)a->a, *B = (const void *)(uintptr_t)a->b;
        const void *C = (const void *)(uintptr_t)cptr;
        void *D = (void *)(uintptr_t)a->d;
        cublasStatus_t r = lt.cublasLtMatmul(db->handle, p->desc, al, B, p->la, A, p->lb, be, C, p->lc, D, p->lc,
                                             &p->algo, (void *)(uintptr_t)db->ws, WORKSPACE_BYTES, cs);
        if (r) s = lt_fail(r, "cublasLtMatmul");
        db->last = cs;
        db->used_any = true;
        CUresult e = !s && cs ? cu.cuEventRecord(db->done, cs) : CUDA_SUCCESS;
        if (e != CUDA_SUCCESS) s = cu_fail(e, "cuEventRecord");
    }
    pthread_mutex_unlock(&blas_lock);
    return s;
}

void blas_release_all(void) {
    if (!lt_ok) return;
    pthread_mutex_lock(&blas_lock);
    for (int i = 0; i < NPLANS; i++) plan_drop(&plans[i]);
    for (int i = 0; i < 64; i++) {
        DevBlas *db = &devblas[i];
        if (!db->handle) continue;
        lt.cublasLtDestroy(db->handle);
        cu.cuEventDestroy(db->done);
        cuk_mem_free(db->ws);
        memset(db, 0, sizeof *db);
    }
    pthread_mutex_unlock(&blas_lock);
}
