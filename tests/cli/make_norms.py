#!/usr/bin/python3
"""Writes tests/cli/data/norms/*.onnx: layer normalizations written out in
tensor ops, for fuse-normalization (compiler/passes/FuseNormalization.cpp);
tests/cli/normalization.sh compiles each and compares it with `mlcc check`.
The file name says what the graph must become: NAME_ln (one
LayerNormalization), NAME_rms (one RMSNormalization), NAME_unfused (left as
written).

Run once; the models are committed.
Usage: /usr/bin/python3 tests/cli/make_norms.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "data", "norms")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(3)


def c(name, a, t=np.float32):
    return nh.from_array(np.asarray(a, t), name)


def save(name, nodes, shape, inits, opset=13, t=TP.FLOAT, outs=("y",)):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", t, shape)],
                     [h.make_tensor_value_info(o, t, None) for o in outs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))
    print("wrote", name)


def layer_norm(axes_attr=True, square="pow", gamma=True, beta=True, eps="eps", tail="y",
               mean_axes=(-1,)):
    mean = (h.make_node("ReduceMean", ["x"], ["m"], axes=list(mean_axes)) if axes_attr
            else h.make_node("ReduceMean", ["x", "axes"], ["m"]))
    sq = (h.make_node("Pow", ["d", "two"], ["p"]) if square == "pow"
          else h.make_node("Mul", ["d", "d"], ["p"]))
    var = (h.make_node("ReduceMean", ["p"], ["v"], axes=list(mean_axes)) if axes_attr
           else h.make_node("ReduceMean", ["p", "axes"], ["v"]))
    nodes = [mean, h.make_node("Sub", ["x", "m"], ["d"]), sq, var,
             h.make_node("Add", ["v", eps], ["ve"]), h.make_node("Sqrt", ["ve"], ["s"]),
             h.make_node("Div", ["d", "s"], ["n" if gamma else tail])]
    if gamma:
        nodes.append(h.make_node("Mul", ["n", "g"], ["ng" if beta else tail]))
    if beta:
        nodes.append(h.make_node("Add", ["ng", "b"], [tail]))
    return nodes


D = 96
base = [c("two", 2.0), c("eps", 1e-5), c("g", rng.standard_normal(D)), c("b", rng.standard_normal(D))]
# PyTorch's nn.LayerNorm at opset 13.
save("pytorch_ln", layer_norm(), [1, 10, D], base)
# ReduceMean's axes as an input (opset 18), the square as Mul(d, d), over
# the last two axes, no scale or shift.
save("opset18_two_axes_ln", layer_norm(axes_attr=False, square="mul", gamma=False, beta=False),
     [2, 6, 4, 24], [c("eps", 1e-6), c("axes", [-2, -1], np.int64)], opset=18)
# Float16 (the op computes in float32).
save("float16_ln", layer_norm(), [1, 10, D],
     [c("two", 2.0, np.float16), c("eps", 1e-5, np.float16), c("g", rng.standard_normal(D), np.float16),
      c("b", rng.standard_normal(D), np.float16)], t=TP.FLOAT16)
# Hugging Face's RMSNorm: x * rsqrt(mean(x^2) + eps) * w, exported as
# Sqrt and Div(1, .), and with Reciprocal; and x / sqrt(...) with no weight.
rms_pow = [h.make_node("Pow", ["x", "two"], ["p"]),
           h.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
           h.make_node("Add", ["v", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["s"])]
save("llama_rms", rms_pow + [h.make_node("Div", ["one", "s"], ["r"]), h.make_node("Mul", ["x", "r"], ["n"]),
                             h.make_node("Mul", ["g", "n"], ["y"])], [1, 5, D], base[:3] + [c("one", 1.0)])
save("reciprocal_rms", rms_pow + [h.make_node("Reciprocal", ["s"], ["r"]),
                                  h.make_node("Mul", ["r", "x"], ["n"]),
                                  h.make_node("Mul", ["n", "g"], ["y"])], [3, D], base[:3])
save("plain_div_rms", rms_pow + [h.make_node("Div", ["x", "s"], ["y"])], [2, 7, D], base[:2])
# The root as a power: x * (mean(x^2) + eps)^-0.5 * w (TensorFlow exports),
# and a LayerNorm dividing by (var + eps)^0.5.
save("pow_half_rms", [h.make_node("Pow", ["x", "two"], ["p"]),
                      h.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
                      h.make_node("Add", ["eps", "v"], ["ve"]),
                      h.make_node("Pow", ["ve", "minus_half"], ["r"]),
                      h.make_node("Mul", ["x", "r"], ["n"]), h.make_node("Mul", ["n", "g"], ["y"])],
     [1, 5, D], base[:3] + [c("minus_half", -0.5)])
save("pow_root_ln", [n if n.op_type != "Sqrt" else h.make_node("Pow", ["ve", "half"], ["s"])
                     for n in layer_norm()], [1, 10, D], base + [c("half", 0.5)])
# The mean read elsewhere too: no LayerNormalization, but what follows the
# Sub is an RMSNorm of x - mean (with the scale; the shift stays an Add).
save("mean_output_rms", layer_norm() + [h.make_node("Identity", ["m"], ["mean"])], [1, 10, D], base,
     outs=("y", "mean"))
# Not normalizations over trailing axes, or with a run-time eps: left as
# written (still correct).
save("middle_axis_unfused", layer_norm(mean_axes=(1,), gamma=False, beta=False), [1, 10, D], base[:2])
save("runtime_eps_unfused",
     [h.make_node("ReduceMax", ["x"], ["mx"], axes=[-1]), h.make_node("Mul", ["mx", "tiny"], ["e"])] +
     [h.make_node("Pow", ["x", "two"], ["p"]), h.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
      h.make_node("Add", ["v", "e"], ["ve"]), h.make_node("Sqrt", ["ve"], ["s"]),
      h.make_node("Div", ["x", "s"], ["y"])], [2, D], base[:1] + [c("tiny", 1e-3)])
