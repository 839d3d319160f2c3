// TaskShape: what the schedule space needs to know about a task's pipeline, without
// Halide: its stages in order (producers first, output last), each stage's pure loops
// and reduction loops with their extents, and how its pure loops line up with the
// output's. The Space Builder reads this; `task_pipeline.h` holds the Halide objects.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/task_spec.h"

namespace tlm {

enum class StageKind {
  Output,     // the task's result: anchor value with the fused epilogue applied
  Anchor,     // the main reduction (matmul, conv, pooling window ...)
  Reduction,  // a secondary row reduction (softmax max/sum, norm statistics)
  Producer,   // a pure producer, e.g. zero padding of the input
};

struct StageShape {
  std::string name;
  StageKind kind = StageKind::Output;
  std::vector<int64_t> extents;   // pure loops, innermost first (Halide order)
  std::vector<int> output_dim;    // per pure loop: the output loop it follows, or -1
  std::vector<int64_t> rextents;  // reduction loops, innermost first; empty if pure
  int feeds = -1;                 // a later non-output stage that reads this one, or -1
  // false: never inlined into its reader, whose every use would redo its work (a
  // depthwise convolution read by a 1x1 convolution, once per output channel)
  bool inlinable = true;
};

struct InputShape {
  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first
  // Indices into a dimension of this many entries (held as float32, negative ones count
  // from the end), 0 for data: test inputs are drawn in [-range, range).
  int64_t index_range = 0;
};

struct TaskShape {
  std::vector<InputShape> inputs;  // in the plain layout
  // The weight input that may be packed channel-blocked (-1: none), its output-channel
  // dimension (row-major: 0 for a conv's [K, C, R, S], 1 for a dense layer's [K, N]) and
  // that dimension's extent, which a block size must divide.
  int packable_input = -1;
  int packable_dim = 0;
  int64_t packable_extent = 0;
  // A convolution reading channel-blocked input splits its weight's input channels (dim 1)
  // in blocks of this many when packed (pack_channel_blocks); 1: not split.
  int64_t packable_in_block = 1;
  // The packed weight streams from memory along the reduction once per inference, so an
  // ahead-of-time build prefetches it (dense layers; convolutions measured slower with it).
  bool prefetch_packable = false;
  // The output loop (innermost first) along the packed weight's channels, where a vector
  // along it must stay inside one weight block (-1: no such rule). A vector that crosses
  // blocks reads the packed weight as a gather, 6-14x slower (batch_matmul constant_b=1,
  // bench/reports/winograd_packed_s61_intel.txt). Dense layers keep the space their records
  // were measured in.
  int packed_vector_dim = -1;
  // The output loop (innermost first) over blocks of output channels, in a channel-blocked
  // output [N][K/b][H][W][b] (3; -1: none). A model proposes only cache tiles that divide
  // it (ScheduleSpace::proposable_values).
  int channel_blocks_dim = -1;
  std::vector<StageShape> stages;     // producers first, output last
  std::vector<int64_t> output_shape;  // row-major
  double flops = 0;
  int64_t reduction_length = 1;  // longest reduction feeding one output value
  // The algorithm schedules itself (PipelineBuilder::schedule_itself): the space has no
  // decision points and the model is never asked.
  bool fixed_schedule = false;

  const StageShape& output() const { return stages.back(); }
};

// Validates shapes (e.g. a conv window larger than its padded input) and describes the
// task; throws tlm::Error naming the problem.
TaskShape describe_task(const TaskSpec& task);

// Every stage name an algorithm uses (the tensor language has a word for each).
const std::vector<std::string>& known_stage_names();
constexpr size_t kMaxLoopDims = 6;  // pure or reduction loops of one stage, at most

// Packs a weight tensor along its output-channel dimension `dim` (extent K) into
// [K / block, the other dims in order..., block]: `block` output channels become the
// innermost, contiguous dimension (vector loads along channels), and one block's values
// for every other index are contiguous (a conv's [K,C,R,S] -> [K/b,C,R,S,b], a dense
// layer's [K,N] along N -> [N/b,K,b]: a column strip streams from memory). Weights are
// constants, so this is done once, outside any timed run (at compile time in a plan).
// With `in_block` > 1 (dim 0, a convolution on channel-blocked input) the input channels
// are split as well, their inner part next to the output block: [K,C,R,S] ->
// [K/b,C/bi,R,S,bi,b], the order the kernel's reduction walks (channel in block, window,
// channel block), so a weight streams from memory in address order.
std::vector<float> pack_channel_blocks(const std::vector<float>& data,
                                       const std::vector<int64_t>& shape, int64_t block, int dim,
                                       int64_t in_block = 1);
std::vector<int64_t> packed_shape(const std::vector<int64_t>& shape, int64_t block, int dim,
                                  int64_t in_block = 1);

}  // namespace tlm
