#!/usr/bin/env bash
# Bad input must give one clear line on stderr, a non-zero exit status, no
# crash (no signal, no internal error) and no output file, not even a
# temporary one. Each case states the status it expects and a phrase the
# message must contain.
#
# usage: tests/cli/bad_input.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$root/tests/cli/data
digits=$root/examples/digits/digits.onnx
rm -rf "$work" && mkdir -p "$work/out"
failures=0

# expect NAME STATUS PHRASE -- ARGS...
expect() {
  local name=$1 want=$2 phrase=$3
  shift 4
  rm -rf "$work/out" && mkdir -p "$work/out"
  "$mlcc" "$@" 2> "$work/stderr" > "$work/stdout"
  local got=$?
  local lines
  lines=$(wc -l < "$work/stderr")
  local left
  left=$(ls -A "$work/out")
  local problem=""
  [[ $got -eq $want ]] || problem+=" exit status $got (want $want);"
  [[ $lines -eq 1 ]] || problem+=" $lines lines on stderr (want 1);"
  grep -qF -- "$phrase" "$work/stderr" || problem+=" message lacks '$phrase';"
  [[ -z $left ]] || problem+=" left files: $left;"
  if [[ -n $problem ]]; then
    echo "FAIL $name:$problem"
    sed 's/^/    /' "$work/stderr" | head -5
    failures=$((failures + 1))
  else
    echo "ok   $name: $(cat "$work/stderr")"
  fi
}

head -c 3000 "$digits" > "$work/truncated.onnx"
printf 'this is not an ONNX model\n' > "$work/text.onnx"
: > "$work/empty.onnx"
head -c 65536 /dev/urandom > "$work/random.onnx" 2>/dev/null || true

expect truncated     1 "is not an ONNX model" -- "$work/truncated.onnx" -o "$work/out/libm.a"
expect not-onnx      1 "is not an ONNX model" -- "$work/text.onnx" -o "$work/out/libm.a"
expect empty-file    1 "is not an ONNX model" -- "$work/empty.onnx" -o "$work/out/libm.a"
expect missing-file  1 "cannot open model"    -- "$work/nope.onnx" -o "$work/out/libm.a"
expect unknown-op    3 "node 'frob1' (FrobnicateTensor): operator FrobnicateTensor is not supported" \
                       -- "$data/unknown_op.onnx" -o "$work/out/libm.a"
expect unbound-dim   1 "unbound symbolic dimension(s): batch (graph input 'x' axis 0); bind each with --dim" \
                       -- "$data/symbolic_dim.onnx" -o "$work/out/libm.a"
expect unnamed-dim   1 "graph input 'x' axis 1 has neither a size nor a name; give the input's shape with --shape x=2xNx4" \
                       -- "$data/unnamed_dim.onnx" -o "$work/out/libm.a"
expect option-value  2 "mlcc: error: --progress: bogus not in {auto,always,never}" \
  -- "$digits" -o "$work/out/libm.a" --progress bogus
expect option-range  2 "mlcc: error: --jobs: Value -1 not in range 0 to 1024" \
  -- "$digits" -o "$work/out/libm.a" -j -1
expect shape-rank    2 "--shape x: 2 dimensions, but the model declares 3" \
                       -- "$data/unnamed_dim.onnx" --shape x=5x4 -o "$work/out/libm.a"
expect shape-fixed   2 "--shape x: axis 0 is 2 in the model, not 3" \
                       -- "$data/unnamed_dim.onnx" --shape x=3x5x4 -o "$work/out/libm.a"
expect shape-syntax  2 "--shape x: '2xax4' is not a shape D0xD1x..." \
                       -- "$data/unnamed_dim.onnx" --shape x=2xax4 -o "$work/out/libm.a"
expect shape-input   2 "--shape names 'z', which is not a graph input" \
                       -- "$data/unnamed_dim.onnx" --shape z=2 -o "$work/out/libm.a"
expect shape-clash   2 "dimension 'seq' is 6 by --shape a (axis 0) but 5 by --dim seq=5" \
                       -- "$data/shared_dim.onnx" --shape a=6x8 --dim seq=5 -o "$work/out/libm.a"
expect bad-dim-value 2 "is not a non-negative integer" \
                       -- "$data/symbolic_dim.onnx" --dim batch=zero -o "$work/out/libm.a"
