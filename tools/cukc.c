/* cukc: the command-line driver (check, emit-ir, emit-cuda, emit-ptx, run, ...). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/bundle.h"
#include "exec/exec.h"
#include "exec/gpu/gpu.h"
#include "compiler/ir.h"
#include "compiler/kernel.h"
#include "runtime/cuk.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/diag.h"

enum { EXIT_OK = 0, EXIT_COMPILE = 1, EXIT_USAGE = 2, EXIT_RUNTIME = 3 };

static const char *usage_text =
    "usage: cukc COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  check F                       parse and type-check F\n"
    "  emit-ir F                     print the IR (and the kernels it fuses into)\n"
    "  emit-cuda F                   print the CUDA C of every kernel\n"
    "  emit-ptx F [--arch sm_90]     compile the kernels with NVRTC and print PTX\n"
    "  build F -o B.cukb [--arch sm_80,sm_90,compute_90]\n"
    "                                compile ahead of time into a bundle\n"
    "  inspect B.cukb                list a bundle's kernels, archs and entry points\n"
    "  cache stats|clear             the kernel cache on disk\n"
    "  run F|B [--device auto|gpu|cpu] [--gpu N] [--entry NAME] [name=value ...]\n"
    "                                run main (or NAME); values are numbers, true/false\n"
    "                                or .npy files\n"
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

typedef struct Compiled {
    Arena arena;
    Diag diag;
    Src src;
    Node *ast;
    Program *prog;
    Bundle *bundle; /* when the program came from a .cukb */
} Compiled;

/* Parses and type-checks path (a .cuk file, or a bundle whose program is used).
   Returns an exit status. */
static int compile_file(Compiled *c, const char *path, bool sema) {
    arena_init(&c->arena);
    diag_init(&c->diag, stderr);
    c->bundle = NULL;
    if (bundle_is(path)) {
        char err[1024];
        Bundle *b = NEW(&c->arena, Bundle);
        if (!bundle_read(&c->arena, path, b, err, sizeof err)) {
            fprintf(stderr, "cukc: error: %s\n", err);
            return EXIT_RUNTIME;
        }
        c->bundle = b;
        src_from_string(&c->arena, b->source_path, b->source, &c->src);
    } else if (!src_load(&c->arena, &c->diag, path, &c->src)) {
        return EXIT_COMPILE;
    }
    if (!sema) {
        c->ast = parse_program(&c->arena, &c->diag, &c->src);
        return c->diag.errors ? EXIT_COMPILE : EXIT_OK;
    }
    c->prog = compile_src(&c->arena, &c->diag, &c->src, &c->ast);
    return c->prog ? EXIT_OK : EXIT_COMPILE;
}

static void compiled_free(Compiled *c) { arena_free(&c->arena); }

/* Parses one command-line value for parameter slot k of fn. */
static Arr *parse_arg(const Fn *fn, int k, const char *text, int *status) {
    const Slot *s = &fn->slots[k];
    if (s->rank > 0) {
        char err[512];
        Arr *a = npy_load(text, err, sizeof err);
        if (!a) {
            fprintf(stderr, "cukc: error: parameter '%s': %s\n", s->name, err);
            *status = EXIT_RUNTIME;
            return NULL;
        }
        if (a->dt != s->dt || a->rank != s->rank) {
            fprintf(stderr, "cukc: error: parameter '%s' is %s with %d dimension%s, but '%s' holds %s with %d\n", s->name,
                    dtype_info[s->dt].name, s->rank, s->rank == 1 ? "" : "s", text, dtype_info[a->dt].name, a->rank);
            arr_release(a);
            *status = EXIT_RUNTIME;
            return NULL;
        }
        return a;
    }
    Scalar v = {0};
    char *end = NULL;
    errno = 0;
    if (s->dt == DT_BOOL) {
        end = (char *)text;
        if (strcmp(text, "true") == 0) v.i = 1, end = (char *)text + 4;
        else if (strcmp(text, "false") == 0) v.i = 0, end = (char *)text + 5;
    } else if (dtype_info[s->dt].is_float) {
        v.f = strtod(text, &end);
    } else if (dtype_info[s->dt].is_signed) {
        long long x = strtoll(text, &end, 0);
        v.i = x;
        if (s->dt == DT_I32 && (x < INT32_MIN || x > INT32_MAX)) errno = ERANGE;
    } else {
        if (text[0] == '-') errno = ERANGE;
        unsigned long long x = strtoull(text, &end, 0);
        v.u = x;
        if (s->dt == DT_U32 && x > UINT32_MAX) errno = ERANGE;
    }
    if (!end || end == text || *end || errno) {
        fprintf(stderr, "cukc: error: parameter '%s' is %s, and '%s' is not a valid %s value\n", s->name,
                dtype_info[s->dt].name, text, dtype_info[s->dt].name);
        *status = EXIT_USAGE;
        return NULL;
    }
    Arr *a = arr_scalar(s->dt, v);
    if (!a) {
        fprintf(stderr, "cukc: error: out of memory\n");
        *status = EXIT_RUNTIME;
    }
    return a;
}

