// Plan check: what the runtime verifies of an artifact before any of it runs. A plan.json
// is data from disk (possibly edited, truncated or hostile), and the runtime indexes
// tensors, buffers and kernels by what it says, so every index, kind, shape and size is
// checked as a whole first; model.so and weights.bin must match the size and content hash
// the compiler recorded for them, since loading model.so runs its code.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/artifact.h"

namespace tlm {

// Size of a regular file; throws tlm::Error (one line) when it is missing or is not one.
int64_t regular_file_size(const std::string& path);
// Size and content hash of bytes held in memory, and of a file of the artifact (read whole).
// The hash is not a cryptographic one: it catches truncation and corruption, not a forger
// who can also rewrite plan.json.
ArtifactFile describe_bytes(const std::string& name, const char* data, size_t size);
ArtifactFile describe_file(const std::string& dir, const std::string& name);
// Throws tlm::Error (one line) unless `found` (a file as it is now; an empty hash checks the
// size alone) matches what the plan recorded of the file of that name.
void check_artifact_file(const std::string& dir, const Plan& plan, const ArtifactFile& found);
// Throws tlm::Error (one line) for any inconsistency of the plan with itself or with a
// weights.bin of `weight_floats` floats.
void check_plan(const Plan& plan, size_t weight_floats);

}  // namespace tlm
