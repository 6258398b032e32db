#!/usr/bin/env python3
"""mainloop.py - the main micro-kernel loop of an assembly file, for llvm-mca.

  mainloop.py ASM OUT_BLOCK OUT_PEAK ISA

Reads the assembly that `mlcc --emit asm` wrote, finds its innermost loops
(a label whose block ends in a branch back to it, no label in between) and
keeps the one with the most multiply-accumulate instructions: the register
tile's inner loop. Writes that block to OUT_BLOCK and, to OUT_PEAK, twelve
independent copies of its most frequent multiply-accumulate instruction (the
peak that the core issues them at). Prints one line:

  MNEMONIC MAC_INSNS INSNS

(the dominant multiply-accumulate mnemonic with its arrangement, how many
multiply-accumulate instructions and instructions the block has). ISA is
aarch64 or riscv64. Exit status 1 when the file has no such loop.
"""
import re
import sys
from collections import Counter

MACS = {
    "aarch64": re.compile(r"^(fmla|fmadd|mla|sdot|udot|usdot|smlal2?|umlal2?|sadalp|smmla|ummla|usmmla)$"),
    "riscv64": re.compile(r"^((vfmacc|vfmadd|vmacc|vmadd|vwmacc|vwmaccu|vwmaccsu|vwmaccus)\.v[vxf]|fmadd\.s)$"),
}


def arrangement(isa, mnemonic, operands):
    """The mnemonic with the destination's arrangement (aarch64: .4s)."""
    if isa == "aarch64":
        m = re.match(r"[vz]\d+\.(\w+)", operands)
        return f"{mnemonic} .{m.group(1)}" if m else mnemonic
    return mnemonic


def peak_block(isa, mnemonic, operands):
    """Twelve independent copies of one multiply-accumulate instruction."""
    lines = []
    if isa == "aarch64":
        # The destination v0..v11 (SVE: z0..z11), the sources v28..v31 as in
        # the original.
        parts = [p.strip() for p in operands.split(",", 1)]
        dst, rest = parts[0], parts[1] if len(parts) > 1 else ""
        rest = re.sub(r"\b([vz])(\d+)\.", lambda m: f"{m.group(1)}{28 + int(m.group(2)) % 4}.", rest)
        for i in range(12):
            lines.append(f"\t{mnemonic}\t{re.sub(r'^([vz])[0-9]+', lambda m: m.group(1) + str(i), dst)}, {rest}")
    elif mnemonic == "fmadd.s":
        for i in range(12):
            lines.append(f"\tfmadd.s\tf{i}, f28, f29, f{i}")
    else:
        # RVV: vd, vs1/rs1, vs2. Destinations v0.. (widening: groups of two,
        # v0..v23), vector sources v28 and v29 (outside every destination),
        # a scalar source as in the original.
        parts = [p.strip() for p in operands.split(",")]
        src1 = parts[1] if not parts[1].startswith("v") else "v28"
        for i in range(12):
            dst = f"v{2 * i}" if mnemonic.startswith("vw") else f"v{i}"
            lines.append(f"\t{mnemonic}\t{dst}, {src1}, v29")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    path, out_block, out_peak, isa = sys.argv[1:]
    macs = MACS[isa]
    comment = "//" if isa == "aarch64" else "#"
    insn = re.compile(r"^\s+([a-z][\w.]*)\s*(.*?)\s*(" + comment + ".*)?$")
    label = re.compile(r"^([.\w$]+):")
    lines = open(path).read().splitlines()
    best = None
    start = None
    body = []
    for line in lines:
        m = label.match(line)
        if m:
            start, body = m.group(1), []
            continue
        m = insn.match(line)
        if not m or start is None or m.group(1).startswith("."):
            continue
        mnemonic, operands = m.group(1), m.group(2)
        body.append((mnemonic, operands))
        is_branch = mnemonic.startswith("b") and (isa == "aarch64" or mnemonic in
                                                  ("beq", "bne", "blt", "bge", "bltu", "bgeu", "bnez", "beqz", "bgtz", "blez", "bltz", "bgez"))
        if is_branch and operands.split(",")[-1].strip() == start:
            count = sum(1 for mn, _ in body if macs.match(mn))
            if count and (best is None or count > best[0]):
                best = (count, list(body))
            start = None
    if best is None:
        sys.exit(1)
    count, block = best
    kinds = Counter(arrangement(isa, mn, ops) for mn, ops in block if macs.match(mn))
    top = kinds.most_common(1)[0][0]
    sample = next((mn, ops) for mn, ops in block if macs.match(mn) and arrangement(isa, mn, ops) == top)
    with open(out_block, "w") as f:
        for mn, ops in block:
            f.write(f"\t{mn}\t{ops}\n")
    with open(out_peak, "w") as f:
        f.write(peak_block(isa, *sample))
    print(top.replace(" ", ""), count, len(block))


if __name__ == "__main__":
    main()
