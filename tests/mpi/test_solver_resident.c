/* Test of RMAOP_SOLVER_SCALARS=resident (src/solvers/solver_resident.c, src/device/resident.cu): CG and CGLS whose
 * iterations run in one GPU kernel. Reference: the same solve on a context with RMAOP_SOLVER_SCALARS=host (the
 * host loop of src/solvers/solver.c): the same iterations and stopping reason, histories within 1e-10 relative per
 * entry, x within 1e-10 of the largest |x|. Problems: CGLS on first derivatives along axis 0 (1-D with empty ranks,
 * 1-D long and unevenly split, 1-D centered over 5 points (reach 2: every row through the kernel's general
 * stencil path, not the lean one), 2-D with halos small enough for inline messages and 2-D with halos put and
 * signalled), CG on D^H D + I (bench's derivspd) and D^H D + diag, likewise; consecutive solves of one window size
 * reuse the context's window, some on other data and longer than the solve before (the first of a shape after
 * the niter 0 of the one before), so that a word left over from the last solve would be read as this one's (the
 * kernel zeroes them at its end); an unsupported operator
 * (a vstack, which falls back to device scalars); and a peer that stops communicating inside the kernel (its
 * niter is smaller): the others return RMAOP_ERR_TIMEOUT within twice the context's timeout, nothing hangs.
 * Each comparison also checks the path: on the rma-over-ipc rows the kernel ran the solve (the context counts the
 * solves it ran), and it never ran the vstack's. Device memory only (label gpu). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"    /* resident_solves: whether the kernel ran the solve */
#include "ops/op_impl.h" /* the operator's context */
#include "solver_test_util.h"

enum { WATCHDOG_S = 60 };

static rmaop_ctx scalars_ctx(const char *mode, double timeout) {
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  if (timeout > 0) o.timeout = timeout;
  setenv("RMAOP_SOLVER_SCALARS", mode, 1);
  rmaop_ctx c = NULL;
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &c));
  unsetenv("RMAOP_SOLVER_SCALARS");
  return c;
}

/* A resident context with RMAOP_RESIDENT_PROFILE=1 (read at context creation). */
static rmaop_ctx profiled_ctx(void) {
  setenv("RMAOP_RESIDENT_PROFILE", "1", 1);
  rmaop_ctx c = scalars_ctx("resident", 0);
  unsetenv("RMAOP_RESIDENT_PROFILE");
  return c;
}

/* A first derivative (centered 3, or forward) of dims[0] x dims[1] (dims[1] = 1: 1-D) along axis 0, rows split
 * unevenly: rank r gets (r + 1) shares, the last rank the rest. */
static rmaop_op make_deriv(rmaop_ctx ctx, int64_t n0, int64_t n1, rmaop_deriv_kind kind) {
  int64_t tot = 0, mine = 0;
  for (int r = 0; r < rt_size; ++r) tot += r + 1;
  int64_t used = 0;
  for (int r = 0; r < rt_size; ++r) {
    const int64_t k = r == rt_size - 1 ? n0 - used : n0 * (r + 1) / tot;
    if (r == rt_rank) mine = k;
    used += k;
  }
  rmaop_deriv_spec s = {.grid = {.ndim = n1 > 1 ? 2 : 1, .dims = {n0, n1}, .local_rows = mine}, .axis = 0,
                        .kind = kind, .edge = kind == RMAOP_DERIV_CENTERED3, .sampling = 0.5, .dtype = RMAOP_F64};
  rmaop_op D = NULL;
  RT_OK(rmaop_op_create_first_derivative(ctx, &s, &D));
  return D;
}

/* D^H D + diag(d), d = 1 (derivspd, the sum in that order) or 1.37 (the diagonal first). */
static rmaop_op make_spd(rmaop_op D, int ones) {
  rmaop_op DH = NULL, DHD = NULL, Id = NULL, A = NULL;
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(D, &oi));
  rmaop_vec d = NULL;
  RT_OK(rmaop_vec_create(oi.model, RMAOP_F64, &d));
  RT_OK(rmaop_vec_set(d, ones ? 1.0 : 1.37));
  RT_OK(rmaop_op_create_adjoint(D, &DH));
  RT_OK(rmaop_op_create_product(DH, D, &DHD));
  RT_OK(rmaop_op_create_diagonal(d, &Id));
  const rmaop_op parts[2] = {ones ? DHD : Id, ones ? Id : DHD};
  RT_OK(rmaop_op_create_sum(2, parts, &A));
  rmaop_vec_destroy(&d);
  rmaop_op_destroy(&Id);
  rmaop_op_destroy(&DHD);
  rmaop_op_destroy(&DH);
  return A;
}

