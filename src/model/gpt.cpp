#include "model/gpt.h"

#include <algorithm>
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
  if (speed_prompt) j["speed_prompt"] = true;  // absent otherwise: older configs stay as they are
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
    c.speed_prompt = j.value("speed_prompt", false);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("model config: ") + e.what());
  }
  if (c.context < 8 || c.layers < 1 || c.heads < 1 || c.d_model < c.heads ||
      c.d_model % c.heads != 0 || c.vocab < 0)
    throw Error("model config: needs context >= 8, layers >= 1, heads >= 1 dividing d_model");
  if (c.context > 65536 || c.layers > 256 || c.d_model > 16384 || c.vocab > (1 << 20))
    throw Error("model config: at most context 65536, 256 layers, d_model 16384, vocab 2^20");
  return c;
}

void KvCache::select(const torch::Tensor& rows) {
  for (auto& k : keys) k = k.index_select(0, rows);
  for (auto& v : values) v = v.index_select(0, rows);
  if (filled.defined()) filled = filled.index_select(0, rows);
}

torch::Tensor KvCache::next_positions(int64_t batch) const {
  if (filled.defined()) return filled.sum(1, true) + shared_length();
  return torch::full({batch, 1}, length(), torch::kLong);
}

void KvCache::extend_filled(int64_t batch, int64_t fresh, const torch::Tensor& new_filled) {
  if (!filled.defined() && !new_filled.defined()) return;  // no holes anywhere
  int64_t own = length() - shared_length();
  auto old = filled.defined() ? filled : torch::ones({batch, own}, torch::kBool);
  auto added = new_filled.defined() ? new_filled : torch::ones({batch, fresh}, torch::kBool);
  filled = torch::cat({old, added}, 1);
}

void KvCache::share() {
  if ((!keys.empty() && keys[0].size(0) != 1) || (filled.defined() && !filled.all().item<bool>()))
    throw Error("kv cache: only one sequence without holes can be shared");
  filled = torch::Tensor();
  for (size_t l = 0; l < keys.size(); ++l) {
    if (l < shared_keys.size()) {
      keys[l] = torch::cat({shared_keys[l], keys[l]}, 2);
      values[l] = torch::cat({shared_values[l], values[l]}, 2);
    }
  }
  shared_keys = keys, shared_values = values;
  for (auto& k : keys) k = k.slice(2, 0, 0);
  for (auto& v : values) v = v.slice(2, 0, 0);
}

namespace {

// q [batch, heads, new, hd] against keys [1, heads, length, hd] shared by the whole batch:
// the batch folds into the rows of one matrix product per head, so the shared keys are
// never copied per sequence. Returns [batch, heads, new, length].
torch::Tensor shared_product(const torch::Tensor& q, const torch::Tensor& shared) {
  int64_t batch = q.size(0), heads = q.size(1), fresh = q.size(2);
  auto rows = q.permute({1, 0, 2, 3}).reshape({heads, batch * fresh, q.size(3)});
  return rows.matmul(shared[0].transpose(1, 2))
      .view({heads, batch, fresh, shared.size(2)})
      .permute({1, 0, 2, 3});
}

// weights [batch, heads, new, length] applied to values [1, heads, length, hd] shared by the
// batch: [batch, heads, new, hd].
torch::Tensor shared_weighted(const torch::Tensor& weights, const torch::Tensor& shared) {
  int64_t batch = weights.size(0), heads = weights.size(1), fresh = weights.size(2);
  auto rows = weights.permute({1, 0, 2, 3}).reshape({heads, batch * fresh, weights.size(3)});
  return rows.matmul(shared[0]).view({heads, batch, fresh, shared.size(3)}).permute({1, 0, 2, 3});
}

}  // namespace

BlockImpl::BlockImpl(const ModelConfig& c) : heads_(c.heads) {
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  qkv_ = register_module("qkv", torch::nn::Linear(c.d_model, 3 * c.d_model));
  proj_ = register_module("proj", torch::nn::Linear(c.d_model, c.d_model));
  up_ = register_module("up", torch::nn::Linear(c.d_model, 4 * c.d_model));
  down_ = register_module("down", torch::nn::Linear(4 * c.d_model, c.d_model));
}

