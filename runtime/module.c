/* Loaded modules, the in-memory kernel cache (compile key -> loaded module), kernel
   lookup and launch with occupancy-based defaults. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "internal.h"

struct cuk_function_s {
    CUfunction fn;
    Device *d;
    char *name;
    /* Occupancy for some amount of dynamic shared memory, computed on the first launch
       that needs it, packed in one word so launches can read it without a lock:
       shared bytes << 32 | block size << 16 | resident blocks per SM. 0: none yet. */
    _Atomic uint64_t occ;
    struct cuk_function_s *next;
};

struct cuk_module_s {
    CUmodule mod;
    Device *d;
    Key key;
    bool cached; /* owned by the cache: lives until shutdown */
    char *names; /* expr -> lowered pairs, as in cuk_image */
    size_t names_len;
    cuk_function *funcs;
    struct cuk_module_s *next;      /* all modules */
    struct cuk_module_s *hash_next; /* cached ones, by key */
};

#define NBUCKET 256
static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static cuk_module *modules;
static cuk_module *buckets[NBUCKET];

static cuk_status load_image(Device *d, const void *data, cuk_module **out) {
    char info[4096] = "", error[4096] = "";
    int opts[4] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                   CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[4] = {info, (void *)(uintptr_t)sizeof info, error, (void *)(uintptr_t)sizeof error};
    CUmodule mod;
    CUresult r = fault_hit(FAULT_MODULE_LOAD) ? CUDA_ERROR_OUT_OF_MEMORY
                                               : cu.cuModuleLoadDataEx(&mod, data, 4, opts, vals);
    if (r) {
        cu_fail(r, "cuModuleLoadDataEx");
        if (error[0]) {
            char first[1024];
            snprintf(first, sizeof first, "%s", cuk_last_error());
            return err_set(r == CUDA_ERROR_OUT_OF_MEMORY ? CUK_ERR_OUT_OF_MEMORY : CUK_ERR_DRIVER,
                           "%s\nJIT log:\n%s", first, error);
        }
        return r == CUDA_ERROR_OUT_OF_MEMORY ? CUK_ERR_OUT_OF_MEMORY : CUK_ERR_DRIVER;
    }
    cuk_module *m = calloc(1, sizeof *m);
    if (!m) {
        cu.cuModuleUnload(mod);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    m->mod = mod;
    m->d = d;
    *out = m;
    return CUK_OK;
}

static void module_free(cuk_module *m) {
    for (cuk_function *f = m->funcs, *nx; f; f = nx) {
        nx = f->next;
        free(f->name);
        free(f);
    }
    free(m->names);
    free(m);
}

/* Makes sure d->arch says what to compile for on this device (under mod_lock). */
static cuk_status dev_arch(Device *d) {
    if (d->arch_known) return CUK_OK;
    cuk_status s = cuk_arch_for(d->props.cc_major, d->props.cc_minor, d->arch, sizeof d->arch, &d->kind);
    if (s) return s;
    d->arch_known = true;
    return CUK_OK;
}

cuk_status cuk_module_compile(cuk_module **out, const char *source, const cuk_compile_opts *o) {
    if (!out || !source) return err_set(CUK_ERR_INVALID, "cuk_module_compile: NULL argument");
    *out = NULL;
    if (o && ((o->noptions && !o->options) || (o->nnames && !o->names) || o->noptions < 0 || o->nnames < 0))
        return err_set(CUK_ERR_INVALID, "cuk_module_compile: bad option or name list");
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    if (!d->arch_known) {
        pthread_mutex_lock(&mod_lock);
        s = dev_arch(d);
        pthread_mutex_unlock(&mod_lock);
        if (s) return s;
    }
    Key k;
    if ((s = compile_key(source, o, d->arch, d->kind, &k))) return s;
    size_t b = (size_t)(k.a & (NBUCKET - 1));
    pthread_mutex_lock(&mod_lock);
    for (cuk_module *m = buckets[b]; m; m = m->hash_next)
        if (m->key.a == k.a && m->key.b == k.b && m->d == d) {
            pthread_mutex_unlock(&mod_lock);
            cache_count_mem_hit();
            *out = m;
            return CUK_OK;
        }
    pthread_mutex_unlock(&mod_lock);

    cuk_image *im;
    if ((s = compile_keyed(source, o, d->arch, d->kind, k, &im))) return s;
    cuk_module *m;
    s = load_image(d, im->data, &m);
    if (s) {
        cuk_image_free(im);
        return s;
    }
    m->cached = true;
    m->key = k;
    m->names = im->names;
    m->names_len = im->names_len;
    im->names = NULL;
    cuk_image_free(im);

    pthread_mutex_lock(&mod_lock);
    /* Another thread may have loaded the same module meanwhile: keep the first. */
    for (cuk_module *o2 = buckets[b]; o2; o2 = o2->hash_next)
        if (o2->key.a == k.a && o2->key.b == k.b && o2->d == d) {
            pthread_mutex_unlock(&mod_lock);
            cu.cuModuleUnload(m->mod);
            module_free(m);
            *out = o2;
            return CUK_OK;
        }
    m->hash_next = buckets[b];
    buckets[b] = m;
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&mod_lock);
    *out = m;
    return CUK_OK;
}

