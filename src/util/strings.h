// Small string helpers shared by the parsers (task spec, CLI lists).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tlm {

std::vector<std::string> split(const std::string& text, char separator);
std::string join(const std::vector<std::string>& parts, const std::string& separator);
// Parses a whole string as a base-10 integer; throws tlm::Error naming `what` otherwise.
int64_t parse_int(const std::string& text, const std::string& what);
// Hex digest (64-bit FNV-1a) of a byte string: stable across runs and machines.
std::string hash_hex(const std::string& bytes);

// The lines of a text file, without blank lines and `#` comments ("" gives none); throws
// tlm::Error if the file cannot be read.
std::vector<std::string> read_list_file(const std::string& path);

}  // namespace tlm
