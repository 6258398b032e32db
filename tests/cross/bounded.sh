#!/usr/bin/env bash
# A bounded dimension on a microcontroller: the TransformerEncoder of
# tests/cli/make_encoder.py compiled once for Cortex-M4 with --dim seq=1..16
# (no C compiler involved for the model), linked with tests/cli/
# run_bounded.c into firmware, and run under QEMU (mps2-an386) at two
# sequence lengths against ONNX Runtime's outputs (tests/cli/data/
# bounded_refs, read through semihosting), and at a length out of range
# (MLCC_ERR_DIM_RANGE, the output untouched). The arena is the library's
# static M_ARENA_SIZE, planned for seq=16, in the firmware's .bss. The same
# for a Loop that runs seq iterations and for recurrent cells over seq.
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
cflags=("${flags[@]}" -O2 -std=c99 -Wall -Wextra)
"$cc" "${cflags[@]}" -c "$bm/cortex-m-startup.c" -o "$work/startup.o"
# firmware NAME MODEL: MODEL compiled with --dim seq=1..16 into WORK/NAME
# and linked with run_bounded.c into WORK/NAME/run.elf.
firmware() {
  local dir=$work/$1
  mkdir -p "$dir"
  "$mlcc" "$2" --target cortex-m4 --dim seq=1..16 --name m -o "$dir/libm.a"
  grep -E '^#define M_(ARENA_SIZE|DIM_SEQ)' "$dir/m.h"
  "$cc" "${cflags[@]}" --specs=rdimon.specs -I "$dir" -c "$root/tests/cli/run_bounded.c" \
    -o "$dir/run.o"
  "$cc" "${flags[@]}" --specs=rdimon.specs -T "$bm/arm-mps.ld" "$work/startup.o" "$dir/run.o" \
    "$dir/libm.a" -lm -Wl,--gc-sections -Wl,--no-warn-rwx-segments -o "$dir/run.elf" \
    2>"$dir/link.log" || { cat "$dir/link.log"; exit 1; }
}

failures=0
# run NAME DIR ARGS...: WORK/NAME's firmware with ARGS as its command line
# (semihosting), from DIR (its files are opened relative to it).
run() {
  local elf=$work/$1/run.elf dir=$2 args="run" a
  shift 2
  for a in "$@"; do args+=",arg=$a"; done
  (cd "$dir" && timeout 300 qemu-system-arm -M mps2-an386 -nographic -icount shift=0 \
     -semihosting-config "enable=on,target=native,arg=${args}" -kernel "$elf")
}
# compare NAME WHAT DIR X Y SEQ: the firmware at SEQ on DIR/X, against DIR/Y.
compare() {
  local out
  if out=$(run "$1" "$3" compare "$6" "$4" "$5" 1e-5 2>&1); then
    echo "ok   cortex-m4, $2, seq=1..16, at $6: $out"
  else
    echo "FAIL cortex-m4, $2, at $6: $out"; failures=$((failures + 1))
  fi
}
firmware encoder "$root/tests/cli/data/bounded_encoder.onnx"
for seq in 1 7; do
  compare encoder encoder "$refs" "x$seq.bin" "y$seq.bin" "$seq"
done
if out=$(run encoder "$refs" info 0 2>&1); then
  echo "ok   cortex-m4: m_info names seq, 1..16, -1 for its axes"
else
  echo "FAIL cortex-m4 m_info: $out"; failures=$((failures + 1))
fi
if out=$(run encoder "$refs" range 17 2>&1); then
  echo "ok   cortex-m4 at 17: MLCC_ERR_DIM_RANGE, nothing written"
else
  echo "FAIL cortex-m4 at 17: $out"; failures=$((failures + 1))
fi
# A Loop of Shape(x)[0] iterations (tests/cli/make_control_flow.py) and a
# bidirectional LSTM with a GRU (tests/cli/make_bounded_ops.py) over seq.
flow=$root/tests/cli/data/control_flow ops=$root/tests/cli/data/bounded_ops
firmware loop "$flow/frames_loop.onnx"
firmware rnn "$ops/rnn.onnx"
for seq in 1 5; do
  compare loop "Loop over seq" "$flow" "frames_x$seq.bin" "frames_loop_y$seq.bin" "$seq"
  compare rnn "LSTM and GRU" "$ops" "rnn_x$seq.bin" "rnn_y$seq.bin" "$seq"
done
[[ $failures -eq 0 ]] || exit 1
echo "bounded cortex-m4: all cases passed"
