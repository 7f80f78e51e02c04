/* Arrays of the program API (cuk_program.h): dtypes, host and device arrays, copies,
   and .npy files and printing as the language's load, save and print do them. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

/* cuk_dtype mirrors the IR's DType, so the two convert by a cast. */
_Static_assert((int)CUK_BOOL == DT_BOOL && (int)CUK_I32 == DT_I32 && (int)CUK_I64 == DT_I64 &&
                   (int)CUK_U32 == DT_U32 && (int)CUK_U64 == DT_U64 && (int)CUK_F32 == DT_F32 &&
                   (int)CUK_F64 == DT_F64 && (int)CUK_I8 == DT_I8 && (int)CUK_I16 == DT_I16 &&
                   (int)CUK_U8 == DT_U8 && (int)CUK_U16 == DT_U16 && (int)CUK_F16 == DT_F16 &&
                   (int)CUK_BF16 == DT_BF16 && (int)CUK_C64 == DT_C64 && (int)CUK_C128 == DT_C128 &&
                   CUK_DTYPE_COUNT == DT_COUNT && CUK_MAX_RANK == MAXRANK,
               "cuk_dtype must mirror DType");

cuk_status cuk_scalar_convert(const cuk_scalar *in, cuk_dtype from, cuk_scalar *out, cuk_dtype to) {
    if (!in || !out) return err_set(CUK_ERR_INVALID, "cuk_scalar_convert: NULL argument");
    if ((unsigned)from >= CUK_DTYPE_COUNT || (unsigned)to >= CUK_DTYPE_COUNT)
        return err_set(CUK_ERR_INVALID, "cuk_scalar_convert: bad dtype (%d to %d)", (int)from, (int)to);
    cuk_scalar r;
    memset(&r, 0, sizeof r);
    scalar_store((DType)to, scalar_cast(scalar_load((DType)from, in), (DType)from, (DType)to), &r);
    *out = r;
    return CUK_OK;
}

const char *cuk_dtype_name(cuk_dtype dt) {
    return (unsigned)dt < CUK_DTYPE_COUNT ? dtype_info[dt].name : NULL;
}
size_t cuk_dtype_size(cuk_dtype dt) {
    return (unsigned)dt < CUK_DTYPE_COUNT ? (size_t)dtype_info[dt].size : 0;
}

cuk_status cuk_dtype_from_name(const char *name, cuk_dtype *dt) {
    static const struct {
        const char *name;
        cuk_dtype dt;
    } alias[] = {{"bool", CUK_BOOL},     {"int32", CUK_I32},   {"int64", CUK_I64},
                 {"uint32", CUK_U32},    {"uint64", CUK_U64},  {"float32", CUK_F32},
                 {"float64", CUK_F64},   {"float", CUK_F64},   {"int", CUK_I64},
                 {"int8", CUK_I8},       {"int16", CUK_I16},   {"uint8", CUK_U8},
                 {"uint16", CUK_U16},    {"float16", CUK_F16}, {"half", CUK_F16},
                 {"bfloat16", CUK_BF16}, {"complex64", CUK_C64}, {"complex128", CUK_C128},
                 {"complex", CUK_C128}};
    if (!name || !dt) return err_set(CUK_ERR_INVALID, "cuk_dtype_from_name: NULL argument");
    DType d;
    if (dtype_from_name(name, &d)) {
        *dt = (cuk_dtype)d;
        return CUK_OK;
    }
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(alias[i].name, name) == 0) {
            *dt = alias[i].dt;
            return CUK_OK;
        }
    return err_set(CUK_ERR_INVALID, "unknown dtype '%s': cuk has %s", name, dtype_names());
}

/* Validates dtype and shape and fills the header of a new array. */
cuk_status array_head(cuk_array **out, cuk_dtype dt, int rank, const int64_t *shape) {
    if (!out) return err_set(CUK_ERR_INVALID, "cuk_array: NULL result pointer");
    *out = NULL;
    if ((unsigned)dt >= CUK_DTYPE_COUNT) return err_set(CUK_ERR_INVALID, "cuk_array: bad dtype %d", (int)dt);
    if (rank < 0 || rank > CUK_MAX_RANK)
        return err_set(CUK_ERR_INVALID, "cuk_array: rank %d is outside 0..%d", rank, CUK_MAX_RANK);
    if (rank && !shape) return err_set(CUK_ERR_INVALID, "cuk_array: NULL shape for rank %d", rank);
    uint64_t size = 1;
    for (int k = 0; k < rank; k++) {
        if (shape[k] < 0) return err_set(CUK_ERR_INVALID, "cuk_array: axis %d has negative size %lld", k, (long long)shape[k]);
        if (shape[k] && size > (UINT64_MAX >> 8) / (uint64_t)shape[k])
            return err_set(CUK_ERR_INVALID, "cuk_array: the shape is too large");
        size *= (uint64_t)shape[k];
    }
    cuk_array *a = calloc(1, sizeof *a);
    if (!a) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    a->dt = dt;
    a->rank = rank;
    for (int k = 0; k < rank; k++) a->shape[k] = shape[k];
    a->size = (int64_t)size;
    *out = a;
    return CUK_OK;
}

