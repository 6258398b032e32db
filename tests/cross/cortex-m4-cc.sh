#!/usr/bin/env bash
# cortex-m4-cc.sh - the C compiler of the bare-metal conformance runs
# (mlcc-conformance --cc): arm-none-eabi-gcc for Cortex-M4F (hard float),
# newlib with semihosting (rdimon: the driver's fopen/fwrite reach the host's
# files through QEMU). A link (no -c among the arguments) adds the startup
# code and the linker script of the MPS2 boards (examples/cmake/firmware).
# Run the programs with semihost-run.sh.
set -euo pipefail
fw="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../examples/cmake/firmware" && pwd)"
flags=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 --specs=rdimon.specs)
for a in "$@"; do
  if [[ $a == -c ]]; then
    exec arm-none-eabi-gcc "${flags[@]}" "$@"
  fi
done
exec arm-none-eabi-gcc "${flags[@]}" "$@" "$fw/cortex-m-startup.c" -T "$fw/arm-mps.ld" \
  -Wl,--gc-sections -Wl,--no-warn-rwx-segments
