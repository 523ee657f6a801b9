# Session 28: per path, the share of its 8 B epoch penalty (cold.epoch) that CGLS deriv1d's halos paid above the
# 8 B epoch timed as solver sites (accumulate insert), medians over a check folder's reports, against the share the
# model charged (the profile's epoch curve at the reuse distance).  python3 2026-11-26-session28-halo.py DIR...
import json,glob,statistics as st,collections,sys
for d in sys.argv[1:]:
  acc=collections.defaultdict(list)
  n=len(glob.glob(d+'/probe-*.log'))
  for r in range(1,n+1):
    try: rep=json.load(open(f'{d}/deriv1d-{r}.json')); prof=json.load(open(f'{d}/profile-{r}.json'))
    except FileNotFoundError: continue
    P={q['name']:q for q in prof['paths']}
    for run in rep['runs']:
      p=run['path']; q=P[p]; ins=q['accumulate']['insert']; pen=q['cold']['epoch']['penalty']
      for s in run['sites']:
        if s['kind']=='plan':
          own=[x for x in s['on_paths'] if x['path']==p][0]
          acc[p].append(((s['time_per_call']-ins)/pen, own['cold_fraction'], s['time_per_call']-ins))
  print(d, ' '.join(f"{p.replace('rma.','')}: paid {st.median(x[0] for x in v):.2f} model {st.median(x[1] for x in v):.2f} ({st.median(x[2] for x in v)*1e6:.2f}us)" for p,v in sorted(acc.items())))
