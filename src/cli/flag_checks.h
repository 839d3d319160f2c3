// Range checks for the command line's numeric flags: a value outside its range (or not a
// finite number) is refused with one line naming the flag and the range, before any work.
#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "graph/activation_layout.h"
#include "util/error.h"
#include "util/hardware.h"

namespace tlm {

// Accepts a finite number in [low, high].
inline CLI::Validator in_range(double low, double high) {
  auto text = [](double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.10g", v);
    return std::string(buffer);
  };
  std::string range = "[" + text(low) + ", " + text(high) + "]";
  return CLI::Validator(
      [low, high, range](std::string& input) -> std::string {
        double value = 0;
        size_t used = 0;
        try {
          value = std::stod(input, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != input.size() || !std::isfinite(value) || value < low || value > high)
          return "'" + input + "' is not a number in " + range;
        return "";
      },
      "in " + range);
}

// A random seed: 32 bits.
inline CLI::Validator seed_range() {
  return in_range(0, 4294967295.0);
}

// A hardware fingerprint (util/hardware.h) or one of `words` (e.g. all, this).
inline CLI::Validator fingerprint_or(std::vector<std::string> words) {
  return CLI::Validator(
      [words](std::string& input) -> std::string {
        for (const auto& word : words)
          if (input == word) return "";
        try {
          hardware_from_fingerprint(input);
        } catch (const Error& e) {
          return e.what();
        }
        return "";
      },
      "FINGERPRINT");
}

// --activation-block auto|16|8|0: channels per block of activations kept blocked
// between convolutions (graph/activation_layout.h), or 0 for NCHW everywhere.
inline void add_activation_block_option(CLI::App* command, int64_t& block) {
  command
      ->add_option_function<std::string>(
          "--activation-block",
          [&block](const std::string& value) {
            block = value == "auto" ? kAutoActivationBlock : std::stoll(value);
          },
          "activations between convolutions in blocks of 16 or 8 channels, 0: NCHW, auto "
          "(default): the layout measured faster (compiler/layout_choice.h), else the "
          "machine's registry entry, else 16")
      ->check(CLI::IsMember({"auto", "16", "8", "0"}));
}

}  // namespace tlm
