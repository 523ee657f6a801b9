/* Shared helpers of the solver tests; see solver_test_util.h. */
#include "solver_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dense global matrices and vectors ---- */

double _Complex *st_cvec(int64_t n) {
  double _Complex *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v)
    abort();
  return v;
}

st_mat st_mat_new(int64_t m, int64_t n) {
  return (st_mat){m, n, st_cvec(m * n)};
}

void st_mat_free(st_mat *A) {
  free(A->a);
  A->a = NULL;
}

void st_matvec(const st_mat *A, int adjoint, const double _Complex *x, double _Complex *y) {
  const int64_t m = adjoint ? A->n : A->m, n = adjoint ? A->m : A->n;
  for (int64_t i = 0; i < m; ++i) {
    double _Complex s = 0;
    for (int64_t j = 0; j < n; ++j)
      s += (adjoint ? conj(ST_AT(*A, j, i)) : ST_AT(*A, i, j)) * x[j];
    y[i] = s;
  }
}

double _Complex st_vdot(int64_t n, const double _Complex *a, const double _Complex *b) {
  double _Complex s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += conj(a[i]) * b[i];
  return s;
}

/* ---- problems ---- */

void st_problem_free(st_problem *p) {
  rmaop_op_destroy(&p->A);
  for (int i = 0; i < 4; ++i)
    rmaop_op_destroy(&p->parts[i]);
  st_mat_free(&p->M);
}

static int64_t spd_rows(int r) {
  return (int64_t[]){10, 0, 7, 5}[r % 4] + (r >= 4);
}
static double spd_val(int r, int64_t i, int64_t j) {
  return 1.0 / (1.0 + (double)llabs(i - j)) + (i == j ? r + 1.0 : 0.0);
}

st_problem st_make_spd(rmaop_ctx ctx, rmaop_dtype d) {
  st_problem p = {.name = "blockdiag SPD"};
  int64_t n = 0, off = 0;
  for (int r = 0; r < rt_size; ++r)
    n += spd_rows(r);
  p.M = st_mat_new(n, n);
  for (int r = 0; r < rt_size; ++r) {
    for (int64_t i = 0; i < spd_rows(r); ++i)
      for (int64_t j = 0; j < spd_rows(r); ++j)
        ST_AT(p.M, off + i, off + j) = rt_round(d, spd_val(r, i, j));
    off += spd_rows(r);
  }
  const int64_t nr = spd_rows(rt_rank);
  void *B = rt_alloc(d, nr * nr);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < nr; ++j)
      rt_store(d, B, i * nr + j, spd_val(rt_rank, i, j));
  rmaop_block blk = {.nrows = nr, .ncols = nr, .dense = B};
  RT_OK(rmaop_op_create_blockdiag(ctx, d, &blk, &p.A));
  free(B);
  return p;
}

static int64_t vs_rows(int r) {
  return (int64_t[]){9, 0, 7, 4}[r % 4] + (r >= 4);
}
static double _Complex vs_val(int r, int64_t i, int64_t j) {
  return rt_value(17 * r + 5 * i + 11 * j, 8) + (i % ST_VCOLS == j ? 2.0 : 0.0);
}

st_problem st_make_vstack(rmaop_ctx ctx, rmaop_dtype d) {
  st_problem p = {.name = "vstack"};
  int64_t m = 0, off = 0;
  for (int r = 0; r < rt_size; ++r)
    m += vs_rows(r);
  p.M = st_mat_new(m, ST_VCOLS);
  for (int r = 0; r < rt_size; ++r) {
    for (int64_t i = 0; i < vs_rows(r); ++i)
      for (int64_t j = 0; j < ST_VCOLS; ++j)
        ST_AT(p.M, off + i, j) = rt_round(d, vs_val(r, i, j));
    off += vs_rows(r);
  }
  const int64_t nr = vs_rows(rt_rank);
  void *B = rt_alloc(d, nr * ST_VCOLS);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < ST_VCOLS; ++j)
      rt_store(d, B, i * ST_VCOLS + j, vs_val(rt_rank, i, j));
  rmaop_block blk = {.nrows = nr, .ncols = ST_VCOLS, .dense = B};
  RT_OK(rmaop_op_create_vstack(ctx, d, &blk, &p.A));
  free(B);
  return p;
}

