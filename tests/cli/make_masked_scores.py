#!/usr/bin/python3
"""Writes tests/cli/data/masked_scores.onnx and masked_scores_cal.npy: an
attention whose scores are masked with the float minimum (a causal mask as
Hugging Face models add it) and are also a graph output (so the chain stays
unfused and the masked scores are a call of their own), for `mlcc check
--quantize int8` in tests/cli/check.sh: the masked positions must not count
in the SNR (they made the Softmax after them show a drop of 763 dB).

Run once; the files are committed.
Usage: /usr/bin/python3 tests/cli/make_masked_scores.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
S = 16
mask = np.where(np.tril(np.ones((S, S))) > 0, 0, np.finfo(np.float32).min).astype(np.float32)
nodes = [
    h.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
    h.make_node("MatMul", ["x", "w1"], ["a"]),
    h.make_node("MatMul", ["a", "xt"], ["s"]),
    h.make_node("Add", ["s", "mask"], ["scores"]),
    h.make_node("Softmax", ["scores"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "x"], ["o"]),
    h.make_node("MatMul", ["o", "w2"], ["y"]),
]
g = h.make_graph(nodes, "masked_scores", [h.make_tensor_value_info("x", TP.FLOAT, [1, S, S])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, S, S]),
                  h.make_tensor_value_info("scores", TP.FLOAT, [1, S, S])],
                 [nh.from_array((rng.standard_normal((S, S)) * 0.3).astype(np.float32), "w1"),
                  nh.from_array((rng.standard_normal((S, S)) * 0.3).astype(np.float32), "w2"),
                  nh.from_array(mask, "mask")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, os.path.join(here, "data", "masked_scores.onnx"))
np.save(os.path.join(here, "data", "masked_scores_cal.npy"),
        rng.standard_normal((8, 1, S, S)).astype(np.float32))
print("wrote masked_scores.onnx, masked_scores_cal.npy")
