/* Bump allocator: every compile-time object lives in one arena freed at the end. */
#ifndef CUK_ARENA_H
#define CUK_ARENA_H
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

/* Internal invariant failure: prints file:line and aborts. Never for user errors. */
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define ASSERT(c) ((c) ? (void)0 : die("assertion failed: %s", #c))

#endif
