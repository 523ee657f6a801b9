"""The C library through ctypes: finding librmaop.so, the mirrored structs, the prototypes, errors.

Every struct here mirrors one of <rmaop/rmaop.h>; at load time each size is compared with the library's
(rmaop_type_size), so a header change that the mirror missed is an ImportError, not corrupted memory.
"""
import ctypes
import ctypes.util
import os

from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int64, c_size_t, c_uint, c_uint64,
                    c_void_p)

_HERE = os.path.dirname(os.path.abspath(__file__))


class RmaopError(RuntimeError):
    """An rmaop call failed. ``status`` is the status name (``"RMAOP_ERR_ARG"``, ...), ``code`` its number,
    the message is the library's own (it names the argument, peer or call)."""

    def __init__(self, status, code, message):
        # the library's messages may already begin with the status name
        text = message if message.startswith(status) else (f"{status}: {message}" if message else status)
        super().__init__(text)
        self.status = status
        self.code = code
        self.message = message


class RmaopTimeout(RmaopError):
    """RMAOP_ERR_TIMEOUT: a wait for a peer exceeded the context's timeout."""


class RmaopUnsupported(RmaopError):
    """RMAOP_ERR_UNSUPPORTED: the backend, memory kind or transport cannot do this."""


def _candidates(env, stem):
    """Where a library is looked for, in order: $env, next to the package, the usual search path."""
    paths = []
    if os.environ.get(env):
        paths.append(os.environ[env])
    for name in (f"lib{stem}.so", f"lib{stem}.so.0"):
        paths.append(os.path.join(_HERE, name))
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d:
            paths.append(os.path.join(d, f"lib{stem}.so"))
    found = ctypes.util.find_library(stem)
    if found:
        paths.append(found)
    paths.append(f"lib{stem}.so.0")
    return paths


def _load(env, stem, what):
    tried = []
    for p in _candidates(env, stem):
        if os.path.sep in p and not os.path.exists(p):
            tried.append(f"{p} (no such file)")
            continue
        try:
            # RTLD_GLOBAL: the MPI library librmaop links is the one mpi4py loaded; sharing its symbols keeps
            # one MPI in the process.
            return ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL), p
        except OSError as e:
            tried.append(f"{p} ({e})")
    raise ImportError(
        f"rmaop: cannot load {what} lib{stem}.so. Build it (cmake --build build; it is build/lib{stem}.so) and "
        f"set {env}=/path/to/lib{stem}.so, or put its folder on LD_LIBRARY_PATH, or install it next to the "
        f"package. Tried: " + "; ".join(tried))


# mpi4py first: it initializes MPI (the library needs MPI_Init before any context), and loads the MPI library
# librmaop.so was linked with.
from mpi4py import MPI  # noqa: E402,F401

lib, path = _load("RMAOP_LIBRARY", "rmaop", "the rmaop library")

# ---- handles and enums ------------------------------------------------------------------------------------
ctx_t = c_void_p
layout_t = c_void_p
vec_t = c_void_p
op_t = c_void_p
status_t = c_int

DTYPES = {"f32": 0, "f64": 1, "c64": 2, "c128": 3}
MEMORY = {"host": 0, "device": 1}
LAYOUT_SCATTER, LAYOUT_BROADCAST, LAYOUT_STACKED = 0, 1, 2
DERIV = {"forward": 0, "backward": 1, "centered": 2, "centered3": 2, "centered5": 3}
MATMUL = {"block": 0, "summa": 1}
REASONS = {0: "niter", 1: "tol", 2: "breakdown", 3: "conlim"}
MAX_DIMS = 8
HALO_MAX_DIMS = 4


class CtxOptionsRma(Structure):
    _fields_ = [("sync", c_char_p), ("transport", c_char_p), ("ipc_path", c_char_p)]


class CtxOptions(Structure):
    _fields_ = [("backend", c_char_p), ("memory", c_char_p), ("trace", c_int), ("timeout", c_double),
                ("rma", CtxOptionsRma)]


class CtxInfoRma(Structure):
    _fields_ = [("sync", c_int), ("transport", c_int)]


