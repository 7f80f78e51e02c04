/* Raw CUDA modules and kernels (SourceModule's Module, cuk.driver.Function): argument
   packing by PyCUDA's rules, the PyCUDA-style launch and the prepared calls. */
#include "_cuk.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* nvrtc_compile(source, options, arch, ptx, program_name) -> bytes: CUDA C compiled by
   NVRTC for arch ("sm_90") without a GPU, through the disk cache (cuk_compile); PTX text
   if ptx, else a cubin (relocatable with "-rdc=true", for link()). */
/* nvrtc_compile_ex(source, options, arch, target, names, program_name) -> (image, lowered
   names, log): cuk.core's Program.compile (target "ptx", "cubin" or "ltoir"). */
static PyObject *nvrtc_compile(const char *src, PyObject *opts, const char *arch, int kind, PyObject *names,
                               const char *pname);
static PyObject *py_nvrtc_compile_ex(PyObject *m, PyObject *args) {
    (void)m;
    const char *src, *arch, *target, *pname = NULL;
    PyObject *opts, *names;
    if (!PyArg_ParseTuple(args, "sOssO|z", &src, &opts, &arch, &target, &names, &pname)) return NULL;
    int kind = !strcmp(target, "ptx") ? CUK_IMAGE_PTX : !strcmp(target, "ltoir") ? CUK_IMAGE_LTOIR : CUK_IMAGE_CUBIN;
    return nvrtc_compile(src, opts, arch, kind, names, pname);
}

static PyObject *py_nvrtc_compile(PyObject *m, PyObject *args) {
    (void)m;
    const char *src, *arch, *pname = NULL;
    PyObject *opts;
    int ptx;
    if (!PyArg_ParseTuple(args, "sOsp|z", &src, &opts, &arch, &ptx, &pname)) return NULL;
    return nvrtc_compile(src, opts, arch, ptx ? CUK_IMAGE_PTX : CUK_IMAGE_CUBIN, NULL, pname);
}

static PyObject *nvrtc_compile(const char *src, PyObject *opts, const char *arch, int kind, PyObject *names,
                               const char *pname) {
    bool ptx = kind == CUK_IMAGE_PTX;
    PyObject *ot = PySequence_Tuple(opts);
    if (!ot) return NULL;
    PyObject *nt = names ? PySequence_Tuple(names) : PyTuple_New(0);
    if (!nt) {
        Py_DECREF(ot);
        return NULL;
    }
    Py_ssize_t no = PyTuple_Size(ot), nn = PyTuple_Size(nt);
    const char **ov = PyMem_Calloc((size_t)no + 1, sizeof(char *));
    const char **nv = PyMem_Calloc((size_t)nn + 1, sizeof(char *));
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
    o.arch = arch;
    o.kind = (cuk_image_kind)kind;
    o.options = ov;
    o.noptions = (int)no;
    o.names = nv;
    o.nnames = (int)nn;
    o.program_name = pname;
    cuk_image *im = NULL;
    cuk_status s;
    Py_BEGIN_ALLOW_THREADS s = cuk_compile(src, &o, &im);
    Py_END_ALLOW_THREADS if (s) {
        raise_status(s);
        goto out;
    }
    const void *data;
    size_t size;
    if (cuk_image_data(im, &data, &size) == CUK_OK)
        /* PTX: without the NUL NVRTC counts (the linker and the loader take the text) */
        r = PyBytes_FromStringAndSize(data, (Py_ssize_t)(ptx && size ? size - 1 : size));
    else
        raise_status(CUK_ERR_INVALID);
    if (r && names) { /* (image, lowered names, log) */
        PyObject *low = PyList_New(nn);
        for (Py_ssize_t i = 0; low && i < nn; i++) PyList_SetItem(low, i, PyUnicode_FromString(cuk_image_lowered_name(im, nv[i])));
        r = low ? Py_BuildValue("(NNs)", r, low, "") : (Py_DECREF(r), NULL);
    }
    cuk_image_free(im);
out:
    PyMem_Free(ov);
    PyMem_Free(nv);
    Py_DECREF(ot);
    Py_DECREF(nt);
    return r;
}

