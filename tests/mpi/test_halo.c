/* Tests of the N-D halo operator and the gradient.
 *
 * Reference (serial, computed on every rank from the whole global array, never from library internals):
 * - halo: the grid is split as MPI_Dims_create + row-major coordinates (MPI_Cart_create with reorder = 0),
 *   blocks of n/p + (c < n mod p) cells; rank r's extended block is the global array read at
 *   [offset - lo, offset + local + hi) along every axis, zero outside the array (PyLops-MPI MPIHalo's forward).
 *   The adjoint is that map's transpose: every extended cell of every rank adds into the cell it was read
 *   from. Copies are compared exactly; sums within rt_tol(dtype).
 * - gradient: PyLops FirstDerivative formulas along each axis of the global array (forward, backward,
 *   centered 3 and 5 points, edge on/off, sampling per axis); the data vector is, per rank, the ndim
 *   derivatives of the rank's rows one after the other; the adjoint is the stencils' transpose.
 * Every operator also passes rmaop_op_dottest for all four dtypes, and begin/end gives apply's result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "rmaop_test.h"

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

#define HMAX RMAOP_HALO_MAX_DIMS

/* ---- the test's own cartesian split ---- */

typedef struct {
  int ndim;
  int64_t dims[HMAX];
  int procs[HMAX]; /* 0: MPI_Dims_create */
  int64_t lo[HMAX], hi[HMAX];
} hcase;

typedef struct {
  int coords[HMAX];
  int64_t loc[HMAX], off[HMAX], ext[HMAX], base[HMAX]; /* base = off - lo: global index of extended cell 0 */
  int64_t nloc, next;
} box;

static box box_of(const hcase *c, const int *procs, int rank) {
  box b = {0};
  for (int d = c->ndim - 1, r = rank; d >= 0; --d) {
    b.coords[d] = r % procs[d];
    r /= procs[d];
  }
  b.nloc = b.next = 1;
  for (int d = 0; d < c->ndim; ++d) {
    const int64_t q = c->dims[d] / procs[d], m = c->dims[d] % procs[d], k = b.coords[d];
    b.loc[d] = q + (k < m);
    b.off[d] = k * q + (k < m ? k : m);
    b.ext[d] = b.loc[d] + c->lo[d] + c->hi[d];
    b.base[d] = b.off[d] - c->lo[d];
    b.nloc *= b.loc[d];
    b.next *= b.ext[d];
  }
  return b;
}

/* Multi-index of flat index i in a row-major box of extents `ext`. */
static void unflat(int nd, const int64_t *ext, int64_t i, int64_t *idx) {
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = i % ext[d];
    i /= ext[d];
  }
}
static int64_t flat(int nd, const int64_t *ext, const int64_t *idx) {
  int64_t f = 0;
  for (int d = 0; d < nd; ++d)
    f = f * ext[d] + idx[d];
  return f;
}

/* ---- halo: forward, adjoint, dot test, begin/end, info ---- */

/* Checks the info against the test's split; 1 when equal. */
static int info_matches(rmaop_op A, const hcase *c, const int *procs, const box *me, char *msg, size_t msz) {
  rmaop_halo_info in;
  if (rmaop_op_halo_get_info(A, &in) != RMAOP_OK)
    return snprintf(msg, msz, "halo_get_info failed"), 0;
  int ok = in.ndim == c->ndim;
  for (int d = 0; d < c->ndim && ok; ++d)
    ok = in.procs[d] == procs[d] && in.coords[d] == me->coords[d] && in.local[d] == me->loc[d] &&
         in.offset[d] == me->off[d] && in.extended[d] == me->ext[d];
  if (!ok)
    snprintf(msg, msz, "halo info differs from the reference split (axis 0: procs %d coords %d local %lld)",
             in.procs[0], in.coords[0], (long long)in.local[0]);
  return ok;
}

/* Forward against the global array: every extended cell exact; counts the corner / edge ghosts (ghost along
 * two axes or more) holding a non-zero neighbour value. */
static int check_forward(rmaop_dtype dt, const hcase *c, const box *me, const double _Complex *G, const void *ybuf,
                         int *ncorner, char *msg, size_t msz) {
  int64_t e[HMAX], g[HMAX];
  for (int64_t k = 0; k < me->next; ++k) {
    unflat(c->ndim, me->ext, k, e);
    int inside = 1, ghost_axes = 0;
    for (int d = 0; d < c->ndim; ++d) {
      g[d] = me->base[d] + e[d];
      inside &= g[d] >= 0 && g[d] < c->dims[d];
      ghost_axes += e[d] < c->lo[d] || e[d] >= c->lo[d] + me->loc[d];
    }
    const double _Complex want = inside ? G[flat(c->ndim, c->dims, g)] : 0, got = rt_load(dt, ybuf, k);
    if (got != want)
      return snprintf(msg, msz,
                      "forward: extended cell %lld (global first index %lld, inside %d) is %g%+gi, want %g%+gi",
                      (long long)k, (long long)g[0], inside, creal(got), cimag(got), creal(want), cimag(want)),
             0;
    *ncorner += ghost_axes >= 2 && want != 0;
  }
  return 1;
}

