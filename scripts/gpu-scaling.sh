#!/usr/bin/env bash
# The multi-GPU scaling runs on one host with G >= 2 GPUs (kinds nvidia-h200-x4 / -x8), one rank per GPU, device
# memory, in one call:
#   1. build (scripts/gpu-check.sh: the library, tools and tests) and the gpu tests at 3 and 4 ranks (label gpu4)
#      when G >= 4 (TESTS=0: not);
#   2. rmaop-roofline probe of every device path at P = G (full probe, with its plot) and at P = 2 (--quick): the
#      fitted parameters, and the reduction of 1 and 8 doubles (8 B and 64 B) per path against NCCL's;
#   3. rmaop-reduce-bench at P = G and P = 2: NCCL's allreduce (device result, and copied to the host),
#      MPI_Allreduce and rmaop_allreduce on every device path (the one-sided reduction on rma), 8 B .. 64 B;
#   4. rmaop-bench (CGLS, 50 iterations, 5 repeats interleaved) at P = 1, 2, 4, ... G on every device path:
#      deriv1d weak (n = 2^20 and 2^26 per GPU), lap2d strong (n = 8192: an 8192 x 8192 grid) and weak
#      (n = 8192 sqrt(P)), bdiag (one dense 8192 x 8192 block per rank: weak by construction).
#   OUT=$OUT scripts/gpu-scaling.sh            system Open MPI 4.1 (not CUDA-aware): rma ipc fence/pscw/lock,
#                                              twosided staged through the host, nccl
#   CUDA_MPI=1 OUT=$OUT scripts/gpu-scaling.sh the CUDA-aware Open MPI 5 + UCX from .device-cache: rma mpi
#                                              fence/pscw/lock, twosided on device pointers
# python3 scripts/scaling-tables.py $OUT/scaling-<tag> prints the tables of docs/PERFORMANCE.md (per-iteration
# time, communication share, efficiencies relative to 1 and 2 GPUs, the probes' reductions).
# Parts can be left out or narrowed: TESTS=0, TESTS_RE=REGEX (ctest -R), TEST_LABEL=gpu (default gpu4), PROBE=0, REDUCE=0, PS="1 2 4",
# PROBLEMS="deriv1d-2e20 deriv1d-2e26 lap2d-strong lap2d-weak bdiag" (the bench series run; default all).
# Every step runs under a time limit of its own and writes under $OUT as it goes, so a call cut short keeps
# what finished. Keep NCCL_NVLS_ENABLE=0 (set here).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/build-gpu-out}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
if [ "${CUDA_MPI:-0}" = 1 ]; then
  TAG=cudampi BUILD=build-gpu-cudampi BACKENDS=rma,twosided TRANSPORT=mpi
  PATHS=rma.fence.mpi.device,rma.pscw.mpi.device,rma.lock.mpi.device,twosided.device
  TESTS_RE="${TESTS_RE:-\.(rma\.[a-z]+\.mpi|twosided)\$}"
  REDUCE_PATHS=rma.lock.mpi,rma.fence.mpi,rma.pscw.mpi,twosided
else
  TAG=sysmpi BUILD=build-gpu BACKENDS=rma,twosided,nccl TRANSPORT=ipc
  PATHS=rma.fence.ipc.device,rma.pscw.ipc.device,rma.lock.ipc.device,twosided.device,nccl.device
  TESTS_RE="${TESTS_RE:-\.(rma\.[a-z]+\.ipc|twosided|nccl)\$}"
  REDUCE_PATHS=rma.lock.ipc,rma.fence.ipc,rma.pscw.ipc,twosided,nccl
fi
D="$OUT/scaling-$TAG"
mkdir -p "$D"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }
G=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
nvidia-smi -L | tee "$D/gpus.txt"
nvidia-smi topo -m >>"$D/gpus.txt" 2>&1
git rev-parse --short HEAD 2>/dev/null || cat .device-cache/TREE 2>/dev/null
[ "$G" -ge 2 ] || { echo "gpu-scaling.sh: $G GPU(s); needs at least 2"; exit 1; }

