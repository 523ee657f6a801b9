/* Tests of stacked layouts, vectors and operators (PyLops-MPI StackedDistributedArray, MPIStackedVStack,
 * MPIStackedBlockDiag).
 *
 * References: a stacked vector's global vector is its parts' global vectors one after the other; element g
 * of series s is rt_value(g, s) rounded to the dtype, written part by part through part views, so a
 * BROADCAST part holds the same values on every rank. Dots and norms are compared with the serial sum over
 * that global vector (a BROADCAST part counted once). Stacked operators are compared with their parts
 * applied one by one to the parts (forward) and with the parts' adjoints summed (vstack), plus a dot test
 * on consistently filled vectors for every dtype. CGLS on a stacked vertical system is compared with a
 * serial CGLS (PyLops' recurrences) on the dense global matrix written here from the operators' formulas. */
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

/* Rows of a balanced split of n over the ranks (PyLops-MPI local_split). */
static int64_t split(int64_t n, int r) {
  return n / rt_size + (r < n % rt_size);
}
static int64_t split_off(int64_t n, int r) {
  int64_t off = 0;
  for (int p = 0; p < r; ++p)
    off += split(n, p);
  return off;
}

/* ---- part-wise access ---- */

static int nparts_of(rmaop_vec v) {
  rmaop_vec_info info;
  int n = 0;
  RT_OK(rmaop_vec_get_info(v, &info));
  RT_OK(rmaop_layout_stack_nparts(info.layout, &n));
  return n;
}

/* Calls f on every part of v (v itself when not stacked) with the part's first global index. */
typedef void (*part_fn)(rmaop_vec part, int64_t base, void *arg);
static void for_parts(rmaop_vec v, part_fn f, void *arg) {
  const int n = nparts_of(v);
  if (n == 0) {
    f(v, 0, arg);
    return;
  }
  int64_t base = 0;
  for (int i = 0; i < n; ++i) {
    rmaop_vec p = NULL;
    rmaop_vec_info pi;
    RT_OK(rmaop_vec_stack_part(v, i, &p));
    RT_OK(rmaop_vec_get_info(p, &pi));
    f(p, base, arg);
    base += pi.global_n;
    rmaop_vec_destroy(&p);
  }
}

typedef struct {
  int s;
} fill_arg;
static void fill_part(rmaop_vec p, int64_t base, void *arg) {
  rmaop_vec_info pi;
  RT_OK(rmaop_vec_get_info(p, &pi));
  void *buf = rt_alloc(pi.dtype, pi.local_n);
  for (int64_t j = 0; j < pi.local_n; ++j)
    rt_store(pi.dtype, buf, j, rt_value(base + pi.offset + j, ((fill_arg *)arg)->s));
  RT_OK(rmaop_vec_write_local(p, buf));
  free(buf);
}
/* Writes series s; every element g of the global vector is rt_value(g, s). */
static void fill(rmaop_vec v, int s) {
  fill_arg a = {s};
  for_parts(v, fill_part, &a);
}

/* The global vector of series s, as dtype d holds it. */
static double _Complex *global_series(rmaop_dtype d, int64_t n, int s) {
  double _Complex *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
  for (int64_t i = 0; i < n; ++i)
    g[i] = rt_round(d, rt_value(i, s));
  return g;
}

typedef struct {
  const double _Complex *want; /* global reference */
  double tol;                  /* 0: equal */
  int ok;
  char msg[256];
} cmp_arg;
static void cmp_part(rmaop_vec p, int64_t base, void *arg) {
  cmp_arg *c = arg;
  rmaop_vec_info pi;
  RT_OK(rmaop_vec_get_info(p, &pi));
  void *buf = rt_alloc(pi.dtype, pi.local_n);
  RT_OK(rmaop_vec_read_local(p, buf));
  for (int64_t j = 0; j < pi.local_n && c->ok; ++j) {
    const double _Complex got = rt_load(pi.dtype, buf, j), want = c->want[base + pi.offset + j];
    if (c->tol == 0 ? got != want : !rt_close(got, want, c->tol, 1.0)) {
      c->ok = 0;
      snprintf(c->msg, sizeof c->msg, "global element %lld is %.17g%+.17gi, want %.17g%+.17gi",
               (long long)(base + pi.offset + j), creal(got), cimag(got), creal(want), cimag(want));
    }
  }
  free(buf);
}
/* Collective: every local element of v equals want[global index]. */
static void check_global(rmaop_vec v, const double _Complex *want, double tol, const char *what) {
  cmp_arg c = {want, tol, 1, ""};
  for_parts(v, cmp_part, &c);
  RT_CHECK(c.ok, "%s: %s", what, c.msg);
}

/* ---- layouts used by the vector tests ---- */

enum { NMIX = 4 };
/* SCATTER 10 | BROADCAST 7 | uneven SCATTER (rank 1 empty) | BROADCAST 3. */
static rmaop_layout mixed_layout(int64_t *global_n) {
  static const int64_t uneven[4] = {3, 0, 5, 1};
  rmaop_layout p[NMIX] = {NULL}, l = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10, &p[0]));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 7, &p[1]));
  RT_OK(rmaop_layout_create_local(ctx, uneven[rt_rank % 4], &p[2]));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 3, &p[3]));
  RT_OK(rmaop_layout_create_stacked(NMIX, p, &l));
  *global_n = 0;
  for (int i = 0; i < NMIX; ++i) {
    rmaop_layout_info li;
    RT_OK(rmaop_layout_get_info(p[i], &li));
    *global_n += li.global_n;
    rmaop_layout_destroy(&p[i]); /* the stacked layout holds them */
  }
  return l;
}

