/* Operators: argument checks and dispatch, composites (sum, product, scaled, adjoint), the dot test. */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "core/dtype.h"
#include "op_impl.h"

#include <math.h>
#include <stdio.h>

#include "device/device.h"

rmaop_status rmaop__op_new(rmaop_ctx ctx, const char *name, rmaop_dtype dtype, rmaop_layout model, rmaop_layout data,
                           const rmaop__op_ops *ops, void *impl, rmaop_op *out) {
  rmaop_op A = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *A, "operator", (void **)&A));
  A->ctx = ctx;
  A->refs = 1;
  snprintf(A->name, sizeof A->name, "%s", name);
  A->dtype = dtype;
  A->model = model;
  A->data = data;
  model->refs++;
  data->refs++;
  A->ops = ops;
  A->impl = impl;
  *out = A;
  return RMAOP_OK;
}

rmaop_status rmaop__op_new_agreed(rmaop_status prior, rmaop_ctx ctx, const char *name, rmaop_dtype dtype,
                                  rmaop_layout model, rmaop_layout data, const rmaop__op_ops *ops, void *impl,
                                  rmaop_op *out) {
  rmaop_op A = NULL;
  if (prior == RMAOP_OK) prior = rmaop__op_new(ctx, name, dtype, model, data, ops, impl, &A);
  rmaop_status st = rmaop__agree(ctx, prior, name);
  if (st != RMAOP_OK) {
    if (A) { /* made here, failed elsewhere: undo it but leave impl to the caller, as on the failing rank */
      rmaop_layout_destroy(&A->model);
      rmaop_layout_destroy(&A->data);
      free(A);
    }
    return st;
  }
  *out = A;
  return RMAOP_OK;
}

void rmaop_op_destroy(rmaop_op *pA) {
  if (!pA || !*pA) return;
  rmaop_op A = *pA;
  *pA = NULL;
  if (--A->refs > 0) return;
  A->ops->destroy(A);
  rmaop_layout_destroy(&A->model);
  rmaop_layout_destroy(&A->data);
  free(A);
}

rmaop_status rmaop_op_get_info(rmaop_op A, rmaop_op_info *info) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "rmaop_op_get_info: operator is NULL");
  RMAOP_REQUIRE(A->ctx, info != NULL, RMAOP_ERR_ARG, "rmaop_op_get_info: info (output) is NULL");
  *info = (rmaop_op_info){.model = A->model, .data = A->data, .dtype = A->dtype, .name = A->name};
  return RMAOP_OK;
}

static int layout_fits(rmaop_layout l, rmaop_vec v) { return rmaop__layout_compatible(l, v->layout); }

static rmaop_status check_operands(rmaop_op A, const char *fn, rmaop_vec in, rmaop_layout in_l, const char *in_name,
                                   rmaop_vec out, rmaop_layout out_l, const char *out_name) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "%s: operator is NULL", fn);
  rmaop_ctx ctx = A->ctx;
  RMAOP_REQUIRE(ctx, A->active == 0, RMAOP_ERR_ARG, "%s: operator \"%s\" is already being applied (call its _end)", fn,
                A->name);
  RMAOP_REQUIRE(ctx, in != NULL && out != NULL, RMAOP_ERR_ARG, "%s: vector %s is NULL", fn, in ? out_name : in_name);
  RMAOP_REQUIRE(ctx, in != out, RMAOP_ERR_ARG, "%s: %s and %s are the same vector", fn, in_name, out_name);
  RMAOP_REQUIRE(ctx, in->dtype == A->dtype && out->dtype == A->dtype, RMAOP_ERR_ARG,
                "%s: operator \"%s\" is %s but %s is %s and %s is %s", fn, A->name, rmaop_dtype_name(A->dtype), in_name,
                rmaop_dtype_name(in->dtype), out_name, rmaop_dtype_name(out->dtype));
  RMAOP_REQUIRE(ctx, layout_fits(in_l, in), RMAOP_ERR_ARG,
                "%s: %s has %lld of %lld elements here; operator \"%s\" expects %lld of %lld", fn, in_name,
                (long long)in->local_n, (long long)in->layout->global_n, A->name,
                (long long)in_l->sizes[ctx->rank], (long long)in_l->global_n);
  RMAOP_REQUIRE(ctx, layout_fits(out_l, out), RMAOP_ERR_ARG,
                "%s: %s has %lld of %lld elements here; operator \"%s\" produces %lld of %lld", fn, out_name,
                (long long)out->local_n, (long long)out->layout->global_n, A->name,
                (long long)out_l->sizes[ctx->rank], (long long)out_l->global_n);
  return RMAOP_OK;
}

