// Gpt: the tensor language model, a decoder-only transformer in the style of GPT-2
// (learned positions, pre-norm blocks, causal self-attention, GELU MLP, tied output
// embedding), sized by ModelConfig. `forward` scores whole sequences for training;
// `step` extends a KV cache by new tokens, so decoding costs one token per step.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "model/schedule_model.h"

namespace tlm {

// Keys and values of every layer for the tokens seen so far, per sequence of the batch.
struct KvCache {
  std::vector<torch::Tensor> keys, values;  // per layer: [batch, heads, length, head_dim]
  int64_t length() const { return keys.empty() ? 0 : keys[0].size(2); }
  // Keeps the sequences at `rows` (in that order), e.g. the beams that survive a step.
  void select(const torch::Tensor& rows);
};

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& config);
  // x: [batch, new, d]; `cache` (if any) holds this layer's earlier keys and values.
  torch::Tensor forward(torch::Tensor x, torch::Tensor* keys, torch::Tensor* values);

 private:
  int heads_;
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(Block);

class GptImpl : public torch::nn::Module {
 public:
  explicit GptImpl(const ModelConfig& config);
  const ModelConfig& config() const { return config_; }
  int64_t parameter_count();
  // tokens [batch, length] -> logits [batch, length, vocab].
  torch::Tensor forward(const torch::Tensor& tokens);
  // Appends `tokens` [batch, new] to `cache`; returns logits of the new positions.
  torch::Tensor step(const torch::Tensor& tokens, KvCache& cache);

 private:
  torch::Tensor run(const torch::Tensor& tokens, KvCache* cache);

  ModelConfig config_;
  torch::nn::Embedding token_embedding_{nullptr}, position_embedding_{nullptr};
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm final_norm_{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace tlm
