# Session 28: the host synced-timing offset (c1d5ddf) recomputed on a check folder's own rounds.
#   python3 2026-11-26-session28-offset.py add DIR     reports written without it (before c1d5ddf): with it
#   python3 2026-11-26-session28-offset.py remove DIR  reports written with it: without it (the model before)
# Per plan site: shift = max(r * t, t + off) - t, off = insert - T(1, 8 B), r = min(1, insert / T(1, 8 B)), t the
# fit's T(n, m) (roofline/classify.c plan_extra). Pooled medians of the reports against the bench files, as
# `rmaop-roofline check` pools them.
import glob, json, os, statistics as st, sys


def fit_time(fit, n, m):
    pcs = fit['pieces']
    pc = next((x for x in pcs if x['upto'] is None or m <= x['upto']), pcs[-1])
    return fit['alpha'] + n * pc['o'] + n * m / pc['beta']


def shift(q, s):
    ins = q.get('accumulate', {}).get('insert', 0)
    t18 = fit_time(q['fit'], 1, 8)
    if s['kind'] != 'plan' or s['messages'] <= 0 or not ins > 0 or not t18 > 0:
        return 0
    t = fit_time(q['fit'], s['messages'], s['bytes_per_message'])
    return max(min(1, ins / t18) * t, t + ins - t18) - t


def main(mode, d):
    sign = 1 if mode == 'add' else -1
    rounds = len(glob.glob(d + '/probe-*.log'))
    for prob in ['deriv1d', 'bdiag']:
        written, other, bench = {}, {}, {}
        for r in range(1, rounds + 1):
            try:
                rep = json.load(open(f'{d}/{prob}-{r}.json'))
                prof = json.load(open(f'{d}/profile-{r}.json'))
                b = json.load(open(f'{d}/bench-{prob}-{r}.json'))
            except FileNotFoundError:
                continue
            paths = {q['name']: q for q in prof['paths']}
            for x in b['paths']:
                bench.setdefault(x['path'], []).append(x['synchronized_comm_per_iter_seconds'])
            for run in rep['runs']:
                p = run['path']
                w = o = 0
                for s in run['sites']:
                    own = next(x for x in s['on_paths'] if x['path'] == p)
                    w += s['calls_per_iter'] * own['predicted_time']
                    o += s['calls_per_iter'] * (own['predicted_time'] + sign * shift(paths[p], s))
                written.setdefault(p, []).append(w)
                other.setdefault(p, []).append(o)
        out, within, total = [], [0, 0], [0, 0]
        for p in written:
            m = st.median(bench[p])
            e = [st.median(written[p]) / m - 1, st.median(other[p]) / m - 1]
            for i in range(2):
                within[i] += abs(e[i]) <= 0.25
                total[i] += abs(e[i]) * 100
            out.append('%s %+.0f→%+.0f' % (p.replace('rma.', ''), 100 * e[0], 100 * e[1]))
        label = 'as written→with the shift' if mode == 'add' else 'as written (shift)→without'
        print(os.path.basename(d.rstrip('/')), prob, '%s: within %d→%d, sum|err| %.0f→%.0f |' %
              (label, within[0], within[1], total[0], total[1]), ' '.join(out))


if __name__ == '__main__':
    if len(sys.argv) < 3 or sys.argv[1] not in ('add', 'remove'):
        sys.exit('usage: 2026-11-26-session28-offset.py add|remove DIR...')
    for d in sys.argv[2:]:
        main(sys.argv[1], d)
