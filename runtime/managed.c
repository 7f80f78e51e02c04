/* Managed (unified) memory: allocation within the device's free memory, advice,
   prefetches and what the driver says of a range (cuk.h, "Managed memory"). */
#include "internal.h"

/* The driver entry points this file needs, or CUK_ERR_DRIVER naming the first missing. */
static cuk_status need(void *fn, const char *name) {
    if (fn) return CUK_OK;
    return err_set(CUK_ERR_DRIVER, "%s: this CUDA driver has no %s (managed memory needs a driver of CUDA 12.2 or later)",
                   name, name);
}

/* loc (a device ordinal or CUK_LOC_HOST) as the driver's location, checked. */
static cuk_status location(int loc, const char *what, CUmemLocation *l) {
    if (loc == CUK_LOC_HOST || loc == CUK_LOC_HOST_NUMA_CURRENT) {
        *l = (CUmemLocation){
            .type = loc == CUK_LOC_HOST ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, .id = 0};
        return CUK_OK;
    }
    if (loc <= CUK_LOC_HOST_NUMA(0)) {
        *l = (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_HOST_NUMA, .id = CUK_LOC_HOST_NUMA(0) - loc};
        return CUK_OK;
    }
    if (loc < 0)
        return err_set(CUK_ERR_INVALID,
                       "%s: location %d is neither a device ordinal, CUK_LOC_HOST (-1), CUK_LOC_HOST_NUMA_CURRENT (-3) "
                       "nor CUK_LOC_HOST_NUMA(n) (-16 - n)",
                       what, loc);
    CUdevice dev; /* by ordinal, without retaining its context */
    cuk_status s = dev_handle(loc, &dev);
    if (s) return s;
    *l = (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    return CUK_OK;
}

cuk_status cuk_managed_alloc(cuk_devptr *p, size_t bytes) {
    if (!p) return err_set(CUK_ERR_INVALID, "cuk_managed_alloc: NULL argument");
    *p = 0;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    if ((s = need((void *)cu.cuMemAllocManaged, "cuMemAllocManaged"))) return s;
    size_t fr = 0, total = 0;
    CU_CHECK(cu.cuMemGetInfo(&fr, &total), "cuMemGetInfo_v2");
    if (bytes > fr)
        return err_set(CUK_ERR_OUT_OF_MEMORY,
                       "managed memory of %zu bytes is more than device %d has free (%zu of %zu bytes): cuk does not "
                       "oversubscribe managed memory; free some, or allocate less",
                       bytes, d->index, fr, total);
    CUresult r = cu.cuMemAllocManaged(p, bytes ? bytes : 1, CU_MEM_ATTACH_GLOBAL);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of managed memory: asked for %zu bytes", bytes);
    if (r) return cu_fail(r, "cuMemAllocManaged");
    return CUK_OK;
}

cuk_status cuk_managed_free(cuk_devptr p) {
    if (!p) return CUK_OK;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    CU_CHECK(cu.cuMemFree(p), "cuMemFree_v2");
    return CUK_OK;
}

cuk_status cuk_mem_advise(cuk_devptr p, size_t bytes, cuk_advice what, int loc) {
    if (what < CUK_ADVISE_SET_READ_MOSTLY || what > CUK_ADVISE_UNSET_ACCESSED_BY)
        return err_set(CUK_ERR_INVALID, "cuk_mem_advise: advice %d is not one of CUK_ADVISE_* (1-6)", (int)what);
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    if ((s = need((void *)cu.cuMemAdvise, "cuMemAdvise_v2"))) return s;
    CUmemLocation l = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = d->dev};
    bool read_mostly = what == CUK_ADVISE_SET_READ_MOSTLY || what == CUK_ADVISE_UNSET_READ_MOSTLY;
    if (!read_mostly && (s = location(loc, "cuk_mem_advise", &l))) return s;
    CU_CHECK(cu.cuMemAdvise(p, bytes, (int)what, l), "cuMemAdvise_v2");
    return CUK_OK;
}

