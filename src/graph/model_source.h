// Model source: what a user names on the command line, turned into a graph with weights:
// a zoo name (weights drawn from the graph's seed) or a path to an .onnx file (weights
// read from it).
#pragma once
#include <string>
#include <vector>

#include "graph/onnx_import.h"
#include "graph/rewrites.h"
#include "graph/zoo.h"

namespace tlm {

// How to build the model: the zoo's sizes (batch, sequence, layers, image) for a zoo
// name; for an ONNX file, the shapes of its inputs that have dynamic dimensions.
struct ModelOptions {
  ZooOptions zoo;
  OnnxOptions onnx;
};

// Adds "NAME=1x3x224x224" (the form of --input-shape); throws tlm::Error for a malformed one.
void add_input_shape(ModelOptions& options, const std::string& text);
// The options as command-line flags (for a child process that loads the same model).
std::vector<std::string> model_option_flags(const ModelOptions& options);

bool is_onnx_path(const std::string& source);
// Throws tlm::Error (one line) for an unknown name or an unreadable/unsupported file.
WeightedGraph load_model_source(const std::string& source, const ModelOptions& options);
// The graph alone (a zoo model's weights are not drawn).
Graph load_model_graph(const std::string& source, const ModelOptions& options);

}  // namespace tlm
