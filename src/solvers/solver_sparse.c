/* Sparsity solvers with PyLops-MPI 0.8's recurrences (pylops_mpi.optimization.eigs.power_iteration,
 * pylops_mpi.optimization.cls_sparsity ISTA and FISTA; Daubechies, Defrise & De Mol 2004, Beck & Teboulle 2009),
 * and the element layer they share with the proximal solvers (src/solvers/sparse_impl.h): thresholding, local
 * sums, the distributed percentile, the L21 group work, on host loops or the kernels of src/device/sparse.cu.
 * Vector arithmetic goes through rmaop_vec_* and reductions through rmaop_vec_mdot / rmaop_allreduce, so every
 * backend and memory kind runs the same recurrence. */
#include "sparse_impl.h"
#include "core/dtype.h"
#include "device/device.h"

#include <stdio.h>

/* ==== element layer ============================================================================= */

rmaop_status rmaop__sparse_ws_init(rmaop_ctx ctx, rmaop__sparse_ws *ws) {
  ws->ctx = ctx;
  ws->scratch = NULL;
  if (!RMAOP__ON_DEVICE(ctx)) return RMAOP_OK;
  return rmaop__dev_malloc(ctx, RMAOP__SPARSE_SCRATCH * sizeof(double), "sparse solver scratch",
                           (void **)&ws->scratch);
}

void rmaop__sparse_ws_free(rmaop__sparse_ws *ws) {
  if (ws->scratch) rmaop__dev_free(ws->scratch);
  ws->scratch = NULL;
}

/* |e| in double, computed in the dtype's real type (NumPy's abs of the array), for T of real type R. */
#define MAG(e)                                                                                           \
  (sizeof(T) == sizeof(R)       ? fabs((double)creal(e))                                                 \
   : sizeof(R) == sizeof(float) ? (double)cabsf((float _Complex)(e))                                     \
                                : cabs((double _Complex)(e)))
#define ABS2(e) ((double)creal(e) * (double)creal(e) + (double)cimag(e) * (double)cimag(e))

/* Run i of v's local elements (a stacked vector's part i, else the whole array): where it starts, its length,
 * and whether this rank counts it in a global sum (a replicated run only on rank 0). */
static int nruns(rmaop_vec v) { return v->layout->kind == RMAOP_LAYOUT_STACKED ? v->layout->nparts : 1; }
static int run_of(rmaop_vec v, int i, int64_t *off, int64_t *n) {
  const rmaop_layout l = v->layout;
  if (l->kind != RMAOP_LAYOUT_STACKED) {
    *off = 0, *n = v->local_n;
    return l->kind == RMAOP_LAYOUT_SCATTER || v->ctx->rank == 0;
  }
  *off = l->part_off[i];
  *n = (i + 1 < l->nparts ? l->part_off[i + 1] : v->local_n) - *off;
  return l->parts[i]->kind == RMAOP_LAYOUT_SCATTER || v->ctx->rank == 0;
}
static const void *at(rmaop_vec v, int64_t off) {
  return (const char *)v->data + (size_t)off * rmaop_dtype_size(v->dtype);
}

static void host_thresh(rmaop_dtype dt, rmaop__thr kind, double t, const void *in, void *out, int64_t n) {
  RMAOP__FOR_DTYPE(dt, {
    const T *x = in;
    T *y = out;
    const int cplx = sizeof(T) != sizeof(R), single = sizeof(R) == sizeof(float);
    for (int64_t i = 0; i < n; ++i) {
      double re = creal(x[i]), im = cplx ? cimag(x[i]) : 0.0;
      rmaop__thr_elem(kind, single, cplx, t, &re, &im);
      y[i] = (T)CMPLX(re, im);
    }
  });
}

rmaop_status rmaop__sparse_thresh(rmaop__sparse_ws *ws, rmaop__thr kind, double t, rmaop_vec in, rmaop_vec out) {
  if (RMAOP__ON_DEVICE(in)) return rmaop__dev_thresh(ws->ctx, in->dtype, kind, t, in->data, out->data, in->local_n);
  host_thresh(in->dtype, kind, t, in->data, out->data, in->local_n);
  return RMAOP_OK;
}

static double host_sum(rmaop_dtype dt, rmaop__sum kind, const void *a, const void *b, int64_t n) {
  double s = 0.0;
  RMAOP__FOR_DTYPE(dt, {
    const T *x = a, *y = b;
    if (kind == RMAOP__SUM_ABS1)
      for (int64_t i = 0; i < n; ++i) s += MAG(x[i]);
    else if (kind == RMAOP__SUM_DIFF2)
      for (int64_t i = 0; i < n; ++i) {
        const T d = x[i] - y[i]; /* in the dtype (NumPy's x - xold), squared in double */
        s += ABS2(d);
      }
    else
      for (int64_t i = 0; i < n; ++i) s += ABS2(x[i]);
  });
  return s;
}

