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
