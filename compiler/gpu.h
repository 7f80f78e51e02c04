/* The GPU backend's entry point (gpu_exec.c): runs a program with arrays on the device. */
#ifndef CUK_GPU_H
#define CUK_GPU_H
#include "cpu.h"

/* Same contract as cpu_run: runs fn with args (host arrays, uploaded here), *result gets
   the returned value downloaded to the host (NULL for none), print() goes to out. On a
   run-time error, or when no GPU or NVRTC is usable, returns false and fills err. */
bool gpu_run(const Program *p, const Fn *fn, Arr **args, Arr **result, FILE *out, RtErr *err);

#endif
