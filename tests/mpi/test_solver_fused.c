/* Tests of the fused application the host solvers use (src/ops/op_impl.h: rmaop__op_apply_fused; the stencil
 * operators' one-pass update + apply + dots, src/ops/op_stencil.c; sum, product and adjoint, src/ops/op.c) and of
 * CG and CGLS through it. References: the unfused calls on copies of the same vectors (rmaop_vec_axpby for the
 * update, rmaop_op_apply or _adjoint) and rmaop_vec_mdot of the results for the dots; the same solves through
 * the operator scaled by 1, which lacks the fused slot (the operator's own arithmetic, then rmaop_vec_mdot's
 * partials). Pipelined CG's and LSQR's fused host passes against the public calls in their order, bit for bit. Rows are
 * split unevenly (ranks with 2, 0, 1 rows and the rest), f32 / f64 / c64 / c128. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_impl.h"
#include "rmaop_test.h"
#include "solvers/lsqr_scalars.h"

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

/* Rows of this rank for N rows along axis 0: 2, 0, 1, ... and the rest on the last rank (uneven = 1), or -1
 * (balanced). */
static int64_t split_rows(int64_t N, int uneven) {
  if (!uneven)
    return -1;
  if (rt_size == 1)
    return N;
  static const int64_t head[3] = {2, 0, 1};
  int64_t used = 0;
  for (int r = 0; r < rt_size - 1; ++r)
    used += head[r % 3];
  return rt_rank == rt_size - 1 ? N - used : head[rt_rank % 3];
}

/* D^H D + diag(1 + i / 10): SPD, a sum of a product and a diagonal (bench's derivspd, with another diagonal). */
static rmaop_op spd_composite(rmaop_op D) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(D, &oi));
  rmaop_op DH = NULL, DHD = NULL, G = NULL, A = NULL;
  rmaop_vec g = NULL;
  RT_OK(rmaop_vec_create(oi.model, oi.dtype, &g));
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(g, &vi));
  void *h = rt_alloc(oi.dtype, vi.local_n);
  for (int64_t i = 0; i < vi.local_n; ++i)
    rt_store(oi.dtype, h, i, 1.0 + 0.1 * (double)(vi.offset + i));
  RT_OK(rmaop_vec_write_local(g, h));
  free(h);
  RT_OK(rmaop_op_create_adjoint(D, &DH));
  RT_OK(rmaop_op_create_product(DH, D, &DHD));
  RT_OK(rmaop_op_create_diagonal(g, &G));
  RT_OK(rmaop_op_create_sum(2, (rmaop_op[]){DHD, G}, &A));
  rmaop_vec_destroy(&g);
  rmaop_op_destroy(&G), rmaop_op_destroy(&DHD), rmaop_op_destroy(&DH);
  return A;
}

