//===- LoweringPassTest.cpp - The passes that lead to the kernel program ---===//
//
// One pass at a time on a small graph, as PassTest.cpp does, for the passes
// between plan-kernels and the kernel program:
//
//  - fixed-point-requant: the Q31 multipliers and shifts (or a QLinearConv's
//    f32 multipliers) it appends, written out by hand from the scales;
//  - fuse-attention: the mlcc.Attention node it makes of an attention chain
//    (operands read through the Transposes around it, the steps between
//    the products), and the chains it leaves alone;
//  - fuse-ops: the groups it records (ir::Node::Group, Node::Inlined);
//  - lower-to-kernels: the program it makes (kernels, calls, the storage
//    each call's arguments are bound to).
//
// The state a pass reads from the passes before it (a node's plan, the
// groups) is set by hand, so that only the pass under test runs.
//
//===----------------------------------------------------------------------===//
#include "PassTestSupport.h"
#include "compiler/kernel/Program.h"
#include "compiler/passes/Passes.h"

#include <catch2/catch.hpp>

using namespace mlcc;
using passtest::Builder;
using passtest::structure;

namespace {

/// structure() with each node's fusion group: " [g]" for a member of group
/// g, " [g, inlined]" for one computed inlined; nothing for no group.
std::vector<std::string> fusedStructure(const ir::Graph &g) {
  std::vector<std::string> lines = structure(g);
  for (size_t i = 0; i < g.Nodes.size(); ++i) {
    const ir::Node &n = *g.Nodes[i];
    if (n.Group >= 0)
      lines[i] += " [" + std::to_string(n.Group) + (n.Inlined ? ", inlined]" : "]");
    else if (n.Inlined)
      lines[i] += " [inlined without a group]";
  }
  return lines;
}

std::string storageName(const kir::Storage &s) {
  switch (s.Kind) {
  case kir::StorageKind::Input:
    return "input " + std::to_string(s.Index);
  case kir::StorageKind::Output:
    return "output " + std::to_string(s.Index);
  case kir::StorageKind::Arena:
    return "arena " + std::to_string(s.Index);
  case kir::StorageKind::Constant:
    return "constant " + std::to_string(s.Index);
  case kir::StorageKind::Dims:
    return "dims";
  }
  return "?";
}

/// The program's calls, one line each: "kernel(arguments)", the kernel by
/// its name and each argument by the storage it is bound to.
std::vector<std::string> calls(const kir::Program &p) {
  std::vector<std::string> lines;
  for (const kir::Call &c : p.Calls) {
    std::string s = (c.KernelIndex < p.Kernels.size() ? p.Kernels[c.KernelIndex].Name : "?") + "(";
    for (size_t a = 0; a < c.Args.size(); ++a)
      s += (a ? ", " : "") + storageName(c.Args[a]);
    lines.push_back(s + ")");
  }
  return lines;
}

/// The names of the nodes a call computes, in its order.
std::vector<std::string> callNodes(const kir::Call &c) {
  std::vector<std::string> names;
  for (const kir::NodeRef &r : c.Nodes)
    names.push_back(r.Name + " (" + r.Op + ")");
  return names;
}

/// u8 activations times i8 weights: QLinearMatMul a [2, 4] by constant
/// b [4, 3], scales a 0.5 (per tensor), b `bScales` (per column), y 2.
struct QMatMul {
  Builder B;
  ir::Node *N = nullptr;
  explicit QMatMul(std::vector<double> bScales) {
    const int64_t cols = (int64_t)bScales.size();
    ir::Value *a = B.input("a", DType::U8, {2, 4});
    ir::Value *as = B.constant("a_scale", DType::F32, {}, {0.5});
    ir::Value *az = B.constant("a_zero", DType::U8, {}, {128});
    ir::Value *w = B.constant("b", DType::I8, {4, cols}, std::vector<double>(size_t(4 * cols), 3));
    ir::Value *ws = B.constant("b_scale", DType::F32, {cols}, bScales);
    ir::Value *wz = B.constant("b_zero", DType::I8, {cols}, std::vector<double>((size_t)cols, 0));
    ir::Value *ys = B.constant("y_scale", DType::F32, {}, {2});
    ir::Value *yz = B.constant("y_zero", DType::U8, {}, {128});
    ir::Value *y = B.node("QLinearMatMul", {a, as, az, w, ws, wz, ys, yz}, "y", {DType::U8, {2, cols}});
    B.G.Outputs = {y};
    N = y->Producer;
  }
};

/// A 1x1 QLinearConv without bias: u8 x [1, 2, 3, 3] by constant i8
/// w [2, 2, 1, 1], scales x `xScale`, w `wScales` (per output channel), y
/// `yScale`.
struct QConv {
  Builder B;
  ir::Node *N = nullptr;
  QConv(double xScale, std::vector<double> wScales, double yScale) {
    ir::Value *x = B.input("x", DType::U8, {1, 2, 3, 3});
    ir::Value *xs = B.constant("x_scale", DType::F32, {}, {xScale});
    ir::Value *xz = B.constant("x_zero", DType::U8, {}, {128});
    ir::Value *w = B.constant("w", DType::I8, {2, 2, 1, 1}, {1, -1, 2, -2});
    ir::Value *ws = B.constant("w_scale", DType::F32, {2}, wScales);
    ir::Value *wz = B.constant("w_zero", DType::I8, {2}, {0, 0});
    ir::Value *ys = B.constant("y_scale", DType::F32, {}, {yScale});
    ir::Value *yz = B.constant("y_zero", DType::U8, {}, {128});
    ir::Value *y = B.node("QLinearConv", {x, xs, xz, w, ws, wz, ys, yz}, "y",
                          {DType::U8, {1, 2, 3, 3}});
    B.G.Outputs = {y};
    N = y->Producer;
  }
};

ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.Kind = ir::AttrKind::Ints;
  a.Ints = std::move(v);
  return a;
}

} // namespace

