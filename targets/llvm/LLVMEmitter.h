//===- LLVMEmitter.h - Kernel IR to LLVM IR -------------------------------===//
//
// Translates a program (kernels, constants, calls, model info) into an LLVM
// module for a given target data layout. Like the C emitter it knows kernel
// IR only. Index arithmetic uses the target's pointer width; 16-bit floats
// are converted with bit operations emitted in the module, so the library
// needs no compiler runtime helpers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"

#include <memory>

namespace llvm {
class LLVMContext;
class Module;
class DataLayout;
class IRBuilderBase;
class Type;
class Value;
} // namespace llvm

namespace mlcc::llvmgen {

/// Instructions of the target that the emitter calls directly (LLVM does
/// not form them from generic IR).
struct EmitFeatures {
  bool Vnni512 = false; ///< vpdpbusd on 512-bit vectors (AVX512-VNNI)
  bool Vnni256 = false; ///< on 256- and 128-bit vectors (AVX512-VNNI+VL, AVX-VNNI)
  bool Smlad = false;   ///< smlad on 32-bit registers (Arm DSP extension)
  bool Helium = false;  ///< vmulh.s32 on 128-bit vectors (Arm MVE, integer)
  /// pmaddwd (int16 pairs multiplied and summed into int32) on 128-, 256-
  /// and 512-bit vectors (SSE2, AVX2, AVX512BW): dot4 where VNNI is missing.
  bool Madd128 = false, Madd256 = false, Madd512 = false;
  bool ArmDot = false;  ///< sdot on 128-bit vectors (AArch64 dotprod)
  bool ArmI8mm = false; ///< usdot on 128-bit vectors (AArch64 i8mm)
  /// smull/smlal (16-bit lanes multiplied into 32-bit ones) on 64-bit
  /// halves of vectors: every AArch64 core with NEON.
  bool ArmMull = false;
  /// fmin/fmax: the minimum and maximum of floats in one instruction,
  /// scalar or vector, a NaN operand giving NaN (llvm.minimum/maximum):
  /// every AArch64 core. The kernel IR's Min and Max against a constant
  /// that is neither NaN nor zero (the bounds of a clamp) take them; a zero
  /// bound keeps the comparison and select (fmax(-0, +0) is +0, the IR's
  /// Max keeps -0).
  bool FloatMinMax = false;
  /// float16 <-> float32 conversions in one instruction, scalar and vector
  /// (x86 F16C, every AArch64 core, Arm cores with VFPv4's half-precision
  /// conversions: Cortex-M4F, M7, M55); elsewhere integer operations
  /// convert.
  bool HalfConversions = false;
  /// x86 without AVX512-FP16: each widened float16 value passes through an
  /// arithmetic fence (no instruction), so that LLVM does not narrow the
  /// comparisons, minima and maxima of widened values back to float16
  /// ones, which this backend then scalarizes (a float16 MaxPool took 3.3
  /// ms instead of 0.1 on a Zen 5 core).
  bool FenceHalfWidening = false;
};

/// Builds the module for `p`. `triple` and `layout` come from the target
/// machine so that struct layouts (the model info) match the target's C ABI.
/// With `kernelSymbols`, the kernels are not in the module: kernel i is a
/// hidden external function of that name (emitKernelModule's), which the
/// run function calls; without, they are internal functions of the module.
/// With `constantSymbols`, so are the constants: constant i is the hidden
/// global of that name, 64-byte aligned, defined in another object.
std::unique_ptr<llvm::Module> emitModule(const kir::Program &p,
                                         llvm::LLVMContext &ctx,
                                         const std::string &triple,
                                         const llvm::DataLayout &layout,
                                         const EmitFeatures &features = {},
                                         const std::vector<std::string> *kernelSymbols = nullptr,
                                         const std::vector<std::string> *constantSymbols = nullptr);

/// A module of kernel `k` alone: its function `symbol` (hidden, weak_odr:
/// two libraries in one program may define the same kernel) and what it
/// needs (its outlined tasks, conversion helpers, libm declarations).
std::unique_ptr<llvm::Module> emitKernelModule(const kir::Kernel &k, const std::string &symbol,
                                               llvm::LLVMContext &ctx,
                                               const std::string &triple,
                                               const llvm::DataLayout &layout,
                                               const EmitFeatures &features = {});

/// Rewrites the vector float-to-integer conversions toward zero that RISC-V
/// selects as vfcvt.rtz.* (fptosi, fptoui, their saturating forms,
/// llvm.trunc) into operations without them: QEMU 7.2 aborts on .rtz
/// vector conversions (targets/llvm/RvvConversions.cpp).
void avoidVectorRtz(llvm::Module &m);

/// fptosi.sat / fptoui.sat of an f32 or f64 vector `x` to the integer
/// vector type `to` (NaN to 0, values past the range to its limits) with
/// vector operations: clamped to the largest floats within the range, then
/// converted (by fptosi/fptoui, or with `byBits` on the float's bits, as
/// avoidVectorRtz does); values at or above 2^bits select the maximum.
llvm::Value *saturatingToInt(llvm::IRBuilderBase &b, llvm::Value *x, llvm::Type *to,
                             bool isSigned, bool byBits);

} // namespace mlcc::llvmgen
