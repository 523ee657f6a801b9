/* Tests of the dense matrix multiply (rmaop_op_create_matmul, kinds block and summa) and of Fredholm1
 * (rmaop_op_create_fredholm1).
 *
 * Reference: every rank knows the global A (N x K), X (K x M) and the data-side input W (N x M) from
 * rt_value formulas (rounded to the dtype), and computes Y = A X and A^H W serially in double complex
 * (PyLops MatrixMult: y = A x, x = A^H y). The library's local blocks (rmaop_op_matmul_get_blocks says which)
 * are compared element by element within rt_tol(dtype) relative to sum |a||x| of the row. Fredholm1 is
 * compared with d[s] = G[s] m[s] and m[s] = G[s]^H d[s] (PyLops Fredholm1) on every rank (broadcast
 * layouts, PyLops-MPI MPIFredholm1). Every operator passes rmaop_op_dottest in every dtype. Sizes are
 * non-square (N != K != M) and not divisible by the rank count; SUMMA runs at P = 1, 2, 3 (ranks outside
 * the 1 x 1 grid idle), 4 and 9 (ctest entry matmul_summa9). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

/* Element (r, c) of a global row-major matrix of `cols` columns, series s, as the dtype holds it. */
static double _Complex gval(rmaop_dtype d, int s, int64_t r, int64_t c, int64_t cols) {
  return rt_round(d, rt_value(r * cols + c, s));
}

/* A rank-local failure (message kept), asserted collectively later. */
static int lok;
static char lerr[512];
static void lfail(const char *what, double _Complex got, double _Complex want, int64_t r, int64_t c) {
  if (!lok) return;
  lok = 0;
  snprintf(lerr, sizeof lerr, "%s (%lld, %lld) is %.9g%+.9gi, want %.9g%+.9gi", what, (long long)r, (long long)c,
           creal(got), cimag(got), creal(want), cimag(want));
}

typedef struct {
  int64_t N, K, M;
} shape;

/* The local block (rows x cols at row0, col0 of a global matrix with `gcols` columns) of out against
 * sum_p op(L)[r][p] R[p][c], L = A (N x K, series 0) or A^H, R = X (series 1) or W (series 2). */
static void check_block(rmaop_vec out, rmaop_dtype dt, const shape *s, int adjoint, int64_t row0, int64_t rows,
                        int64_t col0, int64_t cols) {
  void *buf = rt_alloc(dt, rows * cols);
  if (rmaop_vec_read_local(out, buf) != RMAOP_OK) lfail("read_local failed", 0, 0, 0, 0);
  const int64_t inner = adjoint ? s->N : s->K;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double _Complex want = 0;
      double scale = 0;
      for (int64_t p = 0; p < inner; ++p) {
        const double _Complex a = adjoint ? conj(gval(dt, 0, p, row0 + r, s->K)) : gval(dt, 0, row0 + r, p, s->K);
        const double _Complex b = gval(dt, adjoint ? 2 : 1, p, col0 + c, s->M);
        want += a * b;
        scale += cabs(a) * cabs(b);
      }
      const double _Complex got = rt_load(dt, buf, r * cols + c);
      if (!rt_close(got, want, rt_tol(dt), scale))
        lfail("element", got, want, row0 + r, col0 + c);
    }
  free(buf);
}

/* Writes the block (rows x cols at row0, col0) of series s (global `gcols` columns) into v. */
static void write_block(rmaop_vec v, rmaop_dtype dt, int s, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                        int64_t gcols) {
  void *buf = rt_alloc(dt, rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) rt_store(dt, buf, r * cols + c, gval(dt, s, row0 + r, col0 + c, gcols));
  if (rmaop_vec_write_local(v, buf) != RMAOP_OK) lfail("write_local failed", 0, 0, 0, 0);
  free(buf);
}

static rmaop_op make_matmul(rmaop_matmul_kind kind, rmaop_dtype dt, const shape *s, rmaop_matmul_blocks *b) {
  RT_OK(rmaop_op_matmul_get_blocks(ctx, kind, s->N, s->K, s->M, rt_rank, b));
  void *A = rt_alloc(dt, b->a_nrows * b->a_ncols);
  for (int64_t r = 0; r < b->a_nrows; ++r)
    for (int64_t c = 0; c < b->a_ncols; ++c)
      rt_store(dt, A, r * b->a_ncols + c, gval(dt, 0, b->a_row0 + r, b->a_col0 + c, s->K));
  rmaop_matmul_spec spec = {.kind = kind, .dtype = dt, .N = s->N, .K = s->K, .M = s->M, .nrows = b->a_nrows,
                            .ncols = b->a_ncols, .A = A, .label = "mm"};
  rmaop_op op = NULL;
  RT_OK(rmaop_op_create_matmul(ctx, &spec, &op));
  free(A);
  return op;
}

