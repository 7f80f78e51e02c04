/* Fault injection (see fault.h): the plan from CUK_FAULT, parsed on first use, and a call
   counter per kind. */
#include "fault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[FAULT_COUNT] = {"alloc", "nvrtc", "cache-write", "module-load"};

static struct {
    _Atomic long nth[FAULT_COUNT];  /* the call that fails (1-based); 0 = never */
    _Atomic bool from[FAULT_COUNT]; /* and every call after it */
    _Atomic long calls[FAULT_COUNT];
    _Atomic bool any;
} plan;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool apply(const char *spec);

static void from_env(void) {
    const char *e = getenv("CUK_FAULT");
    if (e && *e && !apply(e))
        fprintf(stderr, "cuk: ignoring CUK_FAULT='%s': expected kind:N[+],... with kinds alloc, nvrtc, "
                        "cache-write, module-load\n", e);
}

bool fault_set(const char *spec) {
    pthread_once(&once, from_env); /* first, so that it cannot override this plan later */
    return apply(spec);
}

static bool apply(const char *spec) {
    long nth[FAULT_COUNT] = {0};
    bool from[FAULT_COUNT] = {0}, ok = true, any = false;
    for (const char *p = spec ? spec : ""; *p && ok;) {
        const char *colon = strchr(p, ':');
        int k = -1;
        for (int i = 0; colon && i < FAULT_COUNT; i++)
            if (strlen(names[i]) == (size_t)(colon - p) && strncmp(p, names[i], (size_t)(colon - p)) == 0) k = i;
        char *end = NULL;
        long n = k >= 0 ? strtol(colon + 1, &end, 10) : 0;
        if (k < 0 || !end || end == colon + 1 || n < 1) {
            ok = false;
            break;
        }
        nth[k] = n;
        from[k] = *end == '+';
        if (from[k]) end++;
        if (*end && *end != ',') ok = false;
        any = true;
        p = *end ? end + 1 : end;
    }
    for (int i = 0; i < FAULT_COUNT; i++) {
        atomic_store(&plan.nth[i], ok ? nth[i] : 0);
        atomic_store(&plan.from[i], ok && from[i]);
        atomic_store(&plan.calls[i], 0);
    }
    atomic_store(&plan.any, ok && any);
    return ok;
}

bool fault_hit(FaultKind k) {
    pthread_once(&once, from_env);
    if (!atomic_load_explicit(&plan.any, memory_order_relaxed)) return false;
    long n = atomic_load(&plan.nth[k]);
    if (!n) return false;
    long c = atomic_fetch_add(&plan.calls[k], 1) + 1;
    return c == n || (c > n && atomic_load(&plan.from[k]));
}