rmaop_status rmaop__sparse_local_sum(rmaop__sparse_ws *ws, rmaop__sum kind, rmaop_vec a, rmaop_vec b, double *out) {
  double s = 0.0;
  for (int i = 0; i < nruns(a); ++i) {
    int64_t off, n;
    if (!run_of(a, i, &off, &n) || n == 0) continue;
    const void *pa = at(a, off), *pb = b ? at(b, off) : NULL;
    double part;
    if (RMAOP__ON_DEVICE(a)) RMAOP_CHECK(rmaop__dev_sum(ws->ctx, a->dtype, kind, pa, pb, n, ws->scratch, &part));
    else part = host_sum(a->dtype, kind, pa, pb, n);
    s += part;
  }
  *out = s;
  return RMAOP_OK;
}

/* ---- the percentile: radix selection over the magnitudes' bits ---- */

static uint64_t key_of(double m) {
  uint64_t k;
  memcpy(&k, &m, sizeof k);
  return k;
}

/* Bits of the keys above byte `byte` (all of them when byte = 7 ... none). */
static uint64_t high_mask(int byte) { return byte == 7 ? 0 : ~0ull << (8 * byte + 8); }

static void host_hist(rmaop_dtype dt, const void *x, int64_t n, int byte, const uint64_t p[2], double *counts) {
  const uint64_t high = high_mask(byte);
  const int shift = 8 * byte;
  RMAOP__FOR_DTYPE(dt, {
    const T *v = x;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = key_of(MAG(v[i]));
      const unsigned bin = (unsigned)(k >> shift) & 0xffu;
      if ((k & high) == (p[0] & high)) counts[bin] += 1.0;
      if ((k & high) == (p[1] & high)) counts[RMAOP__RADIX_BINS + bin] += 1.0;
    }
  });
}

static void host_max(rmaop_dtype dt, const void *x, int64_t n, int byte, const uint64_t p[2], double out[2]) {
  const uint64_t high = ~0ull << (8 * byte);
  RMAOP__FOR_DTYPE(dt, {
    const T *v = x;
    for (int64_t i = 0; i < n; ++i) {
      const double m = MAG(v[i]);
      const uint64_t k = key_of(m);
      for (int t = 0; t < 2; ++t)
        if ((k & high) == (p[t] & high) && !(m <= out[t])) out[t] = m;
    }
  });
}

/* This rank's histograms of step `byte` (counts[512], zeroed here) over the runs it counts. */
static rmaop_status local_hist(rmaop__sparse_ws *ws, rmaop_vec x, int byte, const uint64_t p[2], double *counts) {
  memset(counts, 0, 2 * RMAOP__RADIX_BINS * sizeof *counts);
  for (int i = 0; i < nruns(x); ++i) {
    int64_t off, n;
    if (!run_of(x, i, &off, &n) || n == 0) continue;
    if (RMAOP__ON_DEVICE(x)) {
      double c[2 * RMAOP__RADIX_BINS];
      RMAOP_CHECK(rmaop__dev_radix_hist(ws->ctx, x->dtype, at(x, off), n, byte, p, ws->scratch, c));
      for (int j = 0; j < 2 * RMAOP__RADIX_BINS; ++j) counts[j] += c[j];
    } else {
      host_hist(x->dtype, at(x, off), n, byte, p, counts);
    }
  }
  return RMAOP_OK;
}

/* The largest magnitudes matching p[t] from byte `byte` up, over the runs this rank counts (0 when none). */
static rmaop_status local_max(rmaop__sparse_ws *ws, rmaop_vec x, int byte, const uint64_t p[2], double out[2]) {
  out[0] = out[1] = 0.0;
  for (int i = 0; i < nruns(x); ++i) {
    int64_t off, n;
    if (!run_of(x, i, &off, &n) || n == 0) continue;
    double m[2] = {0.0, 0.0};
    if (RMAOP__ON_DEVICE(x)) RMAOP_CHECK(rmaop__dev_radix_max(ws->ctx, x->dtype, at(x, off), n, byte, p, ws->scratch, m));
    else host_max(x->dtype, at(x, off), n, byte, p, m);
    for (int t = 0; t < 2; ++t)
      if (!(m[t] <= out[t])) out[t] = m[t];
  }
  return RMAOP_OK;
}

/* The global count of elements: every SCATTER part's and every BROADCAST part's size once. */
static int64_t global_count(rmaop_layout l) {
  if (l->kind != RMAOP_LAYOUT_STACKED) return l->global_n;
  int64_t n = 0;
  for (int i = 0; i < l->nparts; ++i) n += l->parts[i]->global_n;
  return n;
}

