# Distributed FFTs; included from tests/CMakeLists.txt (after rmaop_add_test is defined).
# test_fft: rmaop_op_create_fftnd (PyLops-MPI MPIFFTND / MPIFFT2D with PyLops' nffts) against direct DFTs of the
# whole arrays (forward and adjoint, 2-D and 3-D, axes in several orders, nffts longer and shorter than dims, real
# and complex, both norms, ifftshift / fftshift, ranks without rows, every dtype), dot tests, the frequencies and
# the creation errors; and the local transforms under it (src/ops/fft_local.h, hence src/ on the include path)
# alone. In a build without FFTW the host rows check that creation refuses host memory, naming FFTW.
rmaop_add_test(NAME fft SOURCES mpi/test_fft.c NP 1 2 3 4 MEMORY host device BACKENDS rma twosided nccl)
target_include_directories(test_fft PRIVATE ${PROJECT_SOURCE_DIR}/src)
if(NOT RMAOP_HAVE_FFTW)
  target_compile_definitions(test_fft PRIVATE RT_NO_FFTW)
endif()
