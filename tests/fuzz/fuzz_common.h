/* Helpers shared by the libFuzzer targets: the fuzz input as a file (a memfd, so that the
   real file-reading code runs without touching the disk) and a sink for output. */
#ifndef CUK_FUZZ_COMMON_H
#define CUK_FUZZ_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A memory-backed file whose name, /proc/self/fd/N, fopen() opens afresh each time. */
typedef struct MemFile {
    int fd;
    char path[64];
} MemFile;

static inline void memfile_open(MemFile *m, const char *name) {
    m->fd = memfd_create(name, 0);
    if (m->fd < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
}

/* Replaces the file's contents with data[0..size). */
static inline void memfile_set(MemFile *m, const uint8_t *data, size_t size) {
    if (ftruncate(m->fd, 0) != 0 || pwrite(m->fd, data, size, 0) != (ssize_t)size) {
        perror("memfd write");
        abort();
    }
}

static inline FILE *devnull(void) {
    static FILE *f;
    if (!f) f = fopen("/dev/null", "w");
    if (!f) abort();
    return f;
}

#endif
