/* Tests of rmaop_solve_lsqr, rmaop_solve_pipecg and rmaop_op_create_diagonal. References, computed serially in
 * double complex on the dense global matrix every rank builds from the operator's formula:
 *  - LSQR: PyLops' LSQR (pylops.optimization.cls_basic.LSQR, Paige & Saunders 1982) line by line;
 *  - pipelined CG: Ghysels & Vanroose 2014, Alg. 4 (unpreconditioned), with the same residual replacement.
 * Histories must match to 1e-10 relative (f64, c128; 1e-4 for f32, c64; plus 1e-14 (1e-6) of history[0] where
 * the residual has converged far: st_hist_close_floor) at every iteration on every backend,
 * which also shows that backends agree; iteration counts and reasons must be equal. pipeCG is compared with
 * rmaop_solve_cg (same history up to rounding: 1e-8) and LSQR's solution with CGLS's on a well-posed problem.
 * The problems, the dense matrices and the checks of one solve are shared with test_solver.c (solver_test_util.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"
#include "solver_test_util.h"

static rmaop_ctx ctx;
static void setup(void) { ctx = rt_ctx(); }
static void teardown(void) { rmaop_ctx_destroy(&ctx); }

/* ---- dense global vectors ---- */

static double vnorm(int64_t n, const double _Complex *a) { return sqrt(creal(st_vdot(n, a, a))); }
static double norm_of(int n, const double *v) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += v[i] * v[i];
  return sqrt(s);
}

/* ---- serial references ---- */

typedef struct {
  double damp, atol, btol, conlim; /* as rmaop_solver_options: 0 = PyLops default, < 0 = off */
} lsqr_opts;
static double dflt(double v, double d) { return v == 0 ? d : v < 0 ? 0 : v; }

/* PyLops LSQR.setup / step / run, transcribed (u, v, w vectors; names as there). */
static void ref_lsqr(const st_mat *A, const double _Complex *y, const double _Complex *x0, int niter, lsqr_opts lo,
                     st_ref *out) {
  const int64_t m = A->m, n = A->n;
  const double damp = lo.damp, dampsq = damp * damp, atol = dflt(lo.atol, 1e-8), btol = dflt(lo.btol, 1e-8);
  const double conlim = dflt(lo.conlim, 1e8), ctol = conlim > 0 ? 1.0 / conlim : 0;
  double _Complex *x = st_cvec(n), *u = st_cvec(m), *v = st_cvec(n), *w = st_cvec(n), *t = st_cvec(m > n ? m : n);
  if (x0) memcpy(x, x0, (size_t)n * sizeof *x);
  st_matvec(A, 0, x, t);
  for (int64_t i = 0; i < m; ++i) u[i] = y[i] - t[i];
  double anorm = 0, acond = 0, ddnorm = 0, res2 = 0, xnorm = 0, xxnorm = 0, z = 0, cs2 = -1, sn2 = 0, alfa = 0;
  double beta = vnorm(m, u);
  if (beta > 0) {
    for (int64_t i = 0; i < m; ++i) u[i] /= beta;
    st_matvec(A, 1, u, v);
    alfa = vnorm(n, v);
    if (alfa > 0) {
      for (int64_t j = 0; j < n; ++j) v[j] /= alfa, w[j] = v[j];
    }
  }
  const double arnorm0 = alfa * beta, bnorm = beta;
  double rhobar = alfa, phibar = beta, rnorm = beta;
  int it = 0, istop = 0, broke = 0;
  out->history[0] = rnorm;
  while (arnorm0 != 0 && it < niter && istop == 0) {
    st_matvec(A, 0, v, t);
    for (int64_t i = 0; i < m; ++i) u[i] = t[i] - alfa * u[i];
    beta = vnorm(m, u);
    if (beta > 0) {
      for (int64_t i = 0; i < m; ++i) u[i] /= beta;
      anorm = norm_of(4, (double[]){anorm, alfa, beta, damp});
      st_matvec(A, 1, u, t);
      for (int64_t j = 0; j < n; ++j) v[j] = t[j] - beta * v[j];
      alfa = vnorm(n, v);
      if (alfa > 0)
        for (int64_t j = 0; j < n; ++j) v[j] /= alfa;
    }
    const double rhobar1 = norm_of(2, (double[]){rhobar, damp}), cs1 = rhobar / rhobar1, sn1 = damp / rhobar1;
    const double psi = sn1 * phibar;
    phibar = cs1 * phibar;
    const double rho = norm_of(2, (double[]){rhobar1, beta}), cs = rhobar1 / rho, sn = beta / rho;
    const double theta = sn * alfa;
    rhobar = -cs * alfa;
    const double phi = cs * phibar;
    phibar = sn * phibar;
    const double tau = sn * phi, t1 = phi / rho, t2 = -theta / rho;
    const double delta = sn2 * rho, gambar = -cs2 * rho, gamma = norm_of(2, (double[]){gambar, theta});
    if (rho == 0 || gamma == 0) {
      broke = 1;
      break;
    }
    double dk2 = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double _Complex dk = w[j] / rho;
      dk2 += creal(conj(dk) * dk);
      x[j] += t1 * w[j];
      w[j] = v[j] + t2 * w[j];
    }
    ddnorm += dk2;
    const double rhs = phi - delta * z, zbar = rhs / gambar;
    xnorm = sqrt(xxnorm + zbar * zbar);
    cs2 = gambar / gamma, sn2 = theta / gamma, z = rhs / gamma;
    xxnorm += z * z;
    acond = anorm * sqrt(ddnorm);
    res2 += psi * psi;
    rnorm = sqrt(phibar * phibar + res2);
    const double arnorm = alfa * fabs(tau);
    out->history[++it] = sqrt(fabs(rnorm * rnorm - dampsq * xxnorm));
    const double test1 = rnorm / bnorm, test2 = arnorm / arnorm0, test3 = 1.0 / acond;
    const double tt1 = test1 / (1.0 + anorm * xnorm / bnorm), rtol = btol + atol * anorm * xnorm / bnorm;
    if (1 + test3 <= 1) istop = 6;
    if (1 + test2 <= 1) istop = 5;
    if (1 + tt1 <= 1) istop = 4;
    if (test3 <= ctol) istop = 3;
    if (test2 <= atol) istop = 2;
    if (test1 <= rtol) istop = 1;
  }
  out->iterations = it;
  out->reason = broke ? RMAOP_REASON_BREAKDOWN
                : arnorm0 == 0 || istop == 1 || istop == 2 || istop == 4 || istop == 5 ? RMAOP_REASON_TOL
                : istop == 3 || istop == 6 ? RMAOP_REASON_CONLIM : RMAOP_REASON_NITER;
  out->x = x;
  free(u), free(v), free(w), free(t);
}

