#!/usr/bin/python3
"""Writes the small models of the golden IR tests (tests/golden/models).

Each model exercises one pass; check.sh compiles it with --emit graph and
--emit kernels and compares with the committed expected text. Run once with
Debian's python3-onnx; the outputs are committed.
Usage: /usr/bin/python3 tests/golden/make_models.py
"""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
F = TensorProto.FLOAT


def save(nodes, name, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(here, name + ".onnx"))


vi = helper.make_tensor_value_info

# infer-and-fold: a shape computation folds to a constant, the Reshape becomes
# a view of the input, and since the output would alias the input it is
# filled by a copy kernel.
save([helper.make_node("Shape", ["x"], ["s"]),
      helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
      helper.make_node("Unsqueeze", ["d0", "axes0"], ["d0v"]),
      helper.make_node("Concat", ["d0v", "minus1"], ["shape"], axis=0),
      helper.make_node("Reshape", ["x", "shape"], ["y"])],
     "fold_shape_chain", [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])],
     [numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
      numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
      numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus1")])

# eliminate-dead-code: the Exp branch feeds no output.
save([helper.make_node("Relu", ["x"], ["y"]),
      helper.make_node("Exp", ["x"], ["unused"]),
      helper.make_node("Neg", ["unused"], ["unused2"])],
     "dead_code", [vi("x", F, [8])], [vi("y", F, [8])])

# lower-to-kernels: y2 is a view (Identity) of y1, both outputs: y1 is
# written in place, y2 gets a copy.
save([helper.make_node("Relu", ["x"], ["y1"]),
      helper.make_node("Identity", ["y1"], ["y2"])],
     "output_alias", [vi("x", F, [4])], [vi("y1", F, [4]), vi("y2", F, [4])])

# fuse-ops: a chain of elementwise ops becomes one kernel that needs no arena.
save([helper.make_node("Relu", ["x"], ["a"]),
      helper.make_node("Exp", ["a"], ["b"]),
      helper.make_node("Neg", ["b"], ["c"]),
      helper.make_node("Sigmoid", ["c"], ["d"]),
      helper.make_node("Abs", ["d"], ["y"])],
     "arena_reuse", [vi("x", F, [256])], [vi("y", F, [256])])

# Splat constants (ConstantOfShape) are never materialized: the add reads a
# constant, and no weight data is emitted.
save([helper.make_node("ConstantOfShape", ["shp"], ["c"],
                       value=numpy_helper.from_array(np.array([0.5], dtype=np.float32))),
      helper.make_node("Add", ["x", "c"], ["y"])],
     "splat_constant", [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
     [numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "shp")])

# Broadcasting and a real weight: a Gemm with bias.
w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
b = np.array([1, 2, 3], dtype=np.float32)
save([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
     "gemm_bias", [vi("x", F, [2, 4])], [vi("y", F, [2, 3])],
     [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])

# Frontend: weights in an external data file (location relative to the model).
w2 = (np.arange(6, dtype=np.float32) - 2.5).reshape(2, 3)
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "external_data",
                      [vi("x", F, [1, 2])], [vi("y", F, [1, 3])],
                      [numpy_helper.from_array(w2, "w")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
if os.path.exists(os.path.join(here, "external_data.bin")):
    os.remove(os.path.join(here, "external_data.bin"))  # onnx appends to it
onnx.save_model(m, os.path.join(here, "external_data.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="external_data.bin", size_threshold=0)

# Frontend: model-local functions are expanded. "Scaled" multiplies by an
# attribute (an attribute reference); "Block" calls Scaled and adds its input.
scaled = helper.make_function(
    "local", "Scaled", ["a"], ["b"],
    [helper.make_node("Constant", [], ["k"], value_float=0.0),
     helper.make_node("LeakyRelu", ["a"], ["b"])],
    [helper.make_opsetid("", 13)], attributes=["alpha"])
# alpha of LeakyRelu comes from the call's attribute.
ref = onnx.AttributeProto()
ref.name, ref.ref_attr_name, ref.type = "alpha", "alpha", onnx.AttributeProto.FLOAT
scaled.node[1].attribute.append(ref)
block = helper.make_function(
    "local", "Block", ["x"], ["y"],
    [helper.make_node("Scaled", ["x"], ["s"], domain="local", alpha=0.25),
     helper.make_node("Add", ["s", "x"], ["y"])],
    [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
g = helper.make_graph([helper.make_node("Block", ["x"], ["h"], domain="local", name="block1"),
                       helper.make_node("Scaled", ["h"], ["y"], domain="local", name="scaled1", alpha=0.5)],
                      "local_functions", [vi("x", F, [4])], [vi("y", F, [4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)],
                      functions=[scaled, block])
m.ir_version = 8
onnx.save(m, os.path.join(here, "local_functions.onnx"))

# fold-batch-norm, pack-weights, fuse-ops: a Conv's BatchNormalization folds
# into its weights and bias, the weights are packed for the register tile,
# and the residual Add and the Relu run in the Conv's kernel.
rng = np.random.default_rng(0)
cw = (rng.standard_normal((8, 4, 3, 3)) * 0.2).astype(np.float32)
cb = rng.standard_normal(8).astype(np.float32)
bn = [rng.uniform(0.5, 1.5, 8), rng.standard_normal(8), rng.standard_normal(8) * 0.1,
      rng.uniform(0.5, 2.0, 8)]
save([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
      helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"],
                       name="bn"),
      helper.make_node("Add", ["n", "r"], ["s"], name="residual"),
      helper.make_node("Relu", ["s"], ["y"], name="relu")],
     "conv_bn_relu_add", [vi("x", F, [1, 4, 5, 6]), vi("r", F, [1, 8, 5, 6])],
     [vi("y", F, [1, 8, 5, 6])],
     [numpy_helper.from_array(cw, "w"), numpy_helper.from_array(cb, "b")] +
     [numpy_helper.from_array(a.astype(np.float32), n)
      for a, n in zip(bn, ["scale", "bias", "mean", "var"])])

# eliminate-common-subexpressions: the two Sigmoid(x) nodes are one, and the
# Transposes with the same permutation too; the one with another does not.
save([helper.make_node("Sigmoid", ["x"], ["s1"], name="sig1"),
      helper.make_node("Sigmoid", ["x"], ["s2"], name="sig2"),
      helper.make_node("Transpose", ["x"], ["t1"], perm=[1, 0], name="tr1"),
      helper.make_node("Transpose", ["x"], ["t2"], perm=[1, 0], name="tr2"),
      helper.make_node("Transpose", ["x"], ["t3"], perm=[0, 1], name="tr3"),
      helper.make_node("Mul", ["s1", "s2"], ["m"], name="mul"),
      helper.make_node("Add", ["t1", "t2"], ["a"], name="add")],
     "common_subexpressions", [vi("x", F, [3, 3])],
     [vi("m", F, [3, 3]), vi("a", F, [3, 3]), vi("t3", F, [3, 3])])
