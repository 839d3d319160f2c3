// Whole-model commands: `tlm compile MODEL -o DIR`, `tlm run DIR` and `tlm bench model`
// (which needs the `bench` command added first; `exe` is this executable, for the
// memory probes it starts).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "graph/model_source.h"

namespace tlm {

void add_compile_commands(CLI::App& app, const std::string& exe);
// --batch, --seq, --layers, --image (zoo models) and --input-shape (ONNX files).
void add_model_options(CLI::App* command, ModelOptions& options);

}  // namespace tlm