static double _Complex serial_dot(const double _Complex *x, const double _Complex *y, int64_t n) {
  long double re = 0, im = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double _Complex t = conj(x[i]) * y[i];
    re += creal(t);
    im += cimag(t);
  }
  return CMPLX((double)re, (double)im);
}

START_TEST(test_stacked_layout) {
  int64_t n = 0;
  rmaop_layout l = mixed_layout(&n);
  rmaop_layout_info li;
  RT_OK(rmaop_layout_get_info(l, &li));
  static const int64_t uneven[4] = {3, 0, 5, 1};
  int64_t want_local = split(10, rt_rank) + 7 + uneven[rt_rank % 4] + 3;
  int nparts = 0;
  rmaop_layout part = NULL;
  RT_OK(rmaop_layout_stack_nparts(l, &nparts));
  RT_OK(rmaop_layout_stack_part(l, 1, &part));
  rmaop_layout_info pi;
  RT_OK(rmaop_layout_get_info(part, &pi));
  RT_CHECK(
      li.kind == RMAOP_LAYOUT_STACKED && li.global_n == n && li.local_n == want_local && nparts == NMIX &&
          pi.kind == RMAOP_LAYOUT_BROADCAST && pi.global_n == 7,
      "stacked layout: kind %d global %lld local %lld parts %d (part 1: kind %d, %lld); want global %lld local %lld",
      (int)li.kind, (long long)li.global_n, (long long)li.local_n, nparts, (int)pi.kind, (long long)pi.global_n,
      (long long)n, (long long)want_local);
  /* offset: the rank-major prefix sum of the local sizes */
  int64_t off = 0;
  for (int p = 0; p < rt_rank; ++p)
    off += split(10, p) + 7 + uneven[p % 4] + 3;
  RT_CHECK(li.offset == off, "offset %lld, want %lld", (long long)li.offset, (long long)off);
  rmaop_layout_destroy(&l);
}
END_TEST

/* dot, norm and mdot against the serial sums, every dtype; results identical on every rank. */
START_TEST(test_stacked_dot_norm) {
  int64_t n = 0;
  rmaop_layout l = mixed_layout(&n), bl[2] = {NULL}, rep = NULL, sc = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 5, &bl[0]));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 4, &bl[1]));
  RT_OK(rmaop_layout_create_stacked(2, bl, &rep)); /* every part replicated: no communication */
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 9, &sc));
  for (int t = 0; t < 4; ++t) {
    const rmaop_dtype d = rt_dtypes[t];
    rmaop_vec x = NULL, y = NULL, rx = NULL, ry = NULL, a = NULL, b = NULL;
    RT_OK(rmaop_vec_create(l, d, &x));
    RT_OK(rmaop_vec_create(l, d, &y));
    RT_OK(rmaop_vec_create(rep, d, &rx));
    RT_OK(rmaop_vec_create(rep, d, &ry));
    RT_OK(rmaop_vec_create(sc, d, &a));
    RT_OK(rmaop_vec_create(sc, d, &b));
    fill(x, 0), fill(y, 1), fill(rx, 2), fill(ry, 3), fill(a, 4), fill(b, 5);
    double _Complex *gx = global_series(d, n, 0), *gy = global_series(d, n, 1);
    double _Complex *grx = global_series(d, 9, 2), *gry = global_series(d, 9, 3);
    double _Complex *ga = global_series(d, 9, 4), *gb = global_series(d, 9, 5);
    const double tol = rt_tol(d);

    double _Complex r = 0, want = serial_dot(gx, gy, n);
    RT_OK(rmaop_vec_dot(x, y, &r));
    RT_CHECK(rt_close(r, want, tol, 0) && rt_same_everywhere(&r, sizeof r), "%s dot %.17g%+.17gi, want %.17g%+.17gi",
             rmaop_dtype_name(d), creal(r), cimag(r), creal(want), cimag(want));
    double nrm = 0, wn = sqrt(creal(serial_dot(gx, gx, n)));
    RT_OK(rmaop_vec_norm2(x, &nrm));
    RT_CHECK(fabs(nrm - wn) <= tol * wn && rt_same_everywhere(&nrm, sizeof nrm), "%s norm %.17g, want %.17g",
             rmaop_dtype_name(d), nrm, wn);
    RT_OK(rmaop_vec_norm2(rx, &nrm));
    wn = sqrt(creal(serial_dot(grx, grx, 9)));
    RT_CHECK(fabs(nrm - wn) <= tol * wn, "%s replicated stacked norm %.17g, want %.17g", rmaop_dtype_name(d), nrm, wn);

    /* one fused reduction over stacked, replicated-stacked and plain pairs */
    rmaop_vec xs[4] = {x, rx, a, y}, ys[4] = {y, ry, b, y};
    double _Complex rr[4], ww[4] = {want, serial_dot(grx, gry, 9), serial_dot(ga, gb, 9), serial_dot(gy, gy, n)};
    RT_OK(rmaop_vec_mdot(4, xs, ys, rr));
    int ok = 1;
    for (int k = 0; k < 4; ++k)
      ok = ok && rt_close(rr[k], ww[k], tol, 0);
    RT_CHECK(ok && rt_same_everywhere(rr, sizeof rr), "%s mdot: %g %g %g %g, want %g %g %g %g", rmaop_dtype_name(d),
             creal(rr[0]), creal(rr[1]), creal(rr[2]), creal(rr[3]), creal(ww[0]), creal(ww[1]), creal(ww[2]),
             creal(ww[3]));
    free(gx), free(gy), free(grx), free(gry), free(ga), free(gb);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&rx), rmaop_vec_destroy(&ry);
    rmaop_vec_destroy(&a), rmaop_vec_destroy(&b);
  }
  rmaop_layout_destroy(&l), rmaop_layout_destroy(&bl[0]), rmaop_layout_destroy(&bl[1]);
  rmaop_layout_destroy(&rep), rmaop_layout_destroy(&sc);
}
END_TEST

