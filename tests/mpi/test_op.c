/* Tests of rmaop_op: derivatives, Laplacian, block operators, composites, the shell operator, the dot test
 * and argument errors.
 *
 * Reference: every rank builds the whole operator as a dense global matrix M (data x model, double complex)
 * from serial formulas written here from the PyLops definitions (FirstDerivative, SecondDerivative,
 * Laplacian, MPIBlockDiag / MPIVStack / MPIHStack), never from library internals: a derivative's M comes
 * from applying the serial stencil formulas to unit vectors; a block operator's M from the formula of every
 * rank's block. The library's y = A x is compared with M x and its x = A^H y with M^H y (conjugate
 * transpose), element by element on every rank, within rt_tol(dtype) relative to the row's magnitude; rows
 * that must be zero must be exactly zero. Every operator also passes rmaop_op_dottest, and its
 * apply_begin / apply_end (with other vector work in between) must give bitwise the result of apply. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"

static rmaop_ctx ctx;
static int lok;
static void setup(void) {
  ctx = rt_ctx();
  lok = 1;
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

/* ---- dense global matrices (double complex, row-major) ---- */

typedef struct {
  int64_t m, n; /* rows (data), columns (model) */
  double _Complex *a;
} mat;
#define AT(A, i, j) ((A).a[(size_t)(i) * (size_t)(A).n + (size_t)(j)])

static mat mat_new(int64_t m, int64_t n) {
  mat A = {m, n, calloc((size_t)(m * n > 0 ? m * n : 1), sizeof(double _Complex))};
  if (!A.a)
    abort();
  return A;
}
static void mat_free(mat *A) {
  free(A->a);
  A->a = NULL;
}
/* A + alpha B */
static mat mat_add(const mat *A, double _Complex alpha, const mat *B) {
  mat C = mat_new(A->m, A->n);
  for (int64_t i = 0; i < A->m * A->n; ++i)
    C.a[i] = A->a[i] + alpha * B->a[i];
  return C;
}
static mat mat_scale(const mat *A, double _Complex alpha) {
  mat C = mat_new(A->m, A->n);
  for (int64_t i = 0; i < A->m * A->n; ++i)
    C.a[i] = alpha * A->a[i];
  return C;
}
static mat mat_mul(const mat *A, const mat *B) {
  mat C = mat_new(A->m, B->n);
  for (int64_t i = 0; i < A->m; ++i)
    for (int64_t k = 0; k < A->n; ++k)
      if (AT(*A, i, k) != 0)
        for (int64_t j = 0; j < B->n; ++j)
          AT(C, i, j) += AT(*A, i, k) * AT(*B, k, j);
  return C;
}
static mat mat_adjoint(const mat *A) {
  mat C = mat_new(A->n, A->m);
  for (int64_t i = 0; i < A->m; ++i)
    for (int64_t j = 0; j < A->n; ++j)
      AT(C, j, i) = conj(AT(*A, i, j));
  return C;
}

/* The matrix of a serial linear map of n inputs to m outputs, column by column. */
typedef void (*serial_fn)(const void *cfg, const double _Complex *x, double _Complex *y);
static mat mat_from_fn(int64_t m, int64_t n, serial_fn f, const void *cfg) {
  mat A = mat_new(m, n);
  double _Complex *e = calloc((size_t)n, sizeof *e), *col = calloc((size_t)(m > 0 ? m : 1), sizeof *col);
  for (int64_t j = 0; j < n; ++j) {
    e[j] = 1;
    f(cfg, e, col);
    for (int64_t i = 0; i < m; ++i)
      AT(A, i, j) = col[i];
    e[j] = 0;
  }
  free(e);
  free(col);
  return A;
}

/* ---- the generic check: an operator against its dense matrix ---- */

/* Expected local sizes and offsets of the model and data layouts on this rank (NULL: not checked). */
typedef struct {
  int64_t model_n, model_off, data_n, data_off;
} local_shape;

/* Non-collective calls inside a check go through LOK: the first failure on this rank is remembered and
 * asserted collectively at the next RT_CHECK of lok (one reduction instead of one per call). Collective
 * calls keep RT_OK, so that a failure stops every rank at the same point. */
static char lerr[512];
#define LOK(expr)                                                                                                      \
  do {                                                                                                                 \
    rmaop_status lok__s = (expr);                                                                                      \
    if (lok__s != RMAOP_OK && lok)                                                                                     \
      lok = 0, snprintf(lerr, sizeof lerr, "%s:%d: %s -> %s: %s", __FILE__, __LINE__, #expr,                           \
                        rmaop_status_string(lok__s), rmaop_ctx_last_error(NULL));                                      \
  } while (0)
#define RT_LOK() RT_CHECK(lok, "%s", lerr)

static rmaop_vec vec_on(rmaop_layout l, rmaop_dtype d) {
  rmaop_vec v = NULL;
  LOK(rmaop_vec_create(l, d, &v));
  return v;
}

/* Writes series s (global index = offset + local index) rounded to the dtype; returns the global values
 * (n of them) as the dtype holds them. */
static double _Complex *fill(rmaop_vec v, int64_t n_global, int s) {
  rmaop_vec_info info = {0};
  LOK(rmaop_vec_get_info(v, &info));
  double _Complex *g = malloc((size_t)(n_global > 0 ? n_global : 1) * sizeof *g);
  for (int64_t j = 0; j < n_global; ++j)
    g[j] = rt_round(info.dtype, rt_value(j, s));
  void *buf = rt_alloc(info.dtype, info.local_n);
  for (int64_t j = 0; j < info.local_n && info.offset + j < n_global; ++j)
    rt_store(info.dtype, buf, j, g[info.offset + j]);
  LOK(rmaop_vec_write_local(v, buf));
  free(buf);
  return g;
}

/* Local elements of v against want[offset + i] = sum_j W[i][j] in[j] (W = M or M^H), within tol relative to
 * sum_j |W_ij in_j|. Records the first mismatch in msg; returns 1 when all match. */
static int compare(rmaop_vec v, const mat *W, const double _Complex *in, const char *what, char *msg, size_t msz) {
  rmaop_vec_info info;
  if (rmaop_vec_get_info(v, &info) != RMAOP_OK)
    return 0;
  void *buf = rt_alloc(info.dtype, info.local_n);
  rmaop_vec_read_local(v, buf);
  const double tol = rt_tol(info.dtype);
  int ok = 1;
  for (int64_t i = 0; i < info.local_n && ok; ++i) {
    const int64_t gi = info.offset + i;
    double _Complex want = 0;
    double scale = 0;
    for (int64_t j = 0; j < W->n; ++j) {
      want += AT(*W, gi, j) * in[j];
      scale += cabs(AT(*W, gi, j)) * cabs(in[j]);
    }
    double _Complex got = rt_load(info.dtype, buf, i);
    if (!rt_close(got, want, tol, scale)) {
      ok = 0;
      snprintf(msg, msz, "%s: element %lld (global %lld) is %.17g%+.17gi, want %.17g%+.17gi (scale %g)", what,
               (long long)i, (long long)gi, creal(got), cimag(got), creal(want), cimag(want), scale);
    }
  }
  free(buf);
  return ok;
}

/* Equality of the local parts of two vectors of one layout: bitwise, or by value (== on the real and
 * imaginary parts: 0 equals -0). On a difference, describes the first differing element in msg (when given). */
static int same_local_msg(rmaop_vec a, rmaop_vec b, int bitwise, char *msg, size_t msz) {
  rmaop_vec_info ia, ib;
  if (rmaop_vec_get_info(a, &ia) != RMAOP_OK || rmaop_vec_get_info(b, &ib) != RMAOP_OK)
    return 0;
  if (ia.local_n != ib.local_n || ia.dtype != ib.dtype)
    return 0;
  const size_t es = rmaop_dtype_size(ia.dtype);
  void *pa = rt_alloc(ia.dtype, ia.local_n), *pb = rt_alloc(ib.dtype, ib.local_n);
  rmaop_vec_read_local(a, pa);
  rmaop_vec_read_local(b, pb);
  int same = 1;
  for (int64_t i = 0; i < ia.local_n && same; ++i)
    if (bitwise ? memcmp((char *)pa + i * es, (char *)pb + i * es, es) != 0
                : rt_load(ia.dtype, pa, i) != rt_load(ia.dtype, pb, i)) {
      same = 0;
      if (msg)
        snprintf(msg, msz, "element %lld: %.17g%+.17gi vs %.17g%+.17gi", (long long)i, creal(rt_load(ia.dtype, pa, i)),
                 cimag(rt_load(ia.dtype, pa, i)), creal(rt_load(ia.dtype, pb, i)), cimag(rt_load(ia.dtype, pb, i)));
    }
  free(pa);
  free(pb);
  return same;
}
static int same_local(rmaop_vec a, rmaop_vec b) {
  return same_local_msg(a, b, 1, NULL, 0);
}

