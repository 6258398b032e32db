#!/usr/bin/python3
"""Writes tests/cli/data/bounded_mvn.onnx: MeanVarianceNormalization of
x[1, seq, 16] over axes 0 and 1, which follow seq (its kernel divides by
the number of elements, a float constant 1/N that no line in seq gives):
tests/cli/bad_input.sh expects --dim seq=1..64 to be refused, naming the
node and why.
Usage: /usr/bin/python3 tests/cli/make_bounded_mvn.py
"""
import os
import onnx
from onnx import TensorProto as TP, helper as h

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
g = h.make_graph([h.make_node("MeanVarianceNormalization", ["x"], ["y"], name="mvn_over_seq", axes=[0, 1])],
                 "bounded_mvn", [h.make_tensor_value_info("x", TP.FLOAT, [1, "seq", 16])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, "seq", 16])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], producer_name="mlcc-tests")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "bounded_mvn.onnx"))
