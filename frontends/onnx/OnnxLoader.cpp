#include "frontends/onnx/OnnxLoader.h"

#include "compiler/support/Files.h"

#include "frontends/onnx/OnnxSchema.pb.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace mlcc::onnx {

namespace pb = mlcc::onnxpb;

namespace {

std::string dirOf(const std::string &path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? "." : path.substr(0, pos);
}

/// Everything a tensor conversion needs to know about where it came from.
struct TensorContext {
  std::string BaseDir; ///< For external data; empty: not allowed.
  std::string What;    ///< "initializer 'w'", used in messages.
};

DType tensorDType(int64_t code, const TensorContext &ctx) {
  auto t = dtypeFromOnnx(code);
  if (!t)
    fail(ErrorKind::Invalid) << ctx.What << " has unknown data type " << code;
  if (!isStorable(*t))
    fail(ErrorKind::Unsupported) << ctx.What << " has data type "
                                 << dtypeOnnxName(*t)
                                 << ", which mlcc does not support";
  return *t;
}

int64_t parseCount(const std::string &text, const char *key,
                   const TensorContext &ctx) {
  int64_t v = 0;
  bool ok = !text.empty() && text.size() <= 18;
  for (char c : text)
    ok = ok && c >= '0' && c <= '9';
  if (ok)
    v = std::stoll(text);
  else
    fail(ErrorKind::Invalid) << ctx.What << ": external data " << key << " '"
                             << text << "' is not a non-negative integer";
  return v;
}

std::string readExternal(const pb::Tensor &tp, const TensorContext &ctx,
                         size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (auto &kv : tp.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parseCount(kv.value(), "offset", ctx);
    else if (kv.key() == "length")
      length = parseCount(kv.value(), "length", ctx);
  }
  if (location.empty())
    fail(ErrorKind::Invalid) << ctx.What
                             << " is stored externally but names no location";
  if (ctx.BaseDir.empty())
    fail(ErrorKind::Invalid) << ctx.What
                             << " uses external data, which is not allowed here";
  if (location[0] == '/' || location.find("..") != std::string::npos)
    fail(ErrorKind::Invalid) << ctx.What << ": external data location '"
                             << location
                             << "' must be a relative path inside the model folder";
  std::string path = ctx.BaseDir + "/" + location;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(ErrorKind::Io) << ctx.What << ": cannot open external data file '"
                        << path << "'";
  in.seekg(0, std::ios::end);
  int64_t fileSize = (int64_t)in.tellg();
  if (length < 0)
    length = fileSize - offset;
  if (offset < 0 || offset + length > fileSize || (size_t)length != expected)
    fail(ErrorKind::Invalid) << ctx.What << ": external data (offset "
                             << offset << ", length " << length << ") in '"
                             << path << "' does not hold the " << expected
                             << " bytes the tensor needs";
  std::string data((size_t)length, '\0');
  in.seekg(offset);
  in.read(data.data(), length);
  return data;
}

/// The values in the typed field that holds `dtype` (int32_data for the
/// types of 32 bits or fewer, including the bit patterns of 16- and 8-bit
/// floats).
int64_t storedValues(const pb::Tensor &tp, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return tp.float_data_size();
  case DType::F64:
    return tp.double_data_size();
  case DType::I64:
    return tp.int64_data_size();
  case DType::U32:
  case DType::U64:
    return tp.uint64_data_size();
  default:
    return tp.int32_data_size();
  }
}

