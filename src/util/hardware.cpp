#include "util/hardware.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "util/error.h"

namespace tlm {
namespace {

std::string cpuinfo_field(const std::string& name) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(colon + 2);
  }
  return "";
}

bool has_flag(const std::string& flags, const std::string& flag) {
  return (" " + flags + " ").find(" " + flag + " ") != std::string::npos;
}

// Sets the ISA and its vector width; false for an ISA a fingerprint cannot name.
bool set_isa(Hardware& hw, const std::string& isa) {
  const std::pair<const char*, int> known[] = {
      {"x86-64-avx512", 512}, {"x86-64-avx2", 256}, {"x86-64", 128}};
  for (const auto& [name, bits] : known)
    if (isa == name) hw.isa = name, hw.vector_bits = bits;
  return !hw.isa.empty();
}

// A fingerprint field "<prefix><digits><suffix>" (e.g. "L1d48K") -> its number, or -1.
int64_t fingerprint_number(const std::string& field, const std::string& prefix, char suffix) {
  if (field.size() <= prefix.size() + 1 || field.size() > prefix.size() + 10 ||
      field.rfind(prefix, 0) != 0 || field.back() != suffix)
    return -1;
  std::string digits = field.substr(prefix.size(), field.size() - prefix.size() - 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

Hardware read_hardware() {
  Hardware hw;
  std::string flags = cpuinfo_field("flags");
  set_isa(hw, has_flag(flags, "avx512f") ? "x86-64-avx512"
              : has_flag(flags, "avx2")  ? "x86-64-avx2"
                                         : "x86-64");
  hw.cores = static_cast<int>(std::thread::hardware_concurrency());
  hw.l1d_bytes = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  hw.l2_bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  hw.l3_bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
  hw.model = cpuinfo_field("model name");
  return hw;
}

}  // namespace

std::string Hardware::fingerprint() const {
  return isa + "/" + std::to_string(cores) + "c/L1d" + std::to_string(l1d_bytes >> 10) + "K/L2" +
         std::to_string(l2_bytes >> 10) + "K/L3" + std::to_string(l3_bytes >> 20) + "M";
}

// Read once per process: the facts do not change while it runs, and reading
// /proc/cpuinfo costs milliseconds (more when the heap is fragmented), which used to land
// inside the timed model generation of `bench op`.
Hardware detect_hardware() {
  static const Hardware hardware = read_hardware();
  return hardware;
}

Hardware hardware_from_fingerprint(const std::string& fingerprint) {
  auto bad = [&] {
    return Error("'" + fingerprint +
                 "' is not a hardware fingerprint "
                 "(e.g. x86-64-avx512/2c/L1d48K/L21024K/L3384M)");
  };
  std::istringstream in(fingerprint);
  std::string isa, cores, l1d, l2, l3, extra;
  if (!std::getline(in, isa, '/') || !std::getline(in, cores, '/') || !std::getline(in, l1d, '/') ||
      !std::getline(in, l2, '/') || !std::getline(in, l3, '/') || std::getline(in, extra))
    throw bad();
  Hardware hw;
  int64_t n_cores = fingerprint_number(cores, "", 'c'),
          l1d_kb = fingerprint_number(l1d, "L1d", 'K'), l2_kb = fingerprint_number(l2, "L2", 'K'),
          l3_mb = fingerprint_number(l3, "L3", 'M');
  if (!set_isa(hw, isa) || n_cores < 1 || l1d_kb < 0 || l2_kb < 0 || l3_mb < 0) throw bad();
  hw.cores = static_cast<int>(n_cores);
  hw.l1d_bytes = l1d_kb << 10, hw.l2_bytes = l2_kb << 10, hw.l3_bytes = l3_mb << 20;
  if (hw.fingerprint() != fingerprint) throw bad();  // e.g. leading zeros
  return hw;
}

Hardware hardware_named(const std::string& fingerprint) {
  Hardware here = detect_hardware();
  return fingerprint == here.fingerprint() ? here : hardware_from_fingerprint(fingerprint);
}

bool timed_cold(const std::string& record_fingerprint) {
  std::string suffix = kColdWeightsSuffix;
  return record_fingerprint.size() > suffix.size() &&
         record_fingerprint.compare(record_fingerprint.size() - suffix.size(), suffix.size(),
                                    suffix) == 0;
}

std::string machine_fingerprint(const std::string& record_fingerprint) {
  if (!timed_cold(record_fingerprint)) return record_fingerprint;
  return record_fingerprint.substr(0, record_fingerprint.size() - std::strlen(kColdWeightsSuffix));
}

int64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return int64_t(1) << 62;  // unknown: do not refuse
}

}  // namespace tlm
