// The shape family: ONNX operators that only describe shapes and constants. With static
// shapes they are all known at import, so their translations compute the value and no
// graph operator exists for them.
//   ONNX: Constant, Shape, Size, ConstantOfShape, Range, Cast, CastLike
#include <algorithm>
#include <cmath>

#include "ops/family.h"
#include "util/error.h"

namespace tlm {
namespace {

TensorValue ints_value(const std::vector<int64_t>& values) {
  TensorValue v{DType::I64, {int64_t(values.size())}, {}};
  for (int64_t x : values) v.data.push_back(double(x));
  return v;
}

void onnx_constant(OnnxNode& node) {
  TensorValue v;
  if (node.has_attr("value"))
    v = node.tensor_attr("value");
  else if (node.has_attr("value_float"))
    v = {DType::F32, {}, {node.float_attr("value_float", 0)}};
  else if (node.has_attr("value_int"))
    v = {DType::I64, {}, {double(node.int_attr("value_int", 0))}};
  else if (node.has_attr("value_ints"))
    v = ints_value(node.ints_attr("value_ints"));
  else if (node.has_attr("value_floats")) {
    auto f = node.floats_attr("value_floats");
    v = {DType::F32, {int64_t(f.size())}, f};
  } else {
    node.fail("a Constant without a supported value (sparse or string)");
  }
  node.set_output(0, node.constant(v));
}

void onnx_shape(OnnxNode& node) {
  Shape x = node.input_shape(0);
  int64_t rank = int64_t(x.size());
  int64_t start = node.int_attr("start", 0), end = node.int_attr("end", rank);
  start = std::clamp(start < 0 ? start + rank : start, int64_t(0), rank);
  end = std::clamp(end < 0 ? end + rank : end, start, rank);
  node.set_output(
      0, node.constant(ints_value(std::vector<int64_t>(x.begin() + start, x.begin() + end))));
}

void onnx_size(OnnxNode& node) {
  node.set_output(0, node.constant({DType::I64, {}, {double(element_count(node.input_shape(0)))}}));
}

void onnx_constant_of_shape(OnnxNode& node) {
  std::vector<int64_t> shape = node.known_ints(0);
  for (int64_t d : shape)
    if (d < 0) node.fail("negative dimension");
  TensorValue fill =
      node.has_attr("value") ? node.tensor_attr("value") : TensorValue{DType::F32, {1}, {0.0}};
  if (fill.size() != 1) node.fail("value must hold one element");
  node.set_output(0, node.constant(TensorValue::filled(fill.dtype, shape, fill.data[0])));
}

void onnx_range(OnnxNode& node) {
  const TensorValue &start = node.known_input(0), &limit = node.known_input(1),
                    &delta = node.known_input(2);
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) node.fail("scalars expected");
  double s = start.data[0], l = limit.data[0], d = delta.data[0];
  if (d == 0) node.fail("delta of 0");
  int64_t n = std::max<int64_t>(0, int64_t(std::ceil((l - s) / d)));
  if (n > (int64_t(1) << 31)) node.fail("range too long");
  TensorValue v{start.dtype, {n}, {}};
  for (int64_t i = 0; i < n; ++i) v.data.push_back(s + double(i) * d);
  node.set_output(0, node.constant(v));
}

// ONNX element types tlm reads: float, double and float16 as float32; the integers and
// bool as exact values.
bool onnx_dtype(int64_t onnx_type, DType& dtype) {
  switch (onnx_type) {
    case 1:
    case 10:
    case 11:
      dtype = DType::F32;
      return true;  // float, f16, double
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 12:
    case 13:
      dtype = DType::I64;
      return true;
    case 9:
      dtype = DType::Bool;
      return true;
    default:
      return false;
  }
}

// A cast of a known value converts it; of an activation it is free between float32 and
// integers, which the runtime holds as float32 (exact below 2^24), and refused otherwise.
void cast_to(OnnxNode& node, DType to) {
  int x = node.input(0);
  if (const TensorValue* v = node.known(x)) {
    TensorValue out = *v;
    out.dtype = to;
    for (double& e : out.data) {
      if (to == DType::I64) e = std::trunc(e);
      if (to == DType::Bool) e = e != 0 ? 1.0 : 0.0;
      if (to == DType::F32) e = double(float(e));
    }
    return node.set_output(0, node.constant(out));
  }
  DType from = node.dtype(x);
  if (from == to || (to == DType::F32 && from != DType::F32)) return node.set_output(0, x);
  node.fail("a cast of a float activation to " + dtype_name(to) + " (not supported)");
}

void onnx_cast(OnnxNode& node) {
  DType to = DType::F32;
  int64_t type = node.int_attr("to", 1);
  if (!onnx_dtype(type, to))
    node.fail("a cast to element type " + std::to_string(type) + " (not supported)");
  cast_to(node, to);
}

void onnx_cast_like(OnnxNode& node) {
  cast_to(node, node.dtype(node.input(1)));
}

}  // namespace

bool onnx_element_type(int64_t onnx_type, DType& dtype) {
  return onnx_dtype(onnx_type, dtype);
}

void register_shape_family(OpRegistry& r) {
  r.onnx.push_back({"Constant", onnx_constant});
  r.onnx.push_back({"Shape", onnx_shape});
  r.onnx.push_back({"Size", onnx_size});
  r.onnx.push_back({"ConstantOfShape", onnx_constant_of_shape});
  r.onnx.push_back({"Range", onnx_range});
  r.onnx.push_back({"Cast", onnx_cast});
  r.onnx.push_back({"CastLike", onnx_cast_like});
}

}  // namespace tlm