/* The operators under test, in dtype d (`what` names the i-th; returns NULL past the last). */
static rmaop_op make_op(int i, rmaop_dtype d, char *what, size_t wn) {
  rmaop_op A = NULL;
  const int uneven = i % 2 == 0;
  if (i < 8) { /* 1-D first derivative: every kind, edge on and off */
    const rmaop_deriv_kind kinds[4] = {RMAOP_DERIV_FORWARD, RMAOP_DERIV_BACKWARD, RMAOP_DERIV_CENTERED3,
                                       RMAOP_DERIV_CENTERED5};
    rmaop_deriv_spec s = {.grid = {.ndim = 1, .dims = {23}, .local_rows = split_rows(23, uneven)},
                          .axis = 0,
                          .kind = kinds[i % 4],
                          .edge = i / 4,
                          .sampling = 0.5,
                          .dtype = d};
    snprintf(what, wn, "first derivative 1-D kind %d edge %d", (int)s.kind, s.edge);
    RT_OK(rmaop_op_create_first_derivative(ctx, &s, &A));
  } else if (i < 10) { /* second derivative */
    rmaop_deriv_spec s = {.grid = {.ndim = 1, .dims = {19}, .local_rows = split_rows(19, uneven)},
                          .axis = 0,
                          .kind = i == 8 ? RMAOP_DERIV_CENTERED3 : RMAOP_DERIV_FORWARD,
                          .edge = i == 8,
                          .sampling = 1.5,
                          .dtype = d};
    snprintf(what, wn, "second derivative 1-D kind %d edge %d", (int)s.kind, s.edge);
    RT_OK(rmaop_op_create_second_derivative(ctx, &s, &A));
  } else if (i < 12) { /* 2-D, along the distributed axis (rows of 7) and along the local one (blocks) */
    rmaop_deriv_spec s = {.grid = {.ndim = 2, .dims = {9, 7}, .local_rows = split_rows(9, 1)},
                          .axis = i - 10,
                          .kind = RMAOP_DERIV_CENTERED5,
                          .edge = 1,
                          .dtype = d};
    snprintf(what, wn, "first derivative 2-D along axis %d", s.axis);
    RT_OK(rmaop_op_create_first_derivative(ctx, &s, &A));
  } else if (i < 15) { /* Laplacians: one part, 2-D (axis 0 last; rows enough that the row-by-row host path
                        * updates rows inside its sweep), 3-D (axis 0 between two local axes) */
    rmaop_laplacian_spec s = {.kind = RMAOP_DERIV_CENTERED3,
                              .edge = i == 13,
                              .dtype = d,
                              .weights = {1.0, -2.0, 0.5},
                              .sampling = {1.0, 2.0, 1.0}};
    if (i == 12)
      s.grid = (rmaop_grid){.ndim = 1, .dims = {17}, .local_rows = split_rows(17, 1)}, s.naxes = 1;
    else if (i == 13)
      s.grid = (rmaop_grid){.ndim = 2, .dims = {20, 6}, .local_rows = split_rows(20, 1)}, s.naxes = 2, s.axes[0] = 0,
      s.axes[1] = 1;
    else
      s.grid = (rmaop_grid){.ndim = 3, .dims = {7, 4, 5}, .local_rows = split_rows(7, 1)}, s.naxes = 3, s.axes[0] = 0,
      s.axes[1] = 1, s.axes[2] = 2;
    snprintf(what, wn, "laplacian %d-D", s.grid.ndim);
    RT_OK(rmaop_op_create_laplacian(ctx, &s, &A));
  } else if (i == 15) { /* a composite: no fused slot, the fallback */
    rmaop_deriv_spec s = {.grid = {.ndim = 1, .dims = {21}, .local_rows = split_rows(21, 1)},
                          .axis = 0,
                          .kind = RMAOP_DERIV_CENTERED3,
                          .dtype = d};
    rmaop_op D = NULL, DH = NULL;
    RT_OK(rmaop_op_create_first_derivative(ctx, &s, &D));
    RT_OK(rmaop_op_create_adjoint(D, &DH));
    RT_OK(rmaop_op_create_adjoint(DH, &A));
    rmaop_op_destroy(&DH);
    rmaop_op_destroy(&D);
    snprintf(what, wn, "adjoint of the adjoint of a derivative");
  } else if (i == 18) { /* a Laplacian along local axes only (the last part takes the sums) */
    rmaop_laplacian_spec s = {.grid = {.ndim = 3, .dims = {5, 6, 4}, .local_rows = split_rows(5, 1)},
                              .naxes = 2,
                              .axes = {1, 2},
                              .weights = {0.5, 1.5},
                              .sampling = {1.0, 1.0},
                              .kind = RMAOP_DERIV_CENTERED3,
                              .dtype = d};
    snprintf(what, wn, "laplacian 3-D along axes 1 and 2");
    RT_OK(rmaop_op_create_laplacian(ctx, &s, &A));
  } else if (i == 16 || i == 17) { /* scaled (no fused slot: the fallback); D^H D + diag (sum, product) */
    rmaop_deriv_spec s = {.grid = {.ndim = 1, .dims = {26}, .local_rows = split_rows(26, 1)},
                          .axis = 0,
                          .kind = RMAOP_DERIV_CENTERED3,
                          .dtype = d};
    rmaop_op D = NULL;
    RT_OK(rmaop_op_create_first_derivative(ctx, &s, &D));
    if (i == 16) {
      RT_OK(rmaop_op_create_scaled(D, rt_is_complex(d) ? CMPLX(0.5, 1.5) : -1.5, &A));
      snprintf(what, wn, "scaled derivative (no fused slot)");
    } else {
      A = spd_composite(D);
      snprintf(what, wn, "D^H D + diag");
    }
    rmaop_op_destroy(&D);
  }
  return A;
}

