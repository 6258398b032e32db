#!/usr/bin/env bash
# semihost-run.sh PROGRAM.elf ARGS... - runs a Cortex-M4 program built by
# cortex-m4-cc.sh on QEMU's MPS2 AN386 board: its command line is passed by
# semihosting (arguments must not contain commas), its files are the host's,
# and its exit status is QEMU's.
set -euo pipefail
exe="$1"
shift
# newlib's semihosting start-up code takes a command line of 255 bytes at
# most: QEMU runs in the program's folder and paths inside it are relative.
dir="$(cd "$(dirname "$exe")" && pwd)"
cd "$dir"
args="arg=$(basename "$exe")"
for a in "$@"; do
  args+=",arg=${a#"$dir"/}"
done
exec qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
  -semihosting-config "enable=on,target=native,$args" -kernel "$exe"
