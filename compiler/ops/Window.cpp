#include "compiler/ops/Window.h"

namespace mlcc::ops {

using namespace kir;

Window computeWindow(const ir::Node &n, const Shape &in,
                     const std::vector<int64_t> &kernel, bool ceilMode) {
  size_t r = in.size();
  Window w;
  w.Kernel = kernel;
  if (w.Kernel.size() != r)
    n.error() << "kernel has " << w.Kernel.size() << " spatial dimensions, the input " << r;
  w.Strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
  w.Dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  if (w.Strides.size() != r || w.Dilations.size() != r)
    n.error() << "strides/dilations need " << r << " entries";
  for (size_t i = 0; i < r; ++i)
    if (w.Strides[i] < 1 || w.Dilations[i] < 1 || w.Kernel[i] < 1)
      n.error() << "kernel, strides and dilations must be positive";
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (pads.size() != 2 * r)
    n.error() << "pads needs " << 2 * r << " entries, has " << pads.size();
  w.PadBegin.assign(pads.begin(), pads.begin() + (long)r);
  w.PadEnd.assign(pads.begin() + (long)r, pads.end());
  w.Out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t dk = (w.Kernel[i] - 1) * w.Dilations[i] + 1;
    int64_t s = w.Strides[i];
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t out = (in[i] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + dk - in[i]);
      int64_t small = total / 2, big = total - small;
      w.PadBegin[i] = autoPad == "SAME_UPPER" ? small : big;
      w.PadEnd[i] = autoPad == "SAME_UPPER" ? big : small;
      w.Out[i] = out;
      continue;
    }
    bool useCeil = ceilMode;
    if (autoPad == "VALID") {
      // ceil((in - dk + 1) / s) == floor((in - dk) / s) + 1: ceil_mode has
      // no effect without padding.
      w.PadBegin[i] = w.PadEnd[i] = 0;
      useCeil = false;
    } else if (autoPad != "NOTSET") {
      n.error() << "unknown auto_pad '" << autoPad << "'";
    }
    int64_t span = in[i] + w.PadBegin[i] + w.PadEnd[i] - dk;
    if (span < 0)
      n.error() << "the kernel (" << dk << ") is larger than the padded input ("
                << in[i] + w.PadBegin[i] + w.PadEnd[i] << ")";
    int64_t out = useCeil ? (span + s - 1) / s + 1 : span / s + 1;
    // A window must start inside the input or its leading padding.
    if (useCeil && (out - 1) * s >= in[i] + w.PadBegin[i])
      --out;
    w.Out[i] = out;
  }
  return w;
}

std::pair<Expr, Expr> affineRange(const Expr &base, int64_t step, int64_t extent,
                                  int64_t limit) {
  // base + t*step >= 0      <=>  t >= ceil(-base / step)
  // base + t*step < extent  <=>  t <  ceil((extent - base) / step)
  Expr lo = indexConst(0) - base, hi = indexConst(extent) - base;
  if (step != 1) {
    Expr s = indexConst(step);
    lo = floorDiv(lo + (step - 1), s);
    hi = floorDiv(hi + (step - 1), s);
  }
  return {max(lo, indexConst(0)), min(hi, indexConst(limit))};
}

std::pair<Expr, Expr> interiorRange(const Window &w, size_t d, int64_t extent) {
  auto [lo, hi] = affineRange(indexConst(-w.PadBegin[d]), w.Strides[d],
                              extent - (w.Kernel[d] - 1) * w.Dilations[d], w.Out[d]);
  lo = min(lo, indexConst(w.Out[d]));
  return {lo, max(hi, lo)};
}

std::pair<Expr, Expr> validKernelRange(const Expr &o, int64_t stride,
                                       int64_t dilation, int64_t padBegin,
                                       int64_t kernel, int64_t extent) {
  // Input position o*stride - padBegin + k*dilation.
  return affineRange(o * stride - padBegin, dilation, extent, kernel);
}

} // namespace mlcc::ops
