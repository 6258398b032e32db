//===- LowerToProgram.cpp - Graph to kernels and storage ------------------===//
//
// Lowers each remaining node through its op's Lower function and decides
// where every value lives:
//
//  - Values related by view ops (Reshape, Squeeze, ...) form one storage
//    class: the view costs nothing at run time.
//  - A class containing a graph input lives in the caller's input buffer; a
//    class containing a graph output lives in the caller's output buffer
//    (the producing kernel writes there directly); a constant lives in the
//    library's data; anything else gets an arena buffer.
//  - Graph outputs that cannot be written in place (they alias an input, a
//    constant, or another output) are filled by a copy kernel at the end.
//  - An op that lays its inputs side by side (Concat, OpSchema::Placement)
//    costs nothing when its output gets an arena buffer and each input is
//    an arena value of its own: the inputs' buffers become parts of the
//    output's (kir::ArenaBuffer::AliasOf), so their producers write into the
//    output directly, and the op makes no kernel. A later such op whose
//    inputs are already parts of one buffer, side by side in its order
//    (DenseNet's growing concatenations), is a view of that buffer.
//  - Values whose axes follow bounded dimensions (--dim NAME=MIN..MAX) keep
//    their layout at MAX. A graph input or output whose bounded axes do
//    not lead is read and written in the caller's buffer, dense at its
//    run-time extents (strides computed from them), where every kernel
//    that touches it can (OpSchema::DenseOperands, or a probed op); else it
//    is copied between the caller's dense layout and the layout at MAX
//    (repack calls). Views, in-place Concats and selections apply to
//    bounded values only where they hold at every extent; a node whose op
//    does not run to run-time extents is an error.
//  - An op whose outputs are contiguous blocks of its input (Split along an
//    axis with only 1s before it, a unit-step Slice, a Gather of one
//    constant index, a Transpose that moves only axes of 1:
//    OpSchema::Selection) costs nothing when its input is an arena value
//    and its outputs have no storage of their own yet: the outputs' buffers
//    become parts of the input's (views; the input lives as long as they
//    are read), and the op makes no kernel.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Equality.h"
#include "compiler/ops/Lowering.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/ProbedExtents.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace mlcc::passes {

using kir::Storage;
using kir::StorageKind;

namespace {

std::string sanitize(const std::string &name, const std::string &fallback) {
  std::string s;
  for (char c : name)
    s += std::isalnum((unsigned char)c) ? c : '_';
  if (s.empty())
    s = fallback;
  if (std::isdigit((unsigned char)s[0]))
    s = "t_" + s;
  return s;
}

/// C and C++ keywords (the header is included from C++ too, and the CUDA
/// target's source is C++) and names the generated code uses itself.
bool reservedName(const std::string &s) {
  static const std::set<std::string> words = {
      "auto", "break", "case", "char", "const", "continue", "default", "do",
      "double", "else", "enum", "extern", "float", "for", "goto", "if",
      "inline", "int", "long", "register", "restrict", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
      "unsigned", "void", "volatile", "while", "_Bool", "_Complex",
      "_Imaginary", "bool", "true", "false",
      // C++ only
      "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "catch",
      "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "consteval",
      "constexpr", "constinit", "const_cast", "co_await", "co_return", "co_yield",
      "decltype", "delete", "dynamic_cast", "explicit", "export", "friend",
      "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
      "operator", "or", "or_eq", "private", "protected", "public",
      "reinterpret_cast", "requires", "static_assert", "static_cast", "template",
      "this", "thread_local", "throw", "try", "typeid", "typename", "using",
      "virtual", "wchar_t", "xor", "xor_eq"};
  return words.count(s) > 0;
}

/// Union-find over values, for view aliasing.
class Classes {
public:
  const ir::Value *find(const ir::Value *v) {
    auto it = Parent.find(v);
    if (it == Parent.end() || it->second == v)
      return v;
    const ir::Value *root = find(it->second);
    Parent[v] = root;
    return root;
  }
  void unite(const ir::Value *a, const ir::Value *b) {
    const ir::Value *ra = find(a), *rb = find(b);
    if (ra != rb)
      Parent[rb] = ra;
  }

private:
  std::map<const ir::Value *, const ir::Value *> Parent;
};

class Lowerer {
public:
  Lowerer(const ir::Graph &g, const std::string &name) : G(g) {
    P.Name = name;
  }

