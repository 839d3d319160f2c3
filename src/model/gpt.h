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

// Keys and values of every layer for the tokens seen so far. Sequences that branch from
// one prompt (beams, samples) keep the prompt's keys and values once, shared by all of
// them, and each sequence's own tokens apart: reordering or extending the beams then
// copies only their own few tokens, not the prompt's hundred.
struct KvCache {
  // Per layer: [1, heads, shared length, head_dim], the same for every sequence (or empty).
  std::vector<torch::Tensor> shared_keys, shared_values;
  // Per layer: [batch, heads, own length, head_dim].
  std::vector<torch::Tensor> keys, values;
  // [batch, own length], true where a sequence has a token; undefined while all do. A
  // ragged step (sequences given different numbers of new tokens) leaves holes.
  torch::Tensor filled;
  int64_t shared_length() const { return shared_keys.empty() ? 0 : shared_keys[0].size(2); }
  int64_t length() const {
    return shared_length() + (keys.empty() || !keys[0].defined() ? 0 : keys[0].size(2));
  }
  // Keeps the sequences at `rows` (in that order), e.g. the beams that survive a step.
  void select(const torch::Tensor& rows);
  // [batch, 1]: the position each sequence's next token takes (holes do not count).
  torch::Tensor next_positions(int64_t batch) const;
  // Records a step of `fresh` new tokens per sequence; `new_filled` ([batch, fresh], or
  // undefined when all are real) marks the real ones. Call before the keys grow.
  void extend_filled(int64_t batch, int64_t fresh, const torch::Tensor& new_filled);
  // Makes everything cached so far (one sequence, no holes) the shared part; own parts
  // start empty.
  void share();
};

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& config);
  // x: [batch, new, d]; `hidden` (if defined): which keys each new position may not see,
  // broadcastable to [batch, heads, new, own keys]; `cache` (if any) holds layer `layer`'s
  // earlier keys and values.
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& hidden, KvCache* cache, size_t layer);

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
  // From now on its prompts carry speed classes (set when fine-tuning on such data).
  void read_speed_prompts() { config_.speed_prompt = true; }
  // Grows the vocabulary to `vocab` words (the language only appends words): each new
  // word's embedding starts as the mean of the known ones, so a checkpoint made before
  // the words existed loads, generates and can be fine-tuned to use them.
  void extend_vocabulary(int vocab);
  int64_t parameter_count();
  // tokens [batch, length] -> logits [batch, length, vocab].
  torch::Tensor forward(const torch::Tensor& tokens);
  // Appends `tokens` [batch, new] to `cache`; returns logits of the new positions. With
  // `counts`, sequence b gets only its first counts[b] tokens (1..new), the rest being
  // padding that no position ever attends to; its logits at padding are meaningless.
  torch::Tensor step(const torch::Tensor& tokens, KvCache& cache,
                     const std::vector<int64_t>& counts = {});

 private:
  torch::Tensor run(const torch::Tensor& tokens, KvCache* cache,
                    const std::vector<int64_t>& counts);

  ModelConfig config_;
  torch::nn::Embedding token_embedding_{nullptr}, position_embedding_{nullptr};
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm final_norm_{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace tlm
