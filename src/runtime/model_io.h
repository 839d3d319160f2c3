// Model I/O: a compiled model's inputs read from files and its outputs written to files,
// for `tlm run` (and anyone comparing with their framework without writing code).
//
// Inputs: "NAME=file.npy" per input, or "file.npy" when the model has one input; a file
// not ending in .npy is raw float32 holding every input in order (the old form). An
// array must have the input's shape (leading 1s may be left out) and a matching kind:
// integer arrays for integer inputs (token ids, masks; held as float32, exact below
// 2^24), numbers for float inputs. No files: seeded random inputs (normal, or small
// non-negative integers for integer inputs).
// Outputs: "out.npy" for a model with one output; a folder (created if need be) gets
// NAME.npy for every output.
#pragma once
#include <string>
#include <vector>

#include "runtime/artifact.h"

namespace tlm {

// Throws tlm::Error (one line) for a missing, malformed or mismatched input.
std::vector<std::vector<float>> read_model_inputs(const Plan& plan,
                                                  const std::vector<std::string>& specs);
void write_model_outputs(const Plan& plan, const std::vector<std::vector<float>>& outputs,
                         const std::string& path);

}  // namespace tlm
