/* Operators on device memory (src/device/dev_ops.h): the derivative stencils as kernels (one thread per output
 * element, the four dtypes from one template), and the dense block products through cuBLAS.
 *
 * The stencil kernels add the same terms in the same order as the host path (src/ops/op_stencil.c) with
 * explicitly rounded operations (no fused multiply-add), so device and host results agree bit for bit. */
#include <cuComplex.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "rmaop/rmaop_device.cuh"

#include "cuda_impl.h"
#include "dev_ops.h"
#include "device.h"
#include "kx.cuh"

namespace {

enum { THREADS = 256 };

/* Real coefficient times element, and sums, rounded like the host's separate * and + (a real times a
 * complex scales both parts, C11 Annex G). R is the real type. */
template <typename T> struct ar;
template <> struct ar<float> {
  typedef float R;
  static __device__ float zero() { return 0.0f; }
  static __device__ float mulr(float c, float x) { return __fmul_rn(c, x); }
  static __device__ float add(float a, float b) { return __fadd_rn(a, b); }
};
template <> struct ar<double> {
  typedef double R;
  static __device__ double zero() { return 0.0; }
  static __device__ double mulr(double c, double x) { return __dmul_rn(c, x); }
  static __device__ double add(double a, double b) { return __dadd_rn(a, b); }
};
template <> struct ar<cuFloatComplex> {
  typedef float R;
  static __device__ cuFloatComplex zero() { return make_cuFloatComplex(0.0f, 0.0f); }
  static __device__ cuFloatComplex mulr(float c, cuFloatComplex x) {
    return make_cuFloatComplex(__fmul_rn(c, x.x), __fmul_rn(c, x.y));
  }
  static __device__ cuFloatComplex add(cuFloatComplex a, cuFloatComplex b) {
    return make_cuFloatComplex(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y));
  }
};
template <> struct ar<cuDoubleComplex> {
  typedef double R;
  static __device__ cuDoubleComplex zero() { return make_cuDoubleComplex(0.0, 0.0); }
  static __device__ cuDoubleComplex mulr(double c, cuDoubleComplex x) {
    return make_cuDoubleComplex(__dmul_rn(c, x.x), __dmul_rn(c, x.y));
  }
  static __device__ cuDoubleComplex add(cuDoubleComplex a, cuDoubleComplex b) {
    return make_cuDoubleComplex(__dadd_rn(a.x, b.x), __dadd_rn(a.y, b.y));
  }
};

__device__ bool is_local(const rmaop__stencil_desc &d, int64_t g) { return g >= d.off && g < d.off + d.n; }

/* ---- ghost rows put by kernels (rmaop__khalo, dev_ops.h; the exchange in kx.cuh) ---- */

/* Element e of an (outer, rows, inner) box: inner index i, row r, outer block o. A 64-bit division costs
 * tens of instructions, more than the memory time of an element, so the common shapes skip them: 1-D
 * arrays (ninner = 1) and the first outer block (every distributed stencil has nouter = 1). */
__device__ __forceinline__ void split(int64_t e, int64_t ninner, int64_t nrows, int64_t &i, int64_t &r, int64_t &o) {
  int64_t q = e;
  i = 0;
  if (ninner != 1) i = e % ninner, q = e / ninner;
  if (q < nrows) r = q, o = 0;
  else r = q % nrows, o = q / nrows;
}

/* Row g of outer block o: a local row of `base`, or a ghost row (distributed stencils: nouter = 1). */
template <typename T>
__device__ const T *row_at(const rmaop__stencil_desc &d, const T *base, const T *ghost, int64_t o, int64_t g) {
  if (is_local(d, g)) return base + (o * d.n + (g - d.off)) * d.ninner;
  if (g < d.off) return ghost + (g - (d.off - d.hl)) * d.ninner;
  return ghost + (d.hl + g - (d.off + d.n)) * d.ninner;
}

/* The nonzero interior coefficients in ascending offset: the order both paths add them in. */
struct taps {
  int n;
  int k[RMAOP__NK];
  double c[RMAOP__NK];
};

/* 1-D rows whose taps are all local, with no index arithmetic beyond e + k: dst[e] (=|+=) sum_t c_t
 * src[e + dir k_t], the first term alone, then added one by one (forward: dir = 1; adjoint gather: dir =
 * -1, src = y). The general kernels below spend more time on index arithmetic than on memory. */
template <typename T>
__global__ void k_flat(taps t, const T *src, T *dst, int64_t count, int dir, int accumulate) {
  typedef ar<T> A;
  typedef typename A::R R;
  GRID_STRIDE(e, count) {
    const T *s0 = src + e;
    T s = A::mulr((R)t.c[0], s0[dir * t.k[0]]);
#pragma unroll /* constant indices keep t in parameter space (a runtime index would copy it to local memory) */
    for (int u = 1; u < RMAOP__NK; ++u)
      if (u < t.n) s = A::add(s, A::mulr((R)t.c[u], s0[dir * t.k[u]]));
    dst[e] = accumulate ? A::add(dst[e], s) : s;
  }
}