rmaop_status rmaop_op_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  RMAOP_CHECK(check_operands(A, "rmaop_op_apply", x, A ? A->model : NULL, "x", y, A ? A->data : NULL, "y"));
  RMAOP_CHECK(A->ops->apply_begin(A, x, y));
  A->active = 1;
  return RMAOP_OK;
}

rmaop_status rmaop_op_apply_end(rmaop_op A) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "rmaop_op_apply_end: operator is NULL");
  RMAOP_REQUIRE(A->ctx, A->active == 1, RMAOP_ERR_ARG, "rmaop_op_apply_end: \"%s\" has no forward application begun",
                A->name);
  A->active = 0;
  return A->ops->apply_end(A);
}

rmaop_status rmaop_op_apply_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  RMAOP_CHECK(check_operands(A, "rmaop_op_apply_adjoint", y, A ? A->data : NULL, "y", x, A ? A->model : NULL, "x"));
  RMAOP_CHECK(A->ops->adjoint_begin(A, y, x));
  A->active = 2;
  return RMAOP_OK;
}

rmaop_status rmaop_op_apply_adjoint_end(rmaop_op A) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "rmaop_op_apply_adjoint_end: operator is NULL");
  RMAOP_REQUIRE(A->ctx, A->active == 2, RMAOP_ERR_ARG,
                "rmaop_op_apply_adjoint_end: \"%s\" has no adjoint application begun", A->name);
  A->active = 0;
  return A->ops->adjoint_end(A);
}

rmaop_status rmaop_op_apply(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  RMAOP_CHECK(rmaop_op_apply_begin(A, x, y));
  return rmaop_op_apply_end(A);
}

rmaop_status rmaop_op_apply_adjoint(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  RMAOP_CHECK(rmaop_op_apply_adjoint_begin(A, y, x));
  return rmaop_op_apply_adjoint_end(A);
}

/* sums[] of `want` over this rank's elements of in and out (rmaop_vec_mdot's partials), the others 0. */
static rmaop_status local_sums(rmaop_vec in, rmaop_vec out, int want, double sums[RMAOP__NSUMS]) {
  rmaop_vec x[3], y[3];
  int n = 0, where[3];
  if (want & RMAOP__WANT_OUT2) x[n] = out, y[n] = out, where[n++] = RMAOP__SUM_OUT2;
  if (want & RMAOP__WANT_IN2) x[n] = in, y[n] = in, where[n++] = RMAOP__SUM_IN2;
  if (want & RMAOP__WANT_INOUT) x[n] = in, y[n] = out, where[n++] = RMAOP__SUM_INOUT_RE;
  double part[6];
  RMAOP_CHECK(rmaop__vec_local_dots(n, x, y, part));
  for (int k = 0; k < RMAOP__NSUMS; ++k) sums[k] = 0.0;
  for (int k = 0; k < n; ++k) {
    sums[where[k]] = part[2 * k];
    if (where[k] == RMAOP__SUM_INOUT_RE) sums[RMAOP__SUM_INOUT_IM] = part[2 * k + 1];
  }
  return RMAOP_OK;
}

