#!/usr/bin/python3
"""Writes tests/cli/data/control_flow/: models whose control flow depends on
values known only at run time, inputs for them, and ONNX Runtime's outputs.
tests/cli/control_flow.sh compiles each model once and compares every run
with these references.

- if_nested.onnx: y = If(c, then: If(c2, Relu(x @ W1) + 1, Tanh(x @ W1)),
  else: Sigmoid(x @ W2) * 2); c and c2 are boolean inputs.
- loop_until.onnx: a Loop of at most 12 iterations whose condition is an
  input (go) and then the body's own test: x <- x * 1.5 + 0.25 and
  n <- n + 1 while sum(x) < limit (limit an input). Outputs x and n.
- loop_scan_until.onnx: the same with a scan output (unsupported: its
  length is the number of iterations a run makes).
- loop_grow.onnx: a Loop of 3 iterations whose carried value grows by a
  Concat each time (a known condition: no selections, shapes may change).
- loop_count.onnx: a Loop whose trip count is an input m (for
  --input-range m=0..12): x <- x * 1.5 + 0.25, n <- n + 1. Run at m = 0, 3,
  12.

- frames_loop.onnx: x[seq, 8] (seq a named dimension); a Loop of
  Shape(x)[0] iterations, as `for i in range(x.shape[0])` exports: h <-
  0.5 * h + tanh(x[i] @ W), each h a scan output; y = the scan output plus
  the last h. Compiled once with --dim seq=1..16, run at seq = 1, 5, 16.
- frames_loop_square.onnx, frames_loop_falling.onnx: the same Loop run
  seq * seq and 20 - seq times (errors: not affine in seq; falling).
- frames_offset.onnx: a Loop of Shape(x)[0] - 1 iterations over x[i + 1] -
  x[i] (none at seq 1, with a scan output); y = the scan output with the
  last h after it.
- frames_nested.onnx: for i in range(seq): g = 0; for j in range(seq):
  g = 0.9 g + 0.1 x[j]; h = tanh(h + g + x[i]); y = each h.
- frames_triangle.onnx: the same with the inner loop over range(i + 1) (its
  count follows the outer iteration, not seq).
- scan_in_if.onnx: y = If(c, then: the running sums of x[4, 8] by a Scan,
  else: -x); c a boolean input.
- frames_scan.onnx: x[1, seq, 8]; a Scan over axis 1 (h <- tanh(x_t @ W +
  h @ U), each h stacked on axis 1); y = the stack plus the last h.

Run once; the output is committed, so the tests need neither Python nor
ONNX Runtime. Needs numpy, onnx and onnxruntime-node (tests/models/
compare_ort.sh installs it into .cache/ort).
Usage: /usr/bin/python3 tests/cli/make_control_flow.py
"""
import os
import subprocess
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
out = os.path.join(here, "data", "control_flow")
os.makedirs(out, exist_ok=True)
env = dict(os.environ, NODE_PATH=os.path.join(root, ".cache", "ort", "node_modules"))
rng = np.random.default_rng(11)


def save(graph, name, opset=13):
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="mlcc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name))


# --- if_nested -----------------------------------------------------------------
w1 = nh.from_array(rng.standard_normal((16, 16)).astype(np.float32) * 0.3, "w1")
w2 = nh.from_array(rng.standard_normal((16, 16)).astype(np.float32) * 0.3, "w2")
one = nh.from_array(np.array(1, np.float32), "one")
two = nh.from_array(np.array(2, np.float32), "two")
y_t = h.make_tensor_value_info("yt", TP.FLOAT, [4, 16])
inner_then = h.make_graph([h.make_node("Relu", ["p1"], ["r"]), h.make_node("Add", ["r", "one"], ["yt"])],
                          "inner_then", [], [y_t])
inner_else = h.make_graph([h.make_node("Tanh", ["p1"], ["ye"])], "inner_else", [],
                          [h.make_tensor_value_info("ye", TP.FLOAT, [4, 16])])
then_g = h.make_graph([h.make_node("MatMul", ["x", "w1"], ["p1"]),
                      h.make_node("If", ["c2"], ["yi"], then_branch=inner_then, else_branch=inner_else)],
                     "then", [], [h.make_tensor_value_info("yi", TP.FLOAT, [4, 16])])
else_g = h.make_graph([h.make_node("MatMul", ["x", "w2"], ["p2"]), h.make_node("Sigmoid", ["p2"], ["s"]),
                      h.make_node("Mul", ["s", "two"], ["yo"])],
                     "else", [], [h.make_tensor_value_info("yo", TP.FLOAT, [4, 16])])
g = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "if_nested",
                 [h.make_tensor_value_info("x", TP.FLOAT, [4, 16]),
                  h.make_tensor_value_info("c", TP.BOOL, []),
                  h.make_tensor_value_info("c2", TP.BOOL, [])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [4, 16])], [w1, w2, one, two])
save(g, "if_nested.onnx")

# --- loop_until ----------------------------------------------------------------
k = nh.from_array(np.array(1.5, np.float32), "k")
b = nh.from_array(np.array(0.25, np.float32), "b")
i1 = nh.from_array(np.array(1, np.int64), "i1")
trips = nh.from_array(np.array(12, np.int64), "trips")


def step_body(cond):
    """x <- x * 1.5 + 0.25 and n <- n + 1; `cond` computes co."""
    return h.make_graph(
        [h.make_node("Mul", ["xi", "k"], ["xm"]), h.make_node("Add", ["xm", "b"], ["xo"]),
         h.make_node("Add", ["ni", "i1"], ["no"])] + cond,
        "body",
        [h.make_tensor_value_info("iter", TP.INT64, []), h.make_tensor_value_info("ci", TP.BOOL, []),
         h.make_tensor_value_info("xi", TP.FLOAT, [8]), h.make_tensor_value_info("ni", TP.INT64, [])],
        [h.make_tensor_value_info("co", TP.BOOL, []), h.make_tensor_value_info("xo", TP.FLOAT, [8]),
         h.make_tensor_value_info("no", TP.INT64, [])])


body = step_body([h.make_node("ReduceSum", ["xo"], ["sum"], keepdims=0),
                  h.make_node("Less", ["sum", "limit"], ["co"])])
g = h.make_graph([h.make_node("Loop", ["trips", "go", "x", "n0"], ["xf", "nf"], body=body)], "loop_until",
                 [h.make_tensor_value_info("x", TP.FLOAT, [8]), h.make_tensor_value_info("go", TP.BOOL, []),
                  h.make_tensor_value_info("limit", TP.FLOAT, [])],
                 [h.make_tensor_value_info("xf", TP.FLOAT, [8]), h.make_tensor_value_info("nf", TP.INT64, [])],
                 [k, b, i1, trips, nh.from_array(np.array(0, np.int64), "n0")])
save(g, "loop_until.onnx")

# The same loop with a scan output (x at each iteration): its length would be
# the number of iterations the run makes, which mlcc does not support.
body.output.append(h.make_tensor_value_info("xo", TP.FLOAT, [8]))
g = h.make_graph([h.make_node("Loop", ["trips", "go", "x", "n0"], ["xf", "nf", "xs"], body=body)],
                 "loop_scan_until",
                 [h.make_tensor_value_info("x", TP.FLOAT, [8]), h.make_tensor_value_info("go", TP.BOOL, []),
                  h.make_tensor_value_info("limit", TP.FLOAT, [])],
                 [h.make_tensor_value_info("xf", TP.FLOAT, [8]), h.make_tensor_value_info("nf", TP.INT64, []),
                  h.make_tensor_value_info("xs", TP.FLOAT, [None, 8])],
                 [k, b, i1, trips, nh.from_array(np.array(0, np.int64), "n0")])
save(g, "loop_scan_until.onnx")

# A Loop whose trip count is an input (m): x <- x * 1.5 + 0.25, n <- n + 1;
# compiled with --input-range m=0..12.
body = step_body([h.make_node("Identity", ["ci"], ["co"])])
g = h.make_graph([h.make_node("Loop", ["m", "", "x", "n0"], ["xf", "nf"], body=body)], "loop_count",
                 [h.make_tensor_value_info("x", TP.FLOAT, [8]), h.make_tensor_value_info("m", TP.INT64, [])],
                 [h.make_tensor_value_info("xf", TP.FLOAT, [8]), h.make_tensor_value_info("nf", TP.INT64, [])],
                 [k, b, i1, nh.from_array(np.array(0, np.int64), "n0")])
save(g, "loop_count.onnx")


def ort(model, ins, outs):
    args = ["node", os.path.join(root, "tests", "models", "ort_run.js"), os.path.join(out, model), "0"]
    for path, shape, kind in ins:
        args.append("%s:%s@%s" % (path, ",".join(map(str, shape)), kind))
    args.append("--")
    args += outs
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)


