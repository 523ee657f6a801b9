"""rmaop.trace and rmaop.roofline from Python: trace sites of a few applications, a tiny probe, and a run on the
written trace files."""
import json
import os
import shutil
import tempfile

import numpy as np
import pytest
from conftest import check_all, comm

import rmaop
from rmaop import roofline, trace

rank, size = comm.Get_rank(), comm.Get_size()
DIMS = (16, 8)


@pytest.fixture(scope="module")
def shared_dir():
    """One temporary folder for all ranks: rank 0 makes it and broadcasts its path; removed at the end."""
    d = comm.bcast(tempfile.mkdtemp(prefix="rmaop-tools-") if rank == 0 else None)
    yield d
    comm.Barrier()
    if rank == 0:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def traced(shared_dir):
    """A traced context after 5 forward and 3 adjoint applications of a first derivative; its per-rank
    trace files."""
    ctx = rmaop.Context(backend="rma", sync="lock")
    A = rmaop.MPIFirstDerivative(DIMS, context=ctx)
    try:
        trace.enable(ctx)
        trace.reset(ctx)
        x = np.ones(A._m.local_n)
        for _ in range(5):
            A.apply(x)
        for _ in range(3):
            A.apply_adjoint(x)
        sites = trace.sites(ctx)
        pattern = os.path.join(shared_dir, "trace-%r.json")
        trace.write_json(ctx, pattern)
        comm.Barrier()
        files = [pattern.replace("%r", str(r)) for r in range(size)]
        yield sites, files
        trace.enable(ctx, False)
    finally:
        A.close()
        ctx.close()


def test_trace_sites(traced):
    sites, _ = traced
    check_all(all(isinstance(s, trace.Site) for s in sites) and sites, f"sites {sites}")
    halo = [s for s in sites if s.kind == "plan" and s.label == "deriv"]
    check_all(len(halo) == 1 and halo[0].calls == 5 and halo[0].backend == "rma" and halo[0].sync == "lock",
              f"the halo site: {halo} of {[(s.label, s.kind, s.calls) for s in sites]}")
    adj = [s for s in sites if s.kind == "plan" and s.label == "deriv^H"]
    check_all(len(adj) == 1 and adj[0].calls == 3, f"the adjoint's site: {adj}")
    h = halo[0]
    check_all(h.time_total >= 0 and h.time_min <= h.time_max and h.messages >= 0, f"{h}")


def test_trace_json(traced):
    _, files = traced
    check_all(all(os.path.exists(f) for f in files), f"missing trace files among {files}")
    with open(files[rank]) as f:
        doc = json.load(f)
    check_all("deriv" in json.dumps(doc), "the trace file does not name the halo site")


def test_trace_off_and_closed():
    ctx = rmaop.Context(backend="twosided")
    A = rmaop.MPISecondDerivative(DIMS, context=ctx)
    trace.enable(ctx, False)
    A.apply(np.ones(A._m.local_n))
    check_all(all(s.calls == 0 for s in trace.sites(ctx)), "sites recorded while tracing is off")
    A.close()
    ctx.close()
    with pytest.raises(ValueError, match="closed"):
        trace.sites(ctx)
    with pytest.raises(KeyError):
        trace.enable(rmaop.default_context(), "loud")


def tiny_probe(out):
    # a few seconds: small messages only, 1 ms per point, no cold-cache points
    return roofline.probe(out=out, quick=True, paths="rma.lock.shm,twosided", max_bytes=4096, point_ms=1,
                          min_reps=3, max_reps=20, cold_reps=0)


@pytest.fixture(scope="module")
def profile(shared_dir):
    if size < 2:
        pytest.skip("rmaop-roofline probe needs 2 ranks or more")
    return tiny_probe(os.path.join(shared_dir, "profile.json"))


def test_probe_one_rank(shared_dir):
    if size > 1:
        pytest.skip("one rank only")
    with pytest.raises(roofline.RooflineError):  # the tool refuses one rank (status 2), nothing crashes
        tiny_probe(os.path.join(shared_dir, "profile1.json"))


def test_probe(profile):
    check_all(isinstance(profile, dict) and os.path.exists(profile["file"]) and os.path.exists(profile["svg"]),
              f"profile {profile.get('file')} / {profile.get('svg')}")
    check_all(profile["ranks"] == size and profile["quick"], f"{profile['ranks']} {profile['quick']}")
    names = json.dumps(profile["paths"])
    check_all("rma.lock.shm" in names and "twosided" in names, f"paths {names[:200]}")


def test_run_on_traces(traced, profile, shared_dir):
    _, files = traced
    rep = roofline.run(traces=[files], profile=profile["file"], out=os.path.join(shared_dir, "report"))
    check_all(isinstance(rep, dict) and all(os.path.exists(rep[k]) for k in ("file", "csv", "svg")),
              f"report files {rep.get('file')} {rep.get('csv')} {rep.get('svg')}")
    check_all(rep["runs"] and "deriv" in json.dumps(rep["runs"]), "the report does not place the halo site")


def test_roofline_errors(shared_dir):
    with pytest.raises(roofline.RooflineError):
        roofline.run(traces=[os.path.join(shared_dir, "no-such-trace.json")],
                     profile=os.path.join(shared_dir, "no-such-profile.json"), out=os.path.join(shared_dir, "x"))
