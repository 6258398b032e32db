#!/usr/bin/env bash
# quantize.sh - post-training quantization (mlcc --quantize int8) and QDQ
# models (fuse-qdq), through the CLI and linked programs.
#
#   tests/quant/quantize.sh MLCC WORKDIR
#
# 1. digits: examples/digits/digits.onnx quantized with the committed
#    calibration images (examples/digits/calibration.npy, from the training
#    split): examples/digits/main.c on the 450 test images must give an int8
#    accuracy within 0.5 points of the float library's, and the int8 graph
#    must have no float Conv or Gemm. Built for targets whose int8 kernels
#    keep 8-bit weights (VNNI x86, Cortex-M4/M55), the int8 library holds
#    at most 30% of the float library's weight bytes (x86 without VNNI
#    keeps its pmaddwd weights as int16; the host's figure is printed).
#    `--emit onnx` writes the realized model (QDQ form): it passes the ONNX
#    checker, and ONNX Runtime's output on it equals the int8 library's
#    within one output step (skipped without ONNX Runtime): with
#    --reduce-range (7-bit weights) and full-range weights; where ORT's
#    uint8 x int8 kernels saturate int16 pair sums (ort_int8.py probes it:
#    x86 without VNNI), ORT runs the full-range model as written (graph
#    optimizations off: DequantizeLinear, float op, QuantizeLinear).
#    The int8 accuracy with --reduce-range must be within 0.5 points of
#    float's too.
# 2. Calibration methods: quantize.py make-outlier (a MatMul -> Relu ->
#    MatMul model whose calibration samples have rare outliers): with
#    --calibration-method entropy the RMS error against the float reference
#    must be smaller than with minmax (both printed).
# 3. QDQ import: a small CNN quantized by PyTorch (qnnpack) and exported in
#    QDQ form must compile to integer ops only (QLinearConv, QGemm, ...: no
#    float Conv, Gemm or Add left) and match ONNX Runtime within one output
#    quantization step (skipped without PyTorch or ONNX Runtime; as written
#    where ORT's fused int8 kernels saturate, as in 1.). Built for
#    the lower x86 levels (x86_64-v3, x86_64: pmaddwd pairs without VNNI),
#    for aarch64 cortex-a76 (sdot), neoverse-n2 (usdot, i8mm) and
#    cortex-a72 (sadalp: 16-bit pair sums) under qemu-aarch64, and for riscv64-linux-v
#    (vwmacc) under qemu-riscv64 at VLEN 128 and 256, its output must equal
#    the host build's bit for bit.
# 4. Bad input: calibration samples of the wrong shape or dtype, a file that
#    is not .npy, an input name the model lacks, --quantize without
#    --calibrate, --calibrate without --quantize, and a model with no
#    quantizable node: one "mlcc: error:" line, a non-zero exit, no output.
#
# ORT_PREFIX: see ort_int8.py (ONNX Runtime as on another CPU).
#
# Exit status: 0 all passed, 1 a check failed, 2 bad usage, 77 /usr/bin/python3
# lacks onnx or numpy (ctest reports a skip).
set -uo pipefail

# shellcheck source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
fail() { echo "FAIL: $*"; failed=1; }

"$cc" -std=c99 -O2 -I "$root/runtime-c" -c "$root/tools/conformance/driver.c" \
  -o "$work/driver.o" || exit 1