def write(name, a):
    path = os.path.join(out, name)
    a.tofile(path)
    return path


x = write("if_x.bin", rng.standard_normal((4, 16)).astype(np.float32))
for c, c2 in ((1, 1), (1, 0), (0, 1)):
    ort("if_nested.onnx",
        [(x, [4, 16], "float32"), (write("c%d.bin" % c, np.array(c, np.bool_)), [], "bool"),
         (write("c%d.bin" % c2, np.array(c2, np.bool_)), [], "bool")],
        [os.path.join(out, "if_y_%d%d.bin" % (c, c2))])

x = write("loop_x.bin", (rng.random(8) * 0.5).astype(np.float32))
write("go1.bin", np.array(1, np.bool_))
write("go0.bin", np.array(0, np.bool_))
for go, limit in ((1, 10.0), (1, 60.0), (1, 1e9), (0, 1e9)):
    lim = write("limit%d.bin" % limit, np.array(limit, np.float32))
    ort("loop_until.onnx", [(x, [8], "float32"), (os.path.join(out, "go%d.bin" % go), [], "bool"),
                            (lim, [], "float32")],
        [os.path.join(out, "loop_x_%d_%d.bin" % (go, limit)), os.path.join(out, "loop_n_%d_%d.bin" % (go, limit))])

# A Loop of 3 iterations (a constant trip count and condition) whose carried
# value grows: y <- Concat(y, x). Its selections fold away, so the carried
# value may change shape.
body = h.make_graph([h.make_node("Concat", ["yi", "x"], ["yo"], axis=0), h.make_node("Identity", ["ci"], ["co"])],
                    "body",
                    [h.make_tensor_value_info("iter", TP.INT64, []), h.make_tensor_value_info("ci", TP.BOOL, []),
                     h.make_tensor_value_info("yi", TP.FLOAT, None)],
                    [h.make_tensor_value_info("co", TP.BOOL, []), h.make_tensor_value_info("yo", TP.FLOAT, None)])
g = h.make_graph([h.make_node("Loop", ["three", "", "x"], ["y"], body=body)], "loop_grow",
                 [h.make_tensor_value_info("x", TP.FLOAT, [8])], [h.make_tensor_value_info("y", TP.FLOAT, [32])],
                 [nh.from_array(np.array(3, np.int64), "three")])
save(g, "loop_grow.onnx")
ort("loop_grow.onnx", [(x, [8], "float32")], [os.path.join(out, "grow_y.bin")])

for m in (0, 3, 12):
    mf = write("m%d.bin" % m, np.array(m, np.int64))
    ort("loop_count.onnx", [(x, [8], "float32"), (mf, [], "int64")],
        [os.path.join(out, "count_x_%d.bin" % m), os.path.join(out, "count_n_%d.bin" % m)])
write("m13.bin", np.array(13, np.int64))
write("m-1.bin", np.array(-1, np.int64))

# --- loops over a bounded dimension ------------------------------------------
def frame_body(nodes, name="body"):
    """A Loop body over frames: (iter, ci, hi[8]) -> (co, ho[8], hs[8]),
    ho carried and hs scanned."""
    return h.make_graph(
        nodes, name,
        [h.make_tensor_value_info("iter", TP.INT64, []), h.make_tensor_value_info("ci", TP.BOOL, []),
         h.make_tensor_value_info("hi", TP.FLOAT, [8])],
        [h.make_tensor_value_info("co", TP.BOOL, []), h.make_tensor_value_info("ho", TP.FLOAT, [8]),
         h.make_tensor_value_info("hs", TP.FLOAT, [8])])


w = nh.from_array(rng.standard_normal((8, 8)).astype(np.float32) * 0.5, "w")
u = nh.from_array(rng.standard_normal((8, 8)).astype(np.float32) * 0.5, "u")
half = nh.from_array(np.array(0.5, np.float32), "half")
body = frame_body(
    [h.make_node("Gather", ["x", "iter"], ["xi"], axis=0), h.make_node("MatMul", ["xi", "w"], ["p"]),
     h.make_node("Tanh", ["p"], ["t"]), h.make_node("Mul", ["hi", "half"], ["hm"]),
     h.make_node("Add", ["hm", "t"], ["ho"]), h.make_node("Identity", ["ho"], ["hs"]),
     h.make_node("Identity", ["ci"], ["co"])],
    "body")
