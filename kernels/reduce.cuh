/* Deterministic warp and block reductions (fixed shuffle trees, no atomics on values),
   instantiated by the emitted kernels (compiler/emit_cuda.c) for any combine functor.
   Each value travels with a flag saying whether it holds any element, so no identity
   is needed and user lambdas work as they are. */
#ifndef CUK_REDUCE_CUH
#define CUK_REDUCE_CUH

#define CUK_FULL_MASK 0xffffffffu

CUK_FN float cuk_shfl_down(float v, int d) { return __shfl_down_sync(CUK_FULL_MASK, v, d); }
CUK_FN double cuk_shfl_down(double v, int d) { return __shfl_down_sync(CUK_FULL_MASK, v, d); }
CUK_FN int32_t cuk_shfl_down(int32_t v, int d) { return __shfl_down_sync(CUK_FULL_MASK, v, d); }
CUK_FN uint32_t cuk_shfl_down(uint32_t v, int d) { return __shfl_down_sync(CUK_FULL_MASK, v, d); }
CUK_FN int64_t cuk_shfl_down(int64_t v, int d) { return __shfl_down_sync(CUK_FULL_MASK, v, d); }
CUK_FN uint64_t cuk_shfl_down(uint64_t v, int d) { return __shfl_down_sync(CUK_FULL_MASK, v, d); }
CUK_FN uint8_t cuk_shfl_down(uint8_t v, int d) {
    return (uint8_t)__shfl_down_sync(CUK_FULL_MASK, (int)v, d);
}
CUK_FN float cuk_shfl_up(float v, int d) { return __shfl_up_sync(CUK_FULL_MASK, v, d); }
CUK_FN double cuk_shfl_up(double v, int d) { return __shfl_up_sync(CUK_FULL_MASK, v, d); }
CUK_FN int32_t cuk_shfl_up(int32_t v, int d) { return __shfl_up_sync(CUK_FULL_MASK, v, d); }
CUK_FN uint32_t cuk_shfl_up(uint32_t v, int d) { return __shfl_up_sync(CUK_FULL_MASK, v, d); }
CUK_FN int64_t cuk_shfl_up(int64_t v, int d) { return __shfl_up_sync(CUK_FULL_MASK, v, d); }
CUK_FN uint64_t cuk_shfl_up(uint64_t v, int d) { return __shfl_up_sync(CUK_FULL_MASK, v, d); }
CUK_FN uint8_t cuk_shfl_up(uint8_t v, int d) {
    return (uint8_t)__shfl_up_sync(CUK_FULL_MASK, (int)v, d);
}

CUK_FN float cuk_shfl_idx(float v, int l) { return __shfl_sync(CUK_FULL_MASK, v, l); }
CUK_FN double cuk_shfl_idx(double v, int l) { return __shfl_sync(CUK_FULL_MASK, v, l); }
CUK_FN int32_t cuk_shfl_idx(int32_t v, int l) { return __shfl_sync(CUK_FULL_MASK, v, l); }
CUK_FN uint32_t cuk_shfl_idx(uint32_t v, int l) { return __shfl_sync(CUK_FULL_MASK, v, l); }
CUK_FN int64_t cuk_shfl_idx(int64_t v, int l) { return __shfl_sync(CUK_FULL_MASK, v, l); }
CUK_FN uint64_t cuk_shfl_idx(uint64_t v, int l) { return __shfl_sync(CUK_FULL_MASK, v, l); }
CUK_FN uint8_t cuk_shfl_idx(uint8_t v, int l) { return (uint8_t)__shfl_sync(CUK_FULL_MASK, (int)v, l); }

/* argmin/argmax carry the value and its index; ties and NaNs go to the lower index, NaN
   wins (NumPy's rules). */
template <class T> struct cuk_arg {
    T v;
    int64_t i;
};
/* The three warp shuffles of a struct template S<T>, field by field: FIELDS(F) applies
   F to each field's name (cuk_arg here, cuk_seg in scan.cuh). */
