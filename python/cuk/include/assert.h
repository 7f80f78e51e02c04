/* <assert.h> for device code under NVRTC: assert is an NVRTC built-in (a failed assert
   stops the kernel, and the next synchronising call reports it). */
#ifndef CUK_ASSERT_H
#define CUK_ASSERT_H
#endif
