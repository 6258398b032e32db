#!/usr/bin/python3
"""integer_ops.py - the integer kernels of QLinearConv, QLinearMatMul,
ConvInteger and MatMulInteger against numpy and ONNX Runtime, on the cases
the ONNX conformance tests leave out: constant weights and zero points
(folded corrections), nonzero and per-channel zero points, windows clipped
at every border (asymmetric pads, strides, dilations, groups, auto_pad, 1-D
and 3-D), batched products.

    tests/quant/integer_ops.py MLCC WORKDIR  (run by tests/quant/run.sh)

Each case is a model float x -> QuantizeLinear -> op -> DequantizeLinear
(or Cast for the int32 ops) -> float y, built so that the quantized input
is exactly the random integers drawn. It is compiled with `mlcc --name m`,
linked with tools/conformance/driver.c and run; the output must equal the
numpy reference exactly (integer accumulation; requantization in f32 like
ONNX Runtime: round_half_even(f32(acc) * f32(x_scale * w_scale / y_scale)))
and, when onnxruntime-node is in NODE_PATH (scripts/lib/ort.sh), ONNX
Runtime's output exactly where ORT computes exactly: ort_int8.py probes
which path its uint8 x int8 kernels take on this CPU, and where they
saturate int16 pair sums (x86 without VNNI) the cases with full-range int8
weights are not compared with ORT (the line says why); every such case has
a twin with 7-bit weights (`_w7`, [-64, 63]: no pair sum can saturate),
compared with ORT exactly on every CPU. Exit status 0 when every case
matches.

Environment: CC (default cc), CFLAGS (added to the driver's compilation and
the link, e.g. -fsanitize=address,undefined), MLCC_ARGS (extra mlcc
arguments, split on spaces, e.g. "--backend c"; mlcc's C backend reads
CFLAGS too), RUN_PREFIX (a command that runs the test programs, split on
spaces, e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu" with CC
aarch64-linux-gnu-gcc and MLCC_ARGS "--target aarch64-linux"), ORT_PREFIX
(a command that runs ONNX Runtime's node, e.g. "qemu-x86_64 -cpu
EPYC-Rome" for ORT as on an AVX2-only CPU; see ort_int8.py).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ort_int8

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def qrange(t):
    return (0, 255) if t == TensorProto.UINT8 else (-128, 127)


def rand_q(rng, t, shape, seven_bits=False):
    lo, hi = (-64, 63) if seven_bits else qrange(t)
    return rng.integers(lo, hi + 1, size=shape).astype(NP[t])


def conv_ref(x, w, xz, wz, bias, group, strides, dil, pads):
    """int64 convolution of (x - xz) and (w - wz[m]), the padding being xz."""
    n, c = x.shape[:2]
    m = w.shape[0]
    r = x.ndim - 2
    k = w.shape[2:]
    xp = np.pad(x.astype(np.int64) - xz,
                [(0, 0), (0, 0)] + [(pads[d], pads[d + r]) for d in range(r)])
    wc = w.astype(np.int64) - np.asarray(wz, np.int64).reshape([-1] + [1] * (r + 1))
    out_sp = [(xp.shape[2 + d] - (k[d] - 1) * dil[d] - 1) // strides[d] + 1 for d in range(r)]
    y = np.zeros([n, m] + out_sp, np.int64)
    cg, mg = c // group, m // group
    for oi in np.ndindex(*out_sp):
        sl = tuple(slice(oi[d] * strides[d], oi[d] * strides[d] + (k[d] - 1) * dil[d] + 1, dil[d])
                   for d in range(r))
        for g in range(group):
            win = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]  # n, cg, k...
            ww = wc[g * mg:(g + 1) * mg]                                  # mg, cg, k...
            y[(slice(None), slice(g * mg, (g + 1) * mg)) + oi] = np.tensordot(
                win, ww, axes=(list(range(1, r + 2)), list(range(1, r + 2))))
    if bias is not None:
        y += np.asarray(bias, np.int64).reshape([1, -1] + [1] * r)
    return y


def requant(acc, mult, yz, t):
    """ONNX Runtime's x86 requantization, in f32."""
    lo, hi = qrange(t)
    v = np.rint(acc.astype(np.float32) * mult.astype(np.float32))
    return np.clip(v + np.float32(yz), lo, hi)


