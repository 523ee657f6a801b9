# Signal-processing operators; included from tests/CMakeLists.txt (after rmaop_add_test is defined).
# test_mdc: the multi-dimensional convolution (PyLops-MPI MPIMDC) against a dense matrix of PyLops' chain written
# with explicit DFT sums (no FFT library), twosided, conj, prescaled, nfmax, every G dtype, frequencies split
# unevenly (ranks without any); dot tests, begin/end, creation errors.
rmaop_add_test(NAME mdc SOURCES mpi/test_mdc.c mpi/op_test_util.c NP 1 2 3 4 MEMORY host device
               BACKENDS rma twosided nccl)
# test_nsconv: the 1-D non-stationary convolution (PyLops-MPI MPINonStationaryConvolve1D) against serial PyLops'
# direct formula on the gathered array, 1-D to 3-D along any axis, balanced, uneven and zero-size splits (ghosts
# from several ranks), every dtype; dot tests, begin/end, creation errors.
rmaop_add_test(NAME nsconv SOURCES mpi/test_nsconv.c mpi/op_test_util.c NP 1 2 3 4 MEMORY host device
               BACKENDS rma twosided nccl)