#define CUK_SHFL_F_DOWN(f) r.f = cuk_shfl_down(a.f, d);
#define CUK_SHFL_F_UP(f) r.f = cuk_shfl_up(a.f, d);
#define CUK_SHFL_F_IDX(f) r.f = cuk_shfl_idx(a.f, d);
#define CUK_SHFL_STRUCT(S, FIELDS)                                                                    \
    template <class T> CUK_FN S<T> cuk_shfl_down(S<T> a, int d) { S<T> r; FIELDS(CUK_SHFL_F_DOWN) return r; } \
    template <class T> CUK_FN S<T> cuk_shfl_up(S<T> a, int d) { S<T> r; FIELDS(CUK_SHFL_F_UP) return r; }     \
    template <class T> CUK_FN S<T> cuk_shfl_idx(S<T> a, int d) { S<T> r; FIELDS(CUK_SHFL_F_IDX) return r; }
#define CUK_ARG_FIELDS(F) F(v) F(i)
CUK_SHFL_STRUCT(cuk_arg, CUK_ARG_FIELDS)

template <class T> struct cuk_argmin_op {
    __device__ __forceinline__ cuk_arg<T> operator()(cuk_arg<T> a, cuk_arg<T> b) const {
        bool an = a.v != a.v, bn = b.v != b.v;
        if (an || bn) return (an && bn) ? (a.i < b.i ? a : b) : (an ? a : b);
        return (a.v < b.v || (a.v == b.v && a.i < b.i)) ? a : b;
    }
};
template <class T> struct cuk_argmax_op {
    __device__ __forceinline__ cuk_arg<T> operator()(cuk_arg<T> a, cuk_arg<T> b) const {
        bool an = a.v != a.v, bn = b.v != b.v;
        if (an || bn) return (an && bn) ? (a.i < b.i ? a : b) : (an ? a : b);
        return (a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b;
    }
};

/* Folds x into (acc, has) keeping element order: acc = op(acc, x). */
template <class T, class Op> CUK_FN void cuk_fold(T &acc, int &has, T x, Op op) {
    acc = has ? op(acc, x) : x;
    has = 1;
}

/* Lane 0 ends with op(lane 0, ..., lane 31) over the lanes that have a value, combined
   in lane order (so only associativity is assumed). */
template <class T, class Op> CUK_FN void cuk_warp_reduce(T &v, int &has, Op op) {
    int lane = threadIdx.x & 31;
    for (int d = 1; d < 32; d <<= 1) {
        T o = cuk_shfl_down(v, d);
        int oh = __shfl_down_sync(CUK_FULL_MASK, has, d);
        if ((lane & (2 * d - 1)) == 0 && lane + d < 32 && oh) {
            v = has ? op(v, o) : o;
            has = 1;
        }
    }
}

/* The first lane of each aligned group of G lanes (G a power of two, at most 32) ends
   with the group's value, combined in lane order. Every lane of the warp must call it
   with the same G. */
template <class T, class Op> CUK_FN void cuk_group_reduce(T &v, int &has, Op op, int G) {
    int lane = threadIdx.x & 31;
    for (int d = 1; d < G; d <<= 1) {
        T o = cuk_shfl_down(v, d);
        int oh = __shfl_down_sync(CUK_FULL_MASK, has, d);
        if ((lane & (2 * d - 1)) == 0 && oh) {
            v = has ? op(v, o) : o;
            has = 1;
        }
    }
}

/* Thread 0 ends with the whole block's value (blockDim.x a multiple of 32, at most
   1024). Every thread must call it; it synchronises the block. */
template <class T, class Op> CUK_FN void cuk_block_reduce(T &v, int &has, Op op) {
    __shared__ T s_v[32];
    __shared__ int s_h[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    cuk_warp_reduce(v, has, op);
    __syncthreads(); /* s_v may still be read by an earlier call */
    if (lane == 0) {
        s_v[warp] = v;
        s_h[warp] = has;
    }
    __syncthreads();
    if (warp == 0) {
        if (lane < nw) {
            v = s_v[lane];
            has = s_h[lane];
        } else {
            has = 0;
        }
        cuk_warp_reduce(v, has, op);
    }
}

/* Every thread of each aligned group of G threads (G a power of two, 32 to blockDim.x)
   ends with its group's value, combined in the same order as cuk_block_reduce over a
   block of G (so the same bits): each warp reduces, one barrier, then every warp
   reduces its group's warp partials itself. The partials alternate between two buffers
   (par, flipped here, starts at 0 for the whole block): a buffer is written again only
   two calls later, after a barrier every reader of it has passed. Every thread of the
   block must call it with the same G and par. */
template <class T, class Op> CUK_FN void cuk_group_allreduce(T &v, int &has, Op op, int &par, int G) {
    __shared__ T s_v[2][32];
    __shared__ int s_h[2][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = G >> 5, w0 = warp & ~(nw - 1);
    cuk_warp_reduce(v, has, op);
    if (lane == 0) {
        s_v[par][warp] = v;
        s_h[par][warp] = has;
    }
    __syncthreads();
    if (lane < nw) {
        v = s_v[par][w0 + lane];
        has = s_h[par][w0 + lane];
    } else {
        has = 0;
    }
    cuk_warp_reduce(v, has, op);
    v = cuk_shfl_idx(v, 0);
    has = __shfl_sync(CUK_FULL_MASK, has, 0);
    par ^= 1;
}

/* Thread-block clusters (sm_90 and later; the row kernels' _cl entry). Below sm_90 a
   block is its own cluster of one, which is what such a launch is. */
#if __CUDA_ARCH__ >= 900
/* name(): the special register reg (%cluster_ctarank, ...) */
#define CUK_SREG(name, reg)                                                                       \
    CUK_FN unsigned name() {                                                                      \
        unsigned r;                                                                               \
        asm volatile("mov.u32 %0, %%" reg ";" : "=r"(r));                                         \
        return r;                                                                                 \
    }
CUK_SREG(cuk_cluster_rank, "cluster_ctarank")
CUK_SREG(cuk_cluster_size, "cluster_nctarank")
CUK_SREG(cuk_cluster_id, "clusterid.x")
CUK_SREG(cuk_cluster_count, "nclusterid.x")
#undef CUK_SREG
/* Every thread of every block of the cluster arrives before any goes on; shared-memory
   writes before it are seen by the cluster's reads after it. */
CUK_FN void cuk_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
/* The address of *p (a __shared__ variable) in the cluster's block `rank`. */
template <class T> CUK_FN const T *cuk_cluster_map(const T *p, unsigned rank) {
    unsigned long long a;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(a) : "l"(p), "r"(rank));
    return (const T *)a;
}
#else
CUK_FN unsigned cuk_cluster_rank() { return 0; }
CUK_FN unsigned cuk_cluster_size() { return 1; }
CUK_FN unsigned cuk_cluster_id() { return blockIdx.x; }
CUK_FN unsigned cuk_cluster_count() { return gridDim.x; }
CUK_FN void cuk_cluster_sync() { __syncthreads(); }
template <class T> CUK_FN const T *cuk_cluster_map(const T *p, unsigned) { return p; }
#endif

/* Every thread of every block of the cluster ends with the cluster's value: each block's
   (cuk_group_allreduce over the block), then the blocks' values folded in rank order, so
   the bits do not depend on timing. Thread 0 of each block publishes its block's value
   in shared memory, one cluster barrier, then in every warp lane r reads block r's
   value through distributed shared memory (all in flight at once: one remote latency,
   not one a block) and the warp folds them in lane order. The two buffers alternate
   with par (flipped once here): a buffer is written again two calls later, after a
   cluster barrier that every reader of it has passed. Every thread of the cluster must
   call it with the same par; at most 32 blocks a cluster. */
template <class T, class Op> CUK_FN void cuk_cluster_allreduce(T &v, int &has, Op op, int &par) {
    __shared__ T c_v[2];
    __shared__ int c_h[2];
    const int q = par;
    cuk_group_allreduce(v, has, op, par, (int)blockDim.x);
    if (threadIdx.x == 0) {
        c_v[q] = v;
        c_h[q] = has;
    }
    cuk_cluster_sync();
    const unsigned lane = threadIdx.x & 31;
    int h = 0;
    if (lane < cuk_cluster_size()) {
        h = *cuk_cluster_map(&c_h[q], lane);
        v = *cuk_cluster_map(&c_v[q], lane);
    }
    cuk_warp_reduce(v, h, op);
    v = cuk_shfl_idx(v, 0);
    has = __shfl_sync(CUK_FULL_MASK, h, 0);
}

/* A row's max and sum of exp(x - max) in one pass (softmax, logsumexp: the row
   kernels' online pair, compiler/kernel.c kernel_row_online): m is the max of the
   elements seen, s the sum of exp(x - m) over them. Two pairs combine by rescaling each
   sum to the larger max. A part whose max is -inf while the whole's is not adds 0
   whatever its sum (its elements were all -inf: exp(-inf - m) is 0 in the two-pass
   form, while the part computed exp(-inf - -inf), NaN); equal maxima keep the sum as it
   is (scale 1), so a row of -inf gives NaN and a row with +inf or NaN gives NaN, as two
   passes do. Max is the row's max combine functor (so NaNs go as in the max
   reduction). */
template <class T> struct cuk_ms {
    T m, s;
};
#define CUK_MS_FIELDS(F) F(m) F(s)
CUK_SHFL_STRUCT(cuk_ms, CUK_MS_FIELDS)
CUK_FN float cuk_exp(float x) { return expf(x); }
CUK_FN double cuk_exp(double x) { return exp(x); }
CUK_FN float cuk_ninf(float) { return __int_as_float(0xff800000); }
CUK_FN double cuk_ninf(double) { return __longlong_as_double(0xfff0000000000000LL); }
/* a's sum rescaled to max m (m = max(a.m, ...)) */
template <class T> CUK_FN T cuk_ms_part(cuk_ms<T> a, T m) {
    if (a.m == m) return a.s;
    if (a.m == cuk_ninf(m)) return (T)0;
    return a.s * cuk_exp(a.m - m);
}
/* The pair combine for the block reductions of the `_lg` entry: one of the two parts
   holds the max and keeps its sum; only the other is rescaled (one exp). */
template <class T, class Max> struct cuk_ms_op {
    __device__ __forceinline__ cuk_ms<T> operator()(cuk_ms<T> a, cuk_ms<T> b) const {
        cuk_ms<T> r;
        r.m = Max()(a.m, b.m);
        const bool ah = a.m == r.m;
        cuk_ms<T> lo;
        lo.m = ah ? b.m : a.m;
        lo.s = ah ? b.s : a.s;
        const T t = cuk_ms_part(lo, r.m);
        r.s = ah ? a.s + t : t + b.s;
        return r;
    }
};
/* A running pair over a chunk whose max is cm: the sum rescaled to the new max (the
   chunk's terms are then added at it) */
template <class T, class Max> CUK_FN void cuk_ms_rescale(cuk_ms<T> &a, T cm) {
    T m = Max()(a.m, cm);
    a.s = cuk_ms_part(a, m);
    a.m = m;
}
/* Every lane of the warp ends with op over the warp's 32 values (a butterfly: for exact,
   commutative ops such as max, where the order cannot show). */
template <class T, class Op> CUK_FN T cuk_warp_all(T v, Op op) {
    for (int d = 16; d > 0; d >>= 1) v = op(v, __shfl_xor_sync(CUK_FULL_MASK, v, d));
    return v;
}
/* The warp's sum in every lane, the same bits in each (the butterfly's two lanes of a
   step add the same two values, in either order, which IEEE addition makes equal; for
   integers too) */
struct cuk_add {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
template <class T> CUK_FN T cuk_warp_sum_all(T s) { return cuk_warp_all(s, cuk_add()); }
/* The exchange of a row's parts (the pairs below): the group of G threads (a power of
   two, 32 to blockDim.x) publishes each warp's part (the same in all its lanes), one
   barrier, lane r of every warp of the group reads warp r's, and fold(part, h) folds
   the parts of the lanes with h into every lane. The buffers alternate with par as in
   cuk_group_allreduce, whose contract this has. */
template <class P, class Fold> CUK_FN void cuk_parts_group(P &v, int &par, int G, Fold fold) {
    __shared__ P s_v[2][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = G >> 5, w0 = warp & ~(nw - 1);
    if (lane == 0) s_v[par][warp] = v;
    __syncthreads();
    const bool h = lane < nw;
    if (h) v = s_v[par][w0 + lane];
    fold(v, h);
    par ^= 1;
}
/* The same over a thread-block cluster: the block's part, then the blocks' parts read
   through distributed shared memory and folded as the warps' are (cuk_cluster_allreduce's
   contract). */
template <class P, class Fold> CUK_FN void cuk_parts_cluster(P &v, int &par, Fold fold) {
    __shared__ P c_v[2];
    const int q = par;
    cuk_parts_group(v, par, (int)blockDim.x, fold);
    if (threadIdx.x == 0) c_v[q] = v;
    cuk_cluster_sync();
    const unsigned lane = threadIdx.x & 31;
    const bool h = lane < cuk_cluster_size();
    if (h) v = *cuk_cluster_map(&c_v[q], lane);
    fold(v, h);
}
/* The pairs of the lanes with h folded into one, in every lane: the max over the
   lanes, each sum rescaled to it (one exp a lane, all at once), then summed. */
template <class T, class Max> struct cuk_ms_fold {
    __device__ __forceinline__ void operator()(cuk_ms<T> &a, bool h) const {
        if (!h) a.m = cuk_ninf(a.m);
        const T m = cuk_warp_all(a.m, Max());
        a.s = cuk_warp_sum_all(h ? cuk_ms_part(a, m) : (T)0);
        a.m = m;
    }
};
/* cuk_group_allreduce for a pair whose m is already the same across each warp (the
   emitted code folds against cuk_warp_all's max): the warp sums its s as they are, and
   only the warps' pairs are rescaled. */
template <class T, class Max> CUK_FN void cuk_ms_group_allreduce(T &m, T &s, int &par, int G) {
    cuk_ms<T> a;
    a.m = m;
    a.s = cuk_warp_sum_all(s);
    cuk_parts_group(a, par, G, cuk_ms_fold<T, Max>());
    m = a.m, s = a.s;
}
/* cuk_cluster_allreduce for such a pair: the blocks' pairs folded as the warps' are. */
template <class T, class Max> CUK_FN void cuk_ms_cluster_allreduce(T &m, T &s, int &par) {
    cuk_ms<T> a;
    a.m = m;
    a.s = cuk_warp_sum_all(s);
    cuk_parts_cluster(a, par, cuk_ms_fold<T, Max>());
    m = a.m, s = a.s;
}

/* The centred pair (layer norm's mean and variance; compiler/kernel.c
   kernel_row_centred): a part of a row is (n, s, q), its count, its sum and the sum of
   its squares about its own mean s / n. Parts combine by Chan's rule: the whole's q is
   the sum of the parts' q and n_i (mean_i - mean)^2. The emitted code gives each warp
   its (n, s) (cuk_warp_sum_all: every lane the same) and folds q about the warp's
   mean; these exchange the parts. */
template <class T> CUK_FN T cuk_cs_mean(int n, T s) { return n ? s / (T)n : (T)0; }
/* A part of a row: count, sum, squares about its mean. */
template <class T> struct cuk_cs {
    int n;
    T s, q;
};
/* The parts of the lanes with h (lanes without: none) into one, in every lane. */
template <class T> struct cuk_cs_fold {
    __device__ __forceinline__ void operator()(cuk_cs<T> &a, bool h) const {
        const int ni = h ? a.n : 0;
        const T si = h ? a.s : (T)0, qi = h ? a.q : (T)0, mi = cuk_cs_mean(ni, si);
        a.n = cuk_warp_sum_all(ni);
        a.s = cuk_warp_sum_all(si);
        const T d = mi - cuk_cs_mean(a.n, a.s);
        a.q = cuk_warp_sum_all(ni ? qi + (T)ni * d * d : (T)0);
    }
};
/* A group of G threads (cuk_group_allreduce's contract): (n, s) the warp's already in
   every lane, q each thread's squares about the warp's mean. Every thread ends with the
   group's (n, s, q). */
template <class T> CUK_FN void cuk_cs_group_allreduce(int &n, T &s, T &q, int &par, int G) {
    cuk_cs<T> a = {n, s, cuk_warp_sum_all(q)};
    cuk_parts_group(a, par, G, cuk_cs_fold<T>());
    n = a.n, s = a.s, q = a.q;
}
/* The same over a thread-block cluster: the blocks' parts folded as the warps' are. */
template <class T> CUK_FN void cuk_cs_cluster_allreduce(int &n, T &s, T &q, int &par) {
    cuk_cs<T> a = {n, s, cuk_warp_sum_all(q)};
    cuk_parts_cluster(a, par, cuk_cs_fold<T>());
    n = a.n, s = a.s, q = a.q;
}

/* The block that finishes last (by an atomic ticket) folds every block's partial, in
   block order, so results are the same bits on every run with the same grid. */
CUK_FN bool cuk_last_block(unsigned int *ticket) {
    __shared__ bool s_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    return s_last;
}

/* True in the block that arrives last of the `count` blocks sharing ticket (an axis
   reduction's tile): what every block wrote before the call is visible to it. */
CUK_FN bool cuk_last_arrival(unsigned int *ticket, unsigned int count) {
    __shared__ bool s_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(ticket, 1u) == count - 1;
    __syncthreads();
    return s_last;
}

#endif
