#include "search/transfer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

namespace tlm {
namespace {

// How far apart two tasks of one op are: log2 ratios of their integer parameters, plus
// one for each epilogue step they do not share.
double shape_distance(const TaskSpec& a, const TaskSpec& b) {
  double distance = 0;
  for (const auto& [name, value] : a.params) {
    auto other = b.params.find(name);
    if (other == b.params.end() || other->second == value) continue;
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

// `decisions` of `from` carried into `to` by point name; points `from` lacks are -1.
std::vector<int64_t> by_point_name(const ScheduleSpace& from, const std::vector<int64_t>& decisions,
                                   const ScheduleSpace& to) {
  std::map<std::string, int64_t> named;
  for (size_t i = 0; i < from.num_points() && i < decisions.size(); ++i)
    named[from.point(i).name] = decisions[i];
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
    auto best = store.best(other.key(), hardware, 1);
    if (best.empty()) continue;
    ScheduleSpace from(describe_task(other));
    auto carried = space.repair(by_point_name(from, best[0].decisions, space), 0, rng);
    if (seen.insert(carried).second) seeds.push_back(carried);
    if (seeds.size() == 1) add_layout_variants(space, rng, seen, seeds);
  }
  if (int(seeds.size()) > count) seeds.resize(size_t(count));
  return seeds;
}

}  // namespace tlm
