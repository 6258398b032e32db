//===- QLinearContrib.cpp - com.microsoft quantized ops (QOperator) -------===//
//
// The ONNX Runtime contrib ops (domain com.microsoft, version 1) that
// quantization tools emit in the QOperator format. Each one means:
// dequantize every input, (x - zero_point) * scale in f32, compute the float
// op, requantize y = saturate(round_half_even(v / y_scale) + y_zero_point).
// Data is uint8 or int8; scales are float and zero points have the data's
// type, one value each (per tensor); an omitted zero point is 0.
//
//  - QLinearAdd, QLinearMul (numpy broadcasting) are elementwise kernels,
//    which fusion may fold into their producer. Ratios of scales and the
//    constant terms fold to compile-time constants; per element they round
//    where ONNX Runtime's x86 (AVX2) kernels round, so results match them:
//      Add: v = fma(a, ra, fma(b, rb, k)), ra = a_scale / c_scale,
//           rb = b_scale / c_scale, k = c_zp - fma(a_zp, ra, rb * b_zp),
//           an fma rounding once to f32; a and b (with their parameters)
//           trade places when a is constant along the innermost axis (ONNX
//           Runtime's kernel then takes it as its scalar second operand);
//      Mul: v = f32(f32((a - a_zp) * (b - b_zp) * r) + c_zp),
//           r = a_scale * b_scale / c_scale;
//    and y = saturate(round_half_even(v)). The multiply-adds run in f64,
//    where the products are exact, so no target's contraction of a multiply
//    and an add into one instruction changes a result.
//  - QLinearGlobalAveragePool (channels_last) sums the input bytes of each
//    channel in int32 and requantizes with one multiplication per output
//    by x_scale / (y_scale * count), as ONNX Runtime does.
//  - QLinearSigmoid and QLinearLeakyRelu look the output up in a 256-entry
//    table indexed by the input (mlcc.LookupTable). The table is
//    DequantizeLinear -> Sigmoid | LeakyRelu -> QuantizeLinear applied to all
//    256 input values: constant folding computes it at compile time when the
//    scales and zero points are constants, otherwise it is computed on each
//    run.
//  - QLinearConcat concatenates the inputs whose scale and zero point are the
//    output's as they are and passes the others through a requantization
//    table (DequantizeLinear -> QuantizeLinear over the 256 values).
//  - QLinearAveragePool (channels_last) is DequantizeLinear -> AveragePool ->
//    QuantizeLinear in f32, with Transposes around the pool for channels_last.
//
// The table-based ops and QLinearAveragePool are expanded into those standard
// nodes before inference (OpSchema::Expand) and check their inputs there.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Expansion.h"
#include "compiler/ops/Requantization.h"

#include <array>

