/* The program API (cuk_program.h): compiles .cuk source through the compiler's pipeline,
   checks arguments against the parameters, and runs functions on the GPU executor where
   a GPU is usable, else on the CPU backend. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"


/* ---- errors ------------------------------------------------------------------------------ */

static _Thread_local cuk_error_info last_info;
static _Thread_local bool last_info_set;

cuk_status cuk_program_error(cuk_error_info *info) {
    if (!info) return err_set(CUK_ERR_INVALID, "cuk_program_error: NULL argument");
    if (!last_info_set) return CUK_ERR_NOT_FOUND;
    *info = last_info;
    return CUK_OK;
}

/* Records the first "path:line:col: error: msg" of diagnostic text for
   cuk_program_error(). The path is known, so colons inside it do not confuse us. */
static void info_from_diag(const char *text, const char *path) {
    memset(&last_info, 0, sizeof last_info);
    last_info_set = true;
    const char *p = text;
    size_t pl = path ? strlen(path) : 0;
    if (pl && strncmp(p, path, pl) == 0 && p[pl] == ':') {
        snprintf(last_info.file, sizeof last_info.file, "%s", path);
        char *end;
        p += pl + 1;
        long line = strtol(p, &end, 10);
        if (end != p && *end == ':') {
            p = end + 1;
            long col = strtol(p, &end, 10);
            if (end != p && *end == ':') {
                last_info.line = (int)line;
                last_info.col = (int)col;
                p = end + 1;
            }
        }
        while (*p == ' ') p++;
    } else if (path) {
        snprintf(last_info.file, sizeof last_info.file, "%s", path);
    }
    if (strncmp(p, "error: ", 7) == 0) p += 7;
    size_t n = strcspn(p, "\n");
    if (n >= sizeof last_info.message) n = sizeof last_info.message - 1;
    memcpy(last_info.message, p, n);
    last_info.message[n] = 0;
}

/* A Diag that writes into memory, so that messages go to cuk_last_error(). */
typedef struct MemDiag {
    Diag d;
    char *buf;
    size_t len;
} MemDiag;

static bool memdiag_open(MemDiag *m) {
    m->buf = NULL;
    m->len = 0;
    FILE *f = open_memstream(&m->buf, &m->len);
    if (!f) return false;
    diag_init(&m->d, f);
    return true;
}

/* Closes the stream; returns the text (caller frees). */
static char *memdiag_close(MemDiag *m) {
    fclose(m->d.out);
    m->d.out = NULL;
    return m->buf;
}

/* ---- programs ------------------------------------------------------------------------------ */

typedef int DimIds[CUK_MAX_RANK];

struct cuk_fn_s {
    cuk_program *prog;
    Fn *fn;
    const Node *decl; /* the declaration in the user's AST (NULL for stdlib functions) */
    int nparams;
    cuk_param_info *params;
    /* Size variables numbered once, so that calls check shapes by index: dimid[i][k]
       is the variable of parameter i's axis k, -1 for a literal size. */
    DimIds *dimid;
    int ndims;
    int *dimfrom; /* per variable: the first parameter that names it */
};

struct cuk_program_s {
    Arena arena;
    Compiled c;     /* the pipeline's output: to STAGE_CUDA for the GPU, STAGE_CHECK for the CPU */
    Program *prog;
    cuk_backend backend;
    int nfns;       /* the user's functions, in source order */
    cuk_fn **fns;
    int nall;       /* every function of prog, lazily wrapped */
    cuk_fn **all;
    pthread_mutex_t lock; /* wrapping stdlib functions on first use */
    GpuSession *session;  /* GPU backend with the session API */
    Profile *prof;        /* opts.profile: time per statement, over every call */
    Profile *prof_saved;  /* cuk_program_profile_begin: prof, while a profile of its own runs */
    bool prof_taking;
    Bundle *bundle;       /* when loaded from a .cukb: its kernels, loaded without NVRTC */
};

static cuk_status run_error(const RtErr *e);

/* Whether the text is a path rather than source: one line ending in .cuk or .cukb, an
   existing file, or a single word with a slash (/tmp/x, ./prog: never a program), so
   that a missing or unreadable path says so instead of failing to parse. */
static bool is_path(const char *s) {
    if (strchr(s, '\n') || !*s) return false;
    size_t n = strlen(s);
    if ((n >= 4 && strcmp(s + n - 4, ".cuk") == 0) || (n >= 5 && strcmp(s + n - 5, ".cukb") == 0)) return true;
    struct stat st;
    if (stat(s, &st) == 0) return true;
    return strchr(s, '/') && !strpbrk(s, " \t;{}()=");
}

/* Picks the backend: the option, else $CUK_BACKEND, else auto. */
static cuk_status pick_backend(cuk_backend want, cuk_backend *out) {
    if (want == CUK_BACKEND_DEFAULT) {
        const char *e = getenv("CUK_BACKEND");
        want = CUK_BACKEND_AUTO;
        if (e && *e) {
            if (!strcmp(e, "auto")) want = CUK_BACKEND_AUTO;
            else if (!strcmp(e, "gpu")) want = CUK_BACKEND_GPU;
            else if (!strcmp(e, "cpu")) want = CUK_BACKEND_CPU;
            else return err_set(CUK_ERR_INVALID, "CUK_BACKEND is '%s'; set it to auto, gpu or cpu", e);
        }
    }
    if (want == CUK_BACKEND_CPU) {
        *out = CUK_BACKEND_CPU;
        return CUK_OK;
    }
    if (want != CUK_BACKEND_AUTO && want != CUK_BACKEND_GPU)
        return err_set(CUK_ERR_INVALID, "cuk_program_compile: bad backend %d", (int)want);
    int ok = 0;
    cuk_gpu_available(&ok);
    if (!ok && want == CUK_BACKEND_GPU) {
        char why[1024];
        snprintf(why, sizeof why, "%s", cuk_last_error());
        return err_set(strstr(why, "driver") ? CUK_ERR_NO_DRIVER : CUK_ERR_NO_DEVICE,
                       "the GPU backend was asked for but no GPU is usable: %s", why);
    }
    *out = ok ? CUK_BACKEND_GPU : CUK_BACKEND_CPU;
    return CUK_OK;
}

static cuk_fn *wrap_fn(cuk_program *p, Fn *fn, const Node *decl) {
    cuk_fn *f = NEW(&p->arena, cuk_fn);
    f->prog = p;
    f->fn = fn;
    f->decl = decl;
    f->nparams = fn->nparams;
    f->params = NEWN(&p->arena, cuk_param_info, fn->nparams ? fn->nparams : 1);
    const Node *pn = decl ? decl->params : NULL;
    for (int i = 0; i < fn->nparams; i++, pn = pn ? pn->next : NULL) {
        cuk_param_info *pi = &f->params[i];
        pi->name = fn->slots[i].name;
        pi->dtype = (cuk_dtype)fn->slots[i].dt;
        pi->rank = fn->slots[i].rank;
        const Node *d = pn && pn->type ? pn->type->dims : NULL;
        for (int k = 0; k < pi->rank; k++, d = d ? d->next : NULL) {
            if (d && d->kind == N_INT) pi->sizes[k] = d->ival;
            else if (d && d->kind == N_IDENT) pi->dims[k] = d->name;
            else pi->dims[k] = arena_printf(&p->arena, "%s.shape[%d]", pi->name, k); /* unconstrained */
        }
    }
    f->dimid = NEWN(&p->arena, DimIds, fn->nparams ? fn->nparams : 1);
    f->dimfrom = NEWN(&p->arena, int, (size_t)fn->nparams * CUK_MAX_RANK + 1);
    for (int i = 0; i < fn->nparams; i++) {
        const cuk_param_info *pi = &f->params[i];
        for (int k = 0; k < pi->rank; k++) {
            int id = -1;
            if (pi->dims[k]) {
                /* look the name up among the variables numbered so far */
                for (int j = 0; j <= i && id < 0; j++)
                    for (int q = 0; q < (j == i ? k : f->params[j].rank) && id < 0; q++)
                        if (f->params[j].dims[q] && strcmp(f->params[j].dims[q], pi->dims[k]) == 0) id = f->dimid[j][q];
                if (id < 0) {
                    id = f->ndims++;
                    f->dimfrom[id] = i;
                }
            }
            f->dimid[i][k] = id;
        }
    }
    return f;
}

