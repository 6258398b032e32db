//===- SignalCommon.h - What the signal op files share --------------------===//
//
// The helpers of DFT, STFT, the cosine windows and MelWeightMatrix: f64
// constants and angles, scalar constant inputs, the output_datatype
// attribute, and the transform lengths of DFT and STFT nodes that the FFT
// plan reads (transformLength in Signal.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

const double TwoPi = 6.283185307179586476925286766559;

inline Expr f64(double v) { return kir::constant(DType::F64, v); }

/// cos/sin of 2*pi*m/N for an Index m in [0, N).
inline Expr angle(const Expr &m, int64_t N) {
  return kir::cast(DType::F64, m) * (TwoPi / (double)N);
}

inline void requireScalarInt(const ir::Node &n, size_t i) {
  requireDType(n, i, {DType::I32, DType::I64});
}

/// One scalar from a constant input.
inline int64_t constScalar(const ir::Node &n, size_t i, const char *why) {
  std::vector<int64_t> v = n.constInputInts(i, why);
  if (v.size() != 1)
    n.error() << "input " << i << " must be a scalar, got " << v.size()
              << " elements";
  return v[0];
}

/// The output_datatype attribute of a window or MelWeightMatrix (default
/// float).
inline DType outputDatatype(const ir::Node &n) {
  int64_t code = n.attrInt("output_datatype", 1);
  std::optional<DType> t = dtypeFromOnnx(code);
  if (!t || !(isFloat(*t) || (isInteger(*t) && *t != DType::Index)))
    n.error() << "output_datatype " << code << " is not a numeric type";
  if (!isStorable(*t))
    n.error(ErrorKind::Unsupported) << "output_datatype " << dtypeOnnxName(*t)
                                    << " is not supported";
  return *t;
}

/// dft_length of a DFT node (Dft.cpp).
int64_t dftLength(const ir::Node &n);
/// The frame length of an STFT node (Stft.cpp).
int64_t stftFrameLength(const ir::Node &n);

} // namespace mlcc::ops