rmaop_status rmaop__op_apply_fused(rmaop_op A, int adjoint, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f,
                                   double sums[RMAOP__NSUMS]) {
  const char *fn = adjoint ? "rmaop_op_apply_adjoint (fused)" : "rmaop_op_apply (fused)";
  RMAOP_CHECK(check_operands(A, fn, in, A ? (adjoint ? A->data : A->model) : NULL, adjoint ? "y" : "x", out,
                             A ? (adjoint ? A->model : A->data) : NULL, adjoint ? "x" : "y"));
  rmaop_ctx ctx = A->ctx;
  RMAOP_REQUIRE(ctx, f != NULL && sums != NULL, RMAOP_ERR_ARG, "%s: %s is NULL", fn, f ? "sums" : "fuse");
  RMAOP_REQUIRE(ctx, !RMAOP__ON_DEVICE(ctx), RMAOP_ERR_UNSUPPORTED,
                "%s: operator \"%s\": the fused application is for host memory (device contexts apply and reduce)",
                fn, A->name);
  RMAOP_REQUIRE(ctx, !f->u || (f->u != in && f->u != out && rmaop__layout_compatible(f->u->layout, in->layout) &&
                               f->u->dtype == in->dtype),
                RMAOP_ERR_ARG, "%s: the update's vector u must be laid out like the input and distinct from it", fn);
  RMAOP_REQUIRE(ctx, !f->w || (f->u && f->w != in && f->w != out && f->w != f->u &&
                               rmaop__layout_compatible(f->w->layout, in->layout) && f->w->dtype == in->dtype),
                RMAOP_ERR_ARG, "%s: the vector w (w += gamma in) needs an update u, in's layout and its own memory",
                fn);
  RMAOP_REQUIRE(ctx, !(f->want & RMAOP__WANT_INOUT) || rmaop__layout_compatible(in->layout, out->layout),
                RMAOP_ERR_ARG, "%s: in . out asked of operator \"%s\" whose input and output layouts differ", fn,
                A->name);
  if (A->apply_fused) return A->apply_fused(A, adjoint, in, out, f, sums);
  if (f->w) RMAOP_CHECK(rmaop_vec_axpy(f->w, f->gamma, in));
  if (f->u) RMAOP_CHECK(rmaop_vec_axpby(in, f->alpha, f->beta, f->u));
  RMAOP_CHECK(adjoint ? rmaop_op_apply_adjoint(A, in, out) : rmaop_op_apply(A, in, out));
  return local_sums(in, out, f->want, sums);
}

/* Records the parts a composite applies (borrowed copies; the impl holds the references). */
static void set_parts(rmaop_op C, rmaop_op a, rmaop_op b) {
  C->own_parts[0] = a;
  C->own_parts[1] = b;
  C->nparts = b ? 2 : 1;
  C->parts = C->own_parts;
}

/* ---- sum ---- */

typedef struct {
  int n;
  rmaop_op *ops;
  rmaop_vec *tmp_data, *tmp_model; /* n - 1 each: the outputs of ops[1..] */
  rmaop_vec out;
  int overlap;                     /* all parts distinct: begin them all, then end them all */
} sum_impl;

/* ---- parts of a composite (sum here, the stacked operators in op_stacked.c) ---- */

static rmaop_status part_end(rmaop_op P, int adjoint) {
  return adjoint ? rmaop_op_apply_adjoint_end(P) : rmaop_op_apply_end(P);
}

rmaop_status rmaop__op_part_begin(const rmaop_op ops[], int i, rmaop_vec in, rmaop_vec out, int adjoint, int overlap) {
  rmaop_op P = ops[i];
  rmaop_status st;
  if (adjoint) st = overlap ? rmaop_op_apply_adjoint_begin(P, in, out) : rmaop_op_apply_adjoint(P, in, out);
  else st = overlap ? rmaop_op_apply_begin(P, in, out) : rmaop_op_apply(P, in, out);
  if (st != RMAOP_OK) {
    /* Leave no part half-applied: end the ones already begun (their own errors are secondary). */
    for (int j = 0; j < i && overlap; ++j) (void)part_end(ops[j], adjoint);
  }
  return st;
}

rmaop_status rmaop__op_parts_end(int n, const rmaop_op ops[], int adjoint, int overlap) {
  /* End every part even after one failed: none may stay active with its epoch open (peers wait on it). */
  rmaop_status first = RMAOP_OK;
  for (int i = 0; i < n && overlap; ++i) {
    const rmaop_status st = part_end(ops[i], adjoint);
    if (first == RMAOP_OK) first = st;
  }
  return first;
}

static rmaop_status sum_begin(rmaop_op A, rmaop_vec in, rmaop_vec out, int adjoint) {
  sum_impl *s = A->impl;
  s->out = out;
  rmaop_vec *tmp = adjoint ? s->tmp_model : s->tmp_data;
  for (int i = 0; i < s->n; ++i)
    RMAOP_CHECK(rmaop__op_part_begin(s->ops, i, in, i == 0 ? out : tmp[i - 1], adjoint, s->overlap));
  return RMAOP_OK;
}

