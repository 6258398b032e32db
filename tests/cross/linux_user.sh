#!/usr/bin/env bash
# The digits example on a cross Linux target: mlcc compiles the model for the
# target, the Debian cross gcc builds examples/digits/main.c against it, and
# qemu-user runs it on the held-out test set (main.c checks the accuracy).
#
# usage: tests/cross/linux_user.sh TARGET MLCC WORKDIR
#   TARGET: aarch64-linux | riscv64-linux | riscv64-linux-v
# Exit status 77 (skipped) when the cross compiler or QEMU is missing.
set -euo pipefail
target=$1
mlcc=$(realpath "$2")
work=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
case $target in
  aarch64-linux) cc=aarch64-linux-gnu-gcc; run=(qemu-aarch64 -L /usr/aarch64-linux-gnu) ;;
  riscv64-linux|riscv64-linux-v)
    cc=riscv64-linux-gnu-gcc; run=(qemu-riscv64 -cpu rv64,v=true -L /usr/riscv64-linux-gnu) ;;
  *) echo "linux_user: unknown target $target"; exit 2 ;;
esac
for tool in "$cc" "${run[0]}"; do
  command -v "$tool" >/dev/null || { echo "linux_user $target: $tool is not installed; skipping"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"
"$mlcc" "$root/examples/digits/digits.onnx" --target "$target" -o "$work/libdigits.a" -v
"$cc" -std=c99 -O2 -Wall -Wextra -Werror -I "$work" "$root/examples/digits/main.c" \
  "$work/libdigits.a" -lm -o "$work/digits"
"${run[@]}" "$work/digits" "$root/examples/digits/test_set.bin"
echo "linux_user $target: digits passed under ${run[0]}"
