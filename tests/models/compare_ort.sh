#!/usr/bin/env bash
# compare_ort.sh - real models: mlcc against ONNX Runtime 1.30.
#
#   tests/models/compare_ort.sh MLCC WORKDIR [MODEL...]
#
# MLCC is the mlcc binary, WORKDIR a scratch folder (created; reused). The
# models (default: all) are resnet18, squeezenet1_1, mobilenet_v2 (torchvision,
# random weights and BatchNorm statistics, input [1,3,224,224]) and
# transformer_encoder (torch.nn.TransformerEncoder: 2 layers, d_model 64,
# input [1,16,64]), exported at ONNX opset 13 by make_models.py with a random
# input (fixed seeds). Each model is run by ONNX Runtime (onnxruntime-node,
# one thread, ort_run.js) and compiled with `mlcc model.onnx -o libm.a
# --name m`, linked with tools/conformance/driver.c and run on the same input.
# A model passes when max |mlcc - ort| <= 1e-4 * max |ort| (compare.py);
# NAME_fp16 (make_models.py: NAME as a float16 graph, which both engines run
# in float16) when max |mlcc - ort| <= 2e-3 * max |ort| (about 4 float16
# units at the largest value: the two round differently).
# Per-inference times of both (mean of a few runs after a warm-up, bench.c
# for mlcc) are printed for information only. With no extra mlcc options,
# `mlcc check` must also find every kernel call within tolerance of mlcc's
# float64 reference.
#
# Installs what it needs: python3-torch, python3-torchvision, python3-numpy
# and nodejs (Debian, via scripts/lib/deps.sh) and onnxruntime-node@1.30.0
# (npm, once, into $MLCC_CACHE/ort; MLCC_CACHE defaults to REPO/.cache).
#
# Environment: MLCC_CACHE (see above); MLCC_COMPARE_ITERS timed runs per
# model (default 3; 0 skips timing); MLCC_COMPARE_STRICT=1 fails optional
# models (transformer_encoder) that use an op mlcc does not support yet
# instead of skipping them; MLCC_COMPARE_MLCC_ARGS extra mlcc options,
# split on spaces (e.g. "--backend c"); CC (default cc).
#
# Exit status: 0 all models pass (optional ones may be skipped), 1 a model
# failed (compile, run or comparison), 2 bad usage, 77 a prerequisite could
# not be installed (ctest reports the test as skipped).
set -euo pipefail

