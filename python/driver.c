/* Driver-level functions: initialisation, devices, synchronisation, the context stack
   and the kernel cache's counters. */
#include "_cuk.h"

#include <stdlib.h>
#include <string.h>

/* A runtime failure for a value the caller chose (an attribute, a limit) is
   cuk.driver.LogicError, as PyCUDA raises; others as usual. */
static PyObject *value_error(cuk_status s) {
    if (s == CUK_ERR_INVALID) return PyErr_Format(LogicError, "%s", cuk_last_error());
    return raise_status(s);
}

/* device_attribute(ordinal, attribute number) -> int (cuDeviceGetAttribute). */
static PyObject *py_device_attribute(PyObject *m, PyObject *args) {
    (void)m;
    int ordinal, attr, v = 0;
    if (!PyArg_ParseTuple(args, "ii", &ordinal, &attr)) return NULL;
    cuk_status s = cuk_device_attribute(ordinal, attr, &v);
    if (s) return value_error(s);
    return PyLong_FromLong(v);
}

/* ctx_limit(limit) -> bytes or count; ctx_limit(limit, value) sets it (cuCtxGetLimit,
   cuCtxSetLimit on the current device's primary context). */
static PyObject *py_ctx_limit(PyObject *m, PyObject *args) {
    (void)m;
    int limit;
    PyObject *value = NULL;
    if (!PyArg_ParseTuple(args, "i|O", &limit, &value)) return NULL;
    cuk_status s;
    if (value) {
        size_t v = PyLong_AsSize_t(value);
        if (PyErr_Occurred()) return NULL;
        if ((s = cuk_ctx_limit_set(limit, v))) return value_error(s);
        Py_RETURN_NONE;
    }
    size_t v = 0;
    if ((s = cuk_ctx_limit_get(limit, &v))) return value_error(s);
    return PyLong_FromSize_t(v);
}

static PyObject *py_init(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    CHECK(cuk_init());
    Py_RETURN_NONE;
}
static PyObject *py_gpu_available(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    int ok = 0;
    cuk_gpu_available(&ok);
    return Py_BuildValue("(Os)", ok ? Py_True : Py_False, ok ? "" : cuk_last_error());
}
static PyObject *py_device_count(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    int n;
    CHECK(cuk_device_count(&n));
    return PyLong_FromLong(n);
}
static PyObject *py_device_uuid(PyObject *m, PyObject *arg) {
    (void)m;
    int i = (int)PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    unsigned char u[16];
    CHECK(cuk_device_uuid(i, u));
    return PyBytes_FromStringAndSize((const char *)u, 16);
}

static PyObject *py_device_context(PyObject *m, PyObject *arg) {
    (void)m;
    int i = (int)PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    uintptr_t c;
    CHECK(cuk_device_context(i, &c));
    return PyLong_FromUnsignedLongLong(c);
}

static PyObject *py_stream_priority_range(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    int least, greatest;
    CHECK(cuk_stream_priority_range(&least, &greatest));
    return Py_BuildValue("(ii)", least, greatest);
}

static PyObject *py_device_props(PyObject *m, PyObject *arg) {
    (void)m;
    int i = (int)PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    cuk_device_props p;
    CHECK(cuk_device_props_get(i, &p));
    return Py_BuildValue("{s:s,s:s,s:i,s:(ii),s:n,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "name", p.name, "arch", p.arch, "index",
                         p.index, "compute_capability", p.cc_major, p.cc_minor, "total_memory", (Py_ssize_t)p.total_mem,
                         "multiprocessor_count", p.sm_count, "l2_cache_size", p.l2_size, "max_threads_per_block",
                         p.max_threads_per_block, "max_shared_memory_per_block", p.shared_mem_per_block,
                         "max_shared_memory_per_block_optin", p.shared_mem_per_block_optin, "max_threads_per_multiprocessor",
                         p.max_threads_per_sm, "warp_size", p.warp_size, "driver_version", p.driver_version);
}
static PyObject *py_device_select(PyObject *m, PyObject *arg) {
    (void)m;
    int i = (int)PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    CHECK(cuk_device_select(i));
    Py_RETURN_NONE;
}
static PyObject *py_device_current(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    int i;
    CHECK(cuk_device_current(&i));
    return PyLong_FromLong(i);
}
static PyObject *py_synchronize(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    cuk_status s;
    Py_BEGIN_ALLOW_THREADS s = cuk_synchronize();
    Py_END_ALLOW_THREADS if (s) return raise_status(s);
    Py_RETURN_NONE;
}

/* ctx("push"|"pop"|"current"): the calling thread's context stack, for cuk.driver's
   Context.push/pop. A failed push or pop is a misuse (LogicError) unless the driver or
   the GPU is missing. */
static PyObject *py_ctx(PyObject *m, PyObject *arg) {
    (void)m;
    const char *op = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!op) return NULL;
    cuk_status s;
    cuk_context *c = NULL;
    if (!strcmp(op, "current")) {
        int dev;
        (void)cuk_device_current(&dev); /* makes the primary context current; errors show below */
        CHECK(cuk_context_current(&c));
        return PyLong_FromVoidPtr(c);
    }
    if (!strcmp(op, "push")) s = cuk_context_push();
    else if (!strcmp(op, "pop")) s = cuk_context_pop(&c);
    else return PyErr_Format(PyExc_ValueError, "ctx: unknown operation '%s'", op);
    if (s == CUK_ERR_INVALID || s == CUK_ERR_DRIVER) return PyErr_Format(LogicError, "%s", cuk_last_error());
    if (s) return raise_status(s);
    if (c) return PyLong_FromVoidPtr(c);
    Py_RETURN_NONE;
}

static PyObject *py_cache_stats(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    cuk_cache_stats s;
    CHECK(cuk_cache_stats_get(&s));
    /* disk_off: empty while the disk cache is used, else why not */
    return Py_BuildValue("{s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:s}", "dir", s.dir, "entries", s.entries, "bytes", s.bytes,
                         "mem_hits", s.mem_hits, "disk_hits", s.disk_hits, "misses", s.misses, "disk_writes",
                         s.disk_writes, "corrupt", s.corrupt, "disk_off", s.disk_off);
}

static PyMethodDef driver_funcs[] = {
    {"init", py_init, METH_NOARGS, NULL},
    {"gpu_available", py_gpu_available, METH_NOARGS, "(ok, why not)"},
    {"device_count", py_device_count, METH_NOARGS, NULL},
    {"device_props", py_device_props, METH_O, NULL},
    {"device_uuid", py_device_uuid, METH_O, "device_uuid(index) -> 16 bytes"},
    {"device_context", py_device_context, METH_O, "device_context(index) -> the primary context's handle"},
    {"stream_priority_range", py_stream_priority_range, METH_NOARGS, "(least, greatest) of the current device"},
    {"device_select", py_device_select, METH_O, NULL},
    {"device_current", py_device_current, METH_NOARGS, NULL},
    {"synchronize", py_synchronize, METH_NOARGS, NULL},
    {"ctx", py_ctx, METH_O, NULL},
    {"cache_stats", py_cache_stats, METH_NOARGS, NULL},
    {"device_attribute", py_device_attribute, METH_VARARGS, "device_attribute(ordinal, CUdevice_attribute) -> int"},
    {"ctx_limit", py_ctx_limit, METH_VARARGS, "ctx_limit(CUlimit[, value]): get or set a limit of the current context"},
    {NULL, NULL, 0, NULL}};

int driver_init(PyObject *mod) { return PyModule_AddFunctions(mod, driver_funcs); }