static int layout_is(rmaop_layout l, int64_t n, int64_t off) {
  rmaop_layout_info li;
  return rmaop_layout_get_info(l, &li) == RMAOP_OK && li.local_n == n && li.offset == off;
}

/* Filler work between a begin and its end: local vector operations and a reduction on vectors that the
 * operator does not touch. */
static void other_work(rmaop_vec like) {
  rmaop_vec u = NULL, w = NULL;
  LOK(rmaop_vec_duplicate(like, &u));
  LOK(rmaop_vec_duplicate(like, &w));
  LOK(rmaop_vec_set(u, 1.5));
  LOK(rmaop_vec_axpy(w, -2.0, u));
  LOK(rmaop_vec_scale(w, 0.25));
  double nrm = 0;
  LOK(rmaop_vec_norm2(w, &nrm)); /* collective: fails on every rank or none */
  rmaop_vec_destroy(&u);
  rmaop_vec_destroy(&w);
}

/* The whole battery: layouts, forward vs M x, x unchanged, adjoint vs M^H y, begin/end with other work in
 * between, dot test. */
static void check_op(rmaop_op A, const mat *M, rmaop_dtype d, const local_shape *shape, const char *name) {
  lok = 1;
  rmaop_op_info info = {0};
  rmaop_layout_info mi = {0}, di = {0};
  LOK(rmaop_op_get_info(A, &info));
  LOK(rmaop_layout_get_info(info.model, &mi));
  LOK(rmaop_layout_get_info(info.data, &di));
  char msg[640] = "";
  int ok = info.dtype == d && mi.global_n == M->n && di.global_n == M->m;
  if (!ok)
    snprintf(msg, sizeof msg, "%s: operator is %s, %lld x %lld; want %s, %lld x %lld", name,
             rmaop_dtype_name(info.dtype), (long long)di.global_n, (long long)mi.global_n, rmaop_dtype_name(d),
             (long long)M->m, (long long)M->n);
  else if (shape && !(layout_is(info.model, shape->model_n, shape->model_off) &&
                      layout_is(info.data, shape->data_n, shape->data_off)))
    ok = 0, snprintf(msg, sizeof msg, "%s: local model %lld@%lld data %lld@%lld, want %lld@%lld and %lld@%lld", name,
                     (long long)mi.local_n, (long long)mi.offset, (long long)di.local_n, (long long)di.offset,
                     (long long)shape->model_n, (long long)shape->model_off, (long long)shape->data_n,
                     (long long)shape->data_off);
  RT_CHECK(ok && lok, "%s", lok ? msg : lerr);

  rmaop_vec x = vec_on(info.model, d), y = vec_on(info.data, d), x0 = vec_on(info.model, d);
  rmaop_vec y2 = vec_on(info.data, d), xa = vec_on(info.model, d), xa2 = vec_on(info.model, d);
  rmaop_vec yin = vec_on(info.data, d);
  double _Complex *xg = fill(x, M->n, 1), *yg = fill(yin, M->m, 2);
  LOK(rmaop_vec_copy(x, x0));
  LOK(rmaop_vec_set(y, 77.0)); /* outputs hold garbage before (NaN: see test_output_overwritten) */
  LOK(rmaop_vec_set(xa, -33.0));
  LOK(rmaop_vec_set(y2, 5.0));
  LOK(rmaop_vec_set(xa2, 5.0));
  RT_LOK();

  RT_OK(rmaop_op_apply(A, x, y));
  RT_OK(rmaop_op_apply_adjoint(A, yin, xa));
  /* split application with other work in between */
  RT_OK(rmaop_op_apply_begin(A, x, y2));
  other_work(x0);
  RT_OK(rmaop_op_apply_end(A));
  RT_OK(rmaop_op_apply_adjoint_begin(A, yin, xa2));
  other_work(y);
  RT_OK(rmaop_op_apply_adjoint_end(A));
  double rel = -1;
  RT_OK(rmaop_op_dottest(A, 1u + (unsigned)M->n, &rel));

  char what[200];
  mat MH = mat_adjoint(M);
  snprintf(what, sizeof what, "%s %s: A x", name, rmaop_dtype_name(d));
  ok = compare(y, M, xg, what, msg, sizeof msg);
  if (ok && !same_local(x, x0))
    ok = 0, snprintf(msg, sizeof msg, "%s: apply modified x", name);
  snprintf(what, sizeof what, "%s %s: A^H y (conjugate transpose)", name, rmaop_dtype_name(d));
  if (ok)
    ok = compare(xa, &MH, yg, what, msg, sizeof msg);
  /* begin/end: the same values as apply (value equality: outputs started with different garbage, and a
   * row the library zeroes by multiplying may keep the garbage's sign, see test_output_overwritten) */
  char m1[200] = "same", m2[200] = "same";
  if (ok && !(same_local_msg(y, y2, 0, m1, sizeof m1) & same_local_msg(xa, xa2, 0, m2, sizeof m2)))
    ok = 0, snprintf(msg, sizeof msg, "%s %s: begin/end differs from apply (forward: %s; adjoint: %s)", name,
                     rmaop_dtype_name(d), m1, m2);
  if (ok && !(rel >= 0 && rel < rt_tol(d)))
    ok = 0,
    snprintf(msg, sizeof msg, "%s %s: dot test rel_err %g (tolerance %g)", name, rmaop_dtype_name(d), rel, rt_tol(d));
  RT_CHECK(ok && lok, "%s", lok ? msg : lerr);

  mat_free(&MH);
  free(xg);
  free(yg);
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&x0);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&y2);
  rmaop_vec_destroy(&xa);
  rmaop_vec_destroy(&xa2);
  rmaop_vec_destroy(&yin);
}

/* ---- serial derivatives (PyLops), on a C-order N-D array ---- */

typedef struct {
  int ndim;
  int64_t dims[RMAOP_MAX_DIMS];
} shape_t;

static int64_t shape_size(const shape_t *s) {
  int64_t n = 1;
  for (int a = 0; a < s->ndim; ++a)
    n *= s->dims[a];
  return n;
}

/* y[i] of the first derivative along one line x[0..N) with stride. */
static double _Complex d1_at(rmaop_deriv_kind kind, int edge, double h, int64_t N, int64_t i, const double _Complex *x,
                             int64_t st) {
#define X(k) x[(k)*st]
  switch (kind) {
  case RMAOP_DERIV_FORWARD:
    return i < N - 1 ? (X(i + 1) - X(i)) / h : 0;
  case RMAOP_DERIV_BACKWARD:
    return i > 0 ? (X(i) - X(i - 1)) / h : 0;
  case RMAOP_DERIV_CENTERED3:
    if (i >= 1 && i <= N - 2)
      return 0.5 * (X(i + 1) - X(i - 1)) / h;
    if (!edge)
      return 0;
    return i == 0 ? (X(1) - X(0)) / h : (X(N - 1) - X(N - 2)) / h;
  case RMAOP_DERIV_CENTERED5:
    if (i >= 2 && i <= N - 3)
      return (X(i - 2) / 12.0 - 2.0 * X(i - 1) / 3.0 + 2.0 * X(i + 1) / 3.0 - X(i + 2) / 12.0) / h;
    if (!edge)
      return 0;
    if (i == 0)
      return (X(1) - X(0)) / h;
    if (i == 1)
      return 0.5 * (X(2) - X(0)) / h;
    if (i == N - 2)
      return 0.5 * (X(N - 1) - X(N - 3)) / h;
    return (X(N - 1) - X(N - 2)) / h;
  }
  return NAN;
}

/* y[i] of the second derivative (CENTERED3 = PyLops' "centered"). */
static double _Complex d2_at(rmaop_deriv_kind kind, int edge, double h, int64_t N, int64_t i, const double _Complex *x,
                             int64_t st) {
  const double h2 = h * h;
  switch (kind) {
  case RMAOP_DERIV_FORWARD:
    return i <= N - 3 ? (X(i + 2) - 2.0 * X(i + 1) + X(i)) / h2 : 0;
  case RMAOP_DERIV_BACKWARD:
    return i >= 2 ? (X(i) - 2.0 * X(i - 1) + X(i - 2)) / h2 : 0;
  case RMAOP_DERIV_CENTERED3:
    if (i >= 1 && i <= N - 2)
      return (X(i + 1) - 2.0 * X(i) + X(i - 1)) / h2;
    if (!edge)
      return 0;
    return i == 0 ? (X(0) - 2.0 * X(1) + X(2)) / h2 : (X(N - 3) - 2.0 * X(N - 2) + X(N - 1)) / h2;
  default:
    return NAN;
  }
#undef X
}

typedef struct {
  int order;
  rmaop_deriv_kind kind;
  int edge;
  double h; /* 0: 1 */
  shape_t shape;
  int axis;
} deriv_cfg;

