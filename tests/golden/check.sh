#!/usr/bin/env bash
# Golden IR tests: each model in tests/golden/models is compiled with
# --emit graph (after the graph passes) and --emit kernels (kernel IR,
# storage and arena plan); the text must equal the committed expectation in
# tests/golden/expected (for the x86_64-v3 target, so that the schedules do
# not depend on the machine). After an intended change, regenerate with
#   tests/golden/check.sh build/mlcc --update
# and review the diff.
#
# usage: tests/golden/check.sh MLCC [--update]
set -uo pipefail
mlcc=$(realpath "$1")
update=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/expected"
failures=0
for model in "$here"/models/*.onnx; do  # (*.bin files are external data)
  name=$(basename "$model" .onnx)
  for kind in graph kernels plan; do
    want=$here/expected/$name.$kind.txt
    got=$("$mlcc" "$model" --name "$name" --target x86_64-v3 --emit "$kind" -o - 2>&1)
    if [[ $update == --update ]]; then
      printf '%s\n' "$got" > "$want"
      continue
    fi
    if ! diff -u "$want" <(printf '%s\n' "$got") > /dev/null; then
      echo "FAIL $name ($kind): the output differs from $want:"
      diff -u "$want" <(printf '%s\n' "$got") | head -40
      failures=$((failures + 1))
    else
      echo "ok   $name ($kind)"
    fi
  done
done
[[ $update == --update ]] && { echo "golden: expectations regenerated"; exit 0; }
[[ $failures -eq 0 ]] || { echo "golden: $failures difference(s)"; exit 1; }
echo "golden: all outputs match"
