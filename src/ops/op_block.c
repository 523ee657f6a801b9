/* Block operators (PyLops-MPI MPIBlockDiag, MPIVStack, MPIHStack) over a per-rank local block, and the
 * user shell operator (local callbacks + a plan). */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "core/plan.h"
#include "core/dtype.h"
#include "op_impl.h"

#include <stdio.h>

#include "device/dev_ops.h"
#include "device/device.h"

#define CONJ(v) _Generic((v), float _Complex: conjf(v), double _Complex: conj(v), default: (v))

enum { BLOCKDIAG, VSTACK, HSTACK };

typedef struct {
  int kind;
  int64_t nr, nc;
  void *B, *Bt;        /* dense block row-major, and its transpose, so both products stream rows (axpy form) */
  rmaop_block cb;      /* callbacks when B is NULL */
  double *red;         /* reduction buffer (f32/c64 widen to double) */
  int64_t nred;        /* doubles reduced */
  rmaop_request req;
  rmaop_vec out;
  /* Device memory: the dense block as dBt (Bt on the device; B and Bt are not kept on the host), products
   * through a cuBLAS handle on the context's stream; vectors pass through host buffers for the reduction
   * and the callbacks. */
  int dev;
  void *dBt, *blas;
  void *hin, *hout;    /* callbacks: host copies of the input and output (max(nr, nc) elements each) */
  void *hred;          /* reduction of f32/c64: the floats between the device and `red` */
} block_impl;

/* out[0..m) = sum_r M[r, :] * in[r] for a row-major M of n rows, m columns (conjugated when asked). */
static void rows_axpy(rmaop_dtype dt, const void *Mv, int64_t n, int64_t m, const void *inv, void *outv, int conjugate) {
  RMAOP__FOR_DTYPE(dt, {
    const T *M = Mv, *in = inv;
    T *o = outv;
    for (int64_t j = 0; j < m; ++j) o[j] = 0;
    for (int64_t r = 0; r < n; ++r) {
      const T a = in[r];
      const T *row = M + r * m;
      if (conjugate) for (int64_t j = 0; j < m; ++j) o[j] += a * CONJ(row[j]);
      else for (int64_t j = 0; j < m; ++j) o[j] += a * row[j];
    }
  });
}

/* y = B x (adjoint = 0) or x = B^H y (adjoint = 1) on host arrays, or device arrays for a dense block. */
static rmaop_status block_local(rmaop_op A, const void *in, void *out, int adjoint) {
  block_impl *b = A->impl;
  if (b->dev && b->dBt) return rmaop__dev_gemv(A->ctx, b->blas, A->dtype, adjoint, b->dBt, b->nr, b->nc, in, out);
  if (!b->B) {
    rmaop_status st = adjoint ? b->cb.apply_adjoint(b->cb.user, in, out) : b->cb.apply(b->cb.user, in, out);
    RMAOP_REQUIRE(A->ctx, st == RMAOP_OK, st, "\"%s\": the user's %s callback returned %s", A->name,
                  adjoint ? "apply_adjoint" : "apply", rmaop_status_string(st));
    return RMAOP_OK;
  }
  if (adjoint) rows_axpy(A->dtype, b->B, b->nr, b->nc, in, out, 1);  /* x = sum_i conj(B[i,:]) y[i] */
  else rows_axpy(A->dtype, b->Bt, b->nc, b->nr, in, out, 0);         /* y = sum_j B^T[j,:] x[j] */
  return RMAOP_OK;
}

/* The callbacks work on host arrays (rmaop_block): device vectors pass through host copies. */
static rmaop_status block_local_staged(rmaop_op A, const void *in, void *out, int adjoint) {
  block_impl *b = A->impl;
  const size_t es = rmaop_dtype_size(A->dtype);
  const int64_t nin = adjoint ? b->nr : b->nc, nout = adjoint ? b->nc : b->nr;
  RMAOP_CHECK(rmaop__dev_copy(A->ctx, b->hin, in, (size_t)nin * es));
  RMAOP_CHECK(rmaop__dev_sync(A->ctx));
  RMAOP_CHECK(block_local(A, b->hin, b->hout, adjoint));
  return rmaop__dev_copy(A->ctx, out, b->hout, (size_t)nout * es);
}