/* Forward: one thread per element of the output rows [a1, a1 + n1) and [a2, a2 + nrows - n1). */
template <typename T, bool KH>
__global__ void k_forward(rmaop__stencil_desc d, const T *x, const T *ghost, T *y, int64_t a1, int64_t n1, int64_t a2,
                          int64_t nrows, int64_t total, rmaop__khalo *h) {
  typedef ar<T> A;
  typedef typename A::R R;
  uint64_t s = 0;
  if (KH)
    s = kx_seq(&h->x), ghost = (const T *)kx_enter(&h->x, s, h->nfrom, [h](int k) { return h->from[k]; });
  GRID_STRIDE(e, total) {
    int64_t i, r, o;
    split(e, d.ninner, nrows, i, r, o);
    const int64_t g = r < n1 ? a1 + r : a2 + (r - n1);
    T *yp = y + (o * d.n + (g - d.off)) * d.ninner + i;
    if (g >= d.flo && g < d.fhi) { /* host: flat loop, y (=|+=) c0 x0 + c1 x1 + ... */
      T v = A::zero();
      bool first = true;
      for (int k = -2; k <= 2; ++k)
        if (d.cint[k + 2] != 0.0) {
          const T t = A::mulr((R)d.cint[k + 2], row_at(d, x, ghost, o, g + k)[i]);
          v = first ? t : A::add(v, t);
          first = false;
        }
      *yp = d.accumulate ? A::add(*yp, v) : v;
    } else { /* host: per-row loop, y = 0 (overwrite) then y += c_k x_k */
      double c[RMAOP__NK];
      rmaop__stencil_coef(&d.cs, g, c);
      T v = d.accumulate ? *yp : A::zero();
      for (int k = -2; k <= 2; ++k)
        if (c[k + 2] != 0.0) v = A::add(v, A::mulr((R)c[k + 2], row_at(d, x, ghost, o, g + k)[i]));
      *yp = v;
    }
  }
  if (KH)
    kx_end_done(&h->x, s);
}

/* The adjoint's rule for a row j outside the gather rows: s plus the contributions of the local rows g within 2
 * of j, the edge rows' first, then the interior rows', each by ascending g. y0: the input at the part's row d.off
 * (row g at y0[(g - d.off) * ninner]; only local rows are read). */
template <typename T>
__device__ __forceinline__ T scatter_into(const rmaop__stencil_desc &d, T s, const T *y0, int64_t j) {
  typedef ar<T> A;
  typedef typename A::R R;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t g = j - 2; g <= j + 2; ++g) {
      if (!is_local(d, g) || (g >= d.flo && g < d.fhi) != (pass == 1)) continue;
      double c[RMAOP__NK];
      rmaop__stencil_coef(&d.cs, g, c);
      const double ck = c[j - g + 2];
      if (ck != 0.0) s = A::add(s, A::mulr((R)ck, y0[(g - d.off) * d.ninner]));
    }
  return s;
}

/* Adjoint in gather form: one thread per element of x's local rows [row0, row0 + n1) and [row2, row2 + nrows - n1)
 * (ghost = 0) or of the ghost rows (ghost = 1, written to out, nouter = 1, one range from 0). */
template <typename T>
__global__ void k_adjoint(rmaop__stencil_desc d, const T *y, T *out, int ghost, int64_t row0, int64_t n1,
                          int64_t row2, int64_t nrows, int64_t total) {
  typedef ar<T> A;
  typedef typename A::R R;
  const int64_t stride = ghost ? nrows : d.n; /* rows per outer block of out */
  GRID_STRIDE(e, total) {
    int64_t i, r, o;
    split(e, d.ninner, nrows, i, r, o);
    r = r < n1 ? row0 + r : row2 + (r - n1);
    const int64_t j = !ghost ? d.off + r : r < d.hl ? d.off - d.hl + r : d.off + d.n + (r - d.hl);
    T *xp = out + (o * stride + r) * d.ninner + i;
    if (!ghost && j >= d.jlo && j < d.jhi) { /* host: flat gather from interior rows */
      T s = A::zero();
      bool first = true;
      for (int k = -2; k <= 2; ++k)
        if (d.cint[k + 2] != 0.0) {
          const T t = A::mulr((R)d.cint[k + 2], y[(o * d.n + (j - k - d.off)) * d.ninner + i]);
          s = first ? t : A::add(s, t);
          first = false;
        }
      *xp = d.accumulate ? A::add(*xp, s) : s;
      continue;
    }
    /* host: zeroed (or kept), then the edge rows' scatter, then the interior rows', each by ascending row */
    *xp = scatter_into(d, !ghost && d.accumulate ? *xp : A::zero(), y + o * d.n * d.ninner + i, j);
  }
}

