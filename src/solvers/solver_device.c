/* CG's, CGLS's, pipelined CG's and LSQR's iterations with the scalars on the device (RMAOP_SOLVER_SCALARS;
 * README), reached from rmaop_solve_cg, rmaop_solve_cgls (src/solvers/solver.c), rmaop_solve_pipecg and
 * rmaop_solve_lsqr (src/solvers/solver_krylov.c) once they have the start's vectors. CG and CGLS: the host loop's
 * operations in the host loop's order, but the fused dots go into device memory (rmaop__vec_mdot_device), a one-thread
 * kernel makes a and b there (rmaop__dev_cgls_scalars), and the vector updates read them (rmaop__dev_axpby_s, the
 * arithmetic of rmaop_vec_axpby). The host needs one value per iteration, the residual for the stopping test
 * and the history: it is fetched behind the iteration's b step (part 0) while part 1, the next iteration's
 * first operands (CGLS: c = r + b c and q = A c; CG: c = r + b c, Ac = A c, c.Ac and a), is already enqueued,
 * so the one host wait overlaps it. Same iterations, history and x as the host loop; a breakdown (a zero
 * denominator of a) leaves x and the residual as they were (the updates skip themselves). With
 * RMAOP_SOLVER_SCALARS=graph both parts are captured once into CUDA graphs and replayed. Pipelined CG and LSQR:
 * below.
 * Everything here goes through the device layer (src/device/device.h): a build without CUDA links its stubs,
 * and no host context gets here. */
#include "solver_impl.h"

#include "core/backend.h"
#include "device/device.h"

typedef struct dev_solver dev_solver;
struct dev_solver {
  rmaop_op A;
  rmaop_vec x, s, q, r, c; /* CGLS: s, q, r, c; CG: r, c and q = A c; pipelined CG: r, s, q and pv's */
  rmaop_vec y;             /* pipelined CG's right-hand side (the residual replacement) */
  const pipecg_vecs *pv;
  const lsqr_vecs *lv; /* LSQR's vectors, and its state after the start */
  const lsqr_state *S0;
  const rmaop_solver_options *o;
  double damp2;
  double *d, *h; /* device: dots at d[0..8), scalars at d + 8; host copy of the scalars */
  int nsc;       /* scalar slots (on the device, and their host copy) */
  int hist_slot; /* the scalar whose square root is the history: CGLS s.s, CG kold */
  int nparts;    /* parts captured into graphs (RMAOP_SOLVER_SCALARS=graph) */
  const char *fn;
  rmaop_status (*part)(const dev_solver *v, int graph, int part);
  /* pipelined CG and LSQR (ahead_loop): what follows reading step k (enqueue), that read (read: history,
   * callback, *stop with info->reason), the three slots the host reads from fetch_at, and lead: step k is
   * followed by another while k + lead < niter */
  rmaop_status (*enqueue)(const dev_solver *v, void *const exec[2], int captured, int k);
  rmaop_status (*read)(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info, int k, int *stop);
  int fetch_at, lead;
  /* the iterations once the start's scalars are on the host: info's history, iterations and reason */
  rmaop_status (*loop)(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info);
  /* one graph for the solve (while_loop): the WHILE body's work (its stop kernel sets cond and records each
   * iteration in w), the number of iterations it may run, and the host's reading of w after the launch */
  rmaop_status (*while_body)(const dev_solver *v, const rmaop_solver_options *o, uint64_t cond, double *w);
  rmaop_status (*while_read)(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info,
                             const double *w);
};

/* Whether the loop replays CUDA graphs: graph, resident (which reaches these loops for the solvers its kernel does
 * not run) and while (CG and CGLS without a callback: one graph for the whole solve; the others replay per
 * iteration). */
static int replays(rmaop_ctx ctx) {
  return ctx->solver_scalars == RMAOP__SCALARS_GRAPH || ctx->solver_scalars == RMAOP__SCALARS_RESIDENT ||
         ctx->solver_scalars == RMAOP__SCALARS_WHILE;
}

static rmaop_status axpby_s(rmaop_vec y, rmaop_vec x, const double *sc, int ia, double sa, int ib, double b) {
  return rmaop__dev_axpby_s(y->ctx, y->dtype, y->data, x->data, y->local_n, sc, ia, sa, ib, b, RMAOP__CG_BREAKDOWN);
}

/* The end of part 0: the scalars to the host (with the event the host waits for, unless `graph`: a replayed
 * graph holds the copy, and the event goes behind the launch; graph 2, a WHILE body: nothing). */
static rmaop_status fetch_scalars(const dev_solver *v, int graph) {
  if (graph == 2)
    return RMAOP_OK; /* a WHILE body: its stop kernel keeps what the host reads */
  if (graph) return rmaop__dev_copy(v->A->ctx, v->h, v->d + 8, RMAOP__CG_NSLOTS * sizeof(double));
  return rmaop__dev_fetch_begin(v->A->ctx, v->h, v->d + 8, RMAOP__CG_NSLOTS);
}

