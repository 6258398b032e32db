//===- KernelPlan.h - How a node's kernel is laid out and scheduled --------===//
//
// pack-weights decides, from the target description (compiler/target/
// TargetDesc.h) and the node's shapes, how the kernel of a contraction or
// convolution runs: its register tile, which input holds the packed
// weights, Winograd or direct, int8 dot products in quads, fixed-point
// requantization, one output per GPU thread. It writes that here, typed;
// the op's lowering reads it. An empty plan is the op's own loop nest.
// Plans are not ONNX: they print after a node's attributes as plan{...}.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mlcc::ir {

struct KernelPlan {
  /// A contraction's register tile over packed weights (see
  /// ops::lowerTiledContraction and kir::ContractionTile).
  struct Tile {
    int64_t Lanes = 1, Panel = 1, Rows = 1;
    int64_t ReduceBlock = 0, RowBlock = 0; ///< cache blocking; 0: none
    bool operator==(const Tile &) const = default;
  };
  std::optional<Tile> Register;
  /// The input that holds the packed weights (float tile or Winograd); -1: none.
  int64_t PackedInput = -1;
  /// A convolution computed as a product over the packed image's pixel
  /// columns (packed input image).
  bool PixelColumns = false;
  /// A 3x3 convolution in the Winograd domain: output tile, rows of tiles
  /// per block and the transformed image's pitch.
  struct Winograd {
    int64_t Tile = 0, Rows = 0, Pitch = 0;
    bool operator==(const Winograd &) const = default;
  };
  std::optional<Winograd> Wino;
  /// int8 products as dot products of byte quads on vectors of Dot4Lanes
  /// int32 (x86 VNNI), the packed quads in input Dot4Input; 0: none.
  int64_t Dot4Lanes = 0;
  int64_t Dot4Input = -1;
  /// A depthwise int8 convolution with its taps in quads.
  bool Dot4Taps = false;
  /// The input holding the per-channel requantization in fixed point
  /// (multipliers and shifts); -1: requantized in float.
  int64_t FixedRequantInput = -1;
  /// One output per iteration (the form a GPU runs one thread per output of).
  bool PerOutput = false;

  bool empty() const { return *this == KernelPlan{}; }
  bool operator==(const KernelPlan &) const = default;
  /// "plan{tile=8x16 lanes=16, packed=3}" ("" when empty).
  std::string str() const;
};

} // namespace mlcc::ir
