/* LSQR's scalar recurrences (PyLops' LSQR.step, pylops.optimization.cls_basic.LSQR), written once for the host
 * loop (src/solvers/solver_krylov.c) and the device loop (src/solvers/solver_device.c; its kernels in
 * src/device/solver_scalars.cu, compiled without multiply-add contraction as the C11 host code is, so both give
 * the same bits). Not part of the public API. */
#ifndef RMAOP_LSQR_SCALARS_H
#define RMAOP_LSQR_SCALARS_H

#include "device/hd.h"

#include <math.h>

/* The scalar state of PyLops' LSQR (names as there); doubles only, so the device keeps it as slots. */
typedef struct {
  double damp, dampsq, atol, btol, ctol;
  double alfa, beta, anorm, acond, ddnorm, res2, xnorm, xxnorm, z, cs2, sn2;
  double rhobar, phibar, bnorm, rnorm, arnorm0;
} lsqr_state;

typedef struct {
  double t1, t2; /* x += t1 w; w = v + t2 w */
  double r1norm;
  int istop;     /* PyLops' istop (0: keep going) */
  int breakdown; /* rho or gamma is zero: the rotation divides by it */
} lsqr_step;

/* sqrt of a sum of squares, summed in numpy.linalg.norm's order, so scalars match PyLops to rounding. */
static inline RMAOP__HD double lsqr_norm2(double a, double b) {
  return sqrt((0.0 + a * a) + b * b);
}
static inline RMAOP__HD double lsqr_norm4(double a, double b, double c, double d) {
  return sqrt((((0.0 + a * a) + b * b) + c * c) + d * d);
}

/* The bidiagonalization's scalars: beta from |u|^2 (1 when u is scaled and the adjoint half follows: beta > 0,
 * anorm updated), alfa from |v|^2. */
static inline RMAOP__HD int lsqr_set_beta(lsqr_state *S, double uu) {
  S->beta = sqrt(uu);
  if (S->beta <= 0.0)
    return 0;
  S->anorm = lsqr_norm4(S->anorm, S->alfa, S->beta, S->damp);
  return 1;
}
static inline RMAOP__HD void lsqr_set_alfa(lsqr_state *S, double vv) {
  S->alfa = sqrt(vv);
}

/* One iteration's scalars, given the new beta, alfa and ||w||^2 (PyLops LSQR.step, from "use a plane
 * rotation to eliminate the damping parameter" down to the stopping tests). */
static inline RMAOP__HD lsqr_step lsqr_scalars(lsqr_state *S, double wnorm2) {
  lsqr_step out = {0, 0, 0, 0, 0};
  const double rhobar1 = lsqr_norm2(S->rhobar, S->damp);
  const double cs1 = S->rhobar / rhobar1, sn1 = S->damp / rhobar1;
  const double psi = sn1 * S->phibar;
  S->phibar = cs1 * S->phibar;
  const double rho = lsqr_norm2(rhobar1, S->beta);
  const double delta = S->sn2 * rho, gambar = -S->cs2 * rho;
  const double theta = (S->beta / rho) * S->alfa;
  const double gamma = lsqr_norm2(gambar, theta);
  if (rho == 0.0 || gamma == 0.0) {
    out.breakdown = 1;
    return out;
  }
  const double cs = rhobar1 / rho, sn = S->beta / rho;
  S->rhobar = -cs * S->alfa;
  const double phi = cs * S->phibar;
  S->phibar = sn * S->phibar;
  const double tau = sn * phi;
  out.t1 = phi / rho;
  out.t2 = -theta / rho;
  S->ddnorm += wnorm2 / (rho * rho); /* ||dk||^2, dk = w / rho */
  const double rhs = phi - delta * S->z, zbar = rhs / gambar;
  S->xnorm = sqrt(S->xxnorm + zbar * zbar);
  S->cs2 = gambar / gamma;
  S->sn2 = theta / gamma;
  S->z = rhs / gamma;
  S->xxnorm += S->z * S->z;
  S->acond = S->anorm * sqrt(S->ddnorm);
  S->res2 += psi * psi;
  S->rnorm = sqrt(S->phibar * S->phibar + S->res2);
  const double arnorm = S->alfa * fabs(tau);
  out.r1norm = sqrt(fabs(S->rnorm * S->rnorm - S->dampsq * S->xxnorm));
  const double test1 = S->rnorm / S->bnorm, test2 = arnorm / S->arnorm0, test3 = 1.0 / S->acond;
  const double t1 = test1 / (1.0 + S->anorm * S->xnorm / S->bnorm);
  const double rtol = S->btol + S->atol * S->anorm * S->xnorm / S->bnorm;
  /* PyLops' order: later tests override earlier ones. */
  if (1.0 + test3 <= 1.0)
    out.istop = 6;
  if (1.0 + test2 <= 1.0)
    out.istop = 5;
  if (1.0 + t1 <= 1.0)
    out.istop = 4;
  if (test3 <= S->ctol)
    out.istop = 3;
  if (test2 <= S->atol)
    out.istop = 2;
  if (test1 <= rtol)
    out.istop = 1;
  return out;
}

/* The device loop's slots: the state, then what the kernels pass to the vector updates and to the host. */
enum { LSQR_NSTATE = sizeof(lsqr_state) / sizeof(double) };
enum {
  LSQR_T1 = LSQR_NSTATE, /* x += t1 w */
  LSQR_T2,               /* w = v + t2 w */
  LSQR_R1NORM,           /* the host copies R1NORM, ISTOP and BREAKDOWN once per iteration */
  LSQR_ISTOP,
  LSQR_BREAKDOWN,
  LSQR_STOPPED, /* an earlier step stopped: every later kernel leaves the state as it is */
  LSQR_SKIP,    /* this step's x and w updates are not made (a breakdown, or stopped before) */
  LSQR_WNORM2,
  LSQR_NALFA, /* -alfa: u = A v - alfa u */
  LSQR_NBETA, /* -beta: v = A^H u - beta v */
  LSQR_INVBETA,
  LSQR_INVALFA,
  LSQR_USKIP, /* beta <= 0: u is not scaled, and the adjoint half of the step is not made */
  LSQR_VSKIP, /* that, or alfa <= 0: v is not scaled */
  LSQR_NSLOTS
};

#endif /* RMAOP_LSQR_SCALARS_H */
