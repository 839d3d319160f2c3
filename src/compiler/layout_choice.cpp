#include "compiler/layout_choice.h"

#include <cstdio>

#include "graph/activation_layout.h"
#include "graph/rewrites.h"
#include "measure/timing.h"
#include "ops/task_shape.h"
#include "ops/task_spec.h"
#include "space/schedule_space.h"

namespace tlm {
namespace {

LayoutCandidate candidate_from(WeightedGraph prepared, int64_t block, bool winograd) {
  if (winograd) prepared = winograd_convolutions(prepared.graph, prepared.weights);
  LayoutCandidate c{block, std::move(prepared), {}, ""};
  c.partition = partition_graph(c.prepared.graph);
  return c;
}

std::string layout_name(int64_t block) {
  return block > 0 ? "blocks of " + std::to_string(block) + " channels" : "NCHW";
}

}  // namespace

std::vector<LayoutCandidate> layout_candidates(const Graph& graph, const Weights& weights,
                                               int64_t activation_block, bool winograd,
                                               int64_t host_block) {
  WeightedGraph plain = prepare_graph(graph, weights, 0);
  if (activation_block != kAutoActivationBlock) {
    if (activation_block > 0)
      plain = block_activations(plain.graph, plain.weights, activation_block);
    return {candidate_from(std::move(plain), activation_block, winograd)};
  }
  if (!can_block_activations(plain.graph)) return {candidate_from(std::move(plain), 0, winograd)};
  std::vector<LayoutCandidate> candidates;
  candidates.push_back(
      candidate_from(block_activations(plain.graph, plain.weights, 16), 16, winograd));
  candidates.push_back(candidate_from(std::move(plain), 0, winograd));
  // a node that has no task when blocked (none so far) keeps the model NCHW
  if (!candidates[0].partition.unsupported.empty()) {
    candidates.erase(candidates.begin());
    return candidates;
  }
  // the rule's blocks first (graph/activation_layout.h), unless the machine's entry says
  bool by_host = host_block != kAutoActivationBlock;
  if (by_host && host_block == 0) std::swap(candidates[0], candidates[1]);
  candidates[0].why_first = by_host ? "this machine's registry entry" : "the rule";
  return candidates;
}

std::optional<Record> fastest_legal(const RecordStore& store, const std::string& spec,
                                    const std::string& hardware, int limit) {
  TaskSpec task = parse_task_spec(spec);
  ScheduleSpace space(describe_task(task));
  for (auto& r : store.best(task.key(), timed_fingerprint(hardware, task), limit))
    if (space.is_legal(r.decisions)) return r;
  return std::nullopt;
}

std::optional<double> measured_ms(const Partition& partition, const RecordStore& store,
                                  const std::string& hardware) {
  double sum = 0;
  for (const auto& use : partition.tasks) {
    auto best = fastest_legal(store, use.spec, hardware);
    if (!best) return std::nullopt;
    sum += use.count * best->median_ms;
  }
  return sum;
}

LayoutChoice choose_layout(const std::vector<LayoutCandidate>& candidates, const RecordStore* store,
                           const std::string& hardware) {
  LayoutChoice choice;
  const LayoutCandidate& rule = candidates.at(0);
  if (candidates.size() == 1) {
    choice.reason = layout_name(rule.block) + (rule.block ? " (asked for)" : "");
    return choice;
  }
  std::vector<std::optional<double>> ms;
  for (const auto& c : candidates)
    ms.push_back(store ? measured_ms(c.partition, *store, hardware) : std::nullopt);
  if (!ms[0] || !ms[1]) {
    choice.reason = layout_name(rule.block) + ": " + rule.why_first +
                    "; not every task of both layouts is measured";
    return choice;
  }
  choice.candidate = *ms[1] < *ms[0] ? 1 : 0;
  char line[160];
  std::snprintf(line, sizeof line, ": measured tasks %.3f ms, %s %.3f ms", *ms[choice.candidate],
                layout_name(candidates[1 - choice.candidate].block).c_str(),
                *ms[1 - choice.candidate]);
  choice.reason = layout_name(candidates[choice.candidate].block) + line;
  return choice;
}

}  // namespace tlm