# cross_check WHAT DIR TAG CC INPUT EXPECTED INSN QEMU...: the library of
# mlcc's arguments in the array cross_args for a cross target (DIR/lib-TAG.a,
# its assembly DIR/TAG.s, mlcc's messages DIR/mlcc-TAG.log), linked with the
# conformance driver by CC and run under QEMU on INPUT into DIR/TAG.bin: its
# code must hold an instruction matching the regex INSN (at a line's start,
# after blanks) and its output must equal EXPECTED byte for byte.
cross_check() {
  local what=$1 dir=$2 tag=$3 cross_cc=$4 input=$5 expected=$6 insn=$7
  shift 7
  if ! "$mlcc" "${cross_args[@]}" --emit asm -o "$dir/$tag.s" >"$dir/mlcc-$tag.log" 2>&1 ||
     ! "$mlcc" "${cross_args[@]}" -o "$dir/lib-$tag.a" >>"$dir/mlcc-$tag.log" 2>&1 ||
     ! "$cross_cc" -std=c99 -O2 -I "$root/runtime-c" -o "$dir/run-$tag" \
         "$root/tools/conformance/driver.c" "$dir/lib-$tag.a" -lm ||
     ! "$@" "$dir/run-$tag" "$input" -- "$dir/$tag.bin" >/dev/null; then
    fail "$what: $(tail -n 1 "$dir/mlcc-$tag.log")"
  elif ! grep -Eq "^\s+$insn" "$dir/$tag.s"; then
    fail "$what: no instruction matching '$insn' in the code"
  elif ! cmp -s "$expected" "$dir/$tag.bin"; then
    fail "$what: the output differs from the host build's"
  else
    echo "  $what ($(grep -Eom1 "^\s+$insn" "$dir/$tag.s" | awk '{print $1}'), under $1): the host build's output, bit for bit"
  fi
}

# --- 1. digits ------------------------------------------------------------
echo "== digits: float and int8 (quantized by mlcc) on the 450 test images"
accuracy() { awk '/^accuracy:/ {sub("%", "", $4); print $4}' "$1"; }
weights() { awk '/^weights in the library:/ {print $5}' "$1"; }
for kind in float int8 int8-reduce-range; do
  mkdir -p "$work/digits-$kind"
  args=()
  [[ $kind == int8* ]] && args=(--quantize int8 --calibrate "image=$root/examples/digits/calibration.npy")
  [[ $kind == int8-reduce-range ]] && args+=(--reduce-range)
  if ! "$mlcc" "$root/examples/digits/digits.onnx" "${args[@]}" \
       -o "$work/digits-$kind/libdigits.a" >"$work/digits-$kind/mlcc.log" 2>&1 ||
     ! "$cc" -std=c99 -O2 -I "$work/digits-$kind" "$root/examples/digits/main.c" \
       "$work/digits-$kind/libdigits.a" -lm -o "$work/digits-$kind/digits" ||
     ! "$work/digits-$kind/digits" "$root/examples/digits/test_set.bin" \
       >"$work/digits-$kind/out.txt" 2>&1; then
    fail "digits $kind: $(tail -n 2 "$work/digits-$kind/mlcc.log" "$work/digits-$kind/out.txt" 2>/dev/null)"
  fi
