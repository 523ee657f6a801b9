/*
 * poststack.c -- post-stack seismic inversion in 3-D, the PyLops-MPI use case, on rmaop's operators (host memory).
 *
 *   mpiexec -n 2 ./rmaop-example-poststack [--ny 64] [--nx 64] [--nz 200] [--niter 40] [--eps 0.2]
 *                                          [--trace-out trace.json]
 *
 * The model is a log-impedance cube m(y, x, z) (z: time, the contiguous axis) split over the ranks along y. The
 * data are post-stack seismic traces d = 1/2 W D m: per trace the centred first derivative along time (PyLops'
 * FirstDerivative, kind "centered", edge False) convolved with a Ricker wavelet (PyLops Convolve1D, offset nh/2):
 * PyLops' PoststackLinearModelling, applied trace by trace as a block-diagonal operator (every rank its own
 * traces, no communication). A 3-D Laplacian couples neighbouring traces across ranks (halo exchanges along y) and
 * regularizes: the inversion solves min ||d - P m||^2 + eps^2 ||L m||^2 by CGLS on the stacked operator [P; eps L]
 * from a smooth background model m0, as PyLops-MPI's post-stack tutorial does with MPIBlockDiag, MPILaplacian and
 * MPIStackedVStack.
 *
 * It prints the dot test of [P; eps L], the time to solution, the iterations, the model error against the true
 * model (and the background's), and the communication per trace site (calls, messages, bytes). --trace-out writes
 * the sites as JSON for `rmaop-roofline run --trace FILE --profile profile.json`, which places each on the
 * machine's message roofline with a verdict (scripts/usecases.sh runs both). Exit status 0 when the dot test
 * passes (1e-12) and the inverted model is at least 30 % closer to the truth than the background was.
 */
#include <rmaop/rmaop.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_util.h" /* CHECK, g_rank, g_ctx, example_parse, example_print_sites */


typedef struct {
  int64_t ny, nx, nz;
  int niter;
  double eps;
  const char *trace_out;
} ps_args;

static const char usage[] = "usage: rmaop-example-poststack [--ny N] [--nx N] [--nz N] [--niter K] [--eps E] "
                            "[--trace-out FILE]\n";

static int parse_args(int argc, char **argv, ps_args *a) {
  *a = (ps_args){.ny = 64, .nx = 64, .nz = 200, .niter = 40, .eps = 0.2, .trace_out = NULL};
  const example_opt opts[] = {
      {"--ny", &a->ny, NULL, NULL, NULL, 1, 1LL << 20},       {"--nx", &a->nx, NULL, NULL, NULL, 1, 1LL << 20},
      {"--nz", &a->nz, NULL, NULL, NULL, 8, 1LL << 20},       {"--niter", NULL, &a->niter, NULL, NULL, 1, 100000},
      {"--eps", NULL, NULL, &a->eps, NULL, 0, 0},             {"--trace-out", NULL, NULL, NULL, &a->trace_out, 0, 0}};
  return example_parse("rmaop-example-poststack", usage, argc, argv, opts, (int)(sizeof opts / sizeof opts[0]));
}

/* ---- the per-trace modelling operator 1/2 W D (PyLops PoststackLinearModelling), as block callbacks ---- */

typedef struct {
  int64_t ntr, nz; /* this rank's traces, samples per trace */
  int nh;          /* wavelet length (odd), centred: offset nh / 2 */
  const double *wav;
  double *tmp;     /* nz: the derivative of one trace */
} ps_model;

/* y = W (D m) per trace: D centred, 0 at both ends; W: y[i] = sum_k wav[k] d[i + nh/2 - k]. */
static rmaop_status ps_apply(void *user, const void *xv, void *yv) {
  const ps_model *p = user;
  const double *x = xv;
  double *y = yv, *d = p->tmp;
  const int64_t nz = p->nz, off = p->nh / 2;
  for (int64_t t = 0; t < p->ntr; ++t) {
    const double *m = x + t * nz;
    double *out = y + t * nz;
    d[0] = d[nz - 1] = 0.0;
    for (int64_t i = 1; i < nz - 1; ++i)
      d[i] = 0.5 * (m[i + 1] - m[i - 1]);
    for (int64_t i = 0; i < nz; ++i) {
      double s = 0.0;
      for (int k = 0; k < p->nh; ++k) {
        const int64_t j = i + off - k;
        if (j >= 0 && j < nz)
          s += p->wav[k] * d[j];
      }
      out[i] = s;
    }
  }
  return RMAOP_OK;
}