TensorPtr convertTensor(const pb::Tensor &tp, const TensorContext &ctx) {
  DType dtype = tensorDType(tp.data_type(), ctx);
  Shape dims(tp.dims().begin(), tp.dims().end());
  for (int64_t d : dims)
    if (d < 0)
      fail(ErrorKind::Invalid) << ctx.What << " has negative dimension " << d;
  if (tp.has_segment())
    fail(ErrorKind::Unsupported) << ctx.What << " is segmented";
  checkTensorSize(ctx.What, dims, dtype);
  int64_t n = numElements(dims);
  // Sub-byte types are packed, in raw_data and in int32_data (a byte each).
  size_t bytes = (size_t)storageBytes(dtype, n);

  // What the model stores is checked against the declared shape before
  // anything of the declared size is allocated: a tensor that declares
  // billions of elements and holds one fails at once.
  if (tp.data_location() != 1) {
    int64_t have = tp.has_raw_data() ? (int64_t)tp.raw_data().size() : storedValues(tp, dtype);
    int64_t want = tp.has_raw_data() || isSubByte(dtype) ? (int64_t)bytes : n;
    if (have != want)
      fail(ErrorKind::Invalid) << ctx.What << " (" << dtypeOnnxName(dtype)
                               << shapeToString(dims) << ") holds " << have
                               << (tp.has_raw_data() ? " bytes of raw data where "
                                                     : " values where ")
                               << want << " are expected";
  }
  auto out = std::make_shared<Tensor>(dtype, dims);
  std::vector<uint8_t> &data = out->mutableBytes();
  if (tp.data_location() == 1) {
    std::string raw = readExternal(tp, ctx, bytes);
    std::memcpy(data.data(), raw.data(), bytes);
    return out;
  }
  if (tp.has_raw_data()) {
    if (bytes)
      std::memcpy(data.data(), tp.raw_data().data(), bytes);
    return out;
  }
  // Typed storage fields.
  switch (dtype) {
  case DType::F32:
    for (int64_t i = 0; i < n; ++i)
      out->setDouble(i, tp.float_data((int)i));
    break;
  case DType::F64:
    for (int64_t i = 0; i < n; ++i)
      out->setDouble(i, tp.double_data((int)i));
    break;
  case DType::I64:
    for (int64_t i = 0; i < n; ++i)
      out->setInt(i, tp.int64_data((int)i));
    break;
  case DType::U32:
  case DType::U64:
    for (int64_t i = 0; i < n; ++i)
      out->setInt(i, (int64_t)tp.uint64_data((int)i));
    break;
  case DType::F16:
  case DType::BF16: {
    // int32_data holds the 16-bit patterns.
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits = (uint16_t)tp.int32_data((int)i);
      std::memcpy(data.data() + i * 2, &bits, 2);
    }
    break;
  }
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0:
    // int32_data holds the 8-bit patterns.
    for (int64_t i = 0; i < n; ++i)
      data[(size_t)i] = (uint8_t)tp.int32_data((int)i);
    break;
  case DType::I4:
  case DType::U4:
  case DType::F4E2M1:
  case DType::I2:
  case DType::U2:
    // int32_data holds the packed bytes.
    for (size_t i = 0; i < bytes; ++i)
      data[i] = (uint8_t)tp.int32_data((int)i);
    break;
  default: // int32, int16, int8, uint16, uint8, bool in int32_data
    for (int64_t i = 0; i < n; ++i)
      out->setInt(i, tp.int32_data((int)i));
    break;
  }
  return out;
}

TensorPtr convertSparse(const pb::SparseTensor &sp, const TensorContext &ctx) {
  TensorPtr values = convertTensor(sp.values(), ctx);
  TensorPtr indices = convertTensor(sp.indices(), ctx);
  Shape dims(sp.dims().begin(), sp.dims().end());
  auto out = std::make_shared<Tensor>(values->dtype(), dims);
  int64_t nnz = values->numel();
  if (isSubByte(values->dtype()))
    fail(ErrorKind::Unsupported) << ctx.What << ": a sparse tensor of "
                                 << dtypeOnnxName(values->dtype()) << " elements";
  size_t esize = dtypeSize(values->dtype());
  int64_t total = numElements(dims);
  bool coordinates = indices->rank() == 2;
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t flat = 0;
    if (coordinates) {
      for (size_t d = 0; d < dims.size(); ++d)
        flat = flat * dims[d] + indices->intAt(k * (int64_t)dims.size() + (int64_t)d);
    } else {
      flat = indices->intAt(k);
    }
    if (flat < 0 || flat >= total)
      fail(ErrorKind::Invalid) << ctx.What << ": sparse index out of range";
    std::memcpy(out->mutableBytes().data() + flat * (int64_t)esize,
                values->elementPtr(k), esize);
  }
  return out;
}

/// Turns one dimension of a graph input into a number.
/// A dimension of a graph input that nothing binds: the input, its axis and
/// its name (dim_param; "" when it has none).
struct UnboundDim {
  std::string Input;
  size_t Axis;
  std::string Name;
};

class GraphBuilder {
public:
  GraphBuilder(const LoadOptions &opts, std::string baseDir,
               const std::map<std::string, int64_t> &opsets,
               const google::protobuf::RepeatedPtrField<pb::Function> &functions)
      : Opts(opts), BaseDir(std::move(baseDir)), Opsets(opsets) {
    for (const pb::Function &f : functions)
      Functions[{f.domain() == "ai.onnx" ? "" : f.domain(), f.name()}] = &f;
  }

  /// Converts a (sub)graph. `outer` resolves names captured from enclosing
  /// graphs; `isMain` selects graph-input handling.
  std::shared_ptr<ir::Graph> build(const pb::Graph &gp, bool isMain,
                                   const std::map<std::string, ir::Value *> *outer) {
    if (++Depth > MaxSubgraphDepth)
      fail(ErrorKind::Invalid) << "subgraphs nest more than " << MaxSubgraphDepth
                               << " levels deep (graph '" << gp.name() << "')";
    std::shared_ptr<ir::Graph> g = buildGraph(gp, isMain, outer);
    --Depth;
    return g;
  }

private:
  static constexpr int MaxSubgraphDepth = 32;
  /// The symbolic dimensions bound by --dim and --shape (bindShapeNames).
  std::map<std::string, int64_t> Bound;