/* y (+)= w * D x for the whole array. */
static void deriv_add(const deriv_cfg *c, double w, const double _Complex *x, double _Complex *y) {
  const int64_t N = c->shape.dims[c->axis];
  int64_t before = 1, after = 1;
  for (int a = 0; a < c->axis; ++a)
    before *= c->shape.dims[a];
  for (int a = c->axis + 1; a < c->shape.ndim; ++a)
    after *= c->shape.dims[a];
  const double h = c->h != 0 ? c->h : 1.0;
  for (int64_t b = 0; b < before; ++b)
    for (int64_t a = 0; a < after; ++a) {
      const double _Complex *line = x + b * N * after + a;
      for (int64_t i = 0; i < N; ++i) {
        double _Complex v = c->order == 1 ? d1_at(c->kind, c->edge, h, N, i, line, after)
                                          : d2_at(c->kind, c->edge, h, N, i, line, after);
        y[(b * N + i) * after + a] += w * v;
      }
    }
}

static void deriv_serial(const void *cfg, const double _Complex *x, double _Complex *y) {
  const deriv_cfg *c = cfg;
  memset(y, 0, (size_t)shape_size(&c->shape) * sizeof *y);
  deriv_add(c, 1.0, x, y);
}

/* ---- how axis 0 is split ---- */

enum { SPLIT_BALANCED, SPLIT_FIRST_ONE, SPLIT_UNEVEN, SPLIT_ONES, NSPLITS };
static const char *split_names[NSPLITS] = {"balanced", "rank 0 one row, last the rest", "uneven, rank 0 empty",
                                           "one row each, last the rest"};

/* Rows of axis 0 on rank r of P. */
static int64_t split_rows(int split, int64_t n0, int r, int P) {
  if (P == 1)
    return n0;
  switch (split) {
  case SPLIT_BALANCED:
    return n0 / P + (r < n0 % P);
  case SPLIT_FIRST_ONE:
    return r == 0 ? 1 : r == P - 1 ? n0 - 1 : 0;
  case SPLIT_UNEVEN: {
    int64_t used = 0, mine = 0;
    for (int q = 0; q <= r; ++q) {
      int64_t want = q == P - 1 ? n0 - used : (3 * q) % 4; /* 0, 3, 2, 1, 0, ... */
      if (want > n0 - used)
        want = n0 - used;
      mine = want;
      used += want;
    }
    return mine;
  }
  default: { /* SPLIT_ONES */
    int64_t ones = n0 - 1 < P - 1 ? n0 - 1 : P - 1;
    return r < ones ? 1 : r == P - 1 ? n0 - ones : 0;
  }
  }
}
static int64_t split_offset(int split, int64_t n0, int r, int P) {
  int64_t off = 0;
  for (int q = 0; q < r; ++q)
    off += split_rows(split, n0, q, P);
  return off;
}

static rmaop_grid make_grid(const shape_t *s, int split) {
  rmaop_grid g = {.ndim = s->ndim,
                  .local_rows = split == SPLIT_BALANCED ? -1 : split_rows(split, s->dims[0], rt_rank, rt_size)};
  for (int a = 0; a < s->ndim; ++a)
    g.dims[a] = s->dims[a];
  return g;
}

static local_shape grid_shape(const shape_t *s, int split) {
  int64_t inner = shape_size(s) / s->dims[0];
  int64_t n = split_rows(split, s->dims[0], rt_rank, rt_size) * inner;
  int64_t off = split_offset(split, s->dims[0], rt_rank, rt_size) * inner;
  return (local_shape){n, off, n, off};
}

static const char *kind_names[4] = {"forward", "backward", "centered3", "centered5"};

static rmaop_op make_deriv(const deriv_cfg *c, int split, rmaop_dtype d) {
  rmaop_deriv_spec spec = {.grid = make_grid(&c->shape, split),
                           .axis = c->axis,
                           .kind = c->kind,
                           .edge = c->edge,
                           .sampling = c->h,
                           .dtype = d,
                           .label = "test-deriv"};
  rmaop_op A = NULL;
  if (c->order == 1)
    RT_OK(rmaop_op_create_first_derivative(ctx, &spec, &A));
  else
    RT_OK(rmaop_op_create_second_derivative(ctx, &spec, &A));
  return A;
}

static void run_deriv(const deriv_cfg *c, int split, rmaop_dtype d) {
  char name[200];
  snprintf(name, sizeof name, "%s derivative %s edge=%d h=%g axis %d of %dD, %s", c->order == 1 ? "first" : "second",
           kind_names[c->kind], c->edge, c->h, c->axis, c->shape.ndim, split_names[split]);
  rmaop_op A = make_deriv(c, split, d);
  const int64_t n = shape_size(&c->shape);
  mat M = mat_from_fn(n, n, deriv_serial, c);
  local_shape ls = grid_shape(&c->shape, split);
  check_op(A, &M, d, &ls, name);
  mat_free(&M);
  rmaop_op_destroy(&A);
  RT_CHECK(A == NULL, "destroy did not clear the handle");
}

static const shape_t line11 = {1, {11}}, cube = {3, {9, 5, 6}}, plane = {2, {8, 7}};

/* Splits per case: axis 0 (halo exchange) of the 1-D line and of the 3-D grid under two splits each, the
 * local axes under the uneven split with an empty rank. Across the two grids every split is used. */
static void run_all_axes(int order, rmaop_deriv_kind kind, int edge, double h) {
  const deriv_cfg c1 = {order, kind, edge, h, line11, 0};
  run_deriv(&c1, SPLIT_FIRST_ONE, RMAOP_F64);
  run_deriv(&c1, SPLIT_UNEVEN, RMAOP_F64);
  for (int axis = 0; axis < 3; ++axis) {
    const deriv_cfg c = {order, kind, edge, h == 0 ? 2.0 : 0.0, cube, axis};
    if (axis == 0) {
      run_deriv(&c, SPLIT_BALANCED, RMAOP_F64);
      run_deriv(&c, SPLIT_ONES, RMAOP_F64);
    } else {
      run_deriv(&c, SPLIT_UNEVEN, RMAOP_F64);
    }
  }
}

START_TEST(test_first_derivative_f64) {
  for (int kind = 0; kind < 4; ++kind)
    for (int edge = 0; edge < 2; ++edge)
      run_all_axes(1, (rmaop_deriv_kind)kind, edge, kind % 2 ? 0.5 : 0.0);
}
END_TEST

START_TEST(test_second_derivative_f64) {
  for (int kind = 0; kind < 3; ++kind)
    for (int edge = 0; edge < 2; ++edge)
      run_all_axes(2, (rmaop_deriv_kind)kind, edge, kind == 1 ? 0.5 : 0.0);
}
END_TEST

START_TEST(test_derivatives_other_dtypes) {
  const rmaop_dtype ds[3] = {RMAOP_F32, RMAOP_C64, RMAOP_C128};
  for (int k = 0; k < 3; ++k) {
    const rmaop_dtype d = ds[k];
    const deriv_cfg cs[] = {
        {1, RMAOP_DERIV_CENTERED5, 1, 0.5, cube, 0},  {1, RMAOP_DERIV_CENTERED3, 0, 0.0, cube, 2},
        {1, RMAOP_DERIV_FORWARD, 0, 2.0, cube, 0},    {1, RMAOP_DERIV_BACKWARD, 1, 0.0, cube, 1},
        {2, RMAOP_DERIV_CENTERED3, 1, 0.5, cube, 0},  {2, RMAOP_DERIV_FORWARD, 0, 0.0, cube, 2},
        {2, RMAOP_DERIV_BACKWARD, 0, 1.5, line11, 0},
    };
    const int splits[] = {SPLIT_ONES,   SPLIT_UNEVEN,   SPLIT_FIRST_ONE, SPLIT_BALANCED,
                          SPLIT_UNEVEN, SPLIT_BALANCED, SPLIT_ONES};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i)
      run_deriv(&cs[i], splits[i], d);
  }
}
END_TEST

/* ---- Laplacian ---- */

typedef struct {
  shape_t shape;
  int naxes;
  int axes[RMAOP_MAX_DIMS];
  double weights[RMAOP_MAX_DIMS], sampling[RMAOP_MAX_DIMS];
  int edge;
  rmaop_deriv_kind kind;
} lap_cfg;

/* sum over the listed axes of w_a * SecondDerivative(axis a, h_a); naxes = 0: the last two axes, unit weights
 * and sampling; all weights 0: ones. */
static void lap_serial(const void *cfg, const double _Complex *x, double _Complex *y) {
  const lap_cfg *c = cfg;
  memset(y, 0, (size_t)shape_size(&c->shape) * sizeof *y);
  const int n = c->naxes ? c->naxes : 2;
  int all_zero = 1;
  for (int i = 0; i < n && c->naxes; ++i)
    all_zero &= c->weights[i] == 0.0;
  for (int i = 0; i < n; ++i) {
    deriv_cfg d = {
        2, c->kind, c->edge, c->naxes ? c->sampling[i] : 1.0, c->shape, c->naxes ? c->axes[i] : c->shape.ndim - 2 + i};
    deriv_add(&d, c->naxes && !all_zero ? c->weights[i] : 1.0, x, y);
  }
}

