//===- Harness.h - Running compiled code here or under QEMU ---------------===//
//
// The search (--tune) and the check run the code a library ships: in this
// process where this CPU runs it, otherwise as a program linked with a
// generated C harness and run by an emulator. These are the pieces both
// harnesses share.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"
#include "targets/llvm/Targets.h"

#include <string>
#include <vector>

namespace mlcc {

/// Whether code for `t` runs in this process (mlcc check, --tune): the
/// host itself, or an x86-64 level (x86-64 to x86-64-v4) that this CPU
/// has. Anything else runs as a program (QEMU), so that an instruction this
/// CPU lacks cannot crash mlcc.
bool runsInProcess(const llvmgen::TargetSpec &t);

/// How a program for `t` is built and run where this machine does not run
/// its code: the C compiler command that links a harness with the model's
/// object (a cross gcc; for Cortex-M4/M7, arm-none-eabi-gcc with newlib's
/// semihosting and the firmware startup code and linker script) and the
/// command that runs it (qemu-user; qemu-system-arm on the MPS2 boards).
/// `cc` and `run` given (mlcc check --cc/--run) are kept; a Usage error
/// that starts with `who` when there is no way.
void crossCommands(const llvmgen::TargetSpec &t, const std::string &who,
                   std::vector<std::string> &cc, std::vector<std::string> &run);

/// The C declarations of a harness that runs program `p` (mlcc check,
/// --tune): a static arena, the input and output buffers, the pointer
/// tables `ins` and `outs` and their sizes `in_bytes` and `out_bytes`.
std::string harnessBuffers(const kir::Program &p);
/// The inputs a harness runs the model on (--tune's rounds, the cycle
/// estimate): uniform in [-1, 1] for floats, random bytes for 8-bit
/// integers, zeros for the rest (indices, lengths: zero is in range for any
/// of them); the same every time.
std::vector<std::vector<uint8_t>> harnessInputs(const kir::Program &p);
/// C statements that fill `ins` from the file inputs.bin (the program
/// returns 90 or 91 when it cannot).
std::string harnessReadInputs(const kir::Program &p);

} // namespace mlcc