  std::shared_ptr<ir::Graph> buildGraph(const pb::Graph &gp, bool isMain,
                                        const std::map<std::string, ir::Value *> *outer) {
    auto g = std::make_shared<ir::Graph>();
    g->Name = gp.name();
    g->Opsets = Opsets;
    std::map<std::string, ir::Value *> scope;

    for (auto &init : gp.initializer()) {
      TensorContext ctx{BaseDir, "initializer '" + init.name() + "'"};
      if (init.name().empty())
        fail(ErrorKind::Invalid) << "an initializer has no name";
      TensorPtr t = convertTensor(init, ctx);
      ir::Value *v = g->addValue(init.name(), {t->dtype(), t->shape()});
      v->Const = t;
      scope[init.name()] = v;
    }
    for (auto &sp : gp.sparse_initializer()) {
      std::string name = sp.values().name();
      TensorContext ctx{BaseDir, "sparse initializer '" + name + "'"};
      TensorPtr t = convertSparse(sp, ctx);
      ir::Value *v = g->addValue(name, {t->dtype(), t->shape()});
      v->Const = t;
      scope[name] = v;
    }

    std::vector<UnboundDim> unbound;
    if (isMain)
      bindShapeNames(gp);
    for (auto &vi : gp.input()) {
      if (scope.count(vi.name()))
        continue; // IR < 4: initializers listed as inputs are constants
      ir::Value *v = nullptr;
      if (isMain) {
        auto frozen = Opts.Frozen.find(vi.name());
        if (frozen != Opts.Frozen.end()) {
          v = g->addValue(vi.name(), {frozen->second->dtype(),
                                      frozen->second->shape()});
          v->Const = frozen->second;
          checkFrozen(vi, *frozen->second);
          scope[vi.name()] = v;
          continue;
        }
      }
      v = g->addValue(vi.name(), inputType(vi, unbound, isMain));
      g->Inputs.push_back(v);
      scope[vi.name()] = v;
    }
    for (auto &[name, shape] : Opts.Shapes)
      if (isMain && std::find_if(g->Inputs.begin(), g->Inputs.end(), [&](const ir::Value *v) {
                      return v->Name == name;
                    }) == g->Inputs.end())
        fail(ErrorKind::Usage) << "--shape names '" << name << "', which is not a graph input";
    if (!unbound.empty())
      failUnbound(*g, unbound);
    for (auto &[name, t] : Opts.Frozen)
      if (isMain && !scope.count(name))
        fail(ErrorKind::Usage) << "--freeze names '" << name
                               << "', which is not a graph input";
    for (auto &[name, range] : Opts.Ranges) {
      if (!isMain)
        break;
      auto in = std::find_if(g->Inputs.begin(), g->Inputs.end(),
                             [&](const ir::Value *v) { return v->Name == name; });
      if (in == g->Inputs.end())
        fail(ErrorKind::Usage) << "--input-range names '" << name
                               << "', which is not a graph input"
                               << (Opts.Frozen.count(name) ? " (it is frozen)" : "");
      const ir::TensorType &t = (*in)->Type;
      if (!isInteger(t.Type) || t.numel() != 1)
        fail(ErrorKind::Usage) << "--input-range " << name << ": the input is "
                               << dtypeOnnxName(t.Type) << shapeToString(t.Dims)
                               << ", not one integer";
      (*in)->Range = range;
    }

    // Nodes, in an order where every input is defined first.
    std::vector<int> order = topoOrder(gp, scope, outer);
    for (int idx : order)
      addNode(*g, gp.node(idx), scope, outer);

    for (auto &vi : gp.output()) {
      ir::Value *v = lookup(vi.name(), scope, outer, g.get());
      if (!v)
        fail(ErrorKind::Invalid) << "graph output '" << vi.name()
                                 << "' is not produced by any node";
      g->Outputs.push_back(v);
    }
    if (isMain && g->Outputs.empty())
      fail(ErrorKind::Invalid) << "the graph has no outputs";
    return g;
  }

  /// The symbolic dimensions' values: --dim's, then those that --shape
  /// gives a named dimension (one name bound to two values is an error).
  void bindShapeNames(const pb::Graph &gp) {
    Bound = Opts.Dims;
    std::map<std::string, std::string> boundBy; // name -> the flag that bound it
    for (auto &[name, value] : Opts.Dims)
      boundBy[name] = "--dim " + name + "=" + std::to_string(value);
    for (auto &vi : gp.input()) {
      auto given = Opts.Shapes.find(vi.name());
      if (given == Opts.Shapes.end() || !vi.type().has_tensor_type() ||
          !vi.type().tensor_type().has_shape())
        continue;
      const auto &dims = vi.type().tensor_type().shape().dim();
      for (int axis = 0; axis < dims.size() && axis < (int)given->second.size(); ++axis) {
        const std::string &name = dims[axis].dim_param();
        if (dims[axis].has_dim_value() || name.empty())
          continue;
        int64_t value = given->second[(size_t)axis];
        auto [it, fresh] = Bound.emplace(name, value);
        std::string flag = "--shape " + vi.name() + " (axis " + std::to_string(axis) + ")";
        if (!fresh && it->second != value)
          fail(ErrorKind::Usage) << "dimension '" << name << "' is " << value << " by " << flag
                                 << " but " << it->second << " by " << boundBy[name];
        boundBy.emplace(name, flag);
      }
    }
  }

