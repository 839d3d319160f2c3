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

// Where an anchor prefetches its packed weights: along the outermost reduction loop, or
// along that loop's inner half when one outer trip reads more than kWeightPrefetchBytes of a
// panel and the register tile sits inside it (a single reduction loop, kTileInsideReduction).
// Prefetching a whole long trip at once (dense 1024x3072x768 split 128: 384 lines per trip,
// again for every register tile) ran BERT-base at batch 8 1.13-1.19x slower than no prefetch
// (bench/reports/weight_prefetch_s33_intel.txt). Each trip's prefetch covers the trip
// `trips_ahead` later, about kWeightPrefetchBytes ahead.
struct WeightPrefetchSite {
  bool inner_loop = false;
  int64_t trips_ahead = 1;
  int64_t bytes_per_trip = 0;  // of one panel (output-channel block) of the weights
};
WeightPrefetchSite weight_prefetch_site(const StageShape& shape, const StageSchedule& s,
                                        int64_t block);

void apply_schedule(TaskPipeline& pipeline, const Schedule& schedule,
                    const CodegenOptions& options = {});

}  // namespace tlm
