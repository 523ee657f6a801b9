/* Tests of rmaop_vec. Reference: the global formulas of rmaop.h evaluated serially on every rank from
 * the values' definition (x[i] = rt_value(i, 0), y[i] = rt_value(i, 1), ...) rounded to the dtype, in
 * double complex (local ops) or long double (reductions); dot is sum_i conj(x_i) y_i (numpy.vdot). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop_test.h"

#include "core/ctx.h" /* the context's work buffers (rmaop__vec_work) */
#include "core/vec.h"

static rmaop_ctx ctx;
static void setup(void) {
  ctx = rt_ctx();
}
static void teardown(void) {
  rmaop_ctx_destroy(&ctx);
}

enum { NLAYOUTS = 4 };
static const char *layout_names[NLAYOUTS] = {"balanced 10", "uneven, rank 1 empty", "rank 0 empty", "broadcast 7"};

static rmaop_layout make_layout(int c) {
  static const int64_t uneven[4] = {3, 0, 5, 1};
  rmaop_layout l = NULL;
  switch (c) {
  case 0:
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10, &l));
    break;
  case 1:
    RT_OK(rmaop_layout_create_local(ctx, uneven[rt_rank % 4] + (rt_rank >= 4), &l));
    break;
  case 2:
    RT_OK(rmaop_layout_create_local(ctx, rt_rank == 0 ? 0 : 4, &l));
    break;
  default:
    RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_BROADCAST, 7, &l));
    break;
  }
  return l;
}

/* The value of series s at global index i, as the dtype holds it. */
static double _Complex gval(rmaop_dtype d, int64_t i, int s) {
  return rt_round(d, rt_value(i, s));
}

/* A vector holding series s. */
static rmaop_vec make_vec(rmaop_layout l, rmaop_dtype d, int s) {
  rmaop_vec v = NULL;
  RT_OK(rmaop_vec_create(l, d, &v));
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  void *buf = rt_alloc(d, info.local_n);
  for (int64_t j = 0; j < info.local_n; ++j)
    rt_store(d, buf, j, rt_value(info.offset + j, s));
  RT_OK(rmaop_vec_write_local(v, buf));
  free(buf);
  return v;
}

/* Local elements of v equal f(global index) within tol (0: bitwise equal to the rounded value). */
typedef double _Complex (*ref_fn)(rmaop_dtype d, int64_t gi, const void *arg);
static void check_local(rmaop_vec v, ref_fn f, const void *arg, double tol, const char *what) {
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  void *buf = rt_alloc(info.dtype, info.local_n);
  RT_OK(rmaop_vec_read_local(v, buf));
  int ok = 1;
  int64_t bad = -1;
  double _Complex got = 0, want = 0;
  for (int64_t j = 0; j < info.local_n && ok; ++j) {
    got = rt_load(info.dtype, buf, j);
    want = f(info.dtype, info.offset + j, arg);
    ok = tol == 0 ? got == rt_round(info.dtype, want) : rt_close(got, want, tol, 1.0);
    if (!ok)
      bad = j;
  }
  free(buf);
  RT_CHECK(ok, "%s (%s): local element %lld is %.17g%+.17gi, want %.17g%+.17gi", what, rmaop_dtype_name(info.dtype),
           (long long)bad, creal(got), cimag(got), creal(want), cimag(want));
}

/* Scalars: complex for complex dtypes, real otherwise (real dtypes reject an imaginary part). */
static double _Complex scalar(rmaop_dtype d, double re, double im) {
  return rt_is_complex(d) ? re + I * im : re;
}

typedef struct {
  double _Complex a, b;
} coeffs;
static double _Complex ref_const(rmaop_dtype d, int64_t gi, const void *arg) {
  return *(const double _Complex *)arg;
}
static double _Complex ref_x(rmaop_dtype d, int64_t gi, const void *arg) {
  return gval(d, gi, 0);
}
static double _Complex ref_series(rmaop_dtype d, int64_t gi, const void *arg) {
  return gval(d, gi, *(const int *)arg);
}
static double _Complex ref_axpy(rmaop_dtype d, int64_t gi, const void *arg) {
  const coeffs *c = arg;
  return c->a * gval(d, gi, 0) + gval(d, gi, 1);
}
static double _Complex ref_axpby(rmaop_dtype d, int64_t gi, const void *arg) {
  const coeffs *c = arg;
  return c->a * gval(d, gi, 0) + c->b * gval(d, gi, 1);
}
static double _Complex ref_scale(rmaop_dtype d, int64_t gi, const void *arg) {
  const coeffs *c = arg;
  return c->a * gval(d, gi, 0);
}
static double _Complex ref_mult(rmaop_dtype d, int64_t gi, const void *arg) {
  return gval(d, gi, 0) * gval(d, gi, 1);
}

