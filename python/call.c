/* Compiled programs and their calls: Program, Function, and the turning of Python
   arguments into the cuk_views a call takes. */
#include "_cuk.h"

#include <math.h>
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
    int nres; /* cuk_fn_nresults: 2 or more go through call_several */
    bool bf16_res; /* a result is bf16: to NumPy it needs ml_dtypes */
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
    int backend = 0, require_bundle = 0, fast_math = 0, profile = 0;
    if (!PyArg_ParseTuple(args, "s|izppp", &src, &backend, &name, &require_bundle, &fast_math, &profile)) return NULL;
    cuk_program_opts o = {.backend = (cuk_backend)backend, .name = name, .require_bundle = require_bundle,
                          .fast_math = fast_math, .profile = profile};
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
    r->nres = cuk_fn_nresults(f);
    r->params = PyMem_Calloc((size_t)(r->nparams ? r->nparams : 1), sizeof *r->params);
    if (!r->params) {
        Py_DECREF(r);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < r->nparams; i++) cuk_fn_param(f, i, &r->params[i]);
    r->bf16_res = false;
    for (int k = 0; k < r->nres; k++) {
        cuk_dtype dt;
        int rank;
        if (cuk_fn_result_at(f, k, &dt, &rank) == CUK_OK && dt == CUK_BF16) r->bf16_res = true;
    }
    r->vectorcall = function_vectorcall;
    return (PyObject *)r;
}

/* The sizes of cuk_program_generic's dims field as a tuple of str: "r,c" -> ("r", "c"). */
static PyObject *dims_tuple(const char *s, size_t n) {
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && n;) {
        size_t k = i;
        while (k < n && s[k] != ',') k++;
        PyObject *d = PyUnicode_FromStringAndSize(s + i, (Py_ssize_t)(k - i));
        if (!d || PyList_Append(l, d) < 0) Py_CLEAR(l);
        Py_XDECREF(d);
        if (k == n) break;
        i = k + 1;
    }
    PyObject *t = l ? PyList_AsTuple(l) : NULL;
    Py_XDECREF(l);
    return t;
}

/* generic(name) -> None, or (params, result) for a generic function (cuk_program_generic):
   params a tuple of (name, elemtype, dims), result (elemtype, dims); elemtype as written
   ("T", "f32"), dims a tuple of the sizes as written (() for a scalar). */
static PyObject *program_generic(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!name) return NULL;
    char buf[8192];
    cuk_status s = cuk_program_generic(((Program *)self)->p, name, buf, sizeof buf);
    if (s == CUK_ERR_NOT_FOUND) Py_RETURN_NONE;
    if (s) return raise_status(s);
    PyObject *params = PyList_New(0), *result = NULL;
    for (char *line = buf; params && *line;) {
        char *end = strchr(line, '\n'), *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!end || !t2 || t2 > end) {
            Py_CLEAR(params);
            PyErr_SetString(Error, "cuk_program_generic: malformed signature text");
            break;
        }
        PyObject *dims = dims_tuple(t2 + 1, (size_t)(end - t2 - 1));
        PyObject *elem = PyUnicode_FromStringAndSize(t1 + 1, t2 - t1 - 1);
        if (dims && elem && strncmp(line, "->\t", 3) == 0) {
            Py_XDECREF(result);
            result = PyTuple_Pack(2, elem, dims);
        } else if (dims && elem) {
            PyObject *pn = PyUnicode_FromStringAndSize(line, t1 - line);
            PyObject *p = pn ? PyTuple_Pack(3, pn, elem, dims) : NULL;
            if (!p || PyList_Append(params, p) < 0) Py_CLEAR(params);
            Py_XDECREF(pn);
            Py_XDECREF(p);
        } else {
            Py_CLEAR(params);
        }
        Py_XDECREF(dims);
        Py_XDECREF(elem);
        line = end + 1;
    }
    PyObject *r = NULL;
    if (params && result) {
        PyObject *pt = PyList_AsTuple(params);
        r = pt ? PyTuple_Pack(2, pt, result) : NULL;
        Py_XDECREF(pt);
    } else if (params) {
        PyErr_SetString(Error, "cuk_program_generic: the signature has no result");
    }
    Py_XDECREF(params);
    Py_XDECREF(result);
    return r;
}

static PyObject *program_backend(PyObject *self, void *c) {
    (void)c;
    return PyUnicode_FromString(cuk_program_backend(((Program *)self)->p) == CUK_BACKEND_GPU ? "gpu" : "cpu");
}

/* What a writer of text into a FILE writes, as a str (or its status raised). */
typedef cuk_status (*TextWriter)(void *ctx, FILE *out);
static PyObject *written_text(TextWriter w, void *ctx) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return PyErr_NoMemory();
    cuk_status s = w(ctx, f);
    fclose(f);
    PyObject *r = s ? raise_status(s) : PyUnicode_FromStringAndSize(buf ? buf : "", (Py_ssize_t)len);
    free(buf);
    return r;
}

static cuk_status print_profile(void *p, FILE *out) { return cuk_program_profile_print(p, out); }
static cuk_status end_profile(void *p, FILE *out) { return cuk_program_profile_end(p, out); }

/* profile() -> str: cuk_program_profile_print's table (compile(..., profile=True)). */
static PyObject *program_profile(PyObject *self, PyObject *unused) {
    (void)unused;
    return written_text(print_profile, ((Program *)self)->p);
}

