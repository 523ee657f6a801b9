/* Dense matrix multiply Y = A X (PyLops-MPI MPIMatrixMult, kinds "block" and "summa") and the local
 * dense products shared with Fredholm1 (src/device/matmul_dev.h).
 *
 * Layouts (rmaop vectors are 1-D): the model's local part is this rank's block of X, the data's its block
 * of Y, both row-major; rmaop_op_matmul_get_blocks says which block. PyLops-MPI differs where its vectors
 * replicate data, which rmaop's SCATTER layouts do not:
 * - block: PyLops-MPI keeps X's column blocks replicated over each row of a sqrt(P) x sqrt(P) grid and
 *   allgathers the output. Here A, X and Y are split by rows over all P ranks (any P): the forward
 *   allgathers X with one plan, the adjoint computes A_r^H Y_r (K x M) and the reversed plan sums the row
 *   blocks onto their owners in ADD mode. That is the exact transpose of the allgather, a reduce-scatter;
 *   PyLops-MPI's allreduce then "keep my part" gives the same numbers with P times the traffic, and
 *   rmaop_allreduce would only take host doubles, while a plan moves any dtype, in any memory, and sums
 *   in ascending rank order on every backend.
 * - summa: PyLops-MPI's square grid, block split and step order (SUMMA: van de Geijn and Watts, 1997).
 *   For P not a perfect square the ranks beyond the largest square grid are idle (PyLops-MPI's
 *   active_grid_comm): zero-length blocks, but they take part in the collective calls.
 * Panels travel as one-sided gets from the owner's window on the rma backend, as one plan per step
 * (owner pushes) elsewhere; a rank's own panel is used in place. */
#include "core/error.h"
#include "core/ctx.h"
#include "core/vec.h"
#include "core/plan.h"
#include "core/dtype.h"
#include "core/backend.h"
#include "op_impl.h"

#include <stdio.h>

#include "device/dev_ops.h"
#include "device/device.h"
#include "device/matmul_dev.h"

#define CONJ(v) _Generic((v), float _Complex: conjf(v), double _Complex: conj(v), default: (v))

/* ---- host gemm ---- */

enum { MM_BI = 32, MM_BP = 128, MM_BJ = 512 }; /* blocks: rows of C, the inner dimension, columns of C */

/* op(A)[i][p]: A[i][p], or conj(A[p][i]) for the adjoint. */
#define AT(i, p) (conj_a ? CONJ(A[(p) * lda + (i)]) : A[(i) * lda + (p)])

void rmaop__gemm_host(rmaop_dtype dt, int conj_a, int64_t m, int64_t n, int64_t k, const void *Av, int64_t lda,
                      const void *Bv, int64_t ldb, void *Cv, int64_t ldc, int accumulate) {
  RMAOP__FOR_DTYPE(dt, {
    const T *A = Av, *B = Bv;
    T *C = Cv;
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) C[i * ldc + j] = 0;
    /* i-p-j order inside blocks: the j loop streams a row of B into a row of C (vectorizes); the
     * blocks keep MM_BP rows of B's MM_BJ-column strip in cache while MM_BI rows of C reuse them. */
    for (int64_t j0 = 0; j0 < n; j0 += MM_BJ) {
      const int64_t j1 = j0 + MM_BJ < n ? j0 + MM_BJ : n;
      for (int64_t p0 = 0; p0 < k; p0 += MM_BP) {
        const int64_t p1 = p0 + MM_BP < k ? p0 + MM_BP : k;
        for (int64_t i0 = 0; i0 < m; i0 += MM_BI) {
          const int64_t i1 = i0 + MM_BI < m ? i0 + MM_BI : m;
          for (int64_t i = i0; i < i1; ++i) {
            T *restrict c = C + i * ldc; /* C never overlaps A or B */
            int64_t p = p0;
            for (; p + 4 <= p1; p += 4) { /* four rows of B per pass over the row of C: a quarter of its traffic */
              const T a0 = AT(i, p), a1 = AT(i, p + 1), a2 = AT(i, p + 2), a3 = AT(i, p + 3);
              const T *restrict b0 = B + p * ldb, *restrict b1 = b0 + ldb, *restrict b2 = b1 + ldb, *restrict b3 = b2 + ldb;
              for (int64_t j = j0; j < j1; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
            }
            for (; p < p1; ++p) {
              const T a = AT(i, p);
              const T *restrict b = B + p * ldb;
              for (int64_t j = j0; j < j1; ++j) c[j] += a * b[j];
            }
          }
        }
      }
    }
  });
}
#undef AT