static void run_laplacian(const lap_cfg *c, int split, rmaop_dtype d, const char *what) {
  rmaop_laplacian_spec spec = {.grid = make_grid(&c->shape, split),
                               .naxes = c->naxes,
                               .edge = c->edge,
                               .kind = c->kind,
                               .dtype = d,
                               .label = "test-lap"};
  for (int i = 0; i < c->naxes; ++i)
    spec.axes[i] = c->axes[i], spec.weights[i] = c->weights[i], spec.sampling[i] = c->sampling[i];
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_laplacian(ctx, &spec, &A));
  const int64_t n = shape_size(&c->shape);
  mat M = mat_from_fn(n, n, lap_serial, c);
  local_shape ls = grid_shape(&c->shape, split);
  char name[200];
  snprintf(name, sizeof name, "laplacian %s, %s", what, split_names[split]);
  check_op(A, &M, d, &ls, name);
  mat_free(&M);
  rmaop_op_destroy(&A);
}

START_TEST(test_laplacian) {
  const lap_cfg c_default = {.shape = plane, .naxes = 0, .edge = 0, .kind = RMAOP_DERIV_CENTERED3};
  const lap_cfg c_default3 = {.shape = cube, .naxes = 0, .edge = 1, .kind = RMAOP_DERIV_CENTERED3};
  const lap_cfg c_weighted = {.shape = cube,
                              .naxes = 2,
                              .axes = {0, 2},
                              .weights = {2.0, -0.5},
                              .sampling = {0.5, 2.0},
                              .edge = 1,
                              .kind = RMAOP_DERIV_FORWARD};
  const lap_cfg c_three = {.shape = cube,
                           .naxes = 3,
                           .axes = {2, 0, 1},
                           .weights = {0, 0, 0},
                           .sampling = {0, 1.5, 0},
                           .edge = 0,
                           .kind = RMAOP_DERIV_BACKWARD};
  const lap_cfg c_one = {.shape = line11,
                         .naxes = 1,
                         .axes = {0},
                         .weights = {3.0},
                         .sampling = {0.25},
                         .edge = 1,
                         .kind = RMAOP_DERIV_CENTERED3};
  run_laplacian(&c_default, SPLIT_BALANCED, RMAOP_F64, "2D default axes");
  run_laplacian(&c_default, SPLIT_FIRST_ONE, RMAOP_F64, "2D default axes");
  run_laplacian(&c_default3, SPLIT_UNEVEN, RMAOP_F64, "3D default axes (local only)");
  run_laplacian(&c_weighted, SPLIT_ONES, RMAOP_F64, "axes (0,2) weighted, forward");
  run_laplacian(&c_weighted, SPLIT_UNEVEN, RMAOP_C128, "axes (0,2) weighted, forward");
  run_laplacian(&c_three, SPLIT_UNEVEN, RMAOP_F64, "axes (2,0,1) zero weights, backward");
  run_laplacian(&c_three, SPLIT_BALANCED, RMAOP_F32, "axes (2,0,1) zero weights, backward");
  run_laplacian(&c_one, SPLIT_ONES, RMAOP_F64, "1D weighted");
  run_laplacian(&c_default, SPLIT_ONES, RMAOP_C64, "2D default axes");
}
END_TEST

/* ---- block operators ---- */

/* Rank r's block sizes: block-diagonal rows / columns, vstack rows, hstack columns (zeros included). */
static int64_t blk_rows(int r) {
  return (int64_t[]){2, 0, 3, 1}[r % 4] + (r >= 4);
}
static int64_t blk_cols(int r) {
  return (int64_t[]){3, 1, 0, 2}[r % 4] + (r >= 4);
}
enum { VSTACK_COLS = 4, HSTACK_ROWS = 3 };

/* Element (i, j) of rank r's block, as the dtype holds it. */
static double _Complex blk_val(rmaop_dtype d, int r, int64_t i, int64_t j) {
  return rt_round(d, rt_value(31 * r + 7 * i + 3 * j, 6) * (1.0 + 0.25 * r));
}

enum { BLOCKDIAG, VSTACK, HSTACK };
static const char *block_names[3] = {"blockdiag", "vstack", "hstack"};
static void block_dims(int kind, int r, int64_t *nr, int64_t *nc) {
  *nr = kind == HSTACK ? HSTACK_ROWS : blk_rows(r);
  *nc = kind == VSTACK ? VSTACK_COLS : blk_cols(r);
}

/* The global matrix of a block operator, from every rank's block formula. */
static mat block_matrix(int kind, rmaop_dtype d) {
  int64_t m = 0, n = 0, nr, nc;
  for (int r = 0; r < rt_size; ++r) {
    block_dims(kind, r, &nr, &nc);
    m += kind == HSTACK ? 0 : nr;
    n += kind == VSTACK ? 0 : nc;
  }
  if (kind == HSTACK)
    m = HSTACK_ROWS;
  if (kind == VSTACK)
    n = VSTACK_COLS;
  mat M = mat_new(m, n);
  int64_t ro = 0, co = 0;
  for (int r = 0; r < rt_size; ++r) {
    block_dims(kind, r, &nr, &nc);
    for (int64_t i = 0; i < nr; ++i)
      for (int64_t j = 0; j < nc; ++j)
        AT(M, ro + i, co + j) = blk_val(d, r, i, j);
    if (kind != HSTACK)
      ro += nr;
    if (kind != VSTACK)
      co += nc;
  }
  return M;
}

static local_shape block_shape(int kind) {
  int64_t nr, nc, ro = 0, co = 0;
  for (int r = 0; r < rt_rank; ++r) {
    block_dims(kind, r, &nr, &nc);
    ro += nr, co += nc;
  }
  block_dims(kind, rt_rank, &nr, &nc);
  return (local_shape){nc, kind == VSTACK ? 0 : co, nr, kind == HSTACK ? 0 : ro};
}

typedef struct {
  rmaop_dtype d;
  int rank;
  int64_t nr, nc;
  rmaop_status fail; /* returned by the callbacks when not OK */
  int calls;
} blk_user;

static rmaop_status blk_apply(void *u, const void *x, void *y) {
  blk_user *b = u;
  b->calls++;
  if (b->fail != RMAOP_OK)
    return b->fail;
  for (int64_t i = 0; i < b->nr; ++i) {
    double _Complex s = 0;
    for (int64_t j = 0; j < b->nc; ++j)
      s += blk_val(b->d, b->rank, i, j) * rt_load(b->d, x, j);
    rt_store(b->d, y, i, s);
  }
  return RMAOP_OK;
}
static rmaop_status blk_adjoint(void *u, const void *y, void *x) {
  blk_user *b = u;
  b->calls++;
  if (b->fail != RMAOP_OK)
    return b->fail;
  for (int64_t j = 0; j < b->nc; ++j) {
    double _Complex s = 0;
    for (int64_t i = 0; i < b->nr; ++i)
      s += conj(blk_val(b->d, b->rank, i, j)) * rt_load(b->d, y, i);
    rt_store(b->d, x, j, s);
  }
  return RMAOP_OK;
}

/* Rank's block as a dense row-major array (kept alive by the caller: freed after creation). */
static void *dense_block(int kind, rmaop_dtype d, int64_t *nr, int64_t *nc) {
  block_dims(kind, rt_rank, nr, nc);
  void *B = rt_alloc(d, *nr * *nc);
  for (int64_t i = 0; i < *nr; ++i)
    for (int64_t j = 0; j < *nc; ++j)
      rt_store(d, B, i * *nc + j, blk_val(d, rt_rank, i, j));
  return B;
}

static rmaop_status create_block(int kind, rmaop_dtype d, const rmaop_block *b, rmaop_op *A) {
  switch (kind) {
  case BLOCKDIAG:
    return rmaop_op_create_blockdiag(ctx, d, b, A);
  case VSTACK:
    return rmaop_op_create_vstack(ctx, d, b, A);
  default:
    return rmaop_op_create_hstack(ctx, d, b, A);
  }
}

/* A block operator of rank-formula blocks, dense or through callbacks (user must outlive it). */
static rmaop_op make_block(int kind, rmaop_dtype d, int callbacks, blk_user *user) {
  rmaop_block b = {0};
  void *B = NULL;
  if (callbacks) {
    block_dims(kind, rt_rank, &b.nrows, &b.ncols);
    *user = (blk_user){d, rt_rank, b.nrows, b.ncols, RMAOP_OK, 0};
    b.apply = blk_apply, b.apply_adjoint = blk_adjoint, b.user = user;
  } else {
    B = dense_block(kind, d, &b.nrows, &b.ncols);
    b.dense = B;
  }
  rmaop_op A = NULL;
  RT_OK(create_block(kind, d, &b, &A));
  if (B)
    memset(B, 0xff, (size_t)(b.nrows * b.ncols) * rmaop_dtype_size(d)); /* the block was copied */
  free(B);
  return A;
}

