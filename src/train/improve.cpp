#include "train/improve.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "measure/timing.h"
#include "model/dataset.h"
#include "model/registry.h"
#include "model/schedule_model.h"
#include "search/generated.h"
#include "util/error.h"

namespace tlm {
namespace {

constexpr int kGateRepeats = 3;  // interleaved measurements per task

// Each model's top-1 schedule for every task, measured interleaved kGateRepeats
// times (one run's geomean moved +-10% between rounds on the same schedules); per task
// the medians (a, b) in ms. A schedule that fails counts as 10x the other's latency.
std::vector<std::pair<double, double>> top_one_latencies(ScheduleModel& a, ScheduleModel& b,
                                                         const std::vector<std::string>& tasks,
                                                         Measurer& measurer) {
  std::vector<std::pair<double, double>> latencies;
  for (const auto& spec : tasks) {
    TaskSpec task = parse_task_spec(spec);
    auto top_a = a.top_one(task, detect_hardware());
    auto top_b = b.top_one(task, detect_hardware());
    std::vector<double> runs_a, runs_b;
    for (int k = 0; k < kGateRepeats; ++k) {
      auto r = measurer.measure_interleaved(
          task, {{KernelMethod::Space, top_a}, {KernelMethod::Space, top_b}});
      runs_a.push_back(r[0].status == Status::Ok ? r[0].timing.median_ms : 0);
      runs_b.push_back(r[1].status == Status::Ok ? r[1].timing.median_ms : 0);
    }
    double ms_a = median(runs_a), ms_b = median(runs_b);
    if (ms_a == 0 && ms_b == 0) ms_a = ms_b = 1;
    if (ms_a == 0) ms_a = 10 * ms_b;
    if (ms_b == 0) ms_b = 10 * ms_a;
    latencies.push_back({ms_a, ms_b});
  }
  return latencies;
}

std::pair<double, double> geomeans(const std::vector<std::pair<double, double>>& latencies) {
  double log_a = 0, log_b = 0;
  for (auto [a, b] : latencies) log_a += std::log(a), log_b += std::log(b);
  double n = std::max<size_t>(1, latencies.size());
  return {std::exp(log_a / n), std::exp(log_b / n)};
}

// The family a task's speed is judged in: its operator, and a convolution's window
// (a 1x1 convolution is a matrix product; a 3x3 one is not).
std::string task_family(const std::string& spec) {
  TaskSpec task = parse_task_spec(spec);
  if (task.kind != TaskKind::Conv2d && task.kind != TaskKind::Dwconv2d) return task.op();
  return task.op() + " " + std::to_string(task.get("r")) + "x" + std::to_string(task.get("s"));
}

nlohmann::json per_task(const std::vector<std::string>& tasks,
                        const std::vector<std::pair<double, double>>& latencies) {
  nlohmann::json by_task = nlohmann::json::object();
  for (size_t i = 0; i < latencies.size(); ++i)
    by_task[tasks[i]] = {{"parent", latencies[i].first}, {"candidate", latencies[i].second}};
  return by_task;
}

std::string decision(const RoundResult& r) {
  if (r.promoted) return "promoted";
  if (r.slower_families.empty()) return "kept, not promoted";
  std::string families;
  for (const auto& f : r.slower_families) families += (families.empty() ? "" : ", ") + f;
  return "kept, not promoted: slower on training " + families;
}

// One round's line in the audit log: data added, metrics, decision.
nlohmann::json audit_line(const ImproveOptions& o, const RoundResult& r) {
  return {{"round", r.round},
          {"time", double(std::time(nullptr))},
          {"parent", r.parent},
          {"candidate", r.candidate},
          {"measured", r.measured},
          {"held_out_geomean_ms",
           {{"parent", r.parent_geomean_ms}, {"candidate", r.candidate_geomean_ms}}},
          {"held_out_ms", per_task(o.held_out, r.held_out_ms)},
          {"training_ms", per_task(o.tasks, r.training_ms)},
          {"slower_families", r.slower_families},
          {"decision", decision(r)}};
}

int rounds_done(const std::string& audit_path) {
  std::ifstream in(audit_path);
  std::string line;
  int done = 0;
  while (std::getline(in, line))
    if (!line.empty()) done = nlohmann::json::parse(line).at("round").get<int>();
  return done;
}

// Fine-tunes the parent further, the way it learned: on the best measured schedules per
// task, or, when it reads speed classes, on schedules of every speed with every schedule a
// model proposed (the parent's own slow picks labeled slow).
// Returns the new checkpoint's id.
std::string finetune_round(const ImproveOptions& o, RecordStore& store, const Registry& registry,
                           const std::string& parent, int round, bool speed_prompt) {
  TrainOptions train;
  train.run_dir = o.run_dir + "/round-" + std::to_string(round);
  ::mkdir(train.run_dir.c_str(), 0755);
  train.data_path = train.run_dir + "/finetune.bin";
  train.steps = o.finetune_steps;
  train.learning_rate = o.learning_rate;
  train.speed_prompt = speed_prompt;
  SpeedSelection selection(o.speed_per_task, o.best_copies);
  selection.model_proposals = true;
  // Every host's records, so that a round on this host keeps what the model knew of others.
  auto hosts = measured_hosts(store);
  Dataset data = speed_prompt ? measured_by_speed(store, hosts, selection, o.held_out)
                              : best_measured(store, hosts, o.per_task, o.held_out);
  write_dataset(train.data_path, data);
  return train_checkpoint(train, {}, registry.path_of(parent), o.models_dir,
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
  result.candidate =
      finetune_round(o, store, registry, result.parent, round, parent->config().speed_prompt);
  auto candidate = ScheduleModel::load(registry.path_of(result.candidate));
  result.held_out_ms = top_one_latencies(*parent, *candidate, o.held_out, measurer);
  auto [parent_ms, candidate_ms] = geomeans(result.held_out_ms);
  result.parent_geomean_ms = parent_ms;
  result.candidate_geomean_ms = candidate_ms;
  if (candidate_ms < parent_ms) {  // only then is the second guard worth its measurements
    result.training_ms = top_one_latencies(*parent, *candidate, o.tasks, measurer);
    result.slower_families = slower_families(o.tasks, result.training_ms);
  }
  result.promoted = candidate_ms < parent_ms && result.slower_families.empty();
  if (result.promoted)
    registry.promote(result.candidate, "improve round " + std::to_string(round) +
                                           ": held-out geomean " + std::to_string(parent_ms) +
                                           " -> " + std::to_string(candidate_ms) + " ms");
  return result;
}

}  // namespace

std::vector<std::string> slower_families(const std::vector<std::string>& tasks,
                                         const std::vector<std::pair<double, double>>& latencies) {
  std::map<std::string, std::vector<std::pair<double, double>>> by_family;
  for (size_t i = 0; i < tasks.size(); ++i)
    by_family[task_family(tasks[i])].push_back(latencies[i]);
  std::vector<std::string> slower;
  for (const auto& [family, family_latencies] : by_family) {
    auto [parent_ms, candidate_ms] = geomeans(family_latencies);
    if (candidate_ms > kFamilySlowdownLimit * parent_ms) slower.push_back(family);
  }
  return slower;
}

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
    std::ofstream(audit, std::ios::app) << audit_line(o, r).dump() << std::endl;
    results.push_back(r);
  }
  return results;
}

}  // namespace tlm
