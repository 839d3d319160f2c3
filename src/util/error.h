// Error: the one exception type tlm throws for bad input or failed operations.
// Its message is a single line meant for the user; the CLI prints it and exits non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace tlm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace tlm