size_t cuk_array_nbytes(const cuk_array *a) { return a ? (size_t)a->size * cuk_dtype_size(a->dt) : 0; }

cuk_status host_storage(cuk_array *a) {
    a->place = CUK_ON_HOST;
    a->arr = arr_new((DType)a->dt, a->rank, a->shape);
    if (!a->arr) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory: an array of %zu bytes", cuk_array_nbytes(a));
    return CUK_OK;
}

cuk_status device_storage(cuk_array *a) {
    a->place = CUK_ON_DEVICE;
    cuk_status s = cuk_mem_alloc(&a->dev, cuk_array_nbytes(a));
    if (s) return s;
    a->owns_dev = true;
    return CUK_OK;
}

cuk_status cuk_array_new(cuk_array **out, cuk_dtype dt, int rank, const int64_t *shape, cuk_place where) {
    cuk_array *a;
    cuk_status s = array_head(&a, dt, rank, shape);
    if (s) return s;
    if (where == CUK_ON_DEVICE) {
        if (!(s = device_storage(a)) && cuk_array_nbytes(a)) s = cuk_memset_d8(a->dev, 0, cuk_array_nbytes(a), NULL);
    } else {
        if (!(s = host_storage(a))) memset(a->arr->data, 0, cuk_array_nbytes(a));
    }
    if (s) {
        cuk_array_free(a);
        return s;
    }
    *out = a;
    return CUK_OK;
}

cuk_status cuk_array_from_host(cuk_array **out, cuk_dtype dt, int rank, const int64_t *shape, const void *data,
                               cuk_place where) {
    cuk_array *a;
    cuk_status s = array_head(&a, dt, rank, shape);
    if (s) return s;
    size_t nb = cuk_array_nbytes(a);
    if (nb && !data) {
        cuk_array_free(a);
        return err_set(CUK_ERR_INVALID, "cuk_array_from_host: NULL data");
    }
    if (where == CUK_ON_DEVICE) {
        if (!(s = device_storage(a)) && nb) s = cuk_memcpy_htod(a->dev, data, nb);
    } else {
        if (!(s = host_storage(a)) && nb) memcpy(a->arr->data, data, nb);
    }
    if (s) {
        cuk_array_free(a);
        return s;
    }
    *out = a;
    return CUK_OK;
}

cuk_status cuk_array_scalar(cuk_array **out, cuk_dtype dt, const void *value) {
    return cuk_array_from_host(out, dt, 0, NULL, value, CUK_ON_HOST);
}

