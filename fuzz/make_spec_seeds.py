#!/usr/bin/env python3
"""Writes the seed inputs of fuzz_spec (fuzz/corpus/spec/): one valid spec of each kind, encoded the way
fuzz_spec.c reads its bytes (u8, i32, i64, f64, dtype, label there). Run from anywhere:

    python3 fuzz/make_spec_seeds.py

Replay one to see what it does: FUZZ_SPEC_VERBOSE=1 build-fuzz/fuzz/fuzz_spec fuzz/corpus/spec/deriv1d-centered3
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "spec")

PLAN, DERIV1, DERIV2, LAPLACIAN, HALO, GRADIENT, MATMUL = 0, 1, 2, 3, 4, 5, 6
CTX = {"rma.fence": 0, "rma.pscw": 1, "rma.lock": 2, "twosided": 3}
F32, F64, C64, C128 = 0, 1, 2, 3


def head(ctx, spec):
    return bytes([CTX[ctx] << 4 | spec])


def i64(v):  # 6: u8 % 17 (0..16); 3: a big-endian u16; 0: an int8
    if 0 <= v <= 16:
        return bytes([6, v])
    if 0 <= v <= 0xFFFF:
        return bytes([3, v >> 8, v & 0xFF])
    if -128 <= v < 0:
        return bytes([0, v & 0xFF])
    return bytes([5]) + struct.pack(">q", v)


def i32(v):  # (sel % 12) - 2 for sel < 192
    assert -2 <= v <= 9
    return bytes([v + 2])


def dtype(t):
    return bytes([t])


def f64_one():
    return bytes([0])  # 1.0


def label(text=None):
    if text is None:
        return bytes([0])  # NULL
    assert len(text) <= 40
    n = len(text) if len(text) % 4 else len(text) + 41  # n % 4 == 0 reads as NULL; the length is n % 41
    return bytes([n]) + text.encode()


def transfers(ts):
    out = i32(len(ts)) + bytes([1])  # count, not NULL
    for peer, src, dst, count in ts:
        assert peer == 0
        out += bytes([0]) + i64(src) + i64(dst) + i64(count)
    return out


def plan(ctx, dt, src_len, dst_len, sends, recvs=None, name="halo"):
    b = head(ctx, PLAN) + dtype(dt) + i64(src_len) + i64(dst_len) + transfers(sends)
    b += bytes([0]) + transfers(recvs) if recvs is not None else bytes([1])  # explicit receives, or derived
    return b + label(name)


def grid(dims, local_rows=-1):
    b = i32(len(dims)) + b"".join(i64(d) for d in dims)
    return b + bytes([0 if local_rows == -1 else 128])  # -1, or dims[0]


def deriv(ctx, order, dims, axis, kind, dt=F64, edge=0):
    return head(ctx, DERIV1 if order == 1 else DERIV2) + grid(dims) + i32(axis) + i32(kind) + i32(edge) + \
        bytes([0]) + dtype(dt) + label()  # sampling 0 (one)


def laplacian(ctx, dims, dt=F64):
    b = head(ctx, LAPLACIAN) + grid(dims) + i32(0)  # naxes 0: the last two axes
    b += (i32(0) + bytes([0]) + bytes([0])) * 8  # axes, weights 0 (ones), sampling 0 (one)
    return b + i32(0) + i32(2) + dtype(dt) + label("lap")


def halo(ctx, dims, lo, hi, dt=F64):
    b = head(ctx, HALO) + i32(len(dims))
    for d in range(4):
        b += i64(dims[d] if d < len(dims) else 1) + bytes([0])  # procs: the 1-rank grid
        b += bytes([0, lo[d] if d < len(lo) else 0]) + bytes([0, hi[d] if d < len(hi) else 0])
    return b + dtype(dt) + label()


def gradient(ctx, dims, kind, dt=F64):
    return head(ctx, GRADIENT) + grid(dims) + bytes([0]) * 8 + i32(0) + i32(kind) + dtype(dt) + label("grad")


def matmul(ctx, kind, n, k, m, dt=F64):
    return head(ctx, MATMUL) + bytes([0, kind]) + dtype(dt) + i64(n) + i64(k) + i64(m) + bytes([0]) + label()


SEEDS = {
    "plan-ring-self": plan("rma.fence", F64, 16, 16, [(0, 0, 8, 8), (0, 8, 0, 8)]),
    "plan-explicit-recvs": plan("twosided", C128, 8, 8, [(0, 0, 4, 4)], [(0, 0, 4, 4)]),
    "plan-empty": plan("rma.lock", F32, 0, 0, []),
    "deriv1d-centered3": deriv("rma.fence", 1, [4096], 0, 2),
    "deriv2d-forward-axis1": deriv("twosided", 1, [16, 16], 1, 0, dt=C64),
    "second-deriv3d": deriv("rma.pscw", 2, [8, 8, 8], 0, 2),
    "laplacian2d": laplacian("rma.lock", [32, 32]),
    "halo2d": halo("rma.pscw", [12, 10], [1, 2], [2, 1]),
    "gradient3d-centered5": gradient("twosided", [10, 8, 8], 3, dt=C128),
    "matmul-block": matmul("rma.fence", 0, 12, 8, 5),
    "matmul-summa": matmul("rma.lock", 1, 6, 6, 6, dt=C64),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))
