/* Memory beside arrays: pinned host buffers, PyCUDA's DeviceAllocation, device pointers
   from Python objects, and the mem_* and memcpy/memset functions cuk.driver wraps. */
#include "_cuk.h"

#include <stdio.h>
#include <string.h>

PyTypeObject *Alloc_Type;

/* ---- pinned host memory ----------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    void *p;
    Py_ssize_t n;
} Pinned;
static PyTypeObject *Pinned_Type;

static int pinned_getbuffer(PyObject *self, Py_buffer *v, int flags) {
    Pinned *p = (Pinned *)self;
    return PyBuffer_FillInfo(v, self, p->p, p->n, 0, flags);
}
static void pinned_dealloc(PyObject *self) {
    Pinned *p = (Pinned *)self;
    if (p->p) cuk_host_free(p->p);
    heap_free(self);
}
static PyObject *pinned_ptr(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromVoidPtr(((Pinned *)self)->p);
}
static PyGetSetDef pinned_getset[] = {{"ptr", pinned_ptr, NULL, "the host address", NULL}, {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot pinned_slots[] = {{Py_bf_getbuffer, pinned_getbuffer},
                                     {Py_tp_dealloc, pinned_dealloc},
                                     {Py_tp_getset, pinned_getset},
                                     {0, 0}};
static PyType_Spec pinned_spec = {"cuk._cuk.PinnedBuffer", sizeof(Pinned), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                  pinned_slots};

static PyObject *py_host_alloc(PyObject *m, PyObject *arg) {
    (void)m;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "negative size");
    void *p;
    CHECK(cuk_host_alloc(&p, n ? (size_t)n : 1));
    Pinned *r = PyObject_New(Pinned, Pinned_Type);
    if (!r) {
        cuk_host_free(p);
        return NULL;
    }
    r->p = p;
    r->n = n;
    return (PyObject *)r;
}

/* ---- device allocations (PyCUDA's DeviceAllocation) ------------------------------------------ */

static void alloc_dealloc(PyObject *self) {
    Alloc *a = (Alloc *)self;
    if (a->weakrefs) PyObject_ClearWeakRefs(self);
    if (a->p) cuk_mem_free(a->p);
    heap_free(self);
}
static PyObject *alloc_int(PyObject *self) { return PyLong_FromUnsignedLongLong(((Alloc *)self)->p); }
static PyObject *alloc_free(PyObject *self, PyObject *unused) {
    (void)unused;
    Alloc *a = (Alloc *)self;
    if (a->p) CHECK(cuk_mem_free(a->p));
    a->p = 0;
    Py_RETURN_NONE;
}
static PyObject *alloc_size(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(((Alloc *)self)->n);
}
static PyObject *alloc_repr(PyObject *self) {
    char at[32]; /* PyUnicode_FromFormat has no %llx before 3.12 */
    snprintf(at, sizeof at, "0x%llx", (unsigned long long)((Alloc *)self)->p);
    return PyUnicode_FromFormat("<cuk.driver.DeviceAllocation %s, %zu bytes>", at, ((Alloc *)self)->n);
}
static PyMethodDef alloc_methods[] = {{"free", alloc_free, METH_NOARGS, "return the memory to the pool now"},
                                      {NULL, NULL, 0, NULL}};
static PyGetSetDef alloc_getset[] = {{"size", alloc_size, NULL, "bytes", NULL}, {NULL, NULL, NULL, NULL, NULL}};
static PyMemberDef alloc_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Alloc, weakrefs), READONLY, NULL}, {NULL, 0, 0, 0, NULL}};
static PyType_Slot alloc_slots[] = {{Py_tp_dealloc, alloc_dealloc}, {Py_nb_int, alloc_int},    {Py_nb_index, alloc_int},
                                    {Py_tp_methods, alloc_methods}, {Py_tp_getset, alloc_getset}, {Py_tp_repr, alloc_repr},
                                    {Py_tp_members, alloc_members}, {0, 0}};
static PyType_Spec alloc_spec = {"cuk.driver.DeviceAllocation", sizeof(Alloc), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                 alloc_slots};