/* Ghysels & Vanroose 2014, Alg. 4 without preconditioner: r = y - A x0, w = A r; per iteration gamma = r.r,
 * delta = w.r, q = A w, beta = gamma / gamma_old, alpha = gamma / (delta - beta gamma / alpha_old),
 * z = q + beta z, s = w + beta s, p = r + beta p, x += alpha p, r -= alpha s, w -= alpha z; every rr-th
 * iteration r = y - A x, w = A r, s = A p, z = A s. history[k] = sqrt(gamma_k); stop on gamma <= tol. */
static void ref_pipecg(const st_mat *A, const double _Complex *y, const double _Complex *x0, int niter, double tol,
                       int rr, st_ref *out) {
  const int64_t n = A->n;
  double _Complex *x = st_cvec(n), *r = st_cvec(n), *w = st_cvec(n), *q = st_cvec(n), *z = st_cvec(n);
  double _Complex *s = st_cvec(n), *p = st_cvec(n);
  if (x0) memcpy(x, x0, (size_t)n * sizeof *x);
  st_matvec(A, 0, x, r);
  for (int64_t i = 0; i < n; ++i) r[i] = y[i] - r[i];
  st_matvec(A, 0, r, w);
  double gamma_old = 0, alpha_old = 0;
  out->reason = RMAOP_REASON_NITER;
  for (int k = 0;; ++k) {
    const double gamma = creal(st_vdot(n, r, r)), delta = creal(st_vdot(n, w, r));
    out->history[k] = sqrt(gamma);
    out->iterations = k;
    if (gamma <= tol) {
      out->reason = RMAOP_REASON_TOL;
      break;
    }
    if (k == niter) break;
    st_matvec(A, 0, w, q);
    const double beta = k ? gamma / gamma_old : 0, alpha = gamma / (k ? delta - beta * gamma / alpha_old : delta);
    for (int64_t i = 0; i < n; ++i) {
      z[i] = q[i] + beta * z[i], s[i] = w[i] + beta * s[i], p[i] = r[i] + beta * p[i];
      x[i] += alpha * p[i], r[i] -= alpha * s[i], w[i] -= alpha * z[i];
    }
    if (rr > 0 && (k + 1) % rr == 0) {
      st_matvec(A, 0, x, r);
      for (int64_t i = 0; i < n; ++i) r[i] = y[i] - r[i];
      st_matvec(A, 0, r, w), st_matvec(A, 0, p, s), st_matvec(A, 0, s, z);
    }
    gamma_old = gamma, alpha_old = alpha;
  }
  out->x = x;
  free(r), free(w), free(q), free(z), free(s), free(p);
}

/* ---- problems ---- */

/* The bench's SPD operator D^H D + diag(g), g_i = 1 + 0.1 sin(i) (real for every dtype, so A stays Hermitian),
 * built from the derivative, the adjoint, product and sum composites and the diagonal operator. */
