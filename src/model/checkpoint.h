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

// Weight-space interpolation of two checkpoints fine-tuned from a common ancestor
// (Wortsman et al., "Robust fine-tuning of zero-shot models", 2022: WiSE-FT): every
// parameter becomes (1 - weight) * a + weight * b. Between a model that generalizes and one
// tuned harder on a host's records, a blend keeps much of the tuned one's gain with less of
// its drift on unseen shapes. `a` receives the result. Throws tlm::Error when the two differ
// in shape or `weight` is outside [0, 1].
void blend_into(Gpt& a, Gpt& b, double weight);

}  // namespace tlm
