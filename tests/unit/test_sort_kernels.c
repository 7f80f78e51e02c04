/* The GPU sort module (kernels/sort.cuh through exec/gpu/sort.c's source) compiles with
   NVRTC to an sm_90 cubin for every element type, with every kernel the host launches;
   no GPU needed (ptxas also checks the tiles fit the static shared memory). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/gpu/sort.h"

static int failures;

int main(void) {
    static const char *const kernels[] = {"sort_hist",   "sort_bins",   "sort_pass_f",   "sort_pass_m",
                                          "sort_pass_l", "sort_pass_fl", "sort_pass_pf", "sort_pass_pm",
                                          "sort_pass_pl", "sort_pass_pfl", "sort_rows_k", "sort_rows_b",
                                          "sort_rows_p", "sort_gather", "sort_search", "topk_sample",
                                          "topk_filter_x", "topk_filter_b", "topk_final", "topk_take",
                                          "search_build", "sort_take", "sort_pass_vf", "sort_pass_vl",
                                          "sort_pass_vfl", "uniq_insert", "uniq_pack"};
    /* 8-byte values travel through the passes of 8-byte keys only */
    static const char *const wide[] = {"sort_pass_wf", "sort_pass_wm", "sort_pass_wl", "sort_pass_wfl"};
    for (int dt = 0; dt < DT_COUNT; dt++) {
        char *src = gpu_sort_source((DType)dt);
        if (!src) {
            fprintf(stderr, "test_sort_kernels: no source for %s\n", dtype_info[dt].name);
            return 1;
        }
        cuk_compile_opts o = {.arch = "sm_90", .kind = CUK_IMAGE_CUBIN, .no_disk_cache = 1};
        cuk_image *im = NULL;
        cuk_status st = cuk_compile(src, &o, &im);
        free(src);
        if (st == CUK_ERR_NO_NVRTC) {
            printf("test_sort_kernels: NVRTC not found, compile skipped\n");
            return 0;
        }
        if (st != CUK_OK) {
            fprintf(stderr, "test_sort_kernels: %s: %s\n", dtype_info[dt].name, cuk_last_error());
            failures++;
            continue;
        }
        const void *data;
        size_t size;
        cuk_image_data(im, &data, &size);
        for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
            /* the name and its NUL, as the cubin's string table holds it */
            if (!memmem(data, size, kernels[k], strlen(kernels[k]) + 1)) {
                fprintf(stderr, "test_sort_kernels: %s: kernel %s missing\n", dtype_info[dt].name, kernels[k]);
                failures++;
            }
        }
        for (size_t k = 0; dtype_info[dt].size == 8 && k < sizeof wide / sizeof wide[0]; k++)
            if (!memmem(data, size, wide[k], strlen(wide[k]) + 1)) {
                fprintf(stderr, "test_sort_kernels: %s: kernel %s missing\n", dtype_info[dt].name, wide[k]);
                failures++;
            }
        cuk_image_free(im);
    }
    printf("test_sort_kernels: %d element types, %s\n", DT_COUNT, failures ? "FAILED" : "ok");
    return failures != 0;
}