  kir::Program run() {
    const ops::OpRegistry &reg = ops::OpRegistry::instance();
    describeIo();
    // Storage classes from views.
    for (auto &n : G.Nodes)
      if (reg.lookup(*n).Fusion == ops::FusionClass::View) {
        checkBoundedView(*n);
        C.unite(n->Inputs[0], n->Outputs[0]);
      }
    chooseDenseValues();
    chooseNibbleValues();
    assignExternalStorage();
    placeInputsInOutputs();
    viewOutputsInInputs();

    // A fused group is lowered where its last node stands (its operands
    // are all computed by then).
    std::map<int, std::vector<const ir::Node *>> groups;
    for (auto &n : G.Nodes)
      if (n->Group >= 0)
        groups[n->Group].push_back(n.get());
    for (auto &n : G.Nodes) {
      const ops::OpSchema &schema = reg.lookup(*n);
      if (schema.Fusion == ops::FusionClass::View || InPlace.count(n.get()))
        continue;
      if (n->Group < 0) {
        lowerNode({n.get()});
        continue;
      }
      const std::vector<const ir::Node *> &members = groups[n->Group];
      if (members.back() == n.get())
        lowerNode(members);
    }
    emitOutputCopies();
    placeRepacks();
    return std::move(P);
  }

private:
  /// Whether `v`'s elements in use at run time are its buffer's leading
  /// elements at every value of the bounded dimensions.
  static bool denseAtRunTime(const ir::Value *v) {
    return leadsAtRunTime(v->Type.Dims, v->Bounded);
  }

  static bool touchesBounded(const ir::Node &n) {
    for (const ir::Value *v : n.Inputs)
      if (v && !v->Bounded.empty())
        return true;
    for (const ir::Value *v : n.Outputs)
      if (v && !v->Bounded.empty())
        return true;
    return false;
  }

  /// The first axis of `n`'s operands that follows a bounded dimension, for
  /// messages: "'x' axis 1 (seq)".
  std::string boundedOperand(const ir::Node &n) const {
    auto name = [&](const ir::Value *v) {
      const AxisExtent &a = v->Bounded[0];
      std::string dims;
      for (size_t k = 0; k < a.Coeffs.size() && k < G.BoundedDims.size(); ++k)
        if (a.Coeffs[k])
          dims += (dims.empty() ? "" : ", ") + G.BoundedDims[k].Name;
      return "'" + v->Name + "' (its axis " + std::to_string(a.Axis) + " follows " + dims + ")";
    };
    for (const ir::Value *v : n.Inputs)
      if (v && !v->Bounded.empty())
        return name(v);
    for (const ir::Value *v : n.Outputs)
      if (v && !v->Bounded.empty())
        return name(v);
    return "";
  }

  /// A view of a value whose axes follow bounded dimensions reads the same
  /// elements at every extent only when both sides are dense there.
  void checkBoundedView(const ir::Node &n) const {
    if (!touchesBounded(n))
      return;
    if (!denseAtRunTime(n.Inputs[0]) || !denseAtRunTime(n.Outputs[0]) ||
        n.Inputs[0]->Type.numel() != n.Outputs[0]->Type.numel())
      n.error(ErrorKind::Unsupported)
          << "reshapes " << boundedOperand(n)
          << " where the axis has other axes longer than 1 before it; such a view "
             "changes with the run-time extent and is not compiled so far";
  }

  void describeIo() {
    std::set<std::string> used;
    auto cname = [&](const std::string &onnx, const char *fallback) {
      std::string base = sanitize(onnx, fallback);
      if (reservedName(base))
        base += "_";
      std::string n = base;
      for (int k = 2; used.count(n); ++k)
        n = base + "_" + std::to_string(k);
      used.insert(n);
      return n;
    };
    for (auto *v : G.Inputs) {
      P.Inputs.push_back({v->Name, cname(v->Name, "input"), v->Type.Type,
                          v->Type.Dims, v->QuantScale, v->QuantZeroPoint, v->Bounded});
      P.Inputs.back().Range = v->Range;
    }
    // Each dimension is a member of the inputs struct, named apart from the
    // inputs.
    for (const ir::BoundedDim &d : G.BoundedDims)
      P.Dims.push_back({d.Name, cname(d.Name, "dim"), d.Min, d.Max});
    used.clear();
    for (auto *v : G.Outputs)
      P.Outputs.push_back({v->Name, cname(v->Name, "output"), v->Type.Type,
                           v->Type.Dims, v->QuantScale, v->QuantZeroPoint, v->Bounded});
    // --kv-cache: each pair's input is its output's buffer.
    auto indexOf = [](const std::vector<ir::Value *> &list, const ir::Value *v) {
      return (size_t)(std::find(list.begin(), list.end(), v) - list.begin());
    };
    for (const auto &[past, present] : G.KvCaches) {
      const size_t i = indexOf(G.Inputs, past), o = indexOf(G.Outputs, present);
      const ir::Node &append = *present->Producer;
      if (past->Bounded.size() != 1 || append.attrInt("axis", -1) != past->Bounded[0].Axis ||
          !append.Inputs[1]->Bounded.empty())
        fail(ErrorKind::Unsupported)
            << "--kv-cache " << past->Name << "=" << present->Name << ": the Concat is not along "
            << "the one axis of '" << past->Name << "' that follows a --dim range (or the new "
            << "rows follow it too)";
      P.Inputs[i].CachePair = o;
      P.Outputs[o].CachePair = i;
    }
  }

