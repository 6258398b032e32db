//===- FuzzCompile.cpp - libFuzzer target over the whole compile ----------===//
//
// Each input is a serialized ONNX model. It is loaded, run through the whole
// pipeline (validation, inference and folding, the graph passes, lowering,
// memory planning and schedules), and the C source and header are emitted;
// one input in eight (chosen by a hash of its bytes, so runs are
// reproducible) is also compiled to an object file through LLVM. A
// CompileError of any kind but Internal is the expected answer to a bad model;
// an internal error, any other exception, a signal or a sanitizer report is a
// finding.
//
// The mutator is structure-aware: when the input parses as a model it edits
// the parsed model (dimensions, attributes, element types, wiring, opsets,
// initializers, nodes) and serializes it again; otherwise, and one time in
// four, it mutates raw bytes with libFuzzer's own mutator.
//
// Built by tests/fuzz/CMakeLists.txt with clang (-DMLCC_FUZZ=ON); run by
// scripts/fuzz.
//
//===----------------------------------------------------------------------===//
#include "compiler/output/Header.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/support/Error.h"
#include "frontends/onnx/OnnxLoader.h"
#include "frontends/onnx/OnnxSchema.pb.h"
#include "targets/c/CEmitter.h"
#include "targets/llvm/Targets.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace mlcc;
namespace pb = mlcc::onnxpb;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

