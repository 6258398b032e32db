#!/usr/bin/python3
"""Writes two models of x[1, seq, 16] for --dim seq=MIN..MAX:

- tests/cli/data/bounded_mvn.onnx: MeanVarianceNormalization over axes 0
  and 1, which follow seq: its kernel scales by 1/N, a float computed from
  seq when the library runs (tests/cli/bounded_dims.sh compares it with
  libraries compiled for each value);
- tests/cli/data/bounded_crop.onnx: CenterCropPad of x to [1, 4, 16]: the
  crop starts at (seq - 4) / 2, which no line in seq gives, so
  tests/cli/bad_input.sh expects --dim seq=5..64 to be refused, naming the
  node and why.

Usage: /usr/bin/python3 tests/cli/make_bounded_norm_crop.py
"""
import os
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def save(graph, name, opset, check=True):
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="mlcc-tests")
    m.ir_version = 8
    if check:  # Debian's onnx 1.12 predates CenterCropPad (opset 18)
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(here, name))


x = h.make_tensor_value_info("x", TP.FLOAT, [1, "seq", 16])
save(h.make_graph([h.make_node("MeanVarianceNormalization", ["x"], ["y"], name="mvn_over_seq", axes=[0, 1])],
                  "bounded_mvn", [x], [h.make_tensor_value_info("y", TP.FLOAT, [1, "seq", 16])]),
     "bounded_mvn.onnx", 13)
save(h.make_graph([h.make_node("CenterCropPad", ["x", "shape"], ["y"], name="crop_middle")],
                  "bounded_crop", [x], [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 16])],
                  [nh.from_array(np.array([1, 4, 16], np.int64), "shape")]),
     "bounded_crop.onnx", 18, check=False)
