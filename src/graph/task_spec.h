// TaskSpec: one task named on the command line, `OP:key=value,...[+EPILOGUE...]`.
//
// The parser checks syntax and validates every key and value against the op's schema
// (which keys exist, which are required, defaults, allowed words), so anything that
// reaches `ops` is well formed. `key()` is the canonical form: schema order, defaults
// filled in, so two spellings of one task share a key.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tlm {

struct TaskSpec {
  std::string op;
  std::map<std::string, std::string> params;  // every schema key, defaults filled
  std::vector<std::string> epilogue;          // in application order

  int64_t get(const std::string& key) const;              // integer parameter
  const std::string& word(const std::string& key) const;  // word parameter (e.g. kind)
  bool has_epilogue(const std::string& name) const;
  std::string key() const;
};

// Parses and validates; throws tlm::Error with a one-line message naming the bad part.
TaskSpec parse_task_spec(const std::string& text);

// The op names and epilogue names the parser accepts.
std::vector<std::string> known_ops();
std::vector<std::string> known_epilogues();
// An op's parameter keys in schema order; every key and every word value of any op.
std::vector<std::string> param_keys(const std::string& op);
std::vector<std::string> known_param_keys();
std::vector<std::string> known_param_words();

}  // namespace tlm
