// Training: next-token prediction of the decision tokens (the prompt is given, not
// learned) with AdamW, on a Dataset. A run lives in a directory and resumes from it:
//   state_model.pt, state_optim.pt, state.json   the latest state (step), saved atomically
//   log.jsonl                                    step, loss, validation loss, tokens/s
// Validation holds out whole tasks (those whose prompt hashes into the last 1/20, or with
// very few tasks the one of largest hash), never random rows of a task also trained on.
#pragma once
#include <cstdint>
#include <string>

#include "model/gpt.h"

namespace tlm {

// Trains `model` (fresh, or loaded from a checkpoint to fine-tune) until `steps`, resuming
// from the run directory's state when it has one; progress on stderr.
TrainReport train_model(const TrainOptions& options, Gpt& model);

}  // namespace tlm
