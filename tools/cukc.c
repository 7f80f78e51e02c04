/* cukc: the command-line driver. check, dump-ast and the emit commands drive the
   compiler's pipeline (compiler/pipeline.h); run and build go through the program API
   (api/cuk_program.h), as Python and C callers do. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/cuk_program.h"
#include "compiler/bundle.h"
#include "compiler/pipeline.h"
#include "exec/exec.h"

enum { EXIT_OK = 0, EXIT_COMPILE = 1, EXIT_USAGE = 2, EXIT_RUNTIME = 3 };

static const char *usage_text =
    "usage: cukc COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  check F                       parse and type-check F\n"
    "  emit-ir F [--dot]             print the IR (and the kernels it fuses into);\n"
    "                                --dot: the kernels as a Graphviz graph\n"
    "  graph F -o OUT.svg|.png|.pdf  draw the kernels and what they read and write\n"
    "                                (runs Graphviz's dot)\n"
    "  emit-cuda F                   print the CUDA C of every kernel\n"
    "  emit-ptx F [--arch sm_90] [--fast-math]\n"
    "                                compile the kernels with NVRTC and print PTX\n"
    "  build F -o B.cukb [--arch sm_80,sm_90,compute_90]\n"
    "                                compile ahead of time into a bundle\n"
    "  inspect B.cukb                list a bundle's kernels, archs and entry points\n"
    "  cache stats|clear             the kernel cache on disk\n"
    "  run F|B [--device auto|gpu|cpu] [--gpu N] [--entry NAME] [name=value ...]\n"
    "                                run main (or NAME); values are numbers, true/false\n"
    "                                or .npy files; --fast-math lets the GPU contract\n"
    "                                a * b + c into one FMA; --profile prints the time\n"
    "                                of each statement (stderr) after the run\n"
    "  dump-ast F                    print the syntax tree (for tests)\n"
    "  --version                     print the version\n"
    "\n"
    "exit status: 0 ok, 1 compile error, 2 usage error, 3 run-time error\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "cukc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nrun 'cukc --help' for usage\n");
    return EXIT_USAGE;
}

/* The program in path through the pipeline up to stage: a .cuk file, or a bundle, whose
   source is used. Errors go to stderr; returns an exit status. */
static int compile_file(Compiled *c, Arena *a, Diag *d, const char *path, Stage upto) {
    arena_init(a);
    diag_init(d, stderr);
    if (bundle_is(path)) {
        char err[1024];
        Bundle *b = NEW(a, Bundle);
        if (!bundle_read(a, path, b, err, sizeof err)) {
            fprintf(stderr, "cukc: error: %s\n", err);
            return EXIT_RUNTIME;
        }
        return pipeline_text(c, a, d, b->source_path, b->source, upto) ? EXIT_OK : EXIT_COMPILE;
    }
    return pipeline_file(c, a, d, path, upto) ? EXIT_OK : EXIT_COMPILE;
}

/* Numbers on the command line are decimal, with one rule for every type: an optional
   sign (none for unsigned types), digits (leading zeros are still decimal: 010 is ten),
   for floats a fraction and an exponent, or inf / nan; no spaces, no hex, no octal; a
   value beyond the type's range is refused (a float that rounds to infinity included;
   one too small rounds to the nearest value, zero at the end). *end is left at the first
   character not read. */
static bool dec_int(const char *t, bool sign_ok, char **end, long long *v, unsigned long long *u) {
    const char *p = t;
    if (*p == '-' || *p == '+') {
        if (*p == '-' && !sign_ok) return false;
        p++;
    }
    if (*p < '0' || *p > '9') return false;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9') return false;
    errno = 0;
    if (sign_ok) *v = strtoll(t, end, 10);
    else *u = strtoull(t, end, 10);
    return errno == 0;
}
static bool dec_float(const char *t, char **end, double *v) {
    const char *p = t + (*t == '-' || *t == '+');
    if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'i' || *p == 'I' || *p == 'n' || *p == 'N')) return false;
    if (strpbrk(t, "xXpP")) return false; /* hex floats */
    errno = 0;
    *v = strtod(t, end);
    if (errno == ERANGE && (*v > 1.0 || *v < -1.0)) return false; /* overflow */
    errno = 0;                                                      /* underflow rounds */
    return *end != t;
}

