#!/usr/bin/env bash
# nbits.sh - weight-only 4/2/8-bit matrix products: com.microsoft MatMulNBits
# and MatMul of a DequantizeLinear of int4/uint4 constant weights (which
# fuse-qdq rewrites into MatMulNBits), through the CLI and a linked program.
#
#   tests/quant/nbits.sh MLCC WORKDIR
#
# nbits.py make writes the models (2, 4 and 8 bits; packed, float and absent
# zero points; bias; K a multiple of the block or not; A of rank 2 and 3;
# blocked and per-channel DequantizeLinear) with random inputs and a float64
# numpy reference from the integer codes. Each is compiled with
# `mlcc --name m`, linked with tools/conformance/driver.c and run; mlcc's
# output and ONNX Runtime's must be within 1e-5 x max |reference| of it; a
# model whose rows are a dimension (--dim seq=1..16) runs at several lengths
# from one library (numpy only) (a
# float16 model: 4 float16 units at the largest value, numpy only, as
# tests/models/ort_run.js feeds float32 inputs).
# ONNX Runtime runs the DequantizeLinear models with graph optimizations off:
# with them on, it fuses them into MatMulNBits with int8 activations
# (accuracy_level 4), about 1e-2 from the exact product. The rewritten models
# must keep their weights packed (--report: weight bytes at most a third of
# the float32 weights').
#
# ONNX Runtime is onnxruntime-node 1.30 (scripts/lib/ort.sh); without it the
# comparisons with it are left out (exit 77 at the end).
#
# The same models built for aarch64 (qemu-user) and Cortex-M4 (QEMU's MPS2
# AN386, bare metal) are compared with the reference too, when the cross
# compilers and QEMU are installed.
# Invalid MatMulNBits nodes (nbits.py make-bad) must be rejected with one
# error line naming the node and no output file, never a crash.
#
# Exit status: 0 all passed, 1 a failure, 2 bad usage, 77 a part was skipped.
set -uo pipefail

