/* libFuzzer target for the .npy reader (npy_load_mem): any bytes must give an array or a
   clear error; an array that loads must print, save and load back to the same bytes. */
#include <string.h>

#include "exec/exec.h"
#include "fuzz_common.h"

static MemFile out;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    memfile_open(&out, "fuzz_npy_out");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    err[0] = 0;
    Arr *a = npy_load_mem(data, size, err, sizeof err);
    if (!a) {
        /* A failure must say why, as one NUL-terminated line. */
        if (!err[0] || !memchr(err, 0, sizeof err)) abort();
        return 0;
    }
    if (a->rank < 0 || a->rank > MAXRANK || a->size < 0 || a->dt < 0 || a->dt >= DT_COUNT) abort();
    int64_t n = 1;
    for (int k = 0; k < a->rank; k++) {
        if (a->shape[k] < 0) abort();
        n *= a->shape[k];
    }
    if (n != a->size) abort();
    arr_print(devnull(), a);
    /* Round trip: what we write, we read back identically. */
    if (!npy_save(out.path, a, err, sizeof err)) abort();
    Arr *b = npy_load(out.path, err, sizeof err);
    if (!b) {
        fprintf(stderr, "fuzz_npy: reloading a saved array failed: %s\n", err);
        abort();
    }
    if (b->dt != a->dt || b->rank != a->rank || b->size != a->size ||
        memcmp(b->shape, a->shape, sizeof a->shape[0] * (size_t)a->rank) != 0 ||
        memcmp(b->data, a->data, (size_t)a->size * (size_t)dtype_info[a->dt].size) != 0)
        abort();
    arr_release(b);
    arr_release(a);
    return 0;
}