typedef struct {
  int cg, niter, with_x0;
  int tol_at;  /* > 0: tol is the host solve's kold after tol_at iterations (a little above), so the tolerance
                * stops both solves at that iteration or before; 0: run niter */
  double damp;
  int kernel; /* 1: the resident kernel must run op[0]'s solve where the context is rma over ipc; -1: it must not
               * (an operator it does not support); 0: either */
} cfg;

/* Whether ctx's solves of a supported operator go to the resident kernel: the rma backend over ipc (the ctest rows
 * rma.*.ipc; the twosided row falls back). */
static int kernel_ctx(rmaop_ctx ctx) {
  rmaop_ctx_info ci;
  RT_OK(rmaop_ctx_get_info(ctx, &ci));
  return strcmp(ci.backend, "rma") == 0 && ci.rma.transport == RMAOP_TRANSPORT_IPC;
}

/* One solve on op[0] (resident context) and op[1] (host context), compared. */
static void compare(rmaop_op op[2], cfg c, const char *what) {
  rmaop_solver_info info[2];
  rmaop_vec x[2], y[2], x0[2] = {NULL, NULL};
  double tol = 0.0;
  for (int k = 0; k < 2; ++k) {
    rmaop_op_info oi;
    RT_OK(rmaop_op_get_info(op[k], &oi));
    y[k] = st_make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL);
    x[k] = st_make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
    if (c.with_x0) x0[k] = st_make_vec(oi.model, RMAOP_F64, 4, 0.1, NULL);
  }
  if (c.tol_at > 0) {
    rmaop_solver_options o;
    rmaop_solver_options_init(&o);
    o.niter = c.tol_at, o.damp = c.damp, o.x0 = x0[1];
    RT_OK(c.cg ? rmaop_solve_cg(op[1], y[1], x[1], &o, &info[1]) : rmaop_solve_cgls(op[1], y[1], x[1], &o, &info[1]));
    tol = info[1].kold * (1.0 + 1e-9);
    rmaop_solver_info_destroy(&info[1]);
  }
  const rmaop_ctx rctx = op[0]->ctx;
  const unsigned long ran0 = rctx->resident_solves;
  for (int k = 0; k < 2; ++k) {
    rmaop_solver_options o;
    rmaop_solver_options_init(&o);
    o.niter = c.niter, o.tol = tol, o.damp = c.damp, o.x0 = x0[k];
    memset(&info[k], 0, sizeof info[k]);
    RT_OK(c.cg ? rmaop_solve_cg(op[k], y[k], x[k], &o, &info[k]) : rmaop_solve_cgls(op[k], y[k], x[k], &o, &info[k]));
  }
  const unsigned long ran = rctx->resident_solves - ran0;
  if (c.kernel > 0 && kernel_ctx(rctx))
    RT_CHECK(ran == 1, "%s: the resident kernel did not run the solve (it fell back)", what);
  if (c.kernel < 0)
    RT_CHECK(ran == 0, "%s: the resident kernel ran a solve it does not support", what);
  if (c.tol_at > 0)
    RT_CHECK(info[1].reason == RMAOP_REASON_TOL && info[1].iterations <= c.tol_at, "%s: tol did not stop the host solve",
             what);
  RT_CHECK(info[0].iterations == info[1].iterations && info[0].reason == info[1].reason,
           "%s: resident %d iterations (reason %d), host scalars %d (reason %d)", what, info[0].iterations,
           (int)info[0].reason, info[1].iterations, (int)info[1].reason);
  for (int i = 0; i <= info[0].iterations && i <= info[1].iterations; ++i)
    RT_CHECK(fabs(info[0].history[i] - info[1].history[i]) <= 1e-10 * info[1].history[i] + 1e-300,
             "%s: history[%d] %.17g (resident) vs %.17g (host)", what, i, info[0].history[i], info[1].history[i]);
  RT_CHECK(fabs(info[0].kold - info[1].kold) <= 1e-10 * info[1].kold + 1e-300, "%s: kold %.17g vs %.17g", what,
           info[0].kold, info[1].kold);
  rmaop_vec_info vi;
  RT_OK(rmaop_vec_get_info(x[0], &vi));
  double *a = rt_alloc(RMAOP_F64, vi.local_n), *b = rt_alloc(RMAOP_F64, vi.local_n);
  RT_OK(rmaop_vec_read_local(x[0], a));
  RT_OK(rmaop_vec_read_local(x[1], b));
  double big = 0, diff = 0;
  for (int64_t i = 0; i < vi.local_n; ++i) big = fmax(big, fabs(b[i])), diff = fmax(diff, fabs(a[i] - b[i]));
  RT_CHECK(diff <= 1e-10 * (big + 1e-300), "%s: x differs by %.3g (largest |x| %.3g)", what, diff, big);
  free(a), free(b);
  for (int k = 0; k < 2; ++k) {
    rmaop_solver_info_destroy(&info[k]);
    rmaop_vec_destroy(&x[k]), rmaop_vec_destroy(&y[k]), rmaop_vec_destroy(&x0[k]);
  }
}

