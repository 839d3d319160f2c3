// ScheduleModel: the tensor language model as the rest of tlm sees it, without libtorch
// in the header. Load a checkpoint and generate schedules for tasks; train (pretrain or
// fine-tune) and save a checkpoint. The libtorch side is gpt.h, generator.h, train.h and
// checkpoint.h, included only by this module's sources.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/task_spec.h"
#include "util/hardware.h"

namespace tlm {

struct ModelConfig {
  int vocab = 0;
  int context = 256;  // longest sentence, prompt included
  int layers = 4;
  int d_model = 256;
  int heads = 4;
  // Its prompts end with a speed class (lang/sentence.h): it was fine-tuned on measured
  // schedules of every speed, each labeled, and generates asking for the best.
  bool speed_prompt = false;

  std::string to_json() const;
  // Parses a config file's text; throws tlm::Error naming a missing or bad field.
  static ModelConfig from_json(const std::string& text);
};

struct GenerateOptions {
  int k = 1;                  // schedules wanted
  std::string mode = "beam";  // beam | greedy | sample
  uint64_t seed = 0;          // sample only
  double temperature = 1.0;   // sample only
};

// Beam width behind the model's top-1 (and the narrowest beam ScheduleModel runs).
constexpr int kTopOneBeam = 8;

struct Generated {
  std::vector<int64_t> decisions;
  double log_prob = 0;  // of the decision tokens under the model
};

struct CheckpointInfo {
  std::string id;
  std::string vocab_hash, data_hash, parent, command;
  std::string metrics_json = "{}";
};

struct TrainOptions {
  std::string data_path;
  std::string run_dir;
  int steps = 1000;  // total optimizer steps of the run
  int batch = 16;
  double learning_rate = 3e-4;
  int save_every = 50;  // steps between saved states
  int threads = 2;
  uint64_t seed = 1;
  bool speed_prompt = false;  // the data's prompts carry speed classes
};

struct TrainReport {
  int step = 0;
  double loss = 0, validation_loss = 0, tokens_per_second = 0;
  std::string data_hash;
};

class ScheduleModel {
 public:
  // Loads a checkpoint folder; throws tlm::Error when it is missing or corrupt.
  static std::unique_ptr<ScheduleModel> load(const std::string& checkpoint_dir);
  ~ScheduleModel();

  // A beam is never narrower than kTopOneBeam (the best k of it come back).
  std::vector<Generated> generate(const TaskSpec& task, const Hardware& hardware,
                                  const GenerateOptions& options);
  // The model's one schedule for a task with no measurement: the most probable sentence
  // a beam of kTopOneBeam finds (greedy decoding commits to each digit without seeing
  // whether the number it starts is legal; its top-1 made ResNet-50 1.3x-2x slower).
  std::vector<int64_t> top_one(const TaskSpec& task, const Hardware& hardware);
  // Whether every word of the task's prompt is in the vocabulary the checkpoint was
  // trained with. A word added since (a conv2d's depthwise prologue, dw_r) has only the
  // mean embedding, so the model's beam for such a task is not informed by anything.
  bool knows_words_of(const TaskSpec& task, const Hardware& hardware) const;
  const CheckpointInfo& info() const;
  const ModelConfig& config() const;
  int64_t parameter_count() const;

 private:
  struct Impl;
  explicit ScheduleModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Trains a fresh model of `config` (or continues from `init_checkpoint`, fine-tuning) on
// the options' dataset, resuming the run directory, then writes the result as a
// checkpoint under `models_dir`. Returns the report with the new checkpoint's id.
struct TrainedCheckpoint {
  TrainReport report;
  std::string id;
};
TrainedCheckpoint train_checkpoint(const TrainOptions& options, const ModelConfig& config,
                                   const std::string& init_checkpoint,
                                   const std::string& models_dir, const std::string& command);

}  // namespace tlm