static PyMethodDef program_methods[] = {{"functions", program_functions, METH_NOARGS, "the program's function names"},
                                        {"profile", program_profile, METH_NOARGS, "the time per statement so far"},
                                        {"function", program_function, METH_O, "a function by name"},
                                        {"generic", program_generic, METH_O,
                                         "generic(name) -> None or (params, result): a generic function's signature"},
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

/* A number converted to dtype to as the language converts it (cuk_scalar_convert). */
static cuk_scalar convert(cuk_scalar in, cuk_dtype from, cuk_dtype to) {
    cuk_scalar out;
    cuk_scalar_convert(&in, from, &out, to);
    return out;
}

uint16_t f16_bits(double x) { return convert((cuk_scalar){.f64 = x}, CUK_F64, CUK_F16).f16; }

/* What kind of object the caller passed, to give the result back as the same kind. */
enum { KIND_NONE, KIND_NUMPY, KIND_FOREIGN, KIND_DEVICE };

static const char *fn_name(Function *f) { return cuk_fn_name(f->f); }

int wrong_dtype(const char *fn, const cuk_param_info *pi, cuk_dtype got) {
    char how[64];
    /* NumPy knows bfloat16 by ml_dtypes' type, not by name; PyTorch by torch.bfloat16 */
    if (pi->dtype == CUK_BF16) snprintf(how, sizeof how, ".astype(ml_dtypes.bfloat16) or .to(torch.bfloat16)");
    else if ((got == CUK_C64 || got == CUK_C128) && pi->dtype != CUK_C64 && pi->dtype != CUK_C128)
        snprintf(how, sizeof how, "x.real or abs(x), the real part or the magnitude");
    else snprintf(how, sizeof how, ".astype('%s')", np_name[pi->dtype]);
    PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s %s, but the argument has dtype %s; convert it first (e.g. %s)",
                 fn, pi->name, pi->rank ? "an array of" : "a", np_name[pi->dtype], np_name[got], how);
    return -1;
}

/* "a" or "an" before a dtype name. */
static const char *article(cuk_dtype dt) { return np_name[dt][0] == 'i' ? "an" : "a"; }

/* "(2, 3)" */
static void shape_text(char *buf, size_t len, int rank, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int k = 0; k < rank && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%lld%s", (long long)shape[k], rank == 1 ? "," : k + 1 < rank ? ", " : "");
    if (n < len) snprintf(buf + n, len - n, ")");
}

int wrong_rank(const char *fn, const cuk_param_info *pi, int rank, const int64_t *shape) {
    char sh[160];
    shape_text(sh, sizeof sh, rank, shape);
    if (pi->rank == 0)
        PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s %s scalar, but the argument is a %d-D array of shape %s; pass one value (e.g. x[0] or x.item())",
                     fn, pi->name, article(pi->dtype), np_name[pi->dtype], rank, sh);
    else if (rank == 0)
        PyErr_Format(ArgumentError, "%s(): parameter '%s' is a %d-D array of %s, but the argument is a 0-d array (a scalar); pass a %d-D array (e.g. numpy.full(shape, x, '%s'))",
                     fn, pi->name, pi->rank, np_name[pi->dtype], pi->rank, np_name[pi->dtype]);
    else
        PyErr_Format(ArgumentError, "%s(): parameter '%s' is a %d-D array of %s, but the argument is a %d-D array of shape %s; pass a %d-D array (reshape or index it)",
                     fn, pi->name, pi->rank, np_name[pi->dtype], rank, sh, pi->rank);
    return -1;
}

/* The error for an array argument whose dtype or rank is not the parameter's. */
static int wrong_array(const char *fn, const cuk_param_info *pi, const cuk_view *v) {
    if (v->dtype != pi->dtype) return wrong_dtype(fn, pi, v->dtype);
    return wrong_rank(fn, pi, v->rank, v->shape);
}

/* o's type name (a new reference), for messages. */
static PyObject *type_name(PyObject *o) {
    PyObject *n = PyType_GetName(Py_TYPE(o));
    if (!n) {
        PyErr_Clear();
        n = PyUnicode_FromString("?");
    }
    return n;
}

/* A number as NumPy's casting rules see it: its kind ('b' bool, 'i' signed, 'u'
   unsigned, 'f' float, 'c' complex) and value. A Python int is weak (NEP 50): it may
   become any integer dtype that holds its value, as in numpy.uint32(5) + 1. */
typedef struct {
    char kind;
    bool weak;
    long long i;          /* kinds 'b' (0 or 1) and 'i' */
    unsigned long long u; /* kind 'u' */
    double f;             /* kind 'f', and the real part of kind 'c' */
    double im;            /* kind 'c': the imaginary part */
} Num;

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* The number a one-element buffer holds (a NumPy scalar or 0-d array), by its
   struct-module format; -1 if it is no number NumPy casts to cuk's dtypes (bytes,
   records, big-endian). */
