"""The message-roofline analyzer from Python: the commands of rmaop-roofline run in this process (collective over
MPI.COMM_WORLD, every rank calls), and their JSON results come back as Python objects.

    prof = rmaop.roofline.probe(out="profile.json", quick=True)        # fits per path; prof["svg"]: the plot
    rep = rmaop.roofline.run(problem="deriv1d", n=65536, niter=20, profile="profile.json", out="report")
    rep = rmaop.roofline.run(traces=["my.trace.json"], profile="profile.json")  # sites traced from Python

The library is librmaop_roofline.so (built beside librmaop.so; RMAOP_ROOFLINE_LIBRARY names it).
"""
import ctypes
import json
import os

from mpi4py import MPI

from . import _lib

_tool = None


def _lib_tool():
    global _tool
    if _tool is None:
        if not os.environ.get("RMAOP_ROOFLINE_LIBRARY"):
            # beside librmaop.so: build/roofline/ in a build tree, the same folder once installed
            d = os.path.dirname(os.path.realpath(_lib.path))
            for cand in (os.path.join(d, "librmaop_roofline.so"), os.path.join(d, "roofline", "librmaop_roofline.so")):
                if os.path.exists(cand):
                    os.environ["RMAOP_ROOFLINE_LIBRARY"] = cand
                    break
        _tool, _ = _lib._load("RMAOP_ROOFLINE_LIBRARY", "rmaop_roofline", "the roofline library")
        _tool.rmaop_roofline_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _tool.rmaop_roofline_main.restype = ctypes.c_int
    return _tool


class RooflineError(RuntimeError):
    pass


def main(*args):
    """Runs ``rmaop-roofline ARGS...`` in this process (collective); returns its exit status (rank 0 prints)."""
    argv = [b"rmaop-roofline"] + [str(a).encode() for a in args]
    arr = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
    return _lib_tool().rmaop_roofline_main(len(argv), arr)


def _opts(**kw):
    out = []
    for k, v in kw.items():
        if v is None or v is False:
            continue
        out.append("--" + k.replace("_", "-"))
        if v is not True:
            out.append(",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v))
    return out


def _read(path):
    with open(path) as f:
        return json.load(f)


def probe(out="profile.json", quick=False, memory="host", paths=None, max_bytes=None, point_ms=None,
          min_reps=None, max_reps=None, cold_reps=None):
    """Times every path (or ``paths``), fits T(n, m) = alpha + n*o + n*m/beta, writes ``out`` and its plot; returns
    the profile as a dict, with ``"file"`` and ``"svg"`` (the plot's path) added."""
    rc = main("probe", *_opts(out=out, quick=quick, memory=memory, paths=paths, max_bytes=max_bytes,
                              point_ms=point_ms, min_reps=min_reps, max_reps=max_reps, cold_reps=cold_reps))
    if rc != 0:
        raise RooflineError(f"rmaop-roofline probe failed with status {rc} (rank 0 printed why)")
    MPI.COMM_WORLD.Barrier()
    prof = _read(out)
    prof["file"] = out
    prof["svg"] = os.path.splitext(out)[0] + ".svg"
    return prof


def run(problem=None, n=None, niter=None, traces=None, backends=None, sync=None, transport=None, memory=None,
        profile="profile.json", out="report", repeat=None, save_traces=True):
    """Places every communication site of a solver on the roofline: a bench problem run on each path
    (``problem``, ``n``, ``niter``), or trace files written by rmaop.trace.write_json (``traces``: a list;
    each item one file or a list of one run's per-rank files). Returns the report (PREFIX.json) as a dict with
    ``"file"``, ``"csv"`` and ``"svg"`` added; the verdicts are in it and rank 0 printed them."""
    args = _opts(problem=problem, n=n, niter=niter, backends=backends, sync=sync, transport=transport,
                 memory=memory, profile=profile, out=out, repeat=repeat, no_save_traces=not save_traces)
    for t in traces or ():
        args += ["--trace", ",".join(t) if isinstance(t, (list, tuple)) else str(t)]
    rc = main("run", *args)
    if rc != 0:
        raise RooflineError(f"rmaop-roofline run failed with status {rc} (rank 0 printed why)")
    MPI.COMM_WORLD.Barrier()
    rep = _read(out + ".json")
    rep.update(file=out + ".json", csv=out + ".csv", svg=out + ".svg")
    return rep
