/* cuk._cuk: the CPython extension behind the cuk package (stable ABI, Python 3.11+):
   compiled programs and their calls, device arrays, raw CUDA modules and launches,
   streams, events, pinned memory and the driver calls cuk.driver wraps. */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <structmember.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cuk.h"
#include "api/cuk_program.h"

/* Py_TPFLAGS_HAVE_VECTORCALL and its calling convention are in the limited API from
   3.12 on, but the ABI (a tp_vectorcall_offset member, "__vectorcalloffset__" in the
   spec's members, the flag bit) has been the same since 3.8 and 3.11 honours it for heap
   types: spelled out here so that one abi3 build gets the fast call on 3.11 too. */
#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL (1UL << 11)
#endif
#define CUK_VECTORCALL_ARGUMENTS_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))
typedef PyObject *(*cuk_vectorcallfunc)(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* ---- exceptions ----------------------------------------------------------------------------- */

static PyObject *Error, *CompileError, *RunError, *ArgumentError, *DevMemoryError, *LogicError,
    *LaunchError, *NoDeviceError;

/* Raises the exception for a failed runtime call, with cuk_last_error()'s message. */
/* The object types are heap types (PyType_FromSpec, for abi3): instances are made and
   freed through the type's slots, and each instance holds a reference to its type. */
static PyObject *heap_alloc(PyTypeObject *tp) { return ((allocfunc)PyType_GetSlot(tp, Py_tp_alloc))(tp, 0); }
static void heap_free(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    ((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
    Py_DECREF(tp);
}

static PyObject *raise_status(cuk_status s) {
    const char *msg = cuk_last_error();
    if (!msg || !*msg) msg = cuk_status_name(s);
    PyObject *type = Error;
    switch ((int)s) {
    case CUK_ERR_COMPILE: type = CompileError; break;
    case CUK_ERR_RUNTIME: type = RunError; break;
    case CUK_ERR_INVALID: type = ArgumentError; break;
    case CUK_ERR_OUT_OF_MEMORY: type = DevMemoryError; break;
    case CUK_ERR_NOT_FOUND: type = LogicError; break;
    case CUK_ERR_DRIVER: type = LaunchError; break;
    case CUK_ERR_NO_DRIVER:
    case CUK_ERR_NO_DEVICE:
    case CUK_ERR_NO_NVRTC: type = NoDeviceError; break;
    default: break;
    }
    cuk_error_info info;
    bool located = (s == CUK_ERR_COMPILE || (int)s == CUK_ERR_RUNTIME) && cuk_program_error(&info) == CUK_OK;
    /* Diagnostics end with a newline; str(exception) reads better without it. */
    size_t len = strlen(msg);
    while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) len--;
    PyObject *exc = PyObject_CallFunction(type, "s#", msg, (Py_ssize_t)len);
    if (!exc) return NULL;
    if (type == CompileError || type == RunError) {
        PyObject *file = located && info.file[0] ? PyUnicode_FromString(info.file) : Py_NewRef(Py_None);
        PyObject *line = located && info.line ? PyLong_FromLong(info.line) : Py_NewRef(Py_None);
        PyObject *col = located && info.col ? PyLong_FromLong(info.col) : Py_NewRef(Py_None);
        PyObject *m = PyUnicode_FromString(located ? info.message : msg);
        if (file && line && col && m) {
            PyObject_SetAttrString(exc, "file", file);
            PyObject_SetAttrString(exc, "line", line);
            PyObject_SetAttrString(exc, "column", col);
            PyObject_SetAttrString(exc, "message", m);
        }
        Py_XDECREF(file);
        Py_XDECREF(line);
        Py_XDECREF(col);
        Py_XDECREF(m);
        if (PyErr_Occurred()) {
            Py_DECREF(exc);
            return NULL;
        }
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cuk_status s_ = (call);                                                                    \
        if (s_ != CUK_OK) return raise_status(s_);                                                 \
    } while (0)

/* ---- dtypes --------------------------------------------------------------------------------- */

static const char *const np_name[CUK_DTYPE_COUNT] = {"bool", "int32", "int64", "uint32", "uint64", "float32", "float64"};
static const char *const typestr[CUK_DTYPE_COUNT] = {"|b1", "<i4", "<i8", "<u4", "<u8", "<f4", "<f8"};
static const char *const buffmt[CUK_DTYPE_COUNT] = {"?", "i", "q", "I", "Q", "f", "d"};

/* The dtype of a struct-module format (a buffer's), or -1. */
static int dtype_of_format(const char *f, Py_ssize_t itemsize) {
    if (!f) return -1;
    if (*f == '@' || *f == '=' || *f == '<') f++;
    if (!f[0] || f[1]) return -1;
    switch (f[0]) {
    case '?': return CUK_BOOL;
    case 'i':
    case 'l':
    case 'q': return itemsize == 4 ? CUK_I32 : itemsize == 8 ? CUK_I64 : -1;
    case 'I':
    case 'L':
    case 'Q': return itemsize == 4 ? CUK_U32 : itemsize == 8 ? CUK_U64 : -1;
    case 'f': return itemsize == 4 ? CUK_F32 : -1;
    case 'd': return itemsize == 8 ? CUK_F64 : -1;
    default: return -1;
    }
}

/* The dtype of a __cuda_array_interface__ typestr ("<f4"), or -1. */
static int dtype_of_typestr(const char *t) {
    for (int i = 0; i < CUK_DTYPE_COUNT; i++)
        if (strcmp(t, typestr[i]) == 0 || (t[0] == '|' && strcmp(t + 1, typestr[i] + 1) == 0) ||
            (t[0] == '=' && strcmp(t + 1, typestr[i] + 1) == 0))
            return i;
    return -1;
}

/* A dtype from a Python value: a cuk dtype index, a name ("float32", "f32") or anything
   with .name (a NumPy dtype) or a type with a dtype (np.float32). */
static int dtype_arg(PyObject *o, cuk_dtype *dt) {
    if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v < 0 || v >= CUK_DTYPE_COUNT) {
            PyErr_SetString(PyExc_ValueError, "bad dtype index");
            return -1;
        }
        *dt = (cuk_dtype)v;
        return 0;
    }
    PyObject *name = NULL;
    if (PyUnicode_Check(o)) name = Py_NewRef(o);
    else {
        PyObject *d = PyObject_GetAttrString(o, "dtype"); /* np.float32 (a type) has none as str */
        if (d && !PyUnicode_Check(d) && PyObject_HasAttrString(d, "name")) name = PyObject_GetAttrString(d, "name");
        Py_XDECREF(d);
        PyErr_Clear();
        if (!name) name = PyObject_GetAttrString(o, "name");
        if (!name) {
            PyErr_Clear();
            name = PyObject_Str(o);
        }
    }
    if (!name) return -1;
    const char *s = PyUnicode_AsUTF8AndSize(name, NULL);
    if (!s) {
        Py_DECREF(name);
        return -1;
    }
    if (cuk_dtype_from_name(s, dt) != CUK_OK) {
        PyErr_Format(ArgumentError, "dtype %s is not supported by cuk (bool, int32, int64, uint32, uint64, float32, float64)", s);
        Py_DECREF(name);
        return -1;
    }
    Py_DECREF(name);
    return 0;
}

static PyObject *np_mod, *np_asarray;
static int need_numpy(void) {
    if (np_asarray) return 0;
    np_mod = PyImport_ImportModule("numpy");
    if (!np_mod) return -1;
    np_asarray = PyObject_GetAttrString(np_mod, "asarray");
    return np_asarray ? 0 : -1;
}

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
static PyType_Spec hostbuf_spec = {"cuk._cuk.HostBuf", sizeof(HostBuf), 0, Py_TPFLAGS_DEFAULT, hostbuf_slots};

/* A NumPy array (or NumPy scalar for rank 0) that takes over a host cuk_array. */
static PyObject *numpy_from_host(cuk_array *a, bool scalar_for_rank0) {
    if (need_numpy() < 0) {
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

/* The array is described inline by a cuk_view, so that a call passes a pointer to it
   (no copy, no allocation) and a result is one Python object. */
typedef struct {
    PyObject_HEAD
    cuk_view v;      /* place is CUK_ON_DEVICE; v.dev is 0 for an array with no elements */
    bool owns;       /* v.dev is a pool block, freed with the object */
    PyObject *base;  /* what keeps wrapped memory alive, or NULL */
    PyObject *weakrefs;
} DeviceArray;
static PyTypeObject *DeviceArray_Type;

static int64_t view_size(const cuk_view *v) {
    int64_t n = 1;
    for (int k = 0; k < v->rank; k++) n *= v->shape[k];
    return n;
}
static size_t view_nbytes(const cuk_view *v) { return (size_t)view_size(v) * cuk_dtype_size(v->dtype); }

/* A DeviceArray for v; with owns, it takes over v->dev (freed here if that fails). */
static PyObject *devarray_new(const cuk_view *v, bool owns, PyObject *base) {
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
    return (PyObject *)d;
}

static void devarray_dealloc(PyObject *self) {
    DeviceArray *d = (DeviceArray *)self;
    if (d->weakrefs) PyObject_ClearWeakRefs(self);
    if (d->owns) cuk_mem_free(d->v.dev);
    Py_XDECREF(d->base);
    heap_free(self);
}

static PyObject *shape_tuple(int r, const int64_t *shape) {
    PyObject *t = PyTuple_New(r);
    if (!t) return NULL;
    for (int k = 0; k < r; k++) {
        PyObject *v = PyLong_FromLongLong(shape[k]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SetItem(t, k, v);
    }
    return t;
}

#define DA(self) (&((DeviceArray *)(self))->v)

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
    /* version 3: strides None (C order); no stream key (no synchronisation needed: the
       legacy default stream orders cuk's work before the consumer's). */
    return Py_BuildValue("{s:N,s:s,s:(K,O),s:i,s:O,s:[(s,s)]}", "shape", shape, "typestr", typestr[v->dtype], "data",
                         view_size(v) ? (unsigned long long)v->dev : 0ULL, Py_False, "version", 3, "strides", Py_None,
                         "descr", "", typestr[v->dtype]);
}

static PyObject *devarray_int(PyObject *self) { return PyLong_FromUnsignedLongLong(DA(self)->dev); }

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
        if (nb) {
            Py_BEGIN_ALLOW_THREADS s = cuk_memcpy_dtoh(b.buf, v->dev, nb);
            Py_END_ALLOW_THREADS
        }
        PyBuffer_Release(&b);
        if (s) return raise_status(s);
        return Py_NewRef(out);
    }
    cuk_array *h;
    CHECK(cuk_array_new(&h, v->dtype, v->rank, v->shape, CUK_ON_HOST));
    if (nb) {
        Py_BEGIN_ALLOW_THREADS s = cuk_memcpy_dtoh(cuk_array_host_data(h), v->dev, nb);
        Py_END_ALLOW_THREADS
    }
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
    cuk_status s = CUK_OK;
    if (nb) {
        Py_BEGIN_ALLOW_THREADS s = cuk_memcpy_htod(v->dev, b.buf, nb);
        Py_END_ALLOW_THREADS
    }
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

/* ---- DLPack (dlpack.h v0.8, ABI-stable), both directions ------------------------------------ */

typedef struct {
    int32_t device_type, device_id;
} DLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };
static const DLDataType dl_dtype[CUK_DTYPE_COUNT] = {{6, 8, 1}, {0, 32, 1}, {0, 64, 1}, {1, 32, 1},
                                                      {1, 64, 1}, {2, 32, 1}, {2, 64, 1}};

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

/* __dlpack__(stream=None, ...): a DLPack capsule sharing the memory. cuk's work is on
   the legacy default stream, which orders it before any consumer's stream work, so the
   stream argument needs nothing. */
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
static PyObject *devarray_dlpack(PyObject *self, PyObject *args, PyObject *kw) {
    (void)args;
    (void)kw; /* stream, max_version, dl_device, copy: nothing to do for any of them */
    return devarray_dlpack_capsule(self);
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
                                       {Py_tp_doc, "A dense, C-ordered array in device memory."},
                                       {0, 0}};
static PyType_Spec devarray_spec = {"cuk.DeviceArray", sizeof(DeviceArray), 0, Py_TPFLAGS_DEFAULT, devarray_slots};

static int shape_arg(PyObject *o, int *rank, int64_t *shape) {
    if (PyLong_Check(o)) {
        *rank = 1;
        shape[0] = PyLong_AsLongLong(o);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *t = PySequence_Tuple(o);
    if (!t) return -1;
    Py_ssize_t n = PyTuple_Size(t);
    if (n > CUK_MAX_RANK) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ValueError, "at most %d dimensions", CUK_MAX_RANK);
        return -1;
    }
    *rank = (int)n;
    for (Py_ssize_t k = 0; k < n; k++) {
        shape[k] = PyLong_AsLongLong(PyTuple_GetItem(t, k));
        if (PyErr_Occurred()) {
            Py_DECREF(t);
            return -1;
        }
    }
    Py_DECREF(t);
    return 0;
}

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
        s = cuk_mem_alloc(&v.dev, nb);
        if (!s && data) s = cuk_memcpy_htod(v.dev, data, nb);
        else if (!s && zero) s = cuk_memset_d8(v.dev, 0, nb, NULL);
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