static int num_of_buffer(const Py_buffer *b, Num *n) {
    const char *f = b->format ? b->format : "B";
    while (*f == '@' || *f == '=' || *f == '<') f++;
    const unsigned char *p = b->buf;
    Py_ssize_t size = b->itemsize;
    if (f[0] == 'Z' && f[1] && !f[2]) { /* complex: two floats, the real part first */
        n->kind = 'c';
        if (f[1] == 'f' && size == 8) {
            float x[2];
            memcpy(x, p, 8);
            n->f = x[0], n->im = x[1];
        } else if (f[1] == 'd' && size == 16) {
            double x[2];
            memcpy(x, p, 16);
            n->f = x[0], n->im = x[1];
        } else if (f[1] == 'g' && size == 2 * (Py_ssize_t)sizeof(long double)) {
            long double x[2];
            memcpy(x, p, sizeof x);
            n->f = (double)x[0], n->im = (double)x[1];
        } else {
            return -1;
        }
        return 0;
    }
    if (!f[0] || f[1]) return -1;
    switch (f[0]) {
    case '?': n->kind = 'b', n->i = p[0] != 0; return 0;
    case 'b': case 'h': case 'i': case 'l': case 'q':
        n->kind = 'i';
        if (size == 1) n->i = *(const int8_t *)p;
        else if (size == 2) { int16_t x; memcpy(&x, p, 2); n->i = x; }
        else if (size == 4) { int32_t x; memcpy(&x, p, 4); n->i = x; }
        else if (size == 8) { int64_t x; memcpy(&x, p, 8); n->i = x; }
        else return -1;
        return 0;
    case 'B': case 'H': case 'I': case 'L': case 'Q':
        n->kind = 'u';
        if (size == 1) n->u = p[0];
        else if (size == 2) { uint16_t x; memcpy(&x, p, 2); n->u = x; }
        else if (size == 4) { uint32_t x; memcpy(&x, p, 4); n->u = x; }
        else if (size == 8) { uint64_t x; memcpy(&x, p, 8); n->u = x; }
        else return -1;
        return 0;
    case 'e': case 'f': case 'd': case 'g':
        n->kind = 'f';
        if (size == 2) { uint16_t x; memcpy(&x, p, 2); n->f = half_to_double(x); }
        else if (size == 4) { float x; memcpy(&x, p, 4); n->f = x; }
        else if (size == 8) { double x; memcpy(&x, p, 8); n->f = x; }
        else if (size == (Py_ssize_t)sizeof(long double)) { long double x; memcpy(&x, p, sizeof x); n->f = (double)x; }
        else return -1;
        return 0;
    default: return -1;
    }
}

/* A number for a scalar parameter, converted to the parameter's dtype where NumPy's
   casting='same_kind' allows it and the value fits (never wrapped): Python bool, int
   and float (and subclasses, such as numpy.float64), NumPy scalars and 0-d host arrays.
   The view v points at *val. */