START_TEST(test_local_ops) {
  for (int c = 0; c < NLAYOUTS; ++c) {
    rmaop_layout l = make_layout(c);
    for (int k = 0; k < 4; ++k) {
      rmaop_dtype d = rt_dtypes[k];
      double tol = rt_tol(d);
      rmaop_vec x = make_vec(l, d, 0), y = make_vec(l, d, 1), w = NULL;
      RT_OK(rmaop_vec_duplicate(x, &w));
      double _Complex zero = 0;
      check_local(w, ref_const, &zero, 0, "duplicate is zero");
      check_local(x, ref_x, NULL, 0, "write_local/read_local");
      double _Complex alpha = scalar(d, -1.25, 0.5);
      RT_OK(rmaop_vec_set(w, alpha));
      check_local(w, ref_const, &alpha, 0, "set");
      RT_OK(rmaop_vec_copy(x, w));
      check_local(w, ref_x, NULL, 0, "copy");
      coeffs cf = {scalar(d, 0.5, -0.25), scalar(d, -2.0, 0.75)};
      RT_OK(rmaop_vec_axpy(y, cf.a, x)); /* y = a x + y */
      check_local(y, ref_axpy, &cf, tol, "axpy");
      rmaop_vec_destroy(&y);
      y = make_vec(l, d, 1);
      RT_OK(rmaop_vec_axpby(y, cf.a, cf.b, x)); /* y = a x + b y */
      check_local(y, ref_axpby, &cf, tol, "axpby");
      RT_OK(rmaop_vec_scale(w, cf.a)); /* w (= x) *= a */
      check_local(w, ref_scale, &cf, tol, "scale");
      rmaop_vec_destroy(&y);
      y = make_vec(l, d, 1);
      RT_OK(rmaop_vec_pointwise_mult(w, x, y));
      check_local(w, ref_mult, NULL, tol, "pointwise_mult");
      /* pointwise with aliasing: x = x .* y */
      RT_OK(rmaop_vec_pointwise_mult(x, x, y));
      check_local(x, ref_mult, NULL, tol, "pointwise_mult aliased");
      /* the local array is the vector's memory */
      void *arr = NULL;
      RT_OK(rmaop_vec_get_array(y, &arr));
      rmaop_vec_info info;
      RT_OK(rmaop_vec_get_info(y, &info));
      RT_CHECK(info.local_n == 0 || arr != NULL, "get_array returned NULL");
      RT_CHECK(info.memory == (rt_device() ? RMAOP_MEMORY_DEVICE : RMAOP_MEMORY_HOST), "vector memory kind is %s",
               rmaop_memory_name(info.memory));
      if (!rt_device()) { /* device memory is not for host stores */
        for (int64_t j = 0; j < info.local_n; ++j)
          rt_store(d, arr, j, rt_value(info.offset + j, 0));
        check_local(y, ref_x, NULL, 0, "get_array writes");
      }
      rmaop_vec_destroy(&x);
      rmaop_vec_destroy(&y);
      rmaop_vec_destroy(&w);
      RT_CHECK(x == NULL && y == NULL && w == NULL, "destroy did not clear the handle");
    }
    rmaop_layout_destroy(&l);
  }
}
END_TEST

/* Serial references over the whole global range. */
static long double _Complex ref_dot(rmaop_dtype d, int64_t n, int sx, int sy, long double *scale) {
  long double _Complex s = 0;
  *scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    double _Complex x = gval(d, i, sx), y = gval(d, i, sy);
    s += conj(x) * (long double _Complex)y;
    *scale += cabs(x) * cabs(y);
  }
  return s;
}