namespace mlcc::ops {

using namespace kir;
using namespace requant;

namespace {

const char *const Ms = "com.microsoft";
const DType F = DType::F32, D = DType::F64;

// ---------------------------------------------------------------------------
// Checks shared by the contrib ops (no ONNX schema validates them)
// ---------------------------------------------------------------------------

/// Input and output counts, and the inputs that must be present.
void checkArity(const ir::Node &n, size_t minIn, size_t maxIn,
                std::initializer_list<size_t> required, const char *inputs) {
  if (n.Inputs.size() < minIn || n.Inputs.size() > maxIn)
    n.error() << "has " << n.Inputs.size() << " inputs; " << n.OpType
              << " takes " << inputs;
  for (size_t i : required)
    if (!n.hasInput(i))
      n.error() << "input " << i << " is required; " << n.OpType << " takes "
                << inputs;
  if (n.Outputs.size() != 1)
    n.error() << "has " << n.Outputs.size() << " outputs; " << n.OpType
              << " has 1";
}

/// An 8-bit tensor (input `x`) with its float scale and optional zero point.
void checkQuantized(const ir::Node &n, size_t x, size_t scale, size_t zp) {
  requireInputType(n, x, "input " + std::to_string(x),
                   {DType::U8, DType::I8});
  requireInputType(n, scale, "scale (input " + std::to_string(scale) + ")",
                   {DType::F32});
  requireScalarParam(n, scale, "scale");
  requireZeroPointType(n, zp, x);
  requireScalarParam(n, zp, "zero point");
}

/// The output's scale and zero point (of the data type of input `like`).
void checkOutputParams(const ir::Node &n, size_t scale, size_t zp, size_t like) {
  requireInputType(n, scale, "scale (input " + std::to_string(scale) + ")",
                   {DType::F32});
  requireScalarParam(n, scale, "scale");
  requireZeroPointType(n, zp, like);
  requireScalarParam(n, zp, "zero point");
}

// ---------------------------------------------------------------------------
// QLinearAdd, QLinearMul
// ---------------------------------------------------------------------------

// Inputs: A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale,
// C_zero_point?.
const char *const BinaryInputs =
    "7 or 8 (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, "
    "C_zero_point; the zero points may be omitted)";

void inferQLinearBinary(ir::Node &n) {
  checkArity(n, 7, 8, {0, 1, 3, 4, 6}, BinaryInputs);
  checkQuantized(n, 0, 1, 2);
  checkQuantized(n, 3, 4, 5);
  if (n.inDType(3) != n.inDType(0))
    n.error() << "B has type " << dtypeOnnxName(n.inDType(3)) << " but A has "
              << dtypeOnnxName(n.inDType(0));
  checkOutputParams(n, 6, 7, 0);
  n.setOutput(0, n.inDType(0), broadcastShapes(n, {n.inShape(0), n.inShape(3)}));
}

/// The eight operands of QLinearAdd/Mul from the present inputs' values;
/// omitted zero points become 0.
std::array<Expr, 8> binaryOperands(const ir::Node &n, const std::vector<Expr> &args) {
  std::array<Expr, 8> v;
  size_t k = 0;
  for (size_t i = 0; i < 8; ++i)
    if (n.hasInput(i))
      v[i] = args.at(k++);
  for (size_t zp : {2, 5, 7})
    if (!v[zp])
      v[zp] = constantInt(n.inDType(0), 0);
  return v;
}

/// round_f32(x * r + acc) for x an 8-bit integer and r, acc f32 values: the
/// f64 product is exact, so this is an f32 fused multiply-add.
Expr fusedMulAdd(const Expr &x, const Expr &r, const Expr &acc) {
  return cast(F, cast(D, x) * cast(D, r) + cast(D, acc));
}

/// True when the values of operand `in` repeat along the output's innermost
/// axis (longer than 1): ONNX Runtime then treats it as a scalar.
bool constantAlongInnermost(const Shape &in, const Shape &out) {
  for (size_t d = out.size(); d-- > 0;) {
    if (out[d] == 1)
      continue;
    size_t lead = out.size() - in.size();
    return d < lead || in[d - lead] == 1;
  }
  return true;
}

/// The scales and zero points of QLinearAdd/Mul when all are compile-time
/// constants (scales of one element, f32); omitted zero points are 0.
struct ConstantParams {
  float As, Bs, Cs;
  int64_t Azp, Bzp, Czp;
};
std::optional<ConstantParams> constantParams(const ir::Node &n) {
  std::array<double, 8> v{};
  for (size_t i : {1, 2, 4, 5, 6, 7}) {
    bool zp = i == 2 || i == 5 || i == 7;
    if (!n.hasInput(i)) {
      if (!zp)
        return std::nullopt;
      continue;
    }
    const TensorPtr &k = n.Inputs[i]->Const;
    if (!k || k->numel() != 1 || (!zp && n.inDType(i) != F))
      return std::nullopt;
    v[i] = zp ? (double)k->intAt(0) : k->doubleAt(0);
  }
  return ConstantParams{(float)v[1], (float)v[4], (float)v[6],
                        (int64_t)v[2], (int64_t)v[5], (int64_t)v[7]};
}

/// QLinearAdd in integers: y = saturate((a * Ma + b * Mb + K) >> S) with
/// Ma = round(ra * 2^S), Mb = round(rb * 2^S) for the f32 ratios ra =
/// a_scale / c_scale, rb = b_scale / c_scale, and K = c_zp * 2^S - a_zp *
/// Ma - b_zp * Mb + 2^(S-1): the sum rounds half up (towards +inf). S is
/// the largest in [1, 30] for which no int32 sum can overflow, so Ma and
/// Mb keep 21 bits or more of a ratio near 1 and the result is within one
/// step of the float formula (equal to it but for values within about
/// 2^-14 of a half).
struct FixedAdd {
  int64_t Ma, Mb, K, Shift;
};
std::optional<FixedAdd> fixedAdd(const ir::Node &n) {
  std::optional<ConstantParams> p = constantParams(n);
  if (!p)
    return std::nullopt;
  float ra = p->As / p->Cs, rb = p->Bs / p->Cs;
  if (!(ra > 0) || !(rb > 0) || !std::isfinite(ra) || !std::isfinite(rb))
    return std::nullopt;
  for (int64_t s = 30; s >= 1; --s) {
    int64_t ma = std::llround(std::ldexp((double)ra, (int)s));
    int64_t mb = std::llround(std::ldexp((double)rb, (int)s));
    int64_t k = p->Czp * ((int64_t)1 << s) - p->Azp * ma - p->Bzp * mb + ((int64_t)1 << (s - 1));
    if (255 * (ma + mb) + std::llabs(k) < ((int64_t)1 << 31))
      return FixedAdd{ma, mb, k, s};
  }
  return std::nullopt;
}

/// QLinearMul in integers: the int32 product (a - a_zp) * (b - b_zp)
/// requantized by the Q31 multiplier of r = a_scale * b_scale / c_scale (f32)
/// (requant::requantizeFixed: rounds half up).
std::optional<std::pair<int64_t, int64_t>> fixedMul(const ir::Node &n) {
  std::optional<ConstantParams> p = constantParams(n);
  if (!p)
    return std::nullopt;
  return q31Multiplier((double)(p->As * p->Bs / p->Cs));
}

Expr qlinearAdd(const ir::Node &n, const std::vector<Expr> &args) {
  auto [a, as, azp, b, bs, bzp, cs, czp] = binaryOperands(n, args);
  if (n.Plan.FixedRequant) {
    std::optional<FixedAdd> f = fixedAdd(n);
    if (!f)
      n.error(ErrorKind::Internal) << "internal error: planned integer QLinearAdd without "
                                      "constant scales";
    const DType I = DType::I32;
    auto [lo, hi] = intRange(n.inDType(0));
    Expr v = cast(I, a) * constantInt(I, f->Ma) + cast(I, b) * constantInt(I, f->Mb) +
             constantInt(I, f->K);
    return clamp(binary(BinOp::Shr, v, constantInt(I, f->Shift)), constantInt(I, (int64_t)lo),
                 constantInt(I, (int64_t)hi));
  }
  // ONNX Runtime's kernel takes a varying operand x and a scalar or varying
  // operand y; a scalar A becomes y.
  bool swap = constantAlongInnermost(n.inShape(0), n.Outputs[0]->Type.Dims);
  Expr x = swap ? b : a, xzp = swap ? bzp : azp, rx = (swap ? bs : as) / cs;
  Expr y = swap ? a : b, yzp = swap ? azp : bzp, ry = (swap ? as : bs) / cs;
  Expr k = cast(F, czp) - fusedMulAdd(xzp, rx, ry * cast(F, yzp));
  Expr v = fusedMulAdd(x, rx, fusedMulAdd(y, ry, k));
  return saturateRoundF32(n.inDType(0), v);
}

Expr qlinearMul(const ir::Node &n, const std::vector<Expr> &args) {
  auto [a, as, azp, b, bs, bzp, cs, czp] = binaryOperands(n, args);
  const DType I = DType::I32;
  Expr prod = (cast(I, a) - cast(I, azp)) * (cast(I, b) - cast(I, bzp));
  if (n.Plan.FixedRequant) {
    std::optional<std::pair<int64_t, int64_t>> m = fixedMul(n);
    if (!m)
      n.error(ErrorKind::Internal) << "internal error: planned integer QLinearMul without "
                                      "constant scales";
    return requantizeFixed(n.inDType(0), prod, constantInt(I, m->first),
                           constantInt(I, m->second), czp);
  }
  Expr r = as * bs / cs;
  Expr v = cast(F, cast(D, prod) * cast(D, r));
  v = cast(F, cast(D, v) + cast(D, czp));
  return saturateRoundF32(n.inDType(0), v);
}

} // namespace

bool integerElementwise(const ir::Node &n) {
  if (n.Domain != Ms)
    return false;
  if (n.OpType == "QLinearAdd")
    return fixedAdd(n).has_value();
  if (n.OpType == "QLinearMul")
    return fixedMul(n).has_value();
  return false;
}

namespace {

// ---------------------------------------------------------------------------
// QLinearGlobalAveragePool
// ---------------------------------------------------------------------------

// Inputs: X, x_scale, x_zero_point, y_scale, y_zero_point.
const char *const PoolInputs =
    "5 (X, x_scale, x_zero_point, y_scale, y_zero_point)";

/// The spatial axes of an [N, C, D1..Dn] (or, channels_last, [N, D1..Dn, C])
/// input.
std::vector<int64_t> spatialAxes(const ir::Node &n) {
  int64_t cl = n.attrInt("channels_last", 0);
  if (cl != 0 && cl != 1)
    n.error() << "channels_last must be 0 or 1, got " << cl;
  int64_t rank = (int64_t)n.inShape(0).size();
  if (rank < 3)
    n.error() << "X must have rank 3 or more, got "
              << shapeToString(n.inShape(0));
  std::vector<int64_t> axes;
  for (int64_t d = cl ? 1 : 2; d < (cl ? rank - 1 : rank); ++d)
    axes.push_back(d);
  return axes;
}

void inferQLinearGlobalAveragePool(ir::Node &n) {
  checkArity(n, 4, 5, {0, 1, 3}, PoolInputs);
  checkQuantized(n, 0, 1, 2);
  checkOutputParams(n, 3, 4, 0);
  Shape y = n.inShape(0);
  for (int64_t d : spatialAxes(n))
    y[(size_t)d] = 1;
  n.setOutput(0, n.inDType(0), y);
}

/// The elements each output of a QLinearGlobalAveragePool averages.
int64_t poolCount(const ir::Node &n) {
  int64_t count = 1;
  for (int64_t d : spatialAxes(n))
    count *= n.inShape(0)[(size_t)d];
  return count;
}

/// Sums of bytes: int32 holds 2^23 of them.
constexpr int64_t kMaxInt32ByteSums = int64_t{1} << 23;

/// The Q31 multiplier and shift of x_scale / (y_scale * count) (f32, as the
/// kernel computes it) for constant scales and int32 sums.
std::optional<std::pair<int64_t, int64_t>> fixedPool(const ir::Node &n) {
  const int64_t count = poolCount(n);
  if (count >= kMaxInt32ByteSums || !n.hasInput(1) || !n.hasInput(3))
    return std::nullopt;
  const TensorPtr &xs = n.Inputs[1]->Const, &ys = n.Inputs[3]->Const;
  if (!xs || !ys || n.inDType(1) != F || n.inDType(3) != F)
    return std::nullopt;
  float scale = (float)xs->doubleAt(0) / ((float)ys->doubleAt(0) * (float)count);
  return q31Multiplier((double)scale);
}

} // namespace

bool integerPool(const ir::Node &n) {
  return n.Domain == Ms && n.OpType == "QLinearGlobalAveragePool" && fixedPool(n).has_value();
}

namespace {

void lowerQLinearGlobalAveragePool(LowerCtx &c) {
  const ir::Node &n = c.node();
  std::vector<int64_t> axes = spatialAxes(n);
  TensorRef x = c.in(0), y = c.out(0);
  const int64_t count = poolCount(n);
  DType acc = count < kMaxInt32ByteSums ? DType::I32 : DType::I64;
  Expr xs = c.in(1).loadFlat(indexConst(0)), ys = c.in(3).loadFlat(indexConst(0));
  Expr xzp = c.hasIn(2) ? cast(acc, c.in(2).loadFlat(indexConst(0))) : constantInt(acc, 0);
  Expr yzp = c.hasIn(4) ? cast(D, c.in(4).loadFlat(indexConst(0))) : constant(D, 0);
  Expr scale = xs / (ys * constant(F, (double)count));
  DType out = y.dtype();
  Reduction r;
  r.AccType = acc;
  r.Init = constantInt(acc, 0);
  r.Map = [acc](Expr v) { return cast(acc, v); };
  r.Combine = [](Expr s, Expr v) { return s + v; };
  std::optional<std::pair<int64_t, int64_t>> fixed;
  if (n.Plan.FixedRequant && !(fixed = fixedPool(n)))
    n.error(ErrorKind::Internal) << "internal error: planned integer "
                                    "QLinearGlobalAveragePool without constant scales";
  r.Finish = [&](Expr s, Expr) {
    Expr centered = s - xzp * count;
    if (fixed)
      return requantizeFixed(out, centered, constantInt(DType::I32, fixed->first),
                             constantInt(DType::I32, fixed->second), cast(DType::I32, yzp));
    // int32 sums: the f32 product rounded half to even and offset in f32
    // and int32 (requantizeF32 computes the same as the f64 formula below,
    // without f64: a library call on single-precision cores).
    if (acc == DType::I32)
      return requantizeF32(out, centered, scale, cast(DType::I32, yzp));
    Expr v = cast(F, centered) * scale;
    return saturateRound(out, cast(D, v), yzp);
  };
  lowerReduction(c, x, y, axes, r);
}

// ---------------------------------------------------------------------------
// mlcc.LookupTable: Y = Table[X - lowest(X)]
// ---------------------------------------------------------------------------

void inferLookupTable(ir::Node &n) {
  checkArity(n, 2, 2, {0, 1}, "2 (X, Table)");
  requireInputType(n, 0, "X", {DType::U8, DType::I8});
  if (n.inShape(1) != Shape{256})
    n.error() << "Table has shape " << shapeToString(n.inShape(1))
              << "; expected [256]";
  n.setOutput(0, n.inDType(1), n.inShape(0));
}

void lowerLookupTable(LowerCtx &c) {
  TensorRef x = c.in(0), table = c.in(1), y = c.out(0);
  int64_t lowest = (int64_t)intRange(x.dtype()).first;
  c.b().loop("i", y.numel(), [&](Expr i) {
    y.storeFlat(i, table.loadFlat(toIndex(x.loadFlat(i)) - lowest));
  });
}

// ---------------------------------------------------------------------------
// Expansions into standard nodes
// ---------------------------------------------------------------------------

/// The table of quantize(f(dequantize(x))) for every value x of the 8-bit
/// type `t` in increasing order; `f` adds the float op (or none).
ir::Value *requantTable(Expansion &e, DType t, ir::Value *xs, ir::Value *xzp,
                        ir::Value *ys, ir::Value *yzp,
                        const std::function<ir::Value *(ir::Value *)> &f = nullptr) {
  std::vector<int64_t> all(256);
  for (int64_t i = 0; i < 256; ++i)
    all[(size_t)i] = (int64_t)intRange(t).first + i;
  ir::Value *x = e.constant(Tensor::fromInts(t, {256}, all), "inputs");
  ir::Value *v = e.add("DequantizeLinear", 13, {x, xs, xzp});
  if (f)
    v = f(v);
  if (!yzp) // QuantizeLinear's default output type is uint8
    yzp = e.constant(Tensor::fromInts(t, {}, {0}), "zero_point");
  return e.add("QuantizeLinear", 13, {v, ys, yzp});
}

// Inputs: X, X_scale, X_zero_point?, Y_scale, Y_zero_point?.
const char *const UnaryInputs =
    "4 or 5 (X, X_scale, X_zero_point, Y_scale, Y_zero_point; the zero points "
    "may be omitted)";

void checkQLinearUnary(const ir::Node &n) {
  checkArity(n, 4, 5, {0, 1, 3}, UnaryInputs);
  checkQuantized(n, 0, 1, 2);
  checkOutputParams(n, 3, 4, 0);
}

/// QLinearSigmoid and QLinearLeakyRelu: X -> Table[X].
Nodes expandQLinearActivation(ir::Node &n, ir::Graph &g, const std::string &op,
                              int64_t opset) {
  checkQLinearUnary(n);
  Expansion e{n, g, {}};
  std::map<std::string, ir::Attribute> attrs;
  if (op == "LeakyRelu")
    attrs["alpha"] = ir::floatAttr(n.attrFloat("alpha", 0.01));
  ir::Value *table = requantTable(
      e, n.inDType(0), e.input(1), e.input(2), e.input(3), e.input(4),
      [&](ir::Value *v) { return e.add(op, opset, {v}, attrs); });
  e.add("LookupTable", 1, {n.Inputs[0], table}, {}, n.Outputs[0], "mlcc");
  return std::move(e.Out);
}

/// True when the values of two parameters are known to be equal (the same
/// value, or equal constants; an omitted zero point is 0).
bool sameParam(const ir::Value *a, const ir::Value *b) {
  if (a == b)
    return true;
  auto value = [](const ir::Value *v) -> std::optional<double> {
    if (!v)
      return 0.0;
    if (!v->Const)
      return std::nullopt;
    return v->Const->doubleAt(0);
  };
  std::optional<double> x = value(a), y = value(b);
  return x && y && *x == *y;
}

/// QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)
/// triples.
Nodes expandQLinearConcat(ir::Node &n, ir::Graph &g) {
  size_t count = n.Inputs.size();
  if (count < 5 || (count - 2) % 3 != 0)
    n.error() << "has " << count << " inputs; QLinearConcat takes Y_scale, "
              << "Y_zero_point and one or more (X, X_scale, X_zero_point) triples";
  checkArity(n, count, count, {0, 1}, "Y_scale, Y_zero_point and triples");
  requireInputType(n, 1, "Y_zero_point (input 1)", {DType::U8, DType::I8});
  checkOutputParams(n, 0, 1, 1);
  for (size_t i = 2; i < count; i += 3) {
    if (!n.hasInput(i) || !n.hasInput(i + 1))
      n.error() << "inputs " << i << " and " << i + 1
                << " (a tensor and its scale) are required";
    checkQuantized(n, i, i + 1, i + 2);
    if (n.inDType(i) != n.inDType(1))
      n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
                << " but Y_zero_point has " << dtypeOnnxName(n.inDType(1));
  }
  ir::Attribute axis;
  axis.Kind = ir::AttrKind::Int;
  axis.I = n.requireInt("axis");
  Expansion e{n, g, {}};
  std::vector<ir::Value *> parts;
  for (size_t i = 2; i < count; i += 3) {
    ir::Value *x = n.Inputs[i];
    if (!sameParam(e.input(i + 1), e.input(0)) || !sameParam(e.input(i + 2), e.input(1))) {
      ir::Value *table = requantTable(e, n.inDType(i), e.input(i + 1),
                                      e.input(i + 2), e.input(0), e.input(1));
      x = e.add("LookupTable", 1, {x, table}, {}, nullptr, "mlcc");
    }
    parts.push_back(x);
  }
  e.add("Concat", 13, parts, {{"axis", axis}}, n.Outputs[0]);
  return std::move(e.Out);
}

/// Whether a QLinearAveragePool's window is its whole input: the kernel
/// the spatial extents, no padding (then each output averages every element
/// of its channel, whatever the strides and ceil_mode).
bool poolsWholeInput(const ir::Node &n, int64_t cl, int64_t rank) {
  const Shape &x = n.inShape(0);
  std::vector<int64_t> kernel = n.attrInts("kernel_shape", {});
  if ((int64_t)kernel.size() != rank - 2)
    return false;
  for (int64_t d = 0; d < rank - 2; ++d)
    if (kernel[(size_t)d] != x[(size_t)(d + (cl ? 1 : 2))])
      return false;
  for (int64_t p : n.attrInts("pads", {}))
    if (p != 0)
      return false;
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  return autoPad == "NOTSET" || autoPad == "VALID";
}

/// QLinearAveragePool: the float pool between dequantization and
/// quantization, on NCHW data (Transposes around it for channels_last);
/// a pool over the whole input is QLinearGlobalAveragePool, which sums the
/// bytes in integers (and requantizes in fixed point where planned).
Nodes expandQLinearAveragePool(ir::Node &n, ir::Graph &g) {
  checkQLinearUnary(n);
  int64_t cl = n.attrInt("channels_last", 0);
  if (cl != 0 && cl != 1)
    n.error() << "channels_last must be 0 or 1, got " << cl;
  int64_t rank = (int64_t)n.inShape(0).size();
  if (rank < 3)
    n.error() << "X must have rank 3 or more, got " << shapeToString(n.inShape(0));
  if (poolsWholeInput(n, cl, rank)) {
    Expansion e{n, g, {}};
    e.add("QLinearGlobalAveragePool", 1,
          {n.Inputs[0], e.input(1), e.input(2), e.input(3), e.input(4)},
          {{"channels_last", ir::intAttr(cl)}}, n.Outputs[0], Ms);
    return std::move(e.Out);
  }
  std::map<std::string, ir::Attribute> attrs;
  for (const char *name : {"auto_pad", "ceil_mode", "count_include_pad",
                           "kernel_shape", "pads", "strides"})
    if (const ir::Attribute *a = n.attr(name))
      attrs[name] = *a;
  Expansion e{n, g, {}};
  ir::Value *v = e.add("DequantizeLinear", 13, {n.Inputs[0], e.input(1), e.input(2)});
  std::vector<int64_t> toFirst = {0, rank - 1}, toLast = {0};
  for (int64_t d = 1; d < rank - 1; ++d)
    toFirst.push_back(d);
  for (int64_t d = 2; d < rank; ++d)
    toLast.push_back(d);
  toLast.push_back(1);
  if (cl)
    v = e.add("Transpose", 13, {v}, {{"perm", ir::intsAttr(toFirst)}});
  v = e.add("AveragePool", 19, {v}, attrs);
  if (cl)
    v = e.add("Transpose", 13, {v}, {{"perm", ir::intsAttr(toLast)}});
  ir::Value *yzp = e.input(4);
  if (!yzp)
    yzp = e.constant(Tensor::fromInts(n.inDType(0), {}, {0}), "zero_point");
  e.add("QuantizeLinear", 13, {v, e.input(3), yzp}, {}, n.Outputs[0]);
  return std::move(e.Out);
}

} // namespace

MLCC_OPS(QLinearContrib) {
  addElementwise(R, "QLinearAdd", 1, NodeScalarFn(qlinearAdd), inferQLinearBinary, Ms);
  addElementwise(R, "QLinearMul", 1, NodeScalarFn(qlinearMul), inferQLinearBinary, Ms);
  R.add({.Domain = Ms, .Name = "QLinearGlobalAveragePool", .SinceVersion = 1,
         .Fusion = FusionClass::Reduction, .Infer = inferQLinearGlobalAveragePool,
         .Lower = lowerQLinearGlobalAveragePool});
  R.add({.Domain = Ms, .Name = "QLinearSigmoid", .SinceVersion = 1,
         .Expand = [](ir::Node &n, ir::Graph &g) {
           return expandQLinearActivation(n, g, "Sigmoid", 13);
         }});
  R.add({.Domain = Ms, .Name = "QLinearLeakyRelu", .SinceVersion = 1,
         .Expand = [](ir::Node &n, ir::Graph &g) {
           return expandQLinearActivation(n, g, "LeakyRelu", 16);
         }});
  R.add({.Domain = Ms, .Name = "QLinearConcat", .SinceVersion = 1,
         .Expand = expandQLinearConcat});
  R.add({.Domain = Ms, .Name = "QLinearAveragePool", .SinceVersion = 1,
         .Expand = expandQLinearAveragePool});
  R.add({.Domain = "mlcc", .Name = "LookupTable", .SinceVersion = 1,
         .Fusion = FusionClass::Injective, .Infer = inferLookupTable,
         .Lower = lowerLookupTable});
}

} // namespace mlcc::ops
