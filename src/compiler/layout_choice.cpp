#include "compiler/layout_choice.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "graph/activation_layout.h"
#include "graph/rewrites.h"
#include "measure/timing.h"
#include "ops/task_shape.h"
#include "ops/task_spec.h"
#include "space/schedule_space.h"

namespace tlm {
namespace {

LayoutCandidate candidate_from(WeightedGraph prepared, int64_t block, bool winograd,
                               int fused_chains = 0) {
  if (winograd) prepared = winograd_convolutions(prepared.graph, prepared.weights);
  LayoutCandidate c{block, fused_chains, std::move(prepared), {}, ""};
  c.partition = partition_graph(c.prepared.graph);
  return c;
}

std::string layout_name(const LayoutCandidate& c) {
  std::string name = c.block > 0 ? "blocks of " + std::to_string(c.block) + " channels" : "NCHW";
  if (c.fused_chains == 0) return name;
  return name + ", " + std::to_string(c.fused_chains) + " depthwise fused into 1x1";
}

// Each candidate again, after them all, with its depthwise convolutions fused into the
// 1x1 convolutions that read them, where it has any (Winograd's rewrite leaves both
// kinds of node alone, so the order of the two rewrites does not matter).
void add_fused_candidates(std::vector<LayoutCandidate>& candidates) {
  size_t layouts = candidates.size();
  for (size_t i = 0; i < layouts; ++i) {
    const WeightedGraph& g = candidates[i].prepared;
    int chains = depthwise_projections(g.graph);
    if (chains == 0) continue;
    candidates.push_back(candidate_from(fuse_depthwise_projections(g.graph, g.weights),
                                        candidates[i].block, false, chains));
  }
}

std::optional<double> fastest_ms(const RecordStore& store, const std::string& spec,
                                 const std::string& hardware) {
  auto best = fastest_legal(store, spec, hardware);
  return best ? std::optional<double>(best->median_ms) : std::nullopt;
}

// The 1x1 convolutions of `fused` (by name) whose task measured faster than the 1x1 and
// depthwise tasks of `plain` it replaces.
std::set<std::string> faster_fused(const LayoutCandidate& plain, const LayoutCandidate& fused,
                                   const RecordStore& store, const std::string& hardware) {
  const Graph &pg = plain.prepared.graph, &fg = fused.prepared.graph;
  std::map<std::string, int> plain_node;
  for (size_t i = 0; i < pg.nodes().size(); ++i) plain_node[pg.nodes()[i].name] = int(i);
  auto ms = [&](const LayoutCandidate& c, int node) -> std::optional<double> {
    int task = node < 0 ? -1 : c.partition.node_task[size_t(node)];
    if (task < 0) return std::nullopt;
    return fastest_ms(store, c.partition.tasks[size_t(task)].spec, hardware);
  };
  std::set<std::string> names;
  for (size_t i = 0; i < fg.nodes().size(); ++i) {
    const Node& n = fg.nodes()[i];
    auto p = plain_node.find(n.name);
    if (n.attr("dw_r", 0) == 0 || p == plain_node.end()) continue;
    int depthwise = pg.tensor(pg.nodes()[size_t(p->second)].inputs[0]).producer;
    auto together = ms(fused, int(i)), one_by_one = ms(plain, p->second);
    auto dw = ms(plain, depthwise);
    if (together && one_by_one && dw && *together < *one_by_one + *dw) names.insert(n.name);
  }
  return names;
}

// The candidates for the activation layout alone (see layout_candidates).
std::vector<LayoutCandidate> layouts_of(const Graph& graph, const Weights& weights,
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

}  // namespace

std::vector<LayoutCandidate> layout_candidates(const Graph& graph, const Weights& weights,
                                               int64_t activation_block, bool winograd,
                                               int64_t host_block, bool fuse_depthwise) {
  auto candidates = layouts_of(graph, weights, activation_block, winograd, host_block);
  if (fuse_depthwise) add_fused_candidates(candidates);
  return candidates;
}

size_t add_measured_fusion(std::vector<LayoutCandidate>& candidates, const RecordStore& store,
                           const std::string& hardware) {
  size_t before = candidates.size();
  for (size_t f = 0; f < before; ++f) {
    if (candidates[f].fused_chains == 0) continue;
    size_t plain = 0;  // the same layout unfused
    while (candidates[plain].fused_chains > 0 || candidates[plain].block != candidates[f].block)
      ++plain;
    auto names = faster_fused(candidates[plain], candidates[f], store, hardware);
    if (names.empty() || int(names.size()) == candidates[f].fused_chains) continue;
    const WeightedGraph& g = candidates[plain].prepared;
    candidates.push_back(candidate_from(fuse_depthwise_projections(g.graph, g.weights, &names),
                                        candidates[f].block, false, int(names.size())));
  }
  return candidates.size() - before;
}

std::optional<Record> fastest_legal(const RecordStore& store, const std::string& spec,
                                    const std::string& hardware, int limit) {
  TaskSpec task = parse_task_spec(spec);
  ScheduleSpace space(describe_task(task));
  for (auto& r : store.best(task.key(), timed_fingerprint(hardware, task), limit))
    if (space.is_legal(r.decisions)) return r;
  TaskSpec earlier;
  if (!earlier_form(task, earlier)) return std::nullopt;
  for (auto& r : store.best(earlier.key(), timed_fingerprint(hardware, earlier), limit)) {
    r.decisions = space.upgrade(r.decisions);
    if (space.is_legal(r.decisions)) return r;
  }
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
  if (candidates.size() == 1 || rule.why_first.empty()) {  // one layout asked for
    choice.reason = layout_name(rule) + (rule.block ? " (asked for)" : "");
    if (candidates.size() == 1) return choice;
  }
  std::vector<size_t> measured;  // the candidates with every task measured, fastest first
  std::vector<double> ms;
  for (const auto& c : candidates) {
    auto sum = store ? measured_ms(c.partition, *store, hardware) : std::nullopt;
    ms.push_back(sum.value_or(0));
    if (sum) measured.push_back(ms.size() - 1);
  }
  std::stable_sort(measured.begin(), measured.end(),
                   [&](size_t a, size_t b) { return ms[a] < ms[b]; });
  if (measured.size() < 2 || std::find(measured.begin(), measured.end(), 0) == measured.end()) {
    std::string which = candidates.size() == 2 ? "both layouts" : "the candidates";
    if (!rule.why_first.empty())
      choice.reason = layout_name(rule) + ": " + rule.why_first + "; not every task of " + which +
                      " is measured";
    return choice;
  }
  choice.candidate = measured[0];
  char line[200];
  std::snprintf(line, sizeof line, ": measured tasks %.3f ms, %s %.3f ms", ms[measured[0]],
                layout_name(candidates[measured[1]]).c_str(), ms[measured[1]]);
  choice.reason = layout_name(candidates[choice.candidate]) + line;
  return choice;
}

}  // namespace tlm
