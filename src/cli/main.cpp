// The `tlm` command: parses flags, prints, and calls the modules. No logic of its own.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "bench/bench_op.h"
#include "cli/compile_commands.h"
#include "cli/flag_checks.h"
#include "cli/model_commands.h"
#include "graph/activation_layout.h"
#include "graph/model_source.h"
#include "graph/partition.h"
#include "lang/sentence.h"
#include "lang/vocabulary.h"
#include "measure/measurer.h"
#include "measure/timing.h"
#include "model/registry.h"
#include "search/search.h"
#include "space/schedule_space.h"
#include "store/record_io.h"
#include "train/improve.h"
#include "util/error.h"
#include "util/hardware.h"
#include "util/strings.h"

namespace tlm {
namespace {

struct CommonFlags {
  std::string db = "tlm.db";
  int threads = 2;
  double timeout = 120;
  int64_t memory_mb = 8192;
};

void add_common(CLI::App* cmd, CommonFlags& flags) {
  cmd->add_option("--db", flags.db, "record database (SQLite)");
  cmd->add_option("--threads", flags.threads, "threads per kernel")->check(in_range(1, 256));
  cmd->add_option("--timeout", flags.timeout, "seconds allowed per measured candidate")
      ->check(in_range(0.001, 86400));
  cmd->add_option("--memory-mb", flags.memory_mb, "address-space limit of the worker")
      ->check(in_range(1024, 1 << 24));
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot find the tlm executable (/proc/self/exe)");
  return std::string(buf, size_t(n));
}

MeasureOptions measure_options(const CommonFlags& flags) {
  MeasureOptions options;
  options.worker_command = self_exe();
  options.timeout_seconds = flags.timeout;
  options.memory_limit_mb = flags.memory_mb;
  options.threads = flags.threads;
  return options;
}

void print_space(const std::string& spec) {
  TaskSpec task = parse_task_spec(spec);
  ScheduleSpace space(describe_task(task));
  std::printf("task %s\n%zu decision points, space size %s\n", task.key().c_str(),
              space.num_points(), space.size_text().c_str());
  for (size_t i = 0; i < space.num_points(); ++i)
    std::printf("  %3zu %-32s %s\n", i, space.point(i).name.c_str(),
                space.describe_point(i).c_str());
}

std::vector<int64_t> parse_decisions(const std::string& text) {
  std::vector<int64_t> decisions;
  if (!text.empty())
    for (const auto& v : split(text, ',')) decisions.push_back(parse_int(v, "--decisions"));
  return decisions;
}

// The task's prompt and a schedule (given, or sampled with `seed`) in the tensor language.
void print_sentence(const std::string& spec, const std::string& decisions, uint64_t seed) {
  TaskSpec task = parse_task_spec(spec);
  ScheduleSpace space(describe_task(task));
  std::vector<int64_t> chosen = parse_decisions(decisions);
  if (chosen.empty()) {
    std::mt19937_64 rng(seed);
    chosen = space.sample(rng);
  }
  auto prompt = encode_prompt(detect_hardware(), task, space.shape());
  auto body = encode_decisions(space, chosen);
  std::printf("prompt (%zu tokens): %s\n", prompt.size(), sentence_text(prompt).c_str());
  std::printf("decisions (%zu tokens): %s\n", body.size(), sentence_text(body).c_str());
  std::printf("vocabulary: %d tokens, hash %s\n", Vocabulary::get().size(),
              Vocabulary::get().hash().c_str());
}

// With `up_to`, --trials is the total: trials of this method already stored count.
void run_tune(const std::string& spec, const SearchOptions& base, bool up_to,
              const CommonFlags& flags) {
  TaskSpec task = parse_task_spec(spec);
  RecordStore store(flags.db);
  Measurer measurer(measure_options(flags));
  SearchOptions options = base;
  options.hardware = detect_hardware().fingerprint();
  if (up_to) {
    int stored = 0;
    for (const auto& r : store.query(task.key(), timed_fingerprint(options.hardware, task)))
      stored += r.method == search_method_name(options.method);
    options.trials = std::max(0, options.trials - stored);
  }
  SearchReport report = run_search(task, measurer, store, options);
  std::printf("%s: %d measured, %d ok, %.1f s (%.2f trials/s)\n", task.key().c_str(),
              report.measured, report.ok, report.seconds, report.measured / report.seconds);
  if (report.ok == 0) return;
  std::vector<std::string> d;
  for (int64_t v : report.best.decisions) d.push_back(std::to_string(v));
  std::printf("best %.4f ms (min %.4f): decisions %s\n", report.best.median_ms, report.best.min_ms,
              join(d, ",").c_str());
}

void run_bench(const std::vector<std::string>& specs, BenchOptions options,
               const std::string& json_path, const CommonFlags& flags) {
  std::vector<TaskSpec> tasks;
  for (const auto& s : specs) tasks.push_back(parse_task_spec(s));
  check_bench_methods(options.methods);
  RecordStore store(flags.db);
  Measurer measurer(measure_options(flags));
  options.hardware = detect_hardware().fingerprint();
  std::vector<BenchRow> rows;
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::fprintf(stderr, "[%zu/%zu] %s\n", i + 1, tasks.size(), tasks[i].key().c_str());
    rows.push_back(bench_task(tasks[i], measurer, store, options));
    std::printf("%s", format_bench_table({rows.back()}, options.baseline).c_str());
    std::fflush(stdout);
    if (!json_path.empty()) write_bench_json(json_path, rows);
  }
  if (rows.size() > 1) std::printf("\n%s", format_geomean_table(rows).c_str());
}

// One candidate, measured isolated; with `store`, kept in the record store as method
// "manual" (a schedule a person or a script chose, e.g. a model's pick with one decision
// changed), so fine-tuning can learn from it.
void run_measure(const std::string& spec, const std::string& method, const std::string& decisions,
                 bool store, const CommonFlags& flags) {
  TaskSpec task = parse_task_spec(spec);
  Candidate candidate{kernel_method_named(method), parse_decisions(decisions)};
  if (store && candidate.method != KernelMethod::Space)
    throw Error("measure --store: only space schedules (--method space) are stored");
  if (candidate.method == KernelMethod::Space)
    ScheduleSpace(describe_task(task)).check(candidate.decisions);
  // Opened first, so a store that is not one fails before anything is measured.
  std::unique_ptr<RecordStore> records = store ? std::make_unique<RecordStore>(flags.db) : nullptr;
  Measurer measurer(measure_options(flags));
  MeasureResult r = measurer.measure_each(task, {candidate}).at(0);
  std::printf("%s %s: %s median %.4f ms min %.4f ms (%d runs) build %.0f ms max_error %.2g\n",
              task.key().c_str(), method.c_str(), status_name(r.status).c_str(), r.timing.median_ms,
              r.timing.min_ms, r.timing.runs, r.build_ms, r.max_error);
  if (!r.detail.empty()) std::printf("%s\n", r.detail.c_str());
  if (records) {
    int added = records->add({measured_record(detect_hardware().fingerprint(), task,
                                              candidate.decisions, "manual", "", r)});
    std::printf("%s in %s\n", added ? "stored" : "already stored", flags.db.c_str());
  }
  if (r.status != Status::Ok) throw Error("candidate " + status_name(r.status) + ": " + r.detail);
}

struct ImproveFlags {
  ImproveOptions options;
  std::string tasks = "bench/improve_tasks.txt", held_out = "bench/heldout_tasks.txt";
};

void run_improve_rounds(ImproveFlags f, const CommonFlags& flags) {
  f.options.tasks = read_list_file(f.tasks);
  f.options.held_out = read_list_file(f.held_out);
  f.options.hardware = detect_hardware().fingerprint();
  RecordStore store(flags.db);
  Measurer measurer(measure_options(flags));
  for (const auto& r : run_improve(f.options, measurer, store))
    std::printf("round %d: %d measured; held-out geomean %.4f ms (%s) vs %.4f ms (%s): %s\n",
                r.round, r.measured, r.parent_geomean_ms, r.parent.c_str(), r.candidate_geomean_ms,
                r.candidate.c_str(), r.promoted ? "promoted" : "kept, not promoted");
}

void add_improve_command(CLI::App& app, ImproveFlags& f, CommonFlags& flags) {
  auto* improve = app.add_subcommand("improve", "rounds of generate, measure, fine-tune, gate");
  improve->add_option("--rounds", f.options.rounds, "rounds (at most 10)")->check(in_range(1, 10));
  improve->add_option("--trials-per-task", f.options.trials_per_task, "schedules per task")
      ->check(in_range(1, 4096));
  improve->add_option("--finetune-steps", f.options.finetune_steps, "fine-tuning steps a round")
      ->check(in_range(1, 1e6));
  improve
      ->add_option("--best-copies", f.options.best_copies,
                   "times each task's best schedules appear in a round's data (speed classes)")
      ->check(in_range(1, 64));
  improve->add_option("--tasks", f.tasks, "training task list");
  improve->add_option("--heldout", f.held_out, "held-out task list (evaluation only)");
  improve->add_option("--run", f.options.run_dir, "run directory (audit.jsonl, round data)");
  improve->add_option("--models", f.options.models_dir, "models directory");
  add_common(improve, flags);
  improve->callback([&f, &flags] { run_improve_rounds(f, flags); });
}

// A zoo model's tasks: count, FLOPs and share of the model's FLOPs, largest first.
void print_tasks(const std::string& model, const ModelOptions& options, bool specs_only,
                 int64_t activation_block, bool winograd, bool batch_split) {
  WeightedGraph source = is_onnx_path(model) ? load_model_source(model, options)
                                             : WeightedGraph{load_model_graph(model, options), {}};
  const Graph& graph = source.graph;
  Partition partition = model_tasks(graph, source.weights, activation_block, winograd, batch_split);
  if (specs_only) {
    for (const auto& use : partition.tasks) std::printf("%s\n", use.spec.c_str());
    return;
  }
  struct Row {
    double flops;
    const TaskUse* use;
  };
  std::vector<Row> rows;
  double total = 0;
  for (const auto& use : partition.tasks) {
    double flops = describe_task(parse_task_spec(use.spec)).flops;
    rows.push_back({flops, &use});
    total += flops * use.count;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.flops * a.use->count > b.flops * b.use->count;
  });
  std::printf("%s: %zu nodes, %.1fM parameters, %zu distinct tasks, %.2f GFLOP\n",
              graph.name().c_str(), graph.nodes().size(), graph.parameter_count() / 1e6,
              rows.size(), total / 1e9);
  std::printf("  %5s %10s %6s  %s\n", "count", "GFLOP", "share", "task");
  for (const Row& r : rows)
    std::printf("  %5d %10.4f %5.1f%%  %s\n", r.use->count, r.flops / 1e9,
                100 * r.flops * r.use->count / total, r.use->spec.c_str());
  std::printf("layout steps (reshape/transpose): %zu\n", partition.layout.size());
  if (!partition.unsupported.empty())
    std::printf("not yet expressible as tasks: %zu nodes, e.g. %s\n", partition.unsupported.size(),
                partition.unsupported.front().c_str());
}