  /// The graph inputs and outputs whose bounded axes do not lead that stay
  /// in the caller's buffer, dense at their run-time extents (DenseValues):
  /// each is a class of its own (no view), not both an input and an
  /// output, and every node that reads or writes it, and every member of
  /// such a node's fused group, lowers through TensorRef's indices
  /// (OpSchema::DenseOperands) or alone at probed extents.
  void chooseDenseValues() {
    const ops::OpRegistry &reg = ops::OpRegistry::instance();
    std::map<const ir::Value *, std::vector<const ir::Node *>> touching;
    std::map<int, std::vector<const ir::Node *>> groups;
    for (auto &n : G.Nodes) {
      for (const auto *list : {&n->Inputs, &n->Outputs})
        for (const ir::Value *v : *list)
          if (v)
            touching[v].push_back(n.get());
      if (n->Group >= 0)
        groups[n->Group].push_back(n.get());
    }
    auto layoutFree = [&](const ir::Value *v) {
      for (const ir::Node *n : touching[v]) {
        std::vector<const ir::Node *> members = {n};
        if (n->Group >= 0)
          members = groups[n->Group];
        for (const ir::Node *m : members) {
          const ops::OpSchema &s = reg.lookup(*m);
          if (s.Fusion == ops::FusionClass::View ||
              (s.RunTimeExtents ? !s.DenseOperands : members.size() > 1))
            return false;
        }
      }
      return true;
    };
    for (const auto *list : {&G.Inputs, &G.Outputs})
      for (const ir::Value *v : *list)
        if (!v->Bounded.empty() && !v->Const && !denseAtRunTime(v) && !inCache(v) &&
            !(G.isGraphInput(v) && G.isGraphOutput(v)) &&
            std::count(G.Outputs.begin(), G.Outputs.end(), v) <= 1 && layoutFree(v))
          DenseValues.insert(v);
  }

  /// Whether `v` is a --kv-cache input or output (Graph::KvCaches).
  bool inCache(const ir::Value *v) const {
    for (const auto &[past, present] : G.KvCaches)
      if (v == past || v == present)
        return true;
    return false;
  }

  /// Binds classes that contain graph inputs, then graph outputs.
  void assignExternalStorage() {
    for (size_t i = 0; i < G.Inputs.size(); ++i) {
      const ir::Value *root = C.find(G.Inputs[i]);
      if (ClassStorage.count(root))
        continue;
      // A --kv-cache input is its output's first rows, which no kernel
      // reads through it (mlcc.CacheAppend writes after them).
      if (denseAtRunTime(G.Inputs[i]) || DenseValues.count(G.Inputs[i]) || inCache(G.Inputs[i])) {
        ClassStorage[root] = {StorageKind::Input, i};
        continue;
      }
      // The caller's dense data at the run-time extents, laid out as the
      // kernels read it (every axis at its MAX extent) first.
      Storage padded = storageOf(G.Inputs[i]);
      repack(G.Inputs[i], {StorageKind::Input, i}, padded, true);
    }
    for (size_t i = 0; i < G.Outputs.size(); ++i) {
      const ir::Value *v = G.Outputs[i];
      const ir::Value *root = C.find(v);
      // A --kv-cache output stays in its layout at MAX, in the caller's buffer.
      if (inCache(v) && !ClassStorage.count(root)) {
        ClassStorage[root] = {StorageKind::Output, i};
        continue;
      }
      if (!denseAtRunTime(v) && !DenseValues.count(v)) {
        DenseCopies.push_back(i); // from the layout at MAX, at the end
        continue;
      }
      if (!ClassStorage.count(root) && !v->Const) {
        ClassStorage[root] = {StorageKind::Output, i};
        continue;
      }
      PendingCopies.push_back(i); // aliased: copy at the end
    }
  }

  /// Nodes with a Placement whose inputs can be parts of their output's
  /// buffer get those storages (see the file comment); they are skipped
  /// when lowering. An input may be a part of one output only. The last
  /// nodes go first, so that a Concat of Concats nests: the inner one's
  /// output, already a part of the outer one's, gets parts of its own.
  void placeInputsInOutputs() {
    const ops::OpRegistry &reg = ops::OpRegistry::instance();
    for (auto it = G.Nodes.rbegin(); it != G.Nodes.rend(); ++it) {
      const std::unique_ptr<ir::Node> &n = *it;
      const ops::OpSchema &schema = reg.lookup(*n);
      if (!schema.Placement || n->Group >= 0 || !n->hasOutput(0) || n->Outputs[0]->Const ||
          touchesBounded(*n))
        continue;
      auto placed = ClassStorage.find(C.find(n->Outputs[0]));
      if (placed != ClassStorage.end() && placed->second.Kind != StorageKind::Arena)
        continue; // a graph input or output
      std::optional<std::vector<int64_t>> offsets = schema.Placement(*n);
      if (!offsets)
        continue;
      std::set<const ir::Value *> roots;
      bool ok = true;
      for (const ir::Value *in : n->Inputs) {
        const ir::Value *root = in ? C.find(in) : nullptr;
        ok = ok && root && !in->Const && !ClassStorage.count(root) &&
             root != C.find(n->Outputs[0]) && roots.insert(root).second &&
             in->Type.Type == n->Outputs[0]->Type.Type &&
             !isSubByte(in->Type.Type); // parts of packed bytes are not bytes
      }
      if (!ok) {
        viewOfParts(*n, *offsets);
        continue;
      }
      Storage out = storageOf(n->Outputs[0]);
      int64_t elem = (int64_t)dtypeSize(n->Outputs[0]->Type.Type);
      for (size_t i = 0; i < n->Inputs.size(); ++i) {
        const ir::Value *in = n->Inputs[i];
        ClassStorage[C.find(in)] = {StorageKind::Arena, P.ArenaBuffers.size()};
        P.ArenaBuffers.push_back({in->Name, in->Type.numel() * elem, -1, (int64_t)out.Index,
                                  (*offsets)[i] * elem});
      }
      InPlace.insert(n.get());
    }
  }