static rmaop_status cgls_part(const dev_solver *v, int graph, int part) {
  rmaop_ctx ctx = v->A->ctx;
  double *qc = v->d, *rs = v->d + 4, *sc = v->d + 8;
  rmaop_vec dx[2] = {v->r, v->s}, ex[2] = {v->q, v->c};
  if (part == 1) {
    RMAOP_CHECK(axpby_s(v->c, v->r, sc, -1, 1.0, RMAOP__CG_B, 0.0)); /* c = r + b c */
    return rmaop_op_apply(v->A, v->c, v->q);
  }
  RMAOP_CHECK(rmaop__vec_mdot_device(2, ex, ex, qc)); /* q.q and c.c in one reduction */
  RMAOP_CHECK(rmaop__dev_cgls_scalars(ctx, qc, v->damp2, sc, 0));
  RMAOP_CHECK(axpby_s(v->x, v->c, sc, RMAOP__CG_A, 1.0, -1, 1.0));  /* x += a c */
  RMAOP_CHECK(axpby_s(v->s, v->q, sc, RMAOP__CG_A, -1.0, -1, 1.0)); /* s -= a q */
  RMAOP_CHECK(rmaop_op_apply_adjoint(v->A, v->s, v->r));
  if (v->damp2 != 0.0) RMAOP_CHECK(rmaop_vec_axpy(v->r, -v->damp2, v->x));
  RMAOP_CHECK(rmaop__vec_mdot_device(2, dx, dx, rs)); /* r.r and s.s in one reduction */
  RMAOP_CHECK(rmaop__dev_cgls_scalars(ctx, rs, v->damp2, sc, 1));
  return fetch_scalars(v, graph);
}

/* CG: part 0 updates x and r and makes b and kold; part 1 (part 2: the same without the c update, once
 * before the loop, where c = r) makes q = A c, c.Ac and a. */
static rmaop_status cg_part(const dev_solver *v, int graph, int part) {
  rmaop_ctx ctx = v->A->ctx;
  double *cq = v->d, *rr = v->d + 4, *sc = v->d + 8;
  if (part >= 1) {
    if (part == 1) RMAOP_CHECK(axpby_s(v->c, v->r, sc, -1, 1.0, RMAOP__CG_B, 0.0)); /* c = r + b c */
    RMAOP_CHECK(rmaop_op_apply(v->A, v->c, v->q));
    RMAOP_CHECK(rmaop__vec_mdot_device(1, &v->q, &v->c, cq)); /* Ac.c, as the host loop's rmaop_vec_dot */
    return rmaop__dev_cgls_scalars(ctx, cq, 0.0, sc, 3);
  }
  RMAOP_CHECK(axpby_s(v->x, v->c, sc, RMAOP__CG_A, 1.0, -1, 1.0));  /* x += a c */
  RMAOP_CHECK(axpby_s(v->r, v->q, sc, RMAOP__CG_A, -1.0, -1, 1.0)); /* r -= a Ac */
  RMAOP_CHECK(rmaop__vec_mdot_device(1, &v->r, &v->r, rr));
  RMAOP_CHECK(rmaop__dev_cgls_scalars(ctx, rr, 0.0, sc, 1));
  return fetch_scalars(v, graph);
}

/* RMAOP_SOLVER_SCALARS=graph: the parts (CG, CGLS: 0 and 1) captured once each into a CUDA graph, replayed with
 * two launches per iteration (one graph would leave the GPU idle while the host waits for h and launches the
 * next); pipelined CG: one part per iteration, with or without the residual replacement.
 * Every rank captures; when an operation refuses (a path whose work cannot be captured: rmaop.h,
 * rmaop_ctx_get_stream) before any plan was captured, nothing changed on the host and every rank goes on
 * without graphs (*captured 0); a refusal after a plan was captured is an error. Collective. *captured is the
 * same on every rank; a part of a rank with nothing to do in it (no rows: an empty rank's part 1) captured
 * no nodes, and its exec[] is NULL. */
static rmaop_status capture_agreed(const dev_solver *v, rmaop_status st, uint64_t plans_before, const char *why,
                                   void *exec[2], int *captured);

static rmaop_status dev_capture(const dev_solver *v, void *exec[2], int *captured) {
  rmaop_ctx ctx = v->A->ctx;
  const uint64_t plans_before = ctx->captured_plans;
  rmaop_status st = RMAOP_OK;
  char why[sizeof ctx->last_error] = "";
  for (int part = 0; part < v->nparts && st == RMAOP_OK; ++part) {
    RMAOP_CHECK(rmaop__dev_capture_begin(ctx));
    st = v->part(v, 1, part);
    if (st != RMAOP_OK) memcpy(why, ctx->last_error, sizeof why);
    const rmaop_status end = rmaop__dev_capture_end(ctx, st == RMAOP_OK, &exec[part]);
    if (st == RMAOP_OK) st = end;
  }
  return capture_agreed(v, st, plans_before, why, exec, captured);
}

/* After a capture that ended with st: every rank goes on with its graphs (*captured 1), or every rank refused before
 * capturing a plan and goes on without (*captured 0, exec[] NULL), or an error everywhere. Collective. */
