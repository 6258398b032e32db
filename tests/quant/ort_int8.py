#!/usr/bin/python3
"""ort_int8.py - which int8 arithmetic ONNX Runtime uses on this CPU.

ONNX Runtime's x86 kernels for uint8 x int8 products take one of two paths:
with VNNI (AVX512-VNNI, AVX-VNNI) the products are summed exactly in int32;
without it (AVX2, AVX-512 without VNNI) `vpmaddubsw` adds pairs of products
into int16 and saturates them, so that ORT's results depend on the CPU and
differ from the exact integer arithmetic wherever a pair sum passes 32767.
mlcc computes exactly on every CPU, so the tests compare with ORT exactly
only where ORT is exact, and say which path ORT took.

    ort_int8.py probe   prints "exact" or "saturating" (and the evidence)

The probe runs a MatMulInteger whose every pair of products is
255 * 127 + 255 * 127 = 64770 in ONNX Runtime (tests/models/ort_run.js,
onnxruntime-node through NODE_PATH). ORT_PREFIX, split on spaces, is put
before `node` (e.g. "qemu-x86_64 -cpu EPYC-Rome" runs ORT as on an AVX2-only
AMD Zen 2 on any x86 host; with MLCC_HOST_CPU=x86-64-v3 for mlcc, the
int8 tests run as on such a machine).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M, K, N = 4, 64, 16


def node_command():
    """node, by its full path (qemu-user does not search PATH)."""
    return os.environ.get("ORT_PREFIX", "").split() + [shutil.which("node") or "node"]


def probe():
    """("exact" | "saturating" | "unknown", a line of evidence)."""
    with tempfile.TemporaryDirectory() as d:
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                 helper.make_node("MatMulInteger", ["q", "b"], ["acc"]),
                 helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
        inits = [numpy_helper.from_array(np.array(1, np.float32), "s"),
                 numpy_helper.from_array(np.array(0, np.uint8), "z"),
                 numpy_helper.from_array(np.full((K, N), 127, np.int8), "b")]
        graph = helper.make_graph(nodes, "probe",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [M, K])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])],
                                  inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7
        onnx.save(model, os.path.join(d, "probe.onnx"))
        np.full((M, K), 255, np.float32).tofile(os.path.join(d, "x.bin"))
        r = subprocess.run(node_command() + [os.path.join(ROOT, "tests/models/ort_run.js"),
                                             os.path.join(d, "probe.onnx"), "0",
                                             os.path.join(d, "x.bin") + f":{M},{K}", "--",
                                             os.path.join(d, "y.bin")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "unknown", "ONNX Runtime failed: " + r.stderr.strip()[-200:]
        y = np.fromfile(os.path.join(d, "y.bin"), "<f4")
    exact, saturated = 255 * 127 * K, 32767 * K // 2
    what = f"255 x 127 summed over {K} terms gives {int(y[0])}"
    if np.all(y == exact):
        return "exact", what + " (exact)"
    if np.all(y == saturated):
        return "saturating", what + f" (pair sums saturated at 32767; exact {exact})"
    return "unknown", what + f" (exact {exact}, saturating {saturated})"


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] != "probe":
        print(__doc__)
        sys.exit(2)
    path, evidence = probe()
    print(path, evidence)
    sys.exit(0 if path != "unknown" else 1)
