#!/usr/bin/env bash
# Build and run the gpu-labelled tests on a GPU machine (the lent device machine: Check unpacked from the
# carried Debian packages in .device-cache/). Writes logs under $OUT (or ./build-gpu-out).
#   scripts/gpu-check.sh [ctest args...]          system MPI (not CUDA-aware: the staging paths)
#   CUDA_MPI=1 scripts/gpu-check.sh [ctest args]  the CUDA-aware Open MPI 5 + UCX from .device-cache
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/build-gpu-out}"
mkdir -p "$OUT"
if [ -d .device-cache ]; then
  for f in .device-cache/*.deb; do dpkg -x "$f" / 2>/dev/null; done
  ldconfig
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
BUILD=build-gpu
if [ "${CUDA_MPI:-0}" = 1 ]; then
  source scripts/cuda-mpi-env.sh
  rmaop_cuda_mpi_env || { echo "gpu-check.sh: CUDA_MPI=1 but no $RMAOP_CUDA_MPI_TARBALL"; exit 1; }
  BUILD=build-gpu-cudampi
fi
nvidia-smi -L | tee "$OUT/gpus.txt"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMPIEXEC_PREFLAGS="--bind-to;none" >"$OUT/configure-$BUILD.log" 2>&1 || { tail -30 "$OUT/configure-$BUILD.log"; exit 1; }
grep "rmaop:" "$OUT/configure-$BUILD.log"
cmake --build "$BUILD" -j 16 -- -k >"$OUT/build-$BUILD.log" 2>&1 || grep -E "error|Error" "$OUT/build-$BUILD.log" | head -30
ctest --test-dir "$BUILD" -L "${LABEL:-^gpu$}" -j "${JOBS:-8}" --output-on-failure "$@" >"$OUT/ctest-$BUILD.log" 2>&1
grep -E "tests passed|Failed|\*\*\*|Not Run|Timeout" "$OUT/ctest-$BUILD.log" | tail -60
