// Layout choice: which activation layout a compiled model uses when the user leaves it to
// the compiler (`--activation-block auto`, the default).
//
// Keeping activations channel-blocked changes which tasks a model runs: a chain's
// convolutions read and write [N, C/b, H, W, b], and the convolution at either end of a
// chain converts as it goes (graph/activation_layout.h). So the two layouts, NCHW and
// blocks of 16, are two task lists, and each is priced as the sum over its tasks of uses
// times the store's fastest measured schedule on this hardware; the conversions are inside
// the chain-end tasks, so the sum counts them. When every task of both lists has been
// measured (`compile --trials` measures both lists; `tune` or `improve` may have before),
// the cheaper list wins. Otherwise the machine's registry entry decides when it names a
// layout (measured faster there, model/registry.h), else activation_layout's rule (blocks
// wherever convolutions chain), and the reason says which.
//
// Fusing depthwise convolutions into the 1x1 convolutions that read them changes the task
// list too, so each layout fused is one more candidate, after the unfused ones, and once
// measured, each layout fused only where its fused tasks measured faster than the pair
// they replace: chosen only when measured faster (the shipped model has not learned those
// tasks, so without measurements the unfused list stays).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/activation_layout.h"
#include "graph/partition.h"
#include "graph/rewrites.h"
#include "store/record_store.h"

namespace tlm {

struct LayoutCandidate {
  int64_t block = 0;  // channels per block of the activations kept blocked; 0: NCHW
  // 1x1 convolutions given their depthwise convolution as a prologue
  // (fuse_depthwise_projections, graph/rewrites.h); 0: none
  int fused_chains = 0;
  WeightedGraph prepared;
  Partition partition;
  std::string why_first;  // of the first of two: what put it there
};

// One candidate for an explicit block (0, 8, 16); for kAutoActivationBlock the preferred
// one first then the other, or only NCHW when blocks change no task or leave a node
// without one. Preferred: `host_block` (16 or 0, a machine's registry entry) when given,
// else the rule's. The first candidate's partition.unsupported says which nodes cannot
// compile. `winograd`: each candidate's 3x3 convolutions that Winograd suits rewritten so
// (graph/rewrites.h; in practice only NCHW ones). `fuse_depthwise`: each of those again,
// after them all, with its depthwise convolutions fused into their 1x1 readers where it
// has any: chosen only when measured faster, as the model has not learned those tasks.
std::vector<LayoutCandidate> layout_candidates(const Graph& graph, const Weights& weights,
                                               int64_t activation_block, bool winograd = false,
                                               int64_t host_block = kAutoActivationBlock,
                                               bool fuse_depthwise = false);

// After measuring: for each layout with a fused candidate, one more candidate (at the end)
// that fuses only the chains whose fused task measured faster than the depthwise and 1x1
// tasks it replaces, when that is some of them but not all. Returns how many it added.
size_t add_measured_fusion(std::vector<LayoutCandidate>& candidates, const RecordStore& store,
                           const std::string& hardware);

// Sum over the tasks of uses x the fastest measured median (ms) of a schedule legal in
// the task's space; nothing when a task has no such record.
std::optional<double> measured_ms(const Partition& partition, const RecordStore& store,
                                  const std::string& hardware);

// The task's fastest measured schedule that is legal in its space today (among its
// `limit` fastest records on `hardware`), else that of its earlier form (ops/task_spec.h:
// a Winograd product stored before its filters could be packed), upgraded; nothing when
// there is none.
std::optional<Record> fastest_legal(const RecordStore& store, const std::string& spec,
                                    const std::string& hardware, int limit = 8);

struct LayoutChoice {
  size_t candidate = 0;  // index into the candidates
  std::string reason;    // one line: the layout and why
};
// The fastest candidate by measured_ms when the first and at least one other have every
// task measured, else the first. `store` may be null (the first).
LayoutChoice choose_layout(const std::vector<LayoutCandidate>& candidates, const RecordStore* store,
                           const std::string& hardware);

}  // namespace tlm
