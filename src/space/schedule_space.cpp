#include "space/schedule_space.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "util/error.h"

namespace tlm {
namespace {

constexpr int64_t kMaxOutputVector = 64;  // 4 AVX-512 registers of fp32 lanes
constexpr int64_t kOneRegister = 16;      // fp32 lanes of one AVX-512 register
constexpr int64_t kMaxReductionUnroll = 16;
const std::vector<int64_t> kStageVectorWidths = {1, 2, 4, 8, 16};

std::vector<int64_t> range(int64_t lo, int64_t hi) {  // [lo, hi]
  std::vector<int64_t> v;
  for (int64_t i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

// Cache-tile sizes of a loop of extent n: every divisor, and the powers of two below n
// that do not divide it (the last tile then shifts inward and overlaps the one before:
// a prime extent such as 71 would otherwise offer only 1 and 71).
std::vector<int64_t> tile_sizes(int64_t n) {
  std::vector<int64_t> sizes = divisors(n);
  for (int64_t p = 2; p < n; p *= 2)
    if (n % p) sizes.push_back(p);
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

std::vector<int64_t> power_of_two_divisors(int64_t n, int64_t cap) {
  std::vector<int64_t> v;
  for (int64_t w = 1; w <= cap && n % w == 0; w *= 2) v.push_back(w);
  return v;
}

// Output vector widths over a register tile of `tile`: its power-of-two divisors up to
// `cap`, and the whole tile when it is not a power of two but fits one AVX-512 register
// (14 of a 56-wide row: one 16-lane vector with two lanes idle, where powers of two stop
// at 8; TVM MetaSchedule's choice for ResNet's 3x3 convolutions on Zen 5).
std::vector<int64_t> output_vector_widths(int64_t tile, int64_t cap) {
  std::vector<int64_t> widths = power_of_two_divisors(tile, cap);
  if (tile > widths.back() && tile <= kOneRegister) widths.push_back(tile);
  return widths;
}

}  // namespace

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t i = 1; i * i <= n; ++i) {
    if (n % i) continue;
    small.push_back(i);
    if (i != n / i) large.push_back(n / i);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

ScheduleSpace::ScheduleSpace(const TaskShape& shape) : shape_(shape) {
  stage_points_.resize(shape_.stages.size());
  if (shape_.fixed_schedule) {  // the algorithm schedules itself: nothing to decide
    live_.resize(1);
    return;
  }
  if (shape_.packable_input >= 0) {
    std::vector<int64_t> blocks = {1};
    for (int64_t b : {4, 8, 16, 32})
      if (shape_.packable_extent % b == 0) blocks.push_back(b);
    weight_block_ = add({"layout.weight_block", DecisionPoint::Rule::Fixed, blocks});
  }
  add_output_points();
  for (size_t s = shape_.stages.size() - 1; s-- > 0;) add_stage_points(s);
  live_.resize(points_.size() + 1);
  std::set<int> read;
  for (size_t i = points_.size(); i-- > 0;) {
    for (int r : references(i)) read.insert(r);
    for (int r : read)
      if (r < int(i)) live_[i].push_back(r);
  }
}

int ScheduleSpace::add(DecisionPoint point) {
  points_.push_back(std::move(point));
  return static_cast<int>(points_.size()) - 1;
}

void ScheduleSpace::add_output_points() {
  const auto& extents = shape_.output().extents;
  for (size_t d = 0; d < extents.size(); ++d) {
    std::string dim = "d" + std::to_string(d);
    tile1_.push_back(add({"out.tile1." + dim, DecisionPoint::Rule::Fixed, tile_sizes(extents[d])}));
    tile2_.push_back(add({"out.tile2." + dim, DecisionPoint::Rule::DivisorsOf, {}, tile1_.back()}));
  }
  int dims = static_cast<int>(extents.size());
  vector_dim_ = add({"out.vector_dim", DecisionPoint::Rule::Fixed, range(0, dims - 1)});
  vector_width_ = add(
      {"out.vector_width", DecisionPoint::Rule::VectorWidth, {}, vector_dim_, kMaxOutputVector});
  unroll_ = add({"out.unroll", DecisionPoint::Rule::Fixed, {0, 1}});
  DecisionPoint parallel;
  parallel.name = "out.parallel";
  parallel.rule = DecisionPoint::Rule::ParallelLoops;
  parallel.values = extents;  // the output's loop extents, innermost first
  parallel_ = add(parallel);
}

void ScheduleSpace::add_stage_points(size_t s) {
  const StageShape& stage = shape_.stages[s];
  StagePoints& sp = stage_points_[s];
  std::string prefix = stage.name + ".";
  if (stage.feeds >= 0 && stage.kind == StageKind::Producer) {
    std::vector<int64_t> locations = {kRoot, kWithConsumer, kInsideConsumer};
    if (stage.inlinable) locations.insert(locations.begin(), kInline);
    sp.location = add({prefix + "location", DecisionPoint::Rule::Fixed, locations});
  } else if (stage.feeds >= 0) {
    sp.location = add({prefix + "location",
                       DecisionPoint::Rule::AtMost,
                       {},
                       stage_points_[stage.feeds].location});
  } else {
    std::vector<int64_t> locations = {kRoot, kCacheTile, kRegisterTile};
    if (stage.kind == StageKind::Producer) locations.insert(locations.begin(), kInline);
    sp.location = add({prefix + "location", DecisionPoint::Rule::Fixed, locations});
  }
  if (stage.kind == StageKind::Reduction && !stage.extents.empty() && stage.output_dim[0] >= 0) {
    DecisionPoint width{prefix + "vector_width",
                        DecisionPoint::Rule::RegionWidth,
                        {},
                        sp.location,
                        kStageVectorWidths.back()};
    width.extent = stage.extents[0];
    width.output_dim = stage.output_dim[0];
    sp.vector_width = add(width);
  } else if (stage.kind != StageKind::Anchor) {
    sp.vector_width =
        add({prefix + "vector_width", DecisionPoint::Rule::Fixed, kStageVectorWidths});
  }
  for (size_t r = 0; r < stage.rextents.size(); ++r)
    sp.rsplit.push_back(add({prefix + "rsplit.r" + std::to_string(r), DecisionPoint::Rule::Fixed,
                             divisors(stage.rextents[r])}));
  if (stage.rextents.empty()) return;
  sp.order = add({prefix + "reduction_order", DecisionPoint::Rule::Fixed, range(0, 2)});
  sp.unroll_reduction = add({prefix + "unroll_reduction",
                             DecisionPoint::Rule::UnrollIfSmall,
                             {},
                             sp.rsplit[0],
                             kMaxReductionUnroll});
}

std::vector<std::string> all_point_names() {
  std::vector<std::string> names = {"layout.weight_block"};
  for (size_t d = 0; d < kMaxLoopDims; ++d) {
    names.push_back("out.tile1.d" + std::to_string(d));
    names.push_back("out.tile2.d" + std::to_string(d));
  }
  for (const char* attr : {"vector_dim", "vector_width", "unroll", "parallel"})
    names.push_back(std::string("out.") + attr);
  for (const auto& stage : known_stage_names()) {
    if (stage == "out") continue;
    for (const char* attr : {"location", "vector_width", "reduction_order", "unroll_reduction"})
      names.push_back(stage + "." + attr);
    for (size_t r = 0; r < kMaxLoopDims; ++r)
      names.push_back(stage + ".rsplit.r" + std::to_string(r));
  }
  return names;
}

bool ScheduleSpace::vector_in_weight_block(int64_t vector_dim) const {
  return shape_.packed_vector_dim >= 0 && weight_block_ >= 0 &&
         vector_dim == shape_.packed_vector_dim;
}

std::vector<int64_t> ScheduleSpace::legal_values(size_t i,
                                                 const std::vector<int64_t>& prefix) const {
  const DecisionPoint& p = points_.at(i);
  switch (p.rule) {
    case DecisionPoint::Rule::Fixed:
      return p.values;
    case DecisionPoint::Rule::DivisorsOf:
      return divisors(prefix.at(p.ref));
    case DecisionPoint::Rule::VectorWidth: {
      auto widths = output_vector_widths(prefix.at(tile2_.at(prefix.at(p.ref))), p.cap);
      if (!vector_in_weight_block(prefix.at(p.ref))) return widths;
      int64_t block = prefix.at(weight_block_);
      if (block <= 1) return widths;  // the plain layout: no blocks to stay in
      widths.erase(
          std::remove_if(widths.begin(), widths.end(), [&](int64_t w) { return block % w != 0; }),
          widths.end());
      return widths;
    }
    case DecisionPoint::Rule::UnrollIfSmall:
      return prefix.at(p.ref) <= p.cap ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
    case DecisionPoint::Rule::AtMost:
      return range(1, prefix.at(p.ref));
    case DecisionPoint::Rule::ParallelLoops: {
      std::vector<int64_t> counts = {0};
      size_t dims = p.values.size();
      int64_t outside = 1;  // iterations of the loops outside the k-th
      for (size_t k = 1; k <= dims; ++k) {
        size_t d = dims - k;  // the loop the k-th count adds
        int64_t tile = prefix.at(tile1_.at(d));
        int64_t iterations = (p.values[d] + tile - 1) / tile;
        // Only the outermost fused loop may have a last tile that shifts inward (Halide 14
        // misplaces a shifted loop fused inside another when stages are computed in it);
        // loops of one iteration outside it are not fused (apply_schedule.cpp).
        if (outside > 1 && p.values[d] % tile != 0) break;
        if (iterations > 1) counts.push_back(int64_t(k));
        outside *= iterations;
      }
      return counts;
    }
    case DecisionPoint::Rule::RegionWidth: {
      int64_t location = prefix.at(p.ref);
      int64_t region = location == kCacheTile      ? prefix.at(tile1_.at(p.output_dim))
                       : location == kRegisterTile ? prefix.at(tile2_.at(p.output_dim))
                                                   : p.extent;
      return power_of_two_divisors(region, p.cap);
    }
  }
  return {};
}

std::vector<int64_t> ScheduleSpace::proposable_values(size_t i,
                                                      const std::vector<int64_t>& prefix) const {
  std::vector<int64_t> values = legal_values(i, prefix);
  if (int(i) == parallel_ && shape_.flops >= kSerialFlopsCap && values.size() > 1)
    values.erase(std::remove(values.begin(), values.end(), 0), values.end());
  int blocks_dim = shape_.channel_blocks_dim;
  if (blocks_dim >= 0 && size_t(blocks_dim) < tile1_.size() && int(i) == tile1_[blocks_dim]) {
    int64_t blocks = shape_.output().extents[size_t(blocks_dim)];
    values.erase(std::remove_if(values.begin(), values.end(),
                                [&](int64_t tile) { return blocks % tile != 0; }),
                 values.end());
  }
  return values;
}

std::string ScheduleSpace::describe_point(size_t i) const {
  const DecisionPoint& p = points_.at(i);
  std::string cap = std::to_string(p.cap);
  switch (p.rule) {
    case DecisionPoint::Rule::Fixed: {
      std::string text = "{";
      for (size_t k = 0; k < p.values.size(); ++k)
        text += (k ? "," : "") + std::to_string(p.values[k]);
      return text + "}";
    }
    case DecisionPoint::Rule::DivisorsOf:
      return "divisors of " + points_[p.ref].name;
    case DecisionPoint::Rule::VectorWidth: {
      std::string text = "powers of two <= " + cap + " dividing the register tile of " +
                         points_[p.ref].name + ", and that tile itself when it is at most 16";
      if (!vector_in_weight_block(shape_.packed_vector_dim)) return text;
      return text + "; along d" + std::to_string(shape_.packed_vector_dim) +
             " only those dividing layout.weight_block when it is above 1";
    }
    case DecisionPoint::Rule::UnrollIfSmall:
      return "{0,1} if " + points_[p.ref].name + " <= " + cap + ", else {0}";
    case DecisionPoint::Rule::AtMost:
      return "{1 .. " + points_[p.ref].name + "}";
    case DecisionPoint::Rule::ParallelLoops:
      return "0, or k outer loops fused whose k-th (from the outermost) has > 1 iteration, "
             "the tiles of those inside one of more than one iteration dividing their loops";
    case DecisionPoint::Rule::RegionWidth:
      return "powers of two <= " + cap + " dividing the region " + points_[p.ref].name +
             " gives (" + std::to_string(p.extent) + " at root, else the output tile of d" +
             std::to_string(p.output_dim) + ")";
  }
  return "";
}

void ScheduleSpace::check(const std::vector<int64_t>& decisions) const {
  if (decisions.size() != points_.size())
    throw Error("schedule has " + std::to_string(decisions.size()) + " decisions, the space has " +
                std::to_string(points_.size()) + " points");
  for (size_t i = 0; i < points_.size(); ++i) {
    auto legal = legal_values(i, decisions);
    if (std::find(legal.begin(), legal.end(), decisions[i]) == legal.end())
      throw Error("decision " + points_[i].name + "=" + std::to_string(decisions[i]) +
                  " is not legal here");
  }
}

bool ScheduleSpace::is_legal(const std::vector<int64_t>& decisions) const {
  try {
    check(decisions);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::vector<int64_t> ScheduleSpace::upgrade(std::vector<int64_t> recorded) const {
  if (weight_block_ == 0 && recorded.size() + 1 == points_.size())
    recorded.insert(recorded.begin(), 1);
  return recorded;
}

std::vector<int64_t> ScheduleSpace::sample(std::mt19937_64& rng) const {
  return repair({}, 0, rng);
}

std::vector<int64_t> ScheduleSpace::repair(std::vector<int64_t> decisions, size_t from,
                                           std::mt19937_64& rng) const {
  decisions.resize(points_.size(), -1);
  for (size_t i = std::min(from, points_.size()); i < points_.size(); ++i) {
    auto legal = legal_values(i, decisions);
    if (std::find(legal.begin(), legal.end(), decisions[i]) != legal.end()) continue;
    if (decisions[i] >= 0) {  // the nearest legal value keeps a repaired child near its parent
      auto distance = [&](int64_t v) { return std::llabs(v - decisions[i]); };
      decisions[i] = *std::min_element(legal.begin(), legal.end(), [&](int64_t a, int64_t b) {
        return distance(a) < distance(b);
      });
      continue;
    }
    decisions[i] = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
  }
  return decisions;
}

Schedule ScheduleSpace::decode(const std::vector<int64_t>& decisions) const {
  check(decisions);
  Schedule schedule;
  if (shape_.fixed_schedule) return schedule;
  if (weight_block_ >= 0) schedule.weight_block = decisions[weight_block_];
  OutputSchedule& out = schedule.output;
  for (size_t d = 0; d < tile1_.size(); ++d) {
    out.tile1.push_back(decisions[tile1_[d]]);
    out.tile2.push_back(decisions[tile2_[d]]);
  }
  out.vector_dim = static_cast<int>(decisions[vector_dim_]);
  out.vector_width = static_cast<int>(decisions[vector_width_]);
  out.unroll = decisions[unroll_] != 0;
  out.parallel_loops = static_cast<int>(decisions[parallel_]);
  schedule.stages.resize(shape_.stages.size());
  for (size_t s = 0; s + 1 < shape_.stages.size(); ++s) {
    const StagePoints& sp = stage_points_[s];
    StageSchedule& st = schedule.stages[s];
    st.location = static_cast<int>(decisions[sp.location]);
    st.vector_width =
        sp.vector_width >= 0 ? static_cast<int>(decisions[sp.vector_width]) : out.vector_width;
    for (int r : sp.rsplit) st.rsplit.push_back(decisions[r]);
    if (sp.order >= 0) st.reduction_order = static_cast<int>(decisions[sp.order]);
    if (sp.unroll_reduction >= 0) st.unroll_reduction = decisions[sp.unroll_reduction] != 0;
  }
  return schedule;
}

std::vector<int> ScheduleSpace::references(size_t i) const {
  const DecisionPoint& p = points_[i];
  switch (p.rule) {
    case DecisionPoint::Rule::Fixed:
      return {};
    case DecisionPoint::Rule::VectorWidth: {
      std::vector<int> refs = tile2_;
      refs.push_back(p.ref);
      if (vector_in_weight_block(shape_.packed_vector_dim)) refs.push_back(weight_block_);
      return refs;
    }
    case DecisionPoint::Rule::RegionWidth:
      return {p.ref, tile1_[p.output_dim], tile2_[p.output_dim]};
    case DecisionPoint::Rule::ParallelLoops:
      return tile1_;
    default:
      return {p.ref};
  }
}

// Counts the completions of `prefix` (of length i). Completions depend only on the
// earlier values that later rules read (live_[i]), so counts are memoized on those.
long double ScheduleSpace::count_from(size_t i, std::vector<int64_t>& prefix,
                                      std::map<std::vector<int64_t>, long double>& memo) const {
  if (i == points_.size()) return 1;
  std::vector<int64_t> key = {int64_t(i)};
  for (int j : live_[i]) key.push_back(prefix[j]);
  auto found = memo.find(key);
  if (found != memo.end()) return found->second;
  long double total = 0;
  for (int64_t v : legal_values(i, prefix)) {
    prefix.push_back(v);
    total += count_from(i + 1, prefix, memo);
    prefix.pop_back();
  }
  memo[key] = total;
  return total;
}

double ScheduleSpace::log10_size() const {
  long double count = 0;
  {
    std::vector<int64_t> prefix;
    std::map<std::vector<int64_t>, long double> memo;
    count = count_from(0, prefix, memo);
  }
  // The memo leaves up to millions of small free chunks in glibc's fast bins; the next
  // large allocation would merge them all, wherever it happens (it made the model's next
  // generation 3x slower). Merge them here, once.
  malloc_trim(0);
  return std::log10(static_cast<double>(count));
}

std::string ScheduleSpace::size_text() const {
  double l = log10_size();
  char buf[64];
  if (l < 15)
    std::snprintf(buf, sizeof buf, "%.0f", std::round(std::pow(10.0, l)));
  else
    std::snprintf(buf, sizeof buf, "10^%.2f", l);
  return buf;
}

bool stores_each_output_once(const TaskShape& shape, const Schedule& schedule) {
  const std::vector<int64_t>& extents = shape.output().extents;
  for (size_t d = 0; d < extents.size(); ++d)
    if (d >= schedule.output.tile1.size() || extents[d] % schedule.output.tile1[d] != 0)
      return false;
  return true;
}

}  // namespace tlm
