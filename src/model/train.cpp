#include "model/train.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "lang/vocabulary.h"
#include "model/checkpoint.h"
#include "model/dataset.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/svg_plot.h"

extern "C" void openblas_set_num_threads(int);

namespace tlm {
namespace {

constexpr int kIgnore = -100;
constexpr int kWarmupSteps = 50;

// Of the prompt without its speed class: every speed of a task goes to the same side.
uint64_t task_hash(const Sentence& s) {
  std::string prompt;
  for (int k = 0; k < s.prompt_length; ++k)
    if (!Vocabulary::get().is_speed_class(s.tokens[k])) prompt += std::to_string(s.tokens[k]) + ",";
  return std::stoull(hash_hex(prompt).substr(0, 8), nullptr, 16);
}

// Whole tasks go to validation: those hashing into the last 1/20, or (a dataset of few
// tasks) the one with the largest hash.
void split_by_task(const Dataset& data, std::vector<const Sentence*>& training,
                   std::vector<const Sentence*>& validation) {
  std::set<uint64_t> tasks, held_out;
  for (const auto& s : data.sentences) tasks.insert(task_hash(s));
  for (uint64_t h : tasks)
    if (h % 20 == 19) held_out.insert(h);
  if (held_out.empty() && tasks.size() >= 2) held_out.insert(*tasks.rbegin());
  for (const auto& s : data.sentences)
    (held_out.count(task_hash(s)) ? validation : training).push_back(&s);
}

// Inputs and targets of a batch, padded to its longest sentence; targets of prompt
// tokens and padding are ignored.
std::pair<torch::Tensor, torch::Tensor> make_batch(const std::vector<const Sentence*>& batch) {
  size_t longest = 0;
  for (auto* s : batch) longest = std::max(longest, s->tokens.size());
  auto inputs = torch::full({int64_t(batch.size()), int64_t(longest - 1)}, Vocabulary::get().pad(),
                            torch::kLong);
  auto targets = torch::full_like(inputs, kIgnore);
  auto in = inputs.accessor<int64_t, 2>(), out = targets.accessor<int64_t, 2>();
  for (size_t b = 0; b < batch.size(); ++b) {
    const auto& t = batch[b]->tokens;
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      in[b][i] = t[i];
      if (int(i + 1) >= batch[b]->prompt_length) out[b][i] = t[i + 1];
    }
  }
  return {inputs, targets};
}

torch::Tensor batch_loss(Gpt& model, const std::vector<const Sentence*>& batch) {
  auto [inputs, targets] = make_batch(batch);
  auto logits = model->forward(inputs);
  return torch::nn::functional::cross_entropy(
      logits.view({-1, logits.size(2)}), targets.view({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(kIgnore));
}

double validation_loss(Gpt& model, const std::vector<const Sentence*>& validation, int batch) {
  if (validation.empty()) return 0;
  torch::NoGradGuard no_grad;
  model->eval();
  double total = 0;
  int batches = 0;
  for (size_t at = 0; at < validation.size() && batches < 8; at += batch, ++batches) {
    std::vector<const Sentence*> part(validation.begin() + at,
                                      validation.begin() + std::min(validation.size(), at + batch));
    total += batch_loss(model, part).item<double>();
  }
  model->train();
  return total / batches;
}

double learning_rate_at(int step, const TrainOptions& o) {
  if (step < kWarmupSteps) return o.learning_rate * (step + 1) / kWarmupSteps;
  double progress = double(step - kWarmupSteps) / std::max(1, o.steps - kWarmupSteps);
  return o.learning_rate * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * std::min(1.0, progress))));
}

int load_state(const std::string& dir, Gpt& model, torch::optim::AdamW& optimizer) {
  std::ifstream in(dir + "/state.json");
  if (!in) return 0;
  try {
    auto state = nlohmann::json::parse(in);
    torch::load(model, dir + "/state_model.pt");
    torch::load(optimizer, dir + "/state_optim.pt");
    return state.at("step").get<int>();
  } catch (const std::exception& e) {
    throw Error("train: the state in '" + dir + "' is corrupt (" +
                std::string(e.what()).substr(0, 80) + ")");
  }
}

