/* Sorting on the GPU (sort.h): the host side of kernels/sort.cuh. Rows of at most a tile
   go one block per row; longer rows take the onesweep passes, one row after another,
   split into portions of fewer than 2^30 keys (the look-back's counts are 30 bits). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/gpu/order.h"
#include "exec/gpu/sort.h"
#include "lang/embedded.h"

enum { SORT_THREADS = 256 };

static int key_bytes(DType dt) { return dtype_info[dt].size > 4 ? 8 : 4; }
/* keys per thread: a tile's keys, positions and counts fit the 48 KiB of static shared memory */
static int sort_items(DType dt) { return key_bytes(dt) == 8 ? 8 : 16; }
static int64_t sort_tile(DType dt) { return (int64_t)SORT_THREADS * sort_items(dt); }
static int sort_passes(DType dt) { return dt == DT_BOOL ? 1 : key_bytes(dt); }

char *gpu_sort_source(DType dt) {
    const char *body = embedded_find("sort.cuh");
    if (!body) return NULL;
    int kind = dt == DT_BOOL ? 3 : dtype_info[dt].is_float ? 2 : dtype_info[dt].is_signed ? 1 : 0;
    const char *key = key_bytes(dt) == 8 ? "unsigned long long" : "unsigned int";
    const char *ctype = dt == DT_BOOL ? "unsigned char" : dt == DT_I32 ? "int" : dt == DT_I64 ? "long long"
                        : dt == DT_U32 ? "unsigned int" : dt == DT_U64 ? "unsigned long long"
                        : dt == DT_F32 ? "float" : "double";
    size_t n = strlen(body) + 256;
    char *s = malloc(n);
    if (s)
        snprintf(s, n,
                 "/* cuk's sort kernels for %s (exec/gpu/sort.c) */\n#define CUK_SORT_T %s\n#define CUK_SORT_K %s\n"
                 "#define CUK_SORT_KB %d\n#define CUK_SORT_KIND %d\n#define CUK_SORT_ITEMS %d\n%s",
                 dtype_info[dt].name, ctype, key, key_bytes(dt), kind, sort_items(dt), body);
    return s;
}

static bool fail(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t whylen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return false;
}

/* The sort module's kernels for one element type, looked up by name. */
typedef struct SortMod {
    DType dt;
    cuk_module *m;
    char *why;
    size_t whylen;
} SortMod;

/* The module of dt's kernels: *slot, else compiled (through the kernel cache) into it. */
static bool mod_open(SortMod *sm, DType dt, cuk_module **slot, char *why, size_t whylen) {
    *sm = (SortMod){.dt = dt, .m = *slot, .why = why, .whylen = whylen};
    if (sm->m) return true;
    char *src = gpu_sort_source(dt);
    if (!src) return fail(why, whylen, "out of host memory for the sort kernels' source");
    char name[64];
    snprintf(name, sizeof name, "cuk_sort_%s.cu", dtype_info[dt].name);
    cuk_compile_opts o = {.program_name = name};
    cuk_status st = cuk_module_compile(&sm->m, src, &o);
    free(src);
    if (st != CUK_OK)
        return fail(why, whylen,
                    "compiling the GPU sort kernels failed: %s (the GPU's sort compiles them with NVRTC on first "
                    "use; without NVRTC, sort with --device cpu)",
                    cuk_last_error());
    *slot = sm->m;
    return true;
}

static bool launch(SortMod *sm, const char *fn, int64_t grid_x, unsigned grid_y, unsigned block, void **args) {
    cuk_function *f;
    if (cuk_module_function(sm->m, fn, &f) != CUK_OK)
        return fail(sm->why, sm->whylen, "the GPU sort kernel %s is missing: %s", fn, cuk_last_error());
    cuk_dim3 g = {(unsigned)(grid_x < 1 ? 1 : grid_x), grid_y ? grid_y : 1, 1}, b = {block, 1, 1};
    if (cuk_launch(f, g, b, 0, gpu_stream(), args) != CUK_OK)
        return fail(sm->why, sm->whylen, "launching the GPU sort kernel %s failed: %s", fn, cuk_last_error());
    return true;
}

