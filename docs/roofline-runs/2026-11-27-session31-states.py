# Issue 6, session 31: a check's rounds split by the probe's own state: the ranks' shared-memory latency
# (rma.lock.shm's fitted L = T(1, 8 B); < 0.3 us: "shared", the two vCPUs on one core or its caches; else
# "apart"; with "share": the probe's own sharing test instead, cache.share_ratio >= 1.2, in profiles that have it).
# Per state and path: median model / median rmaop-bench --trace-sync (synchronized_comm_per_iter_seconds),
# as rmaop-roofline check compares them. With "fullcold": the shared rounds priced with every site fully cold
# (warm + the full sweep's penalty per call), from the reports' own per-site numbers.
#   python3 2026-11-27-session31-states.py CHECK_DIR [fullcold | share]
import json, glob, re, statistics as S, sys

d = sys.argv[1]
fullcold = len(sys.argv) > 2 and sys.argv[2] == 'fullcold'
by_share = len(sys.argv) > 2 and sys.argv[2] == 'share'


def key(f):
    return int(re.findall(r'-(\d+)\.json', f)[0])


state = {}
for f in glob.glob(f'{d}/profile-*.json'):
    prof = json.load(open(f))
    if by_share:
        state[key(f)] = 'shared' if prof['cache'].get('share_ratio', 0) >= 1.2 else 'apart'
        continue
    q = [q for q in prof['paths'] if q['name'] == 'rma.lock.shm'][0]
    state[key(f)] = 'shared' if q['derived']['L'] < 0.3e-6 else 'apart'
for s in ('shared', 'apart'):
    print(s, 'rounds:', ' '.join(str(k) for k in sorted(k for k in state if state[k] == s)))


def predicted(run):
    if not fullcold:
        return run['predicted_comm_per_iter'][run['path']]
    t = 0
    for s in run['sites']:
        op = [o for o in s['on_paths'] if o['path'] == run['path']][0]
        t += s['calls_per_iter'] * (op['predicted_time_warm'] + op['cold_penalty'])
    return t


for prob in ('deriv1d', 'bdiag'):
    model, meas = {}, {}
    for f in glob.glob(f'{d}/{prob}-*.json'):
        for run in json.load(open(f))['runs']:
            model.setdefault((state[key(f)], run['path']), []).append(predicted(run))
    for f in glob.glob(f'{d}/bench-{prob}-*.json'):
        for p in json.load(open(f))['paths']:
            meas.setdefault((state[key(f)], p['path']), []).append(p['synchronized_comm_per_iter_seconds'])
    for s in ('apart', 'shared'):
        if fullcold and s == 'apart':
            continue
        rows, within = [], 0
        for (st, p), v in sorted(model.items()):
            if st != s or (st, p) not in meas:
                continue
            m, x = S.median(v), S.median(meas[(st, p)])
            within += abs(m / x - 1) <= 0.25
            rows.append(f'{p} {m * 1e6:.2f}/{x * 1e6:.2f} ({(m / x - 1) * 100:+.0f}%)')
        if rows:
            print(f'{prob} {s}{" fully cold" if fullcold else ""}: {within} of {len(rows)} within 25 %:', '; '.join(rows))
