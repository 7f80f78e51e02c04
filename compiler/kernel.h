/* Kernel plans: the fusion pass (fuse.c) groups each statement's array Vals into device
   kernels; kernel.c lays out their parameter blocks and launch shapes and prints them;
   the CUDA emitter (emit_cuda.c) and the GPU executor (exec/gpu/exec.c) read them. */
#ifndef CUK_KERNEL_H
#define CUK_KERNEL_H
#include <stdbool.h>
#include <stdio.h>

#include "ir.h"

typedef enum {
    K_MAP,    /* elementwise over the root's shape (rule 1), incl. index-transform loads */
    K_REDUCE, /* one or more sibling reductions over one iteration space (rules 2, 4) */
    K_SCAN,   /* a scan with producers fused in and consumers fused out (rule 3) */
    K_ROW,    /* a map whose last-axis reductions are computed per row in-block (rule 5) */
    K_MATMUL, /* a plain matrix product */
    K_HIST,   /* a scatter or histogram over its indices, producers fused in (rule 6); the
                 executor first copies (or fills) the destination into the output */
    K_COMPACT,/* x[mask], filter, nonzero: x and mask computed per element, the kept ones
                 written at their rank through a decoupled look-back over tiles (rule 6) */
} KernelKind;
extern const char *const kernel_kind_name[];

/* One word of a kernel's parameter block. Every kernel takes a single struct of 64-bit
   words; the emitter names them and the GPU executor fills them, both from the layout
   kernel_layout_params() gives, so the two agree on it by construction. */
typedef enum {
    KP_N,        /* elements of the iteration space */
    KP_FLAT,     /* bit 0: every leaf is laid out like the iteration space (no index math);
                    bit 1 (KFLAT_IX32): every index and offset fits 32-bit arithmetic */
    KP_SHAPE,    /* iteration shape, axis a */
    KP_BSTRIDE,  /* leaf v: its own C-order stride for iteration axis a, 0 where broadcast */
    KP_OWNSHAPE, /* generator or index-transform node v: its own shape, axis a */
    KP_SRCSTRIDE,/* index-transform node v: stride of its source b (arg) for axis a, in the
                    output's axis order (transpose) or the source's (others) */
    KP_SLSTART,  /* slice v: normalised start on source axis a */
    KP_SLSTEP,   /* slice v: step on source axis a */
    KP_CATOFF,   /* concat v: offset of arg b along the concat axis */
    KP_IN,       /* device pointer of materialised input v */
    KP_OUT,      /* device pointer of output v */
    KP_SCALAR,   /* host scalar v (the Scalar's 8 bytes: doubles for floats) */
    KP_SCRATCH,  /* device scratch: reduction partials, scan tile states, tile counter */
    KP_OUTER,    /* axis kernels: product of the axes before the reduced/scanned one */
    KP_LEN,      /* axis kernels: length of the reduced/scanned axis (rows: row length) */
    KP_INNER,    /* axis kernels: product of the axes after it */
    KP_MM,       /* matmul: a = 0, 1, 2 for m, k, n */
    /* Gather bounds checks: */
    KP_ERR,      /* device pointer of this plan's error block, 4 zeroed 64-bit words: a
                    kernel finding gather v's index out of bounds does
                    if (atomicCAS(&e[0], 0, v->id + 1) == 0) { e[1] = index; e[2] = size; }
                    and reads no element; the executor reports it as the CPU backend does */
    KP_GLEN,     /* gather v: size of axis 0 of its source (negative indices add it) */
    KP_PADW,     /* pad v: its width */
    KP_ROLLSHIFT,/* roll v: its shift modulo the rolled length, in [0, length) */
    KP_HBINS,    /* K_HIST: the length of the destination (indices outside it are skipped) */
    KP_UPD,      /* update v: b = 0: its region's length on axis a (1 for an index); b = 1:
                    the size of its value (arg 1) along the value's axis a */
} KPKind;

/* K_MAP kernels with index transforms have their body twice, with 32-bit (int) and
   64-bit index arithmetic (emit_cuda.c); the executor sets this bit of the KP_FLAT word
   when every size, stride, slice bound and offset of the launch is under KIX32_LIMIT,
   so that no index, offset or intermediate of the chains can overflow an int. */
#define KFLAT_IX32 2
/* Bit 2 of the KP_FLAT word: the tiled transpose of a map kernel (kernel_tiled_transpose)
   has the iteration space's shape, so its tiles are the output's; when it is broadcast
   instead (a (2, 1) transpose added to a (2, 2) value), the kernel takes its general
   path, which reads the transpose through its index transform. */