static int scalar_arg(const char *fn, const cuk_param_info *pi, PyObject *o, cuk_scalar *val, cuk_view *v) {
    cuk_dtype dt = pi->dtype;
    Num n = {0};
    if (PyBool_Check(o)) {
        n.kind = 'b';
        n.i = o == Py_True;
    } else if (PyLong_Check(o)) {
        int ovf;
        n.kind = 'i';
        n.weak = true;
        n.i = PyLong_AsLongLongAndOverflow(o, &ovf);
        if (n.i == -1 && PyErr_Occurred()) return -1;
        if (ovf > 0) {
            n.kind = 'u';
            n.u = PyLong_AsUnsignedLongLong(o);
            if (PyErr_Occurred()) goto range;
        } else if (ovf < 0) {
            goto range;
        }
    } else if (PyFloat_Check(o)) {
        n.kind = 'f';
        n.f = PyFloat_AsDouble(o);
        if (n.f == -1.0 && PyErr_Occurred()) return -1;
    } else if (PyComplex_Check(o)) { /* also numpy.complex128, a subclass */
        n.kind = 'c';
        n.f = PyComplex_RealAsDouble(o);
        n.im = PyComplex_ImagAsDouble(o);
        if (PyErr_Occurred()) return -1;
    } else if (PyObject_CheckBuffer(o)) {
        Py_buffer b;
        PyObject *bits = NULL; /* a bfloat16 NumPy scalar or array (ml_dtypes) exports no format: its bits */
        if (PyObject_GetBuffer(o, &b, PyBUF_RECORDS_RO) < 0) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            if (!is_numpy_bf16(o)) {
                PyErr_Restore(type, value, tb);
                return -1;
            }
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            if (!(bits = bf16_bits(o))) return -1;
            int rc = PyObject_GetBuffer(bits, &b, PyBUF_RECORDS_RO);
            Py_DECREF(bits); /* b holds it */
            if (rc < 0) return -1;
        }
        int r = 0;
        if (b.ndim != 0) {
            int64_t shape[CUK_MAX_RANK];
            int rank = b.ndim <= CUK_MAX_RANK ? b.ndim : CUK_MAX_RANK;
            for (int k = 0; k < rank; k++) shape[k] = b.shape ? b.shape[k] : b.len / b.itemsize;
            PyBuffer_Release(&b);
            return wrong_rank(fn, pi, b.ndim, shape);
        }
        if (bits) {
            cuk_scalar x = {0};
            memcpy(&x.bf16, b.buf, 2);
            n.kind = 'f';
            n.f = convert(x, CUK_BF16, CUK_F64).f64;
        } else {
            r = num_of_buffer(&b, &n);
        }
        PyBuffer_Release(&b);
        if (r < 0) {
            PyObject *tn = type_name(o);
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s, but the argument is a %U, which does not convert to it; pass a number",
                         fn, pi->name, np_name[dt], tn);
            Py_XDECREF(tn);
            return -1;
        }
    } else {
        PyObject *tn = type_name(o);
        if (o == Py_None)
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s %s scalar; got None. Pass a Python or NumPy number", fn, pi->name,
                         article(dt), np_name[dt]);
        else
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s %s scalar; got a %U. Pass a Python or NumPy number", fn, pi->name,
                         article(dt), np_name[dt], tn);
        Py_XDECREF(tn);
        return -1;
    }
    /* NumPy's same_kind: bool becomes anything; integers become integers, floats and
       complex numbers, but a signed one an unsigned one only if it is a weak Python int;
       floats floats and complex numbers; complex numbers only complex numbers; nothing
       but bool becomes bool. */
    bool is_complex = dt == CUK_C64 || dt == CUK_C128;
    bool is_float = dt == CUK_F16 || dt == CUK_BF16 || dt == CUK_F32 || dt == CUK_F64;
    bool is_unsigned = dt == CUK_U8 || dt == CUK_U16 || dt == CUK_U32 || dt == CUK_U64;
    bool kind_ok = dt == CUK_BOOL   ? n.kind == 'b'
                   : is_complex   ? true
                   : is_float     ? n.kind != 'c'
                   : is_unsigned  ? n.kind == 'b' || n.kind == 'u' || (n.kind == 'i' && n.weak)
                                  : n.kind != 'f' && n.kind != 'c';
    if (!kind_ok) {
        char hint[128];
        if (dt == CUK_BOOL) snprintf(hint, sizeof hint, "pass True or False (e.g. x != 0)");
        else if (n.kind == 'c')
            snprintf(hint, sizeof hint, "pass a real number: the real part or the magnitude (e.g. z.real or abs(z)), "
                     "or make the parameter complex (c64, c128)");
        else if (n.kind == 'f') snprintf(hint, sizeof hint, "pass an integer (e.g. int(x) or round(x))");
        else snprintf(hint, sizeof hint, "pass a Python int or an unsigned NumPy integer (e.g. numpy.%s(x))", np_name[dt]);
        PyObject *tn = type_name(o);
        PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s, but the argument %R (%U) does not become %s under NumPy's same_kind casting; %s",
                     fn, pi->name, np_name[dt], o, tn, np_name[dt], hint);
        Py_XDECREF(tn);
        return -1;
    }
    bool u = n.kind == 'u';
    if (dt != CUK_BOOL && !is_float && !is_complex) {
        /* an integer: the value must fit the parameter's range */
        unsigned bits = (unsigned)cuk_dtype_size(dt) * 8;
        long long lo = is_unsigned ? 0 : bits == 64 ? INT64_MIN : -(1LL << (bits - 1));
        unsigned long long hi = is_unsigned ? (bits == 64 ? UINT64_MAX : (1ULL << bits) - 1) : (1ULL << (bits - 1)) - 1;
        if (u ? n.u > hi : n.i < lo || (n.i > 0 && (unsigned long long)n.i > hi)) goto range;
    }
    /* the value, in range, converted as the language's casts convert (integers past 2^53
       round once to a float, a real number is a complex one's real part) */
    cuk_scalar src = {0};
    cuk_dtype from = n.kind == 'c' ? CUK_C128 : n.kind == 'f' ? CUK_F64 : u ? CUK_U64 : CUK_I64;
    if (n.kind == 'c') src.c128[0] = n.f, src.c128[1] = n.im;
    else if (n.kind == 'f') src.f64 = n.f;
    else if (u) src.u64 = n.u;
    else src.i64 = n.i;
    *val = convert(src, from, dt);
    v->dtype = dt;
    v->rank = 0;
    v->place = CUK_ON_HOST;
    v->data = val;
    v->dev = 0;
    return 0;
range:
    PyErr_Clear();
    PyErr_Format(ArgumentError, "%s(): parameter '%s' is %s, and %R does not fit in it; cuk does not wrap values around", fn, pi->name,
                 np_name[dt], o);
    return -1;
}

/* A C-contiguous NumPy array (new reference) for an array parameter, from an argument
   that is not a contiguous buffer: a strided array is copied with its own dtype, which
   the caller then checks as for any array; a list or tuple converts by cuk's
   _sequence_arg (NumPy's same_kind rule, values must fit); Python numbers, None and
   other objects are errors. */
static PyObject *host_array(const char *fn, const cuk_param_info *pi, PyObject *o) {
    if (PyObject_CheckBuffer(o) || PyObject_HasAttrString(o, "__array__") || PyObject_HasAttrString(o, "__array_interface__") ||
        PyObject_HasAttrString(o, "__array_struct__")) {
        if (need_numpy() < 0) return NULL;
        return PyObject_CallMethod(np_mod, "ascontiguousarray", "O", o);
    }
    if (PyList_Check(o) || PyTuple_Check(o)) {
        if (!sequence_hook) {
            PyErr_Format(ArgumentError, "%s(): parameter '%s': lists are converted by the cuk package; import cuk", fn, pi->name);
            return NULL;
        }
        return PyObject_CallFunction(sequence_hook, "Osss", o, np_name[pi->dtype], fn, pi->name);
    }
    PyObject *tn = type_name(o);
    if (PyLong_Check(o) || PyFloat_Check(o))
        PyErr_Format(ArgumentError, "%s(): parameter '%s' is a %d-D array of %s, but the argument is a number (%U); pass an array (e.g. numpy.full(shape, x, '%s'))",
                     fn, pi->name, pi->rank, np_name[pi->dtype], tn, np_name[pi->dtype]);
    else if (o == Py_None)
        PyErr_Format(ArgumentError, "%s(): parameter '%s' is a %d-D array of %s; got None. Pass a NumPy array, a list, a cuk.DeviceArray or a CUDA array (CuPy, PyTorch, Numba)",
                     fn, pi->name, pi->rank, np_name[pi->dtype]);
    else
        PyErr_Format(ArgumentError, "%s(): parameter '%s' is a %d-D array of %s; got a %U. Pass a NumPy array, a list, a cuk.DeviceArray or a CUDA array (CuPy, PyTorch, Numba)",
                     fn, pi->name, pi->rank, np_name[pi->dtype], tn);
    Py_XDECREF(tn);
    return NULL;
}