/* The adjoint's reference on this rank: the sum of every rank's extended cells read from my cells. */
static void adjoint_reference(rmaop_dtype dt, const hcase *c, const int *procs, const box *me, double _Complex *want,
                              double *scale) {
  int64_t doff = 0, e[HMAX], g[HMAX], l[HMAX];
  for (int r = 0; r < rt_size; ++r) {
    const box b = box_of(c, procs, r);
    for (int64_t k = 0; k < b.next; ++k) {
      unflat(c->ndim, b.ext, k, e);
      int mine = 1;
      for (int d = 0; d < c->ndim; ++d) {
        g[d] = b.base[d] + e[d];
        l[d] = g[d] - me->off[d];
        mine &= l[d] >= 0 && l[d] < me->loc[d];
      }
      if (!mine)
        continue;
      const double _Complex v = rt_round(dt, rt_value(doff + k, 2));
      want[flat(c->ndim, me->loc, l)] += v;
      scale[flat(c->ndim, me->loc, l)] += cabs(v);
    }
    doff += b.next;
  }
}

/* My part of the adjoint's input: value series 2 by global data index. */
static void *adjoint_input(rmaop_dtype dt, const hcase *c, const int *procs, const box *me) {
  int64_t doff = 0;
  for (int r = 0; r < rt_rank; ++r)
    doff += box_of(c, procs, r).next;
  void *buf = rt_alloc(dt, me->next);
  for (int64_t k = 0; k < me->next; ++k)
    rt_store(dt, buf, k, rt_value(doff + k, 2));
  return buf;
}

static int check_adjoint(rmaop_dtype dt, const hcase *c, const int *procs, const box *me, const void *xbuf, char *msg,
                         size_t msz) {
  double _Complex *want = calloc((size_t)me->nloc + 1, sizeof *want);
  double *scale = calloc((size_t)me->nloc + 1, sizeof *scale);
  adjoint_reference(dt, c, procs, me, want, scale);
  int ok = 1;
  for (int64_t i = 0; i < me->nloc && ok; ++i) {
    const double _Complex got = rt_load(dt, xbuf, i);
    if (!rt_close(got, want[i], rt_tol(dt), scale[i]))
      ok = 0, snprintf(msg, msz, "adjoint: cell %lld is %.17g%+.17gi, want %.17g%+.17gi", (long long)i, creal(got),
                       cimag(got), creal(want[i]), cimag(want[i]));
  }
  free(want);
  free(scale);
  return ok;
}

/* Local values of v, bitwise equal to buf? */
static int same_as(rmaop_vec v, const void *buf, rmaop_dtype dt, int64_t n) {
  void *b = rt_alloc(dt, n);
  int ok = rmaop_vec_read_local(v, b) == RMAOP_OK && memcmp(b, buf, (size_t)n * rmaop_dtype_size(dt)) == 0;
  free(b);
  return ok;
}

/* Axes split over more than one rank with a ghost width: with two of them, corners must arrive. */
static int expects_corners(const hcase *c, const int *procs) {
  int n = 0;
  for (int d = 0; d < c->ndim; ++d)
    n += procs[d] > 1 && (c->lo[d] > 0 || c->hi[d] > 0);
  return n >= 2;
}

static rmaop_halo_spec spec_of(const hcase *c, rmaop_dtype dt, const char *name) {
  rmaop_halo_spec spec = {.ndim = c->ndim, .dtype = dt, .label = name};
  memcpy(spec.dims, c->dims, sizeof spec.dims);
  memcpy(spec.procs, c->procs, sizeof spec.procs);
  memcpy(spec.lo, c->lo, sizeof spec.lo);
  memcpy(spec.hi, c->hi, sizeof spec.hi);
  return spec;
}

