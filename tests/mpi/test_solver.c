/* Tests of rmaop_solve_cg and rmaop_solve_cgls. Reference: serial implementations of PyLops' CG and CGLS
 * recurrences (pylops.optimization.cls_basic), written here in double complex on a dense global matrix that
 * every rank builds from the operator's formula (block-diagonal SPD blocks, a centered first derivative, a
 * vstack). The library's residual history must match the reference to 1e-10 relative at every iteration
 * (f64, c128; 1e-4 for f32, c64), on every backend: that is how backends are shown to agree on histories.
 * The final x, the iteration count and the stopping reason must match too. The problems, the dense matrices and
 * the checks of one solve are shared with test_solver_krylov.c (solver_test_util.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"
#include "solver_test_util.h"

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

/* ---- serial PyLops recurrences ---- */

/* CG: r = y - A x0, c = r, kold = |r.r|; a = kold / |c^H A c|; x += a c; r -= a Ac; k = |r.r|;
 * c = r + (k / kold) c; kold = k; while it < niter and kold > tol. */
static void ref_cg(const st_mat *A, const double _Complex *y, const double _Complex *x0, int niter, double tol,
                   st_ref *out) {
  const int64_t n = A->n;
  double _Complex *x = st_cvec(n), *r = st_cvec(n), *c = st_cvec(n), *Ac = st_cvec(n);
  if (x0)
    memcpy(x, x0, (size_t)n * sizeof *x);
  st_matvec(A, 0, x, r);
  for (int64_t i = 0; i < n; ++i)
    r[i] = y[i] - r[i], c[i] = r[i];
  double kold = cabs(st_vdot(n, r, r));
  int it = 0;
  out->history[0] = sqrt(kold);
  while (it < niter && kold > tol) {
    st_matvec(A, 0, c, Ac);
    const double a = kold / cabs(st_vdot(n, c, Ac));
    for (int64_t i = 0; i < n; ++i)
      x[i] += a * c[i], r[i] -= a * Ac[i];
    const double k = cabs(st_vdot(n, r, r));
    for (int64_t i = 0; i < n; ++i)
      c[i] = r[i] + (k / kold) * c[i];
    kold = k;
    out->history[++it] = sqrt(k);
  }
  out->iterations = it;
  out->reason = kold <= tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER;
  out->x = x;
  free(r), free(c), free(Ac);
}

/* CGLS (damp2 = eps^2): s = y - A x0; r = A^H s - damp2 x0; c = r; q = A c; kold = |r.r|; history = ||s||;
 * a = kold / (q.q + damp2 c.c); x += a c; s -= a q; r = A^H s - damp2 x; k = |r.r|; c = r + (k / kold) c;
 * q = A c; kold = k. */
static void ref_cgls(const st_mat *A, const double _Complex *y, const double _Complex *x0, int niter, double tol,
                     double damp, st_ref *out) {
  const int64_t m = A->m, n = A->n;
  const double damp2 = damp * damp;
  double _Complex *x = st_cvec(n), *s = st_cvec(m), *r = st_cvec(n), *c = st_cvec(n), *q = st_cvec(m);
  if (x0)
    memcpy(x, x0, (size_t)n * sizeof *x);
  st_matvec(A, 0, x, s);
  for (int64_t i = 0; i < m; ++i)
    s[i] = y[i] - s[i];
  st_matvec(A, 1, s, r);
  for (int64_t j = 0; j < n; ++j)
    r[j] -= damp2 * x[j], c[j] = r[j];
  st_matvec(A, 0, c, q);
  double kold = cabs(st_vdot(n, r, r));
  int it = 0;
  out->history[0] = sqrt(creal(st_vdot(m, s, s)));
  while (it < niter && kold > tol) {
    const double a = kold / (creal(st_vdot(m, q, q)) + damp2 * creal(st_vdot(n, c, c)));
    for (int64_t j = 0; j < n; ++j)
      x[j] += a * c[j];
    for (int64_t i = 0; i < m; ++i)
      s[i] -= a * q[i];
    st_matvec(A, 1, s, r);
    for (int64_t j = 0; j < n; ++j)
      r[j] -= damp2 * x[j];
    const double k = cabs(st_vdot(n, r, r));
    for (int64_t j = 0; j < n; ++j)
      c[j] = r[j] + (k / kold) * c[j];
    st_matvec(A, 0, c, q);
    kold = k;
    out->history[++it] = sqrt(creal(st_vdot(m, s, s)));
  }
  out->iterations = it;
  out->reason = kold <= tol ? RMAOP_REASON_TOL : RMAOP_REASON_NITER;
  out->x = x;
  free(s), free(r), free(c), free(q);
}