/* The local product on the operator's memory. */
static rmaop_status block_local_any(rmaop_op A, const void *in, void *out, int adjoint) {
  block_impl *b = A->impl;
  if (b->dev && !b->dBt) return block_local_staged(A, in, out, adjoint);
  return block_local(A, in, out, adjoint);
}

static int widened(rmaop_dtype dt) { return dt == RMAOP_F32 || dt == RMAOP_C64; }

/* Starts summing `v` over the ranks (vstack adjoint, hstack forward). */
static rmaop_status reduce_begin(rmaop_op A, rmaop_vec v) {
  block_impl *b = A->impl;
  b->out = v;
  const void *src = v->data;
  if (b->dev) { /* the reduction runs on host doubles: bring the device vector over */
    src = widened(A->dtype) ? b->hred : (void *)b->red;
    RMAOP_CHECK(rmaop__dev_copy(A->ctx, (void *)src, v->data, (size_t)b->nred * (widened(A->dtype) ? sizeof(float) : sizeof(double))));
    RMAOP_CHECK(rmaop__dev_sync(A->ctx));
  }
  double *buf = widened(A->dtype) || b->dev ? b->red : v->data;
  if (widened(A->dtype)) /* f32 and c64: nred floats (complex as pairs) widen to doubles */
    for (int64_t i = 0; i < b->nred; ++i) buf[i] = ((const float *)src)[i];
  char label[80];
  snprintf(label, sizeof label, "%s%s", A->name, b->kind == VSTACK ? "^H" : "");
  return rmaop_allreduce_begin(A->ctx, buf, buf, b->nred, RMAOP_SUM, label, &b->req);
}

static rmaop_status reduce_end(rmaop_op A) {
  block_impl *b = A->impl;
  RMAOP_CHECK(rmaop_request_wait(&b->req));
  void *dst = b->out->data;
  if (b->dev) dst = widened(A->dtype) ? b->hred : (void *)b->red;
  if (widened(A->dtype))
    for (int64_t i = 0; i < b->nred; ++i) ((float *)dst)[i] = (float)b->red[i];
  /* From pageable host memory: the copy has read the buffer when it returns, so it may be reused. */
  if (b->dev) RMAOP_CHECK(rmaop__dev_copy(A->ctx, b->out->data, dst, (size_t)b->nred * (widened(A->dtype) ? sizeof(float) : sizeof(double))));
  return RMAOP_OK;
}

static rmaop_status block_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  block_impl *b = A->impl;
  RMAOP_CHECK(block_local_any(A, x->data, y->data, 0));
  return b->kind == HSTACK ? reduce_begin(A, y) : RMAOP_OK;
}
static rmaop_status block_apply_end(rmaop_op A) {
  return ((block_impl *)A->impl)->kind == HSTACK ? reduce_end(A) : RMAOP_OK;
}
static rmaop_status block_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  block_impl *b = A->impl;
  RMAOP_CHECK(block_local_any(A, y->data, x->data, 1));
  return b->kind == VSTACK ? reduce_begin(A, x) : RMAOP_OK;
}
static rmaop_status block_adjoint_end(rmaop_op A) {
  return ((block_impl *)A->impl)->kind == VSTACK ? reduce_end(A) : RMAOP_OK;
}
static void block_free(block_impl *b) {
  rmaop__dev_blas_destroy(b->blas);
  rmaop__dev_free(b->dBt);
  free(b->B);
  free(b->Bt);
  free(b->red);
  free(b->hin);
  free(b->hout);
  free(b->hred);
  free(b);
}
static void block_destroy(rmaop_op A) { block_free(A->impl); }
static const rmaop__op_ops block_ops = {block_apply_begin, block_apply_end, block_adjoint_begin, block_adjoint_end,
                                        block_destroy};