  /// The error for graph inputs with dimensions nothing binds: which input
  /// and axis, and the flag that fixes it.
  [[noreturn]] void failUnbound(const ir::Graph &g, const std::vector<UnboundDim> &unbound) {
    for (const UnboundDim &u : unbound) {
      if (!u.Name.empty())
        continue;
      // The --shape argument that fixes the input: its sizes, N where
      // nothing gives one.
      std::string flag = "--shape " + u.Input + "=";
      for (const ir::Value *v : g.Inputs)
        if (v->Name == u.Input)
          for (size_t axis = 0; axis < v->Type.Dims.size(); ++axis)
            flag += (axis ? "x" : "") +
                    (v->Type.Dims[axis] < 0 ? std::string("N") : std::to_string(v->Type.Dims[axis]));
      fail(ErrorKind::Invalid) << "graph input '" << u.Input << "' axis " << u.Axis
                               << " has neither a size nor a name; give the input's shape with "
                               << flag << " (N: the sizes to compile for)";
    }
    std::set<std::string> names;
    std::string where;
    for (const UnboundDim &u : unbound)
      if (names.insert(u.Name).second)
        where += (where.empty() ? "" : ", ") + u.Name + " (graph input '" + u.Input +
                 "' axis " + std::to_string(u.Axis) + ")";
    fail(ErrorKind::Invalid) << "unbound symbolic dimension(s): " << where
                             << "; bind each with --dim NAME=VALUE (or give the input's "
                                "whole shape with --shape NAME=D0xD1x...)";
  }

  void checkFrozen(const pb::ValueInfo &vi, const Tensor &t) {
    if (!vi.type().has_tensor_type())
      return;
    auto dt = dtypeFromOnnx(vi.type().tensor_type().elem_type());
    if (dt && *dt != t.dtype())
      fail(ErrorKind::Usage) << "--freeze " << vi.name() << ": the file holds "
                             << dtypeOnnxName(t.dtype()) << " but the input is "
                             << dtypeOnnxName(*dt);
  }

  ir::TensorType inputType(const pb::ValueInfo &vi, std::vector<UnboundDim> &unbound,
                           bool isMain) {
    const pb::TypeInfo &tp = vi.type();
    if (!tp.has_tensor_type()) {
      if (!isMain)
        return {};
      fail(ErrorKind::Unsupported)
          << "graph input '" << vi.name()
          << "' is not a tensor (sequences, maps and optionals are not "
             "supported)";
    }
    TensorContext ctx{"", "graph input '" + vi.name() + "'"};
    auto &tt = tp.tensor_type();
    if (!tt.has_elem_type() && !isMain)
      return {};
    DType dtype = tensorDType(tt.elem_type(), ctx);
    auto given = isMain ? Opts.Shapes.find(vi.name()) : Opts.Shapes.end();
    if (!tt.has_shape()) {
      if (!isMain)
        return {dtype, {}};
      if (given != Opts.Shapes.end())
        return {dtype, given->second};
      fail(ErrorKind::Invalid) << "graph input '" << vi.name()
                               << "' has no shape; give it with --shape " << vi.name()
                               << "=D0xD1x...";
    }
    if (given != Opts.Shapes.end() && (int)given->second.size() != tt.shape().dim_size())
      fail(ErrorKind::Usage) << "--shape " << vi.name() << ": " << given->second.size()
                             << " dimensions, but the model declares "
                             << tt.shape().dim_size();
    Shape dims;
    for (auto &d : tt.shape().dim()) {
      size_t axis = dims.size();
      // -1 stands for "unknown" inside mlcc; a model cannot declare it.
      if (d.has_dim_value() && d.dim_value() < 0)
        fail(ErrorKind::Invalid) << "graph input '" << vi.name()
                                 << "' has negative dimension " << d.dim_value();
      if (!isMain && !d.has_dim_value()) {
        dims.push_back(-1);
        continue;
      }
      if (given != Opts.Shapes.end()) {
        int64_t want = given->second[axis];
        if (d.has_dim_value() && d.dim_value() != want)
          fail(ErrorKind::Usage) << "--shape " << vi.name() << ": axis " << axis << " is "
                                 << d.dim_value() << " in the model, not " << want;
        dims.push_back(want);
        continue;
      }
      if (d.has_dim_value()) {
        dims.push_back(d.dim_value());
        continue;
      }
      const std::string &name = d.has_dim_param() ? d.dim_param() : std::string();
      auto bound = name.empty() ? Bound.end() : Bound.find(name);
      if (bound != Bound.end()) {
        dims.push_back(bound->second);
        continue;
      }
      unbound.push_back({vi.name(), axis, name});
      dims.push_back(-1);
    }
    for (int64_t d : dims)
      if (d < -1)
        fail(ErrorKind::Invalid) << "graph input '" << vi.name()
                                 << "' has negative dimension " << d;
    if (std::find(dims.begin(), dims.end(), -1) == dims.end())
      checkTensorSize("graph input '" + vi.name() + "'", dims, dtype);
    return {dtype, dims};
  }

