"""Offline: bdiag/deriv1d reduction sites priced with the same-bytes reduction curve (cold.reduce_curve_same_bytes)
instead of the fresh-bytes one, against the same rounds' bench files. Usage: python3 samebytes.py DIR PROBLEM MODE
MODE: fresh (reproduce the reports), same (same-bytes curve for reduce sites), fits (same-bytes where the node's
footprint (ranks x footprint) fits the LLC, else fresh)."""
import json, math, sys, glob, os, statistics as st
D, prob, mode = sys.argv[1], sys.argv[2], sys.argv[3]
MIN_REL = 0.5  # ROOF_COLD_MIN_REL

def fractions(b, t, warm):
    n = len(t)
    full = t[-1] - warm
    if not (warm > 0) or not (full >= MIN_REL * warm):
        return None
    g = [0.0] * n
    g[-1] = 1.0
    for i in range(n - 2, -1, -1):
        g[i] = min(g[i + 1], max(0.0, (t[i] - warm) / full))
    return g

def frac(b, t, warm, d):
    g = fractions(b, t, warm)
    if g is None:
        return None
    if d >= b[-1]:
        return 1.0
    if d <= b[0]:
        return g[0]
    i = 1
    while b[i] < d:
        i += 1
    w = math.log(d / b[i - 1]) / math.log(b[i] / b[i - 1])
    return g[i - 1] + w * (g[i] - g[i - 1])

def path_curve(p, which):
    c = p["cold"]
    key = "reduce_curve" if which == "fresh" or not c.get("reduce_curve_same_bytes") else "reduce_curve_same_bytes"
    pts = c.get(key) or []
    b = [q["bytes"] for q in pts] + [c["sweep_bytes"]]
    t = [q["t"] for q in pts] + [c["reduce"]["cold"]]
    return b, t, c["reduce"]["warm"]

rounds = sorted(int(os.path.basename(f).split("-")[1].split(".")[0]) for f in glob.glob(f"{D}/{prob}-*.json") if os.path.basename(f).split("-")[1].split(".")[0].isdigit())
pred = {}; meas = {}; orig = {}
for r in rounds:
    prof = json.load(open(f"{D}/profile-{r}.json"))
    llc = prof["cache"].get("llc_bytes", 0)
    paths = {p["name"]: p for p in prof["paths"]}
    rep = json.load(open(f"{D}/{prob}-{r}.json"))
    for run in rep["runs"]:
        name = run["path"]
        p = paths.get(name)
        tot = 0.0
        for s in run["sites"]:
            op = [o for o in s["on_paths"] if o["path"] == name][0]
            t = op["predicted_time"]
            if s["kind"] == "reduce" and p is not None and mode != "fresh":
                use = mode
                if mode == "fits":
                    use = "same" if prof["ranks"] * run["footprint"] <= llc else "fresh"
                if mode == "freshcalc":
                    use = "fresh"
                if mode == "rule":  # the same bytes where the reuse distance is the whole footprint
                    use = "same" if s["reuse_bytes"] >= run["footprint"] else "fresh"
                b, tt, warm = path_curve(p, use)
                f = frac(b, tt, warm, s["reuse_bytes"])
                c = p["cold"]
                gap, reuse = s.get("gap_bytes", 0), s["reuse_bytes"]
                ae = c.get("reduce_after_epoch")
                if f is not None and ae and gap > 0 and gap < reuse and c["reduce"]["penalty"] > 0:
                    rho = min(1, max(0, (ae["cold"] - ae["warm"]) / c["reduce"]["penalty"]))
                    bf, tf, wf = path_curve(p, "fresh")
                    fg = frac(bf, tf, wf, gap)
                    f = rho * f + (1 - rho) * fg
                if f is not None:
                    t = op["predicted_time_warm"] + f * op["cold_penalty"]
            tot += s["calls_per_iter"] * t
        pred.setdefault(name, []).append(tot)
        orig.setdefault(name, []).append(run["predicted_comm_per_iter"][name])
    b = json.load(open(f"{D}/bench-{prob}-{r}.json"))
    for p in b["paths"]:
        m = p["synchronized_comm_per_iter_seconds"]
        if m is None:
            for k, v in p.items():
                if "sync" in k and isinstance(v, (int, float)):
                    m = v
        meas.setdefault(p["path"], []).append(m)
for name in sorted(pred):
    mp, mo, mm = st.median(pred[name]), st.median(orig[name]), st.median(meas[name])
    print(f"{abs(mp/mm-1) <= 0.25:d} {abs(mo/mm-1) <= 0.25:d} {name:16s} model {mp*1e6:6.2f} (report {mo*1e6:6.2f}) measured {mm*1e6:6.2f}  error {mp/mm-1:+.0%} (report {mo/mm-1:+.0%})")
