/* Vectors: local element operations and collective reductions. Host memory: one macro generates each
 * kernel for the four dtypes, complex arithmetic is C11's. Device memory: the kernels of src/device/device.cu
 * on the context's stream (ON_DEVICE below); a dot's partials come back to the host and are reduced by the
 * backend like host partials. */
#include "error.h"
#include "ctx.h"
#include "vec.h"
#include "reduce.h"
#include "dtype.h"
#include "device/device.h"

#include <math.h>
#include <stdio.h>

static int is_complex(rmaop_dtype dt) { return dt == RMAOP_C64 || dt == RMAOP_C128; }

#define ON_DEVICE(v) RMAOP__ON_DEVICE(v)

static rmaop_status check_vec(rmaop_ctx ctx, const char *fn, const char *name, rmaop_vec v) {
  RMAOP_REQUIRE(ctx, v != NULL, RMAOP_ERR_ARG, "%s: vector %s is NULL", fn, name);
  return RMAOP_OK;
}

static int layouts_match(rmaop_vec x, rmaop_vec y) { return rmaop__layout_compatible(x->layout, y->layout); }

/* "scatter", "broadcast" or "stacked (3 parts)", for messages. */
static const char *describe(rmaop_layout l, char *buf, size_t n) {
  if (l->kind != RMAOP_LAYOUT_STACKED) return rmaop__layout_kind_name(l->kind);
  snprintf(buf, n, "stacked (%d parts)", l->nparts);
  return buf;
}

/* Two vectors can be combined when they live in one context with the same dtype and distribution. */
static rmaop_status check_pair(const char *fn, const char *xn, rmaop_vec x, const char *yn, rmaop_vec y) {
  rmaop_ctx ctx = x ? x->ctx : y ? y->ctx : NULL;
  RMAOP_CHECK(check_vec(ctx, fn, xn, x));
  RMAOP_CHECK(check_vec(ctx, fn, yn, y));
  RMAOP_REQUIRE(ctx, x->ctx == y->ctx, RMAOP_ERR_ARG, "%s: %s and %s belong to different contexts", fn, xn, yn);
  RMAOP_REQUIRE(ctx, x->dtype == y->dtype, RMAOP_ERR_ARG, "%s: %s is %s but %s is %s", fn, xn,
                rmaop_dtype_name(x->dtype), yn, rmaop_dtype_name(y->dtype));
  char dx[32], dy[32];
  RMAOP_REQUIRE(ctx, layouts_match(x, y), RMAOP_ERR_ARG,
                "%s: layouts differ: %s has %lld of %lld elements here (%s), %s has %lld of %lld (%s)%s", fn, xn,
                (long long)x->local_n, (long long)x->layout->global_n, describe(x->layout, dx, sizeof dx), yn,
                (long long)y->local_n, (long long)y->layout->global_n, describe(y->layout, dy, sizeof dy),
                x->layout->kind == RMAOP_LAYOUT_STACKED && y->layout->kind == RMAOP_LAYOUT_STACKED
                    ? "; the stacked parts differ in number, kind or size"
                    : "");
  return RMAOP_OK;
}

/* The conditions check_pair() enforces, without building a message: the hot path of a dot. */
static int pair_ok(rmaop_vec x, rmaop_vec y) {
  return x && y && x->ctx == y->ctx && x->dtype == y->dtype && layouts_match(x, y);
}

static rmaop_status check_scalar(rmaop_vec x, const char *fn, const char *name, double _Complex a) {
  RMAOP_REQUIRE(x->ctx, is_complex(x->dtype) || cimag(a) == 0.0, RMAOP_ERR_ARG,
                "%s: %s = %g%+gi has an imaginary part but the vector is %s", fn, name, creal(a), cimag(a),
                rmaop_dtype_name(x->dtype));
  return RMAOP_OK;
}

rmaop_status rmaop_vec_create(rmaop_layout layout, rmaop_dtype dtype, rmaop_vec *out) {
  RMAOP_REQUIRE(NULL, layout != NULL, RMAOP_ERR_ARG, "rmaop_vec_create: layout is NULL");
  rmaop_ctx ctx = layout->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_vec_create: vec (output) is NULL");
  RMAOP_REQUIRE(ctx, rmaop_dtype_size(dtype) > 0, RMAOP_ERR_ARG, "rmaop_vec_create: dtype %d is not a rmaop_dtype",
                (int)dtype);
  int64_t n = layout->sizes[ctx->rank];
  RMAOP_REQUIRE(ctx, (uint64_t)n <= SIZE_MAX / rmaop_dtype_size(dtype), RMAOP_ERR_ARG,
                "rmaop_vec_create: %lld local elements overflow size_t", (long long)n);
  rmaop_vec v = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *v, "vector", (void **)&v));
  rmaop_status st = rmaop__mem_calloc_node(ctx, (size_t)n, rmaop_dtype_size(dtype), "vector data", &v->data);
  if (st != RMAOP_OK) {
    free(v);
    return st;
  }
  v->ctx = ctx;
  v->layout = layout;
  layout->refs++;
  v->dtype = dtype;
  v->memory = ctx->memory;
  v->local_n = n;
  v->refs = 1;
  *out = v;
  return RMAOP_OK;
}