/* x = D^T (W^T y) per trace. */
static rmaop_status ps_adjoint(void *user, const void *yv, void *xv) {
  const ps_model *p = user;
  const double *y = yv;
  double *x = xv, *d = p->tmp;
  const int64_t nz = p->nz, off = p->nh / 2;
  for (int64_t t = 0; t < p->ntr; ++t) {
    const double *in = y + t * nz;
    double *m = x + t * nz;
    for (int64_t j = 0; j < nz; ++j) {
      double s = 0.0;
      for (int k = 0; k < p->nh; ++k) {
        const int64_t i = j - off + k;
        if (i >= 0 && i < nz)
          s += p->wav[k] * in[i];
      }
      d[j] = s;
    }
    for (int64_t i = 0; i < nz; ++i)
      m[i] = 0.0;
    for (int64_t j = 1; j < nz - 1; ++j) {
      m[j + 1] += 0.5 * d[j];
      m[j - 1] -= 0.5 * d[j];
    }
  }
  return RMAOP_OK;
}

/* ---- the synthetic model ---- */

/* Log-impedance at global (y, x, z): a compaction trend, three layers whose depths dip with x and y, and a
 * lens. Smooth background m0: the trend and the layers' mean steps smeared over ~25 samples. */
static double ps_true(const ps_args *a, int64_t iy, int64_t ix, int64_t iz) {
  const double y = (double)iy / (double)a->ny, x = (double)ix / (double)a->nx, z = (double)iz / (double)a->nz;
  double m = 8.5 + 0.6 * z;
  const double tops[3] = {0.25 + 0.08 * x + 0.03 * y, 0.5 - 0.05 * x + 0.06 * y, 0.72 + 0.04 * sin(6.0 * x + 3.0 * y)};
  const double steps[3] = {0.15, -0.10, 0.20};
  for (int l = 0; l < 3; ++l)
    if (z > tops[l])
      m += steps[l];
  const double r2 = (x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5);
  if (r2 < 0.04 && fabs(z - 0.6) < 0.03)
    m -= 0.12;
  return m;
}

static double ps_background(const ps_args *a, int64_t iy, int64_t ix, int64_t iz) {
  const int64_t half = 12;
  double s = 0.0;
  int n = 0;
  for (int64_t k = iz - half; k <= iz + half; ++k)
    if (k >= 0 && k < a->nz) {
      s += ps_true(a, iy, ix, k);
      ++n;
    }
  return s / n;
}

/* Ricker wavelet of peak frequency f0 (Hz) at dt (s), nh samples, centred. */
static void ricker(double *w, int nh, double f0, double dt) {
  for (int k = 0; k < nh; ++k) {
    const double t = (k - nh / 2) * dt, a = 3.14159265358979323846 * f0 * t;
    w[k] = (1.0 - 2.0 * a * a) * exp(-a * a);
  }
}

typedef double (*ps_field)(const ps_args *, int64_t, int64_t, int64_t);