static void check_halo(const hcase *c, rmaop_dtype dt, const char *name) {
  int procs[HMAX] = {0};
  memcpy(procs, c->procs, sizeof procs);
  MPI_Dims_create(rt_size, c->ndim, procs);
  const box me = box_of(c, procs, rt_rank);
  const rmaop_halo_spec spec = spec_of(c, dt, name);
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_halo(ctx, &spec, &A));
  rmaop_op_info oi = {0};
  RT_OK(rmaop_op_get_info(A, &oi));
  rmaop_vec x = NULL, y = NULL, y2 = NULL, yin = NULL, xa = NULL;
  RT_OK(rmaop_vec_create(oi.model, dt, &x));
  RT_OK(rmaop_vec_create(oi.data, dt, &y));
  RT_OK(rmaop_vec_create(oi.data, dt, &y2));
  RT_OK(rmaop_vec_create(oi.data, dt, &yin));
  RT_OK(rmaop_vec_create(oi.model, dt, &xa));

  int64_t total = 1, idx[HMAX], g[HMAX];
  for (int d = 0; d < c->ndim; ++d)
    total *= c->dims[d];
  double _Complex *G = malloc((size_t)total * sizeof *G);
  for (int64_t i = 0; i < total; ++i)
    G[i] = rt_round(dt, rt_value(i, 1));
  void *xbuf = rt_alloc(dt, me.nloc), *ybuf = rt_alloc(dt, me.next), *yinbuf = adjoint_input(dt, c, procs, &me);
  for (int64_t i = 0; i < me.nloc; ++i) {
    unflat(c->ndim, me.loc, i, idx);
    for (int d = 0; d < c->ndim; ++d)
      g[d] = me.off[d] + idx[d];
    rt_store(dt, xbuf, i, G[flat(c->ndim, c->dims, g)]);
  }
  RT_OK(rmaop_vec_write_local(x, xbuf));
  RT_OK(rmaop_vec_write_local(yin, yinbuf));
  RT_OK(rmaop_vec_set(y, 77.0)); /* garbage: every cell must be overwritten */
  RT_OK(rmaop_vec_set(xa, -33.0));
  RT_OK(rmaop_op_apply(A, x, y));
  RT_OK(rmaop_op_apply_begin(A, x, y2));
  RT_OK(rmaop_vec_scale(xa, 1.0)); /* other work between begin and end */
  RT_OK(rmaop_op_apply_end(A));
  RT_OK(rmaop_op_apply_adjoint(A, yin, xa));
  double rel = -1;
  RT_OK(rmaop_op_dottest(A, 11u, &rel));

  char msg[400] = "";
  int ncorner = 0, ok = info_matches(A, c, procs, &me, msg, sizeof msg) && rmaop_vec_read_local(y, ybuf) == RMAOP_OK;
  ok = ok && check_forward(dt, c, &me, G, ybuf, &ncorner, msg, sizeof msg);
  if (ok && !same_as(y2, ybuf, dt, me.next))
    ok = 0, snprintf(msg, sizeof msg, "begin/end differs from apply");
  if (ok && rmaop_vec_read_local(xa, xbuf) != RMAOP_OK)
    ok = 0, snprintf(msg, sizeof msg, "read xa failed");
  ok = ok && check_adjoint(dt, c, procs, &me, xbuf, msg, sizeof msg);
  if (ok && !(rel >= 0 && rel < rt_tol(dt)))
    ok = 0, snprintf(msg, sizeof msg, "dot test rel_err %g", rel);
  RT_CHECK(ok, "%s %s (grid %d x %d x %d x %d): %s", name, rmaop_dtype_name(dt), procs[0], c->ndim > 1 ? procs[1] : 1,
           c->ndim > 2 ? procs[2] : 1, c->ndim > 3 ? procs[3] : 1, msg);
  const int corners = rt_sum_int(ncorner);
  RT_CHECK(!expects_corners(c, procs) || corners > 0, "%s %s: no corner/edge ghost cell was filled", name,
           rmaop_dtype_name(dt));

  free(G);
  free(xbuf);
  free(ybuf);
  free(yinbuf);
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&y2);
  rmaop_vec_destroy(&yin);
  rmaop_vec_destroy(&xa);
  rmaop_op_destroy(&A);
}

START_TEST(test_halo_1d) {
  const hcase c = {.ndim = 1, .dims = {13}, .lo = {2}, .hi = {1}};
  for (int t = 0; t < 4; ++t)
    check_halo(&c, rt_dtypes[t], "halo 1-D");
  const hcase none = {.ndim = 1, .dims = {5}};
  check_halo(&none, RMAOP_F64, "halo 1-D zero widths");
}
END_TEST