static rmaop_status check_block(rmaop_ctx ctx, const char *fn, rmaop_dtype dtype, const rmaop_block *blk, void *out) {
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: operator (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, blk != NULL, RMAOP_ERR_ARG, "%s: block is NULL", fn);
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn, (int)dtype);
  RMAOP_REQUIRE(ctx, blk->nrows >= 0 && blk->ncols >= 0, RMAOP_ERR_ARG, "%s: block is %lld x %lld", fn,
                (long long)blk->nrows, (long long)blk->ncols);
  RMAOP_REQUIRE(ctx, blk->dense != NULL || (blk->apply != NULL && blk->apply_adjoint != NULL), RMAOP_ERR_ARG,
                "%s: the block has neither a dense matrix nor both callbacks", fn);
  RMAOP_REQUIRE(ctx, !blk->dense || (uint64_t)blk->nrows * (uint64_t)blk->ncols <= SIZE_MAX / 16 / 2, RMAOP_ERR_ARG,
                "%s: a %lld x %lld dense block is too large", fn, (long long)blk->nrows, (long long)blk->ncols);
  return RMAOP_OK;
}

static rmaop_status copy_dense(rmaop_ctx ctx, rmaop_dtype dt, const rmaop_block *blk, block_impl *b) {
  const size_t es = rmaop_dtype_size(dt), n = (size_t)(blk->nrows * blk->ncols);
  RMAOP_CHECK(rmaop__malloc(ctx, n * es, "dense block", &b->B));
  RMAOP_CHECK(rmaop__malloc(ctx, n * es, "dense block (transpose)", &b->Bt));
  memcpy(b->B, blk->dense, n * es);
  for (int64_t i = 0; i < blk->nrows; ++i)
    for (int64_t j = 0; j < blk->ncols; ++j)
      memcpy((char *)b->Bt + (size_t)(j * blk->nrows + i) * es, (const char *)blk->dense + (size_t)(i * blk->ncols + j) * es, es);
  return RMAOP_OK;
}

/* Device context: the dense block's transpose to device memory and a cuBLAS handle, or host buffers for
 * the callbacks' arguments. */
static rmaop_status block_to_device(rmaop_ctx ctx, rmaop_dtype dt, const rmaop_block *blk, block_impl *b) {
  const size_t es = rmaop_dtype_size(dt);
  if (!blk->dense) {
    const size_t n = (size_t)(b->nr > b->nc ? b->nr : b->nc) + 1;
    RMAOP_CHECK(rmaop__malloc(ctx, n * es, "block input (host copy)", &b->hin));
    return rmaop__malloc(ctx, n * es, "block output (host copy)", &b->hout);
  }
  RMAOP_REQUIRE(ctx, b->nr <= INT_MAX && b->nc <= INT_MAX, RMAOP_ERR_ARG,
                "a %lld x %lld dense block in device memory needs both sizes to fit an int (cuBLAS)", (long long)b->nr,
                (long long)b->nc);
  const size_t bytes = (size_t)(b->nr * b->nc) * es;
  RMAOP_CHECK(rmaop__dev_malloc(ctx, bytes + es, "dense block (device)", &b->dBt)); /* never NULL: marks "dense" */
  RMAOP_CHECK(rmaop__dev_copy(ctx, b->dBt, b->Bt, bytes));
  RMAOP_CHECK(rmaop__dev_sync(ctx)); /* before the host copies go */
  free(b->B);
  free(b->Bt);
  b->B = b->Bt = NULL;
  return rmaop__dev_blas_create(ctx, &b->blas);
}