/* The cuk dtype of a buffer, or an error naming what. */
static int buffer_dtype(const Py_buffer *b, const char *what, cuk_dtype *dt) {
    int d = dtype_of_format(b->format ? b->format : "B", b->itemsize);
    if (d < 0) {
        PyErr_Format(ArgumentError, "%s: arrays of format '%s' (%zd-byte items) are not supported; cuk has bool, int32, int64, uint32, uint64, float32 and float64",
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
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        if (need_numpy() < 0) return NULL;
        PyObject *f = PyObject_GetAttrString(np_mod, "ascontiguousarray");
        c = f ? PyObject_CallFunctionObjArgs(f, o, NULL) : NULL;
        Py_XDECREF(f);
        if (!c) return NULL;
        if (PyObject_GetBuffer(c, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            Py_DECREF(c);
            return NULL;
        }
    }
    cuk_dtype dt;
    int64_t shape[CUK_MAX_RANK];
    PyObject *r = NULL;
    if (b.ndim > CUK_MAX_RANK) PyErr_Format(PyExc_ValueError, "at most %d dimensions", CUK_MAX_RANK);
    else if (buffer_dtype(&b, "to_device", &dt) == 0) {
        for (int k = 0; k < b.ndim; k++) shape[k] = b.shape ? b.shape[k] : b.len / b.itemsize;
        r = devarray_alloc(dt, b.ndim, shape, b.buf, false);
    }
    PyBuffer_Release(&b);
    Py_XDECREF(c);
    return r;
}

/* ---- programs ---------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    cuk_program *p;
} Program;
static PyTypeObject *Program_Type;

typedef struct {
    PyObject_HEAD
    PyObject *prog;
    cuk_fn *f;
    int nparams;
    cuk_param_info *params;
    cuk_vectorcallfunc vectorcall; /* function_vectorcall (tp_vectorcall_offset points here) */
} Function;
static PyObject *function_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);
static PyTypeObject *Function_Type;

static void program_dealloc(PyObject *self) {
    cuk_program_free(((Program *)self)->p);
    heap_free(self);
}

/* compile(src_or_path, backend, name, require_bundle) -> Program */
static PyObject *py_compile(PyObject *m, PyObject *args) {
    (void)m;
    const char *src, *name = NULL;
    int backend = 0, require_bundle = 0;
    if (!PyArg_ParseTuple(args, "s|izp", &src, &backend, &name, &require_bundle)) return NULL;
    cuk_program_opts o = {.backend = (cuk_backend)backend, .name = name, .require_bundle = require_bundle};
    cuk_program *p;
    cuk_status s;
    Py_BEGIN_ALLOW_THREADS s = cuk_program_compile(&p, src, &o);
    Py_END_ALLOW_THREADS if (s) return raise_status(s);
    Program *r = PyObject_New(Program, Program_Type);
    if (!r) {
        cuk_program_free(p);
        return NULL;
    }
    r->p = p;
    return (PyObject *)r;
}

static PyObject *program_functions(PyObject *self, PyObject *unused) {
    (void)unused;
    cuk_program *p = ((Program *)self)->p;
    int n = cuk_program_nfunctions(p);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) PyList_SetItem(l, i, PyUnicode_FromString(cuk_program_function_name(p, i)));
    return l;
}

static PyObject *program_function(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!name) return NULL;
    cuk_fn *f;
    CHECK(cuk_program_function(((Program *)self)->p, name, &f));
    Function *r = PyObject_New(Function, Function_Type);
    if (!r) return NULL;
    r->prog = Py_NewRef(self);
    r->f = f;
    r->vectorcall = NULL;
    r->nparams = cuk_fn_nparams(f);
    r->params = PyMem_Calloc((size_t)(r->nparams ? r->nparams : 1), sizeof *r->params);
    if (!r->params) {
        Py_DECREF(r);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < r->nparams; i++) cuk_fn_param(f, i, &r->params[i]);
    r->vectorcall = function_vectorcall;
    return (PyObject *)r;
}

static PyObject *program_backend(PyObject *self, void *c) {
    (void)c;
    return PyUnicode_FromString(cuk_program_backend(((Program *)self)->p) == CUK_BACKEND_GPU ? "gpu" : "cpu");
}

static PyMethodDef program_methods[] = {{"functions", program_functions, METH_NOARGS, "the program's function names"},
                                        {"function", program_function, METH_O, "a function by name"},
                                        {NULL, NULL, 0, NULL}};
static PyGetSetDef program_getset[] = {{"backend", program_backend, NULL, "'gpu' or 'cpu'", NULL}, {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot program_slots[] = {{Py_tp_dealloc, program_dealloc},
                                      {Py_tp_methods, program_methods},
                                      {Py_tp_getset, program_getset},
                                      {0, 0}};
static PyType_Spec program_spec = {"cuk._cuk.Program", sizeof(Program), 0, Py_TPFLAGS_DEFAULT, program_slots};

static void function_dealloc(PyObject *self) {
    Function *f = (Function *)self;
    PyMem_Free(f->params);
    Py_XDECREF(f->prog);
    heap_free(self);
}

/* What kind of object the caller passed, to give the result back as the same kind. */
enum { KIND_NONE, KIND_NUMPY, KIND_FOREIGN, KIND_DEVICE };
static PyObject *foreign_hook;  /* cuk._convert_result(template, DeviceArray): the general way back */
static PyObject *maker_lookup;  /* cuk._result_maker(type) -> callable or None */
static PyObject *maker_cache;   /* {type: maker or None} */

/* The bookkeeping of one argument that needed more than a view: a buffer we hold, a
   contiguous copy, a DLPack tensor we consumed. */
typedef struct Held {
    Py_buffer buf;
    bool has_buf;
    PyObject *keep;      /* a temporary (contiguous copy) */
    PyObject *dlcap;     /* a DLPack capsule we consumed */
    void *dlm;           /* its DLManagedTensor */
} Held;

static void held_release(Held *h) {
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

static const char *fn_name(Function *f) { return cuk_fn_name(f->f); }

/* The error for an argument of the wrong dtype. */
static int wrong_dtype(Function *f, const cuk_param_info *pi, cuk_dtype got) {
    PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s %s, but the argument has dtype %s; convert it first (e.g. .astype('%s'))",
                 fn_name(f), pi->name, pi->rank ? "an array of" : "a", np_name[pi->dtype], np_name[got], np_name[pi->dtype]);
    return -1;
}

/* A scalar's bytes, as many as its dtype has. */
typedef union {
    uint8_t b;
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
} ScalarBytes;

/* A Python scalar for a scalar parameter, converted to the parameter's dtype: the view
   v points at *val. */
static int scalar_arg(Function *f, const cuk_param_info *pi, PyObject *o, ScalarBytes *val, cuk_view *v) {
    cuk_dtype dt = pi->dtype;
    if (dt == CUK_F32 || dt == CUK_F64) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) goto bad;
        if (dt == CUK_F32) val->f32 = (float)d;
        else val->f64 = d;
    } else if (dt == CUK_BOOL) {
        int t = PyObject_IsTrue(o);
        if (t < 0) goto bad;
        val->b = (uint8_t)t;
    } else {
        if (PyFloat_Check(o)) {
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s, but the argument is a float", fn_name(f), pi->name, np_name[dt]);
            return -1;
        }
        PyObject *ix = PyNumber_Index(o);
        if (!ix) goto bad;
        if (dt == CUK_U32 || dt == CUK_U64) {
            unsigned long long x = PyLong_AsUnsignedLongLong(ix);
            Py_DECREF(ix);
            if (PyErr_Occurred() || (dt == CUK_U32 && x > UINT32_MAX)) goto range;
            if (dt == CUK_U32) val->u32 = (uint32_t)x;
            else val->u64 = x;
        } else {
            long long x = PyLong_AsLongLong(ix);
            Py_DECREF(ix);
            if (PyErr_Occurred() || (dt == CUK_I32 && (x < INT32_MIN || x > INT32_MAX))) goto range;
            if (dt == CUK_I32) val->i32 = (int32_t)x;
            else val->i64 = x;
        }
    }
    v->dtype = dt;
    v->rank = 0;
    v->place = CUK_ON_HOST;
    v->data = val;
    v->dev = 0;
    return 0;
range:
    PyErr_Clear();
    PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s, and %R does not fit", fn_name(f), pi->name, np_name[dt], o);
    return -1;
bad:
    PyErr_Clear();
    PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s %s; got %.100s", fn_name(f), pi->name, pi->rank ? "an array of" : "a",
                 np_name[dt], Py_TYPE(o) ? PyType_GetName(Py_TYPE(o)) ? PyUnicode_AsUTF8AndSize(PyType_GetName(Py_TYPE(o)), NULL) : "?" : "?");
    return -1;
}

