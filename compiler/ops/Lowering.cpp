#include "compiler/ops/Lowering.h"

#include <functional>

#include <algorithm>
#include <map>

namespace mlcc::ops {

using namespace kir;

/// The fused elementwise nodes after an output (LowerCtx::fuseEpilogue).
class Epilogue {
public:
  LowerCtx *Ctx = nullptr;
  const ir::Value *Root = nullptr; ///< the output the lowering stores
  std::vector<const ir::Node *> Chain;
  /// Producers of chain operands computed in place (by output value).
  std::map<const ir::Value *, const ir::Node *> Inlined;
  TensorRef Final; ///< the last chain node's output
  bool Read = false;

  /// Stores `v`, an element of Root at flat offset `off` (multi-index `idx`
  /// when the lowering has it), through the chain into Final.
  void store(const Expr &off, const std::vector<Expr> *idx, const Expr &v) {
    const OpRegistry &reg = OpRegistry::instance();
    const Shape &shape = Root->Type.Dims;
    std::vector<Expr> decomposed;
    auto index = [&]() -> const std::vector<Expr> & {
      if (idx)
        return *idx;
      if (decomposed.empty()) {
        int64_t stride = 1;
        decomposed.resize(shape.size());
        for (size_t d = shape.size(); d-- > 0;) {
          decomposed[d] = (off / stride) % shape[d];
          stride *= shape[d];
        }
      }
      return decomposed;
    };
    DType rt = Root->Type.Type;
    Expr x = cast(computeType(rt), cast(rt, v));
    // The values computed so far: the root's element, then each chain
    // node's (a node may read any of them: x * sigmoid(x)).
    std::map<const ir::Value *, Expr> computed = {{Root, x}};
    // A node's value at this element from its operands' (computed by the
    // group, an inlined producer's, or loaded).
    std::function<Expr(const ir::Node *)> apply;
    auto operand = [&](const ir::Value *in) -> Expr {
      auto c = computed.find(in);
      if (c != computed.end())
        return c->second;
      auto p = Inlined.find(in);
      if (p != Inlined.end())
        return computed[in] = apply(p->second);
      TensorRef t = Ctx->operand(in);
      if (t.numel() == 1)
        return t.loadFlat(indexConst(0));
      if (t.shape() == shape)
        return t.loadFlat(off);
      return t.loadBroadcast(index());
    };
    apply = [&](const ir::Node *n) {
      std::vector<Expr> args;
      for (const ir::Value *in : n->Inputs)
        if (in)
          args.push_back(operand(in));
      Expr r = reg.lookup(*n).Scalar(*n, args);
      DType ot = n->Outputs[0]->Type.Type;
      return cast(computeType(ot), cast(ot, r));
    };
    for (const ir::Node *n : Chain) {
      x = apply(n);
      computed[n->Outputs[0]] = x;
    }
    Final.storeFlat(off, x);
  }
};

// ---------------------------------------------------------------------------
// TensorRef
// ---------------------------------------------------------------------------

TensorRef::TensorRef(KernelBuilder *b, Buffer buf, TensorPtr constant,
                     ir::TensorType type)
    : B(b), Buf(std::move(buf)), Const(std::move(constant)),
      Type(std::move(type)) {}

int64_t TensorRef::dim(int64_t d) const {
  int64_t r = (int64_t)rank();
  if (d < 0)
    d += r;
  MLCC_CHECK(d >= 0 && d < r, "dimension " << d << " of a rank-" << r
                                           << " tensor");
  return Type.Dims[(size_t)d];
}

std::vector<int64_t> TensorRef::strides() const {
  std::vector<int64_t> s(rank(), 1);
  for (int64_t d = (int64_t)rank() - 2; d >= 0; --d)
    s[(size_t)d] = s[(size_t)d + 1] * Type.Dims[(size_t)d + 1];
  return s;
}

bool TensorRef::boundedAxis(int64_t d) const {
  if (d < 0)
    d += (int64_t)rank();
  for (const ir::AxisExtent &a : Bounded)
    if (a.Axis == d)
      return true;
  return false;
}

Expr TensorRef::extent(int64_t d) const {
  int64_t r = (int64_t)rank();
  if (d < 0)
    d += r;
  for (const ir::AxisExtent &a : Bounded) {
    if (a.Axis != d)
      continue;
    MLCC_CHECK(Ctx, "a bounded extent outside a lowering");
    return boundedExtent(a, [&](size_t k) { return Ctx->dimValue(k, a.Coeffs.size()); });
  }
  return indexConst(dim(d));
}

std::vector<Expr> TensorRef::extents() const {
  std::vector<Expr> e;
  for (size_t d = 0; d < rank(); ++d)
    e.push_back(extent((int64_t)d));
  return e;
}

Expr TensorRef::numelAtRunTime(int64_t per) const {
  if (Bounded.empty())
    return indexConst(numel() / per);
  if (!leadsAtRunTime(Type.Dims, Bounded))
    return nullptr;
  int64_t inner = 1;
  for (size_t d = (size_t)Bounded[0].Axis + 1; d < rank(); ++d)
    inner *= Type.Dims[d];
  if (inner % per)
    return nullptr;
  return extent(Bounded[0].Axis) * (inner / per);
}

Expr TensorRef::offset(const std::vector<Expr> &idx) const {
  MLCC_CHECK(idx.size() == rank(), "index of rank " << idx.size()
                                                    << " for a rank-"
                                                    << rank() << " tensor");
  std::vector<int64_t> s = strides();
  Expr off = indexConst(0);
  for (size_t d = 0; d < idx.size(); ++d)
    if (Type.Dims[d] != 1)
      off = off + idx[d] * s[d];
  return off;
}

Expr TensorRef::loadFlat(const Expr &off) const {
  if (Epi) { // write-only: remember the misuse, LowerCtx reports it
    Epi->Read = true;
    return kir::constant(computeType(), 0);
  }
  if (!Buf) {
    MLCC_CHECK(Const, "load from a tensor with no storage");
    // Inlined constant: all elements equal.
    Expr v = isFloat(Const->dtype())
                 ? kir::constant(computeType(), Const->doubleAt(0))
                 : constantInt(computeType(), Const->intAt(0));
    return v;
  }
  Expr v = kir::load(Buf, off);
  return cast(computeType(), v);
}

Expr TensorRef::load(const std::vector<Expr> &idx) const {
  if (!Buf)
    return loadFlat(indexConst(0));
  return loadFlat(offset(idx));
}

Expr TensorRef::loadBroadcast(const std::vector<Expr> &outIdx) const {
  MLCC_CHECK(outIdx.size() >= rank(), "broadcast to a lower rank");
  size_t lead = outIdx.size() - rank();
  std::vector<Expr> idx;
  for (size_t d = 0; d < rank(); ++d)
    idx.push_back(Type.Dims[d] == 1 ? indexConst(0) : outIdx[lead + d]);
  return load(idx);
}

void TensorRef::store(const std::vector<Expr> &idx, const Expr &value) const {
  if (Epi) {
    Epi->store(offset(idx), &idx, value);
    return;
  }
  storeFlat(offset(idx), value);
}

void TensorRef::storeFlat(const Expr &off, const Expr &value) const {
  if (Epi) {
    Epi->store(off, nullptr, value);
    return;
  }
  MLCC_CHECK(Buf && B, "store to a tensor with no buffer");
  B->store(Buf, off, cast(Type.Type, value));
}

// ---------------------------------------------------------------------------
// LowerCtx
// ---------------------------------------------------------------------------

LowerCtx::LowerCtx(const ir::Node &node, KernelBuilder &b) : N(node), B(b) {}

Expr LowerCtx::dimValue(size_t k, size_t count) {
  if (!Dims) {
    Dims = B.param("dims", DType::I64, (int64_t)count);
    Bindings.push_back({ParamBinding::Dims, 0, {DType::I64, {(int64_t)count}}, nullptr});
  }
  MLCC_CHECK(k < (size_t)Dims->Size, "bounded dimension " << k << " of " << Dims->Size);
  return cast(DType::Index, kir::load(Dims, indexConst((int64_t)k)));
}

TensorRef LowerCtx::withExtents(TensorRef ref, const ir::Value *v) {
  ref.Ctx = this;
  if (v)
    ref.Bounded = v->Bounded;
  return ref;
}

TensorRef LowerCtx::in(size_t i) {
  auto it = Ins.find(i);
  if (it != Ins.end())
    return it->second;
  if (!N.hasInput(i))
    N.error() << "input " << i << " is required but missing";
  TensorRef ref = operand(N.Inputs[i]);
  Ins[i] = ref;
  return ref;
}

TensorRef LowerCtx::operand(const ir::Value *v) {
  auto it = Operands.find(v);
  if (it != Operands.end())
    return it->second;
  TensorRef ref;
  if (v->Const && (v->Const->isSplat() || v->Const->numel() <= 1) &&
      v->Const->numel() >= 1) {
    ref = withExtents(TensorRef(&B, nullptr, v->Const, v->Type), v);
  } else {
    size_t index = SIZE_MAX;
    for (size_t i = 0; i < N.Inputs.size() && index == SIZE_MAX; ++i)
      if (N.Inputs[i] == v)
        index = i;
    Buffer buf = B.param(index == SIZE_MAX ? "x" + std::to_string(Operands.size())
                                           : "in" + std::to_string(index),
                         v->Type.Type, std::max<int64_t>(v->Type.numel(), 1));
    Bindings.push_back({ParamBinding::Input, index, v->Type, v});
    ref = withExtents(TensorRef(&B, buf, v->Const, v->Type), v);
  }
  Operands[v] = ref;
  return ref;
}

void LowerCtx::fuseEpilogue(size_t i, std::vector<const ir::Node *> chain,
                            std::vector<const ir::Node *> inlined) {
  MLCC_CHECK(!Outs.count(i) && N.hasOutput(i) && !chain.empty(),
             N.where() << ": epilogue fused after output " << i << " too late");
  auto e = std::make_shared<Epilogue>();
  e->Ctx = this;
  e->Root = N.Outputs[i];
  e->Chain = std::move(chain);
  for (const ir::Node *p : inlined)
    e->Inlined[p->Outputs[0]] = p;
  Epilogues[i] = e;
}

bool LowerCtx::epilogueRead() const {
  for (auto &[i, e] : Epilogues)
    if (e->Read)
      return true;
  return false;
}

TensorRef LowerCtx::out(size_t i) {
  auto it = Outs.find(i);
  if (it != Outs.end())
    return it->second;
  MLCC_CHECK(N.hasOutput(i), N.where() << " output " << i << " is omitted");
  auto epi = Epilogues.find(i);
  const ir::Value *v = N.Outputs[i];
  const ir::Value *stored =
      epi == Epilogues.end() ? v : epi->second->Chain.back()->Outputs[0];
  Buffer buf = B.param("out" + std::to_string(i), stored->Type.Type,
                       std::max<int64_t>(stored->Type.numel(), 1));
  Bindings.push_back({ParamBinding::Output, i, stored->Type, stored});
  TensorRef ref = withExtents(TensorRef(&B, buf, nullptr, stored->Type), stored);
  if (epi != Epilogues.end()) {
    epi->second->Final = ref;
    ref = withExtents(TensorRef(&B, nullptr, nullptr, v->Type), v);
    ref.Epi = epi->second;
  }
  Outs[i] = ref;
  return ref;
}

TensorRef LowerCtx::scratch(const std::string &name, DType type, Shape dims) {
  ir::TensorType t{type, std::move(dims)};
  Buffer buf = B.param(name, type, std::max<int64_t>(t.numel(), 1));
  Bindings.push_back({ParamBinding::Scratch, 0, t, nullptr});
  return withExtents(TensorRef(&B, buf, nullptr, t), nullptr);
}

// ---------------------------------------------------------------------------
// Shape rules
// ---------------------------------------------------------------------------

Shape broadcastShapes(const ir::Node &n, const std::vector<Shape> &shapes) {
  size_t rank = 0;
  for (auto &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto &s : shapes) {
    size_t lead = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t &o = out[lead + d];
      int64_t v = s[d];
      if (v == o || v == 1)
        continue;
      if (o == 1) {
        o = v;
        continue;
      }
      std::string all;
      for (auto &x : shapes)
        all += (all.empty() ? "" : " and ") + shapeToString(x);
      n.error() << "shapes " << all << " do not broadcast";
    }
  }
  return out;
}