def quant_input(rng, name, t, shape, scale, zp):
    """A float input whose QuantizeLinear is exactly a random q."""
    q = rand_q(rng, t, shape)
    x = ((q.astype(np.float32) - np.float32(zp)) * np.float32(scale)).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", [name + "_f", name + "_s", name + "_z"], [name])]
    inits = [numpy_helper.from_array(np.array(scale, np.float32), name + "_s"),
             numpy_helper.from_array(np.array(zp, NP[t]), name + "_z")]
    return q, x, nodes, inits


def save_case(root, name, nodes, inits, inputs, out_shape, ref):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n + "_f", TensorProto.FLOAT, list(x.shape)) for n, x in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    specs = []
    for i, (n, x) in enumerate(inputs):
        p = os.path.join(d, f"in{i}.bin")
        x.astype("<f4").tofile(p)
        specs.append(p + ":" + ",".join(str(s) for s in x.shape))
    ref.astype("<f4").tofile(os.path.join(d, "ref.bin"))
    return d, specs


def qlinearconv_case(rng, root, name, xt, wt, x_shape, w_shape, group=1, strides=None,
                     dil=None, pads=None, auto_pad=None, per_channel=True, wz_zero=False,
                     bias=True, w_runtime=False, x_const=False, w7=False):
    """x_const: x is an initializer, so that constant folding computes the
    convolution at compile time (the kernel interpreter); a zero input is
    added to the result so that the model has an input."""
    r = len(x_shape) - 2
    strides = strides or [1] * r
    dil = dil or [1] * r
    m = w_shape[0]
    xs, xz = 0.02, int(rand_q(rng, xt, ()))
    ys, yz = 0.05 + rng.random() * 0.05, int(rand_q(rng, xt, ()))
    ws = (0.002 + rng.random(m) * 0.01).astype(np.float32) if per_channel else np.array(0.004, np.float32)
    if wz_zero:
        wz = np.zeros(m if per_channel else (), NP[wt])
    else:
        wz = rand_q(rng, wt, (m,) if per_channel else (), w7)
    q, x, nodes, inits = quant_input(rng, "x", xt, x_shape, xs, xz)
    inputs = [("x", x)]
    if x_const:
        nodes, inits, inputs = [], [numpy_helper.from_array(q, "x")], []
    if w_runtime:  # weights known only at run time
        w, wf, wn, wi = quant_input(rng, "w", wt, w_shape, 0.5, 0)
        nodes += wn
        inits += wi
        inputs.append(("w", wf))
    else:
        w = rand_q(rng, wt, w_shape, w7)
        inits.append(numpy_helper.from_array(w, "w"))
    b = rng.integers(-2000, 2000, size=m).astype(np.int32) if bias else None
    inits += [numpy_helper.from_array(np.array(xs, np.float32), "xs"),
              numpy_helper.from_array(np.array(xz, NP[xt]), "xz"),
              numpy_helper.from_array(ws, "ws"), numpy_helper.from_array(wz, "wz"),
              numpy_helper.from_array(np.array(ys, np.float32), "ys"),
              numpy_helper.from_array(np.array(yz, NP[xt]), "yz")]
    ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "b"))
        ins.append("b")
    attrs = {"group": group, "strides": strides, "dilations": dil}
    if auto_pad:
        attrs["auto_pad"] = auto_pad
        # SAME_*: output = ceil(in / stride), total pad split (extra at the end
        # for SAME_UPPER).
        pads = [0] * (2 * r)
        for d in range(r):
            out = -(-x_shape[2 + d] // strides[d])
            total = max(0, (out - 1) * strides[d] + (w_shape[2 + d] - 1) * dil[d] + 1 - x_shape[2 + d])
            small = total // 2
            pads[d], pads[d + r] = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
    else:
        attrs["pads"] = pads
    nodes.append(helper.make_node("QLinearConv", ins, ["q"], **attrs))
    nodes.append(helper.make_node("DequantizeLinear", ["q", "ys", "yz"], ["y0" if x_const else "y"]))
    acc = conv_ref(q, w, xz, np.broadcast_to(wz, (m,)), b, group, strides, dil, pads)
    if x_const:
        nodes.append(helper.make_node("Add", ["y0", "z_f"], ["y"]))
        inputs.append(("z", np.zeros(acc.shape, np.float32)))
    mult = (np.float32(xs) * np.broadcast_to(ws, (m,)).astype(np.float32)) / np.float32(ys)
    mult = mult.astype(np.float32).reshape([1, -1] + [1] * r)
    yq = requant(acc, mult, yz, xt)
    ref = ((yq - yz) * np.float32(ys)).astype(np.float32)
    return save_case(root, name, nodes, inits, inputs, acc.shape, ref)


def convinteger_case(rng, root, name, xt, wt, x_shape, w_shape, pads, strides=None, group=1,
                     per_channel=False, w7=False):
    """per_channel: one w zero point per output channel (ONNX Runtime's
    ConvInteger takes only one: numpy reference only)."""
    r = len(x_shape) - 2
    strides = strides or [1] * r
    m = w_shape[0]
    xz = int(rand_q(rng, xt, ()))
    wz = rand_q(rng, wt, (m,) if per_channel else (), w7)
    q, x, nodes, inits = quant_input(rng, "x", xt, x_shape, 0.5, xz)
    w = rand_q(rng, wt, w_shape, w7)
    inits += [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(xz, NP[xt]), "xz"),
              numpy_helper.from_array(wz, "wz")]
    nodes.append(helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["acc"], pads=pads,
                                  strides=strides, group=group))
    nodes.append(helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT))
    acc = conv_ref(q, w, xz, np.broadcast_to(wz, (m,)), None, group, strides, [1] * r, pads)
    d, specs = save_case(root, name, nodes, inits, [("x", x)], acc.shape, acc.astype(np.float32))
    if per_channel:
        open(os.path.join(d, "no_ort"), "w").close()
    return d, specs