/* ---- blocks ---- */

static int64_t isqrt64(int64_t v) {
  int64_t r = 0;
  while ((r + 1) * (r + 1) <= v) ++r;
  return r;
}

/* Block b of n split in g blocks of ceil(n / g) (PyLops-MPI): offset and size, the last ones shorter. */
static void ceil_block(int64_t n, int64_t g, int64_t b, int64_t *off, int64_t *len) {
  const int64_t bs = g > 0 ? (n + g - 1) / g : 0;
  int64_t o = b * bs;
  if (o > n) o = n;
  *off = o;
  *len = o + bs < n ? bs : n - o;
}

rmaop_status rmaop_op_matmul_get_blocks(rmaop_ctx ctx, rmaop_matmul_kind kind, int64_t N, int64_t K, int64_t M, int rank,
                                     rmaop_matmul_blocks *b) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_op_matmul_get_blocks: ctx is NULL");
  RMAOP_REQUIRE(ctx, b != NULL, RMAOP_ERR_ARG, "rmaop_op_matmul_get_blocks: blocks (output) is NULL");
  RMAOP_REQUIRE(ctx, kind == RMAOP_MATMUL_BLOCK || kind == RMAOP_MATMUL_SUMMA, RMAOP_ERR_ARG,
                "rmaop_op_matmul_get_blocks: kind = %d is neither RMAOP_MATMUL_BLOCK nor RMAOP_MATMUL_SUMMA", (int)kind);
  RMAOP_REQUIRE(ctx, N >= 0 && K >= 0 && M >= 0, RMAOP_ERR_ARG,
                "rmaop_op_matmul_get_blocks: sizes N = %lld, K = %lld, M = %lld must not be negative", (long long)N,
                (long long)K, (long long)M);
  RMAOP_REQUIRE(ctx, rank >= 0 && rank < ctx->size, RMAOP_ERR_ARG, "rmaop_op_matmul_get_blocks: rank %d is outside [0, %d)",
                rank, ctx->size);
  RMAOP_REQUIRE(ctx, rmaop__fits(N, K) && rmaop__fits(K, M) && rmaop__fits(N, M), RMAOP_ERR_ARG,
                "rmaop_op_matmul_get_blocks: A %lld x %lld, X %lld x %lld and Y %lld x %lld: a matrix's size overflows "
                "64-bit byte counts",
                (long long)N, (long long)K, (long long)K, (long long)M, (long long)N, (long long)M);
  rmaop_matmul_blocks r = {0};
  if (kind == RMAOP_MATMUL_BLOCK) {
    r = (rmaop_matmul_blocks){.active = 1, .grid_dim = ctx->size, .grid_row = rank, .a_ncols = K, .x_ncols = M,
                              .y_ncols = M};
    rmaop__split(N, ctx->size, rank, &r.a_row0, &r.a_nrows);
    rmaop__split(K, ctx->size, rank, &r.x_row0, &r.x_nrows);
    r.y_row0 = r.a_row0, r.y_nrows = r.a_nrows;
  } else {
    const int64_t g = isqrt64(ctx->size);
    r.grid_dim = (int)g;
    r.active = rank < g * g;
    if (r.active) {
      const int64_t i = rank / g, j = rank % g;
      r.grid_row = (int)i, r.grid_col = (int)j;
      ceil_block(N, g, i, &r.a_row0, &r.a_nrows);
      ceil_block(K, g, j, &r.a_col0, &r.a_ncols);
      ceil_block(K, g, i, &r.x_row0, &r.x_nrows);
      ceil_block(M, g, j, &r.x_col0, &r.x_ncols);
      r.y_row0 = r.a_row0, r.y_nrows = r.a_nrows, r.y_col0 = r.x_col0, r.y_ncols = r.x_ncols;
    }
  }
  *b = r;
  return RMAOP_OK;
}