g = h.make_graph(
    [h.make_node("Shape", ["x"], ["shape"]), h.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
     h.make_node("Loop", ["n", "", "h0"], ["hf", "ys"], body=body), h.make_node("Add", ["ys", "hf"], ["y"])],
    "frames_loop", [h.make_tensor_value_info("x", TP.FLOAT, ["seq", 8])],
    [h.make_tensor_value_info("y", TP.FLOAT, ["seq", 8])],
    [w, half, nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.zeros(8, np.float32), "h0")])
save(g, "frames_loop.onnx")
for name, count in (("square", [h.make_node("Mul", ["n", "n"], ["m"])]),
                    ("falling", [h.make_node("Sub", ["twenty", "n"], ["m"])])):
    g = h.make_graph(
        [h.make_node("Shape", ["x"], ["shape"]), h.make_node("Gather", ["shape", "zero"], ["n"], axis=0)] + count +
        [h.make_node("Loop", ["m", "", "h0"], ["hf", "ys"], body=body)],
        "frames_loop_" + name, [h.make_tensor_value_info("x", TP.FLOAT, ["seq", 8])],
        [h.make_tensor_value_info("hf", TP.FLOAT, [8])],
        [w, half, nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.array(20, np.int64), "twenty"),
         nh.from_array(np.zeros(8, np.float32), "h0")])
    save(g, "frames_loop_%s.onnx" % name)

body = h.make_graph(
    [h.make_node("MatMul", ["xt", "w"], ["p"]), h.make_node("MatMul", ["hi", "u"], ["q"]),
     h.make_node("Add", ["p", "q"], ["r"]), h.make_node("Tanh", ["r"], ["ho"]),
     h.make_node("Identity", ["ho"], ["hs"])],
    "body", [h.make_tensor_value_info("hi", TP.FLOAT, [1, 8]), h.make_tensor_value_info("xt", TP.FLOAT, [1, 8])],
    [h.make_tensor_value_info("ho", TP.FLOAT, [1, 8]), h.make_tensor_value_info("hs", TP.FLOAT, [1, 8])])
g = h.make_graph(
    [h.make_node("Scan", ["h0", "x"], ["hf", "ys"], body=body, num_scan_inputs=1, scan_input_axes=[1],
                 scan_output_axes=[1]),
     h.make_node("Unsqueeze", ["hf", "one_axis"], ["hf3"]), h.make_node("Add", ["ys", "hf3"], ["y"])],
    "frames_scan", [h.make_tensor_value_info("x", TP.FLOAT, [1, "seq", 8])],
    [h.make_tensor_value_info("y", TP.FLOAT, [1, "seq", 8])],
    [w, u, nh.from_array(np.zeros((1, 8), np.float32), "h0"), nh.from_array(np.array([1], np.int64), "one_axis")])
save(g, "frames_scan.onnx")

for seq in (1, 5, 16):
    x = write("frames_x%d.bin" % seq, rng.standard_normal((seq, 8)).astype(np.float32))
    ort("frames_loop.onnx", [(x, [seq, 8], "float32")], [os.path.join(out, "frames_loop_y%d.bin" % seq)])
    ort("frames_scan.onnx", [(x, [1, seq, 8], "float32")], [os.path.join(out, "frames_scan_y%d.bin" % seq)])

# --- loops over a bounded dimension: an offset count, nested loops ------------
one = nh.from_array(np.array(1, np.int64), "one")
ax0 = nh.from_array(np.array([0], np.int64), "ax0")
zero_i = nh.from_array(np.array(0, np.int64), "zero")
h0 = nh.from_array(np.zeros(8, np.float32), "h0")
frame_head = [h.make_node("Shape", ["x"], ["shape"]), h.make_node("Gather", ["shape", "zero"], ["n"], axis=0)]
body = frame_body(
    [h.make_node("Add", ["iter", "one"], ["i1"]), h.make_node("Gather", ["x", "i1"], ["a"], axis=0),
     h.make_node("Gather", ["x", "iter"], ["b"], axis=0), h.make_node("Sub", ["a", "b"], ["d"]),
     h.make_node("MatMul", ["d", "w"], ["p"]), h.make_node("Add", ["hi", "p"], ["q"]),
     h.make_node("Tanh", ["q"], ["ho"]), h.make_node("Identity", ["ho"], ["hs"]),
     h.make_node("Identity", ["ci"], ["co"])],
    "body")