#define KFLAT_TILED 4
#define KIX32_LIMIT (1LL << 30)
static inline bool kparam_is_index(KPKind kind) {
    switch (kind) {
    case KP_N: case KP_SHAPE: case KP_BSTRIDE: case KP_OWNSHAPE: case KP_SRCSTRIDE: case KP_SLSTART:
    case KP_SLSTEP: case KP_CATOFF: case KP_OUTER: case KP_LEN: case KP_INNER: case KP_GLEN: case KP_PADW:
    case KP_ROLLSHIFT: case KP_HBINS: case KP_UPD: return true;
    default: return false;
    }
}

typedef struct KParam {
    KPKind kind;
    Val *v;
    int a, b;
} KParam;

typedef struct Kernel {
    int id;             /* index in the plan, k<id> */
    KernelKind kind;
    const char *name;   /* the __global__ function: cuk_<fn>_k<id> */
    const Stmt *stmt;   /* the statement whose values it computes */
    Val *space;         /* the Val whose shape is the iteration space */
    int rank;           /* rank of the iteration space */
    int axis;           /* K_REDUCE/K_SCAN: AXIS_ALL or the axis; K_ROW: rank - 1 */
    Val **vals;         /* fused Vals in topological order (constants left out) */
    int nvals;
    Val **ins;          /* materialised arrays read from memory */
    int nins;
    Val **scalars;      /* rank-0 host values passed by value */
    int nscalars;
    Val **alias;        /* pairs (read, canonical): repeated reads of one slot share an input */
    int nalias;
    Val **outs;         /* values written to memory */
    int nouts;
    Val **reds;         /* K_REDUCE: the reductions; K_ROW: the in-row reductions, in order */
    int nreds;
    Val *scan;          /* K_SCAN; K_COMPACT: the compaction; K_MATMUL: the product */
    KParam *params;     /* the parameter block, see kernel_layout_params() */
    int nparams;
    int block;          /* threads per block the emitted code assumes */
    int items;          /* K_SCAN, K_COMPACT, segmented K_REDUCE: elements per thread;
                           K_MAP: 16-byte vectors per thread (MAP_UNROLL, MAP_CHAIN_UNROLL) */
    bool ix32;          /* K_MAP with index transforms: the body is written twice, the
                           second with 32-bit index arithmetic (KFLAT_IX32) */
    bool row_out;       /* K_ROW: its output has one element per row (rule 5's per-row values),
                           not the rows' shape */
    bool *ins_direct;   /* by position in ins: read at the iteration index. The others (a
                           segmented reduction's offsets, gather sources) are read at computed
                           positions only: they have no broadcast strides and do not make a
                           launch not flat */
} Kernel;

/* K_MAP: 16-byte vectors per thread. A block covers one chunk of block x MAP_UNROLL
   consecutive vectors and the grid (kernel_geometry) has one block per chunk, so the
   vector path is straight-line code with no loop (measured against a grid-stride loop
   over an SM-count grid and against a loop over chunks: docs/performance.md). */
#define MAP_UNROLL 2
/* The tiled transpose (emit_map_transposed): one 32 x 32 tile a block, the tiles in
   groups of this many tile rows. */
#define TRANSPOSE_GROUP 32
#define MAP_CHAIN_UNROLL 2

/* K_HIST: a block keeps its own bins in shared memory (HIST_SHARED_BYTES: 8192
   32-bit counters for bincount and histogram, 4096 64-bit or 8192 32-bit sums for a
   builtin add) and adds each touched one to the result at its end; with more bins
   every update is a global atomic. A block takes HIST_PER_BLOCK elements at least, the
   grid HIST_MAX_GRID blocks at most: 24 per SM of an H100/H200 (132 SMs), so about
   four waves, whose ends overlap. bench/exp/hist_variants.cu (H100, 2026-11-27, 2^28
   f32 into 256 bins, one shared copy a block): 6 a SM 2727 GB/s, 12 2372, 24 2855,
   against 2766 for the loads alone. */
#define HIST_SHARED_BYTES 32768
#define HIST_PER_BLOCK 4096
#define HIST_MAX_GRID 3168
/* Axis reductions (kernel_geometry, emit_axis_reduce): along a kept axis, the reduced
   axis is split until the blocks fill the device once (its resident blocks, or
   AXIS_BLOCKS when not known: 16 of 128 threads per SM of an H100/H200), each part at
   least AXIS_MIN_PART long; grid-stride loops take at most AXIS_MAX_GRID blocks. */