/* Parses a __cuda_array_interface__ dict into a device view. */
static int cai_arg(Function *f, const cuk_param_info *pi, PyObject *cai, cuk_view *v) {
    const char *who = pi->name;
    if (!PyDict_Check(cai)) {
        PyErr_Format(ArgumentError, "%s(): parameter '%s': __cuda_array_interface__ is not a dict", fn_name(f), who);
        return -1;
    }
    PyObject *shape = PyDict_GetItemString(cai, "shape");
    PyObject *ts = PyDict_GetItemString(cai, "typestr");
    PyObject *data = PyDict_GetItemString(cai, "data");
    PyObject *strides = PyDict_GetItemString(cai, "strides");
    if (!shape || !ts || !data || !PyTuple_Check(data) || PyTuple_Size(data) < 1) {
        PyErr_Format(ArgumentError, "%s(): parameter '%s': malformed __cuda_array_interface__", fn_name(f), who);
        return -1;
    }
    const char *tss = PyUnicode_Check(ts) ? PyUnicode_AsUTF8AndSize(ts, NULL) : NULL;
    int d = dtype_of_typestr(tss ? tss : "");
    if (d < 0) {
        PyErr_Clear();
        PyErr_Format(ArgumentError, "%s(): parameter '%s': dtype %S is not supported by cuk", fn_name(f), who, ts);
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
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is not C-contiguous; pass a contiguous copy", fn_name(f), who);
            return -1;
        }
    }
    unsigned long long ptr = PyLong_AsUnsignedLongLong(PyTuple_GetItem(data, 0));
    if (PyErr_Occurred()) return -1;
    if (d != (int)pi->dtype) return wrong_dtype(f, pi, (cuk_dtype)d);
    v->dtype = (cuk_dtype)d;
    v->rank = rank;
    v->place = CUK_ON_DEVICE;
    v->data = NULL;
    v->dev = ptr;
    return 0;
}

static int dlpack_arg(Function *f, const cuk_param_info *pi, PyObject *o, Held *h, cuk_view *v) {
    PyObject *meth = PyObject_GetAttrString(o, "__dlpack__");
    if (!meth) return -1;
    PyObject *cap = PyObject_CallNoArgs(meth);
    Py_DECREF(meth);
    if (!cap) return -1;
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
        PyErr_Format(ArgumentError, "%s(): parameter '%s': this DLPack dtype/rank is not supported by cuk", fn_name(f), pi->name);
        return -1;
    }
    if (d != (int)pi->dtype) return wrong_dtype(f, pi, (cuk_dtype)d);
    int64_t want = 1;
    for (int k = x->ndim - 1; x->strides && k >= 0; k--) {
        if (x->shape[k] > 1 && x->strides[k] != want) {
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is not C-contiguous; pass a contiguous copy", fn_name(f), pi->name);
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
        PyErr_Format(ArgumentError, "%s(): parameter '%s': DLPack device type %d is not supported", fn_name(f), pi->name,
                     (int)x->device.device_type);
        return -1;
    }
    return 0;
}

/* A host buffer (NumPy array, array.array, ...), viewed without a copy. */
static int buffer_arg(Function *f, const cuk_param_info *pi, PyObject *o, Held *h, cuk_view *v) {
    if (PyObject_GetBuffer(o, &h->buf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        /* Not a contiguous buffer: let NumPy make one (lists, strided views). */
        PyErr_Clear();
        if (need_numpy() < 0) return -1;
        PyObject *f2 = PyObject_GetAttrString(np_mod, "ascontiguousarray");
        if (!f2) return -1;
        PyObject *kw = Py_BuildValue("{s:s}", "dtype", np_name[pi->dtype]);
        PyObject *a = PyTuple_Pack(1, o);
        h->keep = kw && a ? PyObject_Call(f2, a, kw) : NULL;
        Py_XDECREF(kw);
        Py_XDECREF(a);
        Py_DECREF(f2);
        if (!h->keep) {
            PyErr_Clear();
            PyErr_Format(ArgumentError, "%s(): parameter '%s' needs an array of %s; got %R", fn_name(f), pi->name, np_name[pi->dtype],
                         (PyObject *)Py_TYPE(o));
            return -1;
        }
        if (PyObject_GetBuffer(h->keep, &h->buf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    }
    h->has_buf = true;
    cuk_dtype dt;
    char what[256];
    snprintf(what, sizeof what, "%s(): parameter '%s'", fn_name(f), pi->name);
    if (buffer_dtype(&h->buf, what, &dt) < 0) return -1;
    if (dt != pi->dtype) return wrong_dtype(f, pi, dt);
    if (h->buf.ndim > CUK_MAX_RANK) {
        PyErr_Format(ArgumentError, "%s: at most %d dimensions", what, CUK_MAX_RANK);
        return -1;
    }
    v->dtype = dt;
    v->rank = h->buf.ndim;
    for (int k = 0; k < h->buf.ndim; k++) v->shape[k] = h->buf.shape ? h->buf.shape[k] : h->buf.len / h->buf.itemsize;
    v->place = CUK_ON_HOST;
    v->data = h->buf.buf;
    v->dev = 0;
    return 0;
}

static PyObject *s_cai, *s_dlpack; /* interned attribute names */

/* What an object's type speaks, found once per type (the hot path must not look up
   attributes that are not there: a failed lookup raises and clears an exception). */
enum { TP_UNKNOWN = 0, TP_CAI, TP_DLPACK, TP_BUFFER, TP_OTHER };
#define TYPE_CACHE 32
static struct {
    PyTypeObject *tp; /* a strong reference */
    int kind;
} type_cache[TYPE_CACHE];
static int ntype_cache;

static int type_kind(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    for (int i = 0; i < ntype_cache; i++)
        if (type_cache[i].tp == tp) return type_cache[i].kind;
    int kind;
    if (PyObject_HasAttr((PyObject *)tp, s_cai)) kind = TP_CAI;
    else if (PyObject_CheckBuffer(o)) kind = TP_BUFFER;
    else if (PyObject_HasAttr((PyObject *)tp, s_dlpack)) kind = TP_DLPACK;
    else kind = TP_OTHER;
    if (ntype_cache < TYPE_CACHE) {
        type_cache[ntype_cache].tp = (PyTypeObject *)Py_NewRef((PyObject *)tp);
        type_cache[ntype_cache].kind = kind;
        ntype_cache++;
    }
    return kind;
}

/* The device id results are made for (cuk's current device). */
static int current_device(void) {
    int dev = 0;
    if (cuk_device_current(&dev) != CUK_OK) dev = 0;
    return dev;
}

/* A device result as the kind of the foreign array the caller passed (template): through
   a maker cuk/__init__.py provides per type (CuPy: an ndarray over our memory, PyTorch:
   from DLPack), found once per type, else through the general hook. Takes d. */
static PyObject *foreign_result(PyObject *template, PyObject *d) {
    PyObject *tp = (PyObject *)Py_TYPE(template);
    PyObject *maker = NULL;
    if (maker_cache && maker_lookup) {
        maker = PyDict_GetItem(maker_cache, tp); /* borrowed */
        if (!maker) {
            maker = PyObject_CallFunctionObjArgs(maker_lookup, tp, NULL);
            if (!maker || PyDict_SetItem(maker_cache, tp, maker) < 0) {
                Py_XDECREF(maker);
                Py_DECREF(d);
                return NULL;
            }
            Py_DECREF(maker); /* the cache holds it */
        }
    }
    PyObject *r;
    if (maker && maker != Py_None) {
        const cuk_view *v = DA(d);
        PyObject *shape = shape_tuple(v->rank, v->shape);
        r = shape ? PyObject_CallFunction(maker, "OKnNii", d, (unsigned long long)v->dev, (Py_ssize_t)view_nbytes(v), shape,
                                          (int)v->dtype, current_device())
                  : NULL;
    } else if (foreign_hook) {
        r = PyObject_CallFunctionObjArgs(foreign_hook, template, d, NULL);
    } else {
        return d;
    }
    Py_DECREF(d);
    return r;
}

/* The call of a compiled function: arguments become views (a DeviceArray's own view,
   a Python number's value on the stack: no allocation, no Python objects), one call
   into libcuk with the GIL released, one Python object for the result. */
static PyObject *function_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Function *f = (Function *)self;
    Py_ssize_t n = (Py_ssize_t)(nargsf & ~CUK_VECTORCALL_ARGUMENTS_OFFSET);
    if (kwnames && PyTuple_Size(kwnames)) {
        PyErr_Format(PyExc_TypeError, "%s() takes positional arguments only", fn_name(f));
        return NULL;
    }
    if (n != f->nparams) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s (%zd given)", fn_name(f), f->nparams, f->nparams == 1 ? "" : "s", n);
        return NULL;
    }
    int kind = KIND_NONE;
    PyObject *foreign = NULL; /* borrowed: the first foreign array, a template for the result */
    PyObject *result = NULL;
    cuk_view vstack[8], *v = vstack;
    const cuk_view *pstack[8], **vp = pstack;
    ScalarBytes sstack[8], *sv = sstack;
    Held hstack[8], *held = NULL; /* only for arguments that need more than a view */
    if (n > 8) {
        v = PyMem_Malloc(sizeof *v * (size_t)n);
        vp = PyMem_Malloc(sizeof *vp * (size_t)n);
        sv = PyMem_Malloc(sizeof *sv * (size_t)n);
        if (!v || !vp || !sv) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = args[i];
        const cuk_param_info *pi = &f->params[i];
        PyTypeObject *tp = Py_TYPE(o);
        if (tp == DeviceArray_Type) {
            /* The hot path: our own device array, passed by its view. */
            vp[i] = DA(o);
            kind = KIND_DEVICE;
            continue;
        }
        vp[i] = &v[i];
        if (pi->rank == 0 && (tp == &PyFloat_Type || tp == &PyLong_Type || tp == &PyBool_Type)) {
            if (scalar_arg(f, pi, o, &sv[i], &v[i]) < 0) goto done;
            continue;
        }
        if (PyObject_TypeCheck(o, DeviceArray_Type)) {
            vp[i] = DA(o);
            kind = KIND_DEVICE;
            continue;
        }
        if (!held) {
            held = n <= 8 ? hstack : PyMem_Malloc(sizeof *held * (size_t)n);
            if (!held) {
                PyErr_NoMemory();
                goto done;
            }
            memset(held, 0, sizeof *held * (size_t)n);
        }
        int rc, tk = type_kind(o);
        if (tk == TP_OTHER) {
            /* the protocols may be instance attributes (a plain class setting them in
               __init__): look on the object itself, as for any unusual type */
            if (PyObject_HasAttr(o, s_cai)) tk = TP_CAI;
            else if (PyObject_HasAttr(o, s_dlpack)) tk = TP_DLPACK;
        }
        if (pi->rank == 0 && tk == TP_BUFFER) {
            /* a NumPy scalar or 0-d array: by value, converted like a Python number */
            rc = scalar_arg(f, pi, o, &sv[i], &v[i]);
            if (kind < KIND_NUMPY) kind = KIND_NUMPY;
        } else if (tk == TP_CAI) {
            PyObject *cai = PyObject_GetAttr(o, s_cai);
            if (cai) {
                rc = cai_arg(f, pi, cai, &v[i]);
                Py_DECREF(cai);
                if (kind < KIND_FOREIGN) kind = KIND_FOREIGN, foreign = o;
            } else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                /* the type has the property but this object has no device memory (a CPU
                   tensor): take it as DLPack or a buffer */
                PyErr_Clear();
                if (PyObject_CheckBuffer(o)) {
                    rc = buffer_arg(f, pi, o, &held[i], &v[i]);
                    if (kind < KIND_NUMPY) kind = KIND_NUMPY;
                } else if (PyObject_HasAttr(o, s_dlpack)) {
                    rc = dlpack_arg(f, pi, o, &held[i], &v[i]);
                    if (v[i].place == CUK_ON_DEVICE && kind < KIND_FOREIGN) kind = KIND_FOREIGN, foreign = o;
                } else {
                    rc = pi->rank == 0 ? scalar_arg(f, pi, o, &sv[i], &v[i]) : buffer_arg(f, pi, o, &held[i], &v[i]);
                }
            } else {
                rc = -1;
            }
        } else if (tk == TP_DLPACK) {
            rc = dlpack_arg(f, pi, o, &held[i], &v[i]);
            if (!rc && v[i].place == CUK_ON_DEVICE && kind < KIND_FOREIGN) kind = KIND_FOREIGN, foreign = o;
        } else if (pi->rank == 0 && tk != TP_BUFFER) {
            rc = scalar_arg(f, pi, o, &sv[i], &v[i]);
        } else {
            rc = buffer_arg(f, pi, o, &held[i], &v[i]);
            if (kind < KIND_NUMPY) kind = KIND_NUMPY;
            /* A 0-d NumPy array (or a NumPy scalar) for a scalar parameter is fine; for an
               array parameter the rank check reports it. */
        }
        if (rc < 0) goto done;
    }
    cuk_view dres;
    cuk_array *hres = NULL;
    /* A call that only queues a kernel runs with the GIL held (as CuPy's launches do):
       releasing and taking it back costs more than the rest of the call. */
    int quick = 0;
    cuk_status s = kind >= KIND_FOREIGN ? cuk_fn_call_quick(f->f, vp, (int)n, &dres, &quick) : CUK_OK;
    if (!s && !quick) {
        Py_BEGIN_ALLOW_THREADS s = cuk_fn_call_views(f->f, vp, (int)n, &dres, &hres);
        Py_END_ALLOW_THREADS
    }
    if (s) {
        raise_status(s);
        goto done;
    }
    if (dres.rank >= 0) {
        result = devarray_new(&dres, true, NULL);
        if (result && kind == KIND_FOREIGN) result = foreign_result(foreign, result);
    } else if (hres) {
        result = numpy_from_host(hres, true);
    } else {
        result = Py_NewRef(Py_None);
    }
done:
    if (held) {
        for (Py_ssize_t i = 0; i < n; i++) held_release(&held[i]);
        if (held != hstack) PyMem_Free(held);
    }
    if (v != vstack) PyMem_Free(v);
    if (vp != pstack) PyMem_Free((void *)vp);
    if (sv != sstack) PyMem_Free(sv);
    return result;
}

