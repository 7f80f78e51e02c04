/* Devices, the primary context of the selected device, synchronisation, streams and
   events. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAXDEV 64

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static Device devs[MAXDEV];
static int ndev = -1;             /* -1: not counted yet */
static _Atomic int selected = -1; /* index into devs, -1: not chosen yet */

struct cuk_stream_s {
    CUstream s;
    Device *d;
    bool owned; /* made by cuk_stream_create (else cuk_stream_wrap: another library's) */
};
struct cuk_event_s {
    CUevent e;
    Device *d;
};

static cuk_status count_locked(void) {
    if (ndev >= 0) return CUK_OK;
    int n = 0;
    CU_CHECK(cu.cuDeviceGetCount(&n), "cuDeviceGetCount");
    ndev = n > MAXDEV ? MAXDEV : n;
    return CUK_OK;
}

cuk_status cuk_device_count(int *n) {
    if (!n) return err_set(CUK_ERR_INVALID, "cuk_device_count: NULL argument");
    *n = 0;
    cuk_status s = driver_load();
    if (s) return s;
    pthread_mutex_lock(&dev_lock);
    s = count_locked();
    if (!s) *n = ndev;
    pthread_mutex_unlock(&dev_lock);
    return s;
}

cuk_status cuk_gpu_available(int *ok) {
    if (!ok) return err_set(CUK_ERR_INVALID, "cuk_gpu_available: NULL argument");
    int n = 0;
    *ok = 0;
    if (cuk_device_count(&n) != CUK_OK) return CUK_OK; /* the message says why */
    if (n == 0) {
        err_set(CUK_ERR_NO_DEVICE, "no CUDA device found: the driver reports 0 GPUs; the CPU backend needs none");
        return CUK_OK;
    }
    *ok = 1;
    return CUK_OK;
}

static cuk_status props_locked(int index, cuk_device_props *p) {
    Device *d = &devs[index];
    if (d->props.name[0]) {
        *p = d->props;
        return CUK_OK;
    }
    cuk_device_props q;
    memset(&q, 0, sizeof q);
    q.index = index;
    CU_CHECK(cu.cuDeviceGet(&d->dev, index), "cuDeviceGet");
    CU_CHECK(cu.cuDeviceGetName(q.name, (int)sizeof q.name - 1, d->dev), "cuDeviceGetName");
    CU_CHECK(cu.cuDeviceTotalMem(&q.total_mem, d->dev), "cuDeviceTotalMem_v2");
    struct {
        int attr;
        int *dst;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &q.cc_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &q.cc_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &q.sm_count},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &q.l2_size},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &q.max_threads_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &q.shared_mem_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &q.shared_mem_per_block_optin},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &q.max_threads_per_sm},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &q.warp_size},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        CU_CHECK(cu.cuDeviceGetAttribute(attrs[i].dst, attrs[i].attr, d->dev), "cuDeviceGetAttribute");
    CU_CHECK(cu.cuDriverGetVersion(&q.driver_version), "cuDriverGetVersion");
    snprintf(q.arch, sizeof q.arch, "sm_%d%d", q.cc_major, q.cc_minor);
    d->index = index;
    d->props = q;
    *p = q;
    return CUK_OK;
}

static cuk_status check_index_locked(int index) {
    cuk_status s = count_locked();
    if (s) return s;
    if (ndev == 0)
        return err_set(CUK_ERR_NO_DEVICE, "no CUDA device found: the driver reports 0 GPUs; the CPU backend needs none");
    if (index < 0 || index >= ndev)
        return err_set(CUK_ERR_NO_DEVICE, "no CUDA device %d: there %s %d (indices 0 to %d)", index,
                       ndev == 1 ? "is" : "are", ndev, ndev - 1);
    return CUK_OK;
}

cuk_status cuk_device_props_get(int index, cuk_device_props *p) {
    if (!p) return err_set(CUK_ERR_INVALID, "cuk_device_props_get: NULL argument");
    cuk_status s = driver_load();
    if (s) return s;
    pthread_mutex_lock(&dev_lock);
    s = check_index_locked(index);
    if (!s) s = props_locked(index, p);
    pthread_mutex_unlock(&dev_lock);
    return s;
}