/* Sorted magnitudes a[k[0]] and a[k[1]] of the global vector (0 <= k < global count). */
static rmaop_status select_two(rmaop__sparse_ws *ws, rmaop_vec x, const int64_t k[2], double out[2]) {
  uint64_t prefix[2] = {0, 0};
  double want[2] = {(double)k[0], (double)k[1]}, left[2] = {0, 0};
  double counts[2 * RMAOP__RADIX_BINS], sums[2 * RMAOP__RADIX_BINS];
  for (int byte = 7; byte >= 0; --byte) {
    RMAOP_CHECK(local_hist(ws, x, byte, prefix, counts));
    RMAOP_CHECK(rmaop_allreduce(ws->ctx, counts, sums, 2 * RMAOP__RADIX_BINS, RMAOP_SUM, "percentile"));
    for (int t = 0; t < 2; ++t) {
      const double *c = sums + RMAOP__RADIX_BINS * t;
      int bin = 0;
      double below = 0.0;
      while (bin < RMAOP__RADIX_BINS - 1 && below + c[bin] <= want[t]) below += c[bin++];
      want[t] -= below;
      left[t] = c[bin];
      prefix[t] |= (uint64_t)bin << (8 * byte);
    }
    if (byte > 0 && left[0] == 1.0 && left[1] == 1.0) { /* both unique: fetch them instead of more steps */
      double m[2];
      RMAOP_CHECK(local_max(ws, x, byte, prefix, m));
      return rmaop_allreduce(ws->ctx, m, out, 2, RMAOP_MAX, "percentile");
    }
  }
  for (int t = 0; t < 2; ++t) memcpy(&out[t], &prefix[t], sizeof(double));
  return RMAOP_OK;
}

rmaop_status rmaop__sparse_percentile(rmaop__sparse_ws *ws, rmaop_vec x, double q, double *value) {
  const int64_t n = global_count(x->layout);
  RMAOP_REQUIRE(ws->ctx, n > 0, RMAOP_ERR_ARG, "percentile of an empty vector");
  /* numpy.percentile, method "linear": virtual index (n - 1) q / 100, the two neighbours, NumPy's _lerp. */
  const double vi = (double)(n - 1) * (q / 100.0), prev = floor(vi), gamma = vi - prev;
  int64_t k[2] = {(int64_t)prev, (int64_t)prev + 1};
  if (vi >= (double)(n - 1)) k[0] = k[1] = n - 1;
  double ab[2];
  RMAOP_CHECK(select_two(ws, x, k, ab));
  if (x->dtype == RMAOP_F32 || x->dtype == RMAOP_C64) { /* NumPy interpolates a float32 array in float32 */
    const float a = (float)ab[0], b = (float)ab[1], d = b - a, g = (float)gamma;
    *value = gamma >= 0.5 ? (double)(b - d * (1.0f - g)) : (double)(a + d * g);
  } else {
    const double d = ab[1] - ab[0];
    *value = gamma >= 0.5 ? ab[1] - d * (1.0 - gamma) : ab[0] + d * gamma;
  }
  return RMAOP_OK;
}

/* ---- L21 groups and conjugation ---- */

/* The parts of a stacked vector: their local arrays (nparts <= RMAOP__GROUP_MAX, one local length n). */
static int group_parts(rmaop_vec x, const void *ptr[], int64_t *n) {
  const rmaop_layout l = x->layout;
  int64_t off;
  for (int p = 0; p < l->nparts; ++p) {
    run_of(x, p, &off, n);
    ptr[p] = at(x, off);
  }
  return l->nparts;
}

static void host_group(rmaop_dtype dt, rmaop__group mode, int np, const void *const in[], void *const out[], int64_t n,
                       double c, double sigma, double *norm) {
  double sum = 0.0;
  RMAOP__FOR_DTYPE(dt, {
    const int cplx = sizeof(T) != sizeof(R);
    for (int64_t i = 0; i < n; ++i) {
      double s2 = 0.0;
      for (int p = 0; p < np; ++p) {
        const double m = MAG(((const T *)in[p])[i]);
        s2 += m * m;
      }
      const double s = sqrt(s2);
      sum += s;
      for (int p = 0; out && p < np; ++p) {
        const T e = ((const T *)in[p])[i];
        double re = creal(e), im = cplx ? cimag(e) : 0.0;
        rmaop__group_elem(mode, s, c, sigma, &re, &im);
        ((T *)out[p])[i] = (T)CMPLX(re, im);
      }
    }
  });
  if (norm) *norm = sum;
}

rmaop_status rmaop__sparse_group_scale(rmaop__sparse_ws *ws, rmaop__group mode, rmaop_vec x, rmaop_vec out, double c,
                                       double sigma) {
  const void *in[RMAOP__GROUP_MAX], *o[RMAOP__GROUP_MAX];
  int64_t n = 0;
  const int np = group_parts(x, in, &n);
  group_parts(out, o, &n);
  if (RMAOP__ON_DEVICE(x)) return rmaop__dev_group_scale(ws->ctx, x->dtype, mode, np, in, (void *const *)o, n, c, sigma);
  host_group(x->dtype, mode, np, in, (void *const *)o, n, c, sigma, NULL);
  return RMAOP_OK;
}

