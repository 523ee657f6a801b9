/* Krylov solvers with PyLops' recurrences (pylops.optimization.cls_basic CG and CGLS; Hestenes & Stiefel
 * 1952), so residual histories can be compared number for number. The dot products of one iteration go
 * through one fused reduction at each of the recurrences' two synchronization points. */
#include "solver_impl.h"

#ifdef RMAOP_HAVE_CUDA
#include "device.h"
#endif

void rmaop_solver_options_init(rmaop_solver_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->niter = 10;
}

void rmaop_solver_info_free(rmaop_solver_info *info) {
  if (!info) return;
  free(info->history);
  info->history = NULL;
}

rmaop_status rmaop_solve_cg(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o, rmaop_solver_info *info) {
  solve_clock clk = {0}; /* set by solver_start; zeroed for gcc -O2 -Wmaybe-uninitialized */
  RMAOP_CHECK(solver_start("rmaop_solve_cg", A, y, x, o, info, &clk, NULL));
  rmaop_vec r = NULL, c = NULL, Ac = NULL;
  rmaop_status st = rmaop_vec_duplicate(x, &r);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &c);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &Ac);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_residual(A, y, x, o, r), st, out);
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
  double _Complex d[2];
  RMAOP_CHECK_GOTO(rmaop_vec_dot(r, r, &d[0]), st, out);
  double kold = cabs(d[0]);
  info->history[0] = sqrt(kold);
  info->reason = RMAOP_REASON_NITER;
  while (info->iterations < o->niter && kold > o->tol) {
    RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, Ac), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_dot(Ac, c, &d[0]), st, out);
    const double cAc = cabs(d[0]);
    if (cAc == 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    const double a = kold / cAc;
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(x, a, c), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -a, Ac), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_dot(r, r, &d[1]), st, out);
    const double k = cabs(d[1]);
    RMAOP_CHECK_GOTO(rmaop_vec_axpby(c, 1.0, k / kold, r), st, out); /* c = r + b c */
    kold = k;
    RMAOP_CHECK_GOTO(after_iteration(o, info, sqrt(kold), x), st, out);
  }
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
out:
  solver_stop(&clk);
  rmaop_vec_destroy(&r);
  rmaop_vec_destroy(&c);
  rmaop_vec_destroy(&Ac);
  if (st != RMAOP_OK) rmaop_solver_info_free(info);
  return st;
}

#ifdef RMAOP_HAVE_CUDA
/* CGLS's iterations with the scalars on the device (RMAOP_SOLVER_SCALARS; README): the host loop's
 * operations in the host loop's order, but the two fused dots go into device memory
 * (rmaop__vec_mdot_device), a one-thread kernel makes a and b there, and the vector updates read them
 * (rmaop__dev_axpby_s, the arithmetic of rmaop_vec_axpby). The host needs one value per iteration, the
 * residual for the stopping test and the history: it is fetched behind the iteration's r.r/s.s reduction
 * while c = r + b c and q = A c (the next iteration's first operands, internal vectors) are already
 * enqueued, so the one host wait overlaps them. Same iterations, history and x as the host loop; a
 * breakdown (q.q + damp^2 c.c = 0) leaves x and s as they were (the updates skip themselves). */
static rmaop_status axpby_s(rmaop_vec y, rmaop_vec x, const double *sc, int ia, double sa, int ib, double b) {
  return rmaop__dev_axpby_s(y->ctx, y->dtype, y->data, x->data, y->local_n, sc, ia, sa, ib, b, RMAOP__CG_BREAKDOWN);
}

/* One iteration after the stopping test, enqueued, in two parts. Part 0: x, s and r updated, the scalars in sc,
 * and the copy of sc to the host h (with the event the host waits for, unless `graph`: a replayed graph holds
 * the copy, and the event goes behind the launch). Part 1: c = r + b c and q = A c, the next iteration's first
 * operands, which the GPU runs while the host waits for h. */