  /// A node with a Placement whose inputs are already parts of one buffer,
  /// side by side as it would place them (a later Concat of the same
  /// values and more: DenseNet's growing concatenations, each layer's
  /// input the previous one's and its output): its output is the part of
  /// that buffer they cover, a view, and the node makes no kernel.
  void viewOfParts(const ir::Node &n, const std::vector<int64_t> &offsets) {
    const ir::Value *out = n.Outputs[0];
    if (ClassStorage.count(C.find(out)) || n.Inputs.empty() || isSubByte(out->Type.Type))
      return;
    const int64_t elem = (int64_t)dtypeSize(out->Type.Type);
    int64_t parent = -1, start = 0;
    for (size_t i = 0; i < n.Inputs.size(); ++i) {
      const ir::Value *in = n.Inputs[i];
      auto it = in && !in->Const && in->Type.Type == out->Type.Type
                    ? ClassStorage.find(C.find(in))
                    : ClassStorage.end();
      if (it == ClassStorage.end() || it->second.Kind != StorageKind::Arena)
        return;
      const kir::ArenaBuffer &b = P.ArenaBuffers[it->second.Index];
      if (b.AliasOf < 0 || b.Bytes != in->Type.numel() * elem)
        return;
      if (i == 0)
        parent = b.AliasOf, start = b.AliasOffset - offsets[0] * elem;
      if (b.AliasOf != parent || b.AliasOffset != start + offsets[i] * elem)
        return;
    }
    if (start < 0 || start + out->Type.numel() * elem > P.ArenaBuffers[(size_t)parent].Bytes)
      return;
    ClassStorage[C.find(out)] = {StorageKind::Arena, P.ArenaBuffers.size()};
    P.ArenaBuffers.push_back({out->Name, out->Type.numel() * elem, -1, parent, start});
    InPlace.insert(&n);
  }

  /// Nodes with a Selection whose outputs can be parts of their input's
  /// arena buffer get those storages (views, see the file comment) and are
  /// skipped when lowering. In graph order, so that a view of a view nests.
  /// The outputs must have no storage yet (a graph output, or an input a
  /// Concat writes in place, keeps its kernel) and the input must be an
  /// arena value (not a graph input or output, nor a constant).
  void viewOutputsInInputs() {
    const ops::OpRegistry &reg = ops::OpRegistry::instance();
    for (const std::unique_ptr<ir::Node> &n : G.Nodes) {
      const ops::OpSchema &schema = reg.lookup(*n);
      if (!schema.Selection || n->Group >= 0 || !n->hasInput(0) || n->Inputs[0]->Const ||
          InPlace.count(n.get()))
        continue;
      // Values that follow bounded dimensions: a view at offset 0 of a
      // dense input as a dense output holds at every extent.
      bool bounded = touchesBounded(*n);
      if (bounded && (n->Outputs.size() != 1 || !n->Outputs[0] ||
                      !denseAtRunTime(n->Inputs[0]) || !denseAtRunTime(n->Outputs[0])))
        continue;
      const ir::Value *in = n->Inputs[0];
      const ir::Value *inRoot = C.find(in);
      auto placed = ClassStorage.find(inRoot);
      if (placed != ClassStorage.end() && placed->second.Kind != StorageKind::Arena)
        continue;
      std::optional<std::vector<int64_t>> offsets = schema.Selection(*n);
      if (!offsets || offsets->size() != n->Outputs.size() || (bounded && (*offsets)[0] != 0))
        continue;
      bool ok = true;
      std::set<const ir::Value *> roots;
      for (const ir::Value *out : n->Outputs) {
        if (!out)
          continue;
        const ir::Value *root = C.find(out);
        ok = ok && !out->Const && !ClassStorage.count(root) && root != inRoot &&
             roots.insert(root).second && out->Type.Type == in->Type.Type &&
             !isSubByte(in->Type.Type);
      }
      if (!ok)
        continue;
      Storage whole = storageOf(in);
      int64_t elem = (int64_t)dtypeSize(in->Type.Type);
      for (size_t i = 0; i < n->Outputs.size(); ++i) {
        const ir::Value *out = n->Outputs[i];
        if (!out)
          continue;
        ClassStorage[C.find(out)] = {StorageKind::Arena, P.ArenaBuffers.size()};
        P.ArenaBuffers.push_back({out->Name, out->Type.numel() * elem, -1,
                                  (int64_t)whole.Index, (*offsets)[i] * elem});
      }
      InPlace.insert(n.get());
    }
  }