/* A host buffer (NumPy array, array.array, ...), viewed without a copy when it is
   C-contiguous. Its dtype must be the parameter's. */
static int buffer_arg(const char *fn, const cuk_param_info *pi, PyObject *o, Held *h, cuk_view *v) {
    bool bf16 = false;
    if (PyObject_GetBuffer(o, &h->buf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        /* A bfloat16 NumPy array (ml_dtypes; also what a list for a bf16 parameter becomes)
           exports no format: its bits are taken, a view where it is contiguous. */
        PyObject *src = o;
        if (!is_numpy_bf16(o)) {
            if (!(h->keep = host_array(fn, pi, o))) return -1;
            src = h->keep;
        }
        if (is_numpy_bf16(src)) {
            PyObject *bits = bf16_bits(src);
            Py_XDECREF(h->keep); /* bits keeps its base */
            if (!(h->keep = bits)) return -1;
            bf16 = true;
        }
        if (PyObject_GetBuffer(h->keep, &h->buf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            /* NumPy made an array it cannot export (object or datetime dtype, ...) */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_Format(ArgumentError, "%s(): parameter '%s' is an array of %s, but the argument's elements are no numbers cuk has: %S",
                         fn, pi->name, np_name[pi->dtype], value ? value : Py_None);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return -1;
        }
    }
    h->has_buf = true;
    cuk_dtype dt = CUK_BF16;
    char what[256];
    snprintf(what, sizeof what, "%s(): parameter '%s'", fn, pi->name);
    if (!bf16 && buffer_dtype(&h->buf, what, &dt) < 0) return -1;
    if (dt != pi->dtype) return wrong_dtype(fn, pi, dt);
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
enum { TP_UNKNOWN = 0, TP_CAI, TP_DLPACK, TP_TORCH, TP_BUFFER, TP_OTHER };
#define TYPE_CACHE 32
static struct {
    PyTypeObject *tp; /* a strong reference */
    int kind;
} type_cache[TYPE_CACHE];
static int ntype_cache;

/* Whether tp is PyTorch's (its module is torch or below). */
static bool is_torch_type(PyTypeObject *tp) {
    PyObject *m = PyObject_GetAttrString((PyObject *)tp, "__module__");
    const char *s = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8AndSize(m, NULL) : NULL;
    bool r = s && (!strcmp(s, "torch") || !strncmp(s, "torch.", 6));
    Py_XDECREF(m);
    PyErr_Clear();
    return r;
}

static int type_kind(PyObject *o);

/* o's protocol (type_kind), looked up on the object itself for a type of none: the
   protocols may be instance attributes (a plain class setting them in __init__). */
static int arg_kind(PyObject *o) {
    int tk = type_kind(o);
    if (tk == TP_OTHER) {
        if (PyObject_HasAttr(o, s_cai)) tk = TP_CAI;
        else if (PyObject_HasAttr(o, s_dlpack)) tk = TP_DLPACK;
    }
    return tk;
}

static int type_kind(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    for (int i = 0; i < ntype_cache; i++)
        if (type_cache[i].tp == tp) return type_cache[i].kind;
    int kind;
    /* PyTorch's tensors speak both protocols, but their __cuda_array_interface__ names no
       stream (version 2), so a tensor written on a side stream could be read before the
       write lands: take them through DLPack, whose __dlpack__(stream=) makes PyTorch
       order its work before cuk's (torch_arg does the same ordering faster). CuPy's and
       Numba's version 3 name their stream, and cost less. */
    if (is_torch_type(tp) && PyObject_HasAttr((PyObject *)tp, s_dlpack)) kind = torch_fast_path() ? TP_TORCH : TP_DLPACK;
    else if (PyObject_HasAttr((PyObject *)tp, s_cai)) kind = TP_CAI;
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

/* A function with several results (-> (T1, T2)): a tuple with one object per result,
   each as a single result would be. */
static PyObject *call_several(Function *f, const cuk_view **vp, Py_ssize_t n, int nres, int kind, PyObject *foreign) {
    cuk_view dres[16];
    cuk_array *hres[16];
    if (nres > 16) {
        PyErr_Format(PyExc_TypeError, "%s() has %d results: at most 16", fn_name(f), nres);
        return NULL;
    }
    cuk_status s;
    Py_BEGIN_ALLOW_THREADS s = cuk_fn_call_views_n(f->f, vp, (int)n, dres, hres, nres);
    Py_END_ALLOW_THREADS
    if (s) {
        raise_status(s);
        return NULL;
    }
    PyObject *t = PyTuple_New(nres);
    for (int k = 0; k < nres; k++) {
        PyObject *r = NULL;
        if (!t) {
            /* nothing to put them in: free what the call gave */
            if (dres[k].rank >= 0 && dres[k].dev) cuk_mem_free(dres[k].dev);
            cuk_array_free(hres[k]);
            continue;
        }
        if (dres[k].rank >= 0) {
            r = devarray_new(&dres[k], true, NULL);
            if (r && kind == KIND_FOREIGN) r = foreign_result(foreign, r);
        } else if (hres[k]) {
            r = numpy_from_host(hres[k], true);
        } else {
            r = Py_NewRef(Py_None);
        }
        if (!r) {
            Py_CLEAR(t);
            continue;
        }
        PyTuple_SetItem(t, k, r); /* steals r */
    }
    return t;
}

/* out=obj as a view: a DeviceArray, a CuPy or PyTorch device array (C-contiguous, as
   for arguments), or a writable C-contiguous NumPy array; the function's result dtype and
   rank are checked by libcuk. */
static int out_view(Function *f, PyObject *o, Held *h, cuk_view *v, const cuk_view **vp) {
    cuk_param_info pi = {.name = "out"};
    int has = 0;
    if (cuk_fn_result(f->f, &has, &pi.dtype, &pi.rank) != CUK_OK || !has || pi.rank == 0) {
        PyErr_Format(ArgumentError, "%s() returns %s, so it takes no out=", fn_name(f),
                     f->nres >= 2 ? "several results" : has ? "a scalar" : "nothing");
        return -1;
    }
    if (PyObject_TypeCheck(o, DeviceArray_Type)) {
        *vp = DA(o);
        return 0;
    }
    *vp = v;
    int tk = arg_kind(o), rc;
    if (tk == TP_CAI) {
        PyObject *cai = PyObject_GetAttr(o, s_cai);
        if (cai) {
            rc = cai_arg(fn_name(f), &pi, cai, v);
            Py_DECREF(cai);
            return rc;
        }
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear(); /* no device memory (a host array of a type that has the property) */
    } else if (tk == TP_TORCH || tk == TP_DLPACK) {
        rc = tk == TP_TORCH ? torch_arg(fn_name(f), &pi, o, h, v) : dlpack_arg(fn_name(f), &pi, o, h, v);
        if (rc == 0 && v->place != CUK_ON_DEVICE) {
            PyErr_Format(ArgumentError, "%s(): out= is a host tensor; pass a NumPy array or a device array", fn_name(f));
            return -1;
        }
        return rc;
    }
    /* a host buffer: written in place, so no contiguous copy */
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        PyObject *tn = type_name(o);
        PyErr_Format(ArgumentError, "%s(): out= must be a writable C-contiguous array (NumPy, CuPy, PyTorch or a "
                     "cuk.DeviceArray), not %S", fn_name(f), tn);
        Py_XDECREF(tn);
        return -1;
    }
    PyBuffer_Release(&b);
    return buffer_arg(fn_name(f), &pi, o, h, v);
}

/* The call of a compiled function: arguments become views (a DeviceArray's own view,
   a Python number's value on the stack: no allocation, no Python objects), one call
   into libcuk (cuk_fn_call_quick with the GIL held when the call only queues a kernel,
   else cuk_fn_call_views with it released), one Python object for the result. */
static PyObject *function_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Function *f = (Function *)self;
    Py_ssize_t n = (Py_ssize_t)(nargsf & ~CUK_VECTORCALL_ARGUMENTS_OFFSET);
    PyObject *outobj = NULL, *streamobj = NULL;
    torch_call_begin();
    for (Py_ssize_t k = 0; kwnames && k < PyTuple_Size(kwnames); k++) {
        PyObject *name = PyTuple_GetItem(kwnames, k);
        if (PyUnicode_CompareWithASCIIString(name, "stream") == 0) {
            streamobj = args[n + k] == Py_None ? NULL : args[n + k];
            continue;
        }
        if (PyUnicode_CompareWithASCIIString(name, "out") != 0) {
            PyErr_Format(PyExc_TypeError, "%s() takes positional arguments, out= and stream= only, not %U=", fn_name(f),
                         name);
            return NULL;
        }
        outobj = args[n + k] == Py_None ? NULL : args[n + k];
    }
    if (n != f->nparams) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s (%zd given)", fn_name(f), f->nparams, f->nparams == 1 ? "" : "s", n);
        return NULL;
    }
    /* stream=: the call (and the ordering of its arguments) goes on that stream; else on
       this thread's current one (`with stream:`) */
    cuk_stream *was = cuk_call_stream_get();
    if (streamobj && cuk_program_backend(((Program *)f->prog)->p) == CUK_BACKEND_CPU) {
        /* the CPU backend has no streams: a stream is checked, and means nothing */
        uintptr_t h;
        if (stream_handle_of(streamobj, &h) < 0) return NULL; /* a cuk Stream has __cuda_stream__ */
    } else if (streamobj) {
        cuk_stream *cs;
        if (stream_of(streamobj, &cs) < 0) return NULL;
        cuk_call_stream_set(cs);
    }
    int kind = KIND_NONE;
    PyObject *foreign = NULL; /* borrowed: the first foreign array, a template for the result */
    PyObject *result = NULL;
    cuk_view vstack[8], *v = vstack;
    const cuk_view *pstack[8], **vp = pstack;
    cuk_scalar sstack[8], *sv = sstack;
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
            if (vp[i]->dtype != pi->dtype || vp[i]->rank != pi->rank) {
                wrong_array(fn_name(f), pi, vp[i]);
                goto done;
            }
            continue;
        }
        vp[i] = &v[i];
        if (pi->rank == 0 && (tp == &PyFloat_Type || tp == &PyLong_Type || tp == &PyBool_Type || tp == &PyComplex_Type)) {
            if (scalar_arg(fn_name(f), pi, o, &sv[i], &v[i]) < 0) goto done;
            continue;
        }
        if (PyObject_TypeCheck(o, DeviceArray_Type)) {
            vp[i] = DA(o);
            kind = KIND_DEVICE;
            if (vp[i]->dtype != pi->dtype || vp[i]->rank != pi->rank) {
                wrong_array(fn_name(f), pi, vp[i]);
                goto done;
            }
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
        int rc, tk = arg_kind(o);
        if (pi->rank == 0 && tk == TP_BUFFER) {
            /* a NumPy scalar or 0-d array: by value, converted like a Python number */
            rc = scalar_arg(fn_name(f), pi, o, &sv[i], &v[i]);
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
                    rc = buffer_arg(fn_name(f), pi, o, &held[i], &v[i]);
                    if (kind < KIND_NUMPY) kind = KIND_NUMPY;
                } else if (PyObject_HasAttr(o, s_dlpack)) {
                    rc = dlpack_arg(fn_name(f), pi, o, &held[i], &v[i]);
                    if (!rc && v[i].place == CUK_ON_DEVICE && kind < KIND_FOREIGN) kind = KIND_FOREIGN, foreign = o;
                } else {
                    rc = pi->rank == 0 ? scalar_arg(fn_name(f), pi, o, &sv[i], &v[i])
                                       : buffer_arg(fn_name(f), pi, o, &held[i], &v[i]);
                }
            } else {
                rc = -1;
            }
        } else if (tk == TP_DLPACK || tk == TP_TORCH) {
            rc = tk == TP_TORCH ? torch_arg(fn_name(f), pi, o, &held[i], &v[i]) : dlpack_arg(fn_name(f), pi, o, &held[i], &v[i]);
            if (!rc && v[i].place == CUK_ON_DEVICE && kind < KIND_FOREIGN) kind = KIND_FOREIGN, foreign = o;
        } else if (pi->rank == 0 && tk != TP_BUFFER) {
            rc = scalar_arg(fn_name(f), pi, o, &sv[i], &v[i]);
        } else {
            rc = buffer_arg(fn_name(f), pi, o, &held[i], &v[i]);
            if (kind < KIND_NUMPY) kind = KIND_NUMPY;
        }
        if (rc < 0) goto done;
        /* Arrays of every kind get the same rank check (dtypes were checked above). */
        if (v[i].rank != pi->rank) {
            wrong_rank(fn_name(f), pi, v[i].rank, v[i].shape);
            goto done;
        }
    }
    if (outobj) {
        Held oh = {0};
        cuk_view ov;
        const cuk_view *op = NULL;
        if (out_view(f, outobj, &oh, &ov, &op) == 0) {
            int quick = 0;
            cuk_status s = op->place == CUK_ON_DEVICE && kind >= KIND_FOREIGN
                               ? cuk_fn_call_quick_out(f->f, vp, (int)n, op, &quick)
                               : CUK_OK;
            if (!s && !quick) {
                Py_BEGIN_ALLOW_THREADS s = cuk_fn_call_views_out(f->f, vp, (int)n, op);
                Py_END_ALLOW_THREADS
            }
            if (s) raise_status(s);
            else result = Py_NewRef(outobj);
        }
        held_release(&oh);
        goto done;
    }
    if (f->bf16_res && kind < KIND_FOREIGN) {
        /* the result comes to the host as NumPy: fail before running if it cannot */
        char what[160];
        snprintf(what, sizeof what, "%s()'s result", fn_name(f));
        if (!bf16_numpy_dtype(what)) goto done;
    }
    if (f->nres >= 2) {
        result = call_several(f, vp, n, f->nres, kind, foreign);
        goto done;
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
    cuk_call_stream_set(was);
    return result;
}

