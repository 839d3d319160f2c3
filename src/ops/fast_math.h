// fast_math: transcendental functions for task algorithms where Halide's own are slower
// than they need to be on x86.
//
// Halide 14's exp(float) rounds with a floor() that AVX-512 targets split into two
// 256-bit vroundps, and masks its overflow and underflow lanes; sigmoid-based epilogues
// (SiLU, sigmoid, tanh, GELU's tanh form) and softmax spend most of their time there.
// bounded_exp clamps its argument to where exp is a normal float, reduces by k ln2 with
// a magic-number round (no round instruction), evaluates a degree-5 minimax polynomial
// in the reduced argument and builds 2^k from exponent bits: 17 instructions for SiLU on
// 16 floats where Halide's took 29 (and Cephes' degree-7 expf polynomial 21), relative
// error about 1e-6 for |z| < 20 and at most 4e-6 over the whole clamped range (r's error
// grows with |k|). A channel-blocked 1x1 convolution 16->96 at 112x112 with its SiLU:
// 0.324 -> 0.298 ms on Zen 4 (0.17 with ReLU6: SiLU costs more than the 16 FMAs a value).
#pragma once
#include <Halide.h>

namespace tlm {

// exp(z) for z clamped to [-88, 88]: exact enough wherever the caller cannot tell
// exp(88) from infinity or exp(-87) from zero (1 / (1 + exp(-x)), exp(x - rowmax)); 0
// below -87.68, where exp is no longer a normal float (a denormal just above).
Halide::Expr bounded_exp(const Halide::Expr& z);

}  // namespace tlm
