//===- DataObject.cpp - A library's weights as an ELF object, written directly ===//
//
// The weights are most of a library's bytes (tens of megabytes) and none of
// its code: going through LLVM they were copied into its context, its
// assembler's fragments and its object buffer. Here they are written once,
// as a relocatable ELF object of one read-only section (and an empty
// .note.GNU-stack, as every ELF object LLVM writes for Linux has), each
// constant a hidden global symbol 64 bytes aligned. The header's class,
// machine, flags and OS/ABI are those of an object LLVM wrote for the same
// target (the library's own), so that a linker that checks them (Arm's
// float ABI and EABI version, RISC-V's float ABI and compressed
// instructions) sees the same as in the code's objects.
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/Targets.h"

#include "compiler/support/Error.h"

#include <cstring>

namespace mlcc::llvmgen {

namespace {

/// Little-endian fields appended to a byte string.
struct Writer {
  std::string &Out;
  void u8(uint8_t v) { Out.push_back((char)v); }
  void u16(uint16_t v) { u8((uint8_t)v), u8((uint8_t)(v >> 8)); }
  void u32(uint32_t v) { u16((uint16_t)v), u16((uint16_t)(v >> 16)); }
  void u64(uint64_t v) { u32((uint32_t)v), u32((uint32_t)(v >> 32)); }
  /// An address or size: 8 bytes in ELF64, 4 in ELF32.
  void word(bool wide, uint64_t v) { wide ? u64(v) : u32((uint32_t)v); }
  void align(size_t a) { Out.resize((Out.size() + a - 1) / a * a, '\0'); }
};

uint32_t read32(const std::string &b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = v << 8 | (uint8_t)b[at + (size_t)i];
  return v;
}

} // namespace

bool canWriteDataObject(const std::string &like) {
  return like.size() >= 52 && like.compare(0, 4, "\x7f" "ELF") == 0 &&
         (like[4] == 1 || like[4] == 2) && like[5] == 1 /* little-endian */;
}

std::string dataObject(const std::string &like,
                       const std::vector<std::pair<std::string, std::string_view>> &symbols) {
  MLCC_CHECK(canWriteDataObject(like), "a data object needs a little-endian ELF object to follow");
  const bool wide = like[4] == 2;
  const uint16_t machine = (uint16_t)((uint8_t)like[18] | (uint8_t)like[19] << 8);
  const uint32_t flags = read32(like, wide ? 48 : 36);
  const size_t ehsize = wide ? 64 : 52, shentsize = wide ? 64 : 40, symsize = wide ? 24 : 16;
  constexpr size_t kAlign = 64;

  // Section contents: the data, the names.
  std::string strtab(1, '\0'), shstrtab(1, '\0');
  auto name = [](std::string &table, const std::string &s) {
    uint32_t at = (uint32_t)table.size();
    table += s;
    table.push_back('\0');
    return at;
  };
  const uint32_t nRodata = name(shstrtab, ".rodata.mlcc_weights"),
                 nNote = name(shstrtab, ".note.GNU-stack"), nSymtab = name(shstrtab, ".symtab"),
                 nStrtab = name(shstrtab, ".strtab"), nShstrtab = name(shstrtab, ".shstrtab");
  std::vector<uint64_t> offsets;
  uint64_t dataSize = 0;
  for (auto &[sym, bytes] : symbols) {
    dataSize = (dataSize + kAlign - 1) / kAlign * kAlign;
    offsets.push_back(dataSize);
    dataSize += bytes.size();
  }

  std::string out;
  size_t total = ehsize + kAlign + dataSize + strtab.size() + shstrtab.size() +
                 symsize * (symbols.size() + 1) + 6 * shentsize + 1024;
  for (auto &s : symbols)
    total += s.first.size() + 1;
  out.reserve(total);
  Writer w{out};
  out.resize(ehsize, '\0'); // the header, written last
  w.align(kAlign);
  const uint64_t dataAt = out.size();
  for (size_t i = 0; i < symbols.size(); ++i) {
    out.resize(dataAt + offsets[i], '\0');
    out.append(symbols[i].second.data(), symbols[i].second.size());
  }
  out.resize(dataAt + dataSize, '\0');
  std::vector<uint32_t> symNames;
  for (auto &s : symbols)
    symNames.push_back(name(strtab, s.first));
  const uint64_t strtabAt = out.size();
  out += strtab;
  const uint64_t shstrtabAt = out.size();
  out += shstrtab;
  w.align(8);
  const uint64_t symtabAt = out.size();
  out.append(symsize, '\0'); // symbol 0
  for (size_t i = 0; i < symbols.size(); ++i) {
    const uint8_t info = 1 << 4 | 1, other = 2; // STB_GLOBAL, STT_OBJECT; STV_HIDDEN
    const uint16_t section = 1;
    w.u32(symNames[i]);
    if (wide) {
      w.u8(info), w.u8(other), w.u16(section);
      w.u64(offsets[i]), w.u64(symbols[i].second.size());
    } else {
      w.u32((uint32_t)offsets[i]), w.u32((uint32_t)symbols[i].second.size());
      w.u8(info), w.u8(other), w.u16(section);
    }
  }
  const uint64_t symtabSize = out.size() - symtabAt;
  w.align(8);
  const uint64_t shAt = out.size();
  // Section headers: null, .rodata.mlcc_weights, .note.GNU-stack, .symtab,
  // .strtab, .shstrtab.
  auto section = [&](uint32_t nameAt, uint32_t type, uint64_t shFlags, uint64_t offset,
                     uint64_t size, uint32_t link, uint32_t info, uint64_t align,
                     uint64_t entsize) {
    w.u32(nameAt), w.u32(type);
    w.word(wide, shFlags), w.word(wide, 0 /* addr */), w.word(wide, offset), w.word(wide, size);
    w.u32(link), w.u32(info);
    w.word(wide, align), w.word(wide, entsize);
  };
  out.append(shentsize, '\0');
  section(nRodata, 1 /* PROGBITS */, 2 /* ALLOC */, dataAt, dataSize, 0, 0, kAlign, 0);
  section(nNote, 1, 0, dataAt, 0, 0, 0, 1, 0);
  section(nSymtab, 2 /* SYMTAB */, 0, symtabAt, symtabSize, 4, 1, 8, symsize);
  section(nStrtab, 3 /* STRTAB */, 0, strtabAt, strtab.size(), 0, 0, 1, 0);
  section(nShstrtab, 3, 0, shstrtabAt, shstrtab.size(), 0, 0, 1, 0);

  // The header.
  std::string header;
  Writer h{header};
  header.append(like, 0, 16); // magic, class, data, version, OS/ABI, ABI version
  std::memset(header.data() + 9, 0, 7);
  h.u16(1 /* ET_REL */), h.u16(machine), h.u32(1 /* EV_CURRENT */);
  h.word(wide, 0), h.word(wide, 0), h.word(wide, shAt); // entry, phoff, shoff
  h.u32(flags), h.u16((uint16_t)ehsize), h.u16(0), h.u16(0);
  h.u16((uint16_t)shentsize), h.u16(6), h.u16(5);
  MLCC_CHECK(header.size() == ehsize, "ELF header of " << header.size() << " bytes");
  out.replace(0, ehsize, header);
  return out;
}

} // namespace mlcc::llvmgen