cuk_status cuk_program_compile(cuk_program **out, const char *src_or_path, const cuk_program_opts *o) {
    last_info_set = false;
    if (!out || !src_or_path) return err_set(CUK_ERR_INVALID, "cuk_program_compile: NULL argument");
    *out = NULL;
    cuk_backend backend = CUK_BACKEND_CPU;
    cuk_status s = pick_backend(o ? o->backend : CUK_BACKEND_DEFAULT, &backend);
    if (s) return s;
    cuk_program *p = calloc(1, sizeof *p);
    if (!p) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    arena_init(&p->arena);
    pthread_mutex_init(&p->lock, NULL);
    p->backend = backend;
    MemDiag md;
    if (!memdiag_open(&md)) {
        cuk_program_free(p);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    Stage upto = backend == CUK_BACKEND_GPU ? STAGE_CUDA : STAGE_CHECK;
    const char *path;
    bool ok;
    if (is_path(src_or_path) && bundle_is(src_or_path)) {
        /* A bundle: the program is rebuilt from the source it holds, and the GPU backend
           loads its compiled images instead of calling NVRTC. */
        char berr[1024];
        p->bundle = NEW(&p->arena, Bundle);
        if (!bundle_read(&p->arena, src_or_path, p->bundle, berr, sizeof berr)) {
            free(memdiag_close(&md));
            cuk_program_free(p);
            return err_set(CUK_ERR_INVALID, "%s", berr);
        }
        path = p->bundle->source_path;
        ok = pipeline_text(&p->c, &p->arena, &md.d, path, p->bundle->source, upto);
    } else if (is_path(src_or_path)) {
        if (o && o->require_bundle) {
            free(memdiag_close(&md));
            cuk_program_free(p);
            struct stat st;
            if (stat(src_or_path, &st) != 0)
                return err_set(CUK_ERR_INVALID, "cannot read '%s': %s", src_or_path, strerror(errno));
            if (S_ISDIR(st.st_mode))
                return err_set(CUK_ERR_INVALID, "'%s' is a directory, not a cuk bundle (.cukb)", src_or_path);
            return err_set(CUK_ERR_INVALID, "'%s' is not a cuk bundle (.cukb); build one with cukc build", src_or_path);
        }
        path = src_or_path;
        ok = pipeline_file(&p->c, &p->arena, &md.d, path, upto);
    } else {
        path = o && o->name ? o->name : "<string>";
        ok = pipeline_text(&p->c, &p->arena, &md.d, path, src_or_path, upto);
    }
    p->prog = p->c.prog;
    char *text = memdiag_close(&md);
    if (!ok) {
        info_from_diag(text ? text : "", path);
        s = err_set(CUK_ERR_COMPILE, "%s", text && *text ? text : "compile error");
        free(text);
        cuk_program_free(p);
        return s;
    }
    free(text);
    /* The user's functions in source order; generic ones (only ever inlined) have no Fn. */
    p->fns = NEWN(&p->arena, cuk_fn *, p->prog->nfns + 1);
    for (const Node *d = p->c.ast->body; d; d = d->next) {
        if (d->kind != N_FN) continue;
        Fn *fn = program_find(p->prog, d->name);
        if (fn && !fn->from_stdlib) p->fns[p->nfns++] = wrap_fn(p, fn, d);
    }
    p->nall = p->prog->nfns;
    p->all = NEWN(&p->arena, cuk_fn *, p->nall + 1);
    if (p->backend == CUK_BACKEND_GPU) {
        RtErr err = {0};
        p->session = gpu_session_new(&p->c, p->bundle, &err);
        if (!p->session) {
            s = err.set ? run_error(&err) : err_set(CUK_ERR_NO_DEVICE, "could not start the GPU backend");
            cuk_program_free(p);
            return s;
        }
        gpu_session_fast_math(p->session, o && o->fast_math);
    }
    if (o && o->profile) {
        if (!(p->prof = profile_new())) {
            cuk_program_free(p);
            return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        if (p->session) gpu_session_profile(p->session, p->prof);
    }
    *out = p;
    return CUK_OK;
}

cuk_status cuk_program_load_bundle(cuk_program **out, const char *path, const cuk_program_opts *o) {
    cuk_program_opts oo = o ? *o : (cuk_program_opts){0};
    oo.require_bundle = 1;
    return cuk_program_compile(out, path, &oo);
}

void cuk_program_free(cuk_program *p) {
    if (!p) return;
    if (p->session) gpu_session_free(p->session);
    profile_free(p->prof);
    profile_free(p->prof_saved);
    pthread_mutex_destroy(&p->lock);
    arena_free(&p->arena);
    free(p);
}

cuk_status cuk_program_profile_print(const cuk_program *p, FILE *out) {
    if (!p || !out) return err_set(CUK_ERR_INVALID, "cuk_program_profile_print: NULL argument");
    if (!p->prof)
        return err_set(CUK_ERR_INVALID, "this program was compiled without profiling: compile it with "
                                         "cuk.compile(..., profile=True) (C: cuk_program_opts.profile = 1)");
    profile_print(p->prof, p->backend == CUK_BACKEND_GPU ? "GPU" : "CPU", out);
    return CUK_OK;
}

cuk_status cuk_program_profile_begin(cuk_program *p) {
    if (!p) return err_set(CUK_ERR_INVALID, "cuk_program_profile_begin: NULL program");
    if (p->prof_taking)
        return err_set(CUK_ERR_INVALID, "a profile of this program is already being taken: end it first "
                                         "(cuk_program_profile_end)");
    Profile *n = profile_new();
    if (!n) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    p->prof_saved = p->prof;
    p->prof = n;
    p->prof_taking = true;
    if (p->session) gpu_session_profile(p->session, n);
    return CUK_OK;
}

cuk_status cuk_program_profile_end(cuk_program *p, FILE *out) {
    if (!p) return err_set(CUK_ERR_INVALID, "cuk_program_profile_end: NULL program");
    if (!p->prof_taking) return err_set(CUK_ERR_INVALID, "no profile is being taken: cuk_program_profile_begin first");
    if (out) profile_print(p->prof, p->backend == CUK_BACKEND_GPU ? "GPU" : "CPU", out);
    profile_free(p->prof);
    p->prof = p->prof_saved;
    p->prof_saved = NULL;
    p->prof_taking = false;
    if (p->session) gpu_session_profile(p->session, p->prof);
    return CUK_OK;
}

cuk_status cuk_program_explain(const char *src_or_path, const char *name, cuk_explain what, FILE *out) {
    last_info_set = false;
    if (!src_or_path || !out) return err_set(CUK_ERR_INVALID, "cuk_program_explain: NULL argument");
    if (what != CUK_EXPLAIN_IR && what != CUK_EXPLAIN_CUDA && what != CUK_EXPLAIN_DOT)
        return err_set(CUK_ERR_INVALID, "cuk_program_explain: what must be CUK_EXPLAIN_IR, _CUDA or _DOT, not %d",
                       (int)what);
    Arena a;
    arena_init(&a);
    MemDiag md;
    if (!memdiag_open(&md)) {
        arena_free(&a);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    Compiled c;
    Stage upto = what == CUK_EXPLAIN_CUDA ? STAGE_CUDA : STAGE_PLAN;
    const char *path = is_path(src_or_path) ? src_or_path : name ? name : "<string>";
    bool ok = is_path(src_or_path) ? pipeline_file(&c, &a, &md.d, path, upto)
                                   : pipeline_text(&c, &a, &md.d, path, src_or_path, upto);
    char *text = memdiag_close(&md);
    cuk_status s = CUK_OK;
    if (!ok) {
        info_from_diag(text ? text : "", path);
        s = err_set(CUK_ERR_COMPILE, "%s", text && *text ? text : "compile error");
    } else if (what == CUK_EXPLAIN_IR) {
        ir_print(out, c.prog);
        planset_print(out, c.plans);
    } else if (what == CUK_EXPLAIN_DOT) {
        planset_print_dot(out, c.plans);
    } else {
        const char *cuda = pipeline_cuda_program(&c);
        if (cuda) fputs(cuda, out);
        else s = err_set(CUK_ERR_COMPILE, "could not write the program's CUDA C");
    }
    free(text);
    arena_free(&a);
    return s;
}

cuk_backend cuk_program_backend(const cuk_program *p) { return p->backend; }
int cuk_program_nfunctions(const cuk_program *p) { return p->nfns; }
const char *cuk_program_function_name(const cuk_program *p, int i) {
    return i >= 0 && i < p->nfns ? p->fns[i]->fn->name : NULL;
}

/* ---- generic functions ---------------------------------------------------------------------
   A function whose parameter or result types name a type variable (one capital letter:
   fn g(x: T[n]) -> T[n]) has no Fn: sema inlines it at each call, binding T from the
   arguments. cuk_program_generic describes one, so that a caller (the Python package)
   can compile a typed wrapper for the dtypes it has. */


static bool decl_generic(const Node *d) {
    for (const Node *q = d->params; q; q = q->next)
        if (q->type && sema_is_typevar(q->type->name)) return true;
    if (d->type && d->type->kind == N_TUPLE)
        for (const Node *t = d->type->args; t; t = t->next)
            if (sema_is_typevar(t->name)) return true;
    return d->type && sema_is_typevar(d->type->name);
}

/* The declaration a call of name in p's source reaches: the user's function of that name,
   else the stdlib's (parsed again into a). NULL when neither has one. */
static const Node *decl_named(const cuk_program *p, Arena *a, const char *name) {
    for (const Node *d = p->c.ast ? p->c.ast->body : NULL; d; d = d->next)
        if (d->kind == N_FN && d->name && strcmp(d->name, name) == 0) return d;
    MemDiag md;
    if (!memdiag_open(&md)) return NULL;
    const Node *std = stdlib_parse(a, &md.d);
    free(memdiag_close(&md));
    for (const Node *d = std ? std->body : NULL; d; d = d->next)
        if (d->kind == N_FN && d->name && strcmp(d->name, name) == 0) return d;
    return NULL;
}

/* The sizes of type t as written, joined by sep ("" for a scalar). With any, a size
   size_text cannot spell (a call) is "?". */
static const char *dims_text(Arena *a, const Node *t, const char *sep, bool any) {
    const char *s = "";
    for (const Node *d = t->dims; d; d = d->next) {
        const char *x = size_text(a, d);
        if (any && strcmp(x, "(expression)") == 0) x = "?";
        s = arena_printf(a, "%s%s%s", s, d == t->dims ? "" : sep, x);
    }
    return s;
}

/* Type t with every type variable made f32: "f32[n]". */
static const char *f32_type(Arena *a, const Node *t) {
    const char *e = sema_is_typevar(t->name) ? "f32" : t->name;
    return t->dims ? arena_printf(a, "%s[%s]", e, dims_text(a, t, ", ", true)) : e;
}

/* Why cuk_program_function finds no function for the generic declaration d, and what a C
   caller does instead. */
static cuk_status generic_miss(const Node *d) {
    Arena a;
    arena_init(&a);
    /* the type variables, in the order the declaration names them: "T", "T and U" */
    char order[26];
    int nvars = 0;
    for (const Node *q = d->params;; q = q->next) {
        const Node *t = q ? q->type : d->type && d->type->kind == N_TYPE ? d->type : NULL;
        if (t && sema_is_typevar(t->name) && !memchr(order, t->name[0], (size_t)nvars)) order[nvars++] = t->name[0];
        if (!q) break;
    }
    const char *vars = "";
    for (int i = 0; i < nvars; i++)
        vars = arena_printf(&a, "%s%s%c", vars, !i ? "" : i == nvars - 1 ? " and " : ", ", order[i]);
    const char *which =
        arena_printf(&a, "type%s %s %s", nvars > 1 ? "s" : "", nvars ? vars : "T", nvars > 1 ? "are" : "is");
    cuk_status s;
    if (d->type && d->type->kind == N_TYPE) {
        const char *ps = "", *as = "";
        for (const Node *q = d->params; q; q = q->next) {
            const char *sep = q == d->params ? "" : ", ";
            ps = arena_printf(&a, "%s%s%s: %s", ps, sep, q->name, q->type ? f32_type(&a, q->type) : "f32");
            as = arena_printf(&a, "%s%s%s", as, sep, q->name);
        }
        s = err_set(CUK_ERR_NOT_FOUND,
                    "'%s' is generic (its element %s bound at each call); to call it on its own, add a typed "
                    "wrapper to the program, e.g. fn %s_f32(%s) -> %s = %s(%s);", d->name, which, d->name, ps,
                    f32_type(&a, d->type), d->name, as);
    } else {
        s = err_set(CUK_ERR_NOT_FOUND, "'%s' is generic (its element %s bound at each call in cuk code) and %s, so it "
                    "has no compiled form; call it from a function of the program with concrete types", d->name, which,
                    d->type ? "returns a tuple" : "returns nothing");
    }
    arena_free(&a);
    return s;
}

cuk_status cuk_program_generic(const cuk_program *p, const char *name, char *buf, size_t len) {
    if (!p || !name || (!buf && len)) return err_set(CUK_ERR_INVALID, "cuk_program_generic: NULL argument");
    Arena a;
    arena_init(&a);
    const Node *d = decl_named(p, &a, name);
    cuk_status s = CUK_OK;
    if (!d || !decl_generic(d)) {
        s = err_set(CUK_ERR_NOT_FOUND, "'%s' is not a generic function of the program%s", name,
                    d ? " (its types are concrete: cuk_program_function gives it)" : "");
    } else if (!d->type || d->type->kind != N_TYPE) {
        s = err_set(CUK_ERR_INVALID, "'%s' is generic and %s; cuk_program_generic describes functions of one "
                    "result: call it from a function of the program with concrete types", name,
                    d->type ? "returns a tuple" : "returns nothing");
    } else {
        const char *t = "";
        for (const Node *q = d->params; q; q = q->next)
            t = arena_printf(&a, "%s%s\t%s\t%s\n", t, q->name, q->type ? q->type->name : "",
                             q->type ? dims_text(&a, q->type, ",", false) : "");
        t = arena_printf(&a, "%s->\t%s\t%s\n", t, d->type->name, dims_text(&a, d->type, ",", false));
        size_t n = strlen(t);
        if (buf && n >= len)
            s = err_set(CUK_ERR_INVALID, "cuk_program_generic: the signature of '%s' needs %zu bytes, not %zu", name,
                        n + 1, len);
        else if (buf)
            memcpy(buf, t, n + 1);
    }
    arena_free(&a);
    return s;
}

cuk_status cuk_program_function(cuk_program *p, const char *name, cuk_fn **out) {
    if (!p || !name || !out) return err_set(CUK_ERR_INVALID, "cuk_program_function: NULL argument");
    *out = NULL;
    for (int i = 0; i < p->nfns; i++)
        if (strcmp(p->fns[i]->fn->name, name) == 0) {
            *out = p->fns[i];
            return CUK_OK;
        }
    cuk_status s = CUK_OK;
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->nall; i++) {
        Fn *fn = p->prog->fns[i];
        if (strcmp(fn->name, name) != 0) continue;
        if (!p->all[i]) p->all[i] = wrap_fn(p, fn, NULL); /* a stdlib function */
        *out = p->all[i];
    }
    pthread_mutex_unlock(&p->lock);
    if (!*out) {
        Arena a;
        arena_init(&a);
        const Node *d = decl_named(p, &a, name);
        s = d && decl_generic(d) ? generic_miss(d) : CUK_OK;
        arena_free(&a);
        if (s) return s;
        char have[512] = "";
        size_t n = 0;
        for (int i = 0; i < p->nfns && n < sizeof have - 64; i++)
            n += (size_t)snprintf(have + n, sizeof have - n, "%s%s", i ? ", " : "", p->fns[i]->fn->name);
        s = err_set(CUK_ERR_NOT_FOUND, "the program has no function '%s'%s%s", name, p->nfns ? "; it has " : "", have);
    }
    return s;
}

const char *cuk_fn_name(const cuk_fn *f) { return f->fn->name; }
int cuk_fn_nparams(const cuk_fn *f) { return f->nparams; }

cuk_status cuk_fn_param(const cuk_fn *f, int i, cuk_param_info *info) {
    if (!f || !info || i < 0 || i >= f->nparams)
        return err_set(CUK_ERR_INVALID, "cuk_fn_param: no parameter %d", i);
    *info = f->params[i];
    return CUK_OK;
}

/* The outputs a call of f fills: one per result, and one (left empty) for a function
   without a result. */
static int nout(const cuk_fn *f) { return f->fn->nres ? f->fn->nres : 1; }

int cuk_fn_nresults(const cuk_fn *f) { return !f ? 0 : f->fn->nres ? f->fn->nres : f->fn->ret_dt != DT_VOID; }

cuk_status cuk_fn_result_at(const cuk_fn *f, int k, cuk_dtype *dt, int *rank) {
    int n = cuk_fn_nresults(f);
    if (!f || k < 0 || k >= n) return err_set(CUK_ERR_INVALID, "cuk_fn_result_at: no result %d", k);
    if (dt) *dt = (cuk_dtype)(f->fn->nres ? f->fn->res_dt[k] : f->fn->ret_dt);
    if (rank) *rank = f->fn->nres ? f->fn->res_rank[k] : f->fn->ret_rank;
    return CUK_OK;
}

cuk_status cuk_fn_result(const cuk_fn *f, int *has_result, cuk_dtype *dt, int *rank) {
    if (!f) return err_set(CUK_ERR_INVALID, "cuk_fn_result: NULL function");
    if (f->fn->nres) {
        if (has_result) *has_result = 1;
        return cuk_fn_result_at(f, 0, dt, rank);
    }
    bool has = f->fn->ret_dt != DT_VOID;
    if (has_result) *has_result = has;
    if (dt) *dt = has ? (cuk_dtype)f->fn->ret_dt : CUK_F32;
    if (rank) *rank = has ? f->fn->ret_rank : 0;
    return CUK_OK;
}

/* NumPy's spelling of a shape: (), (5,), (2, 3). */
static const char *shape_str(char *buf, size_t n, int rank, const int64_t *shape) {
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "%s)", rank == 1 ? "," : "");
    return buf;
}

void cuk_array_view(const cuk_array *a, cuk_view *v) {
    v->dtype = a->dt;
    v->rank = a->rank;
    v->place = a->place;
    for (int k = 0; k < a->rank; k++) v->shape[k] = a->shape[k];
    v->data = a->place == CUK_ON_HOST ? a->arr->data : NULL;
    v->dev = a->place == CUK_ON_DEVICE ? a->dev : 0;
}

/* Checks the arguments against the parameters: count, dtype, rank, and that every use
   of a size variable (or literal size) agrees. Size variables were numbered when the
   function was wrapped, so this is integer work only (it runs on every call). */
static cuk_status check_views(const cuk_fn *f, const cuk_view *const *args, int nargs) {
    const char *fname = f->fn->name;
    if (nargs != f->nparams)
        return err_set(CUK_ERR_INVALID, "%s() takes %d argument%s but %d %s given", fname, f->nparams,
                       f->nparams == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
    int64_t vstack[64], *vval = f->ndims <= 64 ? vstack : malloc(sizeof(int64_t) * (size_t)f->ndims);
    if (!vval) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int j = 0; j < f->ndims; j++) vval[j] = -1;
    cuk_status s = CUK_OK;
    char sh[128];
    for (int i = 0; i < nargs && !s; i++) {
        const cuk_param_info *pi = &f->params[i];
        const cuk_view *a = args[i];
        if (!a) {
            s = err_set(CUK_ERR_INVALID, "%s(): argument '%s' is NULL", fname, pi->name);
            break;
        }
        if (a->dtype != pi->dtype || a->rank != pi->rank) {
            char want[64];
            if (pi->rank) snprintf(want, sizeof want, "a %d-D %s array", pi->rank, dtype_info[pi->dtype].name);
            else snprintf(want, sizeof want, "a %s scalar", dtype_info[pi->dtype].name);
            const char *got = (unsigned)a->dtype < CUK_DTYPE_COUNT ? dtype_info[a->dtype].name : "?";
            if (a->dtype != pi->dtype)
                s = err_set(CUK_ERR_INVALID, "%s(): parameter '%s' is %s, but the argument has dtype %s; convert it first",
                            fname, pi->name, want, got);
            else if (a->rank)
                s = err_set(CUK_ERR_INVALID, "%s(): parameter '%s' is %s, but the argument is a %d-D %s array of shape %s",
                            fname, pi->name, want, a->rank, got, shape_str(sh, sizeof sh, a->rank, a->shape));
            else
                s = err_set(CUK_ERR_INVALID, "%s(): parameter '%s' is %s, but the argument is a %s scalar", fname,
                            pi->name, want, got);
            break;
        }
        for (int k = 0; k < pi->rank && !s; k++) {
            int id = f->dimid[i][k];
            if (id < 0) {
                if (a->shape[k] != pi->sizes[k])
                    s = err_set(CUK_ERR_INVALID, "%s(): parameter '%s' needs size %lld on axis %d, but the argument has shape %s",
                                fname, pi->name, (long long)pi->sizes[k], k, shape_str(sh, sizeof sh, a->rank, a->shape));
            } else if (vval[id] < 0) {
                vval[id] = a->shape[k];
            } else if (vval[id] != a->shape[k]) {
                int from = f->dimfrom[id];
                if (from == i)
                    s = err_set(CUK_ERR_INVALID, "%s(): parameter '%s' has shape %s, but its axes named '%s' must agree",
                                fname, pi->name, shape_str(sh, sizeof sh, a->rank, a->shape), pi->dims[k]);
                else
                    s = err_set(CUK_ERR_INVALID,
                                "%s(): parameter '%s' has shape %s, so size '%s' is %lld there, but it is %lld from parameter '%s'",
                                fname, pi->name, shape_str(sh, sizeof sh, a->rank, a->shape), pi->dims[k],
                                (long long)a->shape[k], (long long)vval[id], f->params[from].name);
            }
        }
    }
    if (vval != vstack) free(vval);
    return s;
}

void cuk_program_interrupt_hook(int (*hook)(void)) { run_set_interrupt_hook(hook); }

/* A call that failed: interrupted (run_interrupted: its results are incomplete), a
   run-time error with its location, or without a message. */
static cuk_status call_failed(const RtErr *e, const char *fn) {
    if (run_interrupted())
        return err_set(CUK_ERR_INTERRUPTED, "%s() was interrupted (Ctrl-C) before it finished; its results are "
                       "discarded", fn);
    return e->set ? run_error(e) : err_set(CUK_ERR_RUNTIME, "%s() failed", fn);
}

/* Reports a run-time error with its location, like cukc does. */
static cuk_status run_error(const RtErr *e) {
    MemDiag md;
    if (!memdiag_open(&md)) return err_set(CUK_ERR_RUNTIME, "%s", e->msg);
    rt_report(e, &md.d);
    char *text = memdiag_close(&md);
    const char *path = e->loc.src ? e->loc.src->path : NULL;
    info_from_diag(text && *text ? text : e->msg, path);
    if (!path) snprintf(last_info.message, sizeof last_info.message, "%s", e->msg);
    cuk_status s = err_set(CUK_ERR_RUNTIME, "%s", text && *text ? text : e->msg);
    free(text);
    return s;
}

/* print() in a function writes to C's stdout, which Python (and other callers) do not
   share a buffer with: flush what is pending before and after a call, so that output
   keeps its order. Checking first keeps calls without output off stdout's lock. */
static void flush_stdout(void) {
    if (__fpending(stdout)) fflush(stdout);
}

/* *v = a view of rank elements of dt at p on the device (a result the caller owns). */
static void device_view(cuk_view *v, cuk_dtype dt, int rank, const int64_t *shape, cuk_devptr p) {
    v->dtype = dt;
    v->rank = rank;
    v->place = CUK_ON_DEVICE;
    for (int k = 0; k < rank; k++) v->shape[k] = shape[k];
    v->data = NULL;
    v->dev = p;
}

/* A call argument's dtype, rank and shape (zeros past the rank), no value yet. */
static void gpuval_head(GpuVal *g, const cuk_view *a) {
    g->dt = (DType)a->dtype;
    g->rank = a->rank;
    g->borrowed = true;
    g->p = 0;
    g->s.u = 0;
    for (int k = 0; k < CUK_MAX_RANK; k++) g->shape[k] = k < a->rank ? a->shape[k] : 0;
}

/* A scalar's bytes in Scalar's representation: i for bool and signed, u, f for floats. */
static void widen_scalar(cuk_dtype dt, const cuk_scalar *v, GpuVal *g) { g->s = scalar_load((DType)dt, v); }

/* The GPU backend's session: device arrays go in as they are, host arrays are uploaded
   for the call, a scalar is passed by value. A result stays on the device (a view in
   *dres whose pool block the caller owns) if any argument was there, else it comes to
   the host (*hres). This is the per-call path of compiled functions: no host memory is
   allocated here for up to 16 arguments. */
static cuk_status session_result(GpuVal r, bool on_device, cuk_view *dres, cuk_array **hres);

/* The stream this thread's program calls queue on (cuk_call_stream_set). */
static _Thread_local cuk_stream *call_stream;

void cuk_call_stream_set(cuk_stream *s) { call_stream = s; }
cuk_stream *cuk_call_stream_get(void) { return call_stream; }

/* dres and hres have one entry per result (nout(f)). */
static cuk_status session_call(cuk_fn *f, const cuk_view *const *args, int nargs, const cuk_view *into, cuk_view *dres,
                               cuk_array **hres) {
    GpuVal stack[16], *gv = nargs <= 16 ? stack : calloc((size_t)nargs, sizeof *gv);
    cuk_devptr tstack[16], *tmp = nargs <= 16 ? tstack : calloc((size_t)nargs, sizeof *tmp);
    if (!gv || !tmp) {
        if (gv != stack) free(gv);
        if (tmp != tstack) free(tmp);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    cuk_status s = CUK_OK;
    bool on_device = false;
    for (int i = 0; i < nargs; i++) tmp[i] = 0;
    for (int i = 0; i < nargs && !s; i++) {
        const cuk_view *a = args[i];
        GpuVal *g = &gv[i];
        gpuval_head(g, a);
        if (a->rank == 0) {
            cuk_scalar v = {0};
            if (a->place == CUK_ON_DEVICE) s = cuk_memcpy_dtoh_on(&v, a->dev, cuk_dtype_size(a->dtype), call_stream), on_device = true;
            else memcpy(&v, a->data, cuk_dtype_size(a->dtype));
            widen_scalar(a->dtype, &v, g);
            continue;
        }
        int64_t n = 1;
        for (int k = 0; k < a->rank; k++) n *= a->shape[k];
        if (a->place == CUK_ON_DEVICE) {
            on_device = true;
            g->p = a->dev;
        } else if (n) {
            size_t nb = (size_t)n * cuk_dtype_size(a->dtype);
            if (!(s = cuk_mem_alloc_on(&tmp[i], nb, call_stream))) s = cuk_memcpy_htod_on(tmp[i], a->data, nb, call_stream);
            g->p = tmp[i];
            g->borrowed = false;
        }
    }
    GpuVal rs[MAX_RESULTS];
    int nr = nout(f);
    for (int k = 0; k < nr; k++) rs[k].dt = DT_VOID;
    if (!s) {
        RtErr err; /* not = {0}: that clears its 1 KiB message buffer on every call */
        rt_err_init(&err);
        flush_stdout();
        run_interrupt_reset();
        GpuVal iv;
        if (into) {
            gpuval_head(&iv, into);
            iv.p = into->dev;
        }
        int64_t t0 = f->prog->prof ? profile_clock() : 0;
        bool ok = gpu_call_into(f->prog->session, f->fn, gv, into ? &iv : NULL, rs, stdout, &err,
                                on_device ? GPU_CALL_DEVICE_SCALARS : 0, call_stream) &&
                  !run_interrupted();
        if (f->prog->prof) {
            cuk_stream_synchronize(call_stream);
            profile_call(f->prog->prof, profile_clock() - t0);
        }
        flush_stdout();
        if (!ok) s = call_failed(&err, f->fn->name);
    }
    /* Uploaded inputs go back to the pool; their last use is queued on the call's
       stream, which orders any reuse after it. */
    for (int i = 0; i < nargs; i++)
        if (tmp[i]) cuk_mem_free(tmp[i]);
    if (gv != stack) free(gv);
    if (tmp != tstack) free(tmp);
    for (int k = 0; k < nr; k++) {
        if (s) {
            if (rs[k].dt != DT_VOID && rs[k].p) cuk_mem_free(rs[k].p);
            continue;
        }
        if (into) { /* the result is in into's memory */
            if (rs[k].dt != DT_VOID) *dres = *into;
            continue;
        }
        s = session_result(rs[k], on_device, &dres[k], &hres[k]);
        if (s) /* the results before this one are freed by the caller */
            continue;
    }
    return s;
}

/* One result of a GPU call, as session_call describes it. */
static cuk_status session_result(GpuVal r, bool on_device, cuk_view *dres, cuk_array **hres) {
    cuk_status s = CUK_OK;
    if (r.dt == DT_VOID) return s;
    if (r.rank == 0 && r.p) { /* computed on the device, and left there (GPU_CALL_DEVICE_SCALARS) */
        device_view(dres, (cuk_dtype)r.dt, 0, NULL, r.p);
        return CUK_OK;
    }
    if (r.rank == 0) {
        /* a scalar result comes back on the host; on the device if inputs were there */
        cuk_scalar v;
        scalar_store(r.dt, r.s, &v);
        if (!on_device) return cuk_array_from_host(hres, (cuk_dtype)r.dt, 0, NULL, &v, CUK_ON_HOST);
        cuk_devptr p;
        size_t nb = cuk_dtype_size((cuk_dtype)r.dt);
        if ((s = cuk_mem_alloc_on(&p, nb, call_stream))) return s;
        if ((s = cuk_memcpy_htod_on(p, &v, nb, call_stream))) {
            cuk_mem_free(p);
            return s;
        }
        device_view(dres, (cuk_dtype)r.dt, 0, NULL, p);
        return CUK_OK;
    }
    if (on_device) {
        device_view(dres, (cuk_dtype)r.dt, r.rank, r.shape, r.p);
        return CUK_OK;
    }
    cuk_array *out;
    s = array_head(&out, (cuk_dtype)r.dt, r.rank, r.shape);
    if (!s) s = host_storage(out);
    if (!s && cuk_array_nbytes(out)) s = cuk_memcpy_dtoh_on(out->arr->data, r.p, cuk_array_nbytes(out), call_stream);
    if (r.p) cuk_mem_free(r.p);
    if (s) {
        cuk_array_free(out);
        return s;
    }
    *hres = out;
    return CUK_OK;
}

/* The CPU backend: host Arrs in; device arguments are copied in (and the result out to
   the device). Arguments are already checked. result has one entry per result. */
static cuk_status backend_call(cuk_fn *f, cuk_array *const *args, int nargs, cuk_array **result) {
    cuk_status s = CUK_OK;
    Arr *stack[16], **in = nargs <= 16 ? stack : calloc((size_t)nargs, sizeof *in);
    cuk_array *stage[16], **tmp = nargs <= 16 ? stage : calloc((size_t)nargs, sizeof *tmp);
    if (!in || !tmp) {
        if (in != stack) free(in);
        if (tmp != stage) free(tmp);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    bool on_device = false;
    for (int i = 0; i < nargs; i++) {
        tmp[i] = NULL;
        in[i] = NULL;
    }
    for (int i = 0; i < nargs && !s; i++) {
        if (args[i]->place == CUK_ON_DEVICE) {
            on_device = true;
            s = cuk_array_copy(&tmp[i], args[i], CUK_ON_HOST);
            if (!s) in[i] = tmp[i]->arr;
        } else {
            in[i] = args[i]->arr;
        }
    }
    Arr *res[MAX_RESULTS] = {NULL};
    int nr = nout(f);
    if (!s) {
        RtErr err = {0};
        bool ok;
        flush_stdout(); /* print() output keeps its order with the caller's */
        run_interrupt_reset();
        int64_t t0 = f->prog->prof ? profile_clock() : 0;
        ok = cpu_run_profiled(f->fn, in, res, stdout, &err, f->prog->prof) && !run_interrupted();
        if (f->prog->prof) profile_call(f->prog->prof, profile_clock() - t0);
        flush_stdout();
        if (!ok) {
            s = call_failed(&err, f->fn->name);
            for (int k = 0; k < nr; k++) {
                arr_release(res[k]);
                res[k] = NULL;
            }
        }
    }
    /* A result that is an argument's own storage (fn id(x) = x), or another result's,
       must not alias the caller's memory: give the caller a copy. */
    for (int k = 0; !s && k < nr; k++) {
        if (!res[k]) continue;
        bool alias = false;
        for (int i = 0; i < nargs; i++)
            if (in[i] == res[k] || (in[i] && in[i]->data == res[k]->data)) alias = true;
        for (int j = 0; j < k; j++)
            if (res[j] && res[j]->data == res[k]->data && res[k]->size) alias = true;
        if (alias) {
            Arr *c = arr_new(res[k]->dt, res[k]->rank, res[k]->shape);
            if (!c) s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
            else memcpy(c->data, res[k]->data, (size_t)res[k]->size * (size_t)dtype_info[res[k]->dt].size);
            arr_release(res[k]);
            res[k] = c;
        }
    }
    for (int i = 0; i < nargs; i++) cuk_array_free(tmp[i]);
    if (in != stack) free(in);
    if (tmp != stage) free(tmp);
    for (int k = 0; k < nr; k++) {
        if (s || !res[k]) {
            arr_release(res[k]);
            continue;
        }
        cuk_array *r;
        if ((s = array_from_arr(&r, res[k]))) continue;
        if (on_device) {
            cuk_array *d;
            s = cuk_array_copy(&d, r, CUK_ON_DEVICE);
            cuk_array_free(r);
            if (s) continue;
            r = d;
        }
        result[k] = r;
    }
    return s;
}

/* One call, nres results: results (NULL: dropped) has nres entries. */
static cuk_status call_n(cuk_fn *f, cuk_array *const *args, int nargs, cuk_array **results, int nres) {
    last_info_set = false;
    if (!f || nargs < 0 || (nargs && !args)) return err_set(CUK_ERR_INVALID, "cuk_fn_call: NULL argument");
    int want = nout(f);
    if (results)
        for (int k = 0; k < nres; k++) results[k] = NULL;
    if (nres != want) {
        if (f->fn->nres)
            return err_set(CUK_ERR_INVALID, "%s() has %d results: call it with cuk_fn_call_n and %d outputs",
                           f->fn->name, want, want);
        return err_set(CUK_ERR_INVALID, "%s() has one result, but %d outputs were given", f->fn->name, nres);
    }
    cuk_view vstack[16], *v = nargs <= 16 ? vstack : calloc((size_t)nargs, sizeof *v);
    const cuk_view *pstack[16], **vp = nargs <= 16 ? pstack : calloc((size_t)nargs, sizeof *vp);
    cuk_status s = CUK_OK;
    cuk_array *r[MAX_RESULTS] = {NULL};
    if (!v || !vp) {
        s = err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        goto out;
    }
    for (int i = 0; i < nargs; i++) {
        if (args[i]) cuk_array_view(args[i], &v[i]);
        vp[i] = args[i] ? &v[i] : NULL;
    }
    if ((s = check_views(f, vp, nargs))) goto out;
    if (f->prog->session) {
        cuk_view d[MAX_RESULTS];
        for (int k = 0; k < want; k++) d[k].rank = -1;
        s = session_call(f, vp, nargs, NULL, d, r);
        for (int k = 0; k < want; k++) {
            if (d[k].rank < 0) continue;
            if (s) {
                cuk_mem_free(d[k].dev);
                continue;
            }
            /* a device result: an array that owns the pool block */
            if ((s = array_head(&r[k], d[k].dtype, d[k].rank, d[k].shape))) cuk_mem_free(d[k].dev);
            else {
                r[k]->place = CUK_ON_DEVICE;
                r[k]->dev = d[k].dev;
                r[k]->owns_dev = d[k].dev != 0;
            }
        }
    } else {
        s = backend_call(f, args, nargs, r);
    }
    for (int k = 0; k < want; k++) {
        if (!s && results) results[k] = r[k];
        else cuk_array_free(r[k]);
    }
out:
    if (v != vstack) free(v);
    if (vp != pstack) free(vp);
    return s;
}

cuk_status cuk_fn_call(cuk_fn *f, cuk_array *const *args, int nargs, cuk_array **result) {
    if (result) *result = NULL;
    return call_n(f, args, nargs, result, 1);
}

cuk_status cuk_fn_call_n(cuk_fn *f, cuk_array *const *args, int nargs, cuk_array **results, int nresults) {
    return call_n(f, args, nargs, results, nresults);
}

static cuk_status call_quick(cuk_fn *f, const cuk_view *const *args, int nargs, const cuk_view *into, cuk_view *dres,
                             int *done) {
    if (!done) return err_set(CUK_ERR_INVALID, "cuk_fn_call_quick: NULL argument");
    *done = 0;
    if (!f || !dres || nargs < 0 || (nargs && !args) || !f->prog->session || nargs > 16 || nargs != f->nparams)
        return CUK_OK;
    last_info_set = false;
    cuk_status s = check_views(f, args, nargs);
    if (s) return s;
    GpuVal gv[16];
    for (int i = 0; i < nargs; i++) {
        const cuk_view *a = args[i];
        GpuVal *g = &gv[i];
        if ((a->rank > 0) != (a->place == CUK_ON_DEVICE)) return CUK_OK; /* host arrays, device scalars */
        gpuval_head(g, a);
        if (a->rank == 0) {
            cuk_scalar v = {0};
            memcpy(&v, a->data, cuk_dtype_size(a->dtype));
            widen_scalar(a->dtype, &v, g);
        } else {
            g->p = a->dev;
        }
    }
    RtErr err;
    rt_err_init(&err);
    GpuVal r, iv;
    if (into) {
        gpuval_head(&iv, into);
        iv.p = into->dev;
    }
    run_interrupt_reset();
    int rc = gpu_call_quick_into(f->prog->session, f->fn, gv, into ? &iv : NULL, &r, &err, call_stream);
    if (rc < 0) return call_failed(&err, f->fn->name);
    if (rc == 0) return CUK_OK;
    *done = 1;
    device_view(dres, (cuk_dtype)r.dt, r.rank, r.shape, r.p);
    return CUK_OK;
}

cuk_status cuk_fn_call_quick(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_view *dres, int *done) {
    return call_quick(f, args, nargs, NULL, dres, done);
}

/* out='s dtype and rank against f's declared result: NULL when they fit, else the error. */
static cuk_status out_fits(const cuk_fn *f, const cuk_view *out) {
    const Fn *fn = f->fn;
    if (fn->nres || fn->ret_dt == DT_VOID || fn->ret_rank == 0)
        return err_set(CUK_ERR_INVALID, "%s() returns %s, so it takes no out=", fn->name,
                       fn->nres ? "several results" : fn->ret_dt == DT_VOID ? "nothing" : "a scalar");
    if (out->dtype != (cuk_dtype)fn->ret_dt || out->rank != fn->ret_rank) {
        const char *got = (unsigned)out->dtype < CUK_DTYPE_COUNT ? dtype_info[out->dtype].name : "?";
        return err_set(CUK_ERR_INVALID, "%s(): out= is a %d-D %s array, but the function returns a %d-D %s array", fn->name,
                       out->rank, got, fn->ret_rank, dtype_info[fn->ret_dt].name);
    }
    return CUK_OK;
}

cuk_status cuk_fn_call_quick_out(cuk_fn *f, const cuk_view *const *args, int nargs, const cuk_view *out, int *done) {
    if (!done || !out) return err_set(CUK_ERR_INVALID, "cuk_fn_call_quick_out: NULL argument");
    *done = 0;
    if (!f || out->place != CUK_ON_DEVICE || out_fits(f, out)) return CUK_OK; /* the full call says why */
    cuk_view d;
    return call_quick(f, args, nargs, out, &d, done);
}

cuk_status cuk_fn_call_views_out(cuk_fn *f, const cuk_view *const *args, int nargs, const cuk_view *out) {
    last_info_set = false;
    if (!f || !out || nargs < 0 || (nargs && !args)) return err_set(CUK_ERR_INVALID, "cuk_fn_call_views_out: NULL argument");
    cuk_status s = out_fits(f, out);
    if (!s) s = check_views(f, args, nargs);
    if (s) return s;
    cuk_view d = {.rank = -1};
    cuk_array *h = NULL;
    if (f->prog->session && out->place == CUK_ON_DEVICE) return session_call(f, args, nargs, out, &d, &h);
    /* a host out=, or the CPU backend: the result, then a copy into out */
    s = cuk_fn_call_views(f, args, nargs, &d, &h);
    if (s) return s;
    cuk_view r;
    if (d.rank >= 0) r = d;
    else cuk_array_view(h, &r);
    size_t bytes = cuk_dtype_size(r.dtype);
    for (int k = 0; k < r.rank; k++) bytes *= (size_t)r.shape[k];
    if (memcmp(r.shape, out->shape, sizeof(int64_t) * (size_t)r.rank) != 0) {
        char a[96], b[96];
        s = err_set(CUK_ERR_RUNTIME, "%s(): out= is %s %s, but the result is %s %s", f->fn->name,
                    dtype_info[out->dtype].name, fmt_shape(a, sizeof a, out->rank, out->shape),
                    dtype_info[r.dtype].name, fmt_shape(b, sizeof b, r.rank, r.shape));
    } else if (bytes) {
        bool src_dev = r.place == CUK_ON_DEVICE, dst_dev = out->place == CUK_ON_DEVICE;
        if (src_dev && dst_dev) s = cuk_memcpy_dtod_async(out->dev, r.dev, bytes, call_stream);
        else if (src_dev) s = cuk_memcpy_dtoh_on(out->data, r.dev, bytes, call_stream);
        else if (dst_dev) s = cuk_memcpy_htod_on(out->dev, r.data, bytes, call_stream);
        else memmove(out->data, r.data, bytes);
    }
    if (d.rank >= 0 && d.dev) cuk_mem_free(d.dev);
    cuk_array_free(h);
    return s;
}

cuk_status cuk_fn_call_views_n(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_view *dres, cuk_array **hres,
                               int nresults) {
    last_info_set = false;
    if (!f || !dres || !hres || nargs < 0 || (nargs && !args))
        return err_set(CUK_ERR_INVALID, "cuk_fn_call_views: NULL argument");
    int want = nout(f);
    for (int k = 0; k < nresults; k++) {
        dres[k].rank = -1;
        hres[k] = NULL;
    }
    if (nresults != want)
        return err_set(CUK_ERR_INVALID, "%s() has %d result%s, but %d outputs were given%s", f->fn->name, want,
                       want == 1 ? "" : "s", nresults, f->fn->nres ? ": use cuk_fn_call_views_n" : "");
    cuk_status s = check_views(f, args, nargs);
    if (s) return s;
    if (f->prog->session) {
        s = session_call(f, args, nargs, NULL, dres, hres);
        if (s)
            for (int k = 0; k < want; k++) {
                if (dres[k].rank >= 0 && dres[k].dev) cuk_mem_free(dres[k].dev);
                dres[k].rank = -1;
                cuk_array_free(hres[k]);
                hres[k] = NULL;
            }
        return s;
    }
    /* The CPU backend takes arrays: wrap the views. */
    cuk_array *stack[16], **a = nargs <= 16 ? stack : calloc((size_t)nargs, sizeof *a);
    if (!a) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < nargs; i++) a[i] = NULL;
    for (int i = 0; i < nargs && !s; i++) {
        const cuk_view *v = args[i];
        if (v->place == CUK_ON_DEVICE) s = cuk_array_wrap_device(&a[i], v->dtype, v->rank, v->shape, v->dev ? v->dev : 1);
        else s = cuk_array_wrap_host(&a[i], v->dtype, v->rank, v->shape, v->data);
    }
    cuk_array *r[MAX_RESULTS] = {NULL};
    if (!s) s = backend_call(f, a, nargs, r);
    for (int i = 0; i < nargs; i++) cuk_array_free(a[i]);
    if (a != stack) free(a);
    for (int k = 0; k < want; k++) {
        if (s || !r[k]) {
            cuk_array_free(r[k]);
            continue;
        }
        if (r[k]->place == CUK_ON_DEVICE) {
            /* hand the pool block over as a view */
            device_view(&dres[k], r[k]->dt, r[k]->rank, r[k]->shape, r[k]->dev);
            r[k]->owns_dev = false;
            cuk_array_free(r[k]);
            continue;
        }
        hres[k] = r[k];
    }
    return s;
}

cuk_status cuk_fn_call_views(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_view *dres, cuk_array **hres) {
    if (!f || !dres || !hres) return err_set(CUK_ERR_INVALID, "cuk_fn_call_views: NULL argument");
    return cuk_fn_call_views_n(f, args, nargs, dres, hres, 1);
}

cuk_status cuk_program_call(cuk_program *p, const char *name, cuk_array *const *args, int nargs, cuk_array **result) {
    cuk_fn *f;
    cuk_status s = cuk_program_function(p, name, &f);
    if (s) return s;
    return cuk_fn_call(f, args, nargs, result);
}

cuk_status cuk_program_call_on(cuk_program *p, const char *name, cuk_array *const *args, int nargs, cuk_array **result,
                               cuk_stream *stream) {
    cuk_stream *was = call_stream;
    call_stream = stream;
    cuk_status s = cuk_program_call(p, name, args, nargs, result);
    call_stream = was;
    return s;
}

/* ---- graphs: one call captured (cuk_fn_capture) ------------------------------------------ */

struct cuk_capture_s {
    cuk_fn *f;
    cuk_stream *stream; /* private: where the call was captured */
    cuk_graph *g;
    int nargs, nres;
    cuk_view *in;  /* the graph's inputs: device arrays it owns; scalars by value */
    cuk_scalar *sv;
    cuk_view res[MAX_RESULTS];
};

void cuk_capture_free(cuk_capture *c) {
    if (!c) return;
    /* the graph's memory goes with the graph: wait for its last launch first */
    if (c->g) cuk_graph_destroy(c->g);
    for (int i = 0; c->in && i < c->nargs; i++)
        if (c->in[i].rank > 0) cuk_mem_free(c->in[i].dev);
    for (int k = 0; k < c->nres; k++)
        if (c->res[k].rank >= 0) cuk_mem_free(c->res[k].dev);
    cuk_stream_destroy(c->stream);
    free(c->in);
    free(c->sv);
    free(c);
}

static cuk_status capture_fail(cuk_capture *c, cuk_status s) {
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", cuk_last_error());
    if (c->stream) cuk_stream_synchronize(c->stream);
    cuk_capture_free(c);
    return err_set(s, "%s", msg);
}

cuk_status cuk_fn_capture(cuk_fn *f, const cuk_view *const *args, int nargs, cuk_capture **out) {
    last_info_set = false;
    if (!out || !f || nargs < 0 || (nargs && !args)) return err_set(CUK_ERR_INVALID, "cuk_fn_capture: NULL argument");
    *out = NULL;
    if (!f->prog->session)
        return err_set(CUK_ERR_INVALID, "%s(): a CUDA graph needs the GPU backend; this program runs on the CPU",
                       f->fn->name);
    cuk_status s = check_views(f, args, nargs);
    if (s) return s;
    cuk_capture *c = calloc(1, sizeof *c);
    if (!c) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    c->f = f;
    c->nargs = nargs;
    c->nres = 0;
    if (!(c->in = calloc((size_t)nargs + 1, sizeof *c->in)) || !(c->sv = calloc((size_t)nargs + 1, sizeof *c->sv))) {
        cuk_capture_free(c);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    if ((s = cuk_stream_create(&c->stream))) return capture_fail(c, s);
    /* The inputs: the graph's own copies, so that a replay reads them wherever the
       caller's arrays go; the copies wait for the caller's current stream. */
    cuk_stream *was = call_stream;
    if ((s = cuk_stream_wait_raw(cuk_stream_handle(c->stream), cuk_stream_handle(was)))) return capture_fail(c, s);
    const cuk_view *vstack[16], **vp = nargs <= 16 ? vstack : calloc((size_t)nargs, sizeof *vp);
    if (!vp) return capture_fail(c, err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory"));
    for (int i = 0; i < nargs && !s; i++) {
        const cuk_view *a = args[i];
        cuk_view *v = &c->in[i];
        *v = *a;
        vp[i] = v;
        if (a->rank == 0) { /* by value: recorded in the kernels' parameters */
            if (a->place == CUK_ON_DEVICE) s = cuk_memcpy_dtoh(&c->sv[i], a->dev, cuk_dtype_size(a->dtype));
            else memcpy(&c->sv[i], a->data, cuk_dtype_size(a->dtype));
            v->place = CUK_ON_HOST;
            v->data = &c->sv[i];
            v->dev = 0;
            continue;
        }
        size_t nb = cuk_dtype_size(a->dtype);
        for (int k = 0; k < a->rank; k++) nb *= (size_t)a->shape[k];
        v->place = CUK_ON_DEVICE;
        v->data = NULL;
        v->dev = 0;
        if ((s = cuk_mem_alloc_on(&v->dev, nb, c->stream))) break;
        if (nb && a->place == CUK_ON_DEVICE) s = cuk_memcpy_dtod_async(v->dev, a->dev, nb, c->stream);
        else if (nb) s = cuk_memcpy_htod_async(v->dev, a->data, nb, c->stream);
    }
    /* Once for real (compiling what is not yet, the scratch sized), then recorded. */
    cuk_view dres[MAX_RESULTS];
    cuk_array *hres[MAX_RESULTS] = {NULL};
    int nr = nout(f);
    call_stream = c->stream;
    for (int pass = 0; pass < 2 && !s; pass++) {
        for (int k = 0; k < nr; k++) dres[k].rank = -1;
        if (pass == 1 && (s = cuk_stream_begin_capture(c->stream))) break;
        s = session_call(f, vp, nargs, NULL, dres, hres);
        if (pass == 1) {
            cuk_status e = cuk_stream_end_capture(c->stream, &c->g);
            if (!s) s = e;
        }
        for (int k = 0; k < nr; k++) {
            if (hres[k]) { /* a host result: every argument was a host scalar */
                cuk_array_free(hres[k]);
                hres[k] = NULL;
                if (!s) s = err_set(CUK_ERR_INVALID, "%s(): its result is computed on the host, so a graph has nothing "
                                                     "to record; pass at least one array", f->fn->name);
            }
            if (dres[k].rank < 0) continue;
            if (pass == 0 || s) cuk_mem_free(dres[k].dev);
            else c->res[k] = dres[k];
        }
        if (pass == 1 && !s) c->nres = nr;
        if (pass == 0 && !s) s = cuk_stream_synchronize(c->stream); /* the warm-up's errors, here */
    }
    call_stream = was;
    if (vp != vstack) free(vp);
    /* the session's scratch for the private stream: the graph's now */
    cuk_devptr held[2];
    int nh = gpu_session_take_stream(f->prog->session, c->stream, held);
    for (int k = 0; k < nh; k++)
        if (c->g) cuk_graph_adopt(c->g, held[k]), cuk_mem_free(held[k]);
        else cuk_mem_free(held[k]);
    if (!s)
        for (int i = 0; i < nargs && !s; i++)
            if (c->in[i].rank > 0 && c->in[i].dev) s = cuk_graph_adopt(c->g, c->in[i].dev);
    if (s) return capture_fail(c, s); /* the call's own error (file:line:col) kept */
    *out = c;
    return CUK_OK;
}

cuk_status cuk_program_capture(cuk_program *p, const char *name, cuk_array *const *args, int nargs, cuk_capture **c) {
    if (c) *c = NULL;
    cuk_fn *f;
    cuk_status s = cuk_program_function(p, name, &f);
    if (s) return s;
    if (nargs < 0 || (nargs && !args)) return err_set(CUK_ERR_INVALID, "cuk_program_capture: NULL argument");
    cuk_view vs[16];
    const cuk_view *vp[16];
    if (nargs > 16) return err_set(CUK_ERR_INVALID, "cuk_program_capture: at most 16 arguments (use cuk_fn_capture)");
    for (int i = 0; i < nargs; i++) {
        if (!args[i]) return err_set(CUK_ERR_INVALID, "cuk_program_capture: argument %d is NULL", i);
        cuk_array_view(args[i], &vs[i]);
        vp[i] = &vs[i];
    }
    return cuk_fn_capture(f, vp, nargs, c);
}

int cuk_capture_nresults(const cuk_capture *c) { return c ? c->nres : 0; }

const cuk_view *cuk_capture_result(const cuk_capture *c, int k) {
    return c && k >= 0 && k < c->nres ? &c->res[k] : NULL;
}

const cuk_view *cuk_capture_input(const cuk_capture *c, int i) {
    return c && i >= 0 && i < c->nargs ? &c->in[i] : NULL;
}

size_t cuk_capture_nodes(const cuk_capture *c) { return c ? cuk_graph_nodes(c->g) : 0; }

cuk_status cuk_capture_launch(cuk_capture *c, const cuk_view *const *args, int nargs, cuk_stream *s) {
    if (!c) return err_set(CUK_ERR_INVALID, "cuk_capture_launch: NULL capture");
    if (args && nargs != c->nargs)
        return err_set(CUK_ERR_INVALID, "%s(): the graph was captured with %d arguments, %d given", c->f->fn->name,
                       c->nargs, nargs);
    cuk_status st = CUK_OK;
    /* every argument checked before anything is copied */
    for (int i = 0; args && i < nargs && !st; i++) {
        const cuk_view *a = args[i], *in = &c->in[i];
        if (!a) continue; /* the graph's input as it is */
        if (a->dtype != in->dtype || a->rank != in->rank ||
            memcmp(a->shape, in->shape, sizeof(int64_t) * (size_t)a->rank) != 0) {
            char x[96], y[96];
            return err_set(CUK_ERR_INVALID, "%s(): argument %d is %s %s, but the graph was captured with %s %s; capture "
                                            "again for other shapes",
                           c->f->fn->name, i, dtype_info[a->dtype].name, fmt_shape(x, sizeof x, a->rank, a->shape),
                           dtype_info[in->dtype].name, fmt_shape(y, sizeof y, in->rank, in->shape));
        }
        if (a->rank > 0) continue;
        cuk_scalar v = {0};
        if (a->place == CUK_ON_DEVICE) st = cuk_memcpy_dtoh(&v, a->dev, cuk_dtype_size(a->dtype));
        else memcpy(&v, a->data, cuk_dtype_size(a->dtype));
        if (!st && memcmp(&v, &c->sv[i], cuk_dtype_size(a->dtype)) != 0)
            return err_set(CUK_ERR_INVALID, "%s(): argument %d, a scalar, differs from the value the graph was captured "
                                            "with (scalars are recorded in it); capture again, or pass it as a "
                                            "1-element array",
                           c->f->fn->name, i);
    }
    /* the copies into the inputs come after the last replay, wherever it ran */
    if (!st && args) st = cuk_graph_join(c->g, s);
    for (int i = 0; args && i < nargs && !st; i++) {
        const cuk_view *a = args[i], *in = &c->in[i];
        if (!a || a->rank == 0 || (a->place == CUK_ON_DEVICE && a->dev == in->dev)) continue;
        size_t nb = cuk_dtype_size(a->dtype);
        for (int k = 0; k < a->rank; k++) nb *= (size_t)a->shape[k];
        st = a->place == CUK_ON_DEVICE ? cuk_memcpy_dtod_async(in->dev, a->dev, nb, s)
                                       : cuk_memcpy_htod_async(in->dev, a->data, nb, s);
    }
    return st ? st : cuk_graph_launch(c->g, s);
}