START_TEST(test_block_operators) {
  for (int kind = 0; kind < 3; ++kind)
    for (int k = 0; k < 4; ++k)
      for (int cb = 0; cb < 2; ++cb) {
        const rmaop_dtype d = rt_dtypes[k];
        if (cb && (d == RMAOP_F32 || d == RMAOP_C64))
          continue; /* callbacks: f64 and c128 */
        blk_user user;
        rmaop_op A = make_block(kind, d, cb, &user);
        mat M = block_matrix(kind, d);
        local_shape ls = block_shape(kind);
        char name[96];
        snprintf(name, sizeof name, "%s (%s)", block_names[kind], cb ? "callbacks" : "dense");
        check_op(A, &M, d, &ls, name);
        mat_free(&M);
        rmaop_op_destroy(&A);
      }
}
END_TEST

START_TEST(test_block_callback_error) {
  /* a callback failing on every rank: its status comes back, with a message naming the callback */
  for (int kind = 0; kind < 3; ++kind) {
    blk_user user;
    rmaop_op A = make_block(kind, RMAOP_F64, 1, &user);
    rmaop_op_info info;
    RT_OK(rmaop_op_get_info(A, &info));
    rmaop_vec x = vec_on(info.model, RMAOP_F64), y = vec_on(info.data, RMAOP_F64);
    RT_LOK();
    user.fail = RMAOP_ERR_UNSUPPORTED;
    RT_EXPECT(rmaop_op_apply(A, x, y), RT_BIT(RMAOP_ERR_UNSUPPORTED));
    RT_MESSAGE_HAS("callback");
    RT_EXPECT(rmaop_op_apply_adjoint(A, y, x), RT_BIT(RMAOP_ERR_UNSUPPORTED));
    /* and the operator still works afterwards */
    user.fail = RMAOP_OK;
    user.calls = 0;
    RT_OK(rmaop_op_apply(A, x, y));
    RT_OK(rmaop_op_apply_adjoint(A, y, x));
    RT_CHECK(user.calls == 2, "%s: callbacks called %d times for one apply and one adjoint", block_names[kind],
             user.calls);
    rmaop_vec_destroy(&x);
    rmaop_vec_destroy(&y);
    rmaop_op_destroy(&A);
  }
}
END_TEST

/* ---- composites ---- */

typedef struct {
  rmaop_op op;
  mat M;
  local_shape ls;
} pair;

static pair deriv_pair(const deriv_cfg *c, int split, rmaop_dtype d) {
  pair p = {make_deriv(c, split, d), mat_from_fn(shape_size(&c->shape), shape_size(&c->shape), deriv_serial, c),
            grid_shape(&c->shape, split)};
  return p;
}
static void pair_free(pair *p) {
  rmaop_op_destroy(&p->op);
  mat_free(&p->M);
}

START_TEST(test_composites) {
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  for (int k = 0; k < 2; ++k) {
    const rmaop_dtype d = ds[k];
    const double _Complex alpha = rt_is_complex(d) ? 0.75 - 1.25 * I : -1.75;
    const deriv_cfg c1 = {1, RMAOP_DERIV_CENTERED5, 1, 0.5, cube, 0}, c2 = {2, RMAOP_DERIV_CENTERED3, 0, 0, cube, 1},
                    c3 = {1, RMAOP_DERIV_BACKWARD, 0, 2.0, cube, 2};
    pair p1 = deriv_pair(&c1, SPLIT_ONES, d), p2 = deriv_pair(&c2, SPLIT_ONES, d), p3 = deriv_pair(&c3, SPLIT_ONES, d);
    rmaop_op C = NULL;
    mat M;

    /* sum of three different operators */
    rmaop_op three[3] = {p1.op, p2.op, p3.op};
    RT_OK(rmaop_op_create_sum(3, three, &C));
    mat t = mat_add(&p1.M, 1.0, &p2.M);
    M = mat_add(&t, 1.0, &p3.M);
    check_op(C, &M, d, &p1.ls, "sum D1 + D2 + D3");
    mat_free(&t), mat_free(&M), rmaop_op_destroy(&C);

    /* the same operator twice */
    rmaop_op twice[2] = {p1.op, p1.op};
    RT_OK(rmaop_op_create_sum(2, twice, &C));
    M = mat_scale(&p1.M, 2.0);
    check_op(C, &M, d, &p1.ls, "sum D1 + D1");
    mat_free(&M), rmaop_op_destroy(&C);

    /* product, and the square of one operator */
    RT_OK(rmaop_op_create_product(p1.op, p2.op, &C));
    M = mat_mul(&p1.M, &p2.M);
    check_op(C, &M, d, &p1.ls, "product D1 D2");
    mat_free(&M), rmaop_op_destroy(&C);
    RT_OK(rmaop_op_create_product(p3.op, p3.op, &C));
    M = mat_mul(&p3.M, &p3.M);
    check_op(C, &M, d, &p1.ls, "product D3 D3");
    mat_free(&M), rmaop_op_destroy(&C);

    /* scaled (complex alpha for complex dtypes: the adjoint takes conj(alpha)) */
    RT_OK(rmaop_op_create_scaled(p1.op, alpha, &C));
    M = mat_scale(&p1.M, alpha);
    check_op(C, &M, d, &p1.ls, "scaled alpha D1");
    mat_free(&M), rmaop_op_destroy(&C);

    /* adjoint as an operator */
    RT_OK(rmaop_op_create_adjoint(p1.op, &C));
    M = mat_adjoint(&p1.M);
    check_op(C, &M, d, &p1.ls, "adjoint D1^H");
    mat_free(&M), rmaop_op_destroy(&C);

    /* nested: 0.5 (D1 D2 + D3^H), with the parts dropped before use (the composite keeps them alive) */
    {
      rmaop_op prod = NULL, adj = NULL, sum = NULL, parts[2];
      RT_OK(rmaop_op_create_product(p1.op, p2.op, &prod));
      RT_OK(rmaop_op_create_adjoint(p3.op, &adj));
      parts[0] = prod, parts[1] = adj;
      RT_OK(rmaop_op_create_sum(2, parts, &sum));
      RT_OK(rmaop_op_create_scaled(sum, 0.5, &C));
      rmaop_op_destroy(&prod), rmaop_op_destroy(&adj), rmaop_op_destroy(&sum);
      mat a = mat_mul(&p1.M, &p2.M), b = mat_adjoint(&p3.M), s = mat_add(&a, 1.0, &b);
      M = mat_scale(&s, 0.5);
      check_op(C, &M, d, &p1.ls, "nested 0.5 (D1 D2 + D3^H)");
      mat_free(&a), mat_free(&b), mat_free(&s), mat_free(&M), rmaop_op_destroy(&C);
    }

    /* block composites: V^H V (broadcast -> scatter -> broadcast), H^H H (scatter -> broadcast -> scatter) and
     * V^H alone, with the parts dropped before use; V H cannot be formed (V's 4 broadcast columns are not H's
     * 3 broadcast rows) */
    {
      blk_user uv, uh;
      rmaop_op V = make_block(VSTACK, d, 0, &uv), H = make_block(HSTACK, d, 1, &uh);
      mat Mv = block_matrix(VSTACK, d), Mh = block_matrix(HSTACK, d);
      RT_CHECK(VSTACK_COLS != HSTACK_ROWS, "test setup: the two block sizes must differ");
      rmaop_op VH = NULL, VtV = NULL, HtH = NULL, Vadj = NULL, Hadj = NULL;
      RT_EXPECT(rmaop_op_create_product(V, H, &VH), RT_BIT(RMAOP_ERR_ARG));
      RT_CHECK(VH == NULL, "output written on failure");
      RT_OK(rmaop_op_create_adjoint(V, &Vadj));
      RT_OK(rmaop_op_create_product(Vadj, V, &VtV));
      rmaop_op_destroy(&Vadj);
      mat vh = mat_adjoint(&Mv);
      M = mat_mul(&vh, &Mv);
      local_shape bb = {VSTACK_COLS, 0, VSTACK_COLS, 0};
      check_op(VtV, &M, d, &bb, "product V^H V");
      mat_free(&M), rmaop_op_destroy(&VtV);
      RT_OK(rmaop_op_create_adjoint(H, &Hadj));
      RT_OK(rmaop_op_create_product(Hadj, H, &HtH));
      rmaop_op_destroy(&Hadj);
      mat hh = mat_adjoint(&Mh);
      M = mat_mul(&hh, &Mh);
      local_shape hs = block_shape(HSTACK);
      local_shape ss = {hs.model_n, hs.model_off, hs.model_n, hs.model_off};
      check_op(HtH, &M, d, &ss, "product H^H H");
      mat_free(&M), rmaop_op_destroy(&HtH);
      RT_OK(rmaop_op_create_adjoint(V, &Vadj)); /* model scatter, data broadcast */
      local_shape vs = block_shape(VSTACK);
      local_shape vsh = {vs.data_n, vs.data_off, vs.model_n, vs.model_off};
      check_op(Vadj, &vh, d, &vsh, "adjoint V^H");
      rmaop_op_destroy(&Vadj);
      mat_free(&vh), mat_free(&hh), mat_free(&Mv), mat_free(&Mh);
      rmaop_op_destroy(&V);
      rmaop_op_destroy(&H);
    }
    pair_free(&p1), pair_free(&p2), pair_free(&p3);
  }
}
END_TEST

