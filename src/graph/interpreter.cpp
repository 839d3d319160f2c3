#include "graph/interpreter.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace tlm {
namespace {

using Values = std::vector<float>;

float unary(const std::string& op, float x) {
  if (op == "relu") return std::max(x, 0.0f);
  if (op == "relu6") return std::min(std::max(x, 0.0f), 6.0f);
  if (op == "sigmoid") return 1.0f / (1.0f + std::exp(-x));
  if (op == "silu") return x / (1.0f + std::exp(-x));
  if (op == "tanh") return std::tanh(x);
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));  // gelu
}

Values conv2d(const Graph& g, const Node& n, const Values& x, const Values& w, const Values* b) {
  auto xs = g.shape(n.inputs[0]), ws = g.shape(n.inputs[1]), os = g.shape(n.output);
  int64_t stride = n.attr("stride", 1), pad = n.attr("pad", 0), dil = n.attr("dilation", 1);
  int64_t groups = n.attr("groups", 1), cg = ws[1], kg = ws[0] / groups;
  Values out(size_t(element_count(os)));
  for (int64_t i = 0; i < os[0]; ++i)
    for (int64_t k = 0; k < os[1]; ++k)
      for (int64_t y = 0; y < os[2]; ++y)
        for (int64_t z = 0; z < os[3]; ++z) {
          double acc = b ? (*b)[k] : 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < ws[2]; ++r)
              for (int64_t s = 0; s < ws[3]; ++s) {
                int64_t iy = y * stride + r * dil - pad, ix = z * stride + s * dil - pad;
                if (iy < 0 || ix < 0 || iy >= xs[2] || ix >= xs[3]) continue;
                int64_t ci = (k / kg) * cg + c;
                acc += x[((i * xs[1] + ci) * xs[2] + iy) * xs[3] + ix] *
                       w[((k * cg + c) * ws[2] + r) * ws[3] + s];
              }
          out[((i * os[1] + k) * os[2] + y) * os[3] + z] = float(acc);
        }
  return out;
}

Values matmul(int64_t batch, int64_t m, int64_t k, int64_t n, const Values& a, const Values& b,
              const Values* bias) {
  Values out(size_t(batch * m * n));
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = bias ? (*bias)[j] : 0;
        for (int64_t r = 0; r < k; ++r) acc += a[(t * m + i) * k + r] * b[(t * k + r) * n + j];
        out[(t * m + i) * n + j] = float(acc);
      }
  return out;
}

