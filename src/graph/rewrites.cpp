#include "graph/rewrites.h"

#include <algorithm>
#include <tuple>

#include "graph/activation_layout.h"
#include "graph/patterns.h"
#include "graph/rebuild.h"
#include "ops/winograd.h"
#include "util/error.h"

namespace tlm {
namespace {

bool is_output(const Graph& g, int t) {
  for (int o : g.outputs())
    if (o == t) return true;
  return false;
}

// The batch norm that is the only reader of a convolution's output, or -1.
int sole_batchnorm_after(const Graph& g, const Node& conv) {
  if (conv.op != OpKind::Conv2d) return -1;
  auto users = g.consumers(conv.output);
  if (users.size() != 1 || g.nodes()[users[0]].op != OpKind::BatchNorm) return -1;
  return is_output(g, conv.output) ? -1 : users[0];
}

// Weights and bias of `conv` with the batch norm `bn` folded in.
std::pair<std::vector<float>, std::vector<float>> folded(const Graph& g, const Node& conv,
                                                         const Node& bn, const Weights& w) {
  std::vector<float> weights = w.at(conv.inputs[1]);
  const auto& scale = w.at(bn.inputs[1]);
  const auto& shift = w.at(bn.inputs[2]);
  int64_t k = g.shape(conv.inputs[1])[0], per_k = int64_t(weights.size()) / k;
  std::vector<float> bias(size_t(k), 0.0f);
  for (int64_t c = 0; c < k; ++c) {
    float old_bias = conv.inputs.size() > 2 ? w.at(conv.inputs[2])[c] : 0.0f;
    bias[c] = old_bias * scale[c] + shift[c];
    for (int64_t i = 0; i < per_k; ++i) weights[c * per_k + i] *= scale[c];
  }
  return {weights, bias};
}

constexpr int64_t kWideDense = 2048;  // narrower dense layers keep their width
constexpr int64_t kPaddedMultiple = 64;

// A [K, N] weight as [K, padded] with zero columns after the first N.
std::vector<float> padded_columns(const std::vector<float>& w, int64_t k, int64_t n,
                                  int64_t padded) {
  std::vector<float> out(size_t(k * padded), 0.0f);
  for (int64_t r = 0; r < k; ++r)
    std::copy(w.begin() + r * n, w.begin() + (r + 1) * n, out.begin() + r * padded);
  return out;
}

}  // namespace

WeightedGraph fold_constants(const Graph& g, const Weights& w) {
  std::map<int, TensorValue> known;  // constants of `g`, plus the nodes folded so far
  Weights values = w;
  Rebuild b(g, values);
  std::vector<bool> is_output(g.tensors().size(), false);
  for (int o : g.outputs()) is_output[o] = true;
  std::vector<bool>& constant = b.is_constant;
  auto value_of = [&](int t) -> const TensorValue& {
    auto found = known.find(t);
    if (found != known.end()) return found->second;
    const GraphTensor& gt = g.tensor(t);
    const auto& data = values.at(t);
    return known[t] = {gt.dtype, gt.shape, std::vector<double>(data.begin(), data.end())};
  };
  for (const Node& n : g.nodes()) {
    bool foldable = !n.inputs.empty() && !is_output[n.output];
    for (int t : n.inputs) foldable = foldable && constant[t] && values.count(t);
    if (!foldable) {
      b.copy(n);
      continue;
    }
    std::vector<const TensorValue*> in;
    for (int t : n.inputs) in.push_back(&value_of(t));
    TensorValue v = evaluate(g.call(n), in);
    values[n.output] = std::vector<float>(v.data.begin(), v.data.end());
    known[n.output] = std::move(v);
    constant[n.output] = true;
  }
  return b.finish();  // folded outputs became constants under their node's name
}

WeightedGraph fold_batchnorm(const Graph& g, const Weights& w) {
  Rebuild b(g, w);
  std::vector<bool> skip(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (skip[i]) continue;
    const Node& n = g.nodes()[i];
    int bn = sole_batchnorm_after(g, n);
    if (bn < 0) {
      b.copy(n);
      continue;
    }
    int64_t k = g.shape(n.inputs[1])[0];
    int wt = b.out.graph.constant(g.tensor(n.inputs[1]).name, g.shape(n.inputs[1]));
    int bt = b.out.graph.constant(g.nodes()[bn].name + ".bias", {k});
    if (!w.empty()) std::tie(b.out.weights[wt], b.out.weights[bt]) = folded(g, n, g.nodes()[bn], w);
    b.map[g.nodes()[bn].output] =
        b.out.graph.add(OpKind::Conv2d, {b.map[n.inputs[0]], wt, bt}, n.attrs, n.name);
    skip[bn] = true;
  }
  return b.finish();
}

WeightedGraph split_batchnorm(const Graph& g, const Weights& w) {
  Rebuild b(g, w);
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::BatchNorm) {
      b.copy(n);
      continue;
    }
    // [C] constants as [C, 1, ...]: numpy broadcasting lines them up with axis 1.
    Shape per_channel(g.shape(n.inputs[0]).size() - 1, 1);
    per_channel[0] = g.shape(n.inputs[1])[0];
    int scale = b.out.graph.constant(g.tensor(n.inputs[1]).name, per_channel);
    int shift = b.out.graph.constant(g.tensor(n.inputs[2]).name, per_channel);
    if (!w.empty())
      b.out.weights[scale] = w.at(n.inputs[1]), b.out.weights[shift] = w.at(n.inputs[2]);
    int scaled = b.out.graph.add(OpKind::Mul, {b.map[n.inputs[0]], scale}, {}, n.name + "/scale");
    b.map[n.output] = b.out.graph.add(OpKind::Add, {scaled, shift}, {}, n.name);
  }
  return b.finish();
}

