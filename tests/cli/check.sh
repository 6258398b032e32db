#!/usr/bin/env bash
# mlcc check (issue 31): every kernel call's output against the reference.
#  1. The digits example, float, on the host: every call compared, all
#     within tolerance, exit 0; JSON and the HTML page written.
#  2. A kernel broken on purpose (--break-kernel-for-test, a test-only
#     switch): exit 6, the first call out of tolerance is the broken one and
#     names its ONNX nodes; the calls before it stay within tolerance. On
#     the host, on cortex-m4 (QEMU, MPS2 AN386, semihosting) and aarch64
#     (qemu-user) when their tools are installed.
#  3. --quantize int8 on digits: every call compared against the float
#     model (SNR per call in the JSON), the SNR-drop ranking with the
#     --keep-float advice; --keep-float NODE keeps that Conv in float.
#  4. The real int8 model of ../shared/models (QLinear ops) and four
#     int4/uint2/float4e2m1 node cases of ../shared/onnx-backend-tests: all
#     within tolerance (skipped, saying so, when ../shared is absent).
#  5. Bad input: a reference of the wrong shape, of the wrong dtype, an
#     unknown tensor name, an unknown input, a model that does not load,
#     --keep-float of a node the model lacks: one "error:" line each, a
#     non-zero exit, no JSON written.
#
# usage: tests/cli/check.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
digits=$root/examples/digits/digits.onnx
cal=(--calibrate "image=$root/examples/digits/calibration.npy")
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# 1. float digits on the host.
if "$mlcc" check "$digits" --json "$work/float.json" --report-html "$work/float.html" \
     >"$work/float.txt" 2>&1; then
  cat "$work/float.txt"
  grep -q '"compared": 4' "$work/float.json" || fail "float digits: not every call compared"
  grep -q '<svg' "$work/float.html" || fail "float digits: no SNR chart in the HTML page"
else
  cat "$work/float.txt"; fail "float digits: exit $? (expected 0)"
fi

# 2. A broken kernel, named.
broken() { # TARGET NODE FIRST-CALL NODES-REGEX [extra options]
  local target=$1 node=$2 call=$3 nodes=$4
  shift 4
  local out="$work/broken-$target.txt" rc=0
  "$mlcc" check "$digits" --target "$target" --break-kernel-for-test "$node" "$@" >"$out" 2>&1 ||
    rc=$?
  if ((rc != 6)); then
    cat "$out"; fail "$target: broken kernel: exit $rc (expected 6)"; return
  fi
  if ! grep -q "^first out of tolerance: call $call, kernel k[0-9]*_.*_broken" "$out" ||
     ! grep -Eq "^  ONNX nodes: $nodes\$" "$out"; then
    cat "$out"; fail "$target: the broken kernel (call $call: $nodes) is not the one named"
    return
  fi
  # The calls before it are within tolerance.
  if awk -v c="$call" '$1 ~ /^[0-9]+$/ && $1 < c && / FAIL /' "$out" | grep -q .; then
    cat "$out"; fail "$target: a call before the broken one is out of tolerance"; return
  fi
  echo "$target: broken kernel named: $(grep '^first out of tolerance' "$out")"
}
broken host /conv2/Conv 2 '/conv2/Conv \(Conv\), /Relu_1 \(Relu\)'
if command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null; then
  broken cortex-m4 /conv2/Conv 2 '/conv2/Conv \(Conv\), /Relu_1 \(Relu\)'
  # int8: the QLinearConv that fuse-qdq made of /conv2/Conv and /Relu_1.
  broken cortex-m4 /Relu_1_output_0_quantized_0/QLinearConv_0 3 \
    '/conv2/Conv \(Conv\), /Relu_1 \(Relu\)' --quantize int8 "${cal[@]}"
  "$mlcc" check "$digits" --target cortex-m4 >"$work/m4.txt" 2>&1 ||
    { cat "$work/m4.txt"; fail "cortex-m4: the correct model is not within tolerance"; }
else
  echo "SKIPPED cortex-m4: arm-none-eabi-gcc or qemu-system-arm is not installed"