class CtxInfo(Structure):
    # MPI_Comm is a pointer in Open MPI and an int in MPICH
    _fields_ = [("comm", c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(c_void_p) else c_int),
                ("rank", c_int), ("size", c_int), ("backend", c_char_p), ("memory", c_int), ("trace", c_int),
                ("timeout", c_double), ("graph_capture", c_int), ("rma", CtxInfoRma)]


class LayoutInfo(Structure):
    _fields_ = [("kind", c_int), ("global_n", c_int64), ("local_n", c_int64), ("offset", c_int64),
                ("rank", c_int), ("size", c_int)]


class VecInfo(Structure):
    _fields_ = [("layout", layout_t), ("dtype", c_int), ("memory", c_int), ("local_n", c_int64),
                ("global_n", c_int64), ("offset", c_int64)]


class OpInfo(Structure):
    _fields_ = [("model", layout_t), ("data", layout_t), ("dtype", c_int), ("name", c_char_p)]


class Grid(Structure):
    _fields_ = [("ndim", c_int), ("dims", c_int64 * MAX_DIMS), ("local_rows", c_int64)]


class DerivSpec(Structure):
    _fields_ = [("grid", Grid), ("axis", c_int), ("kind", c_int), ("edge", c_int), ("sampling", c_double),
                ("dtype", c_int), ("label", c_char_p)]


class LaplacianSpec(Structure):
    _fields_ = [("grid", Grid), ("naxes", c_int), ("axes", c_int * MAX_DIMS), ("weights", c_double * MAX_DIMS),
                ("sampling", c_double * MAX_DIMS), ("edge", c_int), ("kind", c_int), ("dtype", c_int),
                ("label", c_char_p)]


class GradientSpec(Structure):
    _fields_ = [("grid", Grid), ("sampling", c_double * MAX_DIMS), ("edge", c_int), ("kind", c_int),
                ("dtype", c_int), ("label", c_char_p)]


class HaloSpec(Structure):
    _fields_ = [("ndim", c_int), ("dims", c_int64 * HALO_MAX_DIMS), ("procs", c_int * HALO_MAX_DIMS),
                ("lo", c_int64 * HALO_MAX_DIMS), ("hi", c_int64 * HALO_MAX_DIMS), ("dtype", c_int),
                ("label", c_char_p)]


class HaloInfo(Structure):
    _fields_ = [("ndim", c_int), ("procs", c_int * HALO_MAX_DIMS), ("coords", c_int * HALO_MAX_DIMS),
                ("local", c_int64 * HALO_MAX_DIMS), ("offset", c_int64 * HALO_MAX_DIMS),
                ("extended", c_int64 * HALO_MAX_DIMS)]


BLOCK_APPLY = ctypes.CFUNCTYPE(status_t, c_void_p, c_void_p, c_void_p)


class Block(Structure):
    _fields_ = [("nrows", c_int64), ("ncols", c_int64), ("dense", c_void_p), ("apply", BLOCK_APPLY),
                ("apply_adjoint", BLOCK_APPLY), ("user", c_void_p)]


class MatmulBlocks(Structure):
    _fields_ = [("active", c_int), ("grid_dim", c_int), ("grid_row", c_int), ("grid_col", c_int)] + [
        (f"{m}_{f}", c_int64) for m in "axy" for f in ("row0", "nrows", "col0", "ncols")]


class MatmulSpec(Structure):
    _fields_ = [("kind", c_int), ("dtype", c_int), ("N", c_int64), ("K", c_int64), ("M", c_int64),
                ("nrows", c_int64), ("ncols", c_int64), ("A", c_void_p), ("label", c_char_p)]


SOLVER_CALLBACK = ctypes.CFUNCTYPE(status_t, c_void_p, c_int, c_double, vec_t)


class SolverOptions(Structure):
    _fields_ = [("niter", c_int), ("tol", c_double), ("damp", c_double), ("x0", vec_t),
                ("callback", SOLVER_CALLBACK), ("user", c_void_p), ("atol", c_double), ("btol", c_double),
                ("conlim", c_double), ("residual_replacement", c_int)]


class SolverInfo(Structure):
    _fields_ = [("iterations", c_int), ("reason", c_int), ("history", POINTER(c_double)),
                ("time_total", c_double), ("time_comm", c_double), ("graph", c_int), ("kold", c_double)]


