/* The non-stationary convolution on the device (src/device/nsconv_dev.h): one grid-stride kernel over the output
 * entries asked for, a thread per element, each summing its nh (or fewer, at the array's ends) terms in
 * ascending entry order with the filters interpolated on the fly, as the host loop does. The forward steps the
 * filter index along the entries without dividing (one division per output); the adjoint needs one filter per
 * output. */
#include "cuda_impl.h"
#include "nsconv_dev.h"

namespace {

const int NSCONV_THREADS = 256;

/* Arithmetic of the four element types: a + b c, the interpolated filter tap, the conjugate. */
template <typename T> struct num;
template <> struct num<float> {
  typedef float R;
  static __device__ float zero() { return 0.0f; }
  static __device__ float mad(float a, float b, float c) { return a + b * c; }
  static __device__ float lerp(float h0, float h1, R a, R b) { return a * h0 + b * h1; }
  static __device__ float conj(float a) { return a; }
};
template <> struct num<double> {
  typedef double R;
  static __device__ double zero() { return 0.0; }
  static __device__ double mad(double a, double b, double c) { return a + b * c; }
  static __device__ double lerp(double h0, double h1, R a, R b) { return a * h0 + b * h1; }
  static __device__ double conj(double a) { return a; }
};
template <> struct num<cuFloatComplex> {
  typedef float R;
  static __device__ cuFloatComplex zero() { return make_cuFloatComplex(0.0f, 0.0f); }
  static __device__ cuFloatComplex mad(cuFloatComplex a, cuFloatComplex b, cuFloatComplex c) {
    return cuCaddf(a, cuCmulf(b, c));
  }
  static __device__ cuFloatComplex lerp(cuFloatComplex h0, cuFloatComplex h1, R a, R b) {
    return make_cuFloatComplex(a * h0.x + b * h1.x, a * h0.y + b * h1.y);
  }
  static __device__ cuFloatComplex conj(cuFloatComplex a) { return cuConjf(a); }
};
template <> struct num<cuDoubleComplex> {
  typedef double R;
  static __device__ cuDoubleComplex zero() { return make_cuDoubleComplex(0.0, 0.0); }
  static __device__ cuDoubleComplex mad(cuDoubleComplex a, cuDoubleComplex b, cuDoubleComplex c) {
    return cuCadd(a, cuCmul(b, c));
  }
  static __device__ cuDoubleComplex lerp(cuDoubleComplex h0, cuDoubleComplex h1, R a, R b) {
    return make_cuDoubleComplex(a * h0.x + b * h1.x, a * h0.y + b * h1.y);
  }
  static __device__ cuDoubleComplex conj(cuDoubleComplex a) { return cuConj(a); }
};

/* Tap j of the filter at entry e, from its interpolation weights. */
template <typename T>
__device__ T tap(const rmaop__nsconv_geom &g, const T *hs, int64_t f0, int64_t f1, double w, int64_t j) {
  typedef typename num<T>::R R;
  return num<T>::lerp(hs[f0 * g.nh + j], hs[f1 * g.nh + j], (R)(1.0 - w), (R)w);
}

template <typename T> __device__ T entry(const rmaop__nsconv_geom &g, const T *in, const T *ghost, int64_t o, int64_t e,
                                         int64_t i) {
  int64_t off;
  return rmaop__nsconv_row(&g, o, e, &off) ? ghost[off + i] : in[off + i];
}

template <typename T>
__global__ void k_nsconv(rmaop__nsconv_geom g, const T *hs, int adjoint, int64_t k0, int64_t nk, const T *in,
                         const T *ghost, T *out, int64_t total) {
  GRID_STRIDE(idx, total) {
    const int64_t i = idx % g.inner, t = idx / g.inner;
    const int64_t k = k0 + t % nk, o = t / nk;
    const int64_t e0 = k - g.half > 0 ? k - g.half : 0, e1 = k + g.half < g.n - 1 ? k + g.half : g.n - 1;
    T acc = num<T>::zero();
    int64_t f0, f1;
    double w;
    if (adjoint) {
      rmaop__nsconv_weights(&g, k, &f0, &f1, &w);
      for (int64_t e = e0; e <= e1; ++e)
        acc = num<T>::mad(acc, num<T>::conj(tap(g, hs, f0, f1, w, e - k + g.half)), entry(g, in, ghost, o, e, i));
    } else {
      int64_t q = e0 - g.oh, f = rmaop__nsconv_floor(&g, q), r = q - f * g.dh;
      for (int64_t e = e0; e <= e1; ++e) {
        rmaop__nsconv_lerp(&g, q, f, &f0, &f1, &w);
        acc = num<T>::mad(acc, entry(g, in, ghost, o, e, i), tap(g, hs, f0, f1, w, k - e + g.half));
        ++q;
        if (++r == g.dh) r = 0, ++f;
      }
    }
    out[(o * g.len + k - g.start) * g.inner + i] = acc;
  }
}

} // namespace

extern "C" rmaop_status rmaop__dev_nsconv(rmaop_ctx ctx, rmaop_dtype dt, const rmaop__nsconv_geom *g, const void *hs,
                                          int adjoint, int64_t k0, int64_t k1, const void *in, const void *ghost,
                                          void *out) {
  const int64_t nk = k1 - k0, total = g->outer * nk * g->inner;
  if (total <= 0)
    return RMAOP_OK;
  DISPATCH(dt, (k_nsconv<T><<<grid_for(total, NSCONV_THREADS), NSCONV_THREADS, 0, STREAM(ctx)>>>(
                   *g, (const T *)hs, adjoint, k0, nk, (const T *)in, (const T *)ghost, (T *)out, total)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}
