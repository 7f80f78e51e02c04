/* Streams and events (cuk.driver.Stream, cuk.driver.Event). */
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

int stream_of(PyObject *o, cuk_stream **s) {
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

int stream_init(PyObject *mod) {
    if (!(Stream_Type = make_type(mod, &stream_spec, "Stream"))) return -1;
    if (!(Event_Type = make_type(mod, &event_spec, "Event"))) return -1;
    return 0;
}
