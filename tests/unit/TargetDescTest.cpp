// The target descriptions of the presets and of CPUs users name, as LLVM's
// feature tables give them (independent of the machine the tests run on).
#include "targets/llvm/Targets.h"

#include <catch2/catch.hpp>

using namespace mlcc;

namespace {

TargetDesc describe(const std::string &target, const std::string &cpu = "",
                    const std::string &features = "") {
  return llvmgen::describeTarget(llvmgen::resolveTarget(target, cpu, features));
}

} // namespace

TEST_CASE("every preset has a description", "[target]") {
  for (const llvmgen::TargetSpec &p : llvmgen::targetPresets()) {
    TargetDesc d = llvmgen::describeTarget(llvmgen::resolveTarget(p.Name, "", ""));
    INFO(p.Name);
    CHECK(d.Name == p.Name);
    CHECK(d.GeneralRegisters > 0);
    CHECK(d.describe().find("target:            " + p.Name) == 0);
  }
}

TEST_CASE("x86-64 levels", "[target]") {
  TargetDesc base = describe("x86_64");
  CHECK(base.VectorBytes == 16);
  CHECK(base.VectorRegisters == 16);
  CHECK(base.GeneralRegisters == 16);
  CHECK(!base.Fma);
  CHECK(base.has(MacForm::X86Madd16));
  CHECK(!base.has(MacForm::X86MaddU8S8)); // SSSE3 is not in x86-64 v1
  CHECK(base.L2Bytes == 512 * 1024);

  TargetDesc v3 = describe("x86_64-v3");
  CHECK(v3.VectorBytes == 32);
  CHECK(v3.lanes(DType::F32) == 8);
  CHECK(v3.Fma);
  CHECK(v3.has(MacForm::X86MaddU8S8));
  CHECK(v3.has(MacForm::X86Madd16));
  CHECK(!v3.has(MacForm::X86Vnni));
  // AVX without AVX2: 256-bit vectors, but pmaddwd only on 128 bits.
  TargetDesc snb = describe("x86_64", "sandybridge");
  CHECK(snb.VectorBytes == 32);
  CHECK(!snb.has(MacForm::X86Madd16));

  TargetDesc icx = describe("x86_64", "icelake-server");
  CHECK(icx.VectorBytes == 64);
  CHECK(icx.VectorRegisters == 32);
  CHECK(icx.lanes(DType::I8) == 64);
  CHECK(icx.has(MacForm::X86Vnni));

  // AVX-VNNI on 256-bit vectors (Alder Lake): usable at its width.
  TargetDesc adl = describe("x86_64", "alderlake");
  CHECK(adl.VectorBytes == 32);
  CHECK(adl.has(MacForm::X86Vnni));
  // AVX-512 VNNI without AVX-512 in use (--features=-avx512f): not at 32 bytes
  // unless VL is there too.
  TargetDesc no512 = describe("x86_64", "znver2");
  CHECK(!no512.has(MacForm::X86Vnni));
}

TEST_CASE("AArch64 cores", "[target]") {
  TargetDesc a53 = describe("aarch64-linux", "cortex-a53");
  CHECK(a53.VectorBytes == 16);
  CHECK(a53.VectorRegisters == 32);
  CHECK(a53.has(MacForm::ArmLongMac));
  CHECK(!a53.has(MacForm::ArmDot));
  TargetDesc a76 = describe("aarch64-linux", "cortex-a76");
  CHECK(a76.has(MacForm::ArmDot));
  CHECK(!a76.has(MacForm::ArmMatMul));
  TargetDesc n2 = describe("aarch64-linux", "neoverse-n2");
  CHECK(n2.has(MacForm::ArmDot));
  CHECK(n2.has(MacForm::ArmMatMul));
  // --features refines the CPU.
  CHECK(describe("aarch64-linux", "cortex-a53", "+dotprod").has(MacForm::ArmDot));
}

TEST_CASE("microcontrollers", "[target]") {
  TargetDesc m4 = describe("cortex-m4");
  CHECK(m4.VectorBytes == 0);
  CHECK(m4.VectorRegisters == 0);
  CHECK(m4.GeneralRegisters == 13);
  CHECK(m4.FloatUnit);
  CHECK(m4.has(MacForm::ArmSmlad));
  CHECK(m4.L1Bytes == 0);
  CHECK(m4.L2Bytes == 0);
  CHECK(m4.describe().find("caches planned:    L1 none, L2 none") != std::string::npos);

  TargetDesc m0 = describe("cortex-m0plus");
  CHECK(!m0.FloatUnit);
  CHECK(m0.GeneralRegisters == 8);
  CHECK(m0.IntMacs.empty());

  TargetDesc m55 = describe("cortex-m55");
  CHECK(m55.VectorBytes == 16);
  CHECK(m55.VectorRegisters == 8);
  CHECK(m55.has(MacForm::HeliumMac));
  CHECK(m55.has(MacForm::ArmSmlad));
}

TEST_CASE("RISC-V", "[target]") {
  TargetDesc rv = describe("riscv64-linux");
  CHECK(rv.GeneralRegisters == 31);
  CHECK(rv.FloatUnit);
  CHECK(!rv.has(MacForm::RvvWidening));
  CHECK(describe("riscv64-linux-v").has(MacForm::RvvWidening));
  CHECK(!describe("riscv32").FloatUnit);
}

TEST_CASE("board presets pick the CPU and its int8 form", "[target]") {
  // Raspberry Pi 4: no dot product (widening multiply-adds); Pi 5, Jetson
  // Orin and Graviton2: sdot; Graviton3 and Neoverse N2: i8mm too.
  TargetDesc pi4 = describe("rpi4");
  CHECK(pi4.Cpu == "cortex-a72");
  CHECK(pi4.has(MacForm::ArmLongMac));
  CHECK(!pi4.has(MacForm::ArmDot));
  for (const char *dot : {"rpi5", "jetson-orin", "graviton2"}) {
    INFO(dot);
    CHECK(describe(dot).has(MacForm::ArmDot));
    CHECK(!describe(dot).has(MacForm::ArmMatMul));
  }
  for (const char *mm : {"graviton3", "neoverse-n2"}) {
    INFO(mm);
    CHECK(describe(mm).has(MacForm::ArmMatMul));
  }
  CHECK(describe("jetson-orin").Cpu == "cortex-a78ae");
  CHECK(describe("rpi5").Triple == "aarch64-unknown-linux-gnu");
  // --cpu overrides a board's CPU like any preset's.
  CHECK(!describe("rpi5", "cortex-a72").has(MacForm::ArmDot));
}