static PyObject *py_mem_alloc(PyObject *m, PyObject *arg) {
    (void)m;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "mem_alloc: negative size");
    cuk_devptr p;
    CHECK(cuk_mem_alloc(&p, (size_t)n));
    Alloc *a = PyObject_New(Alloc, Alloc_Type);
    if (!a) {
        cuk_mem_free(p);
        return NULL;
    }
    a->p = p;
    a->n = (size_t)n;
    a->weakrefs = NULL;
    return (PyObject *)a;
}

/* ---- device pointers from Python objects ------------------------------------------------------- */

int devptr_of(PyObject *o, cuk_devptr *p) {
    if (Py_IS_TYPE(o, DeviceArray_Type)) {
        *p = DA(o)->dev;
        return 0;
    }
    if (PyLong_Check(o)) {
        *p = PyLong_AsUnsignedLongLong(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyObject_TypeCheck(o, DeviceArray_Type)) {
        *p = DA(o)->dev;
        return 0;
    }
    if (PyObject_TypeCheck(o, Alloc_Type)) {
        *p = ((Alloc *)o)->p;
        return 0;
    }
    PyObject *cai = PyObject_GetAttr(o, s_cai); /* once: it is often a property that builds a dict */
    if (!cai) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
    } else {
        PyObject *data = PyDict_Check(cai) ? PyDict_GetItemString(cai, "data") : NULL;
        if (!data || !PyTuple_Check(data) || PyTuple_Size(data) < 1) {
            Py_XDECREF(cai);
            if (!PyErr_Occurred()) PyErr_SetString(ArgumentError, "malformed __cuda_array_interface__");
            return -1;
        }
        *p = PyLong_AsUnsignedLongLong(PyTuple_GetItem(data, 0));
        Py_DECREF(cai);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyObject_HasAttr(o, s_gpudata)) {
        PyObject *g = PyObject_GetAttr(o, s_gpudata);
        if (!g) return -1;
        int r = devptr_of(g, p);
        Py_DECREF(g);
        return r;
    }
    PyObject *ix = PyNumber_Index(o);
    if (!ix) return -1;
    *p = PyLong_AsUnsignedLongLong(ix);
    Py_DECREF(ix);
    return PyErr_Occurred() ? -1 : 0;
}

/* ---- the pool and the mem* functions ----------------------------------------------------------- */

static PyObject *py_mem_info(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    size_t f, t;
    CHECK(cuk_mem_info(&f, &t));
    return Py_BuildValue("(nn)", (Py_ssize_t)f, (Py_ssize_t)t);
}
static PyObject *py_mem_stats(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    cuk_mem_stats s;
    CHECK(cuk_mem_stats_get(&s));
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:K,s:K,s:K,s:K}", "in_use", (Py_ssize_t)s.in_use, "requested", (Py_ssize_t)s.requested,
                         "cached", (Py_ssize_t)s.cached, "peak", (Py_ssize_t)s.peak, "allocs", s.allocs, "hits", s.hits,
                         "driver_allocs", s.driver_allocs, "oom_retries", s.oom_retries);
}
static PyObject *py_mem_trim(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    CHECK(cuk_mem_trim());
    Py_RETURN_NONE;
}
/* mem_alloc_on(nbytes, stream) -> int: a pool block for that stream (cuk.core's
   DeviceMemoryResource); freed with mem_free(int). */
static PyObject *py_mem_alloc_on(PyObject *m, PyObject *args) {
    (void)m;
    Py_ssize_t n;
    PyObject *so = Py_None;
    if (!PyArg_ParseTuple(args, "n|O", &n, &so)) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "mem_alloc_on: negative size");
    cuk_stream *s;
    if (stream_of(so, &s) < 0) return NULL;
    cuk_devptr p;
    CHECK(cuk_mem_alloc_on(&p, (size_t)n, s));
    return PyLong_FromUnsignedLongLong(p);
}

static PyObject *py_mem_free(PyObject *m, PyObject *arg) {
    (void)m;
    cuk_devptr p;
    if (devptr_of(arg, &p) < 0) return NULL;
    CHECK(cuk_mem_free(p));
    Py_RETURN_NONE;
}

/* ---- managed memory (cuk.core's ManagedMemoryResource) ---------------------------------------- */