done
fa="$(accuracy "$work/digits-float/out.txt")" ia="$(accuracy "$work/digits-int8/out.txt")"
fw="$(weights "$work/digits-float/out.txt")" iw="$(weights "$work/digits-int8/out.txt")"
ra="$(accuracy "$work/digits-int8-reduce-range/out.txt")"
if [[ -n "$fa" && -n "$ia" && -n "$fw" && -n "$iw" ]]; then
  echo "  float: accuracy $fa%, weights $fw bytes"
  echo "  int8:  accuracy $ia%, weights $iw bytes ($(awk -v a="$iw" -v b="$fw" 'BEGIN {printf "%.1f", 100 * a / b}')% of float)"
  echo "  int8 with --reduce-range (7-bit weights): accuracy ${ra:-?}%"
  awk -v a="$fa" -v b="$ia" 'BEGIN {exit !(b >= a - 0.5)}' ||
    fail "int8 accuracy $ia% is more than 0.5 points below float's $fa%"
  awk -v a="$fa" -v b="${ra:-0}" 'BEGIN {exit !(b >= a - 0.5)}' ||
    fail "int8 accuracy with --reduce-range ${ra:-?}% is more than 0.5 points below float's $fa%"
  # The weight bytes a library holds depend on the target's int8 form: x86
  # without VNNI multiplies 16-bit pairs (pmaddwd) and keeps its packed
  # weights widened to int16, AArch64 the lane-weight tiles of a one-channel
  # first layer. Where the target keeps bytes (VNNI, Cortex-M's packed SMLAD
  # and Helium operands) the int8 weights are at most 30% of float's; each
  # is compiled (no run needed) and its -v figure compared.
  qargs=(--quantize int8 --calibrate "image=$root/examples/digits/calibration.npy")
  for spec in "x86_64 --cpu icelake-server" "cortex-m4" "cortex-m55"; do
    read -r -a targs <<<"--target $spec"
    tf="$("$mlcc" "$root/examples/digits/digits.onnx" "${targs[@]}" -o "$work/w.a" -v 2>&1 |
          awk '/^mlcc: weights / {print $3; exit}')"
    ti="$("$mlcc" "$root/examples/digits/digits.onnx" "${targs[@]}" "${qargs[@]}" -o "$work/w.a" -v 2>&1 |
          awk '/^mlcc: weights / {print $3; exit}')"
    if [[ -z $tf || -z $ti ]]; then
      fail "--target $spec: no weight figure in mlcc -v"
      continue
    fi
    echo "  --target $spec: int8 weights $ti bytes, float $tf ($(awk -v a="$ti" -v b="$tf" 'BEGIN {printf "%.1f", 100 * a / b}')%)"
    awk -v a="$ti" -v b="$tf" 'BEGIN {exit !(a <= 0.3 * b)}' ||
      fail "--target $spec: int8 weights ($ti bytes) are more than 30% of float's ($tf)"
  done
  graph="$("$mlcc" "$root/examples/digits/digits.onnx" --quantize int8 \
           --calibrate "image=$root/examples/digits/calibration.npy" --emit graph -o -)"
  if grep -Eq '= (Conv|Gemm|MatMul) ' <<<"$graph"; then
    fail "the int8 digits graph still has a float contraction"
  fi
else
  fail "digits: no accuracy or weight figure in the demo's output"
fi

have_ort=0
mlcc_require_ort "$root" && have_ort=1

echo "== digits: the realized int8 model as ONNX (--emit onnx) in ONNX Runtime"
ort_path=exact
if ((have_ort)); then
  probe="$("$python" "$here/ort_int8.py" probe)" || fail "ONNX Runtime's int8 path: $probe"
  ort_path="${probe%% *}"
  echo "  ONNX Runtime's uint8 x int8 path on this CPU: $probe"
fi
# ... and with 4-bit weights (--weight-bits 4: the model's opset is below
# 21, so --emit onnx writes the int4 codes in int8 initializers; ORT's
# float products of their dequantized values are exact here, as mlcc's
# integer ones).
for range in full reduced 4-bit; do
  d="$work/digits-onnx-$range"
  mkdir -p "$d"
  qargs=(--quantize int8 --calibrate "image=$root/examples/digits/calibration.npy")
  [[ $range == reduced ]] && qargs+=(--reduce-range)
  [[ $range == 4-bit ]] && qargs+=(--weight-bits 4)
  if ! "$mlcc" "$root/examples/digits/digits.onnx" "${qargs[@]}" -o "$d/digits.int8.onnx" \
       >"$d/mlcc.log" 2>&1 ||
     ! "$mlcc" "$root/examples/digits/digits.onnx" "${qargs[@]}" -o "$d/libm.a" --name m \
       >>"$d/mlcc.log" 2>&1 ||
     ! "$cc" -o "$d/run" "$work/driver.o" "$d/libm.a" -lm; then
    fail "--emit onnx ($range range): $(tail -n 1 "$d/mlcc.log")"
  elif ! "$python" "$here/quantize.py" check-qdq "$d/digits.int8.onnx" "$root/examples/digits/calibration.npy" "$d"; then
    fail "the realized model ($range range) is not a valid QDQ model"
  elif ((have_ort == 0)); then
    skipped+=("ONNX Runtime on the realized model")
  else
    # Full-range weights where ORT's fused int8 kernels saturate: ORT runs
    # the QDQ graph as written (graph optimizations off: DequantizeLinear,
    # float Conv/Gemm, QuantizeLinear), whose float sums are exact here.
    ort_opt=all how=""
    if [[ $range != reduced && $ort_path != exact ]]; then
      ort_opt=disabled how=" (as written: its fused int8 kernels saturate on this CPU)"
    fi
    for k in 3 77 150; do
      "$d/run" "$d/x$k.bin" -- "$d/mlcc$k.bin" >/dev/null &&
        ORT_GRAPH_OPTIMIZATION=$ort_opt "${ort_node[@]}" "$root/tests/models/ort_run.js" \
          "$d/digits.int8.onnx" 0 "$d/x$k.bin:1,1,8,8" -- "$d/ort$k.bin" >"$d/ort.log" 2>&1 ||
        { fail "sample $k: $(tail -n 1 "$d/ort.log")"; continue; }
      label=$range-range
      [[ $range == 4-bit ]] && label=4-bit
      printf '  %s weights, sample %d vs ONNX Runtime%s: ' "$label" "$k" "$how"
      "$python" "$here/quantize.py" compare "$d/mlcc$k.bin" "$d/ort$k.bin" "$(cat "$d/step")" ||
        fail "sample $k: ONNX Runtime on the realized model ($range range) differs from the library"
    done
  fi
