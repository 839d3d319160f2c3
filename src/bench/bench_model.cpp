#include "bench/bench_model.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/kernel_report.h"
#include "graph/model_source.h"
#include "runtime/runtime.h"
#include "torchref/torch_graph.h"
#include "util/error.h"
#include "util/npy.h"

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

double ModelBenchRow::ceiling(const PeerRow& peer) const {
  return at_peak_ms > 0 ? peer.timing.median_ms / at_peak_ms : 0;
}

const PeerRow* ModelBenchRow::fastest_peer() const {
  const PeerRow* best = nullptr;
  for (const auto& p : peers)
    if (!best || p.timing.median_ms < best->timing.median_ms) best = &p;
  return best;
}

// The peers, started on `onnx_path` with the benchmark's inputs written as .npy files
// into `dir`; each one's first output checked against `expected` (PyTorch's).
std::vector<std::unique_ptr<PeerProcess>> start_peers(const ModelBenchOptions& options,
                                                      const std::string& onnx_path,
                                                      const Graph& graph,
                                                      const std::vector<std::vector<float>>& inputs,
                                                      const std::vector<float>& expected,
                                                      const std::string& dir, ModelBenchRow& row) {
  std::vector<std::string> files;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int t = graph.inputs()[i];
    std::string path = dir + "/peer_input" + std::to_string(i) + ".npy";
    write_npy(path, graph.shape(t), inputs[i]);
    files.push_back(graph.tensor(t).name + "=" + path);
  }
  std::vector<std::unique_ptr<PeerProcess>> peers;
  for (const auto& system : options.peers) {
    peers.push_back(std::make_unique<PeerProcess>(options.peer_setup, system, onnx_path, files));
    std::string out = dir + "/peer_" + system + "_output.npy";
    peers.back()->write_output(out);
    NpyArray got = read_npy(out);
    PeerRow peer;
    peer.system = system;
    peer.version = peers.back()->version();
    peer.relative_error = relative_error({got.values.begin(), got.values.end()}, expected);
    row.peers.push_back(peer);
  }
  return peers;
}

// Where the compiled model's time goes, each kernel also timed alone (a measurer of its
// own when the benchmark has none), as `tlm run --report` shows it. Returns the plan's work
// at the machine's peak, in ms.
double write_report(CompiledModel& compiled, const std::vector<std::vector<float>>& inputs,
                    const ModelBenchOptions& options, Measurer* measurer, const std::string& dir) {
  auto timings = time_steps(compiled, inputs, kReportRuns);
  MeasureOptions own;
  own.worker_command = options.exe;
  std::unique_ptr<Measurer> made = measurer ? nullptr : std::make_unique<Measurer>(own);
  KernelReport report = kernel_report(compiled.plan(), timings, measurer ? *measurer : *made,
                                      own.threads, options.compile.progress);
  write_kernel_report(report, compiled.plan().model + ": time per task", dir);
  return report_totals(report.rows).at_peak_ms(report.peak_gflops);
}

