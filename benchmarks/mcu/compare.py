#!/usr/bin/python3
"""compare.py - a benchmarks/mcu firmware's outputs against ONNX Runtime's.

    compare.py MODEL.onnx RUN.LOG WORKDIR

MODEL.onnx is the model the firmware's library was built from: the float
model, or for int8 the QDQ model mlcc wrote for it (--emit onnx). The input
is the firmware's own (bench_firmware.c's fill: a linear congruential
sequence from seed 12345, uniform in [-1, 1)); ONNX Runtime runs through
tests/models/ort_run.js (onnxruntime-node through NODE_PATH). Prints one
line, "max |diff| D of max |ORT| R" and, where the output is the
DequantizeLinear of a constant scale, "= S steps"; exits 1 when the outputs
do not match (int8: more than one step apart; float: more than 1e-4 of the
output's range), 2 on bad usage.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def firmware_input(count):
    """bench_firmware.c's fill for float inputs."""
    seed = 12345
    out = np.empty(count, dtype=np.float32)
    for i in range(count):
        seed = (seed * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = np.float32((seed >> 8) / 8388608.0 - 1.0)
    return out


def output_step(model, name):
    """The scale of the DequantizeLinear that writes output `name`, if constant."""
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute:
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    for n in model.graph.node:
        if name in n.output and n.op_type == "DequantizeLinear" and n.input[1] in consts:
            s = consts[n.input[1]]
            return float(s.reshape(-1)[0]) if s.size == 1 else None
    return None


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    model_path, log_path, work = sys.argv[1:]
    model = onnx.load(model_path)
    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != 1 or len(model.graph.output) != 1:
        print("compare.py: one input and one output expected")
        return 2
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    x = firmware_input(int(np.prod(dims)))
    os.makedirs(work, exist_ok=True)
    x.tofile(os.path.join(work, "input.bin"))
    ort_out = os.path.join(work, "ort.bin")
    here = os.path.dirname(os.path.abspath(__file__))
    runner = os.path.join(here, "..", "..", "tests", "models", "ort_run.js")
    subprocess.run(["node", runner, model_path, "0",
                    os.path.join(work, "input.bin") + ":" + ",".join(map(str, dims)), "--",
                    ort_out], check=True)
    want = np.fromfile(ort_out, dtype=np.float32)
    text = open(log_path).read()
    m = re.search(r"^output 0:([0-9a-f]*)$", text, re.M)
    if not m:
        print("compare.py: no output in " + log_path)
        return 1
    got = np.frombuffer(bytes.fromhex(m.group(1)), dtype=np.float32)
    if got.shape != want.shape:
        print("compare.py: %d outputs, ONNX Runtime %d" % (got.size, want.size))
        return 1
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    scale = float(np.max(np.abs(want)))
    step = output_step(model, model.graph.output[0].name)
    line = "max |diff| %.3g of max |ORT| %.3g" % (diff, scale)
    if step:
        line += " = %.2f steps" % (diff / step)
        ok = diff <= step * 1.001
    else:
        ok = diff <= 1e-4 * max(scale, 1e-30)
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