/* Forward and adjoint against the serial reference, the layouts, and the dot test. */
static void check_matmul(rmaop_matmul_kind kind, rmaop_dtype dt, const shape *s) {
  rmaop_matmul_blocks b;
  rmaop_op op = make_matmul(kind, dt, s, &b);
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(op, &info));
  rmaop_layout_info mi, di;
  RT_OK(rmaop_layout_get_info(info.model, &mi));
  RT_OK(rmaop_layout_get_info(info.data, &di));
  RT_CHECK(mi.global_n == s->K * s->M && di.global_n == s->N * s->M && mi.local_n == b.x_nrows * b.x_ncols &&
               di.local_n == b.y_nrows * b.y_ncols,
           "layouts: model %lld (%lld here), data %lld (%lld here)", (long long)mi.global_n, (long long)mi.local_n,
           (long long)di.global_n, (long long)di.local_n);
  rmaop_vec x = NULL, y = NULL;
  RT_OK(rmaop_vec_create(info.model, dt, &x));
  RT_OK(rmaop_vec_create(info.data, dt, &y));
  lok = 1;
  write_block(x, dt, 1, b.x_row0, b.x_nrows, b.x_col0, b.x_ncols, s->M);
  RT_OK(rmaop_op_apply(op, x, y));
  check_block(y, dt, s, 0, b.y_row0, b.y_nrows, b.y_col0, b.y_ncols);
  RT_CHECK(lok, "%s %s %lldx%lldx%lld forward: %s", info.name, rmaop_dtype_name(dt), (long long)s->N, (long long)s->K,
           (long long)s->M, lerr);
  write_block(y, dt, 2, b.y_row0, b.y_nrows, b.y_col0, b.y_ncols, s->M);
  RT_OK(rmaop_vec_set(x, 7.0)); /* the adjoint overwrites */
  RT_OK(rmaop_op_apply_adjoint(op, y, x));
  check_block(x, dt, s, 1, b.x_row0, b.x_nrows, b.x_col0, b.x_ncols);
  RT_CHECK(lok, "%s %s %lldx%lldx%lld adjoint: %s", info.name, rmaop_dtype_name(dt), (long long)s->N, (long long)s->K,
           (long long)s->M, lerr);
  double rel = 1;
  RT_OK(rmaop_op_dottest(op, 11u, &rel));
  RT_CHECK(rel < 10 * rt_tol(dt), "%s %s dot test: relative error %g", info.name, rmaop_dtype_name(dt), rel);
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_op_destroy(&op);
}

static const shape shapes[] = {{7, 5, 3}, {5, 11, 6}, {2, 3, 1}};

static void run_kind(rmaop_matmul_kind kind) {
  for (int d = 0; d < 4; ++d)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) check_matmul(kind, rt_dtypes[d], &shapes[i]);
}

START_TEST(test_block_kind) {
  run_kind(RMAOP_MATMUL_BLOCK);
}
END_TEST

START_TEST(test_summa_kind) {
  run_kind(RMAOP_MATMUL_SUMMA);
}
END_TEST

/* The blocks tile A, X and Y exactly once (over the ranks), and SUMMA's grid is the largest square. */
START_TEST(test_blocks_tile) {
  const shape s = {7, 5, 3};
  for (int kind = 0; kind < 2; ++kind) {
    int64_t area[3] = {0, 0, 0};
    int active = 0;
    for (int r = 0; r < rt_size; ++r) {
      rmaop_matmul_blocks b;
      RT_OK(rmaop_op_matmul_get_blocks(ctx, (rmaop_matmul_kind)kind, s.N, s.K, s.M, r, &b));
      area[0] += b.a_nrows * b.a_ncols, area[1] += b.x_nrows * b.x_ncols, area[2] += b.y_nrows * b.y_ncols;
      active += b.active;
    }
    int g = 0;
    while ((g + 1) * (g + 1) <= rt_size) ++g;
    RT_CHECK(area[0] == s.N * s.K && area[1] == s.K * s.M && area[2] == s.N * s.M, "kind %d: areas %lld %lld %lld",
             kind, (long long)area[0], (long long)area[1], (long long)area[2]);
    RT_CHECK(active == (kind == RMAOP_MATMUL_BLOCK ? rt_size : g * g), "kind %d: %d active ranks", kind, active);
  }
}
END_TEST

