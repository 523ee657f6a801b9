/* RMAOP__HD marks the inline functions that the host loops (C) and the CUDA kernels share, so that each element
 * formula is written once: __host__ __device__ under nvcc, nothing in C. */
#ifndef RMAOP_DEVICE_HD_H
#define RMAOP_DEVICE_HD_H

#ifdef __CUDACC__
#define RMAOP__HD __host__ __device__
#else
#define RMAOP__HD
#endif

#endif /* RMAOP_DEVICE_HD_H */