done

# The int8 digits library (a one-channel first convolution: the int32 tile
# with its rows' weights as lanes of one vector, smlal by element, on
# cortex-a72; a batch-1 Linear layer along K on both) for AArch64 under
# qemu-aarch64 must give the host build's output bit for bit.
d="$work/digits-onnx-full"
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null; then
  skipped+=("the int8 digits library on AArch64 (no qemu-aarch64 or aarch64-linux-gnu-gcc)")
elif [[ -x $d/run && -f $d/x3.bin ]]; then
  qargs=(--quantize int8 --calibrate "image=$root/examples/digits/calibration.npy")
  "$d/run" "$d/x3.bin" -- "$d/host3.bin" >/dev/null || fail "digits int8 on the host"
  for entry in "cortex-a72;smlal2?\s+v[0-9]+\.4s, v[0-9]+\.[48]h, v[0-9]+\.h\[" \
               "cortex-a76;sdot\s"; do
    IFS=';' read -r cpu insn <<<"$entry"
    cross_args=("$root/examples/digits/digits.onnx" "${qargs[@]}" --target aarch64-linux
                --cpu "$cpu" --name m)
    cross_check "digits int8 for aarch64 $cpu" "$d" "$cpu" aarch64-linux-gnu-gcc "$d/x3.bin" \
      "$d/host3.bin" "$insn" qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu
  done
else
  skipped+=("the int8 digits library on AArch64 (no host library or samples from above)")
fi

# --- 2. calibration methods -----------------------------------------------
echo "== calibration methods on samples with outliers (RMS error against float)"
"$python" "$here/quantize.py" make-outlier "$work/outlier" || exit 1
declare -A rms
for method in minmax percentile entropy; do
  d="$work/outlier"
  if "$mlcc" "$d/model.onnx" --quantize int8 --calibrate "x=$d/samples.npy" \
       --calibration-method "$method" -o "$d/lib-$method.a" --name m >"$d/$method.log" 2>&1 &&
     "$cc" -o "$d/run-$method" "$work/driver.o" "$d/lib-$method.a" -lm &&
     "$d/run-$method" "$d/input.bin" -- "$d/y-$method.bin" >/dev/null; then
    rms[$method]="$("$python" "$here/quantize.py" rms "$d/y-$method.bin" "$d/reference.bin")"
    echo "  $method: ${rms[$method]}"
  else
    fail "outlier model with $method: $(tail -n 1 "$d/$method.log")"
  fi
done
if [[ -n "${rms[minmax]:-}" && -n "${rms[entropy]:-}" ]]; then
  awk -v e="${rms[entropy]}" -v m="${rms[minmax]}" 'BEGIN {exit !(e < m)}' ||
    fail "entropy calibration (${rms[entropy]}) is not better than minmax (${rms[minmax]})"
fi

