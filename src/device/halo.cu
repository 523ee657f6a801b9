/* The halo operator on the device (src/device/halo_dev.h): the interior copy between a rank's block and the middle
 * of its extended block, the zeros outside the global array, and the exchange by kernel puts (rmaop__hxch: the
 * boxes stored straight into the peers' windows, kx.cuh's protocol). Copies, zeros and, in the adjoint, sums of
 * two elements (no contraction to round differently). */
#include "cuda_impl.h"
#include "halo_dev.h"
#include "kx.cuh"

namespace {

const int HALO_THREADS = RMAOP__HX_THREADS;
const int HMAX = RMAOP_HALO_MAX_DIMS;
const int64_t SMALL = (int64_t)1 << 32; /* below it, I = uint32_t: index arithmetic in 32 bits */

/* Cell e of box b (row-major over its extents n) as an offset in an array of strides st; I the type of e's
 * divisions (every extent fits it where e does). The loop is unrolled so that a thread's copy of b and st stays in
 * registers. */
template <typename I, typename B>
__device__ __forceinline__ int64_t cell_at(const B &b, int nd, int64_t e64, const int64_t *st) {
  I e = (I)e64;
  int64_t o = 0;
#pragma unroll
  for (int d = HMAX - 1; d >= 0; --d) {
    if (d >= nd)
      continue;
    const I n = (I)b.n[d];
    o += (b.at[d] + (int64_t)(e % n)) * st[d];
    e /= n;
  }
  return o;
}

template <typename B> __host__ __device__ int64_t cells(const B &b, int nd) {
  int64_t c = 1;
  for (int d = 0; d < nd; ++d)
    c *= b.n[d];
  return c;
}

/* Row-major strides of extents n. */
void strides_of(int nd, const int64_t *n, int64_t *st) {
  for (int d = nd - 1; d >= 0; --d)
    st[d] = d == nd - 1 ? 1 : st[d + 1] * n[d + 1];
}

__device__ __forceinline__ void copy_strides(int64_t *dst, const int64_t *src) {
#pragma unroll
  for (int d = 0; d < HMAX; ++d)
    dst[d] = src[d];
}

struct interior {
  int ndim;
  rmaop__hx_box b; /* the block's cells in the extended block */
  int64_t est[HMAX];
};

template <typename T, typename I> __global__ void k_interior(interior in, T *blk, T *ext, int64_t total, int to_ext) {
  GRID_STRIDE(i, total) {
    const int64_t e = cell_at<I>(in.b, in.ndim, i, in.est);
    if (to_ext)
      ext[e] = blk[i];
    else
      blk[i] = ext[e];
  }
}

/* The boxes laid end to end: cell i is in box k when first[k] <= i < first[k + 1]. */
struct zero_boxes {
  int ndim, nbox;
  rmaop__halo_box box[2 * HMAX];
  int64_t est[HMAX], first[2 * HMAX + 1];
};

template <typename I>
__device__ __forceinline__ int64_t zero_cell(const rmaop__halo_box *box, const int64_t *first, int nd,
                                             const int64_t *est, int64_t i) {
  int k = 0;
  while (i >= first[k + 1])
    ++k;
  return cell_at<I>(box[k], nd, i - first[k], est);
}

template <typename T> __global__ void k_zero(zero_boxes z, T *ext, int64_t total) {
  GRID_STRIDE(i, total) ext[zero_cell<int64_t>(z.box, z.first, z.ndim, z.est, i)] = T();
}

/* ---- the exchange by kernel puts ---- */

template <typename T> __device__ __forceinline__ T add(T a, T b) {
  return a + b;
}
template <> __device__ __forceinline__ cuFloatComplex add(cuFloatComplex a, cuFloatComplex b) {
  return cuCaddf(a, b);
}
template <> __device__ __forceinline__ cuDoubleComplex add(cuDoubleComplex a, cuDoubleComplex b) {
  return cuCadd(a, b);
}

/* The box of list[0, n) that holds cell i of the list laid end to end. */
__device__ __forceinline__ int box_of(const rmaop__hx_box *list, int n, int64_t i) {
  int k = 0;
  while (k + 1 < n && i >= list[k + 1].first)
    ++k;
  return k;
}

/* A begin launch's put blocks [0, nput): the block's box of list[0, n) (b0, nb) stored from src (strides st) into its
 * peer's half, `at` bytes in, once the peer is done with it; the last of the put blocks signals the neighbours. */
template <typename T, typename I>
__device__ void put_boxes(rmaop__hxch *h, const rmaop__hx_box *list, int n, unsigned nput, uint64_t s, size_t at,
                          const T *src, const int64_t *st) {
  int k = 0;
  while (k < n && blockIdx.x >= list[k].b0 + list[k].nb)
    ++k;
  if (kx_put_go(&h->x, k < n, k < n ? list[k].peer : 0, s)) {
    const rmaop__hx_box b = list[k];
    const int nd = h->ndim;
    int64_t str[HMAX];
    copy_strides(str, st);
    const int64_t nc = cells(b, nd);
    T *dst = (T *)kx_peer_half(&h->x, b.peer, s, at) + b.off;
    for (int64_t e = (int64_t)(blockIdx.x - b.b0) * blockDim.x + threadIdx.x; e < nc; e += (int64_t)b.nb * blockDim.x)
      dst[e] = src[cell_at<I>(b, nd, e, str)];
  }
  kx_put_done(&h->x, s, nput);
}

/* The local copy's blocks, those from `from` on: the first cell and the stride of their grid-stride loop. */
__device__ __forceinline__ int64_t local_first(unsigned from) {
  return (int64_t)(blockIdx.x - from) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t local_step(unsigned from) {
  return (int64_t)(gridDim.x - from) * blockDim.x;
}

/* Forward, first launch: fwd's boxes into the peers' windows; then ext's middle = blk, zeros outside the array. */
template <typename T, typename I> __global__ void k_hx_forward_begin(rmaop__hxch *h, const T *blk, T *ext) {
  const uint64_t s = kx_seq(&h->x);
  const unsigned np = h->fwd_blocks;
  if (blockIdx.x < np) {
    put_boxes<T, I>(h, h->fwd, h->nfwd, np, s, 0, blk, h->lst);
    return;
  }
  const int nd = h->ndim;
  const rmaop__hx_box in = h->inner;
  int64_t est[HMAX];
  copy_strides(est, h->est);
  const int64_t nloc = h->nloc, total = nloc + h->nzcells;
  for (int64_t i = local_first(np); i < total; i += local_step(np)) {
    if (i < nloc)
      ext[cell_at<I>(in, nd, i, est)] = blk[i];
    else
      ext[zero_cell<I>(h->zero, h->zfirst, nd, est, i - nloc)] = T();
  }
}

/* Forward, end: the ghost cells from the own forward area once every origin's signal is in. */
template <typename T, typename I> __global__ void k_hx_forward_end(rmaop__hxch *h, T *ext) {
  const uint64_t s = kx_seq(&h->x);
  const T *area = (const T *)kx_enter(&h->x, s, h->nfrecv, [h](int k) { return h->frecv[k].peer; });
  const int nd = h->ndim, n = h->nfrecv;
  int64_t est[HMAX];
  copy_strides(est, h->est);
  GRID_STRIDE(i, h->nfcells) {
    const rmaop__hx_box &b = h->frecv[box_of(h->frecv, n, i)];
    ext[cell_at<I>(b, nd, i - b.first, est)] = area[b.off + (i - b.first)];
  }
  kx_end_done(&h->x, s);
}

/* Adjoint, first launch: the ghost boxes of ext into their owners' adjoint areas; then blk = ext's middle. */
template <typename T, typename I> __global__ void k_hx_adjoint_begin(rmaop__hxch *h, const T *ext, T *blk) {
  const uint64_t s = kx_seq(&h->x);
  const unsigned np = h->adj_blocks;
  if (blockIdx.x < np) {
    put_boxes<T, I>(h, h->adj, h->nfrecv, np, s, h->adj_at, ext, h->est);
    return;
  }
  const int nd = h->ndim;
  const rmaop__hx_box in = h->inner;
  int64_t est[HMAX];
  copy_strides(est, h->est);
  const int64_t nloc = h->nloc;
  for (int64_t i = local_first(np); i < nloc; i += local_step(np))
    blk[i] = ext[cell_at<I>(in, nd, i, est)];
}

__device__ __forceinline__ bool holds(const rmaop__hx_box &b, int nd, const int64_t *c) {
  for (int d = 0; d < nd; ++d)
    if (c[d] < b.at[d] || c[d] >= b.at[d] + b.n[d])
      return false;
  return true;
}

/* Adjoint, end: blk += every origin's contribution, origins ascending (the reversed plan's unpack order). A cell in
 * several boxes (a corner) is summed by the thread of the first box that holds it. */
template <typename T, typename I> __global__ void k_hx_adjoint_end(rmaop__hxch *h, T *blk) {
  const uint64_t s = kx_seq(&h->x);
  const int nd = h->ndim, n = h->nfwd;
  const T *area = (const T *)(kx_enter(&h->x, s, n, [h](int k) { return h->arecv[k].peer; }) + h->adj_at);
  GRID_STRIDE(i, h->nacells) {
    const int k = box_of(h->arecv, n, i);
    int64_t c[HMAX];
    I e = (I)(i - h->arecv[k].first);
    for (int d = nd - 1; d >= 0; --d) {
      const I m = (I)h->arecv[k].n[d];
      c[d] = h->arecv[k].at[d] + (int64_t)(e % m);
      e /= m;
    }
    bool mine = true;
    for (int j = 0; j < k && mine; ++j)
      mine = !holds(h->arecv[j], nd, c);
    if (!mine)
      continue;
    int64_t o = 0;
    for (int d = 0; d < nd; ++d)
      o += c[d] * h->lst[d];
    T v = blk[o];
    for (int j = k; j < n; ++j) {
      const rmaop__hx_box &b = h->arecv[j];
      if (!holds(b, nd, c))
        continue;
      int64_t p = 0;
      for (int d = 0; d < nd; ++d)
        p = p * b.n[d] + (c[d] - b.at[d]);
      v = add(v, area[b.off + p]);
    }
    blk[o] = v;
  }
  kx_end_done(&h->x, s);
}

unsigned end_grid(int64_t total) {
  const unsigned g = grid_for(total, HALO_THREADS);
  return g < RMAOP__HX_LOCAL_BLOCKS ? g : RMAOP__HX_LOCAL_BLOCKS;
}

} // namespace

extern "C" rmaop_status rmaop__dev_halo_interior(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *local,
                                                 const int64_t *ext_dims, const int64_t *lo, void *blk, void *ext,
                                                 int to_ext) {
  interior in = {};
  in.ndim = ndim;
  for (int d = 0; d < ndim; ++d)
    in.b.n[d] = local[d], in.b.at[d] = lo[d];
  strides_of(ndim, ext_dims, in.est);
  const int64_t total = cells(in.b, ndim);
  if (total <= 0)
    return RMAOP_OK;
  const unsigned grid = grid_for(total, HALO_THREADS);
  if (total < SMALL)
    DISPATCH(dt,
             (k_interior<T, uint32_t><<<grid, HALO_THREADS, 0, STREAM(ctx)>>>(in, (T *)blk, (T *)ext, total, to_ext)))
  else
    DISPATCH(dt,
             (k_interior<T, int64_t><<<grid, HALO_THREADS, 0, STREAM(ctx)>>>(in, (T *)blk, (T *)ext, total, to_ext)))
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_halo_zero(rmaop_ctx ctx, rmaop_dtype dt, int ndim, const int64_t *ext_dims, int nbox,
                                             const rmaop__halo_box *boxes, void *ext) {
  RMAOP_REQUIRE(ctx, nbox >= 0 && nbox <= 2 * RMAOP_HALO_MAX_DIMS, RMAOP_ERR_INTERNAL,
                "rmaop__dev_halo_zero: %d boxes (at most %d)", nbox, 2 * RMAOP_HALO_MAX_DIMS);
  zero_boxes z = {};
  z.ndim = ndim, z.nbox = nbox;
  strides_of(ndim, ext_dims, z.est);
  for (int k = 0; k < nbox; ++k) {
    z.box[k] = boxes[k];
    z.first[k + 1] = z.first[k] + cells(boxes[k], ndim);
  }
  const int64_t total = z.first[nbox];
  if (total <= 0)
    return RMAOP_OK;
  DISPATCH(dt, (k_zero<T><<<grid_for(total, HALO_THREADS), HALO_THREADS, 0, STREAM(ctx)>>>(z, (T *)ext, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* A kernel of the exchange, in 32-bit index arithmetic where the descriptor allows it. */
#define HX_LAUNCH(host, kernel, grid, ...)                                                                             \
  do {                                                                                                                 \
    if ((host)->small)                                                                                                 \
      DISPATCH(dt, (kernel<T, uint32_t><<<(grid), HALO_THREADS, 0, STREAM(ctx)>>>(__VA_ARGS__)))                       \
    else                                                                                                               \
      DISPATCH(dt, (kernel<T, int64_t><<<(grid), HALO_THREADS, 0, STREAM(ctx)>>>(__VA_ARGS__)))                        \
    RMAOP_CHECK_LAUNCH(ctx);                                                                                           \
    return RMAOP_OK;                                                                                                   \
  } while (0)

extern "C" rmaop_status rmaop__dev_hx_forward_begin(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev,
                                                    const rmaop__hxch *host, const void *blk, void *ext) {
  HX_LAUNCH(host, k_hx_forward_begin, host->fwd_blocks + host->fwd_local, dev, (const T *)blk, (T *)ext);
}

extern "C" rmaop_status rmaop__dev_hx_forward_end(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev,
                                                  const rmaop__hxch *host, void *ext) {
  HX_LAUNCH(host, k_hx_forward_end, end_grid(host->nfcells), dev, (T *)ext);
}

extern "C" rmaop_status rmaop__dev_hx_adjoint_begin(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev,
                                                    const rmaop__hxch *host, const void *ext, void *blk) {
  HX_LAUNCH(host, k_hx_adjoint_begin, host->adj_blocks + host->adj_local, dev, (const T *)ext, (T *)blk);
}

extern "C" rmaop_status rmaop__dev_hx_adjoint_end(rmaop_ctx ctx, rmaop_dtype dt, rmaop__hxch *dev,
                                                  const rmaop__hxch *host, void *blk) {
  HX_LAUNCH(host, k_hx_adjoint_end, end_grid(host->nacells), dev, (T *)blk);
}
