#!/usr/bin/env bash
# Bare-metal proof for one target: mlcc compiles the digits example for the
# target (no C compiler involved for the model), a cross gcc links it into
# firmware with our startup code and linker script, QEMU runs it with
# semihosting, and the exit status says whether every run succeeded and the
# predictions reached the accuracy floor (see digits_firmware.c). The firmware
# sources are those of the CMake example (examples/cmake/firmware), so that
# the example and this test build the same program.
#
# With a fourth argument `int8`, the model is quantized by mlcc (--quantize
# int8, calibrated on examples/digits/calibration.npy, from the training
# split), and the same firmware source is also built for the host with the
# host's int8 library: the predictions of all test images and every byte of
# their outputs (the firmware's FNV-1a hashes of them) must be the same on
# the target as on the host (with int8io, also as from the C backend's
# source of the model, built for the host).
# `int4` quantizes with 4-bit weights (--quantize int8 --weight-bits 4): the
# same comparisons with the host and with the C backend's source, and the
# accuracy within 2 points of the float model's on the host; the weights
# in the library at most 60% of the int8 build's, and the instructions per
# inference are printed beside the int8 build's (a figure, not a bound).
# `int8io` also passes --quantize-io (uint8 input and output): the library
# must then need no float helper at all (the report's undefined symbols are
# checked) and its assembly hold no floating-point instruction.
#
# usage: tests/cross/baremetal.sh TARGET MLCC WORKDIR [int8|int8io|int4]
#   TARGET: cortex-m4 | cortex-m7 | cortex-m55 | cortex-m0plus | riscv32 | riscv32f
# Exit status 77 (skipped) when the target's toolchain or QEMU is missing.
set -euo pipefail
target=$1
mlcc=$(realpath "$2")
work=$3
variant=${4:-float}
root=$(cd "$(dirname "$0")/../.." && pwd)
bm=$root/examples/cmake/firmware
testset=$root/examples/digits/test_set.bin

case $target in
  # The MPS2 boards clock the CPU (and SysTick) at 25 MHz, the MPS3 AN547
  # at 32 MHz; under -icount shift=0 the firmware's SysTick count gives
  # instructions.
  cortex-m4)  cc=arm-none-eabi-gcc; size=arm-none-eabi-size
              flags=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16)
              cflags_extra=(-DMLCC_SYSTICK_HZ=25000000)
              qemu=(qemu-system-arm -M mps2-an386 -nographic -semihosting -icount shift=0) ;;
  cortex-m7)  cc=arm-none-eabi-gcc; size=arm-none-eabi-size
              flags=(-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16)
              cflags_extra=(-DMLCC_SYSTICK_HZ=25000000)
              qemu=(qemu-system-arm -M mps2-an500 -nographic -semihosting -icount shift=0) ;;
  cortex-m55) # Helium: integer and float vector code (mve.fp).
              cc=arm-none-eabi-gcc; size=arm-none-eabi-size
              flags=(-mcpu=cortex-m55 -mthumb -mfloat-abi=hard)
              cflags_extra=(-DMLCC_SYSTICK_HZ=32000000)
              qemu=(qemu-system-arm -M mps3-an547 -nographic -semihosting -icount shift=0)
              ldflags=(-Wl,--defsym=__flash_size=512K -Wl,--defsym=__ram_size=512K) ;;
  cortex-m0plus) # QEMU's micro:bit (nRF51, Cortex-M0: the same ARMv6-M
              # instructions): 256 KB flash, 16 KB RAM; no SysTick, the
              # nRF51's TIMER0 counts instead.
              cc=arm-none-eabi-gcc; size=arm-none-eabi-size
              flags=(-mcpu=cortex-m0plus -mthumb -mfloat-abi=soft)
              cflags_extra=(-DMLCC_NRF51_TIMER)
              qemu=(qemu-system-arm -M microbit -nographic -semihosting -icount shift=0)
              ldflags=(-Wl,--defsym=__flash_size=256K -Wl,--defsym=__ram_size=16K) ;;
  riscv32)    cc=riscv64-unknown-elf-gcc; size=riscv64-unknown-elf-size
              flags=(-march=rv32imac -mabi=ilp32) ;;
  riscv32f)   cc=riscv64-unknown-elf-gcc; size=riscv64-unknown-elf-size
              flags=(-march=rv32imafc -mabi=ilp32f) ;;
  *) echo "baremetal: unknown target $target"; exit 2 ;;
