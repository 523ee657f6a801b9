#!/usr/bin/env python3
# Session 34 call 6: do a path's slow synchronized repeats coincide with a slower CPU? Per file and path: the
# CPU reference (rmaop-bench's multiply-add chain and pointer chase, timed right before each synchronized repeat)
# in the repeats near the path's fastest time (< 1.15x its 5th percentile) against the others; the rank
# correlation of messaging time with each reference; and per second after MPI_Init, the medians side by side.
#   python3 2026-11-27-session34-cpu.py rep-*.json
import json, statistics, sys

def med(v):
    return statistics.median(v) if v else float('nan')

def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0] * len(v)
    for k, i in enumerate(order):
        r[i] = k
    return r

def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = med(ra), med(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float('nan')

for f in sys.argv[1:]:
    d = json.load(open(f))
    print(f"== {f}")
    for p in d['paths']:
        r = p['synchronized_repeats']
        t = [1e6 * x for x in r['comm_per_iter_seconds']]
        alu = [1e6 * x for x in r['cpu_alu_seconds']]
        chase = [1e6 * x for x in r['cpu_chase_seconds']]
        p5 = sorted(t)[len(t) // 20]
        fast = [i for i in range(len(t)) if t[i] < 1.15 * p5]
        slow = [i for i in range(len(t)) if t[i] >= 1.15 * p5]
        print(f"  {p['path']:14s} comm fast {med([t[i] for i in fast]):6.1f} ({len(fast)}) slow {med([t[i] for i in slow]):6.1f} ({len(slow)})"
              f" | alu fast {med([alu[i] for i in fast]):6.1f} slow {med([alu[i] for i in slow]):6.1f}"
              f" | chase fast {med([chase[i] for i in fast]):6.1f} slow {med([chase[i] for i in slow]):6.1f} us"
              f" | rank corr comm~alu {spearman(t, alu):+.2f} comm~chase {spearman(t, chase):+.2f}")
        secs = {}
        for i, s in enumerate(r['start_seconds']):
            secs.setdefault(int(s), []).append(i)
        print('    by second (comm/alu/chase): ' + '  '.join(
            f"{k}s:{med([t[i] for i in v]):.0f}/{med([alu[i] for i in v]):.0f}/{med([chase[i] for i in v]):.0f}"
            for k, v in sorted(secs.items())))
