// The model's commands: `tlm corpus`, `tlm train pretrain`, `tlm gen`. Each registers a
// subcommand whose callback parses nothing further and calls the model module.
#pragma once
#include <CLI/CLI.hpp>

namespace tlm {

// `command_line` is recorded in the checkpoints that training writes; `exe` (this
// executable) runs the measurement workers of `gen --measure`.
void add_model_commands(CLI::App& app, const std::string& command_line, const std::string& exe);

}  // namespace tlm
