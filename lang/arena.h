/* Bump allocator: every compile-time object lives in one arena freed at the end. */
#ifndef CUK_ARENA_H
#define CUK_ARENA_H
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
    ArenaBlock *head;
} Arena;

void arena_init(Arena *a);
void arena_free(Arena *a);
/* Zeroed memory; aborts on out-of-memory (an internal invariant, not a user error). */
void *arena_alloc(Arena *a, size_t n);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define NEWN(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* Internal invariant failure, never a user error: "internal error at file:line: msg".
   Inside a guarded region (below) it returns to the guard; elsewhere it prints the
   message and aborts. */
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A guard catches die() on this thread, so that a library entry point (the compiler's
   pipeline, a program call) turns a broken invariant into an error for its caller
   instead of aborting the process: a library never aborts on its input. Use

       DieGuard g;
       guard_push(&g);
       if (setjmp(g.jb) == 0) { ...work...; guard_pop(&g); }
       else { report g.msg (die popped the guard) }

   Work inside must not hold locks or own memory outside an arena when it can die, or
   the guard's owner must release them on the error path. */
typedef struct DieGuard {
    jmp_buf jb;
    char msg[512]; /* "internal error at file:line: msg" */
    struct DieGuard *prev;
} DieGuard;
void guard_push(DieGuard *g);
void guard_pop(DieGuard *g);
/* For tests: true when $CUK_DIE_AT names this point ("sema", "fuse", "emit", "cpu",
   "gpu", comma-separated), where the caller then dies on purpose, so that tests can show
   each library entry point turns a broken invariant into an error. */
bool die_injected(const char *point);
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define ASSERT(c) ((c) ? (void)0 : die("assertion failed: %s", #c))

#endif
