/* Fredholm integral of the first kind (PyLops Fredholm1), distributed like PyLops-MPI MPIFredholm1: the
 * kernel G (nsl, nx, ny) is split over the ranks by slices; the model m (nsl, ny, nz) and the data d
 * (nsl, nx, nz) are BROADCAST. Each rank computes d[s] = G[s] m[s] for its slices, and one plan
 * allgathers them into every rank's d (PyLops-MPI: y._allgather). The adjoint m[s] = G[s]^H d[s] is the
 * same with a second plan: both directions read a replicated input and gather a replicated output, so
 * the adjoint is not the reversed forward plan (the transpose of "read my slices of a broadcast vector"
 * needs no communication; the gather that follows is what keeps the output broadcast). */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "core/plan.h"
#include "op_impl.h"

#include <stdio.h>

#include "device/dev_ops.h"
#include "device/device.h"
#include "device/matmul_dev.h"

typedef struct {
  rmaop_ctx ctx;
  rmaop_dtype dtype;
  size_t es;
  int64_t nsl, off, nx, ny, nz; /* nsl: my slices, off: the first one's global index */
  int dev;
  void *blas;
  void *G;                      /* nsl x nx x ny, context memory */
  void *td, *tm;                /* my slices of d (nsl x nx x nz) and of m (nsl x ny x nz) */
  rmaop_plan gather_d, gather_m;
} fred_impl;

static rmaop_status fred_gemm(fred_impl *f, int adjoint, const void *in, void *out) {
  const int64_t rows = adjoint ? f->ny : f->nx, inner = adjoint ? f->nx : f->ny;
  const size_t es = f->es;
  for (int64_t s = 0; s < f->nsl; ++s) {
    const void *G = (const char *)f->G + (size_t)(s * f->nx * f->ny) * es;
    const void *b = (const char *)in + (size_t)((f->off + s) * inner * f->nz) * es;
    void *c = (char *)out + (size_t)(s * rows * f->nz) * es;
    if (f->dev) {
      RMAOP_CHECK(rmaop__dev_gemm(f->ctx, f->blas, f->dtype, adjoint, rows, f->nz, inner, G, f->ny, b, f->nz, c, f->nz, 0));
      continue;
    }
    rmaop__gemm_host(f->dtype, adjoint, rows, f->nz, inner, G, f->ny, b, f->nz, c, f->nz, 0);
  }
  return RMAOP_OK;
}

static rmaop_status fred_apply_begin(rmaop_op A, rmaop_vec x, rmaop_vec y) {
  fred_impl *f = A->impl;
  RMAOP_CHECK(fred_gemm(f, 0, x->data, f->td));
  return rmaop_plan_begin(f->gather_d, f->td, y->data, RMAOP_INSERT);
}
static rmaop_status fred_apply_end(rmaop_op A) { return rmaop_plan_end(((fred_impl *)A->impl)->gather_d); }
static rmaop_status fred_adjoint_begin(rmaop_op A, rmaop_vec y, rmaop_vec x) {
  fred_impl *f = A->impl;
  RMAOP_CHECK(fred_gemm(f, 1, y->data, f->tm));
  return rmaop_plan_begin(f->gather_m, f->tm, x->data, RMAOP_INSERT);
}
static rmaop_status fred_adjoint_end(rmaop_op A) { return rmaop_plan_end(((fred_impl *)A->impl)->gather_m); }

static void fred_free(fred_impl *f) {
  if (!f) return;
  rmaop_plan_destroy(&f->gather_d);
  rmaop_plan_destroy(&f->gather_m);
  rmaop__mem_free(f->ctx, &f->G);
  rmaop__mem_free(f->ctx, &f->td);
  rmaop__mem_free(f->ctx, &f->tm);
  rmaop__dev_blas_destroy(f->blas);
  free(f);
}
static void fred_destroy(rmaop_op A) { fred_free(A->impl); }

static const rmaop__op_ops fred_ops = {fred_apply_begin, fred_apply_end, fred_adjoint_begin, fred_adjoint_end,
                                       fred_destroy};

/* n elements in the operator's memory (never NULL: one spare element). */
static rmaop_status fred_alloc(fred_impl *f, int64_t n, const char *what, void **out) {
  return rmaop__mem_calloc(f->ctx, (size_t)n + 1, f->es, what, out);
}

/* My slices (w elements each) go to every rank, myself included, at their global place. */
static rmaop_status fred_plan(fred_impl *f, int64_t nsl_total, int64_t w, const char *label, rmaop_plan *plan) {
  rmaop_ctx ctx = f->ctx;
  rmaop_transfer *t = NULL;
  rmaop_status made = rmaop__agree(ctx, rmaop__calloc(ctx, (size_t)ctx->size, sizeof *t, "fredholm transfers", (void **)&t),
                                   "rmaop_op_create_fredholm1");
  if (made != RMAOP_OK) {
    free(t); /* allocated here, failed on another rank */
    return made;
  }
  int nt = 0;
  for (int q = 0; q < ctx->size && f->nsl > 0; ++q) t[nt++] = (rmaop_transfer){q, 0, f->off * w, f->nsl * w};
  rmaop_plan_spec spec = {.dtype = f->dtype, .src_len = f->nsl * w, .dst_len = nsl_total * w, .nsends = nt,
                          .sends = t, .nrecvs = -1, .label = label};
  rmaop_status st = rmaop_plan_create(ctx, &spec, plan);
  free(t);
  return st;
}