uint64_t fnv1a(const uint8_t *data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

[[noreturn]] void finding(const char *what, const char *detail) {
  std::fprintf(stderr, "\nmlcc fuzz: %s: %s\n", what, detail);
  std::abort();
}

// --- the structure-aware mutator ----------------------------------------------

class Mutator {
public:
  explicit Mutator(unsigned seed) : Rng(seed) {}

  void mutate(pb::Model &m) {
    pb::Graph &g = *m.mutable_graph();
    switch (pick(9)) {
    case 0: mutateDims(g); break;
    case 1: mutateAttribute(g); break;
    case 2: mutateDType(g); break;
    case 3: mutateWiring(g); break;
    case 4: mutateOpset(m); break;
    case 5: mutateInitializer(g); break;
    case 6: mutateNodes(g); break;
    case 7: mutateOpType(g); break;
    default: mutateIrVersion(m); break;
    }
  }

private:
  size_t pick(size_t n) { return n ? Rng() % n : 0; }
  bool coin() { return Rng() & 1; }

  /// A value near the edges that break shape arithmetic.
  int64_t edgeInt() {
    // Window sizes up to thousands of taps (48, 64, 100, 4096: kernels,
    // dilations and extents past kir::kMaxUnrolledTerms) among the edges.
    static const int64_t values[] = {0, 1, -1, 2, 3, -2, 7, 48, 64, 100, 1000, -1000, 4096,
                                     INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                                     (int64_t)1 << 31, (int64_t)1 << 40};
    if (coin())
      return values[pick(sizeof values / sizeof *values)];
    return (int64_t)pick(9) - 2;
  }

  std::vector<pb::Node *> nodes(pb::Graph &g) {
    std::vector<pb::Node *> out;
    for (auto &n : *g.mutable_node())
      out.push_back(&n);
    return out;
  }

  std::vector<std::string> valueNames(const pb::Graph &g) {
    std::vector<std::string> names;
    for (auto &v : g.input())
      names.push_back(v.name());
    for (auto &t : g.initializer())
      names.push_back(t.name());
    for (auto &n : g.node())
      for (auto &o : n.output())
        names.push_back(o);
    names.push_back("");
    return names;
  }

  void mutateDims(pb::Graph &g) {
    std::vector<pb::TensorShape *> shapes;
    for (auto *list : {g.mutable_input(), g.mutable_output()})
      for (auto &v : *list)
        if (v.mutable_type()->has_tensor_type())
          shapes.push_back(v.mutable_type()->mutable_tensor_type()->mutable_shape());
    if (shapes.empty())
      return;
    pb::TensorShape &s = *shapes[pick(shapes.size())];
    switch (pick(4)) {
    case 0:
      if (s.dim_size())
        s.mutable_dim((int)pick((size_t)s.dim_size()))->set_dim_value(edgeInt());
      break;
    case 1: s.add_dim()->set_dim_value(edgeInt()); break;
    case 2:
      if (s.dim_size())
        s.mutable_dim()->RemoveLast();
      break;
    default:
      if (s.dim_size())
        s.mutable_dim((int)pick((size_t)s.dim_size()))->set_dim_param(coin() ? "N" : "");
      break;
    }
  }

  void mutateAttribute(pb::Graph &g) {
    auto ns = nodes(g);
    if (ns.empty())
      return;
    pb::Node &n = *ns[pick(ns.size())];
    if (!n.attribute_size() || pick(4) == 0) {
      static const char *names[] = {"axis", "axes", "kernel_shape", "strides", "pads",
                                    "dilations", "group", "perm", "to", "keepdims",
                                    "transA", "transB", "alpha", "mode", "epsilon"};
      pb::Attribute *a = n.add_attribute();
      a->set_name(names[pick(sizeof names / sizeof *names)]);
      a->set_type(coin() ? 2 : 7);
      if (a->type() == 2)
        a->set_i(edgeInt());
      else
        for (size_t k = pick(5); k > 0; --k)
          a->add_ints(edgeInt());
      return;
    }
    pb::Attribute &a = *n.mutable_attribute((int)pick((size_t)n.attribute_size()));
    switch (pick(6)) {
    case 0: a.set_i(edgeInt()); break;
    case 1:
      if (a.ints_size())
        a.set_ints((int)pick((size_t)a.ints_size()), edgeInt());
      else
        a.add_ints(edgeInt());
      break;
    case 2:
      if (coin() && a.ints_size())
        a.mutable_ints()->RemoveLast();
      else
        a.add_ints(edgeInt());
      break;
    case 3: a.set_type((int)pick(16)); break;
    case 4: a.set_f(coin() ? -1.0f : 1e30f); break;
    default: a.set_s(coin() ? "" : "SAME_UPPER"); break;
    }
  }

  void mutateDType(pb::Graph &g) {
    int code = (int)pick(28);
    switch (pick(3)) {
    case 0:
      if (g.input_size())
        g.mutable_input((int)pick((size_t)g.input_size()))
            ->mutable_type()->mutable_tensor_type()->set_elem_type(code);
      break;
    case 1:
      if (g.initializer_size())
        g.mutable_initializer((int)pick((size_t)g.initializer_size()))->set_data_type(code);
      break;
    default:
      for (auto &n : *g.mutable_node())
        for (auto &a : *n.mutable_attribute())
          if (a.name() == "to" && coin())
            a.set_i(code);
      break;
    }
  }

  void mutateWiring(pb::Graph &g) {
    auto ns = nodes(g);
    if (ns.empty())
      return;
    pb::Node &n = *ns[pick(ns.size())];
    std::vector<std::string> names = valueNames(g);
    switch (pick(5)) {
    case 0:
      if (n.input_size())
        n.set_input((int)pick((size_t)n.input_size()), names[pick(names.size())]);
      break;
    case 1:
      if (n.input_size())
        n.mutable_input()->RemoveLast();
      break;
    case 2: n.add_input(names[pick(names.size())]); break;
    case 3:
      if (n.output_size() && coin())
        n.mutable_output()->RemoveLast();
      else
        n.add_output(coin() ? "" : "extra" + std::to_string(pick(4)));
      break;
    default:
      if (n.output_size())
        n.set_output((int)pick((size_t)n.output_size()), names[pick(names.size())]);
      break;
    }
  }

  void mutateOpset(pb::Model &m) {
    if (!m.opset_import_size() || pick(8) == 0) {
      pb::OperatorSetId *os = m.add_opset_import();
      os->set_domain(coin() ? "" : "ai.onnx.ml");
      os->set_version((int64_t)pick(30));
      return;
    }
    m.mutable_opset_import((int)pick((size_t)m.opset_import_size()))
        ->set_version(coin() ? (int64_t)pick(30) : edgeInt());
  }

  void mutateInitializer(pb::Graph &g) {
    if (!g.initializer_size())
      return;
    pb::Tensor &t = *g.mutable_initializer((int)pick((size_t)g.initializer_size()));
    switch (pick(5)) {
    case 0:
      if (t.dims_size())
        t.set_dims((int)pick((size_t)t.dims_size()), edgeInt());
      break;
    case 1: t.add_dims(edgeInt()); break;
    case 2:
      if (t.has_raw_data())
        t.mutable_raw_data()->resize(pick(t.raw_data().size() + 8));
      break;
    case 3:
      t.set_data_location(1);
      t.add_external_data()->set_key(coin() ? "offset" : "location");
      break;
    default: {
      // Flip one value: NaN, infinity or a large number in raw float data.
      std::string &raw = *t.mutable_raw_data();
      if (raw.size() >= 4) {
        static const uint32_t bits[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu,
                                        0xffffffffu, 0x80000000u};
        uint32_t b = bits[pick(6)];
        std::memcpy(&raw[(pick(raw.size() / 4)) * 4], &b, 4);
      }
      break;
    }
    }
  }

  void mutateNodes(pb::Graph &g) {
    int n = g.node_size();
    if (!n)
      return;
    int i = (int)pick((size_t)n);
    switch (pick(3)) {
    case 0: // delete
      g.mutable_node()->DeleteSubrange(i, 1);
      break;
    case 1: // duplicate (same outputs: produced twice)
      *g.add_node() = g.node(i);
      break;
    default: // swap two nodes' order
      g.mutable_node()->SwapElements(i, (int)pick((size_t)n));
      break;
    }
  }

  void mutateOpType(pb::Graph &g) {
    auto ns = nodes(g);
    if (ns.empty())
      return;
    static const char *ops[] = {
        "Add", "Div", "Relu", "Conv", "MatMul", "Gemm", "Reshape", "Transpose",
        "Concat", "Slice", "Gather", "Softmax", "MaxPool", "AveragePool",
        "ReduceMean", "Cast", "Expand", "Where", "Split", "Squeeze", "Unsqueeze",
        "Pad", "Resize", "TopK", "Einsum", "ConvTranspose", "LayerNormalization",
        "BatchNormalization", "QuantizeLinear", "DequantizeLinear", "Loop", "If",
        "Tile", "Range", "ConstantOfShape", "Flatten", "Clip", "Identity"};
    pb::Node &n = *ns[pick(ns.size())];
    if (pick(8) == 0)
      n.set_domain(coin() ? "ai.onnx.ml" : "com.microsoft");
    else
      n.set_op_type(ops[pick(sizeof ops / sizeof *ops)]);
  }

  void mutateIrVersion(pb::Model &m) {
    m.set_ir_version(coin() ? (int64_t)pick(14) : edgeInt());
  }

  std::mt19937 Rng;
};

const llvmgen::TargetSpec &hostTarget() {
  static const llvmgen::TargetSpec t = llvmgen::resolveTarget("host", "", "");
  return t;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Keep constant folding within the fuzzer's memory limit: a mutated shape
  // may ask for a tensor of any size, which a real compile would reject at
  // 4 GiB (--max-tensor); the fuzzer rejects it at 64 MiB.
  setMaxTensorBytes(int64_t(64) << 20);
  // Debug builds of the generated protobuf code log every string field
  // that is not UTF-8; mlcc escapes such names itself.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  try {
    std::unique_ptr<ir::Graph> g = onnx::loadModelBytes(bytes, "fuzz.onnx", "", {});
    PipelineOptions po;
    po.Name = "m";
    po.Target = llvmgen::describeTarget(hostTarget());
    // Folding with coverage tracing and ASan is ~50x slower: a smaller budget
    // per node keeps a model whose whole network is constant within the
    // fuzzer's timeout.
    po.Fold.MaxFoldIterations = int64_t(1) << 16;
    kir::Program program = runPipeline(*g, po);
    std::string header = output::writeHeader(program, "fuzz.onnx");
    std::string c = cgen::emitC(program, "m.h");
    if (header.empty() || c.empty())
      finding("empty output", "the header or the C source is empty");
    if (fnv1a(data, size) % 8 == 0) {
      llvmgen::CodegenOptions cg;
      cg.OptLevel = 1;
      std::string obj = llvmgen::compileProgram(program, hostTarget(), cg,
                                                llvmgen::OutputKind::Object);
      if (obj.empty())
        finding("empty output", "LLVM produced an empty object");
    }
  } catch (const CompileError &e) {
    if (e.kind() == ErrorKind::Internal)
      finding("internal error", e.what());
    std::string msg = e.what();
    if (msg.empty() || msg.find('\n') != std::string::npos)
      finding("bad message", "a rejection must be one non-empty line");
  } catch (const std::exception &e) {
    finding("uncaught exception (the CLI would exit 70)", e.what());
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  pb::Model model;
  if ((seed & 3) == 0 || !model.ParseFromArray(data, (int)size) || !model.has_graph())
    return LLVMFuzzerMutate(data, size, maxSize);
  Mutator(seed).mutate(model);
  std::string out = model.SerializeAsString();
  if (out.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