static rmaop_status sum_end(rmaop_op A, int adjoint) {
  sum_impl *s = A->impl;
  rmaop_vec *tmp = adjoint ? s->tmp_model : s->tmp_data;
  RMAOP_CHECK(rmaop__op_parts_end(s->n, s->ops, adjoint, s->overlap));
  for (int i = 1; i < s->n; ++i) RMAOP_CHECK(rmaop_vec_axpy(s->out, 1.0, tmp[i - 1]));
  return RMAOP_OK;
}

static rmaop_status sum_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) { return sum_begin(A, x, y, 0); }
static rmaop_status sum_apply_end(rmaop_op A) { return sum_end(A, 0); }
static rmaop_status sum_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) { return sum_begin(A, y, x, 1); }
static rmaop_status sum_adjoint_end(rmaop_op A) { return sum_end(A, 1); }

static void sum_free(sum_impl *s) {
  for (int i = 0; i < s->n; ++i) {
    rmaop_op_destroy(&s->ops[i]);
    if (i + 1 < s->n) {
      rmaop_vec_destroy(&s->tmp_data[i]);
      rmaop_vec_destroy(&s->tmp_model[i]);
    }
  }
  free(s->ops);
  free(s->tmp_data);
  free(s);
}
static void sum_destroy(rmaop_op A) { sum_free(A->impl); }

/* out += tmp[0..n) (rmaop_vec_axpy's expression, in order) and the sums `want` of in and out, block by block
 * (in L1 when summed). Host memory; a replicated layout: the additions, then rmaop_vec_mdot's partials. */
static rmaop_status sum_accumulate(rmaop_vec out, rmaop_vec *tmp, int n, rmaop_vec in, int want,
                                   double sums[RMAOP__NSUMS]) {
  if (out->layout->kind != RMAOP_LAYOUT_SCATTER || in->layout->kind != RMAOP_LAYOUT_SCATTER) {
    for (int i = 0; i < n; ++i) RMAOP_CHECK(rmaop_vec_axpy(out, 1.0, tmp[i]));
    return local_sums(in, out, want, sums);
  }
  enum { BLOCK = 256 };
  const unsigned what = ((want & RMAOP__WANT_OUT2) ? 1u : 0u) | ((want & RMAOP__WANT_IN2) ? 2u : 0u) |
                        ((want & RMAOP__WANT_INOUT) ? 4u : 0u);
  double lanes[4][RMAOP__SUM_LANES] = {{0}};
  const size_t es = rmaop_dtype_size(out->dtype);
  for (int64_t b = 0; b < out->local_n; b += BLOCK) {
    const int64_t m = out->local_n - b < BLOCK ? out->local_n - b : BLOCK;
    for (int i = 0; i < n; ++i)
      RMAOP__FOR_DTYPE(out->dtype, {
        T *restrict d = (T *)out->data + b;
        const T *restrict t = (const T *)tmp[i]->data + b;
        const T one = (T)1.0;
        for (int64_t k = 0; k < m; ++k) d[k] += one * t[k];
      });
    if (what)
      rmaop__host_sums(out->dtype, (const char *)in->data + (size_t)b * es, (const char *)out->data + (size_t)b * es,
                       m, what, lanes);
  }
  for (int k = 0; k < RMAOP__NSUMS; ++k) {
    sums[k] = 0.0;
    for (int l = 0; l < RMAOP__SUM_LANES; ++l) sums[k] += lanes[k][l];
  }
  return RMAOP_OK;
}

/* Fused sum: part 0 through its fused application (the update of in, |in|^2), the others applied into their
 * temporaries, then one pass adds them into out with out's sums. The parts run one after the other. */
static rmaop_status sum_apply_fused(rmaop_op S, int adjoint, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f,
                                    double sums[RMAOP__NSUMS]) {
  sum_impl *s = S->impl;
  if (s->n == 1) return rmaop__op_apply_fused(s->ops[0], adjoint, in, out, f, sums);
  rmaop_vec *tmp = adjoint ? s->tmp_model : s->tmp_data;
  rmaop__fuse f0 = *f;
  f0.want = f->want & RMAOP__WANT_IN2;
  double s0[RMAOP__NSUMS];
  RMAOP_CHECK(rmaop__op_apply_fused(s->ops[0], adjoint, in, out, &f0, s0));
  for (int i = 1; i < s->n; ++i)
    RMAOP_CHECK(adjoint ? rmaop_op_apply_adjoint(s->ops[i], in, tmp[i - 1])
                        : rmaop_op_apply(s->ops[i], in, tmp[i - 1]));
  RMAOP_CHECK(sum_accumulate(out, tmp, s->n - 1, in, f->want & ~RMAOP__WANT_IN2, sums));
  sums[RMAOP__SUM_IN2] = s0[RMAOP__SUM_IN2];
  return RMAOP_OK;
}