static int cmd_run(int argc, char **argv) {
    const char *file = NULL, *entry = "main", *device = "auto";
    int gpu_index = -1; /* -1: $CUK_DEVICE, else 0 */
    const char *kv[64];
    int nkv = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--gpu") == 0) {
            char *end;
            if (i + 1 >= argc) return usage_error("%s needs a device index", a);
            gpu_index = (int)strtol(argv[++i], &end, 10);
            if (*end || gpu_index < 0) return usage_error("--gpu takes a device index such as 0, not '%s'", argv[i]);
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
    if (strcmp(device, "auto") && strcmp(device, "cpu") && strcmp(device, "gpu"))
        return usage_error("--device must be auto, gpu or cpu, not '%s'", device);
    Compiled c;
    int st = compile_file(&c, file, true);
    if (st) return compiled_free(&c), st;
    Fn *fn = program_find(c.prog, entry);
    if (!fn) {
        fprintf(stderr, "cukc: error: %s has no function '%s'%s\n", file, entry,
                strcmp(entry, "main") == 0 ? "; add fn main() { ... } or pick one with --entry NAME" : "");
        compiled_free(&c);
        return EXIT_USAGE;
    }
    Arr *args[64] = {0};
    if (fn->nparams > 64) {
        compiled_free(&c);
        return usage_error("too many parameters%s", "");
    }
    for (int i = 0; i < nkv && !st; i++) {
        const char *eq = strchr(kv[i], '=');
        int k = -1;
        for (int j = 0; j < fn->nparams; j++)
            if (strlen(fn->slots[j].name) == (size_t)(eq - kv[i]) && strncmp(fn->slots[j].name, kv[i], (size_t)(eq - kv[i])) == 0)
                k = j;
        if (k < 0) {
            fprintf(stderr, "cukc: error: %s() has no parameter '%.*s'\n", fn->name, (int)(eq - kv[i]), kv[i]);
            st = EXIT_USAGE;
        } else if (args[k]) {
            fprintf(stderr, "cukc: error: parameter '%s' given twice\n", fn->slots[k].name);
            st = EXIT_USAGE;
        } else {
            args[k] = parse_arg(fn, k, eq + 1, &st);
        }
    }
    for (int j = 0; j < fn->nparams && !st; j++)
        if (!args[j]) {
            fprintf(stderr, "cukc: error: %s() needs parameter '%s' (%s%s): pass %s=VALUE\n", fn->name, fn->slots[j].name,
                    dtype_info[fn->slots[j].dt].name, fn->slots[j].rank ? " array, from a .npy file" : "", fn->slots[j].name);
            st = EXIT_USAGE;
        }
    if (!st) {
        bool gpu = false;
        if (strcmp(device, "cpu") != 0) {
            int ok = 0;
            cuk_gpu_available(&ok);
            if (ok && cuk_device_select(gpu_index) != CUK_OK) {
                fprintf(stderr, "cukc: error: %s\n", cuk_last_error());
                st = EXIT_RUNTIME;
            } else if (ok) {
                gpu = true;
            } else if (strcmp(device, "gpu") == 0) {
                fprintf(stderr, "cukc: error: --device gpu: %s\n", cuk_last_error());
                st = EXIT_RUNTIME;
            } else if (!getenv("CUK_QUIET")) {
                fprintf(stderr, "cukc: note: no usable GPU (%s); running on the CPU backend\n", cuk_last_error());
            }
        }
        if (!st) {
            RtErr err = {0};
            Arr *result = NULL;
            bool ran = gpu ? gpu_run_bundle(c.prog, c.bundle, fn, args, &result, stdout, &err)
                           : cpu_run(c.prog, fn, args, &result, stdout, &err);
            if (!ran) {
                fflush(stdout);
                rt_report(&err, &c.diag);
                st = EXIT_RUNTIME;
            } else if (result) {
                arr_print(stdout, result);
            }
            if (result) arr_release(result);
        }
    }
    for (int j = 0; j < 64; j++)
        if (args[j]) arr_release(args[j]);
    compiled_free(&c);
    fflush(stdout);
    return st;
}

static int cmd_compile(const char *cmd, int argc, char **argv) {
    if (argc != 1) return usage_error("%s takes one file", cmd);
    Compiled c;
    int st = compile_file(&c, argv[0], strcmp(cmd, "dump-ast") != 0);
    if (!st) {
        if (!strcmp(cmd, "dump-ast")) {
            ast_dump(stdout, c.ast);
        } else if (!strcmp(cmd, "emit-ir")) {
            PlanSet *ps = fuse_program(&c.arena, c.prog);
            ir_print(stdout, c.prog);
            planset_print(stdout, ps);
        } else if (!strcmp(cmd, "emit-cuda")) {
            PlanSet *ps = fuse_program(&c.arena, c.prog);
            fputs(emit_cuda_program(&c.arena, c.prog, ps), stdout);
        }
    }
    compiled_free(&c);
    return st;
}

/* Compiles every kernel with NVRTC (no GPU needed) and prints the PTX. */
static int cmd_emit_ptx(int argc, char **argv) {
    const char *file = NULL, *arch = "sm_90";
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--arch") == 0) {
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
    Compiled c;
    int st = compile_file(&c, file, true);
    if (!st) {
        PlanSet *ps = fuse_program(&c.arena, c.prog);
        const char *src = emit_cuda_program(&c.arena, c.prog, ps);
        cuk_compile_opts o = {0};
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
    compiled_free(&c);
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
    Compiled c;
    int st = compile_file(&c, file, true);
    if (!st && c.bundle) {
        fprintf(stderr, "cukc: error: %s is already a bundle\n", file);
        st = EXIT_USAGE;
    }
    if (!st) {
        char err[2048];
        if (!bundle_write(out, file, c.src.text, c.prog, archs, err, sizeof err)) {
            fprintf(stderr, "cukc: error: %s\n", err);
            st = EXIT_RUNTIME;
        }
    }
    compiled_free(&c);
    return st;
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
    printf("directory: %s\nentries: %llu\nbytes: %llu\n", s.dir, s.entries, s.bytes);
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
    if (!strcmp(cmd, "cache")) return cmd_cache(argc - 2, argv + 2);
    if (!strcmp(cmd, "build")) return cmd_build(argc - 2, argv + 2);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
    return usage_error("unknown command '%s'", cmd);
}