static rmaop_status cgls_device_part(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                                     double damp2, double *d, double *h, int graph, int part) {
  rmaop_ctx ctx = A->ctx;
  double *qc = d, *rs = d + 4, *sc = d + 8;
  rmaop_vec dx[2] = {r, s}, ex[2] = {q, c};
  if (part == 1) {
    RMAOP_CHECK(axpby_s(c, r, sc, -1, 1.0, RMAOP__CG_B, 0.0)); /* c = r + b c */
    return rmaop_op_apply(A, c, q);
  }
  RMAOP_CHECK(rmaop__vec_mdot_device(2, ex, ex, qc)); /* q.q and c.c in one reduction */
  RMAOP_CHECK(rmaop__dev_cgls_scalars(ctx, qc, damp2, sc, 0));
  RMAOP_CHECK(axpby_s(x, c, sc, RMAOP__CG_A, 1.0, -1, 1.0));  /* x += a c */
  RMAOP_CHECK(axpby_s(s, q, sc, RMAOP__CG_A, -1.0, -1, 1.0)); /* s -= a q */
  RMAOP_CHECK(rmaop_op_apply_adjoint(A, s, r));
  if (damp2 != 0.0)
    RMAOP_CHECK(rmaop_vec_axpy(r, -damp2, x));
  RMAOP_CHECK(rmaop__vec_mdot_device(2, dx, dx, rs)); /* r.r and s.s in one reduction */
  RMAOP_CHECK(rmaop__dev_cgls_scalars(ctx, rs, damp2, sc, 1));
  if (graph)
    return rmaop__dev_copy(ctx, h, sc, RMAOP__CG_NSLOTS * sizeof(double));
  return rmaop__dev_fetch_begin(ctx, h, sc, RMAOP__CG_NSLOTS);
}

/* RMAOP_SOLVER_SCALARS=graph: the two parts above captured once each into a CUDA graph and replayed, two
 * launches per iteration (one would leave the GPU idle while the host waits for h and launches the next).
 * Every rank captures; when an operation refuses (a path whose work cannot be captured: rmaop.h,
 * rmaop_ctx_stream) before any plan was captured, nothing changed on the host and every rank goes on
 * without graphs (exec[] NULL); a refusal after a plan was captured is an error. Collective. */
static rmaop_status cgls_capture(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                                 double damp2, double *d, double *h, void *exec[2]) {
  rmaop_ctx ctx = A->ctx;
  const uint64_t plans_before = ctx->captured_plans;
  rmaop_status st = RMAOP_OK;
  char why[sizeof ctx->last_error] = "";
  for (int part = 0; part < 2 && st == RMAOP_OK; ++part) {
    size_t nodes = 0;
    RMAOP_CHECK(rmaop__dev_capture_begin(ctx));
    st = cgls_device_part(A, x, s, q, r, c, damp2, d, h, 1, part);
    if (st != RMAOP_OK)
      memcpy(why, ctx->last_error, sizeof why);
    const rmaop_status end = rmaop__dev_capture_end(ctx, st == RMAOP_OK, &exec[part], &nodes);
    if (st == RMAOP_OK)
      st = end;
  }
  const int refused = st == RMAOP_ERR_UNSUPPORTED && ctx->captured_plans == plans_before;
  int all_refused = 0;
  RMAOP_CHECK_MPI(ctx, MPI_Allreduce(&refused, &all_refused, 1, MPI_INT, MPI_MIN, ctx->comm));
  if (refused) {
    rmaop__dev_graph_free(exec[0]), rmaop__dev_graph_free(exec[1]);
    exec[0] = exec[1] = NULL;
  }
  if (all_refused) {
    memcpy(ctx->last_error, why, sizeof why); /* the loop goes on without graphs; the reason stays readable */
    return RMAOP_OK;
  }
  if (refused) /* here no plan was captured, elsewhere one was: an error on every rank */
    st = RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE,
                     "rmaop_solve_cgls: another rank captured work into a CUDA graph that this rank refused to "
                     "capture (%s)",
                     why);
  return rmaop__agree(ctx, st, "rmaop_solve_cgls (capturing an iteration into CUDA graphs)");
}

