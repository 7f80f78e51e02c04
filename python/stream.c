/* Streams and events (cuk.driver.Stream, cuk.driver.Event). */
#include <string.h>

#include "_cuk.h"

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

/* Stream(nonblocking=1, priority=0): cuk.driver.Stream passes neither (PyCUDA's flags are
   taken by its __new__); cuk.core's StreamOptions pass both. */
static PyObject *stream_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)kw;
    int nonblocking = 1, priority = 0;
    if (!PyArg_ParseTuple(args, "|ii", &nonblocking, &priority)) return NULL;
    cuk_stream *s;
    CHECK(cuk_stream_create_ex(&s, nonblocking, priority));
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
static PyObject *stream_priority(PyObject *self, void *c) {
    (void)c;
    int p;
    CHECK(cuk_stream_priority(((Stream *)self)->s, &p));
    return PyLong_FromLong(p);
}
static PyObject *stream_handle(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong(cuk_stream_handle(((Stream *)self)->s));
}
/* cuda.core's stream protocol: (version, handle) */
static PyObject *stream_cuda_stream(PyObject *self, PyObject *u) {
    (void)u;
    return Py_BuildValue("(iK)", 0, (unsigned long long)cuk_stream_handle(((Stream *)self)->s));
}
static PyObject *stream_enter(PyObject *self, PyObject *u);
static PyObject *stream_exit(PyObject *self, PyObject *args);
static PyMethodDef stream_methods[] = {{"synchronize", stream_synchronize, METH_NOARGS, NULL},
                                       {"__enter__", stream_enter, METH_NOARGS, "make this the current stream"},
                                       {"__exit__", stream_exit, METH_VARARGS, "restore the current stream"},
                                       {"is_done", stream_is_done, METH_NOARGS, NULL},
                                       {"wait_for_event", stream_wait_for_event, METH_O, NULL},
                                       {"__cuda_stream__", stream_cuda_stream, METH_NOARGS, "(0, handle)"},
                                       {NULL, NULL, 0, NULL}};
