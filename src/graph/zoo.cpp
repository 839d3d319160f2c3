#include "graph/zoo.h"

#include "util/error.h"

namespace tlm {
namespace {

using Attrs = IntAttrs;
constexpr OpKind kNoActivation = OpKind::Count;

// Layer helpers over a Graph, naming weights after their layer.
class Layers {
 public:
  explicit Layers(Graph& g) : g_(g) {}

  int conv(int x, int64_t k, int64_t r, int64_t stride = 1, int64_t groups = 1) {
    int64_t c = g_.shape(x)[1];
    std::string name = "conv" + std::to_string(++count_);
    int w = g_.constant(name + ".w", {k, c / groups, r, r});
    return g_.add(OpKind::Conv2d, {x, w},
                  {{"stride", {stride}}, {"pad", {r / 2}}, {"groups", {groups}}}, name);
  }
  int bn(int x) {
    int64_t c = g_.shape(x)[1];
    std::string name = "bn" + std::to_string(++count_);
    return g_.add(OpKind::BatchNorm,
                  {x, g_.constant(name + ".scale", {c}), g_.constant(name + ".shift", {c})}, {},
                  name);
  }
  int conv_bn(int x, int64_t k, int64_t r, int64_t stride, OpKind act, int64_t groups = 1) {
    int y = bn(conv(x, k, r, stride, groups));
    return act == kNoActivation ? y : g_.add(act, {y});
  }
  int dense(int x, int64_t n, bool bias = true) {
    std::string name = "dense" + std::to_string(++count_);
    int w = g_.constant(name + ".w", {g_.shape(x).back(), n});
    if (!bias) return g_.add(OpKind::Dense, {x, w}, {}, name);
    return g_.add(OpKind::Dense, {x, w, g_.constant(name + ".b", {n})}, {}, name);
  }
  int norm(OpKind op, int x) {
    int64_t d = g_.shape(x).back();
    std::string name = op_name(op) + std::to_string(++count_);
    std::vector<int> in = {x, g_.constant(name + ".g", {d})};
    if (op == OpKind::LayerNorm) in.push_back(g_.constant(name + ".b", {d}));
    return g_.add(op, in, {}, name);
  }
  int op(OpKind kind, std::vector<int> in, Attrs attrs = {}) {
    return g_.add(kind, in, std::move(attrs));
  }
  Graph& graph() { return g_; }

 private:
  Graph& g_;
  int count_ = 0;
};

Graph resnet50(const ZooOptions& o) {
  Graph g("resnet50");
  Layers l(g);
  int x = l.conv_bn(g.input("image", {o.batch, 3, o.image, o.image}), 64, 7, 2, OpKind::Relu);
  x = l.op(OpKind::MaxPool, {x}, {{"r", {3}}, {"stride", {2}}, {"pad", {1}}});
  const int64_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage)
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      int64_t w = widths[stage], stride = (b == 0 && stage > 0) ? 2 : 1;
      int y = l.conv_bn(x, w, 1, 1, OpKind::Relu);
      y = l.conv_bn(y, w, 3, stride, OpKind::Relu);
      y = l.conv_bn(y, 4 * w, 1, 1, kNoActivation);
      int shortcut = b == 0 ? l.conv_bn(x, 4 * w, 1, stride, kNoActivation) : x;
      x = l.op(OpKind::Relu, {l.op(OpKind::Add, {y, shortcut})});
    }
  g.mark_output(l.dense(l.op(OpKind::GlobalAvgPool, {x}), 1000));
  return g;
}

// MobileNetV2 (t, c, n, s) stages, or EfficientNet-B0 MBConv stages with squeeze-excite.
struct Stage {
  int64_t expand, kernel, stride, channels, repeats;
};

int inverted_residual(Layers& l, int x, const Stage& s, int64_t stride, bool efficient) {
  Graph& g = l.graph();
  int64_t in = g.shape(x)[1], wide = in * s.expand;
  OpKind act = efficient ? OpKind::Silu : OpKind::Relu6;
  int y = s.expand == 1 ? x : l.conv_bn(x, wide, 1, 1, act);
  y = l.conv_bn(y, wide, s.kernel, stride, act, wide);
  if (efficient) {  // squeeze-excite: per-channel gates from the pooled features
    int gate = l.op(OpKind::Silu,
                    {l.dense(l.op(OpKind::GlobalAvgPool, {y}), std::max<int64_t>(1, in / 4))});
    y = l.op(OpKind::ChannelScale, {y, l.op(OpKind::Sigmoid, {l.dense(gate, wide)})});
  }
  y = l.conv_bn(y, s.channels, 1, 1, kNoActivation);
  return stride == 1 && in == s.channels ? l.op(OpKind::Add, {y, x}) : y;
}

Graph mobile_net(const std::string& name, const ZooOptions& o, const std::vector<Stage>& stages,
                 bool efficient) {
  Graph g(name);
  Layers l(g);
  OpKind act = efficient ? OpKind::Silu : OpKind::Relu6;
  int x = l.conv_bn(g.input("image", {o.batch, 3, o.image, o.image}), 32, 3, 2, act);
  for (const Stage& s : stages)
    for (int64_t r = 0; r < s.repeats; ++r)
      x = inverted_residual(l, x, s, r == 0 ? s.stride : 1, efficient);
  x = l.conv_bn(x, 1280, 1, 1, act);
  g.mark_output(l.dense(l.op(OpKind::GlobalAvgPool, {x}), 1000));
  return g;
}