if [[ $# -lt 2 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mlcc="$(realpath "$1")"
mkdir -p "$2"
work="$(realpath "$2")"
shift 2
all_models=(resnet18 squeezenet1_1 mobilenet_v2 transformer_encoder)
optional_models=" transformer_encoder "
models=("$@")
((${#models[@]} > 0)) || models=("${all_models[@]}")
iters="${MLCC_COMPARE_ITERS:-3}"
cc="${CC:-cc}"
python=/usr/bin/python3
read -r -a mlcc_args <<<"${MLCC_COMPARE_MLCC_ARGS:-}"
[[ -x "$mlcc" ]] || { echo "error: $mlcc is not an executable" >&2; exit 2; }

# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"

# --- prerequisites ---------------------------------------------------------
mlcc_require_packages python3-torch python3-torchvision python3-numpy || exit 77
# shellcheck source=../../scripts/lib/ort.sh
source "$root/scripts/lib/ort.sh"
mlcc_require_ort "$root" || exit 77

# --- shared objects ----------------------------------------------------------
"$cc" -std=c99 -O2 -I "$root/runtime-c" -c "$root/tools/conformance/driver.c" -o "$work/driver.o"
"$cc" -std=c99 -O2 -I "$root/runtime-c" -c "$here/bench.c" -o "$work/bench.o"

echo "mlcc: $mlcc${mlcc_args[*]:+ ${mlcc_args[*]}}"
echo "Exporting models: ${models[*]}"
"$python" "$here/make_models.py" "$work/models" "${models[@]}"

# --- per model -------------------------------------------------------------
summary=()
failed=0

# Shows the tail of a log after a failure.
show() { sed 's/^/    | /' "$1" | tail -n 15; }

compare_model() {
  local name="$1" d="$work/models/$1" shape ort_ms="-" mlcc_ms="-" rc line t0 t1
  local out="$d/mlcc"
  shape="$(cat "$d/input.shape")"
  rm -rf "$out" "$d/ort.bin" "$d/mlcc.bin"
  mkdir -p "$out"
  echo
  echo "== $name (input [$shape])"

  if ! node "$here/ort_run.js" "$d/model.onnx" "$iters" "$d/input.bin:$shape" -- \
       "$d/ort.bin" >"$d/ort.log" 2>&1; then
    echo "  ONNX Runtime failed:"; show "$d/ort.log"
    summary+=("$(printf '%-20s FAIL  ONNX Runtime failed' "$name")"); return 1
  fi
  ort_ms="$(awk '/^ort_ms_per_inference/ {print $2}' "$d/ort.log")"

  t0=$(date +%s.%N)
  rc=0
  "$mlcc" "$d/model.onnx" -o "$out/libm.a" --name m "${mlcc_args[@]}" >"$d/mlcc.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  if ((rc != 0)); then
    echo "  mlcc failed (exit status $rc):"; show "$d/mlcc.log"
    if ((rc == 3)) && [[ "$optional_models" == *" $name "* && "${MLCC_COMPARE_STRICT:-0}" != 1 ]]; then
      summary+=("$(printf '%-20s SKIP  optional model; mlcc does not support it yet: %s' \
                  "$name" "$(tail -n 1 "$d/mlcc.log")")")
      return 0
    fi
    summary+=("$(printf '%-20s FAIL  mlcc exit status %d: %s' "$name" "$rc" "$(tail -n 1 "$d/mlcc.log")")")
    return 1
  fi
  echo "  mlcc compiled it in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s"

  if ! "$cc" -o "$out/run" "$work/driver.o" "$out/libm.a" -lm >"$d/link.log" 2>&1 ||
     ! "$out/run" "$d/input.bin" -- "$d/mlcc.bin" >"$d/run.log" 2>&1; then
    echo "  the mlcc library failed to link or run:"; show "$d/link.log"; show "$d/run.log"
    summary+=("$(printf '%-20s FAIL  the compiled model failed to link or run' "$name")"); return 1
  fi
  if ((iters > 0)) && "$cc" -o "$out/bench" "$work/bench.o" "$out/libm.a" -lm >>"$d/link.log" 2>&1 &&
     "$out/bench" "$iters" "$d/input.bin" >"$d/bench.log" 2>&1; then
    mlcc_ms="$(awk '/^mlcc_ms_per_inference/ {print $2}' "$d/bench.log")"
  fi

  # Every kernel call against mlcc's float64 reference (mlcc check), with
  # the default options only (it runs the LLVM backend's code).
  if ((${#mlcc_args[@]} == 0)); then
    if "$mlcc" check "$d/model.onnx" --failures-only >"$d/check.log" 2>&1; then
      echo "  mlcc check: $(grep -E '^[0-9]+ kernel calls' "$d/check.log"); $(grep '^time:' "$d/check.log")"
    else
      echo "  mlcc check failed:"; show "$d/check.log"
      summary+=("$(printf '%-20s FAIL  mlcc check: a kernel call out of tolerance' "$name")"); return 1
    fi
  fi

  rc=0
  local tol=()
  [[ "$(cat "$d/check" 2>/dev/null)" == float16 ]] && tol=(2e-3)
  line="$("$python" "$here/compare.py" "$d/mlcc.bin" "$d/ort.bin" ${tol[@]+"${tol[@]}"})" || rc=$?
  echo "  $line"
  echo "  time per inference: ort ${ort_ms} ms, mlcc ${mlcc_ms} ms (one thread, information only)"
  # "NAME PASS|FAIL  max_abs_diff D max_abs_ort M ratio R | times"
  summary+=("$(printf '%-20s %s  %s | ort %s ms, mlcc %s ms' "$name" \
              "$(awk '{print $7}' <<<"$line")" "$(cut -d' ' -f1-6 <<<"$line")" "$ort_ms" "$mlcc_ms")")
  ((rc == 0))
}

for m in "${models[@]}"; do
  compare_model "$m" || failed=$((failed + 1))
done

echo
echo "Summary (mlcc${mlcc_args[*]:+ ${mlcc_args[*]}} vs ONNX Runtime 1.30; pass: max_abs_diff <= 1e-4 * max_abs_ort, NAME_fp16 2e-3):"
printf '  %s\n' "${summary[@]}"
if ((failed > 0)); then
  echo "$failed of ${#models[@]} models FAILED"
  exit 1
fi
echo "all models passed"