rmaop_status rmaop_vec_create_with_array(rmaop_layout layout, rmaop_dtype dtype, void *data, rmaop_vec *out) {
  static const char fn[] = "rmaop_vec_create_with_array";
  RMAOP_REQUIRE(NULL, layout != NULL, RMAOP_ERR_ARG, "%s: layout is NULL", fn);
  rmaop_ctx ctx = layout->ctx;
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "%s: vec (output) is NULL", fn);
  const size_t es = rmaop_dtype_size(dtype);
  RMAOP_REQUIRE(ctx, es > 0, RMAOP_ERR_ARG, "%s: dtype %d is not a rmaop_dtype", fn, (int)dtype);
  const int64_t n = layout->sizes[ctx->rank];
  RMAOP_REQUIRE(ctx, data != NULL || n == 0, RMAOP_ERR_ARG, "%s: data is NULL but the layout has %lld local elements",
                fn, (long long)n);
  /* Element alignment: the kernels and the complex arithmetic load whole elements (a complex's part size). */
  const size_t align = dtype == RMAOP_C64 || dtype == RMAOP_C128 ? es / 2 : es;
  RMAOP_REQUIRE(ctx, ((uintptr_t)data % align) == 0, RMAOP_ERR_ARG,
                "%s: data %p is not aligned to %zu bytes (the %s element's alignment)", fn, data, align,
                rmaop_dtype_name(dtype));
  if (n > 0) {
    const int on_dev = rmaop__dev_is_device_ptr(data);
    RMAOP_REQUIRE(ctx, on_dev == (ctx->memory == RMAOP_MEMORY_DEVICE), RMAOP_ERR_ARG,
                  "%s: data is %s memory but the context's memory is %s", fn, on_dev ? "device" : "host",
                  rmaop_memory_name(ctx->memory));
  }
  rmaop_vec v = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *v, "vector", (void **)&v));
  *v = (struct rmaop_vec_s){.ctx = ctx, .layout = layout, .dtype = dtype, .memory = ctx->memory, .local_n = n,
                            .data = data, .refs = 1, .borrowed = 1};
  layout->refs++;
  *out = v;
  return RMAOP_OK;
}

rmaop_status rmaop_vec_duplicate(rmaop_vec x, rmaop_vec *out) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_duplicate", "x", x));
  return rmaop_vec_create(x->layout, x->dtype, out);
}

rmaop_status rmaop__vec_work(rmaop_vec like, rmaop_vec *out) {
  RMAOP_CHECK(check_vec(NULL, "rmaop__vec_work", "like", like));
  rmaop_ctx ctx = like->ctx;
  rmaop_vec v = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *v, "work vector", (void **)&v));
  const size_t bytes = (size_t)like->local_n * rmaop_dtype_size(like->dtype);
  rmaop_status st = rmaop__work_alloc(ctx, 0, bytes, "work vector data", &v->data);
  if (st != RMAOP_OK) {
    free(v);
    return st;
  }
  *v = (struct rmaop_vec_s){.ctx = ctx, .layout = like->layout, .dtype = like->dtype, .memory = ctx->memory,
                            .local_n = like->local_n, .data = v->data, .refs = 1, .work = 1};
  like->layout->refs++;
  *out = v;
  return RMAOP_OK;
}

void rmaop_vec_destroy(rmaop_vec *pv) {
  if (!pv || !*pv) return;
  rmaop_vec v = *pv;
  *pv = NULL;
  if (--v->refs > 0) return; /* views of it still use its memory */
  rmaop_layout_destroy(&v->layout);
  if (v->parent) { /* a view: the memory is the parent's */
    rmaop_vec_destroy(&v->parent);
    free(v);
    return;
  }
  if (v->work) { /* back to the context's cache: the next user is ordered after this one by the stream */
    rmaop__work_free(v->ctx, 0, v->data, (size_t)v->local_n * rmaop_dtype_size(v->dtype));
    free(v);
    return;
  }
  if (ON_DEVICE(v)) (void)rmaop__dev_sync(v->ctx); /* kernels still using the memory finish first */
  if (!v->borrowed) rmaop__mem_free(v->ctx, &v->data);
  free(v);
}

/* ---- stacked vectors: part views ---- */

void rmaop__vec_part_view(rmaop_vec v, int i, struct rmaop_vec_s *view) {
  const rmaop_layout part = v->layout->parts[i];
  *view = (struct rmaop_vec_s){.ctx = v->ctx,
                               .layout = part,
                               .dtype = v->dtype,
                               .memory = v->memory,
                               .local_n = part->sizes[v->ctx->rank],
                               .data = (char *)v->data + v->layout->part_off[i] * (int64_t)rmaop_dtype_size(v->dtype)};
}

rmaop_status rmaop_vec_stack_part(rmaop_vec v, int i, rmaop_vec *out) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_stack_part", "v", v));
  RMAOP_REQUIRE(v->ctx, out != NULL, RMAOP_ERR_ARG, "rmaop_vec_stack_part: part (output) is NULL");
  RMAOP_REQUIRE(v->ctx, v->layout->kind == RMAOP_LAYOUT_STACKED, RMAOP_ERR_ARG,
                "rmaop_vec_stack_part: v is %s, not stacked", rmaop__layout_kind_name(v->layout->kind));
  RMAOP_REQUIRE(v->ctx, i >= 0 && i < v->layout->nparts, RMAOP_ERR_ARG,
                "rmaop_vec_stack_part: part index %d is outside [0, %d)", i, v->layout->nparts);
  rmaop_vec view = NULL;
  RMAOP_CHECK(rmaop__calloc(v->ctx, 1, sizeof *view, "vector view", (void **)&view));
  rmaop__vec_part_view(v, i, view);
  view->refs = 1;
  view->layout->refs++;
  view->parent = v;
  v->refs++;
  *out = view;
  return RMAOP_OK;
}

rmaop_status rmaop_vec_get_info(rmaop_vec v, rmaop_vec_info *info) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_get_info", "vec", v));
  RMAOP_REQUIRE(v->ctx, info != NULL, RMAOP_ERR_ARG, "rmaop_vec_get_info: info (output) is NULL");
  info->layout = v->layout;
  info->dtype = v->dtype;
  info->memory = v->memory;
  info->local_n = v->local_n;
  info->global_n = v->layout->global_n;
  info->offset = v->layout->offsets[v->ctx->rank];
  return RMAOP_OK;
}

