/* cuk._cuk, the CPython extension behind the cuk package (stable ABI, Python 3.11+): the
   module's initialisation, its exceptions and the dtype tables every part uses. The
   parts live beside this file: array.c (DeviceArray, CUDA array interface, DLPack),
   call.c (compiled programs and their calls), memory.c, stream.c, kernel.c (raw CUDA
   modules and launches) and driver.c. */
#include "_cuk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- exceptions ----------------------------------------------------------------------------- */

PyObject *Error, *CompileError, *RunError, *ArgumentError, *DevMemoryError, *LogicError, *LaunchError, *NoDeviceError;

PyObject *heap_alloc(PyTypeObject *tp) { return ((allocfunc)PyType_GetSlot(tp, Py_tp_alloc))(tp, 0); }
void heap_free(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    ((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
    Py_DECREF(tp);
}

/* The exception PyErr_CheckSignals raised while a call ran (interrupt_hook), for
   raise_status(CUK_ERR_INTERRUPTED) to raise in its place. */
static _Thread_local PyObject *pending_type, *pending_value, *pending_tb;

/* cuk_program_interrupt_hook: Python's signal handlers (Ctrl-C's KeyboardInterrupt) run
   while a long call runs; an exception from them stops the call. The GIL is taken for
   the check (the call may have released it). */
static int interrupt_hook(void) {
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    if (PyErr_CheckSignals() < 0) {
        stop = 1;
        Py_XDECREF(pending_type), Py_XDECREF(pending_value), Py_XDECREF(pending_tb);
        PyErr_Fetch(&pending_type, &pending_value, &pending_tb);
    }
    PyGILState_Release(g);
    return stop;
}

PyObject *raise_status(cuk_status s) {
    if ((int)s == CUK_ERR_INTERRUPTED) {
        if (pending_type) {
            PyErr_Restore(pending_type, pending_value, pending_tb);
            pending_type = pending_value = pending_tb = NULL;
        } else {
            PyErr_SetString(PyExc_KeyboardInterrupt, cuk_last_error());
        }
        return NULL;
    }
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
    case CUK_ERR_NO_NVRTC:
    case CUK_ERR_NO_NCCL: type = NoDeviceError; break;
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

/* ---- dtypes --------------------------------------------------------------------------------- */

/* Indexed by cuk_dtype. NumPy has no bfloat16: ml_dtypes' (what JAX and the .npy files
   cuk writes use) is named "bfloat16" and has typestr "<V2"; its host arrays export no
   buffer format, so bf16 elements cross as their bits ("H") and are viewed as
   ml_dtypes.bfloat16 (bf16_numpy_dtype). c64 and c128 are NumPy's complex64 and
   complex128 (the real part first), "Zf" and "Zd" in the buffer protocol. */
const char *const np_name[CUK_DTYPE_COUNT] = {"bool",    "int32", "int64", "uint32", "uint64",
                                              "float32", "float64", "int8", "int16",  "uint8",
                                              "uint16",  "float16", "bfloat16", "complex64", "complex128"};
const char *const typestr[CUK_DTYPE_COUNT] = {"|b1", "<i4", "<i8", "<u4", "<u8", "<f4", "<f8", "|i1",
                                              "<i2", "|u1", "<u2", "<f2", "<V2", "<c8", "<c16"};
const char *const buffmt[CUK_DTYPE_COUNT] = {"?", "i", "q", "I", "Q", "f", "d", "b", "h", "B", "H", "e", "H", "Zf", "Zd"};

/* The dtype of a struct-module format (a buffer's), or -1. bf16 has none ('H' is
   uint16); complex numbers are 'Z' and their part's letter. */
int dtype_of_format(const char *f, Py_ssize_t itemsize) {
    if (!f) return -1;
    if (*f == '@' || *f == '=' || *f == '<') f++;
    if (f[0] == 'Z' && f[1] && !f[2]) {
        if (f[1] == 'f' && itemsize == 8) return CUK_C64;
        if (f[1] == 'd' && itemsize == 16) return CUK_C128;
        return -1;
    }
    if (!f[0] || f[1]) return -1;
    switch (f[0]) {
    case '?': return CUK_BOOL;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
        return itemsize == 1 ? CUK_I8 : itemsize == 2 ? CUK_I16 : itemsize == 4 ? CUK_I32 : itemsize == 8 ? CUK_I64 : -1;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
        return itemsize == 1 ? CUK_U8 : itemsize == 2 ? CUK_U16 : itemsize == 4 ? CUK_U32 : itemsize == 8 ? CUK_U64 : -1;
    case 'e': return itemsize == 2 ? CUK_F16 : -1;
    case 'f': return itemsize == 4 ? CUK_F32 : -1;
    case 'd': return itemsize == 8 ? CUK_F64 : -1;
    default: return -1;
    }
}

/* The dtype of a __cuda_array_interface__ typestr ("<f4"), or -1. The byte order may be
   spelled '<', '|' or '=' (this is a little-endian host). "<V2" is bf16 only when the
   caller means it (bf16_ok): it is any two bytes. */
int dtype_of_typestr(const char *t, bool bf16_ok) {
    if (!t[0] || (t[0] != '<' && t[0] != '|' && t[0] != '=')) return -1;
    for (int i = 0; i < CUK_DTYPE_COUNT; i++)
        if (strcmp(t + 1, typestr[i] + 1) == 0 && (i != CUK_BF16 || bf16_ok)) return i;
    return -1;
}

/* A dtype from a Python value: a cuk dtype index, a name (cuk's, "f32", or NumPy's,
   "float32"; "i8" is cuk's int8, not NumPy's int64) or anything numpy.dtype() takes (a
   NumPy dtype, np.float16, ml_dtypes.bfloat16). */
int dtype_arg(PyObject *o, cuk_dtype *dt) {
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
        PyObject *f = need_numpy() == 0 ? PyObject_GetAttrString(np_mod, "dtype") : NULL;
        PyObject *d = f ? PyObject_CallFunctionObjArgs(f, o, NULL) : NULL;
        if (d) name = PyObject_GetAttrString(d, "name");
        Py_XDECREF(f);
        Py_XDECREF(d);
        PyErr_Clear();
        if (!name) name = PyObject_Str(o);
    }
    if (!name) return -1;
    const char *s = PyUnicode_AsUTF8AndSize(name, NULL);
    if (!s) {
        Py_DECREF(name);
        return -1;
    }
    if (cuk_dtype_from_name(s, dt) != CUK_OK) {
        PyErr_Format(ArgumentError, "dtype %s is not supported by cuk (" DTYPE_LIST ")", s);
        Py_DECREF(name);
        return -1;
    }
    Py_DECREF(name);
    return 0;
}

PyObject *np_mod, *np_asarray;

int need_numpy(void) {
    if (np_asarray) return 0;
    np_mod = PyImport_ImportModule("numpy");
    if (!np_mod) return -1;
    np_asarray = PyObject_GetAttrString(np_mod, "asarray");
    return np_asarray ? 0 : -1;
}

static PyObject *bf16_dtype; /* np.dtype(ml_dtypes.bfloat16), once found */

PyObject *bf16_numpy_dtype(const char *what) {
    if (bf16_dtype) return bf16_dtype;
    if (need_numpy() < 0) return NULL;
    PyObject *ml = PyImport_ImportModule("ml_dtypes");
    PyObject *t = ml ? PyObject_GetAttrString(ml, "bfloat16") : NULL;
    PyObject *f = t ? PyObject_GetAttrString(np_mod, "dtype") : NULL;
    bf16_dtype = f ? PyObject_CallFunctionObjArgs(f, t, NULL) : NULL;
    Py_XDECREF(ml);
    Py_XDECREF(t);
    Py_XDECREF(f);
    if (!bf16_dtype) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(ArgumentError, "%s is bf16, and NumPy has no bfloat16 of its own: install ml_dtypes (pip install "
                     "ml_dtypes) to get ml_dtypes.bfloat16 arrays, convert in the program (f32(x)), or keep the data on the "
                     "device (a cuk.DeviceArray or a PyTorch tensor) [%S]", what, value ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    return bf16_dtype;
}

bool is_numpy_bf16(PyObject *o) {
    PyObject *d = PyObject_GetAttrString(o, "dtype");
    PyObject *name = d ? PyObject_GetAttrString(d, "name") : NULL;
    PyObject *size = d ? PyObject_GetAttrString(d, "itemsize") : NULL;
    bool r = name && size && PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "bfloat16") == 0 &&
             PyLong_Check(size) && PyLong_AsLong(size) == 2;
    Py_XDECREF(d);
    Py_XDECREF(name);
    Py_XDECREF(size);
    PyErr_Clear();
    return r;
}

PyObject *numpy_contiguous(PyObject *o) {
    if (need_numpy() < 0) return NULL;
    return PyObject_CallMethod(np_mod, "ascontiguousarray", "O", o);
}

PyObject *bf16_bits(PyObject *o) {
    if (need_numpy() < 0) return NULL;
    /* asarray(o, order="C"): keeps a 0-d array 0-d, as ascontiguousarray does not */
    PyObject *args = PyTuple_Pack(1, o), *kw = Py_BuildValue("{s:s}", "order", "C");
    PyObject *c = args && kw ? PyObject_Call(np_asarray, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    PyObject *r = c ? PyObject_CallMethod(c, "view", "s", "uint16") : NULL;
    Py_XDECREF(c);
    return r;
}

/* ---- shapes ---------------------------------------------------------------------------------- */

PyObject *shape_tuple(int r, const int64_t *shape) {
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

int shape_arg(PyObject *o, int *rank, int64_t *shape) {
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

/* ---- the module -------------------------------------------------------------------------------- */

PyObject *s_cai, *s_dlpack, *s_dlpack_device, *s_gpudata;
PyObject *foreign_hook, *maker_lookup, *maker_cache, *arg_handler_types, *sequence_hook;

/* _set_hooks(convert_result, (In, Out, InOut), result_maker=None, sequence_arg=None) */
static PyObject *py_set_hooks(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *conv, *handlers, *maker = NULL, *seq = NULL;
    if (!PyArg_ParseTuple(args, "OO|OO", &conv, &handlers, &maker, &seq)) return NULL;
    if (seq) {
        Py_XDECREF(sequence_hook);
        sequence_hook = Py_NewRef(seq);
    }
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

static PyMethodDef module_funcs[] = {{"_set_hooks", py_set_hooks, METH_VARARGS, NULL},
                                     {"version", py_version, METH_NOARGS, NULL},
                                     {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_cuk", "cuk's C extension", -1, module_funcs, NULL, NULL, NULL, NULL};

PyTypeObject *make_type(PyObject *mod, PyType_Spec *spec, const char *export_name) {
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
    cuk_program_interrupt_hook(interrupt_hook);
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
    s_cai = PyUnicode_InternFromString("__cuda_array_interface__");
    s_dlpack = PyUnicode_InternFromString("__dlpack__");
    s_dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
    s_gpudata = PyUnicode_InternFromString("gpudata");
    if (!s_cai || !s_dlpack || !s_dlpack_device || !s_gpudata) goto fail;
    if (array_init(mod) < 0 || call_init(mod) < 0 || memory_init(mod) < 0 || stream_init(mod) < 0 || kernel_init(mod) < 0 || graph_init(mod) < 0 ||
        driver_init(mod) < 0)
        goto fail;
    PyModule_AddIntConstant(mod, "BACKEND_DEFAULT", CUK_BACKEND_DEFAULT);
    PyModule_AddIntConstant(mod, "BACKEND_AUTO", CUK_BACKEND_AUTO);
    PyModule_AddIntConstant(mod, "BACKEND_GPU", CUK_BACKEND_GPU);
    PyModule_AddIntConstant(mod, "BACKEND_CPU", CUK_BACKEND_CPU);
    return mod;
fail:
    Py_DECREF(mod);
    return NULL;
}