class TraceSite(Structure):
    _fields_ = [("label", c_char_p), ("kind", c_char_p), ("backend", c_char_p), ("transport", c_char_p),
                ("sync", c_char_p), ("calls", c_uint64), ("calls_add", c_uint64), ("messages", c_uint64),
                ("bytes_per_message", c_double), ("time_total", c_double), ("time_min", c_double),
                ("time_max", c_double), ("time_inside", c_double), ("time_inside_median", c_double)]


# ---- FFTs, signal operators, redistribution (op_fft.h, op_signal.h, alltoall.h) ----------------------------
FFT_NORM = {"none": 0, "1/n": 1}


class FftSpec(Structure):
    _fields_ = [("ndim", c_int), ("dims", c_int64 * MAX_DIMS), ("naxes", c_int), ("axes", c_int * MAX_DIMS),
                ("nffts", c_int64 * MAX_DIMS), ("sampling", c_double * MAX_DIMS), ("norm", c_int), ("real", c_int),
                ("ifftshift_before", c_int * MAX_DIMS), ("fftshift_after", c_int * MAX_DIMS), ("dtype", c_int),
                ("label", c_char_p)]


class FftInfo(Structure):
    _fields_ = [("ndim", c_int), ("dims", c_int64 * MAX_DIMS), ("dimsd", c_int64 * MAX_DIMS), ("naxes", c_int),
                ("axes", c_int * MAX_DIMS), ("nffts", c_int64 * MAX_DIMS), ("nfreqs", c_int64 * MAX_DIMS),
                ("df", c_double * MAX_DIMS), ("real", c_int), ("real_model", c_int), ("model_dtype", c_int),
                ("model_axis", c_int), ("data_axis", c_int), ("model_local", c_int64 * MAX_DIMS),
                ("data_local", c_int64 * MAX_DIMS), ("model_offset", c_int64), ("data_offset", c_int64)]


class MdcSpec(Structure):
    _fields_ = [("dtype", c_int), ("nf_local", c_int64), ("ns", c_int64), ("nr", c_int64), ("G", c_void_p),
                ("nt", c_int64), ("nv", c_int64), ("nfmax", c_int64), ("dt", c_double), ("dr", c_double),
                ("twosided", c_int), ("conj", c_int), ("prescaled", c_int)]


class NsconvSpec(Structure):
    _fields_ = [("ndim", c_int), ("dims", c_int64 * MAX_DIMS), ("axis", c_int), ("local_n", c_int64),
                ("nfilts", c_int64), ("nh", c_int64), ("hs", c_void_p), ("ih", POINTER(c_int64)), ("dtype", c_int),
                ("label", c_char_p)]


# ---- sparsity and proximal solvers (solver_sparse.h) ---------------------------------------------------------
THRESH = {"soft": 0, "hard": 1, "half": 2, "soft-percentile": 3, "hard-percentile": 4, "half-percentile": 5}
PROX_L2_SOLVER = {"cgls": 0, "cg": 1}
ACCEL = {None: 0, "None": 0, "vandenberghe": 1, "fista": 2}
prox_t = c_void_p


class EigsOptions(Structure):
    _fields_ = [("niter", c_int), ("tol", c_double), ("use_b", c_int), ("seed", c_uint)]


class SparseOptions(Structure):
    _fields_ = [("niter", c_int), ("x0", vec_t), ("SOp", op_t), ("eps", c_double), ("alpha", c_double),
                ("eigs", EigsOptions), ("tol", c_double), ("threshkind", c_int), ("perc", c_double),
                ("decay", POINTER(c_double)), ("callback", SOLVER_CALLBACK), ("user", c_void_p)]


class ProxL2Spec(Structure):
    _fields_ = [("Op", op_t), ("b", vec_t), ("q", vec_t), ("sigma", c_double), ("alpha", c_double),
                ("qgrad", c_int), ("niter", c_int), ("x0", vec_t), ("warm", c_int), ("solver", c_int),
                ("tol", c_double), ("damp", c_double)]


PROX_CALLBACK = ctypes.CFUNCTYPE(status_t, c_void_p, c_int, vec_t, vec_t)


