#include "targets/c/CEmitter.h"

#include "compiler/output/Header.h"
#include "compiler/support/Error.h"
#include "compiler/support/Float8.h"
#include "compiler/kernel/Schedule.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace mlcc::cgen {

using namespace kir;

namespace {

/// Fixed helpers: conversions and NaN-propagating min/max, with the same
/// semantics as kernel IR (compiler/kernel/ScalarEval.h).
#include "CPrelude.inc" // runtime-c/mlcc_prelude.h as PreludeText
const char *Prelude = PreludeText;

} // namespace

const char *preludeText() { return Prelude; }

const char *cType(DType t) {
  switch (t) {
  case DType::Index: return "mlcc_idx";
  case DType::Bool: return "uint8_t";
  default: return output::cInterfaceType(t);
  }
}

namespace {

/// Unsigned type used for wrapping integer arithmetic.
const char *wrapType(DType t) {
  return dtypeBits(t) > 32 ? "uint64_t" : "uint32_t";
}

std::string intLiteral(DType t, int64_t v) {
  char buf[64];
  switch (t) {
  case DType::Bool:
    return v ? "1" : "0";
  case DType::Index:
    if (v >= INT32_MIN && v <= INT32_MAX)
      return std::to_string(v);
    std::snprintf(buf, sizeof buf, "(mlcc_idx)INT64_C(%" PRId64 ")", v);
    return buf;
  case DType::I64:
    if (v == INT64_MIN)
      return "INT64_MIN";
    std::snprintf(buf, sizeof buf, "INT64_C(%" PRId64 ")", v);
    return buf;
  case DType::U64:
    std::snprintf(buf, sizeof buf, "UINT64_C(%" PRIu64 ")", (uint64_t)v);
    return buf;
  case DType::U32:
    std::snprintf(buf, sizeof buf, "((uint32_t)%" PRIu64 "u)", (uint64_t)(uint32_t)v);
    return buf;
  case DType::I32:
    if (v == INT32_MIN)
      return "INT32_MIN";
    return "((int32_t)" + std::to_string(v) + ")";
  default:
    return "((" + std::string(cType(t)) + ")" + std::to_string(v) + ")";
  }
}

/// The trailing format arguments of mlcc_f8_to_f / mlcc_f_to_f8 for `t`.
std::string float8Args(DType t, bool encode) {
  Float8Format f = float8Format(t);
  std::string s = ", " + std::to_string(f.ManBits) + "u, " + std::to_string(f.Bias) + "u";
  if (encode)
    s += ", " + std::to_string(f.MaxCode) + "u";
  return s + (f.Fnuz ? ", 1u" : ", 0u") + (f.HasInf ? ", 1u" : ", 0u");
}

/// A float8 value of type `t` as an f32 C expression, and back.
std::string float8ToFloatC(DType t, const std::string &a) {
  if (t == DType::F8E8M0)
    return "mlcc_e8m0_to_f(" + a + ")";
  return "mlcc_f8_to_f(" + a + float8Args(t, false) + ")";
}

std::string floatToFloat8C(DType t, const std::string &a) {
  if (t == DType::F8E8M0)
    return "mlcc_f_to_e8m0(" + a + ")";
  return "mlcc_f_to_f8(" + a + float8Args(t, true) + ")";
}

} // namespace

