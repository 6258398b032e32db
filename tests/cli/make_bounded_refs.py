#!/usr/bin/python3
"""Writes tests/cli/data/bounded_refs/: inputs of the TransformerEncoder of
make_encoder.py at sequence lengths 1, 7, 64, 100, 256 and 70, and ONNX Runtime's
outputs for them (raw float32, dense). tests/cli/bounded_dims.sh compares
one library compiled with --dim seq=1..256 against them. Also writes
tests/cli/data/bounded_encoder_unnamed.onnx: the same model with its
dynamic axis unnamed ([1, ?, 32], as some exporters write it), which
compiles with --shape x=1x7x32.

Run once; the output is committed, so the tests need neither Python nor
ONNX Runtime. Needs numpy and onnxruntime-node (tests/models/compare_ort.sh
installs it into .cache/ort). Usage: /usr/bin/python3 tests/cli/make_bounded_refs.py
"""
import os
import subprocess
import numpy as np
import onnx

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
out = os.path.join(here, "data", "bounded_refs")
os.makedirs(out, exist_ok=True)
model = os.path.join(here, "data", "bounded_encoder.onnx")
env = dict(os.environ, NODE_PATH=os.path.join(root, ".cache", "ort", "node_modules"))
rng = np.random.default_rng(7)
for seq in (1, 7, 64, 100, 256, 70):  # 70 last: the others' inputs unchanged
    x = os.path.join(out, "x%d.bin" % seq)
    rng.standard_normal((1, seq, 32)).astype(np.float32).tofile(x)
    subprocess.run(["node", os.path.join(root, "tests", "models", "ort_run.js"), model, "0",
                    "%s:1,%d,32" % (x, seq), "--", os.path.join(out, "y%d.bin" % seq)],
                   check=True, env=env, stdout=subprocess.DEVNULL)

unnamed = onnx.load(model)
for vi in list(unnamed.graph.input) + list(unnamed.graph.output):
    for d in vi.type.tensor_type.shape.dim:
        if d.HasField("dim_param"):
            d.ClearField("dim_param")
onnx.save(unnamed, os.path.join(here, "data", "bounded_encoder_unnamed.onnx"))