static const rmaop__op_ops sum_ops = {sum_apply_begin, sum_apply_end, sum_adjoint_begin, sum_adjoint_end, sum_destroy};

/* Appends the leaf operators below A to leaves[*n..max); returns 0 when max is exceeded. */
static int collect_leaves(rmaop_op A, rmaop_op *leaves, int *n, int max) {
  if (A->nparts == 0) {
    if (*n == max) return 0;
    leaves[(*n)++] = A;
    return 1;
  }
  for (int i = 0; i < A->nparts; ++i)
    if (!collect_leaves(A->parts[i], leaves, n, max)) return 0;
  return 1;
}

/* The parts can be begun together when no leaf operator occurs twice (an operator has one execution
 * state: 2 D + D must run its parts one after the other). */
int rmaop__op_parts_independent(int n, const rmaop_op ops[]) {
  enum { MAX_LEAVES = 256 };
  rmaop_op leaves[MAX_LEAVES];
  int nl = 0;
  for (int i = 0; i < n; ++i)
    if (!collect_leaves(ops[i], leaves, &nl, MAX_LEAVES)) return 0;
  for (int i = 0; i < nl; ++i)
    for (int j = 0; j < i; ++j)
      if (leaves[i] == leaves[j]) return 0;
  return 1;
}

static int same_layout(rmaop_layout a, rmaop_layout b) { return rmaop__layout_same(a, b); }

rmaop_status rmaop_op_create_sum(int n, const rmaop_op ops[], rmaop_op *out) {
  RMAOP_REQUIRE(NULL, n >= 1 && ops != NULL && ops[0] != NULL, RMAOP_ERR_ARG,
                "rmaop_op_create_sum: need n >= 1 operators (n = %d)", n);
  rmaop_ctx ctx = ops[0]->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_op_create_sum: result (output) is NULL");
  for (int i = 1; i < n; ++i) {
    RMAOP_REQUIRE(ctx, ops[i] != NULL, RMAOP_ERR_ARG, "rmaop_op_create_sum: ops[%d] is NULL", i);
    RMAOP_REQUIRE(ctx, ops[i]->dtype == ops[0]->dtype && same_layout(ops[i]->model, ops[0]->model) &&
                  same_layout(ops[i]->data, ops[0]->data), RMAOP_ERR_ARG,
                  "rmaop_op_create_sum: ops[%d] (\"%s\") differs from ops[0] (\"%s\") in dtype or layouts", i,
                  ops[i]->name, ops[0]->name);
  }
  sum_impl *s = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *s, "sum", (void **)&s));
  rmaop_status st = rmaop__calloc(ctx, (size_t)n, sizeof(rmaop_op), "sum parts", (void **)&s->ops);
  if (st == RMAOP_OK) st = rmaop__calloc(ctx, 2 * (size_t)n, sizeof(rmaop_vec), "sum temporaries", (void **)&s->tmp_data);
  if (st != RMAOP_OK) {
    free(s->ops);
    free(s);
    return st;
  }
  s->tmp_model = s->tmp_data + n;
  s->overlap = rmaop__op_parts_independent(n, ops);
  for (int i = 0; i < n; ++i) {
    s->ops[i] = ops[i];
    ops[i]->refs++;
  }
  s->n = n;
  for (int i = 1; i < n && st == RMAOP_OK; ++i) {
    st = rmaop_vec_create(ops[0]->data, ops[0]->dtype, &s->tmp_data[i - 1]);
    if (st == RMAOP_OK) st = rmaop_vec_create(ops[0]->model, ops[0]->dtype, &s->tmp_model[i - 1]);
  }
  if (st == RMAOP_OK) st = rmaop__op_new(ctx, "sum", ops[0]->dtype, ops[0]->model, ops[0]->data, &sum_ops, s, out);
  if (st == RMAOP_OK) {
    (*out)->nparts = n;
    (*out)->parts = s->ops;
    (*out)->apply_fused = sum_apply_fused;
  }
  if (st != RMAOP_OK) sum_free(s);
  return st;
}

