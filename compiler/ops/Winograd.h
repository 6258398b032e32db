//===- Winograd.h - Minimal-filtering transforms for 3x3 convolutions -----===//
//
// Winograd's minimal filtering algorithm F(m x m, 3 x 3) (as applied to
// convolutional networks by Lavin and Gray, 2015): an m x m tile of a
// stride-1 3x3 convolution's output is computed from the a x a input tile
// d that covers it (a = m + 2) and the 3x3 kernel g of each channel pair as
//
//   Y = A^T [ sum over input channels of (G g G^T) (.) (B^T d B) ] A
//
// where (.) multiplies elementwise: a*a multiplications per input channel
// and output channel instead of 9*m*m. The kernel's transform U = G g G^T
// is folded at compile time (mlcc.WinogradWeights); the sum over input
// channels becomes a*a independent matrix products (one per position of
// the a x a tile), which run on the register-tiled contraction generator;
// the transforms of the input and the output are sums with small constant
// coefficients that vectorize along a row of tiles.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Builder.h"

#include <vector>

namespace mlcc::ops {

struct WinogradTransform {
  int64_t M = 0;     ///< output tile side
  int64_t Alpha = 0; ///< input tile side, M + 2
  std::vector<std::vector<double>> BT; ///< Alpha x Alpha
  std::vector<std::vector<double>> G;  ///< Alpha x 3
  std::vector<std::vector<double>> AT; ///< M x Alpha
};

/// The transform for output tiles of `m` x `m`, or nullptr. Only F(2x2,
/// 3x3): F(4x4, 3x3) (2.25 instead of 4 products per output) was no faster
/// on resnet18's first stage (its transforms cost more) and its rounding
/// errors are about 4x larger.
const WinogradTransform *winogradTransform(int64_t m);

/// sum_i coef[i] * v[i], skipping zero coefficients and multiplying by
/// none for +-1 (in v's type).
kir::Expr linearCombination(const std::vector<double> &coef, const std::vector<kir::Expr> &v);

/// The 2-D transform T x T^T of the square tile x (n x n Exprs) by the
/// matrix T (rows x n): result[a][b] = sum_i sum_j T[a][i] T[b][j] x[i][j],
/// computed by rows then columns.
std::vector<std::vector<kir::Expr>> transform2d(const std::vector<std::vector<double>> &T,
                                                const std::vector<std::vector<kir::Expr>> &x);

} // namespace mlcc::ops
