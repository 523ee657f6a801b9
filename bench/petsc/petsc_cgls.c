/* PETSc baseline for rmaop-bench's deriv1d: KSPCGLS on an MPIAIJ matrix holding the same stencil
 * (first derivative, centered order 3, edge = False, h = 1: row i in [1, N-2] has -0.5 at i-1 and +0.5 at
 * i+1; rows 0 and N-1 are zero), b = A x_true, x0 = 0, exactly niter iterations (convergence test off).
 * The halo scatter's implementation is chosen with -sf_type basic|window|neighbor.
 * Prints the median seconds per iteration over -repeat solves (max over ranks per solve). */
#include <petscksp.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscInt n = 1 << 20, niter = 50, repeat = 5;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-niter", &niter, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-repeat", &repeat, NULL));
  char sf[64] = "basic";
  PetscCall(PetscOptionsGetString(NULL, NULL, "-sf_type", sf, sizeof sf, NULL));

  Mat A;
  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, n, n));
  PetscCall(MatSetType(A, MATMPIAIJ));
  PetscCall(MatSetFromOptions(A));
  PetscCall(MatMPIAIJSetPreallocation(A, 2, NULL, 1, NULL));
  PetscInt lo, hi;
  PetscCall(MatGetOwnershipRange(A, &lo, &hi));
  for (PetscInt i = lo; i < hi; ++i) {
    if (i < 1 || i > n - 2) continue;
    PetscInt cols[2] = {i - 1, i + 1};
    PetscScalar vals[2] = {-0.5, 0.5};
    PetscCall(MatSetValues(A, 1, &i, 2, cols, vals, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));

  Vec xt, b, x, r;
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(x, &xt));
  PetscCall(VecDuplicate(b, &r));
  for (PetscInt i = lo; i < hi; ++i) PetscCall(VecSetValue(xt, i, PetscSinReal(0.01 * i) + 0.5 * PetscCosReal(0.003 * i), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(xt));
  PetscCall(VecAssemblyEnd(xt));
  PetscCall(MatMult(A, xt, b));

  KSP ksp;
  PC pc;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCGLS));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  PetscCall(KSPSetTolerances(ksp, 1e-300, 1e-300, PETSC_DEFAULT, niter));
  PetscCall(KSPSetConvergenceTest(ksp, KSPConvergedSkip, NULL, NULL));
  PetscCall(KSPSetFromOptions(ksp));

  double *t = malloc((size_t)(repeat + 1) * sizeof *t);
  PetscInt its = 0;
  for (PetscInt rep = -1; rep < repeat; ++rep) { /* rep -1: warm-up */
    PetscCall(VecSet(x, 0.0));
    PetscCall(MPI_Barrier(PETSC_COMM_WORLD));
    double t0 = MPI_Wtime();
    PetscCall(KSPSolve(ksp, b, x));
    double dt = MPI_Wtime() - t0, dtmax;
    PetscCall(MPI_Allreduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
    PetscCall(KSPGetIterationNumber(ksp, &its));
    if (rep >= 0) t[rep] = dtmax / (its ? its : 1);
  }
  qsort(t, (size_t)repeat, sizeof *t, cmp);
  PetscReal res;
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &res));
  PetscMPIInt size;
  PetscCall(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "petsc-cgls sf_type=%s n=%" PetscInt_FMT " ranks=%d iterations=%" PetscInt_FMT
                        " median_us_per_iter=%.2f min_us_per_iter=%.2f final_residual=%.6e\n",
                        sf, n, size, its, 1e6 * t[repeat / 2], 1e6 * t[0], (double)res));
  free(t);
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&xt));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&r));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return 0;
}