/* module_load(image) -> Module: a PTX or cubin image (a linked one, say) loaded on the
   current device. It stays loaded until exit, as compiled modules do. */
static PyObject *py_module_load(PyObject *m, PyObject *arg) {
    (void)m;
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    cuk_module *mod = NULL;
    cuk_status s = b.len ? CUK_OK : CUK_ERR_INVALID;
    if (!b.len) PyErr_SetString(ArgumentError, "module_load: the image is empty");
    else {
        Py_BEGIN_ALLOW_THREADS s = cuk_module_load(&mod, b.buf, (size_t)b.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&b);
    if (!b.len) return NULL;
    if (s) return raise_status(s);
    Module *mo = PyObject_New(Module, Module_Type);
    if (mo) mo->m = mod;
    return (PyObject *)mo;
}

/* ---- linking (the runtime's cuk_link, on nvJitLink) ----------------------------------------- */

/* link(inputs, options[, ptx]) -> cubin (or PTX) bytes. inputs: (kind, bytes or file
   name, name) with nvJitLink's input kinds (cuk_link); options: nvJitLink's
   ("-arch=sm_90", ...). */
static PyObject *py_link(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *inputs, *opts;
    int ptx = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &inputs, &opts, &ptx)) return NULL;
    PyObject *it = PySequence_Tuple(inputs), *ot = it ? PySequence_Tuple(opts) : NULL, *r = NULL;
    if (!ot) {
        Py_XDECREF(it);
        return NULL;
    }
    Py_ssize_t no = PyTuple_Size(ot), ni = PyTuple_Size(it);
    const char **ov = PyMem_Calloc((size_t)no + 1, sizeof(char *));
    cuk_link_input *in = PyMem_Calloc((size_t)ni + 1, sizeof *in);
    Py_buffer *bufs = PyMem_Calloc((size_t)ni + 1, sizeof *bufs);
    Py_ssize_t nb = 0; /* buffers held */
    if (!ov || !in || !bufs) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < no; i++)
        if (!(ov[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(ot, i), NULL))) goto out;
    for (Py_ssize_t i = 0; i < ni; i++) {
        PyObject *data;
        if (!PyArg_ParseTuple(PyTuple_GetItem(it, i), "iOs", &in[i].kind, &data, &in[i].name)) goto out;
        if (PyUnicode_Check(data)) {
            if (!(in[i].path = PyUnicode_AsUTF8AndSize(data, NULL))) goto out;
            continue;
        }
        if (PyObject_GetBuffer(data, &bufs[nb], PyBUF_SIMPLE) < 0) goto out;
        in[i].data = bufs[nb].buf;
        in[i].size = (size_t)bufs[nb].len;
        nb++;
    }
    unsigned char *img = NULL;
    size_t size = 0;
    cuk_status s;
    Py_BEGIN_ALLOW_THREADS s = cuk_link(in, (int)ni, ov, (int)no, ptx, &img, &size);
    Py_END_ALLOW_THREADS
    if (s) raise_status(s);
    else r = PyBytes_FromStringAndSize((const char *)img, (Py_ssize_t)size);
    free(img);
out:
    for (Py_ssize_t i = 0; i < nb; i++) PyBuffer_Release(&bufs[i]);
    PyMem_Free(bufs);
    PyMem_Free(in);
    PyMem_Free(ov);
    Py_DECREF(it);
    Py_DECREF(ot);
    return r;
}

static PyObject *py_nvjitlink_path(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    const char *p;
    CHECK(cuk_nvjitlink_path(&p));
    return PyUnicode_FromString(p);
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
    cuk_devptr p;
    size_t n;
    CHECK(cuk_module_global(((Module *)self)->m, name, &p, &n));
    return Py_BuildValue("(Kn)", p, (Py_ssize_t)n);
}
static PyMethodDef module_methods[] = {{"get_function", module_get_function, METH_O, NULL},
                                       {"get_global", module_get_global, METH_O, NULL},
                                       {NULL, NULL, 0, NULL}};