START_TEST(test_reductions) {
  for (int c = 0; c < NLAYOUTS; ++c) {
    rmaop_layout l = make_layout(c);
    rmaop_layout_info li;
    RT_OK(rmaop_layout_get_info(l, &li));
    for (int k = 0; k < 4; ++k) {
      rmaop_dtype d = rt_dtypes[k];
      double tol = rt_tol(d);
      rmaop_vec x = make_vec(l, d, 0), y = make_vec(l, d, 1);
      long double sxy, syx, sxx;
      long double _Complex rxy = ref_dot(d, li.global_n, 0, 1, &sxy), ryx = ref_dot(d, li.global_n, 1, 0, &syx),
                           rxx = ref_dot(d, li.global_n, 0, 0, &sxx);
      double _Complex r = 7;
      RT_OK(rmaop_vec_dot(x, y, &r));
      RT_CHECK(rt_close(r, (double _Complex)rxy, tol, (double)sxy), "%s %s: dot = %.17g%+.17gi, want %.17Lg%+.17Lgi",
               layout_names[c], rmaop_dtype_name(d), creal(r), cimag(r), creall(rxy), cimagl(rxy));
      RT_CHECK(rt_same_everywhere(&r, sizeof r), "dot differs between ranks");
      /* conjugation is on the FIRST argument: dot(y, x) = conj(dot(x, y)), different for complex data */
      double _Complex r2 = 0;
      RT_OK(rmaop_vec_dot(y, x, &r2));
      RT_CHECK(rt_close(r2, (double _Complex)ryx, tol, (double)syx),
               "%s %s: dot(y,x) = %.17g%+.17gi, want %.17Lg%+.17Lgi", layout_names[c], rmaop_dtype_name(d), creal(r2),
               cimag(r2), creall(ryx), cimagl(ryx));
      if (!rt_is_complex(d))
        RT_CHECK(cimag(r) == 0 && cimag(r2) == 0, "real dot with an imaginary part");
      double nrm = -1;
      RT_OK(rmaop_vec_norm2(x, &nrm));
      double want_nrm = sqrt((double)creall(rxx));
      RT_CHECK(fabs(nrm - want_nrm) <= tol * (1 + want_nrm), "%s %s: norm2 = %.17g, want %.17g", layout_names[c],
               rmaop_dtype_name(d), nrm, want_nrm);
      RT_CHECK(rt_same_everywhere(&nrm, sizeof nrm), "norm2 differs between ranks");
      /* mdot: three dots in one reduction, blocking and split */
      rmaop_vec xs[3] = {x, y, x}, ys[3] = {y, x, x};
      double _Complex m[3] = {0, 0, 0};
      RT_OK(rmaop_vec_mdot(3, xs, ys, m));
      long double _Complex want_m[3] = {rxy, ryx, rxx};
      long double scales[3] = {sxy, syx, sxx};
      int ok = 1;
      for (int q = 0; q < 3; ++q)
        ok &= rt_close(m[q], (double _Complex)want_m[q], tol, (double)scales[q]);
      RT_CHECK(ok, "%s %s: mdot disagrees with the reference", layout_names[c], rmaop_dtype_name(d));
      /* mdot and dot add the ranks' partials in the same order, so they agree exactly -- except NCCL's ring
       * allreduce on 3 or more ranks, which starts each element's sum at a rank that depends on where the
       * element lies in the buffer (mdot reduces 6 doubles, dot 2): there they agree to rounding. */
      rmaop_ctx_info ci;
      RT_OK(rmaop_ctx_get_info(ctx, &ci));
      if (strcmp(ci.backend, "nccl") == 0 && ci.size > 2)
        RT_CHECK(rt_close(m[0], r, tol, (double)sxy) && rt_close(m[1], r2, tol, (double)syx),
                 "mdot differs from dot beyond rounding (%.17g%+.17gi vs %.17g%+.17gi)", creal(m[1]), cimag(m[1]),
                 creal(r2), cimag(r2));
      else
        RT_CHECK(m[0] == r && m[1] == r2, "mdot differs from dot (%.17g%+.17gi, %.17g%+.17gi vs %.17g%+.17gi, "
                 "%.17g%+.17gi)", creal(m[0]), cimag(m[0]), creal(m[1]), cimag(m[1]), creal(r), cimag(r), creal(r2),
                 cimag(r2));
      double _Complex m2[3] = {0, 0, 0};
      rmaop_request req = NULL;
      RT_OK(rmaop_vec_mdot_begin(3, xs, ys, m2, &req));
      RT_OK(rmaop_request_wait(&req));
      RT_CHECK(req == NULL, "request_wait did not clear the handle");
      RT_CHECK(memcmp(m, m2, sizeof m) == 0, "mdot_begin/wait differs from mdot");
      RT_CHECK(rt_same_everywhere(m2, sizeof m2), "mdot differs between ranks");
      /* mdot_enqueue: the same dots left in the context's memory (device: enqueued, no host round trip) */
      {
        rmaop_layout rl = NULL;
        rmaop_vec rv = NULL;
        void *rp = NULL;
        RT_OK(rmaop_layout_create_local(ctx, 6, &rl));
        RT_OK(rmaop_vec_create(rl, RMAOP_F64, &rv));
        RT_OK(rmaop_vec_get_array(rv, &rp));
        if (rt_device() && c == 3) {
          RT_EXPECT(rmaop_vec_mdot_enqueue(3, xs, ys, rp), RT_BIT(RMAOP_ERR_UNSUPPORTED));
        } else {
          RT_OK(rmaop_vec_mdot_enqueue(3, xs, ys, rp));
          double e[6];
          RT_OK(rmaop_vec_read_local(rv, e));
          int eok = 1;
          for (int q = 0; q < 3; ++q)
            eok &= rt_close(CMPLX(e[2 * q], e[2 * q + 1]), (double _Complex)want_m[q], tol, (double)scales[q]);
          RT_CHECK(eok, "%s %s: mdot_enqueue disagrees with the reference (%.17g vs mdot %.17g)", layout_names[c],
                   rmaop_dtype_name(d), e[0], creal(m[0]));
          RT_CHECK(rt_same_everywhere(e, sizeof e), "mdot_enqueue differs between ranks");
        }
        rmaop_vec_destroy(&rv);
        rmaop_layout_destroy(&rl);
      }
      rmaop_vec_destroy(&x);
      rmaop_vec_destroy(&y);
    }
    rmaop_layout_destroy(&l);
  }
}
END_TEST

