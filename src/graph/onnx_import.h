// ONNX import: an .onnx file (opsets 11 to 18, read with libonnx's protobuf classes) as a
// Graph with its weights.
//
// Each ONNX node is translated by its operator family (ops/families/*.cpp, through the
// OnnxNode interface this importer implements). Anything computed only from values known
// at import (initializers, Constants, shapes) is evaluated at once by the operators'
// reference semantics, so shape subgraphs never reach the compiler; constants no
// remaining node reads are dropped. A node that cannot be imported is an error naming
// the node, its op type and what is missing; a malformed or truncated file is an error,
// never a crash. Weights kept in external data files are read from the model's folder
// (paths leaving it are refused).
#pragma once
#include <map>
#include <string>

#include "graph/rewrites.h"

namespace tlm {

struct OnnxOptions {
  // Shapes for inputs with dynamic dimensions (by input name); a dynamic dimension left
  // unset is an error naming the input.
  std::map<std::string, Shape> input_shapes;
};

// Throws tlm::Error (one line) for an unreadable, malformed or unsupported model.
WeightedGraph import_onnx(const std::string& path, const OnnxOptions& options = {});
// The same from the file's bytes (tests, fuzzing); external data is read from `folder`.
WeightedGraph import_onnx_bytes(const std::string& bytes, const std::string& name,
                                const OnnxOptions& options = {}, const std::string& folder = "");

}  // namespace tlm
