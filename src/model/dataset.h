// Dataset: sentences of the tensor language for training, in one binary file.
//
// Pretraining sentences are random schedules of many tasks (every decision point uniform
// over its legal values, as ScheduleSpace::sample draws them): they teach the language
// and the structure of each space, not speed. Fine-tuning sentences are the best measured
// schedules per task. The file records the vocabulary hash, so data and model never mix
// across vocabularies, and its content hash names the data a checkpoint learned from.
//
// File: "TLMDATA1", vocabulary hash (16 hex chars), uint32 count, then per sentence:
// uint16 prompt length, uint16 total length, uint16 tokens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "store/record_store.h"
#include "util/hardware.h"

namespace tlm {

struct Sentence {
  std::vector<int> tokens;  // prompt (up to and including ";") then decisions
  int prompt_length = 0;
};

struct Dataset {
  std::vector<Sentence> sentences;
  std::string hash;  // of the file's bytes, set by read/write
};

void write_dataset(const std::string& path, Dataset& data);
// Throws tlm::Error for a missing, truncated or foreign file, or another vocabulary's.
Dataset read_dataset(const std::string& path);

// Task specs for pretraining: every task of the zoo networks, then shape variations of
// every operator kind, each once, minus `excluded` (held-out tasks); deterministic.
std::vector<std::string> pretrain_tasks(const std::vector<std::string>& excluded);
// The shipped recipes' schedules per task (models/README.md): best-only, and with speed
// classes.
constexpr int kBestPerTask = 4;
constexpr int kSpeedPerTask = 64;

// The machines the store has verified records of, as prompts describe them (labels that are
// not a fingerprint, e.g. a test's, are left out). A model learns every host's records,
// each prompted with its own host, so that one model serves them all (DESIGN.md, Hosts).
std::vector<Hardware> measured_hosts(const RecordStore& store);
// Which tasks learn from a host's cold-timed records (TLM_TIMING_COLD: the weights come from
// memory, as in a model) instead of its warm ones. The two are never ranked together.
enum class ColdRecords {
  All,              // every task that has any
  StreamedWeights,  // only tasks whose packed weights stream from memory in a model
                    // (TaskShape::prefetch_packable: dense layers); a convolution's weights
                    // are small beside its activations, and its warm records are the many
  None,             // warm records only
};
// Fine-tuning sentences: the `per_task` fastest verified schedules of every task the store
// has measured on each of `hosts` (task by task, host by host), minus `excluded` (held-out
// tasks), skipping records that are no longer legal in the task's space; `cold` says
// which tasks learn from their cold-timed records.
Dataset best_measured(const RecordStore& store, const std::vector<Hardware>& hosts, int per_task,
                      const std::vector<std::string>& excluded,
                      ColdRecords cold = ColdRecords::All);
// Which measured schedules become speed-labeled sentences (measured_by_speed).
struct SpeedSelection {
  SpeedSelection(int per_task = kSpeedPerTask, int best_copies = 1)
      : per_task(per_task), best_copies(best_copies) {}
  int per_task;                  // per task: all when it has fewer; else its fastest
                                 // per_task/4 and the rest spread evenly over the slower ranks
  int best_copies;               // times each Best sentence appears (the model then learns a
                                 // trained task's best as firmly as best-only fine-tuning does)
  int top_copies = 0;            // times the task's fastest appears, when above best_copies:
                                 // the Best class's four ranks equally often taught a mode
                                 // that mixed them (a schedule none of them is)
  bool model_proposals = false;  // also every schedule a model proposed (its record names the
                                 // checkpoint), wherever it ranks: improve's own mistakes
  ColdRecords cold_records = ColdRecords::All;  // which tasks learn from cold-timed records
  // Times every sentence of the host with this fingerprint appears (its records weigh as
  // much as the other hosts' many while those keep the model's other picks in place).
  std::string emphasized_host;
  int host_copies = 1;
};
// Fine-tuning sentences of every speed from the verified schedules of every task the store
// has measured on each of `hosts`, as `selection` picks them among that host's records,
// each prompt ending with the schedule's speed class (lang/sentence.h). Same order and
// exclusions as best_measured.
Dataset measured_by_speed(const RecordStore& store, const std::vector<Hardware>& hosts,
                          const SpeedSelection& selection,
                          const std::vector<std::string>& excluded);
// `per_task` random schedules of each task, as sentences (with progress on stderr).
Dataset sample_corpus(const std::vector<std::string>& tasks, int per_task, uint64_t seed,
                      const Hardware& hardware);

}  // namespace tlm
