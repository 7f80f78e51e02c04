/* Atomic updates of one bin for scatter and reduce_by_index (K_HIST kernels, emitted by
   compiler/emit_cuda.c): hardware atomics for add (and integer min/max), a
   compare-and-swap loop for everything else (float min/max, mul, lambdas), which only
   assumes the combine is associative and commutative. */
#ifndef CUK_HIST_CUH
#define CUK_HIST_CUH

/* Bytes of dynamic shared memory this launch has (a hist kernel's private bins). */
CUK_FN unsigned int cuk_dyn_smem() {
    unsigned int r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}

CUK_FN void cuk_atomic_add(float *p, float v) { atomicAdd(p, v); }
CUK_FN void cuk_atomic_add(double *p, double v) { atomicAdd(p, v); }
CUK_FN void cuk_atomic_add(int32_t *p, int32_t v) { atomicAdd(p, v); }
CUK_FN void cuk_atomic_add(uint32_t *p, uint32_t v) { atomicAdd(p, v); }
CUK_FN void cuk_atomic_add(int64_t *p, int64_t v) {
    atomicAdd((unsigned long long *)p, (unsigned long long)v); /* two's complement wraps alike */
}
CUK_FN void cuk_atomic_add(uint64_t *p, uint64_t v) { atomicAdd((unsigned long long *)p, (unsigned long long)v); }

CUK_FN void cuk_atomic_min(int32_t *p, int32_t v) { atomicMin(p, v); }
CUK_FN void cuk_atomic_min(uint32_t *p, uint32_t v) { atomicMin(p, v); }
CUK_FN void cuk_atomic_min(int64_t *p, int64_t v) { atomicMin(p, v); }
CUK_FN void cuk_atomic_min(uint64_t *p, uint64_t v) { atomicMin((unsigned long long *)p, (unsigned long long)v); }
CUK_FN void cuk_atomic_max(int32_t *p, int32_t v) { atomicMax(p, v); }
CUK_FN void cuk_atomic_max(uint32_t *p, uint32_t v) { atomicMax(p, v); }
CUK_FN void cuk_atomic_max(int64_t *p, int64_t v) { atomicMax(p, v); }
CUK_FN void cuk_atomic_max(uint64_t *p, uint64_t v) { atomicMax((unsigned long long *)p, (unsigned long long)v); }

template <int B> struct cuk_word_t;
template <> struct cuk_word_t<4> { typedef unsigned int t; };
template <> struct cuk_word_t<8> { typedef unsigned long long t; };

/* *p = op(*p, v) atomically; a result with the bits already there writes nothing (a min
   or max that does not change the bin costs one load). */
template <class T, class Op> CUK_FN void cuk_atomic_apply(T *p, T v, Op op) {
    typedef typename cuk_word_t<sizeof(T)>::t U;
    union Bits {
        T t;
        U u;
    };
    U *a = (U *)p;
    Bits old;
    old.u = *(volatile U *)a;
    for (;;) {
        Bits nw;
        nw.t = op(old.t, v);
        if (nw.u == old.u) return;
        U seen = atomicCAS(a, old.u, nw.u);
        if (seen == old.u) return;
        old.u = seen;
    }
}

#endif
