#include "compiler/support/Tensor.h"

#include "compiler/support/Error.h"
#include "compiler/support/NarrowFloat.h"
#include "compiler/support/SubByte.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace mlcc {

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string extentText(const AxisExtent &a, const std::vector<std::string> &names) {
  std::string e;
  for (size_t k = 0; k < a.Coeffs.size() && k < names.size(); ++k) {
    int64_t c = a.Coeffs[k];
    if (c == 0)
      continue;
    if (!e.empty() || c < 0)
      e += c < 0 ? "-" : "+";
    if (std::abs(c) != 1)
      e += std::to_string(std::abs(c)) + "*";
    e += names[k];
  }
  if (a.Offset != 0)
    e += (a.Offset > 0 ? "+" : "-") + std::to_string(std::abs(a.Offset));
  return e;
}

bool leadsAtRunTime(const Shape &dims, const std::vector<AxisExtent> &bounded) {
  if (bounded.empty())
    return true;
  if (bounded.size() > 1)
    return false;
  for (int64_t d = 0; d < bounded[0].Axis; ++d)
    if (dims[(size_t)d] != 1)
      return false;
  return true;
}

namespace {
int64_t MaxTensorBytes = int64_t(1) << 32;
}

int64_t maxTensorBytes() { return MaxTensorBytes; }
void setMaxTensorBytes(int64_t bytes) { MaxTensorBytes = bytes; }