std::optional<int64_t> contiguousBox(const Shape &in, const std::vector<int64_t> &start,
                                     const Shape &out) {
  if (in.size() != out.size() || start.size() != in.size() || numElements(out) == 0)
    return std::nullopt;
  // The last axis the box does not cover whole; before it only 1s.
  size_t last = 0;
  bool partial = false;
  for (size_t d = 0; d < in.size(); ++d)
    if (out[d] != in[d] || start[d] != 0) {
      last = d;
      partial = true;
    }
  int64_t offset = 0, stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    if (partial && d < last && out[d] != 1)
      return std::nullopt;
    if (start[d] < 0 || start[d] + out[d] > in[d])
      return std::nullopt;
    offset += start[d] * stride;
    stride *= in[d];
  }
  return offset;
}

int64_t normalizeAxis(const ir::Node &n, int64_t axis, int64_t rank,
                      const char *what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    n.error() << what << " " << axis << " is out of range for rank " << rank;
  return a;
}

void inferSameAsInput(ir::Node &n) { n.setOutput(0, n.inType(0)); }

void inferFloatUnary(ir::Node &n) {
  requireFloat(n, 0);
  inferSameAsInput(n);
}

void inferNumericUnary(ir::Node &n) {
  requireNumeric(n, 0);
  inferSameAsInput(n);
}