static rmaop_status cgls_device_loop(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                                     const rmaop_solver_options *o, double damp2, rmaop_solver_info *info,
                                     double *kold_out) {
  rmaop_ctx ctx = A->ctx;
  double *d = NULL, *h = NULL;
  void *exec[2] = {NULL, NULL};
  rmaop_status st = rmaop__dev_malloc(ctx, 16 * sizeof(double), "CGLS device scalars", (void **)&d);
  if (st == RMAOP_OK)
    st = rmaop__dev_host_malloc(ctx, RMAOP__CG_NSLOTS * sizeof(double), "CGLS host scalars", (void **)&h);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, "rmaop_solve_cgls (device scalars)"), st, out);
  double *rs = d + 4, *sc = d + 8;
  rmaop_vec dx[2] = {r, s};
  RMAOP_CHECK_GOTO(rmaop__vec_mdot_device(2, dx, dx, rs), st, out);
  RMAOP_CHECK_GOTO(rmaop__dev_cgls_scalars(ctx, rs, damp2, sc, 2), st, out);
  RMAOP_CHECK_GOTO(rmaop__dev_fetch_begin(ctx, h, sc, RMAOP__CG_NSLOTS), st, out);
  RMAOP_CHECK_GOTO(rmaop__dev_fetch_wait(ctx, "rmaop_solve_cgls (residual)"), st, out);
  double kold = h[RMAOP__CG_KOLD];
  info->history[0] = sqrt(h[RMAOP__CG_SS]);
  info->reason = RMAOP_REASON_NITER;
  if (ctx->solver_scalars == RMAOP__SCALARS_GRAPH && info->iterations < o->niter && kold > o->tol)
    RMAOP_CHECK_GOTO(cgls_capture(A, x, s, q, r, c, damp2, d, h, exec), st, out);
  info->graph = exec[0] != NULL;
  while (info->iterations < o->niter && kold > o->tol) {
    if (exec[0]) {
      RMAOP_CHECK_GOTO(rmaop__dev_graph_launch(ctx, exec[0]), st, out);
      RMAOP_CHECK_GOTO(rmaop__dev_fetch_mark(ctx), st, out);
      RMAOP_CHECK_GOTO(rmaop__dev_graph_launch(ctx, exec[1]), st, out);
    } else {
      RMAOP_CHECK_GOTO(cgls_device_part(A, x, s, q, r, c, damp2, d, h, 0, 0), st, out);
      RMAOP_CHECK_GOTO(cgls_device_part(A, x, s, q, r, c, damp2, d, h, 0, 1), st, out);
    }
    RMAOP_CHECK_GOTO(rmaop__dev_fetch_wait(ctx, "rmaop_solve_cgls (residual)"), st, out);
    if (h[RMAOP__CG_BREAKDOWN] != 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    kold = h[RMAOP__CG_KOLD];
    RMAOP_CHECK_GOTO(after_iteration(o, info, sqrt(h[RMAOP__CG_SS]), x), st, out);
  }
  *kold_out = kold;
out:
  rmaop__dev_graph_free(exec[0]);
  rmaop__dev_graph_free(exec[1]);
  if (d) (void)rmaop__dev_sync(ctx); /* nothing enqueued may still use d when it goes */
  rmaop__dev_free(d);
  rmaop__dev_host_free(h);
  return st;
}
#endif

