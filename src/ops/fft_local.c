/* Local FFTs (src/ops/fft_local.h): the description's checks and geometry for both memories, FFTW's guru64
 * interface on host memory (plans with FFTW_ESTIMATE | FFTW_UNALIGNED, executed with the new-array functions on
 * any arrays of the planned shape), and the device layer (src/device/fft_dev.h: cuFFT) on device memory.
 *
 * One plan covers every line of the (outer, n, inner) array: FFTW's two "howmany" dimensions are outer and
 * inner, so no transposition is needed whichever axis is transformed. Truncation is a shorter read of each
 * line; a roll, padding, weights, the real part or a scale go through a copy into (pre) or out of (post) the
 * plan's scratch, in the context's memory, fused into that one pass. */
#include "ops/fft_local.h"

#include "core/ctx.h"
#include "core/error.h"
#include "core/vec.h"
#include "device/fft_dev.h"

#include <string.h>

#ifdef RMAOP_HAVE_FFTW
#include <fftw3.h>
#include <pthread.h>
#endif

#define NO_FFTW "FFTs on host memory: rmaop was built without FFTW (configure it with FFTW3 installed: libfftw3-dev)"

struct rmaop__fft_local {
  rmaop_ctx ctx;
  rmaop__fft_geom g;
  int dev;
  void *plan;        /* fftw(f)_plan, or the device layer's; NULL for an empty array */
  void *sin, *sout;  /* scratch (context memory) when g.pre / g.post */
};

int64_t rmaop__fft_n_written(const rmaop__fft_desc *d) { return d->kind == RMAOP__FFT_R2C ? d->nfft / 2 + 1 : d->nfft; }
int64_t rmaop__fft_n_out(const rmaop__fft_desc *d) { return d->n_out > 0 ? d->n_out : rmaop__fft_n_written(d); }

int rmaop__fft_available(rmaop_ctx ctx) {
  if (RMAOP__ON_DEVICE(ctx)) return 1; /* a device context exists only in a CUDA build, which links cuFFT */
#ifdef RMAOP_HAVE_FFTW
  return 1;
#else
  return 0;
#endif
}

static size_t real_size(const rmaop__fft_desc *d) { return d->dtype == RMAOP_C64 ? sizeof(float) : sizeof(double); }
/* Bytes of one element of the transform's input and output types. */
static size_t in_elem(const rmaop__fft_desc *d) { return real_size(d) * (d->kind == RMAOP__FFT_R2C ? 1 : 2); }
static size_t out_elem(const rmaop__fft_desc *d) { return real_size(d) * (d->kind == RMAOP__FFT_C2R ? 1 : 2); }

static int64_t mod_pos(int64_t s, int64_t n) {
  if (n <= 0) return 0;
  s %= n;
  return s < 0 ? s + n : s;
}

static rmaop_status check_desc(rmaop_ctx ctx, const rmaop__fft_desc *d) {
  const char *fn = "rmaop__fft_local_create";
  RMAOP_REQUIRE(ctx, d != NULL, RMAOP_ERR_ARG, "%s: description is NULL", fn);
  RMAOP_REQUIRE(ctx, d->kind == RMAOP__FFT_C2C || d->kind == RMAOP__FFT_R2C || d->kind == RMAOP__FFT_C2R,
                RMAOP_ERR_ARG, "%s: kind %d is not C2C, R2C or C2R", fn, (int)d->kind);
  RMAOP_REQUIRE(ctx, d->dtype == RMAOP_C64 || d->dtype == RMAOP_C128, RMAOP_ERR_ARG,
                "%s: dtype %d is not RMAOP_C64 or RMAOP_C128", fn, (int)d->dtype);
  RMAOP_REQUIRE(ctx, d->kind != RMAOP__FFT_C2C || d->sign == -1 || d->sign == 1, RMAOP_ERR_ARG,
                "%s: sign %d of a C2C transform is not -1 or +1", fn, d->sign);
  RMAOP_REQUIRE(ctx, d->outer >= 0 && d->n_in >= 0 && d->inner >= 0 && d->n_out >= 0, RMAOP_ERR_ARG,
                "%s: shape (%lld, %lld, %lld) or n_out = %lld is negative", fn, (long long)d->outer,
                (long long)d->n_in, (long long)d->inner, (long long)d->n_out);
  RMAOP_REQUIRE(ctx, d->nfft >= 1, RMAOP_ERR_ARG, "%s: nfft = %lld is smaller than 1", fn, (long long)d->nfft);
  const int64_t rows = d->n_in > d->nfft ? d->n_in : d->nfft, out = rmaop__fft_n_out(d);
  const int64_t most = (rows > out ? rows : out) + 1;
  RMAOP_REQUIRE(ctx, rmaop__fits(d->outer, d->inner) && rmaop__fits(d->outer * d->inner, most), RMAOP_ERR_ARG,
                "%s: (%lld, %lld, %lld) transformed to %lld and %lld entries overflows 64-bit byte counts", fn,
                (long long)d->outer, (long long)d->n_in, (long long)d->inner, (long long)d->nfft, (long long)out);
  return RMAOP_OK;
}