int64_t checkedTensorBytes(const Shape &shape, size_t elementBytes) {
  int64_t n = (int64_t)std::max<size_t>(elementBytes, 1);
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

void checkTensorSize(const std::string &what, const Shape &shape, DType dtype) {
  int64_t bytes = checkedTensorBytes(shape, dtypeSize(dtype));
  if (bytes < 0)
    fail(ErrorKind::Invalid) << what << " has shape " << shapeToString(shape)
                             << ", whose size does not fit in 64 bits";
  if (bytes > MaxTensorBytes)
    fail(ErrorKind::Invalid) << what << " has shape " << shapeToString(shape)
                             << " (" << bytes << " bytes), more than mlcc's limit of "
                             << MaxTensorBytes << " bytes per tensor (--max-tensor raises it)";
}

std::string shapeToString(const Shape &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

Tensor::Tensor(DType dtype, Shape shape) : Type(dtype), Dims(std::move(shape)) {
  Data.assign((size_t)storageBytes(dtype, numel()), 0);
}

Tensor::Tensor(DType dtype, Shape shape, std::vector<uint8_t> bytes)
    : Type(dtype), Dims(std::move(shape)), Data(std::move(bytes)) {
  MLCC_CHECK(Data.size() == (size_t)storageBytes(dtype, numel()),
             "tensor byte size mismatch");
}

Tensor Tensor::splat(DType dtype, Shape shape, std::vector<uint8_t> element) {
  Tensor t(dtype, {});
  t.Dims = std::move(shape);
  // A sub-byte splat keeps its element's code in one byte.
  MLCC_CHECK(element.size() == (isSubByte(dtype) ? 1 : dtypeSize(dtype)),
             "splat element size");
  t.Data = std::move(element);
  t.Splat = true;
  return t;
}

const uint8_t *Tensor::elementPtr(int64_t i) const {
  MLCC_CHECK(!isSubByte(Type), "no element address in a packed " << dtypeName(Type) << " tensor");
  return Data.data() + (Splat ? 0 : (size_t)i * dtypeSize(Type));
}

std::vector<uint8_t> Tensor::denseBytes() const {
  if (!Splat)
    return Data;
  std::vector<uint8_t> out;
  if (isSubByte(Type)) {
    out.assign((size_t)storageBytes(Type, numel()), 0);
    for (int64_t i = 0; i < numel(); ++i)
      setSubByteCode(out.data(), Type, i, Data[0]);
    return out;
  }
  size_t n = (size_t)numel(), sz = dtypeSize(Type);
  out.resize(n * sz);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(out.data() + i * sz, Data.data(), sz);
  return out;
}

void storeScalar(DType dtype, void *dst, double v) {
  switch (dtype) {
  case DType::F32: {
    float f = (float)v;
    std::memcpy(dst, &f, 4);
    return;
  }
  case DType::F64:
    std::memcpy(dst, &v, 8);
    return;
  case DType::F16:
  case DType::BF16: {
    uint16_t h = (uint16_t)floatToNarrowBits(dtype, (float)v);
    std::memcpy(dst, &h, 2);
    return;
  }
  case DType::Bool: {
    uint8_t b = v != 0.0 ? 1 : 0;
    std::memcpy(dst, &b, 1);
    return;
  }
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0: {
    // Through f32 and without saturation, like a kernel IR cast.
    uint8_t b = (uint8_t)floatToNarrowBits(dtype, (float)v);
    std::memcpy(dst, &b, 1);
    return;
  }
  default:
    break;
  }
  // Integers: saturate out-of-range and NaN so folding never hits UB.
  int64_t i;
  if (std::isnan(v))
    i = 0;
  else if (v >= 9.2233720368547758e18)
    i = std::numeric_limits<int64_t>::max();
  else if (v <= -9.2233720368547758e18)
    i = std::numeric_limits<int64_t>::min();
  else
    i = (int64_t)v;
  if (dtype == DType::U64 && v >= 9.2233720368547758e18 && v < 1.8446744073709552e19) {
    uint64_t u = (uint64_t)v;
    std::memcpy(dst, &u, 8);
    return;
  }
  storeScalarInt(dtype, dst, i);
}

void storeScalarInt(DType dtype, void *dst, int64_t v) {
  switch (dtype) {
  case DType::I8: {
    int8_t x = (int8_t)v;
    std::memcpy(dst, &x, 1);
    return;
  }
  case DType::U8: {
    uint8_t x = (uint8_t)v;
    std::memcpy(dst, &x, 1);
    return;
  }
  case DType::I16: {
    int16_t x = (int16_t)v;
    std::memcpy(dst, &x, 2);
    return;
  }
  case DType::U16: {
    uint16_t x = (uint16_t)v;
    std::memcpy(dst, &x, 2);
    return;
  }
  case DType::I32: {
    int32_t x = (int32_t)v;
    std::memcpy(dst, &x, 4);
    return;
  }
  case DType::U32: {
    uint32_t x = (uint32_t)v;
    std::memcpy(dst, &x, 4);
    return;
  }
  case DType::I64:
  case DType::U64:
  case DType::Index:
    std::memcpy(dst, &v, 8);
    return;
  case DType::Bool: {
    uint8_t b = v != 0;
    std::memcpy(dst, &b, 1);
    return;
  }
  default:
    storeScalar(dtype, dst, (double)v);
    return;
  }
}

double loadScalarDouble(DType dtype, const void *src) {
  switch (dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, src, 4);
    return f;
  }
  case DType::F64: {
    double d;
    std::memcpy(&d, src, 8);
    return d;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t h;
    std::memcpy(&h, src, 2);
    return narrowBitsToFloat(dtype, h);
  }
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0:
    return narrowBitsToFloat(dtype, *(const uint8_t *)src);
  case DType::U64: {
    uint64_t u;
    std::memcpy(&u, src, 8);
    return (double)u;
  }
  default:
    // (loadScalarInt's fallback comes back here: stop types with no value.)
    MLCC_CHECK(isInteger(dtype) || dtype == DType::Bool,
               "no numeric value for a " << dtypeName(dtype) << " element");
    return (double)loadScalarInt(dtype, src);
  }
}