std::string floatLiteral(DType t, double v) {
  bool f32 = t == DType::F32;
  std::string ty = f32 ? "float" : "double";
  if (std::isnan(v))
    return f32 ? "NAN" : "((double)NAN)";
  if (std::isinf(v))
    return std::string(v < 0 ? "(-" : "(") + (f32 ? "INFINITY" : "(double)INFINITY") + ")";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  std::string s = buf;
  if (f32)
    s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

namespace {

const char *mathName(UnOp op) {
  switch (op) {
  case UnOp::Abs: return "fabs";
  case UnOp::Sqrt: return "sqrt";
  case UnOp::Exp: return "exp";
  case UnOp::Log: return "log";
  case UnOp::Sin: return "sin";
  case UnOp::Cos: return "cos";
  case UnOp::Tan: return "tan";
  case UnOp::Asin: return "asin";
  case UnOp::Acos: return "acos";
  case UnOp::Atan: return "atan";
  case UnOp::Sinh: return "sinh";
  case UnOp::Cosh: return "cosh";
  case UnOp::Tanh: return "tanh";
  case UnOp::Asinh: return "asinh";
  case UnOp::Acosh: return "acosh";
  case UnOp::Atanh: return "atanh";
  case UnOp::Erf: return "erf";
  case UnOp::Floor: return "floor";
  case UnOp::Ceil: return "ceil";
  case UnOp::Round: return "rint";
  case UnOp::Trunc: return "trunc";
  default: return nullptr;
  }
}

class KernelWriter {
public:
  KernelWriter(std::ostream &os, Dialect d) : OS(os), D(d) {}

  /// Writes `kernel`; vector statements become loops over lanes, which the
  /// C compiler vectorizes again.
  void write(const Kernel &kernel, const std::string &qualifiers, const std::string &fname) {
    Kernel k = scalarize(widenHalfArithmetic(kernel));
    OS << qualifiers << " " << fname << "(";
    for (size_t i = 0; i < k.Params.size(); ++i) {
      const Buffer &b = k.Params[i];
      bool written = k.Written[i];
      bool overlaps = i < kernel.Overlapping.size() && kernel.Overlapping[i];
      OS << (i ? ", " : "") << (written ? "" : "const ") << cType(b->Type)
         << (overlaps ? " *" : " *MLCC_RESTRICT ") << name(b.get());
    }
    if (k.Params.empty())
      OS << "void";
    OS << ") {\n";
    stmt(k.Body, 1);
    OS << "}\n\n";
  }

private:
  std::string unique(std::string base) {
    std::string s;
    for (char c : base)
      s += std::isalnum((unsigned char)c) ? c : '_';
    if (s.empty() || std::isdigit((unsigned char)s[0]))
      s = "v" + s;
    std::string n = s;
    for (int k = 1; Taken.count(n); ++k)
      n = s + "_" + std::to_string(k);
    Taken.insert(n);
    return n;
  }
  std::string name(const VarNode *v) {
    auto it = VarNames.find(v);
    if (it != VarNames.end())
      return it->second;
    return VarNames[v] = unique(v->Name);
  }
  std::string name(const BufferNode *b) {
    auto it = BufNames.find(b);
    if (it != BufNames.end())
      return it->second;
    return BufNames[b] = unique(b->Name);
  }

  std::string expr(const Expr &e) {
    switch (e->Kind) {
    case ExprKind::Const:
      if (isFloat(e->Type)) {
        if (e->Type == DType::F16)
          return "mlcc_f2h(" + floatLiteral(DType::F32, e->FloatValue) + ")";
        if (e->Type == DType::BF16)
          return "mlcc_f2bf(" + floatLiteral(DType::F32, e->FloatValue) + ")";
        if (isFloat8(e->Type)) // the bit pattern, encoded on the host
          return intLiteral(DType::U8,
                            floatToFloat8(e->Type, (float)e->FloatValue));
        return floatLiteral(e->Type, e->FloatValue);
      }
      return intLiteral(e->Type, e->IntValue);
    case ExprKind::VarRef:
      return name(e->V.get());
    case ExprKind::Load:
      return name(e->Buf.get()) + "[" + expr(e->A) + "]";
    case ExprKind::Unary:
      return unaryExpr(e);
    case ExprKind::Binary:
      return binaryExpr(e);
    case ExprKind::Select:
      return "(" + expr(e->A) + " ? " + expr(e->B) + " : " + expr(e->C) + ")";
    case ExprKind::Cast:
      return castExpr(e->Type, e->A->Type, expr(e->A));
    case ExprKind::BitCast:
      if (e->Type == DType::F32)
        return "mlcc_bits2f((uint32_t)" + expr(e->A) + ")";
      return std::string("((") + cType(e->Type) + ")mlcc_f2bits(" + expr(e->A) + "))";
    default:
      MLCC_CHECK(false, "the C emitter writes scalarized kernels");
    }
    return "";
  }

  std::string unaryExpr(const Expr &e) {
    DType t = e->A->Type;
    std::string a = expr(e->A);
    if (isFloat(t)) {
      std::string suffix = t == DType::F32 ? "f" : "";
      switch (e->Un) {
      case UnOp::Neg: return "(-" + a + ")";
      case UnOp::IsNaN: return "(isnan(" + a + ") != 0)";
      case UnOp::IsInf: return "(isinf(" + a + ") != 0)";
      default: {
        const char *fn = mathName(e->Un);
        MLCC_CHECK(fn, "no C function for " << unOpName(e->Un));
        return std::string(fn) + suffix + "(" + a + ")";
      }
      }
    }
    std::string T = cType(t);
    switch (e->Un) {
    case UnOp::Neg:
      if (t == DType::Index)
        return "(-" + a + ")";
      return "((" + T + ")(0u - (" + wrapType(t) + ")" + a + "))";
    case UnOp::Not: return "(!" + a + ")";
    case UnOp::BitNot: return "((" + T + ")~" + a + ")";
    case UnOp::SextBytes02: return "mlcc_sxtb16((uint32_t)" + a + ")";
    case UnOp::SextBytes13: return "mlcc_sxtb16((uint32_t)" + a + " >> 8)";
    case UnOp::ZextBytes02: return "((int32_t)((uint32_t)" + a + " & 0x00ff00ffu))";
    case UnOp::ZextBytes13: return "((int32_t)((uint32_t)" + a + " >> 8 & 0x00ff00ffu))";
    case UnOp::Abs:
      if (isUnsignedInt(t))
        return a;
      return "((" + T + ")(" + a + " < 0 ? (0u - (" + wrapType(t) + ")" + a +
             ") : (" + wrapType(t) + ")" + a + "))";
    default:
      MLCC_CHECK(false, "unary " << unOpName(e->Un) << " on " << dtypeName(t));
    }
    return "";
  }

  std::string binaryExpr(const Expr &e) {
    DType t = e->A->Type;
    std::string a = expr(e->A), b = expr(e->B);
    auto infix = [&](const char *op) { return "(" + a + " " + op + " " + b + ")"; };
    switch (e->Bin) {
    case BinOp::Eq: return infix("==");
    case BinOp::Ne: return infix("!=");
    case BinOp::Lt: return infix("<");
    case BinOp::Le: return infix("<=");
    case BinOp::Gt: return infix(">");
    case BinOp::Ge: return infix(">=");
    case BinOp::And: return infix("&&");
    case BinOp::Or: return infix("||");
    case BinOp::Xor: return "((" + a + " != 0) != (" + b + " != 0))";
    default: break;
    }
    if (isFloat(t)) {
      std::string s = t == DType::F32 ? "f" : "";
      switch (e->Bin) {
      case BinOp::Add: return infix("+");
      case BinOp::Sub: return infix("-");
      case BinOp::Mul: return infix("*");
      case BinOp::Div: return infix("/");
      case BinOp::Rem: return "fmod" + s + "(" + a + ", " + b + ")";
      case BinOp::Min: return "mlcc_min" + s + "(" + a + ", " + b + ")";
      case BinOp::Max: return "mlcc_max" + s + "(" + a + ", " + b + ")";
      case BinOp::Pow: return "pow" + s + "(" + a + ", " + b + ")";
      default:
        MLCC_CHECK(false, "binary " << binOpName(e->Bin) << " on float");
      }
    }
    std::string T = cType(t);
    if (t == DType::Index) {
      switch (e->Bin) {
      case BinOp::Add: return infix("+");
      case BinOp::Sub: return infix("-");
      case BinOp::Mul: return infix("*");
      case BinOp::Div: return infix("/");
      case BinOp::Rem: return infix("%");
      case BinOp::Min: return "((" + T + ")mlcc_smin(" + a + ", " + b + "))";
      case BinOp::Max: return "((" + T + ")mlcc_smax(" + a + ", " + b + "))";
      default: break;
      }
    }
    std::string minmax = isUnsignedInt(t) ? "mlcc_u" : "mlcc_s";
    std::string W = wrapType(t);
    auto wrapped = [&](const char *op) {
      return "((" + T + ")((" + W + ")" + a + " " + op + " (" + W + ")" + b + "))";
    };
    std::string width = std::to_string(dtypeBits(t));
    switch (e->Bin) {
    case BinOp::Add: return wrapped("+");
    case BinOp::Sub: return wrapped("-");
    case BinOp::Mul: return wrapped("*");
    case BinOp::Div: return "((" + T + ")(" + a + " / " + b + "))";
    case BinOp::Rem: return "((" + T + ")(" + a + " % " + b + "))";
    case BinOp::Min: return "((" + T + ")" + minmax + "min(" + a + ", " + b + "))";
    case BinOp::Max: return "((" + T + ")" + minmax + "max(" + a + ", " + b + "))";
    case BinOp::BitAnd: return "((" + T + ")(" + a + " & " + b + "))";
    case BinOp::BitOr: return "((" + T + ")(" + a + " | " + b + "))";
    case BinOp::BitXor: return "((" + T + ")(" + a + " ^ " + b + "))";
    case BinOp::Dot4: return "mlcc_dot4(" + a + ", " + b + ")";
    case BinOp::Dot2: return "mlcc_dot2(" + a + ", " + b + ")";
    case BinOp::MulHigh: return "mlcc_mulhi(" + a + ", " + b + ")";
    case BinOp::SDot4:
    case BinOp::SDot4Narrow: return "mlcc_sdot4(" + a + ", " + b + ")";
    case BinOp::Shl:
      return "((uint64_t)" + b + " >= " + width + "u ? (" + T + ")0 : (" + T +
             ")((" + W + ")" + a + " << " + b + "))";
    case BinOp::Shr:
      if (isUnsignedInt(t))
        return "((uint64_t)" + b + " >= " + width + "u ? (" + T + ")0 : (" +
               T + ")(" + a + " >> " + b + "))";
      return "((uint64_t)" + b + " >= " + width + "u ? (" + T + ")(" + a +
             " < 0 ? -1 : 0) : (" + T + ")(" + a + " >> " + b + "))";
    default:
      MLCC_CHECK(false, "binary " << binOpName(e->Bin) << " on " << dtypeName(t));
    }
    return "";
  }

  /// Converts C value `a` of kernel type `from` to kernel type `to`.
  std::string castExpr(DType to, DType from, const std::string &a) {
    if (to == from)
      return a;
    // 16-bit floats travel as bits: go through float.
    if (from == DType::F16)
      return castExpr(to, DType::F32, "mlcc_h2f(" + a + ")");
    if (from == DType::BF16)
      return castExpr(to, DType::F32, "mlcc_bf2f(" + a + ")");
    if (to == DType::F16)
      return "mlcc_f2h(" + castExpr(DType::F32, from, a) + ")";
    if (to == DType::BF16)
      return "mlcc_f2bf(" + castExpr(DType::F32, from, a) + ")";
    // float8 values travel as their uint8_t bits, like the 16-bit floats.
    if (isFloat8(from))
      return castExpr(to, DType::F32, float8ToFloatC(from, a));
    if (isFloat8(to))
      return floatToFloat8C(to, castExpr(DType::F32, from, a));
    if (to == DType::Bool)
      return "(" + a + " != 0)";
    if (isFloat(to))
      return "((" + std::string(cType(to)) + ")" + a + ")";
    if (isFloat(from)) {
      std::string d = "(double)" + a;
      switch (to) {
      case DType::I8: return "((int8_t)mlcc_sat_i(" + d + ", -128.0, 127.0))";
      case DType::U8: return "((uint8_t)mlcc_sat_i(" + d + ", 0.0, 255.0))";
      case DType::I16: return "((int16_t)mlcc_sat_i(" + d + ", -32768.0, 32767.0))";
      case DType::U16: return "((uint16_t)mlcc_sat_i(" + d + ", 0.0, 65535.0))";
      case DType::I32: return "((int32_t)mlcc_sat_i(" + d + ", -2147483648.0, 2147483647.0))";
      case DType::U32: return "((uint32_t)mlcc_sat_i(" + d + ", 0.0, 4294967295.0))";
      case DType::U64: return "mlcc_sat_u64(" + d + ")";
      case DType::Index: return "((mlcc_idx)mlcc_sat_i64(" + d + "))";
      default: return "mlcc_sat_i64(" + d + ")";
      }
    }
    return "((" + std::string(cType(to)) + ")" + a + ")";
  }

  void stmt(const Stmt &s, int depth) {
    std::string ind((size_t)depth * 2, ' ');
    switch (s->Kind) {
    case StmtKind::Block:
      for (auto &c : s->Body)
        stmt(c, depth);
      return;
    case StmtKind::For: {
      std::string v = name(s->LoopVar.get());
      if (D == Dialect::Cuda &&
          (s->Loop == LoopKind::GpuBlock || s->Loop == LoopKind::GpuThread)) {
        // The launch's grid and block sizes are the loops' extents.
        OS << ind << "{\n" << ind << "  const mlcc_idx " << v << " = (mlcc_idx)"
           << (s->Loop == LoopKind::GpuBlock ? "blockIdx.x" : "threadIdx.x") << ";\n"
           << ind << "  (void)" << v << ";\n";
        stmt(s->Inner, depth + 1);
        OS << ind << "}\n";
        return;
      }
      OS << ind << "for (mlcc_idx " << v << " = " << expr(s->Begin) << "; "
         << v << " < " << expr(s->End) << "; ++" << v << ") {\n";
      stmt(s->Inner, depth + 1);
      OS << ind << "}\n";
      return;
    }
    case StmtKind::Store:
      OS << ind << name(s->Buf.get()) << "[" << expr(s->Index)
         << "] = " << expr(s->Value) << ";\n";
      return;
    case StmtKind::If:
      OS << ind << "if (" << expr(s->Cond) << ") {\n";
      stmt(s->Inner, depth + 1);
      if (s->Else) {
        OS << ind << "} else {\n";
        stmt(s->Else, depth + 1);
      }
      OS << ind << "}\n";
      return;
    case StmtKind::Alloc:
      OS << ind << "{\n" << ind << "  "
         << (D == Dialect::Cuda && s->Buf->Kind == BufferKind::Shared ? "__shared__ " : "")
         << cType(s->Buf->Type) << " " << name(s->Buf.get()) << "[" << s->Buf->Size
         << "];\n";
      stmt(s->Inner, depth + 1);
      OS << ind << "}\n";
      return;
    case StmtKind::Barrier:
      // In C a block's thread loops run one after the other: nothing to wait for.
      if (D == Dialect::Cuda)
        OS << ind << (s->Warp ? "__syncwarp();\n" : "__syncthreads();\n");
      return;
    }
  }

  std::ostream &OS;
  Dialect D;
  std::map<const VarNode *, std::string> VarNames;
  std::map<const BufferNode *, std::string> BufNames;
  std::set<std::string> Taken;
};

} // namespace

void writeKernel(std::ostream &os, const Kernel &k, const std::string &qualifiers,
                 const std::string &name, Dialect d) {
  KernelWriter w(os, d);
  w.write(k, qualifiers, name);
}

void writeConstant(std::ostream &os, const ConstantData &c, const std::string &prefix) {
  int64_t n = std::max<int64_t>(c.Count, 1);
  os << "static const " << cType(c.Type) << " " << prefix << c.Name << "[" << n
     << "] MLCC_ALIGNED = {";
  size_t sz = dtypeSize(c.Type);
  for (int64_t i = 0; i < c.Count; ++i) {
    os << (i % 8 == 0 ? "\n  " : " ");
    const uint8_t *p = c.Bytes.data() + i * (int64_t)sz;
    switch (c.Type) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      os << floatLiteral(DType::F32, f);
      break;
    }
    case DType::F64: {
      double d;
      std::memcpy(&d, p, 8);
      os << floatLiteral(DType::F64, d);
      break;
    }
    case DType::F16:
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%04x", h);
      os << buf;
      break;
    }
    default: {
      int64_t v = 0;
      switch (sz) {
      case 1: v = (c.Type == DType::I8) ? (int64_t)(int8_t)p[0] : p[0]; break;
      case 2: { int16_t x; uint16_t u; std::memcpy(&x, p, 2); std::memcpy(&u, p, 2);
                v = c.Type == DType::I16 ? x : u; break; }
      case 4: { int32_t x; uint32_t u; std::memcpy(&x, p, 4); std::memcpy(&u, p, 4);
                v = c.Type == DType::I32 ? x : (int64_t)u; break; }
      default: std::memcpy(&v, p, 8); break;
      }
      if (c.Type == DType::I64 && v == INT64_MIN)
        os << "INT64_MIN";
      else if (c.Type == DType::I64)
        os << "INT64_C(" << v << ")";
      else if (c.Type == DType::U64)
        os << "UINT64_C(" << (uint64_t)v << ")";
      else if (c.Type == DType::I32 && v == INT32_MIN)
        os << "INT32_MIN";
      else
        os << v << (isUnsignedInt(c.Type) ? "u" : "");
      break;
    }
    }
    os << ",";
  }
  if (c.Count == 0)
    os << "0";
  os << "\n};\n\n";
}

