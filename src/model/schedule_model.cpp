#include "model/schedule_model.h"

#include <algorithm>
#include <chrono>

#include "lang/sentence.h"
#include "lang/vocabulary.h"
#include "model/checkpoint.h"
#include "model/generator.h"
#include "model/train.h"
#include "util/error.h"

namespace tlm {

struct ScheduleModel::Impl {
  Gpt model{nullptr};
  CheckpointInfo info;
  PromptCache prompt_cache;  // successive tasks share their prompt's hardware prefix
  int trained_words = 0;     // the vocabulary's words the checkpoint was trained with
};

ScheduleModel::ScheduleModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ScheduleModel::~ScheduleModel() = default;

std::unique_ptr<ScheduleModel> ScheduleModel::load(const std::string& checkpoint_dir) {
  auto impl = std::make_unique<Impl>();
  impl->model = load_checkpoint(checkpoint_dir, &impl->info);
  impl->trained_words = Vocabulary::get().prefix_with_hash(impl->info.vocab_hash);
  impl->model->eval();
  {  // warm up (first-call allocations and dispatch) as part of loading, not generating
    c10::InferenceMode inference;
    KvCache cache;
    auto prompt = torch::full({1, 16}, int64_t(Vocabulary::get().bos()), torch::kLong);
    impl->model->step(prompt, cache);
    impl->model->step(prompt.slice(1, 0, 3), cache);
    cache.share();  // and a step of a beam of kTopOneBeam over a shared prompt
    cache.select(torch::zeros({kTopOneBeam}, torch::kLong));
    impl->model->step(prompt.slice(1, 0, 1).expand({kTopOneBeam, 1}), cache);
  }
  return std::unique_ptr<ScheduleModel>(new ScheduleModel(std::move(impl)));
}

std::vector<Generated> ScheduleModel::generate(const TaskSpec& task, const Hardware& hardware,
                                               const GenerateOptions& options) {
  ScheduleSpace space(describe_task(task));
  auto speed = config().speed_prompt ? SpeedClass::Best : SpeedClass::None;
  auto prompt = encode_prompt(hardware, task, space.shape(), speed);
  GenerateOptions run = options;
  if (run.mode == "beam") run.k = std::max(run.k, kTopOneBeam);
  auto generated = tlm::generate(impl_->model, prompt, space, run, &impl_->prompt_cache);
  if (int(generated.size()) > options.k) generated.resize(options.k);
  return generated;
}

std::vector<int64_t> ScheduleModel::top_one(const TaskSpec& task, const Hardware& hardware) {
  return generate(task, hardware, {1, "beam", 0, 1.0}).at(0).decisions;
}

bool ScheduleModel::knows_words_of(const TaskSpec& task, const Hardware& hardware) const {
  auto prompt = encode_prompt(hardware, task, describe_task(task));
  return std::all_of(prompt.begin(), prompt.end(),
                     [&](int id) { return id < impl_->trained_words; });
}

const CheckpointInfo& ScheduleModel::info() const {
  return impl_->info;
}
const ModelConfig& ScheduleModel::config() const {
  return impl_->model->config();
}
int64_t ScheduleModel::parameter_count() const {
  return impl_->model->parameter_count();
}

TrainedCheckpoint train_checkpoint(const TrainOptions& options, const ModelConfig& config,
                                   const std::string& init_checkpoint,
                                   const std::string& models_dir, const std::string& command) {
  CheckpointInfo parent;
  ModelConfig fresh = config;
  if (fresh.vocab == 0) fresh.vocab = Vocabulary::get().size();
  if (fresh.vocab != Vocabulary::get().size())
    throw Error("model config: vocab " + std::to_string(fresh.vocab) + " is not the language's " +
                std::to_string(Vocabulary::get().size()));
  Gpt model = init_checkpoint.empty() ? Gpt(fresh) : load_checkpoint(init_checkpoint, &parent);
  if (model->config().speed_prompt && !options.speed_prompt)
    throw Error("train: " + parent.id + " reads speed classes; its data must carry them too");
  if (options.speed_prompt) model->read_speed_prompts();
  TrainedCheckpoint result;
  result.report = train_model(options, model);
  CheckpointInfo info;
  info.data_hash = result.report.data_hash;
  info.parent = parent.id;
  info.command = command;
  char metrics[256];
  std::snprintf(
      metrics, sizeof metrics,
      R"({"steps": %d, "loss": %.5f, "validation_loss": %.5f, "tokens_per_second": %.0f})",
      result.report.step, result.report.loss, result.report.validation_loss,
      result.report.tokens_per_second);
  info.metrics_json = metrics;
  result.id = write_checkpoint(model, info, models_dir);
  return result;
}

}  // namespace tlm
