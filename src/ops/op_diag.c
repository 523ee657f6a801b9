/* Diagonal operator (PyLops Diagonal): y = d .* x, x = conj(d) .* y. Purely local; it goes through
 * rmaop_vec_pointwise_mult, so host and device memory share one path. */
#include "core/error.h"
#include "core/vec.h"
#include "core/dtype.h"
#include "op_impl.h"

typedef struct {
  rmaop_vec d, dconj; /* dconj == d for real dtypes (one reference, freed once) */
} diag_impl;

static rmaop_status diag_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  return rmaop_vec_pointwise_mult(y, ((diag_impl *)A->impl)->d, x);
}
static rmaop_status diag_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  return rmaop_vec_pointwise_mult(x, ((diag_impl *)A->impl)->dconj, y);
}
static rmaop_status diag_end(rmaop_op A) {
  (void)A;
  return RMAOP_OK;
}
static void diag_free(diag_impl *s) {
  if (s->dconj != s->d) rmaop_vec_destroy(&s->dconj);
  rmaop_vec_destroy(&s->d);
  free(s);
}
static void diag_destroy(rmaop_op A) { diag_free(A->impl); }

static const rmaop__op_ops diag_ops = {diag_apply_begin, diag_end, diag_adjoint_begin, diag_end, diag_destroy};

rmaop_vec rmaop__op_diagonal_vec(rmaop_op A) {
  return A && A->ops == &diag_ops ? ((diag_impl *)A->impl)->d : NULL;
}

/* v = conj(v) through a host copy (once, at creation): negates the imaginary parts of complex dtypes. */
static rmaop_status vec_conj(rmaop_vec v) {
  void *buf = NULL;
  const size_t bytes = (size_t)v->local_n * rmaop_dtype_size(v->dtype);
  RMAOP_CHECK(rmaop__malloc(v->ctx, bytes + 1, "diagonal (host copy)", &buf));
  rmaop_status st = rmaop_vec_read_local(v, buf);
  RMAOP__FOR_DTYPE(v->dtype, {
    if (sizeof(T) == 2 * sizeof(R))
      for (int64_t i = 0; i < v->local_n; ++i) ((R *)buf)[2 * i + 1] = -((R *)buf)[2 * i + 1];
  });
  if (st == RMAOP_OK) st = rmaop_vec_write_local(v, buf);
  free(buf);
  return st;
}

rmaop_status rmaop_op_create_diagonal(rmaop_vec d, rmaop_op *out) {
  RMAOP_REQUIRE(NULL, d != NULL, RMAOP_ERR_ARG, "rmaop_op_create_diagonal: diagonal vector d is NULL");
  rmaop_ctx ctx = d->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_op_create_diagonal: result (output) is NULL");
  diag_impl *s = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *s, "diagonal operator", (void **)&s));
  const int complex_dt = d->dtype == RMAOP_C64 || d->dtype == RMAOP_C128;
  rmaop_status st = rmaop_vec_duplicate(d, &s->d);
  if (st == RMAOP_OK) st = rmaop_vec_copy(d, s->d);
  if (st == RMAOP_OK && complex_dt) st = rmaop_vec_duplicate(d, &s->dconj);
  if (st == RMAOP_OK && complex_dt) st = rmaop_vec_copy(d, s->dconj);
  if (st == RMAOP_OK && complex_dt) st = vec_conj(s->dconj);
  if (st == RMAOP_OK && !complex_dt) s->dconj = s->d;
  if (st == RMAOP_OK) st = rmaop__op_new(ctx, "diagonal", d->dtype, d->layout, d->layout, &diag_ops, s, out);
  if (st != RMAOP_OK) diag_free(s);
  return st;
}
