#!/usr/bin/env bash
# semihost-run.sh [--board B] PROGRAM.elf ARGS... - runs a Cortex-M4 program
# built by cortex-m4-cc.sh on QEMU's MPS2 AN386 board (--board mps3-an547:
# a Cortex-M55 one of cortex-m55-cc.sh): its command line is passed by
# semihosting (arguments must not contain commas), its files are the host's,
# and its exit status is QEMU's.
set -euo pipefail
board=mps2-an386
if [[ ${1:-} == --board ]]; then
  board=$2
  shift 2
fi
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
exec qemu-system-arm -M "$board" -nographic -monitor none -serial none \
  -semihosting-config "enable=on,target=native,$args" -kernel "$exe"
