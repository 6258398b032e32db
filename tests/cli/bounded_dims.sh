#!/usr/bin/env bash
# Bounded dimensions (--dim NAME=MIN..MAX): the graph compiled at MAX, each
# axis that follows the dimension found and shown by --emit graph as its
# extent over the dimension; one library for every value in the range, run
# at several values against ONNX Runtime's outputs (tests/cli/
# make_bounded_refs.py) and against libraries compiled for each value.
# (Bad ranges and what a bounded dimension does not support yet:
# tests/cli/bad_input.sh.)
#
# usage: tests/cli/bounded_dims.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
attention=$root/tests/cli/data/bounded_attention.onnx
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL $1"; failures=$((failures + 1)); }
ok() { echo "ok   $1"; }

# graph NAME MODEL RANGE LINE...: --emit graph of MODEL with --dim seq=RANGE
# prints every LINE.
graph() {
  local name=$1 model=$2 range=$3
  shift 3
  if ! "$mlcc" "$model" --dim "seq=$range" --emit graph -o "$work/$name.txt" \
       2>"$work/$name.err"; then
    fail "$name: status $?"; head -3 "$work/$name.err"; return
  fi
  local line missing=""
  for line in "$@"; do
    grep -qF -- "$line" "$work/$name.txt" || missing+=" '$line'"
  done
  if [[ -z $missing ]]; then
    ok "$name: $*"
  else
    fail "$name: the graph lacks$missing"; grep -E 'dim|input|output|scores|softmax' \
      "$work/$name.txt" | head -8
  fi
}
# Self-attention over seq: the heads split by a Reshape to a shape computed
# from Shape(x), the positions a Range over seq; the scores (seq x seq) are
# inside the fused attention, whose output follows seq.
graph attention "$attention" 1..256 "dim seq = 1..256" "input %x: f32[1,seq,16]" \
  ": f32[1,2,seq,8] = Transpose" ": f32[1,seq,2,8] = mlcc.Attention" "output %y: f32[1,seq,16]"
# Two values: two graphs compared (no third to check a line through).
graph two-values "$attention" 3..4 "dim seq = 3..4" "input %x: f32[1,seq,16]" "output %y: f32[1,seq,16]"
# One value: a fixed dimension.
graph one-value "$attention" 5..5 "dim seq = 5..5" "input %x: f32[1,5,16]" "output %y: f32[1,5,16]"
# A PyTorch TransformerEncoder exported with a dynamic axis (tests/cli/
# make_encoder.py): heads split and merged by Reshapes to shapes computed
# from Shape(x), the projections' rows, the attention and the feed-forward
# layers follow seq.
graph encoder "$root/tests/cli/data/bounded_encoder.onnx" 1..256 "input %x: f32[1,seq,32]" \
  ": f32[seq,4,8] = mlcc.Attention" ": f32[seq,4,8] = Reshape" ": f32[1,seq,64] = Relu" \
  "output %y: f32[1,seq,32]"
# --dump-dot writes the same extents.
if "$mlcc" "$attention" --dim seq=1..8 --emit graph -o "$work/dot.txt" \
     --dump-dot "$work/g.dot" 2>/dev/null && grep -qF 'f32[1,2,seq,8]' "$work/g.dot"; then
  ok "--dump-dot: the extents on its edges"
else
  fail "--dump-dot: no f32[1,2,seq,8] in the dot graph"
fi
# Two bounded dimensions.
if "$mlcc" "$root/tests/cli/data/bounded_two.onnx" --dim batch=1..4 --dim seq=1..8 --emit graph \
     -o "$work/two.txt" 2>"$work/two.err" &&
   grep -qF "input %x: f32[batch,seq,4]" "$work/two.txt" &&
   grep -qF "output %y: f32[batch,seq,4]" "$work/two.txt"; then
  ok "two dimensions: f32[batch,seq,4]"
else
  fail "two dimensions"; cat "$work/two.err" "$work/two.txt" | head -5
fi
# The graph at MAX is the graph of --dim seq=MAX, but for the extents.
"$mlcc" "$attention" --dim seq=64 --emit graph -o "$work/static.txt" 2>/dev/null
"$mlcc" "$attention" --dim seq=1..64 --emit graph -o "$work/bounded.txt" 2>/dev/null
# at64: the bounded graph with each extent 'seq' in a type read as 64 and
# the constants' extent comments dropped.
at64() {
  grep -v '^  dim ' "$work/bounded.txt" | sed -E 's/  # [a-z0-9]+\[[^]]*\]$//' |
    sed -E 's/([[,])seq([],])/\164\2/g; s/([[,])seq([],])/\164\2/g'
}
if diff <(at64) "$work/static.txt" >/dev/null; then
  ok "at MAX: the graph of --dim seq=64, each seq an extent"
else
  fail "at MAX: the graph differs from --dim seq=64's"
  diff <(at64) "$work/static.txt" | head -6
fi