/* The forward's puts: block row t copies transfer t (local rows of x into the peer's ghost rows of this exchange's
 * half) once the peer is done with that half, then the last block signals the neighbours. */
template <typename T> __global__ void k_kh_put_rows(rmaop__khalo *h, const T *x) {
  const uint64_t s = kx_seq(&h->x);
  const int t = blockIdx.y;
  if (kx_put_go(&h->x, t < h->nfwd, t < h->nfwd ? h->fwd[t].peer : 0, s)) {
    const rmaop__kh_xfer f = h->fwd[blockIdx.y];
    T *dst = (T *)kx_peer_half(&h->x, f.peer, s, 0) + f.dst * h->ninner;
    const T *src = x + f.src * h->ninner;
    GRID_STRIDE(e, f.rows * h->ninner) dst[e] = src[e];
  }
  kx_put_done(&h->x, s, gridDim.x * gridDim.y);
}

/* The adjoint's puts: block row t computes the ghost rows of transfer t (k_adjoint's rule) and stores them into the
 * owner's receive rows of this exchange's half. */
template <typename T> __global__ void k_kh_put_adjoint(rmaop__stencil_desc d, rmaop__khalo *h, const T *y) {
  const uint64_t s = kx_seq(&h->x);
  const int t = blockIdx.y;
  if (kx_put_go(&h->x, t < h->nadj, t < h->nadj ? h->adj[t].peer : 0, s)) {
    const rmaop__kh_xfer a = h->adj[blockIdx.y];
    const int64_t w = h->ninner;
    T *dst = (T *)kx_peer_half(&h->x, a.peer, s, h->recv_at) + a.dst * w;
    GRID_STRIDE(e, a.rows * w) {
      const int64_t r = a.src + (w == 1 ? e : e / w), i = w == 1 ? 0 : e % w;
      const int64_t j = r < d.hl ? d.off - d.hl + r : d.off + d.n + (r - d.hl);
      dst[e] = scatter_into(d, ar<T>::zero(), y + i, j);
    }
  }
  kx_put_done(&h->x, s, gridDim.x * gridDim.y);
}

/* The adjoint's end: local rows [0, add_head) and [add_tail, n) += the receive rows that land there, transfers in
 * order (the plan's unpack order, so the sums are the plan path's). */
template <typename T> __global__ void k_kh_add(rmaop__khalo *h, T *x) {
  const uint64_t s = kx_seq(&h->x);
  const T *area = (const T *)(kx_enter(&h->x, s, h->nrecv, [h](int k) { return h->recv[k].peer; }) + h->recv_at);
  const int64_t w = h->ninner, head = h->add_head, tail = h->add_tail;
  GRID_STRIDE(e, (head + h->n - tail) * w) {
    const int64_t q = w == 1 ? e : e / w, i = w == 1 ? 0 : e % w, row = q < head ? q : tail + (q - head);
    T v = x[row * w + i];
    for (int t = 0; t < h->nrecv; ++t) {
      const rmaop__kh_xfer &f = h->recv[t];
      if (row >= f.dst && row < f.dst + f.rows) v = ar<T>::add(v, area[(f.src + row - f.dst) * w + i]);
    }
    x[row * w + i] = v;
  }
  kx_end_done(&h->x, s);
}

/* A put kernel's grid: a block row per transfer (one, to signal, where there is none), blocks along x for the
 * largest. */
dim3 kh_put_grid(int nxfer, const rmaop__kh_xfer *xf, int64_t ninner) {
  int64_t most = 0;
  for (int t = 0; t < nxfer; ++t)
    if (xf[t].rows * ninner > most) most = xf[t].rows * ninner;
  const unsigned gx = grid_for(most, THREADS);
  return dim3(gx < 64 ? gx : 64, nxfer > 0 ? (unsigned)nxfer : 1u);
}

taps interior_taps(const rmaop__stencil_desc *d) {
  taps t = {};
  for (int k = -2; k <= 2; ++k)
    if (d->cint[k + 2] != 0.0) t.k[t.n] = k, t.c[t.n++] = d->cint[k + 2];
  return t;
}

/* Rows [lo, hi) of a 1-D stencil through k_flat, [lo, hi) clipped to the rows whose taps are all local;
 * returns the clipped range (empty: lo == hi) so the caller launches the general kernel around it. */
