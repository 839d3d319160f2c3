// ONNX import: an .onnx file (opsets 11 to 17, read with libonnx's protobuf classes) as a
// Graph with its weights.
//
// Each ONNX node becomes IR nodes (Conv -> conv2d, Gemm or MatMul with a constant
// right-hand side -> dense, BatchNormalization -> batchnorm with its scale and shift
// computed from the statistics, Mul of [N,C,H,W] by [N,C,1,1] -> channel_scale, Flatten,
// Squeeze, Unsqueeze -> reshape, ...). What only computes on constants (Constant, Shape,
// Gather, Concat, Cast, Slice, arithmetic on initializers) is folded at import time:
// shape arithmetic never reaches the compiler. A node the IR cannot express is an error
// naming the operator and the node; a malformed file is an error, never a crash.
#pragma once
#include <string>

#include "graph/rewrites.h"

namespace tlm {

// Throws tlm::Error (one line) for an unreadable, malformed or unsupported model.
WeightedGraph import_onnx(const std::string& path);
// The same from the file's bytes (tests, fuzzing).
WeightedGraph import_onnx_bytes(const std::string& bytes, const std::string& name);

}  // namespace tlm
