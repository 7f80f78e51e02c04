/* The front door of the compiler: source text to a checked Program, with the embedded
   stdlib in scope. Every user of the compiler (cukc, the C and Python APIs, benchmarks,
   fuzzers) comes through here. */
#include <string.h>

#include "lang/embedded.h"
#include "ir.h"

Node *stdlib_parse(Arena *a, Diag *d) {
    Node *prog = NEW(a, Node);
    prog->kind = N_PROGRAM;
    Node **tail = &prog->body;
    for (int i = 0; cuk_embedded[i].name; i++) {
        const char *nm = cuk_embedded[i].name;
        size_t n = strlen(nm);
        if (n < 4 || strcmp(nm + n - 4, ".cuk") != 0) continue;
        Src *src = NEW(a, Src);
        src_from_string(a, arena_printf(a, "<stdlib>/%s", nm), cuk_embedded[i].text, src);
        Node *p = parse_program(a, d, src);
        for (Node *f = p ? p->body : NULL; f; f = f->next) {
            *tail = f;
            tail = &f->next;
        }
        *tail = NULL;
    }
    return prog;
}

Program *compile_src(Arena *a, Diag *d, const Src *src, Node **ast) {
    Node *user = parse_program(a, d, src);
    if (ast) *ast = user;
    if (d->errors || !user) return NULL;
    Node *std = stdlib_parse(a, d);
    if (d->errors) return NULL;
    Program *p = sema_program(a, d, user, std);
    return d->errors ? NULL : p;
}