START_TEST(test_halo_2d) {
  const int P = rt_size;
  const hcase cases[] = {
      {.ndim = 2, .dims = {9, 10}, .lo = {1, 2}, .hi = {2, 0}},                  /* MPI_Dims_create */
      {.ndim = 2, .dims = {9, 10}, .procs = {1, P}, .lo = {1, 2}, .hi = {2, 0}}, /* 1 x P */
      {.ndim = 2, .dims = {9, 10}, .procs = {P, 1}, .lo = {1, 2}, .hi = {2, 0}}, /* P x 1 */
      {.ndim = 2, .dims = {9, 10}, .procs = {0, 1}, .lo = {2, 1}, .hi = {1, 1}}, /* half free */
  };
  const char *names[] = {"halo 2-D dims_create", "halo 2-D 1xP", "halo 2-D Px1", "halo 2-D (0, 1)"};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k)
    for (int t = 0; t < 4; ++t)
      check_halo(&cases[k], rt_dtypes[t], names[k]);
}
END_TEST

START_TEST(test_halo_3d_4d) {
  const int P = rt_size;
  const hcase c3 = {.ndim = 3, .dims = {6, 5, 7}, .lo = {1, 1, 2}, .hi = {1, 2, 1}};
  hcase c3x = c3;
  if (P % 2 == 0)
    c3x.procs[0] = 2, c3x.procs[1] = 1, c3x.procs[2] = P / 2; /* 2 x 1 x P/2: corners in axes 0, 2 */
  else
    c3x.procs[0] = 1, c3x.procs[1] = 1, c3x.procs[2] = P;
  const hcase c4 = {.ndim = 4, .dims = {3, 4, 3, 5}, .lo = {1, 1, 0, 1}, .hi = {0, 1, 1, 0}};
  for (int t = 0; t < 4; ++t) {
    check_halo(&c3, rt_dtypes[t], "halo 3-D dims_create");
    check_halo(&c3x, rt_dtypes[t], "halo 3-D explicit");
  }
  check_halo(&c4, RMAOP_F64, "halo 4-D");
  check_halo(&c4, RMAOP_C64, "halo 4-D");
}
END_TEST

/* in and hin = the same values (series 1 forward, 2 adjoint, shifted by rank and round); out = A in (adjoint: A^H in)
 * and hout = H hin must be bitwise equal. */
static void same_way(rmaop_op A, rmaop_op H, int adjoint, rmaop_vec in, rmaop_vec hin, rmaop_vec out, rmaop_vec hout,
                     int round, const char *name) {
  rmaop_vec_info ii, oi;
  RT_OK(rmaop_vec_get_info(hin, &ii));
  RT_OK(rmaop_vec_get_info(hout, &oi));
  const rmaop_dtype dt = ii.dtype;
  void *ib = rt_alloc(dt, ii.local_n), *ob = rt_alloc(dt, oi.local_n);
  for (int64_t i = 0; i < ii.local_n; ++i)
    rt_store(dt, ib, i, rt_value(i + 1000 * rt_rank + round, 1 + adjoint));
  RT_OK(rmaop_vec_write_local(in, ib));
  RT_OK(rmaop_vec_write_local(hin, ib));
  RT_OK(adjoint ? rmaop_op_apply_adjoint(A, in, out) : rmaop_op_apply(A, in, out));
  RT_OK(adjoint ? rmaop_op_apply_adjoint(H, hin, hout) : rmaop_op_apply(H, hin, hout));
  RT_OK(rmaop_vec_read_local(hout, ob));
  RT_CHECK(same_as(out, ob, dt, oi.local_n), "%s %s round %d: %s differs from the host plans'", name,
           rmaop_dtype_name(dt), round, adjoint ? "adjoint" : "forward");
  free(ib);
  free(ob);
}

/* The operator of the test's context (on device memory over ipc with RMAOP_HALO=kernel: the exchange by kernel puts)
 * against the same on a host context of the twosided backend (plans): bitwise the same forward and adjoint, three
 * rounds each way (both window halves, twice). */
static void halo_same_bits(rmaop_ctx hctx, const hcase *c, rmaop_dtype dt, const char *name) {
  const rmaop_halo_spec spec = spec_of(c, dt, name);
  rmaop_op A = NULL, H = NULL;
  RT_OK(rmaop_op_create_halo(ctx, &spec, &A));
  RT_OK(rmaop_op_create_halo(hctx, &spec, &H));
  rmaop_op_info oi = {0}, hi = {0};
  RT_OK(rmaop_op_get_info(A, &oi));
  RT_OK(rmaop_op_get_info(H, &hi));
  rmaop_vec x = NULL, y = NULL, hx = NULL, hy = NULL;
  RT_OK(rmaop_vec_create(oi.model, dt, &x));
  RT_OK(rmaop_vec_create(oi.data, dt, &y));
  RT_OK(rmaop_vec_create(hi.model, dt, &hx));
  RT_OK(rmaop_vec_create(hi.data, dt, &hy));
  for (int round = 0; round < 3; ++round) {
    same_way(A, H, 0, x, hx, y, hy, round, name);
    same_way(A, H, 1, y, hy, x, hx, round, name);
  }
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&hx), rmaop_vec_destroy(&hy);
  rmaop_op_destroy(&A), rmaop_op_destroy(&H);
}

