/*
 * halo.c -- a ring halo exchange with rmaop: the example to copy.
 *
 * Every rank owns a slice of a periodic 1-D grid x (x_i = i, i = 0..N-1) and needs one ghost value from
 * each neighbour to apply the periodic second difference  y_i = 2 x_i - x_{i-1} - x_{i+1}.  The ghost
 * exchange is an rmaop_plan, declared once and executed with begin/end so that the interior of y is
 * computed while the ghosts travel. A dot product then checks the result on every rank.
 *
 *   mpiexec -n 4 ./rmaop-example-halo [elements_per_rank]          (any number of ranks; default 8)
 *   RMAOP_BACKEND=twosided mpiexec -n 2 ./rmaop-example-halo       (pick the path with RMAOP_* variables)
 *
 * Build against an installed rmaop with CMake (find_package(rmaop) + target_link_libraries(app rmaop::rmaop))
 * or with   mpicc halo.c $(pkg-config --cflags --libs rmaop).
 */
#include <rmaop/rmaop.h>

#include <stdio.h>
#include <stdlib.h>

/* Every rmaop call returns a status; on failure the context holds a message naming the argument or the
 * failing MPI call. Collective calls agree on failure, but a local call (vec_create, ...) can fail on one
 * rank only, and the others would then wait for it forever: so this program stops the whole job. */
