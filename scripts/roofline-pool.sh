#!/usr/bin/env bash
# Pool the rounds of several scripts/roofline-check.sh folders into one check per problem: every round of every
# folder (PROBLEM-R.json reports, bench-PROBLEM-R.json and, where each round has one, again-PROBLEM-R.json),
# none left out, compared by `rmaop-roofline check` as if one check had run them all.
#
# Why: a CUDA-aware round on 2 x H200 costs ~60 s of device time and a device call may run 10 minutes, so a
# check of 16 rounds is two calls of 8 (with 6 or 7 rounds the 90 % intervals still crossed the bound). Pool
# whole folders, decided before they run: choosing rounds after seeing them is not a check.
#
#   scripts/roofline-pool.sh DIR [DIR ...]            prints the check per problem
#   POOL_OUT=PREFIX scripts/roofline-pool.sh DIR ...  also writes PREFIX-PROBLEM.txt (not $OUT: the device
#                                                     machine's scripts use OUT for a folder)
#   CENTER=mean scripts/roofline-pool.sh DIR ...      pool the rounds by their mean (default: median; as
#                                                     scripts/roofline-check.sh)
#
# Needs rmaop-roofline ($BUILD_DIR, default build/). Exit status: 1 on a missing or malformed folder or file (the
# message names it), else that of the checks (0: they ran; the verdict is the printed count, as for check).
set -euo pipefail

RMAOP_SCRIPT=roofline-pool.sh
dirs=()
for d in "$@"; do # resolve before rmaop_setup_env moves to the repository root
  [ -d "$d" ] || { echo "$RMAOP_SCRIPT: error: $d is not a folder (a scripts/roofline-check.sh output)" >&2; exit 1; }
  dirs+=("$(cd "$d" && pwd -P)")
done
out="${POOL_OUT:-}"
if [ -n "$out" ]; then
  [ -d "$(dirname "$out")" ] || { echo "$RMAOP_SCRIPT: error: POOL_OUT=$out: no folder $(dirname "$out")" >&2; exit 1; }
  out="$(cd "$(dirname "$out")" && pwd -P)/$(basename "$out")"
fi
# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
rmaop_setup_env
[ ${#dirs[@]} -ge 1 ] || rmaop_die "usage: scripts/roofline-pool.sh DIR [DIR ...] (scripts/roofline-check.sh folders)"
CENTER="${CENTER:-median}"
[[ "$CENTER" =~ ^(median|mean)$ ]] || rmaop_die "CENTER=$CENTER: expected median or mean"
roofline="$BUILD_DIR/roofline/rmaop-roofline"
[ -x "$roofline" ] || rmaop_die "$roofline was not built (run scripts/test.sh first)"
[ "$(printf '%s\n' "${dirs[@]}" | sort | uniq -d)" = "" ] || rmaop_die "a folder is named twice: its rounds would count twice"

# The "created" of the profile a report rests on (ISO 8601, UTC: compares as text); empty if it names none.
profile_created() { grep -o -m1 '"created": *"[^"]*"' "$1" | sed 's/.*"\([^"]*\)"$/\1/' || true; }

status=0
found=0
for problem in deriv1d bdiag; do
  reports="" benches="" again="" rounds=0 agains=0
  for d in "${dirs[@]}"; do
    # this folder's rounds of this problem, in round order
    mapfile -t rs < <(find "$d" -maxdepth 1 -name "bench-$problem-*.json" -printf '%f\n' |
      sed -n "s/^bench-$problem-\([0-9][0-9]*\)\.json$/\1/p" | sort -n)
    for r in "${rs[@]}"; do
      [ -f "$d/$problem-$r.json" ] || rmaop_die "$d/bench-$problem-$r.json has no report $d/$problem-$r.json"
      # roofline-check.sh does not empty its folder: a round whose report rests on a profile older than the
      # folder's first round's is left from an earlier, longer check there and must not be pooled with this one
      # (the reports carry their profile's "created", which survives copying; file times do not)
      created="$(profile_created "$d/$problem-$r.json")"
      [ "$r" != "${rs[0]}" ] || first="$created"
      [[ ! "$created" < "$first" ]] ||
        rmaop_die "$d/$problem-$r.json rests on a profile created $created, before round ${rs[0]}'s ($first):" \
          "a round left from an earlier check in the same folder"
      reports+="${reports:+,}$d/$problem-$r.json"
      benches+="${benches:+,}$d/bench-$problem-$r.json"
      if [ -f "$d/again-$problem-$r.json" ]; then
        again+="${again:+,}$d/again-$problem-$r.json"
        agains=$((agains + 1))
      fi
      rounds=$((rounds + 1))
    done
  done
  [ "$rounds" -gt 0 ] || continue
  found=1
  [ "$rounds" -le 64 ] || rmaop_die "$problem: $rounds rounds, more than rmaop-roofline check takes (64)"
  again_args=()
  if [ "$agains" -eq "$rounds" ]; then
    again_args=(--again "$again")
  elif [ "$agains" -gt 0 ]; then
    rmaop_log "$problem: $agains of $rounds rounds have a bench again; the comparison with it is left out"
  fi
  echo
  echo "=== $problem: $rounds rounds pooled from ${#dirs[@]} folder(s)"
  # tee with no file (POOL_OUT unset) only passes the table on
  "$roofline" check --center "$CENTER" --report "$reports" --bench "$benches" "${again_args[@]}" |
    tee ${out:+"$out-$problem.txt"} || status=1
done
[ "$found" = 1 ] || rmaop_die "no bench-deriv1d-R.json or bench-bdiag-R.json in ${dirs[*]}"
exit "$status"