static rmaop_status create_block(rmaop_ctx ctx, int kind, rmaop_dtype dtype, const rmaop_block *blk, rmaop_op *out) {
  static const char *const fns[] = {"rmaop_op_create_blockdiag", "rmaop_op_create_vstack", "rmaop_op_create_hstack"};
  static const char *const names[] = {"blockdiag", "vstack", "hstack"};
  const char *fn = fns[kind];
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "%s: ctx is NULL", fn);
  RMAOP_CHECK(rmaop__agree(ctx, check_block(ctx, fn, dtype, blk, out), fn));
  rmaop_layout model = NULL, data = NULL;
  rmaop_status st = kind == VSTACK ? rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, blk->ncols, &model)
                                   : rmaop_layout_create_local(ctx, blk->ncols, &model);
  if (st == RMAOP_OK)
    st = kind == HSTACK ? rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, blk->nrows, &data)
                        : rmaop_layout_create_local(ctx, blk->nrows, &data);
  block_impl *b = NULL;
  if (st == RMAOP_OK) st = rmaop__calloc(ctx, 1, sizeof *b, "block operator", (void **)&b);
  if (st == RMAOP_OK) {
    b->kind = kind;
    b->nr = blk->nrows;
    b->nc = blk->ncols;
    b->cb = *blk;
    int64_t nvec = kind == VSTACK ? blk->ncols : kind == HSTACK ? blk->nrows : 0;
    b->nred = nvec * (dtype == RMAOP_C64 || dtype == RMAOP_C128 ? 2 : 1);
    if (blk->dense) st = copy_dense(ctx, dtype, blk, b);
    b->dev = RMAOP__ON_DEVICE(ctx);
    if (st == RMAOP_OK && b->dev) st = block_to_device(ctx, dtype, blk, b);
    if (st == RMAOP_OK && b->dev && widened(dtype) && b->nred)
      st = rmaop__malloc(ctx, (size_t)b->nred * sizeof(float), "reduction buffer (floats)", &b->hred);
    if (st == RMAOP_OK && (widened(dtype) || b->dev) && b->nred)
      st = rmaop__malloc(ctx, (size_t)b->nred * sizeof(double), "reduction buffer", (void **)&b->red);
  }
  st = rmaop__op_new_agreed(st, ctx, names[kind], dtype, model, data, &block_ops, b, out);
  if (st != RMAOP_OK && b) block_free(b);
  rmaop_layout_destroy(&model);
  rmaop_layout_destroy(&data);
  return st;
}

rmaop_status rmaop_op_create_blockdiag(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A) {
  return create_block(ctx, BLOCKDIAG, dtype, block, A);
}
rmaop_status rmaop_op_create_vstack(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A) {
  return create_block(ctx, VSTACK, dtype, block, A);
}
rmaop_status rmaop_op_create_hstack(rmaop_ctx ctx, rmaop_dtype dtype, const rmaop_block *block, rmaop_op *A) {
  return create_block(ctx, HSTACK, dtype, block, A);
}

/* ---- shell ---- */

typedef struct {
  rmaop_plan plan, rev; /* plan borrowed, rev owned */
  rmaop_shell_ops cb;
  void *ghost;          /* in the context's memory */
  size_t ghost_bytes;
  rmaop_vec in, out;
  int dev;              /* device memory: callbacks get device pointers, called with the stream drained */
} shell_impl;

/* Before a callback on device memory: the stream's work on its arguments (the halo's unpack, the zeroed
 * ghost, earlier kernels on x and y) is done. The callback finishes its own device work before it returns. */
static rmaop_status shell_ready(rmaop_op A) {
  if (((shell_impl *)A->impl)->dev) return rmaop__dev_sync(A->ctx);
  return RMAOP_OK;
}

