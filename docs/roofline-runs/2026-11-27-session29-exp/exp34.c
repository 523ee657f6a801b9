/* (As run in session 29 after the first version's matvec turned out to be optimized away: its result array was
 * static and never read, so the pass took 0.00 ms and the dot after it looked warm. yv is now read.)
 * The one-element dot (timed as solver sites) after: W warm; F 256 MiB fresh rw sweep; Fw8 8 MiB fresh rw;
 * Sw8 the same 8 MiB rw; Sr8 the same 8 MiB read-only (a sum); MV a dense 1024 x 1024 matvec (8 MiB matrix,
 * the same each time, read-only) as CGLS bdiag's. Conditions in turns. share = (x - W) / (F - W). */
#include <mpi.h>
#include <rmaop/rmaop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double med(double *t, int n) { qsort(t, n, sizeof *t, cmp); return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]); }
enum { NP = 256, NC = 6, MAXB = 200, N = 1024 };
static rmaop_vec piece[NP];
static int nextp;
static double *mat, xv[N];
double yv[N]; /* not static: the matvec must not be optimized away */
static volatile double sink;
static void sweep(int mib, int same) { if (same) nextp = 0; for (int k = 0; k < mib; ++k) { rmaop_vec_scale(piece[nextp], -1.0); nextp = (nextp + 1) % NP; } }
static void readsame(void) { double s = 0; for (size_t i = 0; i < (size_t)N * N; ++i) s += mat[i]; sink = s; }
static void matvec(void) { for (int i = 0; i < N; ++i) { double s = 0; const double *r = mat + (size_t)i * N; for (int j = 0; j < N; ++j) s += r[j] * xv[j]; yv[i] = s; } }
static double t[NC][MAXB], dur[NC][MAXB];
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *backend = argv[1], *sync = argv[2], *tp = argv[3];
  int blocks = atoi(argv[4]);
  rmaop_ctx ctx, sctx;
  rmaop_ctx_options o; rmaop_ctx_options_init(&o);
  o.backend = backend; o.memory = "host"; if (!strcmp(backend, "rma")) { o.rma_sync = sync; o.rma_transport = tp; }
  rmaop_ctx_options so; rmaop_ctx_options_init(&so); so.backend = "twosided"; so.memory = "host";
  if (rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx) || rmaop_ctx_create(MPI_COMM_WORLD, &so, &sctx)) MPI_Abort(MPI_COMM_WORLD, 1);
  rmaop_layout pl; rmaop_layout_create_local(sctx, 131072, &pl);
  for (int i = 0; i < NP; ++i) { rmaop_vec_create(pl, RMAOP_F64, &piece[i]); rmaop_vec_set(piece[i], 1.0); }
  mat = malloc(sizeof(double) * N * N); for (size_t i = 0; i < (size_t)N * N; ++i) mat[i] = 1e-3 * (double)(i % 7);
  for (int i = 0; i < N; ++i) xv[i] = 1;
  rmaop_layout l; rmaop_layout_create_local(ctx, 1, &l);
  rmaop_vec x; rmaop_vec_create(l, RMAOP_F64, &x); rmaop_vec_set(x, 1.0);
  rmaop_trace_site site;
  if (blocks > MAXB) blocks = MAXB;
  for (int b = -2; b < blocks; ++b)
    for (int c = 0; c < NC; ++c) {
      double t0 = MPI_Wtime();
      switch (c) {
      case 0: MPI_Barrier(MPI_COMM_WORLD); break;
      case 1: sweep(256, 0); break;
      case 2: sweep(8, 0); break;
      case 3: sweep(8, 1); break;
      case 4: readsame(); break;
      case 5: matvec(); sink = yv[b & (N - 1)]; break;
      }
      if (b >= 0) dur[c][b] = MPI_Wtime() - t0;
      rmaop_trace_reset(ctx); rmaop_trace_enable(ctx, RMAOP_TRACE_SYNCED);
      double _Complex d; rmaop_vec_dot(x, x, &d);
      rmaop_trace_enable(ctx, RMAOP_TRACE_OFF); rmaop_trace_get(ctx, 0, &site);
      if (b >= 0) t[c][b] = site.time_inside;
    }
  double m[NC];
  for (int c = 0; c < NC; ++c) m[c] = med(t[c], blocks);
  MPI_Allreduce(MPI_IN_PLACE, m, NC, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const char *nm[NC] = {"W", "F", "Fw8", "Sw8", "Sr8", "MV"};
  if (rank == 0) {
    printf("%s.%s.%s:", backend, sync, tp);
    for (int c = 0; c < NC; ++c) printf(" %s %.3f", nm[c], m[c] * 1e6);
    printf(" | share:");
    for (int c = 2; c < NC; ++c) printf(" %s %.2f", nm[c], (m[c] - m[0]) / (m[1] - m[0]));
    printf(" | pass ms:");
    for (int c = 1; c < NC; ++c) printf(" %s %.2f", nm[c], med(dur[c], blocks) * 1e3);
    printf("\n");
  }
  MPI_Finalize();
  return 0;
}
