#include "model/generator.h"

#include <algorithm>
#include <random>
#include <set>

#include "lang/sentence.h"
#include "lang/vocabulary.h"
#include "util/error.h"

namespace tlm {
namespace {

struct Beam {
  DecisionCursor cursor;
  double score = 0;
};

struct Choice {
  int beam, token;
  double score;
};

// Log-probabilities of the allowed tokens under the model (normalized over the whole
// vocabulary, not over the allowed tokens), so a sentence scores its probability under
// the model. Renormalizing over the allowed set at each step gave a forced continuation
// probability 1: a digit whose intended number was illegal ("6" meant as "64" where 96
// has no divisor 64) kept all the mass of that number, and beams ended in tiny tiles.
std::vector<double> allowed_log_probs(const std::vector<int>& allowed, const float* logits,
                                      int vocab) {
  double top = -1e30, sum = 0;
  for (int t = 0; t < vocab; ++t) top = std::max(top, double(logits[t]));
  for (int t = 0; t < vocab; ++t) sum += std::exp(logits[t] - top);
  std::vector<double> out;
  for (int t : allowed) out.push_back(logits[t] - top - std::log(sum));
  return out;
}

// Beam search (greedy is width 1): every live beam proposes each allowed next token; the
// best `width` choices survive. Ties break on (beam, token), so results are reproducible.
std::vector<Choice> best_choices(const std::vector<Beam>& beams, const torch::Tensor& logits,
                                 int width) {
  std::vector<Choice> choices;
  for (size_t b = 0; b < beams.size(); ++b) {
    const auto& allowed = beams[b].cursor.allowed();
    auto lp = allowed_log_probs(allowed, logits[int64_t(b)].data_ptr<float>(), int(logits.size(1)));
    for (size_t i = 0; i < allowed.size(); ++i)
      choices.push_back({int(b), allowed[i], beams[b].score + lp[i]});
  }
  size_t keep = std::min(choices.size(), size_t(width));
  std::partial_sort(choices.begin(), choices.begin() + keep, choices.end(),
                    [](const Choice& a, const Choice& b) {
                      if (a.score != b.score) return a.score > b.score;
                      return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
                    });
  choices.resize(keep);
  return choices;
}

// Sampling: each beam draws its next token among the allowed ones.
std::vector<Choice> sampled_choices(const std::vector<Beam>& beams, const torch::Tensor& logits,
                                    double temperature, std::mt19937_64& rng) {
  std::vector<Choice> choices;
  for (size_t b = 0; b < beams.size(); ++b) {
    const auto& allowed = beams[b].cursor.allowed();
    auto lp = allowed_log_probs(allowed, logits[int64_t(b)].data_ptr<float>(), int(logits.size(1)));
    std::vector<double> weights;
    for (double l : lp) weights.push_back(std::exp(l / temperature));
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    size_t i = pick(rng);
    choices.push_back({int(b), allowed[i], beams[b].score + lp[i]});
  }
  return choices;
}

// The tokens the space forces after `beam`'s last choice (a decision's name, a number's
// end) need no choice: they are pushed now and enter the cache in the same model step as
// the choice (their probability is added to the score from that step's logits). Returns
// them. <eos> is never forced here, so a finished sentence always ends on a choice.
std::vector<int> push_forced(Beam& beam, int eos) {
  std::vector<int> forced;
  while (!beam.cursor.done() && beam.cursor.allowed().size() == 1 &&
         beam.cursor.allowed()[0] != eos) {
    forced.push_back(beam.cursor.allowed()[0]);
    beam.cursor.push(beam.cursor.allowed()[0]);
  }
  return forced;
}

// Scores only fall as a sentence grows, so once `width` sentences are finished and no live
// beam scores above the width-th of them, no live beam can enter the top `width`.
bool done_searching(std::vector<Beam>& finished, const std::vector<Beam>& live, int width) {
  if (int(finished.size()) < width) return false;
  std::stable_sort(finished.begin(), finished.end(),
                   [](const Beam& a, const Beam& b) { return a.score > b.score; });
  double best_live = -1e300;
  for (const Beam& b : live) best_live = std::max(best_live, b.score);
  return best_live <= finished[width - 1].score;
}

torch::Tensor token_tensor(const std::vector<int>& tokens) {
  std::vector<int64_t> ids(tokens.begin(), tokens.end());
  return torch::tensor(ids, torch::kLong).view({1, int64_t(ids.size())});
}

// One model step for every live beam, each with its own tokens (its choice and the tokens
// forced after it; rows padded to the longest). Adds each forced token's log-probability
// to its beam's score; returns each beam's logits for its next choice, [beams, vocab].
torch::Tensor step_beams(Gpt& model, KvCache& cache, std::vector<Beam>& beams,
                         const std::vector<std::vector<int>>& tokens) {
  size_t width = 0;
  for (const auto& row : tokens) width = std::max(width, row.size());
  std::vector<int64_t> ids(beams.size() * width, Vocabulary::get().pad()), counts, last;
  for (size_t b = 0; b < beams.size(); ++b) {
    std::copy(tokens[b].begin(), tokens[b].end(), ids.begin() + int64_t(b * width));
    counts.push_back(int64_t(tokens[b].size()));
    last.push_back(int64_t(tokens[b].size()) - 1);
  }
  auto batch = torch::tensor(ids, torch::kLong).view({int64_t(beams.size()), int64_t(width)});
  bool ragged =
      std::any_of(counts.begin(), counts.end(), [&](int64_t c) { return c < int64_t(width); });
  auto logits = model->step(batch, cache, ragged ? counts : std::vector<int64_t>{}).contiguous();
  int vocab = int(logits.size(2));
  for (size_t b = 0; b < beams.size(); ++b)
    for (size_t i = 1; i < tokens[b].size(); ++i) {
      const float* row = logits[int64_t(b)][int64_t(i - 1)].data_ptr<float>();
      beams[b].score += allowed_log_probs({tokens[b][i]}, row, vocab)[0];
    }
  auto rows = torch::arange(int64_t(beams.size()), torch::kLong);
  return logits.index({rows, torch::tensor(last, torch::kLong)});
}

// Runs the prompt into `cache` as its shared part, reusing the keys and values of the
// longest prefix it shares with `prompt_cache` (which then holds this prompt); returns
// the last logits.
torch::Tensor prefill(Gpt& model, const std::vector<int>& prompt, KvCache& cache,
                      PromptCache* prompt_cache) {
  size_t shared = 0;
  if (prompt_cache) {
    const auto& seen = prompt_cache->tokens;
    while (shared < seen.size() && shared < prompt.size() && seen[shared] == prompt[shared])
      ++shared;
    shared = std::min(shared, prompt.size() - 1);  // at least one token gives the logits
    const KvCache& old = prompt_cache->cache;
    for (size_t l = 0; l < old.shared_keys.size() && shared > 0; ++l) {
      cache.keys.push_back(old.shared_keys[l].slice(2, 0, int64_t(shared)));
      cache.values.push_back(old.shared_values[l].slice(2, 0, int64_t(shared)));
    }
    if (cache.keys.empty()) shared = 0;
  }
  std::vector<int> rest(prompt.begin() + int64_t(shared), prompt.end());
  torch::Tensor last = model->step(token_tensor(rest), cache).select(1, -1);  // [1, vocab]
  cache.share();
  if (prompt_cache) prompt_cache->tokens = prompt, prompt_cache->cache = cache;
  return last;
}

}  // namespace

std::vector<Generated> generate(Gpt& model, const std::vector<int>& prompt,
                                const ScheduleSpace& space, const GenerateOptions& options,
                                PromptCache* prompt_cache) {
  if (options.k < 1) throw Error("generate: k must be at least 1");
  if (options.mode != "beam" && options.mode != "greedy" && options.mode != "sample")
    throw Error("generate: unknown mode '" + options.mode + "' (beam|greedy|sample)");
  c10::InferenceMode inference;  // no autograd bookkeeping at all (cheaper than no_grad)
  model->eval();
  bool sampling = options.mode == "sample";
  int width = options.mode == "greedy" ? 1 : options.k;
  if (prompt.empty()) throw Error("generate: empty prompt");
  KvCache cache;
  torch::Tensor last = prefill(model, prompt, cache, prompt_cache);
  std::vector<Beam> beams = {{DecisionCursor(space, CursorValues::Proposable), 0}};
  if (sampling) {  // k independent draws share the prompt's cache
    beams.assign(options.k, beams[0]);
    cache.select(torch::zeros({options.k}, torch::kLong));
    last = last.expand({options.k, last.size(1)});
  }
  std::mt19937_64 rng(options.seed);
  std::vector<Beam> finished;
  const int eos = Vocabulary::get().eos();
  while (!beams.empty()) {
    auto logits = last.contiguous();
    auto choices = sampling ? sampled_choices(beams, logits, options.temperature, rng)
                            : best_choices(beams, logits, width);
    std::vector<Beam> next;
    std::vector<int64_t> rows;
    std::vector<std::vector<int>> tokens;
    for (const Choice& c : choices) {
      Beam beam = beams[c.beam];
      beam.cursor.push(c.token);
      beam.score = c.score;
      if (c.token == eos) {
        finished.push_back(beam);
        continue;
      }
      tokens.push_back({c.token});
      for (int t : push_forced(beam, eos)) tokens.back().push_back(t);
      next.push_back(beam);
      rows.push_back(c.beam);
    }
    beams = std::move(next);
    if (beams.empty() || (!sampling && done_searching(finished, beams, width))) break;
    bool same_rows = int64_t(rows.size()) == cache.keys[0].size(0);
    for (size_t r = 0; r < rows.size() && same_rows; ++r) same_rows = rows[r] == int64_t(r);
    if (!same_rows) cache.select(torch::tensor(rows, torch::kLong));
    last = step_beams(model, cache, beams, tokens);
  }
  if (!sampling)
    std::stable_sort(finished.begin(), finished.end(),
                     [](const Beam& a, const Beam& b) { return a.score > b.score; });
  std::vector<Generated> out;
  std::set<std::vector<int64_t>> seen;
  for (const Beam& b : finished)
    if (int(out.size()) < options.k && seen.insert(b.cursor.decisions()).second)
      out.push_back({b.cursor.decisions(), b.score});
  return out;
}

}  // namespace tlm
