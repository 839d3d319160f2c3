// Checkpoint: a trained model as an immutable folder `<models>/<id>/`:
//   config.json  the ModelConfig
//   weights.pt   the parameters (libtorch archive)
//   meta.json    vocabulary hash, training-data hash, parent checkpoint, the command that
//                made it, metrics
// The id is "tlm-" + a hash of config and weights, so equal content gets an equal name and
// a changed file is caught on load. Nothing ever writes into an existing checkpoint.
#pragma once
#include <string>

#include "model/gpt.h"

namespace tlm {

// Writes the model under `models_dir`; returns its id (an existing equal checkpoint is
// left as it is).
std::string write_checkpoint(Gpt& model, CheckpointInfo info, const std::string& models_dir);
// Loads and checks a checkpoint folder; throws tlm::Error (one line) when it is missing,
// corrupt, or made with another vocabulary.
Gpt load_checkpoint(const std::string& path, CheckpointInfo* info = nullptr);

}  // namespace tlm