static rmaop_status capture_agreed(const dev_solver *v, rmaop_status st, uint64_t plans_before, const char *why,
                                   void *exec[2], int *captured) {
  rmaop_ctx ctx = v->A->ctx;
  *captured = 0;
  const int refused = st == RMAOP_ERR_UNSUPPORTED && ctx->captured_plans == plans_before;
  int all_refused = 0;
  RMAOP_CHECK(rmaop__allreduce_bounded(ctx, &refused, &all_refused, 1, MPI_INT, MPI_MIN, "graph capture agreement"));
  if (refused) {
    rmaop__dev_graph_free(exec[0]), rmaop__dev_graph_free(exec[1]);
    exec[0] = exec[1] = NULL;
  }
  if (all_refused) {
    memcpy(ctx->last_error, why, sizeof ctx->last_error); /* the loop goes on without graphs; the reason stays */
    return RMAOP_OK;
  }
  if (refused) /* here no plan was captured, elsewhere one was: an error on every rank */
    st = RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE,
                     "%s: another rank captured work into a CUDA graph that this rank refused to capture (%s)", v->fn,
                     why);
  RMAOP_CHECK(rmaop__agree(ctx, st, v->fn));
  *captured = 1;
  return RMAOP_OK;
}

/* Whether the context's exchanges can go into a conditional node's body (the backend's while_bodies, or one rank).
 * The same on every rank. */
static int while_backend(rmaop_ctx ctx) {
  return ctx->size == 1 || ctx->backend->while_bodies;
}

/* Whether a Krylov solve runs as one CUDA graph: under RMAOP_SOLVER_SCALARS=while, and resident for the solves its
 * kernel does not run, on a backend whose exchanges a WHILE body can hold, when no rank has a callback (it must see
 * every iteration; the ranks agree, since a rank that ran per-iteration graphs would exchange differently); under
 * auto, what rmaop__solver_auto_while agreed. */
static rmaop_status one_graph(rmaop_ctx ctx, const rmaop_solver_options *o, int *yes) {
  *yes = ctx->solver_scalars == RMAOP__SCALARS_AUTO;
  if ((ctx->solver_scalars != RMAOP__SCALARS_WHILE && ctx->solver_scalars != RMAOP__SCALARS_RESIDENT) ||
      !while_backend(ctx))
    return RMAOP_OK;
  const int mine = !o->callback;
  return rmaop__allreduce_bounded(ctx, &mine, yes, 1, MPI_INT, MPI_MIN, "one-graph solve agreement");
}

rmaop_status rmaop__solver_auto_while(rmaop_op A, rmaop_vec x, rmaop_vec y, const rmaop_solver_options *o, int *yes) {
  rmaop_ctx ctx = A->ctx;
  rmaop_ctx_info ci;
  *yes = 0;
  if (ctx->solver_scalars != RMAOP__SCALARS_AUTO || !RMAOP__ON_DEVICE(ctx) || ctx->trace_on ||
      !rmaop__vec_device_dots_ok(x) || !rmaop__vec_device_dots_ok(y) || rmaop_ctx_get_info(ctx, &ci) != RMAOP_OK ||
      !ci.graph_capture || !while_backend(ctx))
    return RMAOP_OK; /* the same on every rank: the environment, the layouts, the backend */
  const int mine = !o->callback;
  return rmaop__allreduce_bounded(ctx, &mine, yes, 1, MPI_INT, MPI_MIN, "one-graph solve agreement");
}

/* One graph for the solve: a conditional WHILE node whose body is v->while_body (the iteration and a one-thread stop
 * kernel that records it in w and decides, on the host loop's test, whether the body runs again: see
 * rmaop__dev_while_stop); one launch and one host wait, then v->while_read takes the recorded iterations. Every
 * rank's body runs the same number of times, since the stop tests reduced values. At most n iterations. *ran 0:
 * every rank refused the capture, and the caller's loop runs instead. Collective. */
static rmaop_status while_loop(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info, int n,
                               int *ran) {
  rmaop_ctx ctx = v->A->ctx;
  const size_t wbytes = (2 + 2 * (size_t)n) * sizeof(double);
  double *w = NULL, *hw = NULL; /* the record on the device (zero filled: no iteration yet) and its host copy */
  void *exec[2] = {NULL, NULL}, *g = NULL;
  uint64_t cond = 0;
  *ran = 0;
  /* Work buffers of the context (src/core/mem.c), as dev_solve's: a solve called again allocates nothing. */
  rmaop_status st = rmaop__work_alloc(ctx, 0, wbytes, "the WHILE graph's record", (void **)&w);
  if (st == RMAOP_OK)
    st = rmaop__work_alloc(ctx, 1, wbytes, "the WHILE graph's record", (void **)&hw);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, v->fn), st, out);
  const uint64_t plans_before = ctx->captured_plans;
  char why[sizeof ctx->last_error] = "";
  RMAOP_CHECK_GOTO(rmaop__dev_while_begin(ctx, &g, &cond), st, out);
  st = v->while_body(v, o, cond, w);
  if (st != RMAOP_OK)
    memcpy(why, ctx->last_error, sizeof why);
  const rmaop_status end = rmaop__dev_while_end(ctx, g, st == RMAOP_OK, &exec[0]);
  if (st == RMAOP_OK)
    st = end;
  RMAOP_CHECK_GOTO(capture_agreed(v, st, plans_before, why, exec, ran), st, out);
  if (!*ran)
    goto out;
  info->graph = 2;
  RMAOP_CHECK_GOTO(rmaop__dev_graph_launch(ctx, exec[0], v->fn, 0), st, out);
  RMAOP_CHECK_GOTO(rmaop__dev_copy(ctx, hw, w, wbytes), st, out);
  RMAOP_CHECK_GOTO(rmaop__dev_sync(ctx), st, out);
  st = v->while_read(v, o, info, hw);
