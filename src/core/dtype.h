/* Element types: one kernel for the four dtypes, and the host element kernel (src/core/dtype.c). */
#ifndef RMAOP_CORE_DTYPE_H
#define RMAOP_CORE_DTYPE_H

#ifndef __cplusplus
#include <complex.h>
#endif
#include <stdint.h>

#include "rmaop/rmaop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the statements with T bound to the element type of `dtype` and R to its real type, so one kernel
 * serves the four dtypes (no copy per dtype). The casts keep -Wunused-local-typedefs quiet in kernels
 * that need only one of the two names. */
#define RMAOP__FOR_DTYPE(dtype, ...)                                                                         \
  switch (dtype) {                                                                                           \
  case RMAOP_F32: { typedef float T; typedef float R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  case RMAOP_F64: { typedef double T; typedef double R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  case RMAOP_C64: { typedef float _Complex T; typedef float R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  case RMAOP_C128: { typedef double _Complex T; typedef double R; (void)sizeof(T); (void)sizeof(R); __VA_ARGS__; } break; \
  }


/* dst[i] (=|+=) src[i] for n elements of dtype. */
void rmaop__host_apply(rmaop_dtype dtype, void *dst, const void *src, int64_t n, rmaop_mode mode);

#ifdef __cplusplus
}
#endif

#endif /* RMAOP_CORE_DTYPE_H */