  ir::Value *lookup(const std::string &name,
                    std::map<std::string, ir::Value *> &scope,
                    const std::map<std::string, ir::Value *> *outer,
                    ir::Graph *g) {
    auto it = scope.find(name);
    if (it != scope.end())
      return it->second;
    if (outer) {
      auto o = outer->find(name);
      if (o != outer->end()) {
        // Captured from an enclosing graph: a local stand-in with the same
        // name, constant if the outer value is.
        ir::Value *v = g->addValue(name, o->second->Type);
        v->Const = o->second->Const;
        g->Captures.push_back(v);
        scope[name] = v;
        return v;
      }
    }
    return nullptr;
  }

  std::vector<int> topoOrder(const pb::Graph &gp,
                             const std::map<std::string, ir::Value *> &scope,
                             const std::map<std::string, ir::Value *> *outer) {
    int n = gp.node_size();
    std::map<std::string, int> producer;
    for (int i = 0; i < n; ++i)
      for (auto &o : gp.node(i).output())
        if (!o.empty()) {
          if (producer.count(o) || scope.count(o))
            fail(ErrorKind::Invalid) << "tensor '" << o
                                     << "' is produced more than once";
          producer[o] = i;
        }
    std::vector<int> state(n, 0), order;
    std::vector<std::pair<int, int>> stack;
    for (int root = 0; root < n; ++root) {
      if (state[root])
        continue;
      stack.push_back({root, 0});
      state[root] = 1;
      while (!stack.empty()) {
        auto &[node, next] = stack.back();
        std::vector<std::string> deps = nodeDeps(gp.node(node));
        if (next < (int)deps.size()) {
          const std::string &name = deps[next++];
          auto it = producer.find(name);
          if (it == producer.end())
            continue;
          int dep = it->second;
          if (state[dep] == 1)
            fail(ErrorKind::Invalid) << "the graph has a cycle through '"
                                     << name << "'";
          if (state[dep] == 0) {
            state[dep] = 1;
            stack.push_back({dep, 0});
          }
          continue;
        }
        state[node] = 2;
        order.push_back(node);
        stack.pop_back();
      }
    }
    (void)outer;
    return order;
  }

  /// Names a node reads, including names its subgraphs capture.
  static std::vector<std::string> nodeDeps(const pb::Node &np) {
    std::vector<std::string> deps(np.input().begin(), np.input().end());
    for (auto &a : np.attribute()) {
      if (a.has_g())
        collectSubgraphReads(a.g(), deps);
      for (auto &sg : a.graphs())
        collectSubgraphReads(sg, deps);
    }
    return deps;
  }

  static void collectSubgraphReads(const pb::Graph &g,
                                   std::vector<std::string> &deps) {
    for (auto &n : g.node()) {
      std::vector<std::string> inner = nodeDeps(n);
      deps.insert(deps.end(), inner.begin(), inner.end());
    }
    for (auto &o : g.output())
      deps.push_back(o.name());
  }