START_TEST(test_halo_same_bits) {
  rmaop_ctx hctx = rt_host_ctx();
  const int P = rt_size;
  const hcase c1 = {.ndim = 1, .dims = {13}, .lo = {2}, .hi = {1}};
  const hcase c2 = {.ndim = 2, .dims = {9, 10}, .lo = {1, 2}, .hi = {2, 1}};
  const hcase c3 = {
      .ndim = 3, .dims = {6, 5, 7}, .procs = {P % 2 ? 1 : 2, 1, P % 2 ? P : P / 2}, .lo = {1, 1, 2}, .hi = {1, 2, 1}};
  const hcase c4 = {.ndim = 4, .dims = {3, 4, 3, 5}, .lo = {1, 1, 0, 1}, .hi = {0, 1, 1, 0}};
  for (int t = 0; t < 4; ++t)
    halo_same_bits(hctx, &c2, rt_dtypes[t], "halo 2-D");
  halo_same_bits(hctx, &c1, RMAOP_F64, "halo 1-D");
  halo_same_bits(hctx, &c3, RMAOP_C128, "halo 3-D");
  halo_same_bits(hctx, &c4, RMAOP_F32, "halo 4-D");
  rmaop_ctx_destroy(&hctx);
}
END_TEST

/* ---- gradient ---- */

/* PyLops FirstDerivative: c[k + 2] is the weight of x[i + k] in y[i]. */
static void d1_coef(rmaop_deriv_kind kind, int edge, double h, int64_t N, int64_t i, double c[5]) {
  memset(c, 0, 5 * sizeof *c);
  switch (kind) {
  case RMAOP_DERIV_FORWARD: /* y[i] = (x[i+1] - x[i]) / h, last row 0 */
    if (i < N - 1)
      c[3] = 1 / h, c[2] = -1 / h;
    break;
  case RMAOP_DERIV_BACKWARD: /* y[i] = (x[i] - x[i-1]) / h, first row 0 */
    if (i > 0)
      c[2] = 1 / h, c[1] = -1 / h;
    break;
  case RMAOP_DERIV_CENTERED3:
    if (i >= 1 && i <= N - 2)
      c[3] = 0.5 / h, c[1] = -0.5 / h;
    else if (edge && i == 0)
      c[3] = 1 / h, c[2] = -1 / h;
    else if (edge && i == N - 1)
      c[2] = 1 / h, c[1] = -1 / h;
    break;
  case RMAOP_DERIV_CENTERED5:
    if (i >= 2 && i <= N - 3)
      c[0] = 1 / (12 * h), c[1] = -2 / (3 * h), c[3] = 2 / (3 * h), c[4] = -1 / (12 * h);
    else if (edge && i == 0)
      c[3] = 1 / h, c[2] = -1 / h;
    else if (edge && (i == 1 || i == N - 2))
      c[3] = 0.5 / h, c[1] = -0.5 / h;
    else if (edge && i == N - 1)
      c[2] = 1 / h, c[1] = -1 / h;
    break;
  }
}

typedef struct {
  int ndim;
  int64_t dims[HMAX];
  double h[HMAX];
  rmaop_deriv_kind kind;
  int edge;
  int uneven; /* axis 0: one row on every rank but the last (rmaop_grid.local_rows) */
} gcase;

/* Rows of axis 0 on rank r: PyLops-MPI's balanced split, or the uneven one. */
static int64_t grad_rows(const gcase *c, int r) {
  if (c->uneven)
    return r < rt_size - 1 ? 1 : c->dims[0] - (rt_size - 1);
  return c->dims[0] / rt_size + (r < c->dims[0] % rt_size);
}

/* out (+)= D_axis in (adjoint: D_axis^T in) over the whole array; |terms| into scale when given. */
static void deriv_serial(const gcase *c, int axis, int adjoint, const double _Complex *in, double _Complex *out,
                         double *scale, int64_t total) {
  int64_t stride = 1, idx[HMAX];
  for (int d = axis + 1; d < c->ndim; ++d)
    stride *= c->dims[d];
  for (int64_t f = 0; f < total; ++f) {
    unflat(c->ndim, c->dims, f, idx);
    double w[5];
    d1_coef(c->kind, c->edge, c->h[axis] != 0 ? c->h[axis] : 1.0, c->dims[axis], idx[axis], w);
    for (int k = -2; k <= 2; ++k) {
      if (w[k + 2] == 0)
        continue;
      const int64_t j = f + k * stride; /* stays on the line: w is 0 where i + k leaves [0, N) */
      if (adjoint)
        out[j] += w[k + 2] * in[f];
      else
        out[f] += w[k + 2] * in[j];
      if (scale)
        scale[adjoint ? j : f] += fabs(w[k + 2]) * cabs(in[adjoint ? f : j]);
    }
  }
}

