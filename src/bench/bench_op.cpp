#include "bench/bench_op.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "measure/library_kernels.h"
#include "measure/timing.h"
#include "search/generated.h"
#include "search/search.h"
#include "space/schedule_space.h"
#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

bool is_search(const std::string& method, SearchMethod& search, int& trials) {
  auto dash = method.find('-');
  if (!find_search_method(method.substr(0, dash), search)) return false;
  trials = dash == std::string::npos ? 1000 : int(parse_int(method.substr(dash + 1), method));
  return true;
}

// Measured trials per second of a search, from its records' creation times; gaps over a
// minute (a search stopped and resumed later) are left out.
double trials_per_second(const std::vector<Record>& records) {
  double active = 0;
  for (size_t i = 1; i < records.size(); ++i) {
    double gap = records[i].created - records[i - 1].created;
    if (gap >= 0 && gap < 60) active += gap;
  }
  return active > 0 ? double(records.size() - 1) / active : 0;
}

// The best schedule `name` found within `trials`, searching first if the store has fewer.
BenchEntry search_entry(const TaskSpec& task, const std::string& method, SearchMethod search_method,
                        int trials, Measurer& measurer, RecordStore& store,
                        const BenchOptions& options) {
  const std::string& name = search_method_name(search_method);
  ScheduleSpace space(describe_task(task));
  auto stored = [&] {  // this method's records that are schedules of today's space
    std::vector<Record> mine;
    for (auto& r : store.query(task.key(), timed_fingerprint(options.hardware, task)))
      if (r.method == name && space.is_legal(r.decisions)) mine.push_back(r);
    return mine;
  };
  int have = int(stored().size());
  if (have < trials) {
    SearchOptions search{search_method,    trials - have, 16, options.seed + have,
                         options.hardware, true,          {}};
    std::fprintf(stderr, "%s: %s, %d more trials\n", task.key().c_str(), name.c_str(),
                 trials - have);
    run_search(task, measurer, store, search);
  }
  auto records = stored();
  records.resize(std::min<size_t>(records.size(), size_t(trials)));  // first `trials`, oldest first
  BenchEntry entry{method, {}, "", 0, {}, trials_per_second(records)};
  const Record* best = nullptr;
  for (const auto& r : records)
    if (r.status == Status::Ok && (!best || r.median_ms < best->median_ms)) best = &r;
  if (!best)
    entry.unrun = "none-ok";
  else
    entry.decisions = best->decisions;
  return entry;
}

bool is_model_method(const std::string& method, int& k) {
  if (method.rfind("tlm-", 0) != 0) return false;
  k = int(parse_int(method.substr(4), method));
  if (k < 1) throw Error("bench: method '" + method + "' needs k >= 1");
  return true;
}

ScheduleModel& loaded_model(const std::string& path) {
  static std::map<std::string, std::unique_ptr<ScheduleModel>> models;
  if (path.empty()) throw Error("bench: the tlm-K methods need a model (--model)");
  auto& slot = models[path];
  if (!slot) slot = ScheduleModel::load(path);
  return *slot;
}

// The model's schedule: its top-1 unmeasured for k = 1, else the best of its top k measured.
BenchEntry model_entry(const TaskSpec& task, const std::string& method, int k, Measurer& measurer,
                       RecordStore& store, const BenchOptions& options) {
  ScheduleModel& model = loaded_model(options.model_path);
  BenchEntry entry{method, {}, "", 0, {}};
  if (k == 1) {
    auto start = std::chrono::steady_clock::now();
    entry.decisions = model.top_one(task, detect_hardware());
    entry.generate_ms =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3;
    return entry;
  }
  GeneratedRun run =
      measure_model_schedules(model, task, {k}, "tlm", measurer, store, options.hardware);
  entry.generate_ms = run.generate_ms / k;
  const Record* best = nullptr;
  for (const auto& r : run.records)
    if (r.status == Status::Ok && (!best || r.median_ms < best->median_ms)) best = &r;
  if (best)
    entry.decisions = best->decisions;
  else
    entry.unrun = "none-ok";
  return entry;
}

