/* Issue 6, session 31: do the two ranks share a core or a cache? Every ~1.3 s: an 8 B ping-pong over MPI (median
 * of 2000 half round trips), then rank 0's passes over 20 MiB (8 passes; one load per cache line) and over
 * 512 KiB (400 passes) timed with rank 1 asleep and with rank 1 running the same loop. On the 2-vCPU VM the
 * ping-pong is 0.37 us with both ratios ~1 (caches of their own), or 0.11 us with the 20 MiB ratio ~2 (shared).
 *   mpicc -O2 -o colocation 2026-11-27-session31-colocation.c && mpiexec -n 2 ./colocation SECONDS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static volatile double sink;
static double *buf20, *buf512;
static double work_l2(void) { /* 400 passes over 512 KiB: in a private L2 */
  const long n = 512L * 1024 / 8;
  if (!buf512) { buf512 = malloc(n * sizeof(double)); for (long i = 0; i < n; ++i) buf512[i] = i; }
  double s = 0;
  for (long i = 0; i < n; i += 8) s += buf512[i];
  double t0 = now();
  for (int p = 0; p < 400; ++p)
    for (long i = 0; i < n; i += 8) s += buf512[i];
  sink = s;
  return now() - t0;
}
static double work(void) { /* 8 passes over 20 MiB: in L3 alone; two ranks sharing one L3 do not fit */
  const long n = 20L * 1024 * 1024 / 8;
  if (!buf20) { buf20 = malloc(n * sizeof(double)); for (long i = 0; i < n; ++i) buf20[i] = i; }
  double s = 0;
  for (long i = 0; i < n; i += 8) s += buf20[i]; /* warm */
  double t0 = now();
  for (int p = 0; p < 8; ++p)
    for (long i = 0; i < n; i += 8) s += buf20[i]; /* one load per cache line */
  sink = s;
  return now() - t0;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  int secs = argc > 1 ? atoi(argv[1]) : 300;
  double t00 = now();
  static double lat[2000];
  char buf[8] = {0};
  for (int it = 0; now() - t00 < secs; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 2000; ++i) {
      double t0 = now();
      if (r == 0) { MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
      else { MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD); }
      lat[i] = (now() - t0) / 2;
    }
    qsort(lat, 2000, sizeof(double), cmp);
    MPI_Barrier(MPI_COMM_WORLD);
    double alone = 0, both = 0;
    if (r == 0) alone = work(); else { struct timespec s = {0, 200000000}; nanosleep(&s, NULL); }
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) both = work(); else work();
    MPI_Barrier(MPI_COMM_WORLD);
    double alone2 = 0, both2 = 0;
    if (r == 0) alone2 = work_l2(); else { struct timespec s = {0, 100000000}; nanosleep(&s, NULL); }
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) both2 = work_l2(); else work_l2();
    if (r == 0) printf("%7.1f s  pingpong %.3f us  l3 alone %.2f ms  both %.2f ms  ratio %.2f  l2 alone %.2f ms  both %.2f ms  ratio %.2f\n", now() - t00, lat[1000] * 1e6, alone * 1e3, both * 1e3, both / alone, alone2 * 1e3, both2 * 1e3, both2 / alone2), fflush(stdout);
    struct timespec s = {1, 0}; nanosleep(&s, NULL);
  }
  MPI_Finalize();
  return 0;
}
