/* Does an 8 B halo epoch pay a cold share that grows with the time since the last call, beyond the bytes swept?
 * Conditions in turns (each block: one repetition of each), the epoch timed as solver sites (TRACE_SYNCED):
 *   W  warm (barrier, epoch)            F  after a 256 MiB fresh sweep (the full penalty)
 *   S  after 20 MiB fresh, full speed   L  after 20 MiB fresh, spread over ~2 ms (spin between 1 MiB pieces)
 *   I1 after 1 ms of spinning (no memory traffic)   I3 after 3 ms of spinning
 * Output: per condition the slowest rank's median; share = (x - W) / (F - W). */
#include <mpi.h>
#include <rmaop/rmaop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double med(double *t, int n) { qsort(t, n, sizeof *t, cmp); return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]); }
enum { NP = 256, NC = 6, MAXB = 200 };
static rmaop_vec piece[NP];
static int nextp;
static volatile double sink;
static void spin(double sec) { double t0 = MPI_Wtime(), x = 1; while (MPI_Wtime() - t0 < sec) for (int i = 0; i < 100; ++i) x = x * 1.0000001 + 1e-9; sink = x; }
static void sweep(int mib, double spread, int chunkbar) {
  for (int k = 0; k < mib; ++k) { rmaop_vec_scale(piece[nextp], -1.0); nextp = (nextp + 1) % NP; if (spread > 0) spin(spread / mib);
    if (chunkbar && (k + 1) % 16 == 0 && k + 1 < mib) MPI_Barrier(MPI_COMM_WORLD); }
}
static double t[NC][MAXB];
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *backend = argv[1], *sync = argc > 2 ? argv[2] : "", *tp = argc > 3 ? argv[3] : "";
  int blocks = argc > 4 ? atoi(argv[4]) : 30;
  rmaop_ctx ctx, sctx;
  rmaop_ctx_options o; rmaop_ctx_options_init(&o);
  o.backend = backend; o.memory = "host"; if (!strcmp(backend, "rma")) { o.rma_sync = sync; o.rma_transport = tp; }
  rmaop_ctx_options so; rmaop_ctx_options_init(&so); so.backend = "twosided"; so.memory = "host";
  if (rmaop_ctx_create(MPI_COMM_WORLD, &o, &ctx) || rmaop_ctx_create(MPI_COMM_WORLD, &so, &sctx)) MPI_Abort(MPI_COMM_WORLD, 1);
  rmaop_layout pl; rmaop_layout_create_local(sctx, 131072, &pl);
  for (int i = 0; i < NP; ++i) { rmaop_vec_create(pl, RMAOP_F64, &piece[i]); rmaop_vec_set(piece[i], 1.0); }
  rmaop_layout l; rmaop_layout_create_local(ctx, 1, &l);
  rmaop_vec src, dst; rmaop_vec_create(l, RMAOP_F64, &src); rmaop_vec_create(l, RMAOP_F64, &dst);
  int size; MPI_Comm_size(MPI_COMM_WORLD, &size);
  rmaop_transfer tr = {.peer = (rank + 1) % size, .src_offset = 0, .dst_offset = 0, .count = 1};
  rmaop_plan_spec spec = {.dtype = RMAOP_F64, .src_len = 1, .dst_len = 1, .nsends = 1, .sends = &tr, .nrecvs = -1, .label = "x"};
  rmaop_plan plan; if (rmaop_plan_create(ctx, &spec, &plan)) MPI_Abort(MPI_COMM_WORLD, 2);
  void *s, *d; rmaop_vec_get_array(src, &s); rmaop_vec_get_array(dst, &d);
  rmaop_trace_site site;
  if (blocks > MAXB) blocks = MAXB;
  for (int b = -2; b < blocks; ++b)
    for (int c = 0; c < NC; ++c) {
      int gap = 0;
      switch (c) {
      case 0: MPI_Barrier(MPI_COMM_WORLD); break;
      case 1: sweep(256, 0, 1); break;
      case 2: sweep(20, 0, 0); break;
      case 3: sweep(20, 0, 0); gap = 8; break;
      case 4: MPI_Barrier(MPI_COMM_WORLD); gap = 8; break;
      case 5: sweep(20, 0, 0); gap = 2; break;
      }
      rmaop_trace_reset(ctx); rmaop_trace_enable(ctx, RMAOP_TRACE_SYNCED);
      rmaop_plan_begin(plan, s, d, RMAOP_INSERT);
      if (gap) sweep(gap, 0, 0);
      rmaop_plan_end(plan);
      rmaop_trace_enable(ctx, RMAOP_TRACE_OFF); rmaop_trace_get(ctx, 0, &site);
      if (b >= 0) t[c][b] = site.time_inside;
    }
  double m[NC];
  for (int c = 0; c < NC; ++c) m[c] = med(t[c], blocks);
  MPI_Allreduce(MPI_IN_PLACE, m, NC, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const char *nm[NC] = {"W", "Fb", "S20", "S20g8", "Wg8", "S20g2"};
  if (rank == 0) {
    printf("%s.%s.%s:", backend, sync, tp);
    for (int c = 0; c < NC; ++c) printf(" %s %.3f", nm[c], m[c] * 1e6);
    printf(" | share:");
    for (int c = 2; c < NC; ++c) printf(" %s %.2f", nm[c], (m[c] - m[0]) / (m[1] - m[0]));
    printf("\n");
  }
  rmaop_plan_destroy(&plan); rmaop_vec_destroy(&src); rmaop_vec_destroy(&dst); rmaop_layout_destroy(&l);
  for (int i = 0; i < NP; ++i) rmaop_vec_destroy(&piece[i]);
  rmaop_layout_destroy(&pl); rmaop_ctx_destroy(&sctx); rmaop_ctx_destroy(&ctx);
  MPI_Finalize();
  return 0;
}