// --- fixed-point-requant ----------------------------------------------------

TEST_CASE("fixed-point-requant: a product planned for fixed point gets Q31 multipliers and "
          "shifts",
          "[passes][pass:fixed-point-requant]") {
  // What plan-kernels decides on a target without floating point.
  QMatMul q({0.25, 0.75, 0.1});
  q.N->Plan.FixedRequant = true;

  CHECK(passes::fixedPointRequant(q.B.G));
  // After the op's 8 inputs: the multipliers, then the shifts, one per column.
  CHECK(structure(q.B.G) ==
        std::vector<std::string>{"QLinearMatMul(a, const f32[], const u8[], const i8[4,3], "
                                 "const f32[3], const i8[3], const f32[], const u8[], "
                                 "const i32[3], const i32[3]) -> y"});
  REQUIRE(q.N->Plan.FixedRequantInput == 8);
  const Tensor &mult = *q.N->Inputs[8]->Const, &shift = *q.N->Inputs[9]->Const;
  REQUIRE(mult.numel() == 3);
  REQUIRE(shift.numel() == 3);
  // m = 0.5 * b_scale / 2 = M0 * 2^-S, M0 in [2^30, 2^31):
  //   0.25: m = 2^-4          = 2^30 * 2^-34
  //   0.75: m = 0.1875        = (3 * 2^29) * 2^-33
  //   0.1 : m in f32 products = 13421773 * 2^-29 (f32(0.1) = 13421773 * 2^-27)
  //                           = (13421773 * 2^7) * 2^-36 (not 1717986918, the
  //                             multiplier of 0.025 in double)
  CHECK(mult.intAt(0) == 1073741824);
  CHECK(shift.intAt(0) == 34);
  CHECK(mult.intAt(1) == 1610612736);
  CHECK(shift.intAt(1) == 33);
  CHECK(mult.intAt(2) == 1717986944);
  CHECK(shift.intAt(2) == 36);
  // Once: a second run finds the operands there.
  CHECK_FALSE(passes::fixedPointRequant(q.B.G));
  CHECK(q.N->Inputs.size() == 10);
}

