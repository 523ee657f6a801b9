/* Bench problems: float64 (fft2d: complex128), x_true by global index, b = A x_true. */
#include "problems.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_problem_names[] = {"deriv1d",  "lap2d", "halo2d", "bdiag", "vstack",
                                           "derivspd", "fft2d", "mdc",    NULL};

#define TRY(call)                          \
  do {                                     \
    rmaop_status s_ = (call);              \
    if (s_ != RMAOP_OK) return s_;         \
  } while (0)

/* Fills v[i] = f(global index) on this rank's part (BROADCAST vectors hold all of it). The values are
 * built in a host buffer and written with rmaop_vec_write_local, so host and device vectors alike work. */
static rmaop_status fill(rmaop_vec v, double (*f)(int64_t, int64_t), int64_t n) {
  rmaop_vec_info info;
  TRY(rmaop_vec_get_info(v, &info));
  double *h = malloc((size_t)(info.local_n > 0 ? info.local_n : 1) * sizeof *h);
  if (!h) {
    fprintf(stderr, "bench problem: cannot allocate %lld doubles of host staging\n", (long long)info.local_n);
    return RMAOP_ERR_NOMEM;
  }
  for (int64_t i = 0; i < info.local_n; ++i) h[i] = f(info.offset + i, n);
  rmaop_status st = rmaop_vec_write_local(v, h);
  free(h);
  return st;
}

/* fill() for a complex128 vector: v[i] = f(i) + 0.5 i f(i + 1). */
static rmaop_status fill_complex(rmaop_vec v, double (*f)(int64_t, int64_t), int64_t n) {
  rmaop_vec_info info;
  TRY(rmaop_vec_get_info(v, &info));
  double *h = malloc(2 * (size_t)(info.local_n > 0 ? info.local_n : 1) * sizeof *h);
  if (!h) {
    fprintf(stderr, "bench problem: cannot allocate %lld complex values of host staging\n", (long long)info.local_n);
    return RMAOP_ERR_NOMEM;
  }
  for (int64_t i = 0; i < info.local_n; ++i) {
    h[2 * i] = f(info.offset + i, n);
    h[2 * i + 1] = 0.5 * f(info.offset + i + 1, n);
  }
  rmaop_status st = rmaop_vec_write_local(v, h);
  free(h);
  return st;
}

static double x_1d(int64_t i, int64_t n) { (void)n; return sin(0.01 * (double)i) + 0.5 * cos(0.003 * (double)i); }
static double x_2d(int64_t k, int64_t n) { return sin(0.01 * (double)(k / n)) * cos(0.02 * (double)(k % n)); }

static rmaop_status finish(bench_problem *p, double (*f)(int64_t, int64_t), int64_t n) {
  rmaop_op_info info;
  TRY(rmaop_op_get_info(p->A, &info));
  TRY(rmaop_vec_create(info.model, info.dtype, &p->x_true));
  TRY(rmaop_vec_create(info.data, info.dtype, &p->b));
  TRY(info.dtype == RMAOP_C128 ? fill_complex(p->x_true, f, n) : fill(p->x_true, f, n));
  return rmaop_op_apply(p->A, p->x_true, p->b);
}

/* derivspd: A = D^H D + I, D the centered first derivative (deriv1d's), I a diagonal of ones: symmetric positive
 * definite with eigenvalues in [1, 2], for CG and pipelined CG. One halo exchange for D, one (reversed) for D^H,
 * no reduction inside the operator: a latency-bound matvec whose time the pipelined CG can hide a reduction in.
 * The composites hold references to their parts, so only A is kept. */
