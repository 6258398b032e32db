#!/usr/bin/env bash
# tests/mcu/cycles.sh MLCC WORK - the Cortex-M cycle estimate (mlcc cycles,
# mlcc --target cortex-m* -v/--report).
#
# 1. Its error on micro-kernels whose cycle counts follow from the cores'
#    manuals (tests/mcu/microkernels-*.S: MAC loops, load sequences and
#    chains, address stalls, branches taken and not, float MACs, load and
#    store multiples, IT folding, calls): each function's estimate against
#    its "expect" line, printed as a table; fails when one is off by more
#    than 10%.
# 2. A compiled library's estimate: the digits model for cortex-m4 with
#    --report has a cycle_estimate whose calls add up to at most its total,
#    no fewer cycles than instructions, and -v prints it; --cycles on is a
#    usage error on a target without a model, --cycles off prints none.
# Skips (77) without arm-none-eabi-gcc, newlib or qemu-system-arm.
set -euo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
fw=$root/examples/cmake/firmware
for tool in arm-none-eabi-gcc qemu-system-arm; do
  command -v $tool >/dev/null || { echo "cycles: $tool is not installed: skipped"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"
fail=0

printf '%-14s %-14s %10s %10s %8s\n' core function expected estimate error
for core in cortex-m4 cortex-m0plus; do
  src=$root/tests/mcu/microkernels-${core#cortex-}.S
  flags=(-mcpu=$core -mthumb)
  [[ $core == cortex-m4 ]] && flags+=(-mfloat-abi=hard -mfpu=fpv4-sp-d16)
  [[ $core == cortex-m0plus ]] && flags+=(-mfloat-abi=soft)
  arm-none-eabi-gcc "${flags[@]}" -O1 --specs=rdimon.specs "$fw/cortex-m-startup.c" "$src" \
    -T "$fw/arm-mps.ld" -Wl,--no-warn-rwx-segments -o "$work/$core.elf" > "$work/$core.link" 2>&1 ||
    { cat "$work/$core.link"; exit 1; }
  "$mlcc" cycles "$work/$core.elf" --target $core > "$work/$core.txt"
  while read -r _ _ fn expected; do
    estimate=$(awk -v f="$fn" '$1 == f { print $3 }' "$work/$core.txt")
    [[ -n $estimate ]] || { echo "cycles: $core $fn: not in the estimate"; cat "$work/$core.txt"; exit 1; }
    err=$(awk -v e="$estimate" -v x="$expected" 'BEGIN { printf "%+.1f%%", 100 * (e - x) / x }')
    printf '%-14s %-14s %10s %10s %8s\n' $core "$fn" "$expected" "$estimate" "$err"
    if ! awk -v e="$estimate" -v x="$expected" 'BEGIN { d = e - x; if (d < 0) d = -d; exit !(d <= 0.1 * x) }'; then
      echo "cycles: $core $fn: estimate $estimate is more than 10% from the manual's $expected"
      fail=1
    fi
  done < <(grep -E '^@ expect ' "$src")
done

# A compiled library's estimate.
digits=$root/examples/digits
"$mlcc" "$digits/digits.onnx" --target cortex-m4 --quantize int8 \
  --calibrate "image=$digits/calibration.npy" --name net -o "$work/libnet.a" \
  --report "$work/report.json" -v 2> "$work/v.log"
grep -q '^mlcc: cycles  *about .* M on cortex-m4 = .* ms at 120 MHz' "$work/v.log" ||
  { echo "cycles: -v printed no estimate:"; cat "$work/v.log"; exit 1; }
/usr/bin/python3 - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["cycle_estimate"]
calls = sum(k["est_cycles"] for k in r["fused_kernels"])
assert e["core"] == "cortex-m4" and e["clock_mhz"] == 120.0, e
assert 0 < calls <= e["cycles"], (calls, e)
assert all(k["est_cycles"] > 0 for k in r["fused_kernels"]), r["fused_kernels"]
assert e["cycles"] >= e["instructions"] > 0, e
assert e["cycles_with_wait_states"] > e["cycles"], e
print("cycles: digits int8 on cortex-m4: %d instructions, %d cycles (%d in the calls), %.3f ms"
      % (e["instructions"], e["cycles"], calls, e["ms"]))
PY
if "$mlcc" "$digits/digits.onnx" --target aarch64-linux --cycles on -o "$work/x.a" 2> "$work/on.log"; then
  echo "cycles: --cycles on for aarch64-linux was accepted"; exit 1
fi
grep -q "no cycle model for --target aarch64-linux" "$work/on.log" ||
  { echo "cycles: unexpected error:"; cat "$work/on.log"; exit 1; }
"$mlcc" "$digits/digits.onnx" --target cortex-m4 --cycles off -o "$work/libnet.a" -v 2> "$work/off.log"
if grep -q '^mlcc: cycles' "$work/off.log"; then
  echo "cycles: --cycles off printed an estimate"; exit 1
fi
exit $fail
