// verify: compares a candidate's output with the reference pipeline's.
// The error is measured relative to the largest reference magnitude; the tolerance grows
// with the square root of the reduction length (fp32 rounding of reassociated sums).
// Any NaN or Inf in the output fails.
#pragma once
#include <string>

#include "measure/tensor.h"

namespace tlm {

struct Verdict {
  bool ok = false;
  double max_error = 0;  // max |out - ref| / max |ref|
  std::string message;   // why it failed, empty when ok
};

double tolerance_for(int64_t reduction_length);
Verdict verify(const Tensor& output, const Tensor& reference, int64_t reduction_length);

}  // namespace tlm
