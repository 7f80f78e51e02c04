/* The cuk lexer (re2c): turns NUL-terminated source text into tokens for the
   grammar, reporting bad characters and literals at their location. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "parse_internal.h"
#include "tokens.h"

void lex_init(Lexer *lx, Arena *a, Diag *d, const Src *src) {
    memset(lx, 0, sizeof *lx);
    lx->arena = a;
    lx->diag = d;
    lx->src = src;
    lx->cur = (const unsigned char *)src->text;
    lx->end = lx->cur + src->len;
    lx->mark = lx->cur;
    lx->line = 1;
    lx->line_start = 0;
    /* A UTF-8 byte order mark is not part of the program. */
    if (src->len >= 3 && memcmp(src->text, "\xEF\xBB\xBF", 3) == 0) lx->cur += 3;
}

Loc lex_loc(Lexer *lx, const unsigned char *p) {
    const unsigned char *base = (const unsigned char *)lx->src->text;
    ASSERT(p >= lx->mark && p <= lx->end);
    for (const unsigned char *q = lx->mark; q < p; q++) {
        if (*q == '\n') {
            lx->line++;
            lx->line_start = (q - base) + 1;
        }
    }
    lx->mark = p;
    Loc l;
    l.src = lx->src;
    l.off = p - base;
    l.line = lx->line;
    l.col = (int)(l.off - lx->line_start) + 1;
    return l;
}

/* The spelling of one source character for a message: the character itself if it is
   printable (a whole UTF-8 sequence), else its byte value. */
static const char *char_desc(Lexer *lx, const unsigned char *p) {
    if (*p >= 0x21 && *p < 0x7f) return arena_printf(lx->arena, "character '%c'", *p);
    int n = *p >= 0x80 ? utf8_seq_len(p) : 0;
    if (n > 0) return arena_printf(lx->arena, "character '%.*s'", n, (const char *)p);
    if (*p >= 0x80) return arena_printf(lx->arena, "byte 0x%02X (not valid UTF-8)", *p);
    return arena_printf(lx->arena, "control character 0x%02X", *p);
}

static void set_tok(Lexer *lx, Tok *t, int kind, const unsigned char *start) {
    t->kind = kind;
    t->loc = lex_loc(lx, start);
    t->text = (const char *)start;
    t->len = (int)(lx->cur - start);
}

/* A name's token: the keyword it spells (lang/tokens.h), else TK_IDENT. */
static int keyword(const unsigned char *start, const unsigned char *end) {
    static const struct {
        const char *text;
        int tok;
    } kw[] = {
#define KW_ROW_KW(n, text) {text, TK_##n},
#define KW_ROW_PUNCT(n, text)
#define KW_ROW_CLASS(n, text)
#define X(n, kind, text) KW_ROW_##kind(n, text)
        TOKENS(X)
#undef X
    };
    size_t len = (size_t)(end - start);
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strlen(kw[i].text) == len && memcmp(kw[i].text, start, len) == 0) return kw[i].tok;
    return TK_IDENT;
}

/* Decimal or hex integer; errors leave the value 0 so that parsing goes on. */
static void lex_int(Lexer *lx, Tok *t, int base, int suffix) {
    const char *s = t->text;
    int n = t->len - suffix;
    if (suffix) {
        diag_error(lx->diag, t->loc, "invalid suffix '%.*s' on integer literal '%.*s'", suffix,
                   s + n, t->len, s);
        return;
    }
    const char *digits = base == 16 ? s + 2 : s;
    int nd = (int)(s + n - digits);
    if (base == 16 && nd == 0) {
        diag_error(lx->diag, t->loc, "hex literal '%.*s' has no digits", t->len, s);
        return;
    }
    uint64_t v = 0;
    for (int i = 0; i < nd; i++) {
        int c = (unsigned char)digits[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else {
            diag_error(lx->diag, t->loc, "invalid digit '%c' in hex literal '%.*s'", c, t->len, s);
            return;
        }
        if (v > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base) {
            diag_error(lx->diag, t->loc,
                       "integer literal '%.*s' is too large for i64 (the largest is "
                       "9223372036854775807)",
                       t->len, s);
            return;
        }
        v = v * (uint64_t)base + (uint64_t)d;
    }
    t->ival = (int64_t)v;
}

static void lex_float(Lexer *lx, Tok *t, int suffix) {
    int n = t->len - suffix;
    if (suffix) {
        diag_error(lx->diag, t->loc,
                   "invalid suffix '%.*s' on float literal '%.*s' (literals take their type "
                   "from context; write f32(x) or f64(x) to choose one)",
                   suffix, t->text + n, t->len, t->text);
        return;
    }
    char *tmp = arena_strndup(lx->arena, t->text, (size_t)n);
    errno = 0;
    double v = strtod(tmp, NULL);
    /* Underflow to zero or a subnormal is fine; only overflow is an error. */
    if (isinf(v)) {
        diag_error(lx->diag, t->loc, "float literal '%.*s' is out of range", t->len, t->text);
        return;
    }
    t->fval = v;
}

/* Length of the float literal proper at the start of s (digits, fraction, exponent);
   what follows is a suffix. */
static int float_len(const char *s, int len) {
    int i = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') i++;
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        int j = i + 1;
        if (j < len && (s[j] == '+' || s[j] == '-')) j++;
        if (j < len && s[j] >= '0' && s[j] <= '9') {
            while (j < len && s[j] >= '0' && s[j] <= '9') j++;
            i = j;
        }
    }
    return i;
}