/* ---- the operator ---- */

typedef struct {
  int owner;                        /* rank holding the panel (-1: none) */
  int64_t src_off, dst_off, count;  /* elements: in the owner's staging, in my panel buffer */
} fetch;

/* One rma epoch of a SUMMA step: exactly the ranks I get from and the ranks that get from me. */
typedef struct {
  int nt, no;
  int *targets, *origins; /* into mm_impl.peers */
} summa_epoch;

typedef struct {
  rmaop_ctx ctx;
  rmaop_matmul_kind kind;
  rmaop_dtype dtype;
  size_t es;
  int64_t N, K, M;
  rmaop_matmul_blocks me;
  int dev;                /* device memory: products through cuBLAS (blas), buffers in device memory */
  void *blas;
  rmaop_vec in, out;
  /* block */
  void *A;                /* this rank's rows of A (a_nrows x K), context memory */
  void *full;             /* K x M: the gathered X (forward) or A_r^H Y_r (adjoint) */
  rmaop_plan gather, scatter;
  /* summa: the staging is [vector block (vcap) | A block (acap)], the panels [A panel | vector panel] */
  int64_t g, vcap, acap;
  void *stage, *panel;
  rmaop_win win;          /* rma: the staging is this window's memory (panels are gets) */
  summa_epoch *epochs;    /* rma: [2 g] forward step k at k, adjoint at g + k (the grid fixes them) */
  int *peers;             /* the epochs' lists */
  rmaop_plan *fwd, *adj;  /* other backends: one plan per step */
} mm_impl;

static void *mm_A(const mm_impl *m) {
  return m->kind == RMAOP_MATMUL_BLOCK ? m->A : (char *)m->stage + (size_t)m->vcap * m->es;
}

/* C (=|+=) op(A) B on the operator's memory. */
static rmaop_status mm_gemm(mm_impl *m, int conj_a, int64_t rows, int64_t cols, int64_t inner, const void *A,
                            int64_t lda, const void *B, int64_t ldb, void *C, int64_t ldc, int accumulate) {
  if (m->dev)
    return rmaop__dev_gemm(m->ctx, m->blas, m->dtype, conj_a, rows, cols, inner, A, lda, B, ldb, C, ldc, accumulate);
  rmaop__gemm_host(m->dtype, conj_a, rows, cols, inner, A, lda, B, ldb, C, ldc, accumulate);
  return RMAOP_OK;
}

/* A buffer of n elements in the operator's memory (never NULL: one spare element). */
static rmaop_status mm_alloc(mm_impl *m, int64_t n, const char *what, void **out) {
  return rmaop__mem_calloc(m->ctx, (size_t)n + 1, m->es, what, out);
}

/* ---- block: allgather of X, reduce-scatter of A_r^H Y_r ---- */

