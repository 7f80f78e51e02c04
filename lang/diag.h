/* Source files, locations and user-facing diagnostics (file:line:col: error: ...). */
#ifndef CUK_DIAG_H
#define CUK_DIAG_H
#include <stdbool.h>
#include <stdio.h>

typedef struct Src {
    const char *path; /* as given by the user, used in messages */
    const char *text; /* NUL-terminated copy of the file */
    long len;         /* bytes, excluding the terminating NUL */
} Src;

typedef struct Loc {
    const Src *src; /* NULL for compiler-made nodes */
    int line, col;  /* 1-based; col counts bytes */
    long off;       /* byte offset into src->text */
} Loc;

typedef struct Diag {
    FILE *out;      /* where messages go (stderr by default) */
    int errors;     /* count of errors reported */
    int max_errors; /* stop reporting after this many (0 = 50) */
} Diag;

void diag_init(Diag *d, FILE *out);
/* Prints "path:line:col: error: msg", the source line and a caret under col. */
void diag_error(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A "note:" attached to the previous error (same format, no count). */
void diag_note(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reads a whole file; on failure returns false and reports why. Checks UTF-8 validity
   and NUL bytes (reported as errors at their location). */
struct Arena;
bool src_load(struct Arena *a, Diag *d, const char *path, Src *out);
void src_from_string(struct Arena *a, const char *path, const char *text, Src *out);

#endif
