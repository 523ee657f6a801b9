/* Layouts: how a global index range splits over the ranks. */
#include "error.h"
#include "ctx.h"
#include "vec.h"

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
  RMAOP_REQUIRE_USABLE(ctx, "rmaop_layout_create");
  rmaop_status st = RMAOP_OK;
  if (out == NULL)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create: layout (output) is NULL");
  else if (kind != RMAOP_LAYOUT_SCATTER && kind != RMAOP_LAYOUT_BROADCAST)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create: kind %d is neither SCATTER nor BROADCAST", (int)kind);
  else if (global_n < 0)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create: global size %lld is negative", (long long)global_n);

  /* One reduction checks that every rank passed the same kind and size and carries the failures. */
  int64_t v[5] = {st != RMAOP_OK, global_n, -global_n, (int64_t)kind, -(int64_t)kind}, r[5];
  RMAOP_CHECK(rmaop__allreduce_bounded(ctx, v, r, 5, MPI_INT64_T, MPI_MAX, "rmaop_layout_create"));
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
  for (int p = 0; p < ctx->size; ++p) {
    if (kind == RMAOP_LAYOUT_BROADCAST)
      l->sizes[p] = global_n, l->offsets[p] = 0;
    else
      rmaop__split(global_n, ctx->size, p, &l->offsets[p], &l->sizes[p]);
  }
  *out = l;
  return RMAOP_OK;
}

rmaop_status rmaop_layout_create_local(rmaop_ctx ctx, int64_t local_n, rmaop_layout *out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_layout_create_local: ctx is NULL");
  RMAOP_REQUIRE_USABLE(ctx, "rmaop_layout_create_local");
  rmaop_status st = RMAOP_OK;
  if (out == NULL) st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_layout_create_local: layout (output) is NULL");

  /* Every rank sees every size, so every rank can name the bad one itself. */
  /* all[0..1] is this rank's entry, all[2..] every rank's: one heap block, leaked if the wait times out. */
  int64_t *buf = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * (size_t)ctx->size + 2, sizeof(int64_t), "size exchange", (void **)&buf));
  int64_t *mine = buf, *all = buf + 2;
  mine[0] = st != RMAOP_OK, mine[1] = local_n;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_Iallgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, ctx->comm, &req);
  if (rc != MPI_SUCCESS) {
    free(buf);
    return rmaop__mpi_error(ctx, rc, __FILE__, __LINE__, "MPI_Iallgather(local sizes)");
  }
  RMAOP_CHECK(rmaop__wait_bounded(ctx, &req, "rmaop_layout_create_local"));
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
  free(buf);
  return st;
}