WeightedGraph pad_wide_dense(const Graph& g, const Weights& w) {
  Rebuild b(g, w);
  for (const Node& n : g.nodes()) {
    const Shape& ws = n.op == OpKind::Dense ? g.shape(n.inputs[1]) : Shape{};
    if (ws.size() != 2 || ws[1] < kWideDense || ws[1] % 16 == 0 || n.attrs.count("cols")) {
      b.copy(n);
      continue;
    }
    int64_t k = ws[0], width = ws[1];
    int64_t padded = (width + kPaddedMultiple - 1) / kPaddedMultiple * kPaddedMultiple;
    int pw = b.out.graph.constant(g.tensor(n.inputs[1]).name + ".padded", {k, padded});
    if (!w.empty()) b.out.weights[pw] = padded_columns(w.at(n.inputs[1]), k, width, padded);
    std::vector<int> inputs = {b.tensor(n.inputs[0]), pw};
    if (n.inputs.size() > 2) inputs.push_back(b.tensor(n.inputs[2]));  // the bias, [width]
    IntAttrs attrs = n.attrs;
    attrs["cols"] = {width};
    b.map[n.output] = b.out.graph.add(OpKind::Dense, inputs, attrs, n.name);
  }
  return b.finish();
}

namespace {

// The convolution that is the only reader of channel scale `scale`'s output (its input
// x, in the same layout), else -1.
int sole_conv_after(const Graph& g, const Node& scale) {
  if (scale.op != OpKind::ChannelScale) return -1;
  auto users = g.consumers(scale.output);
  if (users.size() != 1) return -1;
  const Node& conv = g.nodes()[size_t(users[0])];
  bool plain_conv = conv.op == OpKind::Conv2d && conv.attr("groups", 1) == 1 &&
                    conv.attr("scale_in", 0) == 0 && conv.inputs[0] == scale.output &&
                    conv.attr("in_block", 1) == scale.attr("block", 1);
  return plain_conv && !is_output(g, scale.output) ? users[0] : -1;
}

}  // namespace

