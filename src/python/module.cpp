// tlm._runtime: the Python binding of the C API (tlm_runtime.h). NumPy arrays in and out;
// every failure raises tlm.Error with the runtime's one-line message. The package's
// __init__.py adds tlm.compile (the installed `tlm` tool) on top.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "capi/tlm_runtime.h"

namespace py = pybind11;

namespace {

struct TlmError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TensorInfo {
  std::string name, dtype;
  std::vector<int64_t> shape;
};

const char* numpy_name(tlm_dtype dtype) {
  return dtype == TLM_INT64 ? "int64" : dtype == TLM_BOOL ? "bool" : "float32";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]) + (shape.size() == 1 ? "," : "");
  return text + ")";
}

// A shape without its leading 1s: an image given as (3, 224, 224) fits (1, 3, 224, 224).
std::vector<int64_t> squeezed(std::vector<int64_t> shape) {
  size_t ones = 0;
  while (ones < shape.size() && shape[ones] == 1) ++ones;
  shape.erase(shape.begin(), shape.begin() + long(ones));
  return shape;
}

class Model {
 public:
  explicit Model(const std::string& dir) : model_(tlm_open(dir.c_str())) {
    if (!model_) throw TlmError(tlm_last_error());
    for (size_t i = 0; i < tlm_num_inputs(model_); ++i) inputs_.push_back(info(i, false));
    for (size_t o = 0; o < tlm_num_outputs(model_); ++o) outputs_.push_back(info(o, true));
  }
  ~Model() { tlm_close(model_); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }

  // {name: array} (or one array for a one-input model) -> {name: float32 array}.
  py::dict run(const py::object& feeds) {
    std::vector<py::array> held;
    std::vector<const void*> in;
    for (const auto& t : inputs_) {
      held.push_back(converted(t, feed(feeds, t)));
      in.push_back(held.back().data());
    }
    py::dict results;
    std::vector<float*> out;
    for (const auto& t : outputs_) {
      py::array_t<float> a(t.shape);
      out.push_back(a.mutable_data());
      results[py::str(t.name)] = a;
    }
    int rc;
    {
      py::gil_scoped_release unlocked;  // other Python threads may run this model too
      rc = tlm_run(model_, in.data(), out.data());
    }
    if (rc != 0) throw TlmError(tlm_last_error());
    return results;
  }

 private:
  TensorInfo info(size_t index, bool output) const {
    tlm_tensor_info i{};
    if ((output ? tlm_output_info : tlm_input_info)(model_, index, &i) != 0)
      throw TlmError(tlm_last_error());
    return {i.name, numpy_name(i.dtype), std::vector<int64_t>(i.shape, i.shape + i.rank)};
  }

  py::object feed(const py::object& feeds, const TensorInfo& t) const {
    if (!py::isinstance<py::dict>(feeds)) {
      if (inputs_.size() != 1)
        throw TlmError("the model takes " + std::to_string(inputs_.size()) +
                       " inputs: give a dict of arrays by name");
      return feeds;
    }
    py::dict named = feeds.cast<py::dict>();
    for (auto item : named)
      if (!py::isinstance<py::str>(item.first) ||
          std::none_of(inputs_.begin(), inputs_.end(), [&](const TensorInfo& i) {
            return i.name == item.first.cast<std::string>();
          }))
        throw TlmError("the model has no input " + std::string(py::repr(item.first)));
    if (!named.contains(t.name)) throw TlmError("input '" + t.name + "' is missing");
    return named[py::str(t.name)];
  }

  template <typename T>
  static py::array contiguous(const py::array& a) {
    return py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
  }

  // The array as the C API takes it: C-contiguous, of the input's element type and shape.
  static py::array converted(const TensorInfo& t, const py::object& value) {
    py::array a = py::array::ensure(value);
    char kind = a ? a.dtype().kind() : 'O';
    if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
      throw TlmError("input '" + t.name + "' is not an array of numbers");
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    if (squeezed(shape) != squeezed(t.shape))
      throw TlmError("input '" + t.name + "' has shape " + shape_text(shape) +
                     ", the model wants " + shape_text(t.shape));
    if (t.dtype != "float32" && kind == 'f')  // ids and masks are never rounded floats
      throw TlmError("input '" + t.name + "' holds " + t.dtype + ", the array holds " +
                     std::string(py::str(a.dtype())));
    if (t.dtype == "int64") return contiguous<int64_t>(a);
    if (t.dtype == "bool") return contiguous<bool>(a);
    return contiguous<float>(a);
  }

  tlm_model* model_;
  std::vector<TensorInfo> inputs_, outputs_;
};

}  // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "Runs models compiled by tlm (the C runtime's binding; see the tlm package)";
  py::register_exception<TlmError>(m, "Error", PyExc_RuntimeError);
  py::class_<TensorInfo>(m, "TensorInfo")
      .def_readonly("name", &TensorInfo::name)
      .def_readonly("dtype", &TensorInfo::dtype)
      .def_property_readonly("shape",
                             [](const TensorInfo& t) { return py::tuple(py::cast(t.shape)); })
      .def("__repr__", [](const TensorInfo& t) {
        return "TensorInfo(name='" + t.name + "', dtype='" + t.dtype +
               "', shape=" + shape_text(t.shape) + ")";
      });
  py::class_<Model>(m, "Model")
      .def(py::init<const std::string&>(), py::arg("dir"))
      .def_property_readonly("inputs", &Model::inputs)
      .def_property_readonly("outputs", &Model::outputs)
      .def("run", &Model::run, py::arg("feeds"),
           "Runs the model on {input name: array} (or one array for a one-input model); "
           "returns {output name: float32 array}");
  m.def(
      "load", [](const std::string& dir) { return new Model(dir); }, py::arg("dir"),
      "Loads an artifact folder made by `tlm compile`");
  m.def("version", [] { return std::string(tlm_version()); });
}