static double diag_val(int64_t i) { return 1.0 + 0.1 * sin((double)i); }
static st_problem make_dtd(rmaop_ctx c, rmaop_dtype d) {
  st_problem p = {.name = "D^H D + diag"};
  st_mat D = st_deriv_mat();
  p.M = st_mat_new(ST_DN, ST_DN);
  for (int64_t i = 0; i < ST_DN; ++i)
    for (int64_t j = 0; j < ST_DN; ++j) {
      double _Complex s = i == j ? rt_round(d, diag_val(i)) : 0;
      for (int64_t k = 0; k < ST_DN; ++k) s += conj(ST_AT(D, k, i)) * ST_AT(D, k, j);
      ST_AT(p.M, i, j) = s;
    }
  st_mat_free(&D);
  p.parts[0] = st_deriv_op(c, d);
  RT_OK(rmaop_op_create_adjoint(p.parts[0], &p.parts[1]));
  RT_OK(rmaop_op_create_product(p.parts[1], p.parts[0], &p.parts[2]));
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p.parts[0], &oi));
  rmaop_vec g = NULL;
  RT_OK(rmaop_vec_create(oi.model, d, &g));
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(g, &vi));
  void *buf = rt_alloc(d, vi.local_n);
  for (int64_t i = 0; i < vi.local_n; ++i) rt_store(d, buf, i, diag_val(vi.offset + i));
  RT_OK(rmaop_vec_write_local(g, buf));
  free(buf);
  RT_OK(rmaop_op_create_diagonal(g, &p.parts[3]));
  rmaop_vec_destroy(&g); /* the operator keeps its own copy */
  rmaop_op ops[2] = {p.parts[2], p.parts[3]};
  RT_OK(rmaop_op_create_sum(2, ops, &p.A));
  return p;
}

/* ---- one solve against the reference ---- */

enum { LSQR, PIPECG };
typedef struct {
  int solver, niter;
  double tol;
  lsqr_opts lo;
  int rr, with_x0, zero_y;
} run_cfg;

static void set_options(rmaop_solver_options *o, const run_cfg *rc, rmaop_vec x0) {
  rmaop_solver_options_init(o);
  o->niter = rc->niter, o->tol = rc->tol, o->damp = rc->lo.damp, o->x0 = x0;
  o->atol = rc->lo.atol, o->btol = rc->lo.btol, o->conlim = rc->lo.conlim, o->residual_replacement = rc->rr;
}

/* Solves with the library and serially; checks history (relative, with st_hist_close's floor), x, iterations,
 * reason and the callback. The caller frees ref->x. */
static void run_solve(const st_problem *p, rmaop_dtype d, const run_cfg *rc, st_ref *ref) {
  st_solve_vecs v = st_solve_vecs_create(p, d, rc->with_x0, rc->zero_y);
  st_cb_state cb = {.expect_x = v.x, .x_seen_ok = 1};
  rmaop_solver_options o;
  set_options(&o, rc, v.x0);
  o.callback = st_record_cb, o.user = &cb;
  rmaop_solver_info info;
  memset(&info, 0, sizeof info);
  if (rc->solver == LSQR) {
    RT_OK(rmaop_solve_lsqr(p->A, v.y, v.x, &o, &info));
    ref_lsqr(&p->M, v.yg, v.x0g, rc->niter, rc->lo, ref);
  } else {
    RT_OK(rmaop_solve_pipecg(p->A, v.y, v.x, &o, &info));
    ref_pipecg(&p->M, v.yg, v.x0g, rc->niter, rc->tol, rc->rr, ref);
  }
  char what[256];
  snprintf(what, sizeof what, "%s on %s (%s, niter %d, tol %g, damp %g, atol %g, btol %g, conlim %g, rr %d%s%s)",
           rc->solver == LSQR ? "LSQR" : "pipeCG", p->name, rmaop_dtype_name(d), rc->niter, rc->tol, rc->lo.damp,
           rc->lo.atol, rc->lo.btol, rc->lo.conlim, rc->rr, rc->with_x0 ? ", x0" : "", rc->zero_y ? ", y = 0" : "");
  st_check_solve(what, d, &info, ref, v.x, &cb, st_hist_floor(st_hist_tol(d)));
  rmaop_solver_info_destroy(&info);
  st_solve_vecs_free(&v);
}

static void solve(const st_problem *p, rmaop_dtype d, run_cfg rc) {
  st_ref ref;
  run_solve(p, d, &rc, &ref);
  free(ref.x);
}

static const rmaop_dtype all_dtypes[4] = {RMAOP_F64, RMAOP_C128, RMAOP_F32, RMAOP_C64};

/* ---- LSQR ---- */

START_TEST(test_lsqr_derivative) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    st_problem p = st_make_derivative(ctx, d);
    if (k < 2) {
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 10});
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 10, .lo.damp = 0.3});
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 10, .lo.damp = 0.3, .with_x0 = 1});
    } else {
      solve(&p, d, (run_cfg){.solver = LSQR, .niter = 4, .lo.damp = 0.3, .with_x0 = k == 3});
    }
    st_problem_free(&p);
  }
}
END_TEST