/* A driver failure for a value the caller chose (an attribute, a limit): CUDA_ERROR_INVALID_VALUE
   (1) and CUDA_ERROR_UNSUPPORTED_LIMIT (215) are the caller's, CUK_ERR_INVALID. */
static cuk_status value_fail(CUresult r, const char *call, const char *what, int which) {
    if (r == CUDA_ERROR_INVALID_VALUE || r == 215) {
        const char *name = NULL;
        cu.cuGetErrorName(r, &name);
        return err_set(CUK_ERR_INVALID, "%s: %s %d is not one this driver or device supports (%s)", call, what, which,
                       name ? name : "?");
    }
    return cu_fail(r, call);
}

cuk_status dev_handle(int index, CUdevice *dev) {
    cuk_status s = driver_load();
    if (s) return s;
    pthread_mutex_lock(&dev_lock);
    s = check_index_locked(index);
    pthread_mutex_unlock(&dev_lock);
    if (s) return s;
    CU_CHECK(cu.cuDeviceGet(dev, index), "cuDeviceGet");
    return CUK_OK;
}

cuk_status cuk_device_attribute(int index, int attribute, int *value) {
    if (!value) return err_set(CUK_ERR_INVALID, "cuk_device_attribute: NULL argument");
    *value = 0;
    CUdevice dev;
    cuk_status s = dev_handle(index, &dev);
    if (s) return s;
    CUresult r = cu.cuDeviceGetAttribute(value, attribute, dev);
    return r ? value_fail(r, "cuDeviceGetAttribute", "attribute", attribute) : CUK_OK;
}

/* cuCtxGetLimit into *get, or cuCtxSetLimit to set when get is NULL. */
static cuk_status ctx_limit(int limit, size_t *get, size_t set) {
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    const char *call = get ? "cuCtxGetLimit" : "cuCtxSetLimit";
    if (get ? !cu.cuCtxGetLimit : !cu.cuCtxSetLimit)
        return err_set(CUK_ERR_DRIVER, "the CUDA driver has no %s: update the NVIDIA driver", call);
    CUresult r = get ? cu.cuCtxGetLimit(get, limit) : cu.cuCtxSetLimit(limit, set);
    return r ? value_fail(r, call, "limit", limit) : CUK_OK;
}

cuk_status cuk_ctx_limit_get(int limit, size_t *value) {
    if (!value) return err_set(CUK_ERR_INVALID, "cuk_ctx_limit_get: NULL argument");
    *value = 0;
    return ctx_limit(limit, value, 0);
}

cuk_status cuk_ctx_limit_set(int limit, size_t value) { return ctx_limit(limit, NULL, value); }

/* $CUK_DEVICE, else 0. A malformed value is a user error, not silently 0. */
static cuk_status env_device(int *index) {
    const char *e = getenv("CUK_DEVICE");
    *index = 0;
    if (!e || !*e) return CUK_OK;
    char *end;
    long v = strtol(e, &end, 10);
    if (*end || v < 0 || v >= MAXDEV)
        return err_set(CUK_ERR_INVALID, "CUK_DEVICE='%s' is not a device index (0, 1, ...)", e);
    *index = (int)v;
    return CUK_OK;
}

/* Retains the primary context of devs[index] once. */
static cuk_status open_locked(int index) {
    Device *d = &devs[index];
    if (d->ctx) return CUK_OK;
    cuk_device_props p;
    cuk_status s = props_locked(index, &p);
    if (s) return s;
    CUcontext c;
    CU_CHECK(cu.cuDevicePrimaryCtxRetain(&c, d->dev), "cuDevicePrimaryCtxRetain");
    d->ctx = c;
    return CUK_OK;
}

cuk_status dev_open(int index, Device **out) {
    cuk_status s = driver_load();
    if (s) return s;
    pthread_mutex_lock(&dev_lock);
    s = check_index_locked(index);
    if (!s) s = open_locked(index);
    pthread_mutex_unlock(&dev_lock);
    if (!s) *out = &devs[index];
    return s;
}

