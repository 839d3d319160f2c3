#include "ops/fast_math.h"

namespace tlm {

Halide::Expr bounded_exp(const Halide::Expr& z_in) {
  using Halide::Expr;
  // Below -87.68, k = -127 and 2^k's bits are all zero: exp is exactly 0 there, as a
  // masked softmax entry's should be (clamping at -87 gave 1.65e-38, whose products are
  // denormal: runtime/float_mode.h).
  Expr z = Halide::clamp(z_in, -88.0f, 88.0f);
  // k = round(z / ln2): adding 1.5 * 2^23 leaves k in the low mantissa bits
  Expr shifted = z * 1.44269504088896341f + 12582912.0f;
  Expr k = Halide::reinterpret(Halide::Int(32), shifted) - 0x4B400000;
  // r = z - k ln2 in [-ln2/2, ln2/2]; one constant (Halide folds a two-part ln2 back
  // into one), so r's error is at most |k| * 2e-8
  Expr r = z - Halide::cast<float>(k) * 0.693147180559945309f;
  // exp(r) by the degree-5 polynomial of least maximum relative error on [-ln2/2, ln2/2]
  // (bench/exp_minimax.py): 2e-7 evaluated in float, in five FMAs
  Expr p = 8.297654800e-3f * r + 4.191540927e-2f;
  p = p * r + 1.666757464e-1f;
  p = p * r + 4.999889433e-1f;
  p = p * r + 9.999997020e-1f;
  p = p * r + 1.000000119f;
  Expr two_to_k = Halide::reinterpret(Halide::Float(32), Halide::cast<uint32_t>(k + 127) << 23);
  return p * two_to_k;
}

}  // namespace tlm
