//===- InferAndFold.cpp - Type inference and constant folding -------------===//
#include "compiler/kernel/Interpreter.h"
#include "compiler/kernel/ScalarEval.h"
#include "compiler/ops/DimNumbers.h"
#include "compiler/ops/Lowering.h"
#include "compiler/passes/Passes.h"

#include <algorithm>
#include <set>

namespace mlcc::passes {

namespace {

/// If every store the kernel makes to parameter `param` writes the same
/// constant, returns that constant (the output is a splat).
kir::Expr uniformStoredConstant(const kir::Stmt &s, const kir::Buffer &param,
                                bool &ok, kir::Expr found = nullptr) {
  using namespace kir;
  if (!s || !ok)
    return found;
  switch (s->Kind) {
  case StmtKind::Block:
    for (auto &c : s->Body)
      found = uniformStoredConstant(c, param, ok, found);
    return found;
  case StmtKind::For:
  case StmtKind::Alloc:
    return uniformStoredConstant(s->Inner, param, ok, found);
  case StmtKind::If:
    found = uniformStoredConstant(s->Inner, param, ok, found);
    return uniformStoredConstant(s->Else, param, ok, found);
  case StmtKind::Store:
    if (s->Buf != param)
      return found;
    if (!s->Value->isConst()) {
      ok = false;
      return found;
    }
    if (found && (found->IntValue != s->Value->IntValue ||
                  !(found->FloatValue == s->Value->FloatValue ||
                    (found->FloatValue != found->FloatValue &&
                     s->Value->FloatValue != s->Value->FloatValue)))) {
      ok = false;
      return found;
    }
    return s->Value;
  case StmtKind::Barrier:
    return found;
  }
  return found;
}

void foldNode(ir::Node &n, const ops::OpSchema &schema,
              const FoldOptions &options, bool &folded) {
  folded = false;
  if (schema.Fusion == ops::FusionClass::View) {
    const Tensor &src = *n.Inputs[0]->Const;
    const ir::TensorType &t = n.Outputs[0]->Type;
    n.Outputs[0]->Const =
        src.isSplat() ? std::make_shared<Tensor>(Tensor::splat(
                            t.Type, t.Dims, src.bytes()))
                      : std::make_shared<Tensor>(t.Type, t.Dims, src.bytes());
    folded = true;
    return;
  }
  kir::KernelBuilder b("fold_" + n.OpType);
  ops::LowerCtx ctx(n, b);
  schema.Lower(ctx);
  kir::Kernel k = b.finish();

  // Outputs that are uniform constants need no evaluation.
  std::vector<TensorPtr> results(n.Outputs.size());
  int64_t total = 0, outBytes = 0;
  bool allSplat = true;
  for (size_t p = 0; p < k.Params.size(); ++p) {
    const ops::ParamBinding &pb = ctx.bindings()[p];
    if (pb.K != ops::ParamBinding::Output)
      continue;
    bool ok = true;
    kir::Expr c = uniformStoredConstant(k.Body, k.Params[p], ok);
    const ir::TensorType &t = n.Outputs[pb.Index]->Type;
    if (ok && c && !isSubByte(t.Type)) {
      std::vector<uint8_t> elem(dtypeSize(t.Type));
      kir::storeScalar(t.Type, elem.data(), kir::Scalar{c->IntValue, c->FloatValue});
      results[pb.Index] =
          std::make_shared<Tensor>(Tensor::splat(t.Type, t.Dims, elem));
    } else {
      allSplat = false;
      total += t.numel();
      outBytes += storageBytes(t.Type, t.numel());
    }
  }
  // A node whose results are about as large as its constant inputs (packing
  // weights into panels, transposing them) leaves the library's size as it
  // is: it folds at any size, since at run time it would redo the work on
  // every call (a 4096 x 4096 float matrix-vector product spent 80% of its
  // time repacking its weights). Its iteration budget grows with its size.
  int64_t inBytes = 0;
  for (const ir::Value *in : n.Inputs)
    if (in && in->Const)
      inBytes += storageBytes(in->Type.Type, in->Type.numel());
  const bool rearranges = outBytes <= inBytes + inBytes / 4;
  int64_t budget = options.MaxFoldIterations;
  if (rearranges && budget >= 0)
    budget = std::max(budget, 4 * total);
  if (!allSplat) {
    if (total > options.MaxFoldElements && !rearranges)
      return; // too big to keep in the library: compute at run time
    std::vector<std::shared_ptr<Tensor>> storage;
    std::vector<std::vector<uint8_t>> inputBytes;
    std::vector<void *> args;
    inputBytes.reserve(k.Params.size());
    for (size_t p = 0; p < k.Params.size(); ++p) {
      const ops::ParamBinding &pb = ctx.bindings()[p];
      if (pb.K == ops::ParamBinding::Input) {
        // A dense constant is read where it is (the kernel only reads its
        // inputs); a splat is expanded.
        const Tensor &c = *n.Inputs[pb.Index]->Const;
        if (!c.isSplat() && !c.bytes().empty() && !(p < k.Written.size() && k.Written[p])) {
          args.push_back(const_cast<uint8_t *>(c.bytes().data()));
          continue;
        }
        inputBytes.push_back(c.denseBytes());
        if (inputBytes.back().empty())
          inputBytes.back().resize(16);
        args.push_back(inputBytes.back().data());
      } else {
        auto t = std::make_shared<Tensor>(pb.Type.Type, pb.Type.Dims);
        if (t->mutableBytes().empty())
          t->mutableBytes().resize(16);
        storage.push_back(t);
        args.push_back(t->mutableBytes().data());
        if (pb.K == ops::ParamBinding::Output && !results[pb.Index]) {
          results[pb.Index] = t;
        }
      }
    }
    try {
      kir::evaluate(k, args, budget);
    } catch (const kir::BudgetExceeded &) {
      return; // too much work for compile time: compute at run time
    }
    for (auto &t : storage)
      if (t->numel() == 0)
        t->mutableBytes().clear();
  }
  for (size_t i = 0; i < n.Outputs.size(); ++i)
    if (n.Outputs[i]) {
      MLCC_CHECK(results[i], n.where() << " output " << i << " not computed");
      n.Outputs[i]->Const = results[i];
    }
  folded = true;
}

/// True when the node's kernel reads no non-constant input: Shape, Size,
/// EyeLike... compute their outputs from types and attributes alone, so
/// they fold even when their input is only known at run time.
bool readsOnlyConstants(const ir::Node &n, const ops::OpSchema &schema) {
  if (schema.Fusion == ops::FusionClass::View || !schema.Lower)
    return false;
  // Lowering needs every shape (a subgraph's inputs may have unknown dims).
  for (const ir::Value *in : n.Inputs)
    if (in && std::find_if(in->Type.Dims.begin(), in->Type.Dims.end(),
                           [](int64_t d) { return d < 0; }) != in->Type.Dims.end())
      return false;
  kir::KernelBuilder b("probe_" + n.OpType);
  ops::LowerCtx ctx(n, b);
  try {
    schema.Lower(ctx);
  } catch (const CompileError &) {
    return false; // reported when (if) the node is lowered for real
  }
  for (auto &pb : ctx.bindings())
    if (pb.K == ops::ParamBinding::Input && !n.Inputs[pb.Index]->Const)
      return false;
  return true;
}

/// A Cast of one input and output (compared to its input's type by the
/// caller).
bool isSameTypeCast(const ir::Node &n) {
  return n.OpType == "Cast" && n.Domain == "" && n.Outputs.size() == 1 && n.Inputs.size() == 1 &&
         n.Inputs[0];
}

/// Whether every value of type `from` is exactly a value of type `to`
/// (a conversion that only widens: float16 to float32, int8 to int32,
/// uint8 to float32, ...).
bool widensExactly(DType from, DType to) {
  if (from == to)
    return true;
  if (from == DType::Bool)
    return isInteger(to) || isFloat(to);
  if (isFloat(from))
    return (to == DType::F64 && isFloat(from)) || (to == DType::F32 && isNarrowFloat(from));
  if (!isInteger(from) || from == DType::Index)
    return false;
  const unsigned bits = dtypeBits(from);
  const bool sgn = isSignedInt(from);
  if (isInteger(to) && to != DType::Index)
    return isSignedInt(to) ? dtypeBits(to) >= bits + (sgn ? 0 : 1)
                           : !sgn && dtypeBits(to) >= bits;
  // Integers a float's mantissa holds: 11 bits (float16), 24, 53.
  unsigned mantissa = to == DType::F16 ? 11 : to == DType::F32 ? 24 : to == DType::F64 ? 53 : 0;
  return bits - (sgn ? 1 : 0) <= mantissa;
}

/// A Cast (or CastLike) of a Cast's output whose conversion only widened
/// (exact): it converts the same value, so it reads the first Cast's input
/// instead (a float16 graph's Cast to float32 and back, int8 -> int32 ->
/// float). The first Cast is left to the nodes that still read it.
void skipWideningCast(ir::Node &n) {
  if ((n.OpType != "Cast" && n.OpType != "CastLike") || n.Domain != "" || !n.hasInput(0))
    return;
  const ir::Node *inner = n.Inputs[0]->Producer;
  if (!inner || (inner->OpType != "Cast" && inner->OpType != "CastLike") || inner->Domain != "" ||
      !inner->hasInput(0) || !inner->Inputs[0]->Type.known() || inner->Guard != n.Guard)
    return;
  if (widensExactly(inner->Inputs[0]->Type.Type, n.Inputs[0]->Type.Type))
    n.Inputs[0] = inner->Inputs[0];
}

/// A Pad whose pads (the constant input of opset 11 on, the attribute
/// before) are all zero.
bool isEmptyPad(const ir::Node &n) {
  if (n.OpType != "Pad" || n.Domain != "" || n.Outputs.size() != 1 || n.Inputs.empty() ||
      !n.Inputs[0])
    return false;
  if (n.hasInput(1)) {
    const ir::Value *pads = n.Inputs[1];
    if (!pads->Const || !isInteger(pads->Const->dtype()))
      return false;
    for (int64_t v : pads->Const->toInts())
      if (v != 0)
        return false;
    return true;
  }
  for (int64_t p : n.attrInts("pads", {}))
    if (p != 0)
      return false;
  return n.attr("pads") != nullptr;
}

/// Whether every element of `t` is non-zero (true).
bool allTrue(const Tensor &t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.intAt(i) == 0)
      return false;
  return true;
}

/// The operand a Where with a constant condition selects everywhere (of
/// the output's own type: no broadcast), or null.
ir::Value *uniformWhereChoice(const ir::Node &n) {
  if (n.OpType != "Where" || n.Domain != "" || n.Inputs.size() != 3 || !n.Inputs[0] ||
      !n.Inputs[0]->Const || !n.Inputs[1] || !n.Inputs[2] || n.Outputs.size() != 1 ||
      !n.Outputs[0])
    return nullptr;
  const Tensor &c = *n.Inputs[0]->Const;
  if (c.numel() == 0)
    return nullptr;
  bool first = c.intAt(0) != 0;
  for (int64_t i = 1; i < c.numel(); ++i)
    if ((c.intAt(i) != 0) != first)
      return nullptr;
  ir::Value *chosen = n.Inputs[first ? 1 : 2];
  return chosen->Type == n.Outputs[0]->Type ? chosen : nullptr;
}

/// Keeps what folding `n` computed where it is small (ir::Graph::Folds).
void recordFold(ir::Graph &g, const ir::Node &n) {
  constexpr int64_t kMostElements = 4096;
  std::vector<std::string> inputs;
  for (const ir::Value *in : n.Inputs)
    inputs.push_back(in ? in->Name : std::string());
  for (const ir::Value *out : n.Outputs)
    if (out && out->Const && out->Const->numel() <= kMostElements)
      g.Folds[out->Name] = {out->Const, inputs};
}

} // namespace

