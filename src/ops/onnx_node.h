// OnnxNode: what an operator family's ONNX translation sees of one ONNX node. The
// importer (graph/onnx_import.cpp) implements it over the protobuf, so translations
// stay free of protobuf and of the graph's internals.
//
// Values are graph tensor ids. `emit` adds a graph node, or, when every input is known
// at import (initializers, Constants, anything folded from them, shapes), evaluates the
// operator's reference semantics at once and returns the result as a known value: shape
// subgraphs of any form fold away as they are read.
#pragma once
#include <string>
#include <vector>

#include "ops/registry.h"

namespace tlm {

class OnnxNode {
 public:
  virtual ~OnnxNode() = default;

  virtual const std::string& op_type() const = 0;
  virtual int64_t opset() const = 0;
  virtual int input_count() const = 0;
  virtual bool has_input(int k) const = 0;                // present and not the empty name
  virtual int input(int k) const = 0;                     // the value of input k (fails if absent)
  virtual const TensorValue* known(int value) const = 0;  // null unless known at import
  virtual Shape shape(int value) const = 0;
  virtual DType dtype(int value) const = 0;

  virtual bool has_attr(const std::string& name) const = 0;
  virtual int64_t int_attr(const std::string& name, int64_t fallback) const = 0;
  virtual double float_attr(const std::string& name, double fallback) const = 0;
  virtual std::vector<int64_t> ints_attr(const std::string& name) const = 0;
  virtual std::vector<double> floats_attr(const std::string& name) const = 0;
  virtual std::string string_attr(const std::string& name, const std::string& fallback) const = 0;
  virtual TensorValue tensor_attr(const std::string& name) const = 0;

  virtual int emit(OpKind op, const std::vector<int>& inputs, IntAttrs attrs = {},
                   RealAttrs reals = {}) = 0;
  virtual int constant(TensorValue value) = 0;
  virtual bool has_output(int k) const = 0;  // present and named
  virtual void set_output(int k, int value) = 0;
  // Throws tlm::Error naming the node, its op type and `what` is missing or wrong.
  [[noreturn]] virtual void fail(const std::string& what) const = 0;

  // Helpers over the above.
  const TensorValue& known_input(int k) const;  // fails unless input k is known
  bool input_known(int k) const { return has_input(k) && known(input(k)) != nullptr; }
  Shape input_shape(int k) const { return shape(input(k)); }
  std::vector<int64_t> known_ints(int k) const;  // a known input as integers
};

struct OnnxMapping {
  std::string op_type;
  void (*translate)(OnnxNode&);
};

// The type tlm holds an ONNX element type as (float, float16 and double as float32; the
// integers as int64; bool); false for the types it does not read.
bool onnx_element_type(int64_t onnx_type, DType& dtype);

// The translation of an ONNX op type (default domain), or null when none exists.
const OnnxMapping* onnx_mapping(const std::string& op_type);
std::vector<std::string> onnx_op_types();

}  // namespace tlm