void save_state(const std::string& dir, Gpt& model, torch::optim::AdamW& optimizer, int step) {
  torch::save(model, dir + "/state_model.pt.tmp");
  torch::save(optimizer, dir + "/state_optim.pt.tmp");
  std::ofstream(dir + "/state.json.tmp") << nlohmann::json({{"step", step}}).dump();
  for (const char* f : {"/state_model.pt", "/state_optim.pt", "/state.json"})
    if (std::rename((dir + f + ".tmp").c_str(), (dir + f).c_str()) != 0)
      throw Error("train: cannot save state in '" + dir + "'");
}

// One optimizer step on a batch drawn by the step number alone (so a resumed run draws
// what the uninterrupted one would have); returns the batch's loss.
double train_step(Gpt& model, torch::optim::AdamW& optimizer,
                  const std::vector<const Sentence*>& training, int step, const TrainOptions& o,
                  int64_t& tokens) {
  std::mt19937_64 rng(o.seed * 1000003 + step);
  std::vector<const Sentence*> batch;
  for (int b = 0; b < o.batch; ++b) batch.push_back(training[rng() % training.size()]);
  for (auto& group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(learning_rate_at(step, o));
  optimizer.zero_grad();
  auto loss = batch_loss(model, batch);
  loss.backward();
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  optimizer.step();
  for (auto* s : batch) tokens += int64_t(s->tokens.size());
  return loss.item<double>();
}

std::string log_line(const TrainReport& r) {
  return nlohmann::json({{"step", r.step},
                         {"loss", r.loss},
                         {"validation_loss", r.validation_loss},
                         {"tokens_per_second", r.tokens_per_second}})
      .dump();
}

// The run's learning curve, from its log, as learning_curve.svg in the run directory.
void write_learning_curve(const std::string& run_dir) {
  std::ifstream log(run_dir + "/log.jsonl");
  PlotSeries loss{"training loss (smoothed)", {}},
      validation{"validation loss (held-out tasks)", {}};
  std::string line;
  while (std::getline(log, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step")) continue;
    double step = j["step"].get<double>();
    loss.points.push_back({step, j.value("loss", 0.0)});
    validation.points.push_back({step, j.value("validation_loss", 0.0)});
  }
  write_svg(run_dir + "/learning_curve.svg",
            svg_line_chart("learning curve: " + run_dir, "optimizer step", "cross-entropy (nats)",
                           {loss, validation}));
}

}  // namespace

TrainReport train_model(const TrainOptions& o, Gpt& model) {
  // PyTorch's intra-op pool does the work; OpenBLAS's own pool would fight it for the
  // cores (measured: 1,600 tokens/s with both at 2 threads, 2,550 with OpenBLAS at 1).
  torch::set_num_threads(o.threads);
  openblas_set_num_threads(1);
  Dataset data = read_dataset(o.data_path);
  for (const auto& s : data.sentences)
    if (int(s.tokens.size()) > model->config().context)
      throw Error("train: a sentence of " + std::to_string(s.tokens.size()) +
                  " tokens exceeds the model's context");
  std::vector<const Sentence*> training, validation;
  split_by_task(data, training, validation);
  if (training.empty()) throw Error("train: no training sentences in '" + o.data_path + "'");
  std::filesystem::create_directories(o.run_dir);
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(o.learning_rate).weight_decay(0.01));
  int step = load_state(o.run_dir, model, optimizer);
  std::ofstream log(o.run_dir + "/log.jsonl", std::ios::app);
  TrainReport report{step, 0, 0, 0, data.hash};
  model->train();
  auto start = std::chrono::steady_clock::now();
  int64_t tokens = 0;
  double smoothed = 0;
  const int first_step = step;
  while (step < o.steps) {
    double l = train_step(model, optimizer, training, step, o, tokens);
    ++step;
    smoothed = smoothed == 0 ? l : 0.95 * smoothed + 0.05 * l;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report = {step, smoothed, report.validation_loss, tokens / seconds, data.hash};
    if (step % o.save_every == 0 || step == o.steps) {
      report.validation_loss = validation_loss(model, validation, o.batch);
      save_state(o.run_dir, model, optimizer, step);
      log << log_line(report) << std::endl;
      write_learning_curve(o.run_dir);
    }
    if (step % 10 != 0 && step != o.steps) continue;
    double eta = (o.steps - step) * seconds / (step - first_step);
    std::fprintf(stderr, "\r  step %d/%d  loss %.4f  val %.4f  %.0f tokens/s  ETA %.0f s   ", step,
                 o.steps, smoothed, report.validation_loss, report.tokens_per_second, eta);
  }
  std::fprintf(stderr, "\n");
  return report;
}

}  // namespace tlm