/* ---- one solve against the reference ---- */

typedef struct {
  int cgls;
  int niter;
  double tol, damp;
  int with_x0;
  int zero_y;
} run_cfg;

/* Solves with the library and serially; checks history (relative, no floor), x, iterations, reason, the callback,
 * that x0 is unchanged and that rmaop_solver_info_destroy clears the history. Returns the reference (caller frees
 * ref->x). */
static void run_solve(const st_problem *p, rmaop_dtype d, const run_cfg *rc, st_ref *ref) {
  st_solve_vecs v = st_solve_vecs_create(p, d, rc->with_x0, rc->zero_y);
  st_cb_state cb = {.expect_x = v.x, .x_seen_ok = 1};
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = rc->niter, o.tol = rc->tol, o.damp = rc->damp, o.x0 = v.x0, o.callback = st_record_cb, o.user = &cb;
  rmaop_solver_info info;
  memset(&info, 0, sizeof info);
  if (rc->cgls) {
    RT_OK(rmaop_solve_cgls(p->A, v.y, v.x, &o, &info));
    ref_cgls(&p->M, v.yg, v.x0g, rc->niter, rc->tol, rc->damp, ref);
  } else {
    RT_OK(rmaop_solve_cg(p->A, v.y, v.x, &o, &info));
    ref_cg(&p->M, v.yg, v.x0g, rc->niter, rc->tol, ref);
  }
  char what[200], msg[400] = "";
  snprintf(what, sizeof what, "%s on %s (%s, niter %d, tol %g, damp %g%s%s)", rc->cgls ? "CGLS" : "CG", p->name,
           rmaop_dtype_name(d), rc->niter, rc->tol, rc->damp, rc->with_x0 ? ", x0" : "", rc->zero_y ? ", y = 0" : "");
  st_check_solve(what, d, &info, ref, v.x, &cb, 0.0);
  if (v.x0) { /* x0 is not modified */
    const int ok = st_x_matches(v.x0, v.x0g, 0.0, msg, sizeof msg);
    RT_CHECK(ok, "%s: x0 changed: %s", what, msg);
  }
  rmaop_solver_info_destroy(&info);
  RT_CHECK(info.history == NULL, "rmaop_solver_info_destroy did not clear history");
  st_solve_vecs_free(&v);
}

static void solve(const st_problem *p, rmaop_dtype d, run_cfg rc) {
  st_ref ref;
  run_solve(p, d, &rc, &ref);
  free(ref.x);
}

/* ---- tests ---- */

START_TEST(test_cg) {
  const rmaop_dtype ds[4] = {RMAOP_F64, RMAOP_C128, RMAOP_F32, RMAOP_C64};
  for (int k = 0; k < 4; ++k) {
    const rmaop_dtype d = ds[k];
    st_problem p = st_make_spd(ctx, d);
    const int full = k < 2;
    solve(&p, d, (run_cfg){.niter = full ? 6 : 4});
    if (full) {
      solve(&p, d, (run_cfg){.niter = 6, .with_x0 = 1});
      solve(&p, d, (run_cfg){.niter = 1});
    }
    st_problem_free(&p);
  }
}
END_TEST

