/* The redistribution's box copies on the device (src/device/redist_dev.h): one kernel for every box of a pack or
 * an unpack, the box in blockIdx.y, a grid-stride loop over its elements in blockIdx.x. Element i of a box is
 * found by peeling its C-order coordinates off i, innermost first; a box of fewer than 2^31 elements does it in
 * 32-bit arithmetic (64-bit division is several times slower on the GPU). Copies only: the element type matters
 * for its size alone. */
#include "cuda_impl.h"
#include "redist_dev.h"

namespace {

const int BOX_THREADS = 256;
const unsigned MAX_Y = 65535; /* gridDim.y */

/* 16-byte elements with the 8-byte alignment a double complex has on the host. */
struct e16 {
  unsigned long long lo, hi;
};

template <typename I> __device__ int64_t box_offset(const rmaop__box &b, I i) {
  int64_t off = 0;
  for (int d = b.nd - 1; d > 0; --d) {
    const I s = (I)b.shape[d];
    off += (int64_t)(i % s) * b.stride[d];
    i /= s;
  }
  return off + (int64_t)i * b.stride[0];
}

template <typename T, typename I> __device__ void copy_box(const rmaop__box &b, T *array, T *packed, int to_packed) {
  T *a = array + b.array_off, *p = packed + b.packed_off;
  const I n = (I)b.n, step = (I)gridDim.x * (I)blockDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += step) {
    const int64_t off = box_offset<I>(b, i);
    if (to_packed)
      p[i] = a[off];
    else
      a[off] = p[i];
  }
}

template <typename T>
__global__ void k_box(const rmaop__box *boxes, unsigned first, T *array, T *packed, int to_packed) {
  __shared__ rmaop__box b;
  if (threadIdx.x == 0)
    b = boxes[first + blockIdx.y];
  __syncthreads();
  if (b.n < ((int64_t)1 << 31) - (int64_t)gridDim.x * blockDim.x)
    copy_box<T, unsigned>(b, array, packed, to_packed);
  else
    copy_box<T, int64_t>(b, array, packed, to_packed);
}

template <typename T>
cudaError_t launch(rmaop_ctx ctx, int nbox, const rmaop__box *boxes, int64_t max_n, void *array, void *packed,
                   int to_packed) {
  for (unsigned first = 0; first < (unsigned)nbox; first += MAX_Y) {
    const unsigned ny = (unsigned)nbox - first < MAX_Y ? (unsigned)nbox - first : MAX_Y;
    const dim3 grid(grid_for(max_n, BOX_THREADS), ny);
    k_box<T><<<grid, BOX_THREADS, 0, STREAM(ctx)>>>(boxes, first, (T *)array, (T *)packed, to_packed);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

} // namespace

extern "C" rmaop_status rmaop__dev_box_copy(rmaop_ctx ctx, size_t es, int nbox, const rmaop__box *boxes, int64_t max_n,
                                            void *array, void *packed, int to_packed) {
  if (max_n <= 0 || nbox <= 0)
    return RMAOP_OK;
  cudaError_t e = cudaErrorInvalidValue;
  switch (es) {
  case 4:
    e = launch<unsigned>(ctx, nbox, boxes, max_n, array, packed, to_packed);
    break;
  case 8:
    e = launch<unsigned long long>(ctx, nbox, boxes, max_n, array, packed, to_packed);
    break;
  case 16:
    e = launch<e16>(ctx, nbox, boxes, max_n, array, packed, to_packed);
    break;
  default:
    return RMAOP_ERROR(ctx, RMAOP_ERR_INTERNAL, "rmaop__dev_box_copy: elements of %zu bytes (4, 8 or 16)", es);
  }
  RMAOP_CHECK_CUDA(ctx, e);
  return RMAOP_OK;
}
