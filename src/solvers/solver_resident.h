/* CG and CGLS run by one cooperative GPU kernel per solve (RMAOP_SOLVER_SCALARS=resident;
 * src/solvers/solver_resident.c, kernels in src/device/resident.cu). Not part of the public API. */
#ifndef RMAOP_SOLVER_RESIDENT_H
#define RMAOP_SOLVER_RESIDENT_H

#include "rmaop/rmaop.h"

/* 1 when rmaop_solve_cg / _cgls on A hand their iterations to the functions below: a device context with
 * RMAOP_SOLVER_SCALARS=resident, or auto on one node with a GPU per rank, and x, y vectors whose dots can stay on
 * the device. Not collective (the same on every rank). */
int rmaop__resident_wanted(rmaop_op A, rmaop_vec x, rmaop_vec y);
/* The iterations, once the start's vectors are made (the arguments of rmaop__solve_cg_device and
 * rmaop__solve_cgls_device, src/solvers/solver_impl.h): in one GPU kernel where the path and the operator allow
 * it (README, RMAOP_SOLVER_SCALARS), else, under resident, with device scalars replayed from CUDA graphs
 * (solver_device.c) and, under auto, not at all (*ran = 0: the caller runs its host-scalar loop). Collective.
 * Fills info's history, iterations, reason and kold when it ran the solve (*ran = 1). */
rmaop_status rmaop__solve_cg_resident(rmaop_op A, rmaop_vec x, rmaop_vec r, rmaop_vec c, rmaop_vec Ac,
                                      const rmaop_solver_options *o, rmaop_solver_info *info, int *ran);
rmaop_status rmaop__solve_cgls_resident(rmaop_op A, rmaop_vec x, rmaop_vec s, rmaop_vec q, rmaop_vec r, rmaop_vec c,
                                        double damp2, const rmaop_solver_options *o, rmaop_solver_info *info,
                                        int *ran);

#endif /* RMAOP_SOLVER_RESIDENT_H */
