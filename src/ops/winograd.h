// Winograd F(m x m, 3x3): a 3x3 convolution (stride 1, padding 1) as (m+2)^2 matrix
// products (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016),
// for output tiles of m = 4 (36 products) or m = 2 (16).
//
// The padded input is cut into (m+2)x(m+2) patches d that overlap by 2, one per mxm tile
// of outputs; each becomes V = B^T d B, and each 3x3 filter g becomes U = G g G^T (once,
// at compile time). Point (e, n) of the transform domain is then a matrix product over
// input channels, M[e][n] = U[e][n] x V[e][n], and each output tile is A^T M A: for m = 4,
// 36 multiplications per tile and channel pair instead of the direct convolution's 144
// (m = 2: 16 instead of 36, with smaller transformed filters, for small images).
//
// In a graph (graph/rewrites.h) the convolution becomes three nodes: winograd_input(x)
// [P, C, T], a batched matmul with the constant U [P, K, C] giving [P, K, T], and
// winograd_output(M[, bias]) [N, K, H, W], where P = (m+2)^2 and T = N * ceil(H/m) *
// ceil(W/m) tiles in (image, tile row, tile column) order. The transforms are tasks whose
// schedule is written with their algorithm (their values per tile unrolled so the zero
// coefficients fold away, vectors over tiles); the product is an ordinary batch_matmul
// task that the model schedules.
//
// Channel-blocked activations (graph/activation_layout.h, attribute block = b > 1) keep
// channels innermost on the way through, as oneDNN's Winograd does: winograd_input reads
// x [N, C/b, H, W, b] and writes V [P, T, C]; the product is V x U with U [P, C, K],
// giving [P, T, K]; winograd_output writes [N, K/b, H, W, b]. Both transforms then load
// and store whole vectors of b channels, and the product vectorizes along K.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tlm::winograd {

struct Transform {
  int64_t tile = 0;               // m: outputs per tile side
  int64_t patch = 0;              // m + 2: inputs per patch side
  std::vector<double> bt, g, at;  // B^T [patch][patch], G [patch][3], A^T [tile][patch]

  int64_t points() const { return patch * patch; }
  const double* bt_row(int64_t r) const { return &bt[std::size_t(r * patch)]; }
  const double* at_row(int64_t r) const { return &at[std::size_t(r * patch)]; }
};

// F(4x4, 3x3) or F(2x2, 3x3) by its tile side; throws tlm::Error for another.
const Transform& transform(int64_t tile);

// Tiles along an extent: ceil(extent / tile).
inline int64_t tiles(int64_t extent, int64_t tile) {
  return (extent + tile - 1) / tile;
}

// U [P, K, C] from OIHW weights [K, C, 3, 3]; `channels_last`: U [P, C, K] (blocked
// activations).
std::vector<float> filter_transform(const std::vector<float>& weights, int64_t k, int64_t c,
                                    int64_t tile, bool channels_last = false);

}  // namespace tlm::winograd