/* An argument of cukc run for parameter pi: a number or true/false for a scalar, a .npy
   file for an array. */
static cuk_array *parse_arg(const cuk_param_info *pi, const char *text, int *status) {
    if (pi->rank > 0) {
        cuk_array *a = NULL;
        if (cuk_array_load(&a, text) != CUK_OK) {
            fprintf(stderr, "cukc: error: parameter '%s': %s\n", pi->name, cuk_last_error());
            *status = EXIT_RUNTIME;
            return NULL;
        }
        if (cuk_array_dtype(a) != pi->dtype || cuk_array_rank(a) != pi->rank) {
            fprintf(stderr, "cukc: error: parameter '%s' is %s with %d dimension%s, but '%s' holds %s with %d\n",
                    pi->name, cuk_dtype_name(pi->dtype), pi->rank, pi->rank == 1 ? "" : "s", text,
                    cuk_dtype_name(cuk_array_dtype(a)), cuk_array_rank(a));
            cuk_array_free(a);
            *status = EXIT_RUNTIME;
            return NULL;
        }
        return a;
    }
    cuk_scalar v = {0};
    char *end = NULL;
    errno = 0;
    DType dt = (DType)pi->dtype;
    const DTypeInfo *di = &dtype_info[dt];
    Scalar x = {0};
    if (dt == DT_BOOL) {
        end = (char *)text;
        if (strcmp(text, "true") == 0) x.i = 1, end = (char *)text + 4;
        else if (strcmp(text, "false") == 0) x.i = 0, end = (char *)text + 5;
    } else if (dtype_is_complex(dt)) { /* 1.5, 1.5+2j, 1.5-2j, 2j */
        if (!dec_float(text, &end, &x.z[0])) end = NULL;
        else if ((*end == 'j' || *end == 'J') && !end[1]) x.z[1] = x.z[0], x.z[0] = 0, end++;
        else if (*end == '+' || *end == '-') {
            char *q = end;
            char saved[64];
            size_t n = strcspn(q, "jJ");
            if (n < sizeof saved && q[n] && !q[n + 1]) {
                memcpy(saved, q, n), saved[n] = 0; /* the imaginary part, without its j */
                char *e2;
                if (dec_float(saved, &e2, &x.z[1]) && !*e2) end = q + n + 1;
                else end = q;
            } else {
                end = q; /* not a complex number */
            }
        }
    } else if (di->is_float) {
        if (!dec_float(text, &end, &x.f)) end = NULL;
    } else if (di->is_signed) {
        long long y = 0;
        int bits = 8 * di->size;
        if (!dec_int(text, true, &end, &y, NULL) || (bits < 64 && (y < -(1LL << (bits - 1)) || y >= (1LL << (bits - 1)))))
            end = NULL;
        x.i = y;
    } else {
        unsigned long long y = 0;
        int bits = 8 * di->size;
        if (!dec_int(text, false, &end, NULL, &y) || (bits < 64 && y >> bits)) end = NULL;
        x.u = y;
    }
    bool ok = end && end != text && !*end;
    if (ok) {
        scalar_store(dt, x, &v); /* the value rounded to dt */
        if (di->is_float || dtype_is_complex(dt)) {
            /* a finite number that rounds to infinity in dt (1e39 as f32) is out of range */
            Scalar back = scalar_load(dt, &v);
            bool cx = dtype_is_complex(dt);
            double b0 = cx ? back.z[0] : back.f, b1 = cx ? back.z[1] : 0;
            double in0 = cx ? x.z[0] : x.f, in1 = cx ? x.z[1] : 0;
            if ((isinf(b0) && !isinf(in0)) || (isinf(b1) && !isinf(in1))) ok = false;
        }
    }
    const char *tn = cuk_dtype_name(pi->dtype);
    if (!ok) {
        const char *how = dt == DT_BOOL ? "true or false"
                          : di->is_float || dtype_is_complex(dt)
                              ? "a decimal number within its range (such as 1.5, -2e3, inf, nan; complex: 1.5-2j)"
                          : di->is_signed ? "a decimal integer within its range (such as 42 or -7)"
                                          : "a decimal integer from 0 within its range (such as 42)";
        fprintf(stderr, "cukc: error: parameter '%s' is %s, and '%s' is not a valid %s value: pass %s\n", pi->name, tn,
                text, tn, how);
        *status = EXIT_USAGE;
        return NULL;
    }
    cuk_array *a = NULL;
    if (cuk_array_scalar(&a, pi->dtype, &v) != CUK_OK) {
        fprintf(stderr, "cukc: error: %s\n", cuk_last_error());
        *status = EXIT_RUNTIME;
    }
    return a;
}

