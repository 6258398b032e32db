//===- TargetDesc.cpp - What a target machine offers the kernels -----------===//
#include "compiler/target/TargetDesc.h"

#include <algorithm>
#include <sstream>

namespace mlcc {

const char *macFormName(MacForm f) {
  switch (f) {
  case MacForm::X86Madd16: return "x86 pmaddwd (int16 pairs)";
  case MacForm::X86MaddU8S8: return "x86 pmaddubsw (u8 x s8 pairs, int16 saturating)";
  case MacForm::X86Vnni: return "x86 VNNI vpdpbusd (u8 x s8 quads)";
  case MacForm::ArmLongMac: return "Arm smlal/sadalp (widening)";
  case MacForm::ArmDot: return "Arm sdot/udot (int8 quads)";
  case MacForm::ArmMatMul: return "Arm smmla/ummla (i8mm)";
  case MacForm::ArmSmlad: return "Arm smlad (two int16 products)";
  case MacForm::HeliumMac: return "Helium vmladav/vmlav";
  case MacForm::RvvWidening: return "RVV vwmacc (widening)";
  }
  return "?";
}

bool TargetDesc::has(MacForm f) const {
  return std::find(IntMacs.begin(), IntMacs.end(), f) != IntMacs.end();
}

int TargetDesc::lanes(DType t) const {
  int size = (int)dtypeSize(t);
  return VectorBytes > size && size > 0 ? VectorBytes / size : 1;
}

namespace {

std::string bytesText(int64_t b) {
  if (b == 0)
    return "none";
  if (b % (1024 * 1024) == 0)
    return std::to_string(b / (1024 * 1024)) + " MiB";
  if (b % 1024 == 0)
    return std::to_string(b / 1024) + " KiB";
  return std::to_string(b) + " bytes";
}

} // namespace

std::string TargetDesc::describe() const {
  std::ostringstream s;
  s << "target:            " << Name << "\n"
    << "triple:            " << Triple << "\n"
    << "cpu:               " << (Cpu.empty() ? "(generic)" : Cpu) << "\n"
    << "features:          " << (Features.empty() ? "(the CPU's)" : Features) << "\n";
  if (VectorBytes)
    s << "vectors:           " << VectorBytes * 8 << " bits, " << VectorRegisters
      << " registers; lanes f32 " << lanes(DType::F32) << ", i32 " << lanes(DType::I32)
      << ", i16 " << lanes(DType::I16) << ", i8 " << lanes(DType::I8) << "\n";
  else
    s << "vectors:           none\n";
  s << "general registers: " << GeneralRegisters << "\n"
    << "float unit:        "
    << (!FloatUnit ? "none"
        : DoubleUnit ? Fma ? "yes, with fused multiply-add" : "yes"
        : Fma ? "f32 only, with fused multiply-add" : "f32 only")
    << (FloatUnit && !FloatMinMax ? ", no min/max instruction" : "")
    << (HalfArithmetic ? "; float16 vector arithmetic" : "") << "\n"
    << "caches planned:    L1 " << bytesText(L1Bytes) << ", L2 " << bytesText(L2Bytes)
    << ", lines " << bytesText(CacheLineBytes) << "\n"
    << "kernel stack:      " << bytesText(StackBytes) << "\n"
    << "int multiply-accumulate:";
  if (IntMacs.empty())
    s << " scalar only";
  for (size_t i = 0; i < IntMacs.size(); ++i)
    s << (i ? "," : "") << "\n  " << macFormName(IntMacs[i]);
  s << "\n";
  if (gpu())
    s << "gpu:               warps of " << WarpSize << ", blocks of up to " << ThreadsPerBlock
      << " threads, " << bytesText(SharedBytesPerBlock) << " shared memory a block, "
      << "allocations aligned to " << DeviceAlign << "\n";
  return s.str();
}

TargetDesc asGpu(TargetDesc cpu) {
  cpu.Kind = Processor::Gpu;
  cpu.WarpSize = 32;
  cpu.ThreadsPerBlock = 256;
  cpu.SharedBytesPerBlock = 48 * 1024;
  cpu.DeviceAlign = 256;
  return cpu;
}

} // namespace mlcc