static rmaop__fft_geom make_geom(const rmaop__fft_desc *d, int dev) {
  rmaop__fft_geom g = {.d = *d};
  g.d.n_out = rmaop__fft_n_out(d);
  g.d.in_shift = mod_pos(d->in_shift, d->n_in);
  g.d.out_shift = mod_pos(d->out_shift, g.d.n_out);
  if (g.d.scale == 0.0) g.d.scale = 1.0;
  if (g.d.half_weight == 0.0) g.d.half_weight = 1.0;
  if (g.d.kind == RMAOP__FFT_R2C) g.d.sign = -1;
  if (g.d.kind == RMAOP__FFT_C2R) g.d.sign = 1;
  const rmaop__fft_kind k = g.d.kind;
  if (k != RMAOP__FFT_C2C) g.d.re_in = g.d.re_out = 0;
  if (k == RMAOP__FFT_C2C) g.d.cplx_real = 0;
  g.n_read = k == RMAOP__FFT_C2R ? d->nfft / 2 + 1 : d->nfft;
  g.n_written = rmaop__fft_n_written(d);
  /* C2R always reads a copy: the plan may overwrite its input, and the copy drops the imaginary parts that
   * do not count (FFTW and cuFFT need not ignore them). */
  g.pre = k == RMAOP__FFT_C2R || g.d.in_shift != 0 || d->n_in < g.n_read || (k == RMAOP__FFT_C2C && g.d.re_in);
  g.post = g.d.n_out != g.n_written || g.d.out_shift != 0 || g.d.scale != 1.0 ||
           (k == RMAOP__FFT_R2C && g.d.half_weight != 1.0) || (k == RMAOP__FFT_C2C && g.d.re_out) ||
           (k == RMAOP__FFT_C2R && g.d.cplx_real);
  if (dev && k != RMAOP__FFT_C2C) g.pre = g.post = g.lines = 1; /* cuFFT's real transforms: contiguous lines */
  g.in_rows = g.pre ? g.n_read : d->n_in;
  g.in_unit = k == RMAOP__FFT_R2C && g.d.cplx_real && !g.pre ? 2 : 1;
  return g;
}

/* ---- host copies around the plan: complex arrays as (re, im) pairs of R ---- */

#define FOR_PRECISION(dt, ...)                                                        \
  do {                                                                                \
    if ((dt) == RMAOP_C64) { typedef float R; __VA_ARGS__; }                          \
    else { typedef double R; __VA_ARGS__; }                                           \
  } while (0)

static void host_pre(const rmaop__fft_geom *g, const void *in, void *dst) {
  const rmaop__fft_desc *d = &g->d;
  const int64_t inner = d->inner, nr = g->n_read;
  const int cin = d->kind != RMAOP__FFT_R2C || d->cplx_real; /* the caller's input is complex */
  const int cdst = d->kind != RMAOP__FFT_R2C;               /* the scratch is complex */
  FOR_PRECISION(d->dtype, {
    const R *x = in;
    R *y = dst;
    for (int64_t o = 0; o < d->outer; ++o)
      for (int64_t j = 0; j < nr; ++j) {
        /* entry i of the row goes to row[i * step] (step: 1, or n_read entries apart in `lines` scratch) */
        const int64_t step = g->lines ? nr : 1;
        R *row = y + rmaop__fft_scratch_at(g, o, j, 0, nr) * (cdst ? 2 : 1);
        const int64_t s = rmaop__fft_pre_src(g, j);
        const R *src = s < 0 ? NULL : x + (o * d->n_in + s) * inner * (cin ? 2 : 1); /* NULL: a padding zero */
        if (d->kind == RMAOP__FFT_R2C) {
          for (int64_t i = 0; i < inner; ++i) row[i * step] = s < 0 ? 0 : cin ? src[2 * i] : src[i];
        } else if (d->kind == RMAOP__FFT_C2C) {
          for (int64_t i = 0; i < inner; ++i) {
            row[2 * i * step] = s < 0 ? 0 : src[2 * i];
            row[2 * i * step + 1] = s < 0 || d->re_in ? 0 : src[2 * i + 1];
          }
        } else {
          const R w = (R)rmaop__fft_bin_weight(g, j);
          const int re = rmaop__fft_bin_real(g, j);
          for (int64_t i = 0; i < inner; ++i) {
            row[2 * i * step] = s < 0 ? 0 : w * src[2 * i];
            row[2 * i * step + 1] = s < 0 || re ? 0 : w * src[2 * i + 1];
          }
        }
      }
  });
}