  /// A Constant node becomes a constant value; it never reaches the graph.
  bool addConstantNode(ir::Graph &g, const pb::Node &np, const std::string &name,
                       std::map<std::string, ir::Value *> &scope) {
    if (np.op_type() != "Constant" || !(np.domain().empty() || np.domain() == "ai.onnx"))
      return false;
    std::string where = "node '" + name + "' (Constant)";
    if (np.output_size() != 1 || np.attribute_size() != 1)
      fail(ErrorKind::Invalid) << where << ": needs exactly one output and one value attribute";
    const pb::Attribute &a = np.attribute(0);
    TensorContext ctx{BaseDir, where + " attribute '" + a.name() + "'"};
    TensorPtr t;
    const std::string &k = a.name();
    if (k == "value") {
      t = convertTensor(a.t(), ctx);
    } else if (k == "sparse_value") {
      t = convertSparse(a.sparse_tensor(), ctx);
    } else if (k == "value_float") {
      t = std::make_shared<Tensor>(Tensor::fromDoubles(DType::F32, {}, {a.f()}));
    } else if (k == "value_floats") {
      std::vector<double> v(a.floats().begin(), a.floats().end());
      t = std::make_shared<Tensor>(Tensor::fromDoubles(DType::F32, {(int64_t)v.size()}, v));
    } else if (k == "value_int") {
      t = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {}, {a.i()}));
    } else if (k == "value_ints") {
      std::vector<int64_t> v(a.ints().begin(), a.ints().end());
      t = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {(int64_t)v.size()}, v));
    } else if (k == "value_string" || k == "value_strings") {
      fail(ErrorKind::Unsupported) << where << ": string constants are not supported";
    } else {
      fail(ErrorKind::Invalid) << where << ": unknown attribute '" << k << "'";
    }
    ir::Value *v = g.addValue(np.output(0), {t->dtype(), t->shape()});
    v->Const = t;
    scope[np.output(0)] = v;
    return true;
  }

  /// Expands a call of a model-local function in place: its nodes are added
  /// with their values renamed under the call's name, formal inputs bound to
  /// the call's inputs, attribute references replaced by the call's
  /// attributes (or the function's defaults), and its outputs bound to the
  /// call's output names through Identity nodes.
  void inlineFunctionCall(ir::Graph &g, const pb::Node &call, const pb::Function &fn,
                          std::map<std::string, ir::Value *> &scope,
                          const std::map<std::string, ir::Value *> *outer) {
    std::string callName = call.name().empty() ? g.uniqueNodeName(call.op_type()) : call.name();
    std::string where = "node '" + callName + "' (" + call.op_type() + ")";
    if (++CallDepth > 64)
      fail(ErrorKind::Unsupported) << where << ": model-local functions nest too deeply "
                                   << "(recursive functions are not supported)";
    if (call.input_size() > fn.input_size() || call.output_size() > fn.output_size())
      fail(ErrorKind::Invalid) << where << ": calls function '" << fn.name() << "' with "
                               << call.input_size() << " inputs and " << call.output_size()
                               << " outputs; it takes " << fn.input_size() << " and "
                               << fn.output_size();
    std::string prefix = callName + "/";
    std::map<std::string, std::string> rename; // function name -> graph name
    for (int i = 0; i < fn.input_size(); ++i)
      rename[fn.input(i)] = i < call.input_size() ? call.input(i) : "";
    std::map<std::string, const pb::Attribute *> attrs;
    for (const pb::Attribute &a : fn.attribute_proto())
      attrs[a.name()] = &a; // defaults
    for (const pb::Attribute &a : call.attribute())
      attrs[a.name()] = &a;
    auto mapName = [&](const std::string &n) {
      if (n.empty())
        return n;
      auto it = rename.find(n);
      return it != rename.end() ? it->second : prefix + n;
    };
    // The function's nodes see its own opset imports.
    std::map<std::string, int64_t> saved = Opsets;
    for (const pb::OperatorSetId &os : fn.opset_import())
      Opsets[os.domain() == "ai.onnx" ? "" : os.domain()] = os.version();
    for (const pb::Node &fnode : fn.node()) {
      pb::Node n = fnode;
      n.set_name(prefix + (fnode.name().empty() ? fnode.op_type() : fnode.name()));
      for (int i = 0; i < n.input_size(); ++i)
        n.set_input(i, mapName(fnode.input(i)));
      for (int i = 0; i < n.output_size(); ++i)
        n.set_output(i, mapName(fnode.output(i)));
      n.clear_attribute();
      for (const pb::Attribute &a : fnode.attribute()) {
        if (a.ref_attr_name().empty()) {
          *n.add_attribute() = a;
          continue;
        }
        auto it = attrs.find(a.ref_attr_name());
        if (it == attrs.end())
          continue; // not given and no default: the attribute is absent
        pb::Attribute *b = n.add_attribute();
        *b = *it->second;
        b->set_name(a.name());
      }
      addNode(g, n, scope, outer);
    }
    Opsets = saved;
    for (int i = 0; i < call.output_size(); ++i) {
      if (call.output(i).empty())
        continue;
      pb::Node id;
      id.set_op_type("Identity");
      id.set_name(prefix + "output" + std::to_string(i));
      id.add_input(mapName(fn.output(i)));
      id.add_output(call.output(i));
      addNode(g, id, scope, outer);
    }
    --CallDepth;
  }

  void addNode(ir::Graph &g, const pb::Node &np,
               std::map<std::string, ir::Value *> &scope,
               const std::map<std::string, ir::Value *> *outer) {
    if (addConstantNode(g, np, np.name().empty() ? "Constant" : np.name(), scope))
      return;
    auto fn = Functions.find({np.domain() == "ai.onnx" ? "" : np.domain(), np.op_type()});
    if (fn != Functions.end()) {
      inlineFunctionCall(g, np, *fn->second, scope, outer);
      return;
    }
    auto node = std::make_unique<ir::Node>();
    node->OpType = np.op_type();
    node->Domain = np.domain() == "ai.onnx" ? "" : np.domain();
    node->Name = np.name().empty() ? g.uniqueNodeName(np.op_type()) : np.name();
    if (node->OpType.empty())
      fail(ErrorKind::Invalid) << "node '" << node->Name << "' has no op_type";
    auto ver = Opsets.find(node->Domain);
    if (ver == Opsets.end())
      fail(ErrorKind::Invalid) << node->where() << ": the model imports no opset for domain '"
                               << (node->Domain.empty() ? "ai.onnx" : node->Domain) << "'";
    node->Opset = ver->second;

    for (auto &in : np.input()) {
      if (in.empty()) {
        node->Inputs.push_back(nullptr);
        continue;
      }
      ir::Value *v = lookup(in, scope, outer, &g);
      if (!v)
        fail(ErrorKind::Invalid) << node->where() << ": input '" << in
                                 << "' is not defined in the graph";
      node->Inputs.push_back(v);
    }
    for (auto &a : np.attribute())
      node->Attrs[a.name()] = convertAttr(a, *node, scope, outer);
    ir::Node *raw = g.addNode(std::move(node));
    for (auto &out : np.output()) {
      if (out.empty()) {
        raw->Outputs.push_back(nullptr);
        continue;
      }
      ir::Value *v = g.addValue(out);
      v->Producer = raw;
      raw->Outputs.push_back(v);
      scope[out] = v;
    }
  }

  ir::Attribute convertAttr(const pb::Attribute &a, const ir::Node &node,
                            std::map<std::string, ir::Value *> &scope,
                            const std::map<std::string, ir::Value *> *outer) {
    using ir::AttrKind;
    ir::Attribute r;
    if (!a.ref_attr_name().empty())
      node.error(ErrorKind::Unsupported)
          << "attribute '" << a.name() << "' refers to a function attribute";
    int type = a.type();
    if (type == 0) {
      // Very old models omit the type; infer it from the field present.
      if (a.has_f()) type = 1;
      else if (a.has_i()) type = 2;
      else if (a.has_s()) type = 3;
      else if (a.has_t()) type = 4;
      else if (a.has_g()) type = 5;
      else if (a.floats_size()) type = 6;
      else if (a.ints_size()) type = 7;
      else if (a.strings_size()) type = 8;
      else if (a.tensors_size()) type = 9;
      else if (a.graphs_size()) type = 10;
      else
        node.error() << "attribute '" << a.name() << "' has no value";
    }
    TensorContext ctx{BaseDir, node.where() + " attribute '" + a.name() + "'"};
    // Subgraphs see the enclosing scopes.
    std::map<std::string, ir::Value *> visible;
    auto subgraph = [&](const pb::Graph &sg) {
      if (visible.empty()) {
        if (outer)
          visible = *outer;
        for (auto &[k, v] : scope)
          visible[k] = v;
      }
      return build(sg, false, &visible);
    };
    switch (type) {
    case 1: r.Kind = AttrKind::Float; r.F = a.f(); break;
    case 2: r.Kind = AttrKind::Int; r.I = a.i(); break;
    case 3: r.Kind = AttrKind::String; r.S = a.s(); break;
    case 4: r.Kind = AttrKind::Tensor; r.T = convertTensorOrString(a.t(), ctx); break;
    case 5: r.Kind = AttrKind::Graph; r.G = subgraph(a.g()); break;
    case 6: r.Kind = AttrKind::Floats; r.Floats.assign(a.floats().begin(), a.floats().end()); break;
    case 7: r.Kind = AttrKind::Ints; r.Ints.assign(a.ints().begin(), a.ints().end()); break;
    case 8: r.Kind = AttrKind::Strings; r.Strings.assign(a.strings().begin(), a.strings().end()); break;
    case 9:
      r.Kind = AttrKind::Tensors;
      for (auto &t : a.tensors())
        r.Tensors.push_back(convertTensorOrString(t, ctx));
      break;
    case 10:
      r.Kind = AttrKind::Graphs;
      for (auto &sg : a.graphs())
        r.Graphs.push_back(subgraph(sg));
      break;
    case 11:
      r.Kind = AttrKind::SparseTensor;
      r.T = convertSparse(a.sparse_tensor(), ctx);
      break;
    case 13:
    case 14: r.Kind = AttrKind::TypeProto; break;
    default:
      node.error() << "attribute '" << a.name() << "' has unknown type " << type;
    }
    return r;
  }

  /// Tensor attributes of unsupported dtypes (e.g. string constants) are
  /// kept as null so that only ops which actually use them report an error.
  TensorPtr convertTensorOrString(const pb::Tensor &t, const TensorContext &ctx) {
    auto dt = dtypeFromOnnx(t.data_type());
    if (dt && !isStorable(*dt))
      return nullptr;
    return convertTensor(t, ctx);
  }

  const LoadOptions &Opts;
  std::string BaseDir;
  std::map<std::string, int64_t> Opsets;
  std::map<std::pair<std::string, std::string>, const pb::Function *> Functions;
  int CallDepth = 0;
  int Depth = 0; ///< Nesting of the graph being built (1: the main graph).
};

} // namespace