/* Prints the program API's last error: diagnostics as they are (they carry their
   location), anything else after "cukc: error: ". */
static void api_error(cuk_status s) {
    const char *m = cuk_last_error();
    if (s == CUK_ERR_COMPILE || s == CUK_ERR_RUNTIME) fprintf(stderr, "%s%s", m, m[0] && m[strlen(m) - 1] == '\n' ? "" : "\n");
    else fprintf(stderr, "cukc: error: %s\n", m);
}

static int cmd_run(int argc, char **argv) {
    const char *file = NULL, *entry = "main", *device = "auto";
    int gpu_index = -1; /* -1: $CUK_DEVICE, else 0 */
    int fast_math = 0;  /* --fast-math: FMA contraction on the GPU */
    int profile = 0;    /* --profile: time per statement, to stderr after the run */
    const char *kv[64];
    int nkv = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--gpu") == 0) {
            char *end;
            if (i + 1 >= argc) return usage_error("%s needs a device index", a);
            errno = 0;
            long g = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || errno || g < 0 || g > 1023 || argv[i][0] < '0' || argv[i][0] > '9')
                return usage_error("--gpu takes a device index such as 0, not '%s'", argv[i]);
            gpu_index = (int)g;
        } else if (strcmp(a, "--fast-math") == 0) {
            fast_math = 1;
        } else if (strcmp(a, "--profile") == 0) {
            profile = 1;
        } else if (strcmp(a, "--device") == 0 || strcmp(a, "--entry") == 0) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            if (a[2] == 'd') device = argv[++i];
            else entry = argv[++i];
        } else if (strncmp(a, "--device=", 9) == 0) {
            device = a + 9;
        } else if (strncmp(a, "--entry=", 8) == 0) {
            entry = a + 8;
        } else if (a[0] == '-' && a[1] == '-') {
            return usage_error("unknown option '%s'", a);
        } else if (!file) {
            file = a;
        } else if (strchr(a, '=')) {
            if (nkv == 64) return usage_error("too many arguments%s", "");
            kv[nkv++] = a;
        } else {
            return usage_error("unexpected argument '%s' (parameters are passed as name=value)", a);
        }
    }
    if (!file) return usage_error("run needs a file%s", "");
    cuk_program_opts o = {0};
    o.fast_math = fast_math;
    o.profile = profile;
    if (!strcmp(device, "auto")) o.backend = CUK_BACKEND_AUTO;
    else if (!strcmp(device, "gpu")) o.backend = CUK_BACKEND_GPU;
    else if (!strcmp(device, "cpu")) o.backend = CUK_BACKEND_CPU;
    else return usage_error("--device must be auto, gpu or cpu, not '%s'", device);
    if (o.backend != CUK_BACKEND_CPU) {
        int ok = 0;
        cuk_gpu_available(&ok);
        if (ok && cuk_device_select(gpu_index) != CUK_OK) {
            fprintf(stderr, "cukc: error: %s\n", cuk_last_error());
            return EXIT_RUNTIME;
        }
        if (!ok && o.backend == CUK_BACKEND_AUTO && !getenv("CUK_QUIET"))
            fprintf(stderr, "cukc: note: no usable GPU (%s); running on the CPU backend\n", cuk_last_error());
    }
    cuk_program *p = NULL;
    cuk_status s = cuk_program_compile(&p, file, &o);
    if (s) {
        api_error(s);
        /* the library's message names no flag: here the user can pass one */
        if (o.backend == CUK_BACKEND_GPU && (s == CUK_ERR_NO_DRIVER || s == CUK_ERR_NO_DEVICE))
            fprintf(stderr, "cukc: note: --device cpu runs it on the CPU backend\n");
        return s == CUK_ERR_COMPILE ? EXIT_COMPILE : EXIT_RUNTIME;
    }
    int st = EXIT_OK;
    cuk_fn *fn = NULL;
    if (cuk_program_function(p, entry, &fn) != CUK_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", cuk_last_error());
        if (cuk_program_generic(p, entry, NULL, 0) != CUK_ERR_NOT_FOUND) /* generic: the library says what to do */
            fprintf(stderr, "cukc: error: %s: %s\n", file, why);
        else
            fprintf(stderr, "cukc: error: %s has no function '%s'%s\n", file, entry,
                    strcmp(entry, "main") == 0 ? "; add fn main() { ... } or pick one with --entry NAME" : "");
        cuk_program_free(p);
        return EXIT_USAGE;
    }
    int np = cuk_fn_nparams(fn);
    cuk_array *args[64] = {0};
    cuk_param_info pi[64];
    if (np > 64) st = usage_error("too many parameters%s", "");
    for (int j = 0; j < np && !st; j++) cuk_fn_param(fn, j, &pi[j]);
    for (int i = 0; i < nkv && !st; i++) {
        const char *eq = strchr(kv[i], '=');
        int k = -1;
        for (int j = 0; j < np; j++)
            if (strlen(pi[j].name) == (size_t)(eq - kv[i]) && strncmp(pi[j].name, kv[i], (size_t)(eq - kv[i])) == 0) k = j;
        if (k < 0) {
            fprintf(stderr, "cukc: error: %s() has no parameter '%.*s'\n", entry, (int)(eq - kv[i]), kv[i]);
            st = EXIT_USAGE;
        } else if (args[k]) {
            fprintf(stderr, "cukc: error: parameter '%s' given twice\n", pi[k].name);
            st = EXIT_USAGE;
        } else {
            args[k] = parse_arg(&pi[k], eq + 1, &st);
        }
    }
    for (int j = 0; j < np && !st; j++)
        if (!args[j]) {
            fprintf(stderr, "cukc: error: %s() needs parameter '%s' (%s%s): pass %s=VALUE\n", entry, pi[j].name,
                    cuk_dtype_name(pi[j].dtype), pi[j].rank ? " array, from a .npy file" : "", pi[j].name);
            st = EXIT_USAGE;
        }
    if (!st) {
        /* one output per result; several results print one per line, in order */
        cuk_array *result[16] = {NULL};
        int nr = cuk_fn_nresults(fn);
        if (nr < 1) nr = 1;
        s = nr <= 16 ? cuk_fn_call_n(fn, args, np, result, nr) : CUK_ERR_INVALID;
        /* a fault in the last kernels is reported here, not lost at exit */
        if (!s && cuk_program_backend(p) == CUK_BACKEND_GPU && cuk_synchronize() != CUK_OK) s = CUK_ERR_RUNTIME;
        for (int k = 0; k < nr && !s; k++)
            if (result[k]) s = cuk_array_print(result[k], stdout);
        fflush(stdout);
        if (s) {
            api_error(s);
            st = EXIT_RUNTIME;
        }
        for (int k = 0; k < 16; k++) cuk_array_free(result[k]);
    }
    for (int j = 0; j < 64; j++) cuk_array_free(args[j]);
    fflush(stdout);
    if (profile) cuk_program_profile_print(p, stderr);
    cuk_program_free(p);
    return st;
}

