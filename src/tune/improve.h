// Improve loop: the compiler improving itself from its own measurements, with guards.
//
// One round: the default model writes K schedules for every training task (its beam's
// top K/2 and K/2 samples seeded by the round, so every round explores something new);
// each is measured isolated and verified and stored (method "tlm", with the checkpoint
// id); the pretrained model the validated base came from is fine-tuned on the best
// measured schedules per task (held-out tasks never enter its data), the base's recipe on
// the grown data; the new checkpoint and the current default each write their top-1
// schedule for every held-out task, measured interleaved three times (medians kept). The
// new checkpoint is promoted only if the held-out geomean latency improves; otherwise it
// is kept but not used.
// Every round appends one line to `<run dir>/audit.jsonl` (data added, metrics,
// decision); a round found there is not run again, so an interrupted run resumes, and
// its measurements are in the store already.
#pragma once
#include <string>
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
  int finetune_steps = 1000;           // the shipped model's recipe (models/README.md)
  int per_task = kBestPerTask;         // best schedules per task in the fine-tuning data
  int speed_per_task = kSpeedPerTask;  // schedules per task when the model reads speed classes
  int best_copies = 1;                 // and times each task's best ones appear
  std::string run_dir = "improve";
  std::string models_dir = "models";
  std::string hardware;
};

struct RoundResult {
  int round = 0;
  std::string parent, candidate;
  int measured = 0;
  double parent_geomean_ms = 0, candidate_geomean_ms = 0;
  bool promoted = false;
};

std::vector<RoundResult> run_improve(const ImproveOptions& options, Measurer& measurer,
                                     RecordStore& store);

}  // namespace tlm