/* managed_alloc(nbytes) -> int; freed with managed_free(int). */
static PyObject *py_managed_alloc(PyObject *m, PyObject *arg) {
    (void)m;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "managed_alloc: negative size");
    cuk_devptr p;
    CHECK(cuk_managed_alloc(&p, (size_t)n));
    return PyLong_FromUnsignedLongLong(p);
}

static PyObject *py_managed_free(PyObject *m, PyObject *arg) {
    (void)m;
    cuk_devptr p;
    if (devptr_of(arg, &p) < 0) return NULL;
    CHECK(cuk_managed_free(p));
    Py_RETURN_NONE;
}

/* mem_advise(ptr, nbytes, advice, location): advice 1-6 (cuk_advice), location a device
   ordinal or -1 for the host */
static PyObject *py_mem_advise(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *po;
    Py_ssize_t n;
    int what, loc;
    if (!PyArg_ParseTuple(args, "Onii", &po, &n, &what, &loc)) return NULL;
    cuk_devptr p;
    if (devptr_of(po, &p) < 0) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "mem_advise: negative size");
    CHECK(cuk_mem_advise(p, (size_t)n, (cuk_advice)what, loc));
    Py_RETURN_NONE;
}

/* mem_prefetch(ptr, nbytes, location, stream=None) */
static PyObject *py_mem_prefetch(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *po, *so = Py_None;
    Py_ssize_t n;
    int loc;
    if (!PyArg_ParseTuple(args, "Oni|O", &po, &n, &loc, &so)) return NULL;
    cuk_devptr p;
    cuk_stream *s;
    if (devptr_of(po, &p) < 0 || stream_of(so, &s) < 0) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "mem_prefetch: negative size");
    CHECK(cuk_mem_prefetch(p, (size_t)n, loc, s));
    Py_RETURN_NONE;
}

/* mem_range(ptr, nbytes) -> (read_mostly, preferred, last_prefetch, accessed_by tuple);
   locations as device ordinals, -1 the host, -2 none */
static PyObject *py_mem_range(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *po;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &po, &n)) return NULL;
    cuk_devptr p;
    if (devptr_of(po, &p) < 0) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "mem_range: negative size");
    cuk_mem_range r;
    int acc[64], na = 0, nd = 0;
    if (cuk_device_count(&nd)) nd = 1;
    CHECK(cuk_mem_range_get(p, (size_t)n, &r, acc, nd + 1 < 64 ? nd + 1 : 64, &na));
    PyObject *t = PyTuple_New(na);
    if (!t) return NULL;
    for (int i = 0; i < na; i++)
        if (PyTuple_SetItem(t, i, PyLong_FromLong(acc[i])) < 0) {
            Py_DECREF(t);
            return NULL;
        }
    return Py_BuildValue("(OiiN)", r.read_mostly ? Py_True : Py_False, r.preferred, r.last_prefetch, t);
}

/* A copy between a host buffer and device memory: memcpy_htod(dst, src_buffer,
   stream=None, async=False) when to_dev, else memcpy_dtoh(dst_buffer, src, ...). */