static int cmd_compile(const char *cmd, int argc, char **argv) {
    bool dot = false;
    if (!strcmp(cmd, "emit-ir") && argc == 2 && (!strcmp(argv[0], "--dot") || !strcmp(argv[1], "--dot"))) {
        dot = true;
        if (!strcmp(argv[0], "--dot")) argv++;
        argc = 1;
    }
    if (argc != 1) return usage_error("%s takes one file", cmd);
    Stage upto = !strcmp(cmd, "dump-ast") ? STAGE_PARSE : !strcmp(cmd, "check") ? STAGE_CHECK : STAGE_PLAN;
    Arena a;
    Diag d;
    Compiled c;
    int st = compile_file(&c, &a, &d, argv[0], upto);
    if (!st) {
        if (!strcmp(cmd, "dump-ast")) {
            ast_dump(stdout, c.ast);
        } else if (!strcmp(cmd, "emit-ir") && dot) {
            planset_print_dot(stdout, c.plans);
        } else if (!strcmp(cmd, "emit-ir")) {
            ir_print(stdout, c.prog);
            planset_print(stdout, c.plans);
        } else if (!strcmp(cmd, "emit-cuda")) {
            const char *cuda = pipeline_cuda_program(&c);
            if (cuda) fputs(cuda, stdout);
            else st = EXIT_COMPILE;
        }
    }
    arena_free(&a);
    return st;
}