esac
if [[ $cc == riscv64-unknown-elf-gcc ]]; then
  qemu=(qemu-system-riscv32 -M virt -nographic -bios none
        -semihosting-config enable=on,target=native)
  libc=(--specs=picolibc.specs --oslib=semihost --crt0=semihost)
  link=(-Wl,--defsym=__flash=0x80000000 -Wl,--defsym=__flash_size=0x400000
        -Wl,--defsym=__ram=0x80400000 -Wl,--defsym=__ram_size=0x400000)
else
  libc=(--specs=rdimon.specs)
  link=(-T "$bm/arm-mps.ld" ${ldflags[@]+"${ldflags[@]}"})
fi
for tool in "$cc" "$size" "${qemu[0]}"; do
  command -v "$tool" >/dev/null || { echo "baremetal $target: $tool is not installed; skipping"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"

if [[ $variant == int8 || $variant == int8io || $variant == int4 ]]; then
  mlcc_flags+=(--quantize int8 --calibrate "image=$root/examples/digits/calibration.npy")
  [[ $variant == int8io ]] && mlcc_flags+=(--quantize-io)
  [[ $variant == int4 ]] && mlcc_flags+=(--weight-bits 4)
elif [[ $variant != float ]]; then
  echo "baremetal: unknown variant $variant (float, int8, int8io or int4)"; exit 2
fi
"$mlcc" "$root/examples/digits/digits.onnx" --target "$target" -o "$work/libdigits.a" \
  --report "$work/report.json" -v ${mlcc_flags[@]+"${mlcc_flags[@]}"}

cflags=("${flags[@]}" -O2 -std=c99 -Wall -Wextra -Werror ${cflags_extra[@]+"${cflags_extra[@]}"})
objs=("$work/firmware.o" "$work/test_set.o")
"$cc" "${cflags[@]}" "${libc[@]}" -I "$work" -c "$bm/digits_firmware.c" -o "$work/firmware.o"
"$cc" "${flags[@]}" -DTEST_SET_FILE="\"$testset\"" -c "$bm/test_set.S" -o "$work/test_set.o"
if [[ $cc == arm-none-eabi-gcc ]]; then
  "$cc" "${cflags[@]}" -c "$bm/cortex-m-startup.c" -o "$work/startup.o"
  objs=("$work/startup.o" "${objs[@]}")
fi
"$cc" "${flags[@]}" "${libc[@]}" "${link[@]}" "${objs[@]}" "$work/libdigits.a" -lm \
  -Wl,--gc-sections -Wl,--no-warn-rwx-segments -o "$work/digits.elf" 2> "$work/link.log" \
  || { cat "$work/link.log"; exit 1; }

echo "$size (firmware; the test set is in flash):"
"$size" "$work/digits.elf"
echo "$size (the model library alone):"
"$size" -t "$work/libdigits.a" | tail -n 1

set +e
timeout 300 "${qemu[@]}" -kernel "$work/digits.elf" 2>&1 | tee "$work/run.log"
status=${PIPESTATUS[0]}
set -e
if [[ $status -ne 0 ]]; then
  echo "baremetal $target: firmware exited with status $status"
  exit 1
fi
grep -q " correct " "$work/run.log" || { echo "baremetal $target: no result printed"; exit 1; }
ipi=$(sed -n 's/^instructions per inference.*: \([0-9]*\)$/\1/p' "$work/run.log")
[[ -n $ipi ]] && echo "baremetal $target: $ipi instructions per inference (a timer under QEMU -icount shift=0)"
if [[ $variant == int8io ]]; then
  floats=$(python3 -c 'import json, sys
syms = json.load(open(sys.argv[1]))["undefined_symbols"]
print(" ".join(s for s in syms if s.startswith(("__aeabi_f", "__aeabi_d", "__aeabi_i2f", "__aeabi_ui2f",
      "__aeabi_l2f", "__aeabi_ul2f", "__aeabi_i2d", "__aeabi_ui2d", "__addsf", "__mulsf", "__divsf",
      "__fix", "__float", "__extendsfdf", "__truncdfsf")) or s.rstrip("f") in ("fmax", "fmin", "rint",
      "round", "floor", "ceil", "exp", "log", "sqrt", "tanh", "erf", "pow")))' "$work/report.json")
  if [[ -n $floats ]]; then
    echo "baremetal $target: the fully quantized library needs float helpers: $floats"
    exit 1
  fi
  # With --quantize-io the model runs in integers alone: on a core with a
  # floating-point unit, its code holds no floating-point instruction (an
  # .f16/.f32/.f64 form, or an operand of s/d registers). On Helium cores
  # the s/d registers are also the lanes and halves of the integer vector
  # registers (vmov r0, s2 reads lane 2 of q0; vpush {d8-d11} saves q4-q5),
  # so there only the floating-point forms count, less the register copies
  # `vmov.f32 sN, sM` (LLVM's way to move a 32-bit lane between integer
  # vectors: a bit copy, no arithmetic).
  "$mlcc" "$root/examples/digits/digits.onnx" --target "$target" --emit asm -o "$work/digits.s" \
    ${mlcc_flags[@]+"${mlcc_flags[@]}"}
  fp_pattern='\.f(16|32|64)\b|[[:space:],{][sd][0-9]+\b'
  [[ $target == cortex-m55 ]] && fp_pattern='\.f(16|32|64)\b'
  fp=$(grep -E '^[[:space:]]+v[a-z0-9.]+[[:space:]]' "$work/digits.s" |
       grep -vE '^[[:space:]]+vmov\.f32[[:space:]]+s[0-9]+, s[0-9]+$' |
       grep -E "$fp_pattern" | head -3 || true)
  if [[ -n $fp ]]; then
    echo "baremetal $target: floating-point instructions in the fully quantized model:"
    echo "$fp"
    exit 1
  fi
  echo "baremetal $target: no floating-point instruction in the model's code"
  echo "baremetal $target: undefined symbols: $(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["undefined_symbols"]))' "$work/report.json")"
fi
if [[ $variant == int8 || $variant == int8io || $variant == int4 ]]; then
  # The same firmware source and model, built for the host.
  mkdir -p "$work/host"
  "$mlcc" "$root/examples/digits/digits.onnx" -o "$work/host/libdigits.a" ${mlcc_flags[@]+"${mlcc_flags[@]}"}
  cc -std=c99 -O2 -I "$work/host" -DTEST_SET_FILE="\"$testset\"" "$bm/digits_firmware.c" \
    "$bm/test_set.S" "$work/host/libdigits.a" -lm -o "$work/host/digits"
  "$work/host/digits" > "$work/host/run.log" || true
  # The predictions and every output byte (the little-endian targets hold
  # the dequantized floats, or the uint8 outputs, as the host does).
  want=$(grep -E '^(predictions|outputs)' "$work/host/run.log" || true)
  got=$(grep -E '^(predictions|outputs)' "$work/run.log" | tr -d '\r' || true)
  if [[ -z $want || "$want" != "$got" ]]; then
    echo "baremetal $target: outputs differ from the host's: '$got' vs '$want'"
    exit 1
  fi
  echo "baremetal $target: the same predictions and outputs as on the host ($(echo $want))"
  if [[ $variant == int8io || $variant == int4 ]]; then
    # ... and the C backend's source of the same model (its integer helpers,
    # mlcc_mulhi among them, against the LLVM lowering).
    mkdir -p "$work/host-c"
    "$mlcc" "$root/examples/digits/digits.onnx" -o "$work/host-c/digits.c" ${mlcc_flags[@]+"${mlcc_flags[@]}"}
    cc -std=c99 -O2 -I "$work/host-c" -I "$root/runtime-c" -DTEST_SET_FILE="\"$testset\"" \
      "$bm/digits_firmware.c" "$bm/test_set.S" "$work/host-c/digits.c" -lm -o "$work/host-c/digits" \
      2> "$work/host-c/cc.log" || { cat "$work/host-c/cc.log"; exit 1; }
    "$work/host-c/digits" > "$work/host-c/run.log" || true
    c=$(grep -E '^(predictions|outputs)' "$work/host-c/run.log" || true)
    if [[ "$c" != "$want" ]]; then
      echo "baremetal $target: the C backend's outputs differ: '$c' vs '$want'"
      exit 1
    fi
    echo "baremetal $target: the C backend gives the same outputs"
  fi
fi
if [[ $variant == int4 ]]; then
  # Accuracy against the float model's (host), weights and instructions
  # against the int8 build's (this target).
  mkdir -p "$work/float" "$work/int8"
  "$mlcc" "$root/examples/digits/digits.onnx" -o "$work/float/libdigits.a"
  cc -std=c99 -O2 -I "$work/float" -DTEST_SET_FILE="\"$testset\"" "$bm/digits_firmware.c" \
    "$bm/test_set.S" "$work/float/libdigits.a" -lm -o "$work/float/digits"
  "$work/float/digits" > "$work/float/run.log" || true
  correct() { sed -n 's/.*: \([0-9]*\) of [0-9]* correct.*/\1/p' "$1" | tr -d '\r'; }
  f=$(correct "$work/float/run.log"); q=$(correct "$work/run.log")
  echo "baremetal $target: 4-bit weights $q correct, float $f correct (of 450)"
  if [[ -z $f || -z $q ]] || (( q * 100 < f * 100 - 2 * 450 )); then
    echo "baremetal $target: 4-bit accuracy more than 2 points below float"; exit 1
  fi
  weights() { sed -n 's/^mlcc: weights *\([0-9]*\) bytes.*/\1/p' "$1"; }
  "$mlcc" "$root/examples/digits/digits.onnx" --target "$target" -o "$work/int8/libdigits.a" -v \
    --quantize int8 --calibrate "image=$root/examples/digits/calibration.npy" 2> "$work/int8/mlcc.log"
  "$mlcc" "$root/examples/digits/digits.onnx" --target "$target" -o "$work/int4.a" -v \
    ${mlcc_flags[@]+"${mlcc_flags[@]}"} 2> "$work/int4.log"
  w8=$(weights "$work/int8/mlcc.log"); w4=$(weights "$work/int4.log")
  echo "baremetal $target: weights $w4 bytes with 4-bit weights, $w8 with int8"
  if [[ -z $w8 || -z $w4 ]] || (( w4 * 10 > w8 * 6 )); then
    echo "baremetal $target: 4-bit weights take more than 60% of the int8 build's"; exit 1
  fi
  if [[ -n $ipi ]]; then
    "$cc" "${cflags[@]}" "${libc[@]}" -I "$work/int8" -c "$bm/digits_firmware.c" -o "$work/int8/firmware.o"
    objs8=()
    for o in "${objs[@]}"; do
      [[ $o == "$work/firmware.o" ]] && o=$work/int8/firmware.o
      objs8+=("$o")
    done
    "$cc" "${flags[@]}" "${libc[@]}" "${link[@]}" "${objs8[@]}" \
      "$work/int8/libdigits.a" -lm -Wl,--gc-sections -Wl,--no-warn-rwx-segments \
      -o "$work/int8/digits.elf" 2> "$work/link.log" || { cat "$work/link.log"; exit 1; }
    timeout 300 "${qemu[@]}" -kernel "$work/int8/digits.elf" > "$work/int8/run.log" 2>&1 || true
    ipi8=$(sed -n 's/^instructions per inference.*: \([0-9]*\)$/\1/p' "$work/int8/run.log" | tr -d '\r')
    [[ -n $ipi8 ]] && echo "baremetal $target: $ipi instructions per inference with 4-bit weights, $ipi8 with int8 ($(awk -v a="$ipi" -v b="$ipi8" 'BEGIN {printf "%.3f", a / b}')x)"
  fi
fi
echo "baremetal $target: digits firmware passed under ${qemu[0]}"