START_TEST(test_broadcast_dot_is_local) {
  /* A BROADCAST vector is whole on every rank: its dot is the local dot, not P times it. */
  rmaop_layout l = make_layout(3);
  rmaop_vec x = make_vec(l, RMAOP_F64, 0), y = make_vec(l, RMAOP_F64, 1);
  double _Complex r = 0;
  RT_OK(rmaop_vec_dot(x, y, &r));
  double local = 0;
  for (int i = 0; i < 7; ++i)
    local += creal(rt_value(i, 0)) * creal(rt_value(i, 1));
  RT_CHECK(fabs(creal(r) - local) <= 1e-13 * 7, "broadcast dot %.17g, local dot %.17g", creal(r), local);
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_layout_destroy(&l);
}
END_TEST

/* Gather the vector at root and check every global element bitwise against series s. */
static void check_gathered(rmaop_vec v, int root, int s, const char *what) {
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(v, &info));
  void *g = rt_alloc(info.dtype, info.global_n);
  RT_OK(rmaop_vec_gather(v, root, rt_rank == root ? g : NULL));
  int ok = 1;
  int64_t bad = -1;
  if (rt_rank == root)
    for (int64_t i = 0; i < info.global_n && ok; ++i)
      if (!(ok = rt_load(info.dtype, g, i) == gval(info.dtype, i, s)))
        bad = i;
  free(g);
  RT_CHECK(ok, "%s (%s, root %d): global element %lld wrong", what, rmaop_dtype_name(info.dtype), root, (long long)bad);
}