START_TEST(test_cgls_resident) {
  rmaop_ctx ctx[2] = {scalars_ctx("resident", 0), scalars_ctx("host", 0)};
  const struct {
    int64_t n0, n1;
    rmaop_deriv_kind kind;
  } shapes[] = {{0, 1, RMAOP_DERIV_CENTERED3}, {5003, 1, RMAOP_DERIV_CENTERED3}, {37, 6, RMAOP_DERIV_CENTERED3},
                {300, 1, RMAOP_DERIV_FORWARD}, {3001, 1, RMAOP_DERIV_CENTERED5}, {40, 600, RMAOP_DERIV_CENTERED3}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k) {
    rmaop_op op[2];
    for (int c = 0; c < 2; ++c)
      op[c] = shapes[k].n0 == 0 ? st_deriv_op(ctx[c], RMAOP_F64) : make_deriv(ctx[c], shapes[k].n0, shapes[k].n1, shapes[k].kind);
    char what[96];
    snprintf(what, sizeof what, "CGLS shape %zu niter", k);
    compare(op, (cfg){.niter = 12, .kernel = 1}, what);
    snprintf(what, sizeof what, "CGLS shape %zu damp x0", k);
    compare(op, (cfg){.niter = 10, .damp = 0.3, .with_x0 = 1, .kernel = 1}, what);
    snprintf(what, sizeof what, "CGLS shape %zu tol", k);
    compare(op, (cfg){.niter = 60, .tol_at = 7, .kernel = 1}, what);
    compare(op, (cfg){.niter = 0}, "CGLS niter 0");
    if (k == 1) { /* RMAOP_RESIDENT_PROFILE's stamps change nothing in the results (rank 0 prints them) */
      rmaop_ctx pc = profiled_ctx();
      rmaop_op pop[2] = {make_deriv(pc, shapes[k].n0, shapes[k].n1, shapes[k].kind), op[1]};
      compare(pop, (cfg){.niter = 12, .kernel = 1}, "CGLS profiled");
      compare(pop, (cfg){.niter = 60, .tol_at = 7, .kernel = 1}, "CGLS profiled, tol");
      rmaop_op_destroy(&pop[0]);
      rmaop_ctx_destroy(&pc);
    }
    for (int c = 0; c < 2; ++c) rmaop_op_destroy(&op[c]);
  }
  rmaop_ctx_destroy(&ctx[0]), rmaop_ctx_destroy(&ctx[1]);
}
END_TEST