/* ---- product ---- */

typedef struct {
  rmaop_op A, B;
  rmaop_vec tmp; /* B x (A's model layout) */
} product_impl;

static rmaop_status product_apply_begin(rmaop_op AB, rmaop_vec x, rmaop_vec y) {
  product_impl *p = AB->impl;
  RMAOP_CHECK(rmaop_op_apply(p->B, x, p->tmp));
  return rmaop_op_apply_begin(p->A, p->tmp, y);
}
static rmaop_status product_apply_end(rmaop_op AB) { return rmaop_op_apply_end(((product_impl *)AB->impl)->A); }
static rmaop_status product_adjoint_begin(rmaop_op AB, rmaop_vec y, rmaop_vec x) {
  product_impl *p = AB->impl;
  RMAOP_CHECK(rmaop_op_apply_adjoint(p->A, y, p->tmp));
  return rmaop_op_apply_adjoint_begin(p->B, p->tmp, x);
}
static rmaop_status product_adjoint_end(rmaop_op AB) {
  return rmaop_op_apply_adjoint_end(((product_impl *)AB->impl)->B);
}
static void product_destroy(rmaop_op AB) {
  product_impl *p = AB->impl;
  rmaop_op_destroy(&p->A);
  rmaop_op_destroy(&p->B);
  rmaop_vec_destroy(&p->tmp);
  free(p);
}
/* Fused product: the first factor takes the update of in (and |in|^2), the second gives |out|^2; in . out,
 * which no factor sees, is one more pass (rmaop_vec_mdot's partials). */
static rmaop_status product_apply_fused(rmaop_op AB, int adjoint, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f,
                                        double sums[RMAOP__NSUMS]) {
  product_impl *p = AB->impl;
  rmaop__fuse f1 = *f;
  f1.want = f->want & RMAOP__WANT_IN2;
  const rmaop__fuse f2 = {.want = f->want & RMAOP__WANT_OUT2};
  double s1[RMAOP__NSUMS], s2[RMAOP__NSUMS];
  RMAOP_CHECK(rmaop__op_apply_fused(adjoint ? p->A : p->B, adjoint, in, p->tmp, &f1, s1));
  RMAOP_CHECK(rmaop__op_apply_fused(adjoint ? p->B : p->A, adjoint, p->tmp, out, &f2, s2));
  if (f->want & RMAOP__WANT_INOUT) RMAOP_CHECK(local_sums(in, out, RMAOP__WANT_INOUT, sums));
  else sums[RMAOP__SUM_INOUT_RE] = sums[RMAOP__SUM_INOUT_IM] = 0.0;
  sums[RMAOP__SUM_OUT2] = s2[RMAOP__SUM_OUT2];
  sums[RMAOP__SUM_IN2] = s1[RMAOP__SUM_IN2];
  return RMAOP_OK;
}

static const rmaop__op_ops product_ops = {product_apply_begin, product_apply_end, product_adjoint_begin,
                                          product_adjoint_end, product_destroy};

rmaop_status rmaop_op_create_product(rmaop_op A, rmaop_op B, rmaop_op *out) {
  RMAOP_REQUIRE(NULL, A != NULL && B != NULL, RMAOP_ERR_ARG, "rmaop_op_create_product: operator %s is NULL", A ? "B" : "A");
  rmaop_ctx ctx = A->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_op_create_product: result (output) is NULL");
  RMAOP_REQUIRE(ctx, A->dtype == B->dtype && same_layout(A->model, B->data), RMAOP_ERR_ARG,
                "rmaop_op_create_product: \"%s\" (model %lld) cannot follow \"%s\" (data %lld), or dtypes differ",
                A->name, (long long)A->model->global_n, B->name, (long long)B->data->global_n);
  product_impl *p = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *p, "product", (void **)&p));
  rmaop_status st = rmaop_vec_create(A->model, A->dtype, &p->tmp);
  if (st == RMAOP_OK) st = rmaop__op_new(ctx, "product", A->dtype, B->model, A->data, &product_ops, p, out);
  if (st != RMAOP_OK) {
    rmaop_vec_destroy(&p->tmp);
    free(p);
    return st;
  }
  p->A = A;
  p->B = B;
  A->refs++;
  B->refs++;
  set_parts(*out, A, B);
  (*out)->apply_fused = product_apply_fused;
  return RMAOP_OK;
}