TEST_CASE("fixed-point-requant: a QLinearConv without bias keeps the bias slot empty",
          "[passes][pass:fixed-point-requant]") {
  // Multipliers above 1: m = 0.5 * {0.5, 3} / 0.25 = {1, 6}.
  QConv c(0.5, {0.5, 3}, 0.25);
  c.N->Plan.FixedRequant = true;

  CHECK(passes::fixedPointRequant(c.B.G));
  // Input 8 (the bias) stays omitted: in its slot the multipliers would be
  // read as the bias.
  CHECK(structure(c.B.G) ==
        std::vector<std::string>{"QLinearConv(x, const f32[], const u8[], const i8[2,2,1,1], "
                                 "const f32[2], const i8[2], const f32[], const u8[], -, "
                                 "const i32[2], const i32[2]) -> y"});
  REQUIRE(c.N->Plan.FixedRequantInput == 9);
  CHECK(c.N->Plan.MultiplierInput == -1); // no f32 multipliers besides
  const Tensor &mult = *c.N->Inputs[9]->Const, &shift = *c.N->Inputs[10]->Const;
  // 1 = 2^30 * 2^-30; 6 = (3 * 2^29) * 2^-28.
  CHECK(mult.intAt(0) == 1073741824);
  CHECK(shift.intAt(0) == 30);
  CHECK(mult.intAt(1) == 1610612736);
  CHECK(shift.intAt(1) == 28);
}

TEST_CASE("fixed-point-requant: a QLinearConv requantizing in f32 gets its f32 multipliers",
          "[passes][pass:fixed-point-requant]") {
  // Not planned for fixed point (a target with floating point): the kernel
  // reads x_scale * w_scale[m] / y_scale, computed once here in f32.
  QConv c(0.5, {0.25, 0.1}, 2);
  CHECK(passes::fixedPointRequant(c.B.G));
  CHECK(structure(c.B.G) ==
        std::vector<std::string>{"QLinearConv(x, const f32[], const u8[], const i8[2,2,1,1], "
                                 "const f32[2], const i8[2], const f32[], const u8[], -, "
                                 "const f32[2]) -> y"});
  REQUIRE(c.N->Plan.MultiplierInput == 9);
  CHECK(c.N->Plan.FixedRequantInput == -1);
  std::vector<double> m = c.N->Inputs[9]->Const->toDoubles();
  REQUIRE(m.size() == 2);
  CHECK(m[0] == 0.0625);
  // f32(0.1) * 0.5 / 2 in f32: 13421773 * 2^-29, not 0.025.
  CHECK(m[1] == 0.02500000037252902984619140625);
  CHECK_FALSE(passes::fixedPointRequant(c.B.G));
}

TEST_CASE("fixed-point-requant: float graphs and integer ops it does not requantize stay",
          "[passes][pass:fixed-point-requant]") {
  SECTION("a float Conv and MatMul") {
    Builder b;
    ir::Value *x = b.input("x", DType::F32, {1, 2, 3, 3});
    ir::Value *w = b.constant("w", DType::F32, {2, 2, 1, 1}, {1, 2, 3, 4});
    ir::Value *c = b.node("Conv", {x, w}, "c", {DType::F32, {1, 2, 3, 3}},
                          {{"kernel_shape", ints({1, 1})}});
    ir::Value *r = b.node("Reshape", {c, b.constant("shape", DType::I64, {2}, {2, 9})}, "r",
                          {DType::F32, {2, 9}});
    ir::Value *v = b.constant("v", DType::F32, {9, 4}, std::vector<double>(36, 0.5));
    b.G.Outputs = {b.node("MatMul", {r, v}, "y", {DType::F32, {2, 4}})};
    std::vector<std::string> before = structure(b.G);
    REQUIRE(before == std::vector<std::string>{"Conv(x, const f32[2,2,1,1]) -> %0",
                                               "Reshape(%0, const i64[2]) -> %1",
                                               "MatMul(%1, const f32[9,4]) -> y"});
    CHECK_FALSE(passes::fixedPointRequant(b.G));
    CHECK(structure(b.G) == before);
  }
  SECTION("a QLinearMatMul that requantizes in f32 (its kernel reads the scales)") {
    QMatMul q({0.25, 0.75, 0.1});
    std::vector<std::string> before = structure(q.B.G);
    CHECK_FALSE(passes::fixedPointRequant(q.B.G));
    CHECK(structure(q.B.G) == before);
    CHECK(q.N->Plan == ir::KernelPlan{});
  }
  SECTION("a QLinearConv whose input scale is known only at run time") {
    QConv c(0.5, {0.25, 0.1}, 2);
    ir::Value *runTimeScale = c.B.input("x_scale_in", DType::F32, {});
    c.N->Inputs[1] = runTimeScale;
    std::vector<std::string> before = structure(c.B.G);
    CHECK_FALSE(passes::fixedPointRequant(c.B.G));
    CHECK(structure(c.B.G) == before);
    CHECK(c.N->Plan.MultiplierInput == -1);
  }
}

