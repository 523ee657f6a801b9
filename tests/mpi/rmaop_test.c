/* Shared helpers of the MPI tests (see rmaop_test.h). */
#include "rmaop_test.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rt_rank = 0, rt_size = 1;
const rmaop_dtype rt_dtypes[4] = {RMAOP_F32, RMAOP_F64, RMAOP_C64, RMAOP_C128};

int rt_device(void) {
  const char *m = getenv("RMAOP_MEMORY");
  return m && strcmp(m, "device") == 0;
}

/* GPU entries (RMAOP_MEMORY=device) on a machine or build without a GPU: every rank agrees to skip
 * (ctest's SKIP_RETURN_CODE 77), with the library's own message saying why. */
static int gpu_unavailable(void) {
  if (!rt_device()) return 0;
  rmaop_ctx ctx = NULL;
  rmaop_status st = rmaop_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  if (st == RMAOP_OK) {
    rmaop_ctx_destroy(&ctx);
    return 0;
  }
  if (st != RMAOP_ERR_UNSUPPORTED && st != RMAOP_ERR_REMOTE) return 0; /* a real failure: let the tests report it */
  if (rt_rank == 0) printf("SKIP: no usable GPU for RMAOP_MEMORY=device: %s\n", rmaop_ctx_last_error(NULL));
  return 1;
}

int rt_main(int argc, char **argv, Suite *(*make_suite)(void)) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &rt_size);
  /* The assertions make ranks agree, so a failing test returns on all ranks at the same point. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (rt_all(gpu_unavailable())) {
    MPI_Finalize();
    return 77;
  }
  SRunner *sr = srunner_create(make_suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* forked children cannot share the MPI job */
  srunner_run_all(sr, rt_rank == 0 ? CK_NORMAL : CK_SILENT);
  int failed = srunner_ntests_failed(sr), any = 0;
  srunner_free(sr);
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? EXIT_FAILURE : EXIT_SUCCESS;
}

void rt_check(int ok, const char *file, int line, const char *fmt, ...) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all)
    return;
  char msg[2048] = "";
  if (!ok) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d of %d] %s:%d: %s\n", rt_rank, rt_size, file, line, msg);
    fflush(stderr);
  }
  int nbad = rt_sum_int(!ok);
  ck_assert_msg(0, "%s:%d failed on %d of %d rank(s)%s%s", file, line, nbad, rt_size, ok ? "" : "; here: ", msg);
}

int rt_sum_int(int v) {
  int s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

int rt_all(int v) {
  int m = 0;
  v = v != 0;
  MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return m;
}

int rt_same_everywhere(const void *p, size_t n) {
  unsigned char *hi = malloc(n ? n : 1), *lo = malloc(n ? n : 1);
  int same = 0;
  if (hi && lo && n <= (size_t)INT32_MAX) {
    MPI_Allreduce(p, hi, (int)n, MPI_UNSIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(p, lo, (int)n, MPI_UNSIGNED_CHAR, MPI_MIN, MPI_COMM_WORLD);
    same = memcmp(hi, p, n) == 0 && memcmp(lo, p, n) == 0;
  }
  free(hi);
  free(lo);
  return rt_all(same);
}

rmaop_ctx rt_ctx(void) {
  rmaop_ctx ctx = NULL;
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  return ctx;
}

rmaop_ctx rt_host_ctx(void) {
  rmaop_ctx_options o;
  rmaop_ctx_options_init(&o);
  o.memory = "host", o.backend = "twosided", o.rma.transport = "auto", o.rma.ipc_path = "auto";
  rmaop_ctx ctx = NULL;
  RT_OK(rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx));
  return ctx;
}

double _Complex rt_value(int64_t i, int s) {
  double x = (double)i;
  return sin(0.1 * x + 0.7 * s) + I * cos(0.3 * x + 1.3 * s);
}

double _Complex rt_load(rmaop_dtype dtype, const void *buf, int64_t i) {
  switch (dtype) {
  case RMAOP_F32:
    return ((const float *)buf)[i];
  case RMAOP_F64:
    return ((const double *)buf)[i];
  case RMAOP_C64:
    return ((const float _Complex *)buf)[i];
  case RMAOP_C128:
    return ((const double _Complex *)buf)[i];
  }
  return NAN;
}

void rt_store(rmaop_dtype dtype, void *buf, int64_t i, double _Complex z) {
  switch (dtype) {
  case RMAOP_F32:
    ((float *)buf)[i] = (float)creal(z);
    break;
  case RMAOP_F64:
    ((double *)buf)[i] = creal(z);
    break;
  case RMAOP_C64:
    ((float _Complex *)buf)[i] = (float _Complex)z;
    break;
  case RMAOP_C128:
    ((double _Complex *)buf)[i] = z;
    break;
  }
}

void rt_add_elem(rmaop_dtype dtype, void *dst, int64_t i, const void *src, int64_t j) {
  switch (dtype) {
  case RMAOP_F32:
    ((float *)dst)[i] += ((const float *)src)[j];
    break;
  case RMAOP_F64:
    ((double *)dst)[i] += ((const double *)src)[j];
    break;
  case RMAOP_C64:
    ((float _Complex *)dst)[i] += ((const float _Complex *)src)[j];
    break;
  case RMAOP_C128:
    ((double _Complex *)dst)[i] += ((const double _Complex *)src)[j];
    break;
  }
}

double rt_tol(rmaop_dtype dtype) {
  return dtype == RMAOP_F32 || dtype == RMAOP_C64 ? 1e-5 : 1e-12;
}

int rt_is_complex(rmaop_dtype dtype) {
  return dtype == RMAOP_C64 || dtype == RMAOP_C128;
}

int rt_close(double _Complex a, double _Complex b, double tol, double scale) {
  return cabs(a - b) <= tol * (scale + cabs(b));
}

void *rt_alloc(rmaop_dtype dtype, int64_t n) {
  void *p = calloc((size_t)(n > 0 ? n : 1), 16);
  if (!p)
    abort(); /* a test without memory cannot report anything useful */
  (void)dtype;
  return p;
}

double _Complex rt_round(rmaop_dtype dtype, double _Complex z) {
  double _Complex tmp[1];
  rt_store(dtype, tmp, 0, z);
  return rt_load(dtype, tmp, 0);
}

static char rt__watchdog_msg[256];

static void rt__on_alarm(int sig) {
  (void)sig;
  ssize_t n = write(STDERR_FILENO, rt__watchdog_msg, strlen(rt__watchdog_msg));
  (void)n;
  _exit(3);
}

void rt_watchdog(int seconds, const char *what) {
  if (seconds <= 0) {
    alarm(0);
    return;
  }
  snprintf(rt__watchdog_msg, sizeof rt__watchdog_msg,
           "%s: a rank did not return within the watchdog's %d s (hang)\n", what ? what : "test", seconds);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = rt__on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  alarm((unsigned)seconds);
}