stamp "build ($BUILD) and the gpu tests at 3 and 4 ranks"
if [ "${TESTS:-1}" = 1 ] && [ "$G" -ge 4 ]; then
  OUT="$D" LABEL="${TEST_LABEL:-gpu4}" JOBS=16 timeout "${TEST_LIMIT:-240}" bash scripts/gpu-check.sh -R "$TESTS_RE" --timeout 120
else
  OUT="$D" LABEL=none timeout 300 bash scripts/gpu-check.sh >/dev/null
fi
if [ "${CUDA_MPI:-0}" = 1 ]; then # gpu-check.sh set it up in its own process
  source scripts/cuda-mpi-env.sh
  rmaop_cuda_mpi_env || { echo "gpu-scaling.sh: CUDA_MPI=1 but no $RMAOP_CUDA_MPI_TARBALL"; exit 1; }
fi
R="$BUILD/roofline/rmaop-roofline" B="$BUILD/bench/rmaop-bench"
[ -x "$R" ] && [ -x "$B" ] || { echo "gpu-scaling.sh: $R or $B was not built"; exit 1; }
run_np() { # limit (s), ranks, command...
  timeout "$1" mpiexec -n "$2" --bind-to none "${@:3}"
}

stamp "probe at P = $G (every path, full) and P = 2 (--quick)"
if [ "${PROBE:-1}" = 1 ]; then
  run_np "${PROBE_LIMIT:-200}" "$G" "$R" probe --memory device --paths "$PATHS" --out "$D/profile-p$G.json" \
    >"$D/probe-p$G.log" 2>&1 || echo "probe at P = $G: exit $?"
  tail -n 25 "$D/probe-p$G.log"
  if [ "$G" -gt 2 ]; then
    run_np 120 2 "$R" probe --quick --memory device --paths "$PATHS" --out "$D/profile-p2.json" \
      >"$D/probe-p2.log" 2>&1 || echo "probe at P = 2: exit $?"
  fi
fi

stamp "reductions at P = $G and P = 2 (rmaop-reduce-bench)"
[ "${REDUCE:-1}" = 1 ] && for P in $(printf '%s\n' "$G" 2 | sort -un); do
  run_np 120 "$P" "$BUILD/bench/rmaop-reduce-bench" --paths "$REDUCE_PATHS" --json "$D/reduce-p$P.json" \
    2>&1 | tee "$D/reduce-p$P.log" | grep -v "^ *$"
done

bench() { # P, problem, n, file tag
  stamp "bench P = $1: $2 n = $3"
  run_np "${BENCH_LIMIT:-120}" "$1" "$B" --memory device --problem "$2" --n "$3" --niter 50 --repeat 5 \
    --backends "$BACKENDS" --sync lock,pscw,fence --transport "$TRANSPORT" --json "$D/bench-$4-p$1.json" \
    >"$D/bench-$4-p$1.log" 2>&1 || { echo "  exit $?"; tail -n 5 "$D/bench-$4-p$1.log"; }
}
PROBLEMS=" ${PROBLEMS:-deriv1d-2e20 deriv1d-2e26 lap2d-strong lap2d-weak bdiag} "
want() { [[ "$PROBLEMS" == *" $1 "* ]]; }
for P in ${PS:-1 2 4 8}; do
  [ "$P" -le "$G" ] || break
  want deriv1d-2e20 && bench "$P" deriv1d $((1048576 * P)) deriv1d-2e20
  want deriv1d-2e26 && bench "$P" deriv1d $((67108864 * P)) deriv1d-2e26
  want lap2d-strong && bench "$P" lap2d 8192 lap2d-strong
  want lap2d-weak && [ "$P" -gt 1 ] && bench "$P" lap2d "$(python3 -c "print(round(8192 * $P ** 0.5))")" lap2d-weak
  want bdiag && bench "$P" bdiag 8192 bdiag
done
stamp "tables"
python3 scripts/scaling-tables.py "$D"
stamp done
