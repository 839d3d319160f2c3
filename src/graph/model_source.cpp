#include "graph/model_source.h"

#include "graph/onnx_import.h"

namespace tlm {

bool is_onnx_path(const std::string& source) {
  return source.size() > 5 && source.compare(source.size() - 5, 5, ".onnx") == 0;
}

WeightedGraph load_model_source(const std::string& source, const ZooOptions& zoo) {
  if (is_onnx_path(source)) return import_onnx(source);
  Graph graph = build_zoo_model(source, zoo);
  Weights weights = draw_weights(graph);
  return {std::move(graph), std::move(weights)};
}

Graph load_model_graph(const std::string& source, const ZooOptions& zoo) {
  if (is_onnx_path(source)) return import_onnx(source).graph;
  return build_zoo_model(source, zoo);
}

}  // namespace tlm
