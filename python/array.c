/* Arrays: DeviceArray (device memory described inline by a cuk_view), HostBuf (host
   results handed to NumPy), and the two ways arrays cross to and from other libraries,
   the CUDA array interface and DLPack. */
#include "_cuk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PyTypeObject *DeviceArray_Type;
static PyObject *dl_stream_args, *dl_stream_kw; /* (), {"stream": 1}: __dlpack__'s arguments for CUDA producers */

/* ---- HostBuf: a host cuk_array exported through the buffer protocol -------------------------- */

typedef struct {
    PyObject_HEAD
    cuk_array *arr;
    Py_ssize_t shape[CUK_MAX_RANK], strides[CUK_MAX_RANK];
} HostBuf;
static PyTypeObject *HostBuf_Type;

static int hostbuf_getbuffer(PyObject *self, Py_buffer *v, int flags) {
    HostBuf *h = (HostBuf *)self;
    cuk_dtype dt = cuk_array_dtype(h->arr);
    int rank = cuk_array_rank(h->arr);
    Py_ssize_t isz = (Py_ssize_t)cuk_dtype_size(dt);
    v->buf = cuk_array_host_data(h->arr);
    v->obj = Py_NewRef(self);
    v->len = (Py_ssize_t)cuk_array_nbytes(h->arr);
    v->readonly = 0;
    v->itemsize = isz;
    v->format = (flags & PyBUF_FORMAT) ? (char *)buffmt[dt] : NULL;
    v->ndim = rank;
    Py_ssize_t st = isz;
    for (int k = rank - 1; k >= 0; k--) {
        h->shape[k] = (Py_ssize_t)cuk_array_shape(h->arr)[k];
        h->strides[k] = st;
        st *= h->shape[k];
    }
    v->shape = (flags & PyBUF_ND) ? h->shape : NULL;
    v->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? h->strides : NULL;
    v->suboffsets = NULL;
    v->internal = NULL;
    return 0;
}
static void hostbuf_dealloc(PyObject *self) {
    cuk_array_free(((HostBuf *)self)->arr);
    heap_free(self);
}
static PyType_Slot hostbuf_slots[] = {{Py_bf_getbuffer, hostbuf_getbuffer}, {Py_tp_dealloc, hostbuf_dealloc}, {0, 0}};
static PyType_Spec hostbuf_spec = {"cuk._cuk.HostBuf", sizeof(HostBuf), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                   hostbuf_slots};

PyObject *numpy_from_host(cuk_array *a, bool scalar_for_rank0) {
    PyObject *bf16 = NULL;
    if (need_numpy() < 0 || (cuk_array_dtype(a) == CUK_BF16 && !(bf16 = bf16_numpy_dtype("the array")))) {
        cuk_array_free(a);
        return NULL;
    }
    HostBuf *h = PyObject_New(HostBuf, HostBuf_Type);
    if (!h) {
        cuk_array_free(a);
        return NULL;
    }
    h->arr = a;
    PyObject *r = PyObject_CallFunctionObjArgs(np_asarray, (PyObject *)h, NULL);
    Py_DECREF(h);
    if (r && bf16) {
        /* the bits came as uint16 (buffmt): view them as bfloat16 */
        PyObject *b = PyObject_CallMethod(r, "view", "O", bf16);
        Py_DECREF(r);
        r = b;
    }
    if (r && scalar_for_rank0 && cuk_array_rank(a) == 0) {
        PyObject *e = PyTuple_New(0);
        PyObject *s = e ? PyObject_GetItem(r, e) : NULL;
        Py_XDECREF(e);
        Py_DECREF(r);
        r = s;
    }
    return r;
}

/* ---- DeviceArray: a dense array in device memory ------------------------------------------- */

/* d's pending work is now on stream cs. On another library's stream, which it may
   destroy first, an event recorded there (d->ready) stands for that work, so that later
   waits need not name the stream; elsewhere the handle in d->stream does. */
static cuk_status da_on_stream(DeviceArray *d, cuk_stream *cs) {
    d->stream = cuk_stream_handle(cs);
    if (!cuk_stream_is_foreign(cs)) {
        if (d->ready) cuk_event_destroy(d->ready);
        d->ready = NULL;
        return CUK_OK;
    }
    cuk_status s = d->ready ? CUK_OK : cuk_event_create(&d->ready);
    return s ? s : cuk_event_record(d->ready, cs);
}

/* Makes the stream `waiter` (a raw handle; 0: none) wait, on the device, for d's work. */
static cuk_status da_wait(const DeviceArray *d, uintptr_t waiter) {
    if (!waiter || waiter == d->stream) return CUK_OK;
    return d->ready ? cuk_stream_wait_event_raw(waiter, d->ready) : cuk_stream_wait_raw(waiter, d->stream);
}

