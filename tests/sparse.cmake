# Sparsity and proximal solvers (include/rmaop/solver_sparse.h); included from tests/CMakeLists.txt. Both run on host
# and device memory, at 1-4 ranks, on every backend.
# test_solver_sparse: the power iteration (a known spectrum; PyLops-MPI's recurrence from a given start), ISTA and
#   FISTA against serial PyLops-MPI recurrences (every thresholding, percentiles, decay, SOp, x0, tol stops; histories
#   to 1e-10), a sparse recovery, the reductions per iteration, argument errors.
# test_solver_prox: the L1, L2 and L21 proximal operators (prox, dual, value, gradient) and ProximalGradient, ADMML2
#   and PrimalDual against serial PyLops-MPI recurrences, argument errors.
rmaop_add_test(NAME solver_sparse SOURCES mpi/test_solver_sparse.c mpi/solver_test_util.c NP 1 2 3 4
               MEMORY host device BACKENDS rma twosided nccl)
rmaop_add_test(NAME solver_prox SOURCES mpi/test_solver_prox.c mpi/solver_test_util.c NP 1 2 3 4
               MEMORY host device BACKENDS rma twosided nccl)
