//===- McuCycles.cpp - Cycle estimates for Cortex-M cores from a QEMU trace ===//
//
// The timings (zero wait states) are the cores' published instruction
// tables; where a table gives a range the choice is written next to it.
//
//  Cortex-M4 (Technical Reference Manual, "Processor instruction set
//  summary" and its load/store notes): data processing, MUL/MLA/MLS, the
//  long multiplies and the DSP multiplies 1; SDIV/UDIV 2-12 (7 taken);
//  LDR 2, 1 when it follows a single LDR whose result it does not need for
//  its address (pipelined); STR 1 (write buffer); a load or store whose
//  address a data-processing instruction just wrote 1 more; LDRD/STRD 3;
//  LDM/STM/PUSH/POP 1+N (N registers), with PC 1+N+P; a taken branch 1+P,
//  not taken 1; P, the pipeline refill, 1 for a branch whose target the
//  decoder computes early (immediate) and 2 for one it cannot (BX, POP PC,
//  register writes to PC), 1 more when the target is a 32-bit instruction
//  that is not word-aligned (two fetches); TBB/TBH 6; IT 0 after a 16-bit
//  instruction it folds onto, else 1. FPv4: VADD/VMUL/VMOV/VCVT/VCMP 1,
//  VMLA/VFMA and their negations 3, VDIV/VSQRT 14, VLDR 2 (pipelined like
//  LDR), VSTR 2, VLDM/VSTM/VPUSH/VPOP 1+N words.
//  Cortex-M0+ (its TRM's table): data processing and MUL (the single-cycle
//  multiplier) 1; loads and stores 2; LDM/STM/PUSH 1+N; POP with PC 3+N;
//  B/Bcc taken 2, not taken 1; BL 3; BX/BLX 2.
//  Cortex-M33: the M4's table, and two neighbouring independent 16-bit
//  data-processing instructions issue together (its limited dual issue).
//  Cortex-M7: one or two instructions a cycle: a pair issues together
//  unless both access memory, both multiply, both are floating point, the
//  second reads what the first writes, or the first is a branch; a load's
//  result is one cycle late for the next instruction; taken immediate
//  branches are predicted (no refill), indirect ones refill 2 cycles.
//  Cortex-M55: the M33's scalar timings; a Helium instruction takes two
//  beats (2 cycles) and overlaps one cycle with a neighbour of the other
//  kind (memory against arithmetic); LE loops back without a refill (the
//  loop branch cache).
//
// The M4 and M0+ models follow the published tables and are tested on
// micro-kernels (tests/mcu/cycles.sh); the M7, M33 and M55 publish no full
// table, so their models are coarser (the report says so).
//
//===----------------------------------------------------------------------===//

#include "targets/llvm/McuCycles.h"

#include "compiler/support/Error.h"

#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstrAnalysis.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <unordered_map>