// --- fuse-attention -----------------------------------------------------------

namespace {

/// A GPT-style attention over [1, 5, 2, 4] heads: Q, K, V split by
/// Transposes, scores scaled by a Div and masked by a Where, merged back by
/// a Transpose. `probsOut`: the probabilities are a graph output too.
Builder attentionChain(bool probsOut) {
  Builder b;
  ir::TensorType heads{DType::F32, {1, 2, 5, 4}}, scores{DType::F32, {1, 2, 5, 5}};
  auto perm = [](std::vector<int64_t> p) {
    return std::map<std::string, ir::Attribute>{{"perm", ir::intsAttr(std::move(p))}};
  };
  ir::Value *q = b.input("q", DType::F32, {1, 5, 2, 4});
  ir::Value *k = b.input("k", DType::F32, {1, 5, 2, 4});
  ir::Value *v = b.input("v", DType::F32, {1, 5, 2, 4});
  ir::Value *qh = b.node("Transpose", {q}, "qh", heads, perm({0, 2, 1, 3}));
  ir::Value *kt = b.node("Transpose", {k}, "kt", {DType::F32, {1, 2, 4, 5}}, perm({0, 2, 3, 1}));
  ir::Value *vh = b.node("Transpose", {v}, "vh", heads, perm({0, 2, 1, 3}));
  ir::Value *s = b.node("MatMul", {qh, kt}, "s", scores);
  ir::Value *d = b.node("Div", {s, b.constant("scale", DType::F32, {}, {2})}, "d", scores);
  ir::Value *mask = b.constant("mask", DType::Bool, {1, 1, 5, 5}, std::vector<double>(25, 1));
  ir::Value *w = b.node("Where", {mask, d, b.constant("ninf", DType::F32, {}, {-1e30})}, "w",
                        scores);
  ir::Value *p = b.node("Softmax", {w}, "p", scores, {{"axis", ir::intAttr(-1)}});
  ir::Value *o = b.node("MatMul", {p, vh}, "o", heads);
  b.G.Outputs = {b.node("Transpose", {o}, "y", {DType::F32, {1, 5, 2, 4}}, perm({0, 2, 1, 3}))};
  if (probsOut)
    b.G.Outputs.push_back(p);
  return b;
}

} // namespace

TEST_CASE("fuse-attention: a scaled, masked attention chain is one node read through the "
          "Transposes around it",
          "[passes][pass:fuse-attention]") {
  Builder b = attentionChain(false);
  CHECK(passes::fuseAttention(b.G));
  passes::eliminateDeadCode(b.G);
  CHECK(structure(b.G) ==
        std::vector<std::string>{
            "mlcc.Attention(q, k, v, const f32[], const bool[1,1,5,5], const f32[]) -> y"});
  const ir::Node &n = *b.G.Nodes[0];
  CHECK(n.attrInts("q_perm") == std::vector<int64_t>{0, 2, 1, 3});
  CHECK(n.attrInts("k_perm") == std::vector<int64_t>{0, 2, 1, 3}); // K^T's perm, last two swapped
  CHECK(n.attrInts("v_perm") == std::vector<int64_t>{0, 2, 1, 3});
  CHECK(n.attrInts("out_perm") == std::vector<int64_t>{0, 2, 1, 3});
  CHECK(n.attrInts("steps") == std::vector<int64_t>{6, 8}); // s / x, Where(c, s, x)
}

