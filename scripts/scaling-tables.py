#!/usr/bin/env python3
"""Tables of the multi-GPU scaling runs (scripts/gpu-scaling.sh), from the files it wrote in one directory.

    python3 scripts/scaling-tables.py DIR

DIR holds bench-<problem tag>-p<P>.json (rmaop-bench --json) and profile-p<P>.json (rmaop-roofline probe).
Prints, per problem tag, each path's per-iteration time (median of the interleaved repeats, us) and
communication share at every P, and the scaling efficiency relative to 1 and to 2 GPUs:
  weak (the work per GPU fixed):  E(P | Q) = t(Q) / t(P)
  strong (the whole problem fixed): E(P | Q) = Q t(Q) / (P t(P))
lap2d's weak series takes its P = 1 point from the strong one (the same 8192 x 8192 grid). Then, per probe, each
path's fit (alpha, o, beta of the first piece, L = T(1, 8 B), quality) and its reduction of 1 and 8 doubles
(8 B and 64 B, timed as a solver's reduction site) and of 3 doubles after a device dot; then each
reduce-p<P>.json of rmaop-reduce-bench (NCCL's allreduce, MPI_Allreduce, rmaop_allreduce per path, 8 B .. 64 B).
"""
import glob
import json
import os
import re
import sys

WEAK = {"deriv1d-2e20": "deriv1d, 2^20 per GPU (weak)", "deriv1d-2e26": "deriv1d, 2^26 per GPU (weak)",
        "lap2d-weak": "lap2d, 8192 sqrt(P) squared grid (weak)", "bdiag": "bdiag, one 8192^2 block per GPU (weak)"}
STRONG = {"lap2d-strong": "lap2d, 8192^2 grid (strong)"}


def load_benches(d):
    runs = {}  # tag -> P -> path -> (seconds per iteration, comm share)
    for f, j in json_files(d, "bench-*-p*.json"):
        m = re.match(r"bench-(.+)-p(\d+)\.json$", os.path.basename(f))
        for p in j.get("paths", []):
            runs.setdefault(m.group(1), {}).setdefault(int(m.group(2)), {})[p["path"]] = (
                p["iter_seconds"]["median"], p.get("comm_share", float("nan")))
    if "lap2d-weak" in runs and 1 in runs.get("lap2d-strong", {}):
        runs["lap2d-weak"][1] = runs["lap2d-strong"][1]
    return runs


def eff(t, P, Q, weak):
    if Q not in t or P not in t or not t[P] > 0:
        return None
    return t[Q] / t[P] if weak else Q * t[Q] / (P * t[P])


def bench_tables(runs):
    for tag in list(WEAK) + list(STRONG):
        if tag not in runs:
            continue
        weak = tag in WEAK
        per = runs[tag]
        Ps = sorted(per)
        paths = sorted({p for P in Ps for p in per[P]})
        print(f"\n### {WEAK.get(tag) or STRONG[tag]}")
        head = "| path | " + " | ".join(f"P={P} us/it (comm)" for P in Ps)
        effs = [(P, Q) for P in Ps for Q in (1, 2) if Q < P and Q in per]
        head += "".join(f" | E({P}\\|{Q})" for P, Q in effs)
        print(head + " |")
        print("|" + " --- |" * (1 + len(Ps) + len(effs)))
        for path in paths:
            # P = 1 has no messages: every path's solve is the same; take the path's own where it ran.
            t = {P: per[P][path][0] for P in Ps if path in per[P]}
            cells = []
            for P in Ps:
                if path in per[P]:
                    s, c = per[P][path]
                    cells.append(f"{s * 1e6:.1f} ({c * 100:.0f} %)")
                else:
                    cells.append("–")
            for P, Q in effs:
                e = eff(t, P, Q, weak)
                cells.append(f"{e:.2f}" if e is not None else "–")
            print(f"| {path} | " + " | ".join(cells) + " |")


def json_files(d, pattern):
    """(path, parsed JSON) of every readable file matching pattern in d, sorted by name."""
    for f in sorted(glob.glob(os.path.join(d, pattern))):
        try:
            yield f, json.load(open(f))
        except (OSError, ValueError) as e:
            print(f"{f}: unreadable ({e})", file=sys.stderr)


def probe_tables(d):
    for f, j in json_files(d, "profile-p*.json"):
        print(f"\n### probe, {j.get('ranks')} ranks, {j.get('memory')} memory{' (quick)' if j.get('quick') else ''}"
              f" ({os.path.basename(f)})")
        print("| path | alpha us | o us | beta GB/s | L us | fit | reduce 8 B us | reduce 64 B us | 3 doubles after a device dot us |")
        print("|" + " --- |" * 9)
        for p in j.get("paths", []):
            fit, der = p.get("fit", {}), p.get("derived", {})
            piece = (fit.get("pieces") or [{}])[0]
            red = {q["count"]: q["t"] for q in p.get("reduce", {}).get("points", [])}
            cold = p.get("cold", {}).get("reduce", {})

            def us(x):
                return f"{x * 1e6:.2f}" if isinstance(x, (int, float)) and x > 0 else "–"
            beta = piece.get("beta")
            print(f"| {p['name']} | {us(fit.get('alpha'))} | {us(piece.get('o'))} | "
                  f"{beta / 1e9:.1f} | " if beta else f"| {p['name']} | {us(fit.get('alpha'))} | {us(piece.get('o'))} | – | ",
                  end="")
            print(f"{us(der.get('L'))} | {fit.get('quality', '–')} | {us(red.get(1))} | {us(red.get(8))} | "
                  f"{us(cold.get('cold'))} |")


def reduce_tables(d):
    for f, j in json_files(d, "reduce-p*.json"):
        print(f"\n### rmaop-reduce-bench, {j.get('ranks')} ranks ({os.path.basename(f)}), us")
        print("| way | " + " | ".join(f"{b} B" for b in j.get("bytes", [])) + " |")
        print("|" + " --- |" * (1 + len(j.get("bytes", []))))
        for w in j.get("ways", []):
            cells = [f"{x * 1e6:.2f}" for x in w["seconds"]] if w.get("seconds") else ["–"] * len(j.get("bytes", []))
            print(f"| {w['name']} | " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = load_benches(sys.argv[1])
    if not runs:
        print(f"{sys.argv[1]}: no bench-*-p*.json files", file=sys.stderr)
    bench_tables(runs)
    probe_tables(sys.argv[1])
    reduce_tables(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