  Storage storageOf(const ir::Value *v) {
    if (v->Const)
      return constantStorage(v);
    const ir::Value *root = C.find(v);
    auto it = ClassStorage.find(root);
    if (it != ClassStorage.end())
      return it->second;
    Storage s{StorageKind::Arena, P.ArenaBuffers.size()};
    int64_t bytes = storageBytes(v->Type.Type, v->Type.numel());
    P.ArenaBuffers.push_back({v->Name, bytes, -1});
    ClassStorage[root] = s;
    return s;
  }

  /// 4-bit weights in 8-bit form (ir::Value::FourBitAxis) whose data
  /// allows it are passed to their kernels as nibble pairs, half the bytes
  /// (ops::nibblePairBytes).
  void chooseNibbleValues() {
    for (auto &n : G.Nodes)
      for (const ir::Value *v : n->Inputs)
        if (v && v->Const && v->FourBitAxis >= 0 && v->FourBitAxis < (int)v->Type.rank() &&
            !v->Const->isSplat() && ops::holdsNibblePairs(*v->Const))
          NibbleValues.insert(v);
  }

  /// A constant stored as nibble pairs along `axis`: its own copy.
  Storage nibbleStorage(const ir::Value *v, int axis) {
    auto key = std::make_pair(v->Const.get(), axis);
    auto it = NibbleIndex.find(key);
    if (it != NibbleIndex.end())
      return {StorageKind::Constant, it->second};
    std::vector<uint8_t> bytes = ops::nibblePairBytes(*v->Const, axis);
    int64_t count = (int64_t)bytes.size() / dtypeSize(v->Const->dtype());
    Storage s = addConstant(v, v->Const->dtype(), count, std::move(bytes));
    NibbleIndex[key] = s.Index;
    return s;
  }

  Storage constantStorage(const ir::Value *v) {
    auto it = ConstIndex.find(v->Const.get());
    if (it != ConstIndex.end())
      return {StorageKind::Constant, it->second};
    DType type = v->Const->dtype();
    std::vector<uint8_t> bytes = v->Const->denseBytes();
    int64_t count = v->Const->numel();
    if (isSubByte(type)) { // the packed bytes, as kernels read them
      type = DType::U8;
      count = (int64_t)bytes.size();
    }
    Storage s = addConstant(v, type, count, std::move(bytes));
    ConstIndex[v->Const.get()] = s.Index;
    return s;
  }

  /// A new constant of the program, named after `v`.
  Storage addConstant(const ir::Value *v, DType type, int64_t count, std::vector<uint8_t> bytes) {
    kir::ConstantData d;
    d.Name = "w" + std::to_string(P.Constants.size()) + "_" +
             sanitize(v->Name, "const").substr(0, 40);
    d.Type = type;
    d.Count = count;
    d.Bytes = std::move(bytes);
    P.Constants.push_back(std::move(d));
    return {StorageKind::Constant, P.Constants.size() - 1};
  }

  size_t addKernel(kir::Kernel k, const std::string &opName) {
    kir::KernelKey key(k);
    auto it = KernelByStructure.find(key);
    if (it != KernelByStructure.end())
      return it->second;
    std::string lower;
    for (char ch : opName)
      lower += (char)std::tolower((unsigned char)ch);
    k.Name = "k" + std::to_string(P.Kernels.size()) + "_" + sanitize(lower, "op");
    P.Kernels.push_back(std::move(k));
    KernelByStructure.emplace(std::move(key), P.Kernels.size() - 1);
    return P.Kernels.size() - 1;
  }

