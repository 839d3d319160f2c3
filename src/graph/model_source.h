// Model source: what a user names on the command line, turned into a graph with weights:
// a zoo name (weights drawn from the graph's seed) or a path to an .onnx file (weights
// read from it).
#pragma once
#include <string>

#include "graph/onnx_import.h"
#include "graph/rewrites.h"
#include "graph/zoo.h"

namespace tlm {

bool is_onnx_path(const std::string& source);
// Throws tlm::Error (one line) for an unknown name or an unreadable/unsupported file.
WeightedGraph load_model_source(const std::string& source, const ZooOptions& zoo,
                                const OnnxOptions& onnx = {});
// The graph alone (a zoo model's weights are not drawn).
Graph load_model_graph(const std::string& source, const ZooOptions& zoo,
                       const OnnxOptions& onnx = {});

}  // namespace tlm