/* A string literal: "..." with \" \\ \n \t \r \0 escapes, on one line. */
static int lex_string(Lexer *lx, Tok *t, const unsigned char *start) {
    const unsigned char *p = start + 1;
    char *buf = arena_alloc(lx->arena, 64);
    size_t len = 0, cap = 64;
    for (;;) {
        unsigned char c = *p;
        if (c == '"') {
            p++;
            break;
        }
        if (c == '\n' || (c == 0 && p >= lx->end)) {
            lx->cur = p;
            set_tok(lx, t, TK_STRING, start);
            diag_error(lx->diag, t->loc, "unterminated string literal (a string ends at '\"' "
                                         "on the same line)");
            t->sval = "";
            return TK_STRING;
        }
        char out[4];
        int n = 1;
        if (c == '\\') {
            switch (p[1]) {
            case '"': out[0] = '"'; break;
            case '\\': out[0] = '\\'; break;
            case 'n': out[0] = '\n'; break;
            case 't': out[0] = '\t'; break;
            case 'r': out[0] = '\r'; break;
            case '0': out[0] = '\0'; break;
            default: {
                Loc l = lex_loc(lx, start);
                l.col += (int)(p - start);
                l.off += p - start;
                /* A '\' ending the line is reported as the unterminated string. */
                if (p[1] != '\n' && p[1] != 0)
                    diag_error(lx->diag, l,
                               "unknown escape sequence '\\%c' (use \\\" \\\\ \\n \\t \\r or \\0)",
                               p[1] >= 0x20 && p[1] < 0x7f ? p[1] : '?');
                out[0] = '?';
            }
            }
            if (p[1] != '\n' && p[1] != 0) p++;
            p++;
        } else if (c < 0x80 && c != 0) {
            out[0] = (char)c;
            p++;
        } else {
            n = c ? utf8_seq_len(p) : 0;
            if (n == 0) {
                Loc l = lex_loc(lx, start);
                l.col += (int)(p - start);
                l.off += p - start;
                if (c == 0)
                    diag_error(lx->diag, l, "NUL byte in source");
                else
                    diag_error(lx->diag, l, "invalid UTF-8 byte 0x%02X in string literal", c);
                n = 1;
                out[0] = '?';
            } else {
                memcpy(out, p, (size_t)n);
            }
            p += n;
        }
        if (len + (size_t)n + 1 > cap) {
            char *nb = arena_alloc(lx->arena, cap * 2);
            memcpy(nb, buf, len);
            buf = nb;
            cap *= 2;
        }
        memcpy(buf + len, out, (size_t)n);
        len += (size_t)n;
    }
    buf[len] = 0;
    lx->cur = p;
    set_tok(lx, t, TK_STRING, start);
    t->sval = buf;
    return TK_STRING;
}

/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYCURSOR = cur;
    re2c:define:YYMARKER = mar;
    re2c:define:YYCTXMARKER = ctx;
    re2c:yyfill:enable = 0;

    id  = [a-zA-Z_][a-zA-Z0-9_]*;
    dec = [0-9]+;
    exp = [eE] [+-]? [0-9]+;
    flt = dec "." dec exp? | dec exp;
*/