Values pool(const Graph& g, const Node& n, const Values& x) {
  auto xs = g.shape(n.inputs[0]), os = g.shape(n.output);
  int64_t r = n.attr("r", 1), s = n.attr("s", r), stride = n.attr("stride", 1),
          pad = n.attr("pad", 0);
  bool is_max = n.op == "maxpool";
  Values out(size_t(element_count(os)));
  for (int64_t p = 0; p < os[0] * os[1]; ++p)
    for (int64_t y = 0; y < os[2]; ++y)
      for (int64_t z = 0; z < os[3]; ++z) {
        double acc = is_max ? -1e30 : 0;
        for (int64_t a = 0; a < r; ++a)
          for (int64_t c = 0; c < s; ++c) {
            int64_t iy = y * stride + a - pad, ix = z * stride + c - pad;
            bool inside = iy >= 0 && ix >= 0 && iy < xs[2] && ix < xs[3];
            double v = inside ? x[(p * xs[2] + iy) * xs[3] + ix] : (is_max ? -1e30 : 0);
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        out[(p * os[2] + y) * os[3] + z] = float(is_max ? acc : acc / double(r * s));
      }
  return out;
}

Values row_op(const std::string& op, const Values& x, int64_t cols, const Values* gain,
              const Values* shift) {
  Values out(x.size());
  for (size_t row = 0; row < x.size() / size_t(cols); ++row) {
    const float* in = &x[row * cols];
    float* o = &out[row * cols];
    double mean = 0, sq = 0, mx = -1e30, sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += in[c] / double(cols), mx = std::max(mx, double(in[c]));
    for (int64_t c = 0; c < cols; ++c)
      sq += (op == "layernorm" ? (in[c] - mean) * (in[c] - mean) : in[c] * in[c]) / double(cols);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(in[c] - mx);
    for (int64_t c = 0; c < cols; ++c) {
      if (op == "softmax") o[c] = float(std::exp(in[c] - mx) / sum);
      if (op == "layernorm")
        o[c] = float((in[c] - mean) / std::sqrt(sq + 1e-5) * (*gain)[c] + (*shift)[c]);
      if (op == "rmsnorm") o[c] = float(in[c] / std::sqrt(sq + 1e-5) * (*gain)[c]);
    }
  }
  return out;
}

Values transpose(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm,
                 const Values& x) {
  size_t dims = shape.size();
  std::vector<int64_t> stride(dims, 1), out_shape(dims);
  for (size_t d = dims - 1; d-- > 0;) stride[d] = stride[d + 1] * shape[d + 1];
  for (size_t d = 0; d < dims; ++d) out_shape[d] = shape[perm[d]];
  Values out(x.size());
  std::vector<int64_t> index(dims, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t from = 0;
    for (size_t d = 0; d < dims; ++d) from += index[d] * stride[perm[d]];
    out[o] = x[size_t(from)];
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Values run_node(const Graph& g, const Node& n, const std::vector<Values>& v) {
  auto in = [&](size_t k) -> const Values& { return v[n.inputs[k]]; };
  auto opt = [&](size_t k) { return n.inputs.size() > k ? &in(k) : nullptr; };
  auto shape = [&](size_t k) { return g.shape(n.inputs[k]); };
  const std::string& op = n.op;
  if (op == "conv2d") return conv2d(g, n, in(0), in(1), opt(2));
  if (op == "dense") {
    auto w = shape(1);
    return matmul(1, element_count(shape(0)) / w[0], w[0], w[1], in(0), in(1), opt(2));
  }
  if (op == "batch_matmul")
    return matmul(shape(0)[0], shape(0)[1], shape(0)[2], shape(1)[2], in(0), in(1), nullptr);
  Values out = in(0);
  if (op == "add" || op == "mul")
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = op == "add" ? out[i] + in(1)[i] : out[i] * in(1)[i];
  else if (op == "channel_scale" || op == "batchnorm") {
    auto x = shape(0);
    int64_t plane = x[2] * x[3];
    for (size_t i = 0; i < out.size(); ++i) {
      size_t nc = i / size_t(plane), c = nc % size_t(x[1]);
      out[i] = op == "batchnorm" ? out[i] * in(1)[c] + in(2)[c] : out[i] * in(1)[nc];
    }
  } else if (op == "maxpool" || op == "avgpool")
    return pool(g, n, in(0));
  else if (op == "global_avgpool") {
    auto x = shape(0);
    int64_t plane = x[2] * x[3];
    out.assign(size_t(x[0] * x[1]), 0.0f);
    for (size_t i = 0; i < in(0).size(); ++i) out[i / size_t(plane)] += in(0)[i] / float(plane);
  } else if (op == "softmax" || op == "layernorm" || op == "rmsnorm")
    return row_op(op, in(0), shape(0).back(), opt(1), opt(2));
  else if (op == "transpose")
    return transpose(shape(0), n.attrs.at("perm"), in(0));
  else if (op != "reshape")
    for (float& x : out) x = unary(op, x);
  return out;
}

}  // namespace

std::vector<std::vector<float>> interpret(const Graph& graph, const Weights& weights,
                                          const std::vector<std::vector<float>>& inputs) {
  if (inputs.size() != graph.inputs().size())
    throw Error("interpret: graph " + graph.name() + " has " +
                std::to_string(graph.inputs().size()) + " inputs, got " +
                std::to_string(inputs.size()));
  std::vector<Values> values(graph.tensors().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    int t = graph.inputs()[i];
    if (int64_t(inputs[i].size()) != element_count(graph.shape(t)))
      throw Error("interpret: input " + graph.tensor(t).name + " has the wrong size");
    values[t] = inputs[i];
  }
  for (const auto& [t, w] : weights) values[t] = w;
  for (const Node& n : graph.nodes()) values[n.output] = run_node(graph, n, values);
  return values;
}

}  // namespace tlm