static rmaop_status make_derivspd(rmaop_ctx ctx, int64_t n, rmaop_op *A) {
  rmaop_deriv_spec s = {.grid = {.ndim = 1, .dims = {n}, .local_rows = -1}, .axis = 0,
                        .kind = RMAOP_DERIV_CENTERED3, .edge = 0, .sampling = 1.0, .dtype = RMAOP_F64,
                        .label = "derivspd.halo"};
  rmaop_op D = NULL, DH = NULL, DHD = NULL, I = NULL;
  rmaop_vec ones = NULL;
  rmaop_op_info info;
  rmaop_status st = rmaop_op_create_first_derivative(ctx, &s, &D);
  if (st == RMAOP_OK) st = rmaop_op_create_adjoint(D, &DH);
  if (st == RMAOP_OK) st = rmaop_op_create_product(DH, D, &DHD);
  if (st == RMAOP_OK) st = rmaop_op_get_info(D, &info);
  if (st == RMAOP_OK) st = rmaop_vec_create(info.model, RMAOP_F64, &ones);
  if (st == RMAOP_OK) st = rmaop_vec_set(ones, 1.0);
  if (st == RMAOP_OK) st = rmaop_op_create_diagonal(ones, &I);
  if (st == RMAOP_OK) st = rmaop_op_create_sum(2, (rmaop_op[]){DHD, I}, A);
  rmaop_vec_destroy(&ones);
  rmaop_op_destroy(&I);
  rmaop_op_destroy(&DHD);
  rmaop_op_destroy(&DH);
  rmaop_op_destroy(&D);
  return st;
}

/* mdc: PyLops-MPI's MPIMDC as MDD uses it: n sources and n receivers, nt = 201 (two-sided) samples, nv = 16 virtual
 * sources, G over the nfmax = 101 frequencies split over the ranks (balanced), a band of dipping events:
 * G(f, s, r) = exp(-2 pi i f (0.1 + |s - r| / n)) / (1 + |s - r|). Model and data are BROADCAST, so every rank
 * transforms all of them and one allgather of the frequencies runs per application. */
static rmaop_status make_mdc(rmaop_ctx ctx, const rmaop_ctx_info *ci, int64_t n, bench_problem *p) {
  enum { NT = 201, NV = 16, NF = NT / 2 + 1 };
  if (n < 1 || n > 4096) {
    if (ci->rank == 0) fprintf(stderr, "bench problem mdc: n = %lld; want 1 <= n <= 4096 sources\n", (long long)n);
    return RMAOP_ERR_ARG;
  }
  const int64_t nf = NF / ci->size + (ci->rank < NF % ci->size), f0 = ci->rank * (NF / ci->size) +
                     (ci->rank < NF % ci->size ? ci->rank : NF % ci->size);
  double *G = malloc(2 * (size_t)(nf > 0 ? nf : 1) * (size_t)(n * n) * sizeof *G);
  if (!G) {
    fprintf(stderr, "bench problem mdc: cannot allocate this rank's %lld x %lld x %lld kernel\n", (long long)nf,
            (long long)n, (long long)n);
    return RMAOP_ERR_NOMEM;
  }
  for (int64_t f = 0; f < nf; ++f)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double d = (double)llabs(i - j), ph = -2.0 * 3.14159265358979323846 * (double)(f0 + f) / NT *
                                                    (10.0 + 40.0 * d / (double)n);
        G[2 * ((f * n + i) * n + j)] = cos(ph) / (1.0 + d);
        G[2 * ((f * n + i) * n + j) + 1] = sin(ph) / (1.0 + d);
      }
  rmaop_mdc_spec s = {.dtype = RMAOP_C128, .nf_local = nf, .ns = n, .nr = n, .G = G, .nt = NT, .nv = NV,
                      .nfmax = NF, .dt = 0.004, .dr = 1.0, .twosided = 1};
  rmaop_status st = rmaop_op_create_mdc(ctx, &s, &p->A);
  free(G); /* the operator copied it */
  return st;
}

