//===- Window.h - Sliding-window geometry (conv and pooling) --------------===//
//
// Kernel size, strides, dilations and padding of a convolution or pooling
// node over N spatial dimensions, with auto_pad and ceil_mode resolved, and
// the output extents they imply.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

struct Window {
  std::vector<int64_t> Kernel, Strides, Dilations, PadBegin, PadEnd, Out;
  size_t rank() const { return Kernel.size(); }
};

/// Resolves the window attributes of `n` for input spatial extents `in`
/// and kernel extents `kernel` (from kernel_shape or the weights).
Window computeWindow(const ir::Node &n, const Shape &in,
                     const std::vector<int64_t> &kernel, bool ceilMode = false);

/// The integers t in [0, limit) with 0 <= base + t * step < extent, as a
/// range [lo, hi) (empty when hi <= lo); `step` is positive. Clips sliding
/// windows to the image both ways: kernel offsets for an output position,
/// and output positions for a kernel offset.
std::pair<kir::Expr, kir::Expr> affineRange(const kir::Expr &base, int64_t step,
                                            int64_t extent, int64_t limit);

/// The range [lo, hi) of kernel offsets k for which the input position
/// o * stride + k * dilation - padBegin lies inside [0, extent).
std::pair<kir::Expr, kir::Expr> validKernelRange(const kir::Expr &o,
                                                 int64_t stride,
                                                 int64_t dilation,
                                                 int64_t padBegin,
                                                 int64_t kernel,
                                                 int64_t extent);

/// The outputs [lo, hi) along axis d whose whole window lies inside the
/// input's [0, extent): the interior where a windowed op needs no clipping
/// (lo <= hi <= w.Out[d]; the border is [0, lo) and [hi, Out)).
std::pair<kir::Expr, kir::Expr> interiorRange(const Window &w, size_t d, int64_t extent);

} // namespace mlcc::ops