/* ---- Fredholm1 ---- */

typedef struct {
  int64_t nsl, nx, ny, nz;
} fshape;

/* Slices per rank: uneven, rank 1 (if any) holds none. */
static int64_t slices_of(int r) {
  return r == 1 ? 0 : 1 + r % 3;
}

static void check_fredholm(rmaop_dtype dt, int64_t nx, int64_t ny, int64_t nz) {
  int64_t nsl = 0, off = 0;
  for (int r = 0; r < rt_size; ++r) {
    if (r == rt_rank) off = nsl;
    nsl += slices_of(r);
  }
  const int64_t mine = slices_of(rt_rank);
  void *G = rt_alloc(dt, mine * nx * ny);
  for (int64_t i = 0; i < mine * nx * ny; ++i) rt_store(dt, G, i, rt_round(dt, rt_value(off * nx * ny + i, 3)));
  rmaop_op op = NULL;
  RT_OK(rmaop_op_create_fredholm1(ctx, dt, mine, nx, ny, nz, G, &op));
  free(G);
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(op, &info));
  rmaop_vec m = NULL, d = NULL;
  RT_OK(rmaop_vec_create(info.model, dt, &m));
  RT_OK(rmaop_vec_create(info.data, dt, &d));
  rmaop_vec_info mi, di;
  RT_OK(rmaop_vec_get_info(m, &mi));
  RT_OK(rmaop_vec_get_info(d, &di));
  RT_CHECK(mi.local_n == nsl * ny * nz && di.local_n == nsl * nx * nz, "fredholm1 layouts: %lld, %lld",
           (long long)mi.local_n, (long long)di.local_n);
  lok = 1;
  for (int adjoint = 0; adjoint < 2; ++adjoint) {
    rmaop_vec in = adjoint ? d : m, out = adjoint ? m : d;
    const int64_t rows = adjoint ? ny : nx, inner = adjoint ? nx : ny, nin = nsl * inner * nz, nout = nsl * rows * nz;
    void *buf = rt_alloc(dt, nin > nout ? nin : nout);
    for (int64_t i = 0; i < nin; ++i) rt_store(dt, buf, i, rt_round(dt, rt_value(i, 4 + adjoint)));
    RT_OK(rmaop_vec_write_local(in, buf));
    RT_OK(adjoint ? rmaop_op_apply_adjoint(op, d, m) : rmaop_op_apply(op, m, d));
    RT_OK(rmaop_vec_read_local(out, buf));
    for (int64_t s = 0; s < nsl; ++s)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < nz; ++c) {
          double _Complex want = 0;
          double scale = 0;
          for (int64_t p = 0; p < inner; ++p) {
            /* G[s][x][y]: forward G[s][r][p], adjoint conj(G[s][p][r]) */
            const int64_t gi = s * nx * ny + (adjoint ? p * ny + r : r * ny + p);
            double _Complex g = rt_round(dt, rt_value(gi, 3));
            if (adjoint) g = conj(g);
            const double _Complex v = rt_round(dt, rt_value((s * inner + p) * nz + c, 4 + adjoint));
            want += g * v;
            scale += cabs(g) * cabs(v);
          }
          const double _Complex got = rt_load(dt, buf, (s * rows + r) * nz + c);
          if (!rt_close(got, want, rt_tol(dt), scale))
            lfail("slice, element", got, want, s, r * nz + c);
        }
    free(buf);
    RT_CHECK(lok, "fredholm1 %s %s (nz %lld): %s", rmaop_dtype_name(dt), adjoint ? "adjoint" : "forward",
             (long long)nz, lerr);
  }
  double rel = 1;
  RT_OK(rmaop_op_dottest(op, 5u, &rel));
  RT_CHECK(rel < 10 * rt_tol(dt), "fredholm1 %s dot test: relative error %g", rmaop_dtype_name(dt), rel);
  rmaop_vec_destroy(&m);
  rmaop_vec_destroy(&d);
  rmaop_op_destroy(&op);
}

START_TEST(test_fredholm1) {
  for (int d = 0; d < 4; ++d) {
    check_fredholm(rt_dtypes[d], 3, 4, 2);
    check_fredholm(rt_dtypes[d], 5, 2, 1);
  }
}
END_TEST

/* ---- errors ---- */