/* tp_call, for callers that do not use vectorcall. */
static PyObject *function_call(PyObject *self, PyObject *args, PyObject *kw) {
    Py_ssize_t n = PyTuple_Size(args), nkw = kw ? PyDict_Size(kw) : 0;
    PyObject *stack[9], **a = n + nkw <= 9 ? stack : PyMem_Malloc(sizeof *a * (size_t)(n + nkw));
    if (!a) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) a[i] = PyTuple_GetItem(args, i);
    PyObject *names = nkw ? PyTuple_New(nkw) : NULL, *key, *val;
    Py_ssize_t pos = 0, j = 0;
    while (names && PyDict_Next(kw, &pos, &key, &val)) {
        PyTuple_SetItem(names, j, Py_NewRef(key));
        a[n + j++] = val;
    }
    PyObject *r = nkw && !names ? NULL : function_vectorcall(self, a, (size_t)n, names);
    Py_XDECREF(names);
    if (a != stack) PyMem_Free(a);
    return r;
}

/* Arguments for a capture or a replay (graph.c): DeviceArrays, Python and NumPy scalars,
   anything with __cuda_array_interface__, and host buffers (NumPy), as views into v
   (held keeps what they need). -1 with an exception on a bad one. */
int function_views(PyObject *fobj, PyObject *args, cuk_view *v, const cuk_view **vp, cuk_scalar *sv, Held *held) {
    Function *f = (Function *)fobj;
    Py_ssize_t n = PyTuple_Size(args);
    if (n != f->nparams) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s (%zd given)", fn_name(f), f->nparams,
                     f->nparams == 1 ? "" : "s", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GetItem(args, i);
        const cuk_param_info *pi = &f->params[i];
        vp[i] = &v[i];
        int rc;
        if (o == Py_None) {
            vp[i] = NULL; /* a replay's "as it is" */
            continue;
        }
        if (PyObject_TypeCheck(o, DeviceArray_Type)) {
            vp[i] = DA(o);
            if (vp[i]->dtype != pi->dtype || vp[i]->rank != pi->rank) return wrong_array(fn_name(f), pi, vp[i]);
            continue;
        }
        int tk = arg_kind(o);
        if (pi->rank == 0 && tk != TP_CAI) {
            rc = scalar_arg(fn_name(f), pi, o, &sv[i], &v[i]);
        } else if (tk == TP_CAI || tk == TP_TORCH) {
            PyObject *cai = PyObject_GetAttr(o, s_cai);
            rc = cai ? cai_arg(fn_name(f), pi, cai, &v[i]) : -1;
            Py_XDECREF(cai);
        } else {
            rc = buffer_arg(fn_name(f), pi, o, &held[i], &v[i]);
        }
        if (rc < 0) return -1;
        if (v[i].rank != pi->rank) return wrong_rank(fn_name(f), pi, v[i].rank, v[i].shape);
    }
    return 0;
}

