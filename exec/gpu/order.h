/* The stream a GPU call runs on (gpu_call_into's stream): every launch, copy, fill and
   pool allocation of the call goes there, so calls on different streams overlap and a
   call is ordered after the work the caller queued on its stream before it. Set for the
   thread making the call while it runs (exec.c); sort.c and exec.c read it. */
#ifndef CUK_EXEC_GPU_ORDER_H
#define CUK_EXEC_GPU_ORDER_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/cuk.h"

/* The running call's stream (NULL: the legacy default stream). */
cuk_stream *gpu_stream(void);
/* A copy to the host that waits for the call's stream up to this point. */
bool gpu_read(void *dst, cuk_devptr src, size_t bytes);
/* A copy from the host, ordered on the call's stream (the host buffer may be reused as
   soon as it returns). */
bool gpu_write(cuk_devptr dst, const void *src, size_t bytes);
/* A pool block for the call's stream. */
bool gpu_alloc(cuk_devptr *p, size_t bytes);

#endif