def matmul_case(rng, root, name, at, bt, a_shape, b_shape, qlinear, w7=False):
    az = int(rand_q(rng, at, ()))
    bz = int(rand_q(rng, bt, (), w7))
    q, a, nodes, inits = quant_input(rng, "a", at, a_shape, 0.03, az)
    bm = rand_q(rng, bt, b_shape, w7)
    inits += [numpy_helper.from_array(bm, "b"), numpy_helper.from_array(np.array(az, NP[at]), "az"),
              numpy_helper.from_array(np.array(bz, NP[bt]), "bz")]
    acc = np.matmul(q.astype(np.int64) - az, bm.astype(np.int64) - bz)
    if qlinear:
        bs, ys, yz = np.float32(0.007), np.float32(0.09), int(rand_q(rng, at, ()))
        inits += [numpy_helper.from_array(np.array(0.03, np.float32), "as"),
                  numpy_helper.from_array(np.array(bs, np.float32), "bs"),
                  numpy_helper.from_array(np.array(ys, np.float32), "ys"),
                  numpy_helper.from_array(np.array(yz, NP[at]), "yz")]
        nodes.append(helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["q"]))
        nodes.append(helper.make_node("DequantizeLinear", ["q", "ys", "yz"], ["y"]))
        mult = np.float32(np.float32(0.03) * bs) / ys
        ref = ((requant(acc, np.array(mult, np.float32), yz, at) - yz) * ys).astype(np.float32)
    else:
        nodes.append(helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["acc"]))
        nodes.append(helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT))
        ref = acc.astype(np.float32)
    return save_case(root, name, nodes, inits, [("a", a)], acc.shape, ref)


