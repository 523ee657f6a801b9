/* Tests of the multi-dimensional convolution (rmaop_op_create_mdc, PyLops-MPI MPIMDC).
 *
 * Reference: every rank builds the whole operator as a dense real matrix (data x model) from PyLops' definitions
 * written out with explicit DFT sums in double precision, never through FFTW or cuFFT: the model (nt, nr, nv) is
 * ifftshifted along time when twosided, transformed by the real DFT with norm "ortho" whose bins 1 .. (nt-1)/2 are
 * weighted by sqrt(2) (pylops FFT, real=True), cut to the first nfmax frequencies, multiplied slice by slice by
 * dr dt sqrt(nt) G (conj(G) with conj; G alone when prescaled; PyLops Fredholm1), and brought back by the inverse
 * real DFT with norm "ortho" and the bins divided by sqrt(2) (numpy's irfft: the real part of the sum, the zero
 * and Nyquist bins once). G's frequencies are split over the ranks unevenly (some ranks hold none). check_op
 * (op_test_util.c) compares y = A x with M x and x = A^H y with M^T y on every rank, begin/end with apply, and
 * runs the dot test; every G dtype (complex, and real kernels), twosided on and off, conj, prescaled, nfmax below,
 * equal to and above nt/2 + 1. Then the creation errors, on every rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_test_util.h"

typedef struct {
  int64_t nt, ns, nr, nv, nfmax; /* nfmax as passed; kept = min(nfmax, nt/2 + 1) */
  int twosided, conj, prescaled;
  double dt, dr;
  int split;                     /* 0: balanced frequencies, 1: all on the last rank, 2: rank 0 none */
} mdc_case;

typedef struct {
  const mdc_case *c;
  int64_t nf;
  double _Complex *K; /* the Fredholm1 kernel: nf x ns x nr, scaled and conjugated as PyLops-MPI does */
} mdc_ref;

static int64_t kept(const mdc_case *c) {
  return c->nfmax < c->nt / 2 + 1 ? c->nfmax : c->nt / 2 + 1;
}

/* Frequencies of rank r: balanced (split 0), all on the last rank (1), or none on rank 0 and the others balanced
 * (2). */
static int64_t freqs_of(const mdc_case *c, int r, int P) {
  const int64_t nf = kept(c);
  if (c->split == 1) return r == P - 1 ? nf : 0;
  if (c->split == 2 && P > 1) return r == 0 ? 0 : nf / (P - 1) + (r - 1 < nf % (P - 1));
  return nf / P + (r < nf % P);
}

/* G (nf x ns x nr, row-major) as the dtype holds it: series 3, the real parts for a real kernel. */
static double _Complex gval(rmaop_dtype d, int64_t i) {
  return rt_round(d, rt_value(i, 3));
}

/* y = MDC x, PyLops' chain with explicit sums (a serial_fn; cfg is an mdc_ref). */
static void mdc_serial(const void *cfg, const double _Complex *x, double _Complex *y) {
  const mdc_ref *R = cfg;
  const mdc_case *c = R->c;
  const int64_t nt = c->nt, nr = c->nr, ns = c->ns, nv = c->nv, nf = R->nf;
  double _Complex *X = calloc((size_t)(nf * nr * nv), sizeof *X), *Y = calloc((size_t)(nf * ns * nv), sizeof *Y);
  const double pi = acos(-1.0), norm = 1.0 / sqrt((double)nt);
  for (int64_t f = 0; f < nf; ++f) {
    const double w = f >= 1 && f <= (nt - 1) / 2 ? sqrt(2.0) : 1.0;
    for (int64_t rv = 0; rv < nr * nv; ++rv) {
      double _Complex acc = 0;
      for (int64_t t = 0; t < nt; ++t) {
        const int64_t src = c->twosided ? (t + nt / 2) % nt : t; /* numpy.fft.ifftshift */
        acc += creal(x[src * nr * nv + rv]) * cexp(-2.0 * I * pi * (double)(f * t % nt) / (double)nt);
      }
      X[f * nr * nv + rv] = w * norm * acc;
    }
  }
  for (int64_t f = 0; f < nf; ++f)
    for (int64_t s = 0; s < ns; ++s)
      for (int64_t v = 0; v < nv; ++v) {
        double _Complex acc = 0;
        for (int64_t r = 0; r < nr; ++r)
          acc += R->K[(f * ns + s) * nr + r] * X[(f * nr + r) * nv + v];
        Y[(f * ns + s) * nv + v] = acc;
      }
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t sv = 0; sv < ns * nv; ++sv) {
      double acc = 0;
      for (int64_t f = 0; f < nf; ++f) {
        const double w = f == 0 || (nt % 2 == 0 && f == nt / 2) ? 1.0 : sqrt(2.0);
        acc += w * creal(Y[f * ns * nv + sv] * cexp(2.0 * I * pi * (double)(f * t % nt) / (double)nt));
      }
      y[t * ns * nv + sv] = norm * acc;
    }
  free(X);
  free(Y);
}