cuk_fn *function_fn(PyObject *fobj) { return ((Function *)fobj)->f; }
bool is_function(PyObject *o) { return PyObject_TypeCheck(o, Function_Type); }

static PyObject *function_capture(PyObject *self, PyObject *args) {
    return graph_capture(self, args);
}

/* profile(*args, **kw) -> str: one call, profiled on its own (cuk_program_profile_begin):
   the table cukc run --profile prints, per statement and on the GPU per kernel. */
static PyObject *function_profile(PyObject *self, PyObject *args, PyObject *kw) {
    cuk_program *p = ((Program *)((Function *)self)->prog)->p;
    cuk_status s = cuk_program_profile_begin(p);
    if (s) return raise_status(s);
    PyObject *r = function_call(self, args, kw);
    if (!r) { /* the call's exception stands; the profile is ended, its table dropped */
        cuk_program_profile_end(p, NULL);
        return NULL;
    }
    Py_DECREF(r);
    return written_text(end_profile, p);
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
/* [(dtype, rank)] of each result: [] for none, one for -> T, n for -> (T1, ..., Tn). */
static PyObject *function_results(PyObject *self, void *c) {
    (void)c;
    Function *f = (Function *)self;
    PyObject *l = PyList_New(0);
    for (int k = 0; l && k < f->nres; k++) {
        cuk_dtype dt;
        int rank;
        PyObject *t = cuk_fn_result_at(f->f, k, &dt, &rank) == CUK_OK ? Py_BuildValue("(si)", np_name[dt], rank) : NULL;
        if (!t || PyList_Append(l, t) < 0) Py_CLEAR(l);
        Py_XDECREF(t);
    }
    if (!l && !PyErr_Occurred()) PyErr_SetString(Error, cuk_last_error());
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
    {"results", function_results, NULL, "[(dtype, rank)] of each result ([] for none)", NULL},
    {"__name__", function_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMemberDef function_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Function, vectorcall), READONLY, NULL}, {NULL, 0, 0, 0, NULL}};
