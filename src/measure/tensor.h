// Tensor: a row-major fp32 array with its shape; the inputs and outputs of a task. Its data
// starts on a cache line, as in a compiled model (runtime.h), so a kernel timed alone reads
// and writes memory aligned as it will in the model.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/task_shape.h"
#include "util/aligned.h"

namespace tlm {

struct Tensor {
  std::vector<int64_t> shape;  // row-major, outermost first
  AlignedFloats data;          // on a cache line, as a compiled model's buffers are

  static Tensor zeros(const std::vector<int64_t>& shape);
};

// Uniform in [-1, 1) from a fixed seed, one tensor per task input.
std::vector<Tensor> random_inputs(const TaskShape& task, uint64_t seed);

}  // namespace tlm