static void check_case(const mdc_case *c, rmaop_dtype gd) {
  const int64_t nf = kept(c), mine = freqs_of(c, rt_rank, rt_size);
  int64_t off = 0;
  for (int r = 0; r < rt_rank; ++r)
    off += freqs_of(c, r, rt_size);
  /* this rank's G in its dtype, and the whole kernel of the reference */
  void *G = rt_alloc(gd, mine * c->ns * c->nr + 1);
  for (int64_t i = 0; i < mine * c->ns * c->nr; ++i)
    rt_store(gd, G, i, gval(gd, off * c->ns * c->nr + i));
  mdc_ref R = {c, nf, malloc((size_t)(nf * c->ns * c->nr + 1) * sizeof(double _Complex))};
  const double a = c->prescaled ? 1.0 : (c->dr == 0 ? 1 : c->dr) * (c->dt == 0 ? 1 : c->dt) * sqrt((double)c->nt);
  for (int64_t i = 0; i < nf * c->ns * c->nr; ++i)
    R.K[i] = c->conj ? conj(a * gval(gd, i)) : a * gval(gd, i);
  const rmaop_mdc_spec spec = {.dtype = gd, .nf_local = mine, .ns = c->ns, .nr = c->nr, .G = mine ? G : NULL,
                               .nt = c->nt, .nv = c->nv, .nfmax = c->nfmax, .dt = c->dt, .dr = c->dr,
                               .twosided = c->twosided, .conj = c->conj, .prescaled = c->prescaled};
  rmaop_op op = NULL;
  RT_OK(rmaop_op_create_mdc(ctx, &spec, &op));
  free(G);
  const int64_t nm = c->nt * c->nr * c->nv, nd = c->nt * c->ns * c->nv;
  mat M = mat_from_fn(nd, nm, mdc_serial, &R);
  const rmaop_dtype od = gd == RMAOP_F32 || gd == RMAOP_C64 ? RMAOP_F32 : RMAOP_F64;
  const local_shape shape = {nm, 0, nd, 0}; /* BROADCAST: every rank holds the whole model and data */
  char name[160];
  snprintf(name, sizeof name, "mdc G %s nt %lld nfmax %lld%s%s%s split %d", rmaop_dtype_name(gd), (long long)c->nt,
           (long long)c->nfmax, c->twosided ? " twosided" : "", c->conj ? " conj" : "", c->prescaled ? " prescaled" : "",
           c->split);
  check_op(op, &M, od, &shape, name);
  mat_free(&M);
  free(R.K);
  rmaop_op_destroy(&op);
}

static const mdc_case cases[] = {
    {.nt = 7, .ns = 3, .nr = 2, .nv = 2, .nfmax = 3, .twosided = 1, .dt = 0.5, .dr = 2.0, .split = 0},
    {.nt = 8, .ns = 2, .nr = 3, .nv = 1, .nfmax = 5, .conj = 1, .dt = 0.004, .dr = 10.0, .split = 1},
    {.nt = 6, .ns = 2, .nr = 2, .nv = 3, .nfmax = 10, .prescaled = 1, .split = 2},
    {.nt = 9, .ns = 1, .nr = 4, .nv = 2, .nfmax = 2, .twosided = 1, .conj = 1, .prescaled = 1, .split = 2},
    {.nt = 5, .ns = 4, .nr = 1, .nv = 1, .nfmax = 3, .twosided = 1, .dt = 0.25, .split = 0},
};

START_TEST(test_mdc_complex) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    check_case(&cases[k], RMAOP_C128);
    check_case(&cases[k], RMAOP_C64);
  }
}
END_TEST

