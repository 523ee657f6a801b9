# Sourced by the GPU scripts (gpu-check.sh, gpu-roofline.sh, gpu-roofline-check.sh, gpu-scaling.sh), from the
# repository root. rmaop_cuda_mpi_env puts the CUDA-aware Open MPI 5.0.7 + UCX 1.13.1 carried in .device-cache
# (../shared/cuda-mpi/README.md) first on PATH, unpacking it into /tmp/cudampi once, and sets what it needs: the
# UCX PML and UCX's new protocols; the system MPI's launcher and shared-memory settings are dropped. Returns 1
# (nothing changed) when the tarball is not there and was not unpacked before.
RMAOP_CUDA_MPI_TARBALL=.device-cache/openmpi-5.0.7-ucx-1.13.1-cuda13.tar.xz
rmaop_cuda_mpi_env() {
  if [ ! -d /tmp/cudampi ]; then
    [ -f "$RMAOP_CUDA_MPI_TARBALL" ] || return 1
    tar xJf "$RMAOP_CUDA_MPI_TARBALL" -C /tmp || return 1
  fi
  export PATH=/tmp/cudampi/bin:$PATH LD_LIBRARY_PATH=/tmp/cudampi/lib:${LD_LIBRARY_PATH:-}
  export UCX_PROTO_ENABLE=y OMPI_MCA_pml=ucx
  unset OMPI_MCA_plm OMPI_MCA_btl_vader_single_copy_mechanism
}