START_TEST(test_cg_stopping) {
  st_problem p = st_make_spd(ctx, RMAOP_F64);
  /* tol between the 2nd and 3rd squared residuals of the reference: stops after 3 iterations with TOL */
  st_ref ref;
  run_solve(&p, RMAOP_F64, &(run_cfg){.niter = 8}, &ref);
  free(ref.x);
  const double tol = ref.history[2] * ref.history[3];
  run_solve(&p, RMAOP_F64, &(run_cfg){.niter = 8, .tol = tol}, &ref);
  free(ref.x);
  RT_CHECK(ref.iterations == 3 && ref.reason == RMAOP_REASON_TOL, "reference: %d iterations, reason %d", ref.iterations,
           (int)ref.reason);
  /* the same tolerance but fewer iterations allowed: NITER */
  run_solve(&p, RMAOP_F64, &(run_cfg){.niter = 2, .tol = tol}, &ref);
  free(ref.x);
  RT_CHECK(ref.iterations == 2 && ref.reason == RMAOP_REASON_NITER, "reference: %d iterations", ref.iterations);
  /* tol above the initial residual: no iteration, TOL */
  solve(&p, RMAOP_F64, (run_cfg){.niter = 8, .tol = 1e30});
  /* niter 0: no iteration, NITER, history[0] = ||y|| */
  solve(&p, RMAOP_F64, (run_cfg){.niter = 0, .with_x0 = 1});
  /* y = 0 and no x0: the residual is 0 from the start (0 <= tol = 0): TOL, x = 0 */
  solve(&p, RMAOP_F64, (run_cfg){.niter = 5, .zero_y = 1});
  st_problem_free(&p);
}
END_TEST

START_TEST(test_cgls_derivative) {
  const rmaop_dtype ds[3] = {RMAOP_F64, RMAOP_C128, RMAOP_C64};
  for (int k = 0; k < 3; ++k) {
    const rmaop_dtype d = ds[k];
    st_problem p = st_make_derivative(ctx, d);
    if (k < 2) {
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 10});
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 10, .damp = 0.3});
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 10, .damp = 0.3, .with_x0 = 1});
    } else {
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 5, .damp = 0.3, .with_x0 = 1});
    }
    st_problem_free(&p);
  }
}
END_TEST

START_TEST(test_cgls_vstack) {
  const rmaop_dtype ds[3] = {RMAOP_F64, RMAOP_C128, RMAOP_F32};
  for (int k = 0; k < 3; ++k) {
    const rmaop_dtype d = ds[k];
    st_problem p = st_make_vstack(ctx, d);
    solve(&p, d, (run_cfg){.cgls = 1, .niter = k < 2 ? 5 : 3});
    if (k < 2) {
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 5, .damp = 0.5, .with_x0 = 1});
      solve(&p, d, (run_cfg){.cgls = 1, .niter = 4, .with_x0 = 1});
    }
    st_problem_free(&p);
  }
}
END_TEST

START_TEST(test_cgls_stopping) {
  st_problem p = st_make_derivative(ctx, RMAOP_F64);
  /* CGLS's tol applies to kold = |r.r| (r = A^H s, the normal equations' residual), not to the history ||s|| */
  double _Complex *yg = st_cvec(p.M.m), *r = st_cvec(p.M.n);
  for (int64_t i = 0; i < p.M.m; ++i)
    yg[i] = rt_round(RMAOP_F64, rt_value(i, 3));
  st_matvec(&p.M, 1, yg, r);
  const double k0 = cabs(st_vdot(p.M.n, r, r));
  free(yg), free(r);
  /* a tolerance below kold at the start: some iterations, then TOL long before niter */
  st_ref ref;
  run_solve(&p, RMAOP_F64, &(run_cfg){.cgls = 1, .niter = 30, .tol = 0.2 * k0}, &ref);
  free(ref.x);
  RT_CHECK(ref.reason == RMAOP_REASON_TOL && ref.iterations >= 1 && ref.iterations < 30,
           "reference CGLS: %d iterations, reason %d", ref.iterations, (int)ref.reason);
  /* the same tolerance with fewer iterations allowed than it needs: NITER */
  if (ref.iterations > 1) {
    const int need = ref.iterations;
    run_solve(&p, RMAOP_F64, &(run_cfg){.cgls = 1, .niter = need - 1, .tol = 0.2 * k0}, &ref);
    free(ref.x);
    RT_CHECK(ref.reason == RMAOP_REASON_NITER, "reference CGLS: reason %d", (int)ref.reason);
  }
  solve(&p, RMAOP_F64, (run_cfg){.cgls = 1, .niter = 4, .tol = 2.0 * k0}); /* no iteration, TOL */
  solve(&p, RMAOP_F64, (run_cfg){.cgls = 1, .niter = 0, .damp = 0.2, .with_x0 = 1});
  solve(&p, RMAOP_F64, (run_cfg){.cgls = 1, .niter = 4, .zero_y = 1}); /* kold = 0 from the start: TOL */
  st_problem_free(&p);
}
END_TEST