/* Device scratch freed at the end of a sort (the pool orders its reuse on the stream). */
typedef struct Scratch {
    cuk_devptr p[8];
    int n;
} Scratch;

static bool scratch(Scratch *sc, SortMod *sm, size_t bytes, cuk_devptr *out) {
    if (bytes == 0) bytes = 8;
    if (!gpu_alloc(out, bytes))
        return fail(sm->why, sm->whylen, "out of device memory for the sort's scratch (%zu bytes): %s", bytes,
                    cuk_last_error());
    sc->p[sc->n++] = *out;
    return true;
}

static void scratch_free(Scratch *sc) {
    for (int i = 0; i < sc->n; i++) cuk_mem_free(sc->p[i]);
    sc->n = 0;
}

static unsigned rows_grid(int64_t rows) { return (unsigned)(rows < 65535 ? rows : 65535); }

/* Rows of at most a tile: whole rows per block (kernels/sort.cuh, sort_rows_body). */
static bool sort_short(SortMod *sm, cuk_devptr x, int64_t rows, int64_t len, bool desc, bool arg, cuk_devptr out) {
    DType dt = sm->dt;
    const char *fn = arg ? "sort_rows_p" : dtype_info[dt].is_float ? "sort_rows_b" : "sort_rows_k";
    int64_t per = sort_tile(dt) / len;
    if (per > 256) per = 256;
    const int64_t groups = (rows + per - 1) / per;
    int d = desc;
    void *args[] = {&x, &len, &rows, &out, &d};
    return launch(sm, fn, groups < (1 << 20) ? groups : (1 << 20), 1, SORT_THREADS, args);
}

/* Fewer than 2^30 keys per portion, whole tiles. */
static int64_t portion_keys(DType dt) { return ((1LL << 30) - 1) / sort_tile(dt) * sort_tile(dt); }

/* Keys at least this many: the host reads back which passes move nothing and skips them
   (a synchronising copy of a few words, cheap beside such a sort). */
enum { SKIP_MIN_KEYS = 1 << 18 };

/* One onesweep pass over every row: rows of at most a portion in one launch, a longer
   row one portion per launch. Pointers at the first row's start; *_es the bytes of an
   element of each (kin: the element's when first, else the key's; kout: the element's
   when last; pout and pin: the payload's, or 8 for the positions when last). */
typedef struct Pass {
    const char *fn;
    cuk_devptr kin, pin, kout, pout, bins, chain, lb;
    int kin_es, kout_es, pin_es, pout_es;
    int64_t rows, len;
    int shift, desc;
} Pass;

static bool pass_launch(SortMod *sm, const Pass *ps, cuk_devptr kin, cuk_devptr pin, cuk_devptr kout, cuk_devptr pout,
                        int64_t n, int64_t base, int64_t rows, cuk_devptr bins, cuk_devptr bins_out) {
    const int64_t tile = sort_tile(sm->dt), tpr = (n + tile - 1) / tile, tiles = rows * tpr;
    int64_t bstride = (int64_t)sort_passes(sm->dt) * 256;
    cuk_devptr lb = ps->lb, ticket = ps->lb + (cuk_devptr)(tiles * 256 * 4);
    int shift = ps->shift, d = ps->desc;
    if (cuk_memset_d8(lb, 0, ((size_t)tiles * 256 + 1) * 4, gpu_stream()) != CUK_OK)
        return fail(sm->why, sm->whylen, "clearing the sort's tile states failed: %s", cuk_last_error());
    int64_t tp = tpr;
    void *a[] = {&kin, &pin, &kout, &pout, &n, &base, &shift, &d, &bins, &bins_out, &lb, &ticket, &tp, &bstride};
    return launch(sm, ps->fn, tiles, 1, SORT_THREADS, a);
}