static rmaop_status shell_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  shell_impl *s = A->impl;
  s->in = x;
  s->out = y;
  return rmaop_plan_begin(s->plan, x->data, s->ghost, RMAOP_INSERT);
}
static rmaop_status shell_apply_end(rmaop_op A) {
  shell_impl *s = A->impl;
  RMAOP_CHECK(rmaop_plan_end(s->plan));
  RMAOP_CHECK(shell_ready(A));
  rmaop_status st = s->cb.apply(s->cb.user, s->in->data, s->ghost, s->out->data);
  RMAOP_REQUIRE(A->ctx, st == RMAOP_OK, st, "shell operator: the user's apply callback returned %s", rmaop_status_string(st));
  return RMAOP_OK;
}
static rmaop_status shell_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  shell_impl *s = A->impl;
  if (s->dev) RMAOP_CHECK(rmaop__dev_set(A->ctx, A->dtype, s->ghost, s->plan->dst_len, 0.0, 0.0));
  else memset(s->ghost, 0, s->ghost_bytes);
  RMAOP_CHECK(shell_ready(A));
  rmaop_status st = s->cb.apply_adjoint(s->cb.user, y->data, x->data, s->ghost);
  RMAOP_REQUIRE(A->ctx, st == RMAOP_OK, st, "shell operator: the user's apply_adjoint callback returned %s",
                rmaop_status_string(st));
  return rmaop_plan_begin(s->rev, s->ghost, x->data, RMAOP_ADD);
}
static rmaop_status shell_adjoint_end(rmaop_op A) { return rmaop_plan_end(((shell_impl *)A->impl)->rev); }
static void shell_free_ghost(shell_impl *s) {
  if (s->dev) {
    rmaop__dev_free(s->ghost);
    s->ghost = NULL;
  }
  free(s->ghost);
}
static void shell_destroy(rmaop_op A) {
  shell_impl *s = A->impl;
  rmaop_plan_destroy(&s->rev);
  shell_free_ghost(s);
  free(s);
}
static const rmaop__op_ops shell_ops = {shell_apply_begin, shell_apply_end, shell_adjoint_begin, shell_adjoint_end,
                                        shell_destroy};

rmaop_status rmaop_op_create_shell(rmaop_layout model, rmaop_layout data, rmaop_dtype dtype, rmaop_plan plan,
                                   const rmaop_shell_ops *ops, rmaop_op *A) {
  RMAOP_REQUIRE(NULL, model != NULL && data != NULL && plan != NULL, RMAOP_ERR_ARG,
                "rmaop_op_create_shell: model, data and plan must not be NULL");
  rmaop_ctx ctx = model->ctx;
  rmaop_status st = RMAOP_OK;
  if (!A || !ops || !ops->apply || !ops->apply_adjoint)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_op_create_shell: the output or a callback is NULL");
  else if (plan->dtype != dtype || plan->src_len != model->sizes[ctx->rank])
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                     "rmaop_op_create_shell: the plan moves %s from %lld elements, the model is %s with %lld here",
                     rmaop_dtype_name(plan->dtype), (long long)plan->src_len, rmaop_dtype_name(dtype),
                     (long long)model->sizes[ctx->rank]);
  RMAOP_CHECK(rmaop__agree(ctx, st, "rmaop_op_create_shell"));
  shell_impl *s = NULL;
  RMAOP_CHECK(rmaop__agree(ctx, rmaop__calloc(ctx, 1, sizeof *s, "shell operator", (void **)&s), "rmaop_op_create_shell"));
  s->plan = plan;
  s->cb = *ops;
  s->ghost_bytes = (size_t)plan->dst_len * plan->esize;
  s->dev = RMAOP__ON_DEVICE(ctx);
  if (s->dev) st = rmaop__dev_malloc(ctx, s->ghost_bytes + plan->esize, "shell ghost buffer", &s->ghost);
  else st = rmaop__calloc(ctx, s->ghost_bytes + 1, 1, "shell ghost buffer", &s->ghost);
  st = rmaop__agree(ctx, st, "rmaop_op_create_shell"); /* plan_reverse is collective: all or none go on */
  if (st == RMAOP_OK) st = rmaop_plan_reverse(plan, NULL, &s->rev);
  st = rmaop__op_new_agreed(st, ctx, "shell", dtype, model, data, &shell_ops, s, A);
  if (st != RMAOP_OK) {
    rmaop_plan_destroy(&s->rev);
    shell_free_ghost(s);
    free(s);
  }
  return st;
}