/* Largest |a_i - b_i| and largest |b_i| over this rank's elements. */
static void vec_diff(rmaop_vec a, rmaop_vec b, double *diff, double *big) {
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(a, &vi));
  void *ha = rt_alloc(vi.dtype, vi.local_n), *hb = rt_alloc(vi.dtype, vi.local_n);
  RT_OK(rmaop_vec_read_local(a, ha));
  RT_OK(rmaop_vec_read_local(b, hb));
  *diff = *big = 0.0;
  for (int64_t i = 0; i < vi.local_n; ++i) {
    *big = fmax(*big, cabs(rt_load(vi.dtype, hb, i)));
    *diff = fmax(*diff, cabs(rt_load(vi.dtype, ha, i) - rt_load(vi.dtype, hb, i)));
  }
  free(ha), free(hb);
}

static rmaop_vec series(rmaop_layout l, rmaop_dtype d, int s) {
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(v, &vi));
  void *h = rt_alloc(d, vi.local_n);
  for (int64_t i = 0; i < vi.local_n; ++i)
    rt_store(d, h, i, rt_value(vi.offset + i, s));
  RT_OK(rmaop_vec_write_local(v, h));
  free(h);
  return v;
}

/* One fused application against the unfused calls: the updated input (bit for bit), the output (to the
 * dtype's tolerance: a 3-D Laplacian adds its parts in another order) and the reduced partial sums against
 * rmaop_vec_mdot of the fused call's vectors (1e-12: both sum the same double products, in another order). */
static void check_fused(rmaop_op A, rmaop_dtype d, int adjoint, int update, const char *what) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(A, &oi));
  rmaop_layout lin = adjoint ? oi.data : oi.model, lout = adjoint ? oi.model : oi.data;
  rmaop_vec in = series(lin, d, 1), inr = series(lin, d, 1), u = series(lin, d, 2), out = series(lout, d, 3),
            outr = series(lout, d, 4), w = series(lin, d, 6), wr = series(lin, d, 6);
  const double _Complex alpha = rt_is_complex(d) ? CMPLX(0.7, -0.2) : 0.7,
                        beta = rt_is_complex(d) ? CMPLX(-1.3, 0.4) : -1.3;
  const double gamma = 0.45;
  /* with the update also w += gamma in (in before the update): CGLS's x += a c */
  const rmaop__fuse f = {.u = update ? u : NULL,
                         .alpha = alpha,
                         .beta = beta,
                         .w = update ? w : NULL,
                         .gamma = gamma,
                         .want = RMAOP__WANT_OUT2 | RMAOP__WANT_IN2 | RMAOP__WANT_INOUT};
  double sums[RMAOP__NSUMS], red[RMAOP__NSUMS];
  RT_OK(rmaop__op_apply_fused(A, adjoint, in, out, &f, sums));
  RT_OK(rmaop_allreduce(ctx, sums, red, RMAOP__NSUMS, RMAOP_SUM, "test sums"));
  if (update) {
    RT_OK(rmaop_vec_axpy(wr, gamma, inr));
    RT_OK(rmaop_vec_axpby(inr, alpha, beta, u));
  }
  RT_OK(adjoint ? rmaop_op_apply_adjoint(A, inr, outr) : rmaop_op_apply(A, inr, outr));
  double _Complex dots[3];
  RT_OK(rmaop_vec_mdot(3, (rmaop_vec[]){out, in, in}, (rmaop_vec[]){out, in, out}, dots)); /* of the results */
  double diff, big;
  vec_diff(in, inr, &diff, &big);
  RT_CHECK(diff == 0.0, "%s (%s, %s, update %d): the updated input differs by %.3g", what, rmaop_dtype_name(d),
           adjoint ? "adjoint" : "forward", update, diff);
  vec_diff(w, wr, &diff, &big);
  RT_CHECK(diff == 0.0, "%s (%s, %s, update %d): w (w += gamma in) differs by %.3g", what, rmaop_dtype_name(d),
           adjoint ? "adjoint" : "forward", update, diff);
  vec_diff(out, outr, &diff, &big);
  RT_CHECK(diff <= rt_tol(d) * (big + 1e-300), "%s (%s, %s, update %d): the output differs by %.3g (largest %.3g)",
           what, rmaop_dtype_name(d), adjoint ? "adjoint" : "forward", update, diff, big);
  const double _Complex want[3] = {dots[0], dots[1], dots[2]};
  const double _Complex got[3] = {red[RMAOP__SUM_OUT2], red[RMAOP__SUM_IN2],
                                  CMPLX(red[RMAOP__SUM_INOUT_RE], red[RMAOP__SUM_INOUT_IM])};
  const double scale = sqrt(creal(dots[0]) * creal(dots[1])); /* |in . out| <= |in| |out| */
  static const char *names[3] = {"|out|^2", "|in|^2", "in . out"};
  for (int k = 0; k < 3; ++k)
    RT_CHECK(rt_close(got[k], want[k], 1e-12, k == 2 ? scale : 0.0),
             "%s (%s, %s, update %d): %s = %.17g%+.17gi fused, %.17g%+.17gi by rmaop_vec_mdot", what,
             rmaop_dtype_name(d), adjoint ? "adjoint" : "forward", update, names[k], creal(got[k]), cimag(got[k]),
             creal(want[k]), cimag(want[k]));
  RT_CHECK(rt_same_everywhere(red, sizeof red), "%s: the reduced sums differ between ranks", what);
  rmaop_vec_destroy(&in), rmaop_vec_destroy(&inr), rmaop_vec_destroy(&u);
  rmaop_vec_destroy(&out), rmaop_vec_destroy(&outr), rmaop_vec_destroy(&w), rmaop_vec_destroy(&wr);
}