static PyObject *module_handle(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong((unsigned long long)cuk_module_handle(((Module *)self)->m));
}
static PyGetSetDef module_getset[] = {{"handle", module_handle, NULL, "the CUmodule", NULL},
                                      {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot module_slots[] = {
    {Py_tp_dealloc, module_dealloc}, {Py_tp_methods, module_methods}, {Py_tp_getset, module_getset}, {0, 0}};
static PyType_Spec module_spec = {"cuk._cuk.Module", sizeof(Module), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                  module_slots};

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
    else if (PyObject_CheckBuffer(o) && !PyLong_CheckExact(o) && !PyFloat_CheckExact(o)) /* numpy.float64 is a float */
        kind = LK_VALUE;
    else if (!PyLong_Check(o) && PyType_GetSlot(tp, Py_nb_index))
        /* an object that is a pointer (cuk.driver.PointerHolderBase, a pool's allocation);
           plain Python ints stay errors, as in PyCUDA: the kernel could not know their type */
        kind = LK_POINTER;
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
        case 'e': { /* numpy.float16: the half's bits (a kernel's __half) */
            uint16_t v = f16_bits(PyFloat_AsDouble(o));
            memcpy(dst, &v, 2);
            break;
        }
        case 'F':   /* numpy.complex64: two floats, the real part first (a float2, */
        case 'D': { /* cuComplex, cuda::std::complex); 'D' complex128, two doubles */
            /* complex(o): numpy.complex64 is no Python complex, and its float() drops the
               imaginary part */
            PyObject *z = PyObject_CallFunctionObjArgs((PyObject *)&PyComplex_Type, o, NULL);
            if (!z) return -1;
            double re = PyComplex_RealAsDouble(z), im = PyComplex_ImagAsDouble(z);
            Py_DECREF(z);
            if (fmt == 'F') {
                float v[2] = {(float)re, (float)im};
                memcpy(dst, v, 8);
            } else {
                double v[2] = {re, im};
                memcpy(dst, v, 16);
            }
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
        case 'V': break; /* a struct type (gpuarray.vec.float3, ...): its bytes, below */
        default: PyErr_Format(PyExc_ValueError, "prepared call: unsupported format letter '%c'", fmt); return -1;
        }
        if (fmt != 'V') return PyErr_Occurred() ? -1 : 0;
    }
    int lk = fmt == 'V' ? LK_VALUE : launch_kind(o);
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
static PyObject *do_launch_ex(Kernel *k, const char *fmt, PyObject *const *argv, Py_ssize_t n, cuk_dim3 grid,
                              cuk_dim3 block, cuk_stream *s, unsigned shared, bool timed, cuk_dim3 cluster, bool coop) {
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
    if (cluster.x || coop) {
        cuk_launch_opts lo = {.grid = grid, .block = block, .shared = shared, .stream = s, .cluster = cluster,
                              .cooperative = coop};
        st = cuk_launch_ex(k->f, &lo, p.ptrs);
    } else {
        st = cuk_launch(k->f, grid, block, shared, s, p.ptrs);
    }
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

static PyObject *do_launch(Kernel *k, const char *fmt, PyObject *const *argv, Py_ssize_t n, cuk_dim3 grid, cuk_dim3 block,
                           cuk_stream *s, unsigned shared, bool timed) {
    return do_launch_ex(k, fmt, argv, n, grid, block, s, shared, timed, (cuk_dim3){0, 0, 0}, false);
}

/* launch_ex(kernel, args, grid, block, shared, stream, cluster, cooperative): cuk.core's
   launch (LaunchConfig's fields as dim3 tuples; cluster None for none). */
static PyObject *py_launch_ex(PyObject *m, PyObject *a) {
    (void)m;
    PyObject *ko, *args, *go, *bo, *so, *co;
    unsigned shared;
    int coop;
    if (!PyArg_ParseTuple(a, "OO!OOIOOp", &ko, &PyTuple_Type, &args, &go, &bo, &shared, &so, &co, &coop)) return NULL;
    if (!PyObject_TypeCheck(ko, Kernel_Type)) return PyErr_Format(PyExc_TypeError, "launch_ex: not a kernel");
    cuk_dim3 grid, block, cluster = {0, 0, 0};
    cuk_stream *s;
    if (dim3_arg(go, &grid, "grid") < 0 || dim3_arg(bo, &block, "block") < 0 || stream_of(so, &s) < 0) return NULL;
    if (co != Py_None && dim3_arg(co, &cluster, "cluster") < 0) return NULL;
    Py_ssize_t n = PyTuple_Size(args);
    if (n > 256) return PyErr_Format(PyExc_TypeError, "launch: at most 256 kernel arguments, %zd given", n);
    PyObject *items[256];
    for (Py_ssize_t i = 0; i < n; i++) items[i] = PyTuple_GetItem(args, i);
    return do_launch_ex((Kernel *)ko, NULL, items, n, grid, block, s, shared, false, cluster, coop);
}

/* occupancy(kernel, block, shared) -> (resident blocks per SM, suggested block size) */
static PyObject *py_occupancy(PyObject *m, PyObject *a) {
    (void)m;
    PyObject *ko;
    unsigned block, shared;
    if (!PyArg_ParseTuple(a, "OII", &ko, &block, &shared)) return NULL;
    if (!PyObject_TypeCheck(ko, Kernel_Type)) return PyErr_Format(PyExc_TypeError, "occupancy: not a kernel");
    cuk_function *f = ((Kernel *)ko)->f;
    int blocks = 0;
    cuk_function_info fi;
    CHECK(cuk_function_info_get(f, &fi));
    if (block) CHECK(cuk_function_resident(f, block, shared, &blocks));
    cuk_device_props props;
    int dev = 0;
    CHECK(cuk_device_current(&dev));
    CHECK(cuk_device_props_get(dev, &props));
    return Py_BuildValue("(ii)", block && props.sm_count ? blocks / props.sm_count : fi.blocks_per_sm,
                         fi.occupancy_block);
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
/* get_attribute(attr): a CUfunction_attribute number (cuk.driver.function_attribute, as
   PyCUDA) or one of the names kernel_attrs gives. */
static PyObject *kernel_get_attribute(PyObject *self, PyObject *attr) {
    if (PyLong_Check(attr)) {
        long a = PyLong_AsLong(attr);
        if (a == -1 && PyErr_Occurred()) return NULL;
        int v = 0;
        CHECK(cuk_function_attribute(((Kernel *)self)->f, a < 0 || a > INT_MAX ? -1 : (int)a, &v));
        return PyLong_FromLong(v);
    }
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
/* A CUfunction_attribute as a property; c is the number (the getset's closure). */
static PyObject *kernel_attr_num(PyObject *self, void *c) {
    int v = 0;
    CHECK(cuk_function_attribute(((Kernel *)self)->f, (int)(intptr_t)c, &v));
    return PyLong_FromLong(v);
}
/* smem_available(blocks_per_sm, block) -> bytes of dynamic shared memory a block may use */
static PyObject *kernel_smem_available(PyObject *self, PyObject *args) {
    int per_sm, block;
    if (!PyArg_ParseTuple(args, "ii", &per_sm, &block)) return NULL;
    size_t b = 0;
    CHECK(cuk_function_smem_available(((Kernel *)self)->f, per_sm, block, &b));
    return PyLong_FromSize_t(b);
}
/* param_info(i) -> (offset, size), or None past the last parameter */
static PyObject *kernel_param_info(PyObject *self, PyObject *arg) {
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i < 0) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "param_info: negative index");
    size_t off = 0, size = 0;
    cuk_status st = cuk_function_param_info(((Kernel *)self)->f, (size_t)i, &off, &size);
    if (st == CUK_ERR_NOT_FOUND) Py_RETURN_NONE;
    if (st) return raise_status(st);
    return Py_BuildValue("(nn)", (Py_ssize_t)off, (Py_ssize_t)size);
}
static PyObject *kernel_noop(PyObject *self, PyObject *arg) {
    (void)self;
    (void)arg;
    Py_RETURN_NONE;
}
static PyObject *kernel_handle(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong((unsigned long long)cuk_function_handle(((Kernel *)self)->f));
}
static PyGetSetDef kernel_getset[] = {
    {"handle", kernel_handle, NULL, "the CUfunction", NULL},
    {"num_regs", kernel_attr_get, NULL, "registers per thread", "num_regs"},
    {"shared_size_bytes", kernel_attr_get, NULL, "static shared memory", "shared_size_bytes"},
    {"max_threads_per_block", kernel_attr_get, NULL, NULL, "max_threads_per_block"},
    {"local_size_bytes", kernel_attr_num, NULL, "local memory per thread", (void *)(intptr_t)3},
    {"const_size_bytes", kernel_attr_num, NULL, "constant memory", (void *)(intptr_t)2},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Kernel, vectorcall), READONLY, NULL}, {NULL, 0, 0, 0, NULL}};

