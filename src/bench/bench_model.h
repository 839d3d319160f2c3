// Benchmark of whole models: the compiled artifact against PyTorch (libtorch, eager,
// same weights, same input, same two threads), timed interleaved in one process; with
// peers, ONNX Runtime and OpenVINO on the same ONNX file (each in a child process, its
// runs interleaved with the others', a 200 ms sleep before each turn so that spinning
// thread pools of the other processes are idle).
//
// PyTorch is measured in two thread settings, because its OpenBLAS pool and its OpenMP
// intra-op pool fight over a small machine's cores: OpenBLAS at one thread, and
// OpenBLAS at its default; the comparison is against the better of the two.
// Peak memory is each side's own: a fresh `tlm` process loads and runs only that side,
// and its peak resident set (VmHWM) less its resident set before loading is reported
// (for PyTorch, the peak restarts once it holds the weights, so the copy they were
// drawn into is not counted).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "bench/peer_process.h"
#include "compiler/compile.h"
#include "graph/model_source.h"
#include "measure/timing.h"
#include "model/schedule_model.h"
#include "store/record_store.h"

namespace tlm {

struct ModelBenchOptions {
  std::string out_dir = "bench/results/models";  // artifacts go to <out_dir>/<model>
  std::string exe;                               // the tlm executable, for memory probes
  CompileOptions compile;                        // strategy, hardware (out_dir is set per model)
  ModelOptions model;
  bool report = false;  // each model's kernel report (kernel_report.h) into its artifact folder
  // Peer runtimes timed beside tlm and PyTorch on the same ONNX file ("ort", "openvino";
  // peer_process.h); empty: none.
  std::vector<std::string> peers;
  PeerSetup peer_setup;
};

struct PeerRow {
  std::string system, version;
  Timing timing;
  Timing alone;               // timed by itself after the interleaved runs, as tlm's alone
  double relative_error = 0;  // its first output against PyTorch's
  double peak_mb = 0;         // its process's peak resident set less before loading
};

struct ModelBenchRow {
  std::string model;
  double compile_seconds = 0;
  std::map<std::string, int> strategies;  // how many tasks each strategy scheduled
  std::string layout;                     // the activation layout and why (Plan::layout)
  Timing compiled, torch_blas1, torch_default;
  // tlm timed by itself right after the interleaved runs, in the same process: when the
  // interleaved median sits well above this one, taking turns with the other systems
  // slowed tlm down (their threads, their use of the caches), not the host.
  Timing compiled_alone;
  double relative_error = 0;  // max |compiled - torch| / max |torch|
  double compiled_mb = 0, torch_mb = 0;
  // With --report: the plan's work at the machine's peak (ReportTotals::at_peak_ms), the
  // floor of tlm's time; a peer's time over it is the most tlm could be faster (0: none).
  double at_peak_ms = 0;
  std::vector<PeerRow> peers;

  const Timing& torch_best() const;
  // The peer's median over at_peak_ms: the most tlm_speed this plan can reach (0: no floor).
  double ceiling(const PeerRow& peer) const;
  const PeerRow* fastest_peer() const;  // by median; null without peers
};

// `store`, `schedule_model` and `measurer` as compile_model takes them; with peers, `model`
// must be an .onnx path (the file the peers load).
ModelBenchRow bench_model(const std::string& model, const ModelBenchOptions& options,
                          RecordStore* store, ScheduleModel* schedule_model, Measurer* measurer);
std::string format_model_bench_table(const std::vector<ModelBenchRow>& rows);
void write_model_bench_json(const std::string& path, const std::vector<ModelBenchRow>& rows);

// The child side of a memory probe (`tlm memory-probe`): loads and runs one side of the
// benchmark (`side` is "compiled" with `source` an artifact folder, or "torch" with
// `source` a model) twice and prints "rss_mb BEFORE PEAK".
void run_memory_probe(const std::string& side, const std::string& source,
                      const ModelOptions& options);

}  // namespace tlm
