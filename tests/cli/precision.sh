#!/usr/bin/env bash
# --precision float16|bfloat16 (issue 57): a float32 model stored in 16-bit
# floats, its inputs and outputs still float32.
#  1. The digits example built with each precision: the header's input and
#     output stay float, the program classifies the test set within 2 points
#     of the float32 build's accuracy; with float16 the arena is smaller than
#     the float32 build's (every activation is float16).
#  2. mlcc check --precision P: every call within tolerance of the float32
#     model's float64 reference (4 units of P at each tensor's largest value);
#     for Cortex-M4 (no vectors, weights kept float16: at most 55% of the
#     float32 build's) under QEMU when the Arm tools are installed.
#  3. Bad input: --precision with --quantize, an unknown precision: a
#     non-zero exit, one error line, no library written.
#  4. x86 without AVX512-FP16: the float16 build compares as f32 vectors.
#
# usage: tests/cli/precision.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
digits=$root/examples/digits/digits.onnx
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cc=${CC:-cc}

# 1. The digits example at each precision.
declare -A accuracy arena
for p in float32 float16 bfloat16; do
  d=$work/$p
  mkdir -p "$d"
  if ! "$mlcc" "$digits" --precision "$p" -o "$d/libdigits.a" >"$d/mlcc.log" 2>&1; then
    cat "$d/mlcc.log"; fail "$p: mlcc failed"; continue
  fi
  grep -q 'const float \*image;' "$d/digits.h" && grep -q '  float \*logits;' "$d/digits.h" ||
    fail "$p: the header's input or output is not float"
  if ! "$cc" -std=c99 -I "$d" "$root/examples/digits/main.c" "$d/libdigits.a" -lm -o "$d/run" \
       >"$d/cc.log" 2>&1 || ! "$d/run" "$root/examples/digits/test_set.bin" >"$d/run.log" 2>&1; then
    cat "$d/cc.log" "$d/run.log"; fail "$p: the digits program failed"; continue
  fi
  accuracy[$p]=$(awk '/^accuracy:/ {print $2}' "$d/run.log" | cut -d/ -f1)
  arena[$p]=$(awk '/^arena:/ {print $2}' "$d/run.log")
  echo "$p: $(grep '^accuracy:' "$d/run.log"); arena ${arena[$p]} bytes; $(grep '^weights' "$d/run.log")"
done
for p in float16 bfloat16; do
  [[ -n "${accuracy[$p]:-}" && -n "${accuracy[float32]:-}" ]] || continue
  # 450 test images: 2 points are 9 images.
  ((accuracy[$p] >= accuracy[float32] - 9)) ||
    fail "$p: ${accuracy[$p]}/450 correct against float32's ${accuracy[float32]}/450"
done
if [[ -n "${arena[float16]:-}" && -n "${arena[float32]:-}" ]]; then
  ((arena[float16] < arena[float32])) ||
    fail "float16: arena ${arena[float16]} bytes, not below float32's ${arena[float32]}"
fi

# 2. mlcc check at each precision.
for p in float16 bfloat16; do
  if "$mlcc" check "$digits" --precision "$p" >"$work/check-$p.txt" 2>&1; then
    echo "mlcc check --precision $p: $(grep -E '^[0-9]+ kernel calls' "$work/check-$p.txt")"
  else
    cat "$work/check-$p.txt"; fail "mlcc check --precision $p: a call out of tolerance"
  fi
done

# On Cortex-M4 (no vectors) the weights stay float16 in flash: at most
# 55% of the float32 build's weights; its calls within tolerance under
# QEMU when the Arm tools are installed.
m4() { "$mlcc" "$digits" --target cortex-m4 --precision "$1" -o "$work/m4-$1.a" -v 2>&1 |
         awk '/weights / {print $3}'; }
w32=$(m4 float32) w16=$(m4 float16)
echo "cortex-m4: weights float32 $w32 bytes, float16 $w16 bytes"
[[ -n "$w32" && -n "$w16" ]] && ((w16 * 100 <= w32 * 55)) ||
  fail "cortex-m4: float16 weights $w16 bytes against float32's $w32"
if command -v qemu-system-arm >/dev/null && command -v arm-none-eabi-gcc >/dev/null; then
  if "$mlcc" check "$digits" --target cortex-m4 --precision float16 >"$work/check-m4.txt" 2>&1; then
    echo "mlcc check --target cortex-m4 --precision float16: $(grep -E '^[0-9]+ kernel calls' "$work/check-m4.txt")"
  else
    cat "$work/check-m4.txt"; fail "mlcc check --target cortex-m4 --precision float16"
  fi
else
  echo "cortex-m4 check skipped: qemu-system-arm or arm-none-eabi-gcc not installed"
fi

# 3. Bad input.
bad() { # WHAT ARGS...
  local what=$1 rc=0
  shift
  "$mlcc" "$digits" "$@" -o "$work/bad.a" >"$work/bad.txt" 2>&1 || rc=$?
  if ((rc == 0)) || [[ -e "$work/bad.a" ]] || ! grep -qi 'error\|not in' "$work/bad.txt"; then
    cat "$work/bad.txt"; fail "$what: exit $rc, library written or no error line"
  else
    echo "$what: exit $rc: $(head -n 1 "$work/bad.txt")"
  fi
  rm -f "$work/bad.a"
}
bad "--precision with --quantize" --precision float16 --quantize int8 \
  --calibrate "image=$root/examples/digits/calibration.npy"
bad "an unknown precision" --precision float8

# 4. x86 cores without AVX512-FP16 (Zen 4, AVX2 levels): the float16 build's
# MaxPools and Relus compare widened values as float32 vectors. (LLVM would
# narrow them to float16 comparisons, which it scalarizes there: mask shifts
# and scalar vucomiss, 36-48 of them in this model without the fence of
# EmitFeatures::FenceHalfWidening.)
for cpu in znver4 x86-64-v3; do
  "$mlcc" "$digits" --precision float16 --target x86_64-unknown-linux-gnu --cpu "$cpu" \
    --emit asm -o "$work/x86-$cpu.s" || { fail "float16 asm for $cpu"; continue; }
  scalarized=$(grep -c -E '^[[:space:]]+(kshiftlw|kshiftrw|vucomiss|vcomiss)' "$work/x86-$cpu.s" || true)
  if ((scalarized > 0)); then
    fail "float16 digits for $cpu: $scalarized scalarized comparison instructions"
  else
    echo "float16 digits for x86 --cpu $cpu: no scalarized comparisons"
  fi
done

if ((failures > 0)); then
  echo "$failures check(s) FAILED"
  exit 1
fi
echo "all precision checks passed"