static rmaop_status block_apply_begin(rmaop_op op, rmaop_vec x, rmaop_vec y) {
  mm_impl *m = op->impl;
  m->out = y;
  return rmaop_plan_begin(m->gather, x->data, m->full, RMAOP_INSERT);
}
static rmaop_status block_apply_end(rmaop_op op) {
  mm_impl *m = op->impl;
  RMAOP_CHECK(rmaop_plan_end(m->gather));
  return mm_gemm(m, 0, m->me.a_nrows, m->M, m->K, m->A, m->K, m->full, m->M, m->out->data, m->M, 0);
}
static rmaop_status block_adjoint_begin(rmaop_op op, rmaop_vec y, rmaop_vec x) {
  mm_impl *m = op->impl;
  RMAOP_CHECK(mm_gemm(m, 1, m->K, m->M, m->me.a_nrows, m->A, m->K, y->data, m->M, m->full, m->M, 0));
  /* ADD sums every rank's part, own one included */
  RMAOP_CHECK(rmaop__mem_zero(m->ctx, m->dtype, x->data, m->me.x_nrows * m->M));
  return rmaop_plan_begin(m->scatter, m->full, x->data, RMAOP_ADD);
}
static rmaop_status block_adjoint_end(rmaop_op op) { return rmaop_plan_end(((mm_impl *)op->impl)->scatter); }

static rmaop_status block_setup(mm_impl *m, const char *label) {
  rmaop_ctx ctx = m->ctx;
  rmaop_transfer *t = NULL;
  rmaop_status st = rmaop__calloc(ctx, (size_t)ctx->size, sizeof *t, "matmul transfers", (void **)&t);
  st = rmaop__agree(ctx, st, "rmaop_op_create_matmul");
  if (st != RMAOP_OK) {
    free(t);
    return st;
  }
  int nt = 0;
  for (int q = 0; q < ctx->size && m->me.x_nrows > 0; ++q) /* my rows of X go to everyone, myself included */
    t[nt++] = (rmaop_transfer){q, 0, m->me.x_row0 * m->M, m->me.x_nrows * m->M};
  char name[96], rev[100];
  snprintf(name, sizeof name, "%s.gather", label);
  snprintf(rev, sizeof rev, "%s.gather^H", label);
  rmaop_plan_spec spec = {.dtype = m->dtype, .src_len = m->me.x_nrows * m->M, .dst_len = m->K * m->M,
                          .nsends = nt, .sends = t, .nrecvs = -1, .label = name};
  st = rmaop_plan_create(ctx, &spec, &m->gather);
  free(t);
  RMAOP_CHECK(st);
  RMAOP_CHECK(rmaop_plan_reverse(m->gather, rev, &m->scatter));
  return mm_alloc(m, m->K * m->M, "matmul: X gathered", &m->full);
}

/* ---- summa ---- */

static int64_t part(int64_t n, int64_t g, int64_t b) {
  int64_t off, len;
  ceil_block(n, g, b, &off, &len);
  return len;
}

/* The (up to) two panels rank r = (i, j) needs at step k: forward A(i, k) and X(k, j); adjoint A(k, i) and
 * Y(k, j). Empty panels have count 0. */
static void summa_fetches(const mm_impl *m, int r, int64_t k, int adjoint, fetch f[2]) {
  f[0] = f[1] = (fetch){-1, 0, 0, 0};
  const int64_t g = m->g;
  if (r >= g * g) return;
  const int64_t i = r / g, j = r % g;
  if (!adjoint) {
    f[0] = (fetch){(int)(i * g + k), m->vcap, 0, part(m->N, g, i) * part(m->K, g, k)};
    f[1] = (fetch){(int)(k * g + j), 0, m->acap, part(m->K, g, k) * part(m->M, g, j)};
  } else {
    f[0] = (fetch){(int)(k * g + i), m->vcap, 0, part(m->N, g, k) * part(m->K, g, i)};
    f[1] = (fetch){(int)(k * g + j), 0, m->acap, part(m->N, g, k) * part(m->M, g, j)};
  }
}

static void add_unique(int *list, int *n, int r, int self) {
  if (r == self) return;
  for (int i = 0; i < *n; ++i)
    if (list[i] == r) return;
  list[(*n)++] = r;
}

