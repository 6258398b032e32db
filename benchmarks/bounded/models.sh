#!/usr/bin/env bash
# benchmarks/bounded/models.sh - the transformers of issue 55, each compiled
# once with a bounded axis, against ONNX Runtime and against libraries
# compiled for one length, in one run.
#
#   benchmarks/bounded/models.sh [--mlcc PATH] [--work DIR] [--models a,b]
#                                [--iters N] [--rounds R] [--check]
#
# A benchmark, not a test: it prints a table and has no pass/fail threshold.
# The models (benchmarks/bounded/models.py: PyTorch, random weights,
# dynamic axes as the exporter writes them): encoder_ln (LayerNorm written
# out as ReduceMean/Sub/Pow/Sqrt/Div), bert (attention mask from an input),
# gpt_prompt (fused QKV split in three, causal mask by Where), gpt_decode (a
# KV cache: past_key/past_value [1, 4, past, 32], past=0..255).
# For each model and length: the bounded library's outputs against ORT's
# (ok when max|d| <= 1e-4 max|ORT| for every output), its time, the time of
# a library compiled for that length (--dim NAME=L), ORT's (onnxruntime-node,
# one thread), the ratios bounded/fixed and bounded/ORT (medians of R
# rounds, each the mean of N runs), and at MAX the arena and code bytes of
# the bounded library against the fixed one's. --check (the ctest
# models-bounded): the bounded libraries against ORT only, no timing; exit
# status 1 when one does not compile or an output differs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mlcc=$root/build/mlcc
work=/tmp/mlcc-bench-bounded-models
models=encoder_ln,bert,gpt_prompt,gpt_decode
iters=20
rounds=3
mode=measure
while [[ $# -gt 0 ]]; do
  case $1 in
    --mlcc) mlcc=$(realpath "$2"); shift 2 ;;
    --work) work=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --check) mode=check iters=0 rounds=1; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
mlcc_require_packages python3-torch python3-numpy || exit 77
# shellcheck source=../../scripts/lib/ort.sh
source "$root/scripts/lib/ort.sh"
mlcc_require_ort "$root" || exit 77
mkdir -p "$work"
exec /usr/bin/python3 "$here/models_run.py" "$mlcc" "$work" "$models" "$iters" "$rounds" "$mode"