START_TEST(test_lsqr_vstack) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    st_problem p = st_make_vstack(ctx, d);
    solve(&p, d, (run_cfg){.solver = LSQR, .niter = k < 2 ? 5 : 3});
    if (k < 2) solve(&p, d, (run_cfg){.solver = LSQR, .niter = 5, .lo.damp = 0.5, .with_x0 = 1});
    st_problem_free(&p);
  }
}
END_TEST

/* A well-posed least-squares problem (vstack, full column rank, 6 unknowns): LSQR and CGLS reach the same x. */
START_TEST(test_lsqr_matches_cgls) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < 2; ++k) {
    const rmaop_dtype d = ds[k];
    st_problem p = st_make_vstack(ctx, d);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    for (int damped = 0; damped < 2; ++damped) {
      rmaop_vec y = st_make_vec(oi.data, d, 3, 1.0, NULL), xl = st_make_vec(oi.model, d, 5, 1.0, NULL);
      rmaop_vec xc = st_make_vec(oi.model, d, 5, 1.0, NULL);
      rmaop_solver_options o;
      rmaop_solver_options_init(&o);
      o.niter = 30, o.damp = damped ? 0.7 : 0.0, o.atol = o.btol = 1e-14;
      rmaop_solver_info il, ic;
      RT_OK(rmaop_solve_lsqr(p.A, y, xl, &o, &il));
      o.tol = 1e-26;
      RT_OK(rmaop_solve_cgls(p.A, y, xc, &o, &ic));
      double _Complex *cg = st_cvec(ST_VCOLS);
      RT_OK(rmaop_vec_read_local(xc, cg)); /* BROADCAST: the whole x on every rank; f64 reads as pairs below */
      double _Complex ref[ST_VCOLS];
      for (int64_t j = 0; j < ST_VCOLS; ++j) ref[j] = rt_load(d, cg, j);
      char msg[400] = "";
      RT_CHECK(st_x_matches(xl, ref, 1e-8, msg, sizeof msg), "%s LSQR vs CGLS (damp %g, %d / %d iterations): %s",
               rmaop_dtype_name(d), o.damp, il.iterations, ic.iterations, msg);
      RT_CHECK(il.reason == RMAOP_REASON_TOL, "LSQR reason %d after %d iterations", (int)il.reason, il.iterations);
      free(cg);
      rmaop_solver_info_destroy(&il), rmaop_solver_info_destroy(&ic);
      rmaop_vec_destroy(&y), rmaop_vec_destroy(&xl), rmaop_vec_destroy(&xc);
    }
    st_problem_free(&p);
  }
}
END_TEST

START_TEST(test_lsqr_stopping) {
  st_problem p = st_make_spd(ctx, RMAOP_F64);
  st_ref ref;
  /* atol = btol = 1e-6 on a consistent square system: istop = 1 or 2 well before niter (and before the Krylov space
   * of the 10..22 unknowns is exhausted, where the residual estimates are rounding noise) -> TOL */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 40, .lo = {.atol = 1e-6, .btol = 1e-6}}, &ref);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_TOL && ref.iterations < 40, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  /* tests switched off: NITER; a loose btol (the compatible-system test, istop = 1): TOL early */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 6, .lo = {.atol = -1, .btol = -1, .conlim = -1}}, &ref);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_NITER && ref.iterations == 6, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 6, .lo = {.atol = -1, .btol = 0.3}}, &ref);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_TOL && ref.iterations < 6, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  /* conlim 3: the condition estimate (1.0 after the first iteration, where a tie would decide) exceeds it
   * after a few iterations -> CONLIM */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = LSQR, .niter = 12, .lo = {.conlim = 3.0}}, &ref);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_CONLIM, "reference: reason %d", (int)ref.reason);
  /* loose atol with damping (the least-squares test, istop = 2) */
  solve(&p, RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 12, .lo = {.damp = 0.5, .atol = 1e-2, .btol = -1}});
  /* y = 0: A^H y = 0, no iteration, TOL, x = 0 */
  solve(&p, RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 5, .zero_y = 1});
  solve(&p, RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 0, .with_x0 = 1});
  st_problem_free(&p);
}
END_TEST

/* ---- pipelined CG ---- */

START_TEST(test_pipecg_reference) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    st_problem p = st_make_spd(ctx, d), q = make_dtd(ctx, d);
    const int full = k < 2;
    solve(&p, d, (run_cfg){.solver = PIPECG, .niter = full ? 8 : 4});
    solve(&q, d, (run_cfg){.solver = PIPECG, .niter = full ? 8 : 4, .with_x0 = !full});
    if (full) {
      solve(&p, d, (run_cfg){.solver = PIPECG, .niter = 8, .with_x0 = 1, .rr = 3});
      solve(&q, d, (run_cfg){.solver = PIPECG, .niter = 9, .rr = 2});
      solve(&q, d, (run_cfg){.solver = PIPECG, .niter = 1});
    }
    st_problem_free(&p), st_problem_free(&q);
  }
}
END_TEST

