# Session 29: per check folder, per path and site, medians over the rounds of the run's own measurement per call
# against the model on its own path (predicted, warm part, cold fraction).  python3 2026-11-27-session29-sites.py DIR [deriv1d|bdiag]
# per path: median over rounds of each deriv1d/bdiag site: measured per call (run's own), model per call on own path
import json,glob,statistics as st,collections,sys
d=sys.argv[1]; prob=sys.argv[2] if len(sys.argv)>2 else 'deriv1d'
acc=collections.defaultdict(list)
n=len(glob.glob(d+'/probe-*.log'))
for r in range(1,n+1):
  try: rep=json.load(open(f'{d}/{prob}-{r}.json')); prof=json.load(open(f'{d}/profile-{r}.json'))
  except FileNotFoundError: continue
  P={q['name']:q for q in prof['paths']}
  for run in rep['runs']:
    p=run['path']; q=P[p]
    for s in run['sites']:
      own=[x for x in s['on_paths'] if x['path']==p][0]
      acc[(p,s['label'])].append((s['time_per_call']*1e6, own['predicted_time']*1e6, own['predicted_time_warm']*1e6, own['cold_fraction'], s['calls_per_iter'] if 'calls_per_iter' in s else 0))
for k,v in sorted(acc.items()):
  print(f"{k[0]:15s} {k[1]:28s} meas {st.median(x[0] for x in v):.3f} model {st.median(x[1] for x in v):.3f} warm {st.median(x[2] for x in v):.3f} f {st.median(x[3] for x in v):.3f} calls/it {v[0][4]}")