rmaop_status rmaop_vec_get_array(rmaop_vec v, void **data) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_get_array", "vec", v));
  RMAOP_REQUIRE(v->ctx, data != NULL, RMAOP_ERR_ARG, "rmaop_vec_get_array: data (output) is NULL");
  *data = v->data;
  return RMAOP_OK;
}

rmaop_status rmaop_vec_read_local(rmaop_vec v, void *host) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_read_local", "vec", v));
  RMAOP_REQUIRE(v->ctx, host != NULL || v->local_n == 0, RMAOP_ERR_ARG, "rmaop_vec_read_local: host buffer is NULL");
  const size_t bytes = (size_t)v->local_n * rmaop_dtype_size(v->dtype);
  RMAOP_CHECK(rmaop__mem_copy(v->ctx, host, v->data, bytes));
  return ON_DEVICE(v) ? rmaop__dev_sync(v->ctx) : RMAOP_OK;
}

rmaop_status rmaop_vec_write_local(rmaop_vec v, const void *host) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_write_local", "vec", v));
  RMAOP_REQUIRE(v->ctx, host != NULL || v->local_n == 0, RMAOP_ERR_ARG, "rmaop_vec_write_local: host buffer is NULL");
  const size_t bytes = (size_t)v->local_n * rmaop_dtype_size(v->dtype);
  RMAOP_CHECK(rmaop__mem_copy(v->ctx, v->data, host, bytes));
  return ON_DEVICE(v) ? rmaop__dev_sync(v->ctx) : RMAOP_OK; /* the caller may reuse its buffer at once */
}

/* ---- local operations ---- */

rmaop_status rmaop_vec_set(rmaop_vec x, double _Complex alpha) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_set", "x", x));
  RMAOP_CHECK(check_scalar(x, "rmaop_vec_set", "alpha", alpha));
  const int64_t n = x->local_n;
  if (ON_DEVICE(x)) return rmaop__dev_set(x->ctx, x->dtype, x->data, n, creal(alpha), cimag(alpha));
  RMAOP__FOR_DTYPE(x->dtype, {
    T *d = (T *)x->data;
    const T a = (T)alpha;
    for (int64_t i = 0; i < n; ++i) d[i] = a;
  });
  return RMAOP_OK;
}

rmaop_status rmaop_vec_copy(rmaop_vec x, rmaop_vec y) {
  RMAOP_CHECK(check_pair("rmaop_vec_copy", "x", x, "y", y));
  return rmaop__mem_copy(x->ctx, y->data, x->data, (size_t)x->local_n * rmaop_dtype_size(x->dtype));
}

rmaop_status rmaop_vec_axpy(rmaop_vec y, double _Complex alpha, rmaop_vec x) {
  RMAOP_CHECK(check_pair("rmaop_vec_axpy", "y", y, "x", x));
  RMAOP_CHECK(check_scalar(y, "rmaop_vec_axpy", "alpha", alpha));
  const int64_t n = y->local_n;
  if (ON_DEVICE(y)) return rmaop__dev_axpby(y->ctx, y->dtype, y->data, x->data, n, creal(alpha), cimag(alpha), 1.0, 0.0);
  RMAOP__FOR_DTYPE(y->dtype, {
    T *restrict d = (T *)y->data;
    const T *s = (const T *)x->data;
    const T a = (T)alpha;
    for (int64_t i = 0; i < n; ++i) d[i] += a * s[i];
  });
  return RMAOP_OK;
}

rmaop_status rmaop_vec_axpby(rmaop_vec y, double _Complex alpha, double _Complex beta, rmaop_vec x) {
  RMAOP_CHECK(check_pair("rmaop_vec_axpby", "y", y, "x", x));
  RMAOP_CHECK(check_scalar(y, "rmaop_vec_axpby", "alpha", alpha));
  RMAOP_CHECK(check_scalar(y, "rmaop_vec_axpby", "beta", beta));
  const int64_t n = y->local_n;
  if (ON_DEVICE(y))
    return rmaop__dev_axpby(y->ctx, y->dtype, y->data, x->data, n, creal(alpha), cimag(alpha), creal(beta), cimag(beta));
  RMAOP__FOR_DTYPE(y->dtype, {
    T *d = (T *)y->data;
    const T *s = (const T *)x->data;
    const T a = (T)alpha, b = (T)beta;
    for (int64_t i = 0; i < n; ++i) d[i] = a * s[i] + b * d[i];
  });
  return RMAOP_OK;
}

rmaop_status rmaop_vec_scale(rmaop_vec x, double _Complex alpha) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_scale", "x", x));
  RMAOP_CHECK(check_scalar(x, "rmaop_vec_scale", "alpha", alpha));
  const int64_t n = x->local_n;
  if (ON_DEVICE(x)) return rmaop__dev_axpby(x->ctx, x->dtype, x->data, x->data, n, creal(alpha), cimag(alpha), 0.0, 0.0);
  RMAOP__FOR_DTYPE(x->dtype, {
    T *d = (T *)x->data;
    const T a = (T)alpha;
    for (int64_t i = 0; i < n; ++i) d[i] *= a;
  });
  return RMAOP_OK;
}

rmaop_status rmaop_vec_pointwise_mult(rmaop_vec w, rmaop_vec x, rmaop_vec y) {
  RMAOP_CHECK(check_pair("rmaop_vec_pointwise_mult", "w", w, "x", x));
  RMAOP_CHECK(check_pair("rmaop_vec_pointwise_mult", "w", w, "y", y));
  const int64_t n = w->local_n;
  if (ON_DEVICE(w)) return rmaop__dev_pmult(w->ctx, w->dtype, w->data, x->data, y->data, n);
  RMAOP__FOR_DTYPE(w->dtype, {
    T *d = (T *)w->data;
    const T *a = (const T *)x->data, *b = (const T *)y->data;
    for (int64_t i = 0; i < n; ++i) d[i] = a[i] * b[i];
  });
  return RMAOP_OK;
}