/* cukc graph F -o OUT: the plans' Graphviz graph drawn by dot, in the format OUT's
   extension names (svg, png or pdf). */
static int cmd_graph(int argc, char **argv) {
    const char *file = NULL, *outp = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) outp = argv[++i];
        else if (argv[i][0] == '-') return usage_error("graph: unknown option '%s'", argv[i]);
        else if (!file) file = argv[i];
        else return usage_error("graph takes one file, then -o OUT (another: '%s')", argv[i]);
    }
    if (!file || !outp) return usage_error("graph needs a file and -o OUT.svg (or .png, .pdf)%s", "");
    const char *ext = strrchr(outp, '.');
    if (!ext || (strcmp(ext, ".svg") && strcmp(ext, ".png") && strcmp(ext, ".pdf")))
        return usage_error("graph: -o names the format by its extension: .svg, .png or .pdf, not '%s'", outp);
    Arena a;
    Diag d;
    Compiled c;
    int st = compile_file(&c, &a, &d, file, STAGE_PLAN);
    if (st) {
        arena_free(&a);
        return st;
    }
    char tmpl[] = "/tmp/cukc-graph-XXXXXX";
    int fd = mkstemp(tmpl);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        arena_free(&a);
        fprintf(stderr, "cukc: error: cannot write a temporary file for dot: %s\n", strerror(errno));
        return EXIT_RUNTIME;
    }
    planset_print_dot(f, c.plans);
    fclose(f);
    arena_free(&a);
    char fmt[8];
    snprintf(fmt, sizeof fmt, "-T%s", ext + 1);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("dot", "dot", fmt, tmpl, "-o", outp, (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    bool ok = pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws);
    int rc = ok ? WEXITSTATUS(ws) : -1;
    unlink(tmpl);
    if (rc == 127) {
        fprintf(stderr, "cukc: error: graph needs Graphviz's dot on the PATH (apt-get install graphviz); "
                        "`cukc emit-ir --dot %s` prints the graph itself\n", file);
        return EXIT_RUNTIME;
    }
    if (rc != 0) {
        fprintf(stderr, "cukc: error: dot could not write %s (exit %d)\n", outp, rc);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* Compiles every kernel with NVRTC (no GPU needed) and prints the PTX. */
static int cmd_emit_ptx(int argc, char **argv) {
    const char *file = NULL, *arch = "sm_90";
    bool fast = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--fast-math") == 0) {
            fast = true;
        } else if (strcmp(argv[i], "--arch") == 0) {
            if (i + 1 >= argc) return usage_error("%s needs a value such as sm_90", argv[i]);
            arch = argv[++i];
        } else if (strncmp(argv[i], "--arch=", 7) == 0) {
            arch = argv[i] + 7;
        } else if (argv[i][0] == '-') {
            return usage_error("unknown option '%s'", argv[i]);
        } else if (!file) {
            file = argv[i];
        } else {
            return usage_error("emit-ptx takes one file, not also '%s'", argv[i]);
        }
    }
    if (!file) return usage_error("emit-ptx needs a file%s", "");
    if (strncmp(arch, "sm_", 3) != 0 && strncmp(arch, "compute_", 8) != 0)
        return usage_error("--arch takes a name like sm_90 or compute_90, not '%s'", arch);
    Arena a;
    Diag d;
    Compiled c;
    int st = compile_file(&c, &a, &d, file, STAGE_PLAN);
    const char *src = st ? NULL : pipeline_cuda_program(&c);
    if (!st && !src) st = EXIT_COMPILE;
    if (!st) {
        cuk_compile_opts o = {0};
        static const char *precise[] = {"--fmad=false"}, *fastopt[] = {"--fmad=true"}; /* as the GPU backend */
        o.options = fast ? fastopt : precise;
        o.noptions = 1;
        o.arch = arch;
        o.kind = CUK_IMAGE_PTX;
        o.program_name = file;
        cuk_image *im = NULL;
        if (cuk_compile(src, &o, &im) != CUK_OK) {
            fprintf(stderr, "cukc: error: compiling the kernels of %s for %s failed: %s\n", file, arch, cuk_last_error());
            st = EXIT_RUNTIME;
        } else {
            const void *data;
            size_t size;
            cuk_image_data(im, &data, &size);
            fputs((const char *)data, stdout);
            cuk_image_free(im);
        }
    }
    arena_free(&a);
    return st;
}