cuk_status cuk_device_select(int index) {
    cuk_status s = driver_load();
    if (s) return s;
    if (index < 0 && (s = env_device(&index))) return s;
    pthread_mutex_lock(&dev_lock);
    s = check_index_locked(index);
    if (!s) s = open_locked(index);
    if (!s) atomic_store(&selected, index);
    pthread_mutex_unlock(&dev_lock);
    if (s) return s;
    return ctx_make_current(&devs[index]);
}

cuk_status cuk_device_current(int *index) {
    if (!index) return err_set(CUK_ERR_INVALID, "cuk_device_current: NULL argument");
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    *index = d->index;
    return CUK_OK;
}

cuk_status cuk_context_push(void) {
    Device *d;
    cuk_status s = dev_selected(&d);
    if (s) return s;
    CU_CHECK(cu.cuCtxPushCurrent(d->ctx), "cuCtxPushCurrent_v2");
    return CUK_OK;
}

cuk_status cuk_context_pop(cuk_context **popped) {
    if (popped) *popped = NULL;
    cuk_status s = driver_load();
    if (s) return s;
    CUcontext c = NULL;
    CUresult r = cu.cuCtxPopCurrent(&c);
    if (r == CUDA_ERROR_INVALID_CONTEXT)
        return err_set(CUK_ERR_INVALID, "cuk_context_pop: this thread has no context to pop (its context stack is empty)");
    if (r) return cu_fail(r, "cuCtxPopCurrent_v2");
    if (popped) *popped = (cuk_context *)c;
    return CUK_OK;
}

cuk_status cuk_context_current(cuk_context **out) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_context_current: NULL argument");
    *out = NULL;
    cuk_status s = driver_load();
    if (s) return s;
    CUcontext c = NULL;
    CU_CHECK(cu.cuCtxGetCurrent(&c), "cuCtxGetCurrent");
    *out = (cuk_context *)c;
    return CUK_OK;
}

cuk_status ctx_make_current(Device *d) {
    /* Asking the driver (not a cached thread-local) keeps us right when CuPy or
       PyTorch switch this thread's context behind our back; it is a TLS read. */
    CUcontext c = NULL;
    CU_CHECK(cu.cuCtxGetCurrent(&c), "cuCtxGetCurrent");
    if (c != d->ctx) CU_CHECK(cu.cuCtxSetCurrent(d->ctx), "cuCtxSetCurrent");
    return CUK_OK;
}

cuk_status dev_selected(Device **out) {
    int i = atomic_load_explicit(&selected, memory_order_acquire);
    if (i < 0) {
        cuk_status s = cuk_device_select(-1);
        if (s) return s;
        i = atomic_load(&selected);
    }
    *out = &devs[i];
    return CUK_OK;
}

cuk_status dev_current(Device **out) {
    int i = atomic_load_explicit(&selected, memory_order_acquire);
    if (i < 0) {
        cuk_status s = cuk_device_select(-1);
        if (s) return s;
        i = atomic_load(&selected);
    } else {
        cuk_status s = ctx_make_current(&devs[i]);
        if (s) return s;
    }
    *out = &devs[i];
    return CUK_OK;
}

cuk_status cuk_synchronize(void) {
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CU_CHECK(cu.cuCtxSynchronize(), "cuCtxSynchronize");
    return CUK_OK;
}

cuk_status cuk_mem_info(size_t *free_bytes, size_t *total_bytes) {
    if (!free_bytes || !total_bytes) return err_set(CUK_ERR_INVALID, "cuk_mem_info: NULL argument");
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CU_CHECK(cu.cuMemGetInfo(free_bytes, total_bytes), "cuMemGetInfo_v2");
    return CUK_OK;
}