/* The peers of every step's epoch, once: finding who reads me scans the whole grid. */
static rmaop_status summa_epochs(mm_impl *m) {
  rmaop_ctx ctx = m->ctx;
  const int64_t g = m->g, stride = 2 + 2 * g; /* two owners; readers: my grid row and column */
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * (size_t)g + 1, sizeof *m->epochs, "summa epochs", (void **)&m->epochs));
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * (size_t)(g * stride) + 1, sizeof(int), "summa peers", (void **)&m->peers));
  for (int64_t s = 0; s < 2 * g; ++s) {
    const int64_t k = s % g;
    const int adjoint = s >= g;
    summa_epoch *e = &m->epochs[s];
    e->targets = m->peers + s * stride, e->origins = e->targets + 2;
    fetch f[2];
    summa_fetches(m, ctx->rank, k, adjoint, f);
    for (int p = 0; p < 2; ++p)
      if (f[p].count > 0) add_unique(e->targets, &e->nt, f[p].owner, ctx->rank);
    for (int r = 0; r < g * g; ++r) { /* who reads me: only my grid row or column can */
      summa_fetches(m, r, k, adjoint, f);
      for (int p = 0; p < 2; ++p)
        if (f[p].count > 0 && f[p].owner == ctx->rank) add_unique(e->origins, &e->no, r, ctx->rank);
    }
  }
  return RMAOP_OK;
}

/* One step on the rma backend: the step's epoch, my gets inside it. */
static rmaop_status summa_get_step(mm_impl *m, int64_t k, int adjoint) {
  rmaop_ctx ctx = m->ctx;
  const summa_epoch *e = &m->epochs[adjoint ? m->g + k : k];
  fetch mine[2];
  summa_fetches(m, ctx->rank, k, adjoint, mine);
  RMAOP_CHECK(rmaop_win_epoch_begin(m->win, e->nt, e->targets, e->no, e->origins));
  rmaop_status st = RMAOP_OK;
  for (int p = 0; p < 2 && st == RMAOP_OK; ++p)
    if (mine[p].count > 0 && mine[p].owner != ctx->rank)
      st = rmaop_win_get(m->win, (char *)m->panel + (size_t)mine[p].dst_off * m->es, (size_t)mine[p].count * m->es,
                         mine[p].owner, (size_t)mine[p].src_off * m->es);
  rmaop_status st2 = rmaop_win_epoch_end(m->win); /* close the epoch even after a failed get */
  return st != RMAOP_OK ? st : st2;
}

/* The panel p of step k: in place when it is mine, else where the get or plan put it. */
static const void *summa_panel(const mm_impl *m, const fetch *f) {
  if (f->owner == m->ctx->rank) return (const char *)m->stage + (size_t)f->src_off * m->es;
  return (const char *)m->panel + (size_t)f->dst_off * m->es;
}

static rmaop_status summa_run(rmaop_op op, rmaop_vec in, rmaop_vec out, int adjoint) {
  mm_impl *m = op->impl;
  const int64_t i = m->me.grid_row, j = m->me.grid_col;
  const int64_t nin = m->me.active ? (adjoint ? m->me.y_nrows : m->me.x_nrows) * m->me.x_ncols : 0;
  /* before the epoch: peers read it after my "ready" */
  RMAOP_CHECK(rmaop__mem_copy(m->ctx, m->stage, in->data, (size_t)nin * m->es));
  const int64_t rows = adjoint ? m->me.x_nrows : m->me.y_nrows, cols = m->me.y_ncols;
  for (int64_t k = 0; k < m->g; ++k) {
    /* A GPU window's epoch end drains the stream anyway (rmaop_win_epoch_end promises host visibility):
     * draining it first keeps the previous step's product out of the epoch's traced time. */
    if (m->win && m->dev) RMAOP_CHECK(rmaop__dev_sync(m->ctx));
    if (m->win) RMAOP_CHECK(summa_get_step(m, k, adjoint));
    else RMAOP_CHECK(rmaop_plan_execute(adjoint ? m->adj[k] : m->fwd[k], m->stage, m->panel, RMAOP_INSERT));
    if (!m->me.active) continue;
    fetch f[2];
    summa_fetches(m, m->ctx->rank, k, adjoint, f);
    const int64_t inner = adjoint ? part(m->N, m->g, k) : part(m->K, m->g, k);
    const int64_t lda = adjoint ? part(m->K, m->g, i) : inner;
    RMAOP_CHECK(mm_gemm(m, adjoint, rows, cols, inner, summa_panel(m, &f[0]), lda, summa_panel(m, &f[1]),
                        part(m->M, m->g, j), out->data, cols, k > 0));
  }
  return RMAOP_OK;
}

