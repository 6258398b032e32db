//===- OnnxWriter.cpp - The graph IR as an ONNX model file ----------------===//
#include "frontends/onnx/OnnxWriter.h"

#include "frontends/onnx/OnnxSchema.pb.h"

#include <set>

namespace mlcc::onnx {

namespace pb = ::mlcc::onnxpb;

namespace {

void setType(pb::TypeInfo *t, const ir::TensorType &type) {
  auto *tensor = t->mutable_tensor_type();
  tensor->set_elem_type((int)type.Type);
  auto *shape = tensor->mutable_shape();
  for (int64_t d : type.Dims)
    shape->add_dim()->set_dim_value(d);
}

void setTensor(pb::Tensor *t, const std::string &name, const Tensor &value) {
  t->set_name(name);
  t->set_data_type((int)value.dtype());
  for (int64_t d : value.shape())
    t->add_dims(d);
  std::vector<uint8_t> bytes = value.denseBytes();
  t->set_raw_data(std::string(bytes.begin(), bytes.end()));
}

void setAttribute(pb::Attribute *a, const std::string &name, const ir::Attribute &v,
                  const ir::Node &n) {
  a->set_name(name);
  switch (v.Kind) {
  case ir::AttrKind::Float:
    a->set_type(1);
    a->set_f((float)v.F);
    return;
  case ir::AttrKind::Int:
    a->set_type(2);
    a->set_i(v.I);
    return;
  case ir::AttrKind::String:
    a->set_type(3);
    a->set_s(v.S);
    return;
  case ir::AttrKind::Tensor:
    a->set_type(4);
    setTensor(a->mutable_t(), "", *v.T);
    return;
  case ir::AttrKind::Floats:
    a->set_type(6);
    for (double f : v.Floats)
      a->add_floats((float)f);
    return;
  case ir::AttrKind::Ints:
    a->set_type(7);
    for (int64_t i : v.Ints)
      a->add_ints(i);
    return;
  case ir::AttrKind::Strings:
    a->set_type(8);
    for (const std::string &s : v.Strings)
      a->add_strings(s);
    return;
  default:
    n.error(ErrorKind::Unsupported) << "attribute '" << name << "' of kind "
                                    << ir::attrKindName(v.Kind)
                                    << " cannot be written to an ONNX file yet";
  }
}

} // namespace

std::string writeModel(const ir::Graph &g) {
  pb::Model m;
  m.set_ir_version(8);
  m.set_producer_name("mlcc");
  for (auto &[domain, version] : g.Opsets) {
    auto *o = m.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }
  pb::Graph *pg = m.mutable_graph();
  pg->set_name(g.Name.empty() ? "mlcc" : g.Name);
  for (const ir::Value *v : g.Inputs) {
    auto *vi = pg->add_input();
    vi->set_name(v->Name);
    setType(vi->mutable_type(), v->Type);
  }
  // int4 and uint4 tensors need opset 21: a model of an older opset (what
  // --weight-bits 4 quantizes, usually) gets their values in int8 and
  // uint8 initializers instead, the same numbers to every reader.
  auto opset = g.Opsets.find("");
  const bool narrowTypes = opset != g.Opsets.end() && opset->second >= 21;
  std::set<const ir::Value *> written;
  auto initializer = [&](const ir::Value *v) {
    if (!v || !v->Const || !written.insert(v).second)
      return;
    DType t = v->Const->dtype();
    if (!narrowTypes && (t == DType::I4 || t == DType::U4)) {
      Tensor wide(t == DType::I4 ? DType::I8 : DType::U8, v->Const->shape());
      for (int64_t i = 0; i < wide.numel(); ++i)
        wide.setInt(i, v->Const->intAt(i));
      setTensor(pg->add_initializer(), v->Name, wide);
      return;
    }
    setTensor(pg->add_initializer(), v->Name, *v->Const);
  };
  for (const auto &n : g.Nodes) {
    auto *pn = pg->add_node();
    pn->set_name(n->Name);
    pn->set_op_type(n->OpType);
    if (!n->Domain.empty())
      pn->set_domain(n->Domain);
    for (const ir::Value *in : n->Inputs) {
      pn->add_input(in ? in->Name : "");
      initializer(in);
    }
    for (const ir::Value *out : n->Outputs)
      pn->add_output(out ? out->Name : "");
    for (auto &[name, attr] : n->Attrs)
      setAttribute(pn->add_attribute(), name, attr, *n);
  }
  for (const ir::Value *v : g.Outputs) {
    initializer(v);
    auto *vi = pg->add_output();
    vi->set_name(v->Name);
    setType(vi->mutable_type(), v->Type);
  }
  return m.SerializeAsString();
}

} // namespace mlcc::onnx