void cuk_shutdown(void) {
    pthread_mutex_lock(&dev_lock);
    bool any = false;
    for (int i = 0; i < MAXDEV; i++) any |= devs[i].ctx != NULL;
    pthread_mutex_unlock(&dev_lock);
    if (!any) return; /* nothing was ever opened: no driver calls */
    /* Everything below needs a current context; make each device's current in turn. */
    modules_release_all();
    blas_release_all();
    pool_release_all();
    pthread_mutex_lock(&dev_lock);
    for (int i = 0; i < MAXDEV; i++) {
        if (!devs[i].ctx) continue;
        cu.cuDevicePrimaryCtxRelease(devs[i].dev);
        devs[i].ctx = NULL;
    }
    atomic_store(&selected, -1);
    pthread_mutex_unlock(&dev_lock);
}

/* ---- streams -------------------------------------------------------------------------- */

static inline CUstream raw_stream(cuk_stream *s) { return s ? s->s : NULL; }
CUstream stream_raw(cuk_stream *s) { return raw_stream(s); }

cuk_status cuk_stream_create(cuk_stream **out) { return cuk_stream_create_ex(out, 1, 0); }

cuk_status cuk_stream_create_ex(cuk_stream **out, int nonblocking, int priority) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_stream_create: NULL argument");
    *out = NULL;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CUstream cs;
    unsigned flags = nonblocking ? CU_STREAM_NON_BLOCKING : 0;
    if (priority == 0) {
        CU_CHECK(cu.cuStreamCreate(&cs, flags), "cuStreamCreate");
    } else {
        int least, greatest;
        if ((s = cuk_stream_priority_range(&least, &greatest))) return s;
        if (priority > least || priority < greatest)
            return err_set(CUK_ERR_INVALID,
                           "stream priority %d is outside this device's range: %d (lowest) to %d (highest; lower "
                           "numbers are higher priorities)",
                           priority, least, greatest);
        CU_CHECK(cu.cuStreamCreateWithPriority(&cs, flags, priority), "cuStreamCreateWithPriority");
    }
    cuk_stream *st = malloc(sizeof *st);
    if (!st) {
        cu.cuStreamDestroy(cs);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_stream_create: out of host memory");
    }
    st->s = cs;
    st->d = d;
    st->owned = true;
    *out = st;
    return CUK_OK;
}

cuk_status cuk_stream_priority_range(int *least, int *greatest) {
    if (!least || !greatest) return err_set(CUK_ERR_INVALID, "cuk_stream_priority_range: NULL argument");
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    *least = *greatest = 0;
    if (!cu.cuCtxGetStreamPriorityRange) return CUK_OK; /* a driver without priorities: only 0 */
    CU_CHECK(cu.cuCtxGetStreamPriorityRange(least, greatest), "cuCtxGetStreamPriorityRange");
    return CUK_OK;
}

cuk_status cuk_stream_priority(cuk_stream *st, int *priority) {
    if (!priority) return err_set(CUK_ERR_INVALID, "cuk_stream_priority: NULL argument");
    *priority = 0;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    if (!cu.cuStreamGetPriority) return CUK_OK;
    CU_CHECK(cu.cuStreamGetPriority(stream_raw(st), priority), "cuStreamGetPriority");
    return CUK_OK;
}

cuk_status cuk_device_context(int index, uintptr_t *ctx) {
    if (!ctx) return err_set(CUK_ERR_INVALID, "cuk_device_context: NULL argument");
    Device *d;
    cuk_status s = dev_open(index, &d);
    if (s) return s;
    *ctx = (uintptr_t)d->ctx;
    return CUK_OK;
}

cuk_status cuk_device_uuid(int index, unsigned char uuid[16]) {
    if (!uuid) return err_set(CUK_ERR_INVALID, "cuk_device_uuid: NULL argument");
    CUdevice dev; /* by ordinal: the UUID needs no context */
    cuk_status s = dev_handle(index, &dev);
    if (s) return s;
    if (!cu.cuDeviceGetUuid) return err_set(CUK_ERR_DRIVER, "cuk_device_uuid: this CUDA driver has no cuDeviceGetUuid_v2");
    CU_CHECK(cu.cuDeviceGetUuid(uuid, dev), "cuDeviceGetUuid_v2");
    return CUK_OK;
}

