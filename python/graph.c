/* CUDA graphs of compiled functions (Function.capture, cuk.Graph): one call recorded
   with cuk_fn_capture, replayed with new data of the same shapes. */
#include <string.h>

#include "_cuk.h"

typedef struct {
    PyObject_HEAD
    cuk_capture *c;
    PyObject *fn;      /* the Function: keeps its program alive */
    uintptr_t last;    /* the stream of the last replay (a raw handle) */
} Graph;
static PyTypeObject *Graph_Type;

/* A new DeviceArray over memory of the graph: not owned (the graph frees it), the graph
   its base, so the graph lives while it does. */
static PyObject *graph_view(Graph *g, const cuk_view *v) {
    PyObject *d = devarray_new(v, false, (PyObject *)g);
    if (d) ((DeviceArray *)d)->stream = g->last;
    return d;
}

/* The results, as the function's call returns them: None, one array, or a tuple. */
static PyObject *graph_results(Graph *g) {
    int nr = cuk_capture_nresults(g->c);
    if (nr == 0) Py_RETURN_NONE;
    if (nr == 1) return graph_view(g, cuk_capture_result(g->c, 0));
    PyObject *t = PyTuple_New(nr);
    for (int k = 0; t && k < nr; k++) {
        PyObject *d = graph_view(g, cuk_capture_result(g->c, k));
        if (!d) Py_CLEAR(t);
        else PyTuple_SetItem(t, k, d);
    }
    return t;
}

/* A capture's or a replay's arguments as views (function_views), and what they hold. */
typedef struct GArgs {
    Py_ssize_t n;
    cuk_view v[64];
    const cuk_view *vp[64];
    cuk_scalar sv[64];
    Held held[64];
} GArgs;

/* 0, or -1 with an exception. Call gargs_close after either. No arguments at all is
   fine where empty_ok (a replay of the inputs as they are). */
static int gargs_open(GArgs *a, PyObject *fn, PyObject *args, const char *who, bool empty_ok) {
    a->n = PyTuple_Size(args);
    memset(a->held, 0, sizeof a->held);
    if (a->n > 64) {
        a->n = 0;
        PyErr_Format(PyExc_TypeError, "%s: at most 64 arguments", who);
        return -1;
    }
    return a->n || !empty_ok ? function_views(fn, args, a->v, a->vp, a->sv, a->held) : 0;
}

static void gargs_close(GArgs *a) {
    for (Py_ssize_t i = 0; i < a->n; i++) held_release(&a->held[i]);
}

PyObject *graph_capture(PyObject *f, PyObject *args) {
    GArgs ga;
    PyObject *r = NULL;
    Py_ssize_t n = PyTuple_Size(args);
    const cuk_view **vp = ga.vp;
    if (gargs_open(&ga, f, args, "capture", false) == 0) {
        for (Py_ssize_t i = 0; i < n && !PyErr_Occurred(); i++)
            if (!vp[i]) PyErr_Format(PyExc_TypeError, "capture: argument %zd is None; pass an array or a scalar", i);
        cuk_capture *c = NULL;
        cuk_status s = CUK_OK;
        if (!PyErr_Occurred()) {
            Py_BEGIN_ALLOW_THREADS s = cuk_fn_capture(function_fn(f), vp, (int)n, &c);
            Py_END_ALLOW_THREADS
            if (s) raise_status(s);
        }
        Graph *g = c ? (Graph *)heap_alloc(Graph_Type) : NULL;
        if (g) {
            g->c = c;
            g->fn = Py_NewRef(f);
            g->last = call_stream_handle();
            r = (PyObject *)g;
        } else if (c) {
            cuk_capture_free(c);
        }
    }
    gargs_close(&ga);
    return r;
}

