/* Shared helpers of the operator tests (see op_test_util.h). */
#include "op_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

rmaop_ctx ctx;
int lok;
char lerr[512];

void op_setup(void) {
  ctx = rt_ctx();
  lok = 1;
}
void op_teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

/* ---- dense global matrices (double complex, row-major) ---- */

mat mat_new(int64_t m, int64_t n) {
  mat A = {m, n, calloc((size_t)(m * n > 0 ? m * n : 1), sizeof(double _Complex))};
  if (!A.a)
    abort();
  return A;
}
void mat_free(mat *A) {
  free(A->a);
  A->a = NULL;
}
/* A + alpha B */
mat mat_add(const mat *A, double _Complex alpha, const mat *B) {
  mat C = mat_new(A->m, A->n);
  for (int64_t i = 0; i < A->m * A->n; ++i)
    C.a[i] = A->a[i] + alpha * B->a[i];
  return C;
}
mat mat_scale(const mat *A, double _Complex alpha) {
  mat C = mat_new(A->m, A->n);
  for (int64_t i = 0; i < A->m * A->n; ++i)
    C.a[i] = alpha * A->a[i];
  return C;
}
mat mat_mul(const mat *A, const mat *B) {
  mat C = mat_new(A->m, B->n);
  for (int64_t i = 0; i < A->m; ++i)
    for (int64_t k = 0; k < A->n; ++k)
      if (AT(*A, i, k) != 0)
        for (int64_t j = 0; j < B->n; ++j)
          AT(C, i, j) += AT(*A, i, k) * AT(*B, k, j);
  return C;
}
mat mat_adjoint(const mat *A) {
  mat C = mat_new(A->n, A->m);
  for (int64_t i = 0; i < A->m; ++i)
    for (int64_t j = 0; j < A->n; ++j)
      AT(C, j, i) = conj(AT(*A, i, j));
  return C;
}

mat mat_from_fn(int64_t m, int64_t n, serial_fn f, const void *cfg) {
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

rmaop_vec vec_on(rmaop_layout l, rmaop_dtype d) {
  rmaop_vec v = NULL;
  LOK(rmaop_vec_create(l, d, &v));
  return v;
}

/* Writes series s (global index = offset + local index) rounded to the dtype; returns the global values
 * (n of them) as the dtype holds them. */
double _Complex *fill(rmaop_vec v, int64_t n_global, int s) {
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
int compare(rmaop_vec v, const mat *W, const double _Complex *in, const char *what, char *msg, size_t msz) {
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
int same_local_msg(rmaop_vec a, rmaop_vec b, int bitwise, char *msg, size_t msz) {
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
int same_local(rmaop_vec a, rmaop_vec b) {
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
void check_op(rmaop_op A, const mat *M, rmaop_dtype d, const local_shape *shape, const char *name) {
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

int64_t shape_size(const shape_t *s) {
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

/* y (+)= w * D x for the whole array. */
void deriv_add(const deriv_cfg *c, double w, const double _Complex *x, double _Complex *y) {
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

void deriv_serial(const void *cfg, const double _Complex *x, double _Complex *y) {
  const deriv_cfg *c = cfg;
  memset(y, 0, (size_t)shape_size(&c->shape) * sizeof *y);
  deriv_add(c, 1.0, x, y);
}

const shape_t line11 = {1, {11}}, cube = {3, {9, 5, 6}}, plane = {2, {8, 7}};

/* ---- how axis 0 is split ---- */

const char *split_names[NSPLITS] = {"balanced", "rank 0 one row, last the rest", "uneven, rank 0 empty",
                                    "one row each, last the rest"};

/* Rows of axis 0 on rank r of P. */
int64_t split_rows(int split, int64_t n0, int r, int P) {
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
int64_t split_offset(int split, int64_t n0, int r, int P) {
  int64_t off = 0;
  for (int q = 0; q < r; ++q)
    off += split_rows(split, n0, q, P);
  return off;
}

rmaop_grid make_grid(const shape_t *s, int split) {
  rmaop_grid g = {.ndim = s->ndim,
                  .local_rows = split == SPLIT_BALANCED ? -1 : split_rows(split, s->dims[0], rt_rank, rt_size)};
  for (int a = 0; a < s->ndim; ++a)
    g.dims[a] = s->dims[a];
  return g;
}

local_shape grid_shape(const shape_t *s, int split) {
  int64_t inner = shape_size(s) / s->dims[0];
  int64_t n = split_rows(split, s->dims[0], rt_rank, rt_size) * inner;
  int64_t off = split_offset(split, s->dims[0], rt_rank, rt_size) * inner;
  return (local_shape){n, off, n, off};
}

const char *kind_names[4] = {"forward", "backward", "centered3", "centered5"};

rmaop_op make_deriv(const deriv_cfg *c, int split, rmaop_dtype d) {
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

/* ---- operators with their matrices ---- */

pair deriv_pair(const deriv_cfg *c, int split, rmaop_dtype d) {
  pair p = {make_deriv(c, split, d), mat_from_fn(shape_size(&c->shape), shape_size(&c->shape), deriv_serial, c),
            grid_shape(&c->shape, split)};
  return p;
}
void pair_free(pair *p) {
  rmaop_op_destroy(&p->op);
  mat_free(&p->M);
}

/* ---- block operators ---- */

/* Rank r's block sizes: block-diagonal rows / columns, vstack rows, hstack columns (zeros included). */
static int64_t blk_rows(int r) {
  return (int64_t[]){2, 0, 3, 1}[r % 4] + (r >= 4);
}
static int64_t blk_cols(int r) {
  return (int64_t[]){3, 1, 0, 2}[r % 4] + (r >= 4);
}

/* Element (i, j) of rank r's block, as the dtype holds it. */
static double _Complex blk_val(rmaop_dtype d, int r, int64_t i, int64_t j) {
  return rt_round(d, rt_value(31 * r + 7 * i + 3 * j, 6) * (1.0 + 0.25 * r));
}

const char *block_names[3] = {"blockdiag", "vstack", "hstack"};
static void block_dims(int kind, int r, int64_t *nr, int64_t *nc) {
  *nr = kind == HSTACK ? HSTACK_ROWS : blk_rows(r);
  *nc = kind == VSTACK ? VSTACK_COLS : blk_cols(r);
}

/* The global matrix of a block operator, from every rank's block formula. */
mat block_matrix(int kind, rmaop_dtype d) {
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

local_shape block_shape(int kind) {
  int64_t nr, nc, ro = 0, co = 0;
  for (int r = 0; r < rt_rank; ++r) {
    block_dims(kind, r, &nr, &nc);
    ro += nr, co += nc;
  }
  block_dims(kind, rt_rank, &nr, &nc);
  return (local_shape){nc, kind == VSTACK ? 0 : co, nr, kind == HSTACK ? 0 : ro};
}

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
rmaop_op make_block(int kind, rmaop_dtype d, int callbacks, blk_user *user) {
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