// Everything the task, search and bench commands read from the command line.
struct Flags {
  CommonFlags common;
  std::string spec, method = "space", decisions, json_path, transfer_exclude;
  bool up_to = false, specs_only = false, winograd = true, store = false, batch_split = true;
  int64_t activation_block = kAutoActivationBlock;
  std::string methods =
      "evolutionary-1000,random-1000,adams2019,mullapudi2016,li2018,onednn,openblas";
  std::vector<std::string> specs;
  SearchOptions search;
  std::string search_method = "evolutionary";
  BenchOptions bench;
  ImproveFlags improve;
  ModelOptions model;
};

struct Commands {
  CLI::App *space, *lang, *measure, *tasks, *tune, *bench_op, *worker;
};

void add_task_commands(CLI::App& app, Flags& f, Commands& c) {
  c.space = app.add_subcommand("space", "show a task's schedule space");
  c.space->add_option("task", f.spec, "task spec, e.g. matmul:m=1024,n=1024,k=1024")->required();
  c.lang = app.add_subcommand("lang", "show a task and a schedule in the tensor language");
  c.lang->add_option("task", f.spec, "task spec")->required();
  c.lang->add_option("--decisions", f.decisions, "comma-separated values (default: random)");
  c.lang->add_option("--seed", f.search.seed, "seed of the random schedule")->check(seed_range());
  c.measure = app.add_subcommand("measure", "measure one candidate of a task");
  c.measure->add_option("task", f.spec, "task spec")->required();
  c.measure->add_option("--method", f.method, "space|reference|adams2019|...|onednn|openblas");
  c.measure->add_option("--decisions", f.decisions, "comma-separated decision values (space)");
  c.measure->add_flag("--store", f.store,
                      "keep the result in --db as a record (method manual; space schedules)");
  add_common(c.measure, f.common);
  c.tasks = app.add_subcommand("tasks", "a zoo model's tasks with counts and FLOPs");
  c.tasks
      ->add_option("model", f.spec, "resnet50|mobilenetv2|efficientnet-b0|bert-base|gpt2|llama-7b")
      ->required();
  add_model_options(c.tasks, f.model);
  c.tasks->add_flag("--specs", f.specs_only, "only the task specs, one per line");
  add_activation_block_option(c.tasks, f.activation_block);
  c.tasks->add_flag("--winograd,!--no-winograd", f.winograd,
                    "3x3 convolutions as Winograd tasks where compiling makes them (default)");
  c.tasks->add_flag("--batch-split,!--no-batch-split", f.batch_split,
                    "a batched model's leading tasks at batch 1 where compiling runs them "
                    "image by image (default)");
}