/* tp_call, for callers that do not use vectorcall. */
static PyObject *function_call(PyObject *self, PyObject *args, PyObject *kw) {
    if (kw && PyDict_Size(kw)) {
        PyErr_Format(PyExc_TypeError, "%s() takes positional arguments only", fn_name((Function *)self));
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *stack[8], **a = n <= 8 ? stack : PyMem_Malloc(sizeof *a * (size_t)(n ? n : 1));
    if (!a) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) a[i] = PyTuple_GetItem(args, i);
    PyObject *r = function_vectorcall(self, a, (size_t)n, NULL);
    if (a != stack) PyMem_Free(a);
    return r;
}

static PyObject *function_params(PyObject *self, void *c) {
    (void)c;
    Function *f = (Function *)self;
    PyObject *l = PyList_New(f->nparams);
    for (int i = 0; l && i < f->nparams; i++) {
        const cuk_param_info *pi = &f->params[i];
        PyObject *dims = PyTuple_New(pi->rank);
        for (int k = 0; dims && k < pi->rank; k++)
            PyTuple_SetItem(dims, k, pi->dims[k] ? PyUnicode_FromString(pi->dims[k]) : PyLong_FromLongLong(pi->sizes[k]));
        PyList_SetItem(l, i, Py_BuildValue("(ssN)", pi->name, np_name[pi->dtype], dims));
    }
    return l;
}
static PyObject *function_name(PyObject *self, void *c) {
    (void)c;
    return PyUnicode_FromString(fn_name((Function *)self));
}
static PyObject *function_repr(PyObject *self) {
    return PyUnicode_FromFormat("<cuk function %s>", fn_name((Function *)self));
}
static PyGetSetDef function_getset[] = {
    {"params", function_params, NULL, "[(name, dtype, dims)]: dims holds size names or literal sizes", NULL},
    {"__name__", function_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMemberDef function_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Function, vectorcall), READONLY, NULL}, {NULL, 0, 0, 0, NULL}};
static PyType_Slot function_slots[] = {{Py_tp_dealloc, function_dealloc},
                                       {Py_tp_call, function_call},
                                       {Py_tp_members, function_members},
                                       {Py_tp_getset, function_getset},
                                       {Py_tp_repr, function_repr},
                                       {0, 0}};
static PyType_Spec function_spec = {"cuk.Function", sizeof(Function), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
                                     function_slots};

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
static PyType_Spec pinned_spec = {"cuk._cuk.PinnedBuffer", sizeof(Pinned), 0, Py_TPFLAGS_DEFAULT, pinned_slots};

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

typedef struct {
    PyObject_HEAD
    cuk_devptr p;
    size_t n;
    PyObject *weakrefs;
} Alloc;
static PyTypeObject *Alloc_Type;

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
static PyType_Spec alloc_spec = {"cuk.driver.DeviceAllocation", sizeof(Alloc), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
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

static PyObject *s_gpudata;

/* A device pointer from an int, an allocation, a DeviceArray, a GPUArray (.gpudata) or
   anything with __cuda_array_interface__. */
static int devptr_of(PyObject *o, cuk_devptr *p) {
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

/* ---- streams and events ---------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    cuk_stream *s;
} Stream;
static PyTypeObject *Stream_Type;
typedef struct {
    PyObject_HEAD
    cuk_event *e;
} Event;
static PyTypeObject *Event_Type;

static PyObject *stream_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)args;
    (void)kw;
    cuk_stream *s;
    CHECK(cuk_stream_create(&s));
    Stream *r = (Stream *)heap_alloc(tp);
    if (!r) {
        cuk_stream_destroy(s);
        return NULL;
    }
    r->s = s;
    return (PyObject *)r;
}
static void stream_dealloc(PyObject *self) {
    Stream *s = (Stream *)self;
    if (s->s) cuk_stream_destroy(s->s);
    heap_free(self);
}
static PyObject *stream_synchronize(PyObject *self, PyObject *u) {
    (void)u;
    cuk_status st;
    Py_BEGIN_ALLOW_THREADS st = cuk_stream_synchronize(((Stream *)self)->s);
    Py_END_ALLOW_THREADS if (st) return raise_status(st);
    Py_RETURN_NONE;
}
static PyObject *stream_is_done(PyObject *self, PyObject *u) {
    (void)u;
    cuk_status st = cuk_stream_query(((Stream *)self)->s);
    if (st == CUK_ERR_NOT_READY) Py_RETURN_FALSE;
    if (st) return raise_status(st);
    Py_RETURN_TRUE;
}
static PyObject *stream_wait_for_event(PyObject *self, PyObject *ev) {
    if (!PyObject_TypeCheck(ev, Event_Type)) return PyErr_Format(PyExc_TypeError, "wait_for_event needs an Event");
    CHECK(cuk_stream_wait_event(((Stream *)self)->s, ((Event *)ev)->e));
    Py_RETURN_NONE;
}
static PyObject *stream_handle(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromVoidPtr(((Stream *)self)->s);
}
static PyMethodDef stream_methods[] = {{"synchronize", stream_synchronize, METH_NOARGS, NULL},
                                       {"is_done", stream_is_done, METH_NOARGS, NULL},
                                       {"wait_for_event", stream_wait_for_event, METH_O, NULL},
                                       {NULL, NULL, 0, NULL}};
static PyGetSetDef stream_getset[] = {{"handle", stream_handle, NULL, NULL, NULL}, {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot stream_slots[] = {{Py_tp_new, stream_new},         {Py_tp_dealloc, stream_dealloc},
                                     {Py_tp_methods, stream_methods}, {Py_tp_getset, stream_getset},
                                     {Py_tp_doc, "A CUDA stream (non-blocking)."}, {0, 0}};
static PyType_Spec stream_spec = {"cuk.driver.Stream", sizeof(Stream), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, stream_slots};

/* The cuk_stream of an optional stream argument (None: the default stream). */
static int stream_of(PyObject *o, cuk_stream **s) {
    if (!o || o == Py_None) {
        *s = NULL;
        return 0;
    }
    if (!PyObject_TypeCheck(o, Stream_Type)) {
        PyErr_SetString(PyExc_TypeError, "stream must be a cuk.driver.Stream or None");
        return -1;
    }
    *s = ((Stream *)o)->s;
    return 0;
}

static PyObject *event_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)args;
    (void)kw;
    cuk_event *e;
    CHECK(cuk_event_create(&e));
    Event *r = (Event *)heap_alloc(tp);
    if (!r) {
        cuk_event_destroy(e);
        return NULL;
    }
    r->e = e;
    return (PyObject *)r;
}
static void event_dealloc(PyObject *self) {
    Event *e = (Event *)self;
    if (e->e) cuk_event_destroy(e->e);
    heap_free(self);
}
static PyObject *event_record(PyObject *self, PyObject *args) {
    PyObject *so = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &so)) return NULL;
    cuk_stream *s;
    if (stream_of(so, &s) < 0) return NULL;
    CHECK(cuk_event_record(((Event *)self)->e, s));
    return Py_NewRef(self);
}
static PyObject *event_synchronize(PyObject *self, PyObject *u) {
    (void)u;
    cuk_status st;
    Py_BEGIN_ALLOW_THREADS st = cuk_event_synchronize(((Event *)self)->e);
    Py_END_ALLOW_THREADS if (st) return raise_status(st);
    return Py_NewRef(self);
}
static PyObject *event_query(PyObject *self, PyObject *u) {
    (void)u;
    cuk_status st = cuk_event_query(((Event *)self)->e);
    if (st == CUK_ERR_NOT_READY) Py_RETURN_FALSE;
    if (st) return raise_status(st);
    Py_RETURN_TRUE;
}
/* time_since(earlier): milliseconds from earlier to this event (PyCUDA's convention). */
static PyObject *event_time_since(PyObject *self, PyObject *other) {
    if (!PyObject_TypeCheck(other, Event_Type)) return PyErr_Format(PyExc_TypeError, "time_since needs an Event");
    float ms;
    CHECK(cuk_event_elapsed(&ms, ((Event *)other)->e, ((Event *)self)->e));
    return PyFloat_FromDouble(ms);
}
static PyObject *event_time_till(PyObject *self, PyObject *other) {
    if (!PyObject_TypeCheck(other, Event_Type)) return PyErr_Format(PyExc_TypeError, "time_till needs an Event");
    float ms;
    CHECK(cuk_event_elapsed(&ms, ((Event *)self)->e, ((Event *)other)->e));
    return PyFloat_FromDouble(ms);
}
static PyMethodDef event_methods[] = {{"record", event_record, METH_VARARGS, "record(stream=None)"},
                                      {"synchronize", event_synchronize, METH_NOARGS, NULL},
                                      {"query", event_query, METH_NOARGS, NULL},
                                      {"time_since", event_time_since, METH_O, "ms since an earlier event"},
                                      {"time_till", event_time_till, METH_O, "ms until a later event"},
                                      {NULL, NULL, 0, NULL}};
