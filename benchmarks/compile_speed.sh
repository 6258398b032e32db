#!/usr/bin/env bash
# Prints how long mlcc takes to compile real networks for every target
# preset, and the size of what it produces. A benchmark, not a test: it
# prints figures and has no pass/fail threshold.
#
# usage: benchmarks/compile_speed.sh MLCC WORKDIR [MODEL...]
#   MODEL: names known to tests/models/make_models.py (default: resnet18
#   mobilenet_v2); the models are exported with PyTorch once into WORKDIR.
set -euo pipefail
mlcc=$(realpath "$1")
work=$2
shift 2
models=("$@")
((${#models[@]})) || models=(resnet18 mobilenet_v2)
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
for m in "${models[@]}"; do
  [[ -f $work/$m/model.onnx ]] || /usr/bin/python3 "$root/tests/models/make_models.py" "$work" "$m" >/dev/null
done
targets=(host x86_64 aarch64-linux cortex-m4 cortex-m7 cortex-m55 riscv64-linux riscv64-linux-v riscv32 riscv32f)
printf '%-14s %-16s %9s %10s %12s %12s %9s\n' MODEL TARGET SECONDS "PEAK MB" "CODE B" "WEIGHTS B" "ARENA KB"
for m in "${models[@]}"; do
  for t in "${targets[@]}"; do
    out=$work/out-$m-$t
    mkdir -p "$out"
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$out/mem" "$mlcc" "$work/$m/model.onnx" --target "$t" \
      -o "$out/libm.a" --report "$out/report.json"
    end=$(date +%s.%N)
    num() { grep -o "\"$1\": [0-9]*" "$out/report.json" | head -n 1 | grep -o '[0-9]*$'; }
    printf '%-14s %-16s %9.2f %10d %12d %12d %9d\n' "$m" "$t" "$(awk "BEGIN{print $end - $start}")" \
      $(( $(cat "$out/mem") / 1024 )) "$(num code_bytes)" "$(num weight_bytes)" \
      $(( $(num arena_bytes) / 1024 ))
  done
done
