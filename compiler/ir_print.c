/* Prints the IR in the stable text form of `cukc emit-ir`: per function, its statements,
   each preceded by the values it needs (first use only), one per line. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

typedef struct Printer {
    FILE *out;
    const Fn *fn;
    unsigned char *seen; /* by value id */
    int nseen;
} Printer;

static void type_str(char *buf, size_t n, DType dt, int rank) {
    const char *tn = dt == DT_VOID ? "void" : dtype_info[dt].name;
    size_t k = (size_t)snprintf(buf, n, "%s", tn);
    if (rank > 0 && k < n) {
        k += (size_t)snprintf(buf + k, n - k, "[");
        for (int i = 0; i < rank && k < n; i++) k += (size_t)snprintf(buf + k, n - k, i ? ",_" : "_");
        if (k < n) snprintf(buf + k, n - k, "]");
    }
}

static void print_scalar(FILE *out, DType dt, Scalar c) {
    switch (dt) {
    case DT_BOOL: fprintf(out, c.i ? "true" : "false"); break;
    case DT_F32: fprintf(out, "%.9g", c.f); break;
    case DT_F64: fprintf(out, "%.17g", c.f); break;
    case DT_U32:
    case DT_U64: fprintf(out, "%llu", (unsigned long long)c.u); break;
    default: fprintf(out, "%lld", (long long)c.i); break;
    }
}

static void indent(FILE *out, int d) {
    for (int i = 0; i < d; i++) fputs("  ", out);
}

static void print_val(Printer *p, const Val *v, int depth);

static void print_deps(Printer *p, const Val *v, int depth) {
    for (int i = 0; i < v->nargs; i++)
        if (v->args[i]) print_val(p, v->args[i], depth);
    if (v->lam) print_val(p, v->lam, depth);
}

static void print_line(Printer *p, const Val *v, int depth);

/* Recurses once per level of the IR (NEST_LIMIT), on the caller's stack: the line itself
   is printed by print_line, whose buffers are not on every level's frame. */
static void print_val(Printer *p, const Val *v, int depth) {
    if (v->id < p->nseen && p->seen[v->id]) return;
    if (v->id < p->nseen) p->seen[v->id] = 1;
    print_deps(p, v, depth);
    print_line(p, v, depth);
}

static __attribute__((noinline)) void print_line(Printer *p, const Val *v, int depth) {
    FILE *out = p->out;
    char tb[64];
    type_str(tb, sizeof tb, v->dt, v->rank);
    indent(out, depth);
    fprintf(out, "%%%d = ", v->id);
    if (v->op < OP_EW_END) fprintf(out, "%s", ew_info[v->op].name);
    else fprintf(out, "%s", op_name[v->op]);
    switch (v->op) {
    case OP_CONST: fputc(' ', out), print_scalar(out, v->dt, v->c); break;
    case OP_SLOT: fprintf(out, " $%d %s", v->slot, p->fn->slots[v->slot].name); break;
    case OP_ARG: fprintf(out, " #%d", v->slot); break;
    case OP_LOAD: fprintf(out, " \"%s\"", v->path); break;
    case OP_CALL:
    case OP_SCALARCALL: fprintf(out, " @%s", v->fn->name); break;
    case OP_REDUCE:
    case OP_SCAN:
    case OP_HIST: fprintf(out, ".%s", red_name[v->red]); break;
    default: break;
    }
    for (int i = 0; i < v->nargs; i++) {
        if (v->args[i]) fprintf(out, " %%%d", v->args[i]->id);
        else fprintf(out, " _");
    }
    if (v->op == OP_DIM || v->op == OP_CONCAT || v->op == OP_STACK || v->op == OP_SORT || v->op == OP_ARGSORT ||
        ((v->op == OP_REDUCE || v->op == OP_SCAN || v->op == OP_ROLL) && v->axis != AXIS_ALL && !red_segs(v)))
        fprintf(out, " axis=%d", v->axis);
    if (red_segs(v)) fprintf(out, " segments=%%%d", red_segs(v)->id);
    if (v->op == OP_REDUCE && v->keepdims) fprintf(out, " keepdims");
    if (v->op == OP_SCAN && v->exclusive) fprintf(out, " exclusive");
    if (v->op == OP_HIST && v->exclusive) fprintf(out, " deterministic");
    if (v->op == OP_MATMUL && v->exclusive) fprintf(out, " tf32");
    if ((v->op == OP_SORT || v->op == OP_ARGSORT || v->op == OP_SORTKV) && v->exclusive) fprintf(out, " descending");
    if (v->op == OP_SEARCHSORTED && v->exclusive) fprintf(out, " right");
    if (v->lam) fprintf(out, " lambda=%%%d", v->lam->id);
    if (v->op == OP_TRANSPOSE) {
        fprintf(out, " perm=");
        for (int i = 0; i < v->rank; i++) fprintf(out, i ? ",%d" : "%d", v->perm[i]);
    }
    if (v->op == OP_SLICE || v->op == OP_UPDATE) {
        fprintf(out, " modes=");
        int r = v->args[0]->rank;
        for (int i = 0; i < r; i++) fputc(v->slmode[i] == SL_INDEX ? 'i' : 'r', out);
    }
    fprintf(out, " : %s", tb);
    if (v->kernel >= 0) fprintf(out, "  ; k%d", v->kernel);
    fputc('\n', out);
}

