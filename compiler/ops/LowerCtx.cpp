//===- LowerCtx.cpp - A node's operands in its kernel ---------------------===//
//
// TensorRef and LowerCtx (Lowering.h): a node's inputs, outputs and scratch
// buffers as the kernel parameters they bind to, loaded in their compute type
// and stored with a conversion, constant splats as constants, bounded axes
// with their run-time extents; and the fused epilogue of an output (the
// elementwise nodes after it, their single-use producers computed in place),
// through which its stores pass.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <functional>
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
  if (denseAtRunTime()) {
    // Every element up to the last bounded axis, then whole runs of `per`.
    const size_t last = (size_t)Bounded.back().Axis;
    int64_t inner = 1;
    for (size_t d = last + 1; d < rank(); ++d)
      inner *= Type.Dims[d];
    if (inner % per)
      return nullptr;
    Expr n = indexConst(inner / per);
    for (size_t d = 0; d <= last; ++d)
      n = extent((int64_t)d) * n;
    return n;
  }
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
  if (denseAtRunTime()) {
    Expr off = indexConst(0);
    for (size_t d = 0; d < idx.size(); ++d)
      off = off * extent((int64_t)d) + idx[d];
    return off;
  }
  std::vector<int64_t> s = strides();
  Expr off = indexConst(0);
  for (size_t d = 0; d < idx.size(); ++d)
    if (Type.Dims[d] != 1)
      off = off + idx[d] * s[d];
  return off;
}

const kir::Buffer &TensorRef::buffer() const {
  if (NibbleAxis >= 0 && Ctx)
    Ctx->NibbleRead = true;
  return Buf;
}

namespace {

/// An index expression halved: `Half` = floor(e / 2), and the parity of e
/// when it is known at compile time (0 or 1; -1 otherwise). Sums, multiples
/// and min/max of known parity (a tile's first row, min(t * 2, M - 2), plus
/// a constant row) halve without a division, so that the unpacking of a
/// tile's rows is decided at compile time.
struct Halved {
  Expr Half;
  int Parity = -1;
};

Halved halve(const Expr &e) {
  if (e->isConst() && e->IntValue >= 0)
    return {indexConst(e->IntValue >> 1), (int)(e->IntValue & 1)};
  if (e->Kind == ExprKind::Binary && e->Lanes == 1) {
    const Expr &a = e->A, &b = e->B;
    switch (e->Bin) {
    case BinOp::Add: {
      Halved x = halve(a), y = halve(b);
      if (x.Parity >= 0 && y.Parity >= 0)
        return {x.Half + y.Half + (int64_t)(x.Parity & y.Parity), x.Parity ^ y.Parity};
      break;
    }
    case BinOp::Mul:
      for (const auto &[k, x] : {std::pair{b, a}, std::pair{a, b}})
        if (k->isConst() && k->IntValue >= 0 && k->IntValue % 2 == 0)
          return {x * (k->IntValue / 2), 0};
      break;
    case BinOp::Min:
    case BinOp::Max: {
      // floor((2u + p) / 2) = u: min and max of equal parity halve inside.
      Halved x = halve(a), y = halve(b);
      if (x.Parity >= 0 && x.Parity == y.Parity)
        return {e->Bin == BinOp::Min ? min(x.Half, y.Half) : max(x.Half, y.Half), x.Parity};
      break;
    }
    default:
      break;
    }
  }
  return {e / 2, -1};
}

} // namespace

