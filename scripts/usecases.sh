#!/usr/bin/env bash
# Builds rmaop, then runs the PyLops-MPI use-case examples at full size on one path and places their
# communication on the message roofline:
#  1. a short rmaop-roofline probe of the host paths (skipped when $PROFILE names an existing profile);
#  2. each example (examples/poststack.c; examples/mdd.c where it is built) with its trace written to
#     $BUILD_DIR/usecases/<name>-trace.json: time to solution, iterations, error, communication per site;
#  3. rmaop-roofline run --trace on each trace: every site on the roofline with its verdict (latency-,
#     bandwidth- or overhead-bound), reports in $BUILD_DIR/usecases/<name>.{json,csv,svg}.
#
#   scripts/usecases.sh                           2 ranks, the default path (RMAOP_* variables pick another)
#   NP=4 RMAOP_BACKEND=twosided scripts/usecases.sh
#   PROFILE=build/demo-roofline/profile.json scripts/usecases.sh     reuse a profile
#
# Installs missing Debian packages first when run as root (else prints the apt-get command and fails).
set -euo pipefail

RMAOP_SCRIPT=usecases.sh
# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rmaop_setup_env
rmaop_setup_packages
rmaop_build

NP="${NP:-2}"
mapfile -t mpi_flags < <(rmaop_mpiexec_flags)
roofline="$BUILD_DIR/roofline/rmaop-roofline"
[ -x "$roofline" ] || rmaop_die "$roofline was not built"
out="$BUILD_DIR/usecases"
mkdir -p "$out"

profile="${PROFILE:-$out/profile.json}"
if [ ! -f "$profile" ]; then
  echo "=== mpiexec -n $NP rmaop-roofline probe --quick --out $profile"
  mpiexec "${mpi_flags[@]}" -n "$NP" "$roofline" probe --quick --out "$profile"
fi

# name, program, arguments
cases=("poststack rmaop-example-poststack --ny 64 --nx 64 --nz 200 --niter 40"
       "mdd rmaop-example-mdd")
failed=()
for c in "${cases[@]}"; do
  read -r name prog args <<<"$c"
  exe="$BUILD_DIR/examples/$prog"
  if [ ! -x "$exe" ]; then
    rmaop_log "$name: $exe was not built, skipped"
    continue
  fi
  echo
  # shellcheck disable=SC2086
  echo "=== mpiexec -n $NP $prog $args --trace-out $out/$name-trace.json"
  # shellcheck disable=SC2086
  if ! mpiexec "${mpi_flags[@]}" -n "$NP" "$exe" $args --trace-out "$out/$name-trace.json"; then
    failed+=("$name")
    continue
  fi
  echo "=== rmaop-roofline run --trace $out/$name-trace.json --profile $profile --out $out/$name"
  "$roofline" run --trace "$out/$name-trace.json" --profile "$profile" --out "$out/$name" || failed+=("$name roofline")
done

echo
if [ "${#failed[@]}" -gt 0 ]; then
  rmaop_log "FAILED: ${failed[*]}"
  exit 1
fi
rmaop_log "reports: $out/"
