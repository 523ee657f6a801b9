#!/usr/bin/env bash
# Builds rmaop, then
#  1. runs the demo (examples/demo.c) at 2 ranks on every communication path: the rma backend with each
#     epoch synchronization (fence, pscw, lock) over each transport (shm, mpi), and the twosided backend.
#     Each run does a ring halo exchange (rmaop_plan) and reductions (rmaop_vec_dot, rmaop_allreduce),
#     checks the results and prints median times in microseconds;
#  2. characterizes the machine with rmaop-roofline: a short probe of every path (host memory), then CGLS
#     on deriv1d and bdiag placed on the message roofline, with a verdict per path; the report files
#     (JSON, CSV, SVG) land in $BUILD_DIR/demo-roofline/.
#
#   scripts/demo.sh                 all paths, 2 ranks
#   NP=4 scripts/demo.sh -k 4096    NP ranks; arguments go to rmaop-demo (-k elements, --reps N)
#   ROOFLINE=0 scripts/demo.sh      skip part 2
#
# Installs missing Debian packages first when run as root (else prints the apt-get command and fails).
set -euo pipefail

RMAOP_SCRIPT=demo.sh
# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rmaop_setup_env
rmaop_setup_packages
rmaop_build

NP="${NP:-2}"
demo="$BUILD_DIR/examples/rmaop-demo"
[ -x "$demo" ] || rmaop_die "$demo was not built"
mapfile -t mpi_flags < <(rmaop_mpiexec_flags)

# backend sync transport ("-" = not used by that backend)
paths=(
  "rma fence shm" "rma pscw shm" "rma lock shm"
  "rma fence mpi" "rma pscw mpi" "rma lock mpi"
  "twosided - -"
)
failed=()
for p in "${paths[@]}"; do
  read -r backend sync transport <<<"$p"
  env_args=(RMAOP_BACKEND="$backend")
  if [ "$backend" = rma ]; then
    env_args+=(RMAOP_RMA_SYNC="$sync" RMAOP_RMA_TRANSPORT="$transport")
  fi
  echo
  echo "=== ${env_args[*]} mpiexec -n $NP rmaop-demo${*:+ $*}"
  if ! env "${env_args[@]}" mpiexec "${mpi_flags[@]}" -n "$NP" "$demo" "$@"; then
    failed+=("$p")
  fi
done

echo
if [ "${#failed[@]}" -gt 0 ]; then
  rmaop_log "FAILED paths: $(printf '[%s] ' "${failed[@]}")"
  exit 1
fi
rmaop_log "all ${#paths[@]} paths passed"

[ "${ROOFLINE:-1}" = 0 ] && exit 0
roofline="$BUILD_DIR/roofline/rmaop-roofline"
[ -x "$roofline" ] || rmaop_die "$roofline was not built"
out="$BUILD_DIR/demo-roofline"
mkdir -p "$out"
echo
echo "=== mpiexec -n $NP rmaop-roofline probe --quick --out $out/profile.json"
mpiexec "${mpi_flags[@]}" -n "$NP" "$roofline" probe --quick --out "$out/profile.json"
for p in "deriv1d 65536" "bdiag 512"; do
  read -r problem n <<<"$p"
  echo
  echo "=== mpiexec -n $NP rmaop-roofline run --problem $problem --n $n --niter 20 --profile $out/profile.json"
  mpiexec "${mpi_flags[@]}" -n "$NP" "$roofline" run --problem "$problem" --n "$n" --niter 20 \
    --profile "$out/profile.json" --out "$out/$problem"
done
echo
rmaop_log "roofline reports: $out/{profile.json,profile.svg,deriv1d.{json,csv,svg},bdiag.{json,csv,svg}}"
