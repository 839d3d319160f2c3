// Tile variants: a schedule with one cache tile that does not divide its loop set to the
// nearest loop divisors (its last tile shifted inward, computing outputs twice), or the
// register tile of one output loop one legal size larger or smaller, or one loop's grown
// while another's shrinks (Ansor's tile-size mutation, aimed at the register tile). The
// model's beam proposes whole schedules and tends to keep the tiles of the tasks it
// learned from: on ResNet-50's Winograd product (batch_matmul b=16, m=49, n=256, k=256)
// its proposals tiled the 49 rows by 16 or 32, or held 7 x 1 vectors of accumulators,
// while 49 rows by 7 x 2 vectors ran 1.3x faster alone. The task scheduler
// (task_scheduler.h) measures a few of these around each task's fastest schedule so far.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "space/schedule_space.h"

namespace tlm {

// The indices of the space's decision points whose names start with `prefix` (for example
// "out.tile2." for the register tile's sizes), in order.
std::vector<size_t> points_named(const ScheduleSpace& space, const std::string& prefix);

// Accumulators a schedule's register tile holds: its elements over the vector width.
int64_t register_tile_accumulators(const Schedule& schedule);

// Distinct legal variants of `decisions` (never `decisions` itself): dividing cache tiles
// first, then single register-tile steps, then pairs; each with at most `max_accumulators`
// accumulators; the points after the changed ones are kept where still legal and set to the nearest
// legal value otherwise.
std::vector<std::vector<int64_t>> tile_variants(const ScheduleSpace& space,
                                                const std::vector<int64_t>& decisions,
                                                int64_t max_accumulators);

// The accumulator budget of this host's vector registers: 28 of AVX-512's 32 (the rest
// hold operands), 12 of AVX2's 16.
int64_t host_accumulator_budget();

}  // namespace tlm
