/* rmaop_type_size: the size of every public struct and enum, by name, for bindings that mirror them (the
 * Python package compares its ctypes layouts with these when it loads the library). */
#include <rmaop/rmaop.h>

#include <string.h>

#define ROW(T) {#T, sizeof(T)}

static const struct {
  const char *name;
  size_t size;
} types[] = {
    ROW(rmaop_accel),
    ROW(rmaop_admml2_options),
    ROW(rmaop_alltoall_spec),
    ROW(rmaop_block),
    ROW(rmaop_ctx_info),
    ROW(rmaop_ctx_options),
    ROW(rmaop_deriv_kind),
    ROW(rmaop_deriv_spec),
    ROW(rmaop_dtype),
    ROW(rmaop_eigs_options),
    ROW(rmaop_fft_info),
    ROW(rmaop_fft_norm),
    ROW(rmaop_fft_spec),
    ROW(rmaop_gradient_spec),
    ROW(rmaop_grid),
    ROW(rmaop_halo_info),
    ROW(rmaop_halo_spec),
    ROW(rmaop_laplacian_spec),
    ROW(rmaop_layout_info),
    ROW(rmaop_layout_kind),
    ROW(rmaop_matmul_blocks),
    ROW(rmaop_matmul_kind),
    ROW(rmaop_matmul_spec),
    ROW(rmaop_mdc_spec),
    ROW(rmaop_memory),
    ROW(rmaop_mode),
    ROW(rmaop_nsconv_spec),
    ROW(rmaop_op_info),
    ROW(rmaop_plan_info),
    ROW(rmaop_plan_spec),
    ROW(rmaop_primaldual_options),
    ROW(rmaop_prox_l2_solver),
    ROW(rmaop_prox_l2_spec),
    ROW(rmaop_proxgrad_options),
    ROW(rmaop_reason),
    ROW(rmaop_redop),
    ROW(rmaop_shell_ops),
    ROW(rmaop_solver_info),
    ROW(rmaop_solver_options),
    ROW(rmaop_sparse_options),
    ROW(rmaop_status),
    ROW(rmaop_sync),
    ROW(rmaop_thresh_kind),
    ROW(rmaop_trace_site),
    ROW(rmaop_transfer),
    ROW(rmaop_transport),
    ROW(rmaop_vec_info),
};

size_t rmaop_type_size(const char *name) {
  if (!name) return 0;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i)
    if (!strcmp(types[i].name, name)) return types[i].size;
  return 0;
}