static PyMethodDef kernel_methods[] = {{"_prepare", kernel_prepare, METH_O, NULL},
                                       {"prepare", (PyCFunction)(void (*)(void))kernel_prepare_api, METH_VARARGS | METH_KEYWORDS,
                                        "prepare(arg_types, block=None, shared=None, texrefs=())"},
                                       {"prepared_timed_call", FASTKW(kernel_prepared_timed_call),
                                        "prepared_timed_call(grid, block, *args, shared_size=0) -> callable giving seconds"},
                                       {"get_attribute", kernel_get_attribute, METH_O, NULL},
                                       {"param_info", kernel_param_info, METH_O, "param_info(i) -> (offset, size) or None"},
                                       {"smem_available", kernel_smem_available, METH_VARARGS, "smem_available(blocks_per_sm, block) -> bytes"},
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


static PyMethodDef kernel_funcs[] = {{"module_compile", py_module_compile, METH_VARARGS, NULL},
                                     {"nvrtc_compile", py_nvrtc_compile, METH_VARARGS,
                                      "nvrtc_compile(source, options, arch, ptx, program_name=None) -> bytes"},
                                     {"module_load", py_module_load, METH_O, "module_load(image) -> Module"},
                                     {"launch_ex", py_launch_ex, METH_VARARGS, NULL},
                                     {"nvrtc_compile_ex", py_nvrtc_compile_ex, METH_VARARGS, NULL},
                                     {"occupancy", py_occupancy, METH_VARARGS, NULL},
                                     {"link", py_link, METH_VARARGS, "link([(kind, bytes or path, name)], options) -> cubin"},
                                     {"nvjitlink_path", py_nvjitlink_path, METH_NOARGS, NULL},
                                     {NULL, NULL, 0, NULL}};

int kernel_init(PyObject *mod) {
    if (!(Module_Type = make_type(mod, &module_spec, "Module"))) return -1;
    if (!(Kernel_Type = make_type(mod, &kernel_spec, "Kernel"))) return -1;
    s_block = PyUnicode_InternFromString("block");
    s_grid = PyUnicode_InternFromString("grid");
    s_stream = PyUnicode_InternFromString("stream");
    s_shared = PyUnicode_InternFromString("shared");
    s_time_kernel = PyUnicode_InternFromString("time_kernel");
    s_texrefs = PyUnicode_InternFromString("texrefs");
    if (!s_block || !s_grid || !s_stream || !s_shared || !s_time_kernel || !s_texrefs) return -1;
    return PyModule_AddFunctions(mod, kernel_funcs);
}
