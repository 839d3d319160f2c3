// Measurer: builds, verifies and times candidates in an isolated worker process.
//
// The worker is this program re-executed (`tlm worker`): fork + exec, never a bare fork
// (a child forked after an OpenMP region hangs). It runs under an address-space limit and
// every request under a deadline. A candidate that crashes, hangs, runs out of memory,
// fails to build or computes a wrong result is reported with that status; the worker is
// restarted when needed and the caller goes on.
#pragma once
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "measure/kernel.h"
#include "measure/status.h"
#include "measure/timing.h"
#include "ops/task_spec.h"

namespace tlm {

struct MeasureResult {
  Status status = Status::Ok;
  Timing timing;
  double max_error = 0;
  double build_ms = 0;
  std::string detail;  // the error, or the schedule/library a peer chose
};

struct MeasureOptions {
  std::string worker_command;  // path of the tlm executable
  double timeout_seconds = 120;
  int64_t memory_limit_mb = 8192;
  int threads = 2;
  TimingOptions timing;
};

class Measurer {
 public:
  static constexpr double kCutoffGrace = 2;

  explicit Measurer(MeasureOptions options);
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  // Each candidate alone: built, verified and timed (with `timing`, else the options').
  std::vector<MeasureResult> measure_each(const TaskSpec& task,
                                          const std::vector<Candidate>& candidates,
                                          const TimingOptions* timing = nullptr);
  // Every candidate verified alone, then all that passed timed interleaved in one process.
  std::vector<MeasureResult> measure_interleaved(const TaskSpec& task,
                                                 const std::vector<Candidate>& candidates);

  // One candidate in two phases, so that two measurers build at the same time while runs
  // stay exclusive (search trials): begin() sends it, wait_built() returns once the worker
  // has built it (or it failed), finish() lets it run and returns its result, as
  // measure_each would have.
  void begin(const TaskSpec& task, const Candidate& candidate, const TimingOptions& timing);
  void wait_built();
  MeasureResult finish();
  // A second measurer with the same options, made once and kept (its worker too): the
  // other half of each pair of search trials.
  Measurer& twin();

 private:
  // Sends one request line, returns the answer line; on a crash, hang or OOM of the
  // worker returns "" and sets `failure` (status and detail) and restarts it next time.
  // With `cutoff_ms`, a candidate's first run gets kCutoffGrace times that (+0.2 s) after
  // the worker says it is built; past it the worker is killed and the candidate is a
  // "timeout" whose latency is that limit.
  std::string exchange(const std::string& request_line, MeasureResult& failure,
                       double cutoff_ms = 0);
  bool send(const std::string& request_line, MeasureResult& failure);
  // Reads until the answer line (returned) under `deadline`, which the worker's notices
  // move as exchange() describes; "" with `failure` set on a crash or hang.
  std::string await_answer(double deadline, MeasureResult& failure, double cutoff_ms);
  enum class LineStatus { kLine, kTimeout, kClosed };
  LineStatus read_line(double deadline, std::string& line);
  std::string worker_exit_reason();  // reaps a worker that closed its output
  void start_worker();
  void stop_worker();
  std::string worker_log_tail() const;

  MeasureOptions options_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  std::string log_path_;
  std::string pending_;  // bytes read from the worker past the last newline
  // begin/wait_built/finish: the candidate's cutoff, and its result when it ended early
  double gated_cutoff_ms_ = 0;
  bool gated_done_ = false;
  MeasureResult gated_result_;
  std::unique_ptr<Measurer> twin_;
};

// The worker side: reads requests line by line from stdin, answers on stdout.
int run_worker_loop();

}  // namespace tlm
