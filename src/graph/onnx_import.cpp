#include "graph/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ops/onnx_node.h"
#include "util/error.h"

namespace tlm {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 31;

int64_t checked_count(const Shape& shape, const std::string& what) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements) throw Error("onnx: " + what + " has a bad dimension");
    count *= d;
    if (count > kMaxElements) throw Error("onnx: " + what + " is too large");
  }
  return count;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int shift = 0;
      while (!(mantissa & 0x400)) mantissa <<= 1, ++shift;
      bits = sign | uint32_t(113 - shift) << 23 | (mantissa & 0x3ff) << 13;
    }
  } else {
    bits = sign | (exponent + 112) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
std::vector<double> raw_values(const std::string& raw, int64_t count, const std::string& what) {
  if (int64_t(raw.size()) != count * int64_t(sizeof(T)))
    throw Error("onnx: " + what + ": data size does not match its shape");
  std::vector<double> values(size_t(count), 0.0);
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, uint16_t>)
      values[size_t(i)] = half_to_float(v);
    else
      values[size_t(i)] = double(v);
  }
  return values;
}

template <typename Field>
std::vector<double> field_values(const Field& field, int64_t count, const std::string& what) {
  if (int64_t(field.size()) != count)
    throw Error("onnx: " + what + ": " + std::to_string(field.size()) + " values for " +
                std::to_string(count) + " elements");
  return std::vector<double>(field.begin(), field.end());
}

// The bytes of a tensor kept in an external file, confined to the model's folder.
std::string external_bytes(const onnx::TensorProto& t, const std::string& folder,
                           const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = std::atoll(entry.value().c_str());
    if (entry.key() == "length") length = std::atoll(entry.value().c_str());
  }
  namespace fs = std::filesystem;
  fs::path relative(location);
  bool escapes = location.empty() || relative.is_absolute();
  for (const auto& part : relative) escapes = escapes || part == "..";
  if (escapes || folder.empty())
    throw Error("onnx: " + what + ": external data '" + location +
                "' is not a file inside the model's folder");
  std::ifstream in(fs::path(folder) / relative, std::ios::binary);
  if (!in) throw Error("onnx: " + what + ": cannot read external data '" + location + "'");
  in.seekg(0, std::ios::end);
  int64_t size = int64_t(in.tellg());
  if (offset < 0 || offset > size || (length >= 0 && offset + length > size))
    throw Error("onnx: " + what + ": external data '" + location + "' is shorter than it says");
  if (length < 0) length = size - offset;
  std::string bytes(size_t(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
}

TensorValue read_tensor(const onnx::TensorProto& t, const std::string& folder) {
  std::string what = "tensor '" + t.name() + "'";
  TensorValue v;
  v.shape.assign(t.dims().begin(), t.dims().end());
  int64_t count = checked_count(v.shape, what);
  if (!onnx_element_type(t.data_type(), v.dtype))
    throw Error("onnx: " + what + " has element type " + std::to_string(t.data_type()) +
                " (not supported)");
  bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  bool raw = t.has_raw_data() || external;
  const std::string& bytes = external ? external_bytes(t, folder, what) : t.raw_data();
  using T = onnx::TensorProto;
  switch (t.data_type()) {
    case T::FLOAT:
      v.data =
          raw ? raw_values<float>(bytes, count, what) : field_values(t.float_data(), count, what);
      break;
    case T::DOUBLE:
      v.data =
          raw ? raw_values<double>(bytes, count, what) : field_values(t.double_data(), count, what);
      break;
    case T::FLOAT16: {
      if (raw) {
        v.data = raw_values<uint16_t>(bytes, count, what);
        break;
      }
      v.data = field_values(t.int32_data(), count, what);
      for (double& e : v.data) e = half_to_float(uint16_t(e));
      break;
    }
    case T::INT64:
      v.data =
          raw ? raw_values<int64_t>(bytes, count, what) : field_values(t.int64_data(), count, what);
      break;
    case T::INT32:
      v.data =
          raw ? raw_values<int32_t>(bytes, count, what) : field_values(t.int32_data(), count, what);
      break;
    case T::INT16:
      v.data =
          raw ? raw_values<int16_t>(bytes, count, what) : field_values(t.int32_data(), count, what);
      break;
    case T::INT8:
      v.data =
          raw ? raw_values<int8_t>(bytes, count, what) : field_values(t.int32_data(), count, what);
      break;
    case T::UINT8:
    case T::BOOL:
      v.data =
          raw ? raw_values<uint8_t>(bytes, count, what) : field_values(t.int32_data(), count, what);
      break;
    default:
      throw Error("onnx: " + what + " has element type " + std::to_string(t.data_type()) +
                  " (not supported)");
  }
  return v;
}

// One value of the import: known (an initializer read on first use, a Constant, or
// folded) or an activation of the graph. A known value enters the graph as a constant
// only when a node reads it.
struct ImportValue {
  std::string name;
  Shape shape;
  DType dtype = DType::F32;
  int tensor = -1;                                 // graph tensor, once it is one
  const onnx::TensorProto* initializer = nullptr;  // read lazily
  bool known = false;
  TensorValue value;  // when known and read
};

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const std::string& name, const OnnxOptions& options,
           std::string folder)
      : model_(model), options_(options), folder_(std::move(folder)), graph_(name) {}

  WeightedGraph run();

  // What NodeView needs.
  int64_t opset() const { return opset_; }
  ImportValue& value(int v) { return values_.at(size_t(v)); }
  const TensorValue* known(int v);
  int add_known(TensorValue value, const std::string& name);
  int graph_tensor(int v);  // the value as a graph tensor (a known one becomes a constant)
  int add_node(OpKind op, const std::vector<int>& inputs, IntAttrs attrs, RealAttrs reals,
               const std::string& name);
  int lookup(const std::string& onnx_name, const std::string& node);
  void define(const std::string& onnx_name, int v) { names_[onnx_name] = v; }
  const std::string& folder() const { return folder_; }

 private:
  void check_opset();
  void add_input(const onnx::ValueInfoProto& input);

  const onnx::ModelProto& model_;
  const OnnxOptions& options_;
  std::string folder_;
  Graph graph_;
  Weights weights_;
  int64_t opset_ = 0;
  std::vector<ImportValue> values_;
  std::map<std::string, int> names_;  // ONNX value name -> value
};