TEST_CASE("fuse-attention: a chain whose probabilities are read elsewhere stays",
          "[passes][pass:fuse-attention]") {
  Builder b = attentionChain(true);
  std::vector<std::string> before = structure(b.G);
  CHECK_FALSE(passes::fuseAttention(b.G));
  CHECK(structure(b.G) == before);
}

// --- fuse-ops -----------------------------------------------------------------

TEST_CASE("fuse-ops: a MatMul and its elementwise epilogue are one group",
          "[passes][pass:fuse-ops]") {
  Builder b;
  ir::TensorType f{DType::F32, {2, 3}};
  ir::Value *a = b.input("a", DType::F32, {2, 4});
  ir::Value *w = b.constant("w", DType::F32, {4, 3}, std::vector<double>(12, 0.5));
  ir::Value *m = b.node("MatMul", {a, w}, "m", f);
  ir::Value *s = b.node("Add", {m, b.constant("bias", DType::F32, {3}, {1, 2, 3})}, "s", f);
  b.G.Outputs = {b.node("Relu", {s}, "y", f)};

  passes::fuseOps(b.G);
  CHECK(fusedStructure(b.G) == std::vector<std::string>{
                                   "MatMul(a, const f32[4,3]) -> %0 [0]",
                                   "Add(%0, const f32[3]) -> %1 [0]",
                                   "Relu(%1) -> y [0]",
                               });
}

TEST_CASE("fuse-ops: Casts join a chain (a float16 graph's float32 region is one kernel)",
          "[passes][pass:fuse-ops]") {
  Builder b;
  ir::Value *x = b.input("x", DType::F16, {2, 3});
  auto to = [](DType t) { return ir::intAttr((int64_t)t); };
  ir::Value *w = b.node("Cast", {x}, "w", {DType::F32, {2, 3}}, {{"to", to(DType::F32)}});
  ir::Value *r = b.node("Sigmoid", {w}, "r", {DType::F32, {2, 3}});
  ir::Value *m = b.node("Mul", {w, r}, "m", {DType::F32, {2, 3}});
  b.G.Outputs = {b.node("Cast", {m}, "y", {DType::F16, {2, 3}}, {{"to", to(DType::F16)}})};

  passes::fuseOps(b.G);
  CHECK(fusedStructure(b.G) == std::vector<std::string>{
                                   "Cast(x) -> %0 [0]",
                                   "Sigmoid(%0) -> %1 [0]",
                                   "Mul(%0, %1) -> %2 [0]",
                                   "Cast(%2) -> y [0]",
                               });
}

TEST_CASE("fuse-ops: the elementwise producer of a single-use operand is inlined",
          "[passes][pass:fuse-ops]") {
  // y = exp(x) * sigmoid(z): Exp is the root, Mul its chain; the Sigmoid's
  // value is read only by the Mul, so the kernel computes it in place.
  Builder b;
  ir::TensorType f{DType::F32, {8}};
  ir::Value *x = b.input("x", DType::F32, {8});
  ir::Value *z = b.input("z", DType::F32, {8});
  ir::Value *e = b.node("Exp", {x}, "e", f);
  ir::Value *s = b.node("Sigmoid", {z}, "s", f);
  b.G.Outputs = {b.node("Mul", {e, s}, "y", f)};

  passes::fuseOps(b.G);
  CHECK(fusedStructure(b.G) == std::vector<std::string>{
                                   "Exp(x) -> %0 [0]",
                                   "Sigmoid(z) -> %1 [0, inlined]",
                                   "Mul(%0, %1) -> y [0]",
                               });

  // Read twice (also a graph output), the Sigmoid is a kernel of its own;
  // the Exp still takes the Mul.
  Builder t;
  x = t.input("x", DType::F32, {8});
  z = t.input("z", DType::F32, {8});
  e = t.node("Exp", {x}, "e", f);
  s = t.node("Sigmoid", {z}, "s", f);
  t.G.Outputs = {t.node("Mul", {e, s}, "y", f), s};
  passes::fuseOps(t.G);
  CHECK(fusedStructure(t.G) == std::vector<std::string>{
                                   "Exp(x) -> %0 [0]",
                                   "Sigmoid(z) -> s",
                                   "Mul(%0, s) -> y [0]",
                               });
}