PyObject *devarray_new(const cuk_view *v, bool owns, PyObject *base) {
    DeviceArray *d = PyObject_New(DeviceArray, DeviceArray_Type);
    if (!d) {
        if (owns && v->dev) cuk_mem_free(v->dev);
        return NULL;
    }
    d->v = *v;
    d->v.place = CUK_ON_DEVICE;
    d->v.data = NULL;
    d->owns = owns && v->dev;
    d->base = Py_XNewRef(base);
    d->weakrefs = NULL;
    d->ready = NULL;
    cuk_status s = da_on_stream(d, cuk_call_stream_get());
    if (s) {
        Py_DECREF(d);
        return raise_status(s);
    }
    return (PyObject *)d;
}

static void devarray_dealloc(PyObject *self) {
    DeviceArray *d = (DeviceArray *)self;
    if (d->weakrefs) PyObject_ClearWeakRefs(self);
    if (d->owns) cuk_mem_free(d->v.dev);
    if (d->ready) cuk_event_destroy(d->ready);
    Py_XDECREF(d->base);
    heap_free(self);
}

static PyObject *devarray_shape(PyObject *self, void *c) {
    (void)c;
    return shape_tuple(DA(self)->rank, DA(self)->shape);
}
static PyObject *devarray_dtype(PyObject *self, void *c) {
    (void)c;
    return PyUnicode_FromString(np_name[DA(self)->dtype]);
}
static PyObject *devarray_ptr(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong(DA(self)->dev);
}
static PyObject *devarray_nbytes(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(view_nbytes(DA(self)));
}
static PyObject *devarray_size(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromLongLong(view_size(DA(self)));
}
static PyObject *devarray_base(PyObject *self, void *c) {
    (void)c;
    DeviceArray *d = (DeviceArray *)self;
    return Py_NewRef(d->base ? d->base : Py_None);
}
static PyObject *devarray_cai(PyObject *self, void *c) {
    (void)c;
    const cuk_view *v = DA(self);
    PyObject *shape = shape_tuple(v->rank, v->shape);
    if (!shape) return NULL;
    /* Version 3: strides None (C order), and the stream cuk's work on the array may still
       be queued on: the one the call that made it ran on (1: the legacy default stream).
       A consumer on another stream must wait for it (the spec asks a producer with
       pending work to name its stream). */
    return Py_BuildValue("{s:N,s:s,s:(K,O),s:i,s:O,s:[(s,s)],s:K}", "shape", shape, "typestr", typestr[v->dtype], "data",
                         view_size(v) ? (unsigned long long)v->dev : 0ULL, Py_False, "version", 3, "strides", Py_None,
                         "descr", "", typestr[v->dtype], "stream", (unsigned long long)((DeviceArray *)self)->stream);
}

/* int(a) is the device pointer (PyCUDA's convention for device memory, which kernels and
   copies take); float(a), bool(a) and a.item() are the value of a one-element array, as in
   NumPy, read after the array's pending work. */
static PyObject *devarray_int(PyObject *self) { return PyLong_FromUnsignedLongLong(DA(self)->dev); }

static PyObject *devarray_item(PyObject *self, PyObject *u) {
    (void)u;
    const cuk_view *v = DA(self);
    if (view_size(v) != 1) {
        PyObject *shape = shape_tuple(v->rank, v->shape);
        if (shape)
            PyErr_Format(PyExc_TypeError,
                         "only a DeviceArray of one element converts to a Python scalar; this one has shape %R: use .get() "
                         "for a NumPy array",
                         shape);
        Py_XDECREF(shape);
        return NULL;
    }
    PyObject *h = PyObject_CallMethod(self, "get", NULL);
    if (!h) return NULL;
    PyObject *r = PyObject_CallMethod(h, "item", NULL);
    Py_DECREF(h);
    return r;
}
static PyObject *devarray_float(PyObject *self) {
    PyObject *x = devarray_item(self, NULL);
    if (!x) return NULL;
    PyObject *r = PyNumber_Float(x); /* a complex value raises, as NumPy */
    Py_DECREF(x);
    return r;
}
static int devarray_bool(PyObject *self) {
    if (view_size(DA(self)) != 1) {
        PyErr_SetString(PyExc_ValueError, "the truth value of a DeviceArray of other than one element is ambiguous: use "
                                          ".get() and NumPy's any() or all()");
        return -1;
    }
    PyObject *x = devarray_item(self, NULL);
    if (!x) return -1;
    int r = PyObject_IsTrue(x);
    Py_DECREF(x);
    return r;
}

/* Copies between the host and a DeviceArray on this thread's call stream, after the work
   queued on the array's own stream (an event wait when they differ). On the legacy
   default stream they are the runtime's synchronous ones (pinned staging for large
   pageable buffers); on another stream asynchronous copies there, waited for when the
   host needs the bytes. A write leaves the array on the call stream. */