static PyType_Slot event_slots[] = {{Py_tp_new, event_new},
                                    {Py_tp_dealloc, event_dealloc},
                                    {Py_tp_methods, event_methods},
                                    {Py_tp_doc, "A CUDA event with timing."},
                                    {0, 0}};
static PyType_Spec event_spec = {"cuk.driver.Event", sizeof(Event), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, event_slots};

/* ---- raw modules and kernels (SourceModule) -------------------------------------------------- */

/* Driver entry points cuk.h does not offer, looked up in the already loaded libcuda. */
typedef int (*cuModuleGetGlobal_t)(cuk_devptr *, size_t *, void *, const char *);
typedef int (*cuCtx1_t)(void *);
typedef int (*cuCtxOut_t)(void **);
static struct {
    bool tried;
    cuModuleGetGlobal_t getglobal;
    cuCtx1_t push;
    cuCtxOut_t pop, get;
} xdrv;

static int xdrv_load(void) {
    if (xdrv.tried) return 0;
    cuk_status s = cuk_init();
    if (s) {
        raise_status(s);
        return -1;
    }
    const char *lib = getenv("CUK_LIBCUDA");
    void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW);
    if (h) {
        xdrv.getglobal = (cuModuleGetGlobal_t)dlsym(h, "cuModuleGetGlobal_v2");
        xdrv.push = (cuCtx1_t)dlsym(h, "cuCtxPushCurrent_v2");
        xdrv.pop = (cuCtxOut_t)dlsym(h, "cuCtxPopCurrent_v2");
        xdrv.get = (cuCtxOut_t)dlsym(h, "cuCtxGetCurrent");
    }
    xdrv.tried = true;
    return 0;
}

typedef struct {
    PyObject_HEAD
    cuk_module *m;
} Module;
static PyTypeObject *Module_Type;

typedef struct {
    PyObject_HEAD
    cuk_function *f;
    PyObject *module;
    char *fmt;          /* prepared argument formats (struct-module letters) or NULL */
    int nfmt;
    PyObject *handlers; /* (In, Out, InOut) classes, from cuk.driver */
    cuk_vectorcallfunc vectorcall; /* kernel_vectorcall */
    /* The last block and grid objects and their values: launches in a loop pass the same
       tuples, so they are parsed once (the references keep the objects, so the pointers
       cannot be reused for others). */
    PyObject *last_obj[2];
    cuk_dim3 last_dim[2];
} Kernel;
static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* A new Kernel object for f of module mo. */
static PyObject *kernel_make(PyTypeObject *tp, cuk_function *f, PyObject *mo) {
    Kernel *k = (Kernel *)heap_alloc(tp);
    if (!k) return NULL;
    k->f = f;
    k->module = Py_NewRef(mo);
    k->fmt = NULL;
    k->nfmt = 0;
    k->handlers = NULL;
    k->vectorcall = kernel_vectorcall;
    k->last_obj[0] = k->last_obj[1] = NULL;
    return (PyObject *)k;
}
static PyTypeObject *Kernel_Type;
static PyObject *arg_handler_types; /* tuple (In, Out, InOut), registered by cuk.driver */

static void module_dealloc(PyObject *self) {
    /* Compiled modules belong to the runtime's cache and live until shutdown. */
    heap_free(self);
}

/* module_compile(source, options, names, program_name) */
static PyObject *py_module_compile(PyObject *m, PyObject *args) {
    (void)m;
    const char *src, *pname = NULL;
    PyObject *opts, *names;
    if (!PyArg_ParseTuple(args, "sOO|z", &src, &opts, &names, &pname)) return NULL;
    PyObject *ot = PySequence_Tuple(opts), *nt = ot ? PySequence_Tuple(names) : NULL;
    if (!nt) {
        Py_XDECREF(ot);
        return NULL;
    }
    Py_ssize_t no = PyTuple_Size(ot), nn = PyTuple_Size(nt);
    const char **ov = PyMem_Calloc((size_t)no + 1, sizeof(char *)), **nv = PyMem_Calloc((size_t)nn + 1, sizeof(char *));
    PyObject *r = NULL;
    if (!ov || !nv) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < no; i++)
        if (!(ov[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(ot, i), NULL))) goto out;
    for (Py_ssize_t i = 0; i < nn; i++)
        if (!(nv[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(nt, i), NULL))) goto out;
    cuk_compile_opts o = {0};
    o.options = ov;
    o.noptions = (int)no;
    o.names = nv;
    o.nnames = (int)nn;
    o.program_name = pname;
    cuk_module *mod;
    cuk_status s;
    Py_BEGIN_ALLOW_THREADS s = cuk_module_compile(&mod, src, &o);
    Py_END_ALLOW_THREADS if (s) {
        raise_status(s);
        goto out;
    }
    Module *mo = PyObject_New(Module, Module_Type);
    if (mo) mo->m = mod;
    r = (PyObject *)mo;
out:
    PyMem_Free(ov);
    PyMem_Free(nv);
    Py_DECREF(ot);
    Py_DECREF(nt);
    return r;
}

static PyObject *module_get_function(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!name) return NULL;
    cuk_function *f;
    CHECK(cuk_module_function(((Module *)self)->m, name, &f));
    return kernel_make(Kernel_Type, f, self);
}

/* get_global(name) -> (device pointer, bytes) */
static PyObject *module_get_global(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!name) return NULL;
    if (xdrv_load() < 0) return NULL;
    if (!xdrv.getglobal) return PyErr_Format(Error, "get_global: the driver has no cuModuleGetGlobal_v2");
    /* cuk_module starts with its CUmodule (runtime/module.c); the runtime offers no
       accessor yet, so read it from there. */
    void *cumod = *(void **)((Module *)self)->m;
    cuk_devptr p;
    size_t n;
    int r = xdrv.getglobal(&p, &n, cumod, name);
    if (r) return PyErr_Format(LogicError, "cuModuleGetGlobal failed for '%s': CUDA error %d (no __device__ or __constant__ variable of that name?)", name, r);
    return Py_BuildValue("(Kn)", p, (Py_ssize_t)n);
}
static PyMethodDef module_methods[] = {{"get_function", module_get_function, METH_O, NULL},
                                       {"get_global", module_get_global, METH_O, NULL},
                                       {NULL, NULL, 0, NULL}};
static PyType_Slot module_slots[] = {{Py_tp_dealloc, module_dealloc}, {Py_tp_methods, module_methods}, {0, 0}};
static PyType_Spec module_spec = {"cuk._cuk.Module", sizeof(Module), 0, Py_TPFLAGS_DEFAULT, module_slots};

static void kernel_dealloc(PyObject *self) {
    Kernel *k = (Kernel *)self;
    PyMem_Free(k->fmt);
    Py_XDECREF(k->module);
    Py_XDECREF(k->handlers);
    Py_XDECREF(k->last_obj[0]);
    Py_XDECREF(k->last_obj[1]);
    heap_free(self);
}

/* One kernel argument's bytes. */
typedef struct {
    _Alignas(16) unsigned char b[16];
} Slot16;

/* Arguments of a launch: values, pointers to them, and In/Out/InOut staging. */
typedef struct Pack {
    int n;
    Slot16 *vals;
    void **ptrs;
    unsigned char *big;  /* struct-by-value bytes (NumPy void / arrays), heap */
    size_t nbig, capbig;
    struct Stage {
        cuk_devptr d;
        Py_buffer b;
        int out; /* copy back after the launch */
    } *stage;
    int nstage;
    Slot16 vstack[16];
    void *pstack[16];
} Pack;

static void pack_free(Pack *p, bool copy_back) {
    for (int i = 0; i < p->nstage; i++) {
        struct Stage *s = &p->stage[i];
        if (copy_back && s->out && s->b.len) {
            cuk_status st;
            Py_BEGIN_ALLOW_THREADS st = cuk_memcpy_dtoh(s->b.buf, s->d, (size_t)s->b.len);
            Py_END_ALLOW_THREADS if (st && !PyErr_Occurred()) raise_status(st);
        }
        cuk_mem_free(s->d);
        PyBuffer_Release(&s->b);
    }
    PyMem_Free(p->stage);
    PyMem_Free(p->big);
    if (p->vals != p->vstack) PyMem_Free(p->vals);
    if (p->ptrs != p->pstack) PyMem_Free((void *)p->ptrs);
}

/* Stages an In/Out/InOut argument: device memory, copied in for In and InOut. */
static int stage_arg(Pack *p, PyObject *h, int which, cuk_devptr *out) {
    PyObject *arr = PyObject_GetAttrString(h, "array");
    if (!arr) return -1;
    struct Stage *s = &p->stage[p->nstage];
    int flags = PyBUF_C_CONTIGUOUS | (which ? PyBUF_WRITABLE : 0);
    int r = PyObject_GetBuffer(arr, &s->b, flags);
    Py_DECREF(arr);
    if (r < 0) return -1;
    cuk_status st = cuk_mem_alloc(&s->d, (size_t)s->b.len);
    if (st) {
        PyBuffer_Release(&s->b);
        raise_status(st);
        return -1;
    }
    s->out = which != 0;
    p->nstage++;
    if (which != 1 && s->b.len) { /* In or InOut */
        Py_BEGIN_ALLOW_THREADS st = cuk_memcpy_htod(s->d, s->b.buf, (size_t)s->b.len);
        Py_END_ALLOW_THREADS if (st) {
            raise_status(st);
            return -1;
        }
    }
    *out = s->d;
    return 0;
}

/* How an unprepared launch passes an object, by its type (found once per type, so that
   a NumPy scalar is not asked for attributes it lacks on every launch). */
enum { LK_POINTER = 1, LK_HANDLER, LK_VALUE, LK_BAD };
#define LAUNCH_CACHE 32
static struct {
    PyTypeObject *tp; /* a strong reference */
    int kind;
} launch_cache[LAUNCH_CACHE];
static int nlaunch_cache;