rmaop_op st_deriv_op(rmaop_ctx ctx, rmaop_dtype d) {
  const int64_t rows = rt_size == 1 ? ST_DN : rt_rank == 0 ? 1 : rt_rank == rt_size - 1 ? ST_DN - 1 : 0;
  rmaop_deriv_spec spec = {.grid = {.ndim = 1, .dims = {ST_DN}, .local_rows = rows},
                           .axis = 0,
                           .kind = RMAOP_DERIV_CENTERED3,
                           .edge = 0,
                           .dtype = d};
  rmaop_op D = NULL;
  RT_OK(rmaop_op_create_first_derivative(ctx, &spec, &D));
  return D;
}

st_mat st_deriv_mat(void) {
  st_mat M = st_mat_new(ST_DN, ST_DN);
  for (int64_t i = 1; i < ST_DN - 1; ++i)
    ST_AT(M, i, i + 1) = 0.5, ST_AT(M, i, i - 1) = -0.5;
  return M;
}

st_problem st_make_derivative(rmaop_ctx ctx, rmaop_dtype d) {
  st_problem p = {.name = "first derivative centered3", .M = st_deriv_mat()};
  p.A = st_deriv_op(ctx, d);
  return p;
}

/* ---- vectors ---- */

rmaop_vec st_make_vec(rmaop_layout l, rmaop_dtype d, int s, double scale, double _Complex **global) {
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  double _Complex *g = st_cvec(info.global_n);
  for (int64_t i = 0; i < info.global_n; ++i)
    g[i] = rt_round(d, scale * rt_value(i, s));
  void *buf = rt_alloc(d, info.local_n);
  for (int64_t i = 0; i < info.local_n; ++i)
    rt_store(d, buf, i, g[info.offset + i]);
  RT_OK(rmaop_vec_write_local(v, buf));
  free(buf);
  if (global)
    *global = g;
  else
    free(g);
  return v;
}

int st_x_matches(rmaop_vec x, const double _Complex *ref, double tol, char *msg, size_t msz) {
  rmaop_vec_info info;
  if (rmaop_vec_get_info(x, &info) != RMAOP_OK)
    return 0;
  double scale = 0;
  for (int64_t i = 0; i < info.global_n; ++i)
    scale = fmax(scale, cabs(ref[i]));
  void *buf = rt_alloc(info.dtype, info.local_n);
  rmaop_vec_read_local(x, buf);
  int ok = 1;
  for (int64_t i = 0; i < info.local_n && ok; ++i) {
    double _Complex got = rt_load(info.dtype, buf, i), want = ref[info.offset + i];
    if (!rt_close(got, want, tol, scale))
      ok = 0, snprintf(msg, msz, "x[%lld] = %.17g%+.17gi, reference %.17g%+.17gi", (long long)(info.offset + i),
                       creal(got), cimag(got), creal(want), cimag(want));
  }
  free(buf);
  return ok;
}

/* ---- histories ---- */

double st_hist_tol(rmaop_dtype d) {
  return d == RMAOP_F64 || d == RMAOP_C128 ? 1e-10 : 1e-4;
}

int st_hist_close_floor(const double *got, const double *want, int n, double tol, double floor, char *msg, size_t msz) {
  for (int k = 0; k <= n; ++k)
    if (!(fabs(got[k] - want[k]) <= tol * want[k] + floor * want[0])) {
      snprintf(msg, msz, "history[%d] = %.17g, reference %.17g (relative %.3g)", k, got[k], want[k],
               fabs(got[k] - want[k]) / want[k]);
      return 0;
    }
  return 1;
}

double st_hist_floor(double tol) {
  return tol > 1e-6 ? 1e-6 : 1e-14;
}

