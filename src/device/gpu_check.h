/* The one CUDA and NCCL check of the library, for the files that call CUDA or NCCL themselves (src/device,
 * rma's ipc transport, nccl/): a failing call records "<call> failed: <CUDA's string> (<its name>)" and returns
 * RMAOP_ERR_CUDA, or RMAOP_ERR_NOMEM for an allocation that failed. Include <nccl.h> first for the NCCL check. */
#ifndef RMAOP_DEVICE_GPU_CHECK_H
#define RMAOP_DEVICE_GPU_CHECK_H

#include <cuda_runtime.h>

#include "core/error.h"

#define RMAOP_CHECK_CUDA(ctx, call)                                                                                \
  do {                                                                                                             \
    cudaError_t rmaop__e = (call);                                                                                 \
    if (rmaop__e != cudaSuccess)                                                                                   \
      return rmaop__error((ctx), rmaop__e == cudaErrorMemoryAllocation ? RMAOP_ERR_NOMEM : RMAOP_ERR_CUDA, __FILE__, \
                          __LINE__, "%s failed: %s (%s)", #call, cudaGetErrorString(rmaop__e),                     \
                          cudaGetErrorName(rmaop__e));                                                             \
  } while (0)

/* After a kernel launch: the launch's own error (bad configuration, no device). */
#define RMAOP_CHECK_LAUNCH(ctx) RMAOP_CHECK_CUDA(ctx, cudaGetLastError())

#ifdef NCCL_MAJOR
#define RMAOP_CHECK_NCCL(ctx, call)                                                                                \
  do {                                                                                                             \
    ncclResult_t rmaop__n = (call);                                                                                \
    if (rmaop__n != ncclSuccess)                                                                                   \
      return rmaop__error((ctx), RMAOP_ERR_NCCL, __FILE__, __LINE__, "%s failed: %s (%s)", #call,                  \
                          ncclGetErrorString(rmaop__n), ncclGetLastError(NULL));                                   \
  } while (0)
#endif

#endif /* RMAOP_DEVICE_GPU_CHECK_H */
