#!/usr/bin/python3
"""Writes the small ONNX models that tests/cli/bad_input.sh feeds to mlcc.

Run once with Debian's python3-onnx; the outputs are committed, so the tests
need no Python. Usage: /usr/bin/python3 tests/cli/make_data.py
"""
import os
import onnx
from onnx import TensorProto, helper

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def save(graph, name, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(here, name))


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])

# An operator that does not exist.
save(helper.make_graph([helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob1")],
                       "unknown_op", [x], [y]), "unknown_op.onnx")

# A symbolic batch dimension: needs --dim batch=N.
xs = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
ys = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
save(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                       "symbolic", [xs], [ys]), "symbolic_dim.onnx")

# Dimensions with neither a size nor a name (as some exporters write them):
# needs --shape x=2xNx4. Two inputs sharing a named dimension: --shape of one
# binds it for the other.
xu = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, None, 4])
yu = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, None, 4])
save(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu_u")],
                       "unnamed", [xu], [yu]), "unnamed_dim.onnx")
xa = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["seq", 8])
xb = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["seq", 8])
ya = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 8])
save(helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add_s")],
                       "shared", [xa, xb], [ya]), "shared_dim.onnx")

# Valid ONNX, but shapes that do not broadcast: a clear error at inference.
x2 = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
x3 = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 5])
save(helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add1")],
                       "bad_shapes", [x2, x3], [y]), "bad_broadcast.onnx")

# A node reading a tensor nobody defines.
save(helper.make_graph([helper.make_node("Relu", ["nowhere"], ["y"], name="relu2")],
                       "undefined_input", [x], [y]), "undefined_input.onnx")

# Nodes that break their op's schema (each found by mutating conformance
# models; some crashed mlcc before schema validation).
a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
save(helper.make_graph([helper.make_node("Div", ["a"], ["y"], name="div1")],
                       "div_one_input", [a], [y]), "div_one_input.onnx")
save(helper.make_graph([helper.make_node("Cast", ["x"], ["y"], name="cast1")],
                       "cast_no_to", [x], [y]), "cast_missing_attr.onnx")
save(helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], name="sm1", axis=1.5)],
                       "float_axis", [x], [y]), "attr_wrong_type.onnx")
xi = helper.make_tensor_value_info("x", TensorProto.INT32, [2, 3])
save(helper.make_graph([helper.make_node("Sqrt", ["x"], ["y"], name="sqrt1")],
                       "int_sqrt", [xi], [y]), "dtype_constraint.onnx")
save(helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], name="sm2", axis=5)],
                       "axis_range", [x], [y]), "axis_out_of_range.onnx")
x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
w4 = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 3, 3], [0.0] * 9)
save(helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv1",
                                         strides=[1, 0])],
                       "zero_stride", [x4], [y], [w4]), "conv_zero_stride.onnx")
# A node name with a newline, an escape byte and a byte that is not UTF-8.
bad_name = helper.make_node("Div", ["a"], ["y"])
bad_name.name = "evil\n\x1b[2J"
m = helper.make_model(helper.make_graph([bad_name], "bad_name", [a], [y]),
                      opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
raw = m.SerializeToString().replace(b"evil", b"ev\xffl")
with open(os.path.join(here, "garbled_name.onnx"), "wb") as f:
    f.write(raw)

# A serialized TensorProto (for --freeze).
t = helper.make_tensor("t", TensorProto.FLOAT, [2], [1.0, 2.0])
with open(os.path.join(here, "tensor.pb"), "wb") as f:
    f.write(t.SerializeToString())

# Bounded dimensions (--dim seq=MIN..MAX): self-attention over a sequence
# whose length is a dimension 'seq'. The heads are split by a Reshape to a
# shape computed from Shape(x) (as PyTorch exports it), the positions come
# from Range(0, seq): numbers computed from seq, whose shorter instances are
# the longest one's leading part.
i64 = TensorProto.INT64
xa = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 16])
ya = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 16])
consts = [helper.make_tensor("one", i64, [1], [1]), helper.make_tensor("heads", i64, [2], [2, 8]),
          helper.make_tensor("idx1", i64, [], [1]), helper.make_tensor("zero", i64, [], [0]),
          helper.make_tensor("step", i64, [], [1]), helper.make_tensor("flat", i64, [1], [16])]
