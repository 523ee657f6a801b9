#!/usr/bin/env python3
"""Session 35: what a device bench of 100 repeats says against what its first 5 repeats would have said.

Reads a scripts/roofline-check.sh directory (profile-R, PROBLEM-R.json reports, bench-PROBLEM-R.json with
--trace-sync) and prints per problem and path: the model (median over rounds of the report's
predicted_comm_per_iter), the bench's measurement as `rmaop-roofline check` takes it (median over rounds of each
bench's median synchronized messaging over all its repeats), the same from each bench's first 5 and last 5
synchronized repeats only (the length of a session-34 bench, at the start and at the end of this one), and the
model's error against each. All in the same launches, so the three measurements are side by side. Then each
launch's median (bench and bench again, round by round): where a path's launches read two values with the
repeats of each launch at one of them, the state is a launch's, and only more rounds (launches) can pool it.

    python3 2026-11-27-session35-repeats.py CHECK_DIR [CHECK_DIR ...]
"""
import glob
import json
import os
import re
import statistics
import sys


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main(dirs):
    for d in dirs:
        for problem in ("deriv1d", "bdiag"):
            rounds = sorted(int(re.search(r"-(\d+)\.json$", f).group(1))
                            for f in glob.glob(os.path.join(d, f"bench-{problem}-*.json")))
            if not rounds:
                continue
            model, allr, first, last, span, launches = {}, {}, {}, {}, {}, {}
            for r in rounds:
                rep = json.load(open(os.path.join(d, f"{problem}-{r}.json")))
                for run in rep["runs"]:
                    model.setdefault(run["path"], []).append(run["predicted_comm_per_iter"][run["path"]])
                for kind in ("bench", "again"):
                    f = os.path.join(d, f"{kind}-{problem}-{r}.json")
                    if not os.path.exists(f):
                        continue
                    b = json.load(open(f))
                    for p in b["paths"]:
                        name = p["path"] + (".device" if b.get("memory") == "device" else "")
                        t = p["synchronized_repeats"]["comm_per_iter_seconds"]
                        launches.setdefault(name, []).append(f"{median(t) * 1e6:.2f}" + ("" if kind == "bench" else "a"))
                bench = json.load(open(os.path.join(d, f"bench-{problem}-{r}.json")))
                for p in bench["paths"]:
                    s = p["synchronized_repeats"]
                    t = s["comm_per_iter_seconds"]
                    # the report names a path on device memory with a ".device" suffix (roofline/check.c)
                    name = p["path"] + (".device" if bench.get("memory") == "device" else "")
                    allr.setdefault(name, []).append(median(t))
                    first.setdefault(name, []).append(median(t[:5]))
                    last.setdefault(name, []).append(median(t[-5:]))
                    st = s["start_seconds"]
                    span.setdefault(name, []).append((st[0], st[-1]))
            print(f"=== {d}: {problem}, {len(rounds)} rounds, us of messaging per iteration (medians over rounds)")
            print(f"{'path':24s} {'model':>8s} {'all':>8s} {'err':>6s} {'first5':>8s} {'err':>6s} "
                  f"{'last5':>8s} {'err':>6s}  synchronized repeats (s after MPI_Init, median)")
            for path in allr:
                m = median(model.get(path, [])) * 1e6
                a, f5, l5 = (median(x[path]) * 1e6 for x in (allr, first, last))
                s0 = median([s[0] for s in span[path]])
                s1 = median([s[1] for s in span[path]])
                print(f"{path:24s} {m:8.2f} {a:8.2f} {m / a - 1:+6.0%} {f5:8.2f} {m / f5 - 1:+6.0%} "
                      f"{l5:8.2f} {m / l5 - 1:+6.0%}  {s0:.1f} .. {s1:.1f}")
            print("each launch's median, round by round (a: the bench again):")
            for path in allr:
                print(f"  {path:22s} " + " ".join(launches[path]))
            print()


if __name__ == "__main__":
    main(sys.argv[1:] or ["."])
