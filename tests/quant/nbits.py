#!/usr/bin/python3
"""Weight-only 4/2/8-bit matrix products: models, inputs and references for
tests/quant/nbits.sh, and the comparison of outputs.

  nbits.py make DIR           writes DIR/CASE/{model.onnx, a.bin, ref.bin, inputs}
  nbits.py compare CASE_DIR [ROWS OF]
                              compares CASE_DIR/mlcc.bin (and ort.bin) with ref.bin
                              (with ROWS OF: its leading ROWS of OF rows)
  nbits.py bench DIR K N [M]  A [M, K] (M default 1) times a K x N weight three
                              ways (see benchmarks/nbits/run)
  nbits.py make-bad DIR       invalid MatMulNBits nodes: DIR/NAME.onnx and
                              DIR/NAME.expect (a part of the expected error)

The models: com.microsoft MatMulNBits as ONNX Runtime's quantizer writes it
(B [N, k_blocks, blob] uint8, scales [N * k_blocks], zero points packed uint8,
float or absent, bias), with 2, 4 and 8 bits, K a multiple of the block or
not, A of rank 2 and 3; and MatMul of a DequantizeLinear of int4/uint4
constant weights (opset 21), blocked along K or per output channel, which
mlcc rewrites into the same kernel. The reference is numpy in float64 from
the integer codes, scales and zero points.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h

rng = np.random.default_rng(11)
INT4, UINT4 = 22, 21  # TensorProto codes (onnx 1.12's Python lacks the names)


def pack(codes, bits):
    """Packs unsigned codes (last axis) low bits first, as ONNX and ORT do."""
    per = 8 // bits
    c = codes.reshape(-1)
    pad = (-len(c)) % per
    c = np.concatenate([c, np.zeros(pad, dtype=c.dtype)]).astype(np.uint8)
    c = c.reshape(-1, per)
    out = np.zeros(len(c), dtype=np.uint8)
    for r in range(per):
        out |= (c[:, r] & ((1 << bits) - 1)) << (r * bits)
    return out


def raw_tensor(name, dtype_code, dims, raw):
    t = TP()
    t.name = name
    t.dims.extend(dims)
    t.data_type = dtype_code
    t.raw_data = raw
    return t


def f32(name, a):
    a = np.asarray(a, dtype=np.float32)
    return raw_tensor(name, TP.FLOAT, a.shape, a.tobytes())


def save(d, nodes, ins, outs, inits, opsets):
    g = h.make_graph(nodes, os.path.basename(d), ins, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid(dom, v) for dom, v in opsets])
    m.ir_version = 10 if any(v >= 21 for dom, v in opsets if dom == "") else 8
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def write_case(d, a, ref, half=False):
    a.astype(np.float16 if half else np.float32).tofile(os.path.join(d, "a.bin"))
    ref.astype(np.float64).tofile(os.path.join(d, "ref.bin"))
    if half:  # float16 output; ort_run.js feeds float32 only
        open(os.path.join(d, "float16"), "w").close()
    with open(os.path.join(d, "inputs"), "w") as f:
        f.write(f"{d}/a.bin:{','.join(str(x) for x in a.shape)}\n")


def nbits_case(d, a_shape, n, bits, block, zp_kind, bias, half=False, bounded=False):
    k = a_shape[-1]
    ft = np.float16 if half else np.float32
    FT = TP.FLOAT16 if half else TP.FLOAT

    def fl(name, v):
        v = np.asarray(v, dtype=ft)
        return raw_tensor(name, FT, v.shape, v.tobytes())

    kb = (k + block - 1) // block
    q = rng.integers(0, 1 << bits, size=(n, kb * block))
    q[:, k:] = 0  # the padding of the last block
    scales = (rng.random((n, kb)) * 0.05 + 0.01).astype(ft).astype(np.float64)
    b = pack(q, bits).reshape(n, kb, block * bits // 8)
    inits = [raw_tensor("B", TP.UINT8, b.shape, b.tobytes()), fl("scales", scales.reshape(-1))]
    ins = ["A", "B", "scales"]
    if zp_kind == "packed":
        zq = rng.integers(0, 1 << bits, size=(n, kb))
        zp = zq.astype(np.float64)
        zb = np.stack([pack(row, bits) for row in zq])
        inits.append(raw_tensor("zp", TP.UINT8, [zb.size], zb.tobytes()))
        ins.append("zp")
    elif zp_kind == "float":
        zp = rng.random((n, kb)) * (1 << bits)
        zp = zp.astype(ft).astype(np.float64)
        inits.append(fl("zp", zp.reshape(-1)))
        ins.append("zp")
    else:
        zp = np.full((n, kb), float(1 << (bits - 1)))
        ins.append("")
    w = (q[:, :k] - np.repeat(zp, block, axis=1)[:, :k]) * np.repeat(scales, block, axis=1)[:, :k]
    if bias:
        bv = rng.standard_normal(n).astype(ft)
        inits.append(fl("bias", bv))
        ins += ["", "bias"]
    while ins and ins[-1] == "":
        ins.pop()
    a = rng.standard_normal(a_shape).astype(ft)
    ref = a.astype(np.float64) @ w.T
    if bias:
        ref = ref + bv.astype(np.float64)
    node = h.make_node("MatMulNBits", ins, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits,
                       block_size=block, accuracy_level=0)
    out_shape = list(a_shape[:-1]) + [n]
    if bounded:  # A's rows and Y's are a dimension "seq", its MAX a_shape[0]
        a_shape, out_shape = ["seq"] + list(a_shape[1:]), ["seq"] + out_shape[1:]
    save(d, [node], [h.make_tensor_value_info("A", FT, list(a_shape))],
         [h.make_tensor_value_info("Y", FT, out_shape)], inits,
         [("", 17), ("com.microsoft", 1)])
    write_case(d, a, ref, half)
    if bounded:
        with open(os.path.join(d, "bounded"), "w") as f:
            f.write(f"{a.shape[0]}\n")


def dq_case(d, a_shape, n, signed, block, gemm_trans_b=False):
    """MatMul(A, DequantizeLinear(W)) with int4/uint4 W [K, N]: blocked along
    K (block > 0) or per output channel (axis 1); or Gemm(A, DQ(W), bias)
    with W [N, K] and transB=1."""
    k = a_shape[-1]
    if gemm_trans_b:
        return dq_gemm_case(d, a_shape, n, signed, block)
    lo, hi = (-8, 8) if signed else (0, 16)
    code = INT4 if signed else UINT4
    wq = rng.integers(lo, hi, size=(k, n))
    if block:
        sshape = ((k + block - 1) // block, n)
        attrs = dict(axis=0, block_size=block)
    else:
        sshape = (n,)
        attrs = dict(axis=1)
    scale = (rng.random(sshape) * 0.05 + 0.01).astype(np.float32)
    zq = rng.integers(lo, hi, size=sshape)
    if block:
        s_full = np.repeat(scale, block, axis=0)[:k]
        z_full = np.repeat(zq, block, axis=0)[:k]
    else:
        s_full, z_full = scale[None, :], zq[None, :]
    w = (wq - z_full) * s_full.astype(np.float64)
    inits = [raw_tensor("W", code, [k, n], pack(wq & 15, 4).tobytes()), f32("ws", scale),
             raw_tensor("wz", code, list(sshape), pack(zq & 15, 4).tobytes())]
    nodes = [h.make_node("DequantizeLinear", ["W", "ws", "wz"], ["Wf"], **attrs),
             h.make_node("MatMul", ["A", "Wf"], ["Y"])]
    a = rng.standard_normal(a_shape).astype(np.float32)
    save(d, nodes, [h.make_tensor_value_info("A", TP.FLOAT, list(a_shape))],
         [h.make_tensor_value_info("Y", TP.FLOAT, list(a_shape[:-1]) + [n])], inits, [("", 21)])
    write_case(d, a, a.astype(np.float64) @ w)


def dq_gemm_case(d, a_shape, n, signed, block):
    k = a_shape[-1]
    lo, hi = (-8, 8) if signed else (0, 16)
    code = INT4 if signed else UINT4
    wq = rng.integers(lo, hi, size=(n, k))
    kb = (k + block - 1) // block
    scale = (rng.random((n, kb)) * 0.05 + 0.01).astype(np.float32)
    zq = rng.integers(lo, hi, size=(n, kb))
    w = (wq - np.repeat(zq, block, axis=1)[:, :k]) * np.repeat(scale, block, axis=1)[:, :k]
    bias = rng.standard_normal(n).astype(np.float32)
    inits = [raw_tensor("W", code, [n, k], pack(wq & 15, 4).tobytes()), f32("ws", scale),
             raw_tensor("wz", code, [n, kb], pack(zq & 15, 4).tobytes()), f32("bias", bias)]
    nodes = [h.make_node("DequantizeLinear", ["W", "ws", "wz"], ["Wf"], axis=1, block_size=block),
             h.make_node("Gemm", ["A", "Wf", "bias"], ["Y"], transB=1)]
    a = rng.standard_normal(a_shape).astype(np.float32)
    save(d, nodes, [h.make_tensor_value_info("A", TP.FLOAT, list(a_shape))],
         [h.make_tensor_value_info("Y", TP.FLOAT, [a_shape[0], n])], inits, [("", 21)])
    write_case(d, a, a.astype(np.float64) @ w.T + bias)


def make(out):
    nbits_case(f"{out}/nbits4_zp_bias", (1, 256), 96, 4, 32, "packed", True)
    nbits_case(f"{out}/nbits4_nozp_rank3", (3, 5, 100), 40, 4, 16, "none", False)
    nbits_case(f"{out}/nbits4_floatzp", (2, 64), 48, 4, 32, "float", False)
    nbits_case(f"{out}/nbits4_block128", (1, 300), 33, 4, 128, "packed", False)
    nbits_case(f"{out}/nbits2", (2, 96), 24, 2, 32, "packed", True)
    nbits_case(f"{out}/nbits8", (2, 80), 24, 8, 16, "packed", False)
    nbits_case(f"{out}/nbits4_float16", (6, 128), 40, 4, 32, "float", True, half=True)
    nbits_case(f"{out}/nbits4_bounded", (16, 64), 24, 4, 32, "packed", True, bounded=True)
    dq_case(f"{out}/dq_int4_blocked", (1, 128), 64, True, 32)
    dq_case(f"{out}/dq_uint4_blocked_rank3", (2, 3, 100), 40, False, 16)
    dq_case(f"{out}/dq_int4_per_channel", (1, 72), 24, True, 0)
    dq_case(f"{out}/dq_uint4_gemm_transb", (3, 96), 20, False, 32, gemm_trans_b=True)


def compare(d, rows=None, of=None):
    """rows/of: a bounded run at `rows` of the reference's `of` rows (the
    leading values)."""
    ref = np.fromfile(os.path.join(d, "ref.bin"), dtype=np.float64)
    if rows is not None:
        ref = ref[: ref.size // of * rows]
    scale = max(np.abs(ref).max(), 1e-30)
    half = os.path.exists(os.path.join(d, "float16"))
    # float16 outputs: 4 units in the last place at the largest value.
    tol = 4 * 2.0 ** -10 if half else 1e-5
    ok = True
    parts = []
    for who in ("mlcc", "ort"):
        p = os.path.join(d, who + ".bin")
        if not os.path.exists(p):
            continue
        got = np.fromfile(p, dtype=np.float16 if half else np.float32)[: ref.size]
        got = got.astype(np.float64)
        if got.size != ref.size:
            parts.append(f"{who}: {got.size} values, expected {ref.size}")
            ok = False
            continue
        err = np.abs(got - ref).max() / scale
        parts.append(f"{who} {err:.1e}")
        ok = ok and err <= tol
    print(("PASS " if ok else "FAIL ") + "max |x - ref| / max |ref|: " + ", ".join(parts) +
          f" (<= {tol:.1e})")
    return 0 if ok else 1


def bench(out, k, n, m=1):
    """A [M, K] times a K x N weight: MatMulNBits (4-bit, block 32, packed
    zero points), DequantizeLinear(int4 blocked) + MatMul, and MatMul of
    float32 weights of the same values."""
    global rng
    rng = np.random.default_rng(5)
    nbits_case(f"{out}/nbits4", (m, k), n, 4, 32, "packed", False)
    dq_case(f"{out}/dq_int4", (m, k), n, True, 32)
    d = f"{out}/float32"
    w = rng.standard_normal((k, n)).astype(np.float32) * 0.05
    a = rng.standard_normal((m, k)).astype(np.float32)
    save(d, [h.make_node("MatMul", ["A", "W"], ["Y"])],
         [h.make_tensor_value_info("A", TP.FLOAT, [m, k])],
         [h.make_tensor_value_info("Y", TP.FLOAT, [m, n])], [f32("W", w)], [("", 17)])
    write_case(d, a, a.astype(np.float64) @ w)


def make_bad(out):
    os.makedirs(out, exist_ok=True)

    def bad(name, expect, k=64, n=8, bits=4, block=32, b_bytes=None, extra_inputs=()):
        kb = (k + block - 1) // block
        nb = b_bytes if b_bytes is not None else n * kb * max(block * bits // 8, 1)
        inits = [raw_tensor("B", TP.UINT8, [nb], bytes(nb)), f32("scales", np.ones(n * kb))]
        ins = ["A", "B", "scales"] + list(extra_inputs)
        if "g_idx" in extra_inputs:
            inits.append(raw_tensor("g_idx", TP.INT32, [k], np.zeros(k, np.int32).tobytes()))
        node = h.make_node("MatMulNBits", ins, ["Y"], name="bad", domain="com.microsoft", K=k,
                           N=n, bits=bits, block_size=block)
        save(f"{out}/{name}", [node], [h.make_tensor_value_info("A", TP.FLOAT, [1, k])],
             [h.make_tensor_value_info("Y", TP.FLOAT, [1, n])], inits,
             [("", 17), ("com.microsoft", 1)])
        with open(f"{out}/{name}/expect", "w") as f:
            f.write(expect)

    bad("bits3", "bits must be 2, 4 or 8, got 3", bits=3)
    bad("block_size_24", "block_size must be a power of 2", block=24)
    bad("b_too_small", "B of shape [100] must hold", b_bytes=100)
    bad("g_idx", "g_idx", extra_inputs=("", "g_idx"))


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "make" and len(sys.argv) == 3:
        make(sys.argv[2])
    elif cmd == "compare" and len(sys.argv) == 3:
        sys.exit(compare(sys.argv[2]))
    elif cmd == "compare" and len(sys.argv) == 5:
        sys.exit(compare(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    elif cmd == "make-bad" and len(sys.argv) == 3:
        make_bad(sys.argv[2])
    elif cmd == "bench" and len(sys.argv) in (5, 6):
        bench(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
              int(sys.argv[5]) if len(sys.argv) == 6 else 1)
    else:
        sys.exit(__doc__)