namespace mlcc::llvmgen {

namespace {

enum class CoreKind { M0Plus, M4, M33, M7, M55 };

struct CoreEntry {
  CoreKind Kind;
  McuCore Info;
  const char *Triple; ///< what the disassembler decodes
  const char *Cpu;
};

const std::vector<CoreEntry> &cores() {
  static const std::vector<CoreEntry> all = {
      {CoreKind::M0Plus,
       {"cortex-m0plus", "STM32G071", 64, 2, "mps2-an386",
        "the Cortex-M0+ manual's table (tested on micro-kernels)"},
       "thumbv6m-none-eabi", "cortex-m0plus"},
      {CoreKind::M4,
       {"cortex-m4", "STM32L4R5, MLPerf Tiny's reference", 120, 5, "mps2-an386",
        "the Cortex-M4 manual's table (tested on micro-kernels)"},
       "thumbv7em-none-eabihf", "cortex-m4"},
      {CoreKind::M33,
       {"cortex-m33", "STM32U585", 160, 4, "mps3-an547",
        "the Cortex-M4 table with the M33's pairs of 16-bit instructions (coarser: the M33 "
        "manual has no full table)"},
       "thumbv8m.main-none-eabihf", "cortex-m33"},
      {CoreKind::M7,
       {"cortex-m7", "STM32F767", 216, 7, "mps2-an500",
        "dual issue modelled by pairing rules (coarser: the M7 manual has no table)"},
       "thumbv7em-none-eabihf", "cortex-m7"},
      {CoreKind::M55,
       {"cortex-m55", "Alif Ensemble E7, high-efficiency core", 160, 0, "mps3-an547",
        "Helium beats and overlap modelled coarsely (the M55 manual has no full table)"},
       "thumbv8.1m.main-none-eabihf", "cortex-m55"},
  };
  return all;
}

const CoreEntry *coreEntry(const std::string &name) {
  for (const CoreEntry &c : cores())
    if (c.Info.Name == name)
      return &c;
  return nullptr;
}

enum class Kind : uint8_t {
  Alu, Mul, Div, Load, LoadPair, LoadMulti, Store, StorePair, StoreMulti, Branch, Tbb, It,
  FpAlu, FpMac, FpDiv, FpLoad, FpStore, FpMulti, VecMem, VecAlu, VecMac, LoopEnd, Unknown
};

bool isMemory(Kind k) {
  switch (k) {
  case Kind::Load: case Kind::LoadPair: case Kind::LoadMulti: case Kind::Store:
  case Kind::StorePair: case Kind::StoreMulti: case Kind::FpLoad: case Kind::FpStore:
  case Kind::FpMulti: case Kind::VecMem: case Kind::Tbb:
    return true;
  default:
    return false;
  }
}
bool isFloat(Kind k) {
  return k == Kind::FpAlu || k == Kind::FpMac || k == Kind::FpDiv;
}
bool isDataProcessing(Kind k) { return k == Kind::Alu || k == Kind::Mul || k == Kind::Div; }

/// One decoded instruction, as the timing rules see it.
struct Insn {
  Kind K = Kind::Unknown;
  uint8_t Size = 2;
  uint8_t Words = 0;        ///< registers (words) a multiple moves
  bool WritesPc = false;    ///< a load multiple or data processing that branches
  bool Direct = false;      ///< a branch whose target is an immediate
  uint32_t Defs = 0, Uses = 0, AddrUses = 0; ///< r0-r15 as bits
  uint32_t DataDefs = 0; ///< Defs less a written-back base (a load's loaded registers)
};

/// The disassembler of one core and the firmware's code bytes.
class Decoder {
public:
  Decoder(const CoreEntry &core, const std::string &elf) {
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeAllTargetInfos();
      llvm::InitializeAllTargetMCs();
      llvm::InitializeAllDisassemblers();
    });
    std::string error;
    const std::string triple = llvm::Triple::normalize(core.Triple);
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target)
      fail(ErrorKind::Internal) << "internal error: no LLVM target for " << triple << ": "
                                << error;
    Mri.reset(target->createMCRegInfo(triple));
    llvm::MCTargetOptions mo;
    Mai.reset(target->createMCAsmInfo(*Mri, triple, mo));
    Sti.reset(target->createMCSubtargetInfo(triple, core.Cpu, ""));
    Mii.reset(target->createMCInstrInfo());
    Mia.reset(target->createMCInstrAnalysis(Mii.get()));
    Ctx = std::make_unique<llvm::MCContext>(llvm::Triple(triple), Mai.get(), Mri.get(),
                                            Sti.get());
    Dis.reset(target->createMCDisassembler(*Sti, *Ctx));
    if (!Mri || !Mai || !Sti || !Mii || !Dis)
      fail(ErrorKind::Internal) << "internal error: no disassembler for " << triple;
    for (unsigned r = 1; r < Mri->getNumRegs(); ++r) {
      std::string n = Mri->getName(r);
      int index = n == "SP" ? 13 : n == "LR" ? 14 : n == "PC" ? 15 : -1;
      if (n.size() >= 2 && n[0] == 'R' && std::isdigit((unsigned char)n[1]))
        index = std::atoi(n.c_str() + 1);
      if (index >= 0 && index < 16)
        CoreReg[r] = index;
      if (!n.empty() && n[0] == 'D')
        DoubleReg.insert(r);
    }

