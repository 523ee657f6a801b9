# Issue 6, session 32: a check's reductions re-priced offline from the probe's reduction points (linear in bytes
# between the two measured counts around a site's, the fit beyond them; device profiles: the after-dot shift on the
# same curve) against the fit the reports used; medians over the rounds as rmaop-roofline check takes them.
#   python3 2026-11-27-session32-reduce-points.py CHECK_DIR
import json, glob, re, statistics as S, sys
d = sys.argv[1]
def key(f): return int(re.findall(r'-(\d+)\.json', f)[0])
profs = {key(f): json.load(open(f)) for f in glob.glob(f'{d}/profile-*.json')}
def interp(pts, b):
    xs = [(p['count'] * 8, p['t']) for p in pts]
    xs.sort()
    if b <= xs[0][0]: return xs[0][1]
    for (x0, t0), (x1, t1) in zip(xs, xs[1:]):
        if b <= x1: return t0 + (t1 - t0) * (b - x0) / (x1 - x0)
    return None
def fitv(f, b): return f['alpha'] + b / f['beta']
for prob in ('deriv1d', 'bdiag'):
    model, new, meas = {}, {}, {}
    for f in glob.glob(f'{d}/{prob}-*.json'):
        prof = profs[key(f)]
        P = {q['name']: q for q in prof['paths']}
        for run in json.load(open(f))['runs']:
            path = run['path']; t = run['predicted_comm_per_iter'][path]; dt = 0
            for s in run['sites']:
                if s['kind'] != 'reduce' or path not in P or 'reduce' not in P[path]: continue
                b = s['bytes_per_message']; r = P[path]['reduce']
                i = interp(r['points'], b)
                if i is None: continue
                if prof['memory'] == 'device' and 'cold' in P[path] and 'reduce' in P[path]['cold']:
                    i24 = interp(r['points'], 24)
                    dt += s['calls_per_iter'] * ((i - fitv(r['fit'], b)) - (i24 - fitv(r['fit'], 24)))
                else:
                    dt += s['calls_per_iter'] * (i - fitv(r['fit'], b))
            model.setdefault(path.replace('.device',''), []).append(t); new.setdefault(path.replace('.device',''), []).append(t + dt)
    for f in glob.glob(f'{d}/bench-{prob}-*.json'):
        for p in json.load(open(f))['paths']:
            meas.setdefault(p['path'].replace('.device',''), []).append(p['synchronized_comm_per_iter_seconds'])
    for nm, m in (('fit', model), ('interp', new)):
        e = {p: S.median(m[p]) / S.median(meas[p]) - 1 for p in m if p in meas}
        print(d, prob, nm, sum(abs(x) <= .25 for x in e.values()), '/', len(e), ' '.join(f'{p.replace("rma.","")} {x*100:+.0f}' for p, x in sorted(e.items())))
