# All-to-all plans and redistribution; included from tests/CMakeLists.txt (after rmaop_add_test is defined).
# test_alltoall: rmaop_plan_create_alltoall against serial references of every pattern (uneven and zero blocks, quiet
# ranks, self blocks, custom offsets, every dtype, INSERT and ADD, repeated executions, reversed plans) and its
# creation errors; rmaop_op_create_redistribute and rmaop_vec_redistribute on 2-D, 3-D and 4-D arrays between every
# pair of axes, balanced and uneven from-splits, against the gathered global array, dot tests, and their errors.
rmaop_add_test(NAME alltoall SOURCES mpi/test_alltoall.c NP 1 2 3 4 MEMORY host device BACKENDS rma twosided nccl)
# Two simulated nodes at 4 ranks (RMAOP_NODE_SIZE=2), as tests/CMakeLists.txt's .nodes2 rows: off-node peers over
# mpi, and then every message over TCP.
rmaop_add_test(NAME alltoall.nodes2 TARGET test_alltoall NP 4 MEMORY host BACKENDS rma twosided TRANSPORTS mpi auto
               ENV RMAOP_NODE_SIZE=2)
rmaop_add_test(NAME alltoall.nodes2tcp TARGET test_alltoall NP 4 MEMORY host BACKENDS rma twosided TRANSPORTS mpi auto
               ENV RMAOP_NODE_SIZE=2 OMPI_MCA_btl=self,tcp)
# Every all-to-all of the patterns above straight into the destination where it can (RMAOP_RMA_DIRECT_MIN=8: blocks
# of one element and up), and with it off; test_alltoall_direct checks which way each execution went.
rmaop_add_test(NAME alltoall.direct TARGET test_alltoall NP 2 3 4 MEMORY host BACKENDS rma SYNCS lock TRANSPORTS auto
               ENV RMAOP_RMA_DIRECT_MIN=8)
rmaop_add_test(NAME alltoall.staged TARGET test_alltoall NP 2 MEMORY host BACKENDS rma SYNCS lock TRANSPORTS auto
               ENV RMAOP_RMA_DIRECT_MIN=0)
