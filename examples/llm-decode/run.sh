#!/usr/bin/env bash
# examples/llm-decode/run.sh - the generation example end to end, and its test
# (ctest example-llm-decode):
#
#   examples/llm-decode/run.sh [MLCC [WORKDIR [STEPS]]]
#
# 1. make_model.py exports the decode step of a small Llama-style model
#    (PyTorch, random weights) with a dynamic past length;
# 2. mlcc compiles it once for past = 0..255 (`--dim past=0..255`);
# 3. generate.c runs a greedy generation of STEPS tokens (default 32),
#    carrying the key/value caches in its own buffers, and prints the tokens
#    and tokens per second;
# 4. ort_generate.js runs the same loop with ONNX Runtime (one thread);
# 5. the tokens must be equal, and `mlcc check` must pass on the decode step
#    at past = 0, 1, 37 and 255 (1e-5 of the largest value of each tensor).
# Installs python3-torch (apt) and onnxruntime-node (npm) when missing; exit
# 77 when they cannot be installed, 1 on a failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mlcc=$(realpath "${1:-$root/build/mlcc}")
work=${2:-/tmp/mlcc-llm-decode}
steps=${3:-32}
mkdir -p "$work" && work=$(realpath "$work")
# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
# shellcheck source=../../scripts/lib/ort.sh
source "$root/scripts/lib/ort.sh"
mlcc_require_packages python3-torch python3-numpy || { echo "SKIP: python3-torch is not installable"; exit 77; }
mlcc_require_ort "$root" || { echo "SKIP: onnxruntime-node is not installable"; exit 77; }
cd "$work" || exit 1
/usr/bin/python3 "$here/make_model.py" llama_decode.onnx >make_model.log 2>&1 ||
  { cat make_model.log; exit 1; }
"$mlcc" llama_decode.onnx --dim past=0..255 -o libllm.a --name llm || exit 1
cc -O2 -std=c11 -I. "$here/generate.c" libllm.a -lm -o generate || exit 1
./generate "$steps" | tee mlcc.txt || exit 1
node "$here/ort_generate.js" llama_decode.onnx "$steps" | tee ort.txt || exit 1
failed=0
if [[ "$(head -n 1 mlcc.txt)" == "$(head -n 1 ort.txt)" ]]; then
  echo "ok: the $steps tokens equal ONNX Runtime's"
else
  echo "FAIL: the tokens differ from ONNX Runtime's"; failed=1
fi
for past in 0 1 37 255; do
  if "$mlcc" check --tolerance 1e-5 llama_decode.onnx --dim past=0..255 --assign past=$past \
      >check.$past.log 2>&1 && grep -q "all within tolerance" check.$past.log; then
    echo "ok: mlcc check at past=$past: $(grep 'outputs compared' check.$past.log)"
  else
    echo "FAIL: mlcc check at past=$past"; tail -n 3 check.$past.log; failed=1
  fi
done
exit $failed