static bool run_pass(SortMod *sm, const Pass *ps) {
    const int64_t portion = portion_keys(sm->dt);
    if (ps->len <= portion)
        return pass_launch(sm, ps, ps->kin, ps->pin, ps->kout, ps->pout, ps->len, 0, ps->rows, ps->bins, 0);
    const int64_t nport = (ps->len + portion - 1) / portion, bstride = (int64_t)sort_passes(sm->dt) * 256 * 8;
    for (int64_t r = 0; r < ps->rows; r++) {
        const int64_t at = r * ps->len;
        for (int64_t q = 0; q < nport; q++) {
            const int64_t q0 = q * portion, qn = ps->len - q0 < portion ? ps->len - q0 : portion;
            /* a portion reads from its own start and writes anywhere in its row */
            cuk_devptr kin = ps->kin + (cuk_devptr)((at + q0) * ps->kin_es);
            cuk_devptr pin = ps->pin ? ps->pin + (cuk_devptr)((at + q0) * ps->pin_es) : 0;
            cuk_devptr kout = ps->kout ? ps->kout + (cuk_devptr)(at * ps->kout_es) : 0;
            cuk_devptr pout = ps->pout ? ps->pout + (cuk_devptr)(at * ps->pout_es) : 0;
            cuk_devptr bin = q == 0 ? ps->bins + (cuk_devptr)(r * bstride) : ps->chain + (cuk_devptr)((q - 1) * 256 * 8);
            cuk_devptr bout = q + 1 < nport ? ps->chain + (cuk_devptr)(q * 256 * 8) : 0;
            if (!pass_launch(sm, ps, kin, pin, kout, pout, qn, q0, 1, bin, bout)) return false;
        }
    }
    return true;
}

static bool sort_rows(SortMod *sm, cuk_devptr x, int64_t rows, int64_t len, bool desc, bool arg, cuk_devptr out);

/* Values that travel with the keys (sort_by_key): vb bytes each at v, sorted into vout. */
typedef struct KV {
    cuk_devptr v, vout;
    int vb;
} KV;

/* The rows' elements (and kv's values) by each row's argsort: gathered, not carried. */
static bool by_positions(SortMod *sm, cuk_devptr x, int64_t rows, int64_t len, bool desc, cuk_devptr out, const KV *kv) {
    if (len > (int64_t)UINT32_MAX)
        return fail(sm->why, sm->whylen,
                    "sorting rows of %lld floats with -0.0 or NaN payloads (kept bit for bit through their positions) "
                    "takes at most 2^32 - 1 a row on the GPU; the CPU backend has no such limit",
                    (long long)len);
    Scratch sc = {0};
    cuk_devptr idx;
    int64_t n = rows * len, g = (n + 255) / 256;
    bool ok = scratch(&sc, sm, (size_t)n * 8, &idx) && sort_rows(sm, x, rows, len, desc, true, idx);
    if (ok) {
        void *a[] = {&x, &idx, &len, &n, &out};
        ok = launch(sm, "sort_gather", g < 65536 ? g : 65536, 1, 256, a);
    }
    if (ok && kv) {
        cuk_devptr v = kv->v, vout = kv->vout;
        int vb = kv->vb;
        void *a[] = {&v, &idx, &n, &vb, &vout};
        ok = launch(sm, "sort_take", g < 65536 ? g : 65536, 1, 256, a);
    }
    scratch_free(&sc);
    return ok;
}

/* The onesweep passes over rows longer than a tile: the elements sorted into out, or
   (arg) their positions, or (kv) the elements and the values with them. */