static PyObject *memcpy_host(PyObject *args, bool to_dev) {
    PyObject *dst, *src, *so = Py_None;
    int async = 0;
    if (!PyArg_ParseTuple(args, "OO|Op", &dst, &src, &so, &async)) return NULL;
    cuk_devptr d;
    cuk_stream *s;
    if (devptr_of(to_dev ? dst : src, &d) < 0 || stream_of(so, &s) < 0) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(to_dev ? src : dst, &b, to_dev ? PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    cuk_status st = CUK_OK;
    size_t n = (size_t)b.len;
    if (n) {
        Py_BEGIN_ALLOW_THREADS
        if (to_dev) st = async ? cuk_memcpy_htod_async(d, b.buf, n, s) : cuk_memcpy_htod(d, b.buf, n);
        else st = async ? cuk_memcpy_dtoh_async(b.buf, d, n, s) : cuk_memcpy_dtoh(b.buf, d, n);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&b);
    if (st) return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_memcpy_htod(PyObject *m, PyObject *args) {
    (void)m;
    return memcpy_host(args, true);
}

static PyObject *py_memcpy_dtoh(PyObject *m, PyObject *args) {
    (void)m;
    return memcpy_host(args, false);
}

/* memcpy_dtod(dst, src, nbytes, stream=None, async=False) */
static PyObject *py_memcpy_dtod(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *dst, *src, *so = Py_None;
    Py_ssize_t n;
    int async = 0;
    if (!PyArg_ParseTuple(args, "OOn|Op", &dst, &src, &n, &so, &async)) return NULL;
    cuk_devptr d, sp;
    cuk_stream *s;
    if (devptr_of(dst, &d) < 0 || devptr_of(src, &sp) < 0 || stream_of(so, &s) < 0) return NULL;
    if (n) CHECK(async ? cuk_memcpy_dtod_async(d, sp, (size_t)n, s) : cuk_memcpy_dtod(d, sp, (size_t)n));
    Py_RETURN_NONE;
}
/* memset_d8(dst, value, nbytes, stream=None) */
static PyObject *py_memset_d8(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *dst, *so = Py_None;
    unsigned char v;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Obn|O", &dst, &v, &n, &so)) return NULL;
    cuk_devptr d;
    cuk_stream *s;
    if (devptr_of(dst, &d) < 0 || stream_of(so, &s) < 0) return NULL;
    if (n) CHECK(cuk_memset_d8(d, v, (size_t)n, s));
    Py_RETURN_NONE;
}

/* memset_pattern(dst, pattern_bytes, nbytes, stream=None) */
static PyObject *py_memset_pattern(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *dst, *so = Py_None;
    Py_buffer pat;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Oy*n|O", &dst, &pat, &n, &so)) return NULL;
    cuk_devptr d;
    cuk_stream *s;
    cuk_status st = CUK_OK;
    if (devptr_of(dst, &d) < 0 || stream_of(so, &s) < 0) {
        PyBuffer_Release(&pat);
        return NULL;
    }
    if (n < 0) {
        PyBuffer_Release(&pat);
        return PyErr_Format(PyExc_ValueError, "memset_pattern: negative size");
    }
    st = cuk_memset_pattern(d, pat.buf, (int)pat.len, (size_t)n, s);
    PyBuffer_Release(&pat);
    if (st) return raise_status(st);
    Py_RETURN_NONE;
}

static PyMethodDef memory_funcs[] = {
    {"host_alloc", py_host_alloc, METH_O, "host_alloc(nbytes) -> pinned buffer"},
    {"mem_alloc", py_mem_alloc, METH_O, "mem_alloc(nbytes) -> DeviceAllocation"},
    {"mem_free", py_mem_free, METH_O, NULL},
    {"mem_alloc_on", py_mem_alloc_on, METH_VARARGS, "mem_alloc_on(nbytes, stream=None) -> int"},
    {"managed_alloc", py_managed_alloc, METH_O, "managed_alloc(nbytes) -> int"},
    {"managed_free", py_managed_free, METH_O, NULL},
    {"mem_advise", py_mem_advise, METH_VARARGS, "mem_advise(ptr, nbytes, advice, location)"},
    {"mem_prefetch", py_mem_prefetch, METH_VARARGS, "mem_prefetch(ptr, nbytes, location, stream=None)"},
    {"mem_range", py_mem_range, METH_VARARGS, "mem_range(ptr, nbytes) -> (read_mostly, preferred, last_prefetch, accessed_by)"},
    {"mem_info", py_mem_info, METH_NOARGS, "(free, total) bytes"},
    {"mem_stats", py_mem_stats, METH_NOARGS, NULL},
    {"mem_trim", py_mem_trim, METH_NOARGS, NULL},
    {"memcpy_htod", py_memcpy_htod, METH_VARARGS, NULL},
    {"memcpy_dtoh", py_memcpy_dtoh, METH_VARARGS, NULL},
    {"memcpy_dtod", py_memcpy_dtod, METH_VARARGS, NULL},
    {"memset_d8", py_memset_d8, METH_VARARGS, NULL},
    {"memset_pattern", py_memset_pattern, METH_VARARGS, "memset_pattern(dst, pattern, nbytes, stream=None)"},
    {NULL, NULL, 0, NULL}};

int memory_init(PyObject *mod) {
    if (!(Pinned_Type = make_type(mod, &pinned_spec, "PinnedBuffer"))) return -1;
    if (!(Alloc_Type = make_type(mod, &alloc_spec, "DeviceAllocation"))) return -1;
    return PyModule_AddFunctions(mod, memory_funcs);
}
