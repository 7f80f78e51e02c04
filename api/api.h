/* What the files of api/ share: the array object, and the helpers that make arrays
   from what the backends return. Not installed; the public API is cuk_program.h. */
#ifndef CUK_API_INTERNAL_H
#define CUK_API_INTERNAL_H
#include "api/cuk_program.h"
#include "exec/exec.h"
#include "runtime/internal.h"

struct cuk_array_s {
    cuk_dtype dt;
    int rank;
    int64_t shape[CUK_MAX_RANK];
    int64_t size;
    cuk_place place;
    Arr *arr;       /* host: the storage (our own Arr, or a shell around wrapped memory) */
    bool wrapped;   /* host: arr->data belongs to the caller; free only the shell */
    cuk_devptr dev; /* device */
    bool owns_dev;  /* device: from the pool, freed with the array */
};

/* Validates dtype and shape and allocates an array with no storage yet. */
cuk_status array_head(cuk_array **out, cuk_dtype dt, int rank, const int64_t *shape);
/* Storage for an array made by array_head: zeroed host memory, or a pool block. */
cuk_status host_storage(cuk_array *a);
cuk_status device_storage(cuk_array *a);
/* Wraps an Arr the CPU backend produced (takes the reference). */
cuk_status array_from_arr(cuk_array **out, Arr *r);

#endif
