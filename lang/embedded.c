/* Looks up files embedded at build time (see scripts/embed.cmake). */
#include "embedded.h"

#include <string.h>

const char *embedded_find(const char *name) {
    for (int i = 0; cuk_embedded[i].name; i++)
        if (strcmp(cuk_embedded[i].name, name) == 0) return cuk_embedded[i].text;
    return NULL;
}
