/* Session 34 device experiment: run a command with automatic NUMA balancing's scanning off for it.
 *   nobalance CMD ARGS...
 * set_mempolicy(MPOL_BIND) to every online node: pages are still allocated where the default policy puts them
 * (the local node first, the others in the zonelist's order), but the task's policy no longer carries
 * MPOL_F_MOF, which the kernel's NUMA-balancing scanner (task_numa_work: vma_policy_mof) asks for before it
 * unmaps a range to sample its accesses. So the process and what it execs take no NUMA hinting faults and no
 * balancing migrations. Build: cc -O2 -o nobalance 2026-11-27-session34-nobalance.c */
#define _GNU_SOURCE
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_BIND 2

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: nobalance CMD [ARGS...]\n");
    return 2;
  }
  unsigned long mask[16] = {0};
  int nodes = 0;
  for (int n = 0; n < 1024; ++n) {
    char path[64];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d", n);
    if (access(path, F_OK) == 0) {
      mask[n / (8 * sizeof(unsigned long))] |= 1UL << (n % (8 * sizeof(unsigned long)));
      ++nodes;
    }
  }
  if (nodes == 0) mask[0] = 1, nodes = 1;
  if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, 1024UL) != 0) {
    perror("nobalance: set_mempolicy");
    return 1;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "nobalance: cannot run %s: %s\n", argv[1], strerror(errno));
  return 127;
}
