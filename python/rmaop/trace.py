"""Trace sites of a context: every plan, reduction and epoch label with its calls, messages, bytes and times
(rmaop_trace_*; what rmaop-roofline places on the roofline)."""
from ctypes import byref, c_int
from dataclasses import dataclass

from . import _lib
from ._lib import call


@dataclass
class Site:
    label: str
    kind: str          # "plan", "reduce", "epoch"
    backend: str
    transport: str
    sync: str
    calls: int
    calls_add: int     # of the calls, plans in ADD mode (adjoints)
    messages: int      # messages per call to other ranks
    bytes_per_message: float
    time_total: float  # seconds, begin to end
    time_min: float
    time_max: float
    time_inside: float          # seconds inside rmaop's calls, summed
    time_inside_median: float   # the typical call's time inside


def _ctx(context):
    return context.handle


def enable(context, mode=True):
    """Records trace sites: True / "on", "sync" (measurement mode, on every rank), False / "off"."""
    m = {True: 1, False: 0, "on": 1, "off": 0, "sync": 2}[mode]
    call("rmaop_trace_enable", _ctx(context), m, ctx=_ctx(context))


def reset(context):
    call("rmaop_trace_reset", _ctx(context), ctx=_ctx(context))


def sites(context):
    """This rank's sites as a list of Site."""
    h = _ctx(context)
    n = c_int()
    call("rmaop_trace_count", h, byref(n), ctx=h)
    out = []
    for i in range(n.value):
        s = _lib.TraceSite()
        call("rmaop_trace_get", h, i, byref(s), ctx=h)
        out.append(Site(*(getattr(s, f).decode() if isinstance(getattr(s, f), bytes) else getattr(s, f)
                          for f, _ in _lib.TraceSite._fields_)))
    return out


def write_json(context, path):
    """Writes the sites as JSON ("%r" in the path becomes the rank; without it rank 0 writes): the file
    ``rmaop-roofline run --trace`` reads."""
    call("rmaop_trace_write_json", _ctx(context), str(path).encode(), ctx=_ctx(context))
