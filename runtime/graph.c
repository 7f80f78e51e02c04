/* CUDA graphs by stream capture: the work a thread queues on a stream between
   cuk_stream_begin_capture and cuk_stream_end_capture becomes one executable graph,
   launched again with cuk_graph_launch. The memory the captured work allocated from the
   pool belongs to the graph (pool.c, PoolCapture) until cuk_graph_destroy. */
#include <stdlib.h>

#include "internal.h"

struct cuk_graph_s {
    CUgraph g;
    CUgraphExec x;
    Device *d;
    PoolCapture *cap;
    size_t nodes;
    uintptr_t last; /* the stream of the last launch (a raw handle), 0 before the first */
};

/* The capture in progress on this thread: its stream and pool state. */
static _Thread_local struct {
    CUstream s;
    PoolCapture *cap;
    Device *d;
} cur;

static cuk_status need_graphs(const char *what) {
    if (!cu.cuStreamBeginCapture || !cu.cuStreamEndCapture || !cu.cuGraphInstantiateWithFlags || !cu.cuGraphLaunch ||
        !cu.cuGraphExecDestroy || !cu.cuGraphDestroy)
        return err_set(CUK_ERR_DRIVER, "%s: this CUDA driver has no stream capture (CUDA 11.4 or later needed)", what);
    return CUK_OK;
}

cuk_status cuk_stream_begin_capture(cuk_stream *st) {
    cuk_status s = driver_load();
    if (s || (s = need_graphs("cuk_stream_begin_capture"))) return s;
    CUstream raw = stream_raw(st);
    if (!raw || raw == (CUstream)CUK_STREAM_LEGACY || raw == (CUstream)CUK_STREAM_PER_THREAD)
        return err_set(CUK_ERR_INVALID, "cuk_stream_begin_capture: the default streams cannot be captured; capture on a "
                                        "stream from cuk_stream_create");
    if (cur.s) return err_set(CUK_ERR_INVALID, "cuk_stream_begin_capture: this thread is capturing already");
    Device *d;
    if ((s = dev_current(&d))) return s;
    PoolCapture *c = pool_capture_begin();
    if (!c) return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_stream_begin_capture: out of host memory");
    CUresult r = cu.cuStreamBeginCapture(raw, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (r) {
        pool_capture_end(c);
        pool_capture_release(c);
        return cu_fail(r, "cuStreamBeginCapture_v2");
    }
    cur.s = raw;
    cur.cap = c;
    cur.d = d;
    return CUK_OK;
}

int cuk_capturing(void) { return cur.s != NULL; }

cuk_status cuk_stream_end_capture(cuk_stream *st, cuk_graph **out) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_stream_end_capture: NULL argument");
    *out = NULL;
    CUstream raw = stream_raw(st);
    if (!cur.s || raw != cur.s)
        return err_set(CUK_ERR_INVALID, "cuk_stream_end_capture: this thread is not capturing on that stream");
    PoolCapture *c = cur.cap;
    Device *d = cur.d;
    cur.s = NULL;
    cur.cap = NULL;
    pool_capture_end(c);
    cuk_status s = ctx_make_current(d);
    CUgraph g = NULL;
    CUresult r = s ? CUDA_SUCCESS : cu.cuStreamEndCapture(raw, &g);
    if (s || r || !g) {
        /* what the failed capture allocated was never run: back to the pool */
        pool_capture_release(c);
        if (s) return s;
        return r ? cu_fail(r, "cuStreamEndCapture (an operation the capture cannot record was queued on the stream)")
                 : err_set(CUK_ERR_DRIVER, "cuStreamEndCapture gave no graph");
    }
    CUgraphExec x = NULL;
    if ((r = cu.cuGraphInstantiateWithFlags(&x, g, 0))) {
        cu.cuGraphDestroy(g);
        pool_capture_release(c);
        return cu_fail(r, "cuGraphInstantiateWithFlags");
    }
    cuk_graph *gr = calloc(1, sizeof *gr);
    if (!gr) {
        cu.cuGraphExecDestroy(x);
        cu.cuGraphDestroy(g);
        pool_capture_release(c);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "cuk_stream_end_capture: out of host memory");
    }
    size_t n = 0;
    if (cu.cuGraphGetNodes && cu.cuGraphGetNodes(g, NULL, &n)) n = 0;
    /* the first launch comes after what the capturing stream did before the capture */
    *gr = (cuk_graph){.g = g, .x = x, .d = d, .cap = c, .nodes = n, .last = cuk_stream_handle(st)};
    *out = gr;
    return CUK_OK;
}

cuk_status cuk_graph_join(cuk_graph *g, cuk_stream *st) {
    if (!g) return err_set(CUK_ERR_INVALID, "cuk_graph_join: NULL graph");
    cuk_status s = ctx_make_current(g->d);
    if (s) return s;
    uintptr_t h = cuk_stream_handle(st);
    /* launches on different streams must not overlap: they share the graph's memory */
    if (g->last && g->last != h && (s = cuk_stream_wait_raw(h, g->last))) return s;
    g->last = h;
    return CUK_OK;
}

cuk_status cuk_graph_launch(cuk_graph *g, cuk_stream *st) {
    cuk_status s = cuk_graph_join(g, st);
    if (s) return s;
    CU_CHECK(cu.cuGraphLaunch(g->x, stream_raw(st)), "cuGraphLaunch");
    return CUK_OK;
}

size_t cuk_graph_nodes(const cuk_graph *g) { return g ? g->nodes : 0; }

cuk_status cuk_graph_adopt(cuk_graph *g, cuk_devptr p) {
    if (!g) return err_set(CUK_ERR_INVALID, "cuk_graph_adopt: NULL graph");
    if (!p) return CUK_OK;
    if (!pool_capture_adopt(g->cap, p))
        return err_set(CUK_ERR_INVALID, "cuk_graph_adopt: 0x%llx is not a live block of cuk_mem_alloc", p);
    return CUK_OK;
}

cuk_status cuk_graph_destroy(cuk_graph *g) {
    if (!g) return CUK_OK;
    cuk_status s = ctx_make_current(g->d);
    if (!s) {
        if (g->last) cu.cuCtxSynchronize(); /* its last launch may still run */
        cu.cuGraphExecDestroy(g->x);
        cu.cuGraphDestroy(g->g);
    }
    pool_capture_release(g->cap);
    free(g);
    return s;
}