static cuk_status da_copy(DeviceArray *d, void *host, size_t nb, bool to_host) {
    cuk_stream *cs = cuk_call_stream_get();
    uintptr_t h = cuk_stream_handle(cs);
    cuk_status s = da_wait(d, h);
    if (s || !nb) return s;
    s = to_host ? cuk_memcpy_dtoh_on(host, d->v.dev, nb, cs) : cuk_memcpy_htod_on(d->v.dev, host, nb, cs);
    if (!s && !to_host) s = da_on_stream(d, cs);
    return s;
}

/* get(out=None): a NumPy copy (into out if given, which must match). */
static PyObject *devarray_get(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"out", NULL};
    PyObject *out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwl, &out)) return NULL;
    const cuk_view *v = DA(self);
    size_t nb = view_nbytes(v);
    cuk_status s = CUK_OK;
    if (out != Py_None) {
        Py_buffer b;
        if (PyObject_GetBuffer(out, &b, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
        if ((size_t)b.len != nb) {
            PyBuffer_Release(&b);
            return PyErr_Format(PyExc_ValueError, "get(out=...): out has %zd bytes, the array %zu", b.len, nb);
        }
        Py_BEGIN_ALLOW_THREADS s = da_copy((DeviceArray *)self, b.buf, nb, true);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&b);
        if (s) return raise_status(s);
        return Py_NewRef(out);
    }
    cuk_array *h;
    CHECK(cuk_array_new(&h, v->dtype, v->rank, v->shape, CUK_ON_HOST));
    Py_BEGIN_ALLOW_THREADS s = da_copy((DeviceArray *)self, cuk_array_host_data(h), nb, true);
    Py_END_ALLOW_THREADS
    if (s) {
        cuk_array_free(h);
        return raise_status(s);
    }
    return numpy_from_host(h, false);
}

/* set(host): copies a C-contiguous buffer of the same byte size in. */
static PyObject *devarray_set(PyObject *self, PyObject *src) {
    const cuk_view *v = DA(self);
    Py_buffer b;
    if (PyObject_GetBuffer(src, &b, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    size_t nb = view_nbytes(v);
    if ((size_t)b.len != nb) {
        PyBuffer_Release(&b);
        return PyErr_Format(PyExc_ValueError, "set(): the array has %zu bytes but the source %zd", nb, b.len);
    }
    cuk_status s;
    Py_BEGIN_ALLOW_THREADS s = da_copy((DeviceArray *)self, b.buf, nb, false);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    if (s) return raise_status(s);
    Py_RETURN_NONE;
}

static PyObject *devarray_repr(PyObject *self) {
    const cuk_view *v = DA(self);
    PyObject *sh = shape_tuple(v->rank, v->shape);
    if (!sh) return NULL;
    char at[32]; /* PyUnicode_FromFormat has no %llx before 3.12 */
    snprintf(at, sizeof at, "0x%llx", (unsigned long long)v->dev);
    PyObject *r = PyUnicode_FromFormat("<cuk.DeviceArray shape=%R dtype=%s at %s>", sh, np_name[v->dtype], at);
    Py_DECREF(sh);
    return r;
}

/* ---- DLPack export ------------------------------------------------------------------------- */

/* DLPack's type codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5 (bits:
   the whole number's, 64 for a complex64), kDLBool 6. */
static const DLDataType dl_dtype[CUK_DTYPE_COUNT] = {{6, 8, 1},  {0, 32, 1}, {0, 64, 1}, {1, 32, 1},  {1, 64, 1},
                                                      {2, 32, 1}, {2, 64, 1}, {0, 8, 1},  {0, 16, 1},  {1, 8, 1},
                                                      {1, 16, 1}, {2, 16, 1}, {4, 16, 1}, {5, 64, 1}, {5, 128, 1}};

/* An exported tensor: the DLManagedTensor, its shape, and the DeviceArray it keeps alive. */
typedef struct {
    DLManagedTensor t;
    int64_t shape[CUK_MAX_RANK];
} DLExport;

/* The consumer is done with the tensor; it may call this from any thread. */
static void dl_deleter(DLManagedTensor *t) {
    PyObject *owner = t->manager_ctx;
    if (owner && Py_IsInitialized()) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_DECREF(owner);
        PyGILState_Release(g);
    }
    free(t);
}
/* A capsule nobody consumed still owns its tensor. */
static void dl_capsule_destructor(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, "dltensor")) return; /* consumed: renamed "used_dltensor" */
    DLManagedTensor *t = PyCapsule_GetPointer(cap, "dltensor");
    if (t && t->deleter) t->deleter(t);
}

