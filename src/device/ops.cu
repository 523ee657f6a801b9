/* Operators on device memory (src/device/dev_ops.h): the derivative stencils as kernels (one thread per output
 * element, the four dtypes from one template), and the dense block products through cuBLAS.
 *
 * The stencil kernels add the same terms in the same order as the host path (src/ops/op_stencil.c) with
 * explicitly rounded operations (no fused multiply-add), so device and host results agree bit for bit. */
#include <cuComplex.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda_impl.h"
#include "dev_ops.h"
#include "device.h"

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
template <typename T>
__global__ void k_forward(rmaop__stencil_desc d, const T *x, const T *ghost, T *y, int64_t a1, int64_t n1, int64_t a2,
                          int64_t nrows, int64_t total) {
  typedef ar<T> A;
  typedef typename A::R R;
  GRID_STRIDE(e, total) {
    int64_t i, r, o;
    split(e, d.ninner, nrows, i, r, o);
    const int64_t g = r < n1 ? a1 + r : a2 + (r - n1);
    T *yp = y + (o * d.n + (g - d.off)) * d.ninner + i;
    if (g >= d.flo && g < d.fhi) { /* host: flat loop, y (=|+=) c0 x0 + c1 x1 + ... */
      T s = A::zero();
      bool first = true;
      for (int k = -2; k <= 2; ++k)
        if (d.cint[k + 2] != 0.0) {
          const T t = A::mulr((R)d.cint[k + 2], row_at(d, x, ghost, o, g + k)[i]);
          s = first ? t : A::add(s, t);
          first = false;
        }
      *yp = d.accumulate ? A::add(*yp, s) : s;
    } else { /* host: per-row loop, y = 0 (overwrite) then y += c_k x_k */
      double c[RMAOP__NK];
      rmaop__stencil_coef(&d.cs, g, c);
      T s = d.accumulate ? *yp : A::zero();
      for (int k = -2; k <= 2; ++k)
        if (c[k + 2] != 0.0) s = A::add(s, A::mulr((R)c[k + 2], row_at(d, x, ghost, o, g + k)[i]));
      *yp = s;
    }
  }
}

/* Adjoint in gather form: one thread per element of x's local rows (ghost = 0) or of the ghost rows
 * (ghost = 1, written to out, nouter = 1). */
template <typename T>
__global__ void k_adjoint(rmaop__stencil_desc d, const T *y, T *out, int ghost, int64_t row0, int64_t nrows,
                          int64_t total) {
  typedef ar<T> A;
  typedef typename A::R R;
  const int64_t stride = ghost ? nrows : d.n; /* rows per outer block of out */
  GRID_STRIDE(e, total) {
    int64_t i, r, o;
    split(e, d.ninner, nrows, i, r, o);
    r += row0;
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
    T s = !ghost && d.accumulate ? *xp : A::zero();
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t g = j - 2; g <= j + 2; ++g) {
        if (!is_local(d, g) || (g >= d.flo && g < d.fhi) != (pass == 1)) continue;
        double c[RMAOP__NK];
        rmaop__stencil_coef(&d.cs, g, c);
        const double ck = c[j - g + 2];
        if (ck != 0.0) s = A::add(s, A::mulr((R)ck, y[(o * d.n + (g - d.off)) * d.ninner + i]));
      }
    *xp = s;
  }
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

rmaop_status forward_general(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, const void *x,
                             const void *ghost, void *y, int64_t a1, int64_t b1, int64_t a2, int64_t b2) {
  const int64_t n1 = b1 > a1 ? b1 - a1 : 0, nrows = n1 + (b2 > a2 ? b2 - a2 : 0);
  const int64_t total = nrows * d->nouter * d->ninner;
  if (total <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_forward<T><<<grid_for(total, THREADS), THREADS, 0, STREAM(ctx)>>>(*d, (const T *)x, (const T *)ghost,
                                                                                    (T *)y, a1, n1, a2, nrows, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

rmaop_status adjoint_general(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d, const void *y, void *x,
                             int64_t row0, int64_t nrows) {
  const int64_t total = nrows * d->nouter * d->ninner;
  if (total <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_adjoint<T><<<grid_for(total, THREADS), THREADS, 0, STREAM(ctx)>>>(*d, (const T *)y, (T *)x, 0, row0,
                                                                                    nrows, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
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

extern "C" rmaop_status rmaop__dev_stencil_adjoint_local(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                         const void *y, void *x) {
  int64_t lo = d->jlo, hi = d->jhi;
  RMAOP_CHECK(flat_rows(ctx, dt, d, y, x, -1, lo, hi));
  if (hi <= lo) return adjoint_general(ctx, dt, d, y, x, 0, d->n);
  RMAOP_CHECK(adjoint_general(ctx, dt, d, y, x, 0, lo - d->off));
  return adjoint_general(ctx, dt, d, y, x, hi - d->off, d->off + d->n - hi);
}

extern "C" rmaop_status rmaop__dev_stencil_adjoint_ghost(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__stencil_desc *d,
                                                         const void *y, void *ghost) {
  RMAOP_REQUIRE(ctx, d->nouter == 1, RMAOP_ERR_INTERNAL, "rmaop__dev_stencil_adjoint_ghost: %lld outer blocks (1)",
                (long long)d->nouter);
  const int64_t nrows = (int64_t)d->hl + d->hr, total = nrows * d->ninner;
  if (total <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_adjoint<T><<<grid_for(total, THREADS), THREADS, 0, STREAM(ctx)>>>(*d, (const T *)y, (T *)ghost, 1, 0,
                                                                                    nrows, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
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