bool is_ok(const BenchEntry& e) {
  return e.unrun.empty() && e.result.status == Status::Ok;
}

std::string status_text(const BenchEntry& e) {
  return e.unrun.empty() ? status_name(e.result.status) : e.unrun;
}

bool method_applies(const std::string& method, const TaskSpec& task) {
  if (method == "onednn" || method == "openblas") return library_supports(method, task);
  return true;
}

// The baseline's median; with no baseline named, the fastest peer's (a method that is
// not a search in our space).
double baseline_ms(const BenchRow& row, const std::string& baseline) {
  double base = 0;
  for (const auto& e : row.entries) {
    if (!is_ok(e)) continue;
    bool counts = baseline.empty() ? e.decisions.empty() : e.method == baseline;
    if (counts && (base == 0 || e.result.timing.median_ms < base)) base = e.result.timing.median_ms;
  }
  return base;
}

// One table line: a failed method's status, else its latency, GFLOP/s and ratio to `base`.
std::string format_entry(const BenchEntry& e, double base) {
  char line[256];
  if (!is_ok(e)) {
    std::snprintf(line, sizeof line, "  %-18s %s %s\n", e.method.c_str(), status_text(e).c_str(),
                  e.result.detail.substr(0, 80).c_str());
    return line;
  }
  std::snprintf(line, sizeof line, "  %-18s %10.4f %10.4f %9.1f %8.2fx", e.method.c_str(),
                e.result.timing.median_ms, e.result.timing.min_ms, e.gflops,
                base > 0 ? base / e.result.timing.median_ms : 0.0);
  std::string text = line;
  if (e.trials_per_second > 0) {
    std::snprintf(line, sizeof line, "  (search: %.2f trials/s)", e.trials_per_second);
    text += line;
  }
  if (e.generate_ms > 0) {
    std::snprintf(line, sizeof line, "  (model: %.1f ms per schedule)", e.generate_ms);
    text += line;
  }
  return text + "\n";
}

}  // namespace

void check_bench_methods(const std::vector<std::string>& methods) {
  for (const auto& method : methods) {
    SearchMethod search;
    int count = 0;
    if (is_search(method, search, count) || is_model_method(method, count)) {
      if (count < 1) throw Error("bench: method '" + method + "' needs at least 1 trial");
      continue;
    }
    kernel_method_named(method);
  }
}

BenchRow bench_task(const TaskSpec& task, Measurer& measurer, RecordStore& store,
                    const BenchOptions& options) {
  TaskShape shape = describe_task(task);
  BenchRow row{task.key(), shape.flops, ScheduleSpace(shape).size_text(), {}};
  std::vector<Candidate> candidates;
  std::vector<size_t> where;
  for (const auto& method : options.methods) {
    SearchMethod search = SearchMethod::Random;
    int trials = 0;
    BenchEntry entry;
    entry.method = method;
    if (is_search(method, search, trials))
      entry = search_entry(task, method, search, trials, measurer, store, options);
    else if (is_model_method(method, trials))
      entry = model_entry(task, method, trials, measurer, store, options);
    else if (!method_applies(method, task))
      entry.unrun = "n/a";
    if (entry.unrun.empty()) {
      candidates.push_back(
          {entry.decisions.empty() ? kernel_method_named(method) : KernelMethod::Space,
           entry.decisions});
      where.push_back(row.entries.size());
    }
    row.entries.push_back(entry);
  }
  auto results = measurer.measure_interleaved(task, candidates);
  for (size_t k = 0; k < where.size(); ++k) {
    BenchEntry& e = row.entries[where[k]];
    e.result = results[k];
    if (is_ok(e)) e.gflops = shape.flops / (e.result.timing.median_ms * 1e6);
  }
  return row;
}

