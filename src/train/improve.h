// Improve loop: the compiler improving itself from its own measurements, with guards.
//
// One round: the default model writes K schedules for every training task (its beam's
// top K/2 and K/2 samples seeded by the round, so every round explores something new);
// each is measured isolated and verified and stored (method "tlm", with the checkpoint
// id); the current default (the round's parent) is fine-tuned further, at a lower
// learning rate, on the store's measured schedules (held-out tasks never enter its data):
// with speed classes, every schedule a model proposed is in it, labeled with its speed, so
// the parent learns where its own picks were slow, and each task's best ones are repeated
// so it keeps them (retraining the whole recipe from the pretrained model instead made
// each round a new draw of the shipped model, and none was promoted); the new checkpoint and the
// current default each write their top-1 schedule for every held-out task, measured interleaved
// three times (medians kept). The new checkpoint is promoted only if the held-out geomean latency
// improves and no family of the training tasks (an operator; a convolution with its window) gets
// more than 5% slower, measured the same way: a geomean can hide a regression on the user's own
// layers behind a gain elsewhere (a candidate 2.5x faster on held-out softmax was 1.3x slower on
// EfficientNet-B0's convolutions). Otherwise it is kept but not used. Every round appends one line
// to `<run dir>/audit.jsonl` (data added, metrics, decision); a round found there is not run again,
// so an interrupted run resumes, and its measurements are in the store already.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "measure/measurer.h"
#include "model/dataset.h"
#include "store/record_store.h"

namespace tlm {

constexpr int kMaxImproveRounds = 10;

struct ImproveOptions {
  std::vector<std::string> tasks;     // training tasks
  std::vector<std::string> held_out;  // evaluation tasks, never trained on
  int rounds = 3;
  int trials_per_task = 16;
  // The settings of the run that promoted the shipped default (models/README.md, step 4;
  // 300 steps, with each best once or 8 times, promoted nothing in three rounds).
  int finetune_steps = 600;            // a round continues its parent: fewer steps than
  double learning_rate = 1e-4;         // the recipe's 1000, a third of its learning rate
  int per_task = kBestPerTask;         // best schedules per task in the fine-tuning data
  int speed_per_task = kSpeedPerTask;  // schedules per task when the model reads speed classes
  int best_copies = 8;                 // and times each task's best ones appear
  std::string run_dir = "improve";
  std::string models_dir = "models";
  std::string hardware;
};

struct RoundResult {
  int round = 0;
  std::string parent, candidate;
  int measured = 0;
  double parent_geomean_ms = 0, candidate_geomean_ms = 0;
  std::vector<std::pair<double, double>> held_out_ms;  // per held-out task: parent, candidate
  std::vector<std::pair<double, double>> training_ms;  // per training task (when measured)
  std::vector<std::string> slower_families;            // training families the candidate slows
  bool promoted = false;
};

// The second guard: the families of `tasks` whose geomean latency the candidate makes
// more than kFamilySlowdownLimit times slower; latencies[i] is tasks[i]'s (parent ms,
// candidate ms). Noise of a family's geomean from 3 interleaved medians is ~2-3%.
constexpr double kFamilySlowdownLimit = 1.05;
std::vector<std::string> slower_families(const std::vector<std::string>& tasks,
                                         const std::vector<std::pair<double, double>>& latencies);

std::vector<RoundResult> run_improve(const ImproveOptions& options, Measurer& measurer,
                                     RecordStore& store);

}  // namespace tlm