out:
  rmaop__dev_graph_free(exec[0]);
  rmaop__work_free(ctx, 0, w, wbytes);
  rmaop__work_free(ctx, 1, hw, wbytes);
  return st;
}

/* CG's and CGLS's body: part 0, the stop test, part 1 (which also runs after the last iteration: an application made
 * in vain, as the host loop's after a tolerance stop). */
static rmaop_status cg_while_body(const dev_solver *v, const rmaop_solver_options *o, uint64_t cond, double *w) {
  RMAOP_CHECK(v->part(v, 2, 0));
  const rmaop__while_test t = {.brk = RMAOP__CG_BREAKDOWN,
                               .rec0 = v->hist_slot,
                               .rec1 = RMAOP__CG_KOLD,
                               .zero = -1,
                               .above = RMAOP__CG_KOLD,
                               .tol = o->tol};
  RMAOP_CHECK(rmaop__dev_while_stop(v->A->ctx, cond, v->d + 8, t, o->niter, w));
  return v->part(v, 2, 1);
}

static rmaop_status cg_while_read(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info,
                                  const double *w) {
  double kold = v->h[RMAOP__CG_KOLD];
  for (int k = 0; k < (int)w[0]; ++k) {
    kold = w[3 + 2 * k];
    RMAOP_CHECK(after_iteration(o, info, sqrt(w[2 + 2 * k]), v->x));
  }
  info->kold = kold;
  if (w[1] != 0.0)
    info->reason = RMAOP_REASON_BREAKDOWN;
  else if (kold <= o->tol)
    info->reason = RMAOP_REASON_TOL;
  return RMAOP_OK;
}

/* CG's and CGLS's loop, once v->h holds the start's scalars and part 1's first pass is enqueued (CG) or not
 * needed (CGLS: the caller made c and q). */
static rmaop_status dev_loop(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info) {
  rmaop_ctx ctx = v->A->ctx;
  void *exec[2] = {NULL, NULL};
  int captured = 0;
  rmaop_status st = RMAOP_OK;
  double kold = v->h[RMAOP__CG_KOLD];
  info->history[0] = sqrt(v->h[v->hist_slot]);
  info->reason = RMAOP_REASON_NITER;
  int whole = 0;
  if (info->iterations < o->niter && kold > o->tol)
    RMAOP_CHECK(one_graph(ctx, o, &whole));
  if (whole) {
    int ran = 0;
    RMAOP_CHECK(while_loop(v, o, info, o->niter, &ran));
    if (ran)
      return RMAOP_OK;
  }
  if (replays(ctx) && info->iterations < o->niter && kold > o->tol)
    RMAOP_CHECK_GOTO(dev_capture(v, exec, &captured), st, out);
  info->graph = captured;
  while (info->iterations < o->niter && kold > o->tol) {
    /* The last iteration by count makes no next iteration's first operands (part 1: an operator application
     * whose result nobody reads); after a tolerance stop they were made in vain, unavoidably. */
    const int next = info->iterations + 1 < o->niter;
    if (captured) {
      RMAOP_CHECK_GOTO(rmaop__dev_graph_launch(ctx, exec[0], v->fn, 0), st, out);
      RMAOP_CHECK_GOTO(rmaop__dev_fetch_mark(ctx), st, out);
      if (next) RMAOP_CHECK_GOTO(rmaop__dev_graph_launch(ctx, exec[1], v->fn, 1), st, out);
    } else {
      RMAOP_CHECK_GOTO(v->part(v, 0, 0), st, out);
      if (next) RMAOP_CHECK_GOTO(v->part(v, 0, 1), st, out);
    }
    RMAOP_CHECK_GOTO(rmaop__dev_fetch_wait(ctx, v->fn), st, out);
    if (v->h[RMAOP__CG_BREAKDOWN] != 0.0) {
      info->reason = RMAOP_REASON_BREAKDOWN;
      break;
    }
    kold = v->h[RMAOP__CG_KOLD];
    RMAOP_CHECK_GOTO(after_iteration(o, info, sqrt(v->h[v->hist_slot]), v->x), st, out);
  }
  info->kold = kold;
  if (info->reason != RMAOP_REASON_BREAKDOWN && kold <= o->tol)
    info->reason = RMAOP_REASON_TOL;
out:
  rmaop__dev_graph_free(exec[0]);
  rmaop__dev_graph_free(exec[1]);
  return st;
}

/* Device memory for the dots and scalars (collective agreement), the start (`init`: enqueues what fills the
 * scalars the loop starts from), the loop with its stopping reason, and the release. */
