/* Stream compaction (x[mask], filter, nonzero) in one pass: each tile counts its kept
   elements, learns how many earlier tiles kept by a decoupled look-back over the scan's
   tile states (scan.cuh: the ticket, one 128-byte line per tile) and writes its kept
   elements at that offset. The emitted kernel (compiler/emit_cuda.c, emit_compact)
   computes x and the mask per element; these are its counting blocks. */
#ifndef CUK_COMPACT_CUH
#define CUK_COMPACT_CUH

/* A tile's state is one 64-bit word: the flag (0 none, 1 aggregate, 2 inclusive prefix)
   in the top two bits and the count below, so one store publishes both (no fence) and
   counts of up to 2^62 elements fit. */
#define CUK_COUNT_MASK ((1ull << 62) - 1ull)

CUK_FN void cuk_count_set(char *scratch, long long tile, int flag, long long count) {
    volatile unsigned long long *st =
        (volatile unsigned long long *)(scratch + CUK_STATE_OFFSET + tile * CUK_TILE_BYTES);
    *st = ((unsigned long long)flag << 62) | ((unsigned long long)count & CUK_COUNT_MASK);
}

/* Run by a whole warp for tile > 0 (after it published its aggregate): the number of
   elements all earlier tiles kept, in every lane. Lane l watches tile base - l; once the
   lanes up to the nearest inclusive prefix (or all 32) have published, their counts are
   summed and, without an inclusive prefix, the window moves 32 tiles back. Tile 0
   always publishes an inclusive prefix, so lanes before it are never summed. */
CUK_FN long long cuk_count_lookback(const char *scratch, long long tile) {
    const int lane = threadIdx.x & 31;
    long long run = 0;
    for (long long base = tile - 1;; base -= 32) {
        const long long p = base - lane;
        int f = p < 0 ? 3 : 0;
        long long v = 0;
        unsigned incl;
        for (;;) {
            if (f == 0) {
                const unsigned long long w =
                    *(const volatile unsigned long long *)(scratch + CUK_STATE_OFFSET + p * CUK_TILE_BYTES);
                f = (int)(w >> 62);
                v = (long long)(w & CUK_COUNT_MASK);
            }
            incl = __ballot_sync(CUK_FULL_MASK, f >= 2);
            const unsigned ready = __ballot_sync(CUK_FULL_MASK, f != 0);
            if (incl) {
                const int stop = __ffs(incl) - 1;
                const unsigned need = stop == 31 ? 0xffffffffu : (1u << (stop + 1)) - 1u;
                if ((ready & need) == need) break;
            } else if (ready == 0xffffffffu) {
                break;
            }
        }
        const int stop = incl ? __ffs(incl) - 1 : 31;
        long long c = lane <= stop && f != 3 ? v : 0;
        for (int d = 16; d > 0; d >>= 1) c += __shfl_xor_sync(CUK_FULL_MASK, c, d);
        run += c;
        if (incl) break;
    }
    return run;
}

/* Over the warp's lanes, each with a count 0 <= c < 2^nbits: the sum of the counts of
   the lanes below (returned) and of all lanes (*total), one ballot per bit of c. */
CUK_FN int cuk_warp_count_prefix(int c, int nbits, int *total) {
    const int lane = threadIdx.x & 31;
    const unsigned below = (1u << lane) - 1u;
    int pre = 0, tot = 0;
    for (int b = 0; b < nbits; b++) {
        const unsigned m = __ballot_sync(CUK_FULL_MASK, (c >> b) & 1);
        pre += __popc(m & below) << b;
        tot += __popc(m) << b;
    }
    *total = tot;
    return pre;
}

#endif
