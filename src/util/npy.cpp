#include "util/npy.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

// The value of `key` in the header's Python dict literal, as text.
std::string header_field(const std::string& header, const std::string& key,
                         const std::string& path) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    throw Error("npy: '" + path + "' has no '" + key + "' in its header");
  at = header.find(':', at);
  size_t end = key == "shape" ? header.find(')', at) + 1 : header.find(',', at);
  if (at == std::string::npos || end == std::string::npos || end <= at)
    throw Error("npy: '" + path + "' has a malformed header");
  std::string value = header.substr(at + 1, end - at - 1);
  value.erase(0, value.find_first_not_of(" "));
  value.erase(value.find_last_not_of(" ") + 1);
  return value;
}

std::vector<int64_t> parse_shape(std::string text, const std::string& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw Error("npy: '" + path + "' has a malformed shape " + text);
  std::vector<int64_t> shape;
  for (std::string part : split(text.substr(1, text.size() - 2), ',')) {
    part.erase(0, part.find_first_not_of(" "));
    part.erase(part.find_last_not_of(" ") + 1);
    if (part.empty()) continue;
    int64_t d = parse_int(part, "npy shape");
    if (d < 0 || d > (int64_t(1) << 40)) throw Error("npy: '" + path + "' has a bad dimension");
    shape.push_back(d);
  }
  return shape;
}

template <typename T>
void decode(const std::string& bytes, size_t offset, std::vector<double>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, bytes.data() + offset + i * sizeof(T), sizeof(T));
    out[i] = double(v);
  }
}

size_t element_size(const std::string& dtype, const std::string& path) {
  static const std::vector<std::pair<std::string, size_t>> sizes = {
      {"<f4", 4}, {"<f8", 8}, {"<i8", 8}, {"<i4", 4},
      {"<i2", 2}, {"|i1", 1}, {"|u1", 1}, {"|b1", 1}};
  for (const auto& [name, size] : sizes)
    if (name == dtype) return size;
  throw Error("npy: '" + path + "' holds " + dtype +
              " (supported: float32, float64, int64, int32, int16, int8, uint8, bool)");
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("npy: cannot read '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw Error("npy: '" + path + "' is not a .npy file");
  int major = uint8_t(bytes[6]);
  size_t length_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || bytes.size() < 8 + length_bytes)
    throw Error("npy: '" + path + "' has an unknown format version");
  size_t header_length = 0;
  for (size_t i = 0; i < length_bytes; ++i)
    header_length |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
  size_t data = 8 + length_bytes + header_length;
  if (bytes.size() < data) throw Error("npy: '" + path + "' is truncated");
  std::string header = bytes.substr(8 + length_bytes, header_length);
  NpyArray a;
  a.dtype = header_field(header, "descr", path);
  a.dtype.erase(std::remove(a.dtype.begin(), a.dtype.end(), '\''), a.dtype.end());
  if (header_field(header, "fortran_order", path) != "False")
    throw Error("npy: '" + path + "' is in Fortran order (save it C-contiguous)");
  a.shape = parse_shape(header_field(header, "shape", path), path);
  int64_t count = 1;
  for (int64_t d : a.shape) count *= d;
  size_t size = element_size(a.dtype, path);
  if (bytes.size() != data + size_t(count) * size)
    throw Error("npy: '" + path + "' holds " + std::to_string(bytes.size() - data) +
                " data bytes, its shape needs " + std::to_string(size_t(count) * size));
  a.values.resize(size_t(count));
  if (a.dtype == "<f4") decode<float>(bytes, data, a.values);
  if (a.dtype == "<f8") decode<double>(bytes, data, a.values);
  if (a.dtype == "<i8") decode<int64_t>(bytes, data, a.values);
  if (a.dtype == "<i4") decode<int32_t>(bytes, data, a.values);
  if (a.dtype == "<i2") decode<int16_t>(bytes, data, a.values);
  if (a.dtype == "|i1") decode<int8_t>(bytes, data, a.values);
  if (a.dtype == "|u1" || a.dtype == "|b1") decode<uint8_t>(bytes, data, a.values);
  return a;
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape,
               const std::vector<float>& values) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t length = uint16_t(header.size());
  out.put(char(length & 0xff)).put(char(length >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * 4));
  if (!out) throw Error("npy: cannot write '" + path + "'");
}

}  // namespace tlm
