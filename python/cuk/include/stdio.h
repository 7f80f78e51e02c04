/* <stdio.h> for device code under NVRTC: printf is an NVRTC built-in (its output appears
   when the host synchronises); there are no files or streams on the device. */
#ifndef CUK_STDIO_H
#define CUK_STDIO_H
#include <stddef.h>
#define EOF (-1)
#endif
