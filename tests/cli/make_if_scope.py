#!/usr/bin/python3
"""Writes tests/cli/data/control_flow/if_scope.onnx and ONNX Runtime's
outputs for it: ONNX scoping, where a nested subgraph sees every enclosing
graph's names, not only the main graph's.

y = If(c, then: k = Constant(3.0); t = x * x;
                If(c2, then: t + k, else: t - Constant(1.0) * k),
          else: -x)

The inner branches read `k`, a Constant of the enclosing then-branch that
no node of that branch reads itself, and `t`, a node output of it; c and c2
are boolean inputs. Run once, the output
is committed (see make_control_flow.py for what it needs).
Usage: /usr/bin/python3 tests/cli/make_if_scope.py
"""
import os
import subprocess
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
out = os.path.join(here, "data", "control_flow")
env = dict(os.environ, NODE_PATH=os.path.join(root, ".cache", "ort", "node_modules"))
rng = np.random.default_rng(5)

vi = lambda name: h.make_tensor_value_info(name, TP.FLOAT, [2, 3])
inner_then = h.make_graph([h.make_node("Add", ["t", "k"], ["a"])], "inner_then", [], [vi("a")])
inner_else = h.make_graph([h.make_node("Constant", [], ["one"], value=nh.from_array(np.array(1, np.float32))),
                           h.make_node("Mul", ["one", "k"], ["ok"]),
                           h.make_node("Sub", ["t", "ok"], ["b"])], "inner_else", [], [vi("b")])
then_g = h.make_graph([h.make_node("Constant", [], ["k"], value=nh.from_array(np.array(3, np.float32))),
                       h.make_node("Mul", ["x", "x"], ["t"]),
                       h.make_node("If", ["c2"], ["yi"], then_branch=inner_then, else_branch=inner_else)],
                      "then", [], [vi("yi")])
else_g = h.make_graph([h.make_node("Neg", ["x"], ["yo"])], "else", [], [vi("yo")])
g = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "if_scope",
                 [vi("x"), h.make_tensor_value_info("c", TP.BOOL, []), h.make_tensor_value_info("c2", TP.BOOL, [])],
                 [vi("y")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], producer_name="mlcc-tests")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, os.path.join(out, "if_scope.onnx"))

x = os.path.join(out, "if_scope_x.bin")
rng.standard_normal((2, 3)).astype(np.float32).tofile(x)
for c, c2 in ((1, 1), (1, 0), (0, 1)):
    args = ["node", os.path.join(root, "tests", "models", "ort_run.js"), os.path.join(out, "if_scope.onnx"), "0",
            "%s:2,3@float32" % x, "%s:@bool" % os.path.join(out, "c%d.bin" % c),
            "%s:@bool" % os.path.join(out, "c%d.bin" % c2), "--",
            os.path.join(out, "if_scope_y_%d%d.bin" % (c, c2))]
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