# --- libraries ---------------------------------------------------------------
cc=${CC:-cc}
refs=$root/tests/cli/data/bounded_refs
# runner DIR: tests/cli/run_bounded.c built against DIR/libm.a and DIR/m.h.
runner() {
  "$cc" -O1 -I"$1" -o "$1/run" "$root/tests/cli/run_bounded.c" "$1/libm.a" -lm 2>"$1/cc.err" ||
    { cat "$1/cc.err" | head -5; return 1; }
}
# library NAME MODEL MLCC-ARGS...: compiles MODEL with --name m into $work/NAME.
library() {
  local name=$1 model=$2
  shift 2
  mkdir -p "$work/$name"
  if ! "$mlcc" "$model" --name m -o "$work/$name/libm.a" "$@" 2>"$work/$name/mlcc.err"; then
    fail "$name: mlcc status $?"; head -3 "$work/$name/mlcc.err"; return 1
  fi
  runner "$work/$name" || { fail "$name: the runner does not build"; return 1; }
}
encoder=$root/tests/cli/data/bounded_encoder.onnx
# The encoder compiled once for seq 1..256, by LLVM and by the C backend:
# ONNX Runtime's outputs at 1, 7, 64, 100, 256 (the scores' columns in
# blocks of 64 and a rest) and 70 (a whole query block in the keys-as-rows
# form, the 6 rows after it in the few-rows form), through m_run and
# m_run_ptrs, nothing written past the extent.
for backend in llvm c; do
  if library "encoder-$backend" "$encoder" --dim seq=1..256 --backend "$backend"; then
    for seq in 1 7 64 70 100 256; do
      if "$work/encoder-$backend/run" compare "$seq" "$refs/x$seq.bin" "$refs/y$seq.bin" 1e-5 \
           >"$work/encoder-$backend/$seq.txt" 2>&1; then
        ok "encoder ($backend), seq=1..256, at $seq: $(cat "$work/encoder-$backend/$seq.txt")"
      else
        fail "encoder ($backend) at $seq: $(cat "$work/encoder-$backend/$seq.txt")"
      fi
    done
  fi
done
# Every length from 1 to 20 (the products' whole row tiles, one more tile
# clamped, the smaller tiles of the rows left; the attention's few-rows
# form and its keys-as-rows form): the encoder compiled for 1..256 equals
# the library compiled for each length.
if [[ -x $work/encoder-llvm/run ]]; then
  differs=""
  for seq in {1..20}; do
    dir=$work/encoder-at$seq
    { library "encoder-at$seq" "$encoder" --dim "seq=$seq" &&
      "$dir/run" write "$seq" "$refs/x256.bin" "$dir/y.bin" &&
      "$work/encoder-llvm/run" compare "$seq" "$refs/x256.bin" "$dir/y.bin" 1e-5 \
        >"$dir/cmp.txt" 2>&1; } || differs="$differs $seq"
  done
  if [[ -z $differs ]]; then
    ok "encoder, seq=1..256, at every length 1..20 equals --dim seq=LENGTH (within 1e-5)"
  else
    fail "encoder, seq=1..256, differs from --dim seq=LENGTH at:$differs"
  fi
fi
# The same encoder with its dynamic axis unnamed ([1, ?, 32]): --shape
# gives the input's whole shape; ONNX Runtime's output at 7.
if library unnamed "$root/tests/cli/data/bounded_encoder_unnamed.onnx" --shape x=1x7x32; then
  if "$work/unnamed/run" compare 7 "$refs/x7.bin" "$refs/y7.bin" 1e-5 >"$work/unnamed/7.txt" 2>&1; then
    ok "unnamed axis, --shape x=1x7x32: $(cat "$work/unnamed/7.txt")"
  else
    fail "unnamed axis: $(cat "$work/unnamed/7.txt")"
  fi
fi
# Out of range at run time: MLCC_ERR_DIM_RANGE, the outputs untouched.
for seq in 0 257; do
  if "$work/encoder-llvm/run" range "$seq" 2>"$work/range.err"; then
    ok "encoder at $seq: MLCC_ERR_DIM_RANGE, nothing written"
  else
    fail "encoder at $seq: $(cat "$work/range.err")"
  fi
done
for backend in llvm c; do
  if "$work/encoder-$backend/run" info 0 2>"$work/info.err"; then
    ok "m_info ($backend): the dimension seq, 1..256, and -1 for its axes"
  else
    fail "m_info ($backend): $(cat "$work/info.err")"
  fi
done
grep -qF "int64_t seq; /* M_DIM_SEQ_MIN..M_DIM_SEQ_MAX */" "$work/encoder-llvm/m.h" &&
  grep -qF "#define M_DIM_SEQ_MAX 256" "$work/encoder-llvm/m.h" &&
  grep -qF "const float *x; /* float [1][seq][32] */" "$work/encoder-llvm/m.h" &&
  ok "the header: in->seq, M_DIM_SEQ_MIN/MAX, the extents in comments" ||
  fail "the header lacks the run-time dimension"