START_TEST(test_cg_resident) {
  rmaop_ctx ctx[2] = {scalars_ctx("resident", 0), scalars_ctx("host", 0)};
  const int64_t dims[4][2] = {{0, 0}, {4099, 1}, {29, 4}, {24, 600}}; /* k = 0: the test utilities' derivative */
  for (int k = 0; k < 4; ++k) {
    rmaop_op op[2];
    for (int c = 0; c < 2; ++c) {
      rmaop_op D =
          k == 0 ? st_deriv_op(ctx[c], RMAOP_F64) : make_deriv(ctx[c], dims[k][0], dims[k][1], RMAOP_DERIV_CENTERED3);
      op[c] = make_spd(D, k != 2);
      rmaop_op_destroy(&D);
    }
    char what[96];
    snprintf(what, sizeof what, "CG %d niter", k);
    compare(op, (cfg){.cg = 1, .niter = 15, .kernel = 1}, what);
    snprintf(what, sizeof what, "CG %d x0", k);
    compare(op, (cfg){.cg = 1, .niter = 8, .with_x0 = 1, .kernel = 1}, what);
    snprintf(what, sizeof what, "CG %d tol", k);
    compare(op, (cfg){.cg = 1, .niter = 60, .tol_at = 9, .kernel = 1}, what);
    if (k == 1) {
      rmaop_ctx pc = profiled_ctx();
      rmaop_op D = make_deriv(pc, 4099, 1, RMAOP_DERIV_CENTERED3);
      rmaop_op pop[2] = {make_spd(D, 1), op[1]};
      rmaop_op_destroy(&D);
      compare(pop, (cfg){.cg = 1, .niter = 15, .kernel = 1}, "CG profiled");
      rmaop_op_destroy(&pop[0]);
      rmaop_ctx_destroy(&pc);
    }
    for (int c = 0; c < 2; ++c) rmaop_op_destroy(&op[c]);
  }
  rmaop_ctx_destroy(&ctx[0]), rmaop_ctx_destroy(&ctx[1]);
}
END_TEST

/* An operator the kernel does not run (a vstack): the solve falls back and matches the host loop. */
START_TEST(test_resident_fallback) {
  rmaop_ctx ctx[2] = {scalars_ctx("resident", 0), scalars_ctx("host", 0)};
  st_problem p[2] = {st_make_vstack(ctx[0], RMAOP_F64), st_make_vstack(ctx[1], RMAOP_F64)};
  rmaop_op op[2] = {p[0].A, p[1].A};
  compare(op, (cfg){.niter = 6, .kernel = -1}, "CGLS vstack (fallback)");
  st_problem_free(&p[0]), st_problem_free(&p[1]);
  rmaop_ctx_destroy(&ctx[0]), rmaop_ctx_destroy(&ctx[1]);
}
END_TEST

/* The last rank's solve stops after one iteration (its niter), so inside the kernel the others wait for its
 * reduction of the second: they give up after the context's timeout with RMAOP_ERR_TIMEOUT naming it. */
START_TEST(test_resident_timeout) {
  const char *b = getenv("RMAOP_BACKEND");
  if (rt_size < 2 || !b || strcmp(b, "rma") != 0) return; /* the kernel's own waits: the rma backend over ipc */
  const double timeout_s = 2.0;
  rmaop_ctx ctx = scalars_ctx("resident", timeout_s);
  rmaop_op D = make_deriv(ctx, 2000, 1, RMAOP_DERIV_CENTERED3);
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(D, &oi));
  rmaop_vec y = st_make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL), x = st_make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  const int last = rt_rank == rt_size - 1;
  o.niter = last ? 1 : 20;
  rmaop_solver_info info;
  rt_watchdog(WATCHDOG_S, "test_solver_resident: a GPU-resident solve did not honour the context's timeout");
  const double t0 = MPI_Wtime();
  const rmaop_status st = rmaop_solve_cgls(D, y, x, &o, &info);
  const double waited = MPI_Wtime() - t0;
  rt_watchdog(0, NULL);
  if (st == RMAOP_OK) rmaop_solver_info_destroy(&info);
  RT_CHECK(last ? (st == RMAOP_OK || st == RMAOP_ERR_TIMEOUT) : st == RMAOP_ERR_TIMEOUT, "solve -> %s after %.2f s: %s",
           rmaop_status_string(st), waited, rmaop_ctx_last_error(NULL));
  RT_CHECK(last || waited < 2 * timeout_s, "rank %d returned after %.2f s with a %.2f s timeout", rt_rank, waited,
           timeout_s);
  MPI_Barrier(MPI_COMM_WORLD);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y);
  rmaop_op_destroy(&D);
  rmaop_ctx_destroy(&ctx);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("solver_resident");
  TCase *tc = tcase_create("solver_resident");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_cgls_resident);
  tcase_add_test(tc, test_cg_resident);
  tcase_add_test(tc, test_resident_fallback);
  tcase_add_test(tc, test_resident_timeout);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