/* ---- reductions ---- */

/* sum conj(a_i) b_i over n host elements, accumulated in double: out[0] real, out[1] imaginary part.
 * DOT_LANES independent partial sums (element i goes to lane i mod DOT_LANES), added in lane order at the end,
 * then the tail: a fixed order, so the result is the same on every backend and every run, and the loop is
 * bound by memory instead of by the latency of one chain of additions (one chain ran at 9.5 GB/s on the 2-vCPU
 * VM, 0.19 of a copy; rmaop-kernel-bench). Below DOT_LANES elements the order is the plain sequential one. */
#define DOT_LANES RMAOP__DOT_LANES
void rmaop__host_dot_lanes(rmaop_dtype dt, const void *av, const void *bv, int64_t n, double re[DOT_LANES],
                           double im[DOT_LANES]) {
  const int64_t body = n - n % DOT_LANES;
  int64_t i = 0;
  switch (dt) {
  case RMAOP_F32: {
    const float *a = av, *b = bv;
    for (; i < body; i += DOT_LANES)
      for (int l = 0; l < DOT_LANES; ++l) re[l] += (double)a[i + l] * (double)b[i + l];
    for (; i < n; ++i) re[i % DOT_LANES] += (double)a[i] * (double)b[i];
  } break;
  case RMAOP_F64: {
    const double *a = av, *b = bv;
    for (; i < body; i += DOT_LANES)
      for (int l = 0; l < DOT_LANES; ++l) re[l] += a[i + l] * b[i + l];
    for (; i < n; ++i) re[i % DOT_LANES] += a[i] * b[i];
  } break;
  case RMAOP_C64:
  case RMAOP_C128:
    RMAOP__FOR_DTYPE(dt, {
      const T *a = av, *b = bv;
      for (; i < n; ++i) {
        const double ar = creal(a[i]), ai = cimag(a[i]), br = creal(b[i]), bi = cimag(b[i]);
        re[i % DOT_LANES] += ar * br + ai * bi; /* conj(a) * b */
        im[i % DOT_LANES] += ar * bi - ai * br;
      }
    });
    break;
  }
}

void rmaop__host_dot_sum(const double re[DOT_LANES], const double im[DOT_LANES], double out[2]) {
  out[0] = out[1] = 0.0;
  for (int l = 0; l < DOT_LANES; ++l) {
    out[0] += re[l];
    out[1] += im[l];
  }
}

static void host_dot(rmaop_dtype dt, const void *av, const void *bv, int64_t n, double out[2]) {
  double re[DOT_LANES] = {0}, im[DOT_LANES] = {0};
  rmaop__host_dot_lanes(dt, av, bv, n, re, im);
  rmaop__host_dot_sum(re, im, out);
}

/* lanes[l] += |a_j|^2 for j = l mod RMAOP__SUM_LANES (complex: both parts), in local lanes (registers). */
static void lanes_abs2(rmaop_dtype dtype, const void *av, int64_t n, double out[RMAOP__SUM_LANES]) {
  double lane[RMAOP__SUM_LANES] = {0};
  int64_t j = 0;
  RMAOP__FOR_DTYPE(dtype, {
    const R *a = av; /* complex: re, im interleaved */
    const int m = sizeof(T) / sizeof(R);
    for (; j + RMAOP__SUM_LANES <= n; j += RMAOP__SUM_LANES)
      for (int l = 0; l < RMAOP__SUM_LANES; ++l) {
        double e = (double)a[m * (j + l)] * (double)a[m * (j + l)];
        if (m == 2) e += (double)a[m * (j + l) + 1] * (double)a[m * (j + l) + 1];
        lane[l] += e;
      }
    for (; j < n; ++j) {
      double e = (double)a[m * j] * (double)a[m * j];
      if (m == 2) e += (double)a[m * j + 1] * (double)a[m * j + 1];
      lane[j % RMAOP__SUM_LANES] += e;
    }
  });
  for (int l = 0; l < RMAOP__SUM_LANES; ++l) out[l] += lane[l];
}

/* re[l], im[l] += conj(a_j) b_j for j = l mod RMAOP__SUM_LANES. */
static void lanes_cdot(rmaop_dtype dtype, const void *av, const void *bv, int64_t n, double re_out[RMAOP__SUM_LANES],
                       double im_out[RMAOP__SUM_LANES]) {
  double re[RMAOP__SUM_LANES] = {0}, im[RMAOP__SUM_LANES] = {0};
  int64_t j = 0;
  RMAOP__FOR_DTYPE(dtype, {
    const R *a = av, *b = bv;
    if (sizeof(T) == sizeof(R)) {
      for (; j + RMAOP__SUM_LANES <= n; j += RMAOP__SUM_LANES)
        for (int l = 0; l < RMAOP__SUM_LANES; ++l) re[l] += (double)a[j + l] * (double)b[j + l];
      for (; j < n; ++j) re[j % RMAOP__SUM_LANES] += (double)a[j] * (double)b[j];
    } else {
      for (; j < n; ++j) {
        const double ar = a[2 * j], ai = a[2 * j + 1], br = b[2 * j], bi = b[2 * j + 1];
        re[j % RMAOP__SUM_LANES] += ar * br + ai * bi;
        im[j % RMAOP__SUM_LANES] += ar * bi - ai * br;
      }
    }
  });
  for (int l = 0; l < RMAOP__SUM_LANES; ++l) re_out[l] += re[l], im_out[l] += im[l];
}