TEST_CASE("fuse-ops: no group across a value used twice, a non-elementwise consumer or a "
          "broadcast",
          "[passes][pass:fuse-ops]") {
  Builder b;
  ir::TensorType f{DType::F32, {4}};
  // Exp -> Neg, whose value two nodes read (graph outputs both): the group
  // ends at the Neg, the last point where one value leaves it.
  ir::Value *x = b.input("x", DType::F32, {4});
  ir::Value *e = b.node("Exp", {x}, "e", f);
  ir::Value *n = b.node("Neg", {e}, "n", f);
  ir::Value *y1 = b.node("Relu", {n}, "y1", f);
  ir::Value *y2 = b.node("Sigmoid", {n}, "y2", f);
  // Relu -> MatMul: a contraction does not join an elementwise root.
  ir::Value *x2 = b.input("x2", DType::F32, {2, 4});
  ir::Value *r = b.node("Relu", {x2}, "r", {DType::F32, {2, 4}});
  ir::Value *w = b.constant("w", DType::F32, {4, 3}, std::vector<double>(12, 0.5));
  ir::Value *y3 = b.node("MatMul", {r, w}, "y3", {DType::F32, {2, 3}});
  // Tanh [4] -> Add to [2, 4]: the Add's output is larger than the root's.
  ir::Value *x3 = b.input("x3", DType::F32, {4});
  ir::Value *t = b.node("Tanh", {x3}, "t", f);
  ir::Value *c = b.constant("c", DType::F32, {2, 4}, std::vector<double>(8, 1));
  ir::Value *y4 = b.node("Add", {t, c}, "y4", {DType::F32, {2, 4}});
  b.G.Outputs = {y1, y2, y3, y4};
  std::vector<std::string> before = structure(b.G);

  passes::fuseOps(b.G);
  CHECK(fusedStructure(b.G) == std::vector<std::string>{
                                   "Exp(x) -> %0 [0]",
                                   "Neg(%0) -> %1 [0]",
                                   "Relu(%1) -> y1",
                                   "Sigmoid(%1) -> y2",
                                   "Relu(x2) -> %4",
                                   "MatMul(%4, const f32[4,3]) -> y3",
                                   "Tanh(x3) -> %6",
                                   "Add(%6, const f32[2,4]) -> y4",
                               });
  // It only records groups: the nodes are the same.
  CHECK(structure(b.G) == before);
}

// --- lower-to-kernels -----------------------------------------------------------

namespace {

/// a [2, 4] -> MatMul(w [4, 3]) -> Add(bias [3]) -> Relu -> y, as fuse-ops
/// leaves it when `fused` (one group), else as three nodes.
struct MatMulEpilogue {
  Builder B;
  explicit MatMulEpilogue(bool fused) {
    ir::TensorType f{DType::F32, {2, 3}};
    ir::Value *a = B.input("a", DType::F32, {2, 4});
    ir::Value *w = B.constant("w", DType::F32, {4, 3}, std::vector<double>(12, 0.5));
    ir::Value *m = B.node("MatMul", {a, w}, "m", f);
    ir::Value *s = B.node("Add", {m, B.constant("bias", DType::F32, {3}, {1, 2, 3})}, "s", f);
    B.G.Outputs = {B.node("Relu", {s}, "y", f)};
    if (fused)
      for (auto &n : B.G.Nodes)
        n->Group = 0;
  }
};

} // namespace

