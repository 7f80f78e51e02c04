/* User-facing diagnostics (file:line:col: error: msg, the source line and a caret)
   and loading of source files. */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arena.h"
#include "parse_internal.h"

enum { DEFAULT_MAX_ERRORS = 50 };

void diag_init(Diag *d, FILE *out) {
    d->out = out ? out : stderr;
    d->errors = 0;
    d->max_errors = 0;
}

int utf8_seq_len(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        /* Reject overlong forms (E0 80..9F) and UTF-16 surrogates (ED A0..BF). */
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (p[1] < lo || p[1] > hi) return 0;
        return (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (p[1] < lo || p[1] > hi) return 0;
        if ((p[2] & 0xC0) != 0x80) return 0;
        return (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

Loc src_loc_at(const Src *s, long off) {
    Loc l = {s, 1, 1, off};
    long ls = 0;
    for (long i = 0; i < off && i < s->len; i++)
        if (s->text[i] == '\n') {
            l.line++;
            ls = i + 1;
        }
    l.col = (int)(off - ls) + 1;
    return l;
}

/* Prints the line holding loc and a caret under its column. Bytes that would upset a
   terminal (control characters, invalid UTF-8) are shown as '?'; tabs stay tabs in
   both lines so that the caret lines up whatever the tab width. */
static void print_source_line(FILE *o, Loc loc) {
    const Src *s = loc.src;
    if (!s->text || loc.off < 0 || loc.off > s->len) return;
    long start = loc.off;
    while (start > 0 && s->text[start - 1] != '\n') start--;
    long end = loc.off;
    while (end < s->len && s->text[end] != '\n') end++;
    long shown_end = end;
    if (shown_end > start && s->text[shown_end - 1] == '\r') shown_end--;
    const unsigned char *t = (const unsigned char *)s->text;
    /* A very long line (generated code, a minified file) is shown as a window around
       the column, cut at UTF-8 character boundaries. */
    enum { WIN = 100 };
    bool pre = false, post = false;
    if (loc.off - start > WIN) {
        start = loc.off - WIN;
        while ((t[start] & 0xC0) == 0x80 && start < loc.off) start++;
        pre = true;
    }
    if (shown_end - loc.off > WIN) {
        shown_end = loc.off + WIN;
        while ((t[shown_end] & 0xC0) == 0x80 && shown_end > loc.off) shown_end--;
        post = true;
    }
    if (pre) fputs("...", o);
    for (long i = start; i < shown_end;) {
        int n = utf8_seq_len(t + i);
        if (t[i] == '\t' || (t[i] >= 0x20 && t[i] != 0x7f && n > 0)) {
            if (i + n > shown_end) n = 1; /* never print past the line */
            fwrite(t + i, 1, (size_t)(n ? n : 1), o);
            i += n ? n : 1;
        } else {
            fputc('?', o);
            i++;
        }
    }
    if (post) fputs("...", o);
    fputc('\n', o);
    if (pre) fputs("   ", o);
    for (long i = start; i < loc.off;) {
        int n = utf8_seq_len(t + i);
        fputc(t[i] == '\t' ? '\t' : ' ', o);
        i += (t[i] >= 0x80 && n > 0) ? n : 1;
    }
    fputs("^\n", o);
}

static void emit(Diag *d, const char *kind, Loc loc, const char *fmt, va_list ap) {
    FILE *o = d->out ? d->out : stderr;
    if (loc.src && loc.line > 0)
        fprintf(o, "%s:%d:%d: %s: ", loc.src->path, loc.line, loc.col, kind);
    else if (loc.src)
        fprintf(o, "%s: %s: ", loc.src->path, kind);
    else
        fprintf(o, "%s: ", kind);
    vfprintf(o, fmt, ap);
    fputc('\n', o);
    if (loc.src && loc.line > 0) print_source_line(o, loc);
    fflush(o);
}

static int max_errors(const Diag *d) { return d->max_errors > 0 ? d->max_errors : DEFAULT_MAX_ERRORS; }

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
    int max = max_errors(d);
    if (d->errors >= max) {
        /* Past the limit: count, and say once that the rest are not shown. */
        if (d->errors == max) {
            FILE *o = d->out ? d->out : stderr;
            fprintf(o, "note: too many errors; stopping after %d\n", max);
            fflush(o);
        }
        d->errors++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    emit(d, "error", loc, fmt, ap);
    va_end(ap);
    d->errors++;
}

void diag_note(Diag *d, Loc loc, const char *fmt, ...) {
    if (d->errors > max_errors(d)) return; /* its error was not shown */
    va_list ap;
    va_start(ap, fmt);
    emit(d, "note", loc, fmt, ap);
    va_end(ap);
}

void src_from_string(struct Arena *a, const char *path, const char *text, Src *out) {
    size_t n = strlen(text);
    out->path = arena_strdup(a, path);
    out->text = arena_strndup(a, text, n);
    out->len = (long)n;
}

bool src_load(struct Arena *a, Diag *d, const char *path, Src *out) {
    Loc none = {0};
    out->path = arena_strdup(a, path);
    out->text = NULL;
    out->len = 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        diag_error(d, none, "cannot read '%s': %s", path, strerror(EISDIR));
        return false;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_error(d, none, "cannot read '%s': %s", path, strerror(errno));
        return false;
    }
    /* Read in chunks: the file may be a pipe, whose size stat can't tell; and at most
       SRC_MAX bytes: a device (/dev/zero) or a pipe may never end. */
    enum { SRC_MAX = 64 << 20 };
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf && len == cap && cap <= SRC_MAX) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) free(buf);
            buf = nb;
        }
        if (!buf) {
            fclose(f);
            diag_error(d, none, "cannot read '%s': out of memory", path);
            return false;
        }
        if (len > SRC_MAX) {
            fclose(f);
            free(buf);
            diag_error(d, none, "cannot read '%s': it is larger than %d MiB (or has no end, like a device): not a cuk "
                       "source file", path, SRC_MAX >> 20);
            return false;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(buf);
        diag_error(d, none, "cannot read '%s': %s", path, strerror(err));
        return false;
    }
    out->text = arena_strndup(a, buf, len);
    out->len = (long)len;
    free(buf);

    const unsigned char *t = (const unsigned char *)out->text;
    for (long i = 0; i < out->len;) {
        if (t[i] == 0) {
            diag_error(d, src_loc_at(out, i), "NUL byte in source (at byte offset %ld)", i);
            return false;
        }
        int n = utf8_seq_len(t + i);
        if (n == 0 || i + n > out->len) {
            diag_error(d, src_loc_at(out, i),
                       "invalid UTF-8 byte 0x%02X at byte offset %ld (source files must be UTF-8)",
                       t[i], i);
            return false;
        }
        i += n;
    }
    return true;
}
