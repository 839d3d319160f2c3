// Whole-model commands: `tlm compile MODEL -o DIR`, `tlm run DIR` and `tlm bench model`
// (which needs the `bench` command added first; `exe` is this executable, for the
// memory probes it starts).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace tlm {

void add_compile_commands(CLI::App& app, const std::string& exe);

}  // namespace tlm
