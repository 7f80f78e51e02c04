/* Files compiled into the binaries by scripts/embed.cmake: the stdlib (.cuk) and kernels/. */
#ifndef CUK_EMBEDDED_H
#define CUK_EMBEDDED_H
#include <stddef.h>
extern const struct cuk_embedded_file {
    const char *name;
    const char *text;
} cuk_embedded[];
/* The text of an embedded file by base name, or NULL. */
const char *embedded_find(const char *name);
#endif
