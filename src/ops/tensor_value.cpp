#include "ops/tensor_value.h"

#include <algorithm>

#include "util/error.h"
#include "util/strings.h"

namespace tlm {

const std::string& dtype_name(DType dtype) {
  static const std::vector<std::string> names = {"float32", "int64", "bool"};
  return names.at(static_cast<size_t>(dtype));
}

TensorValue TensorValue::filled(DType dtype, const Shape& shape, double value) {
  return {dtype, shape, std::vector<double>(size_t(element_count(shape)), value)};
}

std::string shape_text(const Shape& shape) {
  std::vector<std::string> parts;
  for (int64_t e : shape) parts.push_back(std::to_string(e));
  return "[" + join(parts, ",") + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error("shapes " + shape_text(a) + " and " + shape_text(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    size_t d = shape.size() - 1 - k, o = out.size() - 1 - k;
    strides[o] = shape[d] == 1 ? 0 : stride;
    stride *= shape[d];
  }
  return strides;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

Shape channel_blocked_shape(const Shape& nchw, int64_t block) {
  if (nchw.size() != 4 || block <= 1) return nchw;
  return {nchw[0], nchw[1] / block, nchw[2], nchw[3], block};
}

Shape channel_plain_shape(const Shape& blocked) {
  if (blocked.size() != 5) return blocked;
  return {blocked[0], blocked[1] * blocked[4], blocked[2], blocked[3]};
}

namespace {

// Calls f(plain_index, blocked_index) for every element of an [N, C, H, W] tensor.
template <class F>
void for_each_channel_block(const Shape& nchw, int64_t block, F f) {
  int64_t pixels = nchw[2] * nchw[3], plain = 0;
  for (int64_t n = 0; n < nchw[0]; ++n)
    for (int64_t c = 0; c < nchw[1]; ++c)
      for (int64_t p = 0; p < pixels; ++p, ++plain)
        f(plain, ((n * (nchw[1] / block) + c / block) * pixels + p) * block + c % block);
}

}  // namespace

TensorValue to_channel_blocks(const TensorValue& nchw, int64_t block) {
  TensorValue out{nchw.dtype, channel_blocked_shape(nchw.shape, block), nchw.data};
  for_each_channel_block(nchw.shape, block, [&](int64_t plain, int64_t blocked) {
    out.data[blocked] = nchw.data[plain];
  });
  return out;
}

TensorValue from_channel_blocks(const TensorValue& blocked) {
  TensorValue out{blocked.dtype, channel_plain_shape(blocked.shape), blocked.data};
  for_each_channel_block(out.shape, blocked.shape[4],
                         [&](int64_t plain, int64_t b) { out.data[plain] = blocked.data[b]; });
  return out;
}

}  // namespace tlm
