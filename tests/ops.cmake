# Operator and solver tests; included from tests/CMakeLists.txt (after rmaop_add_test is defined). Every one runs on
# host and device memory (device rows: label gpu / gpu4, builds with CUDA).
# test_op_*: one operator family each, against dense matrices of the serial PyLops formulas (mpi/op_test_util.c):
#   op_stencil  first / second derivatives and the Laplacian, their creation errors
#   op_block    block-diagonal, vstack, hstack (dense blocks and callbacks), their creation errors
#   op_compose  sum, product, scaled, adjoint, nested and block composites, their creation errors
#   op_shell    the shell operator (user callbacks and a plan), its creation errors
#   op_apply    what every operator shares: outputs overwritten, apply / adjoint / begin / end / dottest errors
set(_rmaop_op_util mpi/op_test_util.c)
foreach(family stencil block compose shell apply)
  rmaop_add_test(NAME op_${family} SOURCES mpi/test_op_${family}.c ${_rmaop_op_util} NP 1 2 3 4 MEMORY host device
                 BACKENDS rma twosided nccl)
endforeach()
# The same operator tests with the ghost rows put by kernels (RMAOP_HALO=kernel: rma over ipc; at 3-4 ranks the
# ranks share GPUs on smaller machines) on the copy and kernel ipc paths; the solvers through them in solver_kput
# (device and graph scalars: the applications are captured), the gradient in halo_kput.
rmaop_add_test(NAME op_stencil_kput TARGET test_op_stencil MEMORY device
               EXTRA_VARIANTS np2.rma.lock.ipc np2.rma.fence.ipc np2.rma.lock.ipc.kernel np3.rma.lock.ipc
                              np4.rma.lock.ipc
               PLACEMENTS multi ENV RMAOP_HALO=kernel)
# test_solver: CG and CGLS against serial PyLops recurrences (histories to 1e-10 on every backend); on device memory
# also CGLS and CG replayed from CUDA graphs on the ipc kernel path with copy-engine payloads (kernelcopies).
# mpi/solver_test_util.c: the problems, reference matrices and solve checks both solver tests share.
rmaop_add_test(NAME solver SOURCES mpi/test_solver.c mpi/solver_test_util.c NP 1 2 3 4 MEMORY host device
               BACKENDS rma twosided nccl EXTRA_VARIANTS np2.rma.lock.ipc.kernelcopies)
rmaop_add_test(NAME solver_kput TARGET test_solver MEMORY device
               EXTRA_VARIANTS np2.rma.lock.ipc np2.rma.lock.ipc.kernel np3.rma.lock.ipc
               PLACEMENTS multi ENV RMAOP_HALO=kernel)
# test_solver_fused: the host solvers' fused application (update + apply + dots in one pass, src/ops/op_impl.h):
# against the unfused calls on every stencil operator, forward and adjoint, uneven splits, every dtype; CG and
# CGLS through it against the same solves through a composite without the slot (1e-12). Sees src/ (internal).
rmaop_add_test(NAME solver_fused SOURCES mpi/test_solver_fused.c NP 1 2 3 4 MEMORY host device
               BACKENDS rma twosided nccl)
target_include_directories(test_solver_fused PRIVATE ${PROJECT_SOURCE_DIR}/src)
# test_solver_resident: RMAOP_SOLVER_SCALARS=resident (CG and CGLS in one GPU kernel) against host scalars, its
# fallback (another operator; the twosided row: another backend) and a peer that stops inside the kernel (timeout).
rmaop_add_test(NAME solver_resident SOURCES mpi/test_solver_resident.c mpi/solver_test_util.c MEMORY device
               EXTRA_VARIANTS np1.rma.lock.ipc np2.rma.lock.ipc np3.rma.lock.ipc np4.rma.lock.ipc np2.rma.fence.ipc
                              np2.twosided
               PLACEMENTS multi ENV RMAOP_SOLVER_SCALARS=resident)
if(TARGET test_solver_resident) # device memory only: not made without CUDA
  target_include_directories(test_solver_resident PRIVATE ${PROJECT_SOURCE_DIR}/src) # the context's solve count
endif()
# test_solver_krylov: LSQR and pipelined CG against serial PyLops / Ghysels-Vanroose recurrences, the diagonal operator.
rmaop_add_test(NAME solver_krylov SOURCES mpi/test_solver_krylov.c mpi/solver_test_util.c
               NP 1 2 3 4 MEMORY host device BACKENDS rma twosided nccl)
# test_halo: N-D halo on a cartesian grid and the gradient against serial references, dot tests, bitwise against a
# host context's plans, errors. halo_kput: the halo's boxes and the gradient's ghost rows put by kernels (2 x 2 grids
# with corners at 4 ranks).
rmaop_add_test(NAME halo SOURCES mpi/test_halo.c NP 1 2 3 4 MEMORY host device BACKENDS rma twosided nccl)
rmaop_add_test(NAME halo_kput TARGET test_halo MEMORY device
               EXTRA_VARIANTS np2.rma.lock.ipc np2.rma.lock.ipc.kernel np3.rma.lock.ipc np4.rma.lock.ipc
               PLACEMENTS multi ENV RMAOP_HALO=kernel)
# test_matmul: dense multiply (block, SUMMA) and Fredholm1 against serial references, dot tests, errors.
# SUMMA's grid is floor(sqrt(P))^2: 9 oversubscribed ranks give a 3 x 3 grid (one fast variant set, host memory).
rmaop_add_test(NAME matmul SOURCES mpi/test_matmul.c NP 1 2 3 4 MEMORY host device BACKENDS rma twosided nccl)
rmaop_add_test(NAME matmul_summa9 SOURCES mpi/test_matmul.c NP 9 MEMORY host BACKENDS rma twosided SYNCS fence
               TRANSPORTS shm)
# test_stacked: stacked layouts/vectors (dots count BROADCAST parts once, views, gather/scatter) and the stacked
# vstack / block-diagonal operators (parts applied alone, dot tests, CGLS vs serial), argument errors.
rmaop_add_test(NAME stacked SOURCES mpi/test_stacked.c NP 1 2 3 4 MEMORY host device BACKENDS rma twosided nccl)