void add_search_commands(CLI::App& app, Flags& f, Commands& c) {
  c.tune = app.add_subcommand("tune", "search a task's space with measured trials");
  c.tune->add_option("task", f.spec, "task spec")->required();
  c.tune->add_option("--method", f.search_method,
                     "random | evolutionary | transfer (evolutionary, seeded from similar "
                     "tasks) | refine (seeded from the task's own fastest stored schedules)");
  c.tune->add_option("--trials", f.search.trials, "measured trials")->check(in_range(0, 100000));
  c.tune->add_option("--seed", f.search.seed, "random seed")->check(seed_range());
  c.tune->add_option("--exclude", f.transfer_exclude,
                     "task list (e.g. held-out tasks) transfer never seeds from");
  c.tune->add_flag("--up-to", f.up_to,
                   "--trials is the total, counting this method's stored trials");
  add_common(c.tune, f.common);
  auto* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  c.bench_op = bench->add_subcommand("op", "compare methods on tasks, interleaved");
  c.bench_op->add_option("tasks", f.specs, "task specs")->required();
  c.bench_op->add_option("--methods", f.methods, "comma-separated methods");
  c.bench_op->add_option("--baseline", f.bench.baseline, "method ratios are taken against");
  c.bench_op->add_option("--json", f.json_path, "write results as JSON");
  c.bench_op->add_option("--model", f.bench.model_path,
                         "checkpoint for tlm-K methods (default: models/ registry default)");
  add_common(c.bench_op, f.common);
}

