// Patterns: rewrites that find a known operator however a model's exporter spelled it.
//
//   unary functions: any connected group of elementwise operators whose only varying
//       input is one tensor x (the rest scalar constants) computes some f(x); when f is,
//       at a set of probe points, one of the registry's unary operators (SiLU as
//       x * sigmoid(x), HardSwish as x * HardSigmoid(x), GELU in its erf and tanh forms
//       written any of the usual ways, ...), the group becomes that one operator. The
//       check is numerical, so it does not depend on the order or form of the operations.
//   layer norm: (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), over the last axis,
//       then optionally times a gain and plus a shift along it -> layernorm(x, g, b).
//   rms norm: x / sqrt(mean(x^2) + eps) (or x * that reciprocal), optionally times a gain
//       -> rmsnorm(x, g).
// Each returns a new graph with its weights; tests check the rewritten graph computes
// what the original does.
#pragma once
#include "graph/rewrites.h"

namespace tlm {

WeightedGraph rewrite_unary_functions(const Graph& graph, const Weights& weights);
WeightedGraph rewrite_norms(const Graph& graph, const Weights& weights);

}  // namespace tlm