/// The address of storage `s` as a C expression of the type it was declared
/// with (an arena region as unsigned char *); a constant in the library's
/// own data (no CUDA weights buffer).
static std::string storageAddress(const Program &p, const Storage &s) {
  switch (s.Kind) {
  case StorageKind::Input: return "in->" + p.Inputs[s.Index].CName;
  case StorageKind::Output: return "out->" + p.Outputs[s.Index].CName;
  case StorageKind::Constant: return p.Constants[s.Index].Name;
  case StorageKind::Arena: return "(a + " + std::to_string(p.ArenaBuffers[s.Index].Offset) + ")";
  case StorageKind::Dims: break;
  }
  return "dims";
}

std::string storageExpr(const Program &p, const Kernel &k, size_t param,
                        const Storage &s, const std::vector<int64_t> *constantOffsets) {
  std::string T = cType(k.Params[param]->Type);
  bool written = k.Written[param];
  // Storage of another element type (a view that reinterprets bytes, e.g.
  // BitCast) is passed with a pointer cast.
  auto as = [&](DType own, const std::string &e) {
    if (cType(own) == T)
      return e;
    return "(" + std::string(written ? "" : "const ") + T + " *)(" +
           (written ? "void *" : "const void *") + ")" + e;
  };
  switch (s.Kind) {
  case StorageKind::Input:
    return as(p.Inputs[s.Index].Type, storageAddress(p, s));
  case StorageKind::Output:
    return as(p.Outputs[s.Index].Type, storageAddress(p, s));
  case StorageKind::Constant:
    if (constantOffsets)
      return "(const " + T + " *)(const void *)(w + " +
             std::to_string((*constantOffsets)[s.Index]) + ")";
    return as(p.Constants[s.Index].Type, storageAddress(p, s));
  case StorageKind::Arena:
    return "(" + std::string(written ? "" : "const ") + T + " *)(void *)" + storageAddress(p, s);
  case StorageKind::Dims:
    return storageAddress(p, s);
  }
  return "";
}