static void check_gradient(const gcase *c, rmaop_dtype dt, const char *name) {
  rmaop_gradient_spec spec = {.grid = {.ndim = c->ndim, .local_rows = c->uneven ? grad_rows(c, rt_rank) : -1},
                              .edge = c->edge,
                              .kind = c->kind,
                              .dtype = dt};
  memcpy(spec.grid.dims, c->dims, (size_t)c->ndim * sizeof(int64_t));
  memcpy(spec.sampling, c->h, (size_t)c->ndim * sizeof(double));
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_gradient(ctx, &spec, &A));
  int64_t total = 1;
  for (int d = 0; d < c->ndim; ++d)
    total *= c->dims[d];
  const int64_t inner = total / c->dims[0];
  int64_t nloc[8], off[8], doff[8], dsum = 0;
  for (int r = 0, o = 0; r < rt_size; ++r) {
    const int64_t rows = grad_rows(c, r);
    nloc[r] = rows * inner, off[r] = o * inner, doff[r] = dsum;
    o += (int)rows, dsum += c->ndim * nloc[r];
  }
  const int64_t n = nloc[rt_rank], dn = c->ndim * n;
  double _Complex *G = calloc((size_t)total, sizeof *G), *W = calloc((size_t)total * (size_t)c->ndim, sizeof *W);
  double _Complex *Y = calloc((size_t)total * (size_t)c->ndim, sizeof *Y), *X = calloc((size_t)total, sizeof *X);
  double *ys = calloc((size_t)total * (size_t)c->ndim, sizeof *ys), *xs = calloc((size_t)total, sizeof *xs);
  for (int64_t i = 0; i < total; ++i)
    G[i] = rt_round(dt, rt_value(i, 1));
  /* W[d]: part d of the adjoint's input, by global element (series 2 by global data index) */
  for (int r = 0; r < rt_size; ++r)
    for (int d = 0; d < c->ndim; ++d)
      for (int64_t j = 0; j < nloc[r]; ++j)
        W[d * total + off[r] + j] = rt_round(dt, rt_value(doff[r] + d * nloc[r] + j, 2));
  for (int d = 0; d < c->ndim; ++d) {
    deriv_serial(c, d, 0, G, Y + d * total, ys + d * total, total);
    deriv_serial(c, d, 1, W + d * total, X, xs, total);
  }
  void *xbuf = rt_alloc(dt, n), *ybuf = rt_alloc(dt, dn), *yin = rt_alloc(dt, dn), *xa = rt_alloc(dt, n);
  for (int64_t j = 0; j < n; ++j)
    rt_store(dt, xbuf, j, G[off[rt_rank] + j]);
  for (int d = 0; d < c->ndim; ++d)
    for (int64_t j = 0; j < n; ++j)
      rt_store(dt, yin, d * n + j, W[d * total + off[rt_rank] + j]);
  rmaop_op_info oi = {0};
  RT_OK(rmaop_op_get_info(A, &oi));
  rmaop_vec x = NULL, y = NULL, yv = NULL, xv = NULL;
  RT_OK(rmaop_vec_create(oi.model, dt, &x));
  RT_OK(rmaop_vec_create(oi.data, dt, &y));
  RT_OK(rmaop_vec_create(oi.data, dt, &yv));
  RT_OK(rmaop_vec_create(oi.model, dt, &xv));
  RT_OK(rmaop_vec_write_local(x, xbuf));
  RT_OK(rmaop_vec_write_local(yv, yin));
  RT_OK(rmaop_vec_set(y, 77.0));
  RT_OK(rmaop_vec_set(xv, -33.0));
  RT_OK(rmaop_op_apply(A, x, y));
  RT_OK(rmaop_op_apply_adjoint(A, yv, xv));
  /* split applications with other work in between: apply's result bit for bit */
  rmaop_vec y2 = NULL, x2 = NULL;
  RT_OK(rmaop_vec_duplicate(y, &y2));
  RT_OK(rmaop_vec_duplicate(x, &x2));
  RT_OK(rmaop_op_apply_begin(A, x, y2));
  RT_OK(rmaop_vec_scale(yv, 1.0));
  RT_OK(rmaop_op_apply_end(A));
  RT_OK(rmaop_op_apply_adjoint_begin(A, yv, x2));
  RT_OK(rmaop_vec_scale(x, 1.0));
  RT_OK(rmaop_op_apply_adjoint_end(A));
  void *y2buf = rt_alloc(dt, dn), *x2buf = rt_alloc(dt, n);
  RT_OK(rmaop_vec_read_local(y2, y2buf));
  RT_OK(rmaop_vec_read_local(x2, x2buf));
  rmaop_vec_destroy(&y2);
  rmaop_vec_destroy(&x2);
  double rel = -1;
  RT_OK(rmaop_op_dottest(A, 5u, &rel));
  RT_OK(rmaop_vec_read_local(y, ybuf));
  RT_OK(rmaop_vec_read_local(xv, xa));

  rmaop_vec_info yi = {0};
  RT_OK(rmaop_vec_get_info(y, &yi));
  char msg[400] = "";
  int ok = yi.local_n == dn && yi.offset == doff[rt_rank];
  if (!ok)
    snprintf(msg, sizeof msg, "data layout %lld@%lld, want %lld@%lld", (long long)yi.local_n, (long long)yi.offset,
             (long long)dn, (long long)doff[rt_rank]);
  for (int d = 0; d < c->ndim && ok; ++d)
    for (int64_t j = 0; j < n && ok; ++j) {
      const int64_t gi = d * total + off[rt_rank] + j;
      const double _Complex got = rt_load(dt, ybuf, d * n + j);
      if (!rt_close(got, Y[gi], rt_tol(dt), ys[gi]))
        ok = 0, snprintf(msg, sizeof msg, "forward part %d element %lld: %.17g%+.17gi, want %.17g%+.17gi", d,
                         (long long)j, creal(got), cimag(got), creal(Y[gi]), cimag(Y[gi]));
    }
  for (int64_t j = 0; j < n && ok; ++j) {
    const int64_t gi = off[rt_rank] + j;
    const double _Complex got = rt_load(dt, xa, j);
    if (!rt_close(got, X[gi], rt_tol(dt), xs[gi]))
      ok = 0, snprintf(msg, sizeof msg, "adjoint element %lld: %.17g%+.17gi, want %.17g%+.17gi", (long long)j,
                       creal(got), cimag(got), creal(X[gi]), cimag(X[gi]));
  }
  /* by value (0 == -0: the outputs started from different garbage) */
  for (int64_t j = 0; j < dn && ok; ++j)
    if (rt_load(dt, y2buf, j) != rt_load(dt, ybuf, j))
      ok = 0, snprintf(msg, sizeof msg, "begin/end: y[%lld] differs", (long long)j);
  for (int64_t j = 0; j < n && ok; ++j)
    if (rt_load(dt, x2buf, j) != rt_load(dt, xa, j))
      ok = 0, snprintf(msg, sizeof msg, "begin/end: x[%lld] differs", (long long)j);
  if (ok && !(rel >= 0 && rel < rt_tol(dt)))
    ok = 0, snprintf(msg, sizeof msg, "dot test rel_err %g", rel);
  RT_CHECK(ok, "%s %s (kind %d, edge %d): %s", name, rmaop_dtype_name(dt), (int)c->kind, c->edge, msg);

  free(G), free(W), free(Y), free(X), free(ys), free(xs);
  free(xbuf), free(ybuf), free(yin), free(xa), free(y2buf), free(x2buf);
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&yv);
  rmaop_vec_destroy(&xv);
  rmaop_op_destroy(&A);
}