int st_hist_close(const double *got, const double *want, int n, double tol, char *msg, size_t msz) {
  return st_hist_close_floor(got, want, n, tol, st_hist_floor(tol), msg, msz);
}

/* ---- one solve against its serial reference ---- */

rmaop_status st_record_cb(void *user, int iteration, double residual, rmaop_vec x) {
  st_cb_state *s = user;
  s->calls++;
  if (iteration != s->last_iteration + 1)
    s->bad_order = 1;
  s->last_iteration = iteration;
  if (iteration >= 0 && iteration <= ST_MAXIT)
    s->residuals[iteration] = residual;
  if (x != s->expect_x)
    s->x_seen_ok = 0;
  if (s->fail_at > 0 && iteration == s->fail_at)
    return s->fail;
  return RMAOP_OK;
}

st_solve_vecs st_solve_vecs_create(const st_problem *p, rmaop_dtype d, int with_x0, int zero_y) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  st_solve_vecs v = {NULL, NULL, NULL, NULL, NULL};
  v.y = st_make_vec(oi.data, d, 3, zero_y ? 0.0 : 1.0, &v.yg);
  v.x0 = with_x0 ? st_make_vec(oi.model, d, 4, 0.3, &v.x0g) : NULL;
  v.x = st_make_vec(oi.model, d, 5, 9.0, NULL);
  return v;
}

void st_solve_vecs_free(st_solve_vecs *v) {
  free(v->yg), free(v->x0g);
  v->yg = v->x0g = NULL;
  rmaop_vec_destroy(&v->y), rmaop_vec_destroy(&v->x0), rmaop_vec_destroy(&v->x);
}

void st_check_solve(const char *what, rmaop_dtype d, const rmaop_solver_info *info, const st_ref *ref, rmaop_vec x,
                    const st_cb_state *cb, double hist_floor) {
  char msg[400] = "";
  RT_CHECK(info->iterations == ref->iterations && info->reason == ref->reason && info->history != NULL,
           "%s: %d iterations, reason %d; reference %d, reason %d", what, info->iterations, (int)info->reason,
           ref->iterations, (int)ref->reason);
  const double tol = st_hist_tol(d);
  RT_CHECK(st_hist_close_floor(info->history, ref->history, info->iterations, tol, hist_floor, msg, sizeof msg),
           "%s: %s", what, msg);
  RT_CHECK(rt_same_everywhere(info->history, (size_t)(info->iterations + 1) * sizeof(double)),
           "%s: ranks hold different histories", what);
  RT_CHECK(st_x_matches(x, ref->x, 100 * tol, msg, sizeof msg), "%s: %s", what, msg);
  /* the callback: once per iteration, in order, with the history value and the solver's x */
  int ok = cb->calls == info->iterations && !cb->bad_order && cb->x_seen_ok;
  for (int k = 1; k <= info->iterations && ok; ++k)
    ok = cb->residuals[k] == info->history[k];
  RT_CHECK(ok, "%s: callback called %d times (iterations %d), order %s, x %s", what, cb->calls, info->iterations,
           cb->bad_order ? "wrong" : "right", cb->x_seen_ok ? "right" : "wrong");
  RT_CHECK(info->time_total >= 0 && info->time_comm >= 0 && info->time_comm <= info->time_total + 1e-6,
           "%s: times total %g, comm %g", what, info->time_total, info->time_comm);
}

/* ---- argument errors ---- */

st_bad_vecs st_bad_vecs_create(rmaop_ctx ctx, const st_problem *p) {
  rmaop_op_info oi;
  RT_OK(rmaop_op_get_info(p->A, &oi));
  st_bad_vecs v = {NULL, NULL, NULL, NULL, NULL};
  v.y = st_make_vec(oi.data, RMAOP_F64, 3, 1.0, NULL);
  v.x = st_make_vec(oi.model, RMAOP_F64, 5, 1.0, NULL);
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, p->M.n + 2 * rt_size, &v.big));
  v.xbig = st_make_vec(v.big, RMAOP_F64, 5, 1.0, NULL);
  v.x32 = st_make_vec(oi.model, RMAOP_F32, 5, 1.0, NULL);
  return v;
}

