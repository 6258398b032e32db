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

# Valid ONNX, but shapes that do not broadcast: a clear error at inference.
x2 = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
x3 = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 5])
save(helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add1")],
                       "bad_shapes", [x2, x3], [y]), "bad_broadcast.onnx")

# A node reading a tensor nobody defines.
save(helper.make_graph([helper.make_node("Relu", ["nowhere"], ["y"], name="relu2")],
                       "undefined_input", [x], [y]), "undefined_input.onnx")

# A serialized TensorProto (for --freeze).
t = helper.make_tensor("t", TensorProto.FLOAT, [2], [1.0, 2.0])
with open(os.path.join(here, "tensor.pb"), "wb") as f:
    f.write(t.SerializeToString())