void writeArgumentChecks(std::ostream &os, const Program &p) {
  std::string U = output::upperName(p.Name);
  if (p.ArenaSize > 0)
    os << "  unsigned char *a = (unsigned char *)arena;\n";
  os << "  if (in == NULL || out == NULL)\n    return MLCC_ERR_NULL_ARGUMENT;\n";
  for (auto &t : p.Inputs)
    os << "  if (in->" << t.CName << " == NULL)\n    return MLCC_ERR_NULL_ARGUMENT;\n";
  for (auto &t : p.Outputs)
    os << "  if (out->" << t.CName << " == NULL)\n    return MLCC_ERR_NULL_ARGUMENT;\n";
  // Run-time dimensions: in range before anything is written; the kernels
  // that read them take them as one array.
  for (auto &d : p.Dims)
    os << "  if (in->" << d.CName << " < " << U << "_DIM_" << output::upperName(d.CName)
       << "_MIN || in->" << d.CName << " > " << U << "_DIM_" << output::upperName(d.CName)
       << "_MAX)\n    return MLCC_ERR_DIM_RANGE;\n";
  // --kv-cache: each cache input is its output's buffer.
  for (auto &t : p.Inputs)
    if (t.CachePair)
      os << "  if ((const void *)in->" << t.CName << " != (const void *)out->"
         << p.Outputs[*t.CachePair].CName << ")\n    return MLCC_ERR_CACHE_BUFFER;\n";
  // Inputs whose value must lie in a range (--input-range).
  for (auto &t : p.Inputs)
    if (t.Range) {
      std::string macro = U + "_INPUT_" + output::upperName(t.CName);
      os << "  if ((int64_t)*in->" << t.CName << " < " << macro << "_MIN || (int64_t)*in->"
         << t.CName << " > " << macro << "_MAX)\n    return MLCC_ERR_DIM_RANGE;\n";
    }
  if (!p.Dims.empty()) {
    os << "  const int64_t dims[" << p.Dims.size() << "] = {";
    for (size_t k = 0; k < p.Dims.size(); ++k)
      os << (k ? ", " : "") << "in->" << p.Dims[k].CName;
    os << "};\n";
  }
  if (p.ArenaSize > 0) {
    os << "  if (arena == NULL)\n    return MLCC_ERR_ARENA_NULL;\n";
    os << "  if (arena_size < " << U << "_ARENA_SIZE)\n    return MLCC_ERR_ARENA_TOO_SMALL;\n";
    os << "  if (((uintptr_t)arena & (" << U << "_ARENA_ALIGN - 1u)) != 0)\n"
       << "    return MLCC_ERR_ARENA_MISALIGNED;\n";
  } else {
    os << "  (void)arena;\n  (void)arena_size;\n";
  }
}