TEST_CASE("lower-to-kernels: a fused group is one call of one kernel",
          "[passes][pass:lower-to-kernels]") {
  MatMulEpilogue g(true);
  kir::Program p = passes::lowerToProgram(g.B.G, "model");
  CHECK(p.Name == "model");
  REQUIRE(p.Kernels.size() == 1);
  REQUIRE(p.Calls.size() == 1);
  // In the order the lowering binds them: the MatMul's input and its
  // output (the graph's y, written in place: the chain's last value), its
  // constant weights, the scratch row its sums accumulate in (the output
  // cannot be read back once the epilogue applies), then the chain's other
  // operand. No buffer for m or s.
  CHECK(calls(p) == std::vector<std::string>{
                        "k0_matmul_add_relu(input 0, output 0, constant 0, arena 0, constant 1)"});
  REQUIRE(p.ArenaBuffers.size() == 1);
  CHECK(p.ArenaBuffers[0].Name == "m_node.scratch");
  CHECK(p.ArenaBuffers[0].Bytes == 3 * 4); // one row of 3 f32 sums
  const kir::Call &c = p.Calls[0];
  CHECK(c.Label == "node 'm_node' (MatMul) + node 's_node' (Add) + node 'y_node' (Relu)");
  CHECK(callNodes(c) ==
        std::vector<std::string>{"m_node (MatMul)", "s_node (Add)", "y_node (Relu)"});
  REQUIRE(c.Produces.size() == 1);
  CHECK(c.Produces[0].Arg == 1);
  CHECK(c.Produces[0].Value == "y");
  CHECK(c.Produces[0].Dims == Shape{2, 3});
  // The constants the call reads, in the library's data.
  REQUIRE(p.Constants.size() == 2);
  CHECK(p.Constants[0].Name == "w0_w");
  CHECK(p.Constants[0].Count == 12);
  CHECK(p.Constants[1].Name == "w1_bias");
  CHECK(p.Constants[1].Count == 3);
  REQUIRE(p.Inputs.size() == 1);
  CHECK(p.Inputs[0].CName == "a");
  REQUIRE(p.Outputs.size() == 1);
  CHECK(p.Outputs[0].CName == "y");
}

TEST_CASE("lower-to-kernels: unfused nodes are a call each through arena buffers, equal "
          "kernels shared",
          "[passes][pass:lower-to-kernels]") {
  SECTION("the MatMul epilogue without groups") {
    MatMulEpilogue g(false);
    std::vector<std::string> before = structure(g.B.G);
    kir::Program p = passes::lowerToProgram(g.B.G, "model");
    CHECK(calls(p) == std::vector<std::string>{
                          "k0_matmul(input 0, arena 0, constant 0)",
                          "k1_add(arena 0, constant 1, arena 1)",
                          "k2_relu(arena 1, output 0)",
                      });
    REQUIRE(p.ArenaBuffers.size() == 2);
    CHECK(p.ArenaBuffers[0].Name == "m");
    CHECK(p.ArenaBuffers[0].Bytes == 2 * 3 * 4);
    CHECK(p.ArenaBuffers[1].Name == "s");
    CHECK(p.ArenaBuffers[1].Bytes == 2 * 3 * 4);
    CHECK(p.Calls[1].Label == "node 's_node' (Add)");
    // The graph is read, not changed.
    CHECK(structure(g.B.G) == before);
    for (auto &n : g.B.G.Nodes)
      CHECK(n->Group == -1);
  }
  SECTION("two Relu of one shape call one kernel") {
    Builder b;
    ir::TensorType f{DType::F32, {4}};
    ir::Value *x = b.input("x", DType::F32, {4});
    ir::Value *r = b.node("Relu", {x}, "r", f);
    ir::Value *n = b.node("Neg", {r}, "n", f);
    b.G.Outputs = {b.node("Relu", {n}, "y", f)};
    kir::Program p = passes::lowerToProgram(b.G, "m");
    CHECK(p.Kernels.size() == 2);
    CHECK(calls(p) == std::vector<std::string>{
                          "k0_relu(input 0, arena 0)",
                          "k1_neg(arena 0, arena 1)",
                          "k0_relu(arena 1, output 0)",
                      });
    CHECK(p.Calls[2].Label == "node 'y_node' (Relu)");
  }
}