std::string format_bench_table(const std::vector<BenchRow>& rows, const std::string& baseline) {
  std::string out;
  char line[512];
  for (const auto& row : rows) {
    double base = baseline_ms(row, baseline);
    std::snprintf(line, sizeof line, "%s  (%.3g GFLOP, space %s)\n", row.task.c_str(),
                  row.flops / 1e9, row.space_size.c_str());
    out += line;
    std::snprintf(line, sizeof line, "  %-18s %10s %10s %9s %8s\n", "method", "median_ms", "min_ms",
                  "GFLOP/s", baseline.empty() ? "vs_peer" : ("vs_" + baseline).c_str());
    out += line;
    for (const auto& e : row.entries) out += format_entry(e, base);
  }
  return out;
}

namespace {

// Median of `method` on `row` (0 when it did not run ok); "peer" is the fastest peer.
double method_ms(const BenchRow& row, const std::string& method) {
  if (method == "peer") return baseline_ms(row, "");
  for (const auto& e : row.entries)
    if (e.method == method && is_ok(e)) return e.result.timing.median_ms;
  return 0;
}

}  // namespace

std::vector<std::string> bench_methods(const std::vector<BenchRow>& rows) {
  std::vector<std::string> methods;
  for (const auto& row : rows)
    for (const auto& e : row.entries)
      if (std::find(methods.begin(), methods.end(), e.method) == methods.end())
        methods.push_back(e.method);
  return methods;
}

double geomean_speedup(const std::vector<BenchRow>& rows, const std::string& method,
                       const std::string& reference, int* tasks) {
  double log_sum = 0;
  int n = 0;
  for (const auto& row : rows) {
    double m = method_ms(row, method), r = method_ms(row, reference);
    if (m > 0 && r > 0) log_sum += std::log(r / m), ++n;
  }
  if (tasks) *tasks = n;
  return n ? std::exp(log_sum / n) : 0;
}

std::string format_geomean_table(const std::vector<BenchRow>& rows) {
  auto methods = bench_methods(rows);
  std::vector<std::string> references = {"peer"};
  references.insert(references.end(), methods.begin(), methods.end());
  std::string out = "geomean speedup over tasks (row method vs column; peer = fastest peer)\n";
  char cell[64];
  std::snprintf(cell, sizeof cell, "  %-18s", "");
  out += cell;
  for (const auto& r : references) {
    std::snprintf(cell, sizeof cell, " %13.13s", r.c_str());
    out += cell;
  }
  out += "\n";
  for (const auto& m : methods) {
    std::snprintf(cell, sizeof cell, "  %-18s", m.c_str());
    out += cell;
    for (const auto& r : references) {
      double g = geomean_speedup(rows, m, r, nullptr);
      if (g > 0)
        std::snprintf(cell, sizeof cell, " %12.2fx", g);
      else
        std::snprintf(cell, sizeof cell, " %13s", "-");
      out += cell;
    }
    out += "\n";
  }
  return out;
}

void write_bench_json(const std::string& path, const std::vector<BenchRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& row : rows) {
    nlohmann::json methods = nlohmann::json::object();
    for (const auto& e : row.entries)
      methods[e.method] = {{"status", status_text(e)},
                           {"median_ms", e.result.timing.median_ms},
                           {"min_ms", e.result.timing.min_ms},
                           {"runs", e.result.timing.runs},
                           {"gflops", e.gflops},
                           {"decisions", e.decisions},
                           {"trials_per_second", e.trials_per_second},
                           {"generate_ms_per_schedule", e.generate_ms},
                           {"schedule", e.result.detail}};
    j.push_back({{"task", row.task},
                 {"flops", row.flops},
                 {"space_size", row.space_size},
                 {"methods", methods}});
  }
  nlohmann::json geomean = nlohmann::json::object();
  auto methods = bench_methods(rows);
  for (const auto& m : methods) {
    geomean[m]["vs_fastest_peer"] = geomean_speedup(rows, m, "peer", nullptr);
    for (const auto& r : methods) geomean[m]["vs_" + r] = geomean_speedup(rows, m, r, nullptr);
  }
  std::ofstream out(path);
  if (!out) throw Error("cannot write '" + path + "'");
  out << nlohmann::json{{"tasks", j}, {"geomean", geomean}}.dump(2) << "\n";
}

}  // namespace tlm