// An imported record's task: a valid spec whose canonical key is the record's key, and
// decisions legal in its space, once brought to its current form (each spec's space made
// once: files hold thousands of records of a few hundred tasks).
RecordCheck record_task_check() {
  struct Known {
    std::string key;
    std::shared_ptr<ScheduleSpace> space;
  };
  auto known = std::make_shared<std::map<std::string, Known>>();
  return [known](Record& r) {
    Known& task = (*known)[r.task_spec];
    if (!task.space) {
      TaskSpec spec = parse_task_spec(r.task_spec);
      task = {spec.key(), std::make_shared<ScheduleSpace>(describe_task(spec))};
    }
    if (task.key != r.task_key)
      throw Error("task_key '" + r.task_key + "' is not its spec's key '" + task.key + "'");
    r.decisions = task.space->upgrade(r.decisions);
    if (!task.space->is_legal(r.decisions))
      throw Error("its decisions are not a legal schedule of " + task.key);
  };
}

// `tlm records export|import`: the store's records as JSON lines, and merging them back.
void add_records_commands(CLI::App& app, CommonFlags& flags) {
  auto* records = app.add_subcommand("records", "export or import measured records (JSON lines)");
  records->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* out = records->add_subcommand("export", "write the store's records to a file");
  out->add_option("-o,--out", *file, "JSON-lines file")->required();
  out->add_option("--db", flags.db, "record database (SQLite)");
  out->callback([&flags, file] {
    RecordStore store(flags.db);
    std::printf("%lld records -> %s\n", (long long)export_records(store, *file), file->c_str());
  });
  auto* in = records->add_subcommand("import", "merge a file's records into the store");
  in->add_option("file", *file, "JSON-lines file (tlm records export)")->required();
  in->add_option("--db", flags.db, "record database (SQLite)");
  auto replace = std::make_shared<bool>(false);
  in->add_flag("--replace", *replace,
               "a record of a schedule the store holds (same machine, task and decisions) "
               "replaces the stored one when it is newer: re-timings under a newer protocol");
  in->callback([&flags, file, replace] {
    RecordStore store(flags.db);
    const int64_t before = store.count();
    const int64_t written = import_records(
        store, *file, record_task_check(),
        *replace ? RecordStore::OnDuplicate::ReplaceIfNewer : RecordStore::OnDuplicate::Keep);
    const int64_t added = store.count() - before;
    std::printf("%lld new records in %s", (long long)added, flags.db.c_str());
    if (*replace) std::printf(", %lld replaced by newer ones", (long long)(written - added));
    std::printf("\n");
  });
}