static rmaop_status fred_check(rmaop_ctx ctx, rmaop_dtype dtype, int64_t nsl, int64_t nx, int64_t ny, int64_t nz,
                               const void *G, rmaop_op *out) {
  const char *fn = "rmaop_op_create_fredholm1";
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: operator (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn, (int)dtype);
  RMAOP_REQUIRE(ctx, nsl >= 0 && nx >= 0 && ny >= 0 && nz >= 0, RMAOP_ERR_ARG,
                "%s: sizes nsl_local = %lld, nx = %lld, ny = %lld, nz = %lld must not be negative", fn, (long long)nsl,
                (long long)nx, (long long)ny, (long long)nz);
  RMAOP_REQUIRE(ctx, rmaop__fits(nx, ny) && rmaop__fits(ny, nz) && rmaop__fits(nx, nz), RMAOP_ERR_ARG,
                "%s: a slice of %lld x %lld, %lld x %lld or %lld x %lld elements overflows 64-bit byte counts", fn,
                (long long)nx, (long long)ny, (long long)ny, (long long)nz, (long long)nx, (long long)nz);
  RMAOP_REQUIRE(ctx, G != NULL || nsl == 0 || nx == 0 || ny == 0, RMAOP_ERR_ARG, "%s: G is NULL with %lld slices of %lld x %lld",
                fn, (long long)nsl, (long long)nx, (long long)ny);
  return RMAOP_OK;
}

/* nx, ny, nz and the dtype must agree: the slices are pieces of one G. Every rank calls (one allreduce) and
 * gets the same verdict. */
static rmaop_status fred_same(rmaop_ctx ctx, rmaop_dtype dtype, int64_t nx, int64_t ny, int64_t nz) {
  static const char *const names[] = {"nx", "ny", "nz", "dtype"};
  const int64_t v[4] = {nx, ny, nz, dtype};
  return rmaop__same_everywhere(ctx, v, 4, names, "rmaop_op_create_fredholm1");
}

rmaop_status rmaop_op_create_fredholm1(rmaop_ctx ctx, rmaop_dtype dtype, int64_t nsl_local, int64_t nx, int64_t ny,
                                       int64_t nz, const void *G, rmaop_op *out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_op_create_fredholm1: ctx is NULL");
  RMAOP_CHECK(rmaop__agree(ctx, fred_check(ctx, dtype, nsl_local, nx, ny, nz, G, out), "rmaop_op_create_fredholm1"));
  RMAOP_CHECK(fred_same(ctx, dtype, nx, ny, nz)); /* the same verdict on every rank already */
  rmaop_layout slices = NULL, model = NULL, data = NULL;
  fred_impl *f = NULL;
  RMAOP_CHECK(rmaop_layout_create_local(ctx, nsl_local, &slices));
  const int64_t nsl = slices->global_n; /* every rank's count, from the layout's exchange of sizes */
  /* Every rank holds the whole model and data (BROADCAST): all slices' worth must fit. The same nsl
   * everywhere: every rank takes the same branch. */
  rmaop_status st = RMAOP_OK;
  if (!rmaop__fits(nsl, nx * ny) || !rmaop__fits(nsl, ny * nz) || !rmaop__fits(nsl, nx * nz)) {
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                     "rmaop_op_create_fredholm1: %lld slices of %lld x %lld x %lld: the model or data overflows 64-bit "
                     "byte counts",
                     (long long)nsl, (long long)nx, (long long)ny, (long long)nz);
    goto out_slices;
  }
  st = rmaop__calloc(ctx, 1, sizeof *f, "fredholm1 operator", (void **)&f);
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, "rmaop_op_create_fredholm1"), st, out_free); /* f may exist here */
  *f = (fred_impl){.ctx = ctx, .dtype = dtype, .es = rmaop_dtype_size(dtype), .nsl = nsl_local,
                   .off = slices->offsets[ctx->rank], .nx = nx, .ny = ny, .nz = nz};
  f->dev = RMAOP__ON_DEVICE(ctx);
  if (f->dev) st = rmaop__dev_blas_create(ctx, &f->blas);
  if (st == RMAOP_OK) st = fred_alloc(f, nsl_local * nx * ny, "fredholm1 G", &f->G);
  if (st == RMAOP_OK) st = fred_alloc(f, nsl_local * nx * nz, "fredholm1 data slices", &f->td);
  if (st == RMAOP_OK) st = fred_alloc(f, nsl_local * ny * nz, "fredholm1 model slices", &f->tm);
  if (st == RMAOP_OK) st = rmaop__mem_copy(ctx, f->G, G, (size_t)(nsl_local * nx * ny) * f->es);
  if (st == RMAOP_OK && f->dev) st = rmaop__dev_sync(ctx); /* the host G may go once we return */
  RMAOP_CHECK_GOTO(rmaop__agree(ctx, st, "rmaop_op_create_fredholm1"), st, out_free);
  RMAOP_CHECK_GOTO(fred_plan(f, nsl, nx * nz, "fredholm1", &f->gather_d), st, out_free);
  RMAOP_CHECK_GOTO(fred_plan(f, nsl, ny * nz, "fredholm1^H", &f->gather_m), st, out_free);
  st = rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, nsl * ny * nz, &model);
  if (st == RMAOP_OK) st = rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, nsl * nx * nz, &data);
  st = rmaop__op_new_agreed(st, ctx, "fredholm1", dtype, model, data, &fred_ops, f, out);
  rmaop_layout_destroy(&model);
  rmaop_layout_destroy(&data);
  if (st == RMAOP_OK) goto out_slices;
out_free:
  fred_free(f);
out_slices:
  rmaop_layout_destroy(&slices);
  return st;
}