g = h.make_graph(
    frame_head + [h.make_node("Sub", ["n", "one"], ["m"]), h.make_node("Loop", ["m", "", "h0"], ["hf", "ys"], body=body),
                  h.make_node("Unsqueeze", ["hf", "ax0"], ["hf1"]), h.make_node("Concat", ["ys", "hf1"], ["y"], axis=0)],
    "frames_offset", [h.make_tensor_value_info("x", TP.FLOAT, ["seq", 8])],
    [h.make_tensor_value_info("y", TP.FLOAT, ["seq", 8])], [w, one, ax0, zero_i, h0])
save(g, "frames_offset.onnx")

inner = h.make_graph(
    [h.make_node("Gather", ["x", "j"], ["xj"], axis=0), h.make_node("Mul", ["gi", "p9"], ["g9"]),
     h.make_node("Mul", ["xj", "p1"], ["x1"]), h.make_node("Add", ["g9", "x1"], ["go"]),
     h.make_node("Identity", ["cj"], ["cjo"])],
    "inner",
    [h.make_tensor_value_info("j", TP.INT64, []), h.make_tensor_value_info("cj", TP.BOOL, []),
     h.make_tensor_value_info("gi", TP.FLOAT, [8])],
    [h.make_tensor_value_info("cjo", TP.BOOL, []), h.make_tensor_value_info("go", TP.FLOAT, [8])])
outer = frame_body(
    [h.make_node("Loop", ["n", "", "h0"], ["gf"], body=inner), h.make_node("Gather", ["x", "iter"], ["xi"], axis=0),
     h.make_node("Add", ["hi", "gf"], ["s"]), h.make_node("Add", ["s", "xi"], ["s2"]),
     h.make_node("Tanh", ["s2"], ["ho"]), h.make_node("Identity", ["ho"], ["hs"]),
     h.make_node("Identity", ["ci"], ["co"])],
    "outer")


def outer_loop(name, inits):
    """y = each h of a Loop of seq iterations whose body is `outer`."""
    save(h.make_graph(
        frame_head + [h.make_node("Loop", ["n", "", "h0"], ["hf", "y"], body=outer)],
        name, [h.make_tensor_value_info("x", TP.FLOAT, ["seq", 8])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["seq", 8])],
        inits + [h0, nh.from_array(np.array(0.9, np.float32), "p9"), nh.from_array(np.array(0.1, np.float32), "p1")]),
        name + ".onnx")


outer_loop("frames_nested", [zero_i])
# The inner loop over range(iter + 1).
outer.node.insert(0, h.make_node("Add", ["iter", "one"], ["i1"]))
outer.node[1].input[0] = "i1"
outer_loop("frames_triangle", [zero_i, one])
for seq in (1, 5, 16):
    x = os.path.join(out, "frames_x%d.bin" % seq)
    for name in ("offset", "nested", "triangle"):
        ort("frames_%s.onnx" % name, [(x, [seq, 8], "float32")],
            [os.path.join(out, "frames_%s_y%d.bin" % (name, seq))])

# --- a Scan in a branch taken at run time --------------------------------------
body = h.make_graph([h.make_node("Add", ["si", "xt"], ["so"]), h.make_node("Identity", ["so"], ["ys"])], "body",
                    [h.make_tensor_value_info("si", TP.FLOAT, [8]), h.make_tensor_value_info("xt", TP.FLOAT, [8])],
                    [h.make_tensor_value_info("so", TP.FLOAT, [8]), h.make_tensor_value_info("ys", TP.FLOAT, [8])])
then_g = h.make_graph([h.make_node("Scan", ["s0", "x"], ["sf", "yt"], body=body, num_scan_inputs=1)], "then", [],
                      [h.make_tensor_value_info("yt", TP.FLOAT, [4, 8])])
else_g = h.make_graph([h.make_node("Neg", ["x"], ["ye"])], "else", [], [h.make_tensor_value_info("ye", TP.FLOAT, [4, 8])])
g = h.make_graph([h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "scan_in_if",
                 [h.make_tensor_value_info("x", TP.FLOAT, [4, 8]), h.make_tensor_value_info("c", TP.BOOL, [])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [4, 8])], [nh.from_array(np.zeros(8, np.float32), "s0")])
save(g, "scan_in_if.onnx")
x = write("scan_x.bin", rng.standard_normal((4, 8)).astype(np.float32))
for c in (0, 1):
    ort("scan_in_if.onnx", [(x, [4, 8], "float32"), (os.path.join(out, "c%d.bin" % c), [], "bool")],
        [os.path.join(out, "scan_in_if_y%d.bin" % c)])