/* Views alias the parent's memory; a view outlives its parent's handle. */
START_TEST(test_stacked_views) {
  int64_t n = 0;
  rmaop_layout l = mixed_layout(&n);
  const rmaop_dtype d = RMAOP_C128;
  rmaop_vec v = NULL, p1 = NULL, p2 = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  fill(v, 0);
  double _Complex *g = global_series(d, n, 0);
  RT_OK(rmaop_vec_stack_part(v, 1, &p1)); /* BROADCAST 7: global 10..16 */
  RT_OK(rmaop_vec_stack_part(v, 2, &p2)); /* uneven SCATTER: global 17.. */
  RT_OK(rmaop_vec_set(p1, 5.0));
  RT_OK(rmaop_vec_scale(p2, -2.0));
  for (int64_t i = 10; i < 17; ++i)
    g[i] = 5.0;
  static const int64_t uneven[4] = {3, 0, 5, 1};
  int64_t nun = 0;
  for (int p = 0; p < rt_size; ++p)
    nun += uneven[p % 4];
  for (int64_t i = 17; i < 17 + nun; ++i)
    g[i] *= -2.0;
  check_global(v, g, 0, "parent after writes through its views");
  /* the parent's handle goes first; the view keeps the memory */
  rmaop_vec_destroy(&v);
  double _Complex r = 0;
  RT_OK(rmaop_vec_dot(p1, p1, &r));
  RT_CHECK(creal(r) == 7 * 25.0, "view after its parent's destroy: dot %g, want 175", creal(r));
  rmaop_vec_destroy(&p1);
  rmaop_vec_destroy(&p2);
  free(g);
  rmaop_layout_destroy(&l);
}
END_TEST

/* Local vector operations act on the concatenated local arrays; gather / scatter part by part. */
START_TEST(test_stacked_vec_ops_io) {
  int64_t n = 0;
  rmaop_layout l = mixed_layout(&n);
  for (int t = 0; t < 4; ++t) {
    const rmaop_dtype d = rt_dtypes[t];
    rmaop_vec x = NULL, y = NULL, w = NULL, c = NULL;
    RT_OK(rmaop_vec_create(l, d, &x));
    RT_OK(rmaop_vec_duplicate(x, &y));
    RT_OK(rmaop_vec_duplicate(x, &w));
    RT_OK(rmaop_vec_duplicate(x, &c));
    fill(x, 0), fill(y, 1);
    double _Complex *gx = global_series(d, n, 0), *gy = global_series(d, n, 1),
                    *want = malloc((size_t)n * sizeof *want);
    const double _Complex alpha = rt_is_complex(d) ? CMPLX(0.5, -1.5) : 0.5, beta = -2.0;
    RT_OK(rmaop_vec_copy(y, c));
    RT_OK(rmaop_vec_axpby(c, alpha, beta, x)); /* c = alpha x + beta y */
    for (int64_t i = 0; i < n; ++i)
      want[i] = alpha * gx[i] + beta * gy[i];
    check_global(c, want, rt_tol(d), "axpby");
    RT_OK(rmaop_vec_pointwise_mult(w, x, y));
    for (int64_t i = 0; i < n; ++i)
      want[i] = gx[i] * gy[i];
    check_global(w, want, rt_tol(d), "pointwise_mult");
    RT_OK(rmaop_vec_axpy(w, 1.0, x));
    RT_OK(rmaop_vec_scale(w, 2.0));
    for (int64_t i = 0; i < n; ++i)
      want[i] = 2.0 * (want[i] + gx[i]);
    check_global(w, want, rt_tol(d), "axpy + scale");

    /* gather to the last rank: the parts' global vectors one after the other */
    const int root = rt_size - 1;
    void *buf = rt_alloc(d, n);
    RT_OK(rmaop_vec_gather(x, root, rt_rank == root ? buf : NULL));
    int ok = 1;
    for (int64_t i = 0; i < n && rt_rank == root; ++i)
      ok = ok && rt_load(d, buf, i) == gx[i];
    RT_CHECK(ok, "%s gather of a stacked vector differs from the concatenated parts", rmaop_dtype_name(d));
    /* scatter series 1 from rank 0 into x */
    for (int64_t i = 0; i < n; ++i)
      rt_store(d, buf, i, gy[i]);
    RT_OK(rmaop_vec_scatter(x, 0, rt_rank == 0 ? buf : NULL));
    check_global(x, gy, 0, "scatter of a stacked vector");
    free(buf), free(gx), free(gy), free(want);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&w), rmaop_vec_destroy(&c);
  }
  rmaop_layout_destroy(&l);
}
END_TEST

/* ---- operators ---- */

enum { NX0 = 6, NX1 = 4, NG = NX0 * NX1, HROWS = 5, VCOLS = 3 };

static rmaop_grid grid2(void) {
  rmaop_grid g = {.ndim = 2, .dims = {NX0, NX1}, .local_rows = -1};
  return g;
}

static rmaop_op make_deriv(rmaop_dtype d, int axis) {
  rmaop_deriv_spec s = {.grid = grid2(), .axis = axis, .kind = RMAOP_DERIV_CENTERED3, .edge = 1, .dtype = d};
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_first_derivative(ctx, &s, &A));
  return A;
}
static rmaop_op make_laplacian(rmaop_dtype d) {
  rmaop_laplacian_spec s = {.grid = grid2(), .kind = RMAOP_DERIV_CENTERED3, .dtype = d};
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_laplacian(ctx, &s, &A));
  return A;
}

