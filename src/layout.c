/* Layouts: how a global index range splits over the ranks. */
#include "rmaop_impl.h"

static rmaop_status layout_alloc(rmaop_ctx ctx, rmaop_layout_kind kind, rmaop_layout *out) {
  rmaop_layout l = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *l, "layout", (void **)&l));
  if (rmaop__calloc(ctx, (size_t)ctx->size, sizeof(int64_t), "layout sizes", (void **)&l->sizes) != RMAOP_OK ||
      rmaop__calloc(ctx, (size_t)ctx->size, sizeof(int64_t), "layout offsets", (void **)&l->offsets) != RMAOP_OK) {
    free(l->sizes);
    free(l);
    return RMAOP_ERR_NOMEM;
  }
  l->ctx = ctx;
  l->refs = 1;
  l->kind = kind;
  *out = l;
  return RMAOP_OK;
}

rmaop_status rmaop_layout_create(rmaop_ctx ctx, rmaop_layout_kind kind, int64_t global_n, rmaop_layout *out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_layout_create: ctx is NULL");
  rmaop_status st = RMAOP_OK;
  if (out == NULL)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create: layout (output) is NULL");
  else if (kind != RMAOP_LAYOUT_SCATTER && kind != RMAOP_LAYOUT_BROADCAST)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create: kind %d is neither SCATTER nor BROADCAST", (int)kind);
  else if (global_n < 0)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create: global size %lld is negative", (long long)global_n);

  /* One reduction checks that every rank passed the same kind and size and carries the failures. */
  int64_t v[5] = {st != RMAOP_OK, global_n, -global_n, (int64_t)kind, -(int64_t)kind}, r[5];
  RMAOP_CHECK_MPI(ctx, MPI_Allreduce(v, r, 5, MPI_INT64_T, MPI_MAX, ctx->comm));
  if (st != RMAOP_OK) return st;
  if (r[0]) return RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "rmaop_layout_create failed on another rank; its message says why");
  if (r[1] != -r[2])
    return RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                       "rmaop_layout_create: ranks passed different global sizes (from %lld to %lld); it is collective",
                       (long long)-r[2], (long long)r[1]);
  if (r[3] != -r[4])
    return RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create: ranks passed different layout kinds");

  rmaop_layout l = NULL;
  RMAOP_CHECK(layout_alloc(ctx, kind, &l));
  l->global_n = global_n;
  int64_t base = global_n / ctx->size, extra = global_n % ctx->size, off = 0;
  for (int p = 0; p < ctx->size; ++p) {
    l->sizes[p] = kind == RMAOP_LAYOUT_BROADCAST ? global_n : base + (p < extra);
    l->offsets[p] = kind == RMAOP_LAYOUT_BROADCAST ? 0 : off;
    off += l->sizes[p];
  }
  *out = l;
  return RMAOP_OK;
}

rmaop_status rmaop_layout_create_local(rmaop_ctx ctx, int64_t local_n, rmaop_layout *out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_layout_create_local: ctx is NULL");
  rmaop_status st = RMAOP_OK;
  if (out == NULL) st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create_local: layout (output) is NULL");

  /* Every rank sees every size, so every rank can name the bad one itself. */
  int64_t mine[2] = {st != RMAOP_OK, local_n}, *all = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * (size_t)ctx->size, sizeof(int64_t), "size exchange", (void **)&all));
  int rc = MPI_Allgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, ctx->comm);
  if (rc != MPI_SUCCESS) {
    free(all);
    return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Allgather(local sizes)");
  }
  int64_t total = 0;
  for (int p = 0; p < ctx->size && st == RMAOP_OK; ++p) {
    int64_t n = all[2 * p + 1];
    if (all[2 * p])
      st = RMAOP_ERROR(ctx, RMAOP_ERR_REMOTE, "rmaop_layout_create_local failed on rank %d; its message says why", p);
    else if (n < 0)
      st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create_local: rank %d's local size %lld is negative", p,
                       (long long)n);
    else if (__builtin_add_overflow(total, n, &total))
      st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG,
                       "rmaop_layout_create_local: the sum of local sizes overflows int64 at rank %d (size %lld)", p,
                       (long long)n);
  }
  rmaop_layout l = NULL;
  if (st == RMAOP_OK) st = layout_alloc(ctx, RMAOP_LAYOUT_SCATTER, &l);
  if (st == RMAOP_OK) {
    int64_t off = 0;
    for (int p = 0; p < ctx->size; ++p) {
      l->sizes[p] = all[2 * p + 1];
      l->offsets[p] = off;
      off += l->sizes[p];
    }
    l->global_n = off;
    *out = l;
  }
  free(all);
  return st;
}

void rmaop_layout_destroy(rmaop_layout *pl) {
  if (!pl || !*pl) return;
  rmaop_layout l = *pl;
  if (--l->refs == 0) {
    free(l->sizes);
    free(l->offsets);
    free(l);
  }
  *pl = NULL;
}

rmaop_status rmaop_layout_get_info(rmaop_layout l, rmaop_layout_info *info) {
  RMAOP_REQUIRE(NULL, l != NULL, RMAOP_ERR_ARG, "rmaop_layout_get_info: layout is NULL");
  RMAOP_REQUIRE(l->ctx, info != NULL, RMAOP_ERR_ARG, "rmaop_layout_get_info: info (output) is NULL");
  info->kind = l->kind;
  info->global_n = l->global_n;
  info->rank = l->ctx->rank;
  info->size = l->ctx->size;
  info->local_n = l->sizes[info->rank];
  info->offset = l->offsets[info->rank];
  return RMAOP_OK;
}

rmaop_status rmaop_layout_rank_range(rmaop_layout l, int rank, int64_t *local_n, int64_t *offset) {
  RMAOP_REQUIRE(NULL, l != NULL, RMAOP_ERR_ARG, "rmaop_layout_rank_range: layout is NULL");
  RMAOP_REQUIRE(l->ctx, rank >= 0 && rank < l->ctx->size, RMAOP_ERR_ARG,
                "rmaop_layout_rank_range: rank %d is outside [0, %d)", rank, l->ctx->size);
  if (local_n) *local_n = l->sizes[rank];
  if (offset) *offset = l->offsets[rank];
  return RMAOP_OK;
}