def make_cases(root):
    rng = np.random.default_rng(7)
    U8, I8 = TensorProto.UINT8, TensorProto.INT8
    rng7 = np.random.default_rng(8)
    c = []

    def add(make, name, xt, wt, *args, **kwargs):
        """The case; for uint8 x int8 also its twin with 7-bit weights."""
        c.append(make(rng, root, name, xt, wt, *args, **kwargs))
        if xt == U8 and wt == I8:
            c.append(make(rng7, root, name + "_w7", xt, wt, *args, w7=True, **kwargs))
    add(qlinearconv_case, "qconv_u8s8_pads_asym", U8, I8, [1, 4, 7, 6], [6, 4, 3, 3],
        pads=[1, 2, 0, 1])
    add(qlinearconv_case, "qconv_u8u8_stride2_dil2_group2", U8, U8, [2, 4, 9, 8],
        [6, 2, 3, 3], group=2, strides=[2, 2], dil=[2, 2], pads=[2, 1, 1, 2])
    add(qlinearconv_case, "qconv_i8i8_depthwise_pad1", I8, I8, [1, 5, 6, 6],
        [5, 1, 3, 3], group=5, pads=[1, 1, 1, 1])
    add(qlinearconv_case, "qconv_u8s8_symmetric_w", U8, I8, [1, 8, 5, 5], [16, 8, 3, 3],
        pads=[1, 1, 1, 1], wz_zero=True)
    add(qlinearconv_case, "qconv_u8s8_pointwise", U8, I8, [1, 8, 6, 5], [12, 8, 1, 1],
        pads=[0, 0, 0, 0], per_channel=False)
    add(qlinearconv_case, "qconv_u8s8_big_pad", U8, I8, [1, 2, 3, 4], [3, 2, 5, 5],
        pads=[4, 3, 4, 3], bias=False)
    add(qlinearconv_case, "qconv_u8s8_same_upper_s2", U8, I8, [1, 3, 7, 8], [4, 3, 4, 3],
        strides=[2, 2], auto_pad="SAME_UPPER")
    add(qlinearconv_case, "qconv_u8s8_1d", U8, I8, [2, 3, 11], [4, 3, 4],
        pads=[2, 3], strides=[2])
    add(qlinearconv_case, "qconv_u8s8_3d", U8, I8, [1, 2, 4, 5, 3], [3, 2, 2, 3, 2],
        pads=[1, 0, 1, 0, 1, 1])
    add(qlinearconv_case, "qconv_u8u8_runtime_w", U8, U8, [1, 3, 6, 6], [4, 3, 3, 3],
        pads=[1, 1, 1, 1], w_runtime=True)
    # Rows of 16 outputs or more (tiles along a row), strides that differ
    # per axis, dilation; small images (tiles over a wider grid of
    # positions); images too small for a tile (the plain loop nest).
    add(qlinearconv_case, "qconv_u8s8_rows_stride12_dil", U8, I8, [1, 3, 6, 37],
        [5, 3, 3, 3], strides=[1, 2], dil=[2, 1], pads=[2, 1, 1, 1])
    add(qlinearconv_case, "qconv_u8u8_rows_s2_group3", U8, U8, [2, 6, 9, 40],
        [9, 2, 3, 3], group=3, strides=[2, 2], pads=[1, 1, 1, 1])
    add(qlinearconv_case, "qconv_u8s8_grid_stride21", U8, I8, [1, 2, 9, 10],
        [6, 2, 3, 2], strides=[2, 1], pads=[1, 0, 1, 1])
    add(qlinearconv_case, "qconv_i8i8_depthwise_s2", I8, I8, [1, 4, 14, 14],
        [4, 1, 3, 3], group=4, strides=[2, 2], pads=[1, 1, 1, 1])
    add(qlinearconv_case, "qconv_u8s8_depthwise_nopad", U8, I8, [1, 3, 8, 9],
        [6, 1, 3, 3], group=3, pads=[0, 0, 0, 0])
    add(qlinearconv_case, "qconv_u8s8_tiny", U8, I8, [1, 2, 3, 3], [3, 2, 3, 3],
        pads=[1, 1, 1, 1])
    add(qlinearconv_case, "qconv_u8s8_pointwise_tiny", U8, I8, [1, 4, 3, 3],
        [5, 4, 1, 1], pads=[0, 0, 0, 0])
    add(qlinearconv_case, "qconv_u8s8_pointwise_s2_pad", U8, I8, [1, 4, 9, 8],
        [6, 4, 1, 1], strides=[2, 2], pads=[0, 1, 1, 0])
    add(qlinearconv_case, "qconv_u8s8_pointwise_group", U8, I8, [2, 6, 5, 7],
        [9, 2, 1, 1], group=3, pads=[0, 0, 0, 0])
    add(qlinearconv_case, "qconv_u8s8_folded_window", U8, I8, [1, 3, 6, 20],
        [4, 3, 3, 3], pads=[1, 1, 1, 1], x_const=True)
    add(qlinearconv_case, "qconv_u8s8_folded_pointwise", U8, I8, [1, 5, 4, 6],
        [6, 5, 1, 1], pads=[0, 0, 0, 0], x_const=True)
    add(convinteger_case, "convinteger_u8s8_pads", U8, I8, [1, 3, 6, 5], [4, 3, 3, 2],
        pads=[1, 0, 2, 1])
    add(convinteger_case, "convinteger_u8u8_stride_group", U8, U8, [1, 4, 7, 7],
        [4, 2, 3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=2)
    add(convinteger_case, "convinteger_u8s8_per_channel_wz", U8, I8, [1, 3, 5, 6],
        [4, 3, 3, 3], pads=[2, 1, 0, 1], per_channel=True)
    add(matmul_case, "matmulinteger_u8s8_3d", U8, I8, [2, 5, 7], [7, 9], False)
    add(matmul_case, "matmulinteger_u8u8_2d", U8, U8, [4, 33], [33, 5], False)
    add(matmul_case, "qlinearmatmul_u8s8_3d", U8, I8, [3, 4, 17], [17, 6], True)
    add(matmul_case, "qlinearmatmul_i8i8_2d", I8, I8, [5, 40], [40, 7], True)
    return c


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    mlcc, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    cc = os.environ.get("CC", "cc")
    cflags = os.environ.get("CFLAGS", "").split()
    mlcc_args = os.environ.get("MLCC_ARGS", "").split()
    run_prefix = os.environ.get("RUN_PREFIX", "").split()
    driver = os.path.join(work, "driver.o")
    subprocess.run([cc] + cflags + ["-std=c99", "-O2", "-I", os.path.join(ROOT, "runtime-c"), "-c",
                    os.path.join(ROOT, "tools/conformance/driver.c"), "-o", driver], check=True)
    have_ort = subprocess.run(ort_int8.node_command() + ["-e", "require('onnxruntime-node')"],
                              capture_output=True).returncode == 0
    ort_path = "exact"
    if not have_ort:
        print("note: onnxruntime-node not in NODE_PATH: numpy reference only")
    else:
        ort_path, evidence = ort_int8.probe()
        print(f"ONNX Runtime's uint8 x int8 path on this CPU: {ort_path} ({evidence})")
        if ort_path == "unknown":
            return 1
    failed = 0
    for d, specs in make_cases(work):
        name = os.path.basename(d)
        bins = [s.rsplit(":", 1)[0] for s in specs]
        ref = np.fromfile(os.path.join(d, "ref.bin"), "<f4")
        msg = []
        ok = True
        try:
            subprocess.run([mlcc, os.path.join(d, "model.onnx"), "-o", os.path.join(d, "libm.a"),
                            "--name", "m"] + mlcc_args, check=True, capture_output=True, text=True)
            subprocess.run([cc] + cflags + ["-o", os.path.join(d, "run"), driver, os.path.join(d, "libm.a"), "-lm"],
                           check=True, capture_output=True)
            subprocess.run(run_prefix + [os.path.join(d, "run")] + bins + ["--", os.path.join(d, "mlcc.bin")],
                           check=True, capture_output=True)
        except subprocess.CalledProcessError as e:
            print(f"  {name:36s} FAIL: {' '.join(e.cmd[:1])}: {(e.stderr or '')[-300:]}")
            failed += 1
            continue
        got = np.fromfile(os.path.join(d, "mlcc.bin"), "<f4")
        bad = np.flatnonzero(got != ref)
        ok = bad.size == 0
        msg.append("numpy: exact" if ok else
                   f"numpy: {bad.size} of {ref.size} differ, first at {bad[0]}: {got[bad[0]]} vs {ref[bad[0]]}")
        # Full-range uint8 x int8 cases where ORT saturates pair sums: its
        # results are not the exact ones (their _w7 twins are compared).
        saturates = ort_path == "saturating" and "_u8s8" in name and not name.endswith("_w7")
        if os.path.exists(os.path.join(d, "no_ort")):
            pass
        elif have_ort and saturates:
            msg.append("ort: not compared (ORT's uint8 x int8 kernels saturate int16 pair sums "
                       "on this CPU; see the _w7 twin)")
        elif have_ort:
            r = subprocess.run(ort_int8.node_command() + [os.path.join(ROOT, "tests/models/ort_run.js"),
                                os.path.join(d, "model.onnx"), "0"] + specs + ["--", os.path.join(d, "ort.bin")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                msg.append("ort: failed: " + r.stderr.strip()[-200:])
                ok = False
            else:
                o = np.fromfile(os.path.join(d, "ort.bin"), "<f4")
                bo = np.flatnonzero(got != o)
                msg.append("ort: exact" if bo.size == 0 else
                           f"ort: {bo.size} of {o.size} differ, first at {bo[0]}: {got[bo[0]]} vs {o[bo[0]]}")
                ok = ok and bo.size == 0
        failed += not ok
        print(f"  {name:36s} {'PASS' if ok else 'FAIL'} {'; '.join(msg)}")
    print("all passed" if not failed else f"{failed} case(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