int run(int argc, char** argv) {
  CLI::App app{"tlm: a tensor compiler whose scheduler is a language model"};
  app.require_subcommand(1);
  Flags f;
  Commands c;
  add_task_commands(app, f, c);
  add_search_commands(app, f, c);
  std::vector<std::string> words(argv, argv + argc);
  add_model_commands(app, join(words, " "), self_exe());
  add_improve_command(app, f.improve, f.common);
  add_compile_commands(app, self_exe());
  add_records_commands(app, f.common);
  c.worker = app.add_subcommand("worker", "internal: isolated measurement worker");
  c.worker->add_option("--threads", f.common.threads);
  c.worker->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tlm: error: %s\n", e.what());  // one line, as every other error
    return e.get_exit_code();
  }
  set_kernel_threads(f.common.threads);
  if (*c.worker) return run_worker_loop();
  if (*c.space) print_space(f.spec);
  if (*c.lang) print_sentence(f.spec, f.decisions, f.search.seed);
  if (*c.tasks)
    print_tasks(f.spec, f.model, f.specs_only, f.activation_block, f.winograd, f.batch_split);
  if (*c.tune) {
    f.search.transfer_excluded = read_list_file(f.transfer_exclude);
    f.search.method = search_method_named(f.search_method);
    run_tune(f.spec, f.search, f.up_to, f.common);
  }
  if (*c.measure) run_measure(f.spec, f.method, f.decisions, f.store, f.common);
  if (*c.bench_op) {
    f.bench.methods = split(f.methods, ',');
    if (f.methods.find("tlm-") != std::string::npos)
      f.bench.model_path =
          resolve_model(f.bench.model_path, "models", detect_hardware().fingerprint());
    run_bench(f.specs, f.bench, f.json_path, f.common);
  }
  return 0;
}

}  // namespace
}  // namespace tlm

int main(int argc, char** argv) {
  try {
    return tlm::run(argc, argv);
  } catch (const std::exception& e) {
    // One line: library exceptions (libtorch's) carry a backtrace after the message.
    std::string message = e.what();
    std::fprintf(stderr, "tlm: error: %s\n", message.substr(0, message.find('\n')).c_str());
    return 1;
  }
}