class ProxgradOptions(Structure):
    _fields_ = [("niter", c_int), ("tau", c_double), ("epsg", c_double), ("epsg_iter", POINTER(c_double)),
                ("eta", c_double), ("acceleration", c_int), ("tol", c_double), ("history", c_int),
                ("callback", PROX_CALLBACK), ("user", c_void_p)]


class Admml2Options(Structure):
    _fields_ = [("niter", c_int), ("tau", c_double), ("z0", vec_t), ("gfirst", c_int), ("inner", SolverOptions),
                ("history", c_int), ("callback", PROX_CALLBACK), ("user", c_void_p)]


class PrimaldualOptions(Structure):
    _fields_ = [("niter", c_int), ("tau", c_double), ("mu", c_double), ("tau_iter", POINTER(c_double)),
                ("mu_iter", POINTER(c_double)), ("theta", c_double), ("z", vec_t), ("gfirst", c_int),
                ("history", c_int), ("callback", PROX_CALLBACK), ("user", c_void_p)]


lib.rmaop_type_size.restype = c_size_t
lib.rmaop_type_size.argtypes = [c_char_p]

_MIRRORS = {"rmaop_ctx_options": CtxOptions, "rmaop_ctx_info": CtxInfo, "rmaop_layout_info": LayoutInfo, "rmaop_vec_info": VecInfo,
            "rmaop_op_info": OpInfo, "rmaop_grid": Grid, "rmaop_deriv_spec": DerivSpec,
            "rmaop_laplacian_spec": LaplacianSpec, "rmaop_gradient_spec": GradientSpec,
            "rmaop_halo_spec": HaloSpec, "rmaop_halo_info": HaloInfo, "rmaop_block": Block,
            "rmaop_matmul_blocks": MatmulBlocks, "rmaop_matmul_spec": MatmulSpec,
            "rmaop_solver_options": SolverOptions, "rmaop_solver_info": SolverInfo,
            "rmaop_trace_site": TraceSite, "rmaop_fft_spec": FftSpec, "rmaop_fft_info": FftInfo,
            "rmaop_mdc_spec": MdcSpec, "rmaop_nsconv_spec": NsconvSpec, "rmaop_eigs_options": EigsOptions,
            "rmaop_sparse_options": SparseOptions, "rmaop_prox_l2_spec": ProxL2Spec,
            "rmaop_proxgrad_options": ProxgradOptions, "rmaop_admml2_options": Admml2Options,
            "rmaop_primaldual_options": PrimaldualOptions, "rmaop_fft_norm": c_int, "rmaop_thresh_kind": c_int,
            "rmaop_prox_l2_solver": c_int, "rmaop_accel": c_int}
for _name, _cls in _MIRRORS.items():
    _want = lib.rmaop_type_size(_name.encode())
    if _want != ctypes.sizeof(_cls):
        raise ImportError(f"rmaop: {path} has sizeof({_name}) = {_want} but the Python package mirrors it in "
                          f"{ctypes.sizeof(_cls)} bytes: the package and the library are of different versions")

# ---- prototypes -------------------------------------------------------------------------------------------
_P = POINTER


def _proto(name, argtypes, restype=status_t):
    f = getattr(lib, name)
    f.argtypes = argtypes
    f.restype = restype
    return f