START_TEST(test_callback_error) {
  /* a callback returning an error (on every rank) stops the solver with that error */
  for (int cgls = 0; cgls < 2; ++cgls) {
    st_problem p = cgls ? st_make_derivative(ctx, RMAOP_F64) : st_make_spd(ctx, RMAOP_F64);
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p.A, &oi));
    rmaop_vec y = st_make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = st_make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
    st_cb_state cb = {.expect_x = x, .x_seen_ok = 1, .fail_at = 2, .fail = RMAOP_ERR_UNSUPPORTED};
    rmaop_solver_options o;
    rmaop_solver_options_init(&o);
    o.niter = 6, o.callback = st_record_cb, o.user = &cb;
    rmaop_solver_info info;
    memset(&info, 0, sizeof info);
    rmaop_status st = cgls ? rmaop_solve_cgls(p.A, y, x, &o, &info) : rmaop_solve_cg(p.A, y, x, &o, &info);
    RT_CHECK(st == RMAOP_ERR_UNSUPPORTED && cb.calls == 2, "%s: callback error at iteration 2 -> %s after %d calls",
             cgls ? "CGLS" : "CG", rmaop_status_string(st), cb.calls);
    rmaop_solver_info_destroy(&info);
    rmaop_vec_destroy(&y), rmaop_vec_destroy(&x);
    st_problem_free(&p);
  }
}
END_TEST