static bool sort_long(SortMod *sm, cuk_devptr x, int64_t rows, int64_t len, bool desc, bool arg, cuk_devptr out,
                      const KV *kv) {
    DType dt = sm->dt;
    const int passes = sort_passes(dt), kb = key_bytes(dt), eb = dtype_info[dt].size;
    const int64_t tile = sort_tile(dt), portion = portion_keys(dt), n = rows * len;
    const bool big = len > portion;
    const int64_t nport = (len + portion - 1) / portion;
    /* tile states: every row's tiles at once, or one portion's */
    const int64_t tiles = big ? (portion + tile - 1) / tile : rows * ((len + tile - 1) / tile);
    Scratch sc = {0};
    cuk_devptr hist, bins, chain = 0, lb, kbuf[2] = {0, 0}, pbuf[2] = {0, 0};
    const size_t hbytes = (size_t)rows * (size_t)passes * 256 * 8;
    /* after the counts: the odd elements' count and each pass's rows of one digit */
    bool ok = scratch(&sc, sm, hbytes + 8 * 9, &hist) && scratch(&sc, sm, hbytes, &bins) &&
              (!big || scratch(&sc, sm, (size_t)nport * 256 * 8, &chain)) &&
              scratch(&sc, sm, ((size_t)tiles * 256 + 1) * 4, &lb);
    cuk_devptr odd = hist + hbytes, same = odd + 8;
    if (ok && cuk_memset_d8(hist, 0, hbytes + 8 * 9, gpu_stream()) != CUK_OK)
        ok = fail(sm->why, sm->whylen, "clearing the sort's counts failed: %s", cuk_last_error());
    int d = desc;
    if (ok) {
        int64_t gx = (len + tile - 1) / tile;
        void *a[] = {&x, &len, &rows, &d, &hist, &odd};
        ok = launch(sm, "sort_hist", gx < 1024 ? gx : 1024, rows_grid(rows), SORT_THREADS, a);
    }
    if (ok) {
        void *a[] = {&hist, &rows, &len, &bins, &same};
        ok = launch(sm, "sort_bins", passes, rows_grid(rows), SORT_THREADS, a);
    }
    /* which passes to run: all, or (enough keys to pay for reading it back) those that
       move something, at least one */
    int run[8], nrun = 0;
    unsigned long long back[9] = {0};
    const bool fl = dtype_info[dt].is_float && !arg;
    if (ok && (fl || n >= SKIP_MIN_KEYS) && !gpu_read(back, odd, sizeof back))
        ok = fail(sm->why, sm->whylen, "reading the sort's counts failed: %s", cuk_last_error());
    for (int p = 0; p < passes; p++)
        if (n < SKIP_MIN_KEYS || back[1 + p] < (unsigned long long)rows) run[nrun++] = p;
    if (nrun == 0) run[nrun++] = 0;
    if (ok && fl && back[0]) {
        /* -0.0 or a NaN other than the canonical one: the keys alone would not give them
           back, so the positions are sorted and the elements gathered by them */
        scratch_free(&sc);
        return by_positions(sm, x, rows, len, desc, out, kv);
    }
    /* the passes' keys and positions go back and forth between two buffers */
    const int nbuf = nrun >= 3 ? 2 : nrun - 1;
    for (int i = 0; ok && i < nbuf; i++) {
        ok = scratch(&sc, sm, (size_t)n * (size_t)kb, &kbuf[i]);
        if (ok && (arg || kv)) ok = scratch(&sc, sm, (size_t)n * (size_t)(kv ? kv->vb : 4), &pbuf[i]);
    }
    for (int i = 0; ok && i < nrun; i++) {
        const bool first = i == 0, last = i == nrun - 1;
        /* the payload's kernels: p positions, v values of 4 bytes (moved as positions
           are in the middle passes), w of 8 */
        const char *pay = arg ? "p" : !kv ? "" : kv->vb == 8 ? "w" : first || last ? "v" : "p";
        char fn[32];
        snprintf(fn, sizeof fn, "sort_pass_%s%s%s", pay, first ? "f" : "", last ? "l" : first ? "" : "m");
        const int pb = kv ? kv->vb : 4;
        Pass ps = {.fn = fn,
                   .kin = first ? x : kbuf[(i - 1) & 1],
                   .pin = first ? (kv ? kv->v : 0) : pbuf[(i - 1) & 1],
                   .kout = last ? (arg ? 0 : out) : kbuf[i & 1],
                   .pout = last ? (arg ? out : kv ? kv->vout : 0) : pbuf[i & 1],
                   .bins = bins + (cuk_devptr)(run[i] * 256 * 8),
                   .chain = chain,
                   .lb = lb,
                   .kin_es = first ? eb : kb,
                   .kout_es = last ? eb : kb,
                   .pin_es = pb,
                   .pout_es = last && arg ? 8 : pb,
                   .rows = rows,
                   .len = len,
                   .shift = 8 * run[i],
                   .desc = desc};
        ok = run_pass(sm, &ps);
    }
    scratch_free(&sc);
    return ok;
}