  /// `n`'s kernel at every value of the one bounded dimension its operands
  /// follow, from lowerings at fixed values (ProbedExtents.h); each operand
  /// must be dense at run time (its bounded axis leading).
  kir::Kernel lowerProbed(const ir::Node &n, const ops::OpSchema &schema, kir::KernelBuilder &b,
                          ops::LowerCtx &ctx) {
    const std::string operand = boundedOperand(n);
    auto refuse = [&](const std::string &why) {
      n.error(ErrorKind::Unsupported) << "reads or writes " << operand << "; " << n.OpType
                                      << " does not run to extents known only at run time: "
                                      << why;
    };
    // The operands that follow a dimension, and which dimension.
    std::vector<std::pair<ir::Value *, std::vector<AxisExtent>>> saved;
    std::set<size_t> used;
    for (const auto *list : {&n.Inputs, &n.Outputs})
      for (ir::Value *v : *list)
        if (v && !v->Bounded.empty() &&
            std::none_of(saved.begin(), saved.end(), [&](auto &s) { return s.first == v; })) {
          if (!denseAtRunTime(v) && !DenseValues.count(v))
            refuse("an operand's bounded axis has other axes longer than 1 before it");
          for (const AxisExtent &a : v->Bounded)
            for (size_t k = 0; k < a.Coeffs.size(); ++k)
              if (a.Coeffs[k])
                used.insert(k);
          saved.push_back({v, v->Bounded});
        }
    if (used.size() != 1)
      refuse("its operands follow more than one dimension");
    const size_t k = *used.begin();
    const ir::BoundedDim &d = G.BoundedDims[k];
    // The probes: MAX-1, MAX-2 and the least value, where every extent that
    // follows the dimension is 2 or more (a lowering leaves an axis of one
    // element out of its index arithmetic: a kernel of another form).
    auto leastExtent = [&](int64_t value) {
      int64_t least = INT64_MAX;
      for (auto &[v, axes] : saved)
        for (const AxisExtent &a : axes)
          least = std::min(least, v->Type.Dims[(size_t)a.Axis] - a.Coeffs[k] * (d.Max - value));
      return least;
    };
    int64_t least = d.Min;
    while (least < d.Max && leastExtent(least) < 2)
      ++least;
    std::vector<int64_t> deltas;
    for (int64_t value : {d.Max - 1, d.Max - 2, least})
      if (value >= least && value < d.Max &&
          std::find(deltas.begin(), deltas.end(), d.Max - value) == deltas.end())
        deltas.push_back(d.Max - value);
    // A range whose smaller values leave an extent of 1 (MAX 2: a batch of
    // 1 or 2): the lines through MAX + 1 and MAX + 2 instead, the same
    // lines (the kernel keeps its unit loops and their index arithmetic).
    if (deltas.size() < 2)
      deltas = {-1, -2};
    // Fixed lowerings: the operands without their bounded axes, at MAX and
    // at each probe's extents.
    struct Restore {
      std::vector<std::pair<ir::Value *, std::vector<AxisExtent>>> &S;
      ~Restore() {
        for (auto &[v, axes] : S)
          v->Bounded = axes;
      }
    } restore{saved};
    for (auto &[v, axes] : saved)
      v->Bounded.clear();
    b.keepUnitLoops();
    schema.Lower(ctx);
    std::vector<kir::Kernel> probes;
    for (int64_t delta : deltas) {
      for (auto &[v, axes] : saved)
        for (const AxisExtent &a : axes)
          v->Type.Dims[(size_t)a.Axis] -= a.Coeffs[k] * delta;
      try {
        kir::KernelBuilder pb(n.OpType);
        pb.keepUnitLoops();
        ops::LowerCtx pc(n, pb);
        schema.Lower(pc);
        probes.push_back(pb.finish());
      } catch (const CompileError &e) {
        for (auto &[v, axes] : saved)
          for (const AxisExtent &a : axes)
            v->Type.Dims[(size_t)a.Axis] += a.Coeffs[k] * delta;
        refuse("at " + d.Name + "=" + std::to_string(d.Max - delta) + ": " + e.what());
      }
      for (auto &[v, axes] : saved)
        for (const AxisExtent &a : axes)
          v->Type.Dims[(size_t)a.Axis] += a.Coeffs[k] * delta;
    }
    kir::Expr dim = ctx.dimValue(k, G.BoundedDims.size());
    kir::Kernel kernel = b.finish();
    std::string why;
    if (!mergeProbedKernels(kernel, probes, deltas, dim, d.Max, why))
      refuse("its kernels at several values of " + d.Name +
             " differ in more than integer constants that follow " + d.Name + " (" + why + ")");
    return kernel;
  }