// (expansion, kernel, stride, channels, repeats) per stage, as published.
const std::vector<Stage> kMobileNetV2 = {{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2}, {6, 3, 2, 32, 3},
                                         {6, 3, 2, 64, 4}, {6, 3, 1, 96, 3}, {6, 3, 2, 160, 3},
                                         {6, 3, 1, 320, 1}};
const std::vector<Stage> kEfficientNetB0 = {{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2},
                                            {6, 3, 2, 80, 3}, {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4},
                                            {6, 3, 1, 320, 1}};

struct TransformerShape {
  int64_t width, heads, ffn, layers;
  bool pre_norm, bias, gated;  // GPT-2 / LLaMA style
  OpKind norm, act;
};

// Multi-head self-attention over x [tokens, width] for `batch` sequences of `seq`.
int attention(Layers& l, int x, const TransformerShape& t, int64_t batch, int64_t seq) {
  int64_t hd = t.width / t.heads;
  auto heads = [&](int y, std::vector<int64_t> perm) {  // [b*seq, width] -> per head
    int split = l.op(OpKind::Reshape, {y}, {{"shape", {batch, seq, t.heads, hd}}});
    int moved = l.op(OpKind::Transpose, {split}, {{"perm", perm}});
    auto s = l.graph().shape(moved);
    return l.op(OpKind::Reshape, {moved}, {{"shape", {batch * t.heads, s[2], s[3]}}});
  };
  int q = heads(l.dense(x, t.width, t.bias), {0, 2, 1, 3});
  int k = heads(l.dense(x, t.width, t.bias), {0, 2, 3, 1});
  int v = heads(l.dense(x, t.width, t.bias), {0, 2, 1, 3});
  int p = l.op(OpKind::Softmax, {l.op(OpKind::MatMul, {q, k})});
  int ctx = l.op(OpKind::MatMul, {p, v});
  ctx = l.op(OpKind::Reshape, {ctx}, {{"shape", {batch, t.heads, seq, hd}}});
  ctx = l.op(OpKind::Transpose, {ctx}, {{"perm", {0, 2, 1, 3}}});
  ctx = l.op(OpKind::Reshape, {ctx}, {{"shape", {batch * seq, t.width}}});
  return l.dense(ctx, t.width, t.bias);
}

int feed_forward(Layers& l, int x, const TransformerShape& t) {
  int up = l.op(t.act, {l.dense(x, t.ffn, t.bias)});
  if (t.gated) up = l.op(OpKind::Mul, {up, l.dense(x, t.ffn, t.bias)});
  return l.dense(up, t.width, t.bias);
}

Graph transformer(const std::string& name, const ZooOptions& o, TransformerShape t) {
  if (o.layers > 0) t.layers = o.layers;
  Graph g(name);
  Layers l(g);
  int x = g.input("hidden", {int64_t(o.batch) * o.seq, t.width});
  for (int64_t layer = 0; layer < t.layers; ++layer) {
    if (t.pre_norm) {
      x = l.op(OpKind::Add, {x, attention(l, l.norm(t.norm, x), t, o.batch, o.seq)});
      x = l.op(OpKind::Add, {x, feed_forward(l, l.norm(t.norm, x), t)});
    } else {
      x = l.norm(t.norm, l.op(OpKind::Add, {x, attention(l, x, t, o.batch, o.seq)}));
      x = l.norm(t.norm, l.op(OpKind::Add, {x, feed_forward(l, x, t)}));
    }
  }
  if (t.pre_norm) x = l.norm(t.norm, x);
  if (name == "gpt2") x = l.dense(x, 50257, false);  // the language-model head
  g.mark_output(x);
  return g;
}

}  // namespace

std::vector<std::string> zoo_model_names() {
  return {"resnet50", "mobilenetv2", "efficientnet-b0", "bert-base", "gpt2", "llama-7b"};
}

Graph build_zoo_model(const std::string& name, const ZooOptions& o) {
  if (o.batch < 1 || o.seq < 1 || o.layers < 0 || o.image < 32)
    throw Error("zoo: batch and seq must be >= 1, image >= 32");
  if (name == "resnet50") return resnet50(o);
  if (name == "mobilenetv2") return mobile_net(name, o, kMobileNetV2, false);
  if (name == "efficientnet-b0") return mobile_net(name, o, kEfficientNetB0, true);
  if (name == "bert-base")
    return transformer(name, o,
                       {768, 12, 3072, 12, false, true, false, OpKind::LayerNorm, OpKind::Gelu});
  if (name == "gpt2")
    return transformer(name, o,
                       {768, 12, 3072, 12, true, true, false, OpKind::LayerNorm, OpKind::Gelu});
  if (name == "llama-7b") {
    ZooOptions one = o;
    if (one.layers == 0) one.layers = 1;
    return transformer(name, one,
                       {4096, 32, 11008, 32, true, false, true, OpKind::RmsNorm, OpKind::Silu});
  }
  throw Error("zoo: unknown model '" + name + "' (known: resnet50, mobilenetv2, " +
              "efficientnet-b0, bert-base, gpt2, llama-7b)");
}

}  // namespace tlm