rmaop_status rmaop__sparse_group_norm(rmaop__sparse_ws *ws, rmaop_vec x, double *out) {
  const void *in[RMAOP__GROUP_MAX];
  int64_t n = 0, off;
  const int np = group_parts(x, in, &n);
  *out = 0.0;
  if (!run_of(x, 0, &off, &n) || n == 0) return RMAOP_OK; /* the parts share a layout: part 0 decides */
  if (RMAOP__ON_DEVICE(x)) return rmaop__dev_group_norm(ws->ctx, x->dtype, np, in, n, ws->scratch, out);
  host_group(x->dtype, RMAOP__GROUP_SHRINK, np, in, NULL, n, 0.0, 0.0, out);
  return RMAOP_OK;
}

rmaop_status rmaop__sparse_conj(rmaop__sparse_ws *ws, rmaop_vec x) {
  if (RMAOP__ON_DEVICE(x)) return rmaop__dev_conj(ws->ctx, x->dtype, x->data, x->local_n);
  if (x->dtype == RMAOP_C64)
    for (int64_t i = 0; i < x->local_n; ++i) ((float _Complex *)x->data)[i] = conjf(((float _Complex *)x->data)[i]);
  if (x->dtype == RMAOP_C128)
    for (int64_t i = 0; i < x->local_n; ++i) ((double _Complex *)x->data)[i] = conj(((double _Complex *)x->data)[i]);
  return RMAOP_OK;
}

/* ==== power iteration ============================================================================ */

void rmaop_eigs_options_init(rmaop_eigs_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
  opts->tol = 1e-5;
}

static int is_complex(rmaop_dtype dt) { return dt == RMAOP_C64 || dt == RMAOP_C128; }

static rmaop_status eigs_check(rmaop_ctx ctx, const char *fn, const rmaop_eigs_options *o) {
  RMAOP_REQUIRE(ctx, o->niter >= 1, RMAOP_ERR_ARG, "%s: eigs niter = %d must be at least 1", fn, o->niter);
  RMAOP_REQUIRE(ctx, o->tol >= 0 && isfinite(o->tol), RMAOP_ERR_ARG, "%s: eigs tol = %g must be finite and >= 0", fn,
                o->tol);
  return RMAOP_OK;
}

/* Checks a vector against a layout and dtype; `what` names it. */
static rmaop_status vec_fits(rmaop_ctx ctx, const char *fn, const char *what, rmaop_vec v, rmaop_layout l,
                             rmaop_dtype dt) {
  RMAOP_REQUIRE(ctx, v != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, what);
  RMAOP_REQUIRE(ctx, v->ctx == ctx, RMAOP_ERR_ARG, "%s: %s belongs to another context", fn, what);
  RMAOP_REQUIRE(ctx, v->dtype == dt, RMAOP_ERR_ARG, "%s: %s is %s but the operator is %s", fn, what,
                rmaop_dtype_name(v->dtype), rmaop_dtype_name(dt));
  RMAOP_REQUIRE(ctx, rmaop__layout_compatible(v->layout, l), RMAOP_ERR_ARG,
                "%s: %s's layout (%lld of %lld elements here) is not the operator's (%lld of %lld)", fn, what,
                (long long)v->local_n, (long long)v->layout->global_n, (long long)l->sizes[ctx->rank],
                (long long)l->global_n);
  return RMAOP_OK;
}

/* b = pseudo-random values uniform in [0, 1) (+ i [0, 1)): 0.5 + 0.5 u with u in [-1, 1) by global index. */
static rmaop_status random_start(rmaop_vec b, unsigned seed) {
  rmaop_vec half = NULL;
  RMAOP_CHECK(rmaop__vec_fill_random(b, seed));
  rmaop_status st = rmaop_vec_duplicate(b, &half);
  if (st == RMAOP_OK) st = rmaop_vec_set(half, is_complex(b->dtype) ? CMPLX(0.5, 0.5) : 0.5);
  if (st == RMAOP_OK) st = rmaop_vec_axpby(b, 1.0, 0.5, half); /* b = half + 0.5 b */
  rmaop_vec_destroy(&half);
  return st;
}

/* NumPy's ordering of a real a and a complex b (lexicographic: real parts, then imaginary parts). */
static int numpy_less(double a, double _Complex b) { return a < creal(b) || (a == creal(b) && 0.0 < cimag(b)); }

