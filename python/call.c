/* Compiled programs and their calls: Program, Function, and the turning of Python
   arguments into the cuk_views a call takes. */
#include "_cuk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static PyType_Spec program_spec = {"cuk._cuk.Program", sizeof(Program), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                   program_slots};

static void function_dealloc(PyObject *self) {
    Function *f = (Function *)self;
    PyMem_Free(f->params);
    Py_XDECREF(f->prog);
    heap_free(self);
}

/* What kind of object the caller passed, to give the result back as the same kind. */
enum { KIND_NONE, KIND_NUMPY, KIND_FOREIGN, KIND_DEVICE };

static const char *fn_name(Function *f) { return cuk_fn_name(f->f); }

int wrong_dtype(const char *fn, const cuk_param_info *pi, cuk_dtype got) {
    PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s %s, but the argument has dtype %s; convert it first (e.g. .astype('%s'))",
                 fn, pi->name, pi->rank ? "an array of" : "a", np_name[pi->dtype], np_name[got], np_name[pi->dtype]);
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
    if (dt != pi->dtype) return wrong_dtype(fn_name(f), pi, dt);
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
                rc = cai_arg(fn_name(f), pi, cai, &v[i]);
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
                    rc = dlpack_arg(fn_name(f), pi, o, &held[i], &v[i]);
                    if (v[i].place == CUK_ON_DEVICE && kind < KIND_FOREIGN) kind = KIND_FOREIGN, foreign = o;
                } else {
                    rc = pi->rank == 0 ? scalar_arg(f, pi, o, &sv[i], &v[i]) : buffer_arg(f, pi, o, &held[i], &v[i]);
                }
            } else {
                rc = -1;
            }
        } else if (tk == TP_DLPACK) {
            rc = dlpack_arg(fn_name(f), pi, o, &held[i], &v[i]);
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
static PyType_Spec function_spec = {"cuk.Function", sizeof(Function), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                    function_slots};

static PyMethodDef call_funcs[] = {
    {"compile", py_compile, METH_VARARGS, "compile(src_or_path, backend=0, name=None) -> Program"}, {NULL, NULL, 0, NULL}};

int call_init(PyObject *mod) {
    if (!(Program_Type = make_type(mod, &program_spec, "Program"))) return -1;
    if (!(Function_Type = make_type(mod, &function_spec, "Function"))) return -1;
    return PyModule_AddFunctions(mod, call_funcs);
}