WeightedGraph fold_channel_scales(const Graph& g, const Weights& w) {
  Rebuild b(g, w);
  std::vector<int> scale_of(g.nodes().size(), -1);  // conv node -> the scale it absorbs
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    int conv = sole_conv_after(g, g.nodes()[i]);
    if (conv >= 0) scale_of[size_t(conv)] = int(i);
  }
  std::vector<bool> absorbed(g.nodes().size(), false);
  for (int s : scale_of)
    if (s >= 0) absorbed[size_t(s)] = true;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (absorbed[i]) continue;
    if (scale_of[i] < 0) {
      b.copy(n);
      continue;
    }
    const Node& scale = g.nodes()[size_t(scale_of[i])];
    std::vector<int> inputs = {b.tensor(scale.inputs[0])};
    for (size_t k = 1; k < n.inputs.size(); ++k) inputs.push_back(b.tensor(n.inputs[k]));
    inputs.push_back(b.tensor(scale.inputs[1]));
    IntAttrs attrs = n.attrs;
    attrs["scale_in"] = {1};
    b.map[n.output] = b.out.graph.add(OpKind::Conv2d, inputs, attrs, n.name, n.reals);
  }
  return b.finish();
}

namespace {

// The node that alone reads tensor t, which is no graph output; else -1.
int sole_reader(const Graph& g, int t) {
  if (is_output(g, t)) return -1;
  auto users = g.consumers(t);
  return users.size() == 1 ? users[0] : -1;
}

// A 1x1 convolution of one group, stride 1, no padding, nothing folded into it yet.
bool is_projection(const Graph& g, const Node& n) {
  if (n.op != OpKind::Conv2d) return false;
  const Shape& w = g.shape(n.inputs[1]);
  return w[2] == 1 && w[3] == 1 && n.attr("stride", 1) == 1 && n.attr("pad", 0) == 0 &&
         n.attr("pad_w", 0) == 0 && n.attr("dilation", 1) == 1 && n.attr("groups", 1) == 1 &&
         n.attr("scale_in", 0) == 0 && n.attr("dw_r", 0) == 0;
}

// A depthwise convolution (one channel per group) with a square window and the same
// padding on both axes.
bool is_plain_depthwise(const Graph& g, const Node& n) {
  if (n.op != OpKind::Conv2d || n.attr("scale_in", 0) || n.attr("dw_r", 0)) return false;
  const Shape& w = g.shape(n.inputs[1]);
  int64_t pad = n.attr("pad", 0);
  return w[1] == 1 && w[0] == n.attr("groups", 1) && w[0] > 1 && w[2] == w[3] &&
         n.attr("pad_w", pad) == pad && n.attr("dilation", 1) == 1;
}

// A depthwise convolution, then optionally its relu or relu6, that only the 1x1
// convolution `projection` reads: the nodes (-1: none) and the dw_act code.
struct DepthwiseChain {
  int depthwise = -1, activation = -1;
  int64_t act = 0;
};

DepthwiseChain depthwise_chain_into(const Graph& g, const Node& projection) {
  if (!is_projection(g, projection)) return {};
  int node = g.tensor(projection.inputs[0]).producer;
  if (node < 0 || sole_reader(g, projection.inputs[0]) < 0) return {};
  DepthwiseChain chain;
  OpKind op = g.nodes()[size_t(node)].op;
  if (op == OpKind::Relu || op == OpKind::Relu6) {
    chain.activation = node, chain.act = op == OpKind::Relu ? 1 : 2;
    int input = g.nodes()[size_t(node)].inputs[0];
    node = g.tensor(input).producer;
    if (node < 0 || sole_reader(g, input) < 0) return {};
  }
  if (!is_plain_depthwise(g, g.nodes()[size_t(node)])) return {};
  chain.depthwise = node;
  return chain;
}

// A depthwise weight [C, 1, R, R] as [R, R, C], the channel innermost.
std::vector<float> taps_by_channel(const std::vector<float>& w, int64_t c, int64_t r) {
  std::vector<float> out(w.size());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t tap = 0; tap < r * r; ++tap)
      out[size_t(tap * c + ch)] = w[size_t(ch * r * r + tap)];
  return out;
}

