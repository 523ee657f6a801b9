# Same rounds, two models: "new" = the report as written (4cb52ac, split by measured rho), "old" = each reduction's
# fraction recomputed at its reuse distance alone (the model before 4cb52ac). Pooled medians against the bench.
import json,math,statistics as st,sys,glob,os
def fracs(ts,warm):
  n=len(ts); full=ts[-1]-warm
  if not (warm>0) or not (full>=0.5*warm): return None
  g=[0]*n; g[-1]=1
  for i in range(n-2,-1,-1): g[i]=min(g[i+1],max(0,(ts[i]-warm)/full))
  return g
def cf(bs,ts,warm,d):
  g=fracs(ts,warm)
  if g is None: return None
  if d>=bs[-1]: return 1
  if d<=bs[0]: return g[0]
  i=1
  while bs[i]<d: i+=1
  w=math.log(d/bs[i-1])/math.log(bs[i]/bs[i-1]); return g[i-1]+w*(g[i]-g[i-1])
def pathfrac(prof,pname,d):
  p=[x for x in prof['paths'] if x['name']==pname][0]['cold']
  if p.get('reduce_curve'):
    bs=[x['bytes'] for x in p['reduce_curve']]+[p['sweep_bytes']]; ts=[x['t'] for x in p['reduce_curve']]+[p['reduce']['cold']]
    f=cf(bs,ts,p['reduce']['warm'],d)
    if f is not None: return f
  c=prof['cache']; bs=[x['bytes'] for x in c['curve']]; ts=[x['t'] for x in c['curve']]
  f=cf(bs,ts,c['curve_warm'],d)
  return f if f is not None else (1 if d>c.get('llc_bytes',0) else 0)
if __name__ == '__main__':
  for d in sys.argv[1:]:
    n=len(glob.glob(d+'/probe-*.log'))
    for prob in ['deriv1d','bdiag']:
      old={};new={};B={}
      for r in range(1,n+1):
        try: rep=json.load(open(f'{d}/{prob}-{r}.json')); prof=json.load(open(f'{d}/profile-{r}.json')); b=json.load(open(f'{d}/bench-{prob}-{r}.json'))
        except FileNotFoundError: continue
        for x in b['paths']: B.setdefault(x['path'],[]).append(x['synchronized_comm_per_iter_seconds'])
        for run in rep['runs']:
          p=run['path']; o=nw=0
          for s in run['sites']:
            own=[q for q in s['on_paths'] if q['path']==p][0]
            f=own['cold_fraction']; pen=own['cold_penalty']; w=own['predicted_time_warm']
            nw+=s['calls_per_iter']*own['predicted_time']
            fo=pathfrac(prof,p,s['reuse_bytes']) if s['kind']=='reduce' and s.get('gap_bytes',0)>0 and s['messages']>0 else f
            o+=s['calls_per_iter']*(w+fo*pen)
          old.setdefault(p,[]).append(o); new.setdefault(p,[]).append(nw)
      out=[]; cnt=[0,0]; sa=[0,0]
      for p in old:
        m=st.median(B[p]); eo=st.median(old[p])/m-1; en=st.median(new[p])/m-1
        cnt[0]+=abs(eo)<=0.25; cnt[1]+=abs(en)<=0.25; sa[0]+=abs(eo)*100; sa[1]+=abs(en)*100
        out.append('%s %+.0f→%+.0f'%(p.replace('rma.',''),100*eo,100*en))
      print(os.path.basename(d.rstrip('/')),prob,'old→new within %d→%d, sum|err| %.0f→%.0f |'%(cnt[0],cnt[1],sa[0],sa[1]),' '.join(out))