/* A DLPack capsule sharing the memory. */
static PyObject *devarray_dlpack_capsule(PyObject *self) {
    const cuk_view *v = DA(self);
    int dev = 0;
    if (cuk_device_current(&dev) != CUK_OK) dev = 0;
    DLExport *e = calloc(1, sizeof *e);
    if (!e) return PyErr_NoMemory();
    for (int k = 0; k < v->rank; k++) e->shape[k] = v->shape[k];
    e->t.dl_tensor.data = (void *)(uintptr_t)v->dev;
    e->t.dl_tensor.device.device_type = kDLCUDA;
    e->t.dl_tensor.device.device_id = dev;
    e->t.dl_tensor.ndim = v->rank;
    e->t.dl_tensor.dtype = dl_dtype[v->dtype];
    e->t.dl_tensor.shape = e->shape;
    e->t.dl_tensor.strides = NULL; /* C order */
    e->t.manager_ctx = Py_NewRef(self);
    e->t.deleter = dl_deleter;
    PyObject *cap = PyCapsule_New(&e->t, "dltensor", dl_capsule_destructor);
    if (!cap) {
        Py_DECREF(self);
        free(e);
    }
    return cap;
}

/* A stream handle argument (_cuk.h says which values mean what). */
int stream_handle_arg(PyObject *o, bool dlpack, uintptr_t *h) {
    *h = 0;
    if (!o || o == Py_None) return 0;
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "a stream must be an int (a CUDA stream handle) or None, not %R", o);
        return -1;
    }
    int ovf;
    long long v = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (dlpack && v == -1 && !ovf) return 0; /* "producer must not synchronise" */
    if (ovf > 0) {
        *h = (uintptr_t)PyLong_AsUnsignedLongLong(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (ovf < 0 || v < 0) {
        PyErr_Format(PyExc_ValueError, "stream %R is not a CUDA stream handle", o);
        return -1;
    }
    if (v == 0) {
        PyErr_SetString(PyExc_ValueError, "stream 0 is ambiguous (legacy or per-thread default stream?) and the CUDA array "
                                          "interface and DLPack disallow it: pass 1 (legacy default stream), 2 (per-thread "
                                          "default stream) or a stream handle");
        return -1;
    }
    *h = (uintptr_t)v;
    return 0;
}

/* Makes the consumer's stream h wait for cuk's work on stream `producer` (a raw handle):
   an event wait on the device, nothing when h is that stream. */
static int order_after_cuk(uintptr_t h, uintptr_t producer) {
    if (!h || h == producer) return 0;
    cuk_status s = cuk_stream_wait_raw(h, producer);
    if (s) {
        raise_status(s);
        return -1;
    }
    return 0;
}

/* __dlpack__(stream=None, max_version=None, dl_device=None, copy=None): the DLPack
   protocol's producer side. The consumer names the stream it will use (None and 1: the
   legacy default stream, where cuk's work already is; -1: no synchronisation); any other
   stream is made to wait for cuk's pending work. max_version, dl_device and copy ask for
   nothing cuk does differently: the capsule is the unversioned kind, on the array's
   device, without a copy. */
static PyObject *devarray_dlpack(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *stream = PyTuple_Size(args) > 0 ? PyTuple_GetItem(args, 0) : NULL;
    if (kw) {
        PyObject *ks = PyDict_GetItemString(kw, "stream"); /* borrowed */
        if (ks) stream = ks;
    }
    uintptr_t h;
    if (stream_handle_arg(stream, true, &h) < 0) return NULL;
    cuk_status s = da_wait((DeviceArray *)self, h);
    if (s) return raise_status(s);
    return devarray_dlpack_capsule(self);
}

/* stream_wait_cuk(stream): makes another library's stream (a handle, with DLPack's
   conventions) wait for the work cuk has queued; for results handed to CuPy. */
static PyObject *py_stream_wait_cuk(PyObject *m, PyObject *o) {
    (void)m;
    uintptr_t h;
    if (stream_handle_arg(o, true, &h) < 0 || order_after_cuk(h, call_stream_handle()) < 0) return NULL;
    Py_RETURN_NONE;
}
static PyObject *devarray_dlpack_device(PyObject *self, PyObject *u) {
    (void)self;
    (void)u;
    int dev = 0;
    if (cuk_device_current(&dev) != CUK_OK) dev = 0;
    return Py_BuildValue("(ii)", kDLCUDA, dev);
}

static PyMethodDef devarray_methods[] = {
    {"get", (PyCFunction)(void (*)(void))devarray_get, METH_VARARGS | METH_KEYWORDS, "copy to a NumPy array"},
    {"set", devarray_set, METH_O, "copy from a host buffer of the same size"},
    {"__dlpack__", (PyCFunction)(void (*)(void))devarray_dlpack, METH_VARARGS | METH_KEYWORDS,
     "a DLPack capsule sharing the memory"},
    {"__dlpack_device__", devarray_dlpack_device, METH_NOARGS, "(kDLCUDA, device index)"},
    {"item", devarray_item, METH_NOARGS, "the value of a one-element array, as a Python scalar"},
    {NULL, NULL, 0, NULL}};
static PyMemberDef devarray_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(DeviceArray, weakrefs), READONLY, NULL}, {NULL, 0, 0, 0, NULL}};
static PyGetSetDef devarray_getset[] = {
    {"shape", devarray_shape, NULL, "the shape (a tuple)", NULL},
    {"dtype", devarray_dtype, NULL, "the NumPy dtype name", NULL},
    {"ptr", devarray_ptr, NULL, "the device pointer", NULL},
    {"gpudata", devarray_ptr, NULL, "the device pointer (PyCUDA's name)", NULL},
    {"nbytes", devarray_nbytes, NULL, "bytes", NULL},
    {"size", devarray_size, NULL, "elements", NULL},
    {"base", devarray_base, NULL, "the object owning the memory, for views and wrapped memory", NULL},
    {"__cuda_array_interface__", devarray_cai, NULL, "CUDA array interface, version 3", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot devarray_slots[] = {{Py_tp_dealloc, devarray_dealloc},
                                       {Py_tp_getset, devarray_getset},
                                       {Py_tp_methods, devarray_methods},
                                       {Py_tp_members, devarray_members},
                                       {Py_tp_repr, devarray_repr},
                                       {Py_nb_int, devarray_int},
                                       {Py_nb_index, devarray_int},
                                       {Py_nb_float, devarray_float},
                                       {Py_nb_bool, devarray_bool},
                                       {Py_tp_doc, "A dense, C-ordered array in device memory."},
                                       {0, 0}};
static PyType_Spec devarray_spec = {"cuk.DeviceArray", sizeof(DeviceArray), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                    devarray_slots};

/* A new DeviceArray with a pool block of its own: zeroed (zero), a copy of host data
   (data), or uninitialised. */
static PyObject *devarray_alloc(cuk_dtype dt, int rank, const int64_t *shape, const void *data, bool zero) {
    cuk_view v;
    v.dtype = dt;
    v.rank = rank;
    v.place = CUK_ON_DEVICE;
    v.data = NULL;
    v.dev = 0;
    uint64_t n = 1;
    for (int k = 0; k < rank; k++) {
        if (shape[k] < 0) return PyErr_Format(PyExc_ValueError, "axis %d has negative size %lld", k, (long long)shape[k]);
        if (shape[k] && n > (UINT64_MAX >> 8) / (uint64_t)shape[k]) return PyErr_Format(PyExc_ValueError, "the shape is too large");
        n *= (uint64_t)shape[k];
        v.shape[k] = shape[k];
    }
    size_t nb = (size_t)n * cuk_dtype_size(dt);
    if (nb) {
        cuk_status s;
        Py_BEGIN_ALLOW_THREADS
        cuk_stream *cs = cuk_call_stream_get(); /* the array is made on the call stream */
        s = cuk_mem_alloc_on(&v.dev, nb, cs);
        if (!s && data) s = cuk_memcpy_htod_on(v.dev, data, nb, cs);
        else if (!s && zero) s = cuk_memset_d8(v.dev, 0, nb, cs);
        if (s && v.dev) cuk_mem_free(v.dev);
        Py_END_ALLOW_THREADS
        if (s) return raise_status(s);
    }
    return devarray_new(&v, true, NULL);
}

/* device_empty(shape, dtype, zero=False) */
static PyObject *py_device_empty(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *sh, *dto;
    int zero = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &sh, &dto, &zero)) return NULL;
    int rank;
    int64_t shape[CUK_MAX_RANK];
    cuk_dtype dt;
    if (shape_arg(sh, &rank, shape) < 0 || dtype_arg(dto, &dt) < 0) return NULL;
    return devarray_alloc(dt, rank, shape, NULL, zero); /* empty() is uninitialised, as in PyCUDA */
}