// The fused node's inputs after the projection's own: the depthwise weight as taps by
// channel and its bias (zeros when it had none).
std::vector<int> prologue_inputs(Rebuild& b, const Node& dw) {
  const Graph& g = b.g;
  const Shape& ws = g.shape(dw.inputs[1]);
  int64_t c = ws[0], r = ws[2];
  int taps = b.out.graph.constant(g.tensor(dw.inputs[1]).name + ".taps", {r, r, c});
  if (!b.values.empty()) b.out.weights[taps] = taps_by_channel(b.values.at(dw.inputs[1]), c, r);
  if (dw.inputs.size() > 2) return {taps, b.tensor(dw.inputs[2])};
  int bias = b.out.graph.constant(dw.name + ".bias", {c});
  if (!b.values.empty()) b.out.weights[bias] = std::vector<float>(size_t(c), 0.0f);
  return {taps, bias};
}

}  // namespace

int depthwise_projections(const Graph& g) {
  int chains = 0;
  for (const Node& n : g.nodes()) chains += depthwise_chain_into(g, n).depthwise >= 0;
  return chains;
}

WeightedGraph fuse_depthwise_projections(const Graph& g, const Weights& w,
                                         const std::set<std::string>* only) {
  Rebuild b(g, w);
  std::vector<DepthwiseChain> chain_of(g.nodes().size());  // projection -> its chain
  std::vector<bool> absorbed(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (only && !only->count(g.nodes()[i].name)) continue;
    chain_of[i] = depthwise_chain_into(g, g.nodes()[i]);
    if (chain_of[i].depthwise < 0) continue;
    absorbed[size_t(chain_of[i].depthwise)] = true;
    if (chain_of[i].activation >= 0) absorbed[size_t(chain_of[i].activation)] = true;
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (absorbed[i]) continue;
    if (chain_of[i].depthwise < 0) {
      b.copy(n);
      continue;
    }
    const Node& dw = g.nodes()[size_t(chain_of[i].depthwise)];
    std::vector<int> inputs = {b.tensor(dw.inputs[0])};
    for (size_t k = 1; k < n.inputs.size(); ++k) inputs.push_back(b.tensor(n.inputs[k]));
    for (int t : prologue_inputs(b, dw)) inputs.push_back(t);
    IntAttrs attrs = n.attrs;  // the prologue reads x in the depthwise input's layout
    attrs["in_block"] = {dw.attr("in_block", 1)};
    attrs["dw_r"] = {g.shape(dw.inputs[1])[2]};
    attrs["dw_stride"] = {dw.attr("stride", 1)};
    attrs["dw_pad"] = {dw.attr("pad", 0)};
    attrs["dw_act"] = {chain_of[i].act};
    b.map[n.output] = b.out.graph.add(OpKind::Conv2d, inputs, attrs, n.name, n.reals);
  }
  return b.finish();
}

namespace {

// The tile side Winograd computes a 3x3 convolution with (0: none): stride 1, padding 1,
// no dilation, one group, input and output in the same layout (NCHW or blocks of the same
// size), and enough tiles for the products to pay.
int64_t winograd_tile_of(const Graph& g, const Node& n) {
  if (n.op != OpKind::Conv2d) return 0;
  const Shape& w = g.shape(n.inputs[1]);
  Shape x = g.shape(n.inputs[0]);
  bool window = w.size() == 4 && w[2] == 3 && w[3] == 3 && n.attr("stride", 1) == 1 &&
                n.attr("pad", 0) == 1 && n.attr("pad_w", 1) == 1 && n.attr("dilation", 1) == 1 &&
                n.attr("groups", 1) == 1;
  int64_t block = n.attr("in_block", 1);
  bool one_layout = block == n.attr("out_block", 1) && n.attr("scale_in", 0) == 0;
  if (block > 1) x = channel_plain_shape(x);
  if (!window || !one_layout || x.size() != 4) return 0;
  return winograd_tile(x[0], x[1], w[0], x[2], x[3]);
}

}  // namespace