static PyMethodDef function_methods[] = {
    {"capture", function_capture, METH_VARARGS,
     "capture(*args) -> Graph: one call recorded into a CUDA graph that replays with new data of the same shapes"},
    {"profile", (PyCFunction)(void (*)(void))function_profile, METH_VARARGS | METH_KEYWORDS,
     "profile(*args) -> str: one call, timed per statement (and on the GPU per kernel: time, bytes, GB/s, % of "
     "copy), as cukc run --profile prints it"},
    {NULL, NULL, 0, NULL}};
static PyType_Slot function_slots[] = {{Py_tp_dealloc, function_dealloc},
                                       {Py_tp_methods, function_methods},
                                       {Py_tp_call, function_call},
                                       {Py_tp_members, function_members},
                                       {Py_tp_getset, function_getset},
                                       {Py_tp_repr, function_repr},
                                       {0, 0}};
static PyType_Spec function_spec = {"cuk.Function", sizeof(Function), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                    function_slots};

typedef struct ExplainArgs {
    const char *src, *name;
    cuk_explain what;
} ExplainArgs;
static cuk_status explain_text(void *ctx, FILE *out) {
    const ExplainArgs *a = ctx;
    return cuk_program_explain(a->src, a->name, a->what, out);
}

/* explain(src_or_path, name, what) -> str: cuk_program_explain's text. */
static PyObject *py_explain(PyObject *m, PyObject *args) {
    (void)m;
    const char *src, *name = NULL;
    int what = 0;
    if (!PyArg_ParseTuple(args, "s|zi", &src, &name, &what)) return NULL;
    ExplainArgs a = {src, name, (cuk_explain)what};
    return written_text(explain_text, &a);
}

static PyMethodDef call_funcs[] = {
    {"compile", py_compile, METH_VARARGS, "compile(src_or_path, backend=0, name=None) -> Program"},
    {"explain", py_explain, METH_VARARGS, "explain(src_or_path, name=None, what=0) -> str: 0 IR and kernels, 1 CUDA C, 2 dot"},
    {NULL, NULL, 0, NULL}};

int call_init(PyObject *mod) {
    if (!(Program_Type = make_type(mod, &program_spec, "Program"))) return -1;
    if (!(Function_Type = make_type(mod, &function_spec, "Function"))) return -1;
    return PyModule_AddFunctions(mod, call_funcs);
}