/* device_wrap(ptr, shape, dtype, base): a view of memory someone else owns. */
static PyObject *py_device_wrap(PyObject *m, PyObject *args) {
    (void)m;
    unsigned long long ptr;
    PyObject *sh, *dto, *base;
    if (!PyArg_ParseTuple(args, "KOOO", &ptr, &sh, &dto, &base)) return NULL;
    int rank;
    int64_t shape[CUK_MAX_RANK];
    cuk_dtype dt;
    if (shape_arg(sh, &rank, shape) < 0 || dtype_arg(dto, &dt) < 0) return NULL;
    cuk_view v;
    v.dtype = dt;
    v.rank = rank;
    v.place = CUK_ON_DEVICE;
    for (int k = 0; k < rank; k++) {
        if (shape[k] < 0) return PyErr_Format(PyExc_ValueError, "axis %d has negative size %lld", k, (long long)shape[k]);
        v.shape[k] = shape[k];
    }
    v.data = NULL;
    v.dev = ptr;
    if (!ptr && view_size(&v)) return PyErr_Format(ArgumentError, "device_wrap: NULL device pointer");
    return devarray_new(&v, false, base == Py_None ? NULL : base);
}

int buffer_dtype(const Py_buffer *b, const char *what, cuk_dtype *dt) {
    /* no format: unsigned bytes (an itemsize of more is bytes of unknown meaning) */
    int d = b->format ? dtype_of_format(b->format, b->itemsize) : b->itemsize == 1 ? CUK_U8 : -1;
    if (d < 0) {
        PyErr_Format(ArgumentError, "%s: arrays of format '%s' (%zd-byte items) are not supported; cuk has " DTYPE_LIST,
                     what, b->format ? b->format : "B", b->itemsize);
        return -1;
    }
    *dt = (cuk_dtype)d;
    return 0;
}