/* Rows of at most a tile whole in a block, longer ones by the onesweep passes. */
static bool sort_rows(SortMod *sm, cuk_devptr x, int64_t rows, int64_t len, bool desc, bool arg, cuk_devptr out) {
    return len <= sort_tile(sm->dt) ? sort_short(sm, x, rows, len, desc, arg, out)
                                     : sort_long(sm, x, rows, len, desc, arg, out, NULL);
}

bool gpu_sort_kv(DType kdt, cuk_devptr k, int64_t n, bool desc, DType vdt, cuk_devptr v, cuk_devptr kout,
                 cuk_devptr vout, cuk_module **mod, char *why, size_t whylen) {
    if (n <= 0) return true;
    SortMod sm;
    if (!mod_open(&sm, kdt, mod, why, whylen)) return false;
    const KV kv = {.v = v, .vout = vout, .vb = dtype_info[vdt].size};
    /* values travel through the passes where the tile has room for them; else (and for
       a row of one tile) they are gathered by the keys' argsort */
    if (n > sort_tile(kdt) && (kv.vb == 4 || (kv.vb == 8 && key_bytes(kdt) == 8)))
        return sort_long(&sm, k, 1, n, desc, false, kout, &kv);
    return by_positions(&sm, k, 1, n, desc, kout, &kv);
}

bool gpu_sort_rows(DType dt, cuk_devptr x, int64_t rows, int64_t len, bool desc, bool arg, cuk_devptr out,
                   cuk_module **mod, char *why, size_t whylen) {
    if (rows <= 0 || len <= 0) return true;
    if (arg && len > (int64_t)UINT32_MAX)
        return fail(why, whylen,
                    "argsort() on the GPU sorts rows of at most 2^32 - 1 elements, not %lld; the CPU backend has no such limit",
                    (long long)len);
    SortMod sm;
    return mod_open(&sm, dt, mod, why, whylen) && sort_rows(&sm, x, rows, len, desc, arg, out);
}

/* A grid of want blocks of fn, at most per times as many as the device holds at once
   (its blocks then stride over the work). */
static int64_t resident_grid(SortMod *sm, const char *fn, unsigned block, int64_t want, int per) {
    cuk_function *f;
    int resident = 0;
    if (cuk_module_function(sm->m, fn, &f) == CUK_OK) (void)cuk_function_resident(f, block, 0, &resident);
    return resident > 0 && want > (int64_t)per * resident ? (int64_t)per * resident : want;
}

/* searchsorted's plan (kernels/sort.cuh, SearchPlan: the same layout). */
enum { SEARCH_MAXL = 24, SEARCH_THREADS = 512 };
typedef struct SearchPlan {
    cuk_devptr lev[SEARCH_MAXL];
    int64_t size[SEARCH_MAXL];
    int64_t stride, ns;
    int top, r, h, bin;
} SearchPlan;

/* The samples a block keeps (at most cap) and the levels under them: the lowest level
   whose every r-th entry (r a power of two within a sector) fits; levels above a only
   where the values are many enough to pay for building them, else a binary search in a
   below evenly spaced samples. */
static SearchPlan search_plan(DType dt, int64_t m, int64_t n) {
    const int64_t g = 32 / dtype_info[dt].size, kb = 32 / key_bytes(dt), cap = 32768 / key_bytes(dt);
    SearchPlan p = {.size = {m}};
    if (m == 0) return p;
    const bool build = m / g <= 8 * n;
    int64_t stride = 1, f = g;
    for (int l = 0; l < SEARCH_MAXL && (l == 0 || build); l++) {
        if (l) stride *= f, f = kb, p.size[l] = (m + stride - 1) / stride;
        for (int64_t r = 1; r <= f; r *= 2)
            if ((p.size[l] + r - 1) / r <= cap) {
                p.top = l, p.r = (int)r, p.stride = stride * r, p.ns = (p.size[l] + r - 1) / r;
                goto found;
            }
    }
    p.bin = 1, p.top = 0, p.stride = (m + cap - 1) / cap, p.ns = (m + p.stride - 1) / p.stride;
found:
    while (((int64_t)1 << p.h) < p.ns) p.h++;
    return p;
}