void inferSignedOrFloatUnary(ir::Node &n) {
  DType t = n.inDType(0);
  if (!isFloat(t) && !isSignedInt(t))
    n.error(ErrorKind::Unsupported)
        << "input 0 has type " << dtypeOnnxName(t)
        << "; a floating-point or signed integer type is required";
  inferSameAsInput(n);
}

void requireSameDTypes(const ir::Node &n) {
  DType t = n.inDType(0);
  for (size_t i = 1; i < n.Inputs.size(); ++i)
    if (n.hasInput(i) && n.inDType(i) != t)
      n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
                << " but input 0 has " << dtypeOnnxName(t);
}

void inferBroadcast(ir::Node &n) {
  requireSameDTypes(n);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n.Inputs.size(); ++i)
    if (n.hasInput(i))
      shapes.push_back(n.inShape(i));
  n.setOutput(0, n.inDType(0), broadcastShapes(n, shapes));
}

void inferBroadcastBool(ir::Node &n) {
  inferBroadcast(n);
  n.Outputs[0]->Type.Type = DType::Bool;
}

void requireType(const ir::Node &n, DType t, const std::string &what,
                 std::initializer_list<DType> allowed) {
  for (DType a : allowed)
    if (a == t)
      return;
  std::string list;
  for (DType a : allowed)
    list += (list.empty() ? "" : ", ") + std::string(dtypeOnnxName(a));
  n.error(ErrorKind::Unsupported) << what << " has type " << dtypeOnnxName(t)
                                  << "; supported: " << list;
}