std::unique_ptr<ir::Graph> loadModel(const std::string &path,
                                     const LoadOptions &options) {
  return loadModelBytes(readFile(path, "model"), path, dirOf(path), options);
}

std::unique_ptr<ir::Graph> loadModelBytes(const std::string &bytes,
                                          const std::string &path,
                                          const std::string &baseDir,
                                          const LoadOptions &options) {
  pb::Model model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    fail(ErrorKind::Invalid) << "'" << path
                             << "' is not an ONNX model (the protobuf data is "
                                "malformed or truncated)";
  if (!model.has_ir_version() || !model.has_graph())
    fail(ErrorKind::Invalid) << "'" << path
                             << "' is not an ONNX model (no IR version or graph)";
  int64_t ir = model.ir_version();
  if (ir < MinIrVersion || ir > MaxIrVersion)
    fail(ErrorKind::Unsupported) << "'" << path << "' has IR version " << ir
                                 << "; mlcc reads versions " << MinIrVersion
                                 << " to " << MaxIrVersion;
  std::map<std::string, int64_t> opsets;
  for (auto &os : model.opset_import()) {
    std::string dom = os.domain() == "ai.onnx" ? "" : os.domain();
    opsets[dom] = os.version();
  }
  auto def = opsets.find("");
  if (def != opsets.end() && (def->second < 1 || def->second > MaxDefaultOpset))
    fail(ErrorKind::Unsupported) << "'" << path << "' imports opset "
                                 << def->second
                                 << " of the default domain; mlcc supports 1 to "
                                 << MaxDefaultOpset;
  GraphBuilder builder(options, baseDir, opsets, model.functions());
  std::shared_ptr<ir::Graph> g = builder.build(model.graph(), true, nullptr);
  auto out = std::make_unique<ir::Graph>();
  *out = std::move(*g);
  if (out->Name.empty())
    out->Name = "main";
  return out;
}

