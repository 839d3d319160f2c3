// Epilogue: the elementwise chain fused after a task's anchor value (bias, activations,
// residual add/mul). Activations are written with exp only (Halide's tanh is a scalar
// libm call): gelu is x * sigmoid(2u), exactly the tanh form.
#pragma once
#include <Halide.h>

#include <functional>
#include <string>
#include <vector>

namespace tlm {

// Creates an extra input of the task: a per-channel vector or a tensor of the output's shape.
using EpilogueInputs = std::function<Halide::ImageParam(const std::string& name, bool per_channel)>;

Halide::Expr apply_epilogue(const std::vector<std::string>& epilogue, Halide::Expr value,
                            const std::vector<Halide::Var>& vars, int channel_dim,
                            const EpilogueInputs& make_input);

}  // namespace tlm
