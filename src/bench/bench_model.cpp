#include "bench/bench_model.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/kernel_report.h"
#include "graph/model_source.h"
#include "runtime/runtime.h"
#include "torchref/torch_graph.h"
#include "util/error.h"

namespace tlm {
namespace {

// Normal values for float inputs; 0 or 1 for integer ones (valid token ids and masks).
std::vector<std::vector<float>> seeded_inputs(const Graph& graph) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> bit(0, 1);
  std::vector<std::vector<float>> inputs;
  for (int t : graph.inputs()) {
    std::vector<float> v(size_t(element_count(graph.shape(t))));
    bool integer = graph.tensor(t).dtype != DType::F32;
    for (float& x : v) x = integer ? float(bit(rng)) : normal(rng);
    inputs.push_back(std::move(v));
  }
  return inputs;
}

double relative_error(const std::vector<float>& got, const std::vector<float>& expected) {
  if (got.size() != expected.size()) return INFINITY;
  double scale = 0, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, double(std::fabs(expected[i])));
    worst = std::max(worst, double(std::fabs(got[i] - expected[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

// Resident set size and its peak so far, in MB (/proc/self/status VmRSS, VmHWM).
std::pair<double, double> rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  double rss = 0, peak = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024;
    if (line.rfind("VmHWM:", 0) == 0) peak = std::atof(line.c_str() + 6) / 1024;
  }
  return {rss, peak};
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a memory probe in a fresh process; returns its peak less its starting RSS, in MB.
double probe_memory(const ModelBenchOptions& options, const std::string& side,
                    const std::string& source) {
  std::string command =
      shell_quote(options.exe) + " memory-probe " + side + " " + shell_quote(source);
  for (const auto& flag : model_option_flags(options.model)) command += " " + shell_quote(flag);
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw Error("bench model: cannot start a memory probe");
  char line[512];
  double before = -1, peak = -1;
  std::string last;
  while (std::fgets(line, sizeof line, pipe)) {
    if (std::sscanf(line, "rss_mb %lf %lf", &before, &peak) != 2) last = line;
  }
  int status = pclose(pipe);
  if (status != 0 || peak < 0)
    throw Error("bench model: the " + side + " memory probe failed: " + last);
  return peak - before;
}

}  // namespace

const Timing& ModelBenchRow::torch_best() const {
  return torch_blas1.median_ms <= torch_default.median_ms ? torch_blas1 : torch_default;
}

// Where the compiled model's time goes, each kernel also timed alone (a measurer of its
// own when the benchmark has none), as `tlm run --report` shows it.
void write_report(CompiledModel& compiled, const std::vector<std::vector<float>>& inputs,
                  const ModelBenchOptions& options, Measurer* measurer, const std::string& dir) {
  std::vector<StepTiming> timings;
  compiled.run(inputs, &timings);
  MeasureOptions own;
  own.worker_command = options.exe;
  std::unique_ptr<Measurer> made = measurer ? nullptr : std::make_unique<Measurer>(own);
  KernelReport report = kernel_report(compiled.plan(), timings, measurer ? *measurer : *made,
                                      own.threads, options.compile.progress);
  write_kernel_report(report, compiled.plan().model + ": time per task", dir);
}

ModelBenchRow bench_model(const std::string& model, const ModelBenchOptions& options,
                          RecordStore* store, ScheduleModel* schedule_model, Measurer* measurer) {
  ModelBenchRow row;
  auto start = std::chrono::steady_clock::now();
  WeightedGraph source = load_model_source(model, options.model);
  std::string name = is_onnx_path(model) ? source.graph.name() : model;
  row.model = is_onnx_path(model) ? name + ".onnx" : model;
  CompileOptions compile = options.compile;
  compile.out_dir = options.out_dir + "/" + name;
  Plan plan = compile_model(source.graph, source.weights, compile, store, schedule_model, measurer);
  row.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& t : plan.tasks) row.strategies[t.strategy] += 1;

  auto compiled = CompiledModel::load(compile.out_dir);
  TorchGraph torch_graph(source.graph, source.weights);
  auto inputs = seeded_inputs(source.graph);
  set_torch_threads(2, 1);
  row.relative_error = relative_error(compiled->run(inputs).at(0), torch_graph.run(inputs).at(0));
  torch_graph.set_inputs(inputs);

  TimingOptions timing;
  timing.warmup = 1;
  timing.min_runs = 10;
  timing.max_runs = 40;
  timing.target_seconds = 3;
  // PyTorch's thread settings are set once per comparison, never between runs: changing
  // them run to run made each PyTorch run 2-3x slower (MobileNetV2 26 ms vs 10 ms).
  auto against_torch = [&](int openblas_threads) {
    set_torch_threads(2, openblas_threads);
    return time_interleaved({[&] { compiled->run(inputs); }, [&] { torch_graph.run_kept(); }},
                            timing, 11);
  };
  auto blas1 = against_torch(1);
  auto by_default = against_torch(0);
  row.compiled = blas1[0];
  row.torch_blas1 = blas1[1];
  row.torch_default = by_default[1];
  if (options.report) write_report(*compiled, inputs, options, measurer, compile.out_dir);
  row.compiled_mb = probe_memory(options, "compiled", compile.out_dir);
  row.torch_mb = probe_memory(options, "torch", model);
  return row;
}

void run_memory_probe(const std::string& side, const std::string& source,
                      const ModelOptions& options) {
  double before = rss_mb().first;
  if (side == "compiled") {
    auto compiled = CompiledModel::load(source);
    std::vector<std::vector<float>> inputs;
    for (int t : compiled->plan().inputs) {
      int64_t n = 1;
      for (int64_t e : compiled->plan().tensors[t].shape) n *= e;
      inputs.push_back(std::vector<float>(size_t(n), 0.5f));
    }
    for (int i = 0; i < 2; ++i) compiled->run(inputs);
  } else if (side == "torch") {
    WeightedGraph model = load_model_source(source, options);
    auto inputs = seeded_inputs(model.graph);
    set_torch_threads(2, 1);
    TorchGraph torch_graph(model.graph, model.weights);
    // PyTorch holds its own copy of the weights now, as a loaded model would: drop ours
    // and restart the peak from here, so the drawn copy is not counted against it.
    model.weights.clear();
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    for (int i = 0; i < 2; ++i) torch_graph.run(inputs);
  } else {
    throw Error("memory-probe: side must be compiled or torch, not '" + side + "'");
  }
  std::printf("rss_mb %.1f %.1f\n", before, rss_mb().second);
}

std::string format_model_bench_table(const std::vector<ModelBenchRow>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-16s %9s %11s %11s %11s %11s %8s %9s %9s %7s %8s\n", "model",
                "compile_s", "tlm_med_ms", "tlm_min_ms", "pt_med_ms", "pt_min_ms", "speedup",
                "tlm_MB", "pt_MB", "mem", "rel_err");
  out += line;
  for (const auto& r : rows) {
    const Timing& pt = r.torch_best();
    std::snprintf(line, sizeof line,
                  "%-16s %9.1f %11.2f %11.2f %11.2f %11.2f %7.2fx %9.1f %9.1f %6.2fx %8.1e\n",
                  r.model.c_str(), r.compile_seconds, r.compiled.median_ms, r.compiled.min_ms,
                  pt.median_ms, pt.min_ms, pt.median_ms / r.compiled.median_ms, r.compiled_mb,
                  r.torch_mb, r.compiled_mb / r.torch_mb, r.relative_error);
    out += line;
  }
  return out;
}

void write_model_bench_json(const std::string& path, const std::vector<ModelBenchRow>& rows) {
  auto timing = [](const Timing& t) {
    return nlohmann::json{{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"runs", t.runs}};
  };
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows)
    j.push_back({{"model", r.model},
                 {"compile_seconds", r.compile_seconds},
                 {"strategies", r.strategies},
                 {"compiled", timing(r.compiled)},
                 {"torch_openblas1", timing(r.torch_blas1)},
                 {"torch_default", timing(r.torch_default)},
                 {"speedup_vs_torch_median", r.torch_best().median_ms / r.compiled.median_ms},
                 {"speedup_vs_torch_min", r.torch_best().min_ms / r.compiled.min_ms},
                 {"relative_error", r.relative_error},
                 {"compiled_peak_mb", r.compiled_mb},
                 {"torch_peak_mb", r.torch_mb}});
  std::ofstream out(path);
  if (!out) throw Error("cannot write '" + path + "'");
  out << j.dump(2) << "\n";
}

}  // namespace tlm
