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

// Beam search (greedy is width 1): every live beam proposes each allowed next token; the
// best `width` choices survive. Ties break on (beam, token), so results are reproducible.
std::vector<Choice> best_choices(const std::vector<Beam>& beams, const torch::Tensor& log_probs,
                                 int width) {
  std::vector<Choice> choices;
  auto lp = log_probs.accessor<float, 2>();
  for (size_t b = 0; b < beams.size(); ++b)
    for (int t : beams[b].cursor.allowed())
      choices.push_back({int(b), t, beams[b].score + lp[b][t]});
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
std::vector<Choice> sampled_choices(const std::vector<Beam>& beams, const torch::Tensor& log_probs,
                                    double temperature, std::mt19937_64& rng) {
  std::vector<Choice> choices;
  auto lp = log_probs.accessor<float, 2>();
  for (size_t b = 0; b < beams.size(); ++b) {
    const auto& allowed = beams[b].cursor.allowed();
    std::vector<double> weights;
    double top = -1e30;
    for (int t : allowed) top = std::max(top, double(lp[b][t]));
    for (int t : allowed) weights.push_back(std::exp((lp[b][t] - top) / temperature));
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    int t = allowed[pick(rng)];
    choices.push_back({int(b), t, beams[b].score + lp[b][t]});
  }
  return choices;
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

}  // namespace

std::vector<Generated> generate(Gpt& model, const std::vector<int>& prompt,
                                const ScheduleSpace& space, const GenerateOptions& options) {
  if (options.k < 1) throw Error("generate: k must be at least 1");
  if (options.mode != "beam" && options.mode != "greedy" && options.mode != "sample")
    throw Error("generate: unknown mode '" + options.mode + "' (beam|greedy|sample)");
  torch::NoGradGuard no_grad;
  model->eval();
  bool sampling = options.mode == "sample";
  int width = options.mode == "greedy" ? 1 : options.k;
  KvCache cache;
  torch::Tensor last = model->step(token_tensor(prompt), cache).select(1, -1);  // [1, vocab]
  std::vector<Beam> beams = {{DecisionCursor(space), 0}};
  if (sampling) {  // k independent draws share the prompt's cache
    beams.assign(options.k, beams[0]);
    cache.select(torch::zeros({options.k}, torch::kLong));
    last = last.expand({options.k, last.size(1)});
  }
  std::mt19937_64 rng(options.seed);
  std::vector<Beam> finished;
  const int eos = Vocabulary::get().eos();
  while (!beams.empty()) {
    auto log_probs = torch::log_softmax(last, -1).contiguous();
    auto choices = sampling ? sampled_choices(beams, log_probs, options.temperature, rng)
                            : best_choices(beams, log_probs, width);
    std::vector<Beam> next;
    std::vector<int64_t> rows, tokens;
    for (const Choice& c : choices) {
      Beam beam = beams[c.beam];
      beam.cursor.push(c.token);
      beam.score = c.score;
      if (c.token == eos) {
        finished.push_back(beam);
        continue;
      }
      next.push_back(beam);
      rows.push_back(c.beam);
      tokens.push_back(c.token);
    }
    beams = std::move(next);
    if (beams.empty() || (!sampling && done_searching(finished, beams, width))) break;
    cache.select(torch::tensor(rows, torch::kLong));
    auto step = torch::tensor(tokens, torch::kLong).view({int64_t(tokens.size()), 1});
    last = model->step(step, cache).select(1, -1);
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