/* pipeCG and CG compute the same residuals in exact arithmetic: the histories agree to 1e-8. */
START_TEST(test_pipecg_vs_cg) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = ds[k % 2];
    st_problem p = k < 2 ? st_make_spd(ctx, d) : make_dtd(ctx, d);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    for (int rr = 0; rr <= 3; rr += 3) {
      rmaop_vec y = st_make_vec(oi.data, d, 3, 1.0, NULL), x = st_make_vec(oi.model, d, 5, 1.0, NULL);
      rmaop_solver_options o;
      rmaop_solver_options_init(&o);
      o.niter = 6, o.residual_replacement = rr;
      rmaop_solver_info ic, ip;
      RT_OK(rmaop_solve_cg(p.A, y, x, &o, &ic));
      RT_OK(rmaop_solve_pipecg(p.A, y, x, &o, &ip));
      char msg[400] = "";
      RT_CHECK(ic.iterations == ip.iterations &&
                   st_hist_close(ip.history, ic.history, ic.iterations, 1e-8, msg, sizeof msg),
               "%s on %s, rr %d: pipeCG %d iterations vs CG %d: %s", rmaop_dtype_name(d), p.name, rr, ip.iterations,
               ic.iterations, msg);
      rmaop_solver_info_destroy(&ic), rmaop_solver_info_destroy(&ip);
      rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
    }
    st_problem_free(&p);
  }
}
END_TEST

START_TEST(test_pipecg_stopping) {
  st_problem p = st_make_spd(ctx, RMAOP_F64);
  st_ref ref;
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = PIPECG, .niter = 8}, &ref);
  free(ref.x);
  const double tol = ref.history[2] * ref.history[3]; /* between the 2nd and 3rd squared residuals */
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = PIPECG, .niter = 8, .tol = tol}, &ref);
  free(ref.x);
  RT_CHECK(ref.iterations == 3 && ref.reason == RMAOP_REASON_TOL, "reference: %d iterations, reason %d",
           ref.iterations, (int)ref.reason);
  run_solve(&p, RMAOP_F64, &(run_cfg){.solver = PIPECG, .niter = 2, .tol = tol}, &ref);
  free(ref.x);
  RT_CHECK(ref.iterations == 2 && ref.reason == RMAOP_REASON_NITER, "reference: %d iterations", ref.iterations);
  solve(&p, RMAOP_F64, (run_cfg){.solver = PIPECG, .niter = 8, .tol = 1e30});
  solve(&p, RMAOP_F64, (run_cfg){.solver = PIPECG, .niter = 0, .with_x0 = 1});
  solve(&p, RMAOP_F64, (run_cfg){.solver = PIPECG, .niter = 5, .zero_y = 1});
  st_problem_free(&p);
}
END_TEST

/* One solve without a callback on p[0] (device scalars in st_scalars_ctx's mode `graph`) and p[1] (host scalars): the
 * same iterations, reason, history and x, bit for bit, and info.graph where graphs replay (under while and resident
 * 2, one graph: LSQR's iterations after the first, pipelined CG's without residual replacement). Without a callback
 * the device loop enqueues each iteration before it reads the previous one's stop. */
static void scalars_vs_host(const st_problem p[2], rmaop_dtype d, const run_cfg *rc, int graph, const char *what) {
  rmaop_solver_info info[2];
  st_solve_vecs v[2];
  for (int c = 0; c < 2; ++c) {
    v[c] = st_solve_vecs_create(&p[c], d, rc->with_x0, rc->zero_y);
    rmaop_solver_options o;
    set_options(&o, rc, v[c].x0);
    memset(&info[c], 0, sizeof info[c]);
    const st_solver_fn solver = rc->solver == LSQR ? rmaop_solve_lsqr : rmaop_solve_pipecg;
    RT_OK(solver(p[c].A, v[c].y, v[c].x, &o, &info[c]));
  }
  int want = graph && st_graph_expected();
  if (want && graph >= 2 && st_one_graph_expected() && rc->solver == LSQR) /* the iterations after the first */
    want = info[1].iterations > 1 ? 2 : 0;
  else if (want && graph >= 2 && st_one_graph_expected() && rc->rr == 0) /* pipelined CG: but with replacement */
    want = 2;
  RT_CHECK(info[0].graph == want && info[1].graph == 0, "%s %s: info.graph is %d (want %d) and %d with host scalars",
           rmaop_dtype_name(d), what, info[0].graph, want, info[1].graph);
  RT_CHECK(info[0].iterations == info[1].iterations && info[0].reason == info[1].reason,
           "%s %s: device scalars %d iterations (reason %d), host scalars %d (reason %d)", rmaop_dtype_name(d), what,
           info[0].iterations, (int)info[0].reason, info[1].iterations, (int)info[1].reason);
  if (rc->tol > 0 || rc->lo.atol > 0 || rc->lo.conlim > 0)
    RT_CHECK(info[0].reason != RMAOP_REASON_NITER && info[0].iterations < rc->niter,
             "%s %s: the tolerance did not stop (%d its)", rmaop_dtype_name(d), what, info[0].iterations);
  for (int i = 0; i <= info[0].iterations && i <= info[1].iterations; ++i)
    RT_CHECK(info[0].history[i] == info[1].history[i], "%s %s: history[%d] %.17g (device scalars) vs %.17g (host)",
             rmaop_dtype_name(d), what, i, info[0].history[i], info[1].history[i]);
  double _Complex *a = st_vec_global(v[0].x, NULL), *b = NULL;
  int64_t n = 0;
  b = st_vec_global(v[1].x, &n);
  double big = 0, diff = 0;
  for (int64_t i = 0; i < n; ++i)
    big = fmax(big, cabs(b[i])), diff = fmax(diff, cabs(a[i] - b[i]));
  RT_CHECK(diff == 0.0, "%s %s: x differs by %.3g (largest |x| %.3g)", rmaop_dtype_name(d), what, diff, big);
  free(a), free(b);
  for (int c = 0; c < 2; ++c)
    rmaop_solver_info_destroy(&info[c]), st_solve_vecs_free(&v[c]);
}