cuk_status cuk_stream_wrap(uintptr_t handle, cuk_stream **out) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_stream_wrap: NULL argument");
    *out = NULL;
    if (!handle)
        return err_set(CUK_ERR_INVALID, "cuk_stream_wrap: stream handle 0 is ambiguous (the legacy or the per-thread "
                                        "default stream?); pass 1 (CUK_STREAM_LEGACY) or 2 (CUK_STREAM_PER_THREAD)");
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    cuk_stream *st = malloc(sizeof *st);
    if (!st) return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_stream_wrap: out of host memory");
    *st = (cuk_stream){.s = handle == CUK_STREAM_LEGACY ? NULL : (CUstream)handle, .d = d, .owned = false};
    *out = st;
    return CUK_OK;
}

int cuk_stream_is_foreign(const cuk_stream *s) {
    return s && !s->owned && s->s && s->s != (CUstream)CUK_STREAM_LEGACY && s->s != (CUstream)CUK_STREAM_PER_THREAD;
}

uintptr_t cuk_stream_handle(const cuk_stream *s) { return s && s->s ? (uintptr_t)s->s : CUK_STREAM_LEGACY; }

cuk_status cuk_stream_destroy(cuk_stream *st) {
    if (!st) return CUK_OK;
    if (!st->owned) {
        free(st);
        return CUK_OK;
    }
    cuk_status s = ctx_make_current(st->d);
    CUresult r = s ? CUDA_SUCCESS : cu.cuStreamSynchronize(st->s);
    if (!s) pool_stream_gone(st->s);
    if (!s && !r) r = cu.cuStreamDestroy(st->s);
    free(st);
    if (s) return s;
    if (r) return cu_fail(r, "cuStreamDestroy_v2");
    return CUK_OK;
}

cuk_status cuk_stream_synchronize(cuk_stream *st) {
    Device *d;
    cuk_status s = st ? ctx_make_current(d = st->d) : dev_current(&d);
    if (s) return s;
    CU_CHECK(cu.cuStreamSynchronize(raw_stream(st)), "cuStreamSynchronize");
    return CUK_OK;
}

cuk_status cuk_stream_query(cuk_stream *st) {
    Device *d;
    cuk_status s = st ? ctx_make_current(d = st->d) : dev_current(&d);
    if (s) return s;
    CUresult r = cu.cuStreamQuery(raw_stream(st));
    if (r == CUDA_ERROR_NOT_READY) return CUK_ERR_NOT_READY;
    if (r) return cu_fail(r, "cuStreamQuery");
    return CUK_OK;
}

cuk_status cuk_stream_wait_event(cuk_stream *st, cuk_event *e) {
    if (!e) return err_set(CUK_ERR_INVALID, "cuk_stream_wait_event: NULL event");
    cuk_status s = ctx_make_current(e->d);
    if (s) return s;
    CU_CHECK(cu.cuStreamWaitEvent(raw_stream(st), e->e, 0), "cuStreamWaitEvent");
    return CUK_OK;
}

cuk_status cuk_stream_wait_event_raw(uintptr_t waiter, cuk_event *e) {
    if (!e) return err_set(CUK_ERR_INVALID, "cuk_stream_wait_event_raw: NULL event");
    if (!waiter)
        return err_set(CUK_ERR_INVALID, "cuk_stream_wait_event_raw: stream handle 0 is ambiguous (the legacy or the "
                                        "per-thread default stream?); pass 1 (CUK_STREAM_LEGACY) or 2 (CUK_STREAM_PER_THREAD)");
    cuk_status s = ctx_make_current(e->d);
    if (s) return s;
    CU_CHECK(cu.cuStreamWaitEvent((CUstream)waiter, e->e, 0), "cuStreamWaitEvent"); /* 1 and 2 are the driver's too */
    return CUK_OK;
}

