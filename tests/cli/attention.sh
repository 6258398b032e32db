#!/usr/bin/env bash
# Fused attention (fuse-attention, mlcc.Attention): the attention chains of
# tests/cli/data/attention (tests/cli/make_attention.py) are fused into one
# planned kernel (`--emit plan` shows its blocks) and equal the model before
# optimization in float64 (`mlcc check --tolerance 1e-5`); the chains that
# are not attention (names ending in _unfused) stay unfused and correct;
# the one with a symbolic length compiles once with --dim S=1..80 and is
# checked at lengths 1, 7, 64, 65 and 80 (partial and whole blocks); a
# fused QKV projection's Split, the Reshapes and Transposes around the heads
# leave no kernel of their own; a constant causal mask becomes an index test;
# a float16 chain is fused too (gpt_causal_fp16).
#
# usage: tests/cli/attention.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$root/tests/cli/data/attention
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL $1"; failures=$((failures + 1)); }
ok() { echo "ok   $1"; }

# check NAME LOG ARGS...: mlcc check passes at 1e-5.
check() {
  local name=$1 log=$2
  shift 2
  if "$mlcc" check --tolerance 1e-5 "$@" >"$log" 2>&1 && grep -q "all within tolerance" "$log"; then
    ok "$name: $(grep 'outputs compared' "$log")"
  else
    fail "$name: mlcc check"; tail -4 "$log"
  fi
}

for model in "$data"/*.onnx; do
  name=$(basename "$model" .onnx)
  dims=()
  [[ $name == *_dynamic ]] && dims=(--dim S=1..80)
  "$mlcc" "$model" "${dims[@]}" --emit plan -o "$work/$name.plan" 2>"$work/$name.err" ||
    { fail "$name: does not compile"; head -3 "$work/$name.err"; continue; }
  fused=$(grep -c 'attention blocks=' "$work/$name.plan")
  if [[ $name == *_unfused ]]; then
    [[ $fused == 0 ]] && ok "$name: not fused" || fail "$name: fused ($fused kernels)"
  else
    [[ $fused == 1 ]] && ok "$name: one fused kernel ($(grep -o 'attention blocks=[^}]*' "$work/$name.plan"))" ||
      fail "$name: $fused fused kernels, not 1"
  fi
  # A constant lower-triangular mask is computed from the indices (the
  # causal step, 10): no mask operand is read.
  if [[ $name == gpt_causal ]]; then
    "$mlcc" "$model" --emit graph -o - 2>/dev/null | grep -q 'steps=\[6,10\]' &&
      ok "$name: the mask is the causal step" || fail "$name: the mask is not the causal step"
  fi
  # The Split, Reshapes and Transposes around the heads are read in place.
  if [[ $name == qkv_split ]]; then
    calls=$("$mlcc" "$model" --emit kernels -o - 2>/dev/null | sed -n '/^calls:/,$p' | tail -n +2 | wc -l)
    [[ $calls == 1 ]] && ok "$name: one kernel call" || fail "$name: $calls kernel calls, not 1"
  fi
  if [[ $name == *_dynamic ]]; then
    for s in 1 7 64 65 80; do
      check "$name at S=$s" "$work/$name.$s.log" "$model" "${dims[@]}" --assign S=$s
    done
  else
    check "$name" "$work/$name.log" "$model"
  fi
done
echo "$failures failure(s)"
[[ $failures == 0 ]]