/* The iterations of power_iteration from b (normalized here); checks done. */
static rmaop_status power_run(rmaop_op A, rmaop_vec b, rmaop_vec b1, const rmaop_eigs_options *o,
                              double _Complex *maxeig, int *iterations) {
  double bnorm;
  RMAOP_CHECK(rmaop_vec_norm2(b, &bnorm));
  RMAOP_REQUIRE(A->ctx, bnorm > 0.0, RMAOP_ERR_ARG, "rmaop_power_iteration: the start b is zero");
  RMAOP_CHECK(rmaop_vec_scale(b, 1.0 / bnorm));
  double _Complex l = 0.0, lold = 0.0;
  int it = 0;
  while (it < o->niter) {
    ++it;
    RMAOP_CHECK(rmaop_op_apply(A, b, b1));
    double _Complex d[2];
    rmaop_vec xs[2] = {b, b1}, ys[2] = {b1, b1};
    RMAOP_CHECK(rmaop_vec_mdot(2, xs, ys, d)); /* b^H b1 and ||b1||^2 in one reduction */
    l = d[0];
    const double n1 = sqrt(creal(d[1]));
    if (n1 == 0.0) break; /* A b = 0: l = 0, b stays normalized */
    RMAOP_CHECK(rmaop_vec_copy(b1, b));
    RMAOP_CHECK(rmaop_vec_scale(b, 1.0 / n1));
    if (numpy_less(cabs(l - lold), o->tol * l)) break;
    lold = l;
  }
  *maxeig = l;
  if (iterations) *iterations = it;
  return RMAOP_OK;
}

rmaop_status rmaop_power_iteration(rmaop_op A, rmaop_vec b, const rmaop_eigs_options *opts, double _Complex *maxeig,
                                   int *iterations) {
  static const char fn[] = "rmaop_power_iteration";
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "%s: operator is NULL", fn);
  rmaop_ctx ctx = A->ctx;
  rmaop_eigs_options dflt;
  rmaop_eigs_options_init(&dflt);
  const rmaop_eigs_options *o = opts ? opts : &dflt;
  rmaop_status st = RMAOP_OK;
  if (maxeig == NULL) st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: maxeig (output) is NULL", fn);
  else if (!rmaop__layout_same(A->model, A->data))
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: the operator is not square (model and data layouts differ)", fn);
  else if ((st = eigs_check(ctx, fn, o)) == RMAOP_OK) st = vec_fits(ctx, fn, "b", b, A->model, A->dtype);
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  rmaop_vec b1 = NULL;
  st = rmaop__agree(ctx, rmaop_vec_duplicate(b, &b1), fn);
  if (st == RMAOP_OK && !o->use_b) st = random_start(b, o->seed);
  if (st == RMAOP_OK) st = power_run(A, b, b1, o, maxeig, iterations);
  rmaop_vec_destroy(&b1);
  return st;
}

rmaop_status rmaop_sparse_step_size(rmaop_op A, const rmaop_eigs_options *eigs, double *alpha) {
  static const char fn[] = "rmaop_sparse_step_size";
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "%s: operator is NULL", fn);
  rmaop_ctx ctx = A->ctx;
  rmaop_eigs_options dflt;
  rmaop_eigs_options_init(&dflt);
  rmaop_eigs_options o = eigs ? *eigs : dflt;
  o.use_b = 0; /* PyLops-MPI always starts from random values */
  rmaop_status st = alpha ? eigs_check(ctx, fn, &o) : RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: alpha (output) is NULL", fn);
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  rmaop_op AH = NULL, AHA = NULL;
  rmaop_vec b = NULL;
  st = rmaop_op_create_adjoint(A, &AH);
  if (st == RMAOP_OK) st = rmaop_op_create_product(AH, A, &AHA);
  if (st == RMAOP_OK) st = rmaop_vec_create(A->model, A->dtype, &b);
  st = rmaop__agree(ctx, st, fn);
  double _Complex l = 0.0;
  if (st == RMAOP_OK) st = rmaop_power_iteration(AHA, b, &o, &l, NULL);
  if (st == RMAOP_OK && cabs(l) == 0.0)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: the largest eigenvalue of A^H A is 0 (A is zero): no step size", fn);
  if (st == RMAOP_OK) *alpha = 1.0 / cabs(l);
  rmaop_vec_destroy(&b);
  rmaop_op_destroy(&AHA);
  rmaop_op_destroy(&AH);
  return st;
}

/* ==== ISTA and FISTA ============================================================================= */

void rmaop_sparse_options_init(rmaop_sparse_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
  opts->eps = 0.1;
  rmaop_eigs_options_init(&opts->eigs);
  opts->tol = 1e-10;
  opts->threshkind = RMAOP_THRESH_SOFT;
}

static const char *const thresh_names[] = {"soft", "hard", "half", "soft-percentile", "hard-percentile",
                                           "half-percentile"};
enum { NTHRESH = sizeof thresh_names / sizeof thresh_names[0] };

const char *rmaop_thresh_name(rmaop_thresh_kind kind) {
  return (unsigned)kind < NTHRESH ? thresh_names[kind] : "invalid";
}

rmaop_status rmaop_thresh_parse(const char *name, rmaop_thresh_kind *kind) {
  RMAOP_REQUIRE(NULL, name != NULL && kind != NULL, RMAOP_ERR_ARG, "rmaop_thresh_parse: %s is NULL",
                name ? "kind (output)" : "name");
  for (int i = 0; i < NTHRESH; ++i)
    if (!strcmp(name, thresh_names[i])) {
      *kind = (rmaop_thresh_kind)i;
      return RMAOP_OK;
    }
  return RMAOP_ERROR(NULL, RMAOP_ERR_ARG,
                     "rmaop_thresh_parse: unknown threshkind \"%s\" (soft, hard, half, soft-percentile, "
                     "hard-percentile, half-percentile)",
                     name);
}

