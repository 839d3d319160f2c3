// Activation layout: which activations a compiled model keeps channel-blocked.
//
// A convolution vectorizes best along output channels, with its input's channels
// contiguous: oneDNN, OpenVINO and ONNX Runtime's MLAS keep activations as
// [N, C/b, H, W, b] (NCHWc) from one convolution to the next. `block_activations` plans
// that across the graph: an activation is held blocked when every node that reads it
// can read it so (a convolution's input, a global pooling's, an elementwise node's or a
// squeeze-and-excitation channel scale's whose output is blocked too) and it is not a
// model output; the rest stay NCHW. The block is 16 channels where
// that divides C, else 8, else the tensor stays plain.
//
// There are no separate conversion steps: the convolution at either end of a blocked
// chain converts as it goes (it reads NCHW and writes blocked, or the reverse), which
// its task spec says (conv2d in_block / out_block). Per-channel operands of
// elementwise nodes ([N, C, 1, 1], [C, 1, 1], a bias) are the same bytes as
// [N, C/b, 1, 1, b]: they are only seen with that shape (a view, or the constant
// reshaped).
#pragma once
#include "graph/rewrites.h"

namespace tlm {

// `block`: 16 or 8, the block preferred where it divides the channels (8 otherwise);
// 0 returns the graph as it is; kAutoActivationBlock is 16 wherever blocks keep an
// activation blocked. Measured at zero measurements: blocks make MobileNetV2 16% and
// EfficientNet-B0 7% faster (session 18, Zen 4), where depthwise convolutions gain most;
// ResNet-50 was 4% slower blocked until its 3x3 convolutions ran as Winograd on blocked
// activations too (ops/winograd.h): since then 7% faster at batch 1 and 12% at batch 8
// (session 40, Zen 5).
// The compiler measures the two layouts instead when it can (compiler/layout_choice.h).
constexpr int64_t kAutoActivationBlock = -1;
// The rule's block for a prepared graph: 16 when blocks keep any activation blocked, else 0.
int64_t auto_activation_block(const Graph& graph);
// Whether blocks of 16 would keep any activation of the prepared graph blocked.
bool can_block_activations(const Graph& graph);
WeightedGraph block_activations(const Graph& graph, const Weights& weights, int64_t block);

}  // namespace tlm