/* Scale of the dense blocks: small enough that [D; H; G] stays well conditioned (with entries near 1, CGLS's
 * iterates on it move by 1e-9 under a 1e-15 change of y, too sensitive to compare two correct codes). */
#define HSCALE 0.2

/* Entry (i, j) of the global matrix behind the dense blocks, as dtype d holds it. */
static double _Complex block_entry(rmaop_dtype d, int64_t i, int64_t j, int salt) {
  return rt_round(d, HSCALE * CMPLX(sin(0.37 * (double)i + 0.11 * (double)j + salt) + 0.5,
                                   rt_is_complex(d) ? cos(0.23 * (double)i - 0.41 * (double)j + salt) : 0.0));
}

/* kind 0: hstack, rank r's block = columns of its grid rows (HROWS x local elements); data BROADCAST.
 * kind 1: vstack, model BROADCAST (VCOLS), rank r's block = 2 rows. kind 2: blockdiag 2 x local elements. */
static rmaop_op make_block(rmaop_dtype d, int kind) {
  const int64_t cols = split(NX0, rt_rank) * NX1, coff = split_off(NX0, rt_rank) * NX1;
  const int64_t nr = kind == 0 ? HROWS : 2, nc = kind == 1 ? VCOLS : cols;
  void *B = rt_alloc(d, nr * nc);
  for (int64_t i = 0; i < nr; ++i)
    for (int64_t j = 0; j < nc; ++j) {
      const int64_t gi = kind == 0 ? i : 2 * rt_rank + i, gj = kind == 1 ? j : coff + j;
      rt_store(d, B, i * nc + j, block_entry(d, gi, gj, kind));
    }
  rmaop_block blk = {.nrows = nr, .ncols = nc, .dense = B};
  rmaop_op A = NULL;
  if (kind == 0)
    RT_OK(rmaop_op_create_hstack(ctx, d, &blk, &A));
  else if (kind == 1)
    RT_OK(rmaop_op_create_vstack(ctx, d, &blk, &A));
  else
    RT_OK(rmaop_op_create_blockdiag(ctx, d, &blk, &A));
  free(B);
  return A;
}

static rmaop_vec vec_on(rmaop_layout l, rmaop_dtype d) {
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  return v;
}

static int same_bits(rmaop_vec a, rmaop_vec b) {
  rmaop_vec_info ia, ib;
  if (rmaop_vec_get_info(a, &ia) != RMAOP_OK || rmaop_vec_get_info(b, &ib) != RMAOP_OK || ia.local_n != ib.local_n)
    return 0;
  const size_t bytes = (size_t)ia.local_n * rmaop_dtype_size(ia.dtype);
  void *pa = rt_alloc(ia.dtype, ia.local_n), *pb = rt_alloc(ib.dtype, ib.local_n);
  int same =
      rmaop_vec_read_local(a, pa) == RMAOP_OK && rmaop_vec_read_local(b, pb) == RMAOP_OK && memcmp(pa, pb, bytes) == 0;
  free(pa);
  free(pb);
  return same;
}
static int close_vals(rmaop_vec a, rmaop_vec b, double tol) {
  rmaop_vec_info ia;
  if (rmaop_vec_get_info(a, &ia) != RMAOP_OK)
    return 0;
  void *pa = rt_alloc(ia.dtype, ia.local_n), *pb = rt_alloc(ia.dtype, ia.local_n);
  int ok = rmaop_vec_read_local(a, pa) == RMAOP_OK && rmaop_vec_read_local(b, pb) == RMAOP_OK;
  for (int64_t i = 0; i < ia.local_n && ok; ++i)
    ok = rt_close(rt_load(ia.dtype, pa, i), rt_load(ia.dtype, pb, i), tol, 1.0);
  free(pa);
  free(pb);
  return ok;
}

/* Dot test on vectors filled consistently part by part (a BROADCAST part equal on every rank):
 * <A x, y> = <x, A^H y>. */
static void dottest(rmaop_op A, rmaop_dtype d, const char *name) {
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(A, &info));
  rmaop_vec x = vec_on(info.model, d), y = vec_on(info.data, d), Ax = vec_on(info.data, d), AHy = vec_on(info.model, d);
  fill(x, 6), fill(y, 7);
  RT_OK(rmaop_op_apply(A, x, Ax));
  RT_OK(rmaop_op_apply_adjoint(A, y, AHy));
  double _Complex d1 = 0, d2 = 0;
  RT_OK(rmaop_vec_dot(Ax, y, &d1));
  RT_OK(rmaop_vec_dot(x, AHy, &d2));
  const double err = cabs(d1 - d2) / fmax(fmax(cabs(d1), cabs(d2)), 1e-300);
  RT_CHECK(err < (rt_tol(d) < 1e-6 ? 1e-11 : 1e-5) && cabs(d1) > 0, "%s %s dot test: %g (<Ax,y> = %g%+gi)", name,
           rmaop_dtype_name(d), err, creal(d1), cimag(d1));
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&Ax), rmaop_vec_destroy(&AHy);
}

/* x held whole in a stacked operand: part i of `v` as an owned view. */
static rmaop_vec part(rmaop_vec v, int i) {
  rmaop_vec p = NULL;
  RT_OK(rmaop_vec_stack_part(v, i, &p));
  return p;
}

enum { NV = 4 };

/* StackedVStack of a derivative, the Laplacian, an hstack (BROADCAST data) and a blockdiag, all on the
 * same model: forward part by part bitwise equal to each operator alone, adjoint equal to the sum of the
 * parts' adjoints, split application with work in between, dot test. */
