#!/usr/bin/env python3
# Session 34 call 3: per launch (plain / nobalance), per second after the launch: NUMA hinting faults and pages
# migrated (system-wide /proc/vmstat deltas) beside rmaop-bench's per-second medians of the timed (whole
# iteration) and synchronized (messaging) repeats of rma.lock.mpi and twosided, seconds after MPI_Init.
#   python3 2026-11-27-session34-numa.py DIR   (DIR: exp.tgz unpacked)
import json, os, statistics, sys

d = sys.argv[1]
runs = sorted(f[4:-5] for f in os.listdir(d) if f.startswith('rep-') and f.endswith('.json'))
for run in sorted(runs, key=lambda r: (r.split('-')[1], r.split('-')[0])):
    t0 = float(open(f'{d}/t-{run}.txt').read().split()[1])
    faults = {}
    prev = None
    for line in open(f'{d}/vm-{run}.txt'):
        w = line.split()
        if len(w) < 9:
            continue
        t, kv = float(w[0]), dict(zip(w[1::2], map(int, w[2::2])))
        if prev:
            s = int(t - t0)
            a = faults.setdefault(s, [0, 0])
            a[0] += kv['numa_hint_faults'] - prev['numa_hint_faults']
            a[1] += kv['numa_pages_migrated'] - prev['numa_pages_migrated']
        prev = kv
    b = json.load(open(f'{d}/rep-{run}.json'))
    print(f"== {run}: warm-up from {b['warmup']['start_seconds']:.2f} s after MPI_Init")
    per = {}
    for p in b['paths']:
        if p['path'] not in ('rma.lock.mpi', 'twosided'):
            continue
        for t, s in zip(p['iter_seconds']['all'], p['iter_seconds']['start_seconds']):
            per.setdefault(int(s), {}).setdefault(p['path'] + ' it', []).append(1e6 * t)
        r = p['synchronized_repeats']
        for t, s in zip(r['comm_per_iter_seconds'], r['start_seconds']):
            per.setdefault(int(s), {}).setdefault(p['path'] + ' sync', []).append(1e6 * t)
    keys = ['rma.lock.mpi it', 'twosided it', 'rma.lock.mpi sync', 'twosided sync']
    print('  s  hintfaults migrated | ' + ' | '.join(f'{k:>17s}' for k in keys))
    for s in range(0, max(list(per) + list(faults)) + 1):
        f = faults.get(s, [0, 0])
        row = per.get(s, {})
        cells = ' | '.join(f"{statistics.median(row[k]):9.1f} ({len(row[k]):3d})" if k in row else ' ' * 17 for k in keys)
        print(f'{s:3d} {f[0]:10d} {f[1]:8d} | {cells}')