/* A real kernel (PyLops-MPI accepts one: the operator is then real with a real Fredholm1 on complex spectra). */
START_TEST(test_mdc_real_kernel) {
  check_case(&cases[0], RMAOP_F64);
  check_case(&cases[1], RMAOP_F32);
}
END_TEST

/* ---- errors ---- */

static rmaop_mdc_spec good_spec(double _Complex *G, int64_t *nf_all) {
  /* nt 5: nt/2 + 1 = 3 frequencies, balanced */
  const int64_t nf = 3 / rt_size + (rt_rank < 3 % rt_size);
  *nf_all = 3;
  return (rmaop_mdc_spec){.dtype = RMAOP_C128, .nf_local = nf, .ns = 3, .nr = 2, .G = G, .nt = 5, .nv = 1,
                          .nfmax = 3, .twosided = 1};
}

START_TEST(test_mdc_errors) {
  double _Complex G[4 * 3 * 2] = {0}; /* room for a rank holding one too many */
  int64_t nf_all = 0;
  const rmaop_mdc_spec spec = good_spec(G, &nf_all);
  rmaop_op op = NULL;
  RT_OK(rmaop_op_create_mdc(ctx, &spec, &op)); /* the spec is good */
  rmaop_op_destroy(&op);

  rmaop_mdc_spec bad = spec;
  bad.nt = 6; /* even with twosided */
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("must be odd with twosided");
  bad = spec;
  bad.nfmax = 2; /* the ranks hold 3 */
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("the ranks hold 3 frequencies");
  bad = spec;
  bad.nf_local = rt_rank == 0 ? spec.nf_local + 1 : spec.nf_local; /* one too many in total */
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("the ranks hold 4 frequencies");
  bad = spec;
  bad.dtype = (rmaop_dtype)9;
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dtype");
  bad = spec;
  bad.nv = 0;
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("at least 1");
  bad = spec;
  bad.nf_local = -1;
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("negative");
  bad = spec;
  bad.ns = bad.nr = (int64_t)1 << 31; /* sizes whose products wrap around */
  bad.nt = (int64_t)1 << 31 | 1;
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("overflow");
  bad = spec;
  bad.dt = NAN;
  RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("not finite");
  /* bad input on one rank only: that rank names it, the others learn of it */
  bad = spec;
  if (rt_rank == 0) bad.G = NULL, bad.nf_local = 1;
  RT_EXPECT_ON(rmaop_op_create_mdc(ctx, &bad, &op), 0, RMAOP_ERR_ARG);
  RT_CHECK(rt_rank != 0 || strstr(rmaop_ctx_last_error(NULL), "G is NULL") != NULL, "rank 0's message: %s",
           rmaop_ctx_last_error(NULL));
  if (rt_size > 1) { /* options every rank passes alone but that differ between ranks */
    bad = spec;
    bad.conj = rt_rank == 1;
    RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("conj differs between ranks");
    bad = spec;
    bad.dt = rt_rank == 1 ? 2.0 : 1.0;
    RT_EXPECT(rmaop_op_create_mdc(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("dt differs between ranks");
  }
  RT_EXPECT(rmaop_op_create_mdc(ctx, NULL, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("spec is NULL");
  RT_EXPECT(rmaop_op_create_mdc(ctx, &spec, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("A (output) is NULL");
  RT_EXPECT(rmaop_op_create_mdc(NULL, &spec, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(op == NULL, "output written on failure");

  /* applying to vectors of the wrong shape: data and model swapped */
  RT_OK(rmaop_op_create_mdc(ctx, &spec, &op));
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(op, &info));
  RT_CHECK(info.dtype == RMAOP_F64, "a complex128 G gives a float64 operator, not %s", rmaop_dtype_name(info.dtype));
  rmaop_vec x = NULL, y = NULL;
  RT_OK(rmaop_vec_create(info.model, RMAOP_F64, &x));
  RT_OK(rmaop_vec_create(info.data, RMAOP_F64, &y));
  RT_EXPECT(rmaop_op_apply(op, y, x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x has");
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_op_destroy(&op);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("mdc");
  TCase *tc = tcase_create("mdc");
  tcase_add_checked_fixture(tc, op_setup, op_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_mdc_complex);
  tcase_add_test(tc, test_mdc_real_kernel);
  tcase_add_test(tc, test_mdc_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
