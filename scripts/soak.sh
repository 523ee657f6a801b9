#!/usr/bin/env bash
# The soak run (not a CI test; docs/PERFORMANCE.md, "Soak", has its result): rmaop-soak on every host path at 2,
# 3 and 4 ranks, 10^6 epochs and 10^4 CGLS iterations each, first from the release build, then from the
# AddressSanitizer build with leak checking on. Leaks whose allocation stack has no frame in rmaop's sources are
# Open MPI's (most come from its components, unloaded before the report, so their frames are "<unknown module>");
# any leak with a frame in rmaop's sources fails the run.
#
#   scripts/soak.sh [BUILD_DIR] [ASAN_BUILD_DIR]       (defaults: build, build-sanitize; both must hold rmaop-soak)
#   EPOCHS=1000000 ITERS=10000 NPS="2 3 4" scripts/soak.sh
#
# Logs go to BUILD_DIR/soak/. Exit status 1 when a soak run failed (a wrong value or history, a failed call) or
# leaked from rmaop.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
asan=${2:-$here/build-sanitize}
epochs=${EPOCHS:-1000000}
iters=${ITERS:-10000}
nps=${NPS:-2 3 4}
out="$build/soak"
mkdir -p "$out"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
status=0
for exe in "$build/bench/rmaop-soak" "$asan/bench/rmaop-soak"; do
  [ -x "$exe" ] || { echo "soak.sh: $exe is missing (build the rmaop-soak target)" >&2; exit 1; }
done
for np in $nps; do
  log="$out/soak.np$np.log"
  echo "== release build, $np ranks: $log"
  if ! mpiexec -n "$np" --oversubscribe "$build/bench/rmaop-soak" --epochs "$epochs" --iters "$iters" > "$log" 2>&1; then
    echo "soak.sh: rmaop-soak failed at $np ranks (see $log)" >&2
    status=1
  fi
  cat "$log"
done
for np in $nps; do
  log="$out/soak-asan.np$np.log"
  echo "== AddressSanitizer build, leak checking on, $np ranks: $log"
  # exitcode=0: the leak report is judged below, since Open MPI's own leaks are reported too.
  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$here/bench/soak.supp:exitcode=0" \
    mpiexec -n "$np" --oversubscribe -x ASAN_OPTIONS -x LSAN_OPTIONS "$asan/bench/rmaop-soak" --epochs "$epochs" \
    --iters "$iters" > "$log" 2>&1 || { echo "soak.sh: rmaop-soak (sanitized) failed at $np ranks (see $log)" >&2; status=1; }
  grep -E '^path|epoch|cgls' "$log"
  # A leak is rmaop's when a frame of its allocation stack lies in rmaop's sources.
  ours=$(awk -v src="$here/" '/^(Direct|Indirect) leak/ {stack = $0; keep = 0; next}
                              /^ +#[0-9]+/ && stack != "" {stack = stack "\n" $0; if (index($0, src)) keep = 1; next}
                              stack != "" {if (keep) print stack; stack = ""}' "$log")
  total=$(grep -E '^SUMMARY: AddressSanitizer: [0-9]+ byte' "$log" | head -1)
  if [ -n "$ours" ]; then
    echo "soak.sh: leaks from rmaop at $np ranks:" >&2
    echo "$ours" >&2
    status=1
  else
    echo "leaks from rmaop's sources: none (${total:-no leak report}; the rest is Open MPI's)"
  fi
done
exit $status