void writeRunPtrs(std::ostream &os, const Program &p, const std::string &params,
                  const std::string &args) {
  const std::string &N = p.Name;
  os << "mlcc_status " << N
     << "_run_ptrs(const void *const *inputs, void *const *outputs,\n    " << params
     << ") {\n";
  os << "  " << N << "_inputs in;\n  " << N << "_outputs out;\n";
  os << "  if (inputs == NULL || outputs == NULL)\n    return MLCC_ERR_NULL_ARGUMENT;\n";
  if (p.Inputs.empty())
    os << "  in.unused_ = 0;\n";
  for (size_t i = 0; i < p.Inputs.size(); ++i)
    os << "  in." << p.Inputs[i].CName << " = (const "
       << output::cInterfaceType(p.Inputs[i].Type) << " *)inputs[" << i << "];\n";
  // The run-time dimensions follow the inputs, each a pointer to its value.
  for (size_t k = 0; k < p.Dims.size(); ++k) {
    size_t at = p.Inputs.size() + k;
    os << "  if (inputs[" << at << "] == NULL)\n    return MLCC_ERR_NULL_ARGUMENT;\n";
    os << "  in." << p.Dims[k].CName << " = *(const int64_t *)inputs[" << at << "];\n";
  }
  if (p.Outputs.empty())
    os << "  out.unused_ = 0;\n";
  for (size_t i = 0; i < p.Outputs.size(); ++i)
    os << "  out." << p.Outputs[i].CName << " = ("
       << output::cInterfaceType(p.Outputs[i].Type) << " *)outputs[" << i << "];\n";
  os << "  return " << N << "_run(&in, &out, " << args << ");\n}\n\n";
}