#define AXIS_BLOCKS 2112
#define AXIS_MIN_PART 64
#define AXIS_MAX_GRID 1048576

/* K_SCAN scratch (kernels/scan.cuh, CUK_TILE_BYTES): the tile ticket, then one 128-byte
   line per tile state from byte 128, so that blocks polling a predecessor's state do not
   share a line with the states being written (measured: docs/performance.md). */
#define SCAN_STATE_OFFSET 128
#define SCAN_TILE_BYTES 128

/* K_COMPACT scratch (kernels/compact.cuh): the same tile ticket and 128-byte tile state
   lines as a scan (each state one 64-bit word, flag in the top two bits, count below),
   and at byte COMPACT_COUNT_OFFSET the total kept, which the last tile writes and the
   executor copies to the host to learn the result's size. The result is allocated at
   x's size (all kept), so a compaction holds up to n elements until it is freed. */
#define COMPACT_COUNT_OFFSET 8

/* Segmented reductions (segments=offs) run in three entries over one parameter block
   (emit_cuda.c emit_segred): a prepass over the offsets (<name>_sp), one block per tile of
   SEGRED_BLOCK threads x SEGRED_ITEMS consecutive elements (<name>), and a fix-up of the
   segments that cross tiles (<name>_sf). Their scratch (kernels/scan.cuh cuk_sr_*): for
   nt tiles, 8 * (2 * nt + 1) bytes of segment numbers rounded up to 32, then two
   SEGRED_REC_BYTES records per tile and fused reduction. */
#define SEGRED_BLOCK 256
#define SEGRED_ITEMS 16
#define SEGRED_REC_BYTES 32
/* The prepass and the fix-up: grid-stride loops over at most this many blocks. */
#define SEGRED_AUX_GRID 8192

typedef struct Plan {
    Fn *fn;
    Kernel **kernels;
    int nkernels;
} Plan;

typedef struct PlanSet {
    const Program *prog;
    Plan **plans; /* one per p->fns[i] */
    int nplans;
} PlanSet;

/* fuse.c: groups the Vals of fn into kernels, sets each fused Val's v->kernel (the
   first kernel that computes it; cheap values with consumers in several kernels are
   recomputed in each) and returns the plan. Never fails on valid IR. */
Plan *fuse_fn(Arena *a, Fn *fn);
PlanSet *fuse_program(Arena *a, const Program *p);

/* ---- kernel.c ---- */

const Plan *planset_find(const PlanSet *ps, const Fn *fn);
/* The parameter block of a kernel whose Vals, inputs, scalars and outputs are known. */
void kernel_layout_params(Arena *a, Kernel *k);
/* Threads per block and (scans) elements per thread the emitted code assumes, and the
   other launch facts derived once (ix32, ins_direct). */
void kernel_launch_shape(Kernel *k, Arena *a);
/* Bytes of the widest element k reads or writes (at least 1). */
int kernel_widest_elem(const Kernel *k);
/* kernel_code_heavy: past this weight (val_code_weight) a kernel has no vector path. */
#define KERNEL_VEC_WEIGHT 1024
bool kernel_code_heavy(const Kernel *k);
/* A segmented reduction kernel (see SEGRED_BLOCK): its launch is three entries. */
bool kernel_segred(const Kernel *k);
/* A matrix product of f32 or f64: one cuBLASLt call (runtime/blas.c), no emitted code.
   Integer products stay an emitted kernel. */
bool kernel_blas(const Kernel *k);
/* What a kernel_blas kernel's call computes, read off its Vals (fuse.c matmul_epilogue
   and mm_reads_transposed put them there): relu?(alpha * A @ B + bias) with A and B the
   arrays read, each possibly transposed where it lies. */
typedef struct BlasCall {
    Val *a, *b;           /* the arrays read: the product's operands, or the transposes' sources */
    bool trans_a, trans_b;
    Val *alpha;           /* a scalar, or NULL */
    Val *bias;            /* a vector along the rows, or NULL */
    bool relu;
} BlasCall;
void kernel_blas_call(const Kernel *k, BlasCall *c);
/* Whether a reduction of k combines with a lambda (element order kept). */
bool kernel_red_lambda(const Kernel *k);