START_TEST(test_stacked_vstack) {
  for (int t = 0; t < 4; ++t) {
    const rmaop_dtype d = rt_dtypes[t];
    rmaop_op ops[NV] = {make_deriv(d, 0), make_laplacian(d), make_block(d, 0), make_block(d, 2)}, A = NULL;
    RT_OK(rmaop_op_create_stacked_vstack(NV, ops, &A));
    rmaop_op_info info;
    RT_OK(rmaop_op_get_info(A, &info));
    rmaop_vec x = vec_on(info.model, d), y = vec_on(info.data, d), y2 = vec_on(info.data, d);
    rmaop_vec yin = vec_on(info.data, d), xa = vec_on(info.model, d), xr = vec_on(info.model, d),
              t1 = vec_on(info.model, d);
    fill(x, 0), fill(yin, 1);
    RT_OK(rmaop_vec_set(y, 9.0));
    RT_OK(rmaop_op_apply(A, x, y));
    RT_OK(rmaop_op_apply_begin(A, x, y2));
    RT_OK(rmaop_vec_set(t1, 1.0)); /* other work in between */
    /* overlap: every part has begun and none has ended (an operator in flight refuses a second use) */
    for (int i = 0; i < NV; ++i) {
      RT_EXPECT(rmaop_op_apply(ops[i], x, t1), RT_BIT(RMAOP_ERR_ARG));
      RT_MESSAGE_HAS("is already being applied");
    }
    RT_OK(rmaop_op_apply_end(A));
    int ok = same_bits(y, y2), bad = -1, near = 1;
    for (int i = 0; i < NV; ++i) {
      rmaop_vec yi = part(y, i), sep = NULL;
      RT_OK(rmaop_vec_duplicate(yi, &sep));
      RT_OK(rmaop_op_apply(ops[i], x, sep));
      /* Bit for bit on the host. On a GPU the dense blocks go through cuBLAS, whose gemv picks its kernel by
       * the output's alignment, and a part's view sits at an offset: there, within the dtype's tolerance. */
      if (!same_bits(yi, sep)) bad = i, near = close_vals(yi, sep, rt_tol(d));
      if (bad == i && rt_device() && near) bad = -1;
      /* adjoint reference: sum of the parts' adjoints, in part order */
      rmaop_vec yini = part(yin, i);
      RT_OK(rmaop_op_apply_adjoint(ops[i], yini, i == 0 ? xr : t1));
      if (i > 0)
        RT_OK(rmaop_vec_axpy(xr, 1.0, t1));
      rmaop_vec_destroy(&yi), rmaop_vec_destroy(&sep), rmaop_vec_destroy(&yini);
    }
    RT_CHECK(rt_all(ok && bad < 0), "%s stacked vstack forward differs from its parts applied alone (begin/end same: %d; "
             "part %d differs%s)", rmaop_dtype_name(d), ok, bad, near ? " within tolerance" : " beyond tolerance");
    RT_OK(rmaop_op_apply_adjoint(A, yin, xa));
    RT_CHECK(rt_all(close_vals(xa, xr, rt_tol(d))), "%s stacked vstack adjoint differs from the sum of the parts'",
             rmaop_dtype_name(d));
    dottest(A, d, "stacked vstack");
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&y2), rmaop_vec_destroy(&yin);
    rmaop_vec_destroy(&xa), rmaop_vec_destroy(&xr), rmaop_vec_destroy(&t1);
    rmaop_op_destroy(&A);
    for (int i = 0; i < NV; ++i)
      rmaop_op_destroy(&ops[i]);
  }
}
END_TEST

/* StackedBlockDiag of a derivative, an hstack (SCATTER -> BROADCAST), a vstack (BROADCAST -> SCATTER) and
 * the Laplacian: part i of y is ops[i] applied to part i of x, both ways; dot test. One operator twice
 * ([D, D]) runs its parts one after the other and must give the same. */
START_TEST(test_stacked_blockdiag) {
  for (int t = 0; t < 4; ++t) {
    const rmaop_dtype d = rt_dtypes[t];
    rmaop_op ops[NV] = {make_deriv(d, 1), make_block(d, 0), make_block(d, 1), make_laplacian(d)}, A = NULL, A2 = NULL;
    RT_OK(rmaop_op_create_stacked_blockdiag(NV, ops, &A));
    rmaop_op twice[2] = {ops[0], ops[0]};
    RT_OK(rmaop_op_create_stacked_blockdiag(2, twice, &A2));
    rmaop_op_info info;
    RT_OK(rmaop_op_get_info(A, &info));
    rmaop_vec x = vec_on(info.model, d), y = vec_on(info.data, d), xa = vec_on(info.model, d);
    fill(x, 0), fill(y, 1);
    RT_OK(rmaop_op_apply(A, x, y));
    RT_OK(rmaop_op_apply_adjoint(A, y, xa));
    int ok = 1;
    for (int i = 0; i < NV; ++i) {
      rmaop_vec xi = part(x, i), yi = part(y, i), xai = part(xa, i), ys = NULL, xs = NULL;
      RT_OK(rmaop_vec_duplicate(yi, &ys));
      RT_OK(rmaop_vec_duplicate(xi, &xs));
      RT_OK(rmaop_op_apply(ops[i], xi, ys));
      RT_OK(rmaop_op_apply_adjoint(ops[i], ys, xs));
      ok = ok && same_bits(yi, ys) && same_bits(xai, xs);
      rmaop_vec_destroy(&xi), rmaop_vec_destroy(&yi), rmaop_vec_destroy(&xai), rmaop_vec_destroy(&ys);
      rmaop_vec_destroy(&xs);
    }
    RT_CHECK(rt_all(ok), "%s stacked blockdiag differs from its parts applied alone", rmaop_dtype_name(d));
    dottest(A, d, "stacked blockdiag");
    dottest(A2, d, "stacked blockdiag [D, D]");
    /* [D, D]: both parts equal D applied alone; D runs whole inside begin (it is free again before the end) */
    RT_OK(rmaop_op_get_info(A2, &info));
    rmaop_vec x2 = vec_on(info.model, d), y2 = vec_on(info.data, d), x20 = part(x2, 0), y20 = NULL;
    RT_OK(rmaop_vec_duplicate(x20, &y20));
    fill(x2, 2);
    RT_OK(rmaop_op_apply_adjoint_begin(A, y, xa));
    RT_EXPECT(rmaop_op_apply(ops[NV - 1], x20, y20), RT_BIT(RMAOP_ERR_ARG)); /* distinct parts: in flight */
    RT_MESSAGE_HAS("is already being applied");
    RT_OK(rmaop_op_apply_adjoint_end(A));
    RT_OK(rmaop_op_apply_begin(A2, x2, y2));
    RT_OK(rmaop_op_apply(ops[0], x20, y20));
    RT_OK(rmaop_op_apply_end(A2));
    rmaop_vec_destroy(&x20), rmaop_vec_destroy(&y20);
    ok = 1;
    for (int i = 0; i < 2; ++i) {
      rmaop_vec xi = part(x2, i), yi = part(y2, i), ys = NULL;
      RT_OK(rmaop_vec_duplicate(yi, &ys));
      RT_OK(rmaop_op_apply(ops[0], xi, ys));
      ok = ok && same_bits(yi, ys);
      rmaop_vec_destroy(&xi), rmaop_vec_destroy(&yi), rmaop_vec_destroy(&ys);
    }
    RT_CHECK(rt_all(ok), "%s stacked blockdiag [D, D] differs from D applied alone", rmaop_dtype_name(d));
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&xa), rmaop_vec_destroy(&x2);
    rmaop_vec_destroy(&y2);
    rmaop_op_destroy(&A), rmaop_op_destroy(&A2);
    for (int i = 0; i < NV; ++i)
      rmaop_op_destroy(&ops[i]);
  }
}
END_TEST

