#!/usr/bin/env bash
# CGLS per-iteration time: rmaop's paths next to PETSc's KSPCGLS (MPIAIJ, -sf_type basic|window|neighbor)
# on the same deriv1d operator, in one run, rounds interleaved so machine noise hits every path alike.
# Then rmaop-bench on lap2d and bdiag. Usage: bench/compare_petsc.sh [BUILD_DIR] [OUT_DIR]
# Needs petsc-dev (apt-get install petsc-dev; about 1 GB, so it is not part of scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
out=${2:-$here/build/bench-results}
np=${NP:-2}
rounds=${ROUNDS:-3}
n=${N:-1048576}
niter=${NITER:-50}
mkdir -p "$out"
if ! pkg-config --exists PETSc; then
  echo "compare_petsc.sh: PETSc not found; install it with: apt-get install -y petsc-dev" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# shellcheck disable=SC2046 # pkg-config prints several flags
mpicc -O2 "$here/bench/petsc/petsc_cgls.c" $(pkg-config --cflags --libs PETSc) -lm -o "$out/petsc_cgls"
run="mpiexec -n $np --oversubscribe"
bench="$build/bench/rmaop-bench"
log="$out/compare_petsc.log"
: > "$log"
for r in $(seq 1 "$rounds"); do
  echo "== round $r" | tee -a "$log"
  $run "$bench" --problem deriv1d --n "$n" --niter "$niter" --repeat 3 --backends rma,twosided \
    --sync fence,pscw,lock --json "$out/deriv1d.round$r.json" | tee -a "$log"
  for sf in basic window neighbor; do
    $run "$out/petsc_cgls" -n "$n" -niter "$niter" -repeat 3 -sf_type "$sf" | tee -a "$log"
  done
done
echo "== summary: median over rounds of each path's median us/iteration (deriv1d n=$n, $np ranks)" | tee -a "$log"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
{
  for path in $(grep -E '^(rma\.|twosided)' "$log" | awk '{ print $1 }' | sort -u); do
    vals=$(grep -E "^$path " "$log" | awk '{ print $2 }' | tr '\n' ' ')
    printf '%-22s %10.2f us/iter  (rounds: %s)\n' "$path" "$(echo "$vals" | median)" "$vals"
  done
  for sf in basic window neighbor; do
    vals=$(grep "^petsc-cgls sf_type=$sf " "$log" | sed 's/.*median_us_per_iter=\([0-9.]*\).*/\1/' | tr '\n' ' ')
    printf '%-22s %10.2f us/iter  (rounds: %s)\n' "petsc.$sf" "$(echo "$vals" | median)" "$vals"
  done
} | tee -a "$log"
for p in "lap2d 2048" "bdiag 1024"; do
  # shellcheck disable=SC2086 # "problem size" splits into two words
  set -- $p
  $run "$bench" --problem "$1" --n "$2" --niter "$niter" --repeat 5 --backends rma,twosided --sync fence,pscw,lock \
    --json "$out/$1.json" | tee -a "$log"
done
