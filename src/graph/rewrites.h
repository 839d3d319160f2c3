// Rewrites: graph-to-graph transformations that keep the model's function.
//   fold_constants:  a node whose inputs are all constants is computed once, at compile
//                    time (by its reference semantics), and becomes a constant itself.
//   fold_batchnorm:  a convolution followed only by a batch norm becomes one convolution
//                    whose weights are scaled per output channel and whose bias absorbs
//                    the shift (weights are constants, so this is done once, at compile).
//   split_batchnorm: any other batch norm becomes a multiply and an add by per-channel
//                    constants, which fuse like any elementwise operator.
//   pad_wide_dense:  a wide dense layer whose width N no vector of 16 divides (GPT-2's
//                    50257-word head) is tiled as N rounded up to 64 on a zero-padded
//                    weight and writes only its first N columns (the dense attribute
//                    cols; stores past them are guarded): its kernel gets the
//                    packed weight layouts and whole vectors that an odd N rules out, and
//                    no slice copies the output.
//   fold_channel_scales: a channel scale (squeeze-and-excite's x * s[n, c]) whose only
//                    reader is a convolution of one group becomes that convolution's
//                    scale_in: the activation is not written a second time, scaled (in
//                    EfficientNet-B0 those steps were 12% of the model).
//   fuse_depthwise_projections: a depthwise convolution, with its relu or relu6, that
//                    only a 1x1 convolution reads becomes that convolution's prologue
//                    (conv2d dw_r, ops/families/conv.cpp): the depthwise output is computed
//                    tile by tile inside the 1x1 convolution and never written out.
//   fold_head_transposes: a batched product reads an operand split into attention heads
//                    where it lies, [..., m, heads, k], instead of after a transpose to
//                    [..., heads, m, k] (matmul a_heads, b_heads): BERT-base and GPT-2
//                    lose two of each layer's four transpose steps (queries and values).
//   remove_dead:     nodes no output depends on are dropped.
// Each returns a new graph with its weights; tests check the outputs agree with the
// original's within float tolerance.
#pragma once
#include <set>
#include <string>

#include "graph/graph.h"
#include "graph/weights.h"

namespace tlm {

struct WeightedGraph {
  Graph graph;
  Weights weights;
};

WeightedGraph fold_constants(const Graph& graph, const Weights& weights);
WeightedGraph fold_batchnorm(const Graph& graph, const Weights& weights);
WeightedGraph split_batchnorm(const Graph& graph, const Weights& weights);
WeightedGraph pad_wide_dense(const Graph& graph, const Weights& weights);
WeightedGraph fold_channel_scales(const Graph& graph, const Weights& weights);
// `only`: fuses just the 1x1 convolutions of these names (null: all).
WeightedGraph fuse_depthwise_projections(const Graph& graph, const Weights& weights,
                                         const std::set<std::string>* only = nullptr);
// How many 1x1 convolutions fuse_depthwise_projections would give a prologue.
int depthwise_projections(const Graph& graph);
WeightedGraph fold_head_transposes(const Graph& graph, const Weights& weights);
WeightedGraph remove_dead(const Graph& graph, const Weights& weights);
// Each 3x3 convolution (stride 1, padding 1, one group, input and output both NCHW or
// both in blocks of one size) that winograd_tile gives a tile, as winograd_input ->
// batched product with the transformed filters -> winograd_output (ops/winograd.h); the
// bias moves to the output transform, the rest of the chain stays.
WeightedGraph winograd_convolutions(const Graph& graph, const Weights& weights);
// The Winograd tile side that beats the direct convolution at this size, 0 for none:
// images of at least 14x14 and 16 channels in and out; F(4x4, 3x3) from 28x28 outputs
// per batch, else F(2x2, 3x3). Measured on ResNet-50 (bench/winograd_ab.sh,
// bench/reports/winograd_s24_zen5.txt): 7x7 images lose even at batch 8.
int64_t winograd_tile(int64_t n, int64_t c, int64_t k, int64_t h, int64_t w);

// The rewrites every compile applies before partitioning, in order, then the activation
// layout (activation_layout.h; `activation_block` 0 keeps every activation NCHW), then
// fold_channel_scales (which keeps the layouts the channel scales had). With no weights
// (listing a zoo model's tasks) only the structure is rewritten.
WeightedGraph prepare_graph(const Graph& graph, const Weights& weights,
                            int64_t activation_block = 0);

}  // namespace tlm