_proto("rmaop_status_string", [status_t], c_char_p)
_proto("rmaop_ctx_last_error", [ctx_t], c_char_p)
_proto("rmaop_backends_available", [], c_char_p)
_proto("rmaop_ctx_options_init", [_P(CtxOptions)], None)
_proto("rmaop_ctx_create_f", [c_int, _P(CtxOptions), _P(ctx_t)])
_proto("rmaop_ctx_destroy", [_P(ctx_t)], None)
_proto("rmaop_ctx_get_info", [ctx_t, _P(CtxInfo)])
_proto("rmaop_ctx_synchronize", [ctx_t])
_proto("rmaop_ctx_get_stream", [ctx_t, _P(c_void_p)])
_proto("rmaop_layout_create", [ctx_t, c_int, c_int64, _P(layout_t)])
_proto("rmaop_layout_create_local", [ctx_t, c_int64, _P(layout_t)])
_proto("rmaop_layout_create_stacked", [c_int, _P(layout_t), _P(layout_t)])
_proto("rmaop_layout_destroy", [_P(layout_t)], None)
_proto("rmaop_layout_get_info", [layout_t, _P(LayoutInfo)])
_proto("rmaop_layout_rank_range", [layout_t, c_int, _P(c_int64), _P(c_int64)])
_proto("rmaop_layout_stack_nparts", [layout_t, _P(c_int)])
_proto("rmaop_layout_stack_part", [layout_t, c_int, _P(layout_t)])
_proto("rmaop_vec_create", [layout_t, c_int, _P(vec_t)])
_proto("rmaop_vec_create_with_array", [layout_t, c_int, c_void_p, _P(vec_t)])
_proto("rmaop_vec_destroy", [_P(vec_t)], None)
_proto("rmaop_vec_get_info", [vec_t, _P(VecInfo)])
_proto("rmaop_vec_get_array", [vec_t, _P(c_void_p)])
_proto("rmaop_vec_dot", [vec_t, vec_t, _P(c_double)])
_proto("rmaop_vec_norm2", [vec_t, _P(c_double)])
_proto("rmaop_op_apply", [op_t, vec_t, vec_t])
_proto("rmaop_op_apply_adjoint", [op_t, vec_t, vec_t])
_proto("rmaop_op_destroy", [_P(op_t)], None)
_proto("rmaop_op_get_info", [op_t, _P(OpInfo)])
_proto("rmaop_op_dottest", [op_t, c_uint, _P(c_double)])
_proto("rmaop_op_create_product", [op_t, op_t, _P(op_t)])
_proto("rmaop_op_create_sum", [c_int, _P(op_t), _P(op_t)])
_proto("rmaop_op_create_adjoint", [op_t, _P(op_t)])
_proto("rmaop_op_create_stacked_vstack", [c_int, _P(op_t), _P(op_t)])
_proto("rmaop_op_create_stacked_blockdiag", [c_int, _P(op_t), _P(op_t)])
_proto("rmaop_op_create_first_derivative", [ctx_t, _P(DerivSpec), _P(op_t)])
_proto("rmaop_op_create_second_derivative", [ctx_t, _P(DerivSpec), _P(op_t)])
_proto("rmaop_op_create_laplacian", [ctx_t, _P(LaplacianSpec), _P(op_t)])
_proto("rmaop_op_create_gradient", [ctx_t, _P(GradientSpec), _P(op_t)])
_proto("rmaop_op_create_halo", [ctx_t, _P(HaloSpec), _P(op_t)])
_proto("rmaop_op_halo_get_info", [op_t, _P(HaloInfo)])
_proto("rmaop_op_create_blockdiag", [ctx_t, c_int, _P(Block), _P(op_t)])
_proto("rmaop_op_create_vstack", [ctx_t, c_int, _P(Block), _P(op_t)])
_proto("rmaop_op_create_hstack", [ctx_t, c_int, _P(Block), _P(op_t)])
_proto("rmaop_op_matmul_get_blocks", [ctx_t, c_int, c_int64, c_int64, c_int64, c_int, _P(MatmulBlocks)])
_proto("rmaop_op_create_matmul", [ctx_t, _P(MatmulSpec), _P(op_t)])
_proto("rmaop_op_create_fredholm1", [ctx_t, c_int, c_int64, c_int64, c_int64, c_int64, c_void_p, _P(op_t)])
_proto("rmaop_solver_options_init", [_P(SolverOptions)], None)
_proto("rmaop_solver_info_destroy", [_P(SolverInfo)], None)
for _s in ("cg", "cgls", "lsqr", "pipecg"):
    _proto(f"rmaop_solve_{_s}", [op_t, vec_t, vec_t, _P(SolverOptions), _P(SolverInfo)])
