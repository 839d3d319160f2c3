// Npy: NumPy's .npy files (format 1.0-3.0, C order, little-endian), so a user can hand a
// model inputs from their framework and compare its outputs without writing code.
// Values are read as doubles (float16 excluded); written as float32.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tlm {

struct NpyArray {
  std::vector<int64_t> shape;
  std::string dtype;  // NumPy's descr, e.g. "<f4", "<i8", "|b1"
  std::vector<double> values;
};

// Throws tlm::Error (one line) for a missing, truncated or unsupported file.
NpyArray read_npy(const std::string& path);
void write_npy(const std::string& path, const std::vector<int64_t>& shape,
               const std::vector<float>& values);

}  // namespace tlm
