# Offline (session 25's split2.py, session 26's median rho from its first 36-round check): reductions split into own and shared parts, on check files whose profiles lack the point.
import json,math,statistics as st,sys
RHO_R={'rma.fence.shm':0.47,'rma.fence.mpi':0.34,'rma.pscw.shm':0.25,'rma.pscw.mpi':0.26,'rma.lock.shm':0.44,'rma.lock.mpi':0.31,'twosided':0.59}
RHO_E={'rma.fence.shm':0.50,'rma.fence.mpi':0.50,'rma.pscw.shm':0.46,'rma.pscw.mpi':0.46,'rma.lock.shm':0.53,'rma.lock.mpi':0.30,'twosided':0.59}
import importlib.util,os  # the curve's fraction: the same rules as oldnew.py (and roofline/classify.c)
_spec=importlib.util.spec_from_file_location('oldnew',os.path.join(os.path.dirname(os.path.abspath(__file__)),'2026-11-26-session26-oldnew.py'))
_m=importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_m); cf=_m.cf
def pathfrac(prof,pname,kind,d):
  c=prof['cache']
  if kind=='reduce':
    p=[x for x in prof['paths'] if x['name']==pname][0]['cold']
    bs=[x['bytes'] for x in p['reduce_curve']]+[p['sweep_bytes']]; ts=[x['t'] for x in p['reduce_curve']]+[p['reduce']['cold']]
    f=cf(bs,ts,p['reduce']['warm'],d)
    if f is not None: return f
  bs=[x['bytes'] for x in c['curve']]; ts=[x['t'] for x in c['curve']]
  return cf(bs,ts,c['curve_warm'],d)
mode=sys.argv[1]
MEASURED=mode.endswith('-measured'); mode=mode.replace('-measured','')
for d in sys.argv[2:]:
  for prob in ['deriv1d','bdiag']:
    old={};new={};B={}
    for r in range(1,37):
      try: rep=json.load(open(f'{d}/{prob}-{r}.json')); prof=json.load(open(f'{d}/profile-{r}.json')); b=json.load(open(f'{d}/bench-{prob}-{r}.json'))
      except FileNotFoundError: continue
      for x in b['paths']: B.setdefault(x['path'],[]).append(x['synchronized_comm_per_iter_seconds'])
      for run in rep['runs']:
        p=run['path']; tot=sum(s['calls_per_iter'] for s in run['sites'])
        dgap=min(run['footprint'],run['bytes_per_iter']/tot)
        o=n=0
        for s in run['sites']:
          own=[q for q in s['on_paths'] if q['path']==p][0]
          k='reduce' if s['kind']=='reduce' else 'epoch'
          f=own['cold_fraction']; pen=own['cold_penalty']; w=own['predicted_time_warm']
          o+=s['calls_per_iter']*own['predicted_time']
          use = (k=='reduce') or mode=='both'
          if use:
            rho=(RHO_R if k=='reduce' else RHO_E)[p]
            if k=='reduce' and MEASURED:
              c=[x for x in prof['paths'] if x['name']==p][0]['cold']
              a=c.get('reduce_after_epoch')
              if a: rho=min(1,max(0,(a['cold']-a['warm'])/max(1e-12,c['reduce']['cold']-c['reduce']['warm'])))
            fg=pathfrac(prof,p,k,dgap)
            f2=rho*f+(1-rho)*fg
          else: f2=f
          n+=s['calls_per_iter']*(w+f2*pen)
        old.setdefault(p,[]).append(o); new.setdefault(p,[]).append(n)
    out=[]; cnt=[0,0]
    for p in old:
      m=st.median(B[p]); eo=st.median(old[p])/m-1; en=st.median(new[p])/m-1
      cnt[0]+=abs(eo)<=0.25; cnt[1]+=abs(en)<=0.25
      out.append('%s %+.0f→%+.0f'%(p.replace('rma.',''),100*eo,100*en))
    print(d.split('/')[-2][-3:]+'/'+d.split('/')[-1],prob,'%d→%d |'%tuple(cnt),' '.join(out))