START_TEST(test_fused_apply) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = rt_dtypes[k];
    char what[128];
    rmaop_op A;
    for (int i = 0; (A = make_op(i, d, what, sizeof what)) != NULL; ++i) {
      if (rt_device()) { /* device contexts keep apply + reduce: the fused call refuses, naming why */
        rmaop_op_info oi;
        RT_OK(rmaop_op_get_info(A, &oi));
        rmaop_vec in = series(oi.model, d, 1), out = series(oi.data, d, 2);
        double sums[RMAOP__NSUMS];
        RT_EXPECT(rmaop__op_apply_fused(A, 0, in, out, &(rmaop__fuse){.want = RMAOP__WANT_OUT2}, sums),
                  RT_BIT(RMAOP_ERR_UNSUPPORTED));
        RT_MESSAGE_HAS("host memory");
        rmaop_vec_destroy(&in), rmaop_vec_destroy(&out);
      } else {
        for (int adjoint = 0; adjoint < 2; ++adjoint)
          for (int update = 0; update < 2; ++update)
            check_fused(A, d, adjoint, update, what);
      }
      rmaop_op_destroy(&A);
    }
  }
}
END_TEST

START_TEST(test_fused_errors) {
  char what[128];
  rmaop_op A = make_op(2, RMAOP_F64, what, sizeof what);
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(A, &oi));
  rmaop_vec in = series(oi.model, RMAOP_F64, 1), out = series(oi.data, RMAOP_F64, 2);
  double sums[RMAOP__NSUMS];
  const unsigned bad = RT_BIT(RMAOP_ERR_ARG) | (rt_device() ? RT_BIT(RMAOP_ERR_UNSUPPORTED) : 0);
  RT_EXPECT(rmaop__op_apply_fused(A, 0, in, out, NULL, sums), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop__op_apply_fused(A, 0, in, in, &(rmaop__fuse){0}, sums), RT_BIT(RMAOP_ERR_ARG));
  /* the update's vector must not be the input; w needs an update and its own memory */
  RT_EXPECT(rmaop__op_apply_fused(A, 0, in, out, &(rmaop__fuse){.u = in, .alpha = 1.0}, sums), bad);
  RT_EXPECT(rmaop__op_apply_fused(A, 0, in, out, &(rmaop__fuse){.w = out, .gamma = 1.0}, sums), bad);
  rmaop_vec_destroy(&in), rmaop_vec_destroy(&out);
  rmaop_op_destroy(&A);
}
END_TEST

/* CG or CGLS on A (fused slot) and on B (the same operator without one): same iterations and reason, histories
 * within 1e-12 relative (f64, c128; 1e-5 for f32, c64, whose vectors round the slightly different scalars to
 * single precision), x within 100 times that. */
