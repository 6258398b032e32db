//===- Einsum.cpp - Einsum ------------------------------------------------===//
//
// The equation is parsed at compile time into labels: letters, plus one
// label per dimension covered by "..." (ellipsis dimensions broadcast across
// the operands, right-aligned). Without "->" the output is the ellipsis
// dimensions followed by the letters that appear exactly once, in
// alphabetical order. A label repeated within an operand takes its diagonal;
// labels (ellipsis dimensions included) absent from the output are summed.
//
// The kernel loops over the output labels and, inside, over the summed
// labels, accumulating the product of the operands in the compute type.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <map>

namespace mlcc::ops {

using namespace kir;

namespace {

struct EinsumPlan {
  std::vector<int64_t> Extent;              ///< per label
  std::vector<std::vector<int64_t>> Inputs; ///< label of each input axis
  std::vector<int64_t> Output;              ///< label of each output axis
  std::vector<int64_t> Summed;              ///< labels not in the output
};

/// One term of the equation: letters, with -1 standing for "...".
std::vector<int> parseTerm(const ir::Node &n, const std::string &t) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < t.size(); ++i) {
    char ch = t[i];
    if (ch == '.') {
      if (t.compare(i, 3, "...") != 0 || ellipsis)
        n.error() << "malformed ellipsis in einsum term '" << t << "'";
      ellipsis = true;
      out.push_back(-1);
      i += 2;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      out.push_back((unsigned char)ch);
    } else {
      n.error() << "invalid character '" << ch << "' in einsum equation";
    }
  }
  return out;
}

EinsumPlan einsumPlan(const ir::Node &n) {
  std::string eq;
  for (char ch : n.attrString("equation", ""))
    if (ch != ' ' && ch != '\t')
      eq += ch;
  if (!n.hasAttr("equation"))
    n.error() << "attribute 'equation' is required";
  std::string lhs = eq, rhs;
  size_t arrow = eq.find("->");
  bool explicitOut = arrow != std::string::npos;
  if (explicitOut) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != n.Inputs.size())
    n.error() << "the equation has " << terms.size() << " operands but the node has "
              << n.Inputs.size() << " inputs";

  EinsumPlan p;
  std::map<int, int64_t> letterLabel;
  std::map<int, int> letterCount;
  // Ellipsis dimensions: labels 0..E-1 (right-aligned across operands).
  int64_t ell = 0;
  std::vector<std::vector<int>> parsed;
  for (size_t i = 0; i < terms.size(); ++i) {
    parsed.push_back(parseTerm(n, terms[i]));
    const std::vector<int> &t = parsed.back();
    int64_t letters = (int64_t)std::count_if(t.begin(), t.end(), [](int c) { return c >= 0; });
    bool hasEll = letters != (int64_t)t.size();
    int64_t rank = (int64_t)n.inShape(i).size();
    if (hasEll ? rank < letters : rank != letters)
      n.error() << "einsum term '" << terms[i] << "' does not match input " << i
                << " of shape " << shapeToString(n.inShape(i));
    if (hasEll)
      ell = std::max(ell, rank - letters);
  }
  p.Extent.assign((size_t)ell, 1);
  auto labelOf = [&](int letter) {
    auto it = letterLabel.find(letter);
    if (it != letterLabel.end())
      return it->second;
    int64_t l = (int64_t)p.Extent.size();
    p.Extent.push_back(1);
    letterLabel[letter] = l;
    return l;
  };
  auto setExtent = [&](int64_t label, int64_t e, size_t input) {
    int64_t &cur = p.Extent[(size_t)label];
    if (cur == 1)
      cur = e;
    else if (e != 1 && e != cur)
      n.error() << "einsum dimension of extent " << e << " in input " << input
                << " does not match extent " << cur;
  };
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Shape &s = n.inShape(i);
    std::vector<int64_t> axes;
    int64_t letters = (int64_t)std::count_if(parsed[i].begin(), parsed[i].end(),
                                             [](int c) { return c >= 0; });
    int64_t covered = (int64_t)s.size() - letters;
    for (int c : parsed[i]) {
      if (c < 0) {
        for (int64_t k = 0; k < covered; ++k)
          axes.push_back(ell - covered + k);
      } else {
        axes.push_back(labelOf(c));
        ++letterCount[c];
      }
    }
    for (size_t d = 0; d < axes.size(); ++d)
      setExtent(axes[d], s[d], i);
    p.Inputs.push_back(axes);
  }
  if (explicitOut) {
    std::vector<int> t = parseTerm(n, rhs);
    for (int c : t) {
      if (c < 0) {
        for (int64_t k = 0; k < ell; ++k)
          p.Output.push_back(k);
        continue;
      }
      auto it = letterLabel.find(c);
      if (it == letterLabel.end())
        n.error() << "output label '" << (char)c << "' does not appear in the inputs";
      if (std::find(p.Output.begin(), p.Output.end(), it->second) != p.Output.end())
        n.error() << "output label '" << (char)c << "' is repeated";
      p.Output.push_back(it->second);
    }
  } else {
    for (int64_t k = 0; k < ell; ++k)
      p.Output.push_back(k);
    for (auto &[c, count] : letterCount) // std::map: alphabetical (ASCII) order
      if (count == 1)
        p.Output.push_back(letterLabel[c]);
  }
  for (int64_t l = 0; l < (int64_t)p.Extent.size(); ++l)
    if (std::find(p.Output.begin(), p.Output.end(), l) == p.Output.end())
      p.Summed.push_back(l);
  return p;
}

void inferEinsum(ir::Node &n) {
  requireSameDTypes(n);
  requireNumeric(n, 0);
  EinsumPlan p = einsumPlan(n);
  Shape out;
  for (int64_t l : p.Output)
    out.push_back(p.Extent[(size_t)l]);
  n.setOutput(0, n.inDType(0), out);
}

void lowerEinsum(LowerCtx &c) {
  EinsumPlan p = einsumPlan(c.node());
  std::vector<TensorRef> ins;
  for (size_t i = 0; i < c.node().Inputs.size(); ++i)
    ins.push_back(c.in(i));
  TensorRef y = c.out(0);
  KernelBuilder &b = c.b();
  DType ct = y.computeType();
  std::vector<Expr> label(p.Extent.size());
  Shape summed;
  for (int64_t l : p.Summed)
    summed.push_back(p.Extent[(size_t)l]);
  b.loops(y.shape(), [&](const std::vector<Expr> &o) {
    for (size_t d = 0; d < o.size(); ++d)
      label[(size_t)p.Output[d]] = o[d];
    Local acc = b.local("acc", constant(ct, 0));
    b.loops(summed, [&](const std::vector<Expr> &s) {
      for (size_t d = 0; d < s.size(); ++d)
        label[(size_t)p.Summed[d]] = s[d];
      Expr prod;
      for (size_t i = 0; i < ins.size(); ++i) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < p.Inputs[i].size(); ++d)
          idx.push_back(ins[i].shape()[d] == 1 ? indexConst(0)
                                               : label[(size_t)p.Inputs[i][d]]);
        Expr v = ins[i].load(idx);
        prod = prod ? prod * v : v;
      }
      b.set(acc, acc.get() + prod);
    }, "s");
    y.store(o, acc.get());
  }, "o");
}

} // namespace

MLCC_OPS(Einsum) {
  R.add({.Name = "Einsum", .SinceVersion = 12, .Fusion = FusionClass::Opaque,
         .Infer = inferEinsum, .Lower = lowerEinsum});
}

} // namespace mlcc::ops