void requireDType(const ir::Node &n, size_t i,
                  std::initializer_list<DType> allowed) {
  requireType(n, n.inDType(i), "input " + std::to_string(i), allowed);
}

void requireFloat(const ir::Node &n, size_t i) {
  if (!isFloat(n.inDType(i)))
    n.error(ErrorKind::Unsupported) << "input " << i << " has type "
                                    << dtypeOnnxName(n.inDType(i))
                                    << "; a floating-point type is required";
}

void requireNumeric(const ir::Node &n, size_t i) {
  DType t = n.inDType(i);
  if (!isFloat(t) && !isInteger(t))
    n.error(ErrorKind::Unsupported) << "input " << i << " has type "
                                    << dtypeOnnxName(t)
                                    << "; a numeric type is required";
}

// ---------------------------------------------------------------------------
// Common lowerings
// ---------------------------------------------------------------------------

void lowerElementwise(LowerCtx &c, const ScalarFn &fn) {
  std::vector<TensorRef> ins;
  for (size_t i = 0; i < c.node().Inputs.size(); ++i)
    if (c.hasIn(i))
      ins.push_back(c.in(i));
  TensorRef out = c.out(0);
  // Loop over the output flat when no input broadcasts (the common case),
  // otherwise over its full index space.
  bool flat = true;
  for (auto &t : ins)
    if (t.buffer() && t.shape() != out.shape())
      flat = false;
  // Bounded axes: flat only over the leading elements in use.
  Expr count = out.numelAtRunTime();
  if (!count)
    flat = false;
  if (flat) {
    auto body = [&](Expr i) {
      std::vector<Expr> args;
      for (auto &t : ins)
        args.push_back(t.loadFlat(i));
      out.storeFlat(i, fn(args));
    };
    c.b().loopTo("i", count, body);
    return;
  }
  c.b().loops(out.extents(), [&](const std::vector<Expr> &idx) {
    std::vector<Expr> args;
    for (auto &t : ins)
      args.push_back(t.loadBroadcast(idx));
    out.store(idx, fn(args));
  });
}

