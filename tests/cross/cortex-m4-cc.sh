#!/usr/bin/env bash
# cortex-m4-cc.sh - the C compiler of the bare-metal conformance runs
# (mlcc-conformance --cc): arm-none-eabi-gcc for Cortex-M4F (hard float),
# newlib with semihosting (rdimon: the driver's fopen/fwrite reach the host's
# files through QEMU). A link (no -c among the arguments) adds the startup
# code and the linker script of the MPS boards (examples/cmake/firmware).
# Run the programs with semihost-run.sh. Called as cortex-m55-cc.sh (a link
# to this file), it compiles for the Cortex-M55 (Helium) and links for the
# MPS3 AN547's 512 KB ITCM (semihost-run.sh --board mps3-an547).
set -euo pipefail
fw="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../examples/cmake/firmware" && pwd)"
flags=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 --specs=rdimon.specs)
memory=()
if [[ $(basename "$0") == cortex-m55-cc.sh ]]; then
  flags=(-mcpu=cortex-m55 -mthumb -mfloat-abi=hard --specs=rdimon.specs)
  # Code in the lower half of the 512 KB ITCM, data and heap in the upper
  # (QEMU's semihosting HEAPINFO, which newlib's malloc follows, places the
  # heap and the stack in the ITCM on this board).
  memory=(-Wl,--defsym=__flash_size=256K -Wl,--defsym=__ram_origin=0x40000
          -Wl,--defsym=__ram_size=256K)
fi
for a in "$@"; do
  if [[ $a == -c ]]; then
    exec arm-none-eabi-gcc "${flags[@]}" "$@"
  fi
done
exec arm-none-eabi-gcc "${flags[@]}" "$@" "$fw/cortex-m-startup.c" -T "$fw/arm-mps.ld" \
  ${memory[@]+"${memory[@]}"} -Wl,--gc-sections -Wl,--no-warn-rwx-segments