/* Composites whose parts share an operator: alpha D + D (the scaled part wraps D itself) and D + D^H, which
 * PyLops writes 2 * D + D and D + D.H. */
START_TEST(test_sum_scaled_shares_part) {
  const deriv_cfg c1 = {1, RMAOP_DERIV_CENTERED3, 1, 0.5, cube, 0};
  pair p = deriv_pair(&c1, SPLIT_BALANCED, RMAOP_F64);
  rmaop_op S = NULL, C = NULL;
  RT_OK(rmaop_op_create_scaled(p.op, 2.0, &S));
  rmaop_op parts[2] = {S, p.op};
  RT_OK(rmaop_op_create_sum(2, parts, &C));
  rmaop_op_destroy(&S);
  mat M = mat_scale(&p.M, 3.0);
  check_op(C, &M, RMAOP_F64, &p.ls, "sum 2 D + D");
  mat_free(&M), rmaop_op_destroy(&C);
  pair_free(&p);
}
END_TEST

START_TEST(test_sum_adjoint_shares_part) {
  const deriv_cfg c1 = {1, RMAOP_DERIV_CENTERED3, 1, 0.5, cube, 0};
  pair p = deriv_pair(&c1, SPLIT_BALANCED, RMAOP_F64);
  rmaop_op H = NULL, C = NULL;
  RT_OK(rmaop_op_create_adjoint(p.op, &H));
  rmaop_op parts[2] = {p.op, H};
  RT_OK(rmaop_op_create_sum(2, parts, &C));
  rmaop_op_destroy(&H);
  mat DH = mat_adjoint(&p.M), M = mat_add(&p.M, 1.0, &DH);
  check_op(C, &M, RMAOP_F64, &p.ls, "sum D + D^H");
  mat_free(&M), mat_free(&DH), rmaop_op_destroy(&C);
  pair_free(&p);
}
END_TEST

/* Outputs are overwritten whatever they held: y (forward) and x (adjoint) start as NaN. */
static void nan_fill(rmaop_vec v) {
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  void *buf = rt_alloc(info.dtype, info.local_n);
  for (int64_t i = 0; i < info.local_n; ++i)
    rt_store(info.dtype, buf, i, NAN + I * NAN);
  RT_OK(rmaop_vec_write_local(v, buf));
  free(buf);
}

/* Applies A (forward and adjoint) into NaN-filled outputs and compares with M; appends failures to msg. */
static void overwrite_case(rmaop_op A, const mat *M, const char *name, char *msg, size_t msz) {
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(A, &info));
  rmaop_vec x = vec_on(info.model, info.dtype), y = vec_on(info.data, info.dtype);
  double _Complex *xg = fill(x, M->n, 1);
  RT_LOK();
  nan_fill(y);
  RT_OK(rmaop_op_apply(A, x, y));
  char one[400] = "";
  if (!compare(y, M, xg, "forward", one, sizeof one))
    snprintf(msg + strlen(msg), msz - strlen(msg), "[%s %s] ", name, one);
  mat MH = mat_adjoint(M);
  double _Complex *yg = fill(y, M->m, 2);
  RT_LOK();
  nan_fill(x);
  RT_OK(rmaop_op_apply_adjoint(A, y, x));
  if (!compare(x, &MH, yg, "adjoint", one, sizeof one))
    snprintf(msg + strlen(msg), msz - strlen(msg), "[%s %s] ", name, one);
  mat_free(&MH);
  free(xg), free(yg);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y);
}

START_TEST(test_output_overwritten) {
  char msg[4000] = "";
  const deriv_cfg cs[] = {
      {1, RMAOP_DERIV_CENTERED3, 0, 0, cube, 0}, {1, RMAOP_DERIV_CENTERED5, 1, 0, cube, 0},
      {1, RMAOP_DERIV_FORWARD, 0, 0, cube, 2},   {2, RMAOP_DERIV_CENTERED3, 0, 0, cube, 1},
      {2, RMAOP_DERIV_BACKWARD, 1, 0, cube, 0},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i)
    for (int k = 0; k < 2; ++k) {
      const rmaop_dtype d = k ? RMAOP_C64 : RMAOP_F64;
      pair p = deriv_pair(&cs[i], SPLIT_ONES, d);
      char name[120];
      snprintf(name, sizeof name, "%s derivative %s edge=%d axis %d %s", cs[i].order == 1 ? "first" : "second",
               kind_names[cs[i].kind], cs[i].edge, cs[i].axis, rmaop_dtype_name(d));
      overwrite_case(p.op, &p.M, name, msg, sizeof msg);
      pair_free(&p);
    }
  for (int kind = 0; kind < 3; ++kind) {
    blk_user u;
    rmaop_op A = make_block(kind, RMAOP_F64, 0, &u);
    mat M = block_matrix(kind, RMAOP_F64);
    overwrite_case(A, &M, block_names[kind], msg, sizeof msg);
    mat_free(&M);
    rmaop_op_destroy(&A);
  }
  RT_CHECK(msg[0] == 0, "outputs not overwritten (they started as NaN): %s", msg);
}
END_TEST

/* ---- shell: a 1-D forward first derivative with a one-element ghost from the next non-empty rank ---- */

typedef struct {
  rmaop_dtype d;
  int64_t n, off, N;
  double h;
  rmaop_status fail;
} fwd_user;

static rmaop_status fwd_apply(void *u, const void *x, const void *ghost, void *y) {
  const fwd_user *f = u;
  if (f->fail != RMAOP_OK)
    return f->fail;
  for (int64_t i = 0; i < f->n; ++i) {
    const int64_t g = f->off + i;
    double _Complex v = 0;
    if (g < f->N - 1) {
      double _Complex next = i + 1 < f->n ? rt_load(f->d, x, i + 1) : rt_load(f->d, ghost, 0);
      v = (next - rt_load(f->d, x, i)) / f->h;
    }
    rt_store(f->d, y, i, v);
  }
  return RMAOP_OK;
}

static rmaop_status fwd_adjoint(void *u, const void *y, void *x, void *ghost) {
  const fwd_user *f = u;
  if (f->fail != RMAOP_OK)
    return f->fail;
  double _Complex *acc = calloc((size_t)f->n + 1, sizeof *acc); /* acc[n]: the ghost's contribution */
  for (int64_t i = 0; i < f->n; ++i) {
    if (f->off + i >= f->N - 1)
      continue;
    const double _Complex c = rt_load(f->d, y, i) / f->h; /* the coefficients are real */
    acc[i] -= c;
    acc[i + 1] += c;
  }
  for (int64_t i = 0; i < f->n; ++i)
    rt_store(f->d, x, i, acc[i]);
  if (f->n > 0 && f->off + f->n < f->N)
    rt_store(f->d, ghost, 0, acc[f->n]);
  free(acc);
  return RMAOP_OK;
}

/* The plan: every non-empty rank but the first non-empty one sends its first element to the ghost of the
 * previous non-empty rank. */
static rmaop_plan forward_plan(rmaop_dtype d, const int64_t *rows) {
  rmaop_transfer t[1];
  int nt = 0;
  if (rows[rt_rank] > 0)
    for (int q = rt_rank - 1; q >= 0; --q)
      if (rows[q] > 0) {
        t[nt++] = (rmaop_transfer){q, 0, 0, 1};
        break;
      }
  rmaop_plan_spec spec = {.dtype = d,
                          .src_len = rows[rt_rank],
                          .dst_len = 1,
                          .nsends = nt,
                          .sends = t,
                          .nrecvs = -1,
                          .label = "shell-forward"};
  rmaop_plan plan = NULL;
  RT_OK(rmaop_plan_create(ctx, &spec, &plan));
  return plan;
}