START_TEST(test_gather_scatter) {
  for (int c = 0; c < NLAYOUTS; ++c) {
    rmaop_layout l = make_layout(c);
    for (int k = 0; k < 4; ++k) {
      rmaop_dtype d = rt_dtypes[k];
      rmaop_vec x = make_vec(l, d, 0);
      rmaop_vec_info info;
      RT_OK(rmaop_vec_get_info(x, &info));
      int cur = 0; /* the series x holds */
      for (int root = 0; root < rt_size; ++root) {
        check_gathered(x, root, cur, "gather");
        /* scatter series 5+root from this root, check the local parts, gather it at the next root */
        int s = 5 + root;
        cur = s;
        void *g = rt_alloc(d, info.global_n);
        for (int64_t i = 0; i < info.global_n; ++i)
          rt_store(d, g, i, rt_value(i, s));
        RT_OK(rmaop_vec_scatter(x, root, rt_rank == root ? g : NULL));
        free(g);
        check_local(x, ref_series, &s, 0, "scatter");
        check_gathered(x, (root + 1) % rt_size, s, "gather after scatter");
      }
      rmaop_vec_destroy(&x);
    }
    rmaop_layout_destroy(&l);
  }
}
END_TEST

/* Vectors with no elements at all (global length 0, or none on this rank): every operation succeeds and moves
 * nothing, gather and scatter accept NULL buffers, reductions give 0. Under SANITIZE=1 (setup.sh) a memcpy from
 * or to NULL of 0 bytes here would be undefined behaviour, so the vector code skips such copies. */
START_TEST(test_empty_vectors) {
  const rmaop_layout_kind kinds[2] = {RMAOP_LAYOUT_SCATTER, RMAOP_LAYOUT_BROADCAST};
  for (int k = 0; k < 3; ++k) {
    rmaop_layout l = NULL;
    if (k < 2)
      RT_OK(rmaop_layout_create(ctx, kinds[k], 0, &l));
    else
      RT_OK(rmaop_layout_create_local(ctx, 0, &l));
    rmaop_vec x = NULL, y = NULL;
    RT_OK(rmaop_vec_create(l, RMAOP_F64, &x));
    RT_OK(rmaop_vec_create(l, RMAOP_F64, &y));
    RT_OK(rmaop_vec_set(x, 1.0));
    RT_OK(rmaop_vec_set(y, 2.0));
    double _Complex d = 7;
    double n2 = 7;
    RT_OK(rmaop_vec_dot(x, y, &d));
    RT_OK(rmaop_vec_norm2(x, &n2));
    RT_CHECK(d == 0 && n2 == 0, "empty vector (kind %d): dot %g, norm %g", k, creal(d), n2);
    for (int root = 0; root < rt_size; ++root) {
      RT_OK(rmaop_vec_gather(x, root, NULL));
      RT_OK(rmaop_vec_scatter(x, root, NULL));
    }
    rmaop_vec_destroy(&x);
    rmaop_vec_destroy(&y);
    rmaop_layout_destroy(&l);
  }
}
END_TEST

