#!/usr/bin/env bash
# CPU-only build check: configures a second build with RMAOP_WITH_CUDA=OFF (so no nccl either), builds the
# library, the tools and the examples, and runs the halo example at 2 ranks. The main build finds the CUDA
# toolkit wherever one is installed (CI has one, without a GPU), so without this check nothing would build
# the "#else" halves of the CUDA code: a missing CPU-only definition would surface only on a user's machine
# without CUDA (rma__ipc_graph_ok once was one: an undefined reference in the link).
#
#   scripts/check-nocuda.sh [WORK_DIR]       (default: a temporary folder, removed afterwards)
#
# ctest runs it as the test "nocuda_build" (label "install") in builds that have CUDA.
set -euo pipefail

RMAOP_SCRIPT=check-nocuda.sh
# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
rmaop_setup_env

if [ $# -gt 0 ]; then
  work="$1"
  mkdir -p "$work"
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/rmaop-nocuda.XXXXXX")"
  cleanup() { rm -rf "$work"; }
  trap cleanup EXIT
fi
mapfile -t mpi_flags < <(rmaop_mpiexec_flags)

rmaop_log "configuring a CPU-only build in $work"
if ! cmake -S "$RMAOP_ROOT" -B "$work" -DCMAKE_BUILD_TYPE=Release -DRMAOP_WITH_CUDA=OFF -DRMAOP_BUILD_TESTS=OFF \
  -DRMAOP_WARNINGS_AS_ERRORS=ON >"$work/configure.log" 2>&1; then
  cat "$work/configure.log" >&2
  rmaop_die "configuring with RMAOP_WITH_CUDA=OFF failed"
fi
grep -q 'CUDA toolkit found: OFF' "$work/configure.log" || rmaop_die "RMAOP_WITH_CUDA=OFF still found CUDA"
rmaop_log "building (library, tools, examples) with $JOBS jobs"
if ! cmake --build "$work" -j "$JOBS" >"$work/build.log" 2>&1; then
  grep -E 'error|undefined reference' "$work/build.log" >&2 || tail -n 40 "$work/build.log" >&2
  rmaop_die "the CPU-only build failed"
fi
halo="$(find "$work" -name rmaop-example-halo -type f -perm -u+x -print -quit)"
[ -n "$halo" ] || rmaop_die "the CPU-only build made no rmaop-example-halo"
rmaop_log "running $(basename "$halo") at 2 ranks"
mpiexec "${mpi_flags[@]}" -n 2 "$halo" || rmaop_die "$halo failed"
rmaop_log "CPU-only build OK"
