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

// Size and content hash of a file (a hash of its bytes, not a cryptographic one: it
// catches truncation and corruption, not a forger who can also rewrite plan.json).
ArtifactFile describe_file(const std::string& dir, const std::string& name);
// Throws tlm::Error (one line) unless each file the plan lists is a regular file in `dir`
// with the recorded size and hash, and model.so and weights.bin are among them.
void check_artifact_files(const std::string& dir, const Plan& plan);
// Throws tlm::Error (one line) for any inconsistency of the plan with itself or with a
// weights.bin of `weight_floats` floats.
void check_plan(const Plan& plan, size_t weight_floats);

}  // namespace tlm
