/* The runtime unit tests' check: a failed condition prints where, what and the
   runtime's last error, and counts in `fails` (each test returns fails != 0); `checks`
   counts the conditions tried. */
#ifndef CUK_TESTS_RUNTIME_CHECK_H
#define CUK_TESTS_RUNTIME_CHECK_H

#include <stdio.h>

#include "runtime/cuk.h"

static int fails, checks;
#define CHECK(c)                                                                                 \
    do {                                                                                         \
        checks++;                                                                                \
        if (!(c)) {                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #c, \
                    cuk_last_error());                                                           \
            fails++;                                                                             \
        }                                                                                        \
    } while (0)

#endif