static rmaop_status dev_solve(dev_solver *v, rmaop_status (*init)(const dev_solver *v), const rmaop_solver_options *o,
                              rmaop_solver_info *info) {
  rmaop_ctx ctx = v->A->ctx;
  /* Work buffers of the context (src/core/mem.c): a solve called again allocates and frees nothing. */
  const size_t dbytes = (8 + (size_t)v->nsc) * sizeof(double), hbytes = (size_t)v->nsc * sizeof(double);
  rmaop_status st = rmaop__work_alloc(ctx, 0, dbytes, "device solver scalars", (void **)&v->d);
  if (st == RMAOP_OK)
    st = rmaop__work_alloc(ctx, 1, hbytes, "host copy of the solver scalars", (void **)&v->h);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, v->fn), st, out);
  RMAOP_CHECK_GOTO(init(v), st, out);
  RMAOP_CHECK_GOTO(rmaop__dev_fetch_begin(ctx, v->h, v->d + 8, v->nsc), st, out);
  RMAOP_CHECK_GOTO(rmaop__dev_fetch_wait(ctx, v->fn), st, out);
  st = v->loop(v, o, info);
out:
  /* The solve ends with its GPU work done (inside time_total, as the host loop's); d and h then go back to the
   * context's cache with nothing enqueued using them. */
  if (v->d) (void)rmaop__dev_sync(ctx);
  rmaop__work_free(ctx, 0, v->d, dbytes);
  rmaop__work_free(ctx, 1, v->h, hbytes);
  return st;
}

static rmaop_status cgls_init(const dev_solver *v) {
  rmaop_vec dx[2] = {v->r, v->s};
  RMAOP_CHECK(rmaop__vec_mdot_device(2, dx, dx, v->d + 4));
  return rmaop__dev_cgls_scalars(v->A->ctx, v->d + 4, v->damp2, v->d + 8, 2);
}

static rmaop_status cg_init(const dev_solver *v) {
  RMAOP_CHECK(rmaop__vec_mdot_device(1, &v->r, &v->r, v->d + 4));
  RMAOP_CHECK(rmaop__dev_cgls_scalars(v->A->ctx, v->d + 4, 0.0, v->d + 8, 2)); /* kold = |r.r| */
  return cg_part(v, 0, 2);                                                     /* Ac = A c, c.Ac, a */
}

rmaop_status rmaop__solve_cg_device(rmaop_op A, rmaop_vec x, rmaop_vec r, rmaop_vec c, rmaop_vec Ac,
                                    const rmaop_solver_options *o, rmaop_solver_info *info) {
  dev_solver v = {.A = A,
                  .x = x,
                  .q = Ac,
                  .r = r,
                  .c = c,
                  .hist_slot = RMAOP__CG_KOLD,
                  .nsc = 8,
                  .nparts = 2,
                  .fn = "rmaop_solve_cg (device scalars)",
                  .part = cg_part,
                  .loop = dev_loop,
                  .while_body = cg_while_body,
                  .while_read = cg_while_read};
  return dev_solve(&v, cg_init, o, info);
}

rmaop_status rmaop__solve_cgls_device(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                                      double damp2, const rmaop_solver_options *o, rmaop_solver_info *info) {
  dev_solver v = {.A = A,
                  .x = x,
                  .s = s,
                  .q = q,
                  .r = r,
                  .c = c,
                  .damp2 = damp2,
                  .hist_slot = RMAOP__CG_SS,
                  .nsc = 8,
                  .nparts = 2,
                  .fn = "rmaop_solve_cgls (device scalars)",
                  .part = cgls_part,
                  .loop = dev_loop,
                  .while_body = cg_while_body,
                  .while_read = cg_while_read};
  return dev_solve(&v, cgls_init, o, info);
}

/* ---- pipelined CG ----
 * The host loop's order (src/solvers/solver_krylov.c): a part is iteration k's update (one fused kernel,
 * rmaop__dev_pipecg_update), the residual replacement when it is due, and iteration k + 1's reduction {r.r, w.r}
 * into device memory, its scalars (rmaop__dev_pipecg_scalars: gamma, the stop decision, a and b) and q = A w.
 * The host reads gamma and the stop (three doubles) once per iteration; without a callback it enqueues the next
 * part before it waits for them, so the GPU runs iteration k + 1 while the host records iteration k. A stop is
 * sticky on the device: a part enqueued ahead of it changes neither x nor the scalars (its update skips
 * itself; what else it computes is not read). With a callback the host waits first, so the callback sees x_k. */

enum { PCG_REPLACE = 1, PCG_NO_MATVEC = 2 }; /* part flags; graphs hold parts 0 and PCG_REPLACE */

/* Iteration k + 1's reduction and scalars, and q = A w unless that iteration is the last by count (`matvec` 0:
 * the host loop skips it there too). */
static rmaop_status pipecg_sync(const dev_solver *v, int first, int matvec) {
  const pipecg_vecs *V = v->pv;
  rmaop_vec dx[2] = {V->r, V->w}, dy[2] = {V->r, V->r};
  RMAOP_CHECK(rmaop__vec_mdot_device(2, dx, dy, v->d));
  RMAOP_CHECK(rmaop__dev_pipecg_scalars(v->A->ctx, v->d, v->d + 8, v->o->tol, v->o->niter, first));
  return matvec ? rmaop_op_apply(v->A, V->w, V->q) : RMAOP_OK;
}