    Buffer = llvm::MemoryBuffer::getMemBufferCopy(elf, "firmware");
    auto obj = llvm::object::ObjectFile::createObjectFile(Buffer->getMemBufferRef());
    if (!obj)
      fail(ErrorKind::Usage) << "cycle estimate: the firmware is not an object file: "
                             << llvm::toString(obj.takeError());
    Obj = std::move(*obj);
    for (const llvm::object::SectionRef &s : Obj->sections()) {
      if (!s.isText() && !s.isData())
        continue;
      auto contents = s.getContents();
      if (!contents) {
        llvm::consumeError(contents.takeError());
        continue;
      }
      Sections.push_back({s.getAddress(), contents->str()});
    }
    for (const llvm::object::SymbolRef &sym : Obj->symbols()) {
      auto type = sym.getType();
      auto name = sym.getName();
      auto addr = sym.getAddress();
      if (!type || !name || !addr) {
        if (!type) llvm::consumeError(type.takeError());
        if (!name) llvm::consumeError(name.takeError());
        if (!addr) llvm::consumeError(addr.takeError());
        continue;
      }
      if (*type != llvm::object::SymbolRef::ST_Function)
        continue;
      uint64_t size = llvm::object::ELFSymbolRef(sym).getSize();
      Functions.push_back({*addr & ~1ull, (*addr & ~1ull) + size, name->str()});
    }
    std::sort(Functions.begin(), Functions.end(),
              [](const Function &a, const Function &b) { return a.Begin < b.Begin; });
    // A symbol without a size (hand-written assembly) reaches the next.
    for (size_t i = 0; i < Functions.size(); ++i)
      if (Functions[i].End == Functions[i].Begin)
        Functions[i].End = i + 1 < Functions.size() ? Functions[i + 1].Begin : UINT64_MAX;
  }

  struct Function {
    uint64_t Begin, End;
    std::string Name;
  };

  /// The function that holds `address`, or -1.
  int64_t functionAt(uint64_t address) const {
    auto it = std::upper_bound(Functions.begin(), Functions.end(), address,
                               [](uint64_t a, const Function &f) { return a < f.Begin; });
    if (it == Functions.begin())
      return -1;
    --it;
    return address < it->End ? it - Functions.begin() : -1;
  }
  /// The address of function `name`, or -1.
  int64_t addressOf(const std::string &name) const {
    for (const Function &f : Functions)
      if (f.Name == name)
        return (int64_t)f.Begin;
    return -1;
  }
  const std::vector<Function> &functions() const { return Functions; }

  /// The instruction at `address` (decoded once).
  const Insn &at(uint64_t address) {
    auto it = Cache.find(address);
    if (it != Cache.end())
      return it->second;
    return Cache[address] = decode(address);
  }

