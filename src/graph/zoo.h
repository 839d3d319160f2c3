// Zoo: the built-in networks as Graphs, built from their published layer structure with
// weights drawn from a fixed seed (no downloads): ResNet-50, MobileNetV2,
// EfficientNet-B0, a BERT-base encoder, GPT-2 small and LLaMA-7B decoder layers.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tlm {

struct ZooOptions {
  int batch = 1;
  int seq = 128;    // transformers: sequence length
  int layers = 0;   // transformers: blocks (0 = the model's own; LLaMA-7B defaults to 1)
  int image = 224;  // convolutional networks: input height and width
};

std::vector<std::string> zoo_model_names();
// Throws tlm::Error for an unknown name or bad options.
Graph build_zoo_model(const std::string& name, const ZooOptions& options = {});

}  // namespace tlm
