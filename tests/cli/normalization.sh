#!/usr/bin/env bash
# fuse-normalization: the written-out layer normalizations of
# tests/cli/data/norms (tests/cli/make_norms.py) become one
# LayerNormalization (names ending in _ln) or RMSNormalization (_rms) node
# (`--emit graph`), or stay as written (_unfused), and every model equals
# the model before optimization in float64 (`mlcc check --tolerance 1e-5`;
# the float16 one within 4 float16 units).
#
# usage: tests/cli/normalization.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
failures=0
for model in "$root"/tests/cli/data/norms/*.onnx; do
  name=$(basename "$model" .onnx)
  "$mlcc" "$model" --emit graph -o "$work/$name.graph" 2>"$work/$name.err" ||
    { echo "FAIL $name: does not compile: $(head -n 1 "$work/$name.err")"; failures=$((failures + 1)); continue; }
  ln=$(grep -c '= LayerNormalization' "$work/$name.graph")
  rms=$(grep -c '= RMSNormalization' "$work/$name.graph")
  case $name in
    *_ln) want="1 0" ;;
    *_rms) want="0 1" ;;
    *) want="0 0" ;;
  esac
  if [[ "$ln $rms" == "$want" ]]; then
    echo "ok   $name: $ln LayerNormalization, $rms RMSNormalization"
  else
    echo "FAIL $name: $ln LayerNormalization and $rms RMSNormalization, expected $want"
    failures=$((failures + 1))
  fi
  if "$mlcc" check --tolerance 1e-5 "$model" >"$work/$name.check" 2>&1 &&
     grep -q "all within tolerance" "$work/$name.check"; then
    echo "ok   $name: mlcc check: $(grep 'outputs compared' "$work/$name.check")"
  else
    echo "FAIL $name: mlcc check"; tail -n 4 "$work/$name.check"; failures=$((failures + 1))
  fi
done
echo "$failures failure(s)"
[[ $failures == 0 ]]
