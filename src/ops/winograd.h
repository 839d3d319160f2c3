// Winograd F(4x4, 3x3): a 3x3 convolution (stride 1, padding 1) as 36 matrix products
// (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
//
// The padded input is cut into 6x6 patches d that overlap by 2, one per 4x4 tile of
// outputs; each becomes V = B^T d B, and each 3x3 filter g becomes U = G g G^T (once, at
// compile time). Point (e, n) of the 6x6 transform domain is then a matrix product over
// input channels, M[e][n] = U[e][n] x V[e][n], and each output tile is A^T M A: 36
// multiplications per tile and channel pair instead of the direct convolution's 144.
//
// In a graph (graph/rewrites.h) the convolution becomes three nodes: winograd_input(x)
// [36, C, T], a batched matmul with the constant U [36, K, C] giving [36, K, T], and
// winograd_output(M[, bias]) [N, K, H, W], where T = N * ceil(H/4) * ceil(W/4) tiles in
// (image, tile row, tile column) order. The transforms are tasks whose schedule is
// written with their algorithm (their 36 or 16 values per tile unrolled so the zero
// coefficients fold away, vectors over tiles); the product is an ordinary batch_matmul
// task that the model schedules.
#pragma once
#include <cstdint>
#include <vector>

namespace tlm::winograd {

constexpr int64_t kTile = 4;     // outputs per tile side
constexpr int64_t kPatch = 6;    // inputs per patch side
constexpr int64_t kPoints = 36;  // kPatch * kPatch

extern const double kBt[6][6];  // B^T: input patches
extern const double kG[6][3];   // G: filters
extern const double kAt[4][6];  // A^T: output tiles

// Tiles along an extent: ceil(extent / 4).
inline int64_t tiles(int64_t extent) {
  return (extent + kTile - 1) / kTile;
}

// U [36, K, C] from OIHW weights [K, C, 3, 3].
std::vector<float> filter_transform(const std::vector<float>& weights, int64_t k, int64_t c);

}  // namespace tlm::winograd
