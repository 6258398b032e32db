#!/usr/bin/python3
"""Writes tests/cli/data/bounded_ops/: a model whose ops run over a bounded
axis (x[1, seq, 8], for --dim seq=2..16), inputs at seq = 2, 5 and 16, and
ONNX Runtime's outputs for them. tests/cli/bounded_dims.sh compiles it once
and compares each run with these references.

y = CumSum(x, axis 1)
  + each of Pad(x) over axis 1 (edge 2 before and 1 after, reflect 1 before,
    wrap 2 before, constant 0.5 1 before and 1 after), cut to its first seq
    rows by a Slice whose end is Shape(x)[1]
  + Expand(ReduceSum(Tile(x, [1, 2, 1]), axis 1), Shape(x))
  + GlobalAveragePool and GlobalMaxPool of x over seq (x transposed to
    [1, 8, seq] and the [1, 8, 1] result back)

rnn.onnx: x[seq, 1, 8] through a bidirectional LSTM and a GRU of hidden
size 8 (the time steps follow seq); y = the LSTM's Y plus its Y_h plus the
GRU's Y, [seq, 2, 1, 8]. Inputs and ONNX Runtime's outputs at seq = 1, 5
and 16 (rnn_x*.bin, rnn_y*.bin), for --dim seq=1..16.

Run once; the output is committed, so the tests need neither Python nor
ONNX Runtime. Needs numpy, onnx and onnxruntime-node (tests/models/
compare_ort.sh installs it into .cache/ort).
Usage: /usr/bin/python3 tests/cli/make_bounded_ops.py
"""
import os
import subprocess
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
out = os.path.join(here, "data", "bounded_ops")
os.makedirs(out, exist_ok=True)
env = dict(os.environ, NODE_PATH=os.path.join(root, ".cache", "ort", "node_modules"))
rng = np.random.default_rng(5)


def ints(name, v):
    return nh.from_array(np.array(v, np.int64), name)


nodes = [h.make_node("Shape", ["x"], ["shape"]),
         h.make_node("Slice", ["shape", "one", "two"], ["seq"]),
         h.make_node("CumSum", ["x", "axis1"], ["cs"])]
terms = ["cs"]
for name, pads, mode in (("edge", [0, 2, 0, 0, 1, 0], "edge"), ("reflect", [0, 1, 0, 0, 0, 0], "reflect"),
                         ("wrap", [0, 2, 0, 0, 0, 0], "wrap"), ("const", [0, 1, 0, 0, 1, 0], "constant")):
    extra = ["half"] if mode == "constant" else []
    nodes.append(h.make_node("Pad", ["x", "pads_" + name] + extra, ["p_" + name], mode=mode))
    nodes.append(h.make_node("Slice", ["p_" + name, "zero", "seq", "one"], ["s_" + name]))
    terms.append("s_" + name)
nodes += [h.make_node("Tile", ["x", "reps"], ["tiled"]),
          h.make_node("ReduceSum", ["tiled", "one"], ["total"], keepdims=1),
          h.make_node("Expand", ["total", "shape"], ["spread"])]
terms.append("spread")
nodes.append(h.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]))
for pool in ("GlobalAveragePool", "GlobalMaxPool"):
    nodes += [h.make_node(pool, ["xt"], [pool + "_t"]),
              h.make_node("Transpose", [pool + "_t"], [pool], perm=[0, 2, 1])]
    terms.append(pool)
acc = terms[0]
for i, t in enumerate(terms[1:]):
    nodes.append(h.make_node("Add", [acc, t], ["y" if i == len(terms) - 2 else "acc%d" % i]))
    acc = "acc%d" % i
inits = [ints("one", [1]), ints("two", [2]), ints("zero", [0]), ints("axis1", 1), ints("reps", [1, 2, 1]),
         nh.from_array(np.array(0.5, np.float32), "half"),
         ints("pads_edge", [0, 2, 0, 0, 1, 0]), ints("pads_reflect", [0, 1, 0, 0, 0, 0]),
         ints("pads_wrap", [0, 2, 0, 0, 0, 0]), ints("pads_const", [0, 1, 0, 0, 1, 0])]
g = h.make_graph(nodes, "bounded_ops", [h.make_tensor_value_info("x", TP.FLOAT, [1, "seq", 8])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, "seq", 8])], inits)


def save_and_run(graph, name, prefix, shapes):
    """Saves OUT/NAME.onnx and, for each input shape, a random input
    OUT/PREFIXxSEQ.bin and ONNX Runtime's output OUT/PREFIXySEQ.bin (SEQ the
    given with each shape)."""
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 19)], producer_name="mlcc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    model = os.path.join(out, name + ".onnx")
    onnx.save(m, model)
    for seq, shape in shapes:
        x = os.path.join(out, "%sx%d.bin" % (prefix, seq))
        rng.standard_normal(shape).astype(np.float32).tofile(x)
        subprocess.run(["node", os.path.join(root, "tests", "models", "ort_run.js"), model, "0",
                        "%s:%s" % (x, ",".join(map(str, shape))), "--",
                        os.path.join(out, "%sy%d.bin" % (prefix, seq))],
                       check=True, env=env, stdout=subprocess.DEVNULL)


save_and_run(g, "ops", "", [(seq, (1, seq, 8)) for seq in (2, 5, 16)])

# --- recurrent cells over the bounded axis -------------------------------------
def weights(name, shape):
    return nh.from_array((rng.standard_normal(shape) * 0.4).astype(np.float32), name)


g = h.make_graph(
    [h.make_node("LSTM", ["x", "lw", "lr", "lb"], ["ly", "lh"], hidden_size=8, direction="bidirectional"),
     h.make_node("GRU", ["x", "gw", "gr", "gb"], ["gy"], hidden_size=8),
     h.make_node("Add", ["ly", "lh"], ["lsum"]), h.make_node("Add", ["lsum", "gy"], ["y"])],
    "bounded_rnn", [h.make_tensor_value_info("x", TP.FLOAT, ["seq", 1, 8])],
    [h.make_tensor_value_info("y", TP.FLOAT, ["seq", 2, 1, 8])],
    [weights("lw", (2, 32, 8)), weights("lr", (2, 32, 8)), weights("lb", (2, 64)),
     weights("gw", (1, 24, 8)), weights("gr", (1, 24, 8)), weights("gb", (1, 48))])
save_and_run(g, "rnn", "rnn_", [(seq, (seq, 1, 8)) for seq in (1, 5, 16)])