/* to_device(host): a device copy of a buffer (a NumPy array). */
static PyObject *py_to_device(PyObject *m, PyObject *o) {
    (void)m;
    Py_buffer b;
    PyObject *c = NULL;
    bool bf16 = false;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        bf16 = is_numpy_bf16(o);
        if (!(c = bf16 ? bf16_bits(o) : numpy_contiguous(o))) return NULL;
        if (PyObject_GetBuffer(c, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            Py_DECREF(c);
            return NULL;
        }
    }
    cuk_dtype dt = CUK_BF16;
    int64_t shape[CUK_MAX_RANK];
    PyObject *r = NULL;
    if (b.ndim > CUK_MAX_RANK) PyErr_Format(PyExc_ValueError, "at most %d dimensions", CUK_MAX_RANK);
    else if (bf16 || buffer_dtype(&b, "to_device", &dt) == 0) {
        for (int k = 0; k < b.ndim; k++) shape[k] = b.shape ? b.shape[k] : b.len / b.itemsize;
        r = devarray_alloc(dt, b.ndim, shape, b.buf, false);
    }
    PyBuffer_Release(&b);
    Py_XDECREF(c);
    return r;
}

/* ---- other libraries' arrays as arguments ---------------------------------------------------- */

/* Parses a __cuda_array_interface__ dict into a device view. */
int cai_arg(const char *fn, const cuk_param_info *pi, PyObject *cai, cuk_view *v) {
    const char *who = pi->name;
    if (!PyDict_Check(cai)) {
        PyErr_Format(ArgumentError, "%s(): parameter '%s': __cuda_array_interface__ is not a dict", fn, who);
        return -1;
    }
    PyObject *shape = PyDict_GetItemString(cai, "shape");
    PyObject *ts = PyDict_GetItemString(cai, "typestr");
    PyObject *data = PyDict_GetItemString(cai, "data");
    PyObject *strides = PyDict_GetItemString(cai, "strides");
    if (!shape || !ts || !data || !PyTuple_Check(data) || PyTuple_Size(data) < 1) {
        PyErr_Format(ArgumentError, "%s(): parameter '%s': malformed __cuda_array_interface__", fn, who);
        return -1;
    }
    const char *tss = PyUnicode_Check(ts) ? PyUnicode_AsUTF8AndSize(ts, NULL) : NULL;
    int d = dtype_of_typestr(tss ? tss : "", pi->dtype == CUK_BF16);
    if (d < 0) {
        PyErr_Clear();
        PyErr_Format(ArgumentError, "%s(): parameter '%s': dtype %S is not supported by cuk", fn, who, ts);
        return -1;
    }
    int rank;
    if (shape_arg(shape, &rank, v->shape) < 0) return -1;
    if (strides && strides != Py_None) {
        /* C-contiguous strides are allowed spelled out. */
        int64_t want = (int64_t)cuk_dtype_size((cuk_dtype)d);
        PyObject *t = PySequence_Tuple(strides);
        if (!t) return -1;
        bool ok = PyTuple_Size(t) == rank;
        for (int k = rank - 1; ok && k >= 0; k--) {
            if (v->shape[k] > 1 && PyLong_AsLongLong(PyTuple_GetItem(t, k)) != want) ok = false;
            want *= v->shape[k];
        }
        Py_DECREF(t);
        if (PyErr_Occurred()) return -1;
        if (!ok) {
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is not C-contiguous; pass a contiguous copy", fn, who);
            return -1;
        }
    }
    unsigned long long ptr = PyLong_AsUnsignedLongLong(PyTuple_GetItem(data, 0));
    if (PyErr_Occurred()) return -1;
    if (d != (int)pi->dtype) return wrong_dtype(fn, pi, (cuk_dtype)d);
    /* Version 3's stream: where the producer may still have work on the data. cuk's work
       goes on the call's stream, so any other stream gets an event that the call's stream
       waits for (an ordering on the device; the host does not block). Absent or None:
       nothing to wait for. */
    PyObject *st = PyDict_GetItemString(cai, "stream");
    uintptr_t h;
    if (stream_handle_arg(st, false, &h) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(ArgumentError, "%s(): parameter '%s': __cuda_array_interface__ has stream %R: %S", fn, who, st,
                     value ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    uintptr_t mine = call_stream_handle();
    if (h && h != mine) {
        cuk_status s = cuk_stream_wait_raw(mine, h);
        if (s) {
            raise_status(s);
            return -1;
        }
    }
    v->dtype = (cuk_dtype)d;
    v->rank = rank;
    v->place = CUK_ON_DEVICE;
    v->data = NULL;
    v->dev = ptr;
    return 0;
}

/* Whether o's __dlpack_device__ says CUDA device memory, where __dlpack__ takes a stream
   (a host tensor's producer accepts only stream=None). 0 or 1; -1 on error. */
static int dlpack_on_cuda(PyObject *o) {
    PyObject *meth = PyObject_GetAttr(o, s_dlpack_device);
    if (!meth) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    PyObject *dev = PyObject_CallNoArgs(meth);
    Py_DECREF(meth);
    if (!dev) return -1;
    long type = -1;
    PyObject *t = PySequence_Check(dev) && PySequence_Size(dev) == 2 ? PySequence_GetItem(dev, 0) : NULL;
    if (t) type = PyLong_AsLong(t);
    Py_XDECREF(t);
    Py_DECREF(dev);
    if (PyErr_Occurred()) return -1;
    return type == kDLCUDA || type == kDLCUDAManaged;
}

/* Takes a "dltensor" capsule an argument's producer made: the view of its tensor, held
   (h) until the call is done. */
static int dlpack_take(const char *fn, const cuk_param_info *pi, PyObject *cap, Held *h, cuk_view *v) {
    DLManagedTensor *t = PyCapsule_GetPointer(cap, "dltensor");
    if (!t) {
        Py_DECREF(cap);
        return -1;
    }
    /* We own it now: rename so the capsule's destructor leaves it to us. */
    PyCapsule_SetName(cap, "used_dltensor");
    h->dlcap = cap;
    h->dlm = t;
    DLTensor *x = &t->dl_tensor;
    int d = -1;
    for (int i = 0; i < CUK_DTYPE_COUNT && d < 0; i++)
        if (x->dtype.code == dl_dtype[i].code && x->dtype.bits == dl_dtype[i].bits && x->dtype.lanes == 1) d = i;
    if (d < 0 || x->ndim < 0 || x->ndim > CUK_MAX_RANK) {
        PyErr_Format(ArgumentError, "%s(): parameter '%s': this DLPack dtype/rank is not supported by cuk", fn, pi->name);
        return -1;
    }
    if (d != (int)pi->dtype) return wrong_dtype(fn, pi, (cuk_dtype)d);
    int64_t want = 1;
    for (int k = x->ndim - 1; x->strides && k >= 0; k--) {
        if (x->shape[k] > 1 && x->strides[k] != want) {
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is not C-contiguous; pass a contiguous copy", fn, pi->name);
            return -1;
        }
        want *= x->shape[k];
    }
    char *base = (char *)x->data + x->byte_offset;
    v->dtype = (cuk_dtype)d;
    v->rank = x->ndim;
    for (int k = 0; k < x->ndim; k++) v->shape[k] = x->shape[k];
    if (x->device.device_type == kDLCUDA || x->device.device_type == kDLCUDAManaged) {
        v->place = CUK_ON_DEVICE;
        v->data = NULL;
        v->dev = (cuk_devptr)(uintptr_t)base;
    } else if (x->device.device_type == kDLCPU || x->device.device_type == kDLCUDAHost) {
        v->place = CUK_ON_HOST;
        v->data = base;
        v->dev = 0;
    } else {
        PyErr_Format(ArgumentError, "%s(): parameter '%s': DLPack device type %d is not supported", fn, pi->name,
                     (int)x->device.device_type);
        return -1;
    }
    return 0;
}

int dlpack_arg(const char *fn, const cuk_param_info *pi, PyObject *o, Held *h, cuk_view *v) {
    /* DLPack's ordering: the consumer passes the stream it will use, and the producer
       makes that stream wait for its own pending work. cuk uses the call's stream (the
       legacy default one is 1: stream=None would mean the same, but some producers,
       PyTorch among them, then do nothing). */
    int cuda = dlpack_on_cuda(o);
    if (cuda < 0) return -1;
    PyObject *meth = PyObject_GetAttr(o, s_dlpack);
    if (!meth) return -1;
    uintptr_t mine = call_stream_handle();
    PyObject *kw = !cuda || mine == CUK_STREAM_LEGACY ? Py_NewRef(dl_stream_kw)
                                                       : Py_BuildValue("{s:K}", "stream", (unsigned long long)mine);
    PyObject *cap = !kw ? NULL : cuda ? PyObject_Call(meth, dl_stream_args, kw) : PyObject_CallNoArgs(meth);
    Py_XDECREF(kw);
    Py_DECREF(meth);
    if (!cap) return -1;
    return dlpack_take(fn, pi, cap, h, v);
}

/* PyTorch's own functions for its tensors, looked up once: torch.utils.dlpack.to_dlpack
   and torch._C._cuda_getCurrentRawStream. NULL where this PyTorch lacks them. */
static PyObject *torch_to_dlpack, *torch_raw_stream;
static int torch_looked_up;

bool torch_fast_path(void) {
    if (!torch_looked_up) {
        torch_looked_up = 1;
        PyObject *dl = PyImport_ImportModule("torch.utils.dlpack");
        PyObject *c = dl ? PyImport_ImportModule("torch._C") : NULL;
        torch_to_dlpack = dl ? PyObject_GetAttrString(dl, "to_dlpack") : NULL;
        torch_raw_stream = c ? PyObject_GetAttrString(c, "_cuda_getCurrentRawStream") : NULL;
        Py_XDECREF(dl);
        Py_XDECREF(c);
        PyErr_Clear();
        if (!torch_to_dlpack || !torch_raw_stream) {
            Py_CLEAR(torch_to_dlpack);
            Py_CLEAR(torch_raw_stream);
        }
    }
    return torch_to_dlpack != NULL;
}

/* The device whose PyTorch stream this thread's call has ordered already (torch_arg):
   the call's other tensors on it need no second query (torch_call_begin resets it; the
   current stream is per thread in PyTorch, hence per thread here). */
static _Thread_local struct {
    bool valid;
    int dev;
} torch_ordered;

void torch_call_begin(void) { torch_ordered.valid = false; }

/* A PyTorch tensor. Its __dlpack__(stream=1) orders PyTorch's current stream before
   cuk's, but in Python, at 20 us a call on an H100 (2026-11-25,
   bench/exp/torch_interop_cost.py: torch.cuda.default_stream() and current_stream() are
   7.6 us each); this does the same ordering in C: the capsule from to_dlpack, then
   PyTorch's current stream on the tensor's device, and when that is not the stream the
   call runs on (PyTorch's handle 0 is the legacy default stream), an event on it that
   the call's stream waits for on the device. Needs torch_fast_path(). */
int torch_arg(const char *fn, const cuk_param_info *pi, PyObject *o, Held *h, cuk_view *v) {
    PyObject *cap = PyObject_CallFunctionObjArgs(torch_to_dlpack, o, NULL);
    if (!cap) return -1;
    if (dlpack_take(fn, pi, cap, h, v) < 0) return -1;
    if (v->place != CUK_ON_DEVICE) return 0;
    int devid = h->dlm->dl_tensor.device.device_id;
    if (torch_ordered.valid && torch_ordered.dev == devid) return 0;
    PyObject *dev = PyLong_FromLong(devid);
    PyObject *st = dev ? PyObject_CallFunctionObjArgs(torch_raw_stream, dev, NULL) : NULL;
    Py_XDECREF(dev);
    if (!st) return -1;
    uintptr_t s = (uintptr_t)PyLong_AsUnsignedLongLong(st);
    Py_DECREF(st);
    if (PyErr_Occurred()) return -1;
    uintptr_t mine = call_stream_handle();
    if (!s) s = CUK_STREAM_LEGACY;
    if (s != mine) {
        cuk_status e = cuk_stream_wait_raw(mine, s);
        if (e) {
            raise_status(e);
            return -1;
        }
    }
    torch_ordered.valid = true;
    torch_ordered.dev = devid;
    return 0;
}

void held_release(Held *h) {
    if (h->has_buf) PyBuffer_Release(&h->buf);
    h->has_buf = false;
    Py_CLEAR(h->keep);
    if (h->dlm) {
        DLManagedTensor *t = h->dlm;
        if (t->deleter) t->deleter(t);
        h->dlm = NULL;
    }
    Py_CLEAR(h->dlcap);
}

static PyMethodDef array_funcs[] = {
    {"stream_wait_cuk", py_stream_wait_cuk, METH_O, "stream_wait_cuk(stream): makes a CUDA stream (a handle) wait for cuk's queued work"},
    {"device_empty", py_device_empty, METH_VARARGS, "device_empty(shape, dtype, zero=False) -> DeviceArray"},
    {"device_wrap", py_device_wrap, METH_VARARGS, "device_wrap(ptr, shape, dtype, base) -> DeviceArray (no copy)"},
    {"to_device", py_to_device, METH_O, "to_device(host_array) -> DeviceArray"},
    {NULL, NULL, 0, NULL}};

int array_init(PyObject *mod) {
    if (!(dl_stream_args = PyTuple_New(0)) || !(dl_stream_kw = Py_BuildValue("{s:i}", "stream", 1))) return -1;
    if (!(HostBuf_Type = make_type(mod, &hostbuf_spec, NULL))) return -1;
    if (!(DeviceArray_Type = make_type(mod, &devarray_spec, "DeviceArray"))) return -1;
    return PyModule_AddFunctions(mod, array_funcs);
}
