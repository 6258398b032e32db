#!/usr/bin/env bash
# A bounded dimension on a microcontroller: the TransformerEncoder of
# tests/cli/make_encoder.py compiled once for Cortex-M4 with --dim seq=1..16
# (no C compiler involved for the model), linked with tests/cli/
# run_bounded.c into firmware, and run under QEMU (mps2-an386) at two
# sequence lengths against ONNX Runtime's outputs (tests/cli/data/
# bounded_refs, read through semihosting), and at a length out of range
# (MLCC_ERR_DIM_RANGE, the output untouched). The arena is the library's
# static M_ARENA_SIZE, planned for seq=16, in the firmware's .bss.
#
# usage: tests/cross/bounded.sh MLCC WORKDIR
# Exit status 77 (skipped) when the toolchain or QEMU is missing.
set -euo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
bm=$root/examples/cmake/firmware
refs=$root/tests/cli/data/bounded_refs
cc=arm-none-eabi-gcc
flags=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16)
for tool in "$cc" qemu-system-arm; do
  command -v "$tool" >/dev/null || { echo "bounded cortex-m4: $tool is not installed; skipping"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"
"$mlcc" "$root/tests/cli/data/bounded_encoder.onnx" --target cortex-m4 --dim seq=1..16 --name m \
  -o "$work/libm.a"
grep -E '^#define M_(ARENA_SIZE|DIM_SEQ)' "$work/m.h"
cflags=("${flags[@]}" -O2 -std=c99 -Wall -Wextra)
"$cc" "${cflags[@]}" --specs=rdimon.specs -I "$work" -c "$root/tests/cli/run_bounded.c" \
  -o "$work/run.o"
"$cc" "${cflags[@]}" -c "$bm/cortex-m-startup.c" -o "$work/startup.o"
"$cc" "${flags[@]}" --specs=rdimon.specs -T "$bm/arm-mps.ld" "$work/startup.o" "$work/run.o" \
  "$work/libm.a" -lm -Wl,--gc-sections -Wl,--no-warn-rwx-segments -o "$work/run.elf" \
  2>"$work/link.log" || { cat "$work/link.log"; exit 1; }

failures=0
# run ARGS...: the firmware with ARGS as its command line (semihosting),
# from the references' directory (its files are opened relative to it).
run() {
  local args="run" a
  for a in "$@"; do args+=",arg=$a"; done
  (cd "$refs" && timeout 300 qemu-system-arm -M mps2-an386 -nographic -icount shift=0 \
     -semihosting-config "enable=on,target=native,arg=${args}" -kernel "$work/run.elf")
}
for seq in 1 7; do
  if out=$(run compare "$seq" "x$seq.bin" "y$seq.bin" 1e-5 2>&1); then
    echo "ok   cortex-m4, seq=1..16, at $seq: $out"
  else
    echo "FAIL cortex-m4 at $seq: $out"; failures=$((failures + 1))
  fi
done
if out=$(run info 0 2>&1); then
  echo "ok   cortex-m4: m_info names seq, 1..16, -1 for its axes"
else
  echo "FAIL cortex-m4 m_info: $out"; failures=$((failures + 1))
fi
if out=$(run range 17 2>&1); then
  echo "ok   cortex-m4 at 17: MLCC_ERR_DIM_RANGE, nothing written"
else
  echo "FAIL cortex-m4 at 17: $out"; failures=$((failures + 1))
fi
[[ $failures -eq 0 ]] || exit 1
echo "bounded cortex-m4: all cases passed"