/* ---- scaled ---- */

typedef struct {
  rmaop_op A;
  double _Complex alpha;
  rmaop_vec out;
} scaled_impl;

static rmaop_status scaled_apply_begin(rmaop_op S, rmaop_vec x, rmaop_vec y) {
  scaled_impl *s = S->impl;
  s->out = y;
  return rmaop_op_apply_begin(s->A, x, y);
}
static rmaop_status scaled_apply_end(rmaop_op S) {
  scaled_impl *s = S->impl;
  RMAOP_CHECK(rmaop_op_apply_end(s->A));
  return rmaop_vec_scale(s->out, s->alpha);
}
static rmaop_status scaled_adjoint_begin(rmaop_op S, rmaop_vec y, rmaop_vec x) {
  scaled_impl *s = S->impl;
  s->out = x;
  return rmaop_op_apply_adjoint_begin(s->A, y, x);
}
static rmaop_status scaled_adjoint_end(rmaop_op S) {
  scaled_impl *s = S->impl;
  RMAOP_CHECK(rmaop_op_apply_adjoint_end(s->A));
  return rmaop_vec_scale(s->out, conj(s->alpha));
}
static void scaled_destroy(rmaop_op S) {
  scaled_impl *s = S->impl;
  rmaop_op_destroy(&s->A);
  free(s);
}
static const rmaop__op_ops scaled_ops = {scaled_apply_begin, scaled_apply_end, scaled_adjoint_begin,
                                         scaled_adjoint_end, scaled_destroy};

rmaop_status rmaop_op_create_scaled(rmaop_op A, double _Complex alpha, rmaop_op *out) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "rmaop_op_create_scaled: operator is NULL");
  RMAOP_REQUIRE(A->ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_op_create_scaled: result (output) is NULL");
  RMAOP_REQUIRE(A->ctx, A->dtype == RMAOP_C64 || A->dtype == RMAOP_C128 || cimag(alpha) == 0.0, RMAOP_ERR_ARG,
                "rmaop_op_create_scaled: alpha has an imaginary part but \"%s\" is %s", A->name,
                rmaop_dtype_name(A->dtype));
  scaled_impl *s = NULL;
  RMAOP_CHECK(rmaop__calloc(A->ctx, 1, sizeof *s, "scaled operator", (void **)&s));
  s->A = A;
  s->alpha = alpha;
  rmaop_status st = rmaop__op_new(A->ctx, "scaled", A->dtype, A->model, A->data, &scaled_ops, s, out);
  if (st != RMAOP_OK) {
    free(s);
    return st;
  }
  A->refs++;
  set_parts(*out, A, NULL);
  return RMAOP_OK;
}

/* ---- adjoint ---- */

static rmaop_status adj_apply_begin(rmaop_op H, rmaop_vec x, rmaop_vec y) {
  return rmaop_op_apply_adjoint_begin(H->impl, x, y);
}
static rmaop_status adj_apply_end(rmaop_op H) { return rmaop_op_apply_adjoint_end(H->impl); }
static rmaop_status adj_adjoint_begin(rmaop_op H, rmaop_vec y, rmaop_vec x) {
  return rmaop_op_apply_begin(H->impl, y, x);
}
static rmaop_status adj_adjoint_end(rmaop_op H) { return rmaop_op_apply_end(H->impl); }
static void adj_destroy(rmaop_op H) {
  rmaop_op A = H->impl;
  rmaop_op_destroy(&A);
}
static rmaop_status adj_apply_fused(rmaop_op H, int adjoint, rmaop_vec in, rmaop_vec out, const rmaop__fuse *f,
                                    double sums[RMAOP__NSUMS]) {
  return rmaop__op_apply_fused(H->impl, !adjoint, in, out, f, sums);
}
static const rmaop__op_ops adjoint_ops = {adj_apply_begin, adj_apply_end, adj_adjoint_begin, adj_adjoint_end,
                                          adj_destroy};

rmaop_status rmaop_op_create_adjoint(rmaop_op A, rmaop_op *out) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "rmaop_op_create_adjoint: operator is NULL");
  RMAOP_REQUIRE(A->ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_op_create_adjoint: result (output) is NULL");
  RMAOP_CHECK(rmaop__op_new(A->ctx, "adjoint", A->dtype, A->data, A->model, &adjoint_ops, A, out));
  A->refs++;
  set_parts(*out, A, NULL);
  (*out)->apply_fused = adj_apply_fused;
  return RMAOP_OK;
}

