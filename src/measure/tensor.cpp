#include "measure/tensor.h"

#include <cmath>
#include <random>

#include "measure/verify.h"

namespace tlm {

Tensor Tensor::zeros(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return {shape, AlignedFloats(static_cast<size_t>(n), 0.0f)};
}

std::vector<Tensor> random_inputs(const TaskShape& task, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<Tensor> inputs;
  for (const auto& in : task.inputs) {
    Tensor t = Tensor::zeros(in.shape);
    std::uniform_int_distribution<int64_t> index(-in.index_range, in.index_range - 1);
    for (float& v : t.data) v = in.index_range ? float(index(rng)) : uniform(rng);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

double tolerance_for(int64_t reduction_length) {
  return 2e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(reduction_length, 16)));
}

Verdict verify(const Tensor& output, const Tensor& reference, int64_t reduction_length) {
  Verdict v;
  if (output.shape != reference.shape || output.data.size() != reference.data.size()) {
    v.message = "output shape differs from the reference";
    return v;
  }
  double scale = 1e-30;
  for (float r : reference.data) scale = std::max(scale, double(std::fabs(r)));
  for (size_t i = 0; i < output.data.size(); ++i) {
    if (!std::isfinite(output.data[i])) {
      v.message = "non-finite value at element " + std::to_string(i);
      return v;
    }
    v.max_error =
        std::max(v.max_error, std::fabs(double(output.data[i]) - reference.data[i]) / scale);
  }
  v.ok = v.max_error <= tolerance_for(reduction_length);
  if (!v.ok) v.message = "max relative error " + std::to_string(v.max_error) + " above tolerance";
  return v;
}

}  // namespace tlm