static void host_post(const rmaop__fft_geom *g, const void *src_, void *out) {
  const rmaop__fft_desc *d = &g->d;
  const int64_t inner = d->inner, nw = g->n_written;
  const int csrc = d->kind != RMAOP__FFT_C2R;               /* the scratch is complex */
  const int cout = d->kind != RMAOP__FFT_C2R || d->cplx_real; /* the caller's output is complex */
  FOR_PRECISION(d->dtype, {
    const R *x = src_;
    R *y = out;
    for (int64_t o = 0; o < d->outer; ++o)
      for (int64_t k = 0; k < d->n_out; ++k) {
        R *row = y + (o * d->n_out + k) * inner * (cout ? 2 : 1);
        const int64_t s = rmaop__fft_post_src(g, k);
        if (s < 0) {
          memset(row, 0, (size_t)inner * (cout ? 2 : 1) * sizeof(R));
          continue;
        }
        const int64_t step = g->lines ? nw : 1;
        const R *src = x + rmaop__fft_scratch_at(g, o, s, 0, nw) * (csrc ? 2 : 1);
        const double w = d->kind == RMAOP__FFT_R2C ? rmaop__fft_bin_weight(g, s) : 1.0;
        const R a = (R)(w * d->scale);
        if (d->kind == RMAOP__FFT_C2R) {
          if (cout)
            for (int64_t i = 0; i < inner; ++i) row[2 * i] = a * src[i * step], row[2 * i + 1] = 0;
          else
            for (int64_t i = 0; i < inner; ++i) row[i] = a * src[i * step];
        } else {
          for (int64_t i = 0; i < inner; ++i)
            row[2 * i] = a * src[2 * i * step], row[2 * i + 1] = d->re_out ? 0 : a * src[2 * i * step + 1];
        }
      }
  });
}

/* ---- FFTW (host memory) ---- */

#ifdef RMAOP_HAVE_FFTW
/* FFTW's planner and plan destruction are not thread-safe (only execution is): one lock for the process. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

/* FFTW's planner is one per process and other libraries share it. FFTW 3.3.9+'s fftw_plan_with_nthreads, called
 * before fftw_init_threads, runs fftw_cleanup first, which invalidates every plan made so far; mpi4py-fft (under
 * PyLops-MPI's MPIFFT2D) does exactly that when it plans, and rmaop's plans made before it then read freed twiddle
 * tables and crashed when destroyed. So, where FFTW's thread library is there, rmaop initializes FFTW's threads
 * before its first plan, which makes that call harmless, and plans single-threaded whatever thread count another
 * library set (then restores it). Without it, a process that mixes rmaop's FFTs with such a library must make its
 * FFTW plans in the other library first (docs/ARCHITECTURE.md, "FFTs"). Under planner_lock. */
typedef struct {
  int nthr, nthrf;
} planner_state;

static void planner_enter(planner_state *s) {
  pthread_mutex_lock(&planner_lock);
#ifdef RMAOP_HAVE_FFTW_THREADS
  static int threads_ready = 0;
  if (!threads_ready)
    threads_ready = fftw_init_threads() && fftwf_init_threads();
  if (threads_ready) {
    s->nthr = fftw_planner_nthreads(), s->nthrf = fftwf_planner_nthreads();
    fftw_plan_with_nthreads(1);
    fftwf_plan_with_nthreads(1);
  }
#else
  (void)s;
#endif
}

