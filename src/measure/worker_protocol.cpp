#include "measure/worker_protocol.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace tlm {

using Json = nlohmann::json;

std::string encode_request(const TaskSpec& task, const std::vector<Candidate>& candidates,
                           bool interleaved, const TimingOptions& timing, bool gated) {
  Json j;
  j["task"] = task.key();
  j["interleaved"] = interleaved;
  j["gated"] = gated;
  j["timing"] = {{"warmup", timing.warmup},
                 {"min_runs", timing.min_runs},
                 {"max_runs", timing.max_runs},
                 {"target_seconds", timing.target_seconds},
                 {"cutoff_ms", timing.cutoff_ms},
                 {"block_runs", timing.block_runs},
                 {"settle_max_ms", timing.settle_max_ms}};
  for (const auto& c : candidates)
    j["candidates"].push_back(
        {{"method", kernel_method_name(c.method)}, {"decisions", c.decisions}});
  return j.dump();
}

std::string encode_notice(WorkerNotice notice) {
  return notice == WorkerNotice::kBuilt ? R"({"stage":"built"})" : R"({"stage":"first-run-done"})";
}

WorkerNotice decode_notice(const std::string& line) {
  if (line == encode_notice(WorkerNotice::kBuilt)) return WorkerNotice::kBuilt;
  if (line == encode_notice(WorkerNotice::kFirstRunDone)) return WorkerNotice::kFirstRunDone;
  return WorkerNotice::kNone;
}

WorkerRequest decode_request(const std::string& line) {
  try {
    Json j = Json::parse(line);
    WorkerRequest r;
    r.task = parse_task_spec(j.at("task").get<std::string>());
    r.interleaved = j.at("interleaved").get<bool>();
    r.gated = j.value("gated", false);
    const Json& t = j.at("timing");
    r.timing = {t.at("warmup").get<int>(),
                t.at("min_runs").get<int>(),
                t.at("max_runs").get<int>(),
                t.at("target_seconds").get<double>(),
                t.value("cutoff_ms", 0.0),
                t.value("block_runs", TimingOptions{}.block_runs),
                t.value("settle_max_ms", TimingOptions{}.settle_max_ms)};
    for (const auto& c : j.at("candidates"))
      r.candidates.push_back({kernel_method_named(c.at("method").get<std::string>()),
                              c.at("decisions").get<std::vector<int64_t>>()});
    return r;
  } catch (const Json::exception& e) {
    throw Error(std::string("worker request: ") + e.what());
  }
}

std::string encode_response(const std::vector<MeasureResult>& results) {
  Json j = Json::object();
  j["results"] = Json::array();
  for (const auto& r : results)
    j["results"].push_back({{"status", status_name(r.status)},
                            {"min_ms", r.timing.min_ms},
                            {"median_ms", r.timing.median_ms},
                            {"runs", r.timing.runs},
                            {"max_error", r.max_error},
                            {"build_ms", r.build_ms},
                            {"detail", r.detail}});
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::vector<MeasureResult> decode_response(const std::string& line) {
  try {
    std::vector<MeasureResult> results;
    Json response = Json::parse(line);
    for (const auto& r : response.at("results")) {
      MeasureResult m;
      m.status = status_named(r.at("status").get<std::string>());
      m.timing = {r.at("min_ms").get<double>(), r.at("median_ms").get<double>(),
                  r.at("runs").get<int>()};
      m.max_error = r.at("max_error").get<double>();
      m.build_ms = r.at("build_ms").get<double>();
      m.detail = r.at("detail").get<std::string>();
      results.push_back(m);
    }
    return results;
  } catch (const Json::exception& e) {
    throw Error(std::string("worker response: ") + e.what());
  }
}

}  // namespace tlm
