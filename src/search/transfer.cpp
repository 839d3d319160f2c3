#include "search/transfer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "measure/timing.h"
#include "ops/registry.h"

namespace tlm {
namespace {

// Parameters that say how activations are laid out, not what is computed: tasks that
// differ only in them are near (their schedules carry over, see carry_into_blocks).
bool is_layout_param(const std::string& name) {
  return name == "in_block" || name == "out_block" || name == "block";
}

// How far apart two tasks of one op are: log2 ratios of their integer parameters, plus
// one for each epilogue step they do not share.
double shape_distance(const TaskSpec& a, const TaskSpec& b) {
  double distance = 0;
  for (const auto& [name, value] : a.params) {
    auto other = b.params.find(name);
    if (other == b.params.end() || other->second == value) continue;
    if (is_layout_param(name)) {
      distance += 0.5;
      continue;
    }
    char* end_a = nullptr;
    char* end_b = nullptr;
    double x = std::strtod(value.c_str(), &end_a), y = std::strtod(other->second.c_str(), &end_b);
    if (*end_a || *end_b)
      distance += 4;  // a different word (a pooling kind): far
    else
      distance += std::fabs(std::log2(x + 1) - std::log2(y + 1));
  }
  auto wa = a.epilogue_words(), wb = b.epilogue_words();
  std::set<std::string> ea(wa.begin(), wa.end()), eb(wb.begin(), wb.end());
  for (const auto& e : ea) distance += eb.count(e) ? 0 : 1;
  for (const auto& e : eb) distance += ea.count(e) ? 0 : 1;
  return distance;
}

using NamedDecisions = std::map<std::string, int64_t>;

// The reduction loops of stage `name` in a space (0 when it has no such stage).
size_t reduction_loops(const ScheduleSpace& space, const std::string& name) {
  for (const auto& stage : space.shape().stages)
    if (stage.name == name) return stage.rextents.size();
  return 0;
}

// A schedule of a task writing NCHW, renamed for the same task writing channel blocks of
// b: the output loops (x, y, c, n) become (c in block, x, y, c block, n), so each output
// decision of dim d moves to dim d + 1 (the channel tiles divided by b), the new in-block
// loop is tiled whole and vectorized where the channel loop was; a reduction over input
// channels read in blocks, (s, r, c) -> (c in block, s, r, c block), splits its channels
// over the blocks. Repair makes whatever does not fit legal.
void carry_into_blocks(NamedDecisions& named, const TaskSpec& from, const TaskSpec& to,
                       const ScheduleSpace& from_space, const ScheduleSpace& to_space) {
  int64_t block = to.output_block();
  int rank = task_def(from.kind).output_rank, channel = rank - 1 - task_def(from.kind).channel_dim;
  if (from.output_block() == 1 && block > 1 && to.output_rank() == rank + 1) {
    NamedDecisions moved = named;
    for (int d = 0; d < rank; ++d)
      for (std::string level : {"out.tile1.d", "out.tile2.d"}) {
        auto found = named.find(level + std::to_string(d));
        if (found == named.end()) continue;
        int64_t tile = d == channel ? std::max<int64_t>(1, found->second / block) : found->second;
        moved[level + std::to_string(d + 1)] = tile;
      }
    moved["out.tile1.d0"] = moved["out.tile2.d0"] = block;
    if (named.count("out.vector_dim"))
      moved["out.vector_dim"] =
          named["out.vector_dim"] == channel ? 0 : named["out.vector_dim"] + 1;
    named = moved;
  }
  size_t loops = reduction_loops(from_space, "acc");
  if (loops == 0 || reduction_loops(to_space, "acc") != loops + 1 || !to.params.count("in_block"))
    return;
  int64_t in_block = to.get("in_block");
  NamedDecisions moved = named;
  for (size_t r = 0; r < loops; ++r) {
    auto found = named.find("acc.rsplit.r" + std::to_string(r));
    if (found == named.end()) continue;
    bool channels = r + 1 == loops;
    moved["acc.rsplit.r" + std::to_string(r + 1)] =
        channels ? std::max<int64_t>(1, found->second / in_block) : found->second;
  }
  moved["acc.rsplit.r0"] = in_block;
  named = moved;
}

// `decisions` of `from` carried into `to` by point name (through carry_into_blocks when
// `to` is `from` in channel blocks); points `from` lacks are -1.
std::vector<int64_t> by_point_name(const TaskSpec& from_task, const ScheduleSpace& from,
                                   const std::vector<int64_t>& decisions, const TaskSpec& to_task,
                                   const ScheduleSpace& to) {
  NamedDecisions named;
  for (size_t i = 0; i < from.num_points() && i < decisions.size(); ++i)
    named[from.point(i).name] = decisions[i];
  carry_into_blocks(named, from_task, to_task, from, to);
  std::vector<int64_t> carried(to.num_points(), -1);
  for (size_t i = 0; i < to.num_points(); ++i) {
    auto found = named.find(to.point(i).name);
    if (found != named.end()) carried[i] = found->second;
  }
  return carried;
}

// The nearest task's schedule in every other weight layout too: which layout pays
// depends on the machine and the kernel more than on the shape, and a store measured
// before a task kind had the layout decision holds only the plain one.
void add_layout_variants(const ScheduleSpace& space, std::mt19937_64& rng,
                         std::set<std::vector<int64_t>>& seen,
                         std::vector<std::vector<int64_t>>& seeds) {
  if (space.num_points() == 0 || space.point(0).name != "layout.weight_block") return;
  std::vector<int64_t> first = seeds.front();
  for (int64_t block : space.legal_values(0, {})) {
    first[0] = block;
    auto variant = space.repair(first, 1, rng);
    if (seen.insert(variant).second) seeds.push_back(variant);
  }
}

}  // namespace

std::vector<std::vector<int64_t>> transfer_seeds(const RecordStore& store, const TaskSpec& task,
                                                 const ScheduleSpace& space,
                                                 const std::string& hardware, int count,
                                                 uint64_t seed,
                                                 const std::vector<std::string>& excluded) {
  std::set<std::string> skip = {task.key()};
  for (const auto& spec : excluded) skip.insert(parse_task_spec(spec).key());
  std::vector<std::pair<double, TaskSpec>> nearest;
  for (const auto& key : store.task_keys()) {
    TaskSpec other;
    if (skip.count(key) || !read_stored_task(key, other)) continue;
    if (other.kind == task.kind) nearest.push_back({shape_distance(task, other), other});
  }
  std::stable_sort(nearest.begin(), nearest.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::mt19937_64 rng(seed);
  std::set<std::vector<int64_t>> seen;
  std::vector<std::vector<int64_t>> seeds;
  for (const auto& [distance, other] : nearest) {
    if (int(seeds.size()) >= count) break;
    auto best = store.best(other.key(), timed_fingerprint(hardware, other), 1);
    if (best.empty()) best = store.best(other.key(), hardware, 1);  // warm: a seed all the same
    if (best.empty()) continue;
    ScheduleSpace from(describe_task(other));
    auto carried = space.repair(by_point_name(other, from, best[0].decisions, task, space), 0, rng);
    if (seen.insert(carried).second) seeds.push_back(carried);
    if (seeds.size() == 1) add_layout_variants(space, rng, seen, seeds);
  }
  if (int(seeds.size()) > count) seeds.resize(size_t(count));
  return seeds;
}

}  // namespace tlm