fi
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null; then
  broken aarch64-linux /pool/MaxPool 1 '/pool/MaxPool \(MaxPool\)'
else
  echo "SKIPPED aarch64-linux: aarch64-linux-gnu-gcc or qemu-aarch64 is not installed"
fi

# 3. int8: SNR per call against the float model.
if "$mlcc" check "$digits" --quantize int8 "${cal[@]}" --json "$work/int8.json" \
     --report-html "$work/int8.html" >"$work/int8.txt" 2>&1; then
  cat "$work/int8.txt"
  n=$(grep -o '"snr_db": [-0-9.]*' "$work/int8.json" | wc -l)
  ((n >= 5)) || fail "int8 digits: $n calls with an SNR (expected every call)"
  grep -q '^to keep a layer in float, add --keep-float NODE' "$work/int8.txt" ||
    fail "int8 digits: no --keep-float advice"
  grep -q 'min-snr' "$work/int8.html" || fail "int8 digits: the chart lacks the tolerance line"
else
  cat "$work/int8.txt"; fail "int8 digits: exit $? (expected 0)"
fi
# Scores masked with the float minimum (make_masked_scores.py): the masked
# positions are left out of the SNR, so no layer shows a drop of hundreds of
# dB (the Softmax after them showed 763 dB); the worst is a few dB.
masked=$root/tests/cli/data/masked_scores.onnx
if "$mlcc" check "$masked" --quantize int8 \
     --calibrate "x=$root/tests/cli/data/masked_scores_cal.npy" >"$work/masked.txt" 2>&1; then
  worst=$(sed -n '/^layers that lose the most accuracy/{n;p;q}' "$work/masked.txt" | awk '{print $1}')
  if [[ -n $worst ]] && awk -v w="$worst" 'BEGIN { exit !(w < 30) }'; then
    echo "ok   masked scores: the worst SNR drop is $worst dB"
  else
    cat "$work/masked.txt"; fail "masked scores: the worst SNR drop is '$worst' dB (expected < 30)"
  fi
else
  cat "$work/masked.txt"; fail "masked scores: mlcc check --quantize int8 failed"
fi
graph=$("$mlcc" "$digits" --quantize int8 "${cal[@]}" --keep-float /conv1/Conv --emit graph -o -)
if ! grep -q '= Conv .*# /conv1/Conv' <<<"$graph" || ! grep -q 'QLinearConv' <<<"$graph"; then
  fail "--keep-float /conv1/Conv: that Conv is not float and the other int8"
fi
"$mlcc" check "$digits" --quantize int8 "${cal[@]}" --keep-float /conv1/Conv >"$work/keep.txt" 2>&1 ||
  { cat "$work/keep.txt"; fail "--keep-float: check out of tolerance"; }

# 4. A real int8 model.
zoo=$root/../shared/models/shufflenet-v2-12-int8/model.onnx
if [[ -f $zoo ]]; then
  if "$mlcc" check "$zoo" --json "$work/zoo.json" >"$work/zoo.txt" 2>&1; then
    tail -n 3 "$work/zoo.txt"
  else
    tail -n 20 "$work/zoo.txt"; fail "shufflenet-v2-12-int8: out of tolerance"
  fi
else
  echo "SKIPPED the zoo int8 model: ../shared/models is not there"
fi
# Packed 4- and 2-bit tensors: the reference (unscheduled) expands them too.
cases=$root/../shared/onnx-backend-tests/node
if [[ -d $cases ]]; then
  for c in cast_FLOAT_to_INT4 cast_UINT2_to_FLOAT dequantizelinear_int4 quantizelinear_float4e2m1; do
    "$mlcc" check "$cases/test_$c/model.onnx" >"$work/$c.txt" 2>&1 ||
      { tail -n 5 "$work/$c.txt"; fail "$c: check failed"; }
  done
else
  echo "SKIPPED the sub-byte node cases: ../shared/onnx-backend-tests is not there"
fi

# 5. Bad input.
/usr/bin/python3 - "$work" <<'EOF' || fail "cannot write the .npy files"
import sys, struct
def npy(path, descr, shape):
    n = 1
    for d in shape:
        n *= d
    size = {'<f4': 4, '<i8': 8}[descr]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ''.join('%d,' % d for d in shape))
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode())
        f.write(b'\0' * (n * size))
