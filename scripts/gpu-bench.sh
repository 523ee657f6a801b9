#!/usr/bin/env bash
# The GPU numbers of docs/PERFORMANCE.md, on a 2-GPU machine (after scripts/gpu-check.sh built build-gpu): rmaop-p2p-bench,
# rmaop-bench (CGLS on both ipc paths; pipelined CG vs CG) and rmaop-matmul-bench (SUMMA vs block rows), side by side.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/build-gpu-out}"
B="${BUILD:-build-gpu}/bench"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
MPI="mpiexec -n 2 --bind-to none"
run() { echo "+ $*"; "$@"; }
{
  run $MPI "$B/rmaop-p2p-bench" --sync lock --json "$OUT/p2p-lock.json"
  run $MPI "$B/rmaop-p2p-bench" --sync pscw --max-size 1048576 --json "$OUT/p2p-pscw.json"
  for n in 1048576 67108864; do
    run $MPI "$B/rmaop-bench" --memory device --problem deriv1d --n $n --niter 50 --backends rma,twosided,nccl \
      --sync lock,pscw,fence --transport ipc --repeat 5 --json "$OUT/bench-deriv1d-$n.json"
  done
  # the ipc kernel path (RMAOP_IPC_PATH=kernel) against the default copy path, same problem, next run
  run env RMAOP_IPC_PATH=kernel $MPI "$B/rmaop-bench" --memory device --problem deriv1d --n 1048576 --niter 50 \
    --backends rma --sync lock --transport ipc --repeat 5 --json "$OUT/bench-deriv1d-1048576-kernelpath.json"
  run $MPI "$B/rmaop-bench" --memory device --problem lap2d --n 8192 --niter 50 --backends rma,twosided,nccl \
    --sync lock --transport ipc --repeat 5 --json "$OUT/bench-lap2d.json"
  run $MPI "$B/rmaop-bench" --memory device --problem bdiag --n 8192 --niter 50 --backends rma,twosided,nccl \
    --sync lock --transport ipc --repeat 5 --json "$OUT/bench-bdiag.json"
  # pipelined CG against CG on the latency-bound SPD problem, every device path
  run $MPI "$B/rmaop-bench" --memory device --problem derivspd --n 65536 --niter 50 --backends rma,twosided,nccl \
    --sync lock,pscw,fence --transport ipc --solver cg,pipecg --repeat 7 --json "$OUT/bench-pipecg.json"
  # SUMMA against block rows, N = 4096 and 16384, per backend (communication share printed)
  for backend in rma twosided nccl; do
    for n in 4096 16384; do
      run env RMAOP_BACKEND=$backend RMAOP_RMA_SYNC=lock RMAOP_RMA_TRANSPORT=ipc $MPI "$B/rmaop-matmul-bench" \
        --memory device --n $n --reps 5 --kinds block,summa
    done
  done
} 2>&1 | tee "$OUT/bench.log"