attn = [
    helper.make_node("Shape", ["x"], ["xs"], name="shape_x"),
    helper.make_node("Gather", ["xs", "idx1"], ["seqlen"], name="seq_len", axis=0),
    helper.make_node("Unsqueeze", ["seqlen", "zero_axes"], ["seq1"], name="seq_1d"),
    helper.make_node("Concat", ["one", "seq1", "heads"], ["split_shape"], name="split_shape",
                     axis=0),
    helper.make_node("Range", ["zero", "seqlen", "step"], ["pos"], name="positions"),
    helper.make_node("Cast", ["pos"], ["posf"], name="positions_f", to=TensorProto.FLOAT),
    helper.make_node("Unsqueeze", ["posf", "pos_axes"], ["pos2"], name="positions_2d"),
    helper.make_node("Mul", ["pos2", "pos_scale"], ["pos_s"], name="positions_scaled"),
    helper.make_node("Add", ["x", "pos_s"], ["xp"], name="add_positions"),
    helper.make_node("Reshape", ["xp", "split_shape"], ["xh"], name="split_heads"),
    helper.make_node("Transpose", ["xh"], ["q"], name="heads_first", perm=[0, 2, 1, 3]),
    helper.make_node("Transpose", ["xh"], ["kt"], name="keys_t", perm=[0, 2, 3, 1]),
    helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"),
    helper.make_node("Softmax", ["scores"], ["p"], name="softmax", axis=-1),
    helper.make_node("MatMul", ["p", "q"], ["o"], name="attend"),
    helper.make_node("Transpose", ["o"], ["ot"], name="seq_first", perm=[0, 2, 1, 3]),
    helper.make_node("Concat", ["one", "seq1", "flat"], ["merge_shape"], name="merge_shape",
                     axis=0),
    helper.make_node("Reshape", ["ot", "merge_shape"], ["y"], name="merge_heads"),
]
consts += [helper.make_tensor("zero_axes", i64, [1], [0]),
           helper.make_tensor("pos_axes", i64, [1], [1]),
           helper.make_tensor("pos_scale", TensorProto.FLOAT, [], [0.01])]
save(helper.make_graph(attn, "bounded_attention", [xa], [ya], consts), "bounded_attention.onnx")

# What a bounded dimension does not support yet: a number computed from seq
# read as data (x / seq), and an extent that is not affine in seq (every
# other position: ceil(seq / 2)).
yb = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None, 16])
save(helper.make_graph([
    helper.make_node("Shape", ["x"], ["xs"], name="shape_x"),
    helper.make_node("Gather", ["xs", "idx1"], ["seqlen"], name="seq_len", axis=0),
    helper.make_node("Cast", ["seqlen"], ["seqf"], name="seq_f", to=TensorProto.FLOAT),
    helper.make_node("Div", ["x", "seqf"], ["y"], name="mean_scale")],
    "bounded_data", [xa], [yb], [helper.make_tensor("idx1", i64, [], [1])]),
    "bounded_data.onnx")
save(helper.make_graph([
    helper.make_node("Slice", ["x", "s0", "s1", "s2", "s3"], ["y"], name="every_other")],
    "bounded_stride", [xa], [yb],
    [helper.make_tensor("s0", i64, [1], [0]), helper.make_tensor("s1", i64, [1], [1 << 40]),
     helper.make_tensor("s2", i64, [1], [1]), helper.make_tensor("s3", i64, [1], [2])]),
    "bounded_stride.onnx")
# A sequence that must be even (its frames reshaped to pairs): the graph
# compiles at seq=256 but not at 255.
save(helper.make_graph([
    helper.make_node("Reshape", ["x", "pairs"], ["y"], name="to_pairs")],
    "bounded_even", [xa], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2, 16])],
    [helper.make_tensor("pairs", i64, [3], [-1, 2, 16])]),
    "bounded_even.onnx")
