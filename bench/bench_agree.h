/* A failure agreed by every rank of a bench program (MPI_COMM_WORLD): whether any rank failed, and on rank 0 the
 * first failing rank's message, so the benches stop together and rank 0 can say why. */
#ifndef RMAOP_BENCH_AGREE_H
#define RMAOP_BENCH_AGREE_H

#include <mpi.h>
#include <stdio.h>

enum { BENCH_AGREE_MSG = 512 }; /* bytes of a message carried to rank 0 */

/* Returns 1 on every rank when @p failed is set on any. Rank 0 then writes "rank R: MSG" (R the lowest failing rank,
 * MSG its @p msg) into @p why (@p whylen bytes) unless why already holds a message. Collective. */
static inline int bench_agree(int failed, const char *msg, char *why, size_t whylen) {
  int any = 0, rank = 0, size = 1;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!any)
    return 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int who = failed ? rank : size, first = size;
  MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  char buf[BENCH_AGREE_MSG];
  snprintf(buf, sizeof buf, "%s", failed && msg ? msg : "");
  if (first != 0) {
    if (rank == first)
      MPI_Send(buf, BENCH_AGREE_MSG, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
    if (rank == 0)
      MPI_Recv(buf, BENCH_AGREE_MSG, MPI_CHAR, first, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (rank == 0 && why && whylen && !why[0])
    snprintf(why, whylen, "rank %d: %.480s", first, buf);
  return 1;
}

#endif /* RMAOP_BENCH_AGREE_H */