static int launch_kind(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    if (tp == DeviceArray_Type) return LK_POINTER;
    for (int i = 0; i < nlaunch_cache; i++)
        if (launch_cache[i].tp == tp) return launch_cache[i].kind;
    int kind, h = arg_handler_types ? PyObject_IsInstance(o, arg_handler_types) : 0;
    if (h < 0) return -1;
    if (h) kind = LK_HANDLER;
    else if (PyObject_TypeCheck(o, DeviceArray_Type) || PyObject_TypeCheck(o, Alloc_Type) || PyObject_HasAttr(o, s_cai) ||
             PyObject_HasAttr(o, s_gpudata))
        kind = LK_POINTER;
    else if (PyObject_CheckBuffer(o) && !PyLong_Check(o) && !PyFloat_Check(o))
        kind = LK_VALUE;
    else
        kind = LK_BAD;
    /* A type whose instances may or may not have the attributes (instance dicts) is
       still decided per type: kernels take one kind of object per type in practice. */
    if (nlaunch_cache < LAUNCH_CACHE) {
        launch_cache[nlaunch_cache].tp = (PyTypeObject *)Py_NewRef((PyObject *)tp);
        launch_cache[nlaunch_cache].kind = kind;
        nlaunch_cache++;
    }
    return kind;
}

/* Packs one argument by PyCUDA's rules: NumPy scalars by value, device memory (allocations,
   arrays, __cuda_array_interface__, .gpudata) as pointers, In/Out/InOut staged. */
static int pack_arg(Pack *p, int i, PyObject *o, char fmt) {
    unsigned char *dst = p->vals[i].b;
    p->ptrs[i] = dst;
    if (fmt) { /* prepared: the format decides */
        switch (fmt) {
        case 'P': {
            cuk_devptr d;
            if (devptr_of(o, &d) < 0) return -1;
            memcpy(dst, &d, 8);
            return 0;
        }
        case 'f': {
            float v = (float)PyFloat_AsDouble(o);
            memcpy(dst, &v, 4);
            break;
        }
        case 'd': {
            double v = PyFloat_AsDouble(o);
            memcpy(dst, &v, 8);
            break;
        }
        case 'b': case 'B': case 'h': case 'H': case 'i': case 'I': case 'l': case 'L': case 'q': case 'Q': case '?': {
            PyObject *ix = PyNumber_Index(o);
            if (!ix && (fmt == 'l' || fmt == 'L' || fmt == 'q' || fmt == 'Q')) {
                /* np.intp for a pointer: a GPUArray, allocation or CUDA array works too */
                PyErr_Clear();
                cuk_devptr d;
                if (devptr_of(o, &d) < 0) return -1;
                memcpy(dst, &d, 8);
                return 0;
            }
            if (!ix) return -1;
            long long v = 0;
            unsigned long long u = 0;
            bool uns = fmt == 'B' || fmt == 'H' || fmt == 'I' || fmt == 'L' || fmt == 'Q';
            if (uns) u = PyLong_AsUnsignedLongLong(ix);
            else v = PyLong_AsLongLong(ix);
            Py_DECREF(ix);
            if (PyErr_Occurred()) return -1;
            int size = (fmt == 'b' || fmt == 'B' || fmt == '?') ? 1 : (fmt == 'h' || fmt == 'H') ? 2 : (fmt == 'i' || fmt == 'I') ? 4 : 8;
            uint64_t w = uns ? u : (uint64_t)v;
            memcpy(dst, &w, (size_t)size); /* little-endian: the low bytes */
            break;
        }
        default: PyErr_Format(PyExc_ValueError, "prepared call: unsupported format letter '%c'", fmt); return -1;
        }
        return PyErr_Occurred() ? -1 : 0;
    }
    int lk = launch_kind(o);
    if (lk < 0) return -1;
    if (lk == LK_POINTER) {
        cuk_devptr d;
        if (devptr_of(o, &d) < 0) return -1;
        memcpy(dst, &d, 8);
        return 0;
    }
    if (lk == LK_HANDLER) {
        PyObject *w = PyObject_GetAttrString(o, "_which"); /* 0 In, 1 Out, 2 InOut */
        if (!w) return -1;
        int which = (int)PyLong_AsLong(w);
        Py_DECREF(w);
        if (!p->stage && !(p->stage = PyMem_Calloc((size_t)p->n, sizeof *p->stage))) {
            PyErr_NoMemory();
            return -1;
        }
        cuk_devptr d;
        if (stage_arg(p, o, which, &d) < 0) return -1;
        memcpy(dst, &d, 8);
        return 0;
    }
    if (lk == LK_VALUE) {
        /* NumPy scalars (np.float32(2), np.int32(n)) and structs by value. */
        Py_buffer b;
        if (PyObject_GetBuffer(o, &b, PyBUF_SIMPLE) < 0) return -1;
        if (b.len <= 16) {
            memcpy(dst, b.buf, (size_t)b.len);
        } else {
            if (!p->big) {
                /* Pointers into big must stay valid: size it once for everything. */
                p->capbig = 4096;
                if (!(p->big = PyMem_Malloc(p->capbig))) {
                    PyBuffer_Release(&b);
                    PyErr_NoMemory();
                    return -1;
                }
            }
            if (p->nbig + (size_t)b.len + 16 > p->capbig) {
                PyBuffer_Release(&b);
                PyErr_SetString(PyExc_ValueError, "kernel arguments passed by value larger than 4 KiB in all");
                return -1;
            }
            size_t off = (p->nbig + 15) & ~(size_t)15;
            memcpy(p->big + off, b.buf, (size_t)b.len);
            p->ptrs[i] = p->big + off;
            p->nbig = off + (size_t)b.len;
        }
        PyBuffer_Release(&b);
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "invalid type on parameter #%d (0-based): pass NumPy scalars (numpy.int32(n), numpy.float32(x)) for values "
                 "and device memory for pointers",
                 i);
    return -1;
}

static int dim3_arg(PyObject *o, cuk_dim3 *d, const char *what) {
    d->x = d->y = d->z = 1;
    if (!o || o == Py_None) return 0;
    PyObject *t = PySequence_Tuple(o);
    if (!t) {
        PyErr_Clear();
        long v = PyLong_AsLong(o);
        if (PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s must be a tuple of up to 3 ints", what);
            return -1;
        }
        d->x = (unsigned)v;
        return 0;
    }
    Py_ssize_t n = PyTuple_Size(t);
    if (n < 1 || n > 3) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ValueError, "%s must have 1 to 3 entries", what);
        return -1;
    }
    unsigned v[3] = {1, 1, 1};
    for (Py_ssize_t k = 0; k < n; k++) v[k] = (unsigned)PyLong_AsUnsignedLong(PyTuple_GetItem(t, k));
    Py_DECREF(t);
    if (PyErr_Occurred()) return -1;
    d->x = v[0], d->y = v[1], d->z = v[2];
    return 0;
}

/* dim3_arg through the kernel's one-entry cache (which = 0 block, 1 grid). */
static int kdim3(Kernel *k, int which, PyObject *o, cuk_dim3 *d) {
    if (o && o == k->last_obj[which]) {
        *d = k->last_dim[which];
        return 0;
    }
    if (dim3_arg(o, d, which ? "grid" : "block") < 0) return -1;
    if (o && PyTuple_Check(o)) { /* immutable: safe to remember */
        PyObject *old = k->last_obj[which];
        k->last_obj[which] = Py_NewRef(o);
        Py_XDECREF(old);
        k->last_dim[which] = *d;
    }
    return 0;
}

/* The launch shared by __call__ and the prepared calls. Returns seconds if timed. */
static PyObject *do_launch(Kernel *k, const char *fmt, PyObject *const *argv, Py_ssize_t n, cuk_dim3 grid, cuk_dim3 block,
                           cuk_stream *s, unsigned shared, bool timed) {
    if (fmt && n != k->nfmt)
        return PyErr_Format(PyExc_TypeError, "prepared call: %d arguments were prepared, %zd given", k->nfmt, n);
    Pack p;
    p.n = (int)n;
    p.vals = n <= 16 ? p.vstack : PyMem_Calloc((size_t)n, sizeof(Slot16));
    p.ptrs = n <= 16 ? p.pstack : PyMem_Calloc((size_t)n, sizeof(void *));
    p.big = NULL; /* both made on first need */
    p.nbig = p.capbig = 0;
    p.stage = NULL;
    p.nstage = 0;
    if (!p.vals || !p.ptrs) {
        if (p.vals != p.vstack) PyMem_Free(p.vals);
        if (p.ptrs != p.pstack) PyMem_Free((void *)p.ptrs);
        return PyErr_NoMemory();
    }
    PyObject *r = NULL;
    bool launched = false;
    cuk_event *e0 = NULL, *e1 = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (pack_arg(&p, (int)i, argv[i], fmt ? fmt[i] : 0) < 0) goto out;
    cuk_status st;
    if (timed) {
        if ((st = cuk_event_create(&e0)) || (st = cuk_event_create(&e1)) || (st = cuk_event_record(e0, s))) {
            raise_status(st);
            goto out;
        }
    }
    st = cuk_launch(k->f, grid, block, shared, s, p.ptrs);
    if (st) {
        raise_status(st);
        goto out;
    }
    launched = true;
    if (timed) {
        float ms = 0;
        if ((st = cuk_event_record(e1, s))) {
            raise_status(st);
            goto out;
        }
        Py_BEGIN_ALLOW_THREADS st = cuk_event_synchronize(e1);
        Py_END_ALLOW_THREADS if (st || (st = cuk_event_elapsed(&ms, e0, e1))) {
            raise_status(st);
            goto out;
        }
        r = PyFloat_FromDouble(ms / 1000.0);
    } else {
        r = Py_NewRef(Py_None);
    }
    if (p.nstage) { /* Out and InOut are copied back: the copy waits for the kernel. */
        Py_BEGIN_ALLOW_THREADS st = s ? cuk_stream_synchronize(s) : cuk_synchronize();
        Py_END_ALLOW_THREADS if (st) {
            Py_CLEAR(r);
            raise_status(st);
        }
    }
out:
    if (e0) cuk_event_destroy(e0);
    if (e1) cuk_event_destroy(e1);
    pack_free(&p, launched && r);
    if (r && PyErr_Occurred()) Py_CLEAR(r);
    return r;
}

static PyObject *s_block, *s_grid, *s_stream, *s_shared, *s_time_kernel, *s_texrefs;

/* Which launch keyword a name is: 0 block, 1 grid, 2 stream, 3 shared, 4 time_kernel,
   5 texrefs, -1 none. Names at call sites are interned, so pointers nearly always decide. */
static int launch_keyword(PyObject *key) {
    PyObject *names[6] = {s_block, s_grid, s_stream, s_shared, s_time_kernel, s_texrefs};
    for (int j = 0; j < 6; j++)
        if (key == names[j]) return j;
    for (int j = 0; j < 6; j++)
        if (PyUnicode_Check(key) && PyUnicode_Compare(key, names[j]) == 0) return j;
    return -1;
}