static void planner_leave(const planner_state *s) {
#ifdef RMAOP_HAVE_FFTW_THREADS
  if (s->nthr > 0)
    fftw_plan_with_nthreads(s->nthr), fftwf_plan_with_nthreads(s->nthrf);
#else
  (void)s;
#endif
  pthread_mutex_unlock(&planner_lock);
}

/* plan_<X>: the guru64 plan of g for the precision prefix X (fftw, fftwf) on the arrays pin, pout. */
#define FFTW_PLANNER(X)                                                                                            \
  static void *plan_##X(const rmaop__fft_geom *g, void *pin, void *pout) {                                       \
    const rmaop__fft_desc *d = &g->d;                                                                            \
    const ptrdiff_t u = (ptrdiff_t)g->in_unit, inner = d->inner;                                                 \
    X##_iodim64 n = {.n = d->nfft, .is = inner * u, .os = inner};                                                \
    X##_iodim64 how[2] = {{.n = d->outer, .is = g->in_rows * inner * u, .os = g->n_written * inner},             \
                          {.n = inner, .is = u, .os = 1}};                                                       \
    if (g->lines) /* (outer, inner, n): lines n apart, entries adjacent (the scratch on both sides) */           \
      n.is = n.os = 1, how[1].is = g->in_rows, how[1].os = g->n_written;                                         \
    const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;                                                       \
    switch (d->kind) {                                                                                           \
    case RMAOP__FFT_C2C:                                                                                         \
      return X##_plan_guru64_dft(1, &n, 2, how, pin, pout, d->sign < 0 ? FFTW_FORWARD : FFTW_BACKWARD, flags);   \
    case RMAOP__FFT_R2C:                                                                                         \
      return X##_plan_guru64_dft_r2c(1, &n, 2, how, pin, pout, flags);                                           \
    case RMAOP__FFT_C2R:                                                                                         \
      return X##_plan_guru64_dft_c2r(1, &n, 2, how, pin, pout, flags | FFTW_DESTROY_INPUT);                      \
    }                                                                                                            \
    return NULL;                                                                                                 \
  }                                                                                                              \
  static void exec_##X(const rmaop__fft_geom *g, void *plan, void *in, void *out) {                              \
    switch (g->d.kind) {                                                                                         \
    case RMAOP__FFT_C2C: X##_execute_dft(plan, in, out); break;                                                  \
    case RMAOP__FFT_R2C: X##_execute_dft_r2c(plan, in, out); break;                                              \
    case RMAOP__FFT_C2R: X##_execute_dft_c2r(plan, in, out); break;                                              \
    }                                                                                                            \
  }
FFTW_PLANNER(fftw)
FFTW_PLANNER(fftwf)
#undef FFTW_PLANNER

/* Plans on the scratch where there is one, else on arrays of the caller's size made for planning alone
 * (FFTW_ESTIMATE reads neither, but a plan is made on arrays of its real shape and in-placeness). */
static rmaop_status host_plan(rmaop__fft_local *p) {
  const rmaop__fft_geom *g = &p->g;
  const rmaop__fft_desc *d = &g->d;
  void *tin = NULL, *tout = NULL;
  rmaop_status st = RMAOP_OK;
  if (!g->pre) st = rmaop__calloc(p->ctx, (size_t)(d->outer * d->n_in * d->inner) * (size_t)g->in_unit + 1,
                                  in_elem(d), "FFT planning input", &tin);
  if (st == RMAOP_OK && !g->post)
    st = rmaop__calloc(p->ctx, (size_t)(d->outer * g->n_written * d->inner) + 1, out_elem(d), "FFT planning output",
                       &tout);
  if (st == RMAOP_OK) {
    void *pin = g->pre ? p->sin : tin, *pout = g->post ? p->sout : tout;
    planner_state ps = {0, 0};
    planner_enter(&ps);
    p->plan = d->dtype == RMAOP_C64 ? plan_fftwf(g, pin, pout) : plan_fftw(g, pin, pout);
    planner_leave(&ps);
    if (!p->plan)
      st = RMAOP_ERROR(p->ctx, RMAOP_ERR_INTERNAL,
                       "FFTW made no plan for a %s transform of %lld points over (%lld, %lld, %lld) lines",
                       d->kind == RMAOP__FFT_C2C ? "C2C" : d->kind == RMAOP__FFT_R2C ? "R2C" : "C2R",
                       (long long)d->nfft, (long long)d->outer, (long long)d->n_in, (long long)d->inner);
  }
  free(tin);
  free(tout);
  return st;
}

