/* <stdlib.h> for device code under NVRTC: malloc, free and abs are NVRTC built-ins.
   uint, ushort and ulong are here as glibc's <stdlib.h> brings them (through
   <sys/types.h>) into code nvcc compiles. */
#ifndef CUK_STDLIB_H
#define CUK_STDLIB_H
#include <stddef.h>
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
#endif