static void compare_solves(rmaop_op A, rmaop_op B, rmaop_dtype d, int cgls, rmaop_solver_options o, const char *what) {
  rmaop_op ops[2] = {A, B};
  rmaop_solver_info info[2];
  rmaop_vec x[2], y[2];
  for (int c = 0; c < 2; ++c) {
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(ops[c], &oi));
    y[c] = series(oi.data, d, 3);
    x[c] = series(oi.model, d, 5);
    memset(&info[c], 0, sizeof info[c]);
    RT_OK(cgls ? rmaop_solve_cgls(ops[c], y[c], x[c], &o, &info[c]) : rmaop_solve_cg(ops[c], y[c], x[c], &o, &info[c]));
  }
  const double tol = rt_tol(d) < 1e-10 ? 1e-12 : 1e-5;
  RT_CHECK(info[0].iterations == info[1].iterations && info[0].reason == info[1].reason,
           "%s: fused %d iterations (reason %d), unfused %d (reason %d)", what, info[0].iterations, (int)info[0].reason,
           info[1].iterations, (int)info[1].reason);
  for (int i = 0; i <= info[0].iterations && i <= info[1].iterations; ++i)
    RT_CHECK(fabs(info[0].history[i] - info[1].history[i]) <= tol * info[1].history[i],
             "%s: history[%d] %.17g fused, %.17g unfused", what, i, info[0].history[i], info[1].history[i]);
  double diff, big;
  vec_diff(x[0], x[1], &diff, &big);
  /* x sums the step sizes' rounding in its least determined directions: 100 x the histories' tolerance */
  RT_CHECK(diff <= 100 * tol * (big + 1e-300), "%s: x differs by %.3g (largest |x| %.3g)", what, diff, big);
  for (int c = 0; c < 2; ++c) {
    rmaop_solver_info_destroy(&info[c]);
    rmaop_vec_destroy(&x[c]), rmaop_vec_destroy(&y[c]);
  }
}

/* A scaled by 1 (exact): A's arithmetic without a fused slot (the scaled operator has none). */
static rmaop_op unfused(rmaop_op A) {
  rmaop_op B = NULL;
  RT_OK(rmaop_op_create_scaled(A, 1.0, &B));
  return B;
}

START_TEST(test_fused_cgls) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = rt_dtypes[k];
    char what[200], name[128];
    static const int cases[] = {0, 3, 6, 9, 10, 11, 12, 13, 14, 15, 17, 18}; /* derivatives, Laplacians, composites */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
      rmaop_op A = make_op(cases[c], d, name, sizeof name), B = unfused(A);
      rmaop_solver_options o;
      rmaop_solver_options_init(&o);
      o.niter = 8;
      snprintf(what, sizeof what, "CGLS on %s (%s)", name, rmaop_dtype_name(d));
      compare_solves(A, B, d, 1, o, what);
      o.damp = 0.3;
      snprintf(what, sizeof what, "damped CGLS on %s (%s)", name, rmaop_dtype_name(d));
      compare_solves(A, B, d, 1, o, what);
      rmaop_op_destroy(&B), rmaop_op_destroy(&A);
    }
  }
  /* a tolerance that stops both at the same iteration: just above kold after 3 iterations */
  char name[128];
  rmaop_op A = make_op(2, RMAOP_F64, name, sizeof name), B = unfused(A);
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(A, &oi));
  rmaop_vec y = series(oi.data, RMAOP_F64, 3), x = series(oi.model, RMAOP_F64, 5);
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = 3;
  rmaop_solver_info info;
  memset(&info, 0, sizeof info);
  RT_OK(rmaop_solve_cgls(A, y, x, &o, &info));
  o.niter = 40, o.tol = info.kold * (1.0 + 1e-9);
  rmaop_solver_info_destroy(&info);
  RT_OK(rmaop_solve_cgls(B, y, x, &o, &info));
  RT_CHECK(info.reason == RMAOP_REASON_TOL && info.iterations == 3, "CGLS with tol: %d iterations, reason %d",
           info.iterations, (int)info.reason);
  rmaop_solver_info_destroy(&info);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y);
  compare_solves(A, B, RMAOP_F64, 1, o, "CGLS stopped by tol");
  rmaop_op_destroy(&B), rmaop_op_destroy(&A);
}
END_TEST

/* CG on minus a Laplacian (second differences, edges on: the fused slot with c . Ac) and on D^H D + diag (the
 * composites' fused slots) against the same solves without a slot. */
