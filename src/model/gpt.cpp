#include "model/gpt.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace tlm {

std::string ModelConfig::to_json() const {
  nlohmann::json j = {{"vocab", vocab},
                      {"context", context},
                      {"layers", layers},
                      {"d_model", d_model},
                      {"heads", heads}};
  return j.dump(2);
}

ModelConfig ModelConfig::from_json(const std::string& text) {
  ModelConfig c;
  try {
    auto j = nlohmann::json::parse(text);
    c.vocab = j.value("vocab", 0);
    c.context = j.at("context").get<int>();
    c.layers = j.at("layers").get<int>();
    c.d_model = j.at("d_model").get<int>();
    c.heads = j.at("heads").get<int>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("model config: ") + e.what());
  }
  if (c.context < 8 || c.layers < 1 || c.heads < 1 || c.d_model < c.heads ||
      c.d_model % c.heads != 0 || c.vocab < 0)
    throw Error("model config: needs context >= 8, layers >= 1, heads >= 1 dividing d_model");
  return c;
}

void KvCache::select(const torch::Tensor& rows) {
  for (auto& k : keys) k = k.index_select(0, rows);
  for (auto& v : values) v = v.index_select(0, rows);
}

BlockImpl::BlockImpl(const ModelConfig& c) : heads_(c.heads) {
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  qkv_ = register_module("qkv", torch::nn::Linear(c.d_model, 3 * c.d_model));
  proj_ = register_module("proj", torch::nn::Linear(c.d_model, c.d_model));
  up_ = register_module("up", torch::nn::Linear(c.d_model, 4 * c.d_model));
  down_ = register_module("down", torch::nn::Linear(4 * c.d_model, c.d_model));
}

torch::Tensor BlockImpl::forward(torch::Tensor x, torch::Tensor* keys, torch::Tensor* values) {
  int64_t batch = x.size(0), fresh = x.size(1), d = x.size(2), hd = d / heads_;
  auto split = qkv_->forward(norm1_->forward(x)).view({batch, fresh, 3, heads_, hd});
  auto q = split.select(2, 0).transpose(1, 2);  // [batch, heads, new, hd]
  auto k = split.select(2, 1).transpose(1, 2);
  auto v = split.select(2, 2).transpose(1, 2);
  if (keys) {  // decoding: attend to everything cached, then cache the new keys too
    if (keys->defined()) k = torch::cat({*keys, k}, 2), v = torch::cat({*values, v}, 2);
    *keys = k, *values = v;
  }
  int64_t total = k.size(2), past = total - fresh;
  auto scores = q.matmul(k.transpose(2, 3)) / std::sqrt(double(hd));
  if (fresh > 1) {  // causal: new position i sees positions <= past + i
    auto mask = torch::ones({fresh, total}, torch::kBool).triu(past + 1);
    scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  }
  auto attended = torch::softmax(scores, -1).matmul(v).transpose(1, 2).reshape({batch, fresh, d});
  x = x + proj_->forward(attended);
  return x + down_->forward(torch::gelu(up_->forward(norm2_->forward(x))));
}

GptImpl::GptImpl(const ModelConfig& config) : config_(config) {
  if (config.vocab <= 0) throw Error("model config: vocab must be set");
  token_embedding_ =
      register_module("token_embedding", torch::nn::Embedding(config.vocab, config.d_model));
  position_embedding_ =
      register_module("position_embedding", torch::nn::Embedding(config.context, config.d_model));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int l = 0; l < config.layers; ++l) blocks_->push_back(Block(config));
  final_norm_ = register_module(
      "final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.d_model})));
  for (auto& p : named_parameters())  // GPT-2 initialisation
    if (p.key().find("weight") != std::string::npos && p.value().dim() == 2)
      torch::nn::init::normal_(p.value(), 0.0, 0.02);
}

torch::Tensor GptImpl::run(const torch::Tensor& tokens, KvCache* cache) {
  int64_t past = cache ? cache->length() : 0, fresh = tokens.size(1);
  if (past + fresh > config_.context)
    throw Error("model: sentence of " + std::to_string(past + fresh) + " tokens exceeds context " +
                std::to_string(config_.context));
  auto positions = torch::arange(past, past + fresh, torch::kLong);
  auto x = token_embedding_->forward(tokens) + position_embedding_->forward(positions);
  if (cache && cache->keys.empty()) {
    cache->keys.resize(blocks_->size());
    cache->values.resize(blocks_->size());
  }
  for (size_t l = 0; l < blocks_->size(); ++l) {
    auto block = blocks_[l]->as<BlockImpl>();
    x = cache ? block->forward(x, &cache->keys[l], &cache->values[l])
              : block->forward(x, nullptr, nullptr);
  }
  // Output embedding tied to the input embedding.
  return final_norm_->forward(x).matmul(token_embedding_->weight.t());
}

int64_t GptImpl::parameter_count() {
  int64_t count = 0;
  for (const auto& p : parameters()) count += p.numel();
  return count;
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens) {
  return run(tokens, nullptr);
}

torch::Tensor GptImpl::step(const torch::Tensor& tokens, KvCache& cache) {
  return run(tokens, &cache);
}

}  // namespace tlm