cuk_status cuk_array_wrap_host(cuk_array **out, cuk_dtype dt, int rank, const int64_t *shape, void *data) {
    cuk_array *a;
    cuk_status s = array_head(&a, dt, rank, shape);
    if (s) return s;
    if (!data && cuk_array_nbytes(a)) {
        free(a);
        return err_set(CUK_ERR_INVALID, "cuk_array_wrap_host: NULL data");
    }
    /* A shell Arr around the caller's memory. We hold its one reference for the array's
       life and free only the shell, never through arr_release (which would free data). */
    Arr *r = calloc(1, sizeof *r);
    if (!r) {
        free(a);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    r->dt = (DType)dt;
    r->rank = rank;
    for (int k = 0; k < rank; k++) r->shape[k] = shape[k];
    r->size = a->size;
    r->data = data;
    r->refs = 1;
    a->place = CUK_ON_HOST;
    a->arr = r;
    a->wrapped = true;
    *out = a;
    return CUK_OK;
}

cuk_status cuk_array_wrap_device(cuk_array **out, cuk_dtype dt, int rank, const int64_t *shape, cuk_devptr ptr) {
    cuk_array *a;
    cuk_status s = array_head(&a, dt, rank, shape);
    if (s) return s;
    if (!ptr && cuk_array_nbytes(a)) {
        free(a);
        return err_set(CUK_ERR_INVALID, "cuk_array_wrap_device: NULL device pointer");
    }
    a->place = CUK_ON_DEVICE;
    a->dev = ptr;
    *out = a;
    return CUK_OK;
}

/* Wraps an Arr the CPU backend produced (takes the reference). */
cuk_status array_from_arr(cuk_array **out, Arr *r) {
    cuk_array *a;
    cuk_status s = array_head(&a, (cuk_dtype)r->dt, r->rank, r->shape);
    if (s) {
        arr_release(r);
        return s;
    }
    a->place = CUK_ON_HOST;
    a->arr = r;
    *out = a;
    return CUK_OK;
}

cuk_status cuk_array_to_host(const cuk_array *a, void *dst, size_t bytes) {
    if (!a || (!dst && cuk_array_nbytes(a))) return err_set(CUK_ERR_INVALID, "cuk_array_to_host: NULL argument");
    size_t nb = cuk_array_nbytes(a);
    if (bytes < nb)
        return err_set(CUK_ERR_INVALID, "cuk_array_to_host: the buffer has %zu bytes but the array %zu", bytes, nb);
    if (!nb) return CUK_OK;
    if (a->place == CUK_ON_DEVICE) return cuk_memcpy_dtoh(dst, a->dev, nb);
    memcpy(dst, a->arr->data, nb);
    return CUK_OK;
}

cuk_status cuk_array_copy(cuk_array **out, const cuk_array *a, cuk_place where) {
    if (!a) return err_set(CUK_ERR_INVALID, "cuk_array_copy: NULL array");
    if (a->place == CUK_ON_HOST) return cuk_array_from_host(out, a->dt, a->rank, a->shape, a->arr->data, where);
    cuk_array *b;
    cuk_status s = array_head(&b, a->dt, a->rank, a->shape);
    if (s) return s;
    size_t nb = cuk_array_nbytes(a);
    if (where == CUK_ON_DEVICE) {
        if (!(s = device_storage(b)) && nb) s = cuk_memcpy_dtod(b->dev, a->dev, nb);
    } else {
        if (!(s = host_storage(b)) && nb) s = cuk_memcpy_dtoh(b->arr->data, a->dev, nb);
    }
    if (s) {
        cuk_array_free(b);
        return s;
    }
    *out = b;
    return CUK_OK;
}

void cuk_array_free(cuk_array *a) {
    if (!a) return;
    if (a->arr) {
        if (a->wrapped) free(a->arr);
        else arr_release(a->arr);
    }
    if (a->owns_dev) cuk_mem_free(a->dev);
    free(a);
}

cuk_dtype cuk_array_dtype(const cuk_array *a) { return a->dt; }
int cuk_array_rank(const cuk_array *a) { return a->rank; }
const int64_t *cuk_array_shape(const cuk_array *a) { return a->shape; }
int64_t cuk_array_size(const cuk_array *a) { return a->size; }
cuk_place cuk_array_place(const cuk_array *a) { return a->place; }
void *cuk_array_host_data(const cuk_array *a) { return a->place == CUK_ON_HOST ? a->arr->data : NULL; }
cuk_devptr cuk_array_device_ptr(const cuk_array *a) { return a->place == CUK_ON_DEVICE ? a->dev : 0; }


/* A host Arr holding a's elements: its own storage (a new reference; a wrapped array's
   shell keeps the array's reference, so releasing this one never frees the caller's
   memory), or a copy of a device array's. */
static cuk_status host_arr(const cuk_array *a, Arr **out) {
    if (a->place == CUK_ON_HOST) {
        *out = arr_retain(a->arr);
        return CUK_OK;
    }
    *out = arr_new((DType)a->dt, a->rank, a->shape);
    if (!*out) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    cuk_status s = cuk_array_nbytes(a) ? cuk_memcpy_dtoh((*out)->data, a->dev, cuk_array_nbytes(a)) : CUK_OK;
    if (s) {
        arr_release(*out);
        *out = NULL;
    }
    return s;
}

cuk_status cuk_array_load(cuk_array **out, const char *path) {
    if (!out || !path) return err_set(CUK_ERR_INVALID, "cuk_array_load: NULL argument");
    *out = NULL;
    char msg[512];
    Arr *r = npy_load(path, msg, sizeof msg);
    if (!r) return err_set(CUK_ERR_INVALID, "%s", msg);
    return array_from_arr(out, r);
}

cuk_status cuk_array_save(const cuk_array *a, const char *path) {
    if (!a || !path) return err_set(CUK_ERR_INVALID, "cuk_array_save: NULL argument");
    Arr *h;
    cuk_status s = host_arr(a, &h);
    if (s) return s;
    char msg[512];
    if (!npy_save(path, h, msg, sizeof msg)) s = err_set(CUK_ERR_INVALID, "%s", msg);
    arr_release(h);
    return s;
}

cuk_status cuk_array_print(const cuk_array *a, FILE *out) {
    if (!a || !out) return err_set(CUK_ERR_INVALID, "cuk_array_print: NULL argument");
    Arr *h;
    cuk_status s = host_arr(a, &h);
    if (s) return s;
    arr_print(out, h);
    arr_release(h);
    return CUK_OK;
}
