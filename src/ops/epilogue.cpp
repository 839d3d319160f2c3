#include "ops/epilogue.h"

#include "util/error.h"

namespace tlm {
namespace {

Halide::Expr sigmoid(Halide::Expr x) {
  return 1.0f / (1.0f + Halide::exp(-x));
}

Halide::Expr activation(const std::string& name, Halide::Expr x) {
  if (name == "relu") return Halide::max(x, 0.0f);
  if (name == "relu6") return Halide::clamp(x, 0.0f, 6.0f);
  if (name == "sigmoid") return sigmoid(x);
  if (name == "silu") return x * sigmoid(x);
  if (name == "tanh") return 2.0f * sigmoid(2.0f * x) - 1.0f;
  if (name == "gelu") {
    Halide::Expr u = 0.7978845608f * (x + 0.044715f * x * x * x);
    return x * sigmoid(2.0f * u);
  }
  throw Error("unknown epilogue '" + name + "'");
}

}  // namespace

Halide::Expr apply_epilogue(const std::vector<std::string>& epilogue, Halide::Expr value,
                            const std::vector<Halide::Var>& vars, int channel_dim,
                            const EpilogueInputs& make_input) {
  std::vector<Halide::Expr> args(vars.begin(), vars.end());
  int residuals = 0;
  for (const auto& name : epilogue) {
    if (name == "bias") {
      value = value + make_input("bias", true)(vars[channel_dim]);
    } else if (name == "add" || name == "mul") {
      Halide::ImageParam other = make_input("residual" + std::to_string(residuals++), false);
      value = name == "add" ? value + other(args) : value * other(args);
    } else {
      value = activation(name, value);
    }
  }
  return value;
}

}  // namespace tlm