#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    rmaop_status check_status_ = (call);                                                                               \
    if (check_status_ != RMAOP_OK) {                                                                                   \
      const char *check_msg_ = rmaop_ctx_last_error(ctx); /* starts with the status name */                            \
      fprintf(stderr, "[rank %d] %s:%d: %s: %s\n", world_rank, __FILE__, __LINE__, #call,                              \
              check_msg_[0] ? check_msg_ : rmaop_status_string(check_status_));                                        \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                                    \
    }                                                                                                                  \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int world_rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  rmaop_ctx ctx = NULL; /* NULL until created: rmaop_ctx_last_error(NULL) reports creation errors */

  const int64_t per_rank = argc > 1 ? atoll(argv[1]) : 8;
  if (per_rank < 1) {
    if (world_rank == 0) {
      fprintf(stderr, "usage: %s [elements_per_rank >= 1]\n", argv[0]);
    }
    MPI_Finalize();
    return 2;
  }

  /* 1. A context: a duplicate of the communicator + the backend chosen by RMAOP_BACKEND, RMAOP_RMA_SYNC, ...
   *    (NULL options = everything from the environment; see rmaop_ctx_options to choose in code). */
  CHECK(rmaop_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  rmaop_ctx_info ci;
  CHECK(rmaop_ctx_get_info(ctx, &ci));
  if (ci.memory != RMAOP_MEMORY_HOST) {
    if (ci.rank == 0) {
      fprintf(stderr, "this example computes on the host: run it with RMAOP_MEMORY=host\n");
    }
    rmaop_ctx_destroy(&ctx);
    MPI_Finalize();
    return 2;
  }
  const int left = (ci.rank + ci.size - 1) % ci.size, right = (ci.rank + 1) % ci.size;

  /* 2. A SCATTER layout of N elements (balanced over the ranks) and two vectors on it. */
  const int64_t N = per_rank * ci.size;
  rmaop_layout layout = NULL;
  CHECK(rmaop_layout_create(ctx, RMAOP_LAYOUT_SCATTER, N, &layout));
  rmaop_vec x = NULL, y = NULL;
  CHECK(rmaop_vec_create(layout, RMAOP_F64, &x));
  CHECK(rmaop_vec_duplicate(x, &y));
  rmaop_vec_info vi;
  CHECK(rmaop_vec_get_info(x, &vi));
  const int64_t n = vi.local_n;
  double *xa, *ya;
  CHECK(rmaop_vec_get_array(x, (void **)&xa));
  CHECK(rmaop_vec_get_array(y, (void **)&ya));
  for (int64_t i = 0; i < n; ++i) {
    xa[i] = (double)(vi.offset + i); /* x_i = global index i */
  }

  /* 3. The halo plan, from this rank's (the sender's) view: my first element goes to my left neighbour's
   *    right ghost, my last element to my right neighbour's left ghost. The receives are derived
   *    (nrecvs = -1). With one rank both neighbours are this rank; with two they are the same rank. */
  double ghost[2]; /* [0]: from the left neighbour, [1]: from the right neighbour */
  const rmaop_transfer sends[2] = {
      {.peer = left, .src_offset = 0, .dst_offset = 1, .count = 1},
      {.peer = right, .src_offset = n - 1, .dst_offset = 0, .count = 1},
  };
  const rmaop_plan_spec spec = {.dtype = RMAOP_F64,
                                .src_len = n,
                                .dst_len = 2,
                                .nsends = 2,
                                .sends = sends,
                                .nrecvs = -1,
                                .recvs = NULL,
                                .label = "halo"};
  rmaop_plan halo = NULL;
  CHECK(rmaop_plan_create(ctx, &spec, &halo)); /* collective; reuse the plan for every exchange */

  /* 4. Exchange: begin, compute what needs no ghost, end, then the two boundary points. Between begin and
   *    end, x must not change and ghost must not be read. */
  CHECK(rmaop_plan_begin(halo, xa, ghost, RMAOP_INSERT));
  for (int64_t i = 1; i < n - 1; ++i) {
    ya[i] = 2.0 * xa[i] - xa[i - 1] - xa[i + 1];
  }
  CHECK(rmaop_plan_end(halo));
  ya[0] = 2.0 * xa[0] - ghost[0] - (n > 1 ? xa[1] : ghost[1]);
  if (n > 1) {
    ya[n - 1] = 2.0 * xa[n - 1] - xa[n - 2] - ghost[1];
  }

  /* 5. Collective reductions. For x_i = i on a ring, y is zero except y_0 = -N and y_{N-1} = N. */
  double _Complex yy, xy;
  CHECK(rmaop_vec_dot(y, y, &yy));
  CHECK(rmaop_vec_dot(x, y, &xy));
  const double want_yy = 2.0 * (double)N * (double)N, want_xy = (double)N * (double)(N - 1);

  /* Every rank checks its own ghosts; one allreduce tells rank 0 whether all of them were right. */
  const double want_left = (double)((vi.offset - 1 + N) % N), want_right = (double)((vi.offset + n) % N);
  const double bad_local = (ghost[0] != want_left || ghost[1] != want_right) ? 1.0 : 0.0;
  double bad_ranks;
  CHECK(rmaop_allreduce(ctx, &bad_local, &bad_ranks, 1, RMAOP_SUM, "check"));
  const int ok = bad_ranks == 0.0 && (double)yy == want_yy && (double)xy == want_xy;

  if (ci.rank == 0) {
    printf("halo example: %d ranks, backend %s (sync %s, transport %s), N = %lld\n", ci.size, ci.backend,
           rmaop_sync_name(ci.rma.sync), rmaop_transport_name(ci.rma.transport), (long long)N);
    printf("  <y,y> = %.17g (expected %.17g)\n  <x,y> = %.17g (expected %.17g)\n", (double)yy, want_yy, (double)xy,
           want_xy);
    printf("  ranks with wrong ghosts: %d\n%s\n", (int)bad_ranks, ok ? "OK" : "FAILED");
  }

  /* 6. Clean up in reverse order; plan_destroy and ctx_destroy are collective. */
  rmaop_plan_destroy(&halo);
  rmaop_vec_destroy(&y);
  rmaop_vec_destroy(&x);
  rmaop_layout_destroy(&layout);
  rmaop_ctx_destroy(&ctx);
  MPI_Finalize();
  return ok ? 0 : 1;
}
