/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian, C order, the
   seven cuk dtypes. The header parser trusts nothing: every read is bounds-checked. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"

static bool fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* A cursor over the header text [p, end). */
typedef struct Hdr {
    const char *p, *end;
} Hdr;

static void skip_ws(Hdr *h) {
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static bool eat(Hdr *h, char c) {
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* A Python string literal in single or double quotes, no escapes (none appear in the
   keys or descrs we accept). */
static bool parse_str(Hdr *h, char *buf, size_t n) {
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
    char q = *h->p++;
    size_t len = 0;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\' || len + 1 >= n) return false;
        buf[len++] = *h->p++;
    }
    if (h->p >= h->end) return false;
    h->p++;
    buf[len] = 0;
    return true;
}

static bool parse_int(Hdr *h, int64_t *out) {
    skip_ws(h);
    int64_t v = 0;
    const char *s = h->p;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
        int d = *h->p - '0';
        if (v > (INT64_MAX - d) / 10) return false;
        v = v * 10 + d;
        h->p++;
    }
    /* Python 2 era writers put an L after longs. */
    if (h->p < h->end && *h->p == 'L') h->p++;
    *out = v;
    return h->p > s;
}

static bool parse_word(Hdr *h, const char *w) {
    skip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->p) >= n && memcmp(h->p, w, n) == 0) {
        h->p += n;
        return true;
    }
    return false;
}

static bool descr_dtype(const char *d, DType *dt, char *err, size_t errlen) {
    char bo = d[0];
    if (bo == '>') return fail(err, errlen, "big-endian data ('%s') is not supported", d);
    if (bo != '<' && bo != '|' && bo != '=') return fail(err, errlen, "unsupported dtype '%s'", d);
    for (int i = 0; i < DT_COUNT; i++) {
        if (strcmp(dtype_info[i].npy + 1, d + 1) == 0) {
            *dt = (DType)i;
            return true;
        }
    }
    if (strcmp(d + 1, "?") == 0) {
        *dt = DT_BOOL;
        return true;
    }
    return fail(err, errlen,
                "unsupported dtype '%s' (cuk reads bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64, and bf16 as V2)", d);
}

Arr *npy_load_mem(const void *buf, size_t len, char *err, size_t errlen) {
    const unsigned char *b = buf;
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        fail(err, errlen, "not a .npy file (bad magic)");
        return NULL;
    }
    int major = b[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) {
            fail(err, errlen, "truncated .npy header");
            return NULL;
        }
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hoff = 12;
    } else {
        fail(err, errlen, "unsupported .npy format version %d.%d", major, b[7]);
        return NULL;
    }
    if (hlen > len - hoff) {
        fail(err, errlen, "truncated .npy header");
        return NULL;
    }
    Hdr h = {(const char *)b + hoff, (const char *)b + hoff + hlen};
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    DType dt = DT_F32;
    int rank = 0;
    int64_t shape[MAXRANK];
    char key[32], val[32];
    if (!eat(&h, '{')) goto bad;
    while (!eat(&h, '}')) {
        if (!parse_str(&h, key, sizeof key) || !eat(&h, ':')) goto bad;
        if (strcmp(key, "descr") == 0) {
            if (!parse_str(&h, val, sizeof val)) {
                fail(err, errlen, "unsupported or malformed 'descr' in .npy header");
                return NULL;
            }
            if (!descr_dtype(val, &dt, err, errlen)) return NULL;
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (parse_word(&h, "True"))
                fortran = true;
            else if (!parse_word(&h, "False"))
                goto bad;
            have_order = true;
        } else if (strcmp(key, "shape") == 0) {
            if (!eat(&h, '(')) goto bad;
            rank = 0;
            while (!eat(&h, ')')) {
                if (rank == MAXRANK) {
                    fail(err, errlen, "arrays of more than %d dimensions are not supported",
                         MAXRANK);
                    return NULL;
                }
                if (!parse_int(&h, &shape[rank])) goto bad;
                rank++;
                if (!eat(&h, ',')) {
                    if (!eat(&h, ')')) goto bad;
                    break;
                }
            }
            have_shape = true;
        } else {
            goto bad;
        }
        if (!eat(&h, ',')) {
            if (!eat(&h, '}')) goto bad;
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape) goto bad;
    if (fortran) {
        fail(err, errlen, "Fortran-ordered arrays are not supported (save it in C order)");
        return NULL;
    }
    /* Size check before allocating: the data must be all there. */
    uint64_t size = 1;
    for (int k = 0; k < rank; k++) {
        if (shape[k] && size > UINT64_MAX / (uint64_t)shape[k]) goto toobig;
        size *= (uint64_t)shape[k];
    }
    size_t esz = (size_t)dtype_info[dt].size;
    if (size > (UINT64_MAX / esz)) goto toobig;
    uint64_t nbytes = size * esz, have = (uint64_t)(len - hoff - hlen);
    if (nbytes > have) {
        fail(err, errlen, "truncated .npy data: the header promises %llu bytes, the file has %llu",
             (unsigned long long)nbytes, (unsigned long long)have);
        return NULL;
    }
    Arr *a = arr_new(dt, rank, shape);
    if (!a) goto toobig;
    memcpy(a->data, b + hoff + hlen, (size_t)nbytes);
    if (dt == DT_BOOL) {
        uint8_t *p = a->data;
        for (int64_t i = 0; i < a->size; i++) p[i] = p[i] != 0;
    }
    return a;
bad:
    fail(err, errlen, "malformed .npy header");
    return NULL;
toobig:
    fail(err, errlen, "array in .npy file is too large");
    return NULL;
}

Arr *npy_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    Arr *a = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    unsigned char *buf = malloc(n ? (size_t)n : 1);
    if (!buf) {
        fail(err, errlen, "%s is too large to read", path);
        fclose(f);
        return NULL;
    }
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fail(err, errlen, "cannot read %s", path);
    } else {
        char e2[256];
        a = npy_load_mem(buf, (size_t)n, e2, sizeof e2);
        if (!a) fail(err, errlen, "%s: %s", path, e2);
    }
    free(buf);
    fclose(f);
    return a;
}

bool npy_save(const char *path, const Arr *a, char *err, size_t errlen) {
    char dict[64 + 24 * MAXRANK];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     dtype_info[a->dt].npy);
    for (int k = 0; k < a->rank; k++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", k ? ", " : "",
                      (long long)a->shape[k]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", a->rank == 1 ? "," : "");
    /* Pad with spaces and a newline so the data starts 64-byte aligned (NumPy does). */
    size_t pre = 10, total = pre + (size_t)n + 1;
    total = (total + 63) & ~(size_t)63;
    size_t hlen = total - pre;
    unsigned char head[16 + sizeof dict + 64];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)(hlen >> 8);
    memcpy(head + pre, dict, (size_t)n);
    memset(head + pre + n, ' ', hlen - (size_t)n - 1);
    head[total - 1] = '\n';

    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
    size_t nbytes = (size_t)a->size * (size_t)dtype_info[a->dt].size;
    bool ok = fwrite(head, 1, total, f) == total && fwrite(a->data, 1, nbytes, f) == nbytes;
    if (fclose(f) != 0) ok = false;
    if (!ok) return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return true;
}
