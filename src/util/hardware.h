// Hardware: the facts about this machine that schedules depend on (ISA, vector width,
// cores, caches). Its fingerprint keys every record, so measurements from different
// machines never mix.
#pragma once
#include <cstdint>
#include <string>

namespace tlm {

struct Hardware {
  std::string isa;  // x86-64-avx512 | x86-64-avx2 | x86-64
  int vector_bits = 128;
  int cores = 1;
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  std::string model;

  std::string fingerprint() const;
};

// The machine this process runs on (read once, then cached).
Hardware detect_hardware();
// The machine a fingerprint names, as far as the fingerprint tells (no model name):
// hardware_from_fingerprint(h.fingerprint()).fingerprint() == h.fingerprint(). Throws
// tlm::Error (one line) for a string that is not a fingerprint.
Hardware hardware_from_fingerprint(const std::string& fingerprint);
// This machine when `fingerprint` is its own, else the machine the fingerprint names: the
// hardware a prompt describes for records or schedules made on (or for) that machine.
Hardware hardware_named(const std::string& fingerprint);
// Records timed under the cold-weight protocol (the task's weights flushed from the caches
// before each timed run; DESIGN.md, measurement protocol) are stored under the machine's
// fingerprint with this suffix, so that their times are compared only with each other.
inline constexpr const char* kColdWeightsSuffix = "/cold-weights";
// The machine's fingerprint of a record's: `record_fingerprint` without the suffix.
std::string machine_fingerprint(const std::string& record_fingerprint);
// Whether a record's fingerprint carries kColdWeightsSuffix.
bool timed_cold(const std::string& record_fingerprint);
// Memory the system could give a new allocation now (MemAvailable), in bytes.
int64_t available_memory_bytes();

}  // namespace tlm
