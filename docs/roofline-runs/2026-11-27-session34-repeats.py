#!/usr/bin/env python3
# Session 34: rmaop-bench --trace-sync --repeat R with per-repeat starts ("synchronized_repeats"). Per file and
# path: the synchronized time per iteration of the first 5 repeats, of repeats started in each second of the
# launch, and of the last half; then the share of repeats near the path's slow and fast levels; and the timed
# (unsynchronized, whole-iteration) repeats, which run before the synchronized ones, first 5 against the last half.
#   python3 2026-11-27-session34-repeats.py rep-*.json
import json, statistics, sys

def med(v):
    return statistics.median(v) if v else float('nan')

for f in sys.argv[1:]:
    d = json.load(open(f))
    print(f"== {f}: {d['problem']} n={d['n']} repeat={d['repeat']}")
    for p in d['paths']:
        r = p.get('synchronized_repeats')
        if not r:
            continue
        t = [1e6 * x for x in r['comm_per_iter_seconds']]
        s = r['start_seconds']
        lo, hi = min(t), max(t)
        secs = {}
        for ti, si in zip(t, s):
            secs.setdefault(int(si), []).append(ti)
        bysec = '  '.join(f"{k}s:{med(v):6.1f}({len(v)})" for k, v in sorted(secs.items()))
        fast = sum(1 for x in t if x < 1.2 * lo)
        print(f"  {p['path']:16s} median {1e6 * p['synchronized_comm_per_iter_seconds']:7.2f} us  first5 {med(t[:5]):7.2f}"
              f"  last half {med(t[len(t) // 2:]):7.2f}  min {lo:6.2f} max {hi:7.2f}  within 1.2x of min: {fast}/{len(t)}"
              f"  starts {s[0]:.2f}..{s[-1]:.2f} s")
        print(f"    by second: {bysec}")
        it = [1e6 * x for x in p['iter_seconds']['all']]  # the timed (unsynchronized) repeats, which ran first
        print(f"    timed repeats (whole iteration): first5 {med(it[:5]):7.2f}  last half {med(it[len(it) // 2:]):7.2f}"
              f"  min {min(it):7.2f} us")
        if 'start_seconds' in p['iter_seconds']:  # session 34 on
            secs = {}
            for ti, si in zip(it, p['iter_seconds']['start_seconds']):
                secs.setdefault(int(si), []).append(ti)
            print('    timed, by second: ' + '  '.join(f"{k}s:{med(v):6.1f}({len(v)})" for k, v in sorted(secs.items())))