/* RMAOP_SOLVER_SCALARS=device, =graph, =resident and =while (pipelined CG's scalars and its fused update on the
 * device, eagerly or replayed from CUDA graphs; resident and while replay graphs; on host memory the host loop runs):
 * against the reference with a callback (the host then reads each iteration before it enqueues the next), and without
 * one against host scalars, with a tolerance that stops the solve (the iteration enqueued ahead of the stop must change
 * nothing), residual replacement, niter 0, y = 0 and x0. */
START_TEST(test_pipecg_device_scalars) {
  rmaop_ctx hctx = st_scalars_ctx(-1);
  for (int mode = 0; mode < 4; ++mode) {
    rmaop_ctx dctx = st_scalars_ctx(mode);
    for (int k = 0; k < 3; ++k) {
      const rmaop_dtype d = all_dtypes[k];
      st_problem p[2] = {make_dtd(dctx, d), make_dtd(hctx, d)};
      st_ref ref;
      run_solve(&p[0], d, &(run_cfg){.solver = PIPECG, .niter = 8}, &ref);
      free(ref.x);
      const double tol = ref.history[2] * ref.history[3]; /* stops after the 3rd iteration */
      solve(&p[0], d, (run_cfg){.solver = PIPECG, .niter = 8, .tol = tol});
      solve(&p[0], d, (run_cfg){.solver = PIPECG, .niter = 8, .rr = 3, .with_x0 = 1});
      solve(&p[0], d, (run_cfg){.solver = PIPECG, .niter = 0, .with_x0 = 1});
      solve(&p[0], d, (run_cfg){.solver = PIPECG, .niter = 5, .zero_y = 1});
      if (d == RMAOP_F64 || d == RMAOP_C128) {
        const char *m = st_scalars_name(mode);
        char what[64];
        snprintf(what, sizeof what, "%s, niter", m);
        scalars_vs_host(p, d, &(run_cfg){.solver = PIPECG, .niter = 7}, mode, what);
        snprintf(what, sizeof what, "%s, with tol", m);
        scalars_vs_host(p, d, &(run_cfg){.solver = PIPECG, .niter = 8, .tol = tol}, mode, what);
        snprintf(what, sizeof what, "%s, rr 2 and x0", m);
        scalars_vs_host(p, d, &(run_cfg){.solver = PIPECG, .niter = 9, .rr = 2, .with_x0 = 1}, mode, what);
      }
      st_problem_free(&p[0]), st_problem_free(&p[1]);
    }
    rmaop_ctx_destroy(&dctx);
  }
  rmaop_ctx_destroy(&hctx);
}
END_TEST

/* RMAOP_SOLVER_SCALARS=device, =graph, =resident and =while for LSQR (its scalar recurrences on the device, the host's
 * code; resident and while replay graphs):
 * against the reference with a callback, and without one against host scalars, on stops by count, by atol/btol and by
 * conlim (the iteration enqueued ahead of a stop must change nothing), with damping and x0, y = 0 (no iteration)
 * and niter 0. */
