# Predictions of a device check with the plan sites' synced-timing offset taken back out (approximate: ignores the clamp at half a site's time).
import json,glob,statistics as st,sys
base=sys.argv[1]
for d in ['chk-sys','chk-cuda']:
  for prob in ['deriv1d','bdiag']:
    with_={};wo={};meas={}
    for f in sorted(glob.glob(f'{base}/{d}/{prob}-*.json')):
        i=f.rsplit('-',1)[1].split('.')[0]
        r=json.load(open(f))
        offs={q['name']:q['synced_offset_epoch'] for q in r['profile']['paths']}
        for run in r['runs']:
            p=run['path']; m=run['predicted_comm_per_iter'][p]
            k=sum(s['calls_per_iter'] for s in run['sites'] if s['kind']=='plan')
            with_.setdefault(p,[]).append(m); wo.setdefault(p,[]).append(m-k*offs[p])
        b=json.load(open(f'{base}/{d}/bench-{prob}-{i}.json'))
        for q in b['paths']: meas.setdefault(q['path']+'.device',[]).append(q['synchronized_comm_per_iter_seconds'])
    n1=n2=0
    for p in with_:
        m=st.median(meas[p]); e1=st.median(with_[p])/m-1; e2=st.median(wo[p])/m-1; n1+=abs(e1)<=.25; n2+=abs(e2)<=.25
        print(d,prob,p,'meas %.2f with %.2f (%+.0f%%) without %.2f (%+.0f%%)'%(m*1e6,st.median(with_[p])*1e6,e1*100,st.median(wo[p])*1e6,e2*100))
    print(d,prob,'within 25%%: with %d, without %d of %d'%(n1,n2,len(with_)))