START_TEST(test_shell_forward_derivative) {
  /* The callbacks below compute on host arrays; on device memory they would get GPU pointers. */
  if (rt_device()) return;
  const rmaop_dtype ds[2] = {RMAOP_F64, RMAOP_C128};
  const shape_t line = {1, {13}};
  for (int k = 0; k < 2; ++k)
    for (int split = 0; split < NSPLITS; ++split) {
      const rmaop_dtype d = ds[k];
      int64_t *rows = calloc((size_t)rt_size, sizeof *rows);
      for (int r = 0; r < rt_size; ++r)
        rows[r] = split_rows(split, 13, r, rt_size);
      const int64_t off = split_offset(split, 13, rt_rank, rt_size);
      rmaop_layout l = NULL;
      RT_OK(rmaop_layout_create_local(ctx, rows[rt_rank], &l));
      rmaop_plan plan = forward_plan(d, rows);
      fwd_user user = {d, rows[rt_rank], off, 13, 0.5, RMAOP_OK};
      rmaop_shell_ops ops = {fwd_apply, fwd_adjoint, &user};
      rmaop_op S = NULL;
      RT_OK(rmaop_op_create_shell(l, l, d, plan, &ops, &S));
      deriv_cfg c = {1, RMAOP_DERIV_FORWARD, 0, 0.5, line, 0};
      mat M = mat_from_fn(13, 13, deriv_serial, &c);
      local_shape ls = {rows[rt_rank], off, rows[rt_rank], off};
      char name[120];
      snprintf(name, sizeof name, "shell forward derivative, %s", split_names[split]);
      check_op(S, &M, d, &ls, name);

      /* against the library's own forward derivative on the same split: forward and adjoint */
      rmaop_op D = make_deriv(&c, split, d);
      rmaop_vec x = vec_on(l, d), y1 = vec_on(l, d), y2 = vec_on(l, d);
      free(fill(x, 13, 3));
      RT_LOK();
      RT_OK(rmaop_op_apply(S, x, y1));
      RT_OK(rmaop_op_apply(D, x, y2));
      char msg[320] = "";
      double _Complex *g1 = calloc(14, sizeof *g1), *g2 = calloc(14, sizeof *g2);
      RT_OK(rmaop_vec_gather(y1, 0, g1));
      RT_OK(rmaop_vec_gather(y2, 0, g2));
      int ok = 1;
      for (int i = 0; i < 13 && rt_rank == 0 && ok; ++i)
        if (!rt_close(rt_load(d, g1, i), rt_load(d, g2, i), rt_tol(d), 1.0))
          ok = 0, snprintf(msg, sizeof msg, "shell and first derivative differ at %d", i);
      RT_OK(rmaop_op_apply_adjoint(S, x, y1));
      RT_OK(rmaop_op_apply_adjoint(D, x, y2));
      RT_OK(rmaop_vec_gather(y1, 0, g1));
      RT_OK(rmaop_vec_gather(y2, 0, g2));
      for (int i = 0; i < 13 && rt_rank == 0 && ok; ++i)
        if (!rt_close(rt_load(d, g1, i), rt_load(d, g2, i), rt_tol(d), 1.0))
          ok = 0, snprintf(msg, sizeof msg, "shell and first derivative adjoints differ at %d", i);
      RT_CHECK(ok, "%s %s: %s", name, rmaop_dtype_name(d), msg);
      free(g1), free(g2);

      /* a failing callback (every rank): its status comes back */
      user.fail = RMAOP_ERR_NOMEM;
      RT_EXPECT(rmaop_op_apply(S, x, y1), RT_BIT(RMAOP_ERR_NOMEM));
      RT_EXPECT(rmaop_op_apply_adjoint(S, x, y1), RT_BIT(RMAOP_ERR_NOMEM));
      user.fail = RMAOP_OK;
      RT_OK(rmaop_op_apply(S, x, y1));

      rmaop_vec_destroy(&x), rmaop_vec_destroy(&y1), rmaop_vec_destroy(&y2);
      rmaop_op_destroy(&D);
      rmaop_op_destroy(&S);
      rmaop_plan_destroy(&plan);
      rmaop_layout_destroy(&l);
      mat_free(&M);
      free(rows);
    }
}
END_TEST

/* ---- errors ---- */