START_TEST(test_bad_options) {
  st_problem p = st_make_spd(ctx, RMAOP_F64);
  st_bad_vecs bv = st_bad_vecs_create(ctx, &p);
  const rmaop_vec y = bv.y, x = bv.x, xbig = bv.xbig, x32 = bv.x32;
  rmaop_solver_options o;
  rmaop_solver_info info;
  for (int cgls = 0; cgls < 2; ++cgls) {
    const st_solver_fn solver = cgls ? rmaop_solve_cgls : rmaop_solve_cg;
    rmaop_solver_options_init(&o);
    RT_CHECK(o.niter > 0 && o.tol == 0 && o.damp == 0 && o.x0 == NULL && o.callback == NULL,
             "rmaop_solver_options_init: niter %d tol %g damp %g", o.niter, o.tol, o.damp);
    o.niter = -1;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("niter");
    rmaop_solver_options_init(&o);
    RT_EXPECT(solver(NULL, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, NULL, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, y, NULL, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, y, x, NULL, &info), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(solver(p.A, y, x, &o, NULL), RT_BIT(RMAOP_ERR_ARG));
    o.tol = -1;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    o.tol = 0, o.damp = NAN;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    o.damp = 0;
    /* x on a layout of another global size (on every rank) */
    RT_EXPECT(solver(p.A, y, xbig, &o, &info), RT_BIT(RMAOP_ERR_ARG));
    /* x0 of the wrong dtype */
    o.x0 = x32;
    RT_EXPECT(solver(p.A, y, x, &o, &info), RT_BIT(RMAOP_ERR_ARG));
  }
  rmaop_solver_options_init(NULL); /* no-op */
  rmaop_solver_info_destroy(NULL);
  st_bad_vecs_free(&bv);
  st_problem_free(&p);
}
END_TEST

/* The same solve (CGLS or CG; no callback: where RMAOP_SOLVER_SCALARS=while, the one-graph loop) on p[0], of a
 * device-scalar context in `mode`, and p[1], of a host-scalar context: the same iterations, reason and history (to
 * 1e-12), x to 1e-12 of its largest entry, and info.graph where graphs are expected; a tolerance > 0 must stop it. */
static void same_as_host_scalars(st_problem p[2], rmaop_dtype d, int cgls, int niter, double tol, int mode,
                                 const char *what) {
  const int by_tol = tol > 0.0; /* the cases with a tolerance are chosen so that it stops the solve */
  rmaop_solver_info info[2];
  rmaop_vec x[2], y[2];
  for (int c = 0; c < 2; ++c) {
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(p[c].A, &oi));
    y[c] = st_make_vec(oi.data, d, 3, 1.0, NULL);
    x[c] = st_make_vec(oi.model, d, 5, 1.0, NULL);
    rmaop_solver_options o;
    rmaop_solver_options_init(&o);
    o.niter = niter, o.damp = cgls ? 0.1 : 0.0, o.tol = tol;
    memset(&info[c], 0, sizeof info[c]);
    RT_OK(cgls ? rmaop_solve_cgls(p[c].A, y[c], x[c], &o, &info[c]) : rmaop_solve_cg(p[c].A, y[c], x[c], &o, &info[c]));
  }
  const char *dn = rmaop_dtype_name(d), *mn = st_scalars_name(mode);
  RT_CHECK(!by_tol || (info[1].reason == RMAOP_REASON_TOL && info[1].iterations < niter),
           "%s %s, %s: tol did not stop the solve (%d iterations)", dn, mn, what, info[1].iterations);
  const int graph = !mode || !st_graph_expected() ? 0 : mode == 3 && st_one_graph_expected() ? 2 : 1; /* no callback */
  RT_CHECK(info[0].graph == graph && info[1].graph == 0,
           "%s %s, %s: info.graph is %d (want %d) and %d with host scalars", dn, mn, what, info[0].graph, graph,
           info[1].graph);
  RT_CHECK(info[0].iterations == info[1].iterations && info[0].reason == info[1].reason,
           "%s %s, %s: device scalars %d iterations (reason %d), host scalars %d (reason %d)", dn, mn, what,
           info[0].iterations, (int)info[0].reason, info[1].iterations, (int)info[1].reason);
  for (int i = 0; i <= info[0].iterations && i <= info[1].iterations; ++i)
    RT_CHECK(fabs(info[0].history[i] - info[1].history[i]) <= 1e-12 * info[1].history[i],
             "%s %s, %s: history[%d] %.17g (device scalars) vs %.17g (host)", dn, mn, what, i, info[0].history[i],
             info[1].history[i]);
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(x[0], &vi));
  void *a = rt_alloc(d, vi.local_n), *b = rt_alloc(d, vi.local_n);
  RT_OK(rmaop_vec_read_local(x[0], a));
  RT_OK(rmaop_vec_read_local(x[1], b));
  double big = 0, diff = 0;
  for (int64_t i = 0; i < vi.local_n; ++i) {
    big = fmax(big, cabs(rt_load(d, b, i)));
    diff = fmax(diff, cabs(rt_load(d, a, i) - rt_load(d, b, i)));
  }
  RT_CHECK(diff <= 1e-12 * (big + 1e-300), "%s %s, %s: x differs by %.3g (largest |x| %.3g)", dn, mn, what, diff, big);
  free(a), free(b);
  for (int c = 0; c < 2; ++c) {
    rmaop_solver_info_destroy(&info[c]);
    rmaop_vec_destroy(&x[c]), rmaop_vec_destroy(&y[c]);
  }
}

/* RMAOP_SOLVER_SCALARS=device, =graph and =while (CGLS's dots and step sizes on the device, eagerly, replayed from
 * CUDA graphs per iteration, or the whole solve as one graph; on host memory the host loop runs): against the serial
 * reference (niter, damping, x0, a tolerance that stops it; with a callback, so while replays per iteration), and
 * against RMAOP_SOLVER_SCALARS=host without a callback: the same iterations, reason, history and x. */