void writeModelInfo(std::ostream &os, const Program &p) {
  const std::string &N = p.Name;
  std::string U = output::upperName(N);
  auto infoTable = [&](const std::vector<IoTensor> &ts, const char *kind) {
    for (size_t i = 0; i < ts.size(); ++i) {
      os << "static const int64_t " << N << "_" << kind << i << "_shape["
         << std::max<size_t>(ts[i].Dims.size(), 1) << "] = {";
      Shape shape = output::infoShape(ts[i]);
      for (size_t d = 0; d < shape.size(); ++d)
        os << (d ? ", " : "") << shape[d];
      if (ts[i].Dims.empty())
        os << "0";
      os << "};\n";
    }
    if (ts.empty())
      return;
    os << "static const mlcc_tensor_info " << N << "_" << kind << "_info["
       << ts.size() << "] = {\n";
    for (size_t i = 0; i < ts.size(); ++i)
      os << "  {" << output::cStringLiteral(ts[i].Name) << ", " << (int)ts[i].Type
         << ", " << ts[i].Dims.size() << ", " << N << "_" << kind << i
         << "_shape, " << ts[i].bytes() << "u, " << floatLiteral(DType::F32, (float)ts[i].Scale) << ", "
         << ts[i].ZeroPoint << "},\n";
    os << "};\n";
  };
  infoTable(p.Inputs, "input");
  infoTable(p.Outputs, "output");
  if (!p.Dims.empty()) {
    os << "static const mlcc_dim_info " << N << "_dim_info[" << p.Dims.size() << "] = {\n";
    for (auto &d : p.Dims)
      os << "  {" << output::cStringLiteral(d.Name) << ", " << d.Min << ", " << d.Max << "},\n";
    os << "};\n";
  }
  os << "static const mlcc_model_info " << N << "_model_info = {\n  "
     << output::cStringLiteral(N) << ", " << output::cStringLiteral(output::mlccVersion())
     << ",\n  " << p.Inputs.size() << ", "
     << (p.Inputs.empty() ? "NULL" : N + "_input_info") << ",\n  "
     << p.Outputs.size() << ", "
     << (p.Outputs.empty() ? "NULL" : N + "_output_info") << ",\n  " << U
     << "_ARENA_SIZE, " << U << "_ARENA_ALIGN, " << U << "_WEIGHTS_SIZE,\n  " << p.Dims.size()
     << ", " << (p.Dims.empty() ? "NULL" : N + "_dim_info") << "\n};\n\n";
  os << "const mlcc_model_info *" << N << "_info(void) {\n  return &" << N
     << "_model_info;\n}\n";
}