# Bounded dimensions (--dim NAME=MIN..MAX): bad ranges, and what they do
# not support yet.
bounded=$data/bounded_attention.onnx
expect dim-empty     2 "--dim seq=5..2: the range is empty (MIN 5 is greater than MAX 2)" \
                       -- "$bounded" --dim seq=5..2 --emit graph -o "$work/out/g.txt"
expect dim-syntax    2 "--dim seq=1..n: expected a range MIN..MAX of non-negative integers" \
                       -- "$bounded" --dim seq=1..n -o "$work/out/libm.a"
expect dim-op        3 "node 'crop_middle' (CenterCropPad): reads or writes 'x' (its axis 1 follows seq); CenterCropPad does not run to extents known only at run time: its kernels at several values of seq differ in more than integer constants that follow seq (the expression (i1 + 30) at MAX is i1 at 5)" \
                       -- "$data/bounded_crop.onnx" --dim seq=5..64 -o "$work/out/libm.a"
expect dim-slice     3 "node 'last_four' (Slice): its input 1 ('starts') is computed from a bounded dimension; a Slice takes such numbers only as its ends so far" \
                       -- "$data/bounded_tail.onnx" --dim seq=5..64 -o "$work/out/libm.a"
expect dim-if        3 "--dim seq=1..64: control flow is decided from seq at compile time: node 'by_length' (If): the then branch at seq=64, but node 'by_length' (If): the else branch at seq=1" \
                       -- "$data/bounded_if.onnx" --dim seq=1..64 -o "$work/out/libm.a"
expect dim-cuda      3 "--dim seq=1..256: --target cuda does not take bounded dimensions yet" \
                       -- "$bounded" --dim seq=1..256 --target cuda -o "$work/out/libm.a"
expect dim-affine    3 "axis 1 of value 'y' (node 'every_other' (Slice)) is 128, 128 and 127 at seq=256, 255 and 254: not an affine function of seq" \
                       -- "$data/bounded_stride.onnx" --dim seq=1..256 --emit graph -o "$work/out/g.txt"
expect dim-quantize  3 "--dim seq=1..256: bounded dimensions do not take --quantize yet" \
                       -- "$bounded" --dim seq=1..256 --quantize int8 --calibrate x=none.npy --emit graph -o "$work/out/g.txt"
expect dim-product   3 "axis 0 of value 'y' (node 'flatten_bs' (Reshape)) is 21 at batch=3, seq=7, not the 20" \
                       -- "$data/bounded_product.onnx" --dim batch=1..4 --dim seq=1..8 --emit graph -o "$work/out/g.txt"
expect dim-probe     1 "--dim seq=2..256: at seq=255: node 'to_pairs' (Reshape): cannot reshape [1,255,16]" \
                       -- "$data/bounded_even.onnx" --dim seq=2..256 --emit graph -o "$work/out/g.txt"
expect bad-broadcast 1 "node 'add1' (Add): shapes [2,3] and [4,5] do not broadcast" \
                       -- "$data/bad_broadcast.onnx" -o "$work/out/libm.a"
expect undefined-in  1 "input 'nowhere' is not defined" \
                       -- "$data/undefined_input.onnx" -o "$work/out/libm.a"
expect input-count   1 "node 'div1' (Div): has 1 input; Div-13 takes 2" \
                       -- "$data/div_one_input.onnx" -o "$work/out/libm.a"
expect required-attr 1 "node 'cast1' (Cast): lacks the required attribute 'to'" \
                       -- "$data/cast_missing_attr.onnx" -o "$work/out/libm.a"
expect attr-type     1 "node 'sm1' (Softmax): attribute 'axis' is a float; Softmax-13 expects an int" \
                       -- "$data/attr_wrong_type.onnx" -o "$work/out/libm.a"
expect dtype-constraint 1 "node 'sqrt1' (Sqrt): input 0 ('X') is int32; Sqrt-13 accepts T in {float16, float, double, bfloat16}" \
                       -- "$data/dtype_constraint.onnx" -o "$work/out/libm.a"
expect axis-range    1 "node 'sm2' (Softmax): axis 5 is out of range [-2, 1] for an input of rank 2" \
                       -- "$data/axis_out_of_range.onnx" -o "$work/out/libm.a"
