/* The program API from C: compile a .cuk program from a string, call a function on host
   arrays, read the result, and show a compile error's location. Runs on the GPU when
   one is usable, else on the CPU backend. */
#include <stdio.h>
#include <stdlib.h>

#include "cuk_program.h"

#define TRY(call)                                                                                  \
    do {                                                                                           \
        if ((call) != CUK_OK) {                                                                    \
            fprintf(stderr, "error: %s\n", cuk_last_error());                                      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static const char *src =
    "fn saxpy(a: f32, x: f32[n], y: f32[n]) -> f32[n] {\n"
    "    return a * x + y;\n"
    "}\n"
    "fn rms(x: f32[n]) -> f32 = sqrt(sum(x * x) / f32(n));\n";

int main(void) {
    cuk_program *p;
    TRY(cuk_program_compile(&p, src, NULL));
    printf("backend: %s\n", cuk_program_backend(p) == CUK_BACKEND_GPU ? "gpu" : "cpu");

    enum { N = 8 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 0.5f;
    int64_t shape[1] = {N};
    float a = 2.0f;
    cuk_array *args[3];
    TRY(cuk_array_scalar(&args[0], CUK_F32, &a));
    TRY(cuk_array_from_host(&args[1], CUK_F32, 1, shape, x, CUK_ON_HOST));
    TRY(cuk_array_wrap_host(&args[2], CUK_F32, 1, shape, y)); /* no copy */

    cuk_array *z;
    TRY(cuk_program_call(p, "saxpy", args, 3, &z));
    float out[N];
    TRY(cuk_array_to_host(z, out, sizeof out));
    printf("saxpy:");
    for (int i = 0; i < N; i++) printf(" %g", out[i]);
    printf("\n");

    /* Look a function up once, call it many times. */
    cuk_fn *rms;
    TRY(cuk_program_function(p, "rms", &rms));
    cuk_array *r;
    TRY(cuk_fn_call(rms, &z, 1, &r));
    printf("rms: %.6f\n", *(const float *)cuk_array_host_data(r));

    /* A mismatch names the parameter. */
    int64_t short_shape[1] = {N - 1};
    cuk_array *bad;
    TRY(cuk_array_wrap_host(&bad, CUK_F32, 1, short_shape, y));
    cuk_array *wrong[3] = {args[0], args[1], bad};
    if (cuk_program_call(p, "saxpy", wrong, 3, NULL) == CUK_ERR_INVALID)
        printf("mismatch: %s\n", cuk_last_error());

    for (int i = 0; i < 3; i++) cuk_array_free(args[i]);
    cuk_array_free(bad);
    cuk_array_free(z);
    cuk_array_free(r);
    cuk_program_free(p);

    /* A compile error: the whole diagnostic, and its parts. */
    cuk_program_opts o = {.backend = CUK_BACKEND_CPU, .name = "bad.cuk"};
    if (cuk_program_compile(&p, "fn f(x: f32) -> f32 = x + y;\n", &o) == CUK_ERR_COMPILE) {
        cuk_error_info e;
        cuk_program_error(&e);
        printf("compile error at %s:%d:%d: %s\n", e.file, e.line, e.col, e.message);
        printf("%s", cuk_last_error());
    }
    return 0;
}