void rmaop__host_sums(rmaop_dtype dtype, const void *a, const void *b, int64_t n, unsigned what,
                      double lanes[4][RMAOP__SUM_LANES]) {
  if (what & 1u) lanes_abs2(dtype, b, n, lanes[0]);
  if (what & 2u) lanes_abs2(dtype, a, n, lanes[1]);
  if (what & 4u) lanes_cdot(dtype, a, b, n, lanes[2], lanes[3]);
}

/* The local dot of elements [off, off + n) of x and y, on the host or the device (synchronizes). */
static rmaop_status range_dot(rmaop_vec x, rmaop_vec y, int64_t off, int64_t n, double out[2]) {
  const int64_t es = (int64_t)rmaop_dtype_size(x->dtype);
  const void *a = (const char *)x->data + off * es, *b = (const char *)y->data + off * es;
  if (ON_DEVICE(x)) return rmaop__dev_dots(x->ctx, x->dtype, 1, &a, &b, n, out);
  host_dot(x->dtype, a, b, n, out);
  return RMAOP_OK;
}

/* A stacked layout with a BROADCAST part and a SCATTER part: on ranks other than 0 its dot must skip the
 * BROADCAST parts (rank 0 counts them), so it is summed part run by part run. */
static int stacked_mixed(rmaop_layout l) {
  return l->kind == RMAOP_LAYOUT_STACKED && !rmaop__layout_replicated(l);
}

/* This rank's share of a stacked dot without the BROADCAST parts: the runs of consecutive SCATTER parts,
 * in order (deterministic). */
static rmaop_status scatter_parts_dot(rmaop_vec x, rmaop_vec y, double out[2]) {
  const rmaop_layout l = x->layout;
  out[0] = out[1] = 0.0;
  for (int i = 0; i < l->nparts;) {
    if (l->parts[i]->kind != RMAOP_LAYOUT_SCATTER) {
      ++i;
      continue;
    }
    const int64_t off = l->part_off[i];
    while (i < l->nparts && l->parts[i]->kind == RMAOP_LAYOUT_SCATTER) ++i;
    const int64_t end = i < l->nparts ? l->part_off[i] : x->local_n;
    double run[2];
    RMAOP_CHECK(range_dot(x, y, off, end - off, run));
    out[0] += run[0];
    out[1] += run[1];
  }
  return RMAOP_OK;
}

/* The local parts of n dots into partials[2k], [2k+1]. `skip_replicated`: this rank leaves out what every
 * rank holds whole (BROADCAST vectors and stacked BROADCAST parts: not even computed), which rank 0 counts once. On the
 * device the pairs that share a dtype and a length go through one kernel (one host round trip for a
 * solver's fused dots); a mixed stacked pair on a rank that skips takes one round trip per run of parts. */
static rmaop_status local_dots(int n, const rmaop_vec x[], const rmaop_vec y[], double *partials, int skip_replicated) {
  int k = 0;
  while (k < n) {
    if (skip_replicated && rmaop__layout_replicated(x[k]->layout)) { /* rank 0 counts it: no pass here */
      partials[2 * k] = partials[2 * k + 1] = 0.0;
      ++k;
      continue;
    }
    if (skip_replicated && stacked_mixed(x[k]->layout)) {
      RMAOP_CHECK(scatter_parts_dot(x[k], y[k], partials + 2 * k));
      ++k;
      continue;
    }
    if (!ON_DEVICE(x[k])) {
      host_dot(x[k]->dtype, x[k]->data, y[k]->data, x[k]->local_n, partials + 2 * k);
      ++k;
      continue;
    }
    const void *xs[8], *ys[8];
    int m = 0;
    while (k + m < n && m < 8 && x[k + m]->dtype == x[k]->dtype && x[k + m]->local_n == x[k]->local_n &&
           !(skip_replicated && (stacked_mixed(x[k + m]->layout) || rmaop__layout_replicated(x[k + m]->layout)))) {
      xs[m] = x[k + m]->data;
      ys[m] = y[k + m]->data;
      ++m;
    }
    RMAOP_CHECK(rmaop__dev_dots(x[k]->ctx, x[k]->dtype, m, xs, ys, x[k]->local_n, partials + 2 * k));
    k += m;
  }
  return RMAOP_OK;
}

rmaop_status rmaop__vec_local_dots(int n, const rmaop_vec x[], const rmaop_vec y[], double *partials) {
  return local_dots(n, x, y, partials, n > 0 && x[0]->ctx->rank != 0);
}

static rmaop_status finish_dots(rmaop_request r) {
  double _Complex *res = r->result;
  for (int k = 0; k < r->nresult; ++k) res[k] = CMPLX(r->buf[2 * k], r->buf[2 * k + 1]);
  return RMAOP_OK;
}

static rmaop_status finish_norm(rmaop_request r) {
  *(double *)r->result = sqrt(r->buf[0]);
  return RMAOP_OK;
}

static rmaop_ctx first_ctx(int n, const rmaop_vec x[], const rmaop_vec y[]) {
  for (int k = 0; x && y && k < n; ++k) {
    if (x[k]) return x[k]->ctx;
    if (y[k]) return y[k]->ctx;
  }
  return NULL;
}

/* Validates the vector pairs of mdot and its result array (fn names the caller in messages). */
static rmaop_status mdot_check(const char *fn, int n, const rmaop_vec x[], const rmaop_vec y[], const void *r) {
  rmaop_ctx ctx = first_ctx(n, x, y);
  RMAOP_REQUIRE(ctx, x != NULL && y != NULL, RMAOP_ERR_ARG, "%s: the array of %s vectors is NULL", fn, x ? "y" : "x");
  RMAOP_REQUIRE(ctx, r != NULL, RMAOP_ERR_ARG, "%s: result array r is NULL", fn);
  for (int k = 0; k < n; ++k) {
    if (!pair_ok(x[k], y[k]) || x[k]->ctx != ctx) { /* the slow path names the culprit */
      char xn[24], yn[24];
      snprintf(xn, sizeof xn, "x[%d]", k);
      snprintf(yn, sizeof yn, "y[%d]", k);
      RMAOP_CHECK(check_pair(fn, xn, x[k], yn, y[k]));
      return RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: %s belongs to another context than x[0]", fn, xn);
    }
  }
  return RMAOP_OK;
}

