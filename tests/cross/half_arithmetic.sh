#!/usr/bin/env bash
# Float16 arithmetic on AArch64 (Armv8.2-A FP16): a float16 CNN
# (mobilenet_v2 as a float16 graph, tests/models/make_models.py
# mobilenet_v2_fp16) compiled for `aarch64-linux --cpu cortex-a76`, whose
# convolutions accumulate in float16 (KernelPlan::Tile::HalfAccumulate),
# against the host build (float16 loads, f32 arithmetic):
#   - the plan has float16 tiles and the code float16 multiply-adds
#     (`fmla v.8h`), the same model for plain aarch64-linux (Armv8.0, no
#     FP16) none;
#   - under qemu-aarch64 both libraries' outputs are within 1e-2 max|host|
#     of the host's (float16 accumulation: about 2^-11 relative per add),
#     and the Armv8.0 one equals it within 1e-5.
# Prints the counts and the errors.
#
# usage: tests/cross/half_arithmetic.sh MLCC WORKDIR
# Exit status 77 (skipped) when PyTorch, the cross compiler or QEMU is
# missing.
set -euo pipefail
mlcc=$(realpath "$1")
mkdir -p "$2"
work=$(realpath "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
python=/usr/bin/python3
# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
mlcc_require_packages python3-torch python3-torchvision python3-numpy || exit 77
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v "$tool" >/dev/null ||
    { echo "half_arithmetic: $tool is not installed; skipping"; exit 77; }
done
model=mobilenet_v2_fp16
d="$work/models/$model"
[[ -f "$d/model.onnx" ]] || "$python" "$root/tests/models/make_models.py" "$work/models" "$model"
mkdir -p "$work/host" "$work/a76" "$work/a64"
driver="$root/tools/conformance/driver.c"

"$mlcc" "$d/model.onnx" -o "$work/host/libm.a" --name m
cc -std=c99 -O2 -I "$root/runtime-c" "$driver" "$work/host/libm.a" -lm -o "$work/host/run"
"$work/host/run" "$d/input.bin" -- "$work/host/out.bin"

fail=0
for variant in "a76:--cpu cortex-a76" "a64:"; do
  dir="$work/${variant%%:*}"
  read -r -a extra <<<"${variant#*:}"
  args=("$d/model.onnx" --target aarch64-linux ${extra[@]+"${extra[@]}"})
  "$mlcc" "${args[@]}" -o "$dir/libm.a" --name m
  "$mlcc" "${args[@]}" --emit asm -o "$dir/model.s"
  "$mlcc" "${args[@]}" --emit plan -o "$dir/plan.txt"
  half_fmla=$(grep -c -E 'fmla[[:space:]]+v[0-9]+\.8h' "$dir/model.s" || true)
  half_tiles=$(grep -c float16_accumulate "$dir/plan.txt" || true)
  echo "aarch64-linux ${extra[*]:-(Armv8.0)}: $half_tiles float16 tiles, $half_fmla fmla .8h"
  aarch64-linux-gnu-gcc -std=c99 -O2 -I "$root/runtime-c" "$driver" "$dir/libm.a" -lm \
    -o "$dir/run"
  qemu-aarch64 -L /usr/aarch64-linux-gnu "$dir/run" "$d/input.bin" -- "$dir/out.bin"
  if [[ ${variant%%:*} == a76 ]]; then
    tol=1e-2
    ((half_tiles > 0 && half_fmla > 0)) || { echo "FAIL: no float16 arithmetic for cortex-a76"; fail=1; }
  else
    tol=1e-5
    ((half_tiles == 0 && half_fmla == 0)) || { echo "FAIL: float16 arithmetic on Armv8.0"; fail=1; }
  fi
  "$python" - "$work/host/out.bin" "$dir/out.bin" "$tol" <<'EOF' || fail=1
import sys
import numpy as np
host = np.fromfile(sys.argv[1], np.float32)
got = np.fromfile(sys.argv[2], np.float32)
tol = float(sys.argv[3])
err = float(np.abs(got - host).max() / np.abs(host).max())
ok = got.shape == host.shape and err <= tol
print(f"  max|out - host| / max|host| = {err:.2e} (at most {tol:g}): {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
EOF
done
((fail == 0)) && echo "half_arithmetic: passed"
exit "$fail"