START_TEST(test_cgls_scalars_host_device) {
  rmaop_ctx hctx = st_scalars_ctx(-1);
  const int modes[3] = {0, 1, 3};
  for (int m = 0; m < 3; ++m) {
    const int mode = modes[m];
    rmaop_ctx dctx = st_scalars_ctx(mode);
    const rmaop_dtype dts[2] = {RMAOP_F64, RMAOP_C128};
    for (int k = 0; k < 2; ++k) {
      const rmaop_dtype d = dts[k];
      for (int stop_early = 0; stop_early < 2; ++stop_early) {
        st_problem p[2] = {st_make_derivative(dctx, d), st_make_derivative(hctx, d)};
        /* kold at the start (x0 = 0): |A^H y|^2, as test_cgls_stopping computes it */
        double _Complex *yg = st_cvec(p[0].M.m), *r = st_cvec(p[0].M.n);
        for (int64_t i = 0; i < p[0].M.m; ++i)
          yg[i] = rt_round(d, rt_value(i, 3));
        st_matvec(&p[0].M, 1, yg, r);
        const double k0 = cabs(st_vdot(p[0].M.n, r, r));
        free(yg), free(r);
        if (stop_early) {
          solve(&p[0], d, (run_cfg){.cgls = 1, .niter = 30, .tol = 0.2 * k0});
        } else {
          solve(&p[0], d, (run_cfg){.cgls = 1, .niter = 10});
          solve(&p[0], d, (run_cfg){.cgls = 1, .niter = 10, .damp = 0.3, .with_x0 = 1});
          solve(&p[0], d, (run_cfg){.cgls = 1, .niter = 4, .zero_y = 1});
        }
        same_as_host_scalars(p, d, 1, stop_early ? 30 : 12, stop_early ? 0.2 * k0 : 0.0, mode,
                             stop_early ? "with tol" : "niter");
        for (int c = 0; c < 2; ++c)
          st_problem_free(&p[c]);
      }
    }
    rmaop_ctx_destroy(&dctx);
  }
  rmaop_ctx_destroy(&hctx);
}
END_TEST

/* CG with device scalars (eager, replayed from CUDA graphs, one graph for the solve): test_cg's and
 * test_cg_stopping's cases against the serial reference on contexts with RMAOP_SOLVER_SCALARS=device, =graph and
 * =while (with a callback: while replays per iteration), info.graph, and without a callback against host scalars. */
START_TEST(test_cg_device_scalars) {
  rmaop_ctx hctx = st_scalars_ctx(-1);
  const int modes[3] = {0, 1, 3};
  for (int m = 0; m < 3; ++m) {
    const int mode = modes[m];
    rmaop_ctx dctx = st_scalars_ctx(mode);
    const rmaop_dtype dts[2] = {RMAOP_F64, RMAOP_C128};
    for (int k = 0; k < 2; ++k) {
      const rmaop_dtype d = dts[k];
      st_problem p = st_make_spd(dctx, d);
      solve(&p, d, (run_cfg){.niter = 6});
      solve(&p, d, (run_cfg){.niter = 6, .with_x0 = 1});
      solve(&p, d, (run_cfg){.niter = 1});
      st_ref ref;
      run_solve(&p, d, &(run_cfg){.niter = 8}, &ref);
      free(ref.x);
      const double tol = ref.history[2] * ref.history[3];
      run_solve(&p, d, &(run_cfg){.niter = 8, .tol = tol}, &ref); /* the library stops where the reference does */
      free(ref.x);
      solve(&p, d, (run_cfg){.niter = 8, .tol = 1e30});
      solve(&p, d, (run_cfg){.niter = 5, .zero_y = 1});
      st_problem pp[2] = {p, st_make_spd(hctx, d)};
      same_as_host_scalars(pp, d, 0, 8, 0.0, mode, "niter");
      same_as_host_scalars(pp, d, 0, 8, tol, mode, "with tol");
      st_problem_free(&pp[1]);
      st_problem_free(&p);
    }
    rmaop_ctx_destroy(&dctx);
  }
  rmaop_ctx_destroy(&hctx);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver");
  TCase *tc = tcase_create("cg");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_cg);
  tcase_add_test(tc, test_cg_stopping);
  tcase_add_test(tc, test_cg_device_scalars);
  suite_add_tcase(s, tc);
  TCase *tl = tcase_create("cgls");
  tcase_add_checked_fixture(tl, setup, teardown);
  tcase_add_test(tl, test_cgls_derivative);
  tcase_add_test(tl, test_cgls_vstack);
  tcase_add_test(tl, test_cgls_stopping);
  tcase_add_test(tl, test_cgls_scalars_host_device);
  suite_add_tcase(s, tl);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_callback_error);
  tcase_add_test(te, test_bad_options);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
