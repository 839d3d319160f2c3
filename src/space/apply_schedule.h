// apply_schedule: turns a decoded Schedule into Halide scheduling calls on a task's
// pipeline. Every Schedule the space decodes is legal: it compiles, and the pipeline
// computes the reference result up to floating-point reassociation.
#pragma once
#include "ops/task_pipeline.h"
#include "space/schedule.h"

namespace tlm {

// What an ahead-of-time build adds to a decoded schedule. These are not decisions of the
// space: JIT-timed kernels (the records) leave them off.
struct CodegenOptions {
  // Software prefetch of the packed weights kWeightPrefetchBytes ahead along the anchor's
  // outermost reduction loop, for tasks whose algorithm asks for it
  // (TaskShape::prefetch_packable: dense layers). In a model each weight comes from memory once per
  // inference, and a dense layer's k loop crosses a page every 4 KB of a panel, where the hardware
  // prefetcher stops (bench/reports/weight_prefetch_s30_intel.txt).
  bool prefetch_weights = false;
};
inline constexpr int64_t kWeightPrefetchBytes = 4096;

void apply_schedule(TaskPipeline& pipeline, const Schedule& schedule,
                    const CodegenOptions& options = {});

}  // namespace tlm
