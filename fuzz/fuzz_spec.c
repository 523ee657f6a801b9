/* Fuzz target: argument validation of plans and grid operators (src/core/plan.c, src/ops/). One process is a
 * 1-rank MPI job (MPI_Init once, in LLVMFuzzerInitialize; a singleton, no mpiexec) holding four contexts on host
 * memory: rma with each sync mode (fence, pscw, lock) and twosided. Each input picks a context and one spec
 * (rmaop_plan_spec, rmaop_deriv_spec for the first and second derivative, rmaop_laplacian_spec,
 * rmaop_halo_spec, rmaop_gradient_spec, rmaop_matmul_spec), fills it from its bytes (any dtype, ndim, dims,
 * axes, kinds, peers, offsets and counts, negative and huge values included) and calls the create function.
 *
 * Oracles: every call returns a status (a crash, a sanitizer report or an abort is a finding); a failure
 * leaves a message (rmaop_ctx_last_error); a rank alone never sees RMAOP_ERR_TIMEOUT, _REMOTE, _STATE or
 * _INTERNAL. What is accepted must also work: a plan runs once in each mode on buffers of exactly the lengths it
 * declared, and is reversed; a small operator passes rmaop_op_dottest, whose error must be small when the
 * spec's numbers are tame. Everything created is destroyed.
 *
 * Sizes: a valid spec allocates what it declares, so specs that declare more than FUZZ_MAX_CELLS elements are
 * skipped here, before the call (invalid huge values, negative ones and overflowing sums still reach the
 * library); run it with -rss_limit_mb. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <rmaop/rmaop.h>

#define FUZZ_MAX_CELLS 1000000 /* elements a spec may declare (each buffer, each operator's vectors) */
#define FUZZ_RUN_CELLS 65536   /* a plan is run, an operator dot-tested, up to this many elements */
#define FUZZ_MAX_TRANSFERS 64  /* transfers per list (the count passed may still be anything) */

/* ---- reading the input ---------------------------------------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t n;
} input;

static uint8_t u8(input *in) {
  if (!in->n)
    return 0;
  --in->n;
  return *in->p++;
}

static uint64_t raw64(input *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = v << 8 | u8(in);
  return v;
}

/* An int64: mostly small, often a boundary, sometimes any 64 bits. */
static int64_t i64(input *in) {
  /* clang-format off */
  static const int64_t edge[] = {0, 1, -1, 2, 7, 8, INT_MAX, (int64_t)INT_MAX + 1, INT_MIN, (int64_t)INT_MIN - 1,
                                 UINT32_MAX, INT64_MAX, INT64_MIN, INT64_MAX / 2, INT64_MAX / 8, INT64_MAX / 16 + 1,
                                 INT64_MIN / 2, 1000000, 1000001, (int64_t)1 << 32, (int64_t)1 << 62,
                                 -((int64_t)1 << 62), (int64_t)SIZE_MAX / 16, 65536};
  /* clang-format on */
  const uint8_t sel = u8(in);
  switch (sel & 7) {
  case 0:
  case 1:
  case 2:
    return (int8_t)u8(in);
  case 3:
    return (int64_t)(u8(in) << 8 | u8(in));
  case 4:
    return edge[u8(in) % (sizeof edge / sizeof edge[0])];
  case 5:
    return (int64_t)raw64(in);
  case 6:
    return u8(in) % 17;
  default:
    return (int64_t)((uint64_t)u8(in) << (u8(in) % 63));
  }
}

/* An int: mostly small, sometimes a boundary. */
static int i32(input *in) {
  static const int edge[] = {0, 1, -1, 2, 3, 4, 8, 9, INT_MAX, INT_MIN, INT_MAX / 2 + 1, -2, 1 << 16, 46341};
  const uint8_t sel = u8(in);
  if (sel < 192)
    return (int)(sel % 12) - 2;
  return edge[u8(in) % (sizeof edge / sizeof edge[0])];
}