void inferAndFold(ir::Graph &g, const FoldOptions &options) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::set<const ir::Node *> foldedNodes;
  for (size_t index = 0; index < g.Nodes.size(); ++index) {
    ir::Node &n = *g.Nodes[index];
    const ops::OpSchema &schema = reg.lookup(n);
    // A guard that folded to true guards nothing (a Loop whose condition
    // stays true).
    if (n.Guard && n.Guard->Const && allTrue(*n.Guard->Const))
      n.Guard = nullptr;
    if (options.Validate)
      reg.validate(n);
    if (schema.Expand) {
      // Replace the node by its expansion and continue with the first new
      // node (the expansion may be empty when outputs map to existing values).
      // The new nodes run under the node's guard, except those the
      // expansion guarded itself (an If's branches) and those that read
      // the guard: the conjunctions that guard the branches of an If
      // inside a branch, which must run when the outer one is not taken
      // too, to be false then.
      std::vector<std::unique_ptr<ir::Node>> expansion = schema.Expand(n, g);
      if (n.Guard)
        for (auto &m : expansion)
          if (!m->Guard &&
              std::find(m->Inputs.begin(), m->Inputs.end(), n.Guard) == m->Inputs.end())
            m->Guard = n.Guard;
      g.Nodes.erase(g.Nodes.begin() + (long)index);
      g.Nodes.insert(g.Nodes.begin() + (long)index,
                     std::make_move_iterator(expansion.begin()),
                     std::make_move_iterator(expansion.end()));
      --index;
      continue;
    }
    for (size_t i = 0; i < n.Inputs.size(); ++i)
      if (n.Inputs[i] && !n.Inputs[i]->Type.known())
        n.error(ErrorKind::Internal) << "input " << i << " has no type";
    schema.Infer(n);
    for (size_t i = 0; i < n.Outputs.size(); ++i) {
      ir::Value *v = n.Outputs[i];
      if (!v)
        continue;
      MLCC_CHECK(v->Type.known(), n.where() << " inference left output " << i
                                            << " untyped");
      if (!isStorable(v->Type.Type))
        n.error(ErrorKind::Unsupported) << "output " << i << " would have type "
                                        << dtypeOnnxName(v->Type.Type);
    }
    // A Cast to its input's own type (QDQ exports put them between
    // QuantizeLinear and DequantizeLinear; a Cast to float32 and back, once
    // skipWideningCast read around the first) is its input, and so is a Pad
    // that adds nothing (PyTorch exports F.pad of zeros; left in, it kept
    // the quantizer from reaching the pool after it). So is the operand that
    // a Where with a constant condition selects everywhere.
    ir::Value *same = nullptr;
    skipWideningCast(n);
    if ((isSameTypeCast(n) || isEmptyPad(n)) && n.Outputs[0]->Type == n.Inputs[0]->Type)
      same = n.Inputs[0];
    else
      same = uniformWhereChoice(n);
    if (same && !g.isGraphOutput(n.Outputs[0])) {
      g.replaceAllUses(n.Outputs[0], same);
      n.Outputs[0]->Producer = nullptr;
      foldedNodes.insert(&n);
      continue;
    }
    bool allConst = schema.Foldable &&
                    !(options.KeepDequantize && n.OpType == "DequantizeLinear" && n.Domain == "");
    for (auto *in : n.Inputs)
      if (in && !in->Const)
        allConst = false;
    if (!allConst && schema.Foldable && n.OpType != "DequantizeLinear")
      allConst = readsOnlyConstants(n, schema);
    if (!allConst)
      continue;
    bool folded = false;
    foldNode(n, schema, options, folded);
    if (folded) {
      for (auto *out : n.Outputs)
        if (out)
          out->Producer = nullptr;
      foldedNodes.insert(&n);
      if (options.RecordFolds)
        recordFold(g, n);
      // Numbers a node reads as data that follow bounded dimensions: also
      // computed when the library runs (ir::Graph::RunTimeNumbers).
      for (auto *out : n.Outputs) {
        auto rule = out ? g.RunTimeNumbers.find(out->Name) : g.RunTimeNumbers.end();
        if (rule != g.RunTimeNumbers.end())
          g.Nodes.insert(g.Nodes.begin() + (long)index + 1,
                         ops::numbersAtRunTime(g, *out, rule->second));
      }
    }
  }
  g.removeNodesIf([&](const ir::Node &n) { return foldedNodes.count(&n) > 0; });
}

} // namespace mlcc::passes
