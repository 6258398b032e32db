#!/usr/bin/python3
"""Models and comparisons for tests/quant/run.sh (com.microsoft quantized ops).

  quant.py make-ops DIR        one folder per single-op case under DIR
  quant.py make-bad DIR        invalid nodes: DIR/NAME.onnx, DIR/NAME.expect
  quant.py compare-op CASE     compares CASE/mlcc.bin with CASE/ref.bin and,
                               when present, CASE/ort.bin
  quant.py pb2bin IN.pb OUT.bin    a TensorProto's raw float32 data
  quant.py compare-model MODEL.onnx MLCC.bin REF.bin [ORT.bin]

Each single-op case is a float model: QuantizeLinear -> the contrib op ->
DequantizeLinear, so that the standard float drivers run it (the input
values are exact multiples of the input scale, so both runtimes quantize them
to the same bytes). CASE holds model.onnx, the inputs in0.bin..., `inputs`
(the IN.bin:D0,D1,... arguments of ort_run.js), `step` (the output scale),
`no_ort` for a model ONNX Runtime rejects (omitted middle zero points) and
ref.bin: the op's meaning computed with numpy in float64 (dequantize,
the float op, round half to even, saturate), then dequantized.

Comparisons are in output quantization steps, and pass within one step.
mlcc rounds where ONNX Runtime's x86 AVX2 kernels round and matches them
exactly (each line says whether it did); ONNX Runtime's SSE2 and Arm NEON
kernels (QLinearAdd in fixed point there) round differently at exact ties,
and the numpy reference rounds only once: both can differ by one step.
Exit status 0 pass, 1 fail, 2 bad usage.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)
MS = "com.microsoft"


def qrange(dt):
    return (-128, 127) if dt == np.int8 else (0, 255)


def onnx_type(dt):
    return TensorProto.INT8 if dt == np.int8 else TensorProto.UINT8


class Case:
    """One model: float inputs quantized with (scale, zp), the contrib nodes,
    the output dequantized with (out_scale, out_zp)."""

    def __init__(self, name, dt):
        self.name, self.dt = name, dt
        self.nodes, self.inits, self.inputs, self.feeds = [], [], [], []
        self.skip_ort = False  # a form ONNX Runtime rejects

    def const(self, name, value, dt=None):
        arr = np.array(value, dtype=dt or self.dt)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def quantized_input(self, name, shape, scale, zp, values=None):
        """A float graph input holding (q - zp) * scale, quantized to `name`."""
        lo, hi = qrange(self.dt)
        q = RNG.integers(lo, hi + 1, size=shape) if values is None else values
        q = np.asarray(q).reshape(shape)
        x = ((q.astype(np.float32) - np.float32(zp)) * np.float32(scale)).astype(np.float32)
        self.inputs.append(helper.make_tensor_value_info(name + "_f", TensorProto.FLOAT, list(shape)))
        self.feeds.append((name + "_f", x))
        self.nodes.append(helper.make_node(
            "QuantizeLinear", [name + "_f", self.const(name + "_qs", scale, np.float32),
                               self.const(name + "_qz", zp)], [name]))
        return name, q.astype(np.float64)

    def unary_op(self, op, x, s_x, z_x, s_y, z_y, xs=None, **attrs):
        """The node `op`(x, X_scale, X_zero_point, Y_scale, Y_zero_point) -> y_q."""
        xs = xs or self.const("xs", s_x, np.float32)
        self.nodes.append(helper.make_node(
            op, [x, xs, self.const("xz", z_x), self.const("ys", s_y, np.float32),
                 self.const("yz", z_y)], ["y_q"], domain=MS, name=self.name, **attrs))
        return "y_q"

    def save(self, root, out, out_shape, out_scale, out_zp, ref_q):
        d = os.path.join(root, self.name)
        os.makedirs(d, exist_ok=True)
        self.nodes.append(helper.make_node(
            "DequantizeLinear", [out, self.const("y_s", out_scale, np.float32),
                                 self.const("y_z", out_zp)], ["y"]))
        graph = helper.make_graph(
            self.nodes, self.name, self.inputs,
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                        helper.make_opsetid(MS, 1)])
        model.ir_version = 8
        onnx.save(model, os.path.join(d, "model.onnx"))
        specs = []
        for i, (_, x) in enumerate(self.feeds):
            x.tofile(os.path.join(d, f"in{i}.bin"))
            specs.append(f"{d}/in{i}.bin:" + ",".join(str(s) for s in x.shape))
        with open(os.path.join(d, "inputs"), "w") as f:
            f.write(" ".join(specs) + "\n")
        ref = ((np.asarray(ref_q, np.float32) - np.float32(out_zp)) * np.float32(out_scale))
        ref.astype(np.float32).tofile(os.path.join(d, "ref.bin"))
        with open(os.path.join(d, "step"), "w") as f:
            f.write(repr(float(np.float32(out_scale))) + "\n")
        if self.skip_ort:
            open(os.path.join(d, "no_ort"), "w").close()


def requant(v, scale, zp, dt):
    """The reference quantization of float64 values."""
    lo, hi = qrange(dt)
    return np.clip(np.rint(v / np.float64(np.float32(scale))) + zp, lo, hi)


def deq(q, scale, zp):
    return (q - zp) * np.float64(np.float32(scale))


def binary(root, name, dt, op, sa, sb, omit_zp="", all_pairs=False, scales=None, swap=False):
    """`omit_zp`: "c" leaves out C_zero_point (the 7-input form), "abc" all
    three (which ONNX Runtime's type inference rejects: numpy reference only).
    `all_pairs`: A is [256, 256] with every value in each row, B [256, sb]
    with the value i in row i: every pair of values once (`swap`: A and B
    trade places)."""
    c = Case(name, dt)
    lo, hi = qrange(dt)
    za, zb, zc = (int(RNG.integers(lo + 60, hi - 60)) for _ in range(3))
    za, zb = (0, 0) if "a" in omit_zp else (za, zb)
    zc = 0 if "c" in omit_zp else zc
    s_a, s_b, s_c = scales or (0.0213, 0.0371, 0.047 if op == "QLinearAdd" else 0.21)
    va = vb = None
    if all_pairs:
        sa, sb = [256, 256], [256, sb]
        va = np.tile(np.arange(lo, hi + 1), (256, 1))
        vb = np.repeat(np.arange(lo, hi + 1)[:, None], sb[1], axis=1)
        if swap:
            sa, sb, va, vb = sb, sa, vb, va
    a, qa = c.quantized_input("a", sa, s_a, za, va)
    b, qb = c.quantized_input("b", sb, s_b, zb, vb)
    ins = [a, c.const("as", s_a, np.float32), "" if "a" in omit_zp else c.const("az", za),
           b, c.const("bs", s_b, np.float32), "" if "b" in omit_zp else c.const("bz", zb),
           c.const("cs", s_c, np.float32)]
    if "c" not in omit_zp:
        ins.append(c.const("cz", zc))
    c.skip_ort = "a" in omit_zp
    c.nodes.append(helper.make_node(op, ins, ["c"], domain=MS, name=name))
    fa, fb = deq(qa, s_a, za), deq(qb, s_b, zb)
    v = fa + fb if op == "QLinearAdd" else fa * fb
    c.save(root, "c", v.shape, s_c, zc, requant(v, s_c, zc, dt))


def unary(root, name, dt, op, shape, dynamic_scale=False, alpha=None, params=None):
    """Every input value once, then random ones; `params`: (X_scale,
    X_zero_point, Y_scale, Y_zero_point) relative to the type's lowest value."""
    c = Case(name, dt)
    lo, hi = qrange(dt)
    n = int(np.prod(shape))
    values = np.concatenate([np.arange(lo, hi + 1), RNG.integers(lo, hi + 1, n - 256)])
    sigmoid = op == "QLinearSigmoid"
    s_x, zx, s_y, zy = params or (0.043, 100, 1.0 / 250 if sigmoid else 0.037, 3 if sigmoid else 90)
    zx, zy = lo + zx, lo + zy
    x, qx = c.quantized_input("x", shape, s_x, zx, values)
    xs = None
    if dynamic_scale:  # X_scale is a graph input: the table is built at run time
        c.inputs.append(helper.make_tensor_value_info("xs", TensorProto.FLOAT, [1]))
        c.feeds.append(("xs", np.array([s_x], np.float32)))
        xs = "xs"
    attrs = {} if alpha is None else {"alpha": alpha}
    c.unary_op(op, x, s_x, zx, s_y, zy, xs, **attrs)
    f = deq(qx, s_x, zx)
    v = 1 / (1 + np.exp(-f)) if op == "QLinearSigmoid" else np.where(f >= 0, f, f * np.float32(alpha))
    c.save(root, "y_q", shape, s_y, zy, requant(v, s_y, zy, dt))


def global_pool(root, name, dt, shape, channels_last):
    c = Case(name, dt)
    lo, _ = qrange(dt)
    zx, zy, s_x, s_y = lo + 30, lo + 7, 0.05, 0.013
    x, qx = c.quantized_input("x", shape, s_x, zx)
    c.unary_op("QLinearGlobalAveragePool", x, s_x, zx, s_y, zy,
               channels_last=int(channels_last))
    axes = tuple(range(1, len(shape) - 1)) if channels_last else tuple(range(2, len(shape)))
    v = deq(qx, s_x, zx).mean(axis=axes, keepdims=True)
    c.save(root, "y_q", v.shape, s_y, zy, requant(v, s_y, zy, dt))


def avg_pool_ref(f, k, s, p):
    """2-D average pool of NCHW float64 data, padding excluded from the count
    (k, s: an int for both axes, or a (height, width) pair)."""
    n, ch, h, w = f.shape
    (kh, kw), (sh, sw) = (k if isinstance(k, tuple) else (k, k)), (s if isinstance(s, tuple) else (s, s))
    oh, ow = (h + 2 * p - kh) // sh + 1, (w + 2 * p - kw) // sw + 1
    out = np.zeros((n, ch, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - p, j * sw - p
            win = f[:, :, max(h0, 0):min(h0 + kh, h), max(w0, 0):min(w0 + kw, w)]
            out[:, :, i, j] = win.mean(axis=(2, 3))
    return out


def avg_pool(root, name, dt, shape, channels_last, kernel=(3, 3), strides=(2, 2), pad=1):
    """QLinearAveragePool; a kernel of the whole input with no padding is a
    global average pool (mlcc computes it as QLinearGlobalAveragePool)."""
    c = Case(name, dt)
    lo, _ = qrange(dt)
    zx, zy, s_x, s_y = lo + 90, lo + 80, 0.031, 0.029
    x, qx = c.quantized_input("x", shape, s_x, zx)
    c.unary_op("QLinearAveragePool", x, s_x, zx, s_y, zy, kernel_shape=list(kernel),
               strides=list(strides), pads=[pad] * 4, channels_last=int(channels_last))
    f = deq(qx, s_x, zx)
    if channels_last:
        f = f.transpose(0, 3, 1, 2)
    v = avg_pool_ref(f, tuple(kernel), tuple(strides), pad)
    if channels_last:
        v = v.transpose(0, 2, 3, 1)
    c.save(root, "y_q", v.shape, s_y, zy, requant(v, s_y, zy, dt))


def concat(root, name, dt, shapes, axis):
    c = Case(name, dt)
    lo, _ = qrange(dt)
    s_y, z_y = 0.04, lo + 120
    params = [(s_y, z_y), (0.017, lo + 3), (0.09, lo + 200)]  # the first: copied as is
    ins, parts = [c.const("ys", s_y, np.float32), c.const("yz", z_y)], []
    for i, (shape, (s, z)) in enumerate(zip(shapes, params)):
        x, q = c.quantized_input(f"x{i}", shape, s, z)
        ins += [x, c.const(f"s{i}", s, np.float32), c.const(f"z{i}", z)]
        parts.append(requant(deq(q, s, z), s_y, z_y, dt))
    c.nodes.append(helper.make_node("QLinearConcat", ins, ["y_q"], domain=MS, name=name,
                                    axis=axis))
    ref = np.concatenate(parts, axis=axis)
    c.save(root, "y_q", ref.shape, s_y, z_y, ref)


def make_ops(root):
    u8, i8 = np.uint8, np.int8
    binary(root, "add_u8", u8, "QLinearAdd", [2, 3, 4, 5], [2, 3, 4, 5])
    binary(root, "add_i8_bcast_rows", i8, "QLinearAdd", [2, 3, 4, 5], [5])
    binary(root, "add_u8_bcast_cols", u8, "QLinearAdd", [2, 3, 4, 5], [2, 3, 4, 1])
    binary(root, "add_i8_bcast_both", i8, "QLinearAdd", [6, 1], [1, 7])
    binary(root, "add_u8_no_output_zero_point", u8, "QLinearAdd", [4, 33], [4, 33], omit_zp="c")
    binary(root, "add_i8_no_zero_points", i8, "QLinearAdd", [4, 33], [4, 33], omit_zp="abc")
    binary(root, "add_u8_all_pairs", u8, "QLinearAdd", None, 256, all_pairs=True)
    binary(root, "add_i8_all_pairs_bcast", i8, "QLinearAdd", None, 1, all_pairs=True,
           scales=(0.0173, 0.0091, 0.0226))
    binary(root, "add_u8_all_pairs_bcast_a", u8, "QLinearAdd", None, 1, all_pairs=True,
           scales=(0.0091, 0.0173, 0.0226), swap=True)
    binary(root, "mul_u8", u8, "QLinearMul", [3, 4, 5], [3, 4, 5])
    binary(root, "mul_i8_all_pairs", i8, "QLinearMul", None, 256, all_pairs=True,
           scales=(0.013, 0.027, 0.1))
    binary(root, "mul_i8_bcast", i8, "QLinearMul", [2, 3, 8], [3, 1])
    unary(root, "sigmoid_u8", u8, "QLinearSigmoid", [4, 100])
    unary(root, "sigmoid_i8", i8, "QLinearSigmoid", [4, 100])
    unary(root, "sigmoid_u8_wide", u8, "QLinearSigmoid", [2, 200], params=(0.1, 128, 1 / 256, 0))
    unary(root, "sigmoid_i8_narrow", i8, "QLinearSigmoid", [2, 200], params=(0.011, 128, 0.0021, 0))
    unary(root, "sigmoid_u8_runtime_scale", u8, "QLinearSigmoid", [2, 150], dynamic_scale=True)
    unary(root, "leakyrelu_u8", u8, "QLinearLeakyRelu", [4, 100], alpha=0.1)
    unary(root, "leakyrelu_i8", i8, "QLinearLeakyRelu", [4, 100], alpha=0.2)
    global_pool(root, "globalavgpool_u8", u8, [2, 8, 7, 7], False)
    global_pool(root, "globalavgpool_i8_channels_last", i8, [1, 5, 5, 16], True)
    avg_pool(root, "avgpool_u8", u8, [1, 3, 9, 9], False)
    avg_pool(root, "avgpool_i8_channels_last", i8, [2, 8, 8, 5], True)
    avg_pool(root, "avgpool_whole_u8", u8, [1, 6, 8, 5], False, (8, 5), (8, 5), 0)
    avg_pool(root, "avgpool_whole_i8_channels_last", i8, [2, 7, 6, 4], True, (7, 6), (1, 1), 0)
    concat(root, "concat_u8", u8, [[2, 3, 4], [2, 5, 4], [2, 1, 4]], 1)
    concat(root, "concat_i8", i8, [[3, 2], [3, 4], [3, 3]], -1)


def make_bad(root):
    """Invalid contrib nodes: mlcc must reject each with one error line that
    names the node (BAD_NAME.expect holds a fragment of that line)."""
    os.makedirs(root, exist_ok=True)

    def save(name, nodes, inputs, inits, expect):
        graph = helper.make_graph(nodes, name, inputs,
                                  [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                                  [numpy_helper.from_array(np.array(v, dt), k)
                                   for k, (v, dt) in inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                        helper.make_opsetid(MS, 1)])
        model.ir_version = 8
        onnx.save(model, os.path.join(root, name + ".onnx"))
        with open(os.path.join(root, name + ".expect"), "w") as f:
            f.write(expect + "\n")

    def vi(name, t, shape):
        return helper.make_tensor_value_info(name, t, shape)

    u8 = [vi("a", TensorProto.UINT8, [2, 3]), vi("b", TensorProto.UINT8, [2, 3])]
    p = {"s": (0.1, np.float32), "z": (3, np.uint8), "z8": (3, np.int8),
         "s2": ([0.1, 0.2], np.float32)}
    node = lambda op, ins, **kw: helper.make_node(op, ins, ["y"], name="bad", domain=MS, **kw)
    save("add_float_input", [node("QLinearAdd", ["a", "s", "z", "b", "s", "z", "s", "z"])],
         [vi("a", TensorProto.FLOAT, [2, 3]), u8[1]], p, "input 0 has type float")
    save("add_five_inputs", [node("QLinearAdd", ["a", "s", "z", "b", "s"])], u8, p,
         "has 5 inputs")
    save("add_zero_point_type", [node("QLinearAdd", ["a", "s", "z8", "b", "s", "z", "s", "z"])],
         u8, p, "zero point (input 2) has type int8")
    save("mul_no_broadcast", [node("QLinearMul", ["a", "s", "z", "b", "s", "z", "s", "z"])],
         [u8[0], vi("b", TensorProto.UINT8, [4])], p, "broadcast")
    save("sigmoid_per_channel_scale", [node("QLinearSigmoid", ["a", "s2", "z", "s", "z"])],
         u8, p, "a single value")
    save("leakyrelu_missing_scale", [node("QLinearLeakyRelu", ["a", "", "z", "s", "z"])],
         u8, p, "input 1 is required")
    save("concat_four_inputs", [node("QLinearConcat", ["s", "z", "a", "s"], axis=0)], u8, p,
         "has 4 inputs")
    save("concat_no_axis", [node("QLinearConcat", ["s", "z", "a", "s", "z", "b", "s", "z"])],
         u8, p, "axis")
    save("globalavgpool_rank2", [node("QLinearGlobalAveragePool", ["a", "s", "z", "s", "z"])],
         u8, p, "rank 3 or more")
    save("avgpool_channels_last_2", [node("QLinearAveragePool", ["a", "s", "z", "s", "z"],
                                          kernel_shape=[2], channels_last=2)],
         [vi("a", TensorProto.UINT8, [1, 2, 3])], p, "channels_last must be 0 or 1")


def steps(a, b, step):
    return np.rint(np.abs(a.astype(np.float64) - b.astype(np.float64)) / step)


def compare_op(d):
    step = float(open(os.path.join(d, "step")).read())
    got = np.fromfile(os.path.join(d, "mlcc.bin"), "<f4")
    ok, words = True, []
    for label, path in (("numpy", "ref.bin"), ("ort", "ort.bin")):
        if not os.path.exists(os.path.join(d, path)):
            continue
        ref = np.fromfile(os.path.join(d, path), "<f4")
        if ref.size != got.size:
            return print(f"FAIL: {got.size} elements, {label} has {ref.size}") or 1
        s = steps(got, ref, step)
        worst = int(s.max()) if s.size else 0
        words.append(f"vs {label}: " + ("exact" if worst == 0 else
                     f"{int((s > 0).sum())} of {s.size} differ, max {worst} step"))
        if worst > 1:
            ok = False
            i = int(np.argmax(s))
            words.append(f"(first worst at {i}: mlcc {got[i]} {label} {ref[i]})")
    print(("PASS " if ok else "FAIL ") + "; ".join(words))
    return 0 if ok else 1


def pb2bin(src, dst):
    t = onnx.TensorProto()
    with open(src, "rb") as f:
        t.ParseFromString(f.read())
    numpy_helper.to_array(t).astype("<f4").tofile(dst)
    print(",".join(str(d) for d in t.dims))


def output_step(model_path):
    """The scale of the DequantizeLinear that produces the graph output."""
    m = onnx.load(model_path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if out in n.output and n.op_type == "DequantizeLinear" and n.input[1] in inits:
            return float(inits[n.input[1]].reshape(-1)[0])
    return None


def compare_model(model_path, mlcc_bin, ref_bin, ort_bin=None):
    step = output_step(model_path)
    got = np.fromfile(mlcc_bin, "<f4").reshape(1, -1)
    ok = True
    for label, path in (("reference", ref_bin), ("onnxruntime", ort_bin)):
        if not path:
            continue
        ref = np.fromfile(path, "<f4").reshape(1, -1)
        if ref.shape != got.shape:
            print(f"  vs {label}: FAIL, {ref.size} elements, mlcc has {got.size}")
            ok = False
            continue
        diff = np.abs(got.astype(np.float64) - ref)
        top_got, top_ref = int(np.argmax(got)), int(np.argmax(ref))
        differ = int((diff > 0).sum())
        in_steps = f" ({diff.max() / step:.0f} output steps of {step:.6g})" if step else ""
        print(f"  vs {label}: max abs diff {diff.max():.6g}{in_steps}, "
              f"{differ} of {diff.size} elements differ; top-1 mlcc {top_got} "
              f"{label} {top_ref}: {'agree' if top_got == top_ref else 'DISAGREE'}")
        ok = ok and top_got == top_ref
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 3 and argv[1] == "make-ops":
        make_ops(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "make-bad":
        make_bad(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "compare-op":
        return compare_op(argv[2])
    if len(argv) == 4 and argv[1] == "pb2bin":
        pb2bin(argv[2], argv[3])
        return 0
    if len(argv) in (5, 6) and argv[1] == "compare-model":
        return compare_model(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