namespace {

/// The ONNX model in the file `path` (an Invalid error when it is not one).
pb::Model parseModelFile(const std::string &path) {
  pb::Model model;
  if (!model.ParseFromString(readFile(path, "model")))
    fail(ErrorKind::Invalid) << "'" << path << "' is not an ONNX model";
  return model;
}

} // namespace

std::vector<GraphInputDesc> describeGraphInputs(const std::string &path) {
  pb::Model model = parseModelFile(path);
  std::set<std::string> inits;
  for (auto &t : model.graph().initializer())
    inits.insert(t.name());
  std::vector<GraphInputDesc> out;
  for (auto &vi : model.graph().input()) {
    if (inits.count(vi.name()))
      continue;
    GraphInputDesc d{vi.name(), {}};
    if (vi.type().has_tensor_type())
      for (auto &dim : vi.type().tensor_type().shape().dim())
        d.Dims.push_back(dim.has_dim_value() ? std::to_string(dim.dim_value())
                                             : dim.dim_param());
    out.push_back(std::move(d));
  }
  return out;
}

std::string withNamedAxes(const std::string &path, const std::vector<NamedAxis> &axes) {
  pb::Model model = parseModelFile(path);
  for (const NamedAxis &a : axes) {
    pb::ValueInfo *input = nullptr;
    for (auto &vi : *model.mutable_graph()->mutable_input())
      if (vi.name() == a.Input)
        input = &vi;
    if (!input || !input->type().has_tensor_type() ||
        (int64_t)a.Axis >= input->type().tensor_type().shape().dim_size())
      fail(ErrorKind::Invalid) << "'" << path << "' has no graph input '" << a.Input
                               << "' with an axis " << a.Axis;
    input->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim((int)a.Axis)
        ->set_dim_param(a.Dim);
  }
  std::string out;
  model.SerializeToString(&out);
  return out;
}

std::vector<std::string> describeNodeOps(const std::string &path) {
  pb::Model model = parseModelFile(path);
  std::vector<std::string> ops;
  for (auto &n : model.graph().node())
    ops.push_back(n.op_type());
  return ops;
}

TensorPtr loadTensorFile(const std::string &path) {
  std::string bytes = readFile(path, "tensor file");
  pb::Tensor tp;
  if (!tp.ParseFromString(bytes))
    fail(ErrorKind::Invalid) << "'" << path << "' is not a serialized TensorProto";
  TensorContext ctx{dirOf(path), "tensor '" + path + "'"};
  return convertTensor(tp, ctx);
}

std::string serializeTensor(const Tensor &t, const std::string &name) {
  pb::Tensor tp;
  tp.set_name(name);
  tp.set_data_type((int)t.dtype());
  for (int64_t d : t.shape())
    tp.add_dims(d);
  std::vector<uint8_t> dense = t.denseBytes();
  tp.set_raw_data(std::string(dense.begin(), dense.end()));
  return tp.SerializeAsString();
}

} // namespace mlcc::onnx