cuk_status cuk_module_load(cuk_module **out, const void *image, size_t size) {
    if (!out || !image || !size) return err_set(CUK_ERR_INVALID, "cuk_module_load: empty image");
    *out = NULL;
    Device *d;
    cuk_status s = dev_current(&d);
    if (s) return s;
    /* PTX must be NUL-terminated for the driver; a cubin (ELF) is self-delimiting. */
    const unsigned char *p = image;
    bool elf = size >= 4 && !memcmp(p, "\x7f" "ELF", 4);
    unsigned char *copy = NULL;
    if (!elf && p[size - 1] != 0) {
        copy = malloc(size + 1);
        if (!copy) return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
        memcpy(copy, image, size);
        copy[size] = 0;
    }
    cuk_module *m;
    s = load_image(d, copy ? copy : image, &m);
    free(copy);
    if (s) return s;
    pthread_mutex_lock(&mod_lock);
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&mod_lock);
    *out = m;
    return CUK_OK;
}

cuk_status cuk_module_unload(cuk_module *m) {
    if (!m || m->cached) return CUK_OK;
    pthread_mutex_lock(&mod_lock);
    for (cuk_module **pp = &modules; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    pthread_mutex_unlock(&mod_lock);
    cuk_status s = ctx_make_current(m->d);
    CUresult r = s ? CUDA_SUCCESS : cu.cuModuleUnload(m->mod);
    module_free(m);
    if (s) return s;
    if (r) return cu_fail(r, "cuModuleUnload");
    return CUK_OK;
}

void modules_release_all(void) {
    pthread_mutex_lock(&mod_lock);
    cuk_module *all = modules;
    modules = NULL;
    memset(buckets, 0, sizeof buckets);
    pthread_mutex_unlock(&mod_lock);
    for (cuk_module *m = all, *nx; m; m = nx) {
        nx = m->next;
        if (!ctx_make_current(m->d)) cu.cuModuleUnload(m->mod);
        module_free(m);
    }
}

static const char *lowered(const cuk_module *m, const char *name) {
    for (size_t i = 0; i < m->names_len;) {
        const char *expr = m->names + i;
        const char *low = expr + strlen(expr) + 1;
        if (!strcmp(expr, name)) return low;
        i = (size_t)(low + strlen(low) + 1 - m->names);
    }
    return name;
}

cuk_status cuk_module_function(cuk_module *m, const char *name, cuk_function **out) {
    if (!m || !name || !out) return err_set(CUK_ERR_INVALID, "cuk_module_function: NULL argument");
    *out = NULL;
    pthread_mutex_lock(&mod_lock);
    for (cuk_function *f = m->funcs; f; f = f->next)
        if (!strcmp(f->name, name)) {
            pthread_mutex_unlock(&mod_lock);
            *out = f;
            return CUK_OK;
        }
    pthread_mutex_unlock(&mod_lock);
    cuk_status s = ctx_make_current(m->d);
    if (s) return s;
    CUfunction fn;
    CUresult r = cu.cuModuleGetFunction(&fn, m->mod, lowered(m, name));
    if (r == CUDA_ERROR_NOT_FOUND)
        return err_set(CUK_ERR_NOT_FOUND,
                       "no kernel named '%s' in the module (declare it extern \"C\" __global__, or pass a "
                       "C++ name in the compile options' names)",
                       name);
    if (r) return cu_fail(r, "cuModuleGetFunction");
    cuk_function *f = calloc(1, sizeof *f);
    char *nm = strdup(name);
    if (!f || !nm) {
        free(f);
        free(nm);
        return err_set(CUK_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    f->fn = fn;
    f->d = m->d;
    f->name = nm;
    pthread_mutex_lock(&mod_lock);
    for (cuk_function *g = m->funcs; g; g = g->next)
        if (!strcmp(g->name, name)) { /* lost a race: use the first */
            pthread_mutex_unlock(&mod_lock);
            free(f->name);
            free(f);
            *out = g;
            return CUK_OK;
        }
    f->next = m->funcs;
    m->funcs = f;
    pthread_mutex_unlock(&mod_lock);
    *out = f;
    return CUK_OK;
}

cuk_status cuk_module_global(cuk_module *m, const char *name, cuk_devptr *p, size_t *bytes) {
    if (bytes) *bytes = 0;
    if (p) *p = 0;
    if (!m || !name || !p) return err_set(CUK_ERR_INVALID, "cuk_module_global: NULL argument");
    cuk_status s = ctx_make_current(m->d);
    if (s) return s;
    CUdeviceptr dp = 0;
    size_t n = 0;
    CUresult r = cu.cuModuleGetGlobal(&dp, &n, m->mod, lowered(m, name));
    if (r == CUDA_ERROR_NOT_FOUND)
        return err_set(CUK_ERR_NOT_FOUND,
                       "no __device__ or __constant__ variable named '%s' in the module (declare it at file scope, "
                       "extern \"C\" for a C++ name, or pass its name expression in the compile options' names)",
                       name);
    if (r) return cu_fail(r, "cuModuleGetGlobal_v2");
    *p = dp;
    if (bytes) *bytes = n;
    return CUK_OK;
}

/* f's occupancy figures for `shared` bytes of dynamic shared memory. */
static cuk_status occupancy(cuk_function *f, unsigned shared, int *block_out, int *per_sm_out) {
    uint64_t w = atomic_load_explicit(&f->occ, memory_order_relaxed);
    if (w && (unsigned)(w >> 32) == shared) {
        *block_out = (int)(w >> 16 & 0xffff);
        *per_sm_out = (int)(w & 0xffff);
        return CUK_OK;
    }
    int mingrid = 0, block = 0, per_sm = 0;
    CUresult r = cu.cuOccupancyMaxPotentialBlockSize(&mingrid, &block, f->fn, NULL, shared, 0);
    if (r) return cu_fail(r, "cuOccupancyMaxPotentialBlockSize");
    r = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f->fn, block, shared);
    if (r) return cu_fail(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    if (block <= 0 || block > 0xffff)
        return err_set(CUK_ERR_INVALID, "kernel '%s' cannot run with %u bytes of shared memory", f->name, shared);
    if (per_sm <= 0) per_sm = 1;
    if (per_sm > 0xffff) per_sm = 0xffff;
    atomic_store_explicit(&f->occ, (uint64_t)shared << 32 | (uint64_t)block << 16 | (uint64_t)per_sm,
                          memory_order_relaxed);
    *block_out = block;
    *per_sm_out = per_sm;
    return CUK_OK;
}

/* A failed launch of f: the driver's error, with the kernel and its configuration. */
static cuk_status launch_failed(cuk_function *f, CUresult r, const char *call, cuk_dim3 grid, cuk_dim3 block,
                                unsigned shared, unsigned cluster) {
    cu_fail(r, call);
    char msg[2048], cl[48] = "";
    snprintf(msg, sizeof msg, "%s", cuk_last_error());
    if (cluster) snprintf(cl, sizeof cl, ", clusters of %u", cluster);
    return err_set(r == CUDA_ERROR_OUT_OF_MEMORY ? CUK_ERR_OUT_OF_MEMORY : CUK_ERR_DRIVER,
                   "launching kernel '%s' (grid %u,%u,%u block %u,%u,%u, %u bytes shared%s): %s", f->name, grid.x,
                   grid.y, grid.z, block.x, block.y, block.z, shared, cl, msg);
}

/* y and z of 0 mean 1 */
static cuk_dim3 dims(cuk_dim3 d) { return (cuk_dim3){d.x, d.y ? d.y : 1, d.z ? d.z : 1}; }

cuk_status cuk_launch(cuk_function *f, cuk_dim3 grid, cuk_dim3 block, unsigned shared, cuk_stream *st,
                      void **args) {
    if (!f) return err_set(CUK_ERR_INVALID, "cuk_launch: NULL function");
    cuk_status s = ctx_make_current(f->d);
    if (s) return s;
    if (!block.x || !grid.x) {
        int ob = 0, per_sm = 0;
        if ((s = occupancy(f, shared, &ob, &per_sm))) return s;
        if (!block.x) block.x = (unsigned)ob, block.y = block.z = 1;
        if (!grid.x) grid.x = (unsigned)(per_sm * f->d->props.sm_count);
    }
    grid = dims(grid), block = dims(block);
    CUresult r = cu.cuLaunchKernel(f->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, stream_raw(st),
                                   args, NULL);
    return r ? launch_failed(f, r, "cuLaunchKernel", grid, block, shared, 0) : CUK_OK;
}

cuk_status cuk_launch_ex(cuk_function *f, const cuk_launch_opts *o, void **args) {
    if (!f || !o) return err_set(CUK_ERR_INVALID, "cuk_launch_ex: NULL argument");
    cuk_dim3 grid = dims(o->grid), block = dims(o->block), cl = o->cluster;
    bool cluster = cl.x || cl.y || cl.z;
    if (cluster) cl = dims(cl);
    if (!block.x || !grid.x)
        return err_set(CUK_ERR_INVALID, "kernel '%s': the grid and the block must be given (got grid.x %u, block.x %u)",
                       f->name, grid.x, block.x);
    if (cluster && (grid.x % cl.x || grid.y % cl.y || grid.z % cl.z))
        return err_set(CUK_ERR_INVALID, "kernel '%s': the grid (%u, %u, %u) must be a multiple of the cluster (%u, %u, %u) "
                                        "in every dimension", f->name, grid.x, grid.y, grid.z, cl.x, cl.y, cl.z);
    cuk_status s = ctx_make_current(f->d);
    if (s) return s;
    if (!cluster && !o->cooperative) return cuk_launch(f, grid, block, o->shared, o->stream, args);
    if (!cu.cuLaunchKernelEx || (cluster && f->d->props.cc_major < 9))
        return err_set(CUK_ERR_DRIVER, "%s needs %sa driver with cuLaunchKernelEx (kernel '%s')",
                       cluster ? "a thread-block cluster" : "a cooperative launch",
                       cluster ? "compute capability 9.0 and " : "", f->name);
    CUlaunchAttribute at[2];
    memset(at, 0, sizeof at);
    unsigned na = 0;
    if (cluster) {
        at[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at[na].value.clusterDim.x = cl.x, at[na].value.clusterDim.y = cl.y, at[na].value.clusterDim.z = cl.z;
        na++;
    }
    if (o->cooperative) {
        at[na].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        at[na].value.cooperative = 1;
        na++;
    }
    CUlaunchConfig c = {grid.x, grid.y, grid.z, block.x, block.y, block.z, o->shared, stream_raw(o->stream), at, na};
    CUresult r = cu.cuLaunchKernelEx(&c, f->fn, args, NULL);
    return r ? launch_failed(f, r, "cuLaunchKernelEx", grid, block, o->shared, cl.x * cl.y * cl.z) : CUK_OK;
}

cuk_status cuk_launch_cluster(cuk_function *f, cuk_dim3 grid, cuk_dim3 block, unsigned cluster, unsigned shared,
                              cuk_stream *st, void **args) {
    if (!f) return err_set(CUK_ERR_INVALID, "cuk_launch_cluster: NULL function");
    if (!block.x || !grid.x || !cluster || grid.x % cluster)
        return err_set(CUK_ERR_INVALID, "cuk_launch_cluster: grid.x (%u) must be a positive multiple of the cluster (%u), "
                                        "and the block given", grid.x, cluster);
    cuk_launch_opts o = {.grid = grid, .block = block, .shared = shared, .stream = st, .cluster = {cluster, 1, 1}};
    return cuk_launch_ex(f, &o, args);
}

cuk_status cuk_launch_config_1d(cuk_function *f, size_t n, unsigned shared, cuk_dim3 *grid, cuk_dim3 *block) {
    if (!f || !grid || !block) return err_set(CUK_ERR_INVALID, "cuk_launch_config_1d: NULL argument");
    int ob = 0, per_sm = 0;
    cuk_status s = ctx_make_current(f->d);
    if (s || (s = occupancy(f, shared, &ob, &per_sm))) return s;
    size_t b = ob > 0 ? (size_t)ob : 1, g = (n + b - 1) / b;
    if (g == 0) g = 1;
    if (g > 0x7fffffffu) return err_set(CUK_ERR_INVALID, "%zu threads do not fit in a 1-D grid", n);
    *block = (cuk_dim3){(unsigned)b, 1, 1};
    *grid = (cuk_dim3){(unsigned)g, 1, 1};
    return CUK_OK;
}

cuk_status cuk_function_resident(cuk_function *f, unsigned block, unsigned shared_bytes, int *blocks) {
    if (!f || !blocks) return err_set(CUK_ERR_INVALID, "cuk_function_resident: NULL argument");
    *blocks = 0;
    cuk_status s = ctx_make_current(f->d);
    if (s) return s;
    int per_sm = 0;
    CU_CHECK(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f->fn, (int)block, shared_bytes),
             "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    *blocks = per_sm * f->d->props.sm_count;
    return CUK_OK;
}

cuk_status cuk_function_smem_available(cuk_function *f, int blocks_per_sm, int block, size_t *bytes) {
    if (!f || !bytes) return err_set(CUK_ERR_INVALID, "cuk_function_smem_available: NULL argument");
    if (blocks_per_sm < 1 || block < 1)
        return err_set(CUK_ERR_INVALID, "cuk_function_smem_available: blocks per SM (%d) and the block size (%d) must be "
                                        "positive", blocks_per_sm, block);
    cuk_status s = ctx_make_current(f->d);
    if (s) return s;
    if (!cu.cuOccupancyAvailableDynamicSMemPerBlock)
        return err_set(CUK_ERR_DRIVER, "this CUDA driver has no cuOccupancyAvailableDynamicSMemPerBlock");
    CU_CHECK(cu.cuOccupancyAvailableDynamicSMemPerBlock(bytes, f->fn, blocks_per_sm, block),
             "cuOccupancyAvailableDynamicSMemPerBlock");
    return CUK_OK;
}

cuk_status cuk_function_attribute(cuk_function *f, int attr, int *value) {
    if (!f || !value) return err_set(CUK_ERR_INVALID, "cuk_function_attribute: NULL argument");
    if (attr < 0 || attr > 64)
        return err_set(CUK_ERR_INVALID, "cuk_function_attribute: %d is not a CUfunction_attribute (0 to 64)", attr);
    cuk_status s = ctx_make_current(f->d);
    if (s) return s;
    *value = 0;
    CU_CHECK(cu.cuFuncGetAttribute(value, attr, f->fn), "cuFuncGetAttribute");
    return CUK_OK;
}

uintptr_t cuk_function_handle(const cuk_function *f) { return f ? (uintptr_t)f->fn : 0; }
uintptr_t cuk_module_handle(const cuk_module *m) { return m ? (uintptr_t)m->mod : 0; }

cuk_status cuk_function_param_info(cuk_function *f, size_t index, size_t *offset, size_t *size) {
    if (!f || !offset || !size) return err_set(CUK_ERR_INVALID, "cuk_function_param_info: NULL argument");
    cuk_status s = ctx_make_current(f->d);
    if (s) return s;
    if (!cu.cuFuncGetParamInfo)
        return err_set(CUK_ERR_DRIVER, "cuk_function_param_info: this CUDA driver has no cuFuncGetParamInfo (it needs "
                                       "CUDA 12.4 or later)");
    CUresult r = cu.cuFuncGetParamInfo(f->fn, index, offset, size);
    if (r == CUDA_ERROR_INVALID_VALUE)
        return err_set(CUK_ERR_NOT_FOUND, "cuk_function_param_info: the kernel has no parameter %zu", index);
    if (r) return cu_fail(r, "cuFuncGetParamInfo");
    return CUK_OK;
}

cuk_status cuk_function_info_get(cuk_function *f, cuk_function_info *info) {
    if (!f || !info) return err_set(CUK_ERR_INVALID, "cuk_function_info_get: NULL argument");
    int ob = 0, per_sm = 0;
    cuk_status s = ctx_make_current(f->d);
    if (s || (s = occupancy(f, 0, &ob, &per_sm))) return s;
    memset(info, 0, sizeof *info);
    CU_CHECK(cu.cuFuncGetAttribute(&info->max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->fn),
             "cuFuncGetAttribute");
    CU_CHECK(cu.cuFuncGetAttribute(&info->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f->fn), "cuFuncGetAttribute");
    CU_CHECK(cu.cuFuncGetAttribute(&info->shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f->fn),
             "cuFuncGetAttribute");
    info->occupancy_block = ob;
    info->blocks_per_sm = per_sm;
    return CUK_OK;
}
