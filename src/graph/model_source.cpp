#include "graph/model_source.h"

#include "graph/onnx_import.h"
#include "util/error.h"
#include "util/hardware.h"

namespace tlm {

bool is_onnx_path(const std::string& source) {
  return source.size() > 5 && source.compare(source.size() - 5, 5, ".onnx") == 0;
}

WeightedGraph load_model_source(const std::string& source, const ZooOptions& zoo,
                                const OnnxOptions& onnx) {
  if (is_onnx_path(source)) return import_onnx(source, onnx);
  Graph graph = build_zoo_model(source, zoo);
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

Graph load_model_graph(const std::string& source, const ZooOptions& zoo, const OnnxOptions& onnx) {
  if (is_onnx_path(source)) return import_onnx(source, onnx).graph;
  return build_zoo_model(source, zoo);
}

}  // namespace tlm