  /// Lowers one node, or a fused group's members in graph order: the first
  /// member not inlined is the root, the other members not inlined its
  /// elementwise chain (applied to its stores), the inlined ones producers
  /// of chain operands computed in place.
  void lowerNode(const std::vector<const ir::Node *> &nodes) {
    const ir::Node *root = nullptr;
    std::vector<const ir::Node *> chain, inlined;
    for (const ir::Node *m : nodes) {
      if (m->Inlined)
        inlined.push_back(m);
      else if (!root)
        root = m;
      else
        chain.push_back(m);
    }
    const ir::Node &n = *root;
    const ops::OpSchema &schema = ops::OpRegistry::instance().lookup(n);
    // An op whose lowering writes fixed extents: its kernel at MAX, with
    // the constants that follow the extent from lowerings at other values
    // (ProbedExtents.h).
    bool probed = false;
    for (const ir::Node *m : nodes)
      if (touchesBounded(*m) && !ops::OpRegistry::instance().lookup(*m).RunTimeExtents) {
        if (nodes.size() > 1)
          m->error(ErrorKind::Unsupported)
              << "reads or writes " << boundedOperand(*m) << "; " << m->OpType
              << " does not run to extents known only at run time in a fused kernel so far";
        probed = true;
      }
    // Constants stored as nibble pairs unpack in load(); a lowering that
    // reads a buffer itself (vector loads) is lowered again without them.
    std::optional<kir::KernelBuilder> b;
    std::optional<ops::LowerCtx> ctxSlot;
    kir::Kernel k;
    for (bool nibbles : {true, false}) {
      if (nibbles && probed)
        continue; // (the probes' kernels read every operand plainly)
      if (!nibbles && ctxSlot && !ctxSlot->nibbleBufferRead())
        break;
      ctxSlot.reset();
      b.emplace(n.OpType);
      ctxSlot.emplace(n, *b);
      ops::LowerCtx &ctx = *ctxSlot;
      ctx.setDenseValues(&DenseValues);
      if (nibbles)
        ctx.setNibbleValues(&NibbleValues);
      size_t fusedOut = 0;
      if (!chain.empty()) {
        while (!n.Outputs[fusedOut])
          ++fusedOut;
        ctx.fuseEpilogue(fusedOut, chain, inlined);
      }
      k = probed ? lowerProbed(n, schema, *b, ctx) : (schema.Lower(ctx), b->finish());
    }
    ops::LowerCtx &ctx = *ctxSlot;
    if (ctx.epilogueRead())
      n.error(ErrorKind::Internal) << "internal error: the lowering reads a fused output";
    kir::Call call;
    // The kernel is named after its ops, the first few of a long group.
    constexpr size_t kMaxNamedOps = 8;
    std::string kernelName;
    for (const ir::Node *m : nodes) {
      call.Label += (call.Label.empty() ? "" : " + ") + m->where();
      call.Nodes.push_back({m->Name, m->OpType});
      if (call.Nodes.size() <= kMaxNamedOps)
        kernelName += (kernelName.empty() ? "" : "_") + m->OpType;
    }
    if (nodes.size() > kMaxNamedOps)
      kernelName += "_and" + std::to_string(nodes.size() - kMaxNamedOps) + "more";
    for (auto &pb : ctx.bindings()) {
      switch (pb.K) {
      case ops::ParamBinding::Input:
        call.Args.push_back(pb.NibbleAxis >= 0 ? nibbleStorage(pb.V, pb.NibbleAxis)
                                               : storageOf(pb.V));
        break;
      case ops::ParamBinding::Output:
        call.Produces.push_back({call.Args.size(), pb.V->Name, pb.V->Type.Type,
                                 pb.V->Type.Dims, pb.V->DequantScale, pb.V->DequantZeroPoint,
                                 pb.V->QuantizedFrom});
        call.Args.push_back(storageOf(pb.V));
        break;
      case ops::ParamBinding::Dims:
        call.Args.push_back({StorageKind::Dims, 0});
        break;
      case ops::ParamBinding::Scratch:
        call.Args.push_back({StorageKind::Arena, P.ArenaBuffers.size()});
        P.ArenaBuffers.push_back(
            {n.Name + ".scratch",
             storageBytes(pb.Type.Type, pb.Type.numel()), -1});
        break;
      }
    }
    // Outputs the kernel does not write (omitted by the lowering) would
    // leave caller buffers unset; every present output must be a parameter.
    for (size_t i = 0; i < n.Outputs.size(); ++i) {
      if (!n.Outputs[i])
        continue;
      bool bound = false;
      for (auto &pb : ctx.bindings())
        if (pb.K == ops::ParamBinding::Output && pb.Index == i)
          bound = true;
      if (!bound && n.Outputs[i]->Type.numel() > 0)
        n.error(ErrorKind::Internal) << "internal error: lowering does not write output " << i;
    }
    call.Plan = n.Plan.str();
    if (n.Guard) // one guard for the whole group (fuse-ops)
      call.Guard = storageOf(n.Guard);
    call.KernelIndex = addKernel(std::move(k), kernelName);
    P.Calls.push_back(std::move(call));
  }

  /// A call that copies value `v` between its layout at MAX (`padded`) and
  /// the caller's dense layout at the run-time extents (`dense`): into the
  /// padded buffer when `in`, else out of it.
  void repack(const ir::Value *v, Storage dense, Storage padded, bool in) {
    const int64_t n = std::max<int64_t>(v->Type.numel(), 1);
    kir::KernelBuilder b("repack");
    kir::Buffer src = b.param("src", v->Type.Type, n);
    kir::Buffer dst = b.param("dst", v->Type.Type, n);
    kir::Buffer dims = b.param("dims", DType::I64, (int64_t)G.BoundedDims.size());
    const size_t rank = v->Type.rank();
    std::vector<kir::Expr> extents;
    for (size_t d = 0; d < rank; ++d)
      extents.push_back(kir::indexConst(v->Type.Dims[d]));
    for (const AxisExtent &a : v->Bounded)
      extents[(size_t)a.Axis] = ops::boundedExtent(a, [&](size_t k) {
        return kir::cast(DType::Index, kir::load(dims, kir::indexConst((int64_t)k)));
      });
    b.loops(extents, [&](const std::vector<kir::Expr> &idx) {
      kir::Expr packed = kir::indexConst(0), at = kir::indexConst(0);
      for (size_t d = 0; d < rank; ++d) {
        packed = packed * extents[d] + idx[d];
        at = at * v->Type.Dims[d] + idx[d];
      }
      kir::Expr from = in ? packed : at, to = in ? at : packed;
      b.store(dst, to, kir::load(src, from));
    });
    kir::Call call;
    call.Label = std::string(in ? "input '" : "output '") + v->Name +
                 "' between its dense layout and the layout at MAX";
    call.Args = {in ? dense : padded, in ? padded : dense, {StorageKind::Dims, 0}};
    if (!in)
      call.Produces.push_back({1, v->Name, v->Type.Type, v->Type.Dims, v->DequantScale,
                               v->DequantZeroPoint, v->QuantizedFrom});
    call.KernelIndex = addKernel(b.finish(), "repack");
    (in ? RepackIn : RepackOut).insert(P.Calls.size());
    P.Calls.push_back(std::move(call));
  }