static void graph_dealloc(PyObject *self) {
    Graph *g = (Graph *)self;
    if (g->c) {
        Py_BEGIN_ALLOW_THREADS cuk_capture_free(g->c);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(g->fn);
    heap_free(self);
}

/* g(*args, stream=None): copies the array arguments given (None or none at all: the
   inputs as they are) into the graph's inputs, replays it on the stream (else the
   current one) and returns its results: arrays over the graph's memory, which the next
   replay overwrites (copy what you keep). */
static PyObject *graph_call(PyObject *self, PyObject *args, PyObject *kw) {
    Graph *g = (Graph *)self;
    PyObject *so = kw ? PyDict_GetItemString(kw, "stream") : NULL;
    if (kw && PyDict_Size(kw) > (so ? 1 : 0))
        return PyErr_Format(PyExc_TypeError, "a Graph takes positional arguments and stream= only");
    cuk_stream *cs = cuk_call_stream_get();
    if (so && so != Py_None && stream_of(so, &cs) < 0) return NULL;
    GArgs ga;
    cuk_stream *was = cuk_call_stream_get();
    cuk_call_stream_set(cs); /* arguments are ordered before it (their streams) */
    int rc = gargs_open(&ga, g->fn, args, "a Graph", true);
    cuk_call_stream_set(was);
    PyObject *r = NULL;
    if (rc == 0) {
        cuk_status s = cuk_capture_launch(g->c, ga.n ? ga.vp : NULL, (int)ga.n, cs);
        if (s) raise_status(s);
        else {
            g->last = cuk_stream_handle(cs);
            r = graph_results(g);
        }
    }
    gargs_close(&ga);
    return r;
}

static PyObject *graph_get_results(PyObject *self, void *c) {
    (void)c;
    return graph_results((Graph *)self);
}
static PyObject *graph_inputs(PyObject *self, void *c) {
    (void)c;
    Graph *g = (Graph *)self;
    PyObject *fn_params = PyObject_GetAttrString(g->fn, "params");
    if (!fn_params) return NULL;
    Py_ssize_t n = PyList_Size(fn_params);
    Py_DECREF(fn_params);
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        const cuk_view *iv = cuk_capture_input(g->c, (int)i);
        PyObject *d = iv->rank > 0 ? graph_view(g, iv) : Py_NewRef(Py_None);
        if (!d) Py_CLEAR(t);
        else PyTuple_SetItem(t, i, d);
    }
    return t;
}
static PyObject *graph_nodes(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(cuk_capture_nodes(((Graph *)self)->c));
}
static PyGetSetDef graph_getset[] = {
    {"results", graph_get_results, NULL, "the results of the last replay (arrays over the graph's memory)", NULL},
    {"inputs", graph_inputs, NULL, "the graph's inputs: arrays it reads at each replay (None for scalars)", NULL},
    {"nodes", graph_nodes, NULL, "how many nodes (kernels, copies, fills) the graph holds", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot graph_slots[] = {{Py_tp_dealloc, graph_dealloc},
                                    {Py_tp_call, graph_call},
                                    {Py_tp_getset, graph_getset},
                                    {Py_tp_doc, "One call of a compiled function recorded into a CUDA graph."},
                                    {0, 0}};
static PyType_Spec graph_spec = {"cuk.Graph", sizeof(Graph), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                 graph_slots};

/* ---- raw stream capture (cuk.core's GraphBuilder) ----------------------------------------- */

typedef struct {
    PyObject_HEAD
    cuk_graph *g;
} RawGraph;
static PyTypeObject *RawGraph_Type;

static void rawgraph_dealloc(PyObject *self) {
    RawGraph *r = (RawGraph *)self;
    if (r->g) {
        Py_BEGIN_ALLOW_THREADS cuk_graph_destroy(r->g);
        Py_END_ALLOW_THREADS
    }
    heap_free(self);
}
static PyObject *rawgraph_launch(PyObject *self, PyObject *so) {
    RawGraph *r = (RawGraph *)self;
    if (!r->g) return PyErr_Format(PyExc_RuntimeError, "the graph was closed");
    cuk_stream *s;
    if (stream_of(so, &s) < 0) return NULL;
    CHECK(cuk_graph_launch(r->g, s));
    Py_RETURN_NONE;
}
static PyObject *rawgraph_close(PyObject *self, PyObject *u) {
    (void)u;
    RawGraph *r = (RawGraph *)self;
    if (r->g) {
        cuk_status s;
        Py_BEGIN_ALLOW_THREADS s = cuk_graph_destroy(r->g);
        Py_END_ALLOW_THREADS
        r->g = NULL;
        if (s) return raise_status(s);
    }
    Py_RETURN_NONE;
}
static PyObject *rawgraph_nodes(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(cuk_graph_nodes(((RawGraph *)self)->g));
}
static PyMethodDef rawgraph_methods[] = {{"launch", rawgraph_launch, METH_O, "launch(stream)"},
                                         {"close", rawgraph_close, METH_NOARGS, NULL},
                                         {NULL, NULL, 0, NULL}};
static PyGetSetDef rawgraph_getset[] = {{"nodes", rawgraph_nodes, NULL, NULL, NULL}, {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot rawgraph_slots[] = {{Py_tp_dealloc, rawgraph_dealloc},
                                       {Py_tp_methods, rawgraph_methods},
                                       {Py_tp_getset, rawgraph_getset},
                                       {Py_tp_doc, "An executable CUDA graph from stream capture."},
                                       {0, 0}};
static PyType_Spec rawgraph_spec = {"cuk._cuk.RawGraph", sizeof(RawGraph), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, rawgraph_slots};

static PyObject *py_begin_capture(PyObject *m, PyObject *so) {
    (void)m;
    cuk_stream *s;
    if (stream_of(so, &s) < 0) return NULL;
    CHECK(cuk_stream_begin_capture(s));
    Py_RETURN_NONE;
}
static PyObject *py_end_capture(PyObject *m, PyObject *so) {
    (void)m;
    cuk_stream *s;
    if (stream_of(so, &s) < 0) return NULL;
    cuk_graph *g;
    CHECK(cuk_stream_end_capture(s, &g));
    RawGraph *r = (RawGraph *)heap_alloc(RawGraph_Type);
    if (!r) {
        cuk_graph_destroy(g);
        return NULL;
    }
    r->g = g;
    return (PyObject *)r;
}
static PyMethodDef graph_funcs[] = {{"begin_capture", py_begin_capture, METH_O, "begin_capture(stream)"},
                                    {"end_capture", py_end_capture, METH_O, "end_capture(stream) -> RawGraph"},
                                    {NULL, NULL, 0, NULL}};

int graph_init(PyObject *mod) {
    if (!(Graph_Type = make_type(mod, &graph_spec, "Graph"))) return -1;
    if (!(RawGraph_Type = make_type(mod, &rawgraph_spec, NULL))) return -1;
    return PyModule_AddFunctions(mod, graph_funcs);
}