static void print_stmts(Printer *p, const Stmt *s, int depth) {
    FILE *out = p->out;
    for (; s; s = s->next) {
        if (s->v) print_val(p, s->v, depth);
        if (s->v2) print_val(p, s->v2, depth);
        if (s->kind == S_RETURN)
            for (int k = 0; k < s->nvs; k++) print_val(p, s->vs[k], depth);
        indent(out, depth);
        switch (s->kind) {
        case S_SET: fprintf(out, "$%d %s = %%%d\n", s->slot, p->fn->slots[s->slot].name, s->v->id); break;
        case S_IF:
            fprintf(out, "if %%%d {\n", s->v->id);
            print_stmts(p, s->body, depth + 1);
            if (s->els) {
                indent(out, depth);
                fprintf(out, "} else {\n");
                print_stmts(p, s->els, depth + 1);
            }
            indent(out, depth);
            fprintf(out, "}\n");
            break;
        case S_FOR:
            fprintf(out, "for $%d %s in %%%d .. %%%d {\n", s->slot, p->fn->slots[s->slot].name, s->v->id, s->v2->id);
            print_stmts(p, s->body, depth + 1);
            indent(out, depth);
            fprintf(out, "}\n");
            break;
        case S_WHILE:
            fprintf(out, "while %%%d {\n", s->v->id);
            /* The condition is re-evaluated each iteration: let the body print its own. */
            print_stmts(p, s->body, depth + 1);
            indent(out, depth);
            fprintf(out, "}\n");
            break;
        case S_RETURN:
            if (s->nvs) {
                fprintf(out, "return (");
                for (int k = 0; k < s->nvs; k++) fprintf(out, "%s%%%d", k ? ", " : "", s->vs[k]->id);
                fprintf(out, ")\n");
            } else if (s->v) fprintf(out, "return %%%d\n", s->v->id);
            else fprintf(out, "return\n");
            break;
        case S_PRINT: fprintf(out, "print %%%d\n", s->v->id); break;
        case S_SAVE: fprintf(out, "save \"%s\" %%%d\n", s->path, s->v->id); break;
        case S_EVAL: fprintf(out, "eval %%%d\n", s->v->id); break;
        case S_CALLN:
            fprintf(out, "(");
            for (int k = 0; k < s->nvs; k++) {
                if (s->slots[k] < 0) fprintf(out, "%s_", k ? ", " : "");
                else fprintf(out, "%s$%d %s", k ? ", " : "", s->slots[k], p->fn->slots[s->slots[k]].name);
            }
            fprintf(out, ") = %%%d\n", s->v->id);
            break;
        }
    }
}

void ir_print(FILE *out, const Program *prog) {
    for (int i = 0; i < prog->nfns; i++) {
        const Fn *f = prog->fns[i];
        Printer p = {out, f, calloc((size_t)f->nvals + 1, 1), f->nvals};
        if (!p.seen) die("out of memory");
        char tb[64];
        fprintf(out, "fn %s(", f->name);
        for (int k = 0; k < f->nparams; k++) {
            type_str(tb, sizeof tb, f->slots[k].dt, f->slots[k].rank);
            fprintf(out, "%s$%d %s: %s", k ? ", " : "", k, f->slots[k].name, tb);
        }
        if (f->nres) {
            fprintf(out, ") -> (");
            for (int k = 0; k < f->nres; k++) {
                type_str(tb, sizeof tb, f->res_dt[k], f->res_rank[k]);
                fprintf(out, "%s%s", k ? ", " : "", tb);
            }
            fprintf(out, ") {\n");
        } else {
            type_str(tb, sizeof tb, f->ret_dt, f->ret_rank);
            fprintf(out, ") -> %s {\n", tb);
        }
        print_stmts(&p, f->body, 1);
        fprintf(out, "}\n");
        free(p.seen);
    }
}
