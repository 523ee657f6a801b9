/* The sparsity and proximal solvers' element work on device memory (src/device/sparse_dev.h): thresholding and
 * group shrinkage (one thread per element, the formulas of sparse_dev.h in double), deterministic local sums
 * (a grid that depends on n alone, block trees in shared memory, the block partials added in block order by a
 * second one-block kernel), and the percentile's radix histograms (exact integer counts). One template per
 * operation serves the four dtypes (DISPATCH). */
#include "cuda_impl.h"
#include "device.h"
#include "sparse_dev.h"

namespace {

enum { THREADS = 256, SUM_BLOCKS = 256 };

/* Element i of an array of T as (re, im) doubles, and back. */
template <typename T> struct elem;
template <> struct elem<float> {
  static __device__ void load(const float *p, int64_t i, double &re, double &im) { re = p[i], im = 0.0; }
  static __device__ void store(float *p, int64_t i, double re, double im) { p[i] = (float)re; }
  static __device__ double mag(const float *p, int64_t i) { return (double)fabsf(p[i]); }
  static __device__ void diff(const float *a, const float *b, int64_t i, double &re, double &im) {
    re = (double)(a[i] - b[i]), im = 0.0;
  }
  static const int cplx = 0, single = 1;
};
template <> struct elem<double> {
  static __device__ void load(const double *p, int64_t i, double &re, double &im) { re = p[i], im = 0.0; }
  static __device__ void store(double *p, int64_t i, double re, double im) { p[i] = re; }
  static __device__ double mag(const double *p, int64_t i) { return fabs(p[i]); }
  static __device__ void diff(const double *a, const double *b, int64_t i, double &re, double &im) {
    re = a[i] - b[i], im = 0.0;
  }
  static const int cplx = 0, single = 0;
};
template <> struct elem<cuFloatComplex> {
  static __device__ void load(const cuFloatComplex *p, int64_t i, double &re, double &im) {
    re = cuCrealf(p[i]), im = cuCimagf(p[i]);
  }
  static __device__ void store(cuFloatComplex *p, int64_t i, double re, double im) {
    p[i] = make_cuFloatComplex((float)re, (float)im);
  }
  static __device__ double mag(const cuFloatComplex *p, int64_t i) {
    return (double)hypotf(cuCrealf(p[i]), cuCimagf(p[i]));
  }
  static __device__ void diff(const cuFloatComplex *a, const cuFloatComplex *b, int64_t i, double &re, double &im) {
    const cuFloatComplex d = cuCsubf(a[i], b[i]);
    re = cuCrealf(d), im = cuCimagf(d);
  }
  static const int cplx = 1, single = 1;
};
template <> struct elem<cuDoubleComplex> {
  static __device__ void load(const cuDoubleComplex *p, int64_t i, double &re, double &im) {
    re = cuCreal(p[i]), im = cuCimag(p[i]);
  }
  static __device__ void store(cuDoubleComplex *p, int64_t i, double re, double im) {
    p[i] = make_cuDoubleComplex(re, im);
  }
  static __device__ double mag(const cuDoubleComplex *p, int64_t i) { return hypot(cuCreal(p[i]), cuCimag(p[i])); }
  static __device__ void diff(const cuDoubleComplex *a, const cuDoubleComplex *b, int64_t i, double &re, double &im) {
    const cuDoubleComplex d = cuCsub(a[i], b[i]);
    re = cuCreal(d), im = cuCimag(d);
  }
  static const int cplx = 1, single = 0;
};

template <typename T> __global__ void k_thresh(const T *in, T *out, int64_t n, rmaop__thr kind, double t) {
  GRID_STRIDE(i, n) {
    double re, im;
    elem<T>::load(in, i, re, im);
    rmaop__thr_elem(kind, elem<T>::single, elem<T>::cplx, t, &re, &im);
    elem<T>::store(out, i, re, im);
  }
}

template <typename T> __global__ void k_conj(T *x, int64_t n) {
  GRID_STRIDE(i, n) {
    double re, im;
    elem<T>::load(x, i, re, im);
    elem<T>::store(x, i, re, -im);
  }
}

struct group_args {
  const void *in[RMAOP__GROUP_MAX];
  void *out[RMAOP__GROUP_MAX];
  int nparts;
};

/* s_i = sqrt(sum_p |in[p][i]|^2) (PyLops-MPI MPIL21.sum_squared). */
template <typename T> __device__ double group_norm(const group_args &g, int64_t i) {
  double s2 = 0.0;
  for (int p = 0; p < g.nparts; ++p) {
    const double m = elem<T>::mag((const T *)g.in[p], i);
    s2 += m * m;
  }
  return sqrt(s2);
}

template <typename T> __global__ void k_group_scale(group_args g, int64_t n, rmaop__group mode, double c, double sigma) {
  GRID_STRIDE(i, n) {
    const double s = group_norm<T>(g, i);
    for (int p = 0; p < g.nparts; ++p) {
      double re, im;
      elem<T>::load((const T *)g.in[p], i, re, im);
      rmaop__group_elem(mode, s, c, sigma, &re, &im);
      elem<T>::store((T *)g.out[p], i, re, im);
    }
  }
}

/* The term of element i of a local sum; DIFF2's difference is taken in the dtype's arithmetic (NumPy's
 * x - xold), then squared in double. */
template <typename T> struct term {
  rmaop__sum kind;
  const T *a, *b;
  __device__ double operator()(int64_t i) const {
    if (kind == RMAOP__SUM_ABS1) return elem<T>::mag(a, i);
    double re, im;
    if (kind == RMAOP__SUM_DIFF2) elem<T>::diff(a, b, i, re, im);
    else elem<T>::load(a, i, re, im);
    return re * re + im * im;
  }
};

template <typename T> struct group_term {
  group_args g;
  __device__ double operator()(int64_t i) const { return group_norm<T>(g, i); }
};

/* Block b's partial of sum_i f(i) into part[b]: each thread adds its grid-stride elements in order, then a
 * shared-memory tree (fixed pairing) adds the threads. */
template <typename F> __global__ void k_sum_partials(F f, int64_t n, double *part) {
  __shared__ double sh[THREADS];
  double acc = 0.0;
  GRID_STRIDE(i, n) acc += f(i);
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

/* out = part[0] + part[1] + ... in block order (one thread: the partials are few). */
__global__ void k_sum_final(const double *part, int nb, double *out) {
  double s = 0.0;
  for (int b = 0; b < nb; ++b) s += part[b];
  *out = s;
}

/* The local sum of f over n elements into *host_out (synchronizes). */
template <typename F> rmaop_status sum_of(rmaop_ctx ctx, F f, int64_t n, double *scratch, double *host_out) {
  int64_t nb = (n + THREADS - 1) / THREADS;
  nb = nb < 1 ? 1 : nb > SUM_BLOCKS ? SUM_BLOCKS : nb;
  k_sum_partials<<<(unsigned)nb, THREADS, 0, STREAM(ctx)>>>(f, n, scratch);
  RMAOP_CHECK_LAUNCH(ctx);
  k_sum_final<<<1, 1, 0, STREAM(ctx)>>>(scratch, (int)nb, scratch + SUM_BLOCKS);
  RMAOP_CHECK_LAUNCH(ctx);
  RMAOP_CHECK(rmaop__dev_copy(ctx, host_out, scratch + SUM_BLOCKS, sizeof(double)));
  return rmaop__dev_sync(ctx);
}

__device__ uint64_t key_of(double m) { return (uint64_t)__double_as_longlong(m); }

/* counts[256 t + bin] += 1 for every element whose key matches prefix[t] above byte `byte`. */
template <typename T>
__global__ void k_radix_hist(const T *x, int64_t n, int byte, uint64_t p0, uint64_t p1, unsigned long long *counts) {
  __shared__ unsigned long long sh[2 * RMAOP__RADIX_BINS];
  for (int j = threadIdx.x; j < 2 * RMAOP__RADIX_BINS; j += blockDim.x) sh[j] = 0;
  __syncthreads();
  const int shift = 8 * byte;
  const uint64_t high = byte == 7 ? 0 : ~0ull << (shift + 8);
  GRID_STRIDE(i, n) {
    const uint64_t k = key_of(elem<T>::mag(x, i));
    const unsigned bin = (unsigned)(k >> shift) & 0xffu;
    if ((k & high) == (p0 & high)) atomicAdd(&sh[bin], 1ull);
    if ((k & high) == (p1 & high)) atomicAdd(&sh[RMAOP__RADIX_BINS + bin], 1ull);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < 2 * RMAOP__RADIX_BINS; j += blockDim.x)
    if (sh[j]) atomicAdd(&counts[j], sh[j]);
}

/* best[t] = max key among the elements whose key matches prefix[t] from byte `byte` up. */
template <typename T>
__global__ void k_radix_max(const T *x, int64_t n, int byte, uint64_t p0, uint64_t p1, unsigned long long *best) {
  const uint64_t high = ~0ull << (8 * byte);
  GRID_STRIDE(i, n) {
    const uint64_t k = key_of(elem<T>::mag(x, i));
    if ((k & high) == (p0 & high)) atomicMax(&best[0], (unsigned long long)k);
    if ((k & high) == (p1 & high)) atomicMax(&best[1], (unsigned long long)k);
  }
}

group_args make_group(int nparts, const void *const in[], void *const out[]) {
  group_args g = {};
  g.nparts = nparts;
  for (int p = 0; p < nparts; ++p) g.in[p] = in[p], g.out[p] = out ? out[p] : NULL;
  return g;
}

} // namespace

extern "C" rmaop_status rmaop__dev_thresh(rmaop_ctx ctx, rmaop_dtype dt, rmaop__thr kind, double t, const void *in,
                                          void *out, int64_t n) {
  if (n <= 0) return RMAOP_OK;
  DISPATCH(dt, (k_thresh<T><<<grid_for(n, THREADS), THREADS, 0, STREAM(ctx)>>>((const T *)in, (T *)out, n, kind, t)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_sum(rmaop_ctx ctx, rmaop_dtype dt, rmaop__sum kind, const void *a, const void *b,
                                       int64_t n, double *scratch, double *host_out) {
  rmaop_status st = RMAOP_OK;
  DISPATCH(dt, (st = sum_of(ctx, term<T>{kind, (const T *)a, (const T *)b}, n, scratch, host_out)));
  return st;
}

extern "C" rmaop_status rmaop__dev_group_scale(rmaop_ctx ctx, rmaop_dtype dt, rmaop__group mode, int nparts,
                                               const void *const in[], void *const out[], int64_t n, double c,
                                               double sigma) {
  RMAOP_REQUIRE(ctx, nparts >= 1 && nparts <= RMAOP__GROUP_MAX, RMAOP_ERR_INTERNAL,
                "rmaop__dev_group_scale: %d parts (1..%d)", nparts, (int)RMAOP__GROUP_MAX);
  if (n <= 0) return RMAOP_OK;
  const group_args g = make_group(nparts, in, out);
  DISPATCH(dt, (k_group_scale<T><<<grid_for(n, THREADS), THREADS, 0, STREAM(ctx)>>>(g, n, mode, c, sigma)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_group_norm(rmaop_ctx ctx, rmaop_dtype dt, int nparts, const void *const in[],
                                              int64_t n, double *scratch, double *host_out) {
  RMAOP_REQUIRE(ctx, nparts >= 1 && nparts <= RMAOP__GROUP_MAX, RMAOP_ERR_INTERNAL,
                "rmaop__dev_group_norm: %d parts (1..%d)", nparts, (int)RMAOP__GROUP_MAX);
  rmaop_status st = RMAOP_OK;
  const group_args g = make_group(nparts, in, NULL);
  DISPATCH(dt, (st = sum_of(ctx, group_term<T>{g}, n, scratch, host_out)));
  return st;
}

extern "C" rmaop_status rmaop__dev_radix_hist(rmaop_ctx ctx, rmaop_dtype dt, const void *x, int64_t n, int byte,
                                              const uint64_t prefix[2], double *scratch,
                                              double counts[2 * RMAOP__RADIX_BINS]) {
  unsigned long long *c = (unsigned long long *)scratch, host[2 * RMAOP__RADIX_BINS];
  RMAOP_CHECK_CUDA(ctx, cudaMemsetAsync(c, 0, sizeof host, STREAM(ctx)));
  if (n > 0) {
    DISPATCH(dt, (k_radix_hist<T><<<grid_for(n, THREADS), THREADS, 0, STREAM(ctx)>>>((const T *)x, n, byte, prefix[0],
                                                                                     prefix[1], c)));
    RMAOP_CHECK_LAUNCH(ctx);
  }
  RMAOP_CHECK(rmaop__dev_copy(ctx, host, c, sizeof host));
  RMAOP_CHECK(rmaop__dev_sync(ctx));
  for (int j = 0; j < 2 * RMAOP__RADIX_BINS; ++j) counts[j] = (double)host[j];
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_radix_max(rmaop_ctx ctx, rmaop_dtype dt, const void *x, int64_t n, int byte,
                                             const uint64_t prefix[2], double *scratch, double out[2]) {
  unsigned long long *b = (unsigned long long *)scratch, host[2];
  RMAOP_CHECK_CUDA(ctx, cudaMemsetAsync(b, 0, sizeof host, STREAM(ctx)));
  if (n > 0) {
    DISPATCH(dt, (k_radix_max<T><<<grid_for(n, THREADS), THREADS, 0, STREAM(ctx)>>>((const T *)x, n, byte, prefix[0],
                                                                                    prefix[1], b)));
    RMAOP_CHECK_LAUNCH(ctx);
  }
  RMAOP_CHECK(rmaop__dev_copy(ctx, host, b, sizeof host));
  RMAOP_CHECK(rmaop__dev_sync(ctx));
  for (int t = 0; t < 2; ++t) memcpy(&out[t], &host[t], sizeof(double));
  return RMAOP_OK;
}

extern "C" rmaop_status rmaop__dev_conj(rmaop_ctx ctx, rmaop_dtype dt, void *x, int64_t n) {
  if (n <= 0 || (dt != RMAOP_C64 && dt != RMAOP_C128)) return RMAOP_OK;
  DISPATCH(dt, (k_conj<T><<<grid_for(n, THREADS), THREADS, 0, STREAM(ctx)>>>((T *)x, n)));
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}