static void fill(rmaop_vec v, const ps_args *a, int64_t y0, int64_t nyl, ps_field f) {
  double *p = NULL;
  CHECK(rmaop_vec_get_array(v, (void **)&p));
  for (int64_t y = 0; y < nyl; ++y)
    for (int64_t x = 0; x < a->nx; ++x)
      for (int64_t z = 0; z < a->nz; ++z)
        p[(y * a->nx + x) * a->nz + z] = f(a, y0 + y, x, z);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  ps_args a;
  if (!parse_args(argc, argv, &a)) {
    MPI_Finalize();
    return 2;
  }
  rmaop_ctx ctx = NULL;
  CHECK(rmaop_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  g_ctx = ctx;
  rmaop_ctx_info ci;
  CHECK(rmaop_ctx_get_info(ctx, &ci));

  /* The y split: PyLops-MPI's balanced split, as the Laplacian's grid makes it (local_rows = -1). */
  rmaop_layout rows = NULL;
  CHECK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, a.ny, &rows));
  int64_t nyl = 0, y0 = 0;
  CHECK(rmaop_layout_rank_range(rows, ci.rank, &nyl, &y0));
  rmaop_layout_destroy(&rows);

  /* P = 1/2 W D per trace (block diagonal; the 1/2 is in D). */
  enum { NH = 41 };
  double wav[NH];
  ricker(wav, NH, 20.0, 0.004);
  double *tmp = malloc((size_t)a.nz * sizeof *tmp);
  if (!tmp) {
    fprintf(stderr, "[rank %d] out of memory\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ps_model pm = {.ntr = nyl * a.nx, .nz = a.nz, .nh = NH, .wav = wav, .tmp = tmp};
  const int64_t nloc = nyl * a.nx * a.nz;
  rmaop_block blk = {.nrows = nloc, .ncols = nloc, .apply = ps_apply, .apply_adjoint = ps_adjoint, .user = &pm};
  rmaop_op P = NULL, L = NULL, epsL = NULL, A = NULL;
  CHECK(rmaop_op_create_blockdiag(ctx, RMAOP_F64, &blk, &P));

  /* eps L: the 3-D Laplacian over (y, x, z), halo exchanges along y. */
  rmaop_laplacian_spec ls = {.grid = {.ndim = 3, .dims = {a.ny, a.nx, a.nz}, .local_rows = -1},
                             .naxes = 3,
                             .axes = {0, 1, 2},
                             .kind = RMAOP_DERIV_CENTERED3,
                             .dtype = RMAOP_F64,
                             .label = "laplacian"};
  CHECK(rmaop_op_create_laplacian(ctx, &ls, &L));
  CHECK(rmaop_op_create_scaled(L, a.eps, &epsL));
  const rmaop_op parts[2] = {P, epsL};
  CHECK(rmaop_op_create_stacked_vstack(2, parts, &A));
  double dot_err = 0.0;
  CHECK(rmaop_op_dottest(A, 7, &dot_err));

  /* The truth, the background, and the data [P m_true; 0]. */
  rmaop_op_info ai;
  CHECK(rmaop_op_get_info(A, &ai));
  rmaop_vec mt = NULL, m0 = NULL, m = NULL, d = NULL, d0 = NULL;
  CHECK(rmaop_vec_create(ai.model, RMAOP_F64, &mt));
  CHECK(rmaop_vec_duplicate(mt, &m0));
  CHECK(rmaop_vec_duplicate(mt, &m));
  fill(mt, &a, y0, nyl, ps_true);
  fill(m0, &a, y0, nyl, ps_background);
  CHECK(rmaop_vec_create(ai.data, RMAOP_F64, &d));
  CHECK(rmaop_vec_stack_part(d, 0, &d0));
  CHECK(rmaop_op_apply(P, mt, d0));

  /* CGLS from the background, traced. */
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = a.niter;
  o.x0 = m0;
  rmaop_solver_info info;
  CHECK(rmaop_trace_reset(ctx));
  CHECK(rmaop_trace_enable(ctx, RMAOP_TRACE_ON));
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  CHECK(rmaop_solve_cgls(A, d, m, &o, &info));
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK(rmaop_trace_enable(ctx, RMAOP_TRACE_OFF));

  /* Errors: ||m - m_true|| and ||m0 - m_true||, relative to ||m_true||. */
  double nt = 0.0, e0 = 0.0, e = 0.0;
  CHECK(rmaop_vec_norm2(mt, &nt));
  CHECK(rmaop_vec_axpy(m0, -1.0, mt));
  CHECK(rmaop_vec_norm2(m0, &e0));
  CHECK(rmaop_vec_axpy(m, -1.0, mt));
  CHECK(rmaop_vec_norm2(m, &e));
  const int ok = dot_err < 1e-12 && e <= 0.7 * e0;
  if (ci.rank == 0) {
    printf("post-stack inversion: %d ranks, backend %s (sync %s, transport %s); model %lld x %lld x %lld, "
           "eps %g\n",
           ci.size, ci.backend, rmaop_sync_name(ci.rma.sync), rmaop_transport_name(ci.rma.transport),
           (long long)a.ny, (long long)a.nx, (long long)a.nz, a.eps);
    printf("dot test of [P; eps L]: relative error %.2e\n", dot_err);
    printf("CGLS: %d iterations in %.3f s (%.3f ms per iteration; %.3f s in communication on rank 0), "
           "residual %.4e -> %.4e\n",
           info.iterations, t, 1e3 * t / (info.iterations ? info.iterations : 1), info.time_comm, info.history[0],
           info.history[info.iterations]);
    printf("model error ||m - m_true|| / ||m_true||: background %.4e, inverted %.4e\n", e0 / nt, e / nt);
  }
  example_print_sites(ctx, ci.rank);
  if (a.trace_out) {
    CHECK(rmaop_trace_write_json(ctx, a.trace_out));
    if (ci.rank == 0)
      printf("trace: %s (rmaop-roofline run --trace %s --profile profile.json)\n", a.trace_out, a.trace_out);
  }
  if (ci.rank == 0)
    printf("%s\n", ok ? "OK" : "FAILED");

  rmaop_solver_info_destroy(&info);
  rmaop_vec_destroy(&d0);
  rmaop_vec_destroy(&d);
  rmaop_vec_destroy(&m);
  rmaop_vec_destroy(&m0);
  rmaop_vec_destroy(&mt);
  rmaop_op_destroy(&A);
  rmaop_op_destroy(&epsL);
  rmaop_op_destroy(&L);
  rmaop_op_destroy(&P);
  free(tmp);
  rmaop_ctx_destroy(&ctx);
  MPI_Finalize();
  return ok ? 0 : 1;
}
