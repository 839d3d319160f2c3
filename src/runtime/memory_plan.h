// Memory plan: where each activation lives in one arena, so that a compiled model's peak
// memory stays near its largest live set instead of the sum of all its activations.
//
// A tensor is live from the step that writes it to the last step that reads it (reads
// through a view count for the tensor viewed; model outputs live to the end; a sliced
// tensor the per-image steps write, from the first step: every image writes it). Tensors
// are placed largest first, each at the lowest 64-byte-aligned offset that overlaps no
// placed tensor live at the same time, so a step never reads and writes the same bytes.
// A model output that is an activation of its own (not a view) takes no arena space: the
// step that computes it writes straight into the caller's buffer (runtime.h).
#pragma once
#include <cstdint>

#include "runtime/artifact.h"

namespace tlm {

// The tensor whose memory `t` is: itself, or what its chain of views reinterprets
// (throws tlm::Error for a cycle of views).
int root_of(const Plan& plan, int t);
// Whether activation `tensor` lives in the caller's output buffer rather than the arena.
bool lives_in_caller_buffer(const Plan& plan, int tensor);
// Sets `arena_offset` of every activation in the arena (0 for the others) and
// `arena_floats` of the plan.
void plan_memory(Plan& plan);
// Throws tlm::Error when a (possibly corrupt) plan's arena places a tensor outside the
// arena or lets two tensors live at the same time share memory.
void check_memory_plan(const Plan& plan);
// Sum of all activations' sizes in floats (what the arena saves against).
int64_t activation_floats(const Plan& plan);

}  // namespace tlm
