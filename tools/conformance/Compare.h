//===- Compare.h - Comparing outputs with expected tensors ----------------===//
#pragma once

#include "compiler/support/Tensor.h"

#include <string>

namespace mlcc::test {

struct Tolerance {
  double Rtol = 1e-3;
  double Atol = 1e-7;
};

/// Compares `actualBytes` (raw dense data of `expected`'s dtype and shape)
/// with `expected`. Floats: |a - e| <= atol + rtol * |e|, NaN equals NaN,
/// infinities must match; integers and bools exactly. Returns an empty
/// string when equal, else a description of the first difference (index,
/// both values, tolerance) and the number of differing elements.
std::string compareTensor(const Tensor &expected, const std::string &actualBytes,
                          const Tolerance &tol);

} // namespace mlcc::test