bool gpu_searchsorted(DType dt, cuk_devptr a, int64_t m, cuk_devptr v, int64_t n, bool right, cuk_devptr out,
                      cuk_module **mod, char *why, size_t whylen) {
    if (n <= 0) return true;
    SortMod sm;
    if (!mod_open(&sm, dt, mod, why, whylen)) return false;
    SearchPlan p = search_plan(dt, m, n);
    Scratch sc = {0};
    bool ok = true;
    if (p.top >= 1) {
        const int64_t kb = 32 / key_bytes(dt);
        size_t bytes = 0;
        for (int l = 1; l <= p.top; l++) bytes += (size_t)((p.size[l] + kb - 1) / kb * kb) * (size_t)key_bytes(dt);
        cuk_devptr base = 0;
        ok = scratch(&sc, &sm, bytes, &base);
        for (int l = 1; ok && l <= p.top; l++) {
            p.lev[l] = base;
            base += (cuk_devptr)((p.size[l] + kb - 1) / kb * kb) * (cuk_devptr)key_bytes(dt);
        }
        void *ba[] = {&a, &p};
        const int64_t g = (p.size[1] + 255) / 256;
        ok = ok && launch(&sm, "search_build", g < 65536 ? g : 65536, 1, 256, ba);
    }
    int r = right;
    void *args[] = {&a, &m, &v, &n, &r, &out, &p};
    /* each block fills its samples once: as many blocks as are resident, grid-striding */
    const int64_t g = resident_grid(&sm, "sort_search", SEARCH_THREADS, (n + SEARCH_THREADS - 1) / SEARCH_THREADS, 1);
    ok = ok && launch(&sm, "sort_search", g < 65536 ? g : 65536, 1, SEARCH_THREADS, args);
    scratch_free(&sc);
    return ok;
}

/* ---- unique ----------------------------------------------------------------------------- */

/* kernels/sort.cuh, UniqState */
typedef struct UniqState {
    uint64_t count;
    uint32_t full, pad;
    int64_t pos_max, pos_zero;
} UniqState;
enum { UNIQ_MIN = 1 << 14, UNIQ_TABLE_BYTES = 32 << 20 /* stays in the L2 */ };

bool gpu_unique(DType dt, cuk_devptr x, int64_t n, cuk_devptr (*alloc)(void *ctx, int64_t count), void *actx,
                bool *fits, cuk_module **mod, char *why, size_t whylen) {
    *fits = false;
    if (n < UNIQ_MIN) return true;
    SortMod sm;
    if (!mod_open(&sm, dt, mod, why, whylen)) return false;
    const int kb = key_bytes(dt);
    int64_t slots = 1024;
    while (slots < 2 * n && slots * kb < UNIQ_TABLE_BYTES) slots *= 2;
    Scratch sc = {0};
    cuk_devptr table, st;
    UniqState h = {.pos_max = INT64_MAX, .pos_zero = INT64_MAX};
    bool ok = scratch(&sc, &sm, (size_t)slots * (size_t)kb, &table) && scratch(&sc, &sm, sizeof h + 8, &st);
    if (ok && (cuk_memset_d8(table, 0xff, (size_t)slots * (size_t)kb, gpu_stream()) != CUK_OK ||
               !gpu_write(st, &h, sizeof h) || cuk_memset_d8(st + sizeof h, 0, 8, gpu_stream()) != CUK_OK))
        ok = fail(why, whylen, "setting up unique()'s table failed: %s", cuk_last_error());
    int64_t tmask = slots - 1;
    if (ok) {
        void *a[] = {&x, &n, &table, &tmask, &st};
        ok = launch(&sm, "uniq_insert", resident_grid(&sm, "uniq_insert", 256, (n + 2047) / 2048, 4), 1, 256, a);
    }
    if (ok && !gpu_read(&h, st, sizeof h))
        ok = fail(why, whylen, "reading unique()'s count failed: %s", cuk_last_error());
    if (ok && !h.full) {
        /* the distinct values packed, then sorted into the result */
        const int64_t count = (int64_t)h.count + (h.pos_max != INT64_MAX);
        cuk_devptr packed, out = 0, at = st + sizeof h;
        ok = scratch(&sc, &sm, (size_t)count * (size_t)dtype_info[dt].size, &packed);
        if (ok) {
            int64_t g = (slots + 1 + 255) / 256;
            void *a[] = {&x, &table, &tmask, &st, &packed, &at};
            ok = launch(&sm, "uniq_pack", g < 4096 ? g : 4096, 1, 256, a);
        }
        if (ok && !(out = alloc(actx, count))) ok = false;
        ok = ok && sort_rows(&sm, packed, 1, count, false, false, out);
        *fits = ok;
    }
    scratch_free(&sc);
    return ok;
}

