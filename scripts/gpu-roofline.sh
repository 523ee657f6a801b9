#!/usr/bin/env bash
# The roofline model's acceptance figures on a 2-GPU machine (after scripts/gpu-check.sh built $BUILD):
#  - rmaop-roofline probe of every device path (and of the host, on the same machine's CPUs),
#  - rmaop-roofline run of CGLS on deriv1d (n = 2^20) and bdiag (n = 4096) on every profiled path: the
#    model's per-iteration prediction next to the synchronized measurement of the same solve.
#   scripts/gpu-roofline.sh                   system MPI build (build-gpu): rma ipc, rma mpi and twosided
#                                             staged through the host, nccl
#   CUDA_MPI=1 BUILD=build-gpu-cudampi TAG=cudampi scripts/gpu-roofline.sh
#                                             the CUDA-aware Open MPI: rma mpi and twosided on device pointers
# Results go to $OUT (default ./build-gpu-out/roofline-$TAG).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TAG="${TAG:-sysmpi}"
OUT="${OUT:-$PWD/build-gpu-out}/roofline-$TAG"
R="${BUILD:-build-gpu}/roofline/rmaop-roofline"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
if [ "${CUDA_MPI:-0}" = 1 ]; then
  source scripts/cuda-mpi-env.sh
  rmaop_cuda_mpi_env || { echo "gpu-roofline.sh: CUDA_MPI=1 but no $RMAOP_CUDA_MPI_TARBALL"; exit 1; }
  DEV_PATHS="${DEV_PATHS:-rma.lock.mpi.device,rma.fence.mpi.device,twosided.device}"
else
  DEV_PATHS="${DEV_PATHS:-rma.fence.ipc.device,rma.pscw.ipc.device,rma.lock.ipc.device,rma.lock.mpi.device,twosided.device,nccl.device}"
fi
MPI="mpiexec -n 2 --bind-to none"
run() { echo "+ $*"; "$@"; }
{
  run timeout 300 $MPI "$R" probe --memory device --paths "$DEV_PATHS" --out "$OUT/profile-device.json"
  for p in "deriv1d 1048576" "bdiag 4096"; do
    set -- $p
    run timeout 120 $MPI "$R" run --memory device --problem "$1" --n "$2" --niter 20 --repeat 3 \
      --backends "$DEV_PATHS" --profile "$OUT/profile-device.json" --out "$OUT/$1-device" --no-save-traces
  done
  if [ "${HOST:-1}" = 1 ]; then
    run timeout 200 $MPI "$R" probe --quick --memory host --out "$OUT/profile-host.json"
    for p in "deriv1d 1048576" "bdiag 1024"; do
      set -- $p
      run timeout 120 $MPI "$R" run --problem "$1" --n "$2" --niter 20 --repeat 3 --backends rma,twosided \
        --profile "$OUT/profile-host.json" --out "$OUT/$1-host" --no-save-traces
    done
  fi
} 2>&1 | tee "$OUT/roofline.log"