# Two bounded dimensions: each alone is fine (a Relu over [batch, seq, 4]),
# their product is not affine (a Reshape that flattens batch and seq).
xt = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
save(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu_bs")], "bounded_two",
                       [xt], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                            ["batch", "seq", 4])]),
     "bounded_two.onnx")
save(helper.make_graph([helper.make_node("Reshape", ["x", "rows"], ["y"], name="flatten_bs")],
                       "bounded_product", [xt],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
                       [helper.make_tensor("rows", i64, [2], [-1, 4])]),
     "bounded_product.onnx")
# The mean over the sequence: a reduction to a run-time count.
save(helper.make_graph([helper.make_node("ReduceMean", ["x"], ["y"], name="mean_seq", axes=[1])],
                       "bounded_reduce", [xa],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 16])]),
     "bounded_reduce.onnx")
# A Concat along the sequence (its second input starts at a run-time
# offset), then a view of the result: y[1, seq, 32] = the rows of
# Concat(x, -x) along seq, two per row.
save(helper.make_graph([
    helper.make_node("Neg", ["x"], ["nx"], name="negate"),
    helper.make_node("Concat", ["x", "nx"], ["both"], name="join_seq", axis=1),
    helper.make_node("Reshape", ["both", "rows"], ["y"], name="pair_rows")],
    "bounded_concat", [xa], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None, 32])],
    [helper.make_tensor("rows", i64, [3], [1, -1, 32])]),
    "bounded_concat.onnx")
# An op whose kernel does not run to a run-time extent yet: an L2
# normalization along the sequence.
save(helper.make_graph([helper.make_node("LpNormalization", ["x"], ["y"], name="norm_over_seq", axis=1)],
                       "bounded_lpnorm", [xa], [yb]),
     "bounded_lpnorm.onnx")
# A Slice that starts at a number computed from seq (the last 4 positions):
# its start moves with the run-time length.
save(helper.make_graph([
    helper.make_node("Shape", ["x"], ["xs"], name="shape_x"),
    helper.make_node("Gather", ["xs", "idx1"], ["seqlen"], name="seq_len", axis=0),
    helper.make_node("Sub", ["seqlen", "four"], ["from"], name="tail_start"),
    helper.make_node("Unsqueeze", ["from", "zero"], ["starts"], name="starts"),
    helper.make_node("Slice", ["x", "starts", "ends", "axis1"], ["y"], name="last_four")],
    "bounded_tail", [xa], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16])],
    [helper.make_tensor("idx1", i64, [], [1]), helper.make_tensor("four", i64, [], [4]),
     helper.make_tensor("zero", i64, [1], [0]), helper.make_tensor("ends", i64, [1], [1 << 40]),
     helper.make_tensor("axis1", i64, [1], [1])]),
    "bounded_tail.onnx")
# An If on a test of seq (seq > 1): the branch a library would take is
# decided at compile time, and it changes within 1..MAX.
save(helper.make_graph([
    helper.make_node("Shape", ["x"], ["xs"], name="shape_x"),
    helper.make_node("Gather", ["xs", "idx1"], ["seqlen"], name="seq_len", axis=0),
    helper.make_node("Greater", ["seqlen", "idx1"], ["long"], name="longer_than_one"),
    helper.make_node("If", ["long"], ["y"], name="by_length",
                     then_branch=helper.make_graph([helper.make_node("Relu", ["x"], ["yt"])], "then", [],
                                                   [helper.make_tensor_value_info("yt", TensorProto.FLOAT, [1, None, 16])]),
                     else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["ye"])], "else", [],
                                                   [helper.make_tensor_value_info("ye", TensorProto.FLOAT, [1, None, 16])]))],
    "bounded_if", [xa], [yb], [helper.make_tensor("idx1", i64, [], [1])]),
    "bounded_if.onnx")