int64_t winograd_tile(int64_t n, int64_t c, int64_t k, int64_t h, int64_t w) {
  if (c < 16 || k < 16 || h < 14 || w < 14) return 0;
  return n * h * w >= 28 * 28 ? 4 : 2;
}

WeightedGraph winograd_convolutions(const Graph& g, const Weights& w) {
  Rebuild b(g, w);
  for (const Node& n : g.nodes()) {
    int64_t tile = winograd_tile_of(g, n);
    if (tile == 0) {
      b.copy(n);
      continue;
    }
    const Shape &x = g.shape(n.inputs[0]), &ws = g.shape(n.inputs[1]);
    int64_t block = n.attr("in_block", 1);
    bool blocked = block > 1;  // [P, T, C] x [P, C, K] (ops/winograd.h), else U x V
    IntAttrs side = {{"m", {tile}}};
    if (blocked) side["block"] = {block};
    int v = b.out.graph.add(OpKind::WinogradInput, {b.tensor(n.inputs[0])}, side,
                            n.name + "/winograd_input");
    int64_t points = winograd::transform(tile).points();
    int u =
        b.out.graph.constant(g.tensor(n.inputs[1]).name + ".winograd",
                             blocked ? Shape{points, ws[1], ws[0]} : Shape{points, ws[0], ws[1]});
    if (!w.empty())
      b.out.weights[u] = winograd::filter_transform(w.at(n.inputs[1]), ws[0], ws[1], tile, blocked);
    int m = b.out.graph.add(
        OpKind::MatMul, blocked ? std::vector<int>{v, u} : std::vector<int>{u, v},
        blocked ? IntAttrs{{"constant_b", {1}}} : IntAttrs{}, n.name + "/winograd_product");
    std::vector<int> inputs = {m};
    if (n.inputs.size() > 2) inputs.push_back(b.tensor(n.inputs[2]));
    IntAttrs image = side;
    image.insert({{"n", {x[0]}}, {"h", {x[2]}}, {"w", {x[3]}}});
    b.map[n.output] = b.out.graph.add(OpKind::WinogradOutput, inputs, image, n.name);
  }
  return b.finish();
}

namespace {

// The input of the transpose that makes tensor t by swapping its last dim but two with its
// rows ([..., m, heads, k] -> [..., heads, m, k]), maybe then reshaped in its leading dims
// only; -1 when t is not made so or a graph output is on the way.
int head_split_source(const Graph& g, int t) {
  int node = g.tensor(t).producer;
  if (node >= 0 && g.nodes()[size_t(node)].op == OpKind::Reshape) {
    int moved = g.nodes()[size_t(node)].inputs[0];
    const Shape &after = g.shape(t), &before = g.shape(moved);
    if (is_output(g, t) || after.size() < 2 || before.size() < 2 ||
        !std::equal(after.end() - 2, after.end(), before.end() - 2))
      return -1;
    t = moved, node = g.tensor(t).producer;
  }
  if (node < 0 || g.nodes()[size_t(node)].op != OpKind::Transpose || is_output(g, t)) return -1;
  const Node& transpose = g.nodes()[size_t(node)];
  auto perm = transpose.attrs.count("perm") ? transpose.attrs.at("perm") : std::vector<int64_t>{};
  size_t rank = perm.size();
  if (rank < 3) return -1;
  for (size_t d = 0; d < rank; ++d) {
    size_t from = d == rank - 3 ? rank - 2 : d == rank - 2 ? rank - 3 : d;
    if (perm[d] != int64_t(from)) return -1;
  }
  return transpose.inputs[0];
}

// A product's operand as fold_head_transposes reads it: the tensor, whether it is stored
// head-split, and the batch dims the product sees.
struct ProductOperand {
  int tensor = -1;
  bool heads = false;
  Shape batch;
};

ProductOperand product_operand(const Graph& g, int t) {
  int source = head_split_source(g, t);
  if (source < 0) {
    const Shape& s = g.shape(t);
    return {t, false, Shape(s.begin(), s.end() - 2)};
  }
  const Shape& s = g.shape(source);  // [..., m, heads, k]
  Shape batch(s.begin(), s.end() - 3);
  batch.push_back(s[s.size() - 2]);
  return {source, true, batch};
}

// The new graph's tensor for operand `o`, a plain one viewed with the batch dims `batch`.
int operand_with_batch(Rebuild& b, const Graph& g, const ProductOperand& o, const Shape& batch) {
  int t = b.tensor(o.tensor);
  if (o.heads || o.batch == batch) return t;
  Shape shape = batch;
  const Shape& s = g.shape(o.tensor);
  shape.insert(shape.end(), s.end() - 2, s.end());
  return b.out.graph.add(OpKind::Reshape, {t}, {{"shape", shape}},
                         g.tensor(o.tensor).name + "/batch");
}

}  // namespace

