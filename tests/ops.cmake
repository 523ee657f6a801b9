# Operator and solver tests; included from tests/CMakeLists.txt (after rmaop_add_mpi_test is defined).
# test_op: derivatives, Laplacian, block operators, composites, shell operator, dot tests, argument errors.
# test_solver: CG and CGLS against serial PyLops recurrences (histories to 1e-10 on every backend).
# mpi/solver_test_util.c: the problems, reference matrices and solve checks both solver tests share.
rmaop_add_mpi_test(NAME op SOURCES mpi/test_op.c NP 1 2 3 4 BACKENDS rma twosided)
rmaop_add_mpi_test(NAME solver SOURCES mpi/test_solver.c mpi/solver_test_util.c NP 1 2 3 4 BACKENDS rma twosided)
# test_solver_krylov: LSQR and pipelined CG against serial PyLops / Ghysels-Vanroose recurrences, the diagonal operator.
rmaop_add_mpi_test(NAME solver_krylov SOURCES mpi/test_solver_krylov.c mpi/solver_test_util.c
                   NP 1 2 3 4 BACKENDS rma twosided)
# test_halo: N-D halo on a cartesian grid and the gradient against serial references, dot tests, errors.
rmaop_add_mpi_test(NAME halo SOURCES mpi/test_halo.c NP 1 2 3 4 BACKENDS rma twosided)
# test_matmul: dense multiply (block, SUMMA) and Fredholm1 against serial references, dot tests, errors.
# SUMMA's grid is floor(sqrt(P))^2: 9 oversubscribed ranks give a 3 x 3 grid (one fast variant set).
rmaop_add_mpi_test(NAME matmul SOURCES mpi/test_matmul.c NP 1 2 3 4 BACKENDS rma twosided)
rmaop_add_mpi_test(NAME matmul_summa9 SOURCES mpi/test_matmul.c NP 9 BACKENDS rma twosided SYNCS fence TRANSPORTS shm)
# test_stacked: stacked layouts/vectors (dots count BROADCAST parts once, views, gather/scatter) and the stacked
# vstack / block-diagonal operators (parts applied alone, dot tests, CGLS vs serial), argument errors.
rmaop_add_mpi_test(NAME stacked SOURCES mpi/test_stacked.c NP 1 2 3 4 BACKENDS rma twosided)
