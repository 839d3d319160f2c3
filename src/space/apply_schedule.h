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
  // The output dim (innermost first) whose tile loop goes outermost in the parallel loop,
  // so that each thread gets its own part of that dim (-1: as the schedule fuses;
  // parallel_first_dim).
  int first_parallel_dim = -1;
};
inline constexpr int64_t kWeightPrefetchBytes = 4096;

// Which dim the threads split first. The pool gives each thread one contiguous part of a
// parallel loop, and a schedule's fused loop runs its outermost dim slowest, so that dim
// decides what each thread reads and writes.
//
// Rows first, for convolutions. A convolution parallel over output-channel blocks leaves
// half of the channels in each core's caches, and a 1x1 convolution after it reads every
// channel: half of its input comes from the other core. When the host places the two
// vCPUs on different L3s (a core-to-core round trip of ~430 ns instead of ~85, for seconds
// at a time) that handoff made ResNet-50 1.35x slower (bench/reports/rows_first_s59_zen5.txt).
// Split by rows, consecutive convolutions find their rows where they wrote them. Each
// thread then reads all of the weights, so only convolutions whose weights are small next
// to their activations split this way.
//
// Columns first, for dense layers whose weights outweigh their activations (a transformer
// at batch 1). A schedule parallel over row tiles has every thread stream all of the
// weights from memory, twice the traffic of a split by columns, where each thread reads
// its own half (bench/reports/dense_columns_first_s62_intel.txt).
//
// The dim an ahead-of-time build puts first: the rows (2) of a convolution writing
// channel-blocked activations, [N][K/b][H][W][b], whose weights are at most twice its
// activations (inputs and output); the columns (0) of a dense layer whose weights are more
// than its activations; else -1.
int parallel_first_dim(const TaskSpec& task);

// The output's cache-tile loops fused into its one parallel loop, outermost first (empty:
// serial): the schedule's, or with `first_dim` >= 0 that dim's loop outermost and the
// schedule's others inside it, when every one of them divides into whole tiles, that dim
// takes more than one tile and no loop two or more dims outside it (a batch) has more than
// one. `extents`: the loops the schedule tiles; `written`: the output buffer's extents,
// both innermost first.
std::vector<size_t> parallel_dims(const OutputSchedule& s, const std::vector<int64_t>& extents,
                                  const std::vector<int64_t>& written, int first_dim = -1);

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