/* Validates mdot's arguments; fills the partials when they are fine. */
static rmaop_status mdot_local(int n, const rmaop_vec x[], const rmaop_vec y[], double _Complex r[], double *partials,
                               int *local_only) {
  rmaop_ctx ctx = first_ctx(n, x, y);
  RMAOP_CHECK(mdot_check("rmaop_vec_mdot", n, x, y, r));
  /* Pairs may mix layout kinds. Every rank holds a BROADCAST vector (or stacked part) whole: only rank 0
   * contributes its dot to the sum, so one reduction serves every kind at once (PyLops-MPI counts a
   * broadcast array once). All replicated: no communication. */
  int all_replicated = 1;
  for (int k = 0; k < n; ++k)
    if (!rmaop__layout_replicated(x[k]->layout)) all_replicated = 0;
  RMAOP_CHECK(local_dots(n, x, y, partials, !all_replicated && ctx->rank != 0));
  *local_only = all_replicated;
  return RMAOP_OK;
}

rmaop_status rmaop_vec_mdot_begin(int n, const rmaop_vec x[], const rmaop_vec y[], double _Complex r[],
                                  rmaop_request *req) {
  rmaop_ctx ctx = first_ctx(n, x, y);
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_vec_mdot: no vector given (n = %d, or all NULL)", n);
  RMAOP_REQUIRE(ctx, req != NULL, RMAOP_ERR_ARG, "rmaop_vec_mdot: req (output) is NULL");
  double stackbuf[16], *partials = stackbuf;
  if (2 * (int64_t)n > 16) RMAOP_CHECK(rmaop__malloc(ctx, 2 * (size_t)n * sizeof(double), "mdot partials", (void **)&partials));
  int local_only = 0;
  rmaop_status local = mdot_local(n, x, y, r, partials, &local_only);
  rmaop_status st = rmaop__reduce_flagged_begin(ctx, local, partials, 2 * (int64_t)n, RMAOP_SUM,
                                                n == 1 ? "dot" : "mdot", local_only, finish_dots, r, n, req);
  if (partials != stackbuf) free(partials);
  return st;
}

rmaop_status rmaop__vec_mdot_parts_begin(rmaop_ctx ctx, int n, const double *partials, double _Complex r[],
                                         rmaop_request *req) {
  return rmaop__reduce_flagged_begin(ctx, RMAOP_OK, partials, 2 * (int64_t)n, RMAOP_SUM, n == 1 ? "dot" : "mdot", 0,
                                     finish_dots, r, n, req);
}

rmaop_status rmaop__vec_mdot_parts(rmaop_ctx ctx, int n, const double *partials, double _Complex r[]) {
  rmaop_request req = NULL;
  ctx->defer_next = 1; /* waited at once: the backend may reduce blocking (as rmaop_vec_mdot) */
  rmaop_status st = rmaop__vec_mdot_parts_begin(ctx, n, partials, r, &req);
  ctx->defer_next = 0;
  RMAOP_CHECK(st);
  return rmaop_request_wait(&req);
}

rmaop_status rmaop__vec_norm2_part(rmaop_ctx ctx, double partial, double *r) {
  rmaop_request req = NULL;
  ctx->defer_next = 1; /* as rmaop_vec_norm2 */
  rmaop_status st =
      rmaop__reduce_flagged_begin(ctx, RMAOP_OK, &partial, 1, RMAOP_SUM, "norm2", 0, finish_norm, r, 1, &req);
  ctx->defer_next = 0;
  RMAOP_CHECK(st);
  return rmaop_request_wait(&req);
}

rmaop_status rmaop_vec_mdot(int n, const rmaop_vec x[], const rmaop_vec y[], double _Complex r[]) {
  rmaop_request req = NULL;
  rmaop_ctx ctx = first_ctx(n, x, y);
  if (ctx) ctx->defer_next = 1; /* waited at once: the backend may reduce blocking */
  rmaop_status st = rmaop_vec_mdot_begin(n, x, y, r, &req);
  if (ctx) ctx->defer_next = 0;
  RMAOP_CHECK(st);
  return rmaop_request_wait(&req);
}

/* The dots of one kernel (pairs that share a dtype and a length) and, for rmaop__dev_dots_reduce, where the
 * reduced values go. */
typedef struct {
  rmaop_dtype dt;
  int m;
  int64_t len;
  const void *xs[8], *ys[8];
  double *r;
} dots_group;

static int group_of(int n, const rmaop_vec x[], const rmaop_vec y[], int k, dots_group *g) {
  g->dt = x[k]->dtype, g->len = x[k]->local_n, g->m = 0;
  while (k + g->m < n && g->m < 8 && x[k + g->m]->dtype == g->dt && x[k + g->m]->local_n == g->len) {
    g->xs[g->m] = x[k + g->m]->data;
    g->ys[g->m] = y[k + g->m]->data;
    ++g->m;
  }
  return g->m;
}

static rmaop_status dots_reduce_launch(rmaop_ctx ctx, rmaop__dred_args *a, void *user) {
  const dots_group *g = user;
  a->in = NULL, a->out = g->r;
  return rmaop__dev_dots_reduce(ctx, g->dt, g->m, g->xs, g->ys, g->len, a);
}