static rmaop_status summa_apply_begin(rmaop_op op, rmaop_vec x, rmaop_vec y) { return summa_run(op, x, y, 0); }
static rmaop_status summa_adjoint_begin(rmaop_op op, rmaop_vec y, rmaop_vec x) { return summa_run(op, y, x, 1); }
static rmaop_status summa_end(rmaop_op op) {
  (void)op; /* every step ran in begin: a step's product needs its panels, the next panels the same buffers */
  return RMAOP_OK;
}

/* The plan of step k: I push my panels to the ranks that need them (self excluded: used in place). */
static rmaop_status summa_plan(mm_impl *m, int64_t k, int adjoint, const char *label, rmaop_plan *plan) {
  rmaop_ctx ctx = m->ctx;
  rmaop_transfer *t = NULL;
  rmaop_status st = rmaop__calloc(ctx, 2 * (size_t)m->g * (size_t)m->g + 1, sizeof *t, "summa transfers", (void **)&t);
  st = rmaop__agree(ctx, st, "rmaop_op_create_matmul");
  if (st != RMAOP_OK) {
    free(t); /* allocated here, failed on another rank */
    return st;
  }
  int nt = 0;
  for (int r = 0; r < m->g * m->g; ++r) {
    fetch f[2];
    summa_fetches(m, r, k, adjoint, f);
    for (int p = 0; p < 2; ++p)
      if (f[p].count > 0 && f[p].owner == ctx->rank && r != ctx->rank)
        t[nt++] = (rmaop_transfer){r, f[p].src_off, f[p].dst_off, f[p].count};
  }
  rmaop_plan_spec spec = {.dtype = m->dtype, .src_len = m->vcap + m->acap, .dst_len = m->acap + m->vcap,
                          .nsends = nt, .sends = t, .nrecvs = -1, .label = label};
  st = rmaop_plan_create(ctx, &spec, plan);
  free(t);
  return st;
}

/* Panels as one-sided gets where the backend's windows reach the context's memory directly (its
 * win_gets_direct slot), else as a plan. */
static int summa_uses_gets(rmaop_ctx ctx) {
  return ctx->backend->win_gets_direct && ctx->backend->win_gets_direct(ctx);
}

static rmaop_status summa_setup(mm_impl *m, const void *A, const char *label) {
  rmaop_ctx ctx = m->ctx;
  const int64_t g = m->g, bn = part(m->N, g, 0), bk = part(m->K, g, 0), bm = part(m->M, g, 0);
  m->vcap = (bk > bn ? bk : bn) * bm; /* an X block (forward) or a Y block (adjoint) */
  m->acap = bn * bk;
  const int64_t total = m->vcap + m->acap;
  const int gets = summa_uses_gets(ctx);
  rmaop_status st = mm_alloc(m, total, "summa panels", &m->panel);
  if (st == RMAOP_OK && gets) st = summa_epochs(m);
  RMAOP_CHECK(rmaop__agree(ctx, st, "rmaop_op_create_matmul"));
  if (gets) {
    RMAOP_CHECK(rmaop_win_allocate(ctx, (size_t)(total + 1) * m->es, &m->win, &m->stage));
  } else {
    RMAOP_CHECK(rmaop__agree(ctx, mm_alloc(m, total, "summa staging", &m->stage), "rmaop_op_create_matmul"));
    RMAOP_CHECK(rmaop__agree(ctx, rmaop__calloc(ctx, 2 * (size_t)g + 1, sizeof(rmaop_plan), "summa plans",
                                                (void **)&m->fwd), "rmaop_op_create_matmul"));
    m->adj = m->fwd + g;
    char name[100];
    for (int64_t k = 0; k < g; ++k) {
      snprintf(name, sizeof name, "%s.summa", label);
      RMAOP_CHECK(summa_plan(m, k, 0, name, &m->fwd[k]));
      snprintf(name, sizeof name, "%s.summa^H", label);
      RMAOP_CHECK(summa_plan(m, k, 1, name, &m->adj[k]));
    }
  }
  return rmaop__mem_copy(m->ctx, mm_A(m), A, m->me.active ? (size_t)(m->me.a_nrows * m->me.a_ncols) * m->es : 0);
}

