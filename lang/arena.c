/* Bump allocator for compile-time data, plus die() for internal invariants. */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaBlock {
    ArenaBlock *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void arena_init(Arena *a) { a->head = NULL; }

void arena_free(Arena *a) {
    ArenaBlock *b = a->head;
    while (b) {
        ArenaBlock *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}

void *arena_alloc(Arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    ArenaBlock *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof(ArenaBlock) + cap);
        if (!b) die("out of memory allocating %zu bytes", n);
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

static _Thread_local DieGuard *guard_top;

bool die_injected(const char *point) {
    const char *e = getenv("CUK_DIE_AT");
    if (!e || !*e) return false;
    size_t n = strlen(point);
    for (const char *p = e; (p = strstr(p, point)); p += n)
        if ((p == e || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
    return false;
}

void guard_push(DieGuard *g) {
    g->msg[0] = 0;
    g->prev = guard_top;
    guard_top = g;
}

void guard_pop(DieGuard *g) {
    if (guard_top == g) guard_top = g->prev;
}

_Noreturn void die_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    DieGuard *g = guard_top;
    if (g) {
        /* Source paths as the build gives them are absolute: keep the repo-relative part. */
        const char *rel = strstr(file, "/compiler/");
        if (!rel) rel = strstr(file, "/exec/");
        if (!rel) rel = strstr(file, "/lang/");
        if (!rel) rel = strstr(file, "/api/");
        rel = rel ? rel + 1 : file;
        int n = snprintf(g->msg, sizeof g->msg, "internal error at %s:%d: ", rel, line);
        if (n < 0 || n >= (int)sizeof g->msg) n = 0;
        va_start(ap, fmt);
        vsnprintf(g->msg + n, sizeof g->msg - (size_t)n, fmt, ap);
        va_end(ap);
        guard_top = g->prev;
        longjmp(g->jb, 1);
    }
    fprintf(stderr, "cuk: internal error at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}
