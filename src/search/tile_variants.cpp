#include "search/tile_variants.h"

#include <algorithm>
#include <random>
#include <set>

#include "util/hardware.h"

namespace tlm {
namespace {

using Decisions = std::vector<int64_t>;

// When the cache tile at `point` does not divide its loop (the last tile shifts inward and
// computes some outputs twice), the legal divisors of the loop nearest below and above it.
std::vector<int64_t> dividing_neighbours(const ScheduleSpace& space, const Decisions& d,
                                         size_t point) {
  auto legal = space.legal_values(point, d);
  int64_t extent = *std::max_element(legal.begin(), legal.end()), tile = d[point];
  if (extent % tile == 0) return {};
  int64_t below = 0, above = 0;
  for (int64_t v : legal) {
    if (extent % v) continue;
    if (v < tile) below = std::max(below, v);
    if (v > tile && (above == 0 || v < above)) above = v;
  }
  std::vector<int64_t> out;
  for (int64_t v : {below, above})
    if (v > 0) out.push_back(v);
  return out;
}

// The legal value of `point` one step (`direction` +1 or -1) from its value in `d`, or -1
// when there is none.
int64_t stepped_value(const ScheduleSpace& space, const Decisions& d, size_t point, int direction) {
  auto legal = space.legal_values(point, d);
  auto at = std::find(legal.begin(), legal.end(), d[point]) - legal.begin();
  auto to = at + direction;
  if (at >= std::ptrdiff_t(legal.size()) || to < 0 || to >= std::ptrdiff_t(legal.size())) return -1;
  return legal[size_t(to)];
}

}  // namespace

std::vector<size_t> points_named(const ScheduleSpace& space, const std::string& prefix) {
  std::vector<size_t> points;
  for (size_t i = 0; i < space.num_points(); ++i)
    if (space.point(i).name.rfind(prefix, 0) == 0) points.push_back(i);
  return points;
}

int64_t register_tile_accumulators(const Schedule& schedule) {
  int64_t elements = 1;
  for (int64_t t : schedule.output.tile2) elements *= t;
  return elements / std::max(1, schedule.output.vector_width);
}

std::vector<Decisions> tile_variants(const ScheduleSpace& space, const Decisions& decisions,
                                     int64_t max_accumulators) {
  std::mt19937_64 rng(1);  // repair draws only for missing points; none are
  std::set<Decisions> seen{decisions};
  std::vector<Decisions> variants;
  auto consider = [&](Decisions d, size_t from) {
    d = space.repair(std::move(d), from, rng);
    if (!space.is_legal(d) || !seen.insert(d).second) return;
    if (register_tile_accumulators(space.decode(d)) <= max_accumulators) variants.push_back(d);
  };
  for (size_t p : points_named(space, "out.tile1."))
    for (int64_t tile : dividing_neighbours(space, decisions, p)) {
      Decisions d = decisions;
      d[p] = tile;
      consider(d, p + 1);
    }
  std::vector<size_t> points = points_named(space, "out.tile2.");
  for (size_t p : points)
    for (int direction : {+1, -1}) {
      Decisions d = decisions;
      d[p] = stepped_value(space, decisions, p, direction);
      if (d[p] >= 0) consider(d, p + 1);
    }
  for (size_t grown : points)
    for (size_t shrunk : points) {
      if (grown == shrunk) continue;
      Decisions d = decisions;
      d[grown] = stepped_value(space, decisions, grown, +1);
      d[shrunk] = stepped_value(space, decisions, shrunk, -1);
      if (d[grown] >= 0 && d[shrunk] >= 0) consider(d, std::min(grown, shrunk) + 1);
    }
  return variants;
}

int64_t host_accumulator_budget() {
  return detect_hardware().vector_bits >= 512 ? 28 : 12;
}

}  // namespace tlm
