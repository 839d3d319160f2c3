// Shape: a tensor's dimensions, row-major, outermost first.
#pragma once
#include <cstdint>
#include <vector>

namespace tlm {

using Shape = std::vector<int64_t>;

inline int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

}  // namespace tlm