static PyGetSetDef stream_getset[] = {{"handle", stream_handle, NULL, NULL, NULL},
                                       {"priority", stream_priority, NULL, "0 the default; lower numbers run first", NULL},
                                       {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot stream_slots[] = {{Py_tp_new, stream_new},         {Py_tp_dealloc, stream_dealloc},
                                     {Py_tp_methods, stream_methods}, {Py_tp_getset, stream_getset},
                                     {Py_tp_doc, "A CUDA stream (non-blocking)."}, {0, 0}};
static PyType_Spec stream_spec = {"cuk.driver.Stream", sizeof(Stream), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, stream_slots};

/* Wrappers of other libraries' streams (cuk_stream_wrap), by handle: made once, kept for
   the process (a wrapper is the handle and its device; a stream the library destroyed
   and a later one with the same handle share it harmlessly). */
#define NWRAP 64
static struct {
    uintptr_t h;
    int dev;
    cuk_stream *s;
} wraps[NWRAP];
static int nwraps;

static int wrap_handle(uintptr_t h, cuk_stream **s) {
    if (h == CUK_STREAM_LEGACY) {
        *s = NULL;
        return 0;
    }
    int dev = 0;
    CHECK_INT(cuk_device_current(&dev));
    for (int i = 0; i < nwraps; i++)
        if (wraps[i].h == h && wraps[i].dev == dev) {
            *s = wraps[i].s;
            return 0;
        }
    cuk_stream *w;
    CHECK_INT(cuk_stream_wrap(h, &w));
    if (nwraps == NWRAP) { /* the oldest goes (a Python caller holds no wrapper) */
        cuk_stream_destroy(wraps[0].s);
        memmove(&wraps[0], &wraps[1], sizeof wraps[0] * (NWRAP - 1));
        nwraps--;
    }
    wraps[nwraps].h = h;
    wraps[nwraps].dev = dev;
    wraps[nwraps].s = w;
    nwraps++;
    *s = w;
    return 0;
}

/* Another library's stream as a raw handle: an object with __cuda_stream__ (cuda.core's
   protocol: (version, handle)), a CuPy stream (.ptr), a PyTorch stream (.cuda_stream), or
   a raw handle (an int: 1 the legacy default stream, 2 the per-thread one, else a
   CUstream; CuPy's and PyTorch's 0 is their legacy default stream, 1). Touches no device.
   -1 with TypeError for anything else. */
/* Whether o's type is named like a stream (PyTorch's and CuPy's Stream, ExternalStream):
   their handles are .cuda_stream and .ptr, which arrays have too (a GPUArray's .ptr is its
   device address, and must never be taken for a stream). */
static bool is_stream_type(PyObject *o) {
    PyObject *nm = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__name__");
    const char *name = nm && PyUnicode_Check(nm) ? PyUnicode_AsUTF8AndSize(nm, NULL) : NULL;
    size_t n = name ? strlen(name) : 0;
    bool r = n >= 6 && strcmp(name + n - 6, "Stream") == 0;
    Py_XDECREF(nm);
    PyErr_Clear();
    return r;
}

int stream_handle_of(PyObject *o, uintptr_t *h) {
    PyObject *v = NULL;
    if (PyLong_Check(o)) {
        v = Py_NewRef(o);
    } else if (PyObject_HasAttrString(o, "__cuda_stream__")) {
        PyObject *t = PyObject_CallMethod(o, "__cuda_stream__", NULL);
        if (!t) return -1;
        if (PyTuple_Check(t) && PyTuple_Size(t) == 2) v = Py_NewRef(PyTuple_GetItem(t, 1));
        Py_DECREF(t);
    } else if (is_stream_type(o) && PyObject_HasAttrString(o, "cuda_stream")) {
        v = PyObject_GetAttrString(o, "cuda_stream");
    } else if (is_stream_type(o) && PyObject_HasAttrString(o, "ptr")) {
        v = PyObject_GetAttrString(o, "ptr");
    }
    if (!v || !PyLong_Check(v)) {
        Py_XDECREF(v);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "stream must be a cuk.driver.Stream, a CuPy or PyTorch stream, an object with "
                         "__cuda_stream__, a stream handle (int) or None, not %R",
                         o);
        return -1;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (PyErr_Occurred()) return -1;
    *h = u ? (uintptr_t)u : CUK_STREAM_LEGACY;
    return 0;
}

/* A stream argument: None (the legacy default stream), a cuk.driver.Stream, or another
   library's (stream_handle_of), wrapped once per handle. */
int stream_of(PyObject *o, cuk_stream **s) {
    *s = NULL;
    if (!o || o == Py_None) return 0;
    if (PyObject_TypeCheck(o, Stream_Type)) {
        *s = ((Stream *)o)->s;
        return 0;
    }
    uintptr_t h;
    if (stream_handle_of(o, &h) < 0) return -1;
    return wrap_handle(h, s);
}

/* `with stream:` makes the stream this thread's call stream (cuk_call_stream_set) for
   the block, as CuPy's `with stream:` does: compiled functions, gpuarray and the rest
   queue their work there. Blocks nest; each exit restores what the entry found. */
#define STREAM_STACK 64
static _Thread_local cuk_stream *stream_stack[STREAM_STACK];
static _Thread_local int stream_depth;

static PyObject *stream_enter(PyObject *self, PyObject *u) {
    (void)u;
    if (stream_depth == STREAM_STACK)
        return PyErr_Format(PyExc_RuntimeError, "`with stream:` blocks nest more than %d deep", STREAM_STACK);
    stream_stack[stream_depth++] = cuk_call_stream_get();
    cuk_call_stream_set(((Stream *)self)->s);
    return Py_NewRef(self);
}
static PyObject *stream_exit(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    if (stream_depth > 0) cuk_call_stream_set(stream_stack[--stream_depth]);
    Py_RETURN_FALSE;
}

/* cuk.get_current_stream(): this thread's call stream, as a raw handle (1: the legacy
   default stream). */
static PyObject *py_current_stream(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyLong_FromUnsignedLongLong(cuk_stream_handle(cuk_call_stream_get()));
}

/* cuk.set_current_stream(stream): as entering `with stream:` without the exit; None
   goes back to the legacy default stream. The stream must outlive its use. */
static PyObject *py_set_current_stream(PyObject *m, PyObject *o) {
    (void)m;
    cuk_stream *s;
    if (stream_of(o, &s) < 0) return NULL;
    cuk_call_stream_set(s);
    Py_RETURN_NONE;
}

/* Event(flags=0): cuk.driver's (PyCUDA's event_flags) and cuk.core's */
static PyObject *event_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    (void)kw;
    unsigned flags = 0;
    if (!PyArg_ParseTuple(args, "|I", &flags)) return NULL;
    cuk_event *e;
    CHECK(cuk_event_create_ex(&e, flags));
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
static PyObject *event_handle(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong((unsigned long long)cuk_event_handle(((Event *)self)->e));
}
static PyGetSetDef event_getset[] = {{"handle", event_handle, NULL, "the CUevent", NULL},
                                     {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot event_slots[] = {{Py_tp_new, event_new},
                                    {Py_tp_dealloc, event_dealloc},
                                    {Py_tp_methods, event_methods},
                                    {Py_tp_getset, event_getset},
                                    {Py_tp_doc, "A CUDA event with timing."},
                                    {0, 0}};
static PyType_Spec event_spec = {"cuk.driver.Event", sizeof(Event), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, event_slots};

/* stream_wait_event_raw(handle, Event): the stream (any stream argument) waits for the
   event on the device (cuk.core's Stream.wait). */
static PyObject *py_stream_wait_event_raw(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *so, *eo;
    if (!PyArg_ParseTuple(args, "OO", &so, &eo)) return NULL;
    if (!PyObject_TypeCheck(eo, Event_Type)) return PyErr_Format(PyExc_TypeError, "wait needs an Event");
    cuk_stream *s;
    if (stream_of(so, &s) < 0) return NULL;
    CHECK(cuk_stream_wait_event(s, ((Event *)eo)->e));
    Py_RETURN_NONE;
}

static PyMethodDef stream_funcs[] = {
    {"stream_wait_event_raw", py_stream_wait_event_raw, METH_VARARGS, NULL},
    {"get_current_stream", py_current_stream, METH_NOARGS, "this thread's current stream (a raw handle; 1: legacy)"},
    {"set_current_stream", py_set_current_stream, METH_O, "set_current_stream(stream): this thread's current stream"},
    {NULL, NULL, 0, NULL}};

int stream_init(PyObject *mod) {
    if (PyModule_AddFunctions(mod, stream_funcs) < 0) return -1;
    if (!(Stream_Type = make_type(mod, &stream_spec, "Stream"))) return -1;
    if (!(Event_Type = make_type(mod, &event_spec, "Event"))) return -1;
    return 0;
}