START_TEST(test_apply_errors) {
  const deriv_cfg c = {1, RMAOP_DERIV_CENTERED3, 1, 0, cube, 0};
  rmaop_op D = make_deriv(&c, SPLIT_FIRST_ONE, RMAOP_F64);
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(D, &info));
  rmaop_layout bigger = NULL, bcast = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, shape_size(&cube) + 1, &bigger));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, shape_size(&cube), &bcast));
  rmaop_vec x = vec_on(info.model, RMAOP_F64), y = vec_on(info.data, RMAOP_F64), y2 = vec_on(info.data, RMAOP_F64);
  rmaop_vec xbig = vec_on(bigger, RMAOP_F64), xbc = vec_on(bcast, RMAOP_F64), x32 = vec_on(info.model, RMAOP_F32);
  rmaop_vec yc = vec_on(info.data, RMAOP_C128);
  free(fill(x, shape_size(&cube), 1));
  RT_LOK();

  /* wrong layout or dtype: ARG on every rank, the message names the vector */
  RT_EXPECT(rmaop_op_apply(D, xbig, y), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("x");
  RT_EXPECT(rmaop_op_apply(D, xbc, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, x32, y), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("f32");
  RT_EXPECT(rmaop_op_apply(D, x, yc), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint(D, xbig, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint(D, y, x32), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_begin(D, xbc, y), RT_BIT(RMAOP_ERR_ARG));
  /* NULL operator / vectors / outputs */
  RT_EXPECT(rmaop_op_apply(NULL, x, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint(NULL, y, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_begin(NULL, x, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_end(NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint_end(NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, NULL, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, x, NULL), RT_BIT(RMAOP_ERR_ARG));
  double rel;
  RT_EXPECT(rmaop_op_dottest(NULL, 1u, &rel), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_dottest(D, 1u, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_get_info(NULL, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_get_info(D, NULL), RT_BIT(RMAOP_ERR_ARG));
  /* x == y */
  RT_EXPECT(rmaop_op_apply(D, x, x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("same");
  RT_EXPECT(rmaop_op_apply_adjoint(D, y, y), RT_BIT(RMAOP_ERR_ARG));
  /* end without begin */
  RT_EXPECT(rmaop_op_apply_end(D), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint_end(D), RT_BIT(RMAOP_ERR_ARG));
  /* a second begin while one is in flight; the first one still completes */
  RT_OK(rmaop_op_apply_begin(D, x, y));
  RT_EXPECT(rmaop_op_apply_begin(D, x, y2), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("already");
  RT_EXPECT(rmaop_op_apply_adjoint_begin(D, y2, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply(D, x, y2), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_apply_adjoint_end(D), RT_BIT(RMAOP_ERR_ARG));
  RT_OK(rmaop_op_apply_end(D));
  RT_EXPECT(rmaop_op_apply_end(D), RT_BIT(RMAOP_ERR_ARG));
  /* after all that the operator works and gave the right result */
  RT_OK(rmaop_op_apply(D, x, y2));
  RT_CHECK(same_local(y, y2), "the begun application before the failed calls differs from a plain apply");
  mat M = mat_from_fn(shape_size(&cube), shape_size(&cube), deriv_serial, &c);
  local_shape ls = grid_shape(&cube, SPLIT_FIRST_ONE);
  check_op(D, &M, RMAOP_F64, &ls, "after errors");
  mat_free(&M);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&y2), rmaop_vec_destroy(&xbig);
  rmaop_vec_destroy(&xbc), rmaop_vec_destroy(&x32), rmaop_vec_destroy(&yc);
  rmaop_layout_destroy(&bigger), rmaop_layout_destroy(&bcast);
  rmaop_op_destroy(&D);
  rmaop_op_destroy(&D); /* no-op on NULL */
  rmaop_op_destroy(NULL);
}
END_TEST

/* Creation with `spec` must fail: ARG on `bad` (every rank when bad < 0), ARG or REMOTE elsewhere; the
 * output stays NULL and, where given, the failing rank's message contains `needle`. */
static void expect_deriv_error(int order, const rmaop_deriv_spec *spec, int bad, const char *needle, const char *what) {
  rmaop_op A = NULL;
  rmaop_status st =
      order == 1 ? rmaop_op_create_first_derivative(ctx, spec, &A) : rmaop_op_create_second_derivative(ctx, spec, &A);
  const int here = bad < 0 || bad == rt_rank;
  RT_CHECK(here ? st == RMAOP_ERR_ARG : (st == RMAOP_ERR_ARG || st == RMAOP_ERR_REMOTE), "%s -> %s: %s", what,
           rmaop_status_string(st), rmaop_ctx_last_error(NULL));
  RT_CHECK(A == NULL, "%s: output written on failure", what);
  RT_CHECK(!here || !needle || strstr(rmaop_ctx_last_error(NULL), needle), "%s: message \"%s\" lacks \"%s\"", what,
           rmaop_ctx_last_error(NULL), needle ? needle : "");
}

START_TEST(test_create_errors) {
  const shape_t narrow = {3, {9, 4, 6}}, short0 = {2, {4, 6}};
  rmaop_deriv_spec base = {
      .grid = make_grid(&cube, SPLIT_BALANCED), .axis = 0, .kind = RMAOP_DERIV_CENTERED3, .dtype = RMAOP_F64};
  rmaop_deriv_spec s = base;
  s.axis = 3;
  expect_deriv_error(1, &s, -1, "axis", "axis 3 of a 3-D grid");
  s.axis = -1;
  expect_deriv_error(2, &s, -1, "axis", "axis -1");
  s = base;
  s.grid = make_grid(&narrow, SPLIT_BALANCED), s.axis = 1, s.kind = RMAOP_DERIV_CENTERED5;
  expect_deriv_error(1, &s, -1, "4 samples", "centered5 along an axis of 4 samples");
  s.grid = make_grid(&short0, SPLIT_BALANCED), s.axis = 0;
  expect_deriv_error(1, &s, -1, NULL, "centered5 along axis 0 of 4 samples");
  s = base;
  s.kind = RMAOP_DERIV_CENTERED5;
  expect_deriv_error(2, &s, -1, "kind", "second derivative centered5");
  s.kind = (rmaop_deriv_kind)7;
  expect_deriv_error(1, &s, -1, "kind", "kind 7");
  s = base;
  s.dtype = (rmaop_dtype)9;
  expect_deriv_error(1, &s, -1, NULL, "dtype 9");
  s = base;
  s.sampling = NAN;
  expect_deriv_error(1, &s, -1, NULL, "sampling NaN");
  s = base;
  s.grid.ndim = 0;
  expect_deriv_error(1, &s, -1, NULL, "ndim 0");
  s = base;
  s.grid.dims[1] = 0;
  expect_deriv_error(1, &s, -1, NULL, "dims[1] = 0");
  /* local rows that do not add up to dims[0]: error on every rank */
  s = base;
  s.grid.local_rows = 1; /* sum P, dims[0] = P + 3 */
  s.grid.dims[0] = rt_size + 3;
  expect_deriv_error(1, &s, -1, "dims[0]", "local_rows adding up to P, not P + 3");
  s = base;
  s.grid.local_rows = split_rows(SPLIT_UNEVEN, 9, rt_rank, rt_size) - (rt_rank == rt_size - 1);
  expect_deriv_error(1, &s, -1, "dims[0]", "local_rows adding up to dims[0] - 1");
  /* one rank's local_rows is out of range: ARG there, REMOTE (or ARG) elsewhere */
  s = base;
  if (rt_rank == rt_size - 1)
    s.grid.local_rows = -2;
  expect_deriv_error(1, &s, rt_size - 1, "local_rows", "local_rows -2 on the last rank");
  s = base;
  if (rt_rank == 0)
    s.grid.local_rows = 10;
  expect_deriv_error(2, &s, 0, "local_rows", "local_rows > dims[0] on rank 0");
  /* NULL arguments */
  rmaop_op A = NULL;
  RT_EXPECT(rmaop_op_create_first_derivative(ctx, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_first_derivative(ctx, &base, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_second_derivative(NULL, &base, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(A == NULL, "output written on failure");

  /* Laplacian */
  rmaop_laplacian_spec ls = {
      .grid = make_grid(&cube, SPLIT_BALANCED), .naxes = 4, .kind = RMAOP_DERIV_CENTERED3, .dtype = RMAOP_F64};
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("naxes");
  ls.naxes = 0, ls.grid = make_grid(&line11, SPLIT_BALANCED);
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  ls.grid = make_grid(&cube, SPLIT_BALANCED), ls.kind = RMAOP_DERIV_CENTERED5;
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  ls.kind = RMAOP_DERIV_CENTERED3, ls.naxes = 2, ls.axes[0] = 0, ls.axes[1] = 3;
  RT_EXPECT(rmaop_op_create_laplacian(ctx, &ls, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_laplacian(ctx, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(A == NULL, "output written on failure");

  /* blocks */
  double dense[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  rmaop_block b = {.nrows = 2, .ncols = 2, .dense = dense};
  RT_EXPECT(rmaop_op_create_blockdiag(ctx, RMAOP_F64, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_vstack(ctx, RMAOP_F64, &b, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_hstack(ctx, (rmaop_dtype)5, &b, &A), RT_BIT(RMAOP_ERR_ARG));
  rmaop_block nob = {.nrows = 2, .ncols = 2};
  RT_EXPECT(rmaop_op_create_blockdiag(ctx, RMAOP_F64, &nob, &A), RT_BIT(RMAOP_ERR_ARG));
  rmaop_block neg = b;
  if (rt_rank == 0)
    neg.nrows = -1;
  RT_EXPECT_ON(rmaop_op_create_blockdiag(ctx, RMAOP_F64, &neg, &A), 0, RMAOP_ERR_ARG);
  if (rt_size > 1) {
    rmaop_block uneq = b;
    uneq.ncols = rt_rank == rt_size - 1 ? 3 : 2; /* vstack: the columns (model) must agree */
    RT_EXPECT(rmaop_op_create_vstack(ctx, RMAOP_F64, &uneq, &A), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_REMOTE));
    uneq = b;
    uneq.nrows = rt_rank == 0 ? 1 : 2; /* hstack: the rows (data) must agree */
    RT_EXPECT(rmaop_op_create_hstack(ctx, RMAOP_F64, &uneq, &A), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_REMOTE));
  }
  RT_CHECK(A == NULL, "output written on failure");

  /* composites */
  pair p = deriv_pair(&(deriv_cfg){1, RMAOP_DERIV_FORWARD, 0, 0, cube, 0}, SPLIT_BALANCED, RMAOP_F64);
  pair q = deriv_pair(&(deriv_cfg){1, RMAOP_DERIV_FORWARD, 0, 0, cube, 0}, SPLIT_UNEVEN, RMAOP_F64);
  pair pc = deriv_pair(&(deriv_cfg){1, RMAOP_DERIV_FORWARD, 0, 0, cube, 0}, SPLIT_BALANCED, RMAOP_C128);
  RT_EXPECT(rmaop_op_create_scaled(p.op, 1.0 + 2.0 * I, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("alpha");
  RT_EXPECT(rmaop_op_create_scaled(NULL, 1.0, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_scaled(p.op, 1.0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_adjoint(NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  rmaop_op two[2] = {p.op, pc.op};
  RT_EXPECT(rmaop_op_create_sum(2, two, &A), RT_BIT(RMAOP_ERR_ARG)); /* dtypes differ */
  RT_EXPECT(rmaop_op_create_sum(0, two, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_sum(1, NULL, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_product(p.op, pc.op, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_product(NULL, p.op, &A), RT_BIT(RMAOP_ERR_ARG));
  if (rt_size > 1) { /* layouts of the same global size, split differently */
    two[1] = q.op;
    RT_EXPECT(rmaop_op_create_sum(2, two, &A), RT_BIT(RMAOP_ERR_ARG));
    RT_EXPECT(rmaop_op_create_product(p.op, q.op, &A), RT_BIT(RMAOP_ERR_ARG));
  }
  RT_CHECK(A == NULL, "output written on failure");
  /* a complex alpha on a complex operator is fine */
  RT_OK(rmaop_op_create_scaled(pc.op, 1.0 + 2.0 * I, &A));
  rmaop_op_destroy(&A);

  /* shell: plan of another dtype, a plan whose source is not the model, NULL callbacks */
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create_local(ctx, 3, &l));
  rmaop_plan_spec ps = {.dtype = RMAOP_F64, .src_len = 3, .dst_len = 1, .nrecvs = -1};
  rmaop_plan plan = NULL, plan4 = NULL;
  RT_OK(rmaop_plan_create(ctx, &ps, &plan));
  ps.src_len = 4;
  RT_OK(rmaop_plan_create(ctx, &ps, &plan4));
  fwd_user user = {RMAOP_F64, 3, 3 * rt_rank, 3 * rt_size, 1.0, RMAOP_OK};
  rmaop_shell_ops ops = {fwd_apply, fwd_adjoint, &user}, noops = {NULL, fwd_adjoint, &user};
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_C128, plan, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_F64, plan4, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_F64, plan, &noops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(l, l, RMAOP_F64, NULL, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_op_create_shell(NULL, l, RMAOP_F64, plan, &ops, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(A == NULL, "output written on failure");
  rmaop_plan_destroy(&plan), rmaop_plan_destroy(&plan4);
  rmaop_layout_destroy(&l);
  pair_free(&p), pair_free(&q), pair_free(&pc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op");
  TCase *tc = tcase_create("stencils");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_first_derivative_f64);
  tcase_add_test(tc, test_second_derivative_f64);
  tcase_add_test(tc, test_derivatives_other_dtypes);
  tcase_add_test(tc, test_laplacian);
  suite_add_tcase(s, tc);
  TCase *tb = tcase_create("blocks");
  tcase_add_checked_fixture(tb, setup, teardown);
  tcase_add_test(tb, test_block_operators);
  tcase_add_test(tb, test_block_callback_error);
  suite_add_tcase(s, tb);
  TCase *tm = tcase_create("composites");
  tcase_add_checked_fixture(tm, setup, teardown);
  tcase_add_test(tm, test_composites);
  tcase_add_test(tm, test_sum_scaled_shares_part);
  tcase_add_test(tm, test_sum_adjoint_shares_part);
  tcase_add_test(tm, test_output_overwritten);
  tcase_add_test(tm, test_shell_forward_derivative);
  suite_add_tcase(s, tm);
  TCase *te = tcase_create("errors");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_add_test(te, test_apply_errors);
  tcase_add_test(te, test_create_errors);
  suite_add_tcase(s, te);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
