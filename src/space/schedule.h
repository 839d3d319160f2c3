// Schedule: one point of a task's space, decoded from its decision list into what each
// stage does. Plain data; `apply_schedule` turns it into Halide scheduling calls.
//
// The loop nest of the output stage (innermost first):
//   register tile  : T2[d] iterations of each pure loop d; the vector dim innermost,
//                    vectorized by `vector_width`, the others around it by ascending
//                    T2[d] (and unrolled when `unroll`)
//   mid loops      : T1[d] / T2[d] for each d, walking register tiles inside a cache tile
//   outer loops    : extent[d] / T1[d]; the outermost `parallel_loops` fused and parallel
// Other stages are computed inline, at root, per cache tile or per register tile.
#pragma once
#include <cstdint>
#include <vector>

namespace tlm {

// Where a stage is computed. Stages read by the output are placed in the output's loop
// nest (root, cache tile, register tile); a producer read by another stage is placed
// relative to that consumer (with it, or inside its tile loops).
enum Location : int {
  kInline = 0,
  kRoot = 1,
  kCacheTile = 2,
  kRegisterTile = 3,
  kWithConsumer = 4,
  kInsideConsumer = 5,
};

// Reduction loop order around the stage's register tile (innermost first).
enum ReductionOrder : int {
  kTileInsideReduction = 0,   // [tile] [r inner] [r outer]: register blocking
  kReductionInnerInside = 1,  // [r inner] [tile] [r outer]
  kReductionInside = 2,       // [r inner] [r outer] [tile]: a dot product per element
};

struct OutputSchedule {
  std::vector<int64_t> tile1;  // cache tile per pure loop
  std::vector<int64_t> tile2;  // register tile per pure loop (divides tile1)
  int vector_dim = 0;
  int vector_width = 1;
  bool unroll = false;
  int parallel_loops = 0;
};

struct StageSchedule {
  int location = kRoot;
  int vector_width = 1;         // along the stage's vector dim
  std::vector<int64_t> rsplit;  // inner factor of each reduction loop
  int reduction_order = kTileInsideReduction;
  bool unroll_reduction = false;  // unroll the innermost inner reduction loop
};

struct Schedule {
  int64_t weight_block = 1;  // output channels per packed weight block (1: plain layout)
  OutputSchedule output;
  std::vector<StageSchedule> stages;  // one per task stage; the output's entry is unused
};

}  // namespace tlm
