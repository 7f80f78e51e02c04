/* <stddef.h> for device code under NVRTC (size_t, ptrdiff_t and NULL are NVRTC
   built-ins). */
#ifndef CUK_STDDEF_H
#define CUK_STDDEF_H
#ifndef offsetof
#define offsetof(type, member) ((size_t) & reinterpret_cast<const volatile char &>((((type *)0)->member)))
#endif
#ifdef __cplusplus
typedef decltype(nullptr) nullptr_t;
#endif
#endif