START_TEST(test_lsqr_device_scalars) {
  rmaop_ctx hctx = st_scalars_ctx(-1);
  for (int mode = 0; mode < 4; ++mode) {
    rmaop_ctx dctx = st_scalars_ctx(mode);
    const char *m = st_scalars_name(mode);
    char what[64];
    for (int k = 0; k < 3; ++k) {
      const rmaop_dtype d = all_dtypes[k];
      st_problem p[2] = {st_make_derivative(dctx, d), st_make_derivative(hctx, d)};
      solve(&p[0], d, (run_cfg){.solver = LSQR, .niter = 10});
      solve(&p[0], d, (run_cfg){.solver = LSQR, .niter = 10, .lo.damp = 0.3, .with_x0 = 1});
      if (d != RMAOP_F32) {
        snprintf(what, sizeof what, "LSQR %s, damp and x0", m);
        scalars_vs_host(p, d, &(run_cfg){.solver = LSQR, .niter = 10, .lo.damp = 0.3, .with_x0 = 1}, mode, what);
      }
      st_problem_free(&p[0]), st_problem_free(&p[1]);
    }
    st_problem p[2] = {st_make_spd(dctx, RMAOP_F64), st_make_spd(hctx, RMAOP_F64)};
    const run_cfg stops[2] = {{.solver = LSQR, .niter = 40, .lo = {.atol = 1e-6, .btol = 1e-6}},
                              {.solver = LSQR, .niter = 12, .lo = {.conlim = 3.0}}};
    for (int c = 0; c < 2; ++c) {
      solve(&p[0], RMAOP_F64, stops[c]);
      snprintf(what, sizeof what, "LSQR %s, %s", m, c ? "conlim" : "atol and btol");
      scalars_vs_host(p, RMAOP_F64, &stops[c], mode, what);
    }
    solve(&p[0], RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 5, .zero_y = 1});
    solve(&p[0], RMAOP_F64, (run_cfg){.solver = LSQR, .niter = 0, .with_x0 = 1});
    st_problem_free(&p[0]), st_problem_free(&p[1]);
    rmaop_ctx_destroy(&dctx);
  }
  rmaop_ctx_destroy(&hctx);
}
END_TEST

/* Reductions per solve, counted by the trace (every reduction records one call at its wait): pipeCG has ONE per
 * iteration (plus the one that yields ||r_niter||), LSQR two per iteration plus two at set-up, CG two plus one. The
 * operator (block-diagonal) reduces nothing itself. */
static int reductions_of(const st_problem *p, int which, int niter) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  rmaop_vec y = st_make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = st_make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = niter, o.atol = o.btol = o.conlim = -1;
  rmaop_solver_info info;
  RT_OK(rmaop_trace_reset(ctx));
  RT_OK(rmaop_trace_enable(ctx, 1));
  RT_OK(which == 0 ? rmaop_solve_cg(p->A, y, x, &o, &info)
                   : which == 1 ? rmaop_solve_pipecg(p->A, y, x, &o, &info) : rmaop_solve_lsqr(p->A, y, x, &o, &info));
  RT_OK(rmaop_trace_enable(ctx, 0));
  RT_CHECK(info.iterations == niter, "solver %d: %d iterations of %d", which, info.iterations, niter);
  int nsites = 0, calls = 0;
  RT_OK(rmaop_trace_count(ctx, &nsites));
  for (int i = 0; i < nsites; ++i) {
    rmaop_trace_site site;
    RT_OK(rmaop_trace_get(ctx, i, &site));
    if (strcmp(site.kind, "reduce") == 0) calls += (int)site.calls;
  }
  rmaop_solver_info_destroy(&info);
  rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
  return calls;
}

START_TEST(test_reduction_count) {
  st_problem p = st_make_spd(ctx, RMAOP_F64);
  const int niter = 5;
  const int cg = reductions_of(&p, 0, niter), pipe = reductions_of(&p, 1, niter), lsqr = reductions_of(&p, 2, niter);
  RT_CHECK(cg == 2 * niter + 1 && pipe == niter + 1 && lsqr == 2 * niter + 2,
           "reductions for %d iterations: CG %d (want %d), pipeCG %d (want %d), LSQR %d (want %d)", niter, cg,
           2 * niter + 1, pipe, niter + 1, lsqr, 2 * niter + 2);
  st_problem_free(&p);
}
END_TEST

/* ---- diagonal operator ---- */