static double f64(input *in) {
  static const double edge[] = {0,      1,       -1,      0.5,      2,        1e-3,      1e300,
                                -1e300, DBL_MIN, DBL_MAX, 4.9e-324, INFINITY, -INFINITY, NAN};
  const uint8_t sel = u8(in);
  if (sel < 128)
    return 1.0 + (sel % 8) * 0.25;
  if (sel < 224)
    return edge[u8(in) % (sizeof edge / sizeof edge[0])];
  uint64_t bits = raw64(in);
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* A dtype: mostly valid, sometimes not (the enum holds whatever int the caller wrote). */
static rmaop_dtype dtype(input *in) {
  const uint8_t sel = u8(in);
  return (rmaop_dtype)(sel < 224 ? sel % 4 : i32(in));
}

/* NULL or a label of up to 40 bytes (any bytes but NUL). */
static const char *label(input *in, char *buf) {
  const uint8_t n = u8(in);
  if (n % 4 == 0)
    return NULL;
  size_t len = 0;
  for (; len < (size_t)(n % 41) && in->n; ++len)
    buf[len] = (char)(u8(in) | 1);
  buf[len] = 0;
  return buf;
}

static int tame(double x) {
  return isfinite(x) && fabs(x) >= 1e-3 && fabs(x) <= 1e3;
}

/* ---- sizes the harness allows ----------------------------------------------------------------------------- */

/* x * y, saturated at INT64_MAX (both >= 0). */
static int64_t mul_sat(int64_t x, int64_t y) {
  int64_t r;
  return __builtin_mul_overflow(x, y, &r) ? INT64_MAX : r;
}

/* Cells of a grid as the operator would allocate them: every dimension at least 1 (a dimension of 0 or below is
 * refused by the library, but the others must not be trusted to be small). */
static int64_t grid_cells(int ndim, const int64_t *dims, int maxdims) {
  int64_t cells = 1;
  for (int d = 0; d < ndim && d < maxdims; ++d)
    cells = mul_sat(cells, dims[d] > 1 ? dims[d] : 1);
  return cells;
}

static size_t esize(rmaop_dtype t) {
  const size_t s = rmaop_dtype_size(t);
  return s ? s : 16;
}

/* ---- oracles -------------------------------------------------------------------------------------------------- */

static rmaop_ctx ctxs[4];
static const char *const ctx_names[4] = {"rma.fence", "rma.pscw", "rma.lock", "twosided"};

static void finding(const char *what, rmaop_ctx ctx, rmaop_status st) {
  fprintf(stderr, "fuzz_spec: %s: status %d (%s): %s\n", what, (int)st, rmaop_status_string(st),
          rmaop_ctx_last_error(ctx));
  __builtin_trap();
}

static int verbose; /* FUZZ_SPEC_VERBOSE=1: one line per call (what a replayed input does) */

/* A status a rank alone may see for a bad or too large spec; anything else is a finding. */
static rmaop_status checked(rmaop_ctx ctx, rmaop_status st, const char *call) {
  if (verbose)
    fprintf(stderr, "fuzz_spec: %s: %s%s%s\n", call, rmaop_status_string(st), st ? ": " : "",
            st ? rmaop_ctx_last_error(ctx) : "");
  switch (st) {
  case RMAOP_OK:
    return st;
  case RMAOP_ERR_ARG:
  case RMAOP_ERR_MPI:
  case RMAOP_ERR_UNSUPPORTED:
  case RMAOP_ERR_NOMEM: {
    const char *msg = rmaop_ctx_last_error(ctx);
    if (!msg || !*msg)
      finding(call, ctx, st); /* a failure without a message */
    return st;
  }
  default:
    finding(call, ctx, st);
    return st;
  }
}

/* ---- plans ------------------------------------------------------------------------------------------------- */

static void fill_transfers(input *in, rmaop_transfer *t, int n) {
  for (int i = 0; i < n; ++i) {
    const uint8_t peer = u8(in);
    t[i].peer = peer < 192 ? 0 : i32(in); /* mostly itself: the only rank */
    t[i].src_offset = i64(in);
    t[i].dst_offset = i64(in);
    t[i].count = i64(in);
  }
}

/* A list length as passed (any int) and the transfers behind it (exactly that many, or NULL). */
static const rmaop_transfer *transfer_list(input *in, rmaop_transfer *buf, int *count) {
  const int n = i32(in);
  *count = n;
  if (u8(in) % 16 == 0)
    return NULL; /* a NULL list, whatever the count says */
  if (n <= 0)
    return n == 0 ? NULL : buf; /* a negative count: the pointer must not be read */
  if (n > FUZZ_MAX_TRANSFERS)
    return NULL; /* cannot back it: pass NULL, which must be refused */
  fill_transfers(in, buf, n);
  return buf;
}

static void fuzz_plan(rmaop_ctx ctx, input *in) {
  rmaop_transfer sends[FUZZ_MAX_TRANSFERS], recvs[FUZZ_MAX_TRANSFERS];
  char name[48];
  rmaop_plan_spec s;
  memset(&s, 0, sizeof s);
  memset(sends, 0, sizeof sends); /* a list passed with a negative count holds zeros, never stack garbage */
  memset(recvs, 0, sizeof recvs);
  s.dtype = dtype(in);
  s.src_len = i64(in);
  s.dst_len = i64(in);
  if (s.src_len > FUZZ_MAX_CELLS || s.dst_len > FUZZ_MAX_CELLS)
    return;
  s.sends = transfer_list(in, sends, &s.nsends);
  if (s.nsends > FUZZ_MAX_TRANSFERS && s.sends)
    return;
  if (u8(in) % 4 == 0) {
    s.recvs = transfer_list(in, recvs, &s.nrecvs);
    if (s.nrecvs > FUZZ_MAX_TRANSFERS && s.recvs)
      return;
  } else {
    s.nrecvs = -1; /* derive the receives */
  }
  s.label = label(in, name);
  rmaop_plan plan = NULL;
  if (checked(ctx, rmaop_plan_create(ctx, &s, &plan), "rmaop_plan_create") != RMAOP_OK)
    return;
  rmaop_plan_info info;
  checked(ctx, rmaop_plan_get_info(plan, &info), "rmaop_plan_get_info");
  if (s.src_len < 0 || s.dst_len < 0 || rmaop_dtype_size(s.dtype) == 0)
    finding("rmaop_plan_create accepted a negative length or an invalid dtype", ctx, RMAOP_OK);
  if (s.src_len <= FUZZ_RUN_CELLS && s.dst_len <= FUZZ_RUN_CELLS) {
    /* exactly the declared lengths (at least one byte, as malloc(0) may give NULL): ASan sees any overrun */
    const size_t es = rmaop_dtype_size(s.dtype);
    void *src = calloc((size_t)s.src_len * es + 1, 1), *dst = calloc((size_t)s.dst_len * es + 1, 1);
    if (!src || !dst)
      abort();
    checked(ctx, rmaop_plan_execute(plan, src, dst, RMAOP_INSERT), "rmaop_plan_execute INSERT");
    checked(ctx, rmaop_plan_execute(plan, src, dst, RMAOP_ADD), "rmaop_plan_execute ADD");
    rmaop_plan rev = NULL;
    if (checked(ctx, rmaop_plan_reverse(plan, NULL, &rev), "rmaop_plan_reverse") == RMAOP_OK) {
      checked(ctx, rmaop_plan_execute(rev, dst, src, RMAOP_ADD), "rmaop_plan_execute reversed");
      rmaop_plan_destroy(&rev);
    }
    free(src);
    free(dst);
  }
  rmaop_plan_destroy(&plan);
}

/* ---- grid operators ----------------------------------------------------------------------------------------- */

static void fill_grid(input *in, rmaop_grid *g) {
  g->ndim = i32(in);
  const int nd = g->ndim >= 1 && g->ndim <= RMAOP_MAX_DIMS ? g->ndim : RMAOP_MAX_DIMS;
  for (int d = 0; d < nd; ++d)
    g->dims[d] = i64(in);
  const uint8_t lr = u8(in);
  g->local_rows = lr < 128 ? -1 : lr < 192 ? g->dims[0] : i64(in);
}

/* After a create: a small operator is dot-tested (forward and adjoint run); its error must be small when
 * @p exact (f64 or c128 and tame numbers). Then it is destroyed. */
static void use_op(rmaop_ctx ctx, rmaop_op *A, rmaop_status st, const char *call, int64_t cells, int exact) {
  if (checked(ctx, st, call) != RMAOP_OK)
    return;
  rmaop_op_info info;
  checked(ctx, rmaop_op_get_info(*A, &info), "rmaop_op_get_info");
  if (cells <= FUZZ_RUN_CELLS) {
    double err = 0;
    if (checked(ctx, rmaop_op_dottest(*A, 7, &err), "rmaop_op_dottest") == RMAOP_OK && exact && !(err <= 1e-9)) {
      fprintf(stderr, "fuzz_spec: %s: dot test error %g (forward and adjoint disagree)\n", call, err);
      __builtin_trap();
    }
  }
  rmaop_op_destroy(A);
}

static int exact_dtype(rmaop_dtype t) {
  return t == RMAOP_F64 || t == RMAOP_C128;
}

static void fuzz_deriv(rmaop_ctx ctx, input *in, int order) {
  char name[48];
  rmaop_deriv_spec s;
  memset(&s, 0, sizeof s);
  fill_grid(in, &s.grid);
  s.axis = i32(in);
  s.kind = (rmaop_deriv_kind)i32(in);
  s.edge = i32(in);
  s.sampling = u8(in) < 64 ? 0 : f64(in);
  s.dtype = dtype(in);
  s.label = label(in, name);
  const int64_t cells = grid_cells(s.grid.ndim, s.grid.dims, RMAOP_MAX_DIMS);
  if (cells > FUZZ_MAX_CELLS)
    return;
  rmaop_op A = NULL;
  rmaop_status st =
      order == 1 ? rmaop_op_create_first_derivative(ctx, &s, &A) : rmaop_op_create_second_derivative(ctx, &s, &A);
  use_op(ctx, &A, st, order == 1 ? "rmaop_op_create_first_derivative" : "rmaop_op_create_second_derivative", cells,
         exact_dtype(s.dtype) && (s.sampling == 0 || tame(s.sampling)));
}

static void fuzz_laplacian(rmaop_ctx ctx, input *in) {
  char name[48];
  rmaop_laplacian_spec s;
  memset(&s, 0, sizeof s);
  fill_grid(in, &s.grid);
  s.naxes = i32(in);
  int ok = 1;
  for (int i = 0; i < RMAOP_MAX_DIMS; ++i) {
    s.axes[i] = i32(in);
    s.weights[i] = u8(in) < 96 ? 0 : f64(in);
    s.sampling[i] = u8(in) < 96 ? 0 : f64(in);
    ok &= (s.weights[i] == 0 || tame(s.weights[i])) && (s.sampling[i] == 0 || tame(s.sampling[i]));
  }
  s.edge = i32(in);
  s.kind = (rmaop_deriv_kind)i32(in);
  s.dtype = dtype(in);
  s.label = label(in, name);
  const int64_t cells = grid_cells(s.grid.ndim, s.grid.dims, RMAOP_MAX_DIMS);
  if (cells > FUZZ_MAX_CELLS)
    return;
  rmaop_op A = NULL;
  use_op(ctx, &A, rmaop_op_create_laplacian(ctx, &s, &A), "rmaop_op_create_laplacian", cells,
         ok && exact_dtype(s.dtype));
}

static void fuzz_gradient(rmaop_ctx ctx, input *in) {
  char name[48];
  rmaop_gradient_spec s;
  memset(&s, 0, sizeof s);
  fill_grid(in, &s.grid);
  int ok = 1;
  for (int i = 0; i < RMAOP_MAX_DIMS; ++i) {
    s.sampling[i] = u8(in) < 96 ? 0 : f64(in);
    ok &= s.sampling[i] == 0 || tame(s.sampling[i]);
  }
  s.edge = i32(in);
  s.kind = (rmaop_deriv_kind)i32(in);
  s.dtype = dtype(in);
  s.label = label(in, name);
  /* the data vector holds ndim copies of the grid */
  const int64_t cells = mul_sat(grid_cells(s.grid.ndim, s.grid.dims, RMAOP_MAX_DIMS), RMAOP_MAX_DIMS);
  if (cells > FUZZ_MAX_CELLS)
    return;
  rmaop_op A = NULL;
  use_op(ctx, &A, rmaop_op_create_gradient(ctx, &s, &A), "rmaop_op_create_gradient", cells, ok && exact_dtype(s.dtype));
}

static void fuzz_halo(rmaop_ctx ctx, input *in) {
  char name[48];
  rmaop_halo_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = i32(in);
  int64_t cells = 1;
  for (int d = 0; d < RMAOP_HALO_MAX_DIMS; ++d) {
    s.dims[d] = i64(in);
    s.procs[d] = u8(in) < 128 ? (int)(d < 1) : i32(in); /* mostly a valid 1-rank grid */
    s.lo[d] = u8(in) < 128 ? u8(in) % 4 : i64(in);
    s.hi[d] = u8(in) < 128 ? u8(in) % 4 : i64(in);
    if (d < s.ndim) { /* the extended block, with every term at least 0 and the whole at least 1 per axis */
      int64_t ext = s.dims[d] > 1 ? s.dims[d] : 1;
      ext = s.lo[d] > 0 ? (__builtin_add_overflow(ext, s.lo[d], &ext) ? INT64_MAX : ext) : ext;
      ext = s.hi[d] > 0 ? (__builtin_add_overflow(ext, s.hi[d], &ext) ? INT64_MAX : ext) : ext;
      cells = mul_sat(cells, ext);
    }
  }
  s.dtype = dtype(in);
  s.label = label(in, name);
  if (cells > FUZZ_MAX_CELLS)
    return;
  rmaop_op A = NULL;
  const rmaop_status st = rmaop_op_create_halo(ctx, &s, &A);
  rmaop_halo_info info;
  if (st == RMAOP_OK) /* use_op checks the create's status */
    checked(ctx, rmaop_op_halo_get_info(A, &info), "rmaop_op_halo_get_info");
  /* the halo is a copy-in plus exchange (not its own adjoint's inverse): no error bound, but it must run */
  use_op(ctx, &A, st, "rmaop_op_create_halo", cells, 0);
}

static void fuzz_matmul(rmaop_ctx ctx, input *in) {
  char name[48];
  rmaop_matmul_spec s;
  memset(&s, 0, sizeof s);
  s.kind = (rmaop_matmul_kind)(u8(in) < 224 ? u8(in) % 2 : i32(in));
  s.dtype = dtype(in);
  s.N = i64(in);
  s.K = i64(in);
  s.M = i64(in);
  const int64_t n = s.N > 1 ? s.N : 1, k = s.K > 1 ? s.K : 1, m = s.M > 1 ? s.M : 1;
  const int64_t cells = mul_sat(n, k) > mul_sat(k, m) ? mul_sat(n, k) : mul_sat(k, m);
  if (cells > FUZZ_MAX_CELLS || mul_sat(n, m) > FUZZ_MAX_CELLS)
    return;
  const uint8_t shape = u8(in);
  if (shape < 160) { /* the block this rank must hold (rmaop_op_matmul_get_blocks), or anything */
    s.nrows = s.N;
    s.ncols = s.K;
  } else {
    s.nrows = i64(in);
    s.ncols = i64(in);
  }
  s.label = label(in, name);
  /* A: exactly nrows x ncols elements when that is a size the harness allows, else NULL */
  void *a = NULL;
  if (s.nrows >= 0 && s.ncols >= 0 && mul_sat(s.nrows, s.ncols) <= FUZZ_MAX_CELLS && !(shape & 1))
    if (!(a = calloc((size_t)(s.nrows * s.ncols) * esize(s.dtype) + 1, 1)))
      abort();
  s.A = a;
  rmaop_matmul_blocks b;
  checked(ctx, rmaop_op_matmul_get_blocks(ctx, s.kind, s.N, s.K, s.M, 0, &b), "rmaop_op_matmul_get_blocks");
  rmaop_op A = NULL;
  use_op(ctx, &A, rmaop_op_create_matmul(ctx, &s, &A), "rmaop_op_create_matmul",
         mul_sat(n, m) > cells ? mul_sat(n, m) : cells, exact_dtype(s.dtype));
  free(a);
}

/* ---- the target --------------------------------------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  int provided;
  verbose = getenv("FUZZ_SPEC_VERBOSE") && atoi(getenv("FUZZ_SPEC_VERBOSE")) > 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
    abort();
  for (int i = 0; i < 4; ++i) {
    rmaop_ctx_options o;
    rmaop_ctx_options_init(&o);
    o.backend = i < 3 ? "rma" : "twosided";
    o.memory = "host";
    o.trace = 0; /* traced sites accumulate per label: memory would grow with the run */
    o.timeout = 30;
    o.rma.sync = i == 0 ? "fence" : i == 1 ? "pscw" : "lock";
    o.rma.transport = "auto";
    rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctxs[i]);
    if (st != RMAOP_OK) {
      fprintf(stderr, "fuzz_spec: cannot create the %s context: %s\n", ctx_names[i], rmaop_ctx_last_error(NULL));
      abort();
    }
  }
  return 0; /* MPI_Finalize is not needed: the process ends with the fuzzer */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  const uint8_t head = u8(&in);
  rmaop_ctx ctx = ctxs[(head >> 4) % 4];
  if (verbose)
    fprintf(stderr, "fuzz_spec: context %s, spec %d\n", ctx_names[(head >> 4) % 4], head % 8);
  switch (head % 8) {
  case 0:
  case 7:
    fuzz_plan(ctx, &in);
    break;
  case 1:
    fuzz_deriv(ctx, &in, 1);
    break;
  case 2:
    fuzz_deriv(ctx, &in, 2);
    break;
  case 3:
    fuzz_laplacian(ctx, &in);
    break;
  case 4:
    fuzz_halo(ctx, &in);
    break;
  case 5:
    fuzz_gradient(ctx, &in);
    break;
  default:
    fuzz_matmul(ctx, &in);
    break;
  }
  return 0;
}
