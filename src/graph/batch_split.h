// Batch split: the leading layers of a batched model run image by image.
//
// A convolutional network's first layers move far more activation than weight. At batch
// 8, each of ResNet-50's 56x56 tensors is 25 MB, past the last-level cache, so every
// layer reads its input back from memory; run image by image, the same layers' tensors
// stay cached from one layer to the next, and their kernels are the batch-1 ones. Later
// layers read more weight than activation and gain from the batch: one pass over the
// weights for every image. So the compiler cuts the prepared graph's node list once: the
// nodes before the cut run once per image (the runtime loops over the images), the rest
// once on the whole batch.
//
// A cut qualifies when every node before it treats images apart (convolutions, pools,
// Winograd transforms and their product, elementwise operators) and every tensor that
// crosses it, or enters the prefix from the model's inputs, holds the batch as its
// outermost dim (NCHW, NCHWc): image i is then its i-th contiguous slice. The prefix is
// rebuilt at batch 1 and its inferred shapes checked against the batched ones. Among
// qualifying cuts the one where the running sum over the prefix's anchors of (activation
// bytes per image - weight bytes) peaks is taken; none when that sum never is positive.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/partition.h"

namespace tlm {

struct BatchSplit {
  int64_t batch = 1;        // images per run, each slice run alone; 1: no split
  size_t prefix_nodes = 0;  // nodes [0, prefix_nodes) of the prepared graph run per image
  // Those nodes at batch 1: its inputs the model inputs they read (one image each), its
  // outputs the tensors that cross the cut; full_tensor maps its tensors to the prepared
  // graph's.
  Graph per_image{""};
  std::vector<int> full_tensor;
  std::string why;  // one line: the cut, or why there is none
};

// The split of a prepared graph (rewrites.h) whose tasks `partition` lists; batch 1 when
// no cut qualifies or pays. Only the structure is rebuilt: the per-image graph's
// constants are the prepared graph's (full_tensor), without values.
BatchSplit plan_batch_split(const Graph& prepared, const Partition& partition);

// Puts the per-image tasks first in `partition` (the partition of the prepared graph the
// split was planned on): the per-image graph's tasks, over the prepared graph's tensors
// and counted once per image, then the tasks of the nodes after the cut. Returns how many
// are per image: 0, and the split undone, when a tensor that crosses the cut would be
// fused away in the per-image graph.
size_t put_per_image_tasks_first(Partition& partition, BatchSplit& split);

}  // namespace tlm
