#!/usr/bin/env bash
# python-squeezenet-ort: `import mlcc`, compile the squeezenet1_1 benchmark
# model (torchvision, random weights, tests/models/make_models.py), run it
# in Python on its input and compare with ONNX Runtime 1.30
# (onnxruntime-node, tests/models/ort_run.js): max |mlcc - ort| must be at
# most 1e-5 max |ort|.
#
# usage: tests/api/squeezenet_ort.sh MLCC_PYTHON_DIR WORKDIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pydir=$(realpath "$1")
mkdir -p "$2"
work=$(realpath "$2")
# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
mlcc_require_packages python3-torch python3-torchvision python3-numpy || exit 77
# shellcheck source=../../scripts/lib/ort.sh
source "$root/scripts/lib/ort.sh"
mlcc_require_ort "$root" || exit 77

d=$work/models/squeezenet1_1
[[ -f $d/model.onnx ]] || /usr/bin/python3 "$root/tests/models/make_models.py" "$work/models" squeezenet1_1
shape=$(cat "$d/input.shape")
node "$root/tests/models/ort_run.js" "$d/model.onnx" 0 "$d/input.bin:$shape" -- "$d/ort.bin" > "$work/ort.log" 2>&1 ||
  { cat "$work/ort.log"; exit 1; }
PYTHONPATH=$pydir /usr/bin/python3 - "$d" <<'PY'
import sys, numpy as np, mlcc
d = sys.argv[1]
shape = tuple(int(x) for x in open(d + "/input.shape").read().split(","))
x = np.fromfile(d + "/input.bin", dtype=np.float32).reshape(shape)
lib = mlcc.compile(d + "/model.onnx")
name = lib.info["inputs"][0]["name"]
(out,) = lib.run({name: x}).values()
ort = np.fromfile(d + "/ort.bin", dtype=np.float32).reshape(out.shape)
diff = float(np.abs(out.astype(np.float64) - ort).max())
scale = float(np.abs(ort).max())
ok = diff <= 1e-5 * scale
print("python-squeezenet-ort: max |mlcc - ort| %.3g, max |ort| %.3g, ratio %.3g (limit 1e-5): %s"
      % (diff, scale, diff / scale, "PASS" if ok else "FAIL"))
print("python-squeezenet-ort: arena %d bytes, weights %d bytes, code %s bytes, %d kernel calls"
      % (lib.info["arena_bytes"], lib.info["weight_bytes"], lib.info["code_bytes"], lib.info["kernel_calls"]))
sys.exit(0 if ok else 1)
PY