# shellcheck source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
require_ort_or_note
"$cc" -std=c99 -O2 -I "$root/runtime-c" -c "$root/tools/conformance/driver.c" -o "$work/driver.o" || exit 1
echo "== MatMulNBits and DequantizeLinear(int4) + MatMul (tolerance: 1e-5 x max |reference|)"
rm -rf "$work/cases"
"$python" "$here/nbits.py" make "$work/cases" || exit 1
for d in "$work"/cases/*/; do
  d="${d%/}"
  name="$(basename "$d")"
  read -r spec <"$d/inputs"
  printf '  %-26s ' "$name"
  if [[ -e "$d/bounded" ]]; then
    # A's rows known at run time: one library, run at several lengths.
    read -r max <"$d/bounded"
    if ! "$mlcc" "$d/model.onnx" --dim "seq=1..$max" -o "$d/libm.a" --name m >"$d/mlcc.log" 2>&1 ||
       ! "$cc" -o "$d/run" "$work/driver.o" "$d/libm.a" -lm >"$d/link.log" 2>&1; then
      echo "FAIL: mlcc --dim seq=1..$max: $(tail -n 1 "$d/mlcc.log" "$d/link.log" | tr '\n' ' ')"
      failed=$((failed + 1)); continue
    fi
    echo "--dim seq=1..$max"
    for len in 1 3 4 7 "$max"; do
      printf '  %-26s ' "  at seq=$len"
      head -c $((len * $(stat -c %s "${spec%:*}") / max)) "${spec%:*}" >"$d/a$len.bin"
      if "$d/run" -d "$len" "$d/a$len.bin" -- "$d/mlcc.bin" >"$d/run.log" 2>&1; then
        "$python" "$here/nbits.py" compare "$d" "$len" "$max" || failed=$((failed + 1))
      else
        echo "FAIL: run: $(tail -n 1 "$d/run.log")"; failed=$((failed + 1))
      fi
    done
    continue
  fi
  if ! "$mlcc" "$d/model.onnx" -o "$d/libm.a" --name m --report "$d/report.json" >"$d/mlcc.log" 2>&1; then
    echo "FAIL: mlcc: $(tail -n 1 "$d/mlcc.log")"; failed=$((failed + 1)); continue
  fi
  if ! "$cc" -o "$d/run" "$work/driver.o" "$d/libm.a" -lm >"$d/link.log" 2>&1 ||
     ! "$d/run" "${spec%:*}" -- "$d/mlcc.bin" >"$d/run.log" 2>&1; then
    echo "FAIL: link or run: $(tail -n 1 "$d/link.log" "$d/run.log" | tr '\n' ' ')"
    failed=$((failed + 1)); continue
  fi
  opt=all
  [[ "$name" == dq_* ]] && opt=disabled
  if ((ort)) && [[ ! -e "$d/float16" ]] && ! ORT_GRAPH_OPTIMIZATION=$opt "${ort_node[@]}" "$root/tests/models/ort_run.js" \
       "$d/model.onnx" 0 "$spec" -- "$d/ort.bin" >"$d/ort.log" 2>&1; then
    echo "FAIL: ONNX Runtime: $(tail -n 1 "$d/ort.log")"; failed=$((failed + 1)); continue
  fi
  "$python" "$here/nbits.py" compare "$d" || failed=$((failed + 1))
  if [[ "$name" == dq_* ]]; then
    # The weights stay packed: 4 bits a weight plus a scale and zero point a
    # block, not 32 bits.
    "$python" - "$d" <<'PY' || failed=$((failed + 1))
import json, sys
import onnx
d = sys.argv[1]
m = onnx.load(d + "/model.onnx")
w = next(t for t in m.graph.initializer if t.name == "W")
f32 = 4 * w.dims[0] * w.dims[1]
got = json.load(open(d + "/report.json"))["weight_bytes"]
ok = got * 3 <= f32
print("  %-26s %s weights %d bytes (float32: %d)" % ("", "PASS" if ok else "FAIL", got, f32))
sys.exit(0 if ok else 1)
PY
  fi
done

# --- the same models built for aarch64 (qemu-user) and Cortex-M4 (bare metal
# on QEMU's MPS2 AN386, files through semihosting): the unpacking of B as
# NEON vectors and as scalar code. Compared with the reference like the
# host's output.
# cross NAME MLCC_TARGET CC RUN...: every case, in CASE/NAME/.
cross() {
  local name=$1 target=$2 xcc=$3
  shift 3
  local run=("$@") d a spec
  echo "== on $name"
  for d in "$work"/cases/*/; do
    d="${d%/}"
    [[ -e "$d/bounded" ]] && continue
    read -r spec <"$d/inputs"
    printf '  %-26s ' "$(basename "$d")"
    a="$d/$name"
    mkdir -p "$a"
    cp "${spec%:*}" "$a/a.bin"
    if "$mlcc" "$d/model.onnx" --target "$target" -o "$a/libm.a" --name m >"$a/mlcc.log" 2>&1 &&
       "$xcc" -std=c99 -O2 -I "$root/runtime-c" -o "$a/run" "$root/tools/conformance/driver.c" \
         "$a/libm.a" -lm >"$a/link.log" 2>&1 &&
       (cd "$a" && "${run[@]}" "$a/run" a.bin -- mlcc.bin) >"$a/run.log" 2>&1; then
      cp "$d/ref.bin" "$a/ref.bin"
      if [[ -e "$d/float16" ]]; then touch "$a/float16"; fi
      "$python" "$here/nbits.py" compare "$a" || failed=$((failed + 1))
    else
      echo "FAIL: $(tail -n 1 "$a/mlcc.log" "$a/link.log" "$a/run.log" 2>/dev/null | tr '\n' ' ')"
      failed=$((failed + 1))
    fi
  done
}
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null; then
  cross aarch64 aarch64-linux aarch64-linux-gnu-gcc qemu-aarch64 -L /usr/aarch64-linux-gnu
else
  echo "== on aarch64: SKIP (aarch64-linux-gnu-gcc or qemu-aarch64 is not installed)"
  skipped+=("aarch64")
fi
if command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null; then
  cross cortex-m4 cortex-m4 "$root/tests/cross/cortex-m4-cc.sh" "$root/tests/cross/semihost-run.sh"
else
  echo "== on cortex-m4: SKIP (arm-none-eabi-gcc or qemu-system-arm is not installed)"
  skipped+=("cortex-m4")
fi

# --- invalid nodes: one error line naming the node, exit status 1 or 3 ---------
echo "== invalid nodes"
rm -rf "$work/bad"
"$python" "$here/nbits.py" make-bad "$work/bad" || exit 1
for d in "$work"/bad/*/; do
  d="${d%/}"
  name="$(basename "$d")"
  rc=0
  "$mlcc" "$d/model.onnx" -o "$d/m.a" >"$d/log" 2>&1 || rc=$?
  line="$(cat "$d/log")"
  printf '  %-26s ' "$name"
  if [[ ($rc == 1 || $rc == 3) && "$(wc -l <"$d/log")" == 1 && ! -e "$d/m.a" &&
        "$line" == *"node 'bad'"* && "$line" == *"$(cat "$d/expect")"* ]]; then
    echo "PASS $line"
  else
    echo "FAIL (exit status $rc): $line"
    failed=$((failed + 1))
  fi
done

finish