static rmaop_status pipecg_part(const dev_solver *v, int graph, int part) {
  (void)graph;
  const pipecg_vecs *V = v->pv;
  void *vecs[RMAOP__PCG_NVECS];
  vecs[RMAOP__PCG_X] = v->x->data, vecs[RMAOP__PCG_R] = V->r->data, vecs[RMAOP__PCG_W] = V->w->data;
  vecs[RMAOP__PCG_Q] = V->q->data, vecs[RMAOP__PCG_Z] = V->z->data, vecs[RMAOP__PCG_S] = V->s->data;
  vecs[RMAOP__PCG_P] = V->p->data;
  RMAOP_CHECK(rmaop__dev_pipecg_update(v->A->ctx, v->x->dtype, vecs, v->x->local_n, v->d + 8));
  if (part & PCG_REPLACE)
    RMAOP_CHECK(rmaop__pipecg_replace(v->A, v->y, v->x, V));
  return pipecg_sync(v, 0, !(part & PCG_NO_MATVEC));
}

/* Iteration k's part: replayed (a graph always holds q = A w: after the last iteration by count it is made in
 * vain) or enqueued. */
static rmaop_status pipecg_enqueue(const dev_solver *v, void *const exec[2], int captured, int k) {
  const rmaop_solver_options *o = v->o;
  const int replace = o->residual_replacement > 0 && (k + 1) % o->residual_replacement == 0;
  if (captured)
    return rmaop__dev_graph_launch(v->A->ctx, exec[replace], v->fn, replace);
  return pipecg_part(v, 0, (replace ? PCG_REPLACE : 0) | (k + 1 < o->niter ? 0 : PCG_NO_MATVEC));
}

/* The solver's reason for the device's stop code (RMAOP__PCG_STOP_*, not 0). */
static rmaop_reason pcg_reason(double how) {
  return how == RMAOP__PCG_STOP_TOL         ? RMAOP_REASON_TOL
         : how == RMAOP__PCG_STOP_BREAKDOWN ? RMAOP_REASON_BREAKDOWN
                                            : RMAOP_REASON_NITER;
}

/* The host's read of step k: ||r_k|| and the device's stop decision. */
static rmaop_status pipecg_read(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info, int k,
                                int *stop) {
  const double gamma = v->h[RMAOP__PCG_GAMMA], how = v->h[RMAOP__PCG_STOP];
  if (k == 0)
    info->history[0] = sqrt(gamma);
  else
    RMAOP_CHECK(after_iteration(o, info, sqrt(gamma), v->x));
  *stop = how != 0.0;
  if (*stop)
    info->reason = pcg_reason(how);
  return RMAOP_OK;
}

/* Step k's three doubles (from fetch_at) to the host behind what is enqueued (pipelined CG, LSQR). */
static rmaop_status fetch_step(const dev_solver *v) {
  return rmaop__dev_fetch_begin(v->A->ctx, v->h + v->fetch_at, v->d + 8 + v->fetch_at, 3);
}

/* The loop pipelined CG and LSQR share, once step 0's values are fetched (or on their way): the host reads step
 * k's three doubles and records them; without a callback what follows them is already enqueued (the device's
 * stop is sticky, so it changes nothing after a stop), with one it is enqueued after the read. */
static rmaop_status ahead_loop(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info,
                               void *const exec[2], int captured) {
  rmaop_ctx ctx = v->A->ctx;
  for (int k = 0;; ++k) {
    const int next = k + v->lead < o->niter, ahead = next && !o->callback;
    if (ahead)
      RMAOP_CHECK(v->enqueue(v, exec, captured, k));
    RMAOP_CHECK(rmaop__dev_fetch_wait(ctx, v->fn));
    int stop = 0;
    RMAOP_CHECK(v->read(v, o, info, k, &stop));
    if (stop || !next)
      return RMAOP_OK;
    if (!ahead)
      RMAOP_CHECK(v->enqueue(v, exec, captured, k));
    RMAOP_CHECK(fetch_step(v));
  }
}

/* Pipelined CG's body (no residual replacement: a replacement every k-th iteration would need a conditional IF node
 * inside it): an iteration's part and the stop test on the device's sticky stop. */
static rmaop_status pipecg_while_body(const dev_solver *v, const rmaop_solver_options *o, uint64_t cond, double *w) {
  RMAOP_CHECK(pipecg_part(v, 2, 0));
  const rmaop__while_test t = {
      .brk = -1, .rec0 = RMAOP__PCG_GAMMA, .rec1 = RMAOP__PCG_STOP, .zero = RMAOP__PCG_STOP, .above = -1, .tol = 0.0};
  return rmaop__dev_while_stop(v->A->ctx, cond, v->d + 8, t, o->niter, w);
}

static rmaop_status pipecg_while_read(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info,
                                      const double *w) {
  for (int k = 0; k < (int)w[0]; ++k) {
    RMAOP_CHECK(after_iteration(o, info, sqrt(w[2 + 2 * k]), v->x));
    if (w[3 + 2 * k] != 0.0)
      info->reason = pcg_reason(w[3 + 2 * k]);
  }
  return RMAOP_OK;
}