static int is_percentile(rmaop_thresh_kind k) { return k >= RMAOP_THRESH_SOFT_PERCENTILE; }

/* The option checks of ISTA and FISTA (local; the caller agrees on the outcome). */
static rmaop_status sparse_check(const char *fn, rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_sparse_options *o,
                                 rmaop_solver_info *info) {
  rmaop_ctx ctx = A->ctx;
  RMAOP_REQUIRE(ctx, o != NULL && info != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, o ? "info" : "options");
  RMAOP_REQUIRE(ctx, o->niter >= 0, RMAOP_ERR_ARG, "%s: niter = %d is negative", fn, o->niter);
  RMAOP_REQUIRE(ctx, o->eps >= 0 && isfinite(o->eps), RMAOP_ERR_ARG, "%s: eps = %g must be finite and >= 0", fn, o->eps);
  RMAOP_REQUIRE(ctx, o->alpha >= 0 && isfinite(o->alpha), RMAOP_ERR_ARG,
                "%s: alpha = %g must be finite and > 0 (0: the power iteration's step)", fn, o->alpha);
  RMAOP_REQUIRE(ctx, o->tol >= 0 && !isnan(o->tol), RMAOP_ERR_ARG, "%s: tol = %g must be >= 0", fn, o->tol);
  RMAOP_REQUIRE(ctx, (unsigned)o->threshkind < NTHRESH, RMAOP_ERR_ARG,
                "%s: threshkind = %d is unknown (rmaop_thresh_kind: soft, hard, half and their percentile kinds)", fn,
                (int)o->threshkind);
  RMAOP_REQUIRE(ctx, !is_percentile(o->threshkind) || (o->perc >= 0 && o->perc <= 100), RMAOP_ERR_ARG,
                "%s: perc = %g is outside [0, 100] (threshkind %s)", fn, o->perc, rmaop_thresh_name(o->threshkind));
  for (int k = 0; o->decay && k < o->niter; ++k)
    RMAOP_REQUIRE(ctx, o->decay[k] >= 0 && isfinite(o->decay[k]), RMAOP_ERR_ARG,
                  "%s: decay[%d] = %g must be finite and >= 0", fn, k, o->decay[k]);
  if (o->alpha == 0) RMAOP_CHECK(eigs_check(ctx, fn, &o->eigs));
  RMAOP_CHECK(vec_fits(ctx, fn, "y", y, A->data, A->dtype));
  RMAOP_CHECK(vec_fits(ctx, fn, "x", x, A->model, A->dtype));
  if (o->x0) RMAOP_CHECK(vec_fits(ctx, fn, "x0", o->x0, A->model, A->dtype));
  if (o->SOp) {
    RMAOP_REQUIRE(ctx, o->SOp->ctx == ctx && o->SOp->dtype == A->dtype, RMAOP_ERR_ARG,
                  "%s: SOp belongs to another context or dtype than the operator", fn);
    RMAOP_REQUIRE(ctx, rmaop__layout_same(o->SOp->data, A->model), RMAOP_ERR_ARG,
                  "%s: SOp's data layout is not the operator's model layout", fn);
  }
  return RMAOP_OK;
}

