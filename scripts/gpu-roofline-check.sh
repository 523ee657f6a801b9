#!/usr/bin/env bash
# The roofline model's 25 % prediction check on a 2-GPU machine (the lent device machine), in one call:
#   1. device memory over the system Open MPI (not CUDA-aware): rma ipc fence/pscw/lock, twosided staged
#      through the host, nccl;
#   2. device memory over the CUDA-aware Open MPI 5 + UCX (.device-cache, ../shared/cuda-mpi/README.md):
#      rma mpi fence/pscw/lock, twosided on device pointers (skipped when the tarball is not carried);
#   3. host memory on the same machine's CPUs (HOST_ROUNDS > 0), as on the 2-vCPU VM.
# Each part is scripts/roofline-check.sh (probe, roofline run and rmaop-bench --trace-sync interleaved in
# rounds); bdiag runs at n = 4096 on device memory (1024 on the host), deriv1d at 2^20.
# On device memory every bench times DEVICE_REPEAT (default 100) repeats per path, interleaved over the paths, so
# its synchronized repeats span ~2-3 s of the launch (5 spanned ~0.1-0.2 s): the machine's memory-latency phases
# last 1-5 s on 2 x H200, and a 5-repeat bench read one of them, a draw of a two-valued state 1.2-1.3x apart on
# the CUDA-aware paths. 100 repeats average whatever phases their seconds hold, but many launches still read one
# speed throughout: a check needs rounds, and scripts/roofline-pool.sh pools the rounds of several calls.
#   ROUNDS=4 HOST_ROUNDS=5 OUT=$OUT scripts/gpu-roofline-check.sh
#   SYSMPI=0 leaves part 1 out (a call's device time spent on the CUDA-aware part alone), CUDAMPI=0 part 2;
#   DEVICE_REPEAT=5 gives the device benches the short 5-repeat length; CENTER=mean pools each check's
#   rounds by their mean (scripts/roofline-check.sh).
# GPU processes are not bound to cores (OMPI_MCA_hwloc_base_binding_policy=none, as scripts/gpu-check.sh binds none).
# Builds rmaop-roofline and rmaop-bench only (no tests: Check is not needed). Writes $OUT/check-*/ and prints
# the check tables with the elapsed seconds.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS="${ROUNDS:-4}"
HOST_ROUNDS="${HOST_ROUNDS:-5}"
SYSMPI="${SYSMPI:-1}"
CUDAMPI="${CUDAMPI:-1}"
DEVICE_REPEAT="${DEVICE_REPEAT:-100}"
OUT="${OUT:-$PWD/build-gpu-out}"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }

build() { # build dir
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DRMAOP_BUILD_TESTS=OFF >"$OUT/configure-$1.log" 2>&1 &&
    cmake --build "$1" -j 16 --target rmaop-roofline rmaop-bench >"$OUT/build-$1.log" 2>&1 ||
    { tail -30 "$OUT/build-$1.log" "$OUT/configure-$1.log" 2>/dev/null; return 1; }
}

check() { # name, build dir, then VAR=value settings for roofline-check.sh
  local name="$1" dir="$2"
  shift 2
  env "$@" BUILD_DIR="$dir" RMAOP_SKIP_PACKAGES=1 bash scripts/roofline-check.sh "$OUT/check-$name" \
    >"$OUT/check-$name.log" 2>&1 || { tail -20 "$OUT/check-$name.log"; return 1; }
  for p in deriv1d bdiag; do
    echo "=== $name: $p"
    cat "$OUT/check-$name/check-$p.txt"
  done
}

nvidia-smi -L
git rev-parse --short HEAD 2>/dev/null || cat .device-cache/TREE 2>/dev/null
if [ "$SYSMPI" = 1 ] || [ "$HOST_ROUNDS" -gt 0 ]; then
  stamp "build (system MPI)"
  build build-roof || exit 1
fi
# what both device parts share
device=(ROUNDS="$ROUNDS" REPEAT="$DEVICE_REPEAT" MEMORY=device BDIAG_N=4096 OMPI_MCA_hwloc_base_binding_policy=none)
if [ "$SYSMPI" = 1 ]; then
  stamp "device memory, system MPI: rma ipc, twosided staged, nccl"
  check device-sysmpi build-roof "${device[@]}" BACKENDS=rma,twosided,nccl TRANSPORTS=ipc
fi
source scripts/cuda-mpi-env.sh
if [ "$CUDAMPI" != 1 ]; then
  stamp "CUDAMPI=$CUDAMPI: the CUDA-aware part is left out"
elif [ -f "$RMAOP_CUDA_MPI_TARBALL" ]; then
  stamp "build (CUDA-aware Open MPI 5 + UCX)"
  (
    rmaop_cuda_mpi_env || exit 1
    build build-roof-cudampi || exit 1
    stamp "device memory, CUDA-aware MPI: rma mpi, twosided on device pointers"
    check device-cudampi build-roof-cudampi "${device[@]}" BACKENDS=rma,twosided TRANSPORTS=mpi
  )
else
  stamp "no $RMAOP_CUDA_MPI_TARBALL: the CUDA-aware part is skipped"
fi
if [ "$HOST_ROUNDS" -gt 0 ]; then
  stamp "host memory (system MPI)"
  check host build-roof ROUNDS="$HOST_ROUNDS"
fi
stamp done