torch::Tensor BlockImpl::forward(torch::Tensor x, const torch::Tensor& hidden, KvCache* cache,
                                 size_t layer) {
  int64_t batch = x.size(0), fresh = x.size(1), d = x.size(2), hd = d / heads_;
  auto split = qkv_->forward(norm1_->forward(x)).view({batch, fresh, 3, heads_, hd});
  auto q = split.select(2, 0).transpose(1, 2) / std::sqrt(double(hd));  // [batch, heads, new, hd]
  auto k = split.select(2, 1).transpose(1, 2);
  auto v = split.select(2, 2).transpose(1, 2);
  torch::Tensor shared_k, shared_v;
  if (cache) {  // decoding: attend to everything cached, then cache the new keys too
    auto& keys = cache->keys[layer];
    auto& values = cache->values[layer];
    if (keys.defined()) k = torch::cat({keys, k}, 2), v = torch::cat({values, v}, 2);
    keys = k, values = v;
    if (layer < cache->shared_keys.size())
      shared_k = cache->shared_keys[layer], shared_v = cache->shared_values[layer];
  }
  auto scores = q.matmul(k.transpose(2, 3));
  if (hidden.defined())
    scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());
  torch::Tensor attended;
  if (shared_k.defined()) {  // the shared prompt comes first and every new position sees it
    int64_t shared = shared_k.size(2);
    auto weights = torch::softmax(torch::cat({shared_product(q, shared_k), scores}, -1), -1);
    attended =
        shared_weighted(weights.slice(3, 0, shared), shared_v) + weights.slice(3, shared).matmul(v);
  } else {
    attended = torch::softmax(scores, -1).matmul(v);
  }
  attended = attended.transpose(1, 2).reshape({batch, fresh, d});
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

namespace {

// Marks the new tokens of a ragged step: [batch, new], true for the first counts[b] of row b.
torch::Tensor filled_rows(const std::vector<int64_t>& counts, int64_t batch, int64_t fresh) {
  if (int64_t(counts.size()) != batch)
    throw Error("model: a ragged step needs a count per sequence");
  for (int64_t c : counts)
    if (c < 1 || c > fresh) throw Error("model: a ragged step's counts must be 1 .. new tokens");
  auto limit = torch::tensor(counts, torch::kLong).unsqueeze(1);
  return torch::arange(fresh, torch::kLong).unsqueeze(0) < limit;
}

// Which own keys the new positions may not see, broadcastable to [batch, heads, new, keys]:
// later new positions (causal), and holes of ragged steps. Undefined when none.
torch::Tensor hidden_keys(int64_t past, int64_t fresh, const torch::Tensor& filled) {
  torch::Tensor hidden;
  if (fresh > 1) hidden = torch::ones({fresh, past + fresh}, torch::kBool).triu(past + 1);
  if (filled.defined()) {
    auto holes = filled.logical_not().view({filled.size(0), 1, 1, filled.size(1)});
    hidden = hidden.defined() ? holes.logical_or(hidden) : holes;
  }
  return hidden;
}

}  // namespace

torch::Tensor GptImpl::run(const torch::Tensor& tokens, KvCache* cache,
                           const std::vector<int64_t>& counts) {
  int64_t batch = tokens.size(0), fresh = tokens.size(1);
  int64_t own = cache ? cache->length() - cache->shared_length() : 0;
  torch::Tensor new_filled = counts.empty() ? torch::Tensor() : filled_rows(counts, batch, fresh);
  if (new_filled.defined() && !cache) throw Error("model: a ragged step needs a cache");
  auto start = cache ? cache->next_positions(batch) : torch::zeros({batch, 1}, torch::kLong);
  int64_t added = counts.empty() ? fresh : *std::max_element(counts.begin(), counts.end());
  int64_t longest = start.max().item<int64_t>() + added;
  if (longest > config_.context)
    throw Error("model: sentence of " + std::to_string(longest) + " tokens exceeds context " +
                std::to_string(config_.context));
  auto positions = (start + torch::arange(fresh, torch::kLong)).clamp_max(config_.context - 1);
  auto x = token_embedding_->forward(tokens) + position_embedding_->forward(positions);
  if (cache && cache->keys.empty()) {
    cache->keys.resize(blocks_->size());
    cache->values.resize(blocks_->size());
  }
  if (cache) cache->extend_filled(batch, fresh, new_filled);
  auto hidden = hidden_keys(own, fresh, cache ? cache->filled : torch::Tensor());
  for (size_t l = 0; l < blocks_->size(); ++l)
    x = blocks_[l]->as<BlockImpl>()->forward(x, hidden, cache, l);
  // Output embedding tied to the input embedding.
  return final_norm_->forward(x).matmul(token_embedding_->weight.t());
}

void GptImpl::extend_vocabulary(int vocab) {
  if (vocab < config_.vocab) throw Error("model: a vocabulary never shrinks");
  if (vocab == config_.vocab) return;
  torch::NoGradGuard no_grad;
  torch::Tensor known = token_embedding_->weight;
  torch::Tensor fresh = known.mean(0, true).expand({vocab - config_.vocab, known.size(1)});
  auto grown = torch::nn::Embedding(vocab, config_.d_model);
  grown->weight.copy_(torch::cat({known, fresh}, 0));
  token_embedding_ = replace_module("token_embedding", grown);
  config_.vocab = vocab;
}

int64_t GptImpl::parameter_count() {
  int64_t count = 0;
  for (const auto& p : parameters()) count += p.numel();
  return count;
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens) {
  return run(tokens, nullptr, {});
}

torch::Tensor GptImpl::step(const torch::Tensor& tokens, KvCache& cache,
                            const std::vector<int64_t>& counts) {
  return run(tokens, &cache, counts);
}

}  // namespace tlm