# Two dimensions, the second not leading: the input is copied from the
# caller's dense layout into the layout at MAX, the output back.
if library two "$root/tests/cli/data/bounded_two.onnx" --dim batch=1..4 --dim seq=1..8; then
  for bs in "1 1" "3 5" "4 8" "2 8"; do
    set -- $bs
    if "$work/two/run" relu "$2" "$1" 2>"$work/two/err"; then
      ok "two dimensions at batch=$1, seq=$2: dense output, nothing past it"
    else
      fail "two dimensions at batch=$1, seq=$2: $(cat "$work/two/err")"
    fi
  done
fi
# A Concat along seq (the second input at a run-time offset) and a view of
# it, exactly; the mean over seq (a run-time count), within 1e-6 (a target
# may group the sum's terms into vectors differently for a fixed count);
# x divided by seq taken from Shape(x) and cast to float (a number computed
# from seq that a node reads as data: computed when the library runs); an
# LpNormalization over seq (an op whose lowering writes fixed extents: its
# kernel at MAX with the constants that follow seq from its kernels at
# other values) and a MeanVarianceNormalization over it (its 1/N from seq
# when the kernel runs): against libraries compiled for each value.
for spec in concat:0 reduce:1e-6 data:1e-6 lpnorm:1e-6 mvn:1e-5; do
  model=${spec%%:*} tol=${spec#*:}
  if library "$model-bounded" "$root/tests/cli/data/bounded_$model.onnx" --dim seq=1..32; then
    for seq in 1 7 32; do
      if library "$model-$seq" "$root/tests/cli/data/bounded_$model.onnx" --dim "seq=$seq" &&
         "$work/$model-$seq/run" write "$seq" "$refs/x256.bin" "$work/$model-$seq/y.bin" &&
         "$work/$model-bounded/run" compare "$seq" "$refs/x256.bin" "$work/$model-$seq/y.bin" "$tol" \
           >"$work/$model-$seq/cmp.txt" 2>&1; then
        ok "$model, seq=1..32, at $seq equals --dim seq=$seq (within $tol)"
      else
        fail "$model at $seq: $(cat "$work/$model-$seq/cmp.txt" 2>/dev/null)"
      fi
    done
  fi
done
# The attention (positions a prefix of a constant table) against libraries
# compiled for each value.
if library attention-bounded "$attention" --dim seq=1..64; then
  for seq in 1 5 64; do
    if library "attention-$seq" "$attention" --dim "seq=$seq" &&
       "$work/attention-$seq/run" write "$seq" "$refs/x256.bin" "$work/attention-$seq/y.bin" &&
       "$work/attention-bounded/run" compare "$seq" "$refs/x256.bin" "$work/attention-$seq/y.bin" \
         1e-6 >"$work/attention-$seq/cmp.txt" 2>&1; then
      ok "attention, seq=1..64, at $seq equals --dim seq=$seq: $(cat "$work/attention-$seq/cmp.txt")"
    else
      fail "attention at $seq: $(cat "$work/attention-$seq/cmp.txt" 2>/dev/null)"
    fi
  done
fi
# Ops over the bounded axis (tests/cli/make_bounded_ops.py), each model
# compiled once by LLVM and by the C backend and run against ONNX Runtime:
# against_ort NAME MODEL RANGE PREFIX WHAT SEQ... runs $ops/PREFIX{x,y}SEQ.bin.
ops=$root/tests/cli/data/bounded_ops
against_ort() {
  local name=$1 model=$2 range=$3 prefix=$4 what=$5 backend seq dir
  shift 5
  for backend in llvm c; do
    dir=$work/$name-$backend
    library "$name-$backend" "$model" --dim "seq=$range" --backend "$backend" || continue
    for seq in "$@"; do
      if "$dir/run" compare "$seq" "$ops/${prefix}x$seq.bin" "$ops/${prefix}y$seq.bin" 1e-5 \
           >"$dir/$seq.txt" 2>&1; then
        ok "$what ($backend), seq=$range, at $seq: $(cat "$dir/$seq.txt")"
      else
        fail "$what ($backend) at $seq: $(cat "$dir/$seq.txt")"
      fi
    done
  done
}
# CumSum along it, Pad of each mode across it (edge, reflect, wrap,
# constant), Tile of it, Expand to it, GlobalAveragePool and GlobalMaxPool
# over it.
against_ort ops "$ops/ops.onnx" 2..16 "" "CumSum, Pad, Tile, Expand, global pooling" 2 5 16
# Recurrent cells over its time steps: a bidirectional LSTM (Y and Y_h) and
# a GRU over x[seq, 1, 8].
against_ort rnn "$ops/rnn.onnx" 1..16 rnn_ "LSTM and GRU" 1 5 16

if [[ $failures -ne 0 ]]; then
  echo "bounded-dims: $failures case(s) failed"
  exit 1
fi
echo "bounded-dims: all cases passed"
