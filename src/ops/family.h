// Family: what an operator family's file (ops/families/*.cpp) fills in. Each family adds
// its operators, task kinds and ONNX translations to the registry in one function, and
// registry.cpp calls them all, in the order listed here. Adding an operator is adding
// its definitions to a family (or a new family file and one line below), a line in
// torchref's table, and, for a new word, a line at the end of the vocabulary.
#pragma once
#include <vector>

#include "ops/onnx_node.h"
#include "ops/registry.h"

namespace tlm {

struct OpRegistry {
  std::vector<OpDef> ops;      // indexed by OpKind once complete
  std::vector<TaskDef> tasks;  // indexed by TaskKind once complete
  std::vector<OnnxMapping> onnx;
};

void register_matmul_family(OpRegistry& r);
void register_conv_family(OpRegistry& r);
void register_pool_family(OpRegistry& r);
void register_row_family(OpRegistry& r);
void register_reduce_family(OpRegistry& r);
void register_elementwise_family(OpRegistry& r);
void register_movement_family(OpRegistry& r);
void register_resize_family(OpRegistry& r);
void register_layout_family(OpRegistry& r);
void register_shape_family(OpRegistry& r);
void register_winograd_family(OpRegistry& r);

}  // namespace tlm