START_TEST(test_matmul_errors) {
  const shape s = {7, 5, 3};
  rmaop_matmul_blocks b;
  RT_OK(rmaop_op_matmul_get_blocks(ctx, RMAOP_MATMUL_BLOCK, s.N, s.K, s.M, rt_rank, &b));
  void *A = rt_alloc(RMAOP_F64, b.a_nrows * b.a_ncols + 1);
  rmaop_matmul_spec spec = {.kind = RMAOP_MATMUL_BLOCK, .dtype = RMAOP_F64, .N = s.N, .K = s.K, .M = s.M,
                            .nrows = b.a_nrows, .ncols = b.a_ncols, .A = A};
  rmaop_op op = NULL;
  rmaop_matmul_spec bad = spec;
  bad.kind = (rmaop_matmul_kind)7;
  RT_EXPECT(rmaop_op_create_matmul(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("kind = 7");
  bad = spec;
  bad.nrows += 1; /* shape mismatch on every rank */
  RT_EXPECT(rmaop_op_create_matmul(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("block of A is");
  bad = spec;
  bad.dtype = (rmaop_dtype)9;
  RT_EXPECT(rmaop_op_create_matmul(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dtype");
  bad = spec;
  bad.N = -1;
  RT_EXPECT(rmaop_op_create_matmul(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("negative");
  bad = spec; /* sizes whose products wrap around: refused, not a heap overrun at the first apply */
  bad.N = bad.K = bad.M = (int64_t)1 << 32, bad.nrows = bad.ncols = 1;
  RT_EXPECT(rmaop_op_create_matmul(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("overflows");
  if (rt_size > 1) { /* M does not change A's rows: every rank passes its own checks, then they disagree */
    bad = spec;
    bad.M = rt_rank == 0 ? 4 : 3;
    RT_EXPECT(rmaop_op_create_matmul(ctx, &bad, &op), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("M differs between ranks");
  }
  RT_EXPECT(rmaop_op_create_matmul(ctx, NULL, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("spec is NULL");
  RT_EXPECT(rmaop_op_create_matmul(ctx, &spec, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_matmul(NULL, &spec, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(op == NULL, "output written on failure");
  RT_EXPECT(rmaop_op_matmul_get_blocks(ctx, RMAOP_MATMUL_SUMMA, 3, 3, 3, rt_size, &b), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("rank");
  RT_EXPECT(rmaop_op_matmul_get_blocks(ctx, (rmaop_matmul_kind)-1, 3, 3, 3, 0, &b), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("kind = -1");

  /* applying to vectors of the wrong shape: x and y swapped (K x M model, N x M data) */
  RT_OK(rmaop_op_create_matmul(ctx, &spec, &op));
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(op, &info));
  rmaop_vec x = NULL, y = NULL;
  RT_OK(rmaop_vec_create(info.model, RMAOP_F64, &x));
  RT_OK(rmaop_vec_create(info.data, RMAOP_F64, &y));
  RT_EXPECT(rmaop_op_apply(op, y, x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x has");
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_op_destroy(&op);
  free(A);
}
END_TEST

START_TEST(test_fredholm_errors) {
  double G[2 * 3 * 4] = {0};
  rmaop_op op = NULL;
  RT_EXPECT(rmaop_op_create_fredholm1(ctx, RMAOP_F64, -1, 3, 4, 1, G, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("negative");
  RT_EXPECT(rmaop_op_create_fredholm1(ctx, RMAOP_F64, 2, 3, 4, 1, NULL, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("G is NULL");
  RT_EXPECT(rmaop_op_create_fredholm1(ctx, (rmaop_dtype)9, 2, 3, 4, 1, G, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("dtype");
  const int64_t big = (int64_t)1 << 32; /* slice products wrap around: refused */
  RT_EXPECT(rmaop_op_create_fredholm1(ctx, RMAOP_F64, 1, big, big, big, G, &op), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("overflows");
  RT_EXPECT(rmaop_op_create_fredholm1(ctx, RMAOP_F64, (int64_t)1 << 40, 1 << 20, 1, 1 << 20, G, &op),
            RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("overflows");
  if (rt_size > 1) {
    RT_EXPECT(rmaop_op_create_fredholm1(ctx, RMAOP_F64, 2, rt_rank == 0 ? 2 : 3, 4, 1, G, &op), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("nx differs between ranks");
  }
  RT_EXPECT(rmaop_op_create_fredholm1(ctx, RMAOP_F64, 2, 3, 4, 1, G, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(op == NULL, "output written on failure");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("matmul");
  TCase *tc = tcase_create("matmul");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_blocks_tile);
  tcase_add_test(tc, test_block_kind);
  tcase_add_test(tc, test_summa_kind);
  tcase_add_test(tc, test_fredholm1);
  tcase_add_test(tc, test_matmul_errors);
  tcase_add_test(tc, test_fredholm_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
