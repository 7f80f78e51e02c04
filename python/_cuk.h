/* The internals the cuk._cuk extension's files share: the object layouts, the types,
   the exceptions, the dtype tables and the helpers more than one file calls. */
#ifndef CUK_PY_CUK_H
#define CUK_PY_CUK_H
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <structmember.h>

#include <stdbool.h>
#include <stdint.h>

#include "api/cuk_program.h"
#include "runtime/cuk.h"

/* Py_TPFLAGS_HAVE_VECTORCALL and its calling convention are in the limited API from
   3.12 on, but the ABI (a tp_vectorcall_offset member, "__vectorcalloffset__" in the
   spec's members, the flag bit) has been the same since 3.8 and 3.11 honours it for heap
   types: spelled out here so that one abi3 build gets the fast call on 3.11 too. */
#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL (1UL << 11)
#endif
#define CUK_VECTORCALL_ARGUMENTS_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))
typedef PyObject *(*cuk_vectorcallfunc)(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* ---- _cuk.c: the module, exceptions, dtypes ---------------------------------------------------- */

extern PyObject *Error, *CompileError, *RunError, *ArgumentError, *DevMemoryError, *LogicError, *LaunchError,
    *NoDeviceError;

/* Raises the exception for a failed runtime call, with cuk_last_error()'s message. */
PyObject *raise_status(cuk_status s);
#define CHECK(call)                                                                                \
    do {                                                                                           \
        cuk_status s_ = (call);                                                                    \
        if (s_ != CUK_OK) return raise_status(s_);                                                 \
    } while (0)
/* CHECK for functions that return -1 on error. */
#define CHECK_INT(call)                                                                            \
    do {                                                                                           \
        cuk_status s_ = (call);                                                                    \
        if (s_ != CUK_OK) {                                                                        \
            raise_status(s_);                                                                      \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* The object types are heap types (PyType_FromSpec, for abi3): instances are made and
   freed through the type's slots, and each instance holds a reference to its type. */
PyObject *heap_alloc(PyTypeObject *tp);
void heap_free(PyObject *self);
/* A type from its spec, added to the module as export_name (NULL: not exported). Types
   whose objects only the module makes (a bare one would hold NULL handles) have
   Py_TPFLAGS_DISALLOW_INSTANTIATION (stable ABI since 3.10): calling them is a TypeError. */
PyTypeObject *make_type(PyObject *mod, PyType_Spec *spec, const char *export_name);

extern const char *const np_name[CUK_DTYPE_COUNT];  /* "float32" */
extern const char *const typestr[CUK_DTYPE_COUNT];  /* "<f4" */
extern const char *const buffmt[CUK_DTYPE_COUNT];   /* "f", "Zf" */
/* The dtypes, for messages. */
#define DTYPE_LIST                                                                                      \
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64, " \
    "complex64, complex128"
int dtype_of_format(const char *f, Py_ssize_t itemsize);
int dtype_of_typestr(const char *t, bool bf16_ok);
int dtype_arg(PyObject *o, cuk_dtype *dt);
/* NumPy's bfloat16, ml_dtypes.bfloat16's dtype (borrowed), or NULL with ArgumentError
   saying to install ml_dtypes; what is asked for (what) goes in the message. */
PyObject *bf16_numpy_dtype(const char *what);
/* Whether o is a NumPy array or scalar of ml_dtypes.bfloat16 (its dtype's name is
   "bfloat16"; such arrays export no buffer format). */
bool is_numpy_bf16(PyObject *o);
/* A C-contiguous NumPy copy of o (o itself when it is one): numpy.ascontiguousarray. */
PyObject *numpy_contiguous(PyObject *o);
/* The bits of a bfloat16 NumPy array (is_numpy_bf16) as a C-contiguous uint16 array,
   which exports a buffer (a view when o is contiguous, so writes reach o). */
PyObject *bf16_bits(PyObject *o);

extern PyObject *np_mod, *np_asarray;
int need_numpy(void);

PyObject *shape_tuple(int r, const int64_t *shape);
int shape_arg(PyObject *o, int *rank, int64_t *shape);

/* Interned attribute names. */
extern PyObject *s_cai, *s_dlpack, *s_dlpack_device, *s_gpudata;

/* What cuk/__init__.py registers (_set_hooks). */
extern PyObject *foreign_hook;      /* cuk._convert_result(template, DeviceArray): the general way back */
extern PyObject *maker_lookup;      /* cuk._result_maker(type) -> callable or None */
extern PyObject *maker_cache;       /* {type: maker or None} */
extern PyObject *arg_handler_types; /* tuple (In, Out, InOut), from cuk.driver */
extern PyObject *sequence_hook;     /* cuk._sequence_arg(list, dtype, fn, param) -> ndarray */

/* Each file's part of the module: its types and functions. */
int array_init(PyObject *mod);
int call_init(PyObject *mod);
int memory_init(PyObject *mod);
int stream_init(PyObject *mod);
int kernel_init(PyObject *mod);
int driver_init(PyObject *mod);

/* ---- array.c: DeviceArray, HostBuf, CUDA array interface, DLPack ------------------------------- */

/* The array is described inline by a cuk_view, so that a call passes a pointer to it
   (no copy, no allocation) and a result is one Python object. */
typedef struct {
    PyObject_HEAD
    cuk_view v;      /* place is CUK_ON_DEVICE; v.dev is 0 for an array with no elements */
    bool owns;       /* v.dev is a pool block, freed with the object */
    PyObject *base;  /* what keeps wrapped memory alive, or NULL */
    PyObject *weakrefs;
    uintptr_t stream; /* the stream the work that made it was queued on (a raw handle; 1: legacy) */
    /* When that stream is another library's (cuk_stream_is_foreign), which it may destroy
       before the array goes: an event recorded there after the work, which waits use
       instead of naming the stream again. NULL otherwise. */
    cuk_event *ready;
} DeviceArray;
extern PyTypeObject *DeviceArray_Type;
#define DA(self) (&((DeviceArray *)(self))->v)

static inline int64_t view_size(const cuk_view *v) {
    int64_t n = 1;
    for (int k = 0; k < v->rank; k++) n *= v->shape[k];
    return n;
}
static inline size_t view_nbytes(const cuk_view *v) { return (size_t)view_size(v) * cuk_dtype_size(v->dtype); }

/* A DeviceArray for v; with owns, it takes over v->dev (freed here if that fails). */
PyObject *devarray_new(const cuk_view *v, bool owns, PyObject *base);
/* A NumPy array (or NumPy scalar for rank 0) that takes over a host cuk_array. */
PyObject *numpy_from_host(cuk_array *a, bool scalar_for_rank0);
/* The cuk dtype of a buffer, or an error naming what. */
int buffer_dtype(const Py_buffer *b, const char *what, cuk_dtype *dt);

/* DLPack (dlpack.h v0.8, ABI-stable): what both directions need. */
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

/* The bookkeeping of one argument that needed more than a view: a buffer we hold, a
   contiguous copy, a DLPack tensor we consumed. */
typedef struct Held {
    Py_buffer buf;
    bool has_buf;
    PyObject *keep;      /* a temporary (contiguous copy) */
    PyObject *dlcap;     /* a DLPack capsule we consumed */
    DLManagedTensor *dlm;
} Held;
void held_release(Held *h);

/* A stream handle from Python, with the conventions of the CUDA array interface and of
   DLPack: None (and for DLPack -1) give *h = 0, "nothing to order"; 1 is the legacy
   default stream, 2 the per-thread one, other positive ints stream handles; 0, other
   negative numbers and non-ints are errors (ValueError, TypeError). */
int stream_handle_arg(PyObject *o, bool dlpack, uintptr_t *h);

/* Arguments of compiled functions from other libraries' arrays: a device view from a
   __cuda_array_interface__ dict, a view of a DLPack tensor (held in h). fn and pi name
   the function and parameter in errors. */
int cai_arg(const char *fn, const cuk_param_info *pi, PyObject *cai, cuk_view *v);
int dlpack_arg(const char *fn, const cuk_param_info *pi, PyObject *o, Held *h, cuk_view *v);
bool torch_fast_path(void);
/* Starts a call's arguments: torch_arg orders each device's PyTorch stream once per call. */
void torch_call_begin(void);
int torch_arg(const char *fn, const cuk_param_info *pi, PyObject *o, Held *h, cuk_view *v);

/* ---- call.c: programs and their calls ---------------------------------------------------------- */

/* The errors for an argument of the wrong dtype or rank (ArgumentError, naming the
   function, the parameter, what it is and what was given, and what to do). */
int wrong_dtype(const char *fn, const cuk_param_info *pi, cuk_dtype got);
int wrong_rank(const char *fn, const cuk_param_info *pi, int rank, const int64_t *shape);
/* x rounded to an IEEE half as the language's f16(x) rounds (once, to nearest even): its bits. */
uint16_t f16_bits(double x);

/* ---- memory.c ------------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    cuk_devptr p;
    size_t n;
    PyObject *weakrefs;
} Alloc;
extern PyTypeObject *Alloc_Type;

/* A device pointer from an int, an allocation, a DeviceArray, a GPUArray (.gpudata) or
   anything with __cuda_array_interface__. */
int devptr_of(PyObject *o, cuk_devptr *p);

/* ---- stream.c ------------------------------------------------------------------------------------ */

/* The cuk_stream of an optional stream argument (None: the default stream). */
int stream_of(PyObject *o, cuk_stream **s);
/* Another library's stream (or a raw handle) as a raw handle, without touching a device. */
int stream_handle_of(PyObject *o, uintptr_t *h);

/* call.c, for graph.c: a compiled function's arguments as views (None: NULL), its handle */
int function_views(PyObject *f, PyObject *args, cuk_view *v, const cuk_view **vp, cuk_scalar *sv, Held *held);
cuk_fn *function_fn(PyObject *f);
/* graph.c: Function.capture(*args) */
PyObject *graph_capture(PyObject *f, PyObject *args);
int graph_init(PyObject *mod);
/* The raw handle of this thread's call stream (cuk_call_stream_get; 1: legacy). */
static inline uintptr_t call_stream_handle(void) { return cuk_stream_handle(cuk_call_stream_get()); }

#endif
