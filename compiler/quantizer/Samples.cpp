//===- Samples.cpp - Calibration samples from .npy files or .pb folders ---===//
#include "compiler/quantizer/Samples.h"

#include "compiler/support/Files.h"
#include "frontends/onnx/OnnxLoader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>

namespace mlcc::quantizer {

namespace {

DType npyType(const std::string &descr, const std::string &path) {
  static const std::map<std::string, DType> types = {
      {"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16}, {"i1", DType::I8},
      {"u1", DType::U8},  {"i2", DType::I16}, {"u2", DType::U16}, {"i4", DType::I32},
      {"u4", DType::U32}, {"i8", DType::I64}, {"u8", DType::U64}, {"b1", DType::Bool}};
  std::string order = descr.substr(0, 1), code = descr.substr(1);
  auto it = types.find(code);
  bool oneByte = code.back() == '1';
  if (descr.size() != 3 || it == types.end() ||
      !(order == "<" || order == "|" || (order == "=" ) || (oneByte && order == ">")))
    fail(ErrorKind::Invalid) << "'" << path << "': NumPy type '" << descr
                             << "' is not supported (little-endian numbers only)";
  return it->second;
}

} // namespace

Tensor loadNpy(const std::string &path) {
  std::string data = readFile(path, "NumPy file");
  auto bad = [&](const char *what) {
    fail(ErrorKind::Invalid) << "'" << path << "' is not a NumPy .npy file: " << what;
  };
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    bad("no NumPy magic");
  int major = (unsigned char)data[6];
  size_t headerLen, start;
  if (major == 1) {
    headerLen = (unsigned char)data[8] | (unsigned char)data[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      bad("truncated header");
    headerLen = (size_t)(unsigned char)data[8] | (size_t)(unsigned char)data[9] << 8 |
                (size_t)(unsigned char)data[10] << 16 | (size_t)(unsigned char)data[11] << 24;
    start = 12;
  } else {
    bad("unknown format version");
    return Tensor(DType::F32, {});
  }
  if (data.size() < start + headerLen)
    bad("truncated header");
  std::string header = data.substr(start, headerLen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
    bad("no 'descr' in the header");
  DType type = npyType(m[1], path);
  if (std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*True")))
    fail(ErrorKind::Invalid) << "'" << path << "': Fortran-order arrays are not supported "
                             << "(save with np.ascontiguousarray)";
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    bad("no 'shape' in the header");
  Shape shape;
  std::string dims = m[1];
  std::regex num("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator();
       ++it)
    shape.push_back(std::stoll(it->str()));
  size_t bytes = (size_t)storageBytes(type, numElements(shape));
  size_t offset = start + headerLen;
  if (data.size() - offset < bytes)
    fail(ErrorKind::Invalid) << "'" << path << "' holds " << data.size() - offset
                             << " data bytes; its shape " << shapeToString(shape) << " needs "
                             << bytes;
  std::vector<uint8_t> raw(data.begin() + (long)offset, data.begin() + (long)(offset + bytes));
  return Tensor(type, shape, std::move(raw));
}

std::vector<std::vector<uint8_t>> loadSamples(const ir::Graph &g,
                                              const std::vector<std::string> &specs,
                                              size_t &count) {
  std::map<std::string, std::string> given;
  for (const std::string &s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      fail(ErrorKind::Usage) << "--calibrate expects NAME=SAMPLES.npy, got '" << s << "'";
    std::string name = s.substr(0, eq);
    bool known = false;
    for (const ir::Value *in : g.Inputs)
      known = known || in->Name == name;
    if (!known) {
      std::string names;
      for (const ir::Value *in : g.Inputs)
        names += (names.empty() ? "" : ", ") + in->Name;
      fail(ErrorKind::Usage) << "--calibrate: the model has no input '" << name
                             << "' (its inputs: " << names << ")";
    }
    if (!given.emplace(name, s.substr(eq + 1)).second)
      fail(ErrorKind::Usage) << "--calibrate: input '" << name << "' is given twice";
  }
  std::vector<std::vector<uint8_t>> out;
  count = 0;
  std::string first;
  for (const ir::Value *in : g.Inputs) {
    auto it = given.find(in->Name);
    if (it == given.end())
      fail(ErrorKind::Usage) << "--quantize: no calibration samples for input '" << in->Name
                             << "' (--calibrate " << in->Name << "=SAMPLES.npy)";
    const std::string &path = it->second;
    const Shape &shape = in->Type.Dims;
    std::vector<Tensor> parts;
    if (std::filesystem::is_directory(path)) {
      std::vector<std::string> files;
      for (auto &e : std::filesystem::directory_iterator(path))
        if (e.path().extension() == ".pb")
          files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      if (files.empty())
        fail(ErrorKind::Usage) << "--calibrate " << in->Name << ": folder '" << path
                               << "' has no .pb file";
      for (const std::string &f : files)
        parts.push_back(*onnx::loadTensorFile(f));
    } else {
      parts.push_back(loadNpy(path));
    }
    size_t n = 0;
    std::vector<uint8_t> bytes;
    for (const Tensor &t : parts) {
      Shape batched = {0};
      batched.insert(batched.end(), shape.begin(), shape.end());
      bool one = t.shape() == shape;
      bool many = t.rank() == shape.size() + 1 &&
                  std::equal(shape.begin(), shape.end(), t.shape().begin() + 1);
      if (t.dtype() != in->Type.Type)
        fail(ErrorKind::Usage) << "--calibrate " << in->Name << ": samples of type "
                               << dtypeOnnxName(t.dtype()) << " in '" << path
                               << "'; the input is " << dtypeOnnxName(in->Type.Type);
      if (!one && !many)
        fail(ErrorKind::Usage) << "--calibrate " << in->Name << ": samples of shape "
                               << shapeToString(t.shape()) << " in '" << path
                               << "'; expected [N] followed by the input's shape "
                               << shapeToString(shape);
      n += one ? 1 : (size_t)t.shape()[0];
      std::vector<uint8_t> d = t.denseBytes();
      bytes.insert(bytes.end(), d.begin(), d.end());
    }
    if (n == 0)
      fail(ErrorKind::Usage) << "--calibrate " << in->Name << ": '" << path
                             << "' holds no sample";
    if (count && n != count)
      fail(ErrorKind::Usage) << "--calibrate: " << n << " samples for input '" << in->Name
                             << "' but " << count << " for '" << first << "'";
    count = n;
    first = in->Name;
    out.push_back(std::move(bytes));
  }
  return out;
}

} // namespace mlcc::quantizer