START_TEST(test_fused_cg) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = rt_dtypes[k];
    for (int dims = 1; dims <= 2; ++dims) {
      rmaop_laplacian_spec s = {
          .kind = RMAOP_DERIV_CENTERED3, .edge = 1, .dtype = d, .naxes = dims, .weights = {-1.0, -0.5}, .axes = {0, 1}};
      s.grid = dims == 1 ? (rmaop_grid){.ndim = 1, .dims = {29}, .local_rows = split_rows(29, 1)}
                         : (rmaop_grid){.ndim = 2, .dims = {9, 5}, .local_rows = split_rows(9, 1)};
      rmaop_op A = NULL;
      RT_OK(rmaop_op_create_laplacian(ctx, &s, &A));
      rmaop_op B = unfused(A);
      rmaop_solver_options o;
      rmaop_solver_options_init(&o);
      o.niter = 6;
      char what[128];
      snprintf(what, sizeof what, "CG on -laplacian %d-D (%s)", dims, rmaop_dtype_name(d));
      compare_solves(A, B, d, 0, o, what);
      rmaop_op_destroy(&B), rmaop_op_destroy(&A);
    }
    char name[128], what[200];
    rmaop_op A = make_op(17, d, name, sizeof name), B = unfused(A); /* composites: sum, product, adjoint */
    rmaop_solver_options o;
    rmaop_solver_options_init(&o);
    o.niter = 12;
    snprintf(what, sizeof what, "CG on %s (%s)", name, rmaop_dtype_name(d));
    compare_solves(A, B, d, 0, o, what);
    rmaop_op_destroy(&B), rmaop_op_destroy(&A);
  }
}
END_TEST

/* A 2-D Laplacian (-1, -0.5 on the axes), rows split unevenly, larger than a block of the fused host passes. */
static rmaop_op big_laplacian(rmaop_dtype d) {
  rmaop_laplacian_spec ls = {.kind = RMAOP_DERIV_CENTERED3,
                             .edge = 1,
                             .dtype = d,
                             .naxes = 2,
                             .weights = {-1.0, -0.5},
                             .axes = {0, 1},
                             .grid = {.ndim = 2, .dims = {301, 7}, .local_rows = split_rows(301, 1)}};
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_laplacian(ctx, &ls, &A));
  return A;
}

/* A solve (info, x) against the public calls' (hist[0..its], xc): the same count, history and x, bit for bit. */
static void same_solve(const char *what, const rmaop_solver_info *info, const double *hist, int its, rmaop_vec x,
                       rmaop_vec xc) {
  RT_CHECK(info->iterations == its, "%s: %d iterations, the calls %d", what, info->iterations, its);
  for (int i = 0; i <= its && i <= info->iterations; ++i)
    RT_CHECK(info->history[i] == hist[i], "%s: history[%d] %.17g, the calls %.17g", what, i, info->history[i], hist[i]);
  double diff, big;
  vec_diff(x, xc, &diff, &big);
  RT_CHECK(diff == 0.0, "%s: x differs by %.3g (largest |x| %.3g)", what, diff, big);
}

/* Pipelined CG from the public calls, the host loop's order (src/solvers/solver_krylov.c: rmaop_vec_mdot_begin
 * of {r.r, w.r} around q = A w, the six rmaop_vec_axpby / rmaop_vec_axpy updates, the residual replacement every
 * rr-th iteration), x0 = 0, tol = 0: hist[0..*its]. */