cuk_status cuk_stream_wait_raw(uintptr_t waiter, uintptr_t producer) {
    if (!waiter || !producer)
        return err_set(CUK_ERR_INVALID,
                       "cuk_stream_wait_raw: stream handle 0 is ambiguous (the legacy or the per-thread default "
                       "stream?); pass 1 (CUK_STREAM_LEGACY) or 2 (CUK_STREAM_PER_THREAD)");
    if (waiter == producer) return CUK_OK;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CUevent e;
    CU_CHECK(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    const char *call = "cuEventRecord";
    CUresult r = cu.cuEventRecord(e, (CUstream)producer);
    if (!r) {
        call = "cuStreamWaitEvent";
        r = cu.cuStreamWaitEvent((CUstream)waiter, e, 0);
    }
    /* The wait is queued with the event's state at this point; the driver frees the
       event once it completes. */
    cu.cuEventDestroy(e);
    if (r) return cu_fail(r, call);
    return CUK_OK;
}

/* ---- events ----------------------------------------------------------------------------- */

cuk_status cuk_event_create(cuk_event **out) { return cuk_event_create_ex(out, 0); }

cuk_status cuk_event_create_ex(cuk_event **out, unsigned flags) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_event_create: NULL argument");
    *out = NULL;
    if (flags & ~3u)
        return err_set(CUK_ERR_INVALID, "cuk_event_create_ex: flags %#x: only CUK_EVENT_BLOCKING_SYNC (1) and "
                                        "CUK_EVENT_DISABLE_TIMING (2) are taken", flags);
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CUevent ce;
    CU_CHECK(cu.cuEventCreate(&ce, flags), "cuEventCreate");
    cuk_event *e = malloc(sizeof *e);
    if (!e) {
        cu.cuEventDestroy(ce);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_event_create: out of host memory");
    }
    e->e = ce;
    e->d = d;
    *out = e;
    return CUK_OK;
}

uintptr_t cuk_event_handle(const cuk_event *e) { return e ? (uintptr_t)e->e : 0; }

cuk_status cuk_event_destroy(cuk_event *e) {
    if (!e) return CUK_OK;
    cuk_status s = ctx_make_current(e->d);
    CUresult r = s ? CUDA_SUCCESS : cu.cuEventDestroy(e->e);
    free(e);
    if (s) return s;
    if (r) return cu_fail(r, "cuEventDestroy_v2");
    return CUK_OK;
}

cuk_status cuk_event_record(cuk_event *e, cuk_stream *st) {
    if (!e) return err_set(CUK_ERR_INVALID, "cuk_event_record: NULL event");
    cuk_status s = ctx_make_current(e->d);
    if (s) return s;
    CU_CHECK(cu.cuEventRecord(e->e, raw_stream(st)), "cuEventRecord");
    return CUK_OK;
}

cuk_status cuk_event_synchronize(cuk_event *e) {
    if (!e) return err_set(CUK_ERR_INVALID, "cuk_event_synchronize: NULL event");
    cuk_status s = ctx_make_current(e->d);
    if (s) return s;
    CU_CHECK(cu.cuEventSynchronize(e->e), "cuEventSynchronize");
    return CUK_OK;
}

cuk_status cuk_event_query(cuk_event *e) {
    if (!e) return err_set(CUK_ERR_INVALID, "cuk_event_query: NULL event");
    cuk_status s = ctx_make_current(e->d);
    if (s) return s;
    CUresult r = cu.cuEventQuery(e->e);
    if (r == CUDA_ERROR_NOT_READY) return CUK_ERR_NOT_READY;
    if (r) return cu_fail(r, "cuEventQuery");
    return CUK_OK;
}

cuk_status cuk_event_elapsed(float *ms, cuk_event *start, cuk_event *end) {
    if (!ms || !start || !end) return err_set(CUK_ERR_INVALID, "cuk_event_elapsed: NULL argument");
    cuk_status s = ctx_make_current(start->d);
    if (s) return s;
    /* cuda.h maps cuEventElapsedTime to _v2 from 12.8 on; older drivers have only v1. */
    if (cu.cuEventElapsedTime_v2)
        CU_CHECK(cu.cuEventElapsedTime_v2(ms, start->e, end->e), "cuEventElapsedTime_v2");
    else
        CU_CHECK(cu.cuEventElapsedTime_v1(ms, start->e, end->e), "cuEventElapsedTime");
    return CUK_OK;
}
