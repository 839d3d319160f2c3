// Random edits of a text for the parsers' fuzz tests: 1 to `max_edits` edits, each a
// character replaced by one of `alphabet`, up to 4 characters cut, or a number inserted.
#pragma once
#include <cstdint>
#include <random>
#include <string>

namespace tlm {

inline std::string mutate(std::string text, std::mt19937_64& rng, const std::string& alphabet,
                          int max_edits = 3) {
  for (int edits = 1 + int(rng() % uint64_t(max_edits)); edits-- > 0 && !text.empty();) {
    size_t at = rng() % text.size();
    switch (rng() % 3) {
      case 0:
        text[at] = alphabet[rng() % alphabet.size()];
        break;
      case 1:
        text.erase(at, 1 + rng() % 4);
        break;
      default:
        text.insert(at, std::to_string(int64_t(rng() % 100000) - 50000));
        break;
    }
  }
  return text;
}

}  // namespace tlm