static void host_plan_destroy(const rmaop__fft_geom *g, void *plan) {
  planner_state ps = {0, 0};
  planner_enter(&ps);
  if (g->d.dtype == RMAOP_C64) fftwf_destroy_plan(plan);
  else fftw_destroy_plan(plan);
  planner_leave(&ps);
}

static void host_run(const rmaop__fft_geom *g, void *plan, void *in, void *out) {
  if (g->d.dtype == RMAOP_C64) exec_fftwf(g, plan, in, out);
  else exec_fftw(g, plan, in, out);
}
#else
static rmaop_status host_plan(rmaop__fft_local *p) {
  return RMAOP_ERROR(p->ctx, RMAOP_ERR_UNSUPPORTED, NO_FFTW);
}
static void host_plan_destroy(const rmaop__fft_geom *g, void *plan) {}
static void host_run(const rmaop__fft_geom *g, void *plan, void *in, void *out) {}
#endif

/* ---- the interface ---- */

rmaop_status rmaop__fft_local_create(rmaop_ctx ctx, const rmaop__fft_desc *d, rmaop__fft_local **out) {
  RMAOP_REQUIRE(ctx, out != NULL, RMAOP_ERR_ARG, "rmaop__fft_local_create: plan (output) is NULL");
  RMAOP_CHECK(check_desc(ctx, d));
  const int dev = RMAOP__ON_DEVICE(ctx);
  RMAOP_REQUIRE(ctx, rmaop__fft_available(ctx), RMAOP_ERR_UNSUPPORTED, NO_FFTW);
  rmaop__fft_local *p = NULL;
  RMAOP_CHECK(rmaop__calloc(ctx, 1, sizeof *p, "FFT plan", (void **)&p));
  p->ctx = ctx;
  p->g = make_geom(d, dev);
  p->dev = dev;
  const rmaop__fft_geom *g = &p->g;
  const int64_t lines = d->outer * d->inner;
  rmaop_status st = RMAOP_OK;
  if (lines > 0) {
    if (g->pre) st = rmaop__mem_calloc(ctx, (size_t)(lines * g->n_read) + 1, in_elem(d), "FFT input scratch", &p->sin);
    if (st == RMAOP_OK && g->post)
      st = rmaop__mem_calloc(ctx, (size_t)(lines * g->n_written) + 1, out_elem(d), "FFT output scratch", &p->sout);
    if (st == RMAOP_OK) st = dev ? rmaop__dev_fft_plan(ctx, g, &p->plan) : host_plan(p);
  }
  if (st != RMAOP_OK) {
    rmaop__fft_local_destroy(p);
    return st;
  }
  *out = p;
  return RMAOP_OK;
}

rmaop_status rmaop__fft_local_exec(rmaop__fft_local *p, const void *in, void *out) {
  if (!p->plan) return RMAOP_OK; /* no lines: nothing in, nothing out */
  const rmaop__fft_geom *g = &p->g;
  void *src = g->pre ? p->sin : (void *)in; /* FFTW and cuFFT take non-const inputs; they do not write them */
  void *dst = g->post ? p->sout : out;
  if (p->dev) {
    if (g->pre) RMAOP_CHECK(rmaop__dev_fft_pre(p->ctx, g, in, p->sin));
    RMAOP_CHECK(rmaop__dev_fft_run(p->ctx, p->plan, src, dst));
    if (g->post) RMAOP_CHECK(rmaop__dev_fft_post(p->ctx, g, p->sout, out));
    return RMAOP_OK;
  }
  if (g->pre) host_pre(g, in, p->sin);
  host_run(g, p->plan, src, dst);
  if (g->post) host_post(g, p->sout, out);
  return RMAOP_OK;
}

void rmaop__fft_local_destroy(rmaop__fft_local *p) {
  if (!p) return;
  if (p->plan) {
    if (p->dev) rmaop__dev_fft_plan_destroy(p->plan);
    else host_plan_destroy(&p->g, p->plan);
  }
  rmaop__mem_free(p->ctx, &p->sin);
  rmaop__mem_free(p->ctx, &p->sout);
  free(p);
}
