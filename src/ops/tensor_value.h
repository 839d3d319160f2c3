// TensorValue: a tensor known on the host, for reference semantics: the interpreter,
// constant folding at import (shape arithmetic included) and test oracles. Values are
// doubles, so int64 shape arithmetic below 2^53 is exact and float32 data converts
// without loss; `dtype` keeps integer semantics (division, casts) where they differ.
//
// Broadcasting follows numpy (and ONNX): shapes are aligned at their last dimension and
// a dimension of 1 stretches to the other's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/shape.h"

namespace tlm {

enum class DType : uint8_t { F32, I64, Bool };
const std::string& dtype_name(DType dtype);

struct TensorValue {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<double> data;

  static TensorValue filled(DType dtype, const Shape& shape, double value);
  int64_t size() const { return int64_t(data.size()); }
};

std::string shape_text(const Shape& shape);

// The numpy broadcast of two shapes; throws tlm::Error when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Row-major strides of `shape` seen as `out` (0 where it broadcasts), aligned at the end.
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out);
// Calls f(out_index, index_in_a, index_in_b) for every element of the broadcast of a, b.
template <class F>
void for_each_broadcast(const Shape& a, const Shape& b, const Shape& out, F f) {
  std::vector<int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  std::vector<int64_t> index(out.size(), 0);
  int64_t ia = 0, ib = 0, n = element_count(out);
  for (int64_t o = 0; o < n; ++o) {
    f(o, ia, ib);
    for (size_t d = out.size(); d-- > 0;) {
      ia += sa[d], ib += sb[d];
      if (++index[d] < out[d]) break;
      ia -= sa[d] * out[d], ib -= sb[d] * out[d];
      index[d] = 0;
    }
  }
}

// Channel blocks: an [N, C, H, W] tensor held as [N, C/b, H, W, b] (b channels innermost,
// contiguous), the activation layout convolution chains keep (NCHWc). The shape
// functions leave other ranks alone; the value functions convert element order.
Shape channel_blocked_shape(const Shape& nchw, int64_t block);
Shape channel_plain_shape(const Shape& blocked);
TensorValue to_channel_blocks(const TensorValue& nchw, int64_t block);
TensorValue from_channel_blocks(const TensorValue& blocked);

// A negative axis counts from the end; throws tlm::Error out of [-rank, rank).
int64_t normalize_axis(int64_t axis, size_t rank);

}  // namespace tlm
