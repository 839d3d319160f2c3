#include "graph/model_source.h"

#include "util/error.h"
#include "util/hardware.h"
#include "util/strings.h"

namespace tlm {

void add_input_shape(ModelOptions& options, const std::string& text) {
  auto eq = text.find('=');
  std::string what = "--input-shape '" + text + "'";
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error(what + ": expected NAME=DxDx..., e.g. input=1x3x224x224");
  Shape shape;
  for (const auto& d : split(text.substr(eq + 1), 'x')) {
    int64_t v = parse_int(d, what);
    if (v < 1 || v > (int64_t(1) << 31))
      throw Error(what + ": dimension " + d + " is out of range");
    shape.push_back(v);
  }
  std::string name = text.substr(0, eq);
  if (!options.onnx.input_shapes.emplace(name, shape).second)
    throw Error(what + ": input '" + name + "' is given twice");
}

std::vector<std::string> model_option_flags(const ModelOptions& o) {
  std::vector<std::string> flags = {
      "--batch",  std::to_string(o.zoo.batch),  "--seq",   std::to_string(o.zoo.seq),
      "--layers", std::to_string(o.zoo.layers), "--image", std::to_string(o.zoo.image)};
  for (const auto& [name, shape] : o.onnx.input_shapes) {
    std::vector<std::string> dims;
    for (int64_t d : shape) dims.push_back(std::to_string(d));
    flags.push_back("--input-shape");
    flags.push_back(name + "=" + join(dims, "x"));
  }
  return flags;
}

bool is_onnx_path(const std::string& source) {
  return source.size() > 5 && source.compare(source.size() - 5, 5, ".onnx") == 0;
}

WeightedGraph load_model_source(const std::string& source, const ModelOptions& options) {
  if (is_onnx_path(source)) return import_onnx(source, options.onnx);
  Graph graph = load_model_graph(source, options);
  // Compiling holds the weights about twice (drawn, then packed): refuse what cannot fit.
  double need_gb = graph.parameter_count() * 4.0 * 2 / 1e9;
  double have_gb = available_memory_bytes() / 1e9;
  if (need_gb > have_gb)
    throw Error(source + " has " + std::to_string(graph.parameter_count() / 1000000) +
                "M parameters: its fp32 weights need about " + std::to_string(int(need_gb)) +
                " GB to compile, this machine has " + std::to_string(int(have_gb)) +
                " GB available (use fewer --layers)");
  Weights weights = draw_weights(graph);
  return {std::move(graph), std::move(weights)};
}

Graph load_model_graph(const std::string& source, const ModelOptions& options) {
  if (is_onnx_path(source)) return import_onnx(source, options.onnx).graph;
  if (!options.onnx.input_shapes.empty())
    throw Error("--input-shape applies to ONNX files; " + source + " is a zoo model");
  return build_zoo_model(source, options.zoo);
}

}  // namespace tlm