WeightedGraph fold_head_transposes(const Graph& g, const Weights& w) {
  Rebuild b(g, w);
  for (const Node& n : g.nodes()) {
    ProductOperand a, c;
    if (n.op == OpKind::MatMul && n.attr("constant_b", 0) == 0)
      a = product_operand(g, n.inputs[0]), c = product_operand(g, n.inputs[1]);
    // Both operands must then see the same batch dims: the head-split one's.
    const Shape& batch = a.heads ? a.batch : c.batch;
    bool same_batch = element_count(a.batch) == element_count(batch) &&
                      element_count(c.batch) == element_count(batch) &&
                      (!a.heads || !c.heads || a.batch == c.batch);
    if (!(a.heads || c.heads) || !same_batch) {
      b.copy(n);
      continue;
    }
    IntAttrs attrs = n.attrs;
    if (a.heads) attrs["a_heads"] = {1};
    if (c.heads) attrs["b_heads"] = {1};
    int product = b.out.graph.add(
        OpKind::MatMul, {operand_with_batch(b, g, a, batch), operand_with_batch(b, g, c, batch)},
        attrs, n.name, n.reals);
    const Shape& shape = g.shape(n.output);
    if (b.out.graph.shape(product) != shape)
      product = b.out.graph.add(OpKind::Reshape, {product}, {{"shape", shape}}, n.name + "/shape");
    b.map[n.output] = product;
  }
  WeightedGraph folded = b.finish();
  return remove_dead(folded.graph, folded.weights);
}

WeightedGraph remove_dead(const Graph& g, const Weights& w) {
  std::vector<bool> live(g.tensors().size(), false);
  for (int o : g.outputs()) live[o] = true;
  for (size_t i = g.nodes().size(); i-- > 0;)
    if (live[g.nodes()[i].output])
      for (int t : g.nodes()[i].inputs) live[t] = true;
  Rebuild b(g, w);
  for (const Node& n : g.nodes())
    if (live[n.output]) b.copy(n);
  return b.finish();
}

WeightedGraph prepare_graph(const Graph& g, const Weights& w, int64_t activation_block) {
  WeightedGraph folded = remove_dead(g, w);
  folded = fold_constants(folded.graph, folded.weights);
  folded = rewrite_norms(folded.graph, folded.weights);
  folded = rewrite_unary_functions(folded.graph, folded.weights);
  folded = fold_batchnorm(folded.graph, folded.weights);
  folded = pad_wide_dense(folded.graph, folded.weights);
  folded = split_batchnorm(folded.graph, folded.weights);
  folded = fold_head_transposes(folded.graph, folded.weights);
  folded = block_activations(folded.graph, folded.weights, activation_block);
  return fold_channel_scales(folded.graph, folded.weights);
}

}  // namespace tlm