static rmaop_status pipecg_loop_dev(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info) {
  rmaop_ctx ctx = v->A->ctx;
  void *exec[2] = {NULL, NULL};
  int captured = 0;
  rmaop_status st = RMAOP_OK;
  info->reason = RMAOP_REASON_NITER;
  int whole = 0;
  if (o->residual_replacement == 0 && v->h[RMAOP__PCG_STOP] == 0.0)
    RMAOP_CHECK(one_graph(ctx, o, &whole));
  if (whole) { /* step 0 read (history[0]), then the iterations in one graph */
    int stop = 0, ran = 0;
    RMAOP_CHECK(pipecg_read(v, o, info, 0, &stop));
    RMAOP_CHECK(while_loop(v, o, info, o->niter, &ran));
    if (ran)
      return RMAOP_OK;
  }
  if (replays(v->A->ctx) && v->h[RMAOP__PCG_STOP] == 0.0)
    st = dev_capture(v, exec, &captured);
  info->graph = captured;
  if (st == RMAOP_OK)
    st = ahead_loop(v, o, info, exec, captured);
  rmaop__dev_graph_free(exec[0]);
  rmaop__dev_graph_free(exec[1]);
  return st;
}

/* The start: iteration 0's reduction and scalars, and q = A w unless niter is 0. */
static rmaop_status pipecg_init(const dev_solver *v) {
  return pipecg_sync(v, 1, v->o->niter > 0);
}

rmaop_status rmaop__solve_pipecg_device(rmaop_op A, rmaop_vec y, rmaop_vec x, const pipecg_vecs *V,
                                        const rmaop_solver_options *o, rmaop_solver_info *info) {
  dev_solver v = {.A = A,
                  .x = x,
                  .y = y,
                  .pv = V,
                  .o = o,
                  .nsc = 8,
                  .nparts = o->residual_replacement > 0 ? 2 : 1,
                  .fn = "rmaop_solve_pipecg (device scalars)",
                  .while_body = pipecg_while_body,
                  .while_read = pipecg_while_read,
                  .part = pipecg_part,
                  .loop = pipecg_loop_dev,
                  .enqueue = pipecg_enqueue,
                  .read = pipecg_read,
                  .fetch_at = RMAOP__PCG_GAMMA,
                  .lead = 0};
  return dev_solve(&v, pipecg_init, o, info);
}

/* ---- LSQR ----
 * The host loop's operations in its order (src/solvers/solver_krylov.c, lsqr_bidiag and the update), the scalars
 * on the device: the state of src/solvers/lsqr_scalars.h in slots, made by one-thread kernels with the host's
 * code (rmaop__dev_lsqr_scalars), read by the vector updates (rmaop__dev_axpby_s). The host reads r1norm, istop
 * and the breakdown flag once per iteration; without a callback the next iteration is enqueued before it does,
 * and a stop is sticky on the device (the x and w updates of an iteration enqueued ahead of it skip themselves;
 * its u and v are not read). graph: one iteration captured after the first, replayed once per iteration. */

static rmaop_status lsqr_axpby(const dev_solver *v, rmaop_vec y, rmaop_vec x, int ia, int ib, double b, int iskip) {
  return rmaop__dev_axpby_s(y->ctx, y->dtype, y->data, x->data, y->local_n, v->d + 8, ia, 1.0, ib, b, iskip);
}

/* One iteration: u = (A v - alfa u) / beta, v = (A^H u - beta v) / alfa with {u.u, w.w} and v.v reduced, the step's
 * scalars, x += t1 w, w = v + t2 w. */
static rmaop_status lsqr_part(const dev_solver *v, int graph, int part) {
  (void)graph, (void)part;
  rmaop_ctx ctx = v->A->ctx;
  const lsqr_vecs *L = v->lv;
  double *sc = v->d + 8;
  rmaop_vec uw[2] = {L->u, L->w};
  RMAOP_CHECK(rmaop_op_apply(v->A, L->v, L->Av));
  RMAOP_CHECK(lsqr_axpby(v, L->u, L->Av, -1, LSQR_NALFA, 0.0, -1));
  RMAOP_CHECK(rmaop__vec_mdot_device(2, uw, uw, v->d));
  RMAOP_CHECK(rmaop__dev_lsqr_scalars(ctx, v->d, sc, 0));
  RMAOP_CHECK(lsqr_axpby(v, L->u, L->u, LSQR_INVBETA, -1, 0.0, LSQR_USKIP));
  RMAOP_CHECK(rmaop_op_apply_adjoint(v->A, L->u, L->AHu));
  RMAOP_CHECK(lsqr_axpby(v, L->v, L->AHu, -1, LSQR_NBETA, 0.0, LSQR_USKIP));
  RMAOP_CHECK(rmaop__vec_mdot_device(1, &L->v, &L->v, v->d));
  RMAOP_CHECK(rmaop__dev_lsqr_scalars(ctx, v->d, sc, 1));
  RMAOP_CHECK(lsqr_axpby(v, L->v, L->v, LSQR_INVALFA, -1, 0.0, LSQR_VSKIP));
  RMAOP_CHECK(rmaop__dev_lsqr_scalars(ctx, v->d, sc, 2));
  RMAOP_CHECK(lsqr_axpby(v, v->x, L->w, LSQR_T1, -1, 1.0, LSQR_SKIP));
  return lsqr_axpby(v, L->w, L->v, -1, LSQR_T2, 0.0, LSQR_SKIP);
}

/* The iteration after step k. */
static rmaop_status lsqr_enqueue(const dev_solver *v, void *const exec[2], int captured, int k) {
  (void)k;
  return captured ? rmaop__dev_graph_launch(v->A->ctx, exec[0], v->fn, 0) : lsqr_part(v, 0, 0);
}