START_TEST(test_gradient) {
  const rmaop_deriv_kind kinds[] = {RMAOP_DERIV_CENTERED3, RMAOP_DERIV_FORWARD};
  for (int k = 0; k < 2; ++k)
    for (int edge = 0; edge < 2; ++edge) {
      const gcase c2 = {.ndim = 2, .dims = {7, 5}, .h = {1.0, 2.0}, .kind = kinds[k], .edge = edge};
      const gcase c3 = {.ndim = 3, .dims = {5, 3, 4}, .h = {0.5, 0, 3.0}, .kind = kinds[k], .edge = edge};
      for (int t = 0; t < 4; ++t) {
        check_gradient(&c2, rt_dtypes[t], "gradient 2-D");
        check_gradient(&c3, rt_dtypes[t], "gradient 3-D");
      }
    }
  /* an empty rank at 4 ranks (3 rows), the 5-point and backward stencils */
  const gcase thin = {.ndim = 2, .dims = {3, 6}, .h = {1.5, 1.0}, .kind = RMAOP_DERIV_CENTERED3, .edge = 1};
  const gcase c5 = {.ndim = 2, .dims = {9, 6}, .kind = RMAOP_DERIV_CENTERED5, .edge = 1};
  const gcase bw = {.ndim = 3, .dims = {4, 3, 2}, .kind = RMAOP_DERIV_BACKWARD};
  check_gradient(&thin, RMAOP_F64, "gradient thin");
  check_gradient(&c5, RMAOP_C128, "gradient centered5");
  check_gradient(&bw, RMAOP_F32, "gradient backward");
  const gcase one = {.ndim = 1, .dims = {11}, .h = {0.25}, .kind = RMAOP_DERIV_CENTERED3, .edge = 1};
  check_gradient(&one, RMAOP_C64, "gradient 1-D"); /* PyLops' Gradient takes 1-D; MPIGradient needs 2-D */
  const gcase uneven = {
      .ndim = 3, .dims = {6, 5, 5}, .h = {1, 1, 2}, .kind = RMAOP_DERIV_CENTERED5, .edge = 1, .uneven = 1};
  check_gradient(&uneven, RMAOP_F64, "gradient uneven rows");
}
END_TEST

