//===- SubByte.cpp - 4- and 2-bit elements as byte operations -------------===//
//
// expandSubByte (Schedule.h): packed loads, stores and casts rewritten into
// byte operations for every emitter and the interpreter.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/support/Error.h"
#include "compiler/support/SubByte.h"

#include <unordered_map>

namespace mlcc::kir {

namespace {

constexpr DType I32 = DType::I32;

Expr i32(int64_t v) { return constantInt(I32, v); }

/// The type that holds a loaded element: its value for the integer types,
/// its code for float4e2m1.
DType containerType(DType t) {
  return t == DType::I4 || t == DType::I2 ? DType::I8 : DType::U8;
}

/// The low `bits` bits of the I32 `x`, sign-extended.
Expr signExtend(const Expr &x, unsigned bits) {
  Expr s = i32(32 - (int64_t)bits);
  return binary(BinOp::Shr, binary(BinOp::Shl, x, s), s);
}

/// The f32 number of a float4e2m1 code (an integer expression).
Expr decodeF4(const Expr &code) {
  Expr c = cast(I32, code);
  Expr mag = binary(BinOp::BitAnd, c, i32(7));
  Expr e = binary(BinOp::Shr, mag, i32(1)), m = binary(BinOp::BitAnd, mag, i32(1));
  // Twice the magnitude: m when the exponent is 0 (0, 0.5), else
  // (2 + m) << (e - 1) (1, 1.5, 2, 3, 4, 6).
  Expr normal = binary(BinOp::Shl, m + i32(2), max(e - i32(1), i32(0)));
  Expr twice = select(binary(BinOp::Eq, e, i32(0)), m, normal);
  Expr v = cast(DType::F32, twice) * constant(DType::F32, 0.5);
  return select(binary(BinOp::Ne, binary(BinOp::BitAnd, c, i32(8)), i32(0)), -v, v);
}

/// The float4e2m1 code (uint8) nearest to the float `x`: ties to even,
/// saturating at +-6, NaN to 0x8 (compiler/support/SubByte.h).
Expr encodeF4(const Expr &x) {
  Expr v = cast(DType::F32, x);
  Expr a = unary(UnOp::Abs, v);
  struct Edge {
    double At;
    bool Inclusive;
  };
  // Midpoints between neighbouring magnitudes; a tie goes to the even code.
  static const Edge Edges[] = {{0.25, false}, {0.75, true}, {1.25, false}, {1.75, true},
                               {2.5, false},  {3.5, true},  {5.0, false}};
  Expr mag = i32(0);
  for (const Edge &edge : Edges)
    mag = mag + cast(I32, binary(edge.Inclusive ? BinOp::Ge : BinOp::Gt, a,
                                 constant(DType::F32, edge.At)));
  Expr negative = binary(BinOp::Lt, bitcast(I32, v), i32(0));
  Expr code = binary(BinOp::BitOr, mag, select(negative, i32(8), i32(0)));
  return cast(DType::U8, select(unary(UnOp::IsNaN, v), i32(8), code));
}

/// The container of integer sub-byte type `t` for the value `x` (any
/// integer, bool or float): its low bits, as Cast wraps.
Expr wrapInt(DType t, const Expr &x) {
  Expr i = cast(I32, x);
  unsigned bits = dtypeBits(t);
  if (isSignedInt(t))
    return cast(DType::I8, signExtend(i, bits));
  return cast(DType::U8, binary(BinOp::BitAnd, i, i32((1 << bits) - 1)));
}

class Expander : public Mutator {
public:
  /// The packed uint8 buffer that replaces `b` (b itself when it is not of
  /// a sub-byte type).
  Buffer bytesOf(const Buffer &b) {
    if (!isSubByte(b->Type))
      return b;
    auto [it, fresh] = Buffers.try_emplace(b.get());
    if (fresh) {
      auto nb = std::make_shared<BufferNode>(*b);
      nb->Type = DType::U8;
      nb->Size = storageBytes(b->Type, b->Size);
      it->second = nb;
    }
    return it->second;
  }

  using Mutator::mutate;

  Expr mutate(const Expr &e) override {
    auto it = Done.find(e.get());
    if (it != Done.end())
      return it->second;
    Expr r = lower(e);
    Done.emplace(e.get(), r);
    Keep.push_back(e);
    return r;
  }