START_TEST(test_diagonal) {
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = all_dtypes[k];
    rmaop_layout l = NULL;
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 13, &l));
    double _Complex *dg = NULL, *xg = NULL;
    rmaop_vec dv = st_make_vec(l, d, 6, 1.0, &dg), x = st_make_vec(l, d, 2, 1.0, &xg), y = NULL, z = NULL;
    rmaop_op D = NULL;
    RT_OK(rmaop_op_create_diagonal(dv, &D));
    rmaop_vec_destroy(&dv); /* copied */
    double err = 1;
    RT_OK(rmaop_op_dottest(D, 11, &err));
    RT_CHECK(err < (d == RMAOP_F64 || d == RMAOP_C128 ? 1e-12 : 1e-5), "%s diagonal dot test %g", rmaop_dtype_name(d), err);
    RT_OK(rmaop_vec_duplicate(x, &y));
    RT_OK(rmaop_vec_duplicate(x, &z));
    RT_OK(rmaop_op_apply(D, x, y));
    RT_OK(rmaop_op_apply_adjoint(D, x, z));
    double _Complex *fy = st_cvec(13), *fz = st_cvec(13);
    for (int i = 0; i < 13; ++i) fy[i] = dg[i] * xg[i], fz[i] = conj(dg[i]) * xg[i];
    char msg[400] = "";
    RT_CHECK(st_x_matches(y, fy, rt_tol(d), msg, sizeof msg), "%s diagonal forward: %s", rmaop_dtype_name(d), msg);
    RT_CHECK(st_x_matches(z, fz, rt_tol(d), msg, sizeof msg), "%s diagonal adjoint: %s", rmaop_dtype_name(d), msg);
    free(dg), free(xg), free(fy), free(fz);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&z);
    rmaop_op_destroy(&D);
    rmaop_layout_destroy(&l);
  }
  /* and the composite of the bench passes its dot test */
  for (int k = 0; k < 4; ++k) {
    st_problem q = make_dtd(ctx, all_dtypes[k]);
    double err = 1;
    RT_OK(rmaop_op_dottest(q.A, 5, &err));
    RT_CHECK(err < (k < 2 ? 1e-12 : 1e-5), "%s D^H D + diag dot test %g", rmaop_dtype_name(all_dtypes[k]), err);
    st_problem_free(&q);
  }
  rmaop_op D = NULL;
  RT_EXPECT(rmaop_op_create_diagonal(NULL, &D), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("d is NULL");
}
END_TEST

/* ---- errors ---- */

START_TEST(test_bad_input) {
  st_problem p = st_make_spd(ctx, RMAOP_F64);
  st_bad_vecs bv = st_bad_vecs_create(ctx, &p);
  const rmaop_vec y = bv.y, x = bv.x, xbig = bv.xbig, x32 = bv.x32;
  rmaop_solver_options o;
  rmaop_solver_info info;
  for (int which = 0; which < 2; ++which) {
    const st_solver_fn solver = which ? rmaop_solve_pipecg : rmaop_solve_lsqr;
    const char *fn = which ? "rmaop_solve_pipecg" : "rmaop_solve_lsqr";
    rmaop_solver_options_init(&o);
    RT_CHECK(o.atol == 0 && o.btol == 0 && o.conlim == 0 && o.residual_replacement == 0,
             "rmaop_solver_options_init: atol %g btol %g conlim %g rr %d", o.atol, o.btol, o.conlim,
             o.residual_replacement);
    o.niter = -1;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("niter = -1 is negative");
    RT_MESSAGE_HAS(fn);
    rmaop_solver_options_init(&o);
    RT_EXPECT(solver(NULL, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("operator is NULL");
    RT_EXPECT(solver(p.A, NULL, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("y is NULL");
    RT_EXPECT(solver(p.A, y, NULL, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("x is NULL");
    RT_EXPECT(solver(p.A, y, x, NULL, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("options is NULL");
    RT_EXPECT(solver(p.A, y, x, &o, NULL), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("info is NULL");
    o.atol = NAN;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("must not be NaN");
    o.atol = 0, o.residual_replacement = -2;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("residual_replacement = -2 is negative");
    /* one rank's bad option: every rank returns (they agree before the first reduction), none hangs */
    o.residual_replacement = rt_rank == rt_size - 1 ? -1 : 0;
    RT_EXPECT_ON(solver(p.A, y, x, &o, &info), rt_size - 1, RMAOP_ERR_ARG);
    o.residual_replacement = 0;
    o.niter = rt_rank == 0 ? -3 : 5;
    RT_EXPECT_ON(solver(p.A, y, x, &o, &info), 0, RMAOP_ERR_ARG);
    o.niter = 10;
    RT_EXPECT(solver(p.A, y, xbig, &o, &info), RT_BIT(RMAOP_ERR_ARG)); /* mismatched layout, on every rank */
    RT_MESSAGE_HAS("elements here");
    o.x0 = x32; /* x0 of another dtype */
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("f32");
  }
  st_bad_vecs_free(&bv);
  st_problem_free(&p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver_krylov");
  TCase *tl = tcase_create("lsqr");
  tcase_add_checked_fixture(tl, setup, teardown);
  tcase_add_test(tl, test_lsqr_derivative);
  tcase_add_test(tl, test_lsqr_vstack);
  tcase_add_test(tl, test_lsqr_matches_cgls);
  tcase_add_test(tl, test_lsqr_stopping);
  tcase_add_test(tl, test_lsqr_device_scalars);
  suite_add_tcase(s, tl);
  TCase *tp = tcase_create("pipecg");
  tcase_add_checked_fixture(tp, setup, teardown);
  tcase_add_test(tp, test_pipecg_reference);
  tcase_add_test(tp, test_pipecg_vs_cg);
  tcase_add_test(tp, test_pipecg_stopping);
  tcase_add_test(tp, test_pipecg_device_scalars);
  tcase_add_test(tp, test_reduction_count);
  suite_add_tcase(s, tp);
  TCase *te = tcase_create("misc");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_diagonal);
  tcase_add_test(te, test_bad_input);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) { return rt_main(argc, argv, make_suite); }