Expr boundedExtent(const AxisExtent &a, const std::function<Expr(size_t)> &dim) {
  Expr e = indexConst(a.Offset);
  for (size_t k = 0; k < a.Coeffs.size(); ++k)
    if (a.Coeffs[k])
      e = e + dim(k) * a.Coeffs[k];
  return e;
}

Expr countAs(DType t, const Expr &count) {
  return count->isConst() ? kir::constant(t, (double)count->IntValue) : cast(t, count);
}

void lowerReduction(LowerCtx &c, const TensorRef &x, const TensorRef &y,
                    const std::vector<int64_t> &axes, const Reduction &r) {
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : axes)
    reduced[(size_t)a] = true;
  // The extents when the kernel runs (constants unless an axis follows a
  // bounded dimension).
  Expr count = indexConst(1);
  std::vector<Expr> outer, inner;
  for (size_t d = 0; d < x.rank(); ++d) {
    Expr e = x.extent((int64_t)d);
    (reduced[d] ? inner : outer).push_back(e);
    if (reduced[d])
      count = count * e;
  }
  KernelBuilder &b = c.b();
  b.loops(outer, [&](const std::vector<Expr> &o) {
    Local acc = b.local("acc", r.AccType);
    b.set(acc, r.Init);
    b.loops(inner, [&](const std::vector<Expr> &in) {
      std::vector<Expr> idx;
      size_t io = 0, ii = 0;
      for (size_t d = 0; d < x.rank(); ++d)
        idx.push_back(reduced[d] ? in[ii++] : o[io++]);
      Expr v = cast(r.AccType, x.load(idx));
      if (r.Map)
        v = r.Map(v);
      b.set(acc, r.Combine(acc.get(), v));
    }, "r");
    Expr result = r.Finish ? r.Finish(acc.get(), count) : acc.get();
    // Output index: outer indices, with 0 for kept reduced axes.
    std::vector<Expr> oidx;
    size_t io = 0;
    bool kept = y.rank() == x.rank();
    for (size_t d = 0; d < x.rank(); ++d) {
      if (!reduced[d])
        oidx.push_back(o[io++]);
      else if (kept)
        oidx.push_back(indexConst(0));
    }
    y.store(oidx, cast(y.computeType(), result));
  }, "o");
}

void addElementwise(OpRegistry &R, const std::string &name, int64_t since,
                    NodeScalarFn fn, std::function<void(ir::Node &)> infer,
                    const std::string &domain) {
  OpSchema s;
  s.Domain = domain;
  s.Name = name;
  s.SinceVersion = since;
  s.Fusion = FusionClass::Elementwise;
  s.RunTimeExtents = true;
  s.Infer = std::move(infer);
  s.Scalar = fn;
  s.Lower = [fn](LowerCtx &c) {
    const ir::Node &n = c.node();
    lowerElementwise(c, [&](const std::vector<Expr> &a) { return fn(n, a); });
  };
  R.add(std::move(s));
}

void addElementwise(OpRegistry &R, const std::string &name, int64_t since,
                    ScalarFn fn, std::function<void(ir::Node &)> infer,
                    const std::string &domain) {
  addElementwise(
      R, name, since,
      NodeScalarFn([fn](const ir::Node &, const std::vector<Expr> &a) { return fn(a); }),
      std::move(infer), domain);
}

void addBinaryElementwise(OpRegistry &R, const std::string &name, int64_t since,
                          std::function<void(ir::Node &)> infer,
                          std::function<Expr(Expr, Expr)> fn) {
  addElementwise(
      R, name, since,
      ScalarFn([fn](const std::vector<Expr> &a) { return fn(a[0], a[1]); }),
      std::move(infer));
}

} // namespace mlcc::ops