/* A PyCUDA-style launch: kw[] holds block, grid, stream, shared, time_kernel (or NULL). */
static PyObject *kernel_launch(Kernel *k, PyObject *const *argv, Py_ssize_t n, PyObject *const *kw) {
    if (!kw[0]) {
        PyErr_SetString(PyExc_ValueError, "must specify block size");
        return NULL;
    }
    cuk_dim3 grid, block;
    cuk_stream *s;
    if (kdim3(k, 0, kw[0], &block) < 0 || kdim3(k, 1, kw[1], &grid) < 0 || stream_of(kw[2], &s) < 0) return NULL;
    unsigned shared = kw[3] ? (unsigned)PyLong_AsUnsignedLong(kw[3]) : 0;
    if (PyErr_Occurred()) return NULL;
    int timed = kw[4] ? PyObject_IsTrue(kw[4]) : 0;
    if (timed < 0) return NULL;
    /* __call__ infers types even on a prepared function: no format */
    return do_launch(k, NULL, argv, n, grid, block, s, shared, timed > 0);
}

static PyObject *bad_launch_keyword(void) {
    PyErr_SetString(PyExc_TypeError, "unknown keyword argument: a launch takes block, grid, stream, shared, texrefs, time_kernel");
    return NULL;
}

/* f(*args, block=(x,y,z), grid=(x,y), stream=None, shared=0, time_kernel=False), called
   without tuples or dicts. */
static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t n = (Py_ssize_t)(nargsf & ~CUK_VECTORCALL_ARGUMENTS_OFFSET);
    PyObject *kw[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        int w = launch_keyword(PyTuple_GetItem(kwnames, j));
        if (w < 0) return bad_launch_keyword();
        kw[w] = args[n + j];
    }
    return kernel_launch((Kernel *)self, args, n, kw);
}

/* tp_call: the same for callers without vectorcall (and Python subclasses). */
static PyObject *kernel_call(PyObject *self, PyObject *args, PyObject *kwd) {
    PyObject *kw[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (kwd) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (PyDict_Next(kwd, &pos, &key, &val)) {
            int w = launch_keyword(key);
            if (w < 0) return bad_launch_keyword();
            kw[w] = val;
        }
    }
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *stack[16], **argv = n <= 16 ? stack : PyMem_Malloc(sizeof *argv * (size_t)n);
    if (!argv) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) argv[i] = PyTuple_GetItem(args, i);
    PyObject *r = kernel_launch((Kernel *)self, argv, n, kw);
    if (argv != stack) PyMem_Free(argv);
    return r;
}

/* The prepared calls, PyCUDA's signatures, called without building tuples or dicts:
   prepared_call(grid, block, *args, shared_size=0)
   prepared_async_call(grid, block, stream, *args, shared_size=0) */
static PyObject *prepared(Kernel *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int fixed, bool timed) {
    if (!k->fmt) return PyErr_Format(LogicError, "call prepare() before a prepared call");
    if (nargs < fixed)
        return PyErr_Format(PyExc_TypeError, "a prepared call takes grid, block%s and the kernel's arguments",
                            fixed == 3 ? ", stream" : "");
    unsigned shared = 0;
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GetItem(kwnames, j);
        if (PyUnicode_CompareWithASCIIString(key, "shared_size") != 0)
            return PyErr_Format(PyExc_TypeError, "a prepared call takes no keyword argument '%U'", key);
        shared = (unsigned)PyLong_AsUnsignedLong(args[nargs + j]);
        if (PyErr_Occurred()) return NULL;
    }
    cuk_dim3 grid, block;
    cuk_stream *s = NULL;
    if (kdim3(k, 1, args[0], &grid) < 0 || kdim3(k, 0, args[1], &block) < 0 ||
        (fixed == 3 && stream_of(args[2], &s) < 0))
        return NULL;
    return do_launch(k, k->fmt, args + fixed, nargs - fixed, grid, block, s, shared, timed);
}
static PyObject *kernel_prepared_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    return prepared((Kernel *)self, args, nargs, kwnames, 2, false);
}
static PyObject *kernel_prepared_async_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    return prepared((Kernel *)self, args, nargs, kwnames, 3, false);
}
/* _prepared_timed(grid, block, *args, shared_size=0): seconds */
static PyObject *kernel_prepared_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    return prepared((Kernel *)self, args, nargs, kwnames, 2, true);
}

/* _prepare(format): the argument formats, struct-module letters ('P' pointer, 'i', 'f', ...). */
static PyObject *kernel_prepare(PyObject *self, PyObject *arg) {
    Kernel *k = (Kernel *)self;
    Py_ssize_t n;
    const char *f = PyUnicode_AsUTF8AndSize(arg, &n);
    if (!f) return NULL;
    char *c = PyMem_Malloc((size_t)n + 1);
    if (!c) return PyErr_NoMemory();
    int m = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (f[i] != ' ' && f[i] != '@' && f[i] != '=' && f[i] != '<') c[m++] = f[i] == 'p' ? 'P' : f[i];
    c[m] = 0;
    PyMem_Free(k->fmt);
    k->fmt = c;
    k->nfmt = m;
    return Py_NewRef(self);
}

static PyObject *kernel_attrs(PyObject *self, PyObject *u) {
    (void)u;
    cuk_function_info fi;
    CHECK(cuk_function_info_get(((Kernel *)self)->f, &fi));
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i}", "max_threads_per_block", fi.max_threads_per_block, "num_regs", fi.num_regs,
                         "shared_size_bytes", fi.shared_bytes, "occupancy_block", fi.occupancy_block, "blocks_per_sm",
                         fi.blocks_per_sm);
}
/* Kernel(module, name): the kernel of a module (cuk.compiler.SourceModule makes these). */
static PyObject *kernel_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)kw;
    PyObject *mo;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os", &mo, &name)) return NULL;
    if (!PyObject_TypeCheck(mo, Module_Type)) return PyErr_Format(PyExc_TypeError, "Kernel needs a compiled module");
    cuk_function *f;
    CHECK(cuk_module_function(((Module *)mo)->m, name, &f));
    return kernel_make(tp, f, mo);
}

#define FASTKW(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
/* prepare(arg_types, block=None, shared=None, texrefs=()): arg_types is a struct-module
   format ("PiP") or a list of NumPy types (cuk.driver._format_of turns it into one). */
static PyObject *kernel_prepare_api(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwl[] = {"arg_types", "block", "shared", "texrefs", NULL};
    PyObject *at, *block = NULL, *shared = NULL, *tex = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO", kwl, &at, &block, &shared, &tex)) return NULL;
    PyObject *fmt = NULL;
    if (PyUnicode_Check(at)) {
        fmt = Py_NewRef(at);
    } else {
        PyObject *mod = PyImport_ImportModule("cuk.driver");
        PyObject *fn = mod ? PyObject_GetAttrString(mod, "_format_of") : NULL;
        fmt = fn ? PyObject_CallFunctionObjArgs(fn, at, NULL) : NULL;
        Py_XDECREF(fn);
        Py_XDECREF(mod);
    }
    if (!fmt) return NULL;
    PyObject *r = kernel_prepare(self, fmt);
    Py_DECREF(fmt);
    return r;
}
/* prepared_timed_call(grid, block, *args, shared_size=0): as PyCUDA, a callable that
   gives the kernel's run time in seconds. */
static PyObject *kernel_prepared_timed_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *t = prepared((Kernel *)self, args, nargs, kwnames, 2, true);
    if (!t) return NULL;
    PyObject *r = PyObject_GetAttrString(t, "__float__"); /* called, it returns t */
    Py_DECREF(t);
    return r;
}
static PyObject *kernel_get_attribute(PyObject *self, PyObject *attr) {
    PyObject *d = kernel_attrs(self, NULL);
    if (!d) return NULL;
    PyObject *r = PyObject_GetItem(d, attr);
    Py_DECREF(d);
    return r;
}
static PyObject *kernel_attr_get(PyObject *self, void *name) {
    PyObject *d = kernel_attrs(self, NULL);
    if (!d) return NULL;
    PyObject *r = PyDict_GetItemString(d, (const char *)name);
    Py_XINCREF(r);
    Py_DECREF(d);
    if (!r && !PyErr_Occurred()) PyErr_SetString(PyExc_AttributeError, (const char *)name);
    return r;
}
static PyObject *kernel_zero(PyObject *self, void *c) {
    (void)self;
    (void)c;
    return PyLong_FromLong(0);
}
static PyObject *kernel_noop(PyObject *self, PyObject *arg) {
    (void)self;
    (void)arg;
    Py_RETURN_NONE;
}
static PyGetSetDef kernel_getset[] = {
    {"num_regs", kernel_attr_get, NULL, "registers per thread", "num_regs"},
    {"shared_size_bytes", kernel_attr_get, NULL, "static shared memory", "shared_size_bytes"},
    {"max_threads_per_block", kernel_attr_get, NULL, NULL, "max_threads_per_block"},
    {"local_size_bytes", kernel_zero, NULL, NULL, NULL},
    {"const_size_bytes", kernel_zero, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Kernel, vectorcall), READONLY, NULL}, {NULL, 0, 0, 0, NULL}};

static PyMethodDef kernel_methods[] = {{"_prepare", kernel_prepare, METH_O, NULL},
                                       {"prepare", (PyCFunction)(void (*)(void))kernel_prepare_api, METH_VARARGS | METH_KEYWORDS,
                                        "prepare(arg_types, block=None, shared=None, texrefs=())"},
                                       {"prepared_timed_call", FASTKW(kernel_prepared_timed_call),
                                        "prepared_timed_call(grid, block, *args, shared_size=0) -> callable giving seconds"},
                                       {"get_attribute", kernel_get_attribute, METH_O, NULL},
                                       {"set_cache_config", kernel_noop, METH_O, "accepted; the driver decides"},
                                       {"set_shared_size", kernel_noop, METH_O, "accepted; the driver decides"},
                                       {"prepared_call", FASTKW(kernel_prepared_call), "prepared_call(grid, block, *args, shared_size=0)"},
                                       {"prepared_async_call", FASTKW(kernel_prepared_async_call),
                                        "prepared_async_call(grid, block, stream, *args, shared_size=0)"},
                                       {"_prepared_timed", FASTKW(kernel_prepared_timed), NULL},
                                       {"_attributes", kernel_attrs, METH_NOARGS, NULL},
                                       {NULL, NULL, 0, NULL}};
static PyType_Slot kernel_slots[] = {{Py_tp_dealloc, kernel_dealloc},
                                     {Py_tp_new, kernel_new},
                                     {Py_tp_call, kernel_call},
                                     {Py_tp_methods, kernel_methods},
                                     {Py_tp_getset, kernel_getset},
                                     {Py_tp_members, kernel_members},
                                     {Py_tp_doc, "A kernel of a SourceModule. Call it with block=, grid=, stream=, shared= "
                                                 "(and time_kernel=True for its run time in seconds), or prepare it."},
                                     {0, 0}};
static PyType_Spec kernel_spec = {"cuk.driver.Function", sizeof(Kernel), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL, kernel_slots};

/* ---- driver-level functions ------------------------------------------------------------------ */

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
static PyObject *py_mem_free(PyObject *m, PyObject *arg) {
    (void)m;
    cuk_devptr p;
    if (devptr_of(arg, &p) < 0) return NULL;
    CHECK(cuk_mem_free(p));
    Py_RETURN_NONE;
}

