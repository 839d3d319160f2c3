// The line protocol between Measurer and its worker: one JSON object per line.
//   request : {"task": SPEC, "candidates": [{"method": M, "decisions": [...]}, ...],
//              "interleaved": bool, "timing": {warmup, min_runs, max_runs, target_seconds,
//              cutoff_ms}}
//   notices : {"stage": "built"} and {"stage": "first-run-done"}, only with a cutoff or a
//             gate: they bracket a candidate's first run, which the measurer holds to a
//             deadline
//   gate    : with "gated": true the worker waits after "built" for a line "go" before it
//             runs anything (two workers build at once, their runs stay exclusive)
//   response: {"results": [{"status", "min_ms", "median_ms", "runs", "max_error",
//              "build_ms", "detail"}, ...]}
#pragma once
#include <string>
#include <vector>

#include "measure/measurer.h"

namespace tlm {

struct WorkerRequest {
  TaskSpec task;
  std::vector<Candidate> candidates;
  bool interleaved = false;
  TimingOptions timing;
  bool gated = false;
};

std::string encode_request(const TaskSpec& task, const std::vector<Candidate>& candidates,
                           bool interleaved, const TimingOptions& timing, bool gated = false);
WorkerRequest decode_request(const std::string& line);
enum class WorkerNotice { kNone, kBuilt, kFirstRunDone };
std::string encode_notice(WorkerNotice notice);
WorkerNotice decode_notice(const std::string& line);  // kNone: the line is a response
std::string encode_response(const std::vector<MeasureResult>& results);
std::vector<MeasureResult> decode_response(const std::string& line);

}  // namespace tlm