Expr TensorRef::loadNibbles(const std::vector<Expr> &idx) const {
  const size_t axis = (size_t)NibbleAxis;
  Shape phys = Type.Dims;
  phys[axis] = (phys[axis] + 1) / 2;
  Halved h = halve(idx[axis]);
  Expr off = indexConst(0);
  int64_t stride = 1;
  for (size_t d = idx.size(); d-- > 0;) {
    off = off + (d == axis ? h.Half : idx[d]) * stride;
    stride *= phys[d];
  }
  const DType i32 = DType::I32;
  Expr w = cast(i32, kir::load(Buf, off)); // int8: sign-extended
  Expr lo, hi;
  if (Type.Type == DType::I8) {
    lo = binary(BinOp::Shr, binary(BinOp::Shl, w, constantInt(i32, 28)), constantInt(i32, 24));
    hi = binary(BinOp::BitAnd, w, constantInt(i32, -16));
  } else { // int32: four bytes, each its high nibble
    Expr mask = constantInt(i32, (int32_t)0xF0F0F0F0u);
    lo = binary(BinOp::BitAnd, binary(BinOp::Shl, w, constantInt(i32, 4)), mask);
    hi = binary(BinOp::BitAnd, w, mask);
  }
  Expr v = h.Parity == 0   ? lo
           : h.Parity == 1 ? hi
                           : select(eq(idx[axis] % 2, indexConst(1)), hi, lo);
  return cast(computeType(), cast(Type.Type, v));
}

Expr TensorRef::loadFlat(const Expr &off) const {
  if (NibbleAxis >= 0 && Buf && !Epi) {
    // The multi-index of the flat offset (row-major at the logical shape).
    std::vector<Expr> idx(rank());
    int64_t stride = 1;
    for (size_t d = rank(); d-- > 0;) {
      idx[d] = d == 0 ? off / stride : (off / stride) % Type.Dims[d];
      stride *= Type.Dims[d];
    }
    return loadNibbles(idx);
  }
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
  if (NibbleAxis >= 0) {
    MLCC_CHECK(idx.size() == rank(), "index of rank " << idx.size() << " for a rank-"
                                                      << rank() << " tensor");
    return loadNibbles(idx);
  }
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
  if (v) {
    ref.Bounded = v->Bounded;
    ref.RunTimeDense = DenseValues && DenseValues->count(v);
  }
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
    const bool nibbles = NibbleValues && NibbleValues->count(v) && v->Const &&
                         v->FourBitAxis >= 0 && v->FourBitAxis < (int)v->Type.rank() &&
                         v->Bounded.empty();
    int64_t elements = std::max<int64_t>(v->Type.numel(), 1);
    if (nibbles) {
      const int64_t along = v->Type.Dims[(size_t)v->FourBitAxis];
      elements = elements / along * ((along + 1) / 2);
    }
    Buffer buf = B.param(index == SIZE_MAX ? "x" + std::to_string(Operands.size())
                                           : "in" + std::to_string(index),
                         v->Type.Type, elements);
    Bindings.push_back({ParamBinding::Input, index, v->Type, v, nibbles ? v->FourBitAxis : -1});
    ref = withExtents(TensorRef(&B, buf, v->Const, v->Type), v);
    if (nibbles)
      ref.NibbleAxis = v->FourBitAxis;
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

} // namespace mlcc::ops

namespace mlcc::ops {

bool holdsNibblePairs(const Tensor &t) {
  if ((t.dtype() != DType::I8 && t.dtype() != DType::I32) || t.numel() < 2)
    return false;
  for (uint8_t byte : t.denseBytes())
    if (byte & 0x0F)
      return false;
  return true;
}

std::vector<uint8_t> nibblePairBytes(const Tensor &t, int axis) {
  MLCC_CHECK(holdsNibblePairs(t) && axis >= 0 && axis < (int)t.shape().size(),
             "nibble pairs of a tensor that does not hold them");
  const std::vector<uint8_t> bytes = t.denseBytes();
  const Shape &s = t.shape();
  const int64_t size = dtypeSize(t.dtype()), along = s[(size_t)axis];
  int64_t inner = size, outer = 1;
  for (size_t d = (size_t)axis + 1; d < s.size(); ++d)
    inner *= s[d];
  for (size_t d = 0; d < (size_t)axis; ++d)
    outer *= s[d];
  const int64_t half = (along + 1) / 2;
  std::vector<uint8_t> out((size_t)(outer * half * inner), 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t a) { return (size_t)((o * along + a) * inner + i); };
        uint8_t lo = bytes[at(2 * j)] >> 4;
        uint8_t hi = 2 * j + 1 < along ? bytes[at(2 * j + 1)] & 0xF0 : 0;
        out[(size_t)((o * half + j) * inner + i)] = (uint8_t)(lo | hi);
      }
  return out;
}

} // namespace mlcc::ops