/* ---- CGLS on a stacked vertical system ---- */

/* diag(alpha + slope g) (g: global index) as a block-diagonal operator on the grid's model layout. */
static rmaop_op make_diag(rmaop_dtype d, double alpha, double slope) {
  const int64_t nl = split(NX0, rt_rank) * NX1, off = split_off(NX0, rt_rank) * NX1;
  void *eye = rt_alloc(d, nl * nl);
  for (int64_t i = 0; i < nl; ++i)
    rt_store(d, eye, i * nl + i, alpha + slope * (double)(off + i));
  rmaop_block blk = {.nrows = nl, .ncols = nl, .dense = eye};
  rmaop_op A = NULL;
  RT_OK(rmaop_op_create_blockdiag(ctx, d, &blk, &A));
  free(eye);
  return A;
}

enum { MSYS = NG + HROWS + NG };

/* Dense global matrix of [D; H; G]: D the centered first derivative (edge on) along axis 0 of the NX0 x NX1
 * grid (PyLops FirstDerivative), H the hstack's HROWS x NG matrix, G = diag(1 + 0.1 g). G keeps the normal
 * equations well conditioned and their eigenvalues apart (D alone repeats each one NX1 times, and CG's
 * iterates are then sensitive to rounding at 1e-9), so two correct CGLS runs agree to 1e-10. Row-major,
 * MSYS x NG. */
static double _Complex *dense_system(rmaop_dtype d) {
  const int64_t m = MSYS, n = NG;
  double _Complex *M = calloc((size_t)(m * n), sizeof *M);
  for (int64_t r = 0; r < NX0; ++r)
    for (int64_t c = 0; c < NX1; ++c) {
      double _Complex *row = M + (r * NX1 + c) * n;
      if (r == 0)
        row[1 * NX1 + c] = 1, row[c] = -1;
      else if (r == NX0 - 1)
        row[r * NX1 + c] = 1, row[(r - 1) * NX1 + c] = -1;
      else
        row[(r + 1) * NX1 + c] = 0.5, row[(r - 1) * NX1 + c] = -0.5;
    }
  for (int64_t i = 0; i < HROWS; ++i)
    for (int64_t j = 0; j < n; ++j)
      M[(NG + i) * n + j] = block_entry(d, i, j, 0);
  for (int64_t j = 0; j < n; ++j)
    M[(NG + HROWS + j) * n + j] = 1 + 0.1 * (double)j;
  return M;
}

/* out = M v (adj = 0) or M^H v (adj = 1). */
static void matvec(const double _Complex *M, int64_t m, int64_t n, const double _Complex *v, double _Complex *out,
                   int adj) {
  for (int64_t i = 0; i < (adj ? n : m); ++i)
    out[i] = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (adj)
        out[j] += conj(M[i * n + j]) * v[i];
      else
        out[i] += M[i * n + j] * v[j];
}

/* Serial CGLS with PyLops' recurrences (x0 = 0, no damping); hist[k] = ||y - A x_k||. */
static void serial_cgls(const double _Complex *M, int64_t m, int64_t n, const double _Complex *y, int niter,
                        double _Complex *x, double *hist) {
  double _Complex *s = malloc((size_t)m * sizeof *s), *q = malloc((size_t)m * sizeof *q);
  double _Complex *r = malloc((size_t)n * sizeof *r), *c = malloc((size_t)n * sizeof *c);
  memcpy(s, y, (size_t)m * sizeof *s);
  for (int64_t j = 0; j < n; ++j)
    x[j] = 0;
  matvec(M, m, n, s, r, 1);
  memcpy(c, r, (size_t)n * sizeof *c);
  matvec(M, m, n, c, q, 0);
  double kold = creal(serial_dot(r, r, n));
  hist[0] = sqrt(creal(serial_dot(s, s, m)));
  for (int it = 0; it < niter; ++it) {
    const double a = kold / creal(serial_dot(q, q, m));
    for (int64_t j = 0; j < n; ++j)
      x[j] += a * c[j];
    for (int64_t i = 0; i < m; ++i)
      s[i] -= a * q[i];
    matvec(M, m, n, s, r, 1);
    const double k = creal(serial_dot(r, r, n));
    for (int64_t j = 0; j < n; ++j)
      c[j] = r[j] + (k / kold) * c[j];
    matvec(M, m, n, c, q, 0);
    kold = k;
    hist[it + 1] = sqrt(creal(serial_dot(s, s, m)));
  }
  free(s), free(q), free(r), free(c);
}