std::string emitC(const Program &p, const std::string &headerName) {
  std::ostringstream os;
  const std::string &N = p.Name;
  std::string U = output::upperName(N);
  os << "/* " << N << ".c - generated by mlcc " << output::mlccVersion()
     << ". Do not edit. C99; link with -lm. */\n";
  os << "#include \"" << headerName << "\"\n\n";
  os << Prelude << "\n";

  for (auto &c : p.Constants)
    writeConstant(os, c, "");

  for (auto &k : p.Kernels)
    writeKernel(os, k, "static MLCC_NOINLINE void", k.Name, Dialect::C);

  // Entry points. The C backend runs parallel loops serially: options is
  // accepted and unused.
  os << "mlcc_status " << N << "_run_with(const " << N << "_inputs *in, " << N
     << "_outputs *out,\n    void *arena, size_t arena_size, const mlcc_run_options *options) {\n";
  os << "  mlcc_kernel_hook hook = options ? options->on_kernel : NULL;\n"
     << "  void *hook_context = options ? options->hook_context : NULL;\n";
  writeArgumentChecks(os, p);
  for (size_t ci = 0; ci < p.Calls.size(); ++ci) {
    const Call &c = p.Calls[ci];
    const Kernel &k = p.Kernels[c.KernelIndex];
    std::string name = output::cStringLiteral(k.Name);
    os << "  /* " << c.Label << " */\n";
    // A guarded call (a branch or loop iteration) runs only when its
    // condition's byte is non-zero.
    std::string in = "  ";
    if (c.Guard) {
      os << "  if (*(const unsigned char *)(const void *)" << storageAddress(p, *c.Guard) << ") {\n";
      in = "    ";
    }
    os << in << "if (hook)\n" << in << "  hook(hook_context, " << ci << ", " << name << ", 0);\n";
    os << in << k.Name << "(";
    for (size_t i = 0; i < c.Args.size(); ++i)
      os << (i ? ", " : "") << storageExpr(p, k, i, c.Args[i], nullptr);
    os << ");\n";
    os << in << "if (hook)\n" << in << "  hook(hook_context, " << ci << ", " << name << ", 1);\n";
    if (c.Guard)
      os << "  }\n";
  }
  os << "  return MLCC_OK;\n}\n\n";
  os << "mlcc_status " << N << "_run(const " << N << "_inputs *in, " << N
     << "_outputs *out,\n    void *arena, size_t arena_size) {\n";
  os << "  return " << N << "_run_with(in, out, arena, arena_size, NULL);\n}\n\n";

  writeRunPtrs(os, p, "void *arena, size_t arena_size", "arena, arena_size");


  writeModelInfo(os, p);
  return os.str();
}

} // namespace mlcc::cgen