int lex_next(Lexer *lx, Tok *t) {
    memset(t, 0, sizeof *t);
    lx->dropped = false;
    for (;;) {
        const unsigned char *cur = lx->cur, *mar = cur, *ctx = cur;
        const unsigned char *start = cur;
        (void)ctx;
        (void)mar;
#define TOK(k)              \
    do {                    \
        lx->cur = cur;      \
        set_tok(lx, t, k, start); \
        return k;           \
    } while (0)
        /*!re2c
        "\x00" {
            if (start >= lx->end) {
                lx->cur = start;
                set_tok(lx, t, 0, start);
                return 0;
            }
            lx->cur = cur;
            diag_error(lx->diag, lex_loc(lx, start), "NUL byte in source");
            lx->dropped = true;
            continue;
        }
        [ \t\r\n\f\v]+ { lx->cur = cur; continue; }
        "//" [^\n\x00]* { lx->cur = cur; continue; }
        "/*" {
            const unsigned char *p = cur;
            while (!(p[0] == '*' && p[1] == '/') && !(p[0] == 0 && p >= lx->end)) p++;
            if (p[0] == 0) {
                diag_error(lx->diag, lex_loc(lx, start),
                           "unterminated comment (a '/*' comment ends at '*/')");
                lx->cur = p;
                continue;
            }
            lx->cur = p + 2;
            continue;
        }

        id       {
            int k = keyword(start, cur);
            TOK(k);
        }

        "0" [xX] [0-9a-zA-Z_]* {
            lx->cur = cur;
            set_tok(lx, t, TK_INT, start);
            lex_int(lx, t, 16, 0);
            return TK_INT;
        }
        flt id? {
            lx->cur = cur;
            set_tok(lx, t, TK_FLOAT, start);
            int suffix = t->len - float_len(t->text, t->len);
            lex_float(lx, t, suffix);
            return TK_FLOAT;
        }
        dec id? {
            lx->cur = cur;
            set_tok(lx, t, TK_INT, start);
            int digits = 0;
            while (digits < t->len && t->text[digits] >= '0' && t->text[digits] <= '9') digits++;
            lex_int(lx, t, 10, t->len - digits);
            return TK_INT;
        }
        dec "." / [^.0-9] {
            lx->cur = cur;
            set_tok(lx, t, TK_FLOAT, start);
            diag_error(lx->diag, t->loc,
                       "a float literal needs a digit after '.' (write %.*s0)", t->len, t->text);
            return TK_FLOAT;
        }
        "." dec {
            lx->cur = cur;
            set_tok(lx, t, TK_FLOAT, start);
            diag_error(lx->diag, t->loc,
                       "a float literal needs a digit before '.' (write 0%.*s)", t->len, t->text);
            return TK_FLOAT;
        }
        ["] { return lex_string(lx, t, start); }

        ("+" | "-" | "*" | "/" | "%") "=" {
            /* Not in the language; say so rather than "unexpected '='". */
            lx->cur = cur;
            diag_error(lx->diag, lex_loc(lx, start),
                       "'%.*s' is not supported: write 'x = x %c e;'", 2, (const char *)start,
                       *start);
            lx->dropped = true;
            continue;
        }

        "(" { TOK(TK_LPAREN); }
        ")" { TOK(TK_RPAREN); }
        "[" { TOK(TK_LBRACKET); }
        "]" { TOK(TK_RBRACKET); }
        "{" { TOK(TK_LBRACE); }
        "}" { TOK(TK_RBRACE); }
        "," { TOK(TK_COMMA); }
        ";" { TOK(TK_SEMI); }
        ":" { TOK(TK_COLON); }
        "->" { TOK(TK_ARROW); }
        "=" { TOK(TK_ASSIGN); }
        ".." { TOK(TK_DOTDOT); }
        "?" { TOK(TK_QUESTION); }
        "||" { TOK(TK_OROR); }
        "&&" { TOK(TK_ANDAND); }
        "|" { TOK(TK_PIPE); }
        "^" { TOK(TK_CARET); }
        "&" { TOK(TK_AMP); }
        "==" { TOK(TK_EQEQ); }
        "!=" { TOK(TK_NE); }
        "<" { TOK(TK_LT); }
        "<=" { TOK(TK_LE); }
        ">" { TOK(TK_GT); }
        ">=" { TOK(TK_GE); }
        "<<" { TOK(TK_SHL); }
        ">>" { TOK(TK_SHR); }
        "+" { TOK(TK_PLUS); }
        "-" { TOK(TK_MINUS); }
        "*" { TOK(TK_STAR); }
        "/" { TOK(TK_SLASH); }
        "%" { TOK(TK_PERCENT); }
        "!" { TOK(TK_BANG); }
        "~" { TOK(TK_TILDE); }
        "**" { TOK(TK_STARSTAR); }
        "@" { TOK(TK_AT); }

        * {
            /* Skip the whole character so one bad character gives one error. */
            int n = *start >= 0x80 ? utf8_seq_len(start) : 1;
            lx->cur = start + (n ? n : 1);
            diag_error(lx->diag, lex_loc(lx, start), "unexpected %s", char_desc(lx, start));
            lx->dropped = true;
            continue;
        }
        */
#undef TOK
    }
}
