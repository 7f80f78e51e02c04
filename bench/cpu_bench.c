/* Single-core throughput of the CPU backend on 2^24 f32 elements: IR built by hand
   (saxpy, an 8-op elementwise chain, sum, fused sum(a*x+y), cumsum, rand), best of N
   runs, printed as millions of elements per second. Usage: cpu_bench [log2 n] [runs] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/exec.h"

static Arena ar;
static const Loc L0;

static Val *mk(Fn *f, OpKind op, DType dt, int rank, int nargs, Val *a, Val *b) {
    Val *v = val_new(&ar, f, op, dt, rank, nargs, L0);
    if (nargs > 0) v->args[0] = a;
    if (nargs > 1) v->args[1] = b;
    return v;
}
static Val *slot(Fn *f, int s, int rank) {
    Val *v = mk(f, OP_SLOT, DT_F32, rank, 0, NULL, NULL);
    v->slot = s;
    return v;
}
static Val *bin(Fn *f, OpKind op, Val *a, Val *b) { return mk(f, op, DT_F32, 1, 2, a, b); }
static Val *un(Fn *f, OpKind op, Val *a) { return mk(f, op, DT_F32, 1, 1, a, NULL); }

/* fn(a: f32, x: f32[n], y: f32[n]) -> ... { return body; } */
static Fn *fn3(const char *name) {
    Fn *f = NEW(&ar, Fn);
    f->name = name;
    f->nparams = f->nslots = 3;
    f->slots = NEWN(&ar, Slot, 3);
    return f;
}
static void ret(Fn *f, Val *v) {
    Stmt *s = NEW(&ar, Stmt);
    s->kind = S_RETURN;
    s->v = v;
    f->body = s;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void bench(const char *what, Fn *f, Arr **args, int64_t n, int runs) {
    double best = 1e30;
    for (int r = 0; r < runs; r++) {
        RtErr e;
        Arr *res = NULL;
        double t0 = now();
        if (!cpu_run(f, args, &res, stdout, &e)) {
            fprintf(stderr, "%s: %s\n", what, e.msg);
            exit(1);
        }
        double t = now() - t0;
        arr_release(res);
        if (t < best) best = t;
    }
    printf("%-28s %9.1f M elements/s  (%.2f ms)\n", what, (double)n / best / 1e6, best * 1e3);
}

int main(int argc, char **argv) {
    int lg = argc > 1 ? atoi(argv[1]) : 24, runs = argc > 2 ? atoi(argv[2]) : 7;
    int64_t n = (int64_t)1 << lg;
    arena_init(&ar);
    Arr *args[3] = {arr_scalar(DT_F32, (Scalar){.f = 2.5}), arr_new(DT_F32, 1, &n),
                    arr_new(DT_F32, 1, &n)};
    for (int64_t i = 0; i < n; i++) {
        ((float *)args[1]->data)[i] = (float)(i % 1000) * 0.001f;
        ((float *)args[2]->data)[i] = 1.0f - (float)(i % 777) * 0.001f;
    }

    Fn *saxpy = fn3("saxpy");
    ret(saxpy, bin(saxpy, OP_ADD, bin(saxpy, OP_MUL, slot(saxpy, 0, 0), slot(saxpy, 1, 1)),
                   slot(saxpy, 2, 1)));

    /* sqrt(abs((((a*x + y) * x - y) / (x + 1)))): mul add mul sub add div abs sqrt */
    Fn *chain = fn3("chain8");
    Val *a = slot(chain, 0, 0), *x = slot(chain, 1, 1), *y = slot(chain, 2, 1);
    Val *one = mk(chain, OP_CONST, DT_F32, 0, 0, NULL, NULL);
    one->c.f = 1;
    Val *t = bin(chain, OP_SUB, bin(chain, OP_MUL, bin(chain, OP_ADD, bin(chain, OP_MUL, a, x), y), x), y);
    ret(chain, un(chain, OP_SQRT, un(chain, OP_ABS, bin(chain, OP_DIV, t, bin(chain, OP_ADD, x, one)))));

    Fn *sum = fn3("sum");
    Val *s = mk(sum, OP_REDUCE, DT_F32, 0, 1, slot(sum, 1, 1), NULL);
    s->red = RED_SUM;
    s->axis = AXIS_ALL;
    ret(sum, s);

    Fn *fsum = fn3("sum_saxpy");
    Val *fs = mk(fsum, OP_REDUCE, DT_F32, 0, 1,
                 bin(fsum, OP_ADD, bin(fsum, OP_MUL, slot(fsum, 0, 0), slot(fsum, 1, 1)),
                     slot(fsum, 2, 1)),
                 NULL);
    fs->red = RED_SUM;
    fs->axis = AXIS_ALL;
    ret(fsum, fs);

    Fn *cs = fn3("cumsum");
    Val *c = mk(cs, OP_SCAN, DT_F32, 1, 1, slot(cs, 1, 1), NULL);
    c->red = RED_SUM;
    c->axis = AXIS_ALL;
    ret(cs, c);

    Fn *rnd = fn3("rand");
    Val *seed = mk(rnd, OP_CONST, DT_I64, 0, 0, NULL, NULL), *dim = mk(rnd, OP_CONST, DT_I64, 0, 0, NULL, NULL);
    seed->c.i = 7;
    dim->c.i = n;
    ret(rnd, mk(rnd, OP_RAND, DT_F32, 1, 2, seed, dim));

    printf("CPU backend, 1 core, n = 2^%d f32, best of %d\n", lg, runs);
    bench("saxpy a*x+y", saxpy, args, n, runs);
    bench("8-op elementwise chain", chain, args, n, runs);
    bench("sum(x)", sum, args, n, runs);
    bench("sum(a*x+y) (fused)", fsum, args, n, runs);
    bench("cumsum(x)", cs, args, n, runs);
    bench("rand(n) (Philox)", rnd, args, n, runs);
    for (int i = 0; i < 3; i++) arr_release(args[i]);
    arena_free(&ar);
    return 0;
}
