// Whole-model commands: `tlm compile MODEL -o DIR` and `tlm run DIR`.
#pragma once
#include <CLI/CLI.hpp>

namespace tlm {

void add_compile_commands(CLI::App& app);

}  // namespace tlm