rmaop_status bench_problem_create(rmaop_ctx ctx, const char *name, int64_t n, bench_problem *p) {
  memset(p, 0, sizeof *p);
  rmaop_ctx_info ci;
  TRY(rmaop_ctx_get_info(ctx, &ci));
  if (strcmp(name, "deriv1d") == 0) {
    rmaop_deriv_spec s = {.grid = {.ndim = 1, .dims = {n}, .local_rows = -1}, .axis = 0,
                          .kind = RMAOP_DERIV_CENTERED3, .edge = 0, .sampling = 1.0, .dtype = RMAOP_F64,
                          .label = "deriv1d.halo"};
    TRY(rmaop_op_create_first_derivative(ctx, &s, &p->A));
    return finish(p, x_1d, n);
  }
  if (strcmp(name, "lap2d") == 0) {
    rmaop_laplacian_spec s = {.grid = {.ndim = 2, .dims = {n, n}, .local_rows = -1}, .naxes = 2, .axes = {0, 1},
                              .weights = {1, 1}, .sampling = {1, 1}, .edge = 0, .kind = RMAOP_DERIV_CENTERED3,
                              .dtype = RMAOP_F64, .label = "lap2d.halo"};
    TRY(rmaop_op_create_laplacian(ctx, &s, &p->A));
    return finish(p, x_2d, n);
  }
  if (strcmp(name, "halo2d") == 0) {
    /* PyLops-MPI MPIHalo of an n x n array over MPI_Dims_create's grid, one ghost cell each side: the exchange
     * alone (the model is each rank's block, the data its extended block). */
    rmaop_halo_spec s = {.ndim = 2, .dims = {n, n}, .lo = {1, 1}, .hi = {1, 1}, .dtype = RMAOP_F64, .label = "halo2d"};
    TRY(rmaop_op_create_halo(ctx, &s, &p->A));
    return finish(p, x_2d, n);
  }
  if (strcmp(name, "derivspd") == 0) {
    TRY(make_derivspd(ctx, n, &p->A));
    return finish(p, x_1d, n);
  }
  if (strcmp(name, "fft2d") == 0) {
    /* PyLops-MPI MPIFFT2D of an n x n complex128 array split by rows: the transform of axis 0 needs the array
     * redistributed (an all-to-all there and back per application). norm 1/n keeps the scale of the data. */
    rmaop_fft_spec s = {.ndim = 2, .dims = {n, n}, .naxes = 2, .axes = {0, 1}, .norm = RMAOP_FFT_NORM_1_OVER_N,
                        .dtype = RMAOP_C128, .label = "fft2d"};
    TRY(rmaop_op_create_fftnd(ctx, &s, &p->A));
    return finish(p, x_2d, n);
  }
  if (strcmp(name, "mdc") == 0) {
    TRY(make_mdc(ctx, &ci, n, p));
    return finish(p, x_1d, n);
  }
  const int is_bdiag = strcmp(name, "bdiag") == 0, is_vstack = strcmp(name, "vstack") == 0;
  if (!is_bdiag && !is_vstack) {
    if (ci.rank == 0)
      fprintf(stderr,
              "bench problem: unknown name \"%s\" (deriv1d, lap2d, halo2d, bdiag, vstack, derivspd, fft2d, mdc)\n",
              name);
    return RMAOP_ERR_ARG;
  }
  /* A dense n x n block per rank: refuse sizes whose block would not fit 8 GiB (or overflow). */
  if (n <= 0 || n > 32768) {
    if (ci.rank == 0) fprintf(stderr, "bench problem %s: n = %lld; a dense block needs 1 <= n <= 32768\n", name, (long long)n);
    return RMAOP_ERR_ARG;
  }
  double *B = malloc((size_t)(n * n) * sizeof *B);
  if (!B) {
    fprintf(stderr, "bench problem %s: cannot allocate the %lld x %lld block\n", name, (long long)n, (long long)n);
    return RMAOP_ERR_NOMEM;
  }
  p->storage = B;
  p->storage_bytes = (double)n * (double)n * sizeof *B;
  const int r = ci.rank;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      B[i * n + j] = is_bdiag ? 1.0 / (1.0 + (double)llabs(i - j)) + (i == j ? r + 1.0 : 0.0)
                              : cos(0.1 * (double)(i + r * n) + 0.05 * (double)j) + (i % n == j ? 1.0 : 0.0);
  rmaop_block blk = {.nrows = n, .ncols = n, .dense = B};
  TRY(is_bdiag ? rmaop_op_create_blockdiag(ctx, RMAOP_F64, &blk, &p->A) : rmaop_op_create_vstack(ctx, RMAOP_F64, &blk, &p->A));
  return finish(p, x_1d, n);
}

void bench_problem_free(bench_problem *p) {
  rmaop_vec_destroy(&p->x_true);
  rmaop_vec_destroy(&p->b);
  rmaop_op_destroy(&p->A);
  free(p->storage);
  p->storage = NULL;
}
