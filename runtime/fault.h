/* Fault injection for tests: CUK_FAULT="alloc:3,nvrtc:1,cache-write:2,module-load:1"
   makes the Nth call of each kind fail ("kind:N+" fails the Nth and every later one), so
   that tests can show each failure path gives a clear error, leaks nothing and leaves the
   disk cache usable. Off (one relaxed load per call) unless CUK_FAULT is set. */
#ifndef CUK_RUNTIME_FAULT_H
#define CUK_RUNTIME_FAULT_H
#include <stdbool.h>

typedef enum {
    FAULT_ALLOC,       /* cuMemAlloc in the pool (fails as CUDA_ERROR_OUT_OF_MEMORY) */
    FAULT_NVRTC,       /* nvrtcCompileProgram (fails as NVRTC_ERROR_OUT_OF_MEMORY) */
    FAULT_CACHE_WRITE, /* writing a disk cache entry (fails after the header, as a full disk would) */
    FAULT_MODULE_LOAD, /* cuModuleLoadDataEx (fails as CUDA_ERROR_OUT_OF_MEMORY) */
    FAULT_COUNT
} FaultKind;

/* True if this call of kind k is to fail. Counts calls; thread-safe. */
bool fault_hit(FaultKind k);
/* Replaces the plan (as CUK_FAULT would give it; NULL or "" for none) and resets the
   counters. Returns false for a malformed spec (then no faults). For tests. */
bool fault_set(const char *spec);

#endif
