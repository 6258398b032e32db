#!/usr/bin/env bash
# run.sh - the com.microsoft quantized ops (QLinearAdd, QLinearMul,
# QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool,
# QLinearAveragePool, QLinearConcat) through the CLI and a linked program.
#
#   tests/quant/run.sh MLCC WORKDIR
#
# 1. Single-op models (quant.py make-ops: QuantizeLinear -> op ->
#    DequantizeLinear, u8 and i8, broadcasting, omitted zero points, a scale
#    known only at run time) are compiled with `mlcc --name m`, linked with
#    tools/conformance/driver.c and run on random inputs. Each output must be
#    within one quantization step of the numpy reference and of ONNX Runtime
#    (reported as exact or as the number of elements one step apart).
#    Invalid nodes (quant.py make-bad) must be rejected with one error line
#    naming the node, never a crash.
# 2. The int8 ShuffleNet-v2 of the ONNX model zoo
#    (../shared/models/shufflenet-v2-12-int8) on its test_data_set_0: the
#    max abs difference to the zoo's output and to ONNX Runtime, and the top-1
#    class, which must agree with both.
#
# ONNX Runtime is onnxruntime-node 1.30 in $MLCC_CACHE/ort (default
# REPO/.cache/ort), installed when missing (scripts/lib/ort.sh); when it
# cannot be, the ONNX Runtime comparisons are left out (exit 77 at the end).
# ORT_PREFIX runs it under a command, e.g. "qemu-x86_64 -cpu EPYC-Rome" for
# its AVX2 path (see ort_int8.py).
#
# Exit status: 0 all passed, 1 a failure, 2 bad usage, 77 a part was skipped
# (no python3-onnx, or no ShuffleNet model) and nothing failed.
set -uo pipefail

# shellcheck source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
require_ort_or_note
"$cc" -std=c99 -O2 -I "$root/runtime-c" -c "$root/tools/conformance/driver.c" -o "$work/driver.o" || exit 1

# Compiles CASE/model.onnx, runs it on CASE's inputs (and ONNX Runtime when
# available): CASE/mlcc.bin, CASE/ort.bin. Arguments: CASE, then the input
# specs IN.bin:D0,D1,... in order.
run_case() {
  local d="$1"; shift
  local bins=() spec
  for spec in "$@"; do bins+=("${spec%:*}"); done
  rm -f "$d/mlcc.bin" "$d/ort.bin"
  if ! "$mlcc" "$d/model.onnx" -o "$d/libm.a" --name m >"$d/mlcc.log" 2>&1; then
    echo "FAIL: mlcc: $(tail -n 1 "$d/mlcc.log")"; return 1
  fi
  if ! "$cc" -o "$d/run" "$work/driver.o" "$d/libm.a" -lm >"$d/link.log" 2>&1 ||
     ! "$d/run" "${bins[@]}" -- "$d/mlcc.bin" >"$d/run.log" 2>&1; then
    echo "FAIL: link or run: $(tail -n 1 "$d/link.log" "$d/run.log" | tr '\n' ' ')"; return 1
  fi
  if ((ort)) && [[ ! -e "$d/no_ort" ]] && ! "${ort_node[@]}" "$root/tests/models/ort_run.js" "$d/model.onnx" 0 "$@" -- \
       "$d/ort.bin" >"$d/ort.log" 2>&1; then
    echo "FAIL: ONNX Runtime: $(tail -n 1 "$d/ort.log")"; return 1
  fi
}

# --- 1. single-op models -------------------------------------------------------
echo "== single-op models (tolerance: 1 output quantization step)"
rm -rf "$work/ops"
"$python" "$here/quant.py" make-ops "$work/ops" || exit 1
for d in "$work"/ops/*/; do
  d="${d%/}"
  read -r -a specs <"$d/inputs"
  printf '  %-34s ' "$(basename "$d")"
  if run_case "$d" "${specs[@]}"; then
    "$python" "$here/quant.py" compare-op "$d" || failed=$((failed + 1))
  else
    failed=$((failed + 1))
  fi
done

# --- invalid nodes: one error line naming the node, exit status 1 or 3 ---------
echo "== invalid nodes"
rm -rf "$work/bad"
"$python" "$here/quant.py" make-bad "$work/bad" || exit 1
for m in "$work"/bad/*.onnx; do
  name="$(basename "$m" .onnx)"
  rc=0
  "$mlcc" "$m" -o "$work/bad/$name.a" >"$work/bad/$name.log" 2>&1 || rc=$?
  line="$(cat "$work/bad/$name.log")"
  printf '  %-34s ' "$name"
  if [[ ($rc == 1 || $rc == 3) && "$(wc -l <"$work/bad/$name.log")" == 1 &&
        "$line" == *"node 'bad'"* && "$line" == *"$(cat "$work/bad/$name.expect")"* ]]; then
    echo "PASS $line"
  else
    echo "FAIL (exit status $rc): $line"
    failed=$((failed + 1))
  fi
done

# --- the integer kernels of QLinearConv/QLinearMatMul/ConvInteger/MatMulInteger
# on what the conformance cases leave out (constant weights, zero points,
# windows clipped at every border): exact against numpy and ONNX Runtime.
echo "== integer convolutions and matrix products"
"$python" "$here/integer_ops.py" "$mlcc" "$work/integer" || failed=$((failed + 1))

# --- 2. ShuffleNet-v2 int8 -----------------------------------------------------
model_dir="$root/../shared/models/shufflenet-v2-12-int8"
echo "== shufflenet-v2-12-int8"
if [[ ! -f "$model_dir/model.onnx" ]]; then
  echo "  SKIP: $model_dir is absent"
  skipped+=(shufflenet)
else
  d="$work/shufflenet"
  mkdir -p "$d"
  cp "$model_dir/model.onnx" "$d/model.onnx"
  data="$model_dir/test_data_set_0"
  shape="$("$python" "$here/quant.py" pb2bin "$data/input_0.pb" "$d/input.bin")" &&
    "$python" "$here/quant.py" pb2bin "$data/output_0.pb" "$d/ref.bin" >/dev/null || exit 1
  t0=$(date +%s.%N)
  if run_case "$d" "$d/input.bin:$shape"; then
    echo "  compiled and ran in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
    ort_bin=()
    ((ort)) && ort_bin=("$d/ort.bin")
    "$python" "$here/quant.py" compare-model "$d/model.onnx" "$d/mlcc.bin" "$d/ref.bin" \
      "${ort_bin[@]}" || failed=$((failed + 1))
  else
    failed=$((failed + 1))
  fi
fi

finish