  /// The repack calls moved next to the calls that use their buffers: an
  /// input's copy into the layout at MAX just before the first call that
  /// touches that buffer (or the buffer it is a part of, or a part of it),
  /// an output's copy out of it just after the last such call, so that the
  /// buffer lives no longer than its uses (copied at the start and the end,
  /// every layer's KV cache was alive at once).
  void placeRepacks() {
    if (RepackIn.empty() && RepackOut.empty())
      return;
    auto family = [&](const Storage &s) {
      return s.Kind == StorageKind::Arena ? (int64_t)kir::aliasRoot(P, s.Index) : int64_t(-1);
    };
    auto touches = [&](const kir::Call &c, int64_t root) {
      if (root < 0)
        return false;
      for (const Storage &a : c.Args)
        if (family(a) == root)
          return true;
      return c.Guard && family(*c.Guard) == root;
    };
    std::vector<kir::Call> ins, outs, rest;
    for (size_t i = 0; i < P.Calls.size(); ++i)
      (RepackIn.count(i) ? ins : RepackOut.count(i) ? outs : rest).push_back(std::move(P.Calls[i]));
    std::vector<kir::Call> placed;
    std::vector<bool> done(ins.size(), false);
    for (kir::Call &c : rest) {
      for (size_t k = 0; k < ins.size(); ++k)
        if (!done[k] && touches(c, family(ins[k].Args[1]))) {
          placed.push_back(std::move(ins[k]));
          done[k] = true;
        }
      placed.push_back(std::move(c));
    }
    // An input copy no call reads stays first.
    std::vector<kir::Call> unread;
    for (size_t k = 0; k < ins.size(); ++k)
      if (!done[k])
        unread.push_back(std::move(ins[k]));
    placed.insert(placed.begin(), std::make_move_iterator(unread.begin()),
                  std::make_move_iterator(unread.end()));
    for (kir::Call &o : outs) {
      const int64_t root = family(o.Args[0]);
      size_t at = root < 0 ? placed.size() : 0;
      for (size_t i = 0; i < placed.size(); ++i)
        if (touches(placed[i], root))
          at = i + 1;
      placed.insert(placed.begin() + (long)at, std::move(o));
    }
    P.Calls = std::move(placed);
  }

  void emitOutputCopies() {
    for (size_t i : DenseCopies)
      repack(G.Outputs[i], {StorageKind::Output, i}, storageOf(G.Outputs[i]), false);
    for (size_t i : PendingCopies) {
      const ir::Value *v = G.Outputs[i];
      Storage src = storageOf(v);
      Storage dst{StorageKind::Output, i};
      if (src == dst)
        continue;
      int64_t n = v->Type.numel();
      if (n == 0)
        continue;
      kir::KernelBuilder b("copy");
      kir::Buffer in = b.param("src", v->Type.Type, n);
      kir::Buffer out = b.param("dst", v->Type.Type, n);
      b.loop("i", n, [&](kir::Expr idx) { b.store(out, idx, kir::load(in, idx)); });
      kir::Call call;
      call.Label = "copy to output '" + v->Name + "'";
      call.Args = {src, dst};
      call.Produces.push_back(
          {1, v->Name, v->Type.Type, v->Type.Dims, v->DequantScale, v->DequantZeroPoint,
           v->QuantizedFrom});
      call.KernelIndex = addKernel(b.finish(), "copy");
      P.Calls.push_back(std::move(call));
    }
  }

  const ir::Graph &G;
  kir::Program P;
  Classes C;
  std::map<const ir::Value *, Storage> ClassStorage;
  std::map<const Tensor *, size_t> ConstIndex;
  std::map<std::pair<const Tensor *, int>, size_t> NibbleIndex;
  /// Constants passed as nibble pairs (chooseNibbleValues).
  std::set<const ir::Value *> NibbleValues;
  /// The kernels made so far, by structure: a node whose kernel equals an
  /// earlier one up to the names of its variables and buffers calls that one.
  std::unordered_map<kir::KernelKey, size_t> KernelByStructure;
  std::vector<size_t> PendingCopies;
  /// Graph outputs whose elements in use are not their leading ones:
  /// copied from the layout at MAX to the caller's dense layout at the end.
  std::vector<size_t> DenseCopies;
  /// The calls (indices of P.Calls) that repack an input into the layout at
  /// MAX, and an output out of it (placeRepacks).
  std::set<size_t> RepackIn, RepackOut;
  /// Nodes whose inputs are written in place into their output.
  std::set<const ir::Node *> InPlace;
  /// Graph inputs and outputs laid out dense at their run-time extents in
  /// the caller's buffer (chooseDenseValues).
  std::set<const ir::Value *> DenseValues;
};

} // namespace

kir::Program lowerToProgram(const ir::Graph &g, const std::string &name) {
  Lowerer l(g, name);
  return l.run();
}

} // namespace mlcc::passes
