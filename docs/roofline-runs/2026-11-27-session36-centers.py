#!/usr/bin/env python3
"""Session 36: every stored roofline check re-read by both centers over its rounds.

For each scripts/roofline-check.sh folder given (PROBLEM-R.json reports, bench-PROBLEM-R.json), per problem and
path: the model's predicted_comm_per_iter and the bench's synchronized_comm_per_iter_seconds of each round, pooled
by the median over the rounds (what `rmaop-roofline check` did before session 36, and does by default) and by the
mean (`--center mean`); prints per folder how many paths are within 25 % by each, and the paths beyond it. Then,
where the folder has again-PROBLEM-R.json (the bench run a second time in each round), the bench against itself
by each center: paths within 25 % and the mean |gap| (no model involved: which center reproduces).
    python3 docs/roofline-runs/2026-11-27-session36-centers.py LABEL=DIR [LABEL=DIR ...]
"""
import glob
import json
import os
import re
import statistics
import sys


def rounds_of(d, problem):
    """Per round: {path: (predicted, measured)}, report and bench of the same round."""
    out = []
    rs = sorted(int(re.search(r"-(\d+)\.json$", f).group(1)) for f in glob.glob(os.path.join(d, f"bench-{problem}-*.json")))
    for r in rs:
        rep = json.load(open(os.path.join(d, f"{problem}-{r}.json")))
        bench = json.load(open(os.path.join(d, f"bench-{problem}-{r}.json")))
        suffix = ".device" if bench.get("memory") == "device" else ""  # the report's names for device paths
        measured = {p["path"] + suffix: p["synchronized_comm_per_iter_seconds"] for p in bench["paths"]}
        out.append({run["path"]: (run["predicted_comm_per_iter"][run["path"]], measured[run["path"]])
                    for run in rep["runs"] if run["path"] in measured})
    return out


def again_gaps(d, problem):
    """Per path: (|again/bench - 1| by medians over the rounds, by means), for rounds with both files."""
    bench, again = {}, {}
    for f in sorted(glob.glob(os.path.join(d, f"again-{problem}-*.json"))):
        r = re.search(r"-(\d+)\.json$", f).group(1)
        for kind, acc in (("bench", bench), ("again", again)):
            for p in json.load(open(os.path.join(d, f"{kind}-{problem}-{r}.json")))["paths"]:
                acc.setdefault(p["path"], []).append(p["synchronized_comm_per_iter_seconds"])
    return [(abs(statistics.median(again[k]) / statistics.median(bench[k]) - 1),
             abs(statistics.mean(again[k]) / statistics.mean(bench[k]) - 1)) for k in bench]


def main(args):
    print(f"{'check':34s} {'rounds':>6s} {'median':>7s} {'mean':>7s}  paths beyond 25 % (median / mean)")
    for arg in args:
        label, d = arg.split("=", 1)
        n = within_median = within_mean = 0
        misses = []
        nrounds = 0
        for problem in ("deriv1d", "bdiag"):
            rows = rounds_of(d, problem)
            if not rows:
                continue
            nrounds = len(rows)
            for path in rows[0]:
                p = [r[path][0] for r in rows if path in r]
                m = [r[path][1] for r in rows if path in r]
                e_med = statistics.median(p) / statistics.median(m) - 1
                e_mean = statistics.mean(p) / statistics.mean(m) - 1
                n += 1
                within_median += abs(e_med) <= 0.25
                within_mean += abs(e_mean) <= 0.25
                if abs(e_med) > 0.25 or abs(e_mean) > 0.25:
                    misses.append(f"{problem} {path} {e_med:+.0%} / {e_mean:+.0%}")
        print(f"{label:34s} {nrounds:6d} {within_median:3d}/{n:<3d} {within_mean:3d}/{n:<3d}  {'; '.join(misses)}")
    print(f"\nthe bench against itself (bench again, same rounds): paths within 25 % and mean |gap|")
    print(f"{'check':34s} {'median':>7s} {'mean':>7s}  {'|gap| median':>12s} {'mean':>6s}")
    for arg in args:
        label, d = arg.split("=", 1)
        g = again_gaps(d, "deriv1d") + again_gaps(d, "bdiag")
        if g:
            n = len(g)
            print(f"{label:34s} {sum(x <= 0.25 for x, _ in g):3d}/{n:<3d} {sum(y <= 0.25 for _, y in g):3d}/{n:<3d}  "
                  f"{statistics.mean(x for x, _ in g):11.1%} {statistics.mean(y for _, y in g):6.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
