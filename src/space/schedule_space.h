// ScheduleSpace: every legal schedule of one task on an x86-64 CPU, as a fixed sequence
// of decision points. Each point offers every legal value given the decisions before it
// (cache tiles are all divisors of their loop, plus the powers of two below it, whose last
// tile shifts inward; register tiles divide cache tiles), so any sequence of legal
// choices is a schedule that compiles and computes the reference result.
//
// Sketch rules (in the spirit of Ansor's CPU sketches), in point order:
//   layout       : weights packed in blocks of output channels (conv), or plain
//   output stage : two-level tiling of every pure loop (cache tile, register tile), the
//                  vectorized loop and its width, unrolling, parallel granularity
//   other stages : (latest first) where it is computed (inline, root, cache tile, register
//                  tile), its vector width, the split of each reduction loop, the order of
//                  reduction loops around the register tile, unrolling the reduction.
// The point list and the legal-value rules live here; the Halide side is apply_schedule.
#pragma once
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ops/task_shape.h"
#include "space/schedule.h"

namespace tlm {

// How a point's legal values are found.
struct DecisionPoint {
  enum class Rule {
    Fixed,          // `values`
    DivisorsOf,     // divisors of the decision at `ref`
    VectorWidth,    // powers of two <= `cap` dividing the register tile of the chosen dim
    UnrollIfSmall,  // {0, 1} if the decision at `ref` is <= `cap`, else {0}
    AtMost,         // {1 .. the decision at `ref`}: no deeper than the consumer's location
    RegionWidth,    // powers of two <= `cap` dividing the stage's region, which depends on
                    // its location (`ref`): `extent` at root, else the output's tile of
                    // `output_dim`; the vector loop never has a tail
    ParallelLoops,  // how many outer tile loops (outermost first) are fused and run in
                    // parallel: 0, or any count whose last loop has more than one
                    // iteration (adding a one-iteration loop gives the same program)
  };
  std::string name;
  Rule rule = Rule::Fixed;
  std::vector<int64_t> values;
  int ref = -1;
  int64_t cap = 0;
  int64_t extent = 0;
  int output_dim = -1;
};

class ScheduleSpace {
 public:
  explicit ScheduleSpace(const TaskShape& shape);

  const TaskShape& shape() const { return shape_; }
  size_t num_points() const { return points_.size(); }
  const DecisionPoint& point(size_t i) const { return points_[i]; }
  // Legal values of point i given the decisions at points 0..i-1 (prefix may be longer).
  std::vector<int64_t> legal_values(size_t i, const std::vector<int64_t>& prefix) const;
  // The legal values a model may propose (lang's DecisionCursor for generation): all of
  // them, except that a task of at least kSerialFlopsCap FLOPs is never proposed on one
  // thread (out.parallel 0) when it can run in parallel. Measured on a 2-core Zen 4 host's
  // store (374 conv, dense and matmul tasks of 5 MFLOP or more): one thread was never
  // faster than the best parallel schedule, and up to 49x slower; a model's top-1 on one thread
  // cost MobileNetV2 0.13 ms and EfficientNet-B0 0.19 ms. Below it one thread often wins
  // (squeeze-excite layers). Nor a cache tile of output-channel blocks that does not
  // divide them (TaskShape::channel_blocks_dim): its last tile shifts inward and computes a
  // block twice, and keeps the rows from going first (apply_schedule.h). MobileNetV2's
  // 144->24 projection at 56x56 tiled its 3 blocks by 2 and ran 0.56x its speed alone
  // (bench/reports/dense_columns_first_s62_intel.txt). Searches, records and training still
  // see the whole space.
  std::vector<int64_t> proposable_values(size_t i, const std::vector<int64_t>& prefix) const;
  static constexpr double kSerialFlopsCap = 5e6;

  // The legal values of point i in words: the list itself, or the rule that depends on
  // earlier decisions.
  std::string describe_point(size_t i) const;

  // Throws tlm::Error naming the first point whose value is not legal.
  void check(const std::vector<int64_t>& decisions) const;
  bool is_legal(const std::vector<int64_t>& decisions) const;
  // Decisions recorded before this space gained a point, in today's form: dense tasks had
  // no layout.weight_block until session 16, nor Winograd products until session 61
  // (earlier_form, ops/task_spec.h), and a record without it read the plain layout
  // (block 1). Anything else is returned unchanged.
  std::vector<int64_t> upgrade(std::vector<int64_t> recorded) const;

  std::vector<int64_t> sample(std::mt19937_64& rng) const;
  // Keeps decisions[0..from) and every later decision that is still legal; an illegal one
  // becomes the nearest legal value, a missing one (-1 or past the end) a random one.
  // The result is always a complete, legal decision list.
  std::vector<int64_t> repair(std::vector<int64_t> decisions, size_t from,
                              std::mt19937_64& rng) const;

  Schedule decode(const std::vector<int64_t>& decisions) const;

  double log10_size() const;
  std::string size_text() const;  // exact when below 1e15, else "10^x"

 private:
  int add(DecisionPoint point);
  void add_output_points();
  void add_stage_points(size_t stage);
  std::vector<int> references(size_t i) const;  // earlier points whose values rule point i
  // Whether vectors along output loop `vector_dim` must stay inside one weight block
  // (TaskShape::packed_vector_dim).
  bool vector_in_weight_block(int64_t vector_dim) const;
  long double count_from(size_t i, std::vector<int64_t>& prefix,
                         std::map<std::vector<int64_t>, long double>& memo) const;

  TaskShape shape_;
  std::vector<DecisionPoint> points_;
  // Indices of points, for decode and counting.
  std::vector<int> tile1_, tile2_;
  int weight_block_ = -1;
  int vector_dim_ = -1, vector_width_ = -1, unroll_ = -1, parallel_ = -1;
  struct StagePoints {
    int location = -1, vector_width = -1, order = -1, unroll_reduction = -1;
    std::vector<int> rsplit;
  };
  std::vector<StagePoints> stage_points_;
  std::vector<std::vector<int>> live_;  // per index: earlier points that later rules read
};

std::vector<int64_t> divisors(int64_t n);

// The name of every decision point any task's space can have (the tensor language has a
// token for each).
std::vector<std::string> all_point_names();

// Whether the schedule stores each output element exactly once: every cache tile of the
// output divides its loop (register tiles divide cache tiles, vectors register tiles),
// so no last tile is shifted inwards over elements already stored. An epilogue operand
// read only at the element stored may then be stored over (compiler/in_place.h).
bool stores_each_output_once(const TaskShape& shape, const Schedule& schedule);

}  // namespace tlm
