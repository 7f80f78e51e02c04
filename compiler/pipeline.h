/* The compiler's front door: source text through every pass, in one order, for every
   user of the compiler (cukc, the program API, benchmarks, fuzzers, tests). As QBE's
   main.c lists its passes, this is the one place the pipeline is written down:

     lang/parse.c    source -> syntax tree (the user's, then the embedded stdlib's)
     compiler/sema.c syntax trees -> checked, typed IR (inlining straight-line calls)
     compiler/fuse.c IR -> kernel plans (fusion rules 1-5, launch shapes in kernel.c)
     compiler/emit_cuda.c  plans -> CUDA C, one translation unit per function

   A broken invariant in any pass is reported like a user error, as "internal error at
   file:line: ...", so that a library never aborts on its input. */
#ifndef CUK_PIPELINE_H
#define CUK_PIPELINE_H
#include <stdbool.h>

#include "compiler/ir.h"
#include "compiler/kernel.h"

/* How far to go. Each stage includes the ones before it. */
typedef enum {
    STAGE_PARSE, /* the syntax tree only (cukc dump-ast) */
    STAGE_CHECK, /* + the checked IR: what the CPU backend runs */
    STAGE_PLAN,  /* + kernel plans */
    STAGE_CUDA,  /* + CUDA C per plan: what the GPU executor compiles */
} Stage;

typedef struct Compiled {
    Arena *arena; /* everything below lives here */
    Diag *diag;   /* where errors went */
    Src src;
    Node *ast;     /* the user's syntax tree (set even after errors, when parsing got that far) */
    Program *prog; /* STAGE_CHECK */
    PlanSet *plans;/* STAGE_PLAN: one plan per prog->fns[i] */
    const char **cuda; /* STAGE_CUDA: per plan, its kernels as one CUDA C unit (NULL: none) */
    const char *internal; /* the message of a broken invariant a pass hit (also reported) */
} Compiled;

/* Runs the passes on the file at path (a read error is reported to d), or on text under
   the name used in messages. False after errors were reported to d; what was built
   before the failing pass stays in *c. */
bool pipeline_file(Compiled *c, Arena *a, Diag *d, const char *path, Stage upto);
bool pipeline_text(Compiled *c, Arena *a, Diag *d, const char *name, const char *text, Stage upto);

/* Every plan's kernels as one CUDA C translation unit (cukc emit-cuda, emit-ptx), or
   NULL after reporting an internal error to c->diag. Needs STAGE_PLAN. */
const char *pipeline_cuda_program(Compiled *c);

/* The kernel plan of fn (STAGE_PLAN) and its CUDA C (STAGE_CUDA; NULL when fn has no
   kernels). */
const Plan *pipeline_plan(const Compiled *c, const Fn *fn);
const char *pipeline_cuda(const Compiled *c, const Fn *fn);

/* The embedded stdlib's functions as one N_PROGRAM (sema puts them in scope). */
Node *stdlib_parse(Arena *a, Diag *d);

#endif