TEST_CASE("lower-to-kernels: a view makes no kernel; an output that is an input's view is "
          "copied",
          "[passes][pass:lower-to-kernels]") {
  // x [2, 3] -> Relu -> Reshape [6] -> y: the Relu writes y's buffer (the
  // Reshape costs nothing); z = Reshape(x) aliases input x, so a copy
  // kernel fills output z at the end.
  Builder b;
  ir::Value *x = b.input("x", DType::F32, {2, 3});
  ir::Value *shape = b.constant("shape", DType::I64, {1}, {6});
  ir::Value *r = b.node("Relu", {x}, "r", {DType::F32, {2, 3}});
  ir::Value *y = b.node("Reshape", {r, shape}, "y", {DType::F32, {6}});
  ir::Value *z = b.node("Reshape", {x, shape}, "z", {DType::F32, {6}});
  b.G.Outputs = {y, z};

  kir::Program p = passes::lowerToProgram(b.G, "m");
  CHECK(calls(p) == std::vector<std::string>{
                        "k0_relu(input 0, output 0)",
                        "k1_copy(input 0, output 1)",
                    });
  REQUIRE(p.Calls.size() == 2);
  CHECK(p.Calls[1].Label == "copy to output 'z'");
  CHECK(p.Calls[1].Nodes.empty());
  CHECK(p.ArenaBuffers.empty());
  CHECK(p.Constants.empty()); // the Reshape's shape is not read at run time
}

// --- scale-into-weights -------------------------------------------------------

namespace {

/// Conv(Mul(x, s), W) with W [4, 8, 1, 1], planned as pixel columns; `scale`
/// the shape of s; with `twice`, the Mul's result is also a graph output.
struct ScaledPointwise {
  Builder B;
  ScaledPointwise(Shape scale, bool twice = false) {
    ir::Value *x = B.input("x", DType::F32, {1, 8, 6, 6});
    ir::Value *s = B.input("s", DType::F32, scale);
    ir::Value *m = B.node("Mul", {x, s}, "m", {DType::F32, {1, 8, 6, 6}});
    std::vector<double> w(32);
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = 0.25 * (double)i - 3;
    ir::Value *wt = B.constant("w", DType::F32, {4, 8, 1, 1}, w);
    ir::Value *y = B.node("Conv", {m, wt}, "y", {DType::F32, {1, 4, 6, 6}});
    y->Producer->Plan.Register = ir::KernelPlan::Tile{};
    y->Producer->Plan.PixelColumns = true;
    B.G.Outputs = {y};
    if (twice)
      B.G.Outputs.push_back(m);
  }
  bool run() {
    bool changed = passes::scaleIntoWeights(B.G);
    passes::inferAndFold(B.G);
    passes::eliminateDeadCode(B.G);
    return changed;
  }
};

} // namespace

TEST_CASE("scale-into-weights: a per-channel scale before a pointwise convolution scales "
          "its weights",
          "[passes]") {
  for (Shape scale : {Shape{1, 8, 1, 1}, Shape{8, 1, 1}}) {
    ScaledPointwise p(scale);
    CHECK(p.run());
    CHECK(structure(p.B.G) ==
          std::vector<std::string>{"Mul(const f32[4,8,1,1], s) -> %0", "Conv(x, %0) -> y"});
  }
}

TEST_CASE("scale-into-weights: other scales, a Mul read elsewhere and planned weights stay",
          "[passes]") {
  const std::vector<std::string> same = {"Mul(x, s) -> %0", "Conv(%0, const f32[4,8,1,1]) -> y"};
  ScaledPointwise perPixel(Shape{1, 1, 6, 6});
  CHECK_FALSE(perPixel.run());
  CHECK(structure(perPixel.B.G) == same);
  ScaledPointwise read(Shape{1, 8, 1, 1}, /*twice=*/true);
  CHECK_FALSE(read.run());
  CHECK(structure(read.B.G) ==
        std::vector<std::string>{"Mul(x, s) -> m", "Conv(m, const f32[4,8,1,1]) -> y"});
  ScaledPointwise packed(Shape{1, 8, 1, 1});
  packed.B.G.Outputs[0]->Producer->Plan.PixelColumns = false; // packed panels, rows of pixels
  CHECK_FALSE(packed.run());
  CHECK(structure(packed.B.G) == same);
}