private:
  Insn decode(uint64_t address) {
    Insn in;
    const std::string *bytes = nullptr;
    uint64_t offset = 0;
    for (const auto &s : Sections)
      if (address >= s.first && address < s.first + s.second.size()) {
        bytes = &s.second;
        offset = address - s.first;
      }
    if (!bytes)
      return in;
    llvm::MCInst inst;
    uint64_t size = 0;
    llvm::ArrayRef<uint8_t> data((const uint8_t *)bytes->data() + offset,
                                 std::min<size_t>(4, bytes->size() - offset));
    if (Dis->getInstruction(inst, size, data, address, llvm::nulls()) !=
        llvm::MCDisassembler::Success) {
      in.Size = (uint8_t)(size ? size : 2);
      return in;
    }
    in.Size = (uint8_t)size;
    const llvm::MCInstrDesc &d = Mii->get(inst.getOpcode());
    llvm::StringRef name = Mii->getName(inst.getOpcode());
    auto core = [&](unsigned reg) -> int {
      auto it = CoreReg.find(reg);
      return it == CoreReg.end() ? -1 : it->second;
    };
    // Registers: the first NumDefs operands are written, the rest read.
    std::vector<int> useRegs;
    for (unsigned i = 0; i < inst.getNumOperands(); ++i) {
      const llvm::MCOperand &op = inst.getOperand(i);
      if (!op.isReg() || op.getReg() == 0)
        continue;
      int r = core(op.getReg());
      if (i < d.getNumDefs()) {
        if (r >= 0)
          in.Defs |= 1u << r;
      } else {
        useRegs.push_back(r);
        if (r >= 0)
          in.Uses |= 1u << r;
      }
    }
    for (llvm::MCPhysReg r : d.implicit_defs())
      if (core(r) >= 0)
        in.Defs |= 1u << core(r);
    // A def tied to a use is a written-back base.
    in.DataDefs = in.Defs;
    for (unsigned i = d.getNumDefs(); i < inst.getNumOperands() && i < d.getNumOperands(); ++i) {
      int tied = d.getOperandConstraint(i, llvm::MCOI::TIED_TO);
      if (tied >= 0 && (unsigned)tied < inst.getNumOperands() &&
          inst.getOperand((unsigned)tied).isReg()) {
        int r = core(inst.getOperand((unsigned)tied).getReg());
        if (r >= 0)
          in.DataDefs &= ~(1u << r);
      }
    }
    // A multiple's register list: the operands past the fixed ones (the
    // list's first is the last fixed operand).
    auto words = [&] {
      unsigned first = d.getNumOperands() ? d.getNumOperands() - 1 : 0;
      unsigned n = 0;
      for (unsigned i = first; i < inst.getNumOperands(); ++i)
        if (inst.getOperand(i).isReg() && inst.getOperand(i).getReg())
          n += DoubleReg.count(inst.getOperand(i).getReg()) ? 2 : 1;
      for (unsigned i = first; i < inst.getNumOperands(); ++i)
        if (inst.getOperand(i).isReg() && core(inst.getOperand(i).getReg()) == 15)
          in.WritesPc = true;
      return (uint8_t)std::max(1u, n);
    };
    auto has = [&](const char *s) { return name.contains(s); };
    const bool mve = name.starts_with("MVE_");
    if (name.starts_with("t2IT")) {
      in.K = Kind::It;
    } else if (name == "t2TBB" || name == "t2TBH") {
      in.K = Kind::Tbb;
    } else if (name.starts_with("t2LE") || name.starts_with("t2WLS") ||
               name.starts_with("t2DLS") || name.starts_with("MVE_LETP") ||
               name.starts_with("MVE_DLSTP") || name.starts_with("MVE_WLSTP")) {
      in.K = Kind::LoopEnd;
    } else if (d.mayLoad() && (has("LDM") || has("POP"))) {
      in.K = name.starts_with("V") ? Kind::FpMulti : Kind::LoadMulti;
      in.Words = words();
    } else if (d.mayStore() && (has("STM") || has("PUSH"))) {
      in.K = name.starts_with("V") ? Kind::FpMulti : Kind::StoreMulti;
      in.Words = words();
    } else if (d.isBranch() || d.isCall() || d.isReturn() || d.isIndirectBranch()) {
      in.K = Kind::Branch;
      uint64_t target = 0;
      in.Direct = !d.isIndirectBranch() && Mia &&
                  Mia->evaluateBranch(inst, address, size, target);
    } else if (mve) {
      in.K = d.mayLoad() || d.mayStore() ? Kind::VecMem
             : (has("VML") || has("VMUL") || has("VFMA") || has("VFMS") || has("VQDMLA") ||
                has("VQRDML") || has("VQDMUL") || has("VQRDMUL") || has("VMLA"))
                 ? Kind::VecMac
                 : Kind::VecAlu;
    } else if (d.mayLoad()) {
      in.K = has("LDRD") ? Kind::LoadPair : name.starts_with("V") ? Kind::FpLoad : Kind::Load;
    } else if (d.mayStore()) {
      in.K = has("STRD") ? Kind::StorePair : name.starts_with("V") ? Kind::FpStore : Kind::Store;
    } else if (has("SDIV") || has("UDIV")) {
      in.K = Kind::Div;
    } else if (name.starts_with("V")) {
      in.K = (has("VDIV") || has("VSQRT")) ? Kind::FpDiv
             : (has("VMLA") || has("VMLS") || has("VNMLA") || has("VNMLS") || has("VFMA") ||
                has("VFMS") || has("VFNMA") || has("VFNMS"))
                 ? Kind::FpMac
                 : Kind::FpAlu;
    } else if (has("MUL") || has("MLA") || has("MLS") || has("MUAD") || has("MUSD") ||
               has("UMAAL")) {
      in.K = Kind::Mul;
    } else {
      in.K = Kind::Alu;
      in.WritesPc = (in.Defs >> 15) & 1;
    }
    // The address registers of a memory access: what it reads, less the
    // data a store writes (its first one or two register operands).
    if (isMemory(in.K)) {
      size_t data = (in.K == Kind::Store || in.K == Kind::FpStore || in.K == Kind::VecMem) &&
                            d.mayStore()
                        ? 1
                    : in.K == Kind::StorePair ? 2
                                              : 0;
      for (size_t i = data; i < useRegs.size(); ++i)
        if (useRegs[i] >= 0)
          in.AddrUses |= 1u << useRegs[i];
    }
    return in;
  }

  std::unique_ptr<llvm::MCRegisterInfo> Mri;
  std::unique_ptr<llvm::MCAsmInfo> Mai;
  std::unique_ptr<llvm::MCSubtargetInfo> Sti;
  std::unique_ptr<llvm::MCInstrInfo> Mii;
  std::unique_ptr<llvm::MCInstrAnalysis> Mia;
  std::unique_ptr<llvm::MCContext> Ctx;
  std::unique_ptr<llvm::MCDisassembler> Dis;
  std::unordered_map<unsigned, int> CoreReg;
  std::set<unsigned> DoubleReg;
  std::unique_ptr<llvm::MemoryBuffer> Buffer;
  std::unique_ptr<llvm::object::ObjectFile> Obj;
  std::vector<std::pair<uint64_t, std::string>> Sections;
  std::vector<Function> Functions;
  std::unordered_map<uint64_t, Insn> Cache;
};

