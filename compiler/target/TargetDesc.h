//===- TargetDesc.h - What a target machine offers the kernels -------------===//
//
// One value per target, CPU or GPU, made in one place from --target, --cpu
// and --features (llvmgen::describeTarget): what runs the code (a CPU's
// cores, or a GPU's threads in blocks), the vector width and registers, the
// caches to plan for, the floating-point unit and the multiply-accumulate
// forms it has; for a GPU its warp, block and shared memory, and the
// alignment of device allocations. `mlcc --print-target` prints it. The
// plans, the schedule and the weight packing read it; no lowering asks LLVM
// about the target.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/support/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlcc {

/// The integer multiply-accumulate forms a target may have, by instruction.
enum class MacForm : uint8_t {
  X86Madd16,    ///< pmaddwd: int16 pairs multiplied, summed to int32 (SSE2, AVX2, AVX-512)
  X86MaddU8S8,  ///< pmaddubsw: u8 x s8 pairs summed to int16, saturating (SSSE3 and later)
  X86Vnni,      ///< vpdpbusd: u8 x s8 quads summed into int32 (AVX512-VNNI, AVX-VNNI)
  ArmLongMac,   ///< smlal / sadalp: widening multiply-accumulates (AArch64 NEON)
  ArmDot,       ///< sdot / udot: int8 quads summed into int32 (dotprod)
  ArmMatMul,    ///< smmla / ummla: 2x8 by 8x2 int8 matrix products (i8mm)
  ArmSmlad,     ///< smlad: two int16 products accumulated (Cortex-M DSP extension)
  HeliumMac,    ///< vmladav / vmlav: vector multiply-accumulate across lanes (MVE)
  RvvWidening,  ///< vwmacc: widening vector multiply-accumulate (RVV 1.0)
};
const char *macFormName(MacForm f);

/// What runs a target's kernels.
enum class Processor : uint8_t {
  Cpu, ///< a CPU: loop nests, vectors, register tiles (kir::scheduleProgram)
  Gpu, ///< a GPU: each kernel as launches of blocks of threads (kir::mapToGpu)
};

struct TargetDesc {
  Processor Kind = Processor::Cpu;
  std::string Name;   ///< the preset, or the triple
  std::string Triple; ///< normalized
  std::string Cpu, Features;
  int VectorBytes = 0;      ///< SIMD register width; 0: no vectors
  int VectorRegisters = 0;  ///< SIMD registers (accumulator tiles fit in them)
  int GeneralRegisters = 0; ///< integer registers free for a kernel's values
  bool FloatUnit = true; ///< floating-point instructions (false: Cortex-M0+, RV32 without F)
  bool Fma = false;      ///< fused multiply-add in hardware
  /// f64 arithmetic in hardware (false: Cortex-M4/M33 single-precision
  /// units, RISC-V without D; their f64 is a library call per operation).
  bool DoubleUnit = true;
  /// f32 minimum and maximum in one instruction each (false: Cortex-M4's
  /// FPv4, where each is a compare, a status move and a conditional move).
  bool FloatMinMax = true;
  /// float16 vector arithmetic (add, multiply, fused multiply-add) on
  /// vectors of lanes(F16): Armv8.2-A FP16 (`fmla v.8h`; Cortex-A55, A76,
  /// A78, Neoverse). The float16 matrix products and convolutions then
  /// accumulate in float16 (KernelPlan::Tile::HalfAccumulate).
  bool HalfArithmetic = false;
  /// A core's private L2 data cache that a contraction's packed B panel
  /// should stay in while the row tiles reuse it; 0: no cache to plan for
  /// (microcontrollers).
  int64_t L2Bytes = 0;
  /// A core's L1 data cache: a contraction whose packed B panel is larger
  /// runs its reduction in blocks whose slice of the panel stays in it;
  /// 0: no blocking.
  int64_t L1Bytes = 0;
  /// The cache line (buffers that are read together are kept this far
  /// apart so they do not share lines); 0: no cache.
  int64_t CacheLineBytes = 0;
  /// The scratch one kernel call may keep on its stack (a panel of packed
  /// activations, a zero-bordered plane): the worker threads' stacks on an
  /// application processor, a share of the RAM on a microcontroller.
  int64_t StackBytes = 0;
  /// The integer multiply-accumulate forms, as the kernels can use them
  /// (X86Vnni and X86Madd16 only on vectors of VectorBytes).
  std::vector<MacForm> IntMacs;
  /// A GPU (Kind Gpu): threads per warp, the most threads of a block, the
  /// shared memory one block may use, and the alignment of device
  /// allocations (the arena, cudaMalloc's); 0 on a CPU.
  int WarpSize = 0;
  int ThreadsPerBlock = 0;
  int64_t SharedBytesPerBlock = 0;
  int64_t DeviceAlign = 0;

  bool gpu() const { return Kind == Processor::Gpu; }
  bool has(MacForm f) const;
  /// Lanes of a vector of `t` (1 without SIMD).
  int lanes(DType t) const;
  /// Several lines, "key: value" (mlcc --print-target).
  std::string describe() const;
};

/// `cpu` with its kernels scheduled as GPU launches: the CUDA target's
/// description (an NVIDIA GPU, sm_75 and newer: warps of 32, blocks of up
/// to 256 threads, 48 KiB of shared memory a block, 256-byte allocations);
/// with a CPU's description (--gpu-schedule-on-host) that CPU runs the
/// launches' loops serially.
TargetDesc asGpu(TargetDesc cpu = {});

} // namespace mlcc