/* The host's read of iteration k: a breakdown, r1norm, istop. */
static rmaop_status lsqr_read(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info, int k,
                              int *stop) {
  (void)k;
  *stop = 1;
  if (v->h[LSQR_BREAKDOWN] != 0.0) {
    info->reason = RMAOP_REASON_BREAKDOWN;
    return RMAOP_OK;
  }
  RMAOP_CHECK(after_iteration(o, info, v->h[LSQR_R1NORM], v->x));
  if (v->h[LSQR_ISTOP] != 0.0)
    info->reason = rmaop__lsqr_reason((int)v->h[LSQR_ISTOP]);
  else
    *stop = 0;
  return RMAOP_OK;
}

/* LSQR's body: an iteration and the stop test. */
static rmaop_status lsqr_while_body(const dev_solver *v, const rmaop_solver_options *o, uint64_t cond, double *w) {
  RMAOP_CHECK(lsqr_part(v, 2, 0));
  const rmaop__while_test t = {
      .brk = LSQR_BREAKDOWN, .rec0 = LSQR_R1NORM, .rec1 = LSQR_ISTOP, .zero = LSQR_ISTOP, .above = -1, .tol = 0.0};
  return rmaop__dev_while_stop(v->A->ctx, cond, v->d + 8, t, o->niter - 1, w);
}

static rmaop_status lsqr_while_read(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info,
                                    const double *w) {
  for (int k = 0; k < (int)w[0]; ++k) {
    RMAOP_CHECK(after_iteration(o, info, w[2 + 2 * k], v->x));
    if (w[3 + 2 * k] != 0.0)
      info->reason = rmaop__lsqr_reason((int)w[3 + 2 * k]);
  }
  if (w[1] != 0.0)
    info->reason = RMAOP_REASON_BREAKDOWN;
  return RMAOP_OK;
}

static rmaop_status lsqr_loop_dev(const dev_solver *v, const rmaop_solver_options *o, rmaop_solver_info *info) {
  rmaop_ctx ctx = v->A->ctx;
  void *exec[2] = {NULL, NULL};
  int captured = 0;
  /* Iteration 0 runs eagerly: its first reductions and operator applications make their windows and plans
   * (collective, synchronizing: nothing a capture can hold); graph and while capture the iterations after it. */
  rmaop_status st = lsqr_part(v, 0, 0);
  if (st == RMAOP_OK)
    st = fetch_step(v);
  int whole = 0;
  if (st == RMAOP_OK && o->niter > 1)
    st = one_graph(ctx, o, &whole);
  if (st == RMAOP_OK && whole) { /* iteration 0 read, then the rest in one graph */
    int stop = 0, ran = 0;
    st = rmaop__dev_fetch_wait(ctx, v->fn);
    if (st == RMAOP_OK)
      st = lsqr_read(v, o, info, 0, &stop);
    if (st == RMAOP_OK && stop)
      return RMAOP_OK;
    if (st == RMAOP_OK)
      st = while_loop(v, o, info, o->niter - 1, &ran);
    if (st != RMAOP_OK || ran)
      return st;
    rmaop_solver_options rest = *o; /* every rank refused the capture: the iterations after 0, eagerly */
    rest.niter = o->niter - 1;
    st = lsqr_part(v, 0, 0);
    if (st == RMAOP_OK)
      st = fetch_step(v);
    return st == RMAOP_OK ? ahead_loop(v, &rest, info, exec, 0) : st;
  }
  if (st == RMAOP_OK && replays(ctx) && o->niter > 1)
    st = dev_capture(v, exec, &captured);
  info->graph = captured;
  if (st == RMAOP_OK)
    st = ahead_loop(v, o, info, exec, captured);
  rmaop__dev_graph_free(exec[0]);
  return st;
}

/* The start: the host loop's state into the device slots (through the page-locked host copy; the rest zero, and
 * -alfa for the first update of u). */
static rmaop_status lsqr_init(const dev_solver *v) {
  memset(v->h, 0, (size_t)v->nsc * sizeof(double));
  memcpy(v->h, v->S0, sizeof *v->S0);
  v->h[LSQR_NALFA] = -v->S0->alfa;
  return rmaop__dev_copy(v->A->ctx, v->d + 8, v->h, (size_t)v->nsc * sizeof(double));
}

rmaop_status rmaop__solve_lsqr_device(rmaop_op A, rmaop_vec x, const lsqr_vecs *L, const lsqr_state *S,
                                      const rmaop_solver_options *o, rmaop_solver_info *info) {
  dev_solver v = {.A = A,
                  .x = x,
                  .lv = L,
                  .S0 = S,
                  .o = o,
                  .nsc = LSQR_NSLOTS,
                  .nparts = 1,
                  .fn = "rmaop_solve_lsqr (device scalars)",
                  .part = lsqr_part,
                  .loop = lsqr_loop_dev,
                  .enqueue = lsqr_enqueue,
                  .read = lsqr_read,
                  .while_body = lsqr_while_body,
                  .while_read = lsqr_while_read,
                  .fetch_at = LSQR_R1NORM,
                  .lead = 1};
  return dev_solve(&v, lsqr_init, o, info);
}