/// The cycles of one instruction after `prev` (null: a block's first),
/// its last one counted as not branching; taken branches add takenExtra().
double price(CoreKind core, const Insn &c, const Insn *prev) {
  const bool m0 = core == CoreKind::M0Plus;
  switch (c.K) {
  case Kind::It:
    return prev && prev->Size == 2 && prev->K != Kind::Branch && prev->K != Kind::It ? 0 : 1;
  case Kind::Alu:
  case Kind::Unknown:
    return 1;
  case Kind::Mul:
    return 1;
  case Kind::Div:
    return 7; // 2-12 cycles by the operands' sizes
  case Kind::Load:
  case Kind::FpLoad: {
    if (m0)
      return 2;
    double cyc = 2;
    // Pipelined behind the load before, unless its loaded register (not a
    // written-back base) forms this address.
    if (prev && (prev->K == Kind::Load || prev->K == Kind::FpLoad) &&
        !(prev->DataDefs & c.AddrUses))
      cyc = 1;
    if (prev && isDataProcessing(prev->K) && (prev->Defs & c.AddrUses))
      cyc += 1; // the address waits for the register bank
    return cyc;
  }
  case Kind::Store:
    if (m0)
      return 2;
    return 1 + (prev && isDataProcessing(prev->K) && (prev->Defs & c.AddrUses) ? 1 : 0);
  case Kind::FpStore:
    return 2;
  case Kind::LoadPair:
  case Kind::StorePair:
    return 3;
  case Kind::LoadMulti:
    // With PC: the refill is added as a taken branch.
    return 1 + c.Words;
  case Kind::StoreMulti:
  case Kind::FpMulti:
    return 1 + c.Words;
  case Kind::Branch:
  case Kind::LoopEnd:
    return 1;
  case Kind::Tbb:
    return 6;
  case Kind::FpAlu:
    return 1;
  case Kind::FpMac:
    return 3;
  case Kind::FpDiv:
    return 14;
  case Kind::VecMem:
  case Kind::VecAlu:
  case Kind::VecMac: {
    bool otherKind = prev && (prev->K == Kind::VecMem) != (c.K == Kind::VecMem) &&
                     (prev->K == Kind::VecMem || prev->K == Kind::VecAlu ||
                      prev->K == Kind::VecMac);
    return otherKind ? 1 : 2;
  }
  }
  return 1;
}