rmaop_status rmaop__vec_mdot_device(int n, const rmaop_vec x[], const rmaop_vec y[], double *r) {
  rmaop_ctx ctx = x[0]->ctx;
  RMAOP_REQUIRE_USABLE(ctx, "device reduction");
  dots_group g;
  g.r = r;
  if (group_of(n, x, y, 0, &g) == n) { /* one kernel for the dots and their sum, where the backend has it */
    int done = 0;
    RMAOP_CHECK(rmaop__reduce_device_fused(ctx, 2 * (int64_t)n, RMAOP_SUM, dots_reduce_launch, &g, &done));
    if (done)
      return RMAOP_OK;
  }
  double *fin = rmaop__dev_dots_result(ctx);
  for (int k = 0; k < n; k += g.m) {
    group_of(n, x, y, k, &g);
    RMAOP_CHECK(rmaop__dev_dots_enqueue(ctx, g.dt, g.m, g.xs, g.ys, g.len, fin + 2 * k));
  }
  return rmaop__allreduce_device(ctx, fin, r, 2 * (int64_t)n, RMAOP_SUM);
}

int rmaop__vec_device_dots_ok(rmaop_vec v) {
  return ON_DEVICE(v) && !rmaop__layout_replicated(v->layout) && !stacked_mixed(v->layout);
}

rmaop_status rmaop_vec_mdot_enqueue(int n, const rmaop_vec x[], const rmaop_vec y[], double *r) {
  rmaop_ctx ctx = first_ctx(n, x, y);
  RMAOP_REQUIRE(NULL, ctx != NULL, RMAOP_ERR_ARG, "rmaop_vec_mdot_enqueue: no vector given (n = %d, or all NULL)", n);
  if (!ON_DEVICE(ctx)) { /* host memory: the blocking dots, results in r as (re, im) pairs */
    double _Complex buf[8], *c = buf;
    if (n > 8) RMAOP_CHECK(rmaop__malloc(ctx, (size_t)n * sizeof *c, "mdot results", (void **)&c)); /* as mdot's partials */
    rmaop_status st = rmaop_vec_mdot(n, x, y, r ? c : NULL);
    for (int k = 0; st == RMAOP_OK && k < n; ++k) r[2 * k] = creal(c[k]), r[2 * k + 1] = cimag(c[k]);
    if (c != buf) free(c);
    return st;
  }
  rmaop_status local = mdot_check("rmaop_vec_mdot_enqueue", n, x, y, r);
  if (local == RMAOP_OK && (n < 1 || n > 8))
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_vec_mdot_enqueue: n = %d dots on a device context (1..8)", n);
  for (int k = 0; local == RMAOP_OK && k < n; ++k)
    if (rmaop__layout_replicated(x[k]->layout) || stacked_mixed(x[k]->layout))
      local = RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED,
                          "rmaop_vec_mdot_enqueue: x[%d] is %s; the device-resident dots take distributed vectors only "
                          "(rmaop_vec_mdot reduces every layout)",
                          k, rmaop__layout_replicated(x[k]->layout) ? "replicated (BROADCAST)" : "a stacked vector with "
                                                                                               "BROADCAST parts");
  if (local == RMAOP_OK && !rmaop__dev_is_device_ptr(r))
    local = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "rmaop_vec_mdot_enqueue: r is not device memory (a device context leaves "
                                            "the 2n doubles in device memory)");
  /* One host collective on the arguments (a bad rank must not leave the others in the gather). */
  RMAOP_CHECK(rmaop__agree_unconfirmed(ctx, local, "rmaop_vec_mdot_enqueue"));
  return rmaop__vec_mdot_device(n, x, y, r);
}

rmaop_status rmaop_vec_dot(rmaop_vec x, rmaop_vec y, double _Complex *r) {
  return rmaop_vec_mdot(1, &x, &y, r);
}

rmaop_status rmaop_vec_norm2(rmaop_vec x, double *r) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_norm2", "x", x));
  rmaop_status local = RMAOP_OK;
  double part[2] = {0.0, 0.0};
  const int replicated = rmaop__layout_replicated(x->layout);
  if (r == NULL) local = RMAOP_ERROR(x->ctx, RMAOP_ERR_ARG, "rmaop_vec_norm2: result r is NULL");
  else local = local_dots(1, &x, &x, part, !replicated && x->ctx->rank != 0);
  rmaop_request req = NULL;
  x->ctx->defer_next = 1; /* waited at once: the backend may reduce blocking */
  rmaop_status st = rmaop__reduce_flagged_begin(x->ctx, local, part, 1, RMAOP_SUM, "norm2", replicated, finish_norm,
                                                r, 1, &req);
  x->ctx->defer_next = 0;
  RMAOP_CHECK(st);
  return rmaop_request_wait(&req);
}

/* ---- gather / scatter (I/O and tests; plain MPI collectives, host buffers) ---- */

