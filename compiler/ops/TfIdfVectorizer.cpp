//===- TfIdfVectorizer.cpp - TfIdfVectorizer (integer pools) --------------===//
//
// TfIdfVectorizer (opset 9) counts, per row of a [C] or [N, C] integer input,
// the n-grams of the pool (pool_int64s; string pools are unsupported) that
// occur in it. The pool is grouped by length (ngram_counts gives each
// group's first element); the i-th n-gram overall is counted in output
// column ngram_indexes[i], and only lengths in [min_gram_length,
// max_gram_length] are counted. An n-gram with skip distance d (1 ..
// max_skip_count+1) takes the items at i, i+d, i+2d, ...; unigrams are
// counted for d = 1 only. A pool n-gram listed twice counts at its last
// position. The counts are then weighted (mode TF: the counts; IDF: 1 or
// weights[column] where the count is non-zero; TFIDF: the counts times
// weights[column]), as the reference implementation does.
//
// The pool is compile-time data, so the kernel compares each window with
// every pool n-gram directly (one comparison chain per distinct n-gram).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <map>

namespace mlcc::ops {

using namespace kir;

namespace {

struct Gram {
  std::vector<int64_t> Tokens;
  int64_t Column;
};

struct TfIdf {
  int64_t MinLen, MaxLen, MaxSkip, OutSize;
  enum { TF, IDF, TFIDF } Mode;
  std::vector<Gram> Grams; ///< distinct n-grams with lengths in [MinLen, MaxLen]
  std::vector<double> Weights;
  Shape Out;
};

TfIdf tfidfParams(const ir::Node &n) {
  TfIdf p;
  p.MinLen = n.requireInt("min_gram_length");
  p.MaxLen = n.requireInt("max_gram_length");
  p.MaxSkip = n.requireInt("max_skip_count");
  if (p.MinLen < 1 || p.MaxLen < p.MinLen || p.MaxSkip < 0)
    n.error() << "invalid gram lengths [" << p.MinLen << ", " << p.MaxLen
              << "] or max_skip_count " << p.MaxSkip;
  std::string mode = n.attrString("mode", "");
  if (mode == "TF")
    p.Mode = TfIdf::TF;
  else if (mode == "IDF")
    p.Mode = TfIdf::IDF;
  else if (mode == "TFIDF")
    p.Mode = TfIdf::TFIDF;
  else
    n.error() << "mode must be TF, IDF or TFIDF, got '" << mode << "'";
  if (n.hasAttr("pool_strings"))
    n.error(ErrorKind::Unsupported) << "string pools are not supported";
  std::vector<int64_t> pool = n.attrInts("pool_int64s");
  std::vector<int64_t> counts = n.requireInts("ngram_counts");
  std::vector<int64_t> indexes = n.requireInts("ngram_indexes");
  p.Weights = n.attrFloats("weights");
  if (indexes.empty())
    n.error() << "ngram_indexes is empty";
  p.OutSize = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (*std::min_element(indexes.begin(), indexes.end()) < 0)
    n.error() << "ngram_indexes has a negative entry";
  if (!p.Weights.empty() && (int64_t)p.Weights.size() < p.OutSize)
    n.error() << "weights has " << p.Weights.size() << " entries; "
              << p.OutSize << " are needed";
  // Split the pool into n-grams; the last occurrence of a duplicate wins.
  std::map<std::vector<int64_t>, int64_t> column;
  std::vector<std::vector<int64_t>> order;
  int64_t id = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    int64_t len = (int64_t)g + 1;
    int64_t begin = counts[g];
    int64_t end = g + 1 < counts.size() ? counts[g + 1] : (int64_t)pool.size();
    if (begin < 0 || end > (int64_t)pool.size())
      n.error() << "ngram_counts " << shapeToString(counts)
                << " does not fit the pool of " << pool.size() << " items";
    if (end <= begin)
      continue;
    for (int64_t k = 0; k < (end - begin) / len; ++k, ++id) {
      if (len < p.MinLen || len > p.MaxLen)
        continue;
      if (id >= (int64_t)indexes.size())
        n.error() << "ngram_indexes has " << indexes.size()
                  << " entries; the pool has more n-grams";
      std::vector<int64_t> toks(pool.begin() + begin + k * len,
                                pool.begin() + begin + (k + 1) * len);
      if (!column.count(toks))
        order.push_back(toks);
      column[toks] = indexes[(size_t)id];
    }
  }
  for (auto &t : order)
    p.Grams.push_back({t, column[t]});
  const Shape &x = n.inShape(0);
  if (x.size() > 2 || (x.size() == 2 && x[0] < 1))
    n.error() << "X must have shape [C] or [N, C] with N > 0, got "
              << shapeToString(x);
  p.Out = x.size() == 2 ? Shape{x[0], p.OutSize} : Shape{p.OutSize};
  return p;
}

void inferTfIdf(ir::Node &n) {
  requireDType(n, 0, {DType::I32, DType::I64});
  TfIdf p = tfidfParams(n);
  n.setOutput(0, DType::F32, p.Out);
}

void lowerTfIdf(LowerCtx &c) {
  TfIdf p = tfidfParams(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  const Shape &xs = x.shape();
  int64_t rows = xs.size() == 2 ? xs[0] : 1;
  int64_t C = xs.empty() ? 1 : xs.back();
  DType xt = x.computeType();
  auto xAt = [&](const Expr &r, const Expr &i) {
    Expr safe = clamp(i, indexConst(0), indexConst(std::max<int64_t>(C - 1, 0)));
    return x.loadFlat(r * C + safe);
  };
  b.loop("z", y.numel(), [&](Expr i) { y.storeFlat(i, constant(DType::F32, 0.0)); });
  b.loop("r", rows, [&](Expr r) {
    b.loop("d", p.MaxSkip + 1, [&](Expr d) {
      Local dist = b.local("dist", d + 1);
      // Unigrams count for the first distance only.
      Local minLen = b.local("min_len", p.MinLen == 1
                                            ? select(eq(d, indexConst(0)),
                                                     indexConst(1), indexConst(2))
                                            : indexConst(p.MinLen));
      b.loop("i", C, [&](Expr i) {
        for (const Gram &g : p.Grams) {
          int64_t len = (int64_t)g.Tokens.size();
          Expr last = i + dist.get() * (len - 1);
          Expr cond = land(le(minLen.get(), indexConst(len)), lt(last, indexConst(C)));
          bool representable = true;
          for (int64_t k = 0; k < len; ++k) {
            int64_t t = g.Tokens[(size_t)k];
            if (xt == DType::I32 && (t < INT32_MIN || t > INT32_MAX))
              representable = false;
            cond = land(cond, eq(xAt(r, i + dist.get() * k), constantInt(xt, t)));
          }
          if (!representable)
            continue;
          b.ifThen(cond, [&] {
            std::vector<Expr> yi;
            if (y.rank() == 2)
              yi.push_back(r);
            yi.push_back(indexConst(g.Column));
            y.store(yi, y.load(yi) + 1.0);
          });
        }
      });
    });
  });
  if (p.Mode == TfIdf::TF)
    return;
  b.loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr f = y.load(o);
    Expr w = constant(DType::F32, 1.0);
    if (!p.Weights.empty()) {
      // weights[column], as a select chain over the columns.
      Expr col = o.back();
      w = constant(DType::F32, p.Weights[0]);
      for (int64_t k = 1; k < p.OutSize; ++k)
        w = select(eq(col, indexConst(k)), constant(DType::F32, p.Weights[(size_t)k]), w);
    }
    Expr v = p.Mode == TfIdf::IDF ? select(gt(f, 0.0), w, constant(DType::F32, 0.0))
                                  : w * f;
    y.store(o, v);
  });
}

} // namespace

MLCC_OPS(TfIdfVectorizer) {
  R.add({.Name = "TfIdfVectorizer", .SinceVersion = 9, .Fusion = FusionClass::Opaque,
         .Infer = inferTfIdf, .Lower = lowerTfIdf});
}

} // namespace mlcc::ops