  Stmt mutate(const Stmt &s) override {
    if (!s)
      return s;
    if (s->Kind == StmtKind::Alloc && isSubByte(s->Buf->Type))
      return alloc(bytesOf(s->Buf), mutate(s->Inner));
    if (s->Kind != StmtKind::Store || !isSubByte(s->Buf->Type))
      return Mutator::mutate(s);
    MLCC_CHECK(s->Value->Lanes == 1, "a vector store of " << dtypeName(s->Buf->Type));
    DType t = s->Buf->Type;
    Buffer bytes = bytesOf(s->Buf);
    Expr index = mutate(s->Index);
    int64_t per = subBytePerByte(t), bits = dtypeBits(t);
    Expr at = index / per;
    Expr shift = cast(I32, (index % per) * bits);
    Expr mask = i32((1 << bits) - 1);
    Expr code = binary(BinOp::BitAnd, cast(I32, cast(DType::U8, mutate(s->Value))), mask);
    Expr old = cast(I32, load(bytes, at));
    Expr kept = binary(BinOp::BitAnd, old,
                       unary(UnOp::BitNot, binary(BinOp::Shl, mask, shift)));
    Expr updated = binary(BinOp::BitOr, kept, binary(BinOp::Shl, code, shift));
    return store(bytes, at, cast(DType::U8, updated));
  }

private:
  Expr lower(const Expr &e) {
    switch (e->Kind) {
    case ExprKind::Load: {
      if (!isSubByte(e->Buf->Type))
        return Mutator::mutate(e);
      MLCC_CHECK(e->Lanes == 1, "a vector load of " << dtypeName(e->Buf->Type));
      DType t = e->Buf->Type;
      Expr index = mutate(e->A);
      int64_t per = subBytePerByte(t), bits = dtypeBits(t);
      Expr byte = cast(I32, load(bytesOf(e->Buf), index / per));
      Expr raw = binary(BinOp::BitAnd,
                        binary(BinOp::Shr, byte, cast(I32, (index % per) * bits)),
                        i32((1 << bits) - 1));
      return isSignedInt(t) ? cast(DType::I8, signExtend(raw, (unsigned)bits))
                            : cast(DType::U8, raw);
    }
    case ExprKind::Cast: {
      DType from = e->A->Type, to = e->Type;
      if (!isSubByte(from) && !isSubByte(to))
        return Mutator::mutate(e);
      Expr v = mutate(e->A);
      if (from == DType::F4E2M1)
        v = decodeF4(v);
      if (to == DType::F4E2M1)
        return encodeF4(v);
      if (isSubByte(to))
        return wrapInt(to, v);
      return cast(to, v);
    }
    case ExprKind::Const: {
      if (!isSubByte(e->Type))
        return e;
      if (e->Type == DType::F4E2M1)
        return constantInt(DType::U8, float4e2m1Code(e->FloatValue));
      uint8_t code = subByteFromInt(e->Type, e->IntValue);
      return constantInt(containerType(e->Type), (int64_t)subByteValue(e->Type, code));
    }
    case ExprKind::Unary:
    case ExprKind::Binary:
      // Arithmetic is in computeType: float4e2m1 codes are no numbers.
      MLCC_CHECK(e->A->Type != DType::F4E2M1 && (!e->B || e->B->Type != DType::F4E2M1),
                 "arithmetic on float4e2m1 codes");
      return Mutator::mutate(e);
    default:
      return Mutator::mutate(e);
    }
  }

  std::unordered_map<const BufferNode *, Buffer> Buffers;
  std::unordered_map<const ExprNode *, Expr> Done;
  std::vector<Expr> Keep; ///< keeps the memo's keys alive
};

} // namespace

bool hasSubByte(const Kernel &k) {
  for (const Buffer &p : k.Params)
    if (isSubByte(p->Type))
      return true;
  bool found = false;
  visitStmts(k.Body, [&](const Stmt &s) {
    if ((s->Kind == StmtKind::Alloc || s->Kind == StmtKind::Store) && isSubByte(s->Buf->Type))
      found = true;
  });
  if (!found)
    visitExprs(k.Body, [&](const Expr &e) {
      if (isSubByte(e->Type) || (e->Kind == ExprKind::Load && isSubByte(e->Buf->Type)))
        found = true;
    });
  return found;
}

Kernel expandSubByte(const Kernel &k) {
  if (!hasSubByte(k))
    return k;
  Kernel r = hasVectors(k.Body) ? scalarize(k) : k;
  Expander x;
  for (Buffer &p : r.Params)
    p = x.bytesOf(p);
  r.Body = x.mutate(r.Body);
  r.Gemm = nullptr; // a library call reads no packed elements
  r.finalize();
  return r;
}

} // namespace mlcc::kir
