#include "tune/improve.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "measure/timing.h"
#include "model/dataset.h"
#include "model/registry.h"
#include "model/schedule_model.h"
#include "tune/generated.h"
#include "util/error.h"

namespace tlm {
namespace {

constexpr int kGateRepeats = 3;  // interleaved measurements per held-out task

// Geomean latency over the held-out tasks of each model's top-1 schedule. Per task the
// two are measured interleaved kGateRepeats times and each keeps its median (one run's
// geomean moved +-10% between rounds on the same schedules). A schedule that fails
// counts as 10x the other's latency.
std::pair<double, double> held_out_geomeans(ScheduleModel& a, ScheduleModel& b,
                                            const std::vector<std::string>& tasks,
                                            Measurer& measurer) {
  double log_a = 0, log_b = 0;
  for (const auto& spec : tasks) {
    TaskSpec task = parse_task_spec(spec);
    auto top_a = a.top_one(task, detect_hardware());
    auto top_b = b.top_one(task, detect_hardware());
    std::vector<double> runs_a, runs_b;
    for (int k = 0; k < kGateRepeats; ++k) {
      auto r = measurer.measure_interleaved(task, {{"space", top_a}, {"space", top_b}});
      runs_a.push_back(r[0].status == "ok" ? r[0].timing.median_ms : 0);
      runs_b.push_back(r[1].status == "ok" ? r[1].timing.median_ms : 0);
    }
    double ms_a = median(runs_a), ms_b = median(runs_b);
    if (ms_a == 0 && ms_b == 0) ms_a = ms_b = 1;
    if (ms_a == 0) ms_a = 10 * ms_b;
    if (ms_b == 0) ms_b = 10 * ms_a;
    log_a += std::log(ms_a), log_b += std::log(ms_b);
  }
  double n = std::max<size_t>(1, tasks.size());
  return {std::exp(log_a / n), std::exp(log_b / n)};
}

int rounds_done(const std::string& audit_path) {
  std::ifstream in(audit_path);
  std::string line;
  int done = 0;
  while (std::getline(in, line))
    if (!line.empty()) done = nlohmann::json::parse(line).at("round").get<int>();
  return done;
}

// The checkpoint every round fine-tunes from: the validated base's parent (the pretrained
// model the base was fine-tuned from), so that a candidate is the base's recipe on more
// data rather than a fine-tune stacked on fine-tunes; the default when the base has none.
std::string finetune_init(const Registry& registry) {
  std::string base = registry.base_id();
  if (!base.empty()) {
    std::string pretrained = registry.show(base).parent;
    if (!pretrained.empty()) return pretrained;
  }
  return registry.default_id();
}

// Fine-tunes on the store's schedules the way the parent learned (the best per task, or
// every speed labeled when the parent reads speed classes); returns the new checkpoint's id.
std::string finetune_round(const ImproveOptions& o, RecordStore& store, const Registry& registry,
                           int round, bool speed_prompt) {
  TrainOptions train;
  train.run_dir = o.run_dir + "/round-" + std::to_string(round);
  ::mkdir(train.run_dir.c_str(), 0755);
  train.data_path = train.run_dir + "/finetune.bin";
  train.steps = o.finetune_steps;
  train.speed_prompt = speed_prompt;
  Dataset data = speed_prompt ? measured_by_speed(store, detect_hardware(), o.speed_per_task,
                                                  o.held_out, o.best_copies)
                              : best_measured(store, detect_hardware(), o.per_task, o.held_out);
  write_dataset(train.data_path, data);
  return train_checkpoint(train, {}, registry.path_of(finetune_init(registry)), o.models_dir,
                          "tlm improve round " + std::to_string(round))
      .id;
}

// The parent's candidates for one task: its beam top half of K, and K/2 samples drawn
// with the round as seed, so that a round after an unpromoted one (same parent, same
// beam) still brings new measurements.
int measure_round(ScheduleModel& parent, const std::string& spec, int round,
                  const ImproveOptions& o, Measurer& measurer, RecordStore& store) {
  TaskSpec task = parse_task_spec(spec);
  int samples = o.trials_per_task / 2;
  int measured = measure_model_schedules(parent, task, {o.trials_per_task - samples}, "tlm",
                                         measurer, store, o.hardware)
                     .measured;
  if (samples > 0)
    measured += measure_model_schedules(parent, task, {samples, "sample", uint64_t(round), 1.0},
                                        "tlm", measurer, store, o.hardware)
                    .measured;
  return measured;
}

RoundResult run_round(const ImproveOptions& o, Measurer& measurer, RecordStore& store, int round) {
  Registry registry(o.models_dir);
  RoundResult result;
  result.round = round;
  result.parent = registry.default_id();
  auto parent = ScheduleModel::load(registry.path_of(result.parent));
  for (size_t i = 0; i < o.tasks.size(); ++i) {
    result.measured += measure_round(*parent, o.tasks[i], round, o, measurer, store);
    std::fprintf(stderr, "\r  round %d: measured %zu/%zu tasks   ", round, i + 1, o.tasks.size());
  }
  std::fprintf(stderr, "\n");
  result.candidate = finetune_round(o, store, registry, round, parent->config().speed_prompt);
  auto candidate = ScheduleModel::load(registry.path_of(result.candidate));
  auto [parent_ms, candidate_ms] = held_out_geomeans(*parent, *candidate, o.held_out, measurer);
  result.parent_geomean_ms = parent_ms;
  result.candidate_geomean_ms = candidate_ms;
  result.promoted = candidate_ms < parent_ms;
  if (result.promoted)
    registry.promote(result.candidate, "improve round " + std::to_string(round) +
                                           ": held-out geomean " + std::to_string(parent_ms) +
                                           " -> " + std::to_string(candidate_ms) + " ms");
  return result;
}

}  // namespace

std::vector<RoundResult> run_improve(const ImproveOptions& o, Measurer& measurer,
                                     RecordStore& store) {
  if (o.rounds < 1 || o.rounds > kMaxImproveRounds)
    throw Error("improve: --rounds must be 1.." + std::to_string(kMaxImproveRounds));
  if (o.tasks.empty() || o.held_out.empty())
    throw Error("improve: needs training tasks and held-out tasks");
  if (Registry(o.models_dir).default_id().empty())
    throw Error("improve: no default model in '" + o.models_dir + "'");
  ::mkdir(o.run_dir.c_str(), 0755);
  std::string audit = o.run_dir + "/audit.jsonl";
  std::vector<RoundResult> results;
  for (int round = rounds_done(audit) + 1; round <= o.rounds; ++round) {
    RoundResult r = run_round(o, measurer, store, round);
    std::ofstream(audit, std::ios::app)
        << nlohmann::json(
               {{"round", r.round},
                {"time", double(std::time(nullptr))},
                {"parent", r.parent},
                {"candidate", r.candidate},
                {"measured", r.measured},
                {"held_out_geomean_ms",
                 {{"parent", r.parent_geomean_ms}, {"candidate", r.candidate_geomean_ms}}},
                {"decision", r.promoted ? "promoted" : "kept, not promoted"}})
               .dump()
        << std::endl;
    results.push_back(r);
  }
  return results;
}

}  // namespace tlm