static MPI_Datatype mpi_type(rmaop_dtype dt) {
  switch (dt) {
  case RMAOP_F32: return MPI_FLOAT;
  case RMAOP_F64: return MPI_DOUBLE;
  case RMAOP_C64: return MPI_C_FLOAT_COMPLEX;
  case RMAOP_C128: return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

static rmaop_status io_check(rmaop_vec v, const char *fn, int root, const void *global, int **counts, int **displs) {
  rmaop_ctx ctx = v->ctx;
  RMAOP_REQUIRE(ctx, root >= 0 && root < ctx->size, RMAOP_ERR_ARG, "%s: root %d is outside [0, %d)", fn, root,
                ctx->size);
  RMAOP_REQUIRE(ctx, ctx->rank != root || global != NULL || v->layout->global_n == 0, RMAOP_ERR_ARG,
                "%s: the global buffer is NULL on the root", fn);
  RMAOP_REQUIRE(ctx, v->layout->global_n <= INT_MAX, RMAOP_ERR_UNSUPPORTED,
                "%s: %lld elements exceed an MPI count (INT_MAX); gather in pieces", fn, (long long)v->layout->global_n);
  RMAOP_CHECK(rmaop__calloc(ctx, 2 * (size_t)ctx->size, sizeof(int), "gather counts", (void **)counts));
  *displs = *counts + ctx->size;
  for (int p = 0; p < ctx->size; ++p) {
    (*counts)[p] = (int)v->layout->sizes[p];
    (*displs)[p] = (int)v->layout->offsets[p];
  }
  return RMAOP_OK;
}

/* The host buffer MPI reads or writes for v's local part: v->data itself, or a temporary copy of device
 * memory (I/O and tests: no need for speed). */
static rmaop_status io_host(rmaop_vec v, int fill, void **host) {
  *host = v->data;
  if (!ON_DEVICE(v)) return RMAOP_OK;
  RMAOP_CHECK(rmaop__malloc(v->ctx, (size_t)v->local_n * rmaop_dtype_size(v->dtype) + 1, "I/O staging", host));
  if (fill) {
    rmaop_status st = rmaop_vec_read_local(v, *host);
    if (st != RMAOP_OK) {
      free(*host);
      *host = NULL;
    }
    return st;
  }
  return RMAOP_OK;
}

/* Gather / scatter of a stacked vector: part by part, each into its slice of the global buffer (PyLops-MPI
 * StackedDistributedArray.asarray concatenates the parts' global arrays). The arguments are agreed on
 * first, so a bad root or buffer fails every rank before any part moves. */
static rmaop_status stacked_io(rmaop_vec v, int root, const void *global, int gather) {
  const char *fn = gather ? "rmaop_vec_gather" : "rmaop_vec_scatter";
  rmaop_ctx ctx = v->ctx;
  rmaop_status st = RMAOP_OK;
  if (root < 0 || root >= ctx->size)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: root %d is outside [0, %d)", fn, root, ctx->size);
  else if (ctx->rank == root && global == NULL && v->layout->global_n > 0)
    st = RMAOP_ERROR(ctx, RMAOP_ERR_ARG, "%s: the global buffer is NULL on the root", fn);
  for (int i = 0; i < v->layout->nparts && st == RMAOP_OK; ++i) /* each part's own limit, before any part moves */
    if (v->layout->parts[i]->global_n > INT_MAX)
      st = RMAOP_ERROR(ctx, RMAOP_ERR_UNSUPPORTED, "%s: part %d's %lld elements exceed an MPI count (INT_MAX)", fn, i,
                       (long long)v->layout->parts[i]->global_n);
  RMAOP_CHECK(rmaop__agree(ctx, st, fn));
  const size_t es = rmaop_dtype_size(v->dtype);
  int64_t goff = 0;
  for (int i = 0; i < v->layout->nparts; ++i) {
    struct rmaop_vec_s part;
    rmaop__vec_part_view(v, i, &part);
    char *slice = ctx->rank == root ? (char *)global + (size_t)goff * es : NULL;
    RMAOP_CHECK(gather ? rmaop_vec_gather(&part, root, slice) : rmaop_vec_scatter(&part, root, slice));
    goff += part.layout->global_n;
  }
  return RMAOP_OK;
}

rmaop_status rmaop_vec_gather(rmaop_vec v, int root, void *global) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_gather", "vec", v));
  if (v->layout->kind == RMAOP_LAYOUT_STACKED) return stacked_io(v, root, global, 1);
  rmaop_ctx ctx = v->ctx;
  int *counts = NULL, *displs = NULL;
  void *local = NULL;
  rmaop_status st = io_check(v, "rmaop_vec_gather", root, global, &counts, &displs);
  if (st == RMAOP_OK) st = io_host(v, 1, &local);
  st = rmaop__agree(ctx, st, "rmaop_vec_gather");
  if (st != RMAOP_OK) goto out;
  if (v->layout->kind == RMAOP_LAYOUT_BROADCAST) {
    if (ctx->rank == root && v->local_n > 0) memcpy(global, local, (size_t)v->local_n * rmaop_dtype_size(v->dtype));
  } else {
    RMAOP_CHECK_MPI_GOTO(ctx, MPI_Gatherv(local, (int)v->local_n, mpi_type(v->dtype), global, counts, displs,
                                          mpi_type(v->dtype), root, ctx->comm), st, out);
  }
out:
  if (local != v->data) free(local);
  free(counts);
  return st;
}

rmaop_status rmaop_vec_scatter(rmaop_vec v, int root, const void *global) {
  RMAOP_CHECK(check_vec(NULL, "rmaop_vec_scatter", "vec", v));
  if (v->layout->kind == RMAOP_LAYOUT_STACKED) return stacked_io(v, root, global, 0);
  rmaop_ctx ctx = v->ctx;
  int *counts = NULL, *displs = NULL;
  void *local = NULL;
  rmaop_status st = io_check(v, "rmaop_vec_scatter", root, global, &counts, &displs);
  if (st == RMAOP_OK) st = io_host(v, 0, &local);
  st = rmaop__agree(ctx, st, "rmaop_vec_scatter");
  if (st != RMAOP_OK) goto out;
  if (v->layout->kind == RMAOP_LAYOUT_BROADCAST) {
    if (ctx->rank == root && v->local_n > 0) memcpy(local, global, (size_t)v->local_n * rmaop_dtype_size(v->dtype));
    RMAOP_CHECK_MPI_GOTO(ctx, MPI_Bcast(local, (int)v->local_n, mpi_type(v->dtype), root, ctx->comm), st, out);
  } else {
    RMAOP_CHECK_MPI_GOTO(ctx, MPI_Scatterv(global, counts, displs, mpi_type(v->dtype), local, (int)v->local_n,
                                           mpi_type(v->dtype), root, ctx->comm), st, out);
  }
  if (local != v->data) st = rmaop_vec_write_local(v, local);
out:
  if (local != v->data) free(local);
  free(counts);
  return st;
}
