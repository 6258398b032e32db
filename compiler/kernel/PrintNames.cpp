//===- PrintNames.cpp - Names of variables and buffers in printed IR ------===//
#include "compiler/kernel/PrintNames.h"

#include <sstream>

namespace mlcc::kir {

// ---------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------

const std::string &PrintNames::name(const VarNode *v) {
  auto it = VarNames.find(v);
  if (it != VarNames.end())
    return it->second;
  std::string n = Canonical ? "v" + std::to_string(VarNames.size()) : unique(v->Name);
  return VarNames[v] = std::move(n);
}

const std::string &PrintNames::name(const BufferNode *b) {
  auto it = BufNames.find(b);
  if (it != BufNames.end())
    return it->second;
  std::string n = Canonical ? "b" + std::to_string(BufNames.size()) : unique(b->Name);
  return BufNames[b] = std::move(n);
}

std::string PrintNames::unique(const std::string &base) {
  std::string n = base.empty() ? "t" : base;
  int &count = Used[n];
  std::string result = count ? n + "_" + std::to_string(count) : n;
  ++count;
  // A generated suffix could collide with a real name; retry if so.
  while (Taken.count(result))
    result = n + "_" + std::to_string(count++);
  Taken.insert(result);
  return result;
}

std::string gemmAlphaText(double alpha) {
  std::ostringstream os;
  os << alpha;
  return os.str();
}

} // namespace mlcc::kir