START_TEST(test_stacked_cgls) {
  enum { NITER = 12 };
  const rmaop_dtype dts[2] = {RMAOP_F64, RMAOP_C128};
  for (int t = 0; t < 2; ++t) {
    const rmaop_dtype d = dts[t];
    rmaop_op ops[3] = {make_deriv(d, 0), make_block(d, 0), make_diag(d, 1.0, 0.1)}, A = NULL;
    RT_OK(rmaop_op_create_stacked_vstack(3, ops, &A));
    rmaop_op_info info;
    RT_OK(rmaop_op_get_info(A, &info));
    rmaop_vec x = vec_on(info.model, d), y = vec_on(info.data, d);
    fill(y, 3);
    rmaop_solver_options o;
    rmaop_solver_options_init(&o);
    o.niter = NITER;
    rmaop_solver_info si;
    RT_OK(rmaop_solve_cgls(A, y, x, &o, &si));

    const int64_t m = MSYS, n = NG;
    double _Complex *M = dense_system(d), *gy = global_series(d, m, 3), *gx = malloc((size_t)n * sizeof *gx);
    double hist[NITER + 1];
    serial_cgls(M, m, n, gy, NITER, gx, hist);
    double xmax = 0;
    for (int64_t j = 0; j < n; ++j)
      xmax = fmax(xmax, cabs(gx[j]));
    cmp_arg c = {gx, 1e-10 * xmax, 1, ""};
    for_parts(x, cmp_part, &c);
    int hok = si.iterations == NITER;
    for (int k = 0; k <= NITER && hok; ++k)
      hok = fabs(si.history[k] - hist[k]) <= 1e-10 * hist[0];
    RT_CHECK(c.ok && hok, "%s CGLS on [D; H; G]: %s; iterations %d, history[%d] %.17g vs serial %.17g",
             rmaop_dtype_name(d), c.ok ? "x matches" : c.msg, si.iterations, NITER, si.history[NITER], hist[NITER]);
    rmaop_solver_info_destroy(&si);
    free(M), free(gy), free(gx);
    rmaop_vec_destroy(&x), rmaop_vec_destroy(&y);
    for (int i = 0; i < 3; ++i)
      rmaop_op_destroy(&ops[i]);
    rmaop_op_destroy(&A);
  }
}
END_TEST

/* [D; eps I] with data [y; 0] is damped CGLS on D (PyLops' damp): the same iterates. */
START_TEST(test_stacked_cgls_damped_equivalent) {
  enum { NITER = 10 };
  const double eps = 0.75;
  const rmaop_dtype d = RMAOP_F64;
  rmaop_op ops[2] = {make_deriv(d, 0), make_diag(d, eps, 0.0)}, A = NULL;
  RT_OK(rmaop_op_create_stacked_vstack(2, ops, &A));
  rmaop_op_info info;
  RT_OK(rmaop_op_get_info(A, &info));
  rmaop_vec x = vec_on(info.model, d), y = vec_on(info.data, d), xd = vec_on(info.model, d), y0 = NULL;
  fill(y, 3);
  rmaop_vec y1 = part(y, 1);
  RT_OK(rmaop_vec_set(y1, 0.0));
  y0 = part(y, 0);
  rmaop_solver_options o;
  rmaop_solver_options_init(&o);
  o.niter = NITER;
  rmaop_solver_info s1, s2;
  RT_OK(rmaop_solve_cgls(A, y, x, &o, &s1));
  o.damp = eps;
  RT_OK(rmaop_solve_cgls(ops[0], y0, xd, &o, &s2));
  double nx = 0, ndiff = 0;
  RT_OK(rmaop_vec_norm2(xd, &nx));
  RT_OK(rmaop_vec_axpy(xd, -1.0, x));
  RT_OK(rmaop_vec_norm2(xd, &ndiff));
  RT_CHECK(ndiff <= 1e-10 * nx && nx > 0, "stacked [D; eps I] vs damped CGLS: ||dx|| = %g, ||x|| = %g", ndiff, nx);
  rmaop_solver_info_destroy(&s1), rmaop_solver_info_destroy(&s2);
  rmaop_vec_destroy(&x), rmaop_vec_destroy(&y), rmaop_vec_destroy(&xd), rmaop_vec_destroy(&y0);
  rmaop_vec_destroy(&y1);
  rmaop_op_destroy(&A), rmaop_op_destroy(&ops[0]), rmaop_op_destroy(&ops[1]);
}
END_TEST

/* ---- errors ---- */

#define EXPECT_ARG(expr, needle)                                                                                       \
  do {                                                                                                                 \
    RT_EXPECT(expr, RT_BIT(RMAOP_ERR_ARG));                                                                            \
    RT_MESSAGE_HAS(needle);                                                                                            \
  } while (0)