expect window-attr   1 "node 'conv1' (Conv): strides [1,0] must be in [1, 2147483647]" \
                       -- "$data/conv_zero_stride.onnx" -o "$work/out/libm.a"
# Names from the model are escaped: the message stays one line of valid UTF-8.
expect escaped-name  1 "node 'ev\xffl\x0a\x1b[2J' (Div)" \
                       -- "$data/garbled_name.onnx" -o "$work/out/libm.a"
if iconv -f UTF-8 -t UTF-8 "$work/stderr" > /dev/null 2>&1; then
  echo "ok   escaped-name is valid UTF-8"
else
  echo "FAIL escaped-name: the message is not valid UTF-8"; failures=$((failures + 1))
fi
mkdir -p "$work/ext" && cp "$root/tests/golden/models/external_data.onnx" "$work/ext/"
expect missing-external 1 "cannot open external data file" -- "$work/ext/external_data.onnx" -o "$work/out/libm.a"
expect missing-dir   1 "does not exist" -- "$digits" -o "$work/out/no/such/dir/libm.a"
expect bad-extension 2 "cannot tell what to write" -- "$digits" -o "$work/out/model.xyz"
expect bad-target    2 "unknown target" -- "$digits" --target vax -o "$work/out/libm.a"
expect bad-cpu       2 "unknown CPU" -- "$digits" --target aarch64-linux --cpu pentium9 -o "$work/out/libm.a"
expect bad-freeze-file 1 "is not a serialized TensorProto" -- "$digits" --freeze image="$work/text.onnx" -o "$work/out/libm.a"
expect bad-name      2 "is not a C identifier" -- "$digits" --name "my-model" -o "$work/out/libm.a"
expect weight-bits   2 "--weight-bits takes 8 or 4, not 3" -- "$digits" --quantize int8 \
  --calibrate image="$root/examples/digits/calibration.npy" --weight-bits 3 -o "$work/out/libm.a"
expect weight-bits-alone 2 "--weight-bits and --keep-float need --quantize int8" \
  -- "$digits" --weight-bits 4 -o "$work/out/libm.a"
expect bad-freeze    2 "is not a graph input" -- "$digits" --freeze nothere="$data/tensor.pb" -o "$work/out/libm.a"
if [[ -s $work/random.onnx ]]; then
  "$mlcc" "$work/random.onnx" -o "$work/out/libm.a" 2> "$work/stderr"
  st=$?
  if [[ $st -ge 5 || -n $(ls -A "$work/out") ]]; then
    echo "FAIL random-bytes: status $st"; failures=$((failures + 1))
  else
    echo "ok   random-bytes: status $st"
  fi
fi

# The positive control: the same commands succeed on good input.
rm -rf "$work/out" && mkdir -p "$work/out"
if "$mlcc" "$data/symbolic_dim.onnx" --dim batch=4 -o "$work/out/libm.a" &&
   [[ -s $work/out/libm.a && -s $work/out/m.h ]] && grep -q "\[4\]\[3\]" "$work/out/m.h"; then
  echo "ok   bound-dim: --dim batch=4 compiles"
else
  echo "FAIL bound-dim"; failures=$((failures + 1))
fi

rm -rf "$work/out" && mkdir -p "$work/out"
if "$mlcc" "$data/unnamed_dim.onnx" --shape x=2x5x4 -o "$work/out/libm.a" &&
   grep -q "float \[2\]\[5\]\[4\]" "$work/out/m.h"; then
  echo "ok   shape: --shape x=2x5x4 sets an unnamed dimension"
else
  echo "FAIL shape"; failures=$((failures + 1))
fi
# --shape of one input binds its named dimension for the other.
rm -rf "$work/out" && mkdir -p "$work/out"
if "$mlcc" "$data/shared_dim.onnx" --shape a=6x8 -o "$work/out/libm.a" &&
   [[ $(grep -c "float \[6\]\[8\]" "$work/out/m.h") -eq 3 ]]; then
  echo "ok   shape-binds: --shape a=6x8 binds seq for b"
else
  echo "FAIL shape-binds"; failures=$((failures + 1))
fi

if [[ $failures -ne 0 ]]; then
  echo "bad_input: $failures case(s) failed"
  exit 1
fi
echo "bad_input: all cases passed"