/// The cycles a taken branch (or a write to PC) adds to its own, to
/// `target`'s instruction at `targetAddress`.
double takenExtra(CoreKind core, const Insn &c, const Insn &target, uint64_t targetAddress) {
  if (c.K == Kind::Tbb)
    return 0; // its 6 cycles include the refill
  if (c.K == Kind::LoopEnd)
    return core == CoreKind::M55 ? 0 : 1;
  const bool indirect = !(c.K == Kind::Branch && c.Direct);
  if (core == CoreKind::M0Plus) {
    if (c.K == Kind::LoadMulti)
      return 2; // POP {..., pc}: 3 + N
    return c.Size == 4 ? 2 : 1; // B/Bcc 2, BX 2, BL 3
  }
  if (core == CoreKind::M7)
    return indirect ? 2 : 0;
  double p = indirect ? 2 : 1;
  if (target.Size == 4 && targetAddress % 4 == 2)
    p += 1;
  return p;
}

/// One translation block: its instructions and prices.
struct Block {
  uint64_t Start = 0, FallThrough = 0;
  uint32_t Count = 0; ///< instructions
  double Cycles = 0;  ///< its last instruction not branching
  double Runs = 0, Spent = 0; ///< executions in the region, their cycles
  const Insn *Last = nullptr;
  const Insn *First = nullptr;
  int64_t Function = -1;
};

/// Prices the instructions of a block in order (M7: paired; M33/M55: 16-bit
/// pairs).
double blockCycles(CoreKind core, const std::vector<const Insn *> &insns) {
  double total = 0;
  const Insn *prev = nullptr;
  if (core == CoreKind::M7) {
    for (size_t i = 0; i < insns.size(); ++i) {
      const Insn &a = *insns[i];
      double cyc = std::max(1.0, price(CoreKind::M4, a, nullptr) - (isMemory(a.K) ? 1 : 0));
      if (a.K == Kind::LoadMulti || a.K == Kind::StoreMulti || a.K == Kind::FpMulti)
        cyc = std::max(1.0, (double)a.Words / 2);
      if (a.K == Kind::FpMac)
        cyc = 1; // pipelined
      if (prev && (prev->K == Kind::Load || prev->K == Kind::FpLoad) && (prev->Defs & a.Uses))
        cyc += 1; // load-use
      total += cyc;
      prev = &a;
      if (i + 1 < insns.size() && cyc == 1) {
        const Insn &b = *insns[i + 1];
        bool pair = a.K != Kind::Branch && a.K != Kind::It && a.K != Kind::Div &&
                    !(isMemory(a.K) && isMemory(b.K)) &&
                    !(a.K == Kind::Mul && b.K == Kind::Mul) && !(isFloat(a.K) && isFloat(b.K)) &&
                    !(a.Defs & b.Uses) && b.K != Kind::Div && b.K != Kind::LoadMulti &&
                    b.K != Kind::StoreMulti && b.K != Kind::FpMulti && b.K != Kind::Tbb &&
                    b.K != Kind::LoadPair && b.K != Kind::StorePair && b.K != Kind::FpDiv;
        if (pair) {
          prev = &b;
          ++i; // issued with a
        }
      }
    }
    return total;
  }
  const CoreKind scalar = core == CoreKind::M0Plus ? CoreKind::M0Plus
                          : core == CoreKind::M55  ? CoreKind::M55
                                                   : CoreKind::M4;
  const bool pairs16 = core == CoreKind::M33 || core == CoreKind::M55;
  bool paired = false; // prev issued with the one before it
  for (const Insn *c : insns) {
    double cyc = price(scalar, *c, prev);
    if (pairs16 && prev && !paired && c->Size == 2 && prev->Size == 2 && c->K == Kind::Alu &&
        prev->K == Kind::Alu && !(prev->Defs & c->Uses) && !c->WritesPc && !prev->WritesPc) {
      cyc = 0; // issued with the 16-bit instruction before
      paired = true;
    } else {
      paired = false;
    }
    total += cyc;
    prev = c;
  }
  return total;
}

} // namespace

const McuCore *mcuCore(const std::string &target) {
  const CoreEntry *c = coreEntry(target);
  return c ? &c->Info : nullptr;
}