static void pipecg_calls(rmaop_op A, rmaop_vec y, rmaop_vec x, int niter, int rr, double *hist, int *its) {
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(x, &vi));
  rmaop_vec r, w, q, z, s, p;
  rmaop_vec *all[6] = {&r, &w, &q, &z, &s, &p};
  for (int i = 0; i < 6; ++i) {
    RT_OK(rmaop_vec_create(vi.layout, vi.dtype, all[i]));
    RT_OK(rmaop_vec_set(*all[i], 0.0));
  }
  RT_OK(rmaop_vec_set(x, 0.0));
  RT_OK(rmaop_vec_copy(y, r));
  RT_OK(rmaop_op_apply(A, r, w));
  double gamma_old = 0, alpha_old = 0;
  for (int k = 0;; ++k) {
    double _Complex d[2];
    rmaop_vec dx[2] = {r, w}, dy[2] = {r, r};
    rmaop_request req = NULL;
    RT_OK(rmaop_vec_mdot_begin(2, dx, dy, d, &req));
    if (k < niter) {
      RT_OK(rmaop_op_apply_begin(A, w, q));
      RT_OK(rmaop_op_apply_end(A));
    }
    RT_OK(rmaop_request_wait(&req));
    const double gamma = creal(d[0]), delta = creal(d[1]);
    hist[k] = sqrt(gamma), *its = k;
    if (gamma <= 0.0 || k == niter)
      break;
    const double beta = k == 0 ? 0.0 : gamma / gamma_old, den = k == 0 ? delta : delta - beta * gamma / alpha_old;
    const double alpha = gamma / den;
    RT_OK(rmaop_vec_axpby(z, 1.0, beta, q));
    RT_OK(rmaop_vec_axpby(s, 1.0, beta, w));
    RT_OK(rmaop_vec_axpby(p, 1.0, beta, r));
    RT_OK(rmaop_vec_axpy(x, alpha, p));
    RT_OK(rmaop_vec_axpy(r, -alpha, s));
    RT_OK(rmaop_vec_axpy(w, -alpha, z));
    if (rr > 0 && (k + 1) % rr == 0) {
      RT_OK(rmaop_op_apply(A, x, r));
      RT_OK(rmaop_vec_axpby(r, 1.0, -1.0, y));
      RT_OK(rmaop_op_apply(A, r, w));
      RT_OK(rmaop_op_apply(A, p, s));
      RT_OK(rmaop_op_apply(A, s, z));
    }
    gamma_old = gamma, alpha_old = alpha;
  }
  for (int i = 0; i < 6; ++i)
    rmaop_vec_destroy(all[i]);
}

/* Pipelined CG's fused host pass (the six updates and the next dots in one pass over L1 blocks) against the
 * separate calls: the same history and x, bit for bit, on the SPD composite and a Laplacian, with and without
 * the residual replacement. */
START_TEST(test_fused_pipecg) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = rt_dtypes[k];
    char name[128], what[200];
    rmaop_op ops[2] = {make_op(17, d, name, sizeof name), big_laplacian(d)};
    for (int c = 0; c < 2; ++c)
      for (int rr = 0; rr <= 3; rr += 3) {
        enum { NIT = 9 };
        rmaop_op_info oi;
        RT_OK(rmaop_op_get_info(ops[c], &oi));
        rmaop_vec y = series(oi.data, d, 3), x = series(oi.model, d, 5), xc = series(oi.model, d, 5);
        rmaop_solver_options o;
        rmaop_solver_options_init(&o);
        o.niter = NIT, o.residual_replacement = rr;
        rmaop_solver_info info;
        memset(&info, 0, sizeof info);
        RT_OK(rmaop_solve_pipecg(ops[c], y, x, &o, &info));
        double hist[NIT + 1];
        int its = 0;
        pipecg_calls(ops[c], y, xc, NIT, rr, hist, &its);
        snprintf(what, sizeof what, "pipeCG on %s (%s, rr %d)", c ? "a 2-D Laplacian" : name, rmaop_dtype_name(d), rr);
        same_solve(what, &info, hist, its, x, xc);
        rmaop_solver_info_destroy(&info);
        rmaop_vec_destroy(&x), rmaop_vec_destroy(&xc), rmaop_vec_destroy(&y);
      }
    rmaop_op_destroy(&ops[0]), rmaop_op_destroy(&ops[1]);
  }
}
END_TEST

/* LSQR from the public calls, the host loop's order (src/solvers/solver_krylov.c: the set-up, the bidiagonalization
 * with rmaop_vec_axpby, rmaop_vec_mdot of {u.u, w.w} and rmaop_vec_norm2, the scalars of
 * src/solvers/lsqr_scalars.h, x += t1 w and w = v + t2 w), x0 = 0, damp 0.2, the stopping tests off: hist[0..niter]. */
