#!/usr/bin/env bash
# Bounded dimensions (--dim NAME=MIN..MAX), as far as they reach so far: the
# graph compiled at MAX, each axis that follows the dimension found and shown
# by --emit graph as its extent over the dimension. (Bad ranges and what a
# bounded dimension does not support yet: tests/cli/bad_input.sh.)
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
# from Shape(x), the scores seq x seq, the positions a Range over seq.
graph attention "$attention" 1..256 "dim seq = 1..256" "input %x: f32[1,seq,16]" \
  ": f32[1,2,seq,seq] = Softmax" "output %y: f32[1,seq,16]"
# Two values: two graphs compared (no third to check a line through).
graph two-values "$attention" 3..4 "dim seq = 3..4" "input %x: f32[1,seq,16]" "output %y: f32[1,seq,16]"
# One value: a fixed dimension.
graph one-value "$attention" 5..5 "dim seq = 5..5" "input %x: f32[1,5,16]" "output %y: f32[1,5,16]"
# A PyTorch TransformerEncoder exported with a dynamic axis (tests/cli/
# make_encoder.py): heads split and merged by Reshapes to shapes computed
# from Shape(x), the projections' rows, the scores and the feed-forward
# layers follow seq.
graph encoder "$root/tests/cli/data/bounded_encoder.onnx" 1..256 "input %x: f32[1,seq,32]" \
  ": f32[4,seq,seq] = Softmax" ": f32[seq,4,8] = Reshape" ": f32[1,seq,64] = Relu" \
  "output %y: f32[1,seq,32]"
# --dump-dot writes the same extents.
if "$mlcc" "$attention" --dim seq=1..8 --emit graph -o "$work/dot.txt" \
     --dump-dot "$work/g.dot" 2>/dev/null && grep -qF 'f32[1,2,seq,seq]' "$work/g.dot"; then
  ok "--dump-dot: the extents on its edges"
else
  fail "--dump-dot: no f32[1,2,seq,seq] in the dot graph"
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

if [[ $failures -ne 0 ]]; then
  echo "bounded-dims: $failures case(s) failed"
  exit 1
fi
echo "bounded-dims: all cases passed"
