#include "util/hardware.h"

#include <unistd.h>

#include <fstream>
#include <thread>

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

Hardware read_hardware() {
  Hardware hw;
  std::string flags = cpuinfo_field("flags");
  if (has_flag(flags, "avx512f"))
    hw.isa = "x86-64-avx512", hw.vector_bits = 512;
  else if (has_flag(flags, "avx2"))
    hw.isa = "x86-64-avx2", hw.vector_bits = 256;
  else
    hw.isa = "x86-64", hw.vector_bits = 128;
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