rmaop_status flat_rows(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, const void *src, void *dst,
                       int dir, int64_t &lo, int64_t &hi) {
  const taps t = interior_taps(d);
  if (lo < d->off + 2) lo = d->off + 2;
  if (hi > d->off + d->n - 2) hi = d->off + d->n - 2;
  if (d->ninner != 1 || d->nouter != 1 || t.n == 0 || hi <= lo) {
    hi = lo;
    return RMAOP_OK;
  }
  const int64_t at = lo - d->off;
  DISPATCH(dt, (k_flat<T><<<grid_for(hi - lo, THREADS), THREADS, 0, STREAM(ctx)>>>(t, (const T *)src + at,
                                                                                   (T *)dst + at, hi - lo, dir,
                                                                                   d->accumulate)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* h: ghost rows from its window (launched also with no rows: the launch ends the exchange). */
rmaop_status forward_general(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, const void *x,
                             const void *ghost, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2,
                             rmaop__khalo *h = NULL) {
  const int64_t n1 = b1 > a1 ? b1 - a1 : 0, nrows = n1 + (b2 > a2 ? b2 - a2 : 0);
  const int64_t total = nrows * d->nouter * d->ninner;
  if (total <= 0 && !h) return RMAOP_OK;
  const unsigned grid = grid_for(total, THREADS);
  if (h)
    DISPATCH(dt, (k_forward<T, true><<<grid, THREADS, 0, STREAM(ctx)>>>(*d, (const T *)x, NULL, (T *)y, a1, n1, a2,
                                                                        nrows, total, h)))
  else
    DISPATCH(dt, (k_forward<T, false><<<grid, THREADS, 0, STREAM(ctx)>>>(*d, (const T *)x, (const T *)ghost, (T *)y,
                                                                         a1, n1, a2, nrows, total, NULL)))
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* Local rows [r1, r1 + n1) and [r2, r2 + n2) in one launch. */
rmaop_status adjoint_general(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, const void *y, void *x,
                             int64_t r1, int64_t n1, int64_t r2, int64_t n2) {
  const int64_t nrows = n1 + n2, total = nrows * d->nouter * d->ninner;
  if (total <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_adjoint<T><<<grid_for(total, THREADS), THREADS, 0, STREAM(ctx)>>>(*d, (const T *)y, (T *)x, 0, r1,
                                                                                    n1, r2, nrows, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* ---- a Laplacian in one pass: every part of an output element in one thread (rmaop__lap_desc) ---- */

/* sum_t c_t v[k_t st] over the nonzero interior coefficients in ascending offset, the first term alone; added to
 * v0 when the part accumulates. */
template <typename T>
__device__ __forceinline__ T interior_sum(const rmaop__stencil_desc &d, T v0, const T *v, int64_t st) {
  typedef ar<T> A;
  typedef typename A::R R;
  T s = A::zero();
  bool first = true;
#pragma unroll
  for (int k = -2; k <= 2; ++k)
    if (d.cint[k + 2] != 0.0) {
      const T t = A::mulr((R)d.cint[k + 2], v[k * st]);
      s = first ? t : A::add(s, t);
      first = false;
    }
  return d.accumulate ? A::add(v0, s) : s;
}

/* k_forward's rule for rows outside [flo, fhi) at row g of the part's axis (element xe of x; i: the element's
 * index in its row of axis 0, for the ghost rows; only the axis-0 part reads them), v the output so far. A call,
 * so that the few edge rows do not take registers from the interior. */
template <typename T>
__device__ __noinline__ T edge_forward(const rmaop__stencil_desc &d, T v, const T *xe, const T *ghost, int64_t g,
                                       int64_t i) {
  typedef ar<T> A;
  typedef typename A::R R;
  const int64_t st = d.ninner;
  double c[RMAOP__NK];
  rmaop__stencil_coef(&d.cs, g, c);
  T s = d.accumulate ? v : A::zero();
  for (int k = -2; k <= 2; ++k)
    if (c[k + 2] != 0.0) {
      const int64_t h = g + k;
      const T xv = is_local(d, h) ? xe[k * st] : row_at(d, (const T *)NULL, ghost, 0, h)[i];
      s = A::add(s, A::mulr((R)c[k + 2], xv));
    }
  return s;
}

/* k_adjoint's rule for local rows outside [jlo, jhi) at row j of the part's axis (element ye of y). */
template <typename T>
__device__ __noinline__ T edge_adjoint(const rmaop__stencil_desc &d, T v, const T *ye, int64_t j) {
  return scatter_into(d, d.accumulate ? v : ar<T>::zero(), ye - (j - d.off) * d.ninner, j);
}

/* One part's value at row g of its axis (element e of the input), v the output so far: the forward or adjoint
 * stencil kernels' rules. */
template <typename T, bool ADJ>
__device__ __forceinline__ T part_value(const rmaop__stencil_desc &d, T v, const T *e, const T *ghost, int64_t g,
                                        int64_t i) {
  if (ADJ ? g >= d.jlo && g < d.jhi : g >= d.flo && g < d.fhi) return interior_sum(d, v, e, ADJ ? -d.ninner : d.ninner);
  return ADJ ? edge_adjoint(d, v, e, g) : edge_forward(d, v, e, ghost, g, i);
}

/* Row-of-axis index of element i of a row of axis 0 for a local part (i / ninner mod N; no division for the
 * last axis of a 2-D array). */
__device__ __forceinline__ int64_t axis_row(const rmaop__stencil_desc &d, int64_t inner, int64_t i) {
  if (d.ninner == 1) return d.n == inner ? i : i % d.n;
  return (i / d.ninner) % d.n;
}

/* A set of indices: [a1, a1 + n1) then [a2, a2 + (n - n1)). */
struct span2 {
  int64_t a1, n1, a2, n;
  __device__ int64_t at(int64_t q) const { return q < n1 ? a1 + q : a2 + (q - n1); }
};

/* Every part of the elements (row g of rows, element i of cols in its row), parts in order; the forward adds the
 * axis-0 part last on the rows outside its interior range (rmaop__dev_laplacian_forward). NL: the local parts
 * unrolled (constant indices keep L in parameter space). ADJ: the adjoint. */
template <typename T, int NL, bool ADJ, bool KH>
__global__ void k_laplacian(const __grid_constant__ rmaop__lap_desc L, const T *in, const T *ghost, T *out, span2 rows,
                            span2 cols, rmaop__khalo *h) {
  uint64_t s = 0;
  if (KH)
    s = kx_seq(&h->x), ghost = (const T *)kx_enter(&h->x, s, h->nfrom, [h](int k) { return h->from[k]; });
  for (int64_t q = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; q < rows.n; q += (int64_t)gridDim.y * blockDim.y) {
    const int64_t g = rows.at(q);
    const bool dist_in_order = L.dpos >= 0 && (ADJ || g >= L.dist.flo && g < L.dist.fhi);
    for (int64_t w = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; w < cols.n; w += (int64_t)gridDim.x * blockDim.x) {
      const int64_t i = cols.at(w), e = (g - L.off) * L.inner + i;
      const T *ie = in + e;
      T v = ar<T>::zero();
#pragma unroll
      for (int p = 0; p <= NL; ++p) {
        if (p == L.dpos && dist_in_order) v = part_value<T, ADJ>(L.dist, v, ie, ghost, g, i);
        if (p < NL && p < L.nloc) v = part_value<T, ADJ>(L.loc[p], v, ie, (const T *)NULL, axis_row(L.loc[p], L.inner, i), i);
      }
      if (L.dpos >= 0 && !dist_in_order) v = part_value<T, ADJ>(L.dist, v, ie, ghost, g, i);
      out[e] = v;
    }
  }
  if (KH)
    kx_end_done(&h->x, s);
}

/* A 2-D Laplacian's elements that are interior rows of both parts (local rows [r0, r0 + nrows), columns [c0, c0 +
 * ncols)): out = (sum over the row's 3 taps) + (sum over the column's 3 taps), each as k_flat sums it, the local
 * axis (overwriting) first: part_value's result there. The column's taps are 3 consecutive rows (every second
 * derivative's), so a thread walks down `strip` rows of its column with those rows in registers, loading one new
 * row per element; the row's taps are its neighbours' loads (L1). DIR -1: the adjoint's gather. */
template <typename T, int DIR>
__global__ void k_laplacian2d(taps tl, taps td, int64_t inner, const T *in, T *out, int64_t r0, int64_t nrows,
                              int64_t c0, int64_t ncols, int64_t strip) {
  typedef ar<T> A;
  typedef typename A::R R;
  const int64_t o0 = DIR * tl.k[0], o1 = DIR * tl.k[1], o2 = DIR * tl.k[2];
  const R a0 = (R)tl.c[0], a1 = (R)tl.c[1], a2 = (R)tl.c[2], b0 = (R)td.c[0], b1 = (R)td.c[1], b2 = (R)td.c[2];
  const int64_t top = DIR > 0 ? td.k[0] : -td.k[2]; /* the first of the column's 3 rows, relative to the element's */
  for (int64_t w = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; w < ncols; w += (int64_t)gridDim.x * blockDim.x)
    for (int64_t qs = ((int64_t)blockIdx.y * blockDim.y + threadIdx.y) * strip; qs < nrows;
         qs += (int64_t)gridDim.y * blockDim.y * strip) {
      const int64_t qe = qs + strip < nrows ? qs + strip : nrows;
      const T *col = in + (r0 + qs) * inner + c0 + w;
      T *dst = out + (r0 + qs) * inner + c0 + w;
      T w0 = col[top * inner], w1 = col[(top + 1) * inner];
#pragma unroll 4
      for (int64_t q = qs; q < qe; ++q, col += inner, dst += inner) {
        const T w2 = col[(top + 2) * inner];
        const T a = A::add(A::add(A::mulr(a0, col[o0]), A::mulr(a1, col[o1])), A::mulr(a2, col[o2]));
        const T b = DIR > 0 ? A::add(A::add(A::mulr(b0, w0), A::mulr(b1, w1)), A::mulr(b2, w2))
                            : A::add(A::add(A::mulr(b0, w2), A::mulr(b1, w1)), A::mulr(b2, w0));
        *dst = A::add(a, b);
        w0 = w1, w1 = w2;
      }
    }
}

/* Blocks of 256 threads: up to 256 along a row (at least a warp), the rest across rows. */
dim3 lap_block(int64_t ncols) {
  unsigned bx = 32;
  while (bx < THREADS && (int64_t)bx < ncols) bx *= 2;
  return dim3(bx, THREADS / bx);
}
dim3 lap_grid(dim3 block, int64_t nrows, int64_t ncols) {
  const int64_t gx = (ncols + block.x - 1) / block.x, gy = (nrows + block.y - 1) / block.y;
  return dim3((unsigned)(gx < 65535 ? gx : 65535), (unsigned)(gy < 65535 ? gy : 65535));
}

/* h: ghost rows from its window (launched also with no rows: the launch ends the exchange). */
template <typename T, bool ADJ>
rmaop_status launch_laplacian(rmaop_ctx ctx, const rmaop__lap_desc *l, const T *in, const T *ghost, T *out, span2 rows,
                              span2 cols, rmaop__khalo *h = NULL) {
  if ((rows.n <= 0 || cols.n <= 0) && !h) return RMAOP_OK;
  const dim3 block = lap_block(cols.n), grid = lap_grid(block, rows.n > 0 ? rows.n : 1, cols.n > 0 ? cols.n : 1);
  if constexpr (!ADJ) /* only the forward reads ghost rows */
    if (h) {
      if (l->nloc == 1)
        k_laplacian<T, 1, false, true><<<grid, block, 0, STREAM(ctx)>>>(*l, in, NULL, out, rows, cols, h);
      else
        k_laplacian<T, RMAOP__LAP_MAX_LOCAL, false, true><<<grid, block, 0, STREAM(ctx)>>>(*l, in, NULL, out, rows,
                                                                                           cols, h);
      RMAOP_CHECK_LAUNCH(ctx);
      return RMAOP_OK;
    }
  if (l->nloc == 1)
    k_laplacian<T, 1, ADJ, false><<<grid, block, 0, STREAM(ctx)>>>(*l, in, ghost, out, rows, cols, NULL);
  else
    k_laplacian<T, RMAOP__LAP_MAX_LOCAL, ADJ, false><<<grid, block, 0, STREAM(ctx)>>>(*l, in, ghost, out, rows, cols,
                                                                                      NULL);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

/* The rows `rows` of a Laplacian (ghost reads only forward): on a 2-D Laplacian (one local part, along the last
 * axis, overwriting; the axis-0 part after it, adding; every second derivative has 3 interior taps) whose rows
 * are one range of interior rows of the axis-0 part, the interior columns through k_laplacian2d and the edge
 * columns through k_laplacian; otherwise every element through k_laplacian. */
template <typename T, bool ADJ>
rmaop_status laplacian_rows(rmaop_ctx ctx, const rmaop__lap_desc *l, const T *in, const T *ghost, T *out,
                            span2 rows, bool interior_rows, rmaop__khalo *h = NULL) {
  const rmaop__stencil_desc &lo = l->loc[0], &di = l->dist;
  const taps tl = interior_taps(&lo), td = interior_taps(&di);
  int64_t c1 = ADJ ? lo.jlo : lo.flo, c2 = ADJ ? lo.jhi : lo.fhi;
  const bool two_d = interior_rows && rows.n == rows.n1 && l->nloc == 1 && l->dpos == 1 && lo.ninner == 1 &&
                     lo.n == l->inner && !lo.accumulate && di.accumulate && tl.n == 3 && td.n == 3 &&
                     td.k[1] == td.k[0] + 1 && td.k[2] == td.k[0] + 2 && c1 < c2;
  if (!two_d || h) return launch_laplacian<T, ADJ>(ctx, l, in, ghost, out, rows, span2{0, l->inner, 0, l->inner}, h);
  if (rows.n <= 0) return RMAOP_OK;
  /* strips of 32 rows: the column's rows stay in registers along a strip, and 2-D grids of ~8k blocks of a
   * 8192^2 array still fill the GPU */
  const int64_t strip = 32;
  const dim3 block = lap_block(c2 - c1), grid = lap_grid(block, (rows.n + strip - 1) / strip, c2 - c1);
  if (ADJ)
    k_laplacian2d<T, -1><<<grid, block, 0, STREAM(ctx)>>>(tl, td, l->inner, in, out, rows.a1 - l->off, rows.n, c1,
                                                         c2 - c1, strip);
  else
    k_laplacian2d<T, 1><<<grid, block, 0, STREAM(ctx)>>>(tl, td, l->inner, in, out, rows.a1 - l->off, rows.n, c1,
                                                        c2 - c1, strip);
  RMAOP_CHECK_LAUNCH(ctx);
  return launch_laplacian<T, ADJ>(ctx, l, in, ghost, out, rows, span2{0, c1, c2, c1 + (l->inner - c2)});
}

} // namespace

extern "C" rmaop_status rmaop__dev_stencil_forward(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                   const void *x, const void *ghost, void *y, int64_t a1, int64_t b1,
                                                   int64_t a2, int64_t b2) {
  if (b2 > a2) return forward_general(ctx, dt, d, x, ghost, y, a1, b1, a2, b2);
  /* One range: its rows in the fast range with local taps go flat, the rest (edge rows) around them. */
  int64_t lo = a1 > d->flo ? a1 : d->flo, hi = b1 < d->fhi ? b1 : d->fhi;
  RMAOP_CHECK(flat_rows(ctx, dt, d, x, y, 1, lo, hi));
  if (hi <= lo) return forward_general(ctx, dt, d, x, ghost, y, a1, b1, 0, 0);
  return forward_general(ctx, dt, d, x, ghost, y, a1, lo, hi, b1);
}

extern "C" rmaop_status rmaop__dev_stencil_forward_interior(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                            const void *x, void *y, int64_t *lo, int64_t *hi) {
  const int64_t a = *lo, b = *hi;
  int64_t l = a, h = b;
  RMAOP_CHECK(flat_rows(ctx, dt, d, x, y, 1, l, h));
  if (h <= l) return forward_general(ctx, dt, d, x, NULL, y, a, b, 0, 0); /* [lo, hi) stays [a, b) */
  *lo = l, *hi = h;
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_stencil_adjoint_local(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                         const void *y, void *x) {
  int64_t lo = d->jlo, hi = d->jhi;
  RMAOP_CHECK(flat_rows(ctx, dt, d, y, x, -1, lo, hi));
  if (hi <= lo) return adjoint_general(ctx, dt, d, y, x, 0, d->n, 0, 0);
  return adjoint_general(ctx, dt, d, y, x, 0, lo - d->off, hi - d->off, d->off + d->n - hi);
}

extern "C" rmaop_status rmaop__dev_stencil_adjoint_ghost(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                         const void *y, void *ghost) {
  RMAOP_REQUIRE(ctx, d->nouter == 1, RMAOP_ERR_INTERNAL, "rmaop__dev_stencil_adjoint_ghost: %lld outer blocks (1)",
                (long long)d->nouter);
  const int64_t nrows = (int64_t)d->hl + d->hr, total = nrows * d->ninner;
  if (total <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_adjoint<T><<<grid_for(total, THREADS), THREADS, 0, STREAM(ctx)>>>(*d, (const T *)y, (T *)ghost, 1, 0,
                                                                                    nrows, 0, nrows, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_laplacian_forward(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l,
                                                     const void *x, const void *ghost, void *y, int64_t a1,
                                                     int64_t b1, int64_t a2, int64_t b2) {
  const int64_t n1 = b1 > a1 ? b1 - a1 : 0, nrows = n1 + (b2 > a2 ? b2 - a2 : 0);
  /* one range inside the axis-0 part's interior rows: the 2-D fast path applies */
  const bool interior = l->dpos >= 0 && nrows == n1 && a1 >= l->dist.flo && b1 <= l->dist.fhi;
  rmaop_status st = RMAOP_OK;
  DISPATCH(dt, st = (laplacian_rows<T, false>(ctx, l, (const T *)x, (const T *)ghost, (T *)y,
                                              span2{a1, n1, a2, nrows}, interior)));
  return st;
}

extern "C" rmaop_status rmaop__dev_laplacian_adjoint_local(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l,
                                                           const void *y, void *x) {
  rmaop_status st = RMAOP_OK;
  const rmaop__stencil_desc &d = l->dist;
  const int64_t end = l->off + l->rows;
  if (l->dpos < 0 || d.jlo >= d.jhi) {
    DISPATCH(dt, st = (laplacian_rows<T, true>(ctx, l, (const T *)y, NULL, (T *)x, span2{l->off, l->rows, end, l->rows},
                                               false)));
    return st;
  }
  /* the axis-0 part's gather rows (the 2-D fast path), then the others */
  DISPATCH(dt, st = (laplacian_rows<T, true>(ctx, l, (const T *)y, NULL, (T *)x, span2{d.jlo, d.jhi - d.jlo, d.jhi,
                                             d.jhi - d.jlo}, true)));
  if (st != RMAOP_OK) return st;
  const span2 rest = {l->off, d.jlo - l->off, d.jhi, (d.jlo - l->off) + (end - d.jhi)};
  DISPATCH(dt, st = (laplacian_rows<T, true>(ctx, l, (const T *)y, NULL, (T *)x, rest, false)));
  return st;
}

extern "C" rmaop_status rmaop__dev_kh_put_rows(rmaop_ctx ctx, rmaop_dtype dt, rmaop__khalo *dev,
                                               const rmaop__khalo *host, const void *x) {
  if (host->x.nnb == 0)
    return RMAOP_OK;
  const dim3 grid = kh_put_grid(host->nfwd, host->fwd, host->ninner);
  DISPATCH(dt, (k_kh_put_rows<T><<<grid, THREADS, 0, STREAM(ctx)>>>(dev, (const T *)x)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_kh_put_adjoint(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                  rmaop__khalo *dev, const rmaop__khalo *host, const void *y) {
  if (host->x.nnb == 0)
    return RMAOP_OK;
  const dim3 grid = kh_put_grid(host->nadj, host->adj, host->ninner);
  DISPATCH(dt, (k_kh_put_adjoint<T><<<grid, THREADS, 0, STREAM(ctx)>>>(*d, dev, (const T *)y)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_kh_add(rmaop_ctx ctx, rmaop_dtype dt, rmaop__khalo *dev, const rmaop__khalo *host,
                                          void *x) {
  const int64_t total = (host->add_head + host->n - host->add_tail) * host->ninner;
  DISPATCH(dt, (k_kh_add<T><<<grid_for(total, THREADS), THREADS, 0, STREAM(ctx)>>>(dev, (T *)x)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_stencil_forward_kh(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                      rmaop__khalo *dev, const void *x, void *y, int64_t a1,
                                                      int64_t b1, int64_t a2, int64_t b2) {
  return forward_general(ctx, dt, d, x, NULL, y, a1, b1, a2, b2, dev);
}

extern "C" rmaop_status rmaop__dev_laplacian_forward_kh(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__lap_desc *l,
                                                        rmaop__khalo *dev, const void *x, void *y, int64_t a1,
                                                        int64_t b1, int64_t a2, int64_t b2) {
  const int64_t n1 = b1 > a1 ? b1 - a1 : 0, nrows = n1 + (b2 > a2 ? b2 - a2 : 0);
  rmaop_status st = RMAOP_OK;
  DISPATCH(dt, st = (laplacian_rows<T, false>(ctx, l, (const T *)x, NULL, (T *)y, span2{a1, n1, a2, nrows}, false,
                                              dev)));
  return st;
}

/* ---- dense blocks: cuBLAS ---- */

extern "C" rmaop_status rmaop__dev_blas_create(rmaop_ctx ctx, void **handle) {
  cublasHandle_t h = NULL;
  BLAS_CHECK(ctx, cublasCreate(&h));
  cublasStatus_t s = cublasSetStream(h, STREAM(ctx));
  if (s != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(h);
    return RMAOP_ERROR(ctx, RMAOP_ERR_CUDA, "cublasSetStream failed: %s", cublasGetStatusString(s));
  }
  *handle = h;
  return RMAOP_OK;
}

extern "C" void rmaop__dev_blas_destroy(void *handle) {
  if (handle) cublasDestroy((cublasHandle_t)handle);
}

namespace {

/* y = op(A) x with A column-major m x n (lda), alpha = 1, beta = 0 (y need not hold valid values). */
template <typename T>
rmaop_status gemv(rmaop_ctx ctx, cublasHandle_t h, cublasOperation_t op, int m, int n, const T *A, int lda, const T *x,
                  T *y) {
  const T one = blas<T>::scalar(1.0), zero = blas<T>::scalar(0.0);
  BLAS_CHECK(ctx, blas<T>::gemv(h, op, m, n, &one, A, lda, x, 1, &zero, y, 1));
  return RMAOP_OK;
}

} // namespace

extern "C" rmaop_status rmaop__dev_gemv(rmaop_ctx ctx, void *handle, rmaop_dtype dt, int adjoint, const void *Bt,
                                        int64_t nr, int64_t nc, const void *in, void *out) {
  RMAOP_REQUIRE(ctx, nr >= 0 && nc >= 0 && nr <= INT_MAX && nc <= INT_MAX, RMAOP_ERR_ARG,
                "dense block %lld x %lld: cuBLAS needs both sizes to fit an int", (long long)nr, (long long)nc);
  const int64_t nin = adjoint ? nr : nc, nout = adjoint ? nc : nr;
  if (nout == 0) return RMAOP_OK;
  if (nin == 0) return rmaop__dev_set(ctx, dt, out, nout, 0.0, 0.0); /* the empty sum, as on the host */
  /* Bt row-major (nc x nr) is B column-major (nr x nc, lda = nr): B x is op N, B^H y is op C. */
  const cublasOperation_t op = adjoint ? CUBLAS_OP_C : CUBLAS_OP_N;
  cublasHandle_t h = (cublasHandle_t)handle;
  rmaop_status st = RMAOP_OK;
  DISPATCH(dt, st = gemv(ctx, h, op, (int)nr, (int)nc, (const T *)Bt, (int)nr, (const T *)in, (T *)out));
  return st;
}