START_TEST(test_stacked_errors) {
  const rmaop_dtype d = RMAOP_F64;
  rmaop_op D = make_deriv(d, 0), Dz = make_deriv(RMAOP_C128, 0), A = NULL;
  rmaop_deriv_spec s = {.grid = {.ndim = 1, .dims = {10}, .local_rows = -1}, .kind = RMAOP_DERIV_FORWARD, .dtype = d};
  rmaop_op D10 = NULL;
  RT_OK(rmaop_op_create_first_derivative(ctx, &s, &D10));

  rmaop_op mism[2] = {D, D10}, mixed[2] = {D, Dz};
  EXPECT_ARG(rmaop_op_create_stacked_vstack(2, mism, &A), "ops[1] (\"");
  RT_MESSAGE_HAS("another model layout than ops[0]");
  EXPECT_ARG(rmaop_op_create_stacked_vstack(2, mixed, &A), "ops[1] (\"");
  RT_MESSAGE_HAS("is c128 but ops[0]");
  EXPECT_ARG(rmaop_op_create_stacked_blockdiag(2, mixed, &A), "is c128 but ops[0]");
  EXPECT_ARG(rmaop_op_create_stacked_vstack(0, mism, &A), "need n >= 1 operators");
  RT_CHECK(A == NULL, "no operator is made on failure");

  /* part index out of range, and a part of a vector that is not stacked */
  int64_t n = 0;
  rmaop_layout l = mixed_layout(&n), sc = NULL, bad = NULL;
  rmaop_vec v = vec_on(l, d), p = NULL, plain = NULL;
  EXPECT_ARG(rmaop_vec_stack_part(v, NMIX, &p), "part index 4 is outside [0, 4)");
  EXPECT_ARG(rmaop_vec_stack_part(v, -1, &p), "part index -1 is outside [0, 4)");
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 8, &sc));
  plain = vec_on(sc, d);
  EXPECT_ARG(rmaop_vec_stack_part(plain, 0, &p), "v is scatter, not stacked");
  RT_CHECK(p == NULL, "no view is made on failure");
  EXPECT_ARG(rmaop_layout_stack_part(sc, 0, &bad), "not stacked");
  rmaop_layout nest[2] = {sc, l};
  EXPECT_ARG(rmaop_layout_create_stacked(2, nest, &bad), "parts[1] is itself stacked");

  /* same totals, other parts: [S8, B3] against [B3, S8] */
  rmaop_layout b3 = NULL, l1 = NULL, l2 = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 3, &b3));
  rmaop_layout p1[2] = {sc, b3}, p2[2] = {b3, sc};
  RT_OK(rmaop_layout_create_stacked(2, p1, &l1));
  RT_OK(rmaop_layout_create_stacked(2, p2, &l2));
  rmaop_vec u1 = vec_on(l1, d), u2 = vec_on(l2, d);
  EXPECT_ARG(rmaop_vec_axpy(u1, 1.0, u2), "the stacked parts differ");
  double _Complex r = 0;
  RT_EXPECT(rmaop_vec_dot(u1, u2, &r), RT_BIT(RMAOP_ERR_ARG) | RT_BIT(RMAOP_ERR_REMOTE));

  /* an operator given a stacked vector with the right totals but other parts */
  rmaop_layout dl = NULL, b0 = NULL, wrong = NULL;
  rmaop_op_info di;
  RT_OK(rmaop_op_get_info(D, &di));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 0, &b0));
  rmaop_op two[2] = {D, D10};
  RT_OK(rmaop_op_create_stacked_blockdiag(2, two, &A));
  rmaop_op_info ai;
  RT_OK(rmaop_op_get_info(A, &ai));
  rmaop_layout_info mi;
  RT_OK(rmaop_layout_get_info(ai.model, &mi));
  /* one SCATTER part holding the same local elements as the operator's two parts */
  RT_OK(rmaop_layout_create_local(ctx, mi.local_n, &dl));
  rmaop_layout wp[2] = {dl, b0};
  RT_OK(rmaop_layout_create_stacked(2, wp, &wrong));
  rmaop_vec xw = vec_on(wrong, d), y = vec_on(ai.data, d);
  /* refused by the stacked operator itself, or earlier by the generic operand check: both name the operator */
  EXPECT_ARG(rmaop_op_apply(A, xw, y), "\"stacked_blockdiag\"");

  rmaop_vec_destroy(&v), rmaop_vec_destroy(&plain), rmaop_vec_destroy(&u1), rmaop_vec_destroy(&u2);
  rmaop_vec_destroy(&xw), rmaop_vec_destroy(&y);
  rmaop_layout_destroy(&l), rmaop_layout_destroy(&sc), rmaop_layout_destroy(&b3), rmaop_layout_destroy(&l1);
  rmaop_layout_destroy(&l2), rmaop_layout_destroy(&dl), rmaop_layout_destroy(&b0), rmaop_layout_destroy(&wrong);
  rmaop_op_destroy(&A), rmaop_op_destroy(&D), rmaop_op_destroy(&Dz), rmaop_op_destroy(&D10);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("stacked");
  TCase *tv = tcase_create("vectors");
  tcase_add_checked_fixture(tv, setup, teardown);
  tcase_add_test(tv, test_stacked_layout);
  tcase_add_test(tv, test_stacked_dot_norm);
  tcase_add_test(tv, test_stacked_views);
  tcase_add_test(tv, test_stacked_vec_ops_io);
  suite_add_tcase(s, tv);
  TCase *to = tcase_create("operators");
  tcase_add_checked_fixture(to, setup, teardown);
  tcase_add_test(to, test_stacked_vstack);
  tcase_add_test(to, test_stacked_blockdiag);
  tcase_add_test(to, test_stacked_cgls);
  tcase_add_test(to, test_stacked_cgls_damped_equivalent);
  tcase_add_test(to, test_stacked_errors);
  suite_add_tcase(s, to);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