_proto("rmaop_vec_stack_part", [vec_t, c_int, _P(vec_t)])
_proto("rmaop_op_create_fftnd", [ctx_t, _P(FftSpec), _P(op_t)])
_proto("rmaop_op_fft_get_info", [op_t, _P(FftInfo)])
_proto("rmaop_op_fft_get_freqs", [op_t, c_int, _P(c_double)])
_proto("rmaop_op_create_mdc", [ctx_t, _P(MdcSpec), _P(op_t)])
_proto("rmaop_op_create_nonstationary_convolve1d", [ctx_t, _P(NsconvSpec), _P(op_t)])
_proto("rmaop_layout_create_axis", [ctx_t, c_int, _P(c_int64), c_int, _P(layout_t)])
_proto("rmaop_op_create_redistribute", [ctx_t, c_int, c_int, _P(c_int64), c_int, c_int64, c_int, _P(op_t)])
_proto("rmaop_vec_redistribute", [vec_t, c_int, _P(c_int64), c_int, c_int, vec_t])
_proto("rmaop_eigs_options_init", [_P(EigsOptions)], None)
_proto("rmaop_power_iteration", [op_t, vec_t, _P(EigsOptions), _P(c_double * 2), _P(c_int)])
_proto("rmaop_sparse_step_size", [op_t, _P(EigsOptions), _P(c_double)])
_proto("rmaop_thresh_parse", [c_char_p, _P(c_int)])
_proto("rmaop_thresh_name", [c_int], c_char_p)
_proto("rmaop_sparse_options_init", [_P(SparseOptions)], None)
for _s in ("ista", "fista"):
    _proto(f"rmaop_solve_{_s}", [op_t, vec_t, vec_t, _P(SparseOptions), _P(SolverInfo)])
_proto("rmaop_prox_create_l1", [ctx_t, c_double, vec_t, _P(prox_t)])
_proto("rmaop_prox_l2_spec_init", [_P(ProxL2Spec)], None)
_proto("rmaop_prox_create_l2", [ctx_t, _P(ProxL2Spec), _P(prox_t)])
_proto("rmaop_prox_create_l21", [ctx_t, c_int, c_double, _P(prox_t)])
_proto("rmaop_prox_destroy", [_P(prox_t)], None)
_proto("rmaop_prox_apply", [prox_t, c_double, vec_t, vec_t])
_proto("rmaop_prox_apply_dual", [prox_t, c_double, vec_t, vec_t])
_proto("rmaop_prox_norm", [prox_t, vec_t, _P(c_double)])
_proto("rmaop_prox_grad", [prox_t, vec_t, vec_t])
_proto("rmaop_proxgrad_options_init", [_P(ProxgradOptions)], None)
_proto("rmaop_admml2_options_init", [_P(Admml2Options)], None)
_proto("rmaop_primaldual_options_init", [_P(PrimaldualOptions)], None)
_proto("rmaop_solve_proximal_gradient", [prox_t, prox_t, vec_t, vec_t, _P(ProxgradOptions), _P(SolverInfo)])
_proto("rmaop_solve_admml2", [prox_t, op_t, vec_t, op_t, vec_t, vec_t, vec_t, _P(Admml2Options), _P(SolverInfo)])
_proto("rmaop_solve_primal_dual", [prox_t, prox_t, op_t, vec_t, vec_t, vec_t, vec_t, _P(PrimaldualOptions),
                                   _P(SolverInfo)])
_proto("rmaop_trace_enable", [ctx_t, c_int])
_proto("rmaop_trace_reset", [ctx_t])
_proto("rmaop_trace_count", [ctx_t, _P(c_int)])
_proto("rmaop_trace_get", [ctx_t, c_int, _P(TraceSite)])
_proto("rmaop_trace_write_json", [ctx_t, c_char_p])

_ERRORS = {"RMAOP_ERR_TIMEOUT": RmaopTimeout, "RMAOP_ERR_UNSUPPORTED": RmaopUnsupported}


def status_name(code):
    s = lib.rmaop_status_string(code)
    return s.decode() if s else f"status {code}"


def check(code, ctx=None):
    """Raises the RmaopError of a non-zero status, with the library's message (the context's, else the
    process's last error)."""
    if code == 0:
        return
    msg = lib.rmaop_ctx_last_error(ctx) if ctx else None
    if not msg:
        msg = lib.rmaop_ctx_last_error(None)
    name = status_name(code)
    raise _ERRORS.get(name, RmaopError)(name, code, msg.decode(errors="replace") if msg else "")


def call(name, *args, ctx=None):
    """Calls lib.<name>(*args) and raises on a non-zero status."""
    check(getattr(lib, name)(*args), ctx)


def bstr(s):
    return None if s is None else str(s).encode()
