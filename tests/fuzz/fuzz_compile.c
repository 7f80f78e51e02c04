/* libFuzzer target for the whole compile pipeline: source bytes are read as a file (UTF-8
   and NUL checks included), parsed, type-checked with the embedded stdlib, fused and
   emitted as CUDA C, and then the entry function (main, else the first user function)
   runs on the CPU backend with small arguments under a work limit, so that huge sizes and
   endless loops end in a run-time error instead of a timeout. Any abort, sanitizer report
   or leak is a bug; user errors and run-time errors are fine. */
#include <string.h>

#include "exec/exec.h"
#include "compiler/ir.h"
#include "compiler/kernel.h"
#include "fuzz_common.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/diag.h"

/* Elements allocated or streamed, loop iterations and calls per run. One unit of work
   costs from nanoseconds (an element of a streamed array) to about 10 us in this ASan
   build (a call, a host-loop iteration: each allocates its frame or scalars; the slowest
   is a recursive function with a large body). 2^13 units keep the worst program we
   could build (fib(37), a while loop to 10^8, recursion through a 6 KB body) at 0.1 to
   0.3 s of CPU time on the 2-core CI machine, far inside run.sh's -timeout even on a
   machine 5x slower and loaded; 2^21 let fib(37) run 21 s and time out. Seeds and the
   small arguments below need far less. */
enum { WORK_LIMIT = 1 << 13, ARG_LEN = 3 };

static MemFile src;
static FILE *diag_out; /* /dev/null, or stderr with CUK_FUZZ_VERBOSE=1 (reproducing) */

/* True if a Val DAG reads a file (load); seen marks visited ids. */
static bool val_has_io(const Val *v, char *seen) {
    if (!v || seen[v->id]) return false;
    seen[v->id] = 1;
    if (v->op == OP_LOAD) return true;
    for (int i = 0; i < v->nargs; i++)
        if (val_has_io(v->args[i], seen)) return true;
    return val_has_io(v->lam, seen) || val_has_io(v->init, seen);
}

static bool stmt_has_io(const Stmt *s, char *seen) {
    for (; s; s = s->next) {
        if (s->kind == S_SAVE) return true;
        if (val_has_io(s->v, seen) || val_has_io(s->v2, seen) || stmt_has_io(s->body, seen) ||
            stmt_has_io(s->els, seen))
            return true;
    }
    return false;
}

/* Programs that load or save files are compiled but not run: the fuzzer must not read or
   write arbitrary paths. */
static bool program_has_io(Arena *a, const Program *p) {
    for (int i = 0; i < p->nfns; i++) {
        const Fn *fn = p->fns[i];
        char *seen = arena_alloc(a, (size_t)fn->nvals + 1);
        if (stmt_has_io(fn->body, seen)) return true;
    }
    return false;
}

/* A small argument for parameter k: scalars 3 (true), arrays ARG_LEN long on every axis
   holding 0, 1, 2, ... */
static Arr *make_arg(const Slot *s) {
    int64_t shape[MAXRANK];
    for (int k = 0; k < s->rank; k++) shape[k] = ARG_LEN;
    Arr *a = arr_new(s->dt, s->rank, shape);
    if (!a) abort();
    for (int64_t i = 0; i < a->size; i++) {
        int64_t v = s->rank ? i % 5 : 3;
        char *p = (char *)a->data + i * dtype_info[s->dt].size;
        /* v & 1 for bool, v for integers, v / 2 for floats (and complex real parts) */
        bool fl = dtype_info[s->dt].is_float || dtype_is_complex(s->dt);
        Scalar x = fl ? (Scalar){.f = (double)v * 0.5} : (Scalar){.i = s->dt == DT_BOOL ? (v & 1) : v};
        scalar_store(s->dt, scalar_cast(x, fl ? DT_F64 : DT_I64, s->dt), p);
    }
    return a;
}

static void run_entry(Arena *a, Diag *d, const Program *p) {
    const Fn *fn = program_find(p, "main");
    for (int i = 0; !fn && i < p->nfns; i++)
        if (!p->fns[i]->from_stdlib) fn = p->fns[i];
    if (!fn || fn->nparams > 16 || program_has_io(a, p)) return;
    Arr *args[16] = {0};
    for (int i = 0; i < fn->nparams; i++) args[i] = make_arg(&fn->slots[i]);
    RtErr err = {0};
    Arr *result[MAX_RESULTS] = {0}; /* one per result: a function may return several */
    int nres = fn->nres ? fn->nres : 1;
    if (!cpu_run(fn, args, result, diag_out, &err)) {
        if (!err.set || !err.msg[0]) {
            fprintf(stderr, "fuzz_compile: cpu_run failed without a message\n");
            abort();
        }
        if (strstr(err.msg, "internal error")) {
            fprintf(stderr, "fuzz_compile: %s\n", err.msg);
            abort();
        }
        rt_report(&err, d);
    } else {
        for (int k = 0; k < nres; k++)
            if (result[k]) arr_print(devnull(), result[k]);
    }
    for (int k = 0; k < nres; k++) arr_release(result[k]);
    for (int i = 0; i < fn->nparams; i++) arr_release(args[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    memfile_open(&src, "fuzz.cuk");
    cpu_work_limit = WORK_LIMIT;
    diag_out = getenv("CUK_FUZZ_VERBOSE") ? stderr : devnull();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    memfile_set(&src, data, size);
    Arena a;
    arena_init(&a);
    Diag d;
    diag_init(&d, diag_out);
    Compiled c;
    if (pipeline_file(&c, &a, &d, src.path, STAGE_CUDA)) {
        ast_dump(devnull(), c.ast);
        ir_print(devnull(), c.prog);
        planset_print(devnull(), c.plans);
        if (!pipeline_cuda_program(&c)) abort();
        run_entry(&a, &d, c.prog);
    } else if (!d.errors) {
        fprintf(stderr, "fuzz_compile: the pipeline failed without an error\n");
        abort();
    }
    if (c.internal) {
        fprintf(stderr, "fuzz_compile: %s\n", c.internal);
        abort(); /* a broken invariant, reported as an error: still a bug */
    }
    arena_free(&a);
    return 0;
}