int64_t loadScalarInt(DType dtype, const void *src) {
  switch (dtype) {
  case DType::I8: {
    int8_t x;
    std::memcpy(&x, src, 1);
    return x;
  }
  case DType::U8: {
    uint8_t x;
    std::memcpy(&x, src, 1);
    return x;
  }
  case DType::Bool: { // any non-zero byte is true
    uint8_t x;
    std::memcpy(&x, src, 1);
    return x != 0;
  }
  case DType::I16: {
    int16_t x;
    std::memcpy(&x, src, 2);
    return x;
  }
  case DType::U16: {
    uint16_t x;
    std::memcpy(&x, src, 2);
    return x;
  }
  case DType::I32: {
    int32_t x;
    std::memcpy(&x, src, 4);
    return x;
  }
  case DType::U32: {
    uint32_t x;
    std::memcpy(&x, src, 4);
    return x;
  }
  case DType::I64:
  case DType::U64:
  case DType::Index: {
    int64_t x;
    std::memcpy(&x, src, 8);
    return x;
  }
  default: {
    double d = loadScalarDouble(dtype, src);
    if (std::isnan(d))
      return 0;
    if (d >= 9.2233720368547758e18)
      return std::numeric_limits<int64_t>::max();
    if (d <= -9.2233720368547758e18)
      return std::numeric_limits<int64_t>::min();
    return (int64_t)d;
  }
  }
}

uint8_t Tensor::codeAt(int64_t i) const {
  MLCC_CHECK(isSubByte(Type), "codeAt on a " << dtypeName(Type) << " tensor");
  return Splat ? Data[0] : subByteCode(Data.data(), Type, i);
}

int64_t Tensor::intAt(int64_t i) const {
  if (isSubByte(Type)) {
    double v = subByteValue(Type, codeAt(i));
    return (int64_t)v; // float4e2m1 truncates as the other floats do
  }
  return loadScalarInt(Type, elementPtr(i));
}
double Tensor::doubleAt(int64_t i) const {
  if (isSubByte(Type))
    return subByteValue(Type, codeAt(i));
  return loadScalarDouble(Type, elementPtr(i));
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> v((size_t)numel());
  for (int64_t i = 0; i < numel(); ++i)
    v[(size_t)i] = intAt(i);
  return v;
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> v((size_t)numel());
  for (int64_t i = 0; i < numel(); ++i)
    v[(size_t)i] = doubleAt(i);
  return v;
}

void Tensor::setDouble(int64_t i, double v) {
  MLCC_CHECK(!Splat, "setDouble on a splat tensor");
  if (isSubByte(Type))
    return setSubByteCode(Data.data(), Type, i, subByteFromDouble(Type, v));
  storeScalar(Type, Data.data() + (size_t)i * dtypeSize(Type), v);
}

void Tensor::setInt(int64_t i, int64_t v) {
  MLCC_CHECK(!Splat, "setInt on a splat tensor");
  if (isSubByte(Type))
    return setSubByteCode(Data.data(), Type, i, subByteFromInt(Type, v));
  storeScalarInt(Type, Data.data() + (size_t)i * dtypeSize(Type), v);
}

bool Tensor::allElementsEqual() const {
  if (Splat)
    return true;
  if (isSubByte(Type)) {
    for (int64_t i = 1; i < numel(); ++i)
      if (codeAt(i) != codeAt(0))
        return false;
    return true;
  }
  size_t sz = dtypeSize(Type), n = (size_t)numel();
  for (size_t i = 1; i < n; ++i)
    if (std::memcmp(Data.data(), Data.data() + i * sz, sz) != 0)
      return false;
  return true;
}

Tensor Tensor::fromInts(DType dtype, Shape shape, const std::vector<int64_t> &v) {
  Tensor t(dtype, std::move(shape));
  MLCC_CHECK((int64_t)v.size() == t.numel(), "fromInts size mismatch");
  for (size_t i = 0; i < v.size(); ++i)
    t.setInt((int64_t)i, v[i]);
  return t;
}

Tensor Tensor::fromDoubles(DType dtype, Shape shape, const std::vector<double> &v) {
  Tensor t(dtype, std::move(shape));
  MLCC_CHECK((int64_t)v.size() == t.numel(), "fromDoubles size mismatch");
  for (size_t i = 0; i < v.size(); ++i)
    t.setDouble((int64_t)i, v[i]);
  return t;
}

} // namespace mlcc