START_TEST(test_mismatch_everywhere) {
  rmaop_layout a = NULL, b = NULL, c = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10, &a));
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10 + rt_size, &b)); /* every local size differs */
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 11, &c));           /* global size differs */
  rmaop_vec x = make_vec(a, RMAOP_F64, 0), y = make_vec(b, RMAOP_F64, 1), z = make_vec(c, RMAOP_F64, 1);
  rmaop_vec xf = make_vec(a, RMAOP_F32, 1), xc = make_vec(a, RMAOP_C128, 1);
  double _Complex r = 42;
  RT_EXPECT(rmaop_vec_axpy(y, 1.0, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_axpy(z, 1.0, x), RT_BIT(RMAOP_ERR_ARG)); /* even where the local sizes happen to agree */
  RT_EXPECT(rmaop_vec_axpy(xf, 1.0, x), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("f32");
  RT_EXPECT(rmaop_vec_axpby(xc, 1.0, 2.0, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_copy(x, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_copy(x, xf), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_pointwise_mult(x, x, y), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_pointwise_mult(x, xf, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_dot(x, y, &r), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_dot(x, z, &r), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_dot(x, xc, &r), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(r == 42, "dot wrote its output on failure");
  rmaop_vec xs[2] = {x, x}, ys[2] = {x, xf};
  double _Complex m[2] = {0, 0};
  RT_EXPECT(rmaop_vec_mdot(2, xs, ys, m), RT_BIT(RMAOP_ERR_ARG));
  /* real vectors take no imaginary scalar */
  RT_EXPECT(rmaop_vec_set(x, 1.0 + 2.0 * I), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_scale(xf, 0.5 * I), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_axpy(x, 3.0 * I, x), RT_BIT(RMAOP_ERR_ARG));
  /* the same sizes through a different layout object are fine */
  rmaop_layout a2 = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10, &a2));
  rmaop_vec x2 = make_vec(a2, RMAOP_F64, 1);
  RT_OK(rmaop_vec_dot(x, x2, &r));
  RT_OK(rmaop_vec_axpy(x2, 1.0, x));
  rmaop_vec v[] = {x, y, z, xf, xc, x2};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i)
    rmaop_vec_destroy(&v[i]);
  rmaop_layout_destroy(&a);
  rmaop_layout_destroy(&a2);
  rmaop_layout_destroy(&b);
  rmaop_layout_destroy(&c);
}
END_TEST

START_TEST(test_mismatch_on_one_rank) {
  /* Rank P-1 alone passes a vector of another dtype to a collective dot: it gets ARG, the others
   * (whose arguments are fine) must get RMAOP_ERR_REMOTE instead of hanging or a result. */
  rmaop_layout a = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 12, &a));
  rmaop_vec x = make_vec(a, RMAOP_F64, 0), y = make_vec(a, RMAOP_F64, 1), yf = make_vec(a, RMAOP_C64, 1);
  const int bad = rt_size - 1;
  double _Complex r = 42;
  rmaop_status want = rt_rank == bad ? RMAOP_ERR_ARG : RMAOP_ERR_REMOTE;
  RT_EXPECT(rmaop_vec_dot(x, rt_rank == bad ? yf : y, &r), RT_BIT(want));
  RT_CHECK(r == 42, "dot wrote its output on failure");
  double nrm = -1;
  /* (a NULL vector handle cannot take part: it does not know the communicator) */
  RT_EXPECT(rmaop_vec_norm2(x, rt_rank == bad ? NULL : &nrm), RT_BIT(want));
  RT_EXPECT(rmaop_vec_dot(x, y, rt_rank == bad ? NULL : &r), RT_BIT(want));
  rmaop_vec xs[2] = {x, y}, ys[2] = {y, rt_rank == bad ? yf : x};
  double _Complex m[2];
  RT_EXPECT(rmaop_vec_mdot(2, xs, ys, m), RT_BIT(want));
  rmaop_request req = NULL;
  rmaop_status st = rmaop_vec_mdot_begin(2, xs, ys, m, &req);
  if (st == RMAOP_OK)
    st = rmaop_request_wait(&req); /* the error may surface at begin or at wait */
  RT_CHECK(st == want, "mdot_begin/wait with a bad rank -> %s", rmaop_status_string(st));
  /* and the collective still works afterwards */
  RT_OK(rmaop_vec_dot(x, y, &r));
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&yf);
  rmaop_layout_destroy(&a);
}
END_TEST