ModelBenchRow bench_model(const std::string& model, const ModelBenchOptions& options,
                          RecordStore* store, ScheduleModel* schedule_model, Measurer* measurer) {
  ModelBenchRow row;
  KeepTorchThreads keep_threads;  // for the next model's compile
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
  row.layout = plan.layout;

  auto compiled = CompiledModel::load(compile.out_dir);
  TorchGraph torch_graph(source.graph, source.weights);
  auto inputs = seeded_inputs(source.graph);
  set_torch_threads(2, 1);
  std::vector<float> expected = torch_graph.run(inputs).at(0);
  row.relative_error = relative_error(compiled->run(inputs).at(0), expected);
  torch_graph.set_inputs(inputs);
  auto peers = start_peers(options, model, source.graph, inputs, expected, compile.out_dir, row);

  TimingOptions timing;
  timing.warmup = 1;
  timing.min_runs = 10;
  timing.max_runs = 40;
  timing.target_seconds = 3;
  // tlm writes into output buffers kept across runs, as OpenVINO's infer request does.
  auto outputs = compiled->output_buffers();
  // PyTorch's thread settings are set once per comparison, never between runs: changing
  // them run to run made each PyTorch run 2-3x slower (MobileNetV2 26 ms vs 10 ms).
  // The peers take their turns in the first comparison.
  auto against_torch = [&](int openblas_threads, bool with_peers) {
    set_torch_threads(2, openblas_threads);
    std::vector<std::function<void()>> runs = {[&] { compiled->run(inputs, outputs); },
                                               [&] { torch_graph.run_kept(); }};
    TimingOptions these = timing;
    if (with_peers && !peers.empty()) these.turn_sleep_ms = 200;
    for (auto& peer : peers)
      if (with_peers) runs.push_back([&peer] { peer->run(); });
    return time_interleaved(runs, these, 11);
  };
  auto blas1 = against_torch(1, true);
  auto by_default = against_torch(0, false);
  row.compiled = blas1[0];
  row.torch_blas1 = blas1[1];
  row.torch_default = by_default[1];
  row.compiled_alone = time_interleaved({[&] { compiled->run(inputs, outputs); }}, timing, 13)[0];
  for (size_t p = 0; p < peers.size(); ++p) {
    row.peers[p].timing = blas1[2 + p];
    row.peers[p].alone = time_interleaved({[&] { peers[p]->run(); }}, timing, 17 + p)[0];
    auto [before, peak] = peers[p]->memory_mb();
    row.peers[p].peak_mb = peak - before;
  }
  peers.clear();
  if (options.report)
    row.at_peak_ms = write_report(*compiled, inputs, options, measurer, compile.out_dir);
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
  std::snprintf(line, sizeof line, "%-16s %9s %11s %11s %11s %11s %11s %8s %9s %9s %7s %8s\n",
                "model", "compile_s", "tlm_med_ms", "tlm_min_ms", "alone_med", "pt_med_ms",
                "pt_min_ms", "speedup", "tlm_MB", "pt_MB", "mem", "rel_err");
  out += line;
  for (const auto& r : rows) {
    const Timing& pt = r.torch_best();
    std::snprintf(
        line, sizeof line,
        "%-16s %9.1f %11.2f %11.2f %11.2f %11.2f %11.2f %7.2fx %9.1f %9.1f %6.2fx %8.1e\n",
        r.model.c_str(), r.compile_seconds, r.compiled.median_ms, r.compiled.min_ms,
        r.compiled_alone.median_ms, pt.median_ms, pt.min_ms, pt.median_ms / r.compiled.median_ms,
        r.compiled_mb, r.torch_mb, r.compiled_mb / r.torch_mb, r.relative_error);
    out += line;
  }
  out += "(alone_med: tlm's median timed by itself right after the interleaved runs)\n";
  bool any_peers = false;
  for (const auto& r : rows) any_peers = any_peers || !r.peers.empty();
  if (!any_peers) return out;
  std::snprintf(line, sizeof line, "\n%-16s %-9s %-12s %11s %11s %11s %9s %8s %10s %10s %8s\n",
                "model", "peer", "version", "med_ms", "min_ms", "alone_med", "MB", "rel_err",
                "tlm_speed", "tlm_mem", "ceiling");
  out += line;
  for (const auto& r : rows)
    for (const auto& p : r.peers) {
      char ceiling[32] = "-";
      if (r.ceiling(p) > 0) std::snprintf(ceiling, sizeof ceiling, "%.2fx", r.ceiling(p));
      std::snprintf(line, sizeof line,
                    "%-16s %-9s %-12s %11.2f %11.2f %11.2f %9.1f %8.1e %9.2fx %9.2fx %8s\n",
                    r.model.c_str(), p.system.c_str(), p.version.c_str(), p.timing.median_ms,
                    p.timing.min_ms, p.alone.median_ms, p.peak_mb, p.relative_error,
                    p.timing.median_ms / r.compiled.median_ms, r.compiled_mb / p.peak_mb, ceiling);
      out += line;
    }
  out +=
      "(tlm_speed: the peer's median over tlm's, above 1 when tlm is faster; alone_med: the peer "
      "timed by itself after the interleaved runs; tlm_mem: tlm's peak memory over the peer's; "
      "ceiling: the peer's median over tlm's plan run at the machine's peak, the most "
      "tlm_speed this plan can reach (--report))\n";
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
                 {"activation_layout", r.layout},
                 {"compiled", timing(r.compiled)},
                 {"compiled_alone", timing(r.compiled_alone)},
                 {"torch_openblas1", timing(r.torch_blas1)},
                 {"torch_default", timing(r.torch_default)},
                 {"speedup_vs_torch_median", r.torch_best().median_ms / r.compiled.median_ms},
                 {"speedup_vs_torch_min", r.torch_best().min_ms / r.compiled.min_ms},
                 {"relative_error", r.relative_error},
                 {"compiled_peak_mb", r.compiled_mb},
                 {"torch_peak_mb", r.torch_mb},
                 {"at_peak_ms", r.at_peak_ms}});
  for (size_t i = 0; i < rows.size(); ++i) {
    const ModelBenchRow& r = rows[i];
    if (r.peers.empty()) continue;
    nlohmann::json peers = nlohmann::json::object();
    for (const auto& p : r.peers) {
      peers[p.system] = timing(p.timing);
      peers[p.system].update({{"version", p.version},
                              {"alone", timing(p.alone)},
                              {"relative_error", p.relative_error},
                              {"peak_mb", p.peak_mb}});
    }
    const PeerRow& fastest = *r.fastest_peer();
    j[i]["peers"] = peers;
    j[i]["fastest_peer"] = fastest.system;
    j[i]["speedup_vs_fastest_peer_median"] = fastest.timing.median_ms / r.compiled.median_ms;
    j[i]["speedup_vs_fastest_peer_min"] = fastest.timing.min_ms / r.compiled.min_ms;
    j[i]["speedup_vs_fastest_peer_alone"] = fastest.alone.median_ms / r.compiled_alone.median_ms;
    j[i]["memory_vs_fastest_peer"] = r.compiled_mb / fastest.peak_mb;
    if (r.ceiling(fastest) > 0) j[i]["ceiling_vs_fastest_peer"] = r.ceiling(fastest);
  }
  std::ofstream out(path);
  if (!out) throw Error("cannot write '" + path + "'");
  out << j.dump(2) << "\n";
}

}  // namespace tlm
