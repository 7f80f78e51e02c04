/* <string.h> for device code under NVRTC: memcpy and memset are NVRTC built-ins. */
#ifndef CUK_STRING_H
#define CUK_STRING_H
#include <stddef.h>
#endif