START_TEST(test_null_handles) {
  rmaop_layout a = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 6, &a));
  rmaop_vec x = make_vec(a, RMAOP_C128, 0), v = NULL;
  double _Complex r;
  double nrm;
  void *p;
  rmaop_vec_info info;
  RT_EXPECT(rmaop_vec_create(NULL, RMAOP_F64, &v), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_create(a, (rmaop_dtype)9, &v), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_create(a, RMAOP_F64, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_duplicate(NULL, &v), RT_BIT(RMAOP_ERR_ARG));
  RT_CHECK(v == NULL, "output written on failure");
  RT_EXPECT(rmaop_vec_get_info(NULL, &info), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_get_info(x, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_get_array(NULL, &p), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_get_array(x, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_read_local(x, NULL), RT_BIT(RMAOP_ERR_ARG) | (rt_rank >= 6 ? RT_BIT(RMAOP_OK) : 0));
  RT_EXPECT(rmaop_vec_set(NULL, 1.0), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_copy(NULL, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_copy(x, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_axpy(x, 1.0, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_axpy(NULL, 1.0, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_axpby(NULL, 1.0, 1.0, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_scale(NULL, 1.0), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_pointwise_mult(x, NULL, x), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_dot(NULL, x, &r), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_dot(x, NULL, &r), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_dot(x, x, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_norm2(NULL, &nrm), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_norm2(x, NULL), RT_BIT(RMAOP_ERR_ARG));
  rmaop_vec xs[1] = {x}, nulls[1] = {NULL};
  double _Complex m[1];
  RT_EXPECT(rmaop_vec_mdot(-1, xs, xs, m), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_mdot(1, NULL, xs, m), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_mdot(1, xs, nulls, m), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_mdot(1, xs, xs, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_mdot_begin(1, xs, xs, m, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_mdot_enqueue(1, xs, xs, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_mdot_enqueue(1, NULL, xs, NULL), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_request_wait(NULL), RT_BIT(RMAOP_ERR_ARG));
  rmaop_request req = NULL;
  RT_EXPECT(rmaop_request_wait(&req), RT_BIT(RMAOP_ERR_ARG));
  /* gather/scatter: bad root on every rank; NULL buffer on the root */
  double _Complex g[6];
  RT_EXPECT(rmaop_vec_gather(x, rt_size, g), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_gather(x, -1, g), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_scatter(x, rt_size, g), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT_ON(rmaop_vec_gather(x, 0, rt_rank == 0 ? NULL : g), 0, RMAOP_ERR_ARG);
  RT_EXPECT_ON(rmaop_vec_scatter(x, 0, rt_rank == 0 ? NULL : g), 0, RMAOP_ERR_ARG);
  RT_EXPECT(rmaop_vec_gather(NULL, 0, g), RT_BIT(RMAOP_ERR_ARG));
  rmaop_vec_destroy(&x);
  rmaop_vec_destroy(&x); /* no-op on NULL */
  rmaop_vec_destroy(NULL);
  rmaop_layout_destroy(&a);
}
END_TEST

/* rmaop_vec_create_with_array: the vector is the caller's memory (writes through it are seen in the array,
 * destroying it leaves the memory alone), and bad memory is refused by name. The caller's memory here is
 * another vector's array: host or device memory as the context's, freed by its owner only. */
START_TEST(test_with_array) {
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 10, &l));
  rmaop_vec owner = NULL, w = NULL;
  RT_OK(rmaop_vec_create(l, RMAOP_F64, &owner));
  void *p = NULL;
  RT_OK(rmaop_vec_get_array(owner, &p));
  RT_OK(rmaop_vec_create_with_array(l, RMAOP_F64, p, &w));
  void *q = NULL;
  RT_OK(rmaop_vec_get_array(w, &q));
  RT_CHECK(q == p, "the vector's array %p is not the caller's %p", q, p);
  RT_OK(rmaop_vec_set(w, 3.0));
  double _Complex d = 0;
  RT_OK(rmaop_vec_dot(w, owner, &d));
  RT_CHECK(creal(d) == 90.0, "dot over the shared memory is %g, expected 90", creal(d));
  rmaop_vec_destroy(&w);
  RT_CHECK(w == NULL, "destroy did not clear the handle");
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(owner, &info));
  double h[16];
  RT_OK(rmaop_vec_read_local(owner, h)); /* the memory outlives the borrowed vector */
  int64_t wrong = 0; /* RT_CHECK is collective: one per rank whatever the local size */
  for (int64_t i = 0; i < info.local_n; ++i) wrong += h[i] != 3.0;
  RT_CHECK(wrong == 0, "%lld elements are not 3 after the borrowed vector was destroyed", (long long)wrong);

  RT_EXPECT(rmaop_vec_create_with_array(l, RMAOP_F64, NULL, &w), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("data is NULL");
  RT_EXPECT(rmaop_vec_create_with_array(l, RMAOP_F64, (char *)p + 4, &w), RT_BIT(RMAOP_ERR_ARG));
  RT_MESSAGE_HAS("not aligned to 8 bytes");
  RT_EXPECT(rmaop_vec_create_with_array(NULL, RMAOP_F64, p, &w), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_create_with_array(l, (rmaop_dtype)9, p, &w), RT_BIT(RMAOP_ERR_ARG));
  RT_EXPECT(rmaop_vec_create_with_array(l, RMAOP_F64, p, NULL), RT_BIT(RMAOP_ERR_ARG));
  if (rt_device()) { /* host memory on a device context */
    RT_EXPECT(rmaop_vec_create_with_array(l, RMAOP_F64, h, &w), RT_BIT(RMAOP_ERR_ARG));
    RT_MESSAGE_HAS("is host memory but the context's memory is device");
  }
  RT_CHECK(w == NULL, "a refused creation left a handle");
  rmaop_vec_destroy(&owner);
  rmaop_layout_destroy(&l);
}
END_TEST

/* The solvers' work vectors: a released one is kept by the context and handed out again for the same size,
 * zero filled; a different size gets other memory; past RMAOP__WORK_CACHE buffers the oldest is freed, and the
 * context's destroy frees the rest (leak checks under SANITIZE=1). */
START_TEST(test_work_vectors) {
  rmaop_layout l = NULL;
  RT_OK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, 1000, &l));
  rmaop_vec x = NULL, a = NULL, b = NULL;
  RT_OK(rmaop_vec_create(l, RMAOP_F64, &x));
  RT_OK(rmaop__vec_work(x, &a));
  RT_OK(rmaop_vec_set(a, 5.0));
  void *pa = NULL, *pb = NULL;
  RT_OK(rmaop_vec_get_array(a, &pa));
  rmaop_vec_destroy(&a);
  RT_CHECK(ctx->nwork == 1, "the released work vector was not kept (%d buffers kept)", ctx->nwork);
  RT_OK(rmaop__vec_work(x, &b));
  RT_OK(rmaop_vec_get_array(b, &pb));
  RT_CHECK(pb == pa && ctx->nwork == 0, "the kept buffer %p was not handed out again (got %p, %d kept)", pa, pb,
           ctx->nwork);
  rmaop_vec_info info;
  RT_OK(rmaop_vec_get_info(b, &info));
  double h[1000];
  RT_OK(rmaop_vec_read_local(b, h));
  int64_t nonzero = 0;
  for (int64_t i = 0; i < info.local_n; ++i) nonzero += h[i] != 0.0;
  RT_CHECK(nonzero == 0, "%lld elements of a reused work vector are not zero", (long long)nonzero);
  rmaop_vec_destroy(&b);

  rmaop_vec f = NULL, v[RMAOP__WORK_CACHE + 2];
  RT_OK(rmaop_vec_create(l, RMAOP_F32, &f)); /* half the bytes: not the kept buffer */
  RT_OK(rmaop__vec_work(f, &a));
  RT_OK(rmaop_vec_get_array(a, &pa));
  RT_CHECK(pa != pb && ctx->nwork == 1, "a work vector of another size took the kept buffer");
  rmaop_vec_destroy(&a);
  for (int i = 0; i < RMAOP__WORK_CACHE + 2; ++i) RT_OK(rmaop__vec_work(x, &v[i]));
  RT_CHECK(ctx->nwork == 1, "%d buffers kept, expected the float32 one only", ctx->nwork);
  for (int i = 0; i < RMAOP__WORK_CACHE + 2; ++i) rmaop_vec_destroy(&v[i]);
  RT_CHECK(ctx->nwork == RMAOP__WORK_CACHE, "%d buffers kept, expected at most %d", ctx->nwork, RMAOP__WORK_CACHE);
  int f32_kept = 0;
  for (int i = 0; i < ctx->nwork; ++i) f32_kept += ctx->work[i].p == pa;
  RT_CHECK(f32_kept == 0, "the oldest buffer (float32) was kept when the cache overflowed");
  rmaop_vec_destroy(&f);
  rmaop_vec_destroy(&x);
  rmaop_layout_destroy(&l);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("vec");
  TCase *tc = tcase_create("vec");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_local_ops);
  tcase_add_test(tc, test_reductions);
  tcase_add_test(tc, test_broadcast_dot_is_local);
  tcase_add_test(tc, test_gather_scatter);
  tcase_add_test(tc, test_empty_vectors);
  tcase_add_test(tc, test_mismatch_everywhere);
  tcase_add_test(tc, test_mismatch_on_one_rank);
  tcase_add_test(tc, test_null_handles);
  tcase_add_test(tc, test_with_array);
  tcase_add_test(tc, test_work_vectors);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  return rt_main(argc, argv, make_suite);
}
