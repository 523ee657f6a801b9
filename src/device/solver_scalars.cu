/* LSQR's scalar recurrences on the device (src/solvers/solver_device.c): the host loop's code
 * (src/solvers/lsqr_scalars.h) on one thread over the state's slots. CMakeLists.txt compiles this file with
 * -fmad=false: the host's C11 code contracts no multiply-add, so neither may this, or the scalars (and the
 * iteration a tolerance stops at) would differ from the host loop's in the last bits. */
#include <string.h>

#include "cuda_impl.h"
#include "device.h"
#include "solvers/lsqr_scalars.h"

namespace {

/* step 0: beta from d = (u.u, w.w) (and |w|^2 for the step); 1: alfa from d = v.v; 2: the step. Nothing changes
 * once a step stopped (step 2 then only tells this iteration's updates to skip themselves). */
__global__ void k_lsqr_scalars(const double *d, double *st, int step) {
  if (st[LSQR_STOPPED] != 0.0) {
    if (step == 2) st[LSQR_SKIP] = 1.0;
    return;
  }
  lsqr_state S;
  memcpy(&S, st, sizeof S);
  if (step == 0) {
    st[LSQR_WNORM2] = d[2];
    const int go = lsqr_set_beta(&S, d[0]);
    st[LSQR_USKIP] = st[LSQR_VSKIP] = go ? 0.0 : 1.0;
    if (go) st[LSQR_INVBETA] = 1.0 / S.beta, st[LSQR_NBETA] = -S.beta;
  } else if (step == 1) {
    if (st[LSQR_USKIP] != 0.0) return; /* the host loop returned before v's update */
    lsqr_set_alfa(&S, d[0]);
    st[LSQR_NALFA] = -S.alfa;
    st[LSQR_VSKIP] = S.alfa > 0.0 ? 0.0 : 1.0;
    if (S.alfa > 0.0) st[LSQR_INVALFA] = 1.0 / S.alfa;
  } else {
    const lsqr_step k = lsqr_scalars(&S, st[LSQR_WNORM2]);
    st[LSQR_T1] = k.t1, st[LSQR_T2] = k.t2, st[LSQR_R1NORM] = k.r1norm;
    st[LSQR_ISTOP] = k.istop, st[LSQR_BREAKDOWN] = k.breakdown;
    st[LSQR_SKIP] = k.breakdown ? 1.0 : 0.0;
    st[LSQR_STOPPED] = k.breakdown || k.istop != 0 ? 1.0 : 0.0;
  }
  memcpy(st, &S, sizeof S);
}

} // namespace

extern "C" rmaop_status rmaop__dev_lsqr_scalars(rmaop_ctx ctx, const double *d, double *st, int step) {
  k_lsqr_scalars<<<1, 1, 0, STREAM(ctx)>>>(d, st, step);
  RMAOP_CHECK_LAUNCH(ctx);
  return RMAOP_OK;
}