/* ---- top_k ---------------------------------------------------------------------------- */

/* top_k by selection (kernels/sort.cuh, topk_*): the entries one block sorts, and the
   rounds of sampling and filtering before it (the first over x), after which the host
   sorts a row that still has more. */
static int topk_m(DType dt) { return 16384 / key_bytes(dt); }
enum { TOPK_ROUNDS = 3, TOPK_THREADS = 512 /* kernels/sort.cuh, CUK_TOPK_THREADS */ };

/* The whole sort's way: each row argsorted (descending), its first k positions kept. */
static bool topk_by_sort(SortMod *sm, cuk_devptr x, int64_t rows, int64_t len, int64_t k, cuk_devptr out) {
    Scratch sc = {0};
    cuk_devptr idx;
    bool ok = scratch(&sc, sm, (size_t)(rows * len) * 8, &idx) && sort_rows(sm, x, rows, len, true, true, idx);
    if (ok) {
        void *a[] = {&idx, &len, &rows, &k, &out};
        const int64_t g = (rows * k + 255) / 256;
        ok = launch(sm, "topk_take", g < 65536 ? g : 65536, 1, 256, a);
    }
    scratch_free(&sc);
    return ok;
}

bool gpu_topk_rows(DType dt, cuk_devptr x, int64_t rows, int64_t len, int64_t k, cuk_devptr out, cuk_module **mod,
                   char *why, size_t whylen) {
    if (rows <= 0 || k <= 0) return true;
    if (len > (int64_t)UINT32_MAX - 1)
        return fail(why, whylen, "top_k() on the GPU takes rows of at most 2^32 - 2 elements, not %lld; the CPU backend has no such limit",
                    (long long)len);
    SortMod sm;
    if (!mod_open(&sm, dt, mod, why, whylen)) return false;
    const int m = topk_m(dt), kb = key_bytes(dt), eb = dtype_info[dt].size;
    /* the first sample: a 128th of the row, 256 to m entries (a power of two; each a
       scattered load) */
    int ns = 256;
    while (ns < m && (int64_t)ns * 2 * 128 <= len) ns *= 2;
    /* the first filter keeps about 2k + 8 len / ns entries of a row: room for four
       times that (more is the bad luck the host's sort of the row answers) */
    int64_t cap = 4 * (2 * k + 8 * (len / ns + 1) + 8) + 256;
    if (cap > len) cap = len;
    const size_t ebytes = (size_t)kb + 4, need = (size_t)rows * (size_t)cap * ebytes * 2;
    /* selection where k is small beside the row and its buffers beside the input */
    if (len <= sort_tile(dt) || k > m / 4 || 16 * k > len || need > (size_t)(rows * len) * (size_t)eb / 2 + (64u << 20))
        return topk_by_sort(&sm, x, rows, len, k, out);
    Scratch sc = {0};
    cuk_devptr bk[2], bi[2], cnt, thk, thi, none = 0;
    int64_t *h = malloc((size_t)rows * sizeof *h);
    bool ok = h != NULL;
    if (!ok) fail(why, whylen, "out of host memory for top_k's counts");
    for (int i = 0; ok && i < 2; i++)
        ok = scratch(&sc, &sm, (size_t)(rows * cap) * (size_t)kb, &bk[i]) &&
             scratch(&sc, &sm, (size_t)(rows * cap) * 4, &bi[i]);
    ok = ok && scratch(&sc, &sm, (size_t)rows * 8 * TOPK_ROUNDS, &cnt) &&
         scratch(&sc, &sm, (size_t)rows * (size_t)kb, &thk) && scratch(&sc, &sm, (size_t)rows * 4, &thi);
    if (ok && cuk_memset_d8(cnt, 0, (size_t)rows * 8 * TOPK_ROUNDS, gpu_stream()) != CUK_OK)
        ok = fail(why, whylen, "clearing top_k's counts failed: %s", cuk_last_error());
    /* every round launched without reading anything back: a row that needs no more
       filtering is left in its round's buffer (the later rounds' kernels skip it). The
       first keeps about 2k + 8 len / ns entries a row: where twice that is few enough for
       one block, the later rounds would find every row done and are not launched (their
       launches cost 30-60 us on 4096 rows; a row that still keeps too many is sorted) */
    const int rounds = 2 * (2 * k + 8 * (len / ns + 1)) <= m ? 1 : TOPK_ROUNDS;
    const unsigned gy = rows_grid(rows);
    const int64_t per_block = 256 * 8, rgrid = rows < 65536 ? rows : 65536;
    for (int round = 0; ok && round < rounds; round++) {
        /* round 0 filters x, each later one the entries the one before kept */
        const int cur = round & 1;
        cuk_devptr xs = round ? none : x, kin = round ? bk[cur ^ 1] : none, iin = round ? bi[cur ^ 1] : none;
        cuk_devptr cin = round ? cnt + (cuk_devptr)((round - 1) * rows * 8) : none, cout = cnt + (cuk_devptr)(round * rows * 8);
        int r = round;
        void *sa[] = {&xs, &len, &kin, &iin, &cin, &cap, &rows, &k, &r, &ns, &thk, &thi};
        ok = launch(&sm, "topk_sample", rgrid, 1, TOPK_THREADS, sa);
        int64_t gx = ((round ? cap : len) + per_block - 1) / per_block, most = 4096 / gy;
        if (gx > most) gx = most > 0 ? most : 1;
        void *fx[] = {&x, &len, &cap, &rows, &k, &thk, &thi, &bk[cur], &bi[cur], &cout};
        void *fb[] = {&kin, &iin, &cin, &cap, &rows, &k, &thk, &thi, &bk[cur], &bi[cur], &cout};
        ok = ok && launch(&sm, round ? "topk_filter_b" : "topk_filter_x", gx, gy, 256, round ? fb : fx);
    }
    /* a row's count carries on past the round that left few enough entries */
    cuk_devptr clast = cnt + (cuk_devptr)((rounds - 1) * rows * 8);
    if (ok) {
        int nr = rounds;
        void *a[] = {&bk[0], &bi[0], &bk[1], &bi[1], &cnt, &nr, &cap, &rows, &k, &out};
        ok = launch(&sm, "topk_final", rgrid, 1, TOPK_THREADS, a);
    }
    if (ok && !gpu_read(h, clast, (size_t)rows * 8))
        ok = fail(why, whylen, "reading top_k's counts failed: %s", cuk_last_error());
    /* the rows selection failed for (bad luck): sorted */
    for (int64_t i = 0; ok && i < rows; i++)
        if (h[i] < k || h[i] > cap || h[i] > m)
            ok = topk_by_sort(&sm, x + (cuk_devptr)(i * len * eb), 1, len, k, out + (cuk_devptr)(i * k * 8));
    free(h);
    scratch_free(&sc);
    return ok;
}