/* A double's bits, for comparing options between ranks. */
static int64_t bits_of(double v) {
  int64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* The same options on every rank (a difference would make the ranks' iterations diverge silently). */
static rmaop_status sparse_same(const char *fn, rmaop_ctx ctx, const rmaop_sparse_options *o) {
  static const char *const names[] = {"niter", "threshkind", "eps", "alpha", "tol", "perc", "SOp", "x0", "decay"};
  const int64_t v[] = {o->niter,     o->threshkind, bits_of(o->eps), bits_of(o->alpha),  bits_of(o->tol),
                       bits_of(o->perc), o->SOp != NULL, o->x0 != NULL, o->decay != NULL};
  return rmaop__same_everywhere(ctx, v, (int)(sizeof v / sizeof v[0]), names, fn);
}

/* The vectors and scalars of one ISTA or FISTA solve. */
typedef struct {
  rmaop_op A, SOp;
  rmaop_vec y, x;
  rmaop_vec xold, r, u, s, z; /* s: SOp^H u (SOp's model); z: FISTA's auxiliary */
  rmaop__sparse_ws ws;
  const rmaop_sparse_options *o;
  double alpha, thresh;
} ista_state;

static void ista_free(ista_state *S) {
  rmaop_vec_destroy(&S->xold);
  rmaop_vec_destroy(&S->r);
  rmaop_vec_destroy(&S->u);
  rmaop_vec_destroy(&S->s);
  rmaop_vec_destroy(&S->z);
  rmaop__sparse_ws_free(&S->ws);
}

static rmaop_status ista_alloc(ista_state *S, int fista) {
  RMAOP_CHECK(rmaop_vec_duplicate(S->x, &S->xold));
  RMAOP_CHECK(rmaop_vec_duplicate(S->y, &S->r));
  RMAOP_CHECK(rmaop_vec_duplicate(S->x, &S->u));
  if (S->SOp) RMAOP_CHECK(rmaop_vec_create(S->SOp->model, S->SOp->dtype, &S->s));
  if (fista) RMAOP_CHECK(rmaop_vec_duplicate(S->x, &S->z));
  return rmaop__sparse_ws_init(S->A->ctx, &S->ws);
}

/* The threshold of iteration k applied to v in place: PyLops' decay[k] eps alpha / 2, or the percentile rule
 * (pylops.optimization.cls_sparsity: threshf(v, 100 - perc)). */
static rmaop_status threshold(ista_state *S, rmaop_vec v, int k) {
  const rmaop_sparse_options *o = S->o;
  static const rmaop__thr kinds[] = {RMAOP__THR_SOFT, RMAOP__THR_HARD, RMAOP__THR_HALF};
  const rmaop__thr kind = kinds[o->threshkind % 3];
  double t = (o->decay ? o->decay[k] : 1.0) * S->thresh;
  if (is_percentile(o->threshkind)) {
    double p;
    RMAOP_CHECK(rmaop__sparse_percentile(&S->ws, v, 100.0 - o->perc, &p));
    t = kind == RMAOP__THR_SOFT ? p : kind == RMAOP__THR_HARD ? 0.5 * (p * p) : pow(4.0 / pow(54.0, 1.0 / 3.0) * p, 1.5);
  }
  return rmaop__sparse_thresh(&S->ws, kind, t, v, v);
}

/* x = thr(base + alpha A^H r) (with SOp: SOp thr(SOp^H (...))); xold holds the previous x, r the residual. */
static rmaop_status shrink_step(ista_state *S, rmaop_vec base, int k) {
  RMAOP_CHECK(rmaop_op_apply_adjoint(S->A, S->r, S->u));
  RMAOP_CHECK(rmaop_vec_scale(S->u, S->alpha));    /* grad = alpha A^H r */
  RMAOP_CHECK(rmaop_vec_axpy(S->u, 1.0, base));    /* base + grad */
  if (!S->SOp) {
    RMAOP_CHECK(threshold(S, S->u, k));
    return rmaop_vec_copy(S->u, S->x);
  }
  RMAOP_CHECK(rmaop_op_apply_adjoint(S->SOp, S->u, S->s));
  RMAOP_CHECK(threshold(S, S->s, k));
  return rmaop_op_apply(S->SOp, S->s, S->x);
}

/* r = y - A v. */
static rmaop_status residual(ista_state *S, rmaop_vec v) {
  RMAOP_CHECK(rmaop_op_apply(S->A, v, S->r));
  return rmaop_vec_axpby(S->r, 1.0, -1.0, S->y);
}

/* 1/2 ||r||^2 as PyLops-MPI writes it (0.5 * res.norm() ** 2) plus eps ||x||_1. */
static double cost_of(double r2, double l1, double eps) {
  const double rn = sqrt(r2);
  return 0.5 * (rn * rn) + eps * l1;
}

/* One ISTA (fista = 0) or FISTA step k from x (and z); sums = {||r||^2, ||x - xold||^2, ||x||_1} after the
 * step's one reduction, and at k = 0 also {||r_0||^2, ||x_0||_1} for history[0]. */
static rmaop_status sparse_step(ista_state *S, int fista, int k, double *t, double sums[5]) {
  double part[5] = {0, 0, 0, 0, 0};
  const int first = k == 0, n = first ? 5 : 3;
  RMAOP_CHECK(rmaop_vec_copy(S->x, S->xold));
  rmaop_vec base = fista ? S->z : S->x;
  RMAOP_CHECK(residual(S, base));
  if (first) {
    RMAOP_CHECK(rmaop__sparse_local_sum(&S->ws, RMAOP__SUM_ABS2, S->r, NULL, &part[3]));
    RMAOP_CHECK(rmaop__sparse_local_sum(&S->ws, RMAOP__SUM_ABS1, S->x, NULL, &part[4]));
  }
  RMAOP_CHECK(shrink_step(S, base, k));
  if (fista) {
    const double told = *t;
    *t = (1.0 + sqrt(1.0 + 4.0 * (told * told))) / 2.0;
    RMAOP_CHECK(rmaop_vec_copy(S->x, S->z)); /* z = x + (told - 1) / t (x - xold) */
    RMAOP_CHECK(rmaop_vec_axpy(S->z, -1.0, S->xold));
    RMAOP_CHECK(rmaop_vec_scale(S->z, (told - 1.0) / *t));
    RMAOP_CHECK(rmaop_vec_axpy(S->z, 1.0, S->x));
    RMAOP_CHECK(residual(S, S->x)); /* FISTA's cost: y - A x (an extra application, as PyLops-MPI) */
  }
  RMAOP_CHECK(rmaop__sparse_local_sum(&S->ws, RMAOP__SUM_ABS2, S->r, NULL, &part[0]));
  RMAOP_CHECK(rmaop__sparse_local_sum(&S->ws, RMAOP__SUM_DIFF2, S->x, S->xold, &part[1]));
  RMAOP_CHECK(rmaop__sparse_local_sum(&S->ws, RMAOP__SUM_ABS1, S->x, NULL, &part[2]));
  return rmaop_allreduce(S->A->ctx, part, sums, n, RMAOP_SUM, fista ? "fista" : "ista");
}

/* history[0] without any iteration: 1/2 ||y - A x0||^2 + eps ||x0||_1. */
static rmaop_status initial_cost(ista_state *S, double *cost) {
  double part[2], sums[2];
  RMAOP_CHECK(residual(S, S->x));
  RMAOP_CHECK(rmaop__sparse_local_sum(&S->ws, RMAOP__SUM_ABS2, S->r, NULL, &part[0]));
  RMAOP_CHECK(rmaop__sparse_local_sum(&S->ws, RMAOP__SUM_ABS1, S->x, NULL, &part[1]));
  RMAOP_CHECK(rmaop_allreduce(S->A->ctx, part, sums, 2, RMAOP_SUM, "ista"));
  *cost = cost_of(sums[0], sums[1], S->o->eps);
  return RMAOP_OK;
}

/* The iterations of pylops_mpi ISTA.run / FISTA.run: while iiter < niter and xupdate > tol. */
static rmaop_status sparse_run(ista_state *S, int fista, rmaop_solver_info *info) {
  const rmaop_sparse_options *o = S->o;
  double t = 1.0, xupdate = INFINITY;
  info->reason = RMAOP_REASON_NITER;
  if (o->niter == 0) return initial_cost(S, &info->history[0]);
  if (fista) RMAOP_CHECK(rmaop_vec_copy(S->x, S->z));
  while (info->iterations < o->niter && xupdate > o->tol) {
    const int k = info->iterations;
    double sums[5];
    RMAOP_CHECK(sparse_step(S, fista, k, &t, sums));
    if (k == 0) info->history[0] = cost_of(sums[3], sums[4], o->eps);
    xupdate = sqrt(sums[1]);
    const double cost = cost_of(sums[0], sums[2], o->eps);
    info->history[++info->iterations] = cost;
    if (o->callback) RMAOP_CHECK(o->callback(o->user, info->iterations, cost, S->x));
  }
  if (isnan(xupdate)) info->reason = RMAOP_REASON_BREAKDOWN;
  else if (xupdate <= o->tol) info->reason = RMAOP_REASON_TOL;
  return RMAOP_OK;
}

static rmaop_status sparse_solve(const char *fn, int fista, rmaop_op A, rmaop_vec y, rmaop_vec x,
                                 const rmaop_sparse_options *o, rmaop_solver_info *info) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "%s: operator is NULL", fn);
  rmaop_ctx ctx = A->ctx;
  RMAOP_CHECK(rmaop__agree(ctx, sparse_check(fn, A, y, x, o, info), fn));
  RMAOP_CHECK(sparse_same(fn, ctx, o));
  memset(info, 0, sizeof *info);
  solve_clock clk = {ctx, rmaop__wtime(), ctx->comm_time, info};
  ista_state S = {.A = A, .SOp = o->SOp, .y = y, .x = x, .o = o, .alpha = o->alpha};
  rmaop_status st = rmaop__calloc(ctx, (size_t)o->niter + 1, sizeof(double), "cost history", (void **)&info->history);
  if (st == RMAOP_OK) st = ista_alloc(&S, fista);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, fn), st, out);
  if (S.alpha == 0.0) RMAOP_CHECK_GOTO(rmaop_sparse_step_size(A, &o->eigs, &S.alpha), st, out);
  S.thresh = o->eps * S.alpha * 0.5;
  if (o->x0) RMAOP_CHECK_GOTO(rmaop_vec_copy(o->x0, x), st, out);
  else RMAOP_CHECK_GOTO(rmaop_vec_set(x, 0.0), st, out);
  st = sparse_run(&S, fista, info);
out:
  solver_stop(&clk);
  ista_free(&S);
  if (st != RMAOP_OK) rmaop_solver_info_destroy(info);
  return st;
}

rmaop_status rmaop_solve_ista(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_sparse_options *opts,
                              rmaop_solver_info *info) {
  return sparse_solve("rmaop_solve_ista", 0, A, y, x, opts, info);
}

rmaop_status rmaop_solve_fista(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_sparse_options *opts,
                               rmaop_solver_info *info) {
  return sparse_solve("rmaop_solve_fista", 1, A, y, x, opts, info);
}
