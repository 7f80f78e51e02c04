/* The compiler's pipeline (pipeline.h): parse, check, plan, emit, in that order, with
   broken invariants turned into reported errors. */
#include "compiler/pipeline.h"

#include <pthread.h>
#include <string.h>

#include "lang/embedded.h"

Node *stdlib_parse(Arena *a, Diag *d) {
    Node *prog = NEW(a, Node);
    prog->kind = N_PROGRAM;
    Node **tail = &prog->body;
    for (int i = 0; cuk_embedded[i].name; i++) {
        const char *nm = cuk_embedded[i].name;
        size_t n = strlen(nm);
        if (n < 4 || strcmp(nm + n - 4, ".cuk") != 0) continue;
        Src *src = NEW(a, Src);
        src_from_string(a, arena_printf(a, "<stdlib>/%s", nm), cuk_embedded[i].text, src);
        Node *p = parse_program(a, d, src);
        for (Node *f = p ? p->body : NULL; f; f = f->next) {
            *tail = f;
            tail = &f->next;
        }
        *tail = NULL;
    }
    return prog;
}

/* An internal error becomes a diagnostic at the program's file, like any other error. */
static void internal_error(Compiled *c, const char *msg) {
    Loc at = {.src = &c->src};
    c->internal = arena_strdup(c->arena, msg);
    diag_error(c->diag, at, "%s (this is a bug in cuk; please report it with the program)", msg);
}

static bool passes(Compiled *c, Stage upto) {
    Diag *d = c->diag;
    c->ast = parse_program(c->arena, d, &c->src);
    if (d->errors || !c->ast || upto == STAGE_PARSE) return !d->errors && c->ast;
    Node *std = stdlib_parse(c->arena, d);
    if (d->errors) return false;
    if (die_injected("sema")) die("injected (CUK_DIE_AT=sema)");
    c->prog = sema_program(c->arena, d, c->ast, std);
    if (d->errors || !c->prog) {
        c->prog = NULL;
        return false;
    }
    widen_program(c->arena, c->prog);
    split_program(c->arena, c->prog);
    if (upto == STAGE_CHECK) return true;
    if (die_injected("fuse")) die("injected (CUK_DIE_AT=fuse)");
    c->plans = fuse_program(c->arena, c->prog);
    if (upto == STAGE_PLAN) return true;
    if (die_injected("emit")) die("injected (CUK_DIE_AT=emit)");
    c->cuda = NEWN(c->arena, const char *, c->plans->nplans + 1);
    for (int i = 0; i < c->plans->nplans; i++)
        if (c->plans->plans[i]->nkernels) c->cuda[i] = emit_cuda_plan(c->arena, c->plans->plans[i]);
    return true;
}

/* The passes recurse once per level of the program's nesting (NEST_LIMIT levels, with
   calls inlined; at most about 16 KiB a level in unoptimised sanitizer builds), so they
   run on a thread of their own with a 64 MiB stack whatever the caller's (a Python
   thread may have 1 MiB); the pages are only committed when touched. The die guard is
   set on that thread. */
#define DEEP_STACK ((size_t)64 << 20)

typedef struct Job {
    Compiled *c;
    Stage upto;   /* passes() up to here, or */
    bool program; /* the whole program's CUDA C into cuda_program */
    const char *cuda_program;
    bool ok;
} Job;

static void *job_main(void *p) {
    Job *j = p;
    DieGuard g;
    guard_push(&g);
    if (setjmp(g.jb) == 0) {
        if (j->program && die_injected("emit")) die("injected (CUK_DIE_AT=emit)");
        if (j->program) j->ok = (j->cuda_program = emit_cuda_program(j->c->arena, j->c->prog, j->c->plans)) != NULL;
        else j->ok = passes(j->c, j->upto);
        guard_pop(&g);
    } else {
        internal_error(j->c, g.msg);
        j->ok = false;
    }
    return NULL;
}

static bool on_deep_stack(Job *j) {
    pthread_attr_t at;
    pthread_t t;
    bool threaded = false;
    if (pthread_attr_init(&at) == 0) {
        threaded = pthread_attr_setstacksize(&at, DEEP_STACK) == 0 && pthread_create(&t, &at, job_main, j) == 0;
        pthread_attr_destroy(&at);
    }
    if (threaded) pthread_join(t, NULL);
    else job_main(j); /* no thread to be had: the caller's stack */
    return j->ok;
}

static bool run(Compiled *c, Arena *a, Diag *d, Stage upto) {
    c->arena = a;
    c->diag = d;
    Job j = {.c = c, .upto = upto};
    return on_deep_stack(&j);
}

bool pipeline_text(Compiled *c, Arena *a, Diag *d, const char *name, const char *text, Stage upto) {
    memset(c, 0, sizeof *c);
    src_from_string(a, name, text, &c->src);
    return run(c, a, d, upto);
}

bool pipeline_file(Compiled *c, Arena *a, Diag *d, const char *path, Stage upto) {
    memset(c, 0, sizeof *c);
    c->arena = a;
    c->diag = d;
    if (!src_load(a, d, path, &c->src)) return false;
    return run(c, a, d, upto);
}

const char *pipeline_cuda_program(Compiled *c) {
    Job j = {.c = c, .program = true};
    return on_deep_stack(&j) ? j.cuda_program : NULL;
}

const Plan *pipeline_plan(const Compiled *c, const Fn *fn) { return c->plans ? planset_find(c->plans, fn) : NULL; }

const char *pipeline_cuda(const Compiled *c, const Fn *fn) {
    if (!c->plans || !c->cuda) return NULL;
    for (int i = 0; i < c->plans->nplans; i++)
        if (c->plans->plans[i]->fn == fn) return c->cuda[i];
    return NULL;
}
