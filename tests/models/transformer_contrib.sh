#!/usr/bin/env bash
# transformer_contrib.sh - ONNX Runtime's transformer contrib ops
# (com.microsoft Attention, MultiHeadAttention, SkipLayerNormalization,
# SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization,
# RotaryEmbedding, BiasGelu, FastGelu, Gelu, QuickGelu) against ONNX Runtime.
#
#   tests/models/transformer_contrib.sh MLCC WORKDIR
#
# transformer_contrib.py make writes one model per form (and a BERT-style
# layer as ONNX Runtime's optimizer leaves it) with random inputs. Each is
# compiled with `mlcc --name m`, linked with tools/conformance/driver.c and
# run; every output must be within 1e-5 x max |ORT| of ONNX Runtime's, and
# each attention must run as the fused kernel (`--emit plan` shows
# "attention blocks="). Unsupported or invalid forms (make-bad) must be
# refused with one error naming the node and no output file, never a crash.
#
# ONNX Runtime is onnxruntime-node 1.30 (scripts/lib/ort.sh); without it
# only the compilation, the fusion and the refusals are checked (exit 77).
# Exit status: 0 all passed, 1 a failure, 2 bad usage, 77 a part was skipped.
set -uo pipefail

# shellcheck source=../quant/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/../quant/setup.sh"
require_ort_or_note
script="$root/tests/models/transformer_contrib.py"
"$cc" -std=c99 -O2 -I "$root/runtime-c" -c "$root/tools/conformance/driver.c" -o "$work/driver.o" || exit 1
rm -rf "$work/cases" "$work/bad"
"$python" "$script" make "$work/cases" || exit 1
echo "== contrib ops against ONNX Runtime (1e-5 x max |ORT|)"
for d in "$work"/cases/*/; do
  d="${d%/}"
  name="$(basename "$d")"
  read -r -a specs <"$d/inputs"
  read -r count _ <"$d/outputs"
  read -r fused <"$d/fused"
  printf '  %-32s ' "$name"
  bins=() mouts=() oouts=()
  for s in "${specs[@]}"; do bins+=("${s%:*}"); done
  for ((i = 0; i < count; ++i)); do mouts+=("$d/mlcc$i.bin"); oouts+=("$d/ort$i.bin"); done
  if ! "$mlcc" "$d/model.onnx" -o "$d/libm.a" --name m >"$d/mlcc.log" 2>&1 ||
     ! "$mlcc" "$d/model.onnx" --emit plan -o "$d/plan.txt" >>"$d/mlcc.log" 2>&1; then
    echo "FAIL: mlcc: $(tail -n 1 "$d/mlcc.log")"; failed=$((failed + 1)); continue
  fi
  got=$(grep -c 'attention blocks=' "$d/plan.txt")
  if [[ $got != "$fused" ]]; then
    echo "FAIL: $got fused attention kernels, expected $fused"; failed=$((failed + 1)); continue
  fi
  if ! "$cc" -o "$d/run" "$work/driver.o" "$d/libm.a" -lm >"$d/link.log" 2>&1 ||
     ! "$d/run" "${bins[@]}" -- "${mouts[@]}" >"$d/run.log" 2>&1; then
    echo "FAIL: link or run: $(tail -n 1 "$d/link.log" "$d/run.log" | tr '\n' ' ')"
    failed=$((failed + 1)); continue
  fi
  if ((ort == 0)); then
    echo "compiled, $fused fused (no ONNX Runtime to compare with)"; continue
  fi
  if ! "${ort_node[@]}" "$root/tests/models/ort_run.js" "$d/model.onnx" 0 \
       "${specs[@]}" -- "${oouts[@]}" >"$d/ort.log" 2>&1; then
    echo "FAIL: ONNX Runtime: $(tail -n 1 "$d/ort.log")"; failed=$((failed + 1)); continue
  fi
  if msg=$("$python" "$script" compare "$d"); then
    echo "ok: $msg"
  else
    echo "FAIL: $msg"; failed=$((failed + 1))
  fi
done

echo "== unsupported or invalid forms"
"$python" "$script" make-bad "$work/bad" || exit 1
for model in "$work"/bad/*.onnx; do
  name="$(basename "$model" .onnx)"
  read -r expect <"${model%.onnx}.expect"
  printf '  %-32s ' "$name"
  out="$work/bad/$name.a"
  "$mlcc" "$model" -o "$out" >"$work/bad/$name.log" 2>&1
  rc=$?
  if ((rc == 0 || rc >= 128)) || [[ -e $out ]] || ! grep -Eq "error:.*($expect)" "$work/bad/$name.log"; then
    echo "FAIL: exit $rc: $(head -n 1 "$work/bad/$name.log")"; failed=$((failed + 1))
  else
    echo "refused: $(grep -m1 'error:' "$work/bad/$name.log")"
  fi
done
finish
