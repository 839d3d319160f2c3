// Generator: writes schedules for a task with the model, one token at a time, choosing
// only among the tokens the space allows next (lang's DecisionCursor offering the
// space's proposable values), so every result is a legal schedule of the space. Beam search and
// greedy decoding are deterministic; sampling draws from the model's distribution with a seeded
// generator and repeats exactly for the same seed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "space/schedule_space.h"

namespace tlm {

// The keys and values of the last prompt seen, so that the next prompt computes only what
// follows their common prefix (the hardware, the op and shared extents repeat across the
// tasks of a model).
struct PromptCache {
  std::vector<int> tokens;
  KvCache cache;
};

// Best first for beam search; in draw order for sampling (duplicates dropped, so fewer
// than k may come back when the space is small). `prompt_cache` may be null.
std::vector<Generated> generate(Gpt& model, const std::vector<int>& prompt,
                                const ScheduleSpace& space, const GenerateOptions& options,
                                PromptCache* prompt_cache = nullptr);

}  // namespace tlm