// The OnnxNode the families' translations see, over one NodeProto.
class NodeView : public OnnxNode {
 public:
  NodeView(Importer& importer, const onnx::NodeProto& node, std::string name)
      : importer_(importer), node_(node), name_(std::move(name)) {}

  const std::string& op_type() const override { return node_.op_type(); }
  int64_t opset() const override { return importer_.opset(); }
  int input_count() const override { return node_.input_size(); }
  bool has_input(int k) const override { return k < node_.input_size() && !node_.input(k).empty(); }
  int input(int k) const override {
    if (!has_input(k)) fail("input " + std::to_string(k) + " is missing");
    return importer_.lookup(node_.input(k), name_);
  }
  const TensorValue* known(int v) const override { return importer_.known(v); }
  Shape shape(int v) const override { return importer_.value(v).shape; }
  DType dtype(int v) const override { return importer_.value(v).dtype; }

  bool has_attr(const std::string& name) const override { return attribute(name) != nullptr; }
  int64_t int_attr(const std::string& name, int64_t fallback) const override {
    auto* a = attribute(name);
    return a ? a->i() : fallback;
  }
  double float_attr(const std::string& name, double fallback) const override {
    auto* a = attribute(name);
    return a ? a->f() : fallback;
  }
  std::vector<int64_t> ints_attr(const std::string& name) const override {
    auto* a = attribute(name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  std::vector<double> floats_attr(const std::string& name) const override {
    auto* a = attribute(name);
    return a ? std::vector<double>(a->floats().begin(), a->floats().end()) : std::vector<double>{};
  }
  std::string string_attr(const std::string& name, const std::string& fallback) const override {
    auto* a = attribute(name);
    return a ? a->s() : fallback;
  }
  TensorValue tensor_attr(const std::string& name) const override {
    auto* a = attribute(name);
    if (!a) fail("attribute '" + name + "' is missing");
    try {
      return read_tensor(a->t(), importer_.folder());
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  int emit(OpKind op, const std::vector<int>& inputs, IntAttrs attrs, RealAttrs reals) override {
    try {
      return importer_.add_node(op, inputs, std::move(attrs), std::move(reals),
                                name_ + "/" + op_name(op));
    } catch (const Error& e) {
      fail(e.what());
    }
  }
  int constant(TensorValue value) override {
    return importer_.add_known(std::move(value), name_ + "/constant");
  }
  bool has_output(int k) const override {
    return k < node_.output_size() && !node_.output(k).empty();
  }
  void set_output(int k, int v) override {
    if (!has_output(k)) fail("output " + std::to_string(k) + " is missing");
    importer_.define(node_.output(k), v);
  }
  [[noreturn]] void fail(const std::string& what) const override {
    std::string why = what.rfind("onnx: ", 0) == 0 ? what.substr(6) : what;
    throw Error("onnx: node '" + name_ + "' (" + node_.op_type() + "): " + why);
  }

 private:
  const onnx::AttributeProto* attribute(const std::string& name) const {
    for (const auto& a : node_.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }

  Importer& importer_;
  const onnx::NodeProto& node_;
  std::string name_;
};

void Importer::check_opset() {
  for (const auto& op : model_.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = op.version();
  if (opset_ == 0) throw Error("onnx: the model names no opset of the default domain");
  if (opset_ < 11 || opset_ > 18)
    throw Error("onnx: opset " + std::to_string(opset_) + " is not supported (11 to 18)");
}

void Importer::add_input(const onnx::ValueInfoProto& input) {
  const auto& type = input.type().tensor_type();
  ImportValue v;
  v.name = input.name();
  if (!onnx_element_type(type.elem_type(), v.dtype))
    throw Error("onnx: input '" + input.name() + "' has element type " +
                std::to_string(type.elem_type()) + " (not supported)");
  auto fixed = options_.input_shapes.find(input.name());
  int rank = type.shape().dim_size();
  if (fixed != options_.input_shapes.end()) {
    if (int(fixed->second.size()) != rank)
      throw Error("onnx: --input-shape " + input.name() + " has rank " +
                  std::to_string(fixed->second.size()) + ", the model's input has rank " +
                  std::to_string(rank));
    for (int d = 0; d < rank; ++d) {
      const auto& dim = type.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() != fixed->second[size_t(d)])
        throw Error("onnx: --input-shape " + input.name() + " sets dimension " + std::to_string(d) +
                    " to " + std::to_string(fixed->second[size_t(d)]) + ", the model fixes it at " +
                    std::to_string(dim.dim_value()));
    }
    v.shape = fixed->second;
  } else {
    for (int d = 0; d < rank; ++d) {
      const auto& dim = type.shape().dim(d);
      if (!dim.has_dim_value() || dim.dim_value() < 0)
        throw Error("onnx: input '" + input.name() + "' has a dynamic dimension " +
                    std::to_string(d) +
                    (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "") +
                    ": fix its shape with --input-shape " + input.name() + "=DxDx...");
      v.shape.push_back(dim.dim_value());
    }
  }
  checked_count(v.shape, "input '" + input.name() + "'");
  for (int64_t e : v.shape)
    if (e < 1) throw Error("onnx: input '" + input.name() + "' has a zero dimension");
  v.tensor = graph_.input(input.name(), v.shape, v.dtype);
  values_.push_back(v);
  names_[input.name()] = int(values_.size()) - 1;
}

const TensorValue* Importer::known(int v) {
  ImportValue& iv = value(v);
  if (!iv.known) return nullptr;
  if (iv.initializer) {
    iv.value = read_tensor(*iv.initializer, folder_);
    iv.initializer = nullptr;
  }
  return &iv.value;
}

int Importer::add_known(TensorValue value, const std::string& name) {
  ImportValue v;
  v.name = name;
  v.shape = value.shape;
  v.dtype = value.dtype;
  v.known = true;
  v.value = std::move(value);
  values_.push_back(std::move(v));
  return int(values_.size()) - 1;
}

int Importer::graph_tensor(int v) {
  ImportValue& iv = value(v);
  if (iv.tensor >= 0) return iv.tensor;
  const TensorValue& data = *known(v);
  iv.tensor = graph_.constant(iv.name, iv.shape, iv.dtype);
  weights_[iv.tensor] = std::vector<float>(data.data.begin(), data.data.end());
  return iv.tensor;
}

int Importer::add_node(OpKind op, const std::vector<int>& inputs, IntAttrs attrs, RealAttrs reals,
                       const std::string& name) {
  bool all_known = true;
  for (int v : inputs) all_known = all_known && value(v).known;
  if (all_known) {
    OpCall call{op, attrs, reals, {}, {}};
    std::vector<const TensorValue*> in;
    for (int v : inputs) {
      in.push_back(known(v));
      call.inputs.push_back(value(v).shape);
      call.dtypes.push_back(value(v).dtype);
    }
    infer_shape(call);
    TensorValue out = evaluate(call, in);
    checked_count(out.shape, name);
    return add_known(std::move(out), name);
  }
  const OpDef& def = op_def(op);
  std::vector<int> tensors;
  for (int v : inputs) tensors.push_back(graph_tensor(v));
  int t = graph_.add(op, tensors, std::move(attrs), name, std::move(reals));
  if (def.role == OpRole::Anchor && !def.task)
    throw Error(op_name(op) + " of values computed at run time has no task yet");
  if (def.role == OpRole::Anchor) def.task(graph_.call(graph_.nodes().back()));  // or throws
  ImportValue out;
  out.name = name;
  out.shape = graph_.shape(t);
  out.dtype = graph_.tensor(t).dtype;
  out.tensor = t;
  values_.push_back(std::move(out));
  return int(values_.size()) - 1;
}

int Importer::lookup(const std::string& onnx_name, const std::string& node) {
  auto found = names_.find(onnx_name);
  if (found == names_.end())
    throw Error("onnx: node '" + node + "' reads '" + onnx_name +
                "', which no earlier node computes");
  return found->second;
}

WeightedGraph Importer::run() {
  check_opset();
  const onnx::GraphProto& g = model_.graph();
  for (const auto& init : g.initializer()) {
    ImportValue v;
    v.name = init.name();
    v.shape.assign(init.dims().begin(), init.dims().end());
    checked_count(v.shape, "initializer '" + init.name() + "'");
    if (!onnx_element_type(init.data_type(), v.dtype))
      throw Error("onnx: initializer '" + init.name() + "' has element type " +
                  std::to_string(init.data_type()) + " (not supported)");
    v.known = true;
    v.initializer = &init;
    values_.push_back(v);
    names_[init.name()] = int(values_.size()) - 1;
  }
  for (const auto& input : g.input())
    if (!names_.count(input.name())) add_input(input);
  if (graph_.inputs().empty()) throw Error("onnx: the model has no input");
  for (const auto& node : g.node()) {
    std::string name =
        node.name().empty() ? (node.output_size() ? node.output(0) : "?") : node.name();
    NodeView view(*this, node, name);
    if (node.output_size() < 1) view.fail("has no output");
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      view.fail("operators of domain '" + node.domain() + "' are not supported");
    const OnnxMapping* mapping = onnx_mapping(node.op_type());
    if (!mapping) view.fail("operator not supported");
    try {
      mapping->translate(view);
    } catch (const Error& e) {
      std::string what = e.what();
      if (what.rfind("onnx: node '", 0) == 0) throw;
      view.fail(what);
    }
  }
  for (const auto& output : g.output()) {
    auto found = names_.find(output.name());
    if (found == names_.end()) throw Error("onnx: output '" + output.name() + "' is not computed");
    if (value(found->second).known)
      throw Error("onnx: output '" + output.name() + "' does not depend on any input");
    graph_.mark_output(graph_tensor(found->second), output.name());
  }
  if (graph_.outputs().empty()) throw Error("onnx: the model has no output");
  if (graph_.nodes().empty())
    throw Error("onnx: the model computes nothing (no node reads an input)");
  return {std::move(graph_), std::move(weights_)};
}

}  // namespace

WeightedGraph import_onnx_bytes(const std::string& bytes, const std::string& name,
                                const OnnxOptions& options, const std::string& folder) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw Error("onnx: '" + name + "' is not a valid ONNX model (truncated or not ONNX)");
  if (!model.has_graph()) throw Error("onnx: '" + name + "' has no graph (truncated or not ONNX)");
  return Importer(model, name, options, folder).run();
}

WeightedGraph import_onnx(const std::string& path, const OnnxOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("onnx: cannot read '" + path + "'");
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string name = path.substr(path.find_last_of('/') + 1);
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (folder.empty()) folder = ".";
  return import_onnx_bytes(bytes.str(), name.substr(0, name.size() - 5), options, folder);
}

}  // namespace tlm