static void mm_free(mm_impl *m) {
  rmaop_plan_destroy(&m->gather);
  rmaop_plan_destroy(&m->scatter);
  for (int64_t k = 0; m->fwd && k < 2 * m->g; ++k) rmaop_plan_destroy(&m->fwd[k]);
  free(m->fwd);
  if (m->win) {
    rmaop_win_destroy(&m->win);
    m->stage = NULL; /* the window's memory */
  }
  rmaop__mem_free(m->ctx, &m->stage);
  rmaop__mem_free(m->ctx, &m->panel);
  rmaop__mem_free(m->ctx, &m->full);
  rmaop__mem_free(m->ctx, &m->A);
  rmaop__dev_blas_destroy(m->blas);
  free(m->epochs);
  free(m->peers);
  free(m);
}
static void mm_destroy(rmaop_op op) { mm_free(op->impl); }

static const rmaop__op_ops block_ops = {block_apply_begin, block_apply_end, block_adjoint_begin, block_adjoint_end,
                                        mm_destroy};
static const rmaop__op_ops summa_ops = {summa_apply_begin, summa_end, summa_adjoint_begin, summa_end, mm_destroy};

/* This rank's view of the spec, then every rank's sizes against rank 0's (one allreduce). */
static rmaop_status check_spec(rmaop_ctx ctx, const rmaop_matmul_spec *s, rmaop_op *out, rmaop_matmul_blocks *b) {
  const char *fn = "rmaop_op_create_matmul";
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: operator (output) is NULL", fn);
  RMAOP_REQUIRE(ctx, s != NULL, RMAOP_ERR_ARG, "%s: spec is NULL", fn);
  RMAOP_REQUIRE(ctx, s->kind == RMAOP_MATMUL_BLOCK || s->kind == RMAOP_MATMUL_SUMMA, RMAOP_ERR_ARG,
                "%s: kind = %d is neither RMAOP_MATMUL_BLOCK nor RMAOP_MATMUL_SUMMA", fn, (int)s->kind);
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(s->dtype) > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn,
                (int)s->dtype);
  RMAOP_CHECK(rmaop_op_matmul_get_blocks(ctx, s->kind, s->N, s->K, s->M, ctx->rank, b));
  RMAOP_REQUIRE(ctx, s->nrows == b->a_nrows && s->ncols == b->a_ncols, RMAOP_ERR_ARG,
                "%s: rank %d's block of A is %lld x %lld but a %s multiply of A %lld x %lld on %d ranks gives it "
                "%lld x %lld (rmaop_op_matmul_get_blocks)", fn, ctx->rank, (long long)s->nrows, (long long)s->ncols,
                s->kind == RMAOP_MATMUL_BLOCK ? "block" : "summa", (long long)s->N, (long long)s->K, ctx->size,
                (long long)b->a_nrows, (long long)b->a_ncols);
  RMAOP_REQUIRE(ctx, s->A != NULL || s->nrows * s->ncols == 0, RMAOP_ERR_ARG, "%s: A is NULL with a %lld x %lld block",
                fn, (long long)s->nrows, (long long)s->ncols);
  return RMAOP_OK;
}