w = sys.argv[1]
npy(w + '/shape.npy', '<f4', (1, 8, 8, 9))
npy(w + '/dtype.npy', '<i8', (1, 8, 8, 8))
npy(w + '/ok.npy', '<f4', (1, 8, 8, 8))
EOF
echo garbage >"$work/bad.onnx"
bad() { # DESCRIPTION EXPECTED-MESSAGE-REGEX ARGS...
  local what=$1 want=$2 rc=0
  shift 2
  rm -f "$work/bad.json"
  "$mlcc" check "$@" --json "$work/bad.json" >"$work/bad.out" 2>"$work/bad.err" || rc=$?
  if ((rc == 0 || rc == 6)) || [[ $(wc -l <"$work/bad.err") -ne 1 ]] ||
     ! grep -Eq "^mlcc check: error: .*$want" "$work/bad.err" || [[ -e $work/bad.json ]]; then
    fail "$what: exit $rc, stderr: $(cat "$work/bad.err")"
  else
    echo "$what: exit $rc: $(cat "$work/bad.err")"
  fi
}
# A library with a run-time dimension (--dim seq=1..256), checked at two
# values of it (--assign): the calls' outputs in use at each, against the
# reference at that length; a broken kernel named there too.
encoder=$root/tests/cli/data/bounded_encoder.onnx
if "$mlcc" check "$encoder" --dim seq=1..256 --assign seq=7 --assign seq=256 \
     --json "$work/bounded.json" >"$work/bounded.txt" 2>&1 &&
   [[ $(grep -c "outputs compared: all within tolerance" "$work/bounded.txt") -eq 2 ]] &&
   grep -q "; at seq=7" "$work/bounded.txt" && grep -q "; at seq=256" "$work/bounded.txt" &&
   grep -q "4x7x8 " "$work/bounded.txt"; then
  echo "bounded encoder: checked at seq=7 and seq=256, every call within tolerance"
else
  cat "$work/bounded.txt"; fail "bounded encoder: not within tolerance at seq=7 and 256"
fi
rc=0
"$mlcc" check "$encoder" --dim seq=1..256 --assign seq=7 \
  --break-kernel-for-test /layers.1/linear1/MatMul >"$work/bounded-broken.txt" 2>&1 || rc=$?
if ((rc == 6)) && grep -Eq "^first out of tolerance: call [0-9]+, kernel k[0-9]*_matmul_add_relu_broken" \
     "$work/bounded-broken.txt"; then
  echo "bounded encoder: broken kernel named: $(grep '^first out of tolerance' "$work/bounded-broken.txt")"
else
  cat "$work/bounded-broken.txt"; fail "bounded encoder: the broken kernel is not named (exit $rc)"
fi

bad "reference of the wrong shape" "holds f32\[1,8,8,9\], the tensor is f32\[1,8,8,8\]" \
  "$digits" --reference "/Relu_output_0=$work/shape.npy"
bad "reference of the wrong dtype" "holds i64\[1,8,8,8\]" \
  "$digits" --reference "/Relu_output_0=$work/dtype.npy"
bad "unknown tensor" "no tensor named 'nosuch'" "$digits" --reference "nosuch=$work/ok.npy"
bad "unknown input" "no input named 'nosuch'" "$digits" --input "nosuch=$work/ok.npy"
bad "a model that does not load" "not an ONNX model" "$work/bad.onnx"
bad "a run-time dimension without --assign" "give them with --assign seq=VALUE" \
  "$encoder" --dim seq=1..256
bad "--assign out of range" "--assign seq=300: not a value in 1..256" \
  "$encoder" --dim seq=1..256 --assign seq=300
bad "--assign of no dimension" "'len' is not a dimension bound to a range" \
  "$encoder" --dim seq=1..256 --assign len=3
bad "--keep-float of no node" "no node named 'nosuch'" "$digits" --quantize int8 "${cal[@]}" \
  --keep-float nosuch

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "mlcc check: all passed"