/* Stable text for `cukc emit-ir`, one block per function:
     plan saxpy: 1 kernel
     kernel k0 map: mul add  inputs: %a %x %y  outputs: %5
   ops are the IR spellings (reductions red.<op>, scans scan.<op>, with (axis=k) where
   not over everything); inputs are slot names (%x) or value ids (%7). */
void plan_print(FILE *out, const Plan *p);
void planset_print(FILE *out, const PlanSet *ps);
/* The plans as a Graphviz digraph (cukc emit-ir --dot, cukc graph). */
void planset_print_dot(FILE *out, const PlanSet *ps);

/* The input a leaf read stands for (itself unless it repeats a slot read). */
Val *kernel_canon(const Kernel *k, Val *v);
/* Index chains (rule 1): an index transform whose operand is another index transform
   (through checks) computed in the same kernel reads it at the source indices it wants,
   never from memory: the 5-point stencil over pad(x, 1) is one kernel. index_chains
   says which ops take part, kernel_chain_src gives the transform x reads through (or
   NULL: x is read from memory or is a scalar), kernel_direct whether v is also needed at
   the iteration index (an output, or read by something other than a chain). */
bool index_chains(int op);
Val *kernel_chain_src(const Kernel *k, Val *x);
bool kernel_direct(const Kernel *k, const Val *v);
/* An elementwise value computed in k that an index chain may read at its own source
   indices (fuse.c ew_chain_operand; emit_cuda.c emit_ew_at). */
bool kernel_ew_chain(const Kernel *k, const Val *x);
/* Operand j of gather v that its kernel computes instead of reading it from memory
   (fuse.c): an index of the gather's shape, an iota source, a reshaped source. */
bool gather_computes(const Val *v, int j);
/* In-place updates: a map kernel whose one output is an element or slice update over its
   shape (a[i, lo:hi] = e) also has an entry point over the region alone, named
   <name>_rg, with the same parameter block (emit_cuda.c, emit_update_region): the GPU
   executor launches it into a's own buffer when nothing else holds a. The update, or
   NULL for other kernels. */
Val *kernel_region_update(const Kernel *k);
/* The grid (0: one full wave, for grid-stride kernels) and the scratch bytes k is
   launched with over an iteration space of n elements; axis kernels pass the sizes
   before (outer), along and after (inner) their axis, which is -1 for whole-array
   kernels. One definition for the executor and the benchmarks. False when n needs more
   than 2^31 - 1 blocks of a map (one chunk each) or a flattened scan (one tile each):
   some 10^12 elements, more than any device holds, but refused rather than cut short.
   resident: how many blocks of k's fit on the device at once (kernel_needs_resident
   says whether it matters; 0 when not known). */
bool kernel_geometry(const Kernel *k, int64_t n, int64_t outer, int64_t inner, int axis, int64_t resident,
                     unsigned *grid, size_t *scratch);
bool kernel_needs_resident(const Kernel *k, int axis);
/* A map kernel whose one index transform swaps the last two axes of an input (x.T, a
   batch of them, with elementwise work around it): that transpose, emitted as 32 x 32
   tiles through shared memory (emit_cuda.c emit_map_transposed); else NULL. */
Val *kernel_tiled_transpose(const Kernel *k);
/* A kernel's entry points besides its own (<name> + kernel_entry_suffix[e]): an
   update's region entry (kernel_region_update), a row kernel's for several short rows a
   block, for rows longer than a block holds, and for those a thread-block cluster holds
   (emit_cuda.c emit_row). */
enum { KE_MAIN, KE_RG, KE_GR, KE_LG, KE_CL, KE_COUNT };
extern const char *const kernel_entry_suffix[KE_COUNT];
/* The row kernel's entry for rows of len by size alone: KE_GR, KE_MAIN (a row to the
   block) or KE_LG (longer than a block holds; kernel_row_launch may give KE_CL). */
int kernel_row_entry(const Kernel *k, int64_t len);
/* What kernel_row_launch needs of the device, found once a session: its L2 in bytes
   (<= 0: unknown, or not to be used), its SMs, whether it runs thread-block clusters,
   and the short-row block (<= 0: ROW_SHORT_BLOCK). */