rmaop_status rmaop_solve_cgls(rmaop_op A, rmaop_vec y, rmaop_vec x, const rmaop_solver_options *o,
                              rmaop_solver_info *info) {
  solve_clock clk = {0}; /* set by solver_start; zeroed for gcc -O2 -Wmaybe-uninitialized */
  RMAOP_CHECK(solver_start("rmaop_solve_cgls", A, y, x, o, info, &clk, NULL));
  const double damp2 = o->damp * o->damp;
  rmaop_vec s = NULL, q = NULL, r = NULL, c = NULL;
  rmaop_status st = rmaop_vec_duplicate(y, &s);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(y, &q);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &r);
  if (st == RMAOP_OK) st = rmaop_vec_duplicate(x, &c);
  RMAOP_CHECK_GOTO(st, st, out);
  RMAOP_CHECK_GOTO(initial_residual(A, y, x, o, s), st, out);
  RMAOP_CHECK_GOTO(rmaop_op_apply_adjoint(A, s, r), st, out);
  /* PyLops subtracts the unsquared damp here; the gradient of the damped functional needs damp^2. */
  if (o->x0 && damp2 != 0.0) RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -damp2, x), st, out);
  RMAOP_CHECK_GOTO(rmaop_vec_copy(r, c), st, out);
  RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, q), st, out);
#ifdef RMAOP_HAVE_CUDA
  /* Not the default (auto = host): on one H100 shared by 2 ranks under MPS it was not faster (PERFORMANCE.md). */
  if (A->ctx->memory == RMAOP_MEMORY_DEVICE &&
      (A->ctx->solver_scalars == RMAOP__SCALARS_DEVICE || A->ctx->solver_scalars == RMAOP__SCALARS_GRAPH) &&
      rmaop__vec_device_dots_ok(x) && rmaop__vec_device_dots_ok(y)) {
    double kdev = 0.0;
    RMAOP_CHECK_GOTO(cgls_device_loop(A, x, s, q, r, c, o, damp2, info, &kdev), st, out);
    if (info->reason != RMAOP_REASON_BREAKDOWN && kdev <= o->tol) info->reason = RMAOP_REASON_TOL;
    goto out;
  }
#endif
  double _Complex d[2];
  rmaop_vec dx[2] = {r, s}, dy[2] = {r, s};
  RMAOP_CHECK_GOTO(rmaop_vec_mdot(2, dx, dy, d), st, out);
  double kold = cabs(d[0]);
  info->history[0] = sqrt(creal(d[1]));
  info->reason = RMAOP_REASON_NITER;
  while (info->iterations < o->niter && kold > o->tol) {
    rmaop_vec ex[2] = {q, c};
    RMAOP_CHECK_GOTO(rmaop_vec_mdot(2, ex, ex, d), st, out); /* q.q and c.c in one reduction */
    const double den = creal(d[0]) + damp2 * creal(d[1]);
    if (den == 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    const double a = kold / den;
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(x, a, c), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_axpy(s, -a, q), st, out);
    RMAOP_CHECK_GOTO(rmaop_op_apply_adjoint(A, s, r), st, out);
    if (damp2 != 0.0) RMAOP_CHECK_GOTO(rmaop_vec_axpy(r, -damp2, x), st, out);
    RMAOP_CHECK_GOTO(rmaop_vec_mdot(2, dx, dy, d), st, out); /* r.r and s.s in one reduction */
    const double k = cabs(d[0]);
    RMAOP_CHECK_GOTO(rmaop_vec_axpby(c, 1.0, k / kold, r), st, out); /* c = r + b c */
    RMAOP_CHECK_GOTO(rmaop_op_apply(A, c, q), st, out);
    kold = k;
    RMAOP_CHECK_GOTO(after_iteration(o, info, sqrt(creal(d[1])), x), st, out);
  }
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol) info->reason = RMAOP_REASON_TOL;
out:
  solver_stop(&clk);
  rmaop_vec_destroy(&s);
  rmaop_vec_destroy(&q);
  rmaop_vec_destroy(&r);
  rmaop_vec_destroy(&c);
  if (st != RMAOP_OK) rmaop_solver_info_free(info);
  return st;
}