static void lsqr_calls(rmaop_op A, rmaop_vec y, rmaop_vec x, int niter, double *hist) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(A, &oi));
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(x, &vi));
  rmaop_vec u, Av, v, w, AHu;
  RT_OK(rmaop_vec_create(oi.data, vi.dtype, &u));
  RT_OK(rmaop_vec_create(oi.data, vi.dtype, &Av));
  RT_OK(rmaop_vec_create(oi.model, vi.dtype, &v));
  RT_OK(rmaop_vec_create(oi.model, vi.dtype, &w));
  RT_OK(rmaop_vec_create(oi.model, vi.dtype, &AHu));
  rmaop_vec all[4] = {Av, v, w, AHu};
  for (int i = 0; i < 4; ++i)
    RT_OK(rmaop_vec_set(all[i], 0.0));
  lsqr_state S;
  memset(&S, 0, sizeof S);
  S.damp = 0.2, S.dampsq = S.damp * S.damp, S.cs2 = -1.0; /* atol, btol, ctol 0: off */
  RT_OK(rmaop_vec_set(x, 0.0));
  RT_OK(rmaop_vec_copy(y, u));
  RT_OK(rmaop_vec_norm2(u, &S.beta));
  RT_OK(rmaop_vec_scale(u, 1.0 / S.beta));
  RT_OK(rmaop_op_apply_adjoint(A, u, v));
  RT_OK(rmaop_vec_norm2(v, &S.alfa));
  RT_OK(rmaop_vec_scale(v, 1.0 / S.alfa));
  RT_OK(rmaop_vec_copy(v, w));
  S.arnorm0 = S.alfa * S.beta, S.rhobar = S.alfa, S.phibar = S.bnorm = S.rnorm = S.beta;
  hist[0] = S.beta;
  for (int k = 1; k <= niter; ++k) {
    RT_OK(rmaop_op_apply(A, v, Av));
    RT_OK(rmaop_vec_axpby(u, 1.0, -S.alfa, Av));
    double _Complex d[2];
    rmaop_vec dx[2] = {u, w};
    RT_OK(rmaop_vec_mdot(2, dx, dx, d));
    RT_CHECK(lsqr_set_beta(&S, creal(d[0])), "LSQR by the calls: beta = 0 at iteration %d", k);
    RT_OK(rmaop_vec_scale(u, 1.0 / S.beta));
    RT_OK(rmaop_op_apply_adjoint(A, u, AHu));
    RT_OK(rmaop_vec_axpby(v, 1.0, -S.beta, AHu));
    RT_OK(rmaop_vec_norm2(v, &S.alfa));
    RT_OK(rmaop_vec_scale(v, 1.0 / S.alfa));
    const lsqr_step st = lsqr_scalars(&S, creal(d[1]));
    RT_OK(rmaop_vec_axpy(x, st.t1, w));
    RT_OK(rmaop_vec_axpby(w, 1.0, st.t2, v));
    hist[k] = st.r1norm;
  }
  rmaop_vec_destroy(&u), rmaop_vec_destroy(&Av), rmaop_vec_destroy(&v), rmaop_vec_destroy(&w);
  rmaop_vec_destroy(&AHu);
}

/* LSQR's fused host passes (each bidiagonalization update with its norm, x and w in one loop) against the separate
 * calls: the same history and x, bit for bit, on a derivative, the SPD composite and a Laplacian larger than a
 * block. */
START_TEST(test_fused_lsqr) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = rt_dtypes[k];
    for (int c = 0; c < 3; ++c) {
      enum { NIT = 7 };
      char name[128], what[200];
      rmaop_op A = NULL;
      if (c < 2) {
        A = make_op(c ? 17 : 0, d, name, sizeof name);
      } else {
        A = big_laplacian(d);
        snprintf(name, sizeof name, "a 2-D Laplacian");
      }
      rmaop_op_info oi;
      RT_OK(rmaop_op_get_info(A, &oi));
      rmaop_vec y = series(oi.data, d, 3), x = series(oi.model, d, 5), xc = series(oi.model, d, 5);
      rmaop_solver_options o;
      rmaop_solver_options_init(&o);
      o.niter = NIT, o.damp = 0.2, o.atol = o.btol = o.conlim = -1;
      rmaop_solver_info info;
      memset(&info, 0, sizeof info);
      RT_OK(rmaop_solve_lsqr(A, y, x, &o, &info));
      double hist[NIT + 1];
      lsqr_calls(A, y, xc, NIT, hist);
      snprintf(what, sizeof what, "LSQR on %s (%s)", name, rmaop_dtype_name(d));
      same_solve(what, &info, hist, NIT, x, xc);
      rmaop_solver_info_destroy(&info);
      rmaop_vec_destroy(&x), rmaop_vec_destroy(&xc), rmaop_vec_destroy(&y);
      rmaop_op_destroy(&A);
    }
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver_fused");
  TCase *tc = tcase_create("fused");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_fused_apply);
  tcase_add_test(tc, test_fused_errors);
  tcase_add_test(tc, test_fused_cgls);
  tcase_add_test(tc, test_fused_cg);
  tcase_add_test(tc, test_fused_pipecg);
  tcase_add_test(tc, test_fused_lsqr);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