typedef struct RowDevice {
    int64_t l2_bytes;
    int sm_count;
    bool clusters;
    int short_block;
    bool two_pass; /* CUK_ROW_ONLINE=0: no online pairs (kernel_row_passes) */
} RowDevice;
/* How a row kernel runs `rows` rows of len: the entry, grid, block and cluster size (0:
   none).
   - KE_MAIN: a block a row.
   - KE_GR (rows of at most half a block's worth): T threads a row (a power of two from a
     warp to the block, the fewest that hold the row in registers), blocks of
     ROW_SHORT_BLOCK threads (T if more), so that blocks' phases (loads, reductions,
     stores) overlap on an SM, and a grid that gives every group of T threads a row.
   - KE_CL (longer than a block holds, at most ROW_CLUSTER_MAX blocks of
     ROW_CLUSTER_BLOCK, on a device with clusters, for kernels writing values over the
     rows): a row to a cluster. Kernels writing one value a row keep KE_LG: logsumexp
     over 4096 x 65536 ran at 72% of copy there with two passes (the second from the
     L2) against 60% in clusters of 4 x 512 threads on an H100, and at 93-97% with its
     online pair's one pass. Blocks of 256 rather than
     the row kernels' 512, so that each SM has 4 of them, at different phases.
   - KE_LG (the rest): read once per phase, so at most as many rows at a time as half
     the L2 holds (the SMs at least), the later phases reading them from the L2; a row
     for every block when one pass reads it (kernel_row_passes: logsumexp's online
     pair). */
#define ROW_SHORT_BLOCK 128
#define ROW_CLUSTER_MAX 8
#define ROW_CLUSTER_BLOCK 256
typedef struct RowLaunch {
    int entry;
    unsigned grid, block, cluster;
} RowLaunch;
RowLaunch kernel_row_launch(const Kernel *k, int64_t len, int64_t rows, const RowDevice *d);
/* Its parts: the threads of a short row (T); the cluster size for a long row (0: none,
   whatever the device). */
int kernel_short_row_threads(const Kernel *k, int64_t len);
int kernel_row_cluster(const Kernel *k, int64_t len);
/* Whether reduction j of row kernel k sums exp(e - m) against the max m of the same e,
   reduction j - 1: the two then fold as one (max, sum) pair, in one pass (emit_cuda.c,
   unless CUK_ROW_ONLINE=0 when the kernel is emitted, for A/B runs). */
bool kernel_row_online(const Kernel *k, int j);
/* Whether reduction j of row kernel k sums (e - a)^2 for a value a a row computed from
   reduction j - 1, the sum of the same e (layer norm's variance): returns a, and the two
   are exchanged as one (count, sum, centred squares) in the short-row and cluster
   entries (emit_cuda.c; CUK_ROW_ONLINE=0 turns it off too). NULL if not. */
Val *kernel_row_centred(const Kernel *k, int j);
/* How many times the KE_LG entry reads each row: a pass a reduction (an online pair
   counts once unless !online), and one for the outputs over the rows. */
int kernel_row_passes(const Kernel *k, bool online);
/* How many entry points the emitted code of k has (its own and the suffixed ones). */
int kernel_entry_count(const Kernel *k);
bool row_value_reshape(const Kernel *k, const Val *v);
/* Bytes of one part's record of reduction r in a split axis reduction (scratch). */
int axis_rec_bytes(const Val *r);

/* K_HIST kernels: a reduce_by_index, histogram or bincount folded in element order
   (deterministic=true on floats); one whose blocks keep their bins in shared memory
   (a builtin add, not ordered); one that counts (an integer add of the constant 1:
   32-bit private counters). */
bool kernel_hist_ordered(const Val *h);
bool kernel_hist_private(const Val *h);
bool kernel_hist_counts(const Val *h);
/* The dynamic shared memory k is launched with over inner bins (K_HIST private bins:
   the counters and, for histogram, the edge table after them; at most
   HIST_SHARED_BYTES, and none when the bins do not fit). */
size_t kernel_shmem(const Kernel *k, int64_t inner);
/* The word index of a parameter, or -1. */
int kparam_find(const Kernel *k, KPKind kind, const Val *v, int a, int b);
/* Where a reduction's or scan's initial value comes from (v->init or args[1]), or NULL. */
Val *red_init(const Val *v);
/* The identity of a builtin combine for dtype dt as a C literal, or NULL (lambdas). */
const char *red_identity(RedOp r, DType dt);

/* ---- emit_cuda.c ---- */

/* One CUDA C translation unit for a program (no system headers: it starts
   with the embedded ops.h, philox.h and the kernels/ .cuh blocks), one extern "C" __global__ per
   kernel. The text lives in a. */
char *emit_cuda_program(Arena *a, const Program *p, const PlanSet *ps);
/* The same for one function's plan only (what the pipeline gives the GPU executor). */
char *emit_cuda_plan(Arena *a, const Plan *pl);

#endif