# --- 3. QDQ import ----------------------------------------------------------
echo "== a QDQ model exported by PyTorch against ONNX Runtime"
d="$work/qdq"
"$python" "$here/quantize.py" make-qdq "$d" >"$work/qdq.log" 2>&1
rc=$?
if ((rc == 77)); then
  skipped+=("the QDQ model (no PyTorch)")
  echo "  skipped: $(grep SKIP "$work/qdq.log")"
elif ((rc != 0)); then
  fail "make-qdq: $(tail -n 1 "$work/qdq.log")"
else
  graph="$("$mlcc" "$d/model.onnx" --emit graph -o -)"
  if grep -Eq '= (Conv|Gemm|MatMul|Add) ' <<<"$graph"; then
    fail "the QDQ model kept a float op: $(grep -E '= (Conv|Gemm|MatMul|Add) ' <<<"$graph" | head -n 1)"
  fi
  if ! "$mlcc" "$d/model.onnx" -o "$d/libm.a" --name m >"$d/mlcc.log" 2>&1 ||
     ! "$cc" -o "$d/run" "$work/driver.o" "$d/libm.a" -lm ||
     ! "$d/run" "$d/input.bin" -- "$d/mlcc.bin" >/dev/null; then
    fail "QDQ model: $(tail -n 1 "$d/mlcc.log")"
  else
    if ((have_ort)); then
      # Where ORT's fused uint8 x int8 kernels saturate int16 pair sums
      # (x86 without VNNI), ORT runs the QDQ graph as written instead.
      ort_opt=all how=""
      [[ $ort_path != exact ]] && ort_opt=disabled how=" (as written: its fused int8 kernels saturate on this CPU)"
      if ORT_GRAPH_OPTIMIZATION=$ort_opt "${ort_node[@]}" "$root/tests/models/ort_run.js" "$d/model.onnx" 0 \
           "$d/input.bin:$(cat "$d/shape")" -- "$d/ort.bin" >"$d/ort.log" 2>&1; then
        printf '  vs ONNX Runtime%s: ' "$how"
        "$python" "$here/quantize.py" compare "$d/mlcc.bin" "$d/ort.bin" "$(cat "$d/step")" ||
          fail "QDQ model differs from ONNX Runtime by more than one step"
      else
        fail "ONNX Runtime: $(tail -n 1 "$d/ort.log")"
      fi
    else
      skipped+=("the ONNX Runtime comparison (onnxruntime-node not installable)")
    fi
    # The x86 levels below the host's (every x86 CPU CI runs on has AVX2):
    # their int8 products run on pmaddwd pairs where VNNI is missing, and
    # must give the host build's output bit for bit.
    if [[ "$(uname -m)" == x86_64 ]]; then
      for level in x86_64-v3 x86_64; do
        plan="$("$mlcc" "$d/model.onnx" --target "$level" --emit plan -o - 2>&1)"
        grep -q 'dot4=' <<<"$plan" || fail "QDQ model for $level: no dot-product plan"
        if ! "$mlcc" "$d/model.onnx" --target "$level" -o "$d/lib-$level.a" --name m \
               >"$d/mlcc-$level.log" 2>&1 ||
           ! "$cc" -o "$d/run-$level" "$work/driver.o" "$d/lib-$level.a" -lm ||
           ! "$d/run-$level" "$d/input.bin" -- "$d/mlcc-$level.bin" >/dev/null; then
          fail "QDQ model for $level: $(tail -n 1 "$d/mlcc-$level.log")"
        elif ! cmp -s "$d/mlcc.bin" "$d/mlcc-$level.bin"; then
          fail "QDQ model for $level: the output differs from the host build's"
        else
          echo "  --target $level: the host build's output, bit for bit"
        fi
      done
    fi
    # AArch64 with the dot-product extension (sdot on signed quads), with
    # i8mm (usdot) and without either (cortex-a72: 16-bit products summed
    # in pairs, smull, addp and sadalp), under qemu-aarch64 -cpu max; RISC-V
    # with vectors (vwmacc*, widening vector multiply-adds) under
    # qemu-riscv64 at VLEN 128 and 256: the instructions in the code and the host build's output
    # (each skipped without its cross tools).
    cross=(
      "aarch64 cortex-a76;aarch64-linux;cortex-a76;sdot;aarch64-linux-gnu-gcc;qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu"
      "aarch64 neoverse-n2;aarch64-linux;neoverse-n2;usdot;aarch64-linux-gnu-gcc;qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu"
      "aarch64 cortex-a72;aarch64-linux;cortex-a72;sadalp;aarch64-linux-gnu-gcc;qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu"
      "riscv64-v VLEN 128;riscv64-linux-v;;vwmacc(su|u|us)?\.v[vx];riscv64-linux-gnu-gcc;qemu-riscv64 -cpu rv64,v=true,vlen=128 -L /usr/riscv64-linux-gnu"
      "riscv64-v VLEN 256;riscv64-linux-v;;vwmacc(su|u|us)?\.v[vx];riscv64-linux-gnu-gcc;qemu-riscv64 -cpu rv64,v=true,vlen=256 -L /usr/riscv64-linux-gnu"
    )
    for entry in "${cross[@]}"; do
      IFS=';' read -r label target cpu insn cc qemu <<<"$entry"
      read -r -a qemu_words <<<"$qemu"
      if ! command -v "${qemu_words[0]}" >/dev/null || ! command -v "$cc" >/dev/null; then
        skipped+=("the QDQ model on $label (no ${qemu_words[0]} or $cc)")
        continue
      fi
      tag="${label// /_}"
      cross_args=("$d/model.onnx" --target "$target" --name m)
      [[ -n $cpu ]] && cross_args+=(--cpu "$cpu")
      cross_check "QDQ model for $label" "$d" "$tag" "$cc" "$d/input.bin" "$d/mlcc.bin" \
        "$insn\\s" "${qemu_words[@]}"
    done
  fi
