// Tensor: a row-major fp32 array with its shape; the inputs and outputs of a task.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/task_shape.h"

namespace tlm {

struct Tensor {
  std::vector<int64_t> shape;  // row-major, outermost first
  std::vector<float> data;

  static Tensor zeros(const std::vector<int64_t>& shape);
};

// Uniform in [-1, 1) from a fixed seed, one tensor per task input.
std::vector<Tensor> random_inputs(const TaskShape& task, uint64_t seed);

}  // namespace tlm