/* ---- errors ---- */

static void expect_halo_error(const rmaop_halo_spec *s, const char *needle) {
  rmaop_op A = NULL;
  RT_EXPECT(rmaop_op_create_halo(ctx, s, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS(needle);
  RT_CHECK(A == NULL, "a failed create wrote its output");
}

START_TEST(test_errors) {
  const int P = rt_size;
  const rmaop_halo_spec ok = {
      .ndim = 2, .dims = {9, 10}, .procs = {1, P}, .lo = {1, 1}, .hi = {1, 1}, .dtype = RMAOP_F64};
  rmaop_halo_spec s = ok;
  s.lo[1] = 10 / P + 1; /* wider than the smallest block along axis 1 */
  expect_halo_error(&s, "lo[1]");
  RT_MESSAGE_HAS("axis 1");
  s = ok, s.procs[0] = P, s.procs[1] = 1, s.hi[0] = 9 / P + 1;
  expect_halo_error(&s, "hi[0]");
  s = ok, s.lo[0] = -1;
  expect_halo_error(&s, "lo[0]");
  s = ok, s.procs[0] = P + 1, s.procs[1] = 1; /* grid product != size */
  expect_halo_error(&s, "product");
  s = ok, s.procs[0] = 0, s.procs[1] = P + 1;
  expect_halo_error(&s, "product");
  s = ok, s.ndim = 0;
  expect_halo_error(&s, "ndim");
  s = ok, s.ndim = RMAOP_HALO_MAX_DIMS + 1;
  expect_halo_error(&s, "ndim");
  s = ok, s.dims[1] = 0;
  expect_halo_error(&s, "dims[1]");
  s = ok, s.dtype = (rmaop_dtype)9;
  expect_halo_error(&s, "dtype");
  if (P > 1) { /* valid on every rank, but not the same: each rank would place the others' blocks wrongly */
    s = ok, s.lo[0] = rt_rank == P - 1 ? 0 : 1;
    expect_halo_error(&s, "lo[0] differs between ranks");
    s = ok, s.dims[0] = 9 + (rt_rank == 0);
    expect_halo_error(&s, "dims[0] differs between ranks");
  }

  rmaop_gradient_spec g = {.grid = {.ndim = 0, .local_rows = -1}, .dtype = RMAOP_F64};
  rmaop_op A = NULL;
  RT_EXPECT(rmaop_op_create_gradient(ctx, &g, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("ndim");
  g.grid.ndim = 2, g.grid.dims[0] = 4, g.grid.dims[1] = 1; /* axis 1 too short for a derivative */
  RT_EXPECT(rmaop_op_create_gradient(ctx, &g, &A), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("axis 1");
  g.grid.dims[1] = 3;
  RT_OK(rmaop_op_create_gradient(ctx, &g, &A));
  rmaop_halo_info info;
  RT_EXPECT(rmaop_op_halo_get_info(A, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("not a halo");
  rmaop_op_destroy(&A);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("halo");
  TCase *th = tcase_create("halo");
  tcase_set_timeout(th, 120);
  tcase_add_checked_fixture(th, setup, teardown);
  tcase_add_test(th, test_halo_1d);
  tcase_add_test(th, test_halo_2d);
  tcase_add_test(th, test_halo_3d_4d);
  tcase_add_test(th, test_halo_same_bits);
  suite_add_tcase(s, th);
  TCase *tg = tcase_create("gradient");
  tcase_set_timeout(tg, 120);
  tcase_add_checked_fixture(tg, setup, teardown);
  tcase_add_test(tg, test_gradient);
  tcase_add_test(tg, test_errors);
  suite_add_tcase(s, tg);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