void st_bad_vecs_free(st_bad_vecs *v) {
  rmaop_vec_destroy(&v->y), rmaop_vec_destroy(&v->x), rmaop_vec_destroy(&v->xbig), rmaop_vec_destroy(&v->x32);
  rmaop_layout_destroy(&v->big);
}

/* ---- sparsity and proximal solver tests ---- */

st_problem st_make_matmul(rmaop_ctx ctx, rmaop_dtype d, int64_t N, int64_t K, st_entry_fn f) {
  st_problem p = {.name = "matmul"};
  p.M = st_mat_new(N, K);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < K; ++j)
      ST_AT(p.M, i, j) = rt_round(d, f(i, j));
  rmaop_matmul_blocks b;
  RT_OK(rmaop_op_matmul_get_blocks(ctx, RMAOP_MATMUL_BLOCK, N, K, 1, rt_rank, &b));
  void *a = rt_alloc(d, b.a_nrows * b.a_ncols);
  for (int64_t i = 0; i < b.a_nrows; ++i)
    for (int64_t j = 0; j < b.a_ncols; ++j)
      rt_store(d, a, i * b.a_ncols + j, f(b.a_row0 + i, b.a_col0 + j));
  rmaop_matmul_spec spec = {.kind = RMAOP_MATMUL_BLOCK, .dtype = d, .N = N, .K = K, .M = 1, .nrows = b.a_nrows,
                            .ncols = b.a_ncols, .A = b.a_nrows * b.a_ncols > 0 ? a : NULL};
  RT_OK(rmaop_op_create_matmul(ctx, &spec, &p.A));
  free(a);
  return p;
}

rmaop_vec st_vec_from(rmaop_layout l, rmaop_dtype d, const double _Complex *g) {
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  void *buf = rt_alloc(d, info.local_n);
  for (int64_t i = 0; i < info.local_n; ++i)
    rt_store(d, buf, i, g[info.offset + i]);
  RT_OK(rmaop_vec_write_local(v, buf));
  free(buf);
  return v;
}

double _Complex *st_vec_global(rmaop_vec v, int64_t *n) {
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  void *buf = rt_alloc(info.dtype, info.global_n);
  RT_OK(rmaop_vec_gather(v, 0, buf));
  MPI_Bcast(buf, (int)(info.global_n * (int64_t)rmaop_dtype_size(info.dtype)), MPI_BYTE, 0, MPI_COMM_WORLD);
  double _Complex *g = st_cvec(info.global_n);
  for (int64_t i = 0; i < info.global_n; ++i)
    g[i] = rt_load(info.dtype, buf, i);
  free(buf);
  if (n)
    *n = info.global_n;
  return g;
}

/* ---- device scalars ---- */

int st_graph_expected(void) {
  const char *m = getenv("RMAOP_MEMORY"), *b = getenv("RMAOP_BACKEND"), *t = getenv("RMAOP_RMA_TRANSPORT"),
             *k = getenv("RMAOP_IPC_PATH");
  if (!m || strcmp(m, "device") != 0)
    return 0;
  if (rt_size == 1 || (b && strcmp(b, "nccl") == 0))
    return 1;
  return b && strcmp(b, "rma") == 0 && t && strcmp(t, "ipc") == 0 && k && strcmp(k, "kernel") == 0;
}

const char *st_scalars_name(int mode) {
  static const char *const names[] = {"device", "graph", "resident", "while"};
  return mode < 0 ? "host" : names[mode];
}

int st_one_graph_expected(void) {
  const char *b = getenv("RMAOP_BACKEND");
  return st_graph_expected() && (rt_size == 1 || (b && strcmp(b, "rma") == 0));
}

rmaop_ctx st_scalars_ctx(int mode) {
  setenv("RMAOP_SOLVER_SCALARS", st_scalars_name(mode), 1);
  rmaop_ctx c = rt_ctx();
  unsetenv("RMAOP_SOLVER_SCALARS");
  return c;
}
