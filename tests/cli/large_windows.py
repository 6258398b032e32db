#!/usr/bin/python3
"""Models whose windows, reductions and fused chains are thousands of terms
long, in the layout of the ONNX backend cases (node/CASE/model.onnx and
test_data_set_0/{input,output}_N.pb) with numpy references, for
tests/cli/large_windows.sh to run through mlcc-conformance. Also writes
lying_initializer.onnx: 443 bytes whose initializer declares
int64[2147483647] but holds one value.

usage: large_windows.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(30)


def case(name, nodes, inputs, outputs, inits=(), opset=17):
    """Writes one case: `inputs` and `outputs` are (name, array) pairs."""
    def info(n, a):
        return helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
    g = helper.make_graph(nodes, name, [info(n, a) for n, a in inputs],
                          [info(n, a) for n, a in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    d = os.path.join(out, "node", name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, pairs in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(pairs):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def window(x, kernel, strides, dilations, pads, fill, combine):
    """A 2-D pooling window over [N, C, H, W] the plain way: pad with
    `fill`, combine the strided slices of every tap."""
    p = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
               constant_values=fill)
    oh = (p.shape[2] - (kernel[0] - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (p.shape[3] - (kernel[1] - 1) * dilations[1] - 1) // strides[1] + 1
    acc = None
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            r0, c0 = kh * dilations[0], kw * dilations[1]
            t = p[:, :, r0:r0 + (oh - 1) * strides[0] + 1:strides[0],
                  c0:c0 + (ow - 1) * strides[1] + 1:strides[1]]
            acc = t.astype(np.float64) if acc is None else combine(acc, t)
    return acc


# MaxPool 64x64, dilated and padded: 4,096 taps, borders and interior.
x = rng.standard_normal((1, 2, 140, 150)).astype(np.float32)
y = window(x, (64, 64), (1, 1), (2, 2), (3, 3, 3, 3), -np.inf, np.maximum).astype(np.float32)
case("test_maxpool_64x64_dilated", [helper.make_node(
    "MaxPool", ["x"], ["y"], kernel_shape=[64, 64], dilations=[2, 2], pads=[3, 3, 3, 3])],
    [("x", x)], [("y", y)])

# int8 MaxPool 48x40, strided.
xi = rng.integers(-128, 128, (1, 3, 70, 90), dtype=np.int8)
yi = window(xi, (48, 40), (2, 3), (1, 1), (0, 0, 0, 0), -128, np.maximum).astype(np.int8)
case("test_maxpool_48x40_int8", [helper.make_node(
    "MaxPool", ["x"], ["y"], kernel_shape=[48, 40], strides=[2, 3])],
    [("x", xi)], [("y", yi)], opset=12)

# AveragePool 64x64 with stride 2 (every output interior) and one padded.
x = rng.random((1, 3, 100, 90), dtype=np.float32)
y = (window(x, (64, 64), (2, 2), (1, 1), (0, 0, 0, 0), 0, np.add) / 4096).astype(np.float32)
case("test_averagepool_64x64", [helper.make_node(
    "AveragePool", ["x"], ["y"], kernel_shape=[64, 64], strides=[2, 2])],
    [("x", x)], [("y", y)])
x = rng.random((1, 2, 80, 80), dtype=np.float32)
s = window(x, (50, 50), (1, 1), (1, 1), (2, 2, 2, 2), 0, np.add)
n = window(np.ones_like(x), (50, 50), (1, 1), (1, 1), (2, 2, 2, 2), 0, np.add)
case("test_averagepool_50x50_pads", [helper.make_node(
    "AveragePool", ["x"], ["y"], kernel_shape=[50, 50], pads=[2, 2, 2, 2])],
    [("x", x)], [("y", (s / n).astype(np.float32))])

# A 1-D AveragePool of 4,000 taps and a 2-D LpPool of 2,500.
x = rng.random((1, 2, 4100), dtype=np.float32)
y = np.stack([x[:, :, i:i + 4000].astype(np.float64).mean(axis=2) for i in range(101)], axis=2)
case("test_averagepool_1d_4000", [helper.make_node(
    "AveragePool", ["x"], ["y"], kernel_shape=[4000])],
    [("x", x)], [("y", y.astype(np.float32))])
x = rng.random((1, 2, 60, 60), dtype=np.float32)
y = np.sqrt(window(x * x, (50, 50), (1, 1), (1, 1), (0, 0, 0, 0), 0, np.add))
case("test_lppool_50x50", [helper.make_node(
    "LpPool", ["x"], ["y"], kernel_shape=[50, 50], p=2)],
    [("x", x)], [("y", y.astype(np.float32))])

# Reductions and global pooling over thousands of elements.
x = rng.random((3, 4096), dtype=np.float32)
case("test_reducesum_4096", [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
     [("x", x)], [("y", x.astype(np.float64).sum(axis=1).astype(np.float32))],
     [("axes", np.array([1], np.int64))])
x = rng.standard_normal((2, 64, 64, 3)).astype(np.float32)
case("test_reducemax_64x64", [helper.make_node("ReduceMax", ["x"], ["y"], axes=[1, 2])],
     [("x", x)], [("y", x.max(axis=(1, 2), keepdims=True))])
x = rng.random((1, 4, 128, 128), dtype=np.float32)
case("test_globalaveragepool_128x128", [helper.make_node("GlobalAveragePool", ["x"], ["y"])],
     [("x", x)], [("y", x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32))])

# A convolution with a 64x64 kernel (8,192 taps per output).
x = rng.random((1, 2, 70, 70), dtype=np.float32)
w = rng.random((3, 2, 64, 64), dtype=np.float32) - 0.5
y = np.zeros((1, 3, 7, 7))
for m in range(3):
    for i in range(7):
        for j in range(7):
            y[0, m, i, j] = (x[0, :, i:i + 64, j:j + 64].astype(np.float64) * w[m]).sum()
case("test_conv_64x64_kernel", [helper.make_node("Conv", ["x", "w"], ["y"])],
     [("x", x)], [("y", y.astype(np.float32))], [("w", w)])

# A chain of 600 elementwise nodes, which fuse-ops must not make one
# expression 600 levels deep.
x = rng.standard_normal((4, 100)).astype(np.float32)
nodes, prev, ref = [], "x", x.astype(np.float64)
for i in range(600):
    op = ["Tanh", "Neg", "Abs", "Sigmoid"][i % 4]
    nodes.append(helper.make_node(op, [prev], [f"t{i}"]))
    prev = f"t{i}"
    ref = {"Tanh": np.tanh, "Neg": np.negative, "Abs": np.abs,
           "Sigmoid": lambda v: 1 / (1 + np.exp(-v))}[op](ref)
nodes.append(helper.make_node("Identity", [prev], ["y"]))
case("test_elementwise_chain_600", nodes, [("x", x)], [("y", ref.astype(np.float32))])

# The model of issue 30: an initializer that declares 2^31-1 int64 values
# and holds one.
t = helper.make_tensor("pos_insert", TensorProto.INT64, [1], [1])
t.dims[0] = 2147483647
g = helper.make_graph([helper.make_node("Add", ["x", "pos_insert"], ["y"], name="add")], "liar",
                      [helper.make_tensor_value_info("x", TensorProto.INT64, [1])],
                      [helper.make_tensor_value_info("y", TensorProto.INT64, [2147483647])], [t])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "lying_initializer.onnx"))
