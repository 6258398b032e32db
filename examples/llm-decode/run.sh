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
#    at past = 0, 1, 37 and 255 (1e-5 of the largest value of each tensor);
# 6. the same with each cache in one buffer (`--kv-cache auto`, generate.c
#    built with -DKV_CACHE: a step writes only its new row), by the LLVM and
#    the C backends: the same tokens; a call given two buffers for a cache
#    returns MLCC_ERR_CACHE_BUFFER; --kv-cache without --dim, with a pair
#    that is not a cache, and under mlcc check is refused (no output file).
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
# One buffer per cache (--kv-cache auto), LLVM and C backends.
for backend in llvm c; do
  mkdir -p "kv-$backend"
  "$mlcc" llama_decode.onnx --dim past=0..255 --kv-cache auto --backend "$backend" \
    -o "kv-$backend/libllm.a" --name llm || exit 1
  cc -O2 -std=c11 -DKV_CACHE -I"kv-$backend" "$here/generate.c" "kv-$backend/libllm.a" -lm \
    -o "kv-$backend/generate" || exit 1
  "kv-$backend/generate" "$steps" | tee "kv-$backend.txt" || exit 1
  if [[ "$(head -n 1 "kv-$backend.txt")" == "$(head -n 1 ort.txt)" ]]; then
    echo "ok: --kv-cache ($backend): the $steps tokens equal ONNX Runtime's"
  else
    echo "FAIL: --kv-cache ($backend): the tokens differ from ONNX Runtime's"; failed=1
  fi
done
cat >two_buffers.c <<'C'
#include "llm.h"
#include <stdio.h>
#include <stdlib.h>
int main(void) { /* a cache's past and present in two buffers: refused */
  static float a[LLM_OUTPUT_PRESENT_KEY_0_COUNT], b[LLM_OUTPUT_PRESENT_KEY_0_COUNT];
  static float logits[LLM_OUTPUT_LOGITS_COUNT];
  static unsigned char arena[LLM_ARENA_SIZE + LLM_ARENA_ALIGN];
  void *al = arena + (LLM_ARENA_ALIGN - (size_t)arena % LLM_ARENA_ALIGN) % LLM_ARENA_ALIGN;
  int64_t token = 1;
  llm_inputs in = {&token, a, b, b, b, 0};
  llm_outputs out = {logits, b, b, b, b};
  mlcc_status st = llm_run(&in, &out, al, LLM_ARENA_SIZE);
  printf("%s\n", mlcc_status_string(st));
  return st == MLCC_ERR_CACHE_BUFFER ? 0 : 1;
}
C
if cc -std=c11 -Ikv-llvm two_buffers.c kv-llvm/libllm.a -lm -o two_buffers && ./two_buffers; then
  echo "ok: two buffers for a cache: MLCC_ERR_CACHE_BUFFER"
else
  echo "FAIL: two buffers for a cache were not refused"; failed=1
fi
refused() { # NAME ARGS...: mlcc must exit 2 or 3 with an error line and no output file
  local name=$1; shift
  rm -f bad.a
  "$mlcc" "$@" >bad.log 2>&1
  local rc=$?
  if [[ ($rc == 2 || $rc == 3) && ! -e bad.a ]] && grep -q "error: .*kv-cache" bad.log; then
    echo "ok: $name refused: $(grep -m1 error: bad.log)"
  else
    echo "FAIL: $name: exit $rc"; cat bad.log; failed=1
  fi
}
refused "--kv-cache without --dim" llama_decode.onnx --kv-cache auto -o bad.a
refused "a pair that is not a cache" llama_decode.onnx --dim past=0..255 --kv-cache past_key_0=logits -o bad.a
refused "mlcc check --kv-cache" check llama_decode.onnx --dim past=0..255 --assign past=3 --kv-cache auto
exit $failed