static int cmd_build(int argc, char **argv) {
    const char *file = NULL, *out = NULL, *archs = "sm_80,sm_90";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--arch")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", argv[i]);
            if (argv[i][1] == 'o') out = argv[++i];
            else archs = argv[++i];
        } else if (!strncmp(argv[i], "--arch=", 7)) {
            archs = argv[i] + 7;
        } else if (argv[i][0] == '-') {
            return usage_error("unknown option '%s'", argv[i]);
        } else if (!file) {
            file = argv[i];
        } else {
            return usage_error("build takes one file, not also '%s'", argv[i]);
        }
    }
    if (!file || !out) return usage_error("usage: cukc build F.cuk -o B.cukb [--arch sm_80,sm_90,compute_90]%s", "");
    cuk_status s = cuk_program_build(file, out, archs);
    if (s == CUK_ERR_INVALID && bundle_is(file)) {
        fprintf(stderr, "cukc: error: %s\n", cuk_last_error());
        return EXIT_USAGE;
    }
    if (s) api_error(s);
    return !s ? EXIT_OK : s == CUK_ERR_COMPILE ? EXIT_COMPILE : EXIT_RUNTIME;
}

static int cmd_inspect(int argc, char **argv) {
    if (argc != 1) return usage_error("usage: cukc inspect B.cukb%s", "");
    Arena a;
    arena_init(&a);
    Bundle b;
    char err[1024];
    int st = EXIT_OK;
    if (!bundle_read(&a, argv[0], &b, err, sizeof err)) {
        fprintf(stderr, "cukc: error: %s\n", err);
        st = EXIT_RUNTIME;
    } else {
        bundle_print(stdout, &b);
    }
    arena_free(&a);
    return st;
}

static int cmd_cache(int argc, char **argv) {
    if (argc != 1 || (strcmp(argv[0], "stats") && strcmp(argv[0], "clear")))
        return usage_error("usage: cukc cache stats|clear%s", "");
    if (!strcmp(argv[0], "clear")) {
        if (cuk_cache_clear() != CUK_OK) {
            fprintf(stderr, "cukc: error: %s\n", cuk_last_error());
            return EXIT_RUNTIME;
        }
        return EXIT_OK;
    }
    cuk_cache_stats s;
    if (cuk_cache_stats_get(&s) != CUK_OK) {
        fprintf(stderr, "cukc: error: %s\n", cuk_last_error());
        return EXIT_RUNTIME;
    }
    printf("directory: %s\nentries: %llu\nbytes: %llu\nmax bytes: %llu\n", s.dir, s.entries, s.bytes, s.max_bytes);
    if (s.tmp_files)
        printf("temporary files: %llu (%llu bytes; an hour old ones are killed writers', deleted at the next write "
               "or 'cukc cache clear')\n", s.tmp_files, s.tmp_bytes);
    if (s.disk_off[0]) printf("disk cache: off: %s\n", s.disk_off);
    return EXIT_OK;
}

int main(int argc, char **argv) {
    gpu_timing_start();
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("cukc %s\n", CUK_VERSION);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "check") || !strcmp(cmd, "emit-ir") || !strcmp(cmd, "dump-ast") || !strcmp(cmd, "emit-cuda"))
        return cmd_compile(cmd, argc - 2, argv + 2);
    if (!strcmp(cmd, "emit-ptx")) return cmd_emit_ptx(argc - 2, argv + 2);
    if (!strcmp(cmd, "graph")) return cmd_graph(argc - 2, argv + 2);
    if (!strcmp(cmd, "cache")) return cmd_cache(argc - 2, argv + 2);
    if (!strcmp(cmd, "build")) return cmd_build(argc - 2, argv + 2);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
    return usage_error("unknown command '%s'", cmd);
}
