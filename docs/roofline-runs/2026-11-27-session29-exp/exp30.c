/* Is the probe's bimodal fence reduction (0.6 vs 1.05 us) a per-process state, and does the solver see it? */
#include <mpi.h>
#include <rmaop/rmaop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double med(double *t, int n) { qsort(t, n, sizeof *t, cmp); return t[n / 2]; }
static double work[8192];
static void compute(int k) { for (int r = 0; r < k; ++r) for (int i = 0; i < 8192; ++i) work[i] = work[i] * 0.999 + 1e-3; }
enum { N = 2000 };
static double tr[N], tm[N];
static rmaop_vec X;
static void run(rmaop_ctx ctx, const char *name, int mode, int rank) {
  double in[5] = {1, 2, 3, 4, 5}, out[5];
  rmaop_trace_site s;
  for (int i = 0; i < N; ++i) {
    if (mode == 1) compute(2);
    if (mode == 0 || mode == 1 || mode == 4) MPI_Barrier(MPI_COMM_WORLD);
    if (mode == 2 || mode == 6) compute(2);
    rmaop_trace_reset(ctx);
    rmaop_trace_enable(ctx, mode == 2 ? RMAOP_TRACE_ON : RMAOP_TRACE_SYNCED);
    if (mode <= 3) rmaop_allreduce(ctx, in, out, 5, RMAOP_SUM, "x");
    else { double _Complex d; rmaop_vec_dot(X, X, &d); }
    rmaop_trace_enable(ctx, RMAOP_TRACE_OFF);
    rmaop_trace_get(ctx, 0, &s);
    tr[i] = s.time_inside;
  }
  double t0[6]; memcpy(t0, tr + 100, sizeof t0);
  MPI_Allreduce(tr, tm, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int lo = 0; for (int i = 0; i < N; ++i) lo += tr[i] < 0.6e-6;
  double mine = med(tr, N), other;
  double mean = 0; for (int i = N/10; i < N - N/10; ++i) mean += tr[i]; mean /= (N - 2*(N/10));
  int lo1; MPI_Reduce(&lo, &lo1, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  double mm[2] = {mean, 0}; MPI_Allreduce(MPI_IN_PLACE, mm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("  low-share (both ranks) %.2f, trimmed mean max %.3f\n", lo1 / (2.0 * N), mm[0] * 1e6);
  MPI_Sendrecv(&mine, 1, MPI_DOUBLE, 1 - rank, 0, &other, 1, MPI_DOUBLE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rank == 0) printf("%s mode %d: max %.3f  r0 %.3f r1 %.3f | r0 q10 %.3f q25 %.3f q75 %.3f q90 %.3f | first r0: %.2f %.2f %.2f %.2f %.2f %.2f\n", name, mode, med(tm, N) * 1e6, mine * 1e6, other * 1e6, tr[N/10]*1e6, tr[N/4]*1e6, tr[3*N/4]*1e6, tr[9*N/10]*1e6, t0[0]*1e6,t0[1]*1e6,t0[2]*1e6,t0[3]*1e6,t0[4]*1e6,t0[5]*1e6);
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *tp = argc > 1 ? argv[1] : "shm";
  rmaop_ctx ctx;
  rmaop_ctx_options o; rmaop_ctx_options_init(&o);
  o.backend = "rma"; o.rma_sync = "fence"; o.rma_transport = tp; o.memory = "host";
  if (rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx) != RMAOP_OK) { fprintf(stderr, "ctx\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  rmaop_layout l = NULL; int mkvec = argc > 2 && argv[2][0] == 'v';
  if (mkvec) { rmaop_layout_create_local(ctx, 1, &l); rmaop_vec_create(l, RMAOP_F64, &X); rmaop_vec_set(X, 1.0); }
  int seq0[] = {0, 3, 4, 5, 6, 0, 5}, seq1[] = {0, 1, 0, 2, 3, 0, 3}; const int *seq = mkvec ? seq0 : seq1;
  for (int k = 0; k < 7; ++k) run(ctx, tp, seq[k], rank);
  if (mkvec) { rmaop_vec_destroy(&X); rmaop_layout_destroy(&l); } rmaop_ctx_destroy(&ctx);
  MPI_Finalize();
  return 0;
}