/* ---- dot test ---- */

/* Deterministic value in [-1, 1) from (seed, global index, part): the same on every rank and backend. */
static double hash_unit(unsigned seed, int64_t i, int part) {
  uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)seed * 0xBF58476D1CE4E5B9ull + (uint64_t)part;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

/* Fills v with deterministic values by global index: the same values in host and device memory (those
 * are made on the host and copied over; synchronizes). */
rmaop_status rmaop__vec_fill_random(rmaop_vec v, unsigned seed) {
  /* A stacked vector: part by part (each by its own global index, a seed per part), so a BROADCAST part
   * holds the same values on every rank. */
  if (v->layout->kind == RMAOP_LAYOUT_STACKED) {
    for (int i = 0; i < v->layout->nparts; ++i) {
      struct rmaop_vec_s part;
      rmaop__vec_part_view(v, i, &part);
      RMAOP_CHECK(rmaop__vec_fill_random(&part, seed + 104729u * (unsigned)i));
    }
    return RMAOP_OK;
  }
  const int64_t off = v->layout->offsets[v->ctx->rank];
  void *data = v->data;
  const size_t bytes = (size_t)v->local_n * rmaop_dtype_size(v->dtype);
  if (RMAOP__ON_DEVICE(v)) RMAOP_CHECK(rmaop__malloc(v->ctx, bytes + 1, "random values (host)", &data));
  for (int64_t i = 0; i < v->local_n; ++i) {
    double re = hash_unit(seed, off + i, 0), im = hash_unit(seed, off + i, 1);
    switch (v->dtype) {
    case RMAOP_F32: ((float *)data)[i] = (float)re; break;
    case RMAOP_F64: ((double *)data)[i] = re; break;
    case RMAOP_C64: ((float _Complex *)data)[i] = (float _Complex)CMPLX(re, im); break;
    case RMAOP_C128: ((double _Complex *)data)[i] = CMPLX(re, im); break;
    }
  }
  if (data != v->data) { /* device memory: the values go over from the host copy */
    rmaop_status st = rmaop__dev_copy(v->ctx, v->data, data, bytes);
    if (st == RMAOP_OK) st = rmaop__dev_sync(v->ctx);
    free(data);
    RMAOP_CHECK(st);
  }
  return RMAOP_OK;
}

rmaop_status rmaop_op_dottest(rmaop_op A, unsigned seed, double *rel_err) {
  RMAOP_REQUIRE(NULL, A != NULL, RMAOP_ERR_ARG, "rmaop_op_dottest: operator is NULL");
  RMAOP_REQUIRE(A->ctx, rel_err != NULL, RMAOP_ERR_ARG, "rmaop_op_dottest: rel_err (output) is NULL");
  rmaop_vec x = NULL, y = NULL, Ax = NULL, AHy = NULL;
  rmaop_status st = rmaop_vec_create(A->model, A->dtype, &x);
  if (st == RMAOP_OK) st = rmaop_vec_create(A->data, A->dtype, &y);
  if (st == RMAOP_OK) st = rmaop_vec_create(A->data, A->dtype, &Ax);
  if (st == RMAOP_OK) st = rmaop_vec_create(A->model, A->dtype, &AHy);
  if (st == RMAOP_OK) st = rmaop__vec_fill_random(x, seed);
  if (st == RMAOP_OK) st = rmaop__vec_fill_random(y, seed + 7919u);
  if (st == RMAOP_OK) st = rmaop_op_apply(A, x, Ax);
  if (st == RMAOP_OK) st = rmaop_op_apply_adjoint(A, y, AHy);
  double _Complex d1 = 0, d2 = 0;
  if (st == RMAOP_OK) st = rmaop_vec_dot(Ax, y, &d1);
  if (st == RMAOP_OK) st = rmaop_vec_dot(x, AHy, &d2);
  if (st == RMAOP_OK) {
    double scale = fmax(fmax(cabs(d1), cabs(d2)), 1e-300);
    *rel_err = cabs(d1 - d2) / scale;
  }
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&Ax);
  rmaop_vec_destroy(&AHy);
  return st;
}