static rmaop_status same_everywhere(rmaop_ctx ctx, const rmaop_matmul_spec *s) {
  static const char *const names[] = {"kind", "dtype", "N", "K", "M"};
  const int64_t v[5] = {s->kind, s->dtype, s->N, s->K, s->M};
  return rmaop__same_everywhere(ctx, v, 5, names, "rmaop_op_create_matmul");
}

static rmaop_status matmul_build(rmaop_ctx ctx, const rmaop_matmul_spec *s, const rmaop_matmul_blocks *b, mm_impl *m) {
  const char *label = s->label ? s->label : "matmul";
  m->ctx = ctx, m->kind = s->kind, m->dtype = s->dtype, m->es = rmaop_dtype_size(s->dtype);
  m->N = s->N, m->K = s->K, m->M = s->M, m->me = *b;
  m->g = s->kind == RMAOP_MATMUL_SUMMA ? b->grid_dim : 0;
  m->dev = RMAOP__ON_DEVICE(ctx);
  if (m->dev) RMAOP_CHECK(rmaop__agree(ctx, rmaop__dev_blas_create(ctx, &m->blas), "rmaop_op_create_matmul"));
  rmaop_status st = RMAOP_OK;
  if (s->kind == RMAOP_MATMUL_SUMMA) {
    RMAOP_CHECK(summa_setup(m, s->A, label));
  } else {
    st = mm_alloc(m, b->a_nrows * b->a_ncols, "matmul: rows of A", &m->A);
    if (st == RMAOP_OK) st = rmaop__mem_copy(ctx, m->A, s->A, (size_t)(b->a_nrows * b->a_ncols) * m->es);
    RMAOP_CHECK(rmaop__agree(ctx, st, "rmaop_op_create_matmul"));
    RMAOP_CHECK(block_setup(m, label));
  }
  if (m->dev) st = rmaop__dev_sync(ctx); /* A's copy has left the caller's buffer before we return */
  return st;
}

rmaop_status rmaop_op_create_matmul(rmaop_ctx ctx, const rmaop_matmul_spec *spec, rmaop_op *out) {
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_op_create_matmul: ctx is NULL");
  rmaop_matmul_blocks b = {0};
  RMAOP_CHECK(rmaop__agree(ctx, check_spec(ctx, spec, out, &b), "rmaop_op_create_matmul"));
  RMAOP_CHECK(same_everywhere(ctx, spec)); /* the same verdict on every rank already */
  mm_impl *m = NULL;
  rmaop_status made = rmaop__agree(ctx, rmaop__calloc(ctx, 1, sizeof *m, "matmul operator", (void **)&m),
                                   "rmaop_op_create_matmul");
  if (made != RMAOP_OK) {
    free(m); /* allocated here, failed on another rank */
    return made;
  }
  rmaop_layout model = NULL, data = NULL;
  rmaop_status st = rmaop__agree(ctx, matmul_build(ctx, spec, &b, m), "rmaop_op_create_matmul");
  if (st == RMAOP_OK) st = rmaop_layout_create_local(ctx, b.x_nrows * b.x_ncols, &model);
  if (st == RMAOP_OK) st = rmaop_layout_create_local(ctx, b.y_nrows * b.y_ncols, &data);
  st = rmaop__op_new_agreed(st, ctx, spec->kind == RMAOP_MATMUL_SUMMA ? "matmul.summa" : "matmul.block", spec->dtype, model,
                       data, spec->kind == RMAOP_MATMUL_SUMMA ? &summa_ops : &block_ops, m, out);
  if (st != RMAOP_OK) mm_free(m);
  rmaop_layout_destroy(&model);
  rmaop_layout_destroy(&data);
  return st;
}