cuk_status cuk_mem_prefetch(cuk_devptr p, size_t bytes, int loc, cuk_stream *st) {
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    if ((s = need((void *)cu.cuMemPrefetchAsync, "cuMemPrefetchAsync_v2"))) return s;
    CUmemLocation l;
    if ((s = location(loc, "cuk_mem_prefetch", &l))) return s;
    if (!bytes) return CUK_OK;
    CU_CHECK(cu.cuMemPrefetchAsync(p, bytes, l, 0, stream_raw(st)), "cuMemPrefetchAsync_v2");
    return CUK_OK;
}

/* The driver's device id (CU_DEVICE_CPU, CU_DEVICE_INVALID or a CUdevice) as a cuk location. */
static int loc_of(int dev) {
    if (dev == CU_DEVICE_CPU) return CUK_LOC_HOST;
    if (dev < 0) return CUK_LOC_NONE;
    int n = 0;
    if (cuk_device_count(&n)) n = 0;
    for (int i = 0; i < n; i++) {
        CUdevice d;
        if (cu.cuDeviceGet(&d, i) == CUDA_SUCCESS && d == dev) return i;
    }
    err_clear();
    return dev;
}

cuk_status cuk_mem_range_get(cuk_devptr p, size_t bytes, cuk_mem_range *r, int *accessed_by, int max,
                             int *naccessed) {
    if (!r || (max > 0 && !accessed_by)) return err_set(CUK_ERR_INVALID, "cuk_mem_range_get: NULL argument");
    if (max < 0 || max > 64) return err_set(CUK_ERR_INVALID, "cuk_mem_range_get: max must be 0-64, got %d", max);
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    if ((s = need((void *)cu.cuMemRangeGetAttribute, "cuMemRangeGetAttribute"))) return s;
    int v = 0;
    CU_CHECK(cu.cuMemRangeGetAttribute(&v, sizeof v, 1 /* READ_MOSTLY */, p, bytes), "cuMemRangeGetAttribute");
    r->read_mostly = v != 0;
    /* the preferred and last-prefetch locations by type and id (CUDA 12.2's attributes
       5-8, which name NUMA nodes too), else by the older device-or-CPU number (2, 4) */
    for (int k = 0; k < 2; k++) {
        int *out = k ? &r->last_prefetch : &r->preferred, type = 0, id = 0;
        if (cu.cuMemRangeGetAttribute(&type, sizeof type, k ? 7 : 5, p, bytes) == CUDA_SUCCESS &&
            cu.cuMemRangeGetAttribute(&id, sizeof id, k ? 8 : 6, p, bytes) == CUDA_SUCCESS) {
            *out = type == CU_MEM_LOCATION_TYPE_DEVICE           ? loc_of(id)
                   : type == CU_MEM_LOCATION_TYPE_HOST           ? CUK_LOC_HOST
                   : type == CU_MEM_LOCATION_TYPE_HOST_NUMA      ? CUK_LOC_HOST_NUMA(id)
                   : type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT ? CUK_LOC_HOST_NUMA_CURRENT
                                                                 : CUK_LOC_NONE;
            continue;
        }
        CU_CHECK(cu.cuMemRangeGetAttribute(&v, sizeof v, k ? 4 : 2, p, bytes), "cuMemRangeGetAttribute");
        *out = loc_of(v);
    }
    int n = 0;
    if (max > 0) {
        int devs[64];
        for (int i = 0; i < max; i++) devs[i] = CU_DEVICE_INVALID;
        CU_CHECK(cu.cuMemRangeGetAttribute(devs, sizeof(int) * (size_t)max, 3 /* ACCESSED_BY */, p, bytes),
                 "cuMemRangeGetAttribute");
        for (int i = 0; i < max; i++)
            if (devs[i] != CU_DEVICE_INVALID) accessed_by[n++] = loc_of(devs[i]);
    }
    if (naccessed) *naccessed = n;
    return CUK_OK;
}
