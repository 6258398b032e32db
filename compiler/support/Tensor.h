//===- Tensor.h - Constant tensor data ------------------------------------===//
//
// The value of a constant: initializers, Constant nodes, folded results and
// the test data the conformance harness compares with. Immutable once built
// and shared by pointer. A tensor whose elements are all equal may be stored
// "splat" (one element of storage), which keeps ConstantOfShape results and
// zero-filled weights out of the generated library.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/support/DType.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlcc {

using Shape = std::vector<int64_t>;

/// An axis whose extent follows dimensions known only at run time
/// (--dim NAME=MIN..MAX): Offset + the sum of Coeffs[k] * (dimension k).
struct AxisExtent {
  int64_t Axis = 0;
  std::vector<int64_t> Coeffs; ///< One per bounded dimension.
  int64_t Offset = 0;
  bool operator==(const AxisExtent &o) const {
    return Axis == o.Axis && Coeffs == o.Coeffs && Offset == o.Offset;
  }
};

/// "seq", "2*seq+1": the extent `a` over dimensions named `names`.
std::string extentText(const AxisExtent &a, const std::vector<std::string> &names);

/// Whether the elements in use at every run-time extent are the leading
/// elements of a row-major buffer of shape `dims` (each axis at its MAX):
/// no axis follows a run-time dimension, or one does with only axes of 1
/// before it.
bool leadsAtRunTime(const Shape &dims, const std::vector<AxisExtent> &bounded);

/// Number of elements of a shape (1 for a scalar).
int64_t numElements(const Shape &shape);
/// "[1,3,224,224]"
std::string shapeToString(const Shape &shape);

/// The largest tensor mlcc accepts, in bytes: 4 GiB by default (--max-tensor). A model
/// file, a --freeze file or a node's inferred output beyond it is a compile
/// error. The fuzzer lowers it to keep constant folding small.
int64_t maxTensorBytes();
void setMaxTensorBytes(int64_t bytes);
/// Bytes of a tensor of `shape` whose elements take `elementBytes` (at
/// least 1 is counted), or -1 when a dimension is negative or the product
/// overflows 64 bits.
int64_t checkedTensorBytes(const Shape &shape, size_t elementBytes);
/// Throws a CompileError (Invalid) starting with `what` when a tensor of
/// this shape and type is negative, overflows or exceeds maxTensorBytes().
void checkTensorSize(const std::string &what, const Shape &shape, DType dtype);

class Tensor {
public:
  Tensor(DType dtype, Shape shape);
  /// Builds a tensor from raw little-endian element bytes
  /// (storageBytes(dtype, numel): packed for the sub-byte types).
  Tensor(DType dtype, Shape shape, std::vector<uint8_t> bytes);
  /// A splat tensor: every element equals the single element in `element`.
  static Tensor splat(DType dtype, Shape shape, std::vector<uint8_t> element);

  DType dtype() const { return Type; }
  const Shape &shape() const { return Dims; }
  int64_t numel() const { return numElements(Dims); }
  size_t rank() const { return Dims.size(); }
  bool isSplat() const { return Splat; }

  /// Storage bytes (one element when splat).
  const std::vector<uint8_t> &bytes() const { return Data; }
  std::vector<uint8_t> &mutableBytes() { return Data; }
  /// Full element data, expanding a splat.
  std::vector<uint8_t> denseBytes() const;
  /// Element `i` in its own storage format, as raw bytes address (not for
  /// the packed sub-byte types: codeAt()).
  const uint8_t *elementPtr(int64_t i) const;

  /// The code (bits) of element `i` of a sub-byte tensor (compiler/support/SubByte.h).
  uint8_t codeAt(int64_t i) const;
  /// Element `i` converted to int64 (floats truncate, bool 0/1).
  int64_t intAt(int64_t i) const;
  /// Element `i` converted to double (f16/bf16 decoded).
  double doubleAt(int64_t i) const;
  /// All elements as int64, for shape-like inputs.
  std::vector<int64_t> toInts() const;
  std::vector<double> toDoubles() const;

  /// Sets element `i` from a double/int64, converting to the dtype.
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  /// True if all elements are bitwise equal (so the tensor could be a splat).
  bool allElementsEqual() const;

  /// Scalar/1-D helpers for building constants.
  static Tensor fromInts(DType dtype, Shape shape, const std::vector<int64_t> &v);
  static Tensor fromDoubles(DType dtype, Shape shape, const std::vector<double> &v);

private:
  DType Type;
  Shape Dims;
  std::vector<uint8_t> Data;
  bool Splat = false;
};

using TensorPtr = std::shared_ptr<const Tensor>;

/// Converts a double to `dtype` and stores it at `dst` (dtypeSize bytes).
void storeScalar(DType dtype, void *dst, double value);
void storeScalarInt(DType dtype, void *dst, int64_t value);
double loadScalarDouble(DType dtype, const void *src);
int64_t loadScalarInt(DType dtype, const void *src);

} // namespace mlcc