std::vector<std::string> cycleTraceFlags(const std::string &path) {
  return {"-d", "in_asm,exec,nochain", "-D", path};
}

CycleProfile estimateCycles(const std::string &elf, std::istream &log, const CycleOptions &o) {
  const CoreEntry *entry = coreEntry(o.Core);
  if (!entry)
    fail(ErrorKind::Usage) << "cycle estimate: no timing model for '" << o.Core << "'";
  const CoreKind core = entry->Kind;
  const double waits = o.WaitStates >= 0 ? o.WaitStates : entry->Info.WaitStates;
  Decoder dec(*entry, elf);
  const int64_t begin = o.Begin.empty() ? -1 : dec.addressOf(o.Begin);
  const int64_t end = o.End.empty() ? -1 : dec.addressOf(o.End);
  if (!o.Begin.empty() && begin < 0)
    fail(ErrorKind::Usage) << "cycle estimate: the firmware has no function '" << o.Begin << "'";
  if (!o.End.empty() && end < 0)
    fail(ErrorKind::Usage) << "cycle estimate: the firmware has no function '" << o.End << "'";
  // Call entries: function index -> the calls that enter it, in order.
  std::map<int64_t, std::vector<size_t>> callsAt;
  for (size_t i = 0; i < o.Calls.size(); ++i) {
    int64_t a = dec.addressOf(o.Calls[i]);
    if (a >= 0)
      callsAt[dec.functionAt((uint64_t)a)].push_back(i);
  }

  std::set<int64_t> outside;
  for (const std::string &f : o.Outside)
    if (int64_t a = dec.addressOf(f); a >= 0)
      outside.insert(dec.functionAt((uint64_t)a));
  CycleProfile prof;
  prof.Calls.resize(o.Calls.size());
  std::vector<Block> blocks;
  std::unordered_map<uint64_t, size_t> byHost;           // QEMU's translation -> block
  std::unordered_map<uint64_t, size_t> byStart;          // newest block at an address
  std::vector<uint64_t> pending;                         // the last IN: block's [start, end)
  bool reading = false, havePending = false;
  bool active = begin < 0;
  int64_t call = -1;
  size_t prevIndex = SIZE_MAX;
  CycleCounts *prevBucket = nullptr;
  std::string prevFunction;

  // A block from its first byte to its end: [start, end).
  auto makeBlock = [&](const std::vector<uint64_t> &range) {
    Block b;
    std::vector<const Insn *> insns;
    uint64_t a = range[0];
    do {
      insns.push_back(&dec.at(a));
      a += insns.back()->Size;
    } while (a < range[1]);
    b.Start = range[0];
    b.FallThrough = a;
    b.Count = (uint32_t)insns.size();
    b.Cycles = blockCycles(core, insns);
    b.Last = insns.back();
    b.First = insns.front();
    b.Function = dec.functionAt(b.Start);
    blocks.push_back(b);
    return blocks.size() - 1;
  };

  std::string line;
  while (std::getline(log, line)) {
    if (line.rfind("IN:", 0) == 0) {
      reading = true;
      pending.clear();
      continue;
    }
    if (reading) {
      // "0x000001f0:  f04f 0e0a  mov.w ...": QEMU's disassembler may split an
      // instruction it does not know (Armv8.1-M's) into halves, so only the
      // block's bytes are taken from it - its first address and the end of
      // its last line - and LLVM decodes them.
      if (line.rfind("0x", 0) == 0) {
        char *after = nullptr;
        uint64_t address = std::strtoull(line.c_str() + 2, &after, 16);
        size_t at = after && *after == ':' ? (size_t)(after - line.c_str()) + 1 : line.size();
        while (at < line.size() && line[at] == ' ')
          ++at;
        uint64_t bytes = 0;
        while (at + 4 <= line.size() && std::isxdigit((unsigned char)line[at]) &&
               std::isxdigit((unsigned char)line[at + 3]) && bytes < 4) {
          bytes += 2;
          at += 4;
          if (at < line.size() && line[at] == ' ' && at + 1 < line.size() && line[at + 1] != ' ')
            ++at;
          else
            break;
        }
        if (pending.empty())
          pending = {address, address};
        pending[1] = address + std::max<uint64_t>(bytes, 2);
        continue;
      }
      reading = false;
      havePending = !pending.empty();
    }
    if (line.rfind("Trace ", 0) != 0)
      continue;
    // Trace N: 0xHOST [CSBASE/PC/FLAGS/CFLAGS] symbol
    size_t colon = line.find(": 0x");
    size_t open = line.find('[');
    if (colon == std::string::npos || open == std::string::npos)
      continue;
    uint64_t host = std::strtoull(line.c_str() + colon + 4, nullptr, 16);
    size_t slash = line.find('/', open);
    if (slash == std::string::npos)
      continue;
    uint64_t pc = std::strtoull(line.c_str() + slash + 1, nullptr, 16);
    size_t index;
    if (havePending && pending.front() == pc) {
      index = makeBlock(pending);
      byHost[host] = index;
      byStart[pc] = index;
      havePending = false;
    } else if (auto it = byHost.find(host); it != byHost.end() && blocks[it->second].Start == pc) {
      index = it->second;
    } else if (auto jt = byStart.find(pc); jt != byStart.end()) {
      index = jt->second;
    } else {
      index = makeBlock({pc, pc + 1});
      byStart[pc] = index;
    }
    const Block &b = blocks[index];
    const Block *prev = prevIndex == SIZE_MAX ? nullptr : &blocks[prevIndex];
    // The block before branched when this one is not its fall-through.
    if (prev && prevBucket && b.Start != prev->FallThrough &&
        (prev->Last->K == Kind::Branch || prev->Last->K == Kind::LoopEnd ||
         prev->Last->K == Kind::Tbb || prev->Last->WritesPc)) {
      double extra = takenExtra(core, *prev->Last, *b.First, b.Start);
      for (CycleCounts *c : {prevBucket, &prof.Total}) {
        c->Cycles += extra;
        c->WaitCycles += waits;
      }
      prof.Functions[prevFunction].Cycles += extra;
      prof.Functions[prevFunction].WaitCycles += waits;
      blocks[prevIndex].Spent += extra;
    }
    prevIndex = SIZE_MAX;
    prevBucket = nullptr;
    if (!active && (int64_t)b.Start == begin)
      active = true;
    if (active && (int64_t)b.Start == end)
      active = false;
    if (!active)
      continue;
    if (b.Function >= 0 && b.Start == dec.functions()[(size_t)b.Function].Begin) {
      auto it = callsAt.find(b.Function);
      if (it != callsAt.end()) {
        auto next = std::upper_bound(it->second.begin(), it->second.end(), call,
                                     [](int64_t c, size_t i) { return c < (int64_t)i; });
        if (next != it->second.end())
          call = (int64_t)*next;
      }
    }
    CycleCounts *bucket = call >= 0 && !outside.count(b.Function) ? &prof.Calls[(size_t)call]
                                                                   : &prof.Outside;
    const std::string &fn = b.Function >= 0 ? dec.functions()[(size_t)b.Function].Name : "?";
    for (CycleCounts *c : {bucket, &prof.Total, &prof.Functions[fn]}) {
      c->Instructions += b.Count;
      c->Cycles += b.Cycles;
    }
    blocks[index].Runs += 1;
    blocks[index].Spent += b.Cycles;
    prevIndex = index;
    prevBucket = bucket;
    prevFunction = fn;
  }
  if (blocks.empty())
    fail(ErrorKind::Usage) << "cycle estimate: the QEMU log holds no executed block (was it run "
                              "with -d in_asm,exec,nochain?)";
  for (const Block &b : blocks)
    if (b.Runs > 0)
      prof.Blocks.push_back({b.Start, b.FallThrough,
                             b.Function >= 0 ? dec.functions()[(size_t)b.Function].Name : "?",
                             b.Runs, b.Runs * b.Count, b.Spent});
  std::stable_sort(prof.Blocks.begin(), prof.Blocks.end(),
                   [](const BlockCycles &x, const BlockCycles &y) { return x.Cycles > y.Cycles; });
  return prof;
}

} // namespace mlcc::llvmgen