fi

# --- 4. bad input -----------------------------------------------------------
echo "== bad input"
"$python" "$here/quantize.py" make-plain "$work/bad" || exit 1
b="$work/bad" o="$work/outlier"
expect_error() {
  local what="$1"; shift
  rm -f "$b/out.a" "$b/out.h"
  "$mlcc" "$@" -o "$b/out.a" >"$b/stdout" 2>"$b/stderr"
  local rc=$?
  if ((rc == 0)); then
    fail "$what: mlcc succeeded"
  elif [[ -e "$b/out.a" || -e "$b/out.h" ]]; then
    fail "$what: an output file was left behind"
  elif [[ "$(wc -l <"$b/stderr")" -ne 1 ]] || ! grep -q '^mlcc: error: ' "$b/stderr"; then
    fail "$what: expected one 'mlcc: error:' line, got: $(head -c 300 "$b/stderr")"
  else
    echo "  $what: $(cat "$b/stderr")"
  fi
}
expect_error "wrong shape" "$o/model.onnx" --quantize int8 --calibrate "x=$b/wrong_shape.npy"
expect_error "wrong dtype" "$o/model.onnx" --quantize int8 --calibrate "x=$b/wrong_dtype.npy"
expect_error "not .npy" "$o/model.onnx" --quantize int8 --calibrate "x=$b/not_npy.npy"
expect_error "no such input" "$o/model.onnx" --quantize int8 --calibrate "image=$o/samples.npy"
expect_error "no samples" "$o/model.onnx" --quantize int8
expect_error "no --quantize" "$o/model.onnx" --calibrate "x=$o/samples.npy"
expect_error "--quantize-io alone" "$o/model.onnx" --quantize-io
expect_error "bad method" "$o/model.onnx" --quantize int8 --calibrate "x=$o/samples.npy" \
  --calibration-method kl
expect_error "nothing to quantize" "$b/plain.onnx" --quantize int8 \
  --calibrate "x=$b/samples_plain.npy"

echo
if ((${#skipped[@]})); then
  echo "skipped: ${skipped[*]}"
fi
if ((failed)); then
  echo "some checks failed"
  exit 1
fi
echo "all passed"