void rmaop_layout_destroy(rmaop_layout *pl) {
  if (!pl || !*pl) return;
  rmaop_layout l = *pl;
  if (--l->refs == 0) {
    for (int i = 0; i < l->nparts; ++i) rmaop_layout_destroy(&l->parts[i]);
    free(l->parts);
    free(l->part_off);
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

/* ---- stacked layouts (PyLops-MPI StackedDistributedArray) ---- */

static rmaop_status check_parts(int nparts, const rmaop_layout parts[], rmaop_layout *out) {
  static const char fn[] = "rmaop_layout_create_stacked";
  RMAOP_REQUIRE(NULL, nparts >= 1 && parts != NULL, RMAOP_ERR_ARG, "%s: need nparts >= 1 layouts (nparts = %d%s)", fn,
                nparts, parts ? "" : ", parts is NULL");
  RMAOP_REQUIRE(NULL, parts[0] != NULL, RMAOP_ERR_ARG, "%s: parts[0] is NULL", fn);
  rmaop_ctx ctx = parts[0]->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: layout (output) is NULL", fn);
  for (int i = 0; i < nparts; ++i) {
    RMAOP_REQUIRE(ctx, parts[i] != NULL, RMAOP_ERR_ARG, "%s: parts[%d] is NULL", fn, i);
    RMAOP_REQUIRE(ctx, parts[i]->ctx == ctx, RMAOP_ERR_ARG, "%s: parts[%d] belongs to another context than parts[0]",
                  fn, i);
    /* PyLops-MPI stacks DistributedArrays only; one level keeps "part i" unambiguous. */
    RMAOP_REQUIRE(ctx, parts[i]->kind != RMAOP_LAYOUT_STACKED, RMAOP_ERR_ARG,
                  "%s: parts[%d] is itself stacked; stack its parts instead", fn, i);
  }
  return RMAOP_OK;
}

rmaop_status rmaop_layout_create_stacked(int nparts, const rmaop_layout parts[], rmaop_layout *out) {
  RMAOP_CHECK(check_parts(nparts, parts, out));
  rmaop_ctx ctx = parts[0]->ctx;
  rmaop_layout l = NULL;
  RMAOP_CHECK(layout_alloc(ctx, RMAOP_LAYOUT_STACKED, &l));
  if (rmaop__calloc(ctx, (size_t)nparts, sizeof(rmaop_layout), "stacked layout parts", (void **)&l->parts) != RMAOP_OK ||
      rmaop__calloc(ctx, (size_t)nparts, sizeof(int64_t), "stacked layout offsets", (void **)&l->part_off) != RMAOP_OK) {
    rmaop_layout_destroy(&l);
    return RMAOP_ERR_NOMEM;
  }
  int64_t local = 0;
  for (int i = 0; i < nparts; ++i) {
    l->parts[i] = parts[i];
    parts[i]->refs++;
    l->nparts = i + 1;
    l->part_off[i] = local;
    local += parts[i]->sizes[ctx->rank];
    l->global_n += parts[i]->global_n;
    for (int p = 0; p < ctx->size; ++p) l->sizes[p] += parts[i]->sizes[p];
  }
  for (int p = 1; p < ctx->size; ++p) l->offsets[p] = l->offsets[p - 1] + l->sizes[p - 1];
  *out = l;
  return RMAOP_OK;
}

rmaop_status rmaop_layout_stack_nparts(rmaop_layout l, int *nparts) {
  RMAOP_REQUIRE(NULL, l != NULL, RMAOP_ERR_ARG, "rmaop_layout_stack_nparts: layout is NULL");
  RMAOP_REQUIRE(l->ctx, nparts != NULL, RMAOP_ERR_ARG, "rmaop_layout_stack_nparts: nparts (output) is NULL");
  *nparts = l->nparts;
  return RMAOP_OK;
}

rmaop_status rmaop_layout_stack_part(rmaop_layout l, int i, rmaop_layout *part) {
  RMAOP_REQUIRE(NULL, l != NULL, RMAOP_ERR_ARG, "rmaop_layout_stack_part: layout is NULL");
  RMAOP_REQUIRE(l->ctx, part != NULL, RMAOP_ERR_ARG, "rmaop_layout_stack_part: part (output) is NULL");
  RMAOP_REQUIRE(l->ctx, l->kind == RMAOP_LAYOUT_STACKED, RMAOP_ERR_ARG,
                "rmaop_layout_stack_part: the layout is %s, not stacked", rmaop__layout_kind_name(l->kind));
  RMAOP_REQUIRE(l->ctx, i >= 0 && i < l->nparts, RMAOP_ERR_ARG,
                "rmaop_layout_stack_part: part index %d is outside [0, %d)", i, l->nparts);
  *part = l->parts[i];
  return RMAOP_OK;
}

const char *rmaop__layout_kind_name(rmaop_layout_kind kind) {
  switch (kind) {
  case RMAOP_LAYOUT_SCATTER: return "scatter";
  case RMAOP_LAYOUT_BROADCAST: return "broadcast";
  case RMAOP_LAYOUT_STACKED: return "stacked";
  }
  return "invalid";
}

/* One rule for both comparisons: kind and global size, then sizes (this rank's or all ranks'), then the
 * parts likewise. */
static int layouts_agree(rmaop_layout a, rmaop_layout b, int all_ranks) {
  if (a == b) return 1;
  if (a->kind != b->kind || a->global_n != b->global_n || a->nparts != b->nparts) return 0;
  if (all_ranks) {
    if (a->ctx != b->ctx) return 0;
    for (int p = 0; p < a->ctx->size; ++p)
      if (a->sizes[p] != b->sizes[p]) return 0;
  } else if (a->sizes[a->ctx->rank] != b->sizes[b->ctx->rank]) {
    return 0;
  }
  for (int i = 0; i < a->nparts; ++i)
    if (!layouts_agree(a->parts[i], b->parts[i], all_ranks)) return 0;
  return 1;
}

int rmaop__layout_compatible(rmaop_layout a, rmaop_layout b) { return layouts_agree(a, b, 0); }
int rmaop__layout_same(rmaop_layout a, rmaop_layout b) { return layouts_agree(a, b, 1); }

int rmaop__layout_replicated(rmaop_layout l) {
  if (l->kind != RMAOP_LAYOUT_STACKED) return l->kind == RMAOP_LAYOUT_BROADCAST;
  for (int i = 0; i < l->nparts; ++i)
    if (l->parts[i]->kind != RMAOP_LAYOUT_BROADCAST) return 0;
  return 1;
}
