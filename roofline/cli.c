/* The rmaop-roofline program: MPI around rmaop_roofline_main() (main.c). */
#include "tool.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int rc = rmaop_roofline_main(argc, argv);
  MPI_Finalize();
  return rc;
}
