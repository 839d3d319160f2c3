#include "cli/compile_commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "bench/bench_model.h"
#include "bench/kernel_report.h"
#include "cli/flag_checks.h"
#include "compiler/compile.h"
#include "graph/model_source.h"
#include "model/registry.h"
#include "runtime/model_io.h"
#include "runtime/runtime.h"
#include "util/error.h"

namespace tlm {
namespace {

struct CompileFlags {
  std::string model, out, db = "tlm.db", checkpoint, models_dir = "models", strategy = "auto";
  std::string hardware;  // schedules for this machine's fingerprint (default: this one)
  CompileOptions options;
  ModelOptions model_options;
};

// Where schedules come from: the record store (when the file exists) and the model
// (the named checkpoint, else the registry's default when there is one).
// With a trial budget, also the measurer, and the store is created if need be.
struct ScheduleSources {
  std::unique_ptr<RecordStore> store;
  std::unique_ptr<ScheduleModel> model;
  std::unique_ptr<Measurer> measurer;
};

// The activation layout the registry names for the machine of `fingerprint`
// (model/registry.h), for when records cannot decide; else auto (the rule).
int64_t registry_activation_block(const std::string& models_dir, const std::string& fingerprint) {
  int64_t block = Registry(models_dir).activation_block_for(fingerprint);
  return block < 0 ? kAutoActivationBlock : block;
}

ScheduleSources open_schedule_sources(const CompileFlags& f, const std::string& exe) {
  ScheduleSources sources;
  std::ifstream probe(f.db);
  if (probe || f.options.trials_per_task > 0) sources.store = std::make_unique<RecordStore>(f.db);
  std::string host = f.hardware.empty() ? detect_hardware().fingerprint() : f.hardware;
  if (!f.checkpoint.empty() || Registry(f.models_dir).default_for(host) != "")
    sources.model = ScheduleModel::load(resolve_model(f.checkpoint, f.models_dir, host));
  if (!sources.model && f.options.strategy == Strategy::Tlm)
    throw Error("--strategy tlm needs a model: '" + f.models_dir +
                "' has no default checkpoint (name one with --model)");
  if (f.options.trials_per_task > 0) {
    MeasureOptions measure;
    measure.worker_command = exe;
    sources.measurer = std::make_unique<Measurer>(measure);
  }
  return sources;
}

void add_compile_options(CLI::App* command, CompileFlags& f) {
  command->add_option("--strategy", f.strategy, "auto|store|tlm|reference|adams2019|mullapudi2016");
  command
      ->add_option("--trials", f.options.trials_per_task,
                   "measured candidates per task (0: none, the model's or store's choice)")
      ->check(in_range(0, 100000));
  command->add_option("--db", f.db, "record store (schedules measured before, and new ones)");
  command->add_option("--model", f.checkpoint, "checkpoint (default: the registry's)");
  command->add_option("--models", f.models_dir, "models directory");
  add_activation_block_option(command, f.options.activation_block);
  command->add_flag("--winograd,!--no-winograd", f.options.winograd,
                    "3x3 convolutions (stride 1) as Winograd F(4x4) or F(2x2) where it pays "
                    "(default; --no-winograd: every convolution direct)");
  command
      ->add_option_function<std::string>(
          "--fuse-depthwise",
          [&f](const std::string& value) {
            f.options.fuse_depthwise = value == "never"     ? DepthwiseFusion::Never
                                       : value == "measure" ? DepthwiseFusion::Measure
                                                            : DepthwiseFusion::Stored;
          },
          "depthwise convolutions fused into the 1x1 convolutions that read them where "
          "measured faster: stored (default: fused tasks the record store has measured), "
          "measure (--trials measures them too), never")
      ->check(CLI::IsMember({"stored", "measure", "never"}));
  command->add_flag("--batch-split,!--no-batch-split", f.options.batch_split,
                    "run a batched model's leading layers image by image where that pays "
                    "(default; --no-batch-split: every layer on the whole batch)");
  command->add_flag("--in-place,!--no-in-place", f.options.in_place,
                    "residual adds store over the activation they add where the schedule "
                    "allows (default; --no-in-place: a buffer of their own)");
  add_model_options(command, f.model_options);
}

void run_compile(CompileFlags f, const std::string& exe) {
  auto start = std::chrono::steady_clock::now();
  f.options.strategy = strategy_named(f.strategy);
  f.options.hardware = detect_hardware().fingerprint();
  if (!f.hardware.empty() && f.hardware != f.options.hardware) {
    if (f.options.trials_per_task > 0)
      throw Error("compile: --trials measures on this machine; --hardware " + f.hardware +
                  " names another");
    f.options.hardware = f.hardware;
  }
  f.options.host_activation_block = registry_activation_block(f.models_dir, f.options.hardware);
  auto [graph, weights] = load_model_source(f.model, f.model_options);
  ScheduleSources sources = open_schedule_sources(f, exe);
  f.options.out_dir = f.out;
  Plan plan = compile_model(graph, weights, f.options, sources.store.get(), sources.model.get(),
                            sources.measurer.get());
  std::map<std::string, int> strategies;
  for (const auto& t : plan.tasks) strategies[t.strategy] += 1;
  std::printf("%s -> %s: %zu tasks, %zu steps, %.1f s\n", f.model.c_str(), f.out.c_str(),
              plan.tasks.size(), plan.steps.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (const auto& [phase, seconds] : plan.compile_seconds)
    std::printf("  %-9s %7.2f s\n", phase.c_str(), seconds);
  std::printf("  activation layout: %s\n", plan.layout.c_str());
  for (const auto& [strategy, n] : strategies)
    std::printf("  schedules from %s: %d tasks\n", strategy.c_str(), n);
}

struct RunFlags {
  std::string dir, output;
  std::vector<std::string> inputs;
  int bench = 0;
  bool report = false, any_hardware = false;
};

void run_model(const RunFlags& f, const std::string& exe) {
  std::string hardware = detect_hardware().fingerprint();
  auto model = CompiledModel::load(f.dir, f.any_hardware ? "" : hardware);
  if (model->plan().hardware != hardware)
    std::fprintf(stderr, "tlm: warning: '%s' was compiled for %s, this machine is %s\n",
                 f.dir.c_str(), model->plan().hardware.c_str(), hardware.c_str());
  auto inputs = read_model_inputs(model->plan(), f.inputs);
  auto outputs = model->run(inputs);
  if (!f.output.empty()) write_model_outputs(model->plan(), outputs, f.output);
  for (size_t o = 0; o < outputs.size(); ++o) {
    double sum = 0, abs_max = 0;
    for (float v : outputs[o]) sum += v, abs_max = std::max(abs_max, double(std::fabs(v)));
    std::printf("output %zu: %zu values, mean %.6g, max |x| %.6g, first %.6g\n", o,
                outputs[o].size(), sum / outputs[o].size(), abs_max, outputs[o][0]);
  }
  std::vector<double> ms;
  for (int i = 0; i < f.bench; ++i) {
    auto start = std::chrono::steady_clock::now();
    model->run(inputs, outputs);
    ms.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() *
                 1e3);
  }
  if (!ms.empty()) {
    std::sort(ms.begin(), ms.end());
    std::printf("latency: min %.3f ms, median %.3f ms over %zu runs; memory %.1f MB\n", ms.front(),
                ms[ms.size() / 2], ms.size(), model->memory_bytes() / 1e6);
  }
  if (f.report) {
    auto timings = time_steps(*model, inputs, kReportRuns);
    MeasureOptions options;
    options.worker_command = exe;
    Measurer measurer(options);
    auto report = kernel_report(model->plan(), timings, measurer, options.threads, true);
    write_kernel_report(report, model->plan().model + ": time per task", f.dir);
  }
}

struct BenchModelFlags {
  std::vector<std::string> models;
  std::string json = "bench/results/bench_model.json";
  CompileFlags compile;
  ModelBenchOptions options;
};

void run_bench_models(BenchModelFlags f, const std::string& exe) {
  ScheduleSources sources = open_schedule_sources(f.compile, exe);
  f.options.exe = exe;
  f.options.model = f.compile.model_options;
  f.options.compile = f.compile.options;
  f.options.compile.strategy = strategy_named(f.compile.strategy);
  f.options.compile.progress = true;
  f.options.compile.hardware = detect_hardware().fingerprint();
  f.options.compile.host_activation_block =
      registry_activation_block(f.compile.models_dir, f.options.compile.hardware);
  for (const std::string& file : {f.options.peer_setup.python, f.options.peer_setup.script})
    if (!f.options.peers.empty() && !std::ifstream(file))
      throw Error("bench model: no '" + file +
                  "' for the peers (bash bench/peers/install.sh "
                  "makes their environment; run from the repository's root)");
  for (const auto& model : f.models)
    if (!f.options.peers.empty() && !is_onnx_path(model))
      throw Error("bench model: peers run the same ONNX file as tlm; '" + model +
                  "' is a zoo name (give an .onnx file)");
  std::vector<ModelBenchRow> rows;
  for (size_t i = 0; i < f.models.size(); ++i) {
    std::fprintf(stderr, "[%zu/%zu] %s\n", i + 1, f.models.size(), f.models[i].c_str());
    rows.push_back(bench_model(f.models[i], f.options, sources.store.get(), sources.model.get(),
                               sources.measurer.get()));
    std::printf("%s", format_model_bench_table({rows.back()}).c_str());
    std::fflush(stdout);
    write_model_bench_json(f.json, rows);
  }
  if (rows.size() > 1) std::printf("\n%s", format_model_bench_table(rows).c_str());
}

void add_bench_model_command(CLI::App& app, const std::string& exe) {
  auto f = std::make_shared<BenchModelFlags>();
  f->compile.models_dir = default_models_dir(exe);
  auto* bench = app.get_subcommand("bench")->add_subcommand(
      "model", "compiled model against PyTorch (same weights), interleaved, with peak memory");
  bench->add_option("models", f->models, "zoo names or .onnx paths")->required();
  bench->add_option("--json", f->json, "results as JSON");
  bench->add_option("--out", f->options.out_dir, "folder for the compiled artifacts");
  bench->add_flag("--report", f->options.report,
                  "per model, where the time goes: GFLOP/s per task against the machine's peak, "
                  "warm (each step run again at once) and each kernel timed alone (report.json "
                  "and report.svg in its artifact)");
  bench
      ->add_option("--peers", f->options.peers,
                   "also time these runtimes on the same .onnx file, interleaved: ort,openvino "
                   "(their environment: bash bench/peers/install.sh)")
      ->delimiter(',')
      ->check(CLI::IsMember({"ort", "openvino"}));
  const char* venv = std::getenv("TLM_PEERS_VENV");
  f->options.peer_setup.python = std::string(venv ? venv : "/opt/tlm-peers") + "/bin/python";
  f->options.peer_setup.script = "bench/peers/peer_runner.py";
  bench->add_option("--peers-python", f->options.peer_setup.python,
                    "the peers' Python (default: $TLM_PEERS_VENV/bin/python, /opt/tlm-peers)");
  bench->add_option("--peers-script", f->options.peer_setup.script, "peer_runner.py")->group("");
  add_compile_options(bench, f->compile);
  bench->callback([f, exe] { run_bench_models(*f, exe); });
  auto probe = std::make_shared<std::pair<std::vector<std::string>, ModelOptions>>();
  auto* memory = app.add_subcommand("memory-probe", "internal: peak memory of one side");
  memory->add_option("side_and_source", probe->first)->expected(2)->required();
  add_model_options(memory, probe->second);
  memory->group("");
  memory->callback([probe] { run_memory_probe(probe->first[0], probe->first[1], probe->second); });
}

}  // namespace

void add_model_options(CLI::App* command, ModelOptions& options) {
  command->add_option("--batch", options.zoo.batch, "batch size (zoo models)")
      ->check(in_range(1, 4096));
  command->add_option("--seq", options.zoo.seq, "sequence length (zoo transformers)")
      ->check(in_range(1, 65536));
  command
      ->add_option("--layers", options.zoo.layers, "blocks (zoo transformers; 0: the model's own)")
      ->check(in_range(0, 256));
  command->add_option("--image", options.zoo.image, "image size (zoo convolutional networks)")
      ->check(in_range(8, 4096));
  command
      ->add_option_function<std::vector<std::string>>(
          "--input-shape",
          [&options](const std::vector<std::string>& shapes) {
            for (const auto& s : shapes) add_input_shape(options, s);
          },
          "NAME=1x3x224x224: fixes an ONNX input's dynamic dimensions (repeatable)")
      ->allow_extra_args(false);
}

void add_compile_commands(CLI::App& app, const std::string& exe) {
  add_bench_model_command(app, exe);
  auto cf = std::make_shared<CompileFlags>();
  cf->models_dir = default_models_dir(exe);
  auto* compile =
      app.add_subcommand("compile", "compile a zoo model or an ONNX file to an artifact folder");
  compile
      ->add_option("model", cf->model,
                   "zoo name (resnet50|mobilenetv2|efficientnet-b0|bert-base|gpt2|llama-7b) "
                   "or a path to an .onnx file")
      ->required();
  compile->add_option("-o,--out", cf->out, "artifact folder")->required();
  compile
      ->add_option("--hardware", cf->hardware,
                   "choose schedules for the machine of this fingerprint (its records, its "
                   "prompt); kernels are built for this one's ISA, run with --any-hardware")
      ->check(fingerprint_or({}));
  add_compile_options(compile, *cf);
  compile->callback([cf, exe] { run_compile(*cf, exe); });
  auto rf = std::make_shared<RunFlags>();
  auto* run = app.add_subcommand("run", "run a compiled model");
  run->add_option("artifact", rf->dir, "artifact folder (tlm compile)")->required();
  run->add_option("--input", rf->inputs,
                  "NAME=file.npy per input (file.npy for one input; a raw float32 file holds "
                  "every input; default: seeded random)");
  run->add_option("--output", rf->output, "out.npy (one output) or a folder for NAME.npy files");
  run->add_option("--bench", rf->bench, "timed runs after the first")->check(in_range(0, 1e6));
  run->add_flag("--report", rf->report,
                "time per task, largest first, with GFLOP/s against the machine's peak, warm "
                "(each step run again at once) and each kernel timed alone (table, report.json "
                "and report.svg)");
  run->add_flag("--any-hardware", rf->any_hardware,
                "run an artifact compiled for other hardware (a warning instead of an error)");
  run->callback([rf, exe] { run_model(*rf, exe); });
}

}  // namespace tlm
