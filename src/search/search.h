// Search in our own schedule space: random sampling and an evolutionary search, each
// with a budget of measured trials. Every measured candidate, good or bad, is stored;
// the evolutionary population is read back from the store, so a search resumes where
// an earlier one (of the same method) left off. These are baselines for the generator and
// produce its training data. `transfer` is the evolutionary search whose first trials are
// the best schedules of the most similar stored tasks (see transfer.h). `refine` is the
// evolutionary search that goes on from every stored record of the task, whichever
// method measured it: its population is the task's fastest stored schedules, its cost
// model learns from all of them, and its trials are only schedules not stored yet.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "ops/task_spec.h"
#include "store/record_store.h"

namespace tlm {

enum class SearchMethod : uint8_t { Random, Evolutionary, Transfer, Refine };
// "random", "evolutionary", "transfer", "refine": also the method label of the records it stores.
const std::string& search_method_name(SearchMethod method);
// Throws tlm::Error naming the known methods for an unknown name.
SearchMethod search_method_named(const std::string& name);
bool find_search_method(const std::string& name, SearchMethod& method);

struct SearchOptions {
  SearchMethod method = SearchMethod::Evolutionary;
  int trials = 64;
  int batch = 16;  // candidates measured between two store commits
  uint64_t seed = 1;
  std::string hardware;                        // fingerprint stored with each record
  bool progress = true;                        // progress line on stderr
  std::vector<std::string> transfer_excluded;  // task specs transfer never seeds from
};

struct SearchReport {
  int measured = 0;
  int ok = 0;
  double seconds = 0;
  Record best;  // meaningful when ok > 0
};

// Measures trials as a search does: each briefly, cut off once its first run is several
// times slower than `best_ms` (the fastest so far, 0 if none; updated), two at a time
// (built at once on `measurer` and its twin, then run one after the other).
std::vector<MeasureResult> measure_trials(const TaskSpec& task,
                                          const std::vector<std::vector<int64_t>>& trials,
                                          Measurer& measurer, double& best_ms);

// The record of one measured candidate, stamped now.
Record measured_record(const std::string& hardware, const TaskSpec& task,
                       const std::vector<int64_t>& decisions, const std::string& method,
                       const std::string& checkpoint, const MeasureResult& measured);

// Throws tlm::Error when `refine` finds no passing record of the task to go on from.
SearchReport run_search(const TaskSpec& task, Measurer& measurer, RecordStore& store,
                        const SearchOptions& options);

}  // namespace tlm