/* memcpy_htod(dst, src_buffer, stream=None, async=False) */
static PyObject *py_memcpy_htod(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *dst, *src, *so = Py_None;
    int async = 0;
    if (!PyArg_ParseTuple(args, "OO|Op", &dst, &src, &so, &async)) return NULL;
    cuk_devptr d;
    cuk_stream *s;
    if (devptr_of(dst, &d) < 0 || stream_of(so, &s) < 0) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(src, &b, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    cuk_status st = CUK_OK;
    if (b.len) {
        Py_BEGIN_ALLOW_THREADS st = async ? cuk_memcpy_htod_async(d, b.buf, (size_t)b.len, s) : cuk_memcpy_htod(d, b.buf, (size_t)b.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&b);
    if (st) return raise_status(st);
    Py_RETURN_NONE;
}
/* memcpy_dtoh(dst_buffer, src, stream=None, async=False) */
static PyObject *py_memcpy_dtoh(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *dst, *src, *so = Py_None;
    int async = 0;
    if (!PyArg_ParseTuple(args, "OO|Op", &dst, &src, &so, &async)) return NULL;
    cuk_devptr d;
    cuk_stream *s;
    if (devptr_of(src, &d) < 0 || stream_of(so, &s) < 0) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(dst, &b, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    cuk_status st = CUK_OK;
    if (b.len) {
        Py_BEGIN_ALLOW_THREADS st = async ? cuk_memcpy_dtoh_async(b.buf, d, (size_t)b.len, s) : cuk_memcpy_dtoh(b.buf, d, (size_t)b.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&b);
    if (st) return raise_status(st);
    Py_RETURN_NONE;
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

static PyObject *py_ctx(PyObject *m, PyObject *arg) {
    (void)m;
    /* ctx("push"|"pop"|"current"): the primary context of the current device. */
    const char *op = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!op || xdrv_load() < 0) return NULL;
    if (!xdrv.push || !xdrv.pop || !xdrv.get) return PyErr_Format(Error, "the driver lacks the context calls");
    void *c = NULL;
    if (!strcmp(op, "current")) {
        CHECK(cuk_synchronize() == CUK_OK ? CUK_OK : CUK_OK); /* makes the primary context current */
        if (xdrv.get(&c)) return PyErr_Format(Error, "cuCtxGetCurrent failed");
        return PyLong_FromVoidPtr(c);
    }
    if (!strcmp(op, "push")) {
        int dev;
        CHECK(cuk_device_current(&dev));
        CHECK(cuk_synchronize()); /* makes the primary context current on this thread */
        if (xdrv.get(&c) || !c) return PyErr_Format(Error, "no current context to push");
        int r = xdrv.push(c);
        if (r) return PyErr_Format(LogicError, "cuCtxPushCurrent failed: CUDA error %d", r);
        Py_RETURN_NONE;
    }
    if (!strcmp(op, "pop")) {
        int r = xdrv.pop(&c);
        if (r) return PyErr_Format(LogicError, "cuCtxPopCurrent failed: CUDA error %d (context stack empty?)", r);
        return PyLong_FromVoidPtr(c);
    }
    return PyErr_Format(PyExc_ValueError, "ctx: unknown operation '%s'", op);
}

static PyObject *py_cache_stats(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    cuk_cache_stats s;
    CHECK(cuk_cache_stats_get(&s));
    return Py_BuildValue("{s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "dir", s.dir, "entries", s.entries, "bytes", s.bytes, "mem_hits",
                         s.mem_hits, "disk_hits", s.disk_hits, "misses", s.misses, "disk_writes", s.disk_writes, "corrupt", s.corrupt);
}

static PyObject *py_set_hooks(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *conv, *handlers, *maker = NULL;
    if (!PyArg_ParseTuple(args, "OO|O", &conv, &handlers, &maker)) return NULL;
    if (maker) {
        Py_XDECREF(maker_lookup);
        maker_lookup = Py_NewRef(maker);
        Py_XDECREF(maker_cache);
        if (!(maker_cache = PyDict_New())) return NULL;
    }
    Py_XDECREF(foreign_hook);
    foreign_hook = Py_NewRef(conv);
    Py_XDECREF(arg_handler_types);
    arg_handler_types = Py_NewRef(handlers);
    Py_RETURN_NONE;
}

static PyObject *py_version(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyUnicode_FromString(cuk_version());
}

static PyMethodDef module_funcs[] = {
    {"compile", py_compile, METH_VARARGS, "compile(src_or_path, backend=0, name=None) -> Program"},
    {"device_empty", py_device_empty, METH_VARARGS, "device_empty(shape, dtype, zero=False) -> DeviceArray"},
    {"device_wrap", py_device_wrap, METH_VARARGS, "device_wrap(ptr, shape, dtype, base) -> DeviceArray (no copy)"},
    {"to_device", py_to_device, METH_O, "to_device(host_array) -> DeviceArray"},
    {"host_alloc", py_host_alloc, METH_O, "host_alloc(nbytes) -> pinned buffer"},
    {"mem_alloc", py_mem_alloc, METH_O, "mem_alloc(nbytes) -> DeviceAllocation"},
    {"mem_free", py_mem_free, METH_O, NULL},
    {"mem_info", py_mem_info, METH_NOARGS, "(free, total) bytes"},
    {"mem_stats", py_mem_stats, METH_NOARGS, NULL},
    {"mem_trim", py_mem_trim, METH_NOARGS, NULL},
    {"memcpy_htod", py_memcpy_htod, METH_VARARGS, NULL},
    {"memcpy_dtoh", py_memcpy_dtoh, METH_VARARGS, NULL},
    {"memcpy_dtod", py_memcpy_dtod, METH_VARARGS, NULL},
    {"memset_d8", py_memset_d8, METH_VARARGS, NULL},
    {"module_compile", py_module_compile, METH_VARARGS, NULL},
    {"init", py_init, METH_NOARGS, NULL},
    {"gpu_available", py_gpu_available, METH_NOARGS, "(ok, why not)"},
    {"device_count", py_device_count, METH_NOARGS, NULL},
    {"device_props", py_device_props, METH_O, NULL},
    {"device_select", py_device_select, METH_O, NULL},
    {"device_current", py_device_current, METH_NOARGS, NULL},
    {"synchronize", py_synchronize, METH_NOARGS, NULL},
    {"ctx", py_ctx, METH_O, NULL},
    {"cache_stats", py_cache_stats, METH_NOARGS, NULL},
    {"_set_hooks", py_set_hooks, METH_VARARGS, NULL},
    {"version", py_version, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_cuk", "cuk's C extension", -1, module_funcs, NULL, NULL, NULL, NULL};

static PyTypeObject *make_type(PyObject *mod, PyType_Spec *spec, const char *export_name) {
    PyTypeObject *t = (PyTypeObject *)PyType_FromSpec(spec);
    if (t && export_name && PyModule_AddObjectRef(mod, export_name, (PyObject *)t) < 0) Py_CLEAR(t);
    return t;
}

static PyObject *new_exc(PyObject *mod, const char *name, PyObject *base, const char *doc) {
    char full[128];
    snprintf(full, sizeof full, "cuk.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (e && PyModule_AddObjectRef(mod, name, e) < 0) Py_CLEAR(e);
    return e;
}

PyMODINIT_FUNC PyInit__cuk(void) {
    PyObject *mod = PyModule_Create(&moddef);
    if (!mod) return NULL;
    if (!(Error = new_exc(mod, "Error", PyExc_Exception, "Base of cuk's errors."))) goto fail;
    if (!(CompileError = new_exc(mod, "CompileError", Error, "A compile error; file, line, column and message say where and what.")))
        goto fail;
    if (!(RunError = new_exc(mod, "RunError", Error, "A program failed while running (file, line, column, message)."))) goto fail;
    PyObject *bases = PyTuple_Pack(2, Error, PyExc_ValueError);
    ArgumentError = bases ? new_exc(mod, "ArgumentError", bases, "A bad argument: wrong dtype, shape or value (a ValueError).") : NULL;
    Py_XDECREF(bases);
    if (!ArgumentError) goto fail;
    bases = PyTuple_Pack(2, Error, PyExc_MemoryError);
    DevMemoryError = bases ? new_exc(mod, "MemoryError", bases, "Device or pinned memory exhausted.") : NULL;
    Py_XDECREF(bases);
    if (!DevMemoryError) goto fail;
    if (!(LogicError = new_exc(mod, "LogicError", Error, "A misuse of the API (no such kernel, empty context stack)."))) goto fail;
    if (!(LaunchError = new_exc(mod, "LaunchError", Error, "A CUDA driver call failed (e.g. an illegal address in a kernel)."))) goto fail;
    if (!(NoDeviceError = new_exc(mod, "NoDeviceError", Error, "No CUDA driver, GPU or NVRTC."))) goto fail;
    if (!(HostBuf_Type = make_type(mod, &hostbuf_spec, NULL))) goto fail;
    if (!(DeviceArray_Type = make_type(mod, &devarray_spec, "DeviceArray"))) goto fail;
    if (!(Program_Type = make_type(mod, &program_spec, "Program"))) goto fail;
    if (!(Function_Type = make_type(mod, &function_spec, "Function"))) goto fail;
    if (!(Pinned_Type = make_type(mod, &pinned_spec, "PinnedBuffer"))) goto fail;
    if (!(Alloc_Type = make_type(mod, &alloc_spec, "DeviceAllocation"))) goto fail;
    if (!(Stream_Type = make_type(mod, &stream_spec, "Stream"))) goto fail;
    if (!(Event_Type = make_type(mod, &event_spec, "Event"))) goto fail;
    if (!(Module_Type = make_type(mod, &module_spec, "Module"))) goto fail;
    if (!(Kernel_Type = make_type(mod, &kernel_spec, "Kernel"))) goto fail;
    s_cai = PyUnicode_InternFromString("__cuda_array_interface__");
    s_dlpack = PyUnicode_InternFromString("__dlpack__");
    s_gpudata = PyUnicode_InternFromString("gpudata");
    s_block = PyUnicode_InternFromString("block");
    s_grid = PyUnicode_InternFromString("grid");
    s_stream = PyUnicode_InternFromString("stream");
    s_shared = PyUnicode_InternFromString("shared");
    s_time_kernel = PyUnicode_InternFromString("time_kernel");
    s_texrefs = PyUnicode_InternFromString("texrefs");
    if (!s_cai || !s_dlpack || !s_gpudata || !s_block || !s_grid || !s_stream || !s_shared || !s_time_kernel || !s_texrefs) goto fail;
    PyModule_AddIntConstant(mod, "BACKEND_DEFAULT", CUK_BACKEND_DEFAULT);
    PyModule_AddIntConstant(mod, "BACKEND_AUTO", CUK_BACKEND_AUTO);
    PyModule_AddIntConstant(mod, "BACKEND_GPU", CUK_BACKEND_GPU);
    PyModule_AddIntConstant(mod, "BACKEND_CPU", CUK_BACKEND_CPU);
    return mod;
fail:
    Py_DECREF(mod);
    return NULL;
}
