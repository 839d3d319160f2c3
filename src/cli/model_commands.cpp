#include "cli/model_commands.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/flag_checks.h"
#include "measure/measurer.h"
#include "model/checkpoint.h"
#include "model/dataset.h"
#include "model/registry.h"
#include "model/schedule_model.h"
#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct CorpusFlags {
  std::string out, exclude = "bench/heldout_tasks.txt";
  int per_task = 100;
  uint64_t seed = 1;
};

void run_corpus(const CorpusFlags& f) {
  auto tasks = pretrain_tasks(read_list_file(f.exclude));
  Dataset data = sample_corpus(tasks, f.per_task, f.seed, detect_hardware());
  write_dataset(f.out, data);
  std::printf("%zu tasks, %zu sentences -> %s (hash %s)\n", tasks.size(), data.sentences.size(),
              f.out.c_str(), data.hash.c_str());
}

struct TrainFlags {
  TrainOptions options;
  std::string config_path, init, models_dir = "models";
};

void run_train(const TrainFlags& f, const std::string& command) {
  ModelConfig config;
  if (f.init.empty()) config = ModelConfig::from_json(read_text(f.config_path));
  auto result = train_checkpoint(f.options, config, f.init, f.models_dir, command);
  std::printf("step %d, loss %.4f, validation loss %.4f, %.0f tokens/s\ncheckpoint %s/%s\n",
              result.report.step, result.report.loss, result.report.validation_loss,
              result.report.tokens_per_second, f.models_dir.c_str(), result.id.c_str());
}

struct FinetuneFlags {
  TrainFlags train;
  std::string db = "tlm.db";
  std::vector<std::string> exclude = {"bench/heldout_tasks.txt"};
  int per_task = 0;  // 0: the recipe's (kBestPerTask, or kSpeedPerTask with speed classes)
  bool speed_classes = false;
  int best_copies = 1;
  int top_copies = 0;
  int host_copies = 1;
  bool model_proposals = false;
  bool warm_only = false, cold_streamed_only = false;
  std::string hardware = "all";  // whose records: all | this | a fingerprint
};

// The host whose records --hardware names; none for all (every host the store measured).
std::vector<Hardware> named_host(const std::string& which) {
  if (which == "all") return {};
  if (which == "this") return {detect_hardware()};
  return {hardware_named(which)};
}

// Writes the best measured schedules of the store to the run directory, then trains the
// --init checkpoint on them.
void run_finetune(FinetuneFlags f, const std::string& command) {
  if (f.model_proposals && !f.speed_classes)
    throw Error("train finetune: --model-proposals needs --speed-classes");
  if (f.top_copies > 0 && !f.speed_classes)
    throw Error("train finetune: --top-copies needs --speed-classes");
  if (f.host_copies > 1 && (!f.speed_classes || f.hardware != "all"))
    throw Error("train finetune: --host-copies needs --speed-classes and --hardware all");
  auto hosts = named_host(f.hardware);
  RecordStore store(f.db);
  if (hosts.empty()) hosts = measured_hosts(store);
  std::error_code ignored;  // a folder that cannot be made fails below, naming the file
  std::filesystem::create_directories(f.train.options.run_dir, ignored);
  std::vector<std::string> excluded;
  for (const auto& file : f.exclude) {
    auto tasks = read_list_file(file);
    excluded.insert(excluded.end(), tasks.begin(), tasks.end());
  }
  if (f.per_task <= 0) f.per_task = f.speed_classes ? kSpeedPerTask : kBestPerTask;
  SpeedSelection selection{f.per_task, f.best_copies};
  selection.top_copies = f.top_copies;
  selection.model_proposals = f.model_proposals;
  selection.emphasized_host = detect_hardware().fingerprint();
  selection.host_copies = f.host_copies;
  selection.cold_records = f.warm_only            ? ColdRecords::None
                           : f.cold_streamed_only ? ColdRecords::StreamedWeights
                                                  : ColdRecords::All;
  Dataset data = f.speed_classes
                     ? measured_by_speed(store, hosts, selection, excluded)
                     : best_measured(store, hosts, f.per_task, excluded, selection.cold_records);
  f.train.options.speed_prompt = f.speed_classes;
  if (data.sentences.empty())
    throw Error("train finetune: no measured schedules in '" + f.db + "'");
  f.train.options.data_path = f.train.options.run_dir + "/finetune.bin";
  write_dataset(f.train.options.data_path, data);
  std::printf("%zu measured schedules -> %s (hash %s)\n", data.sentences.size(),
              f.train.options.data_path.c_str(), data.hash.c_str());
  for (const auto& host : hosts) {
    bool weighted = host.fingerprint() == selection.emphasized_host && f.host_copies > 1;
    std::string copies = weighted ? " (this host, x" + std::to_string(f.host_copies) + ")" : "";
    std::printf("  records of %s%s\n", host.fingerprint().c_str(), copies.c_str());
  }
  run_train(f.train, command);
}

struct GenFlags {
  std::string task, model, models_dir = "models";
  GenerateOptions options;
  bool measure = false;
};

// Builds, verifies and times each generated schedule in a worker; prints each result and
// the build and measurement time apart from the model's.
void measure_generated(const TaskSpec& task, const std::vector<Generated>& results,
                       const std::string& exe) {
  MeasureOptions options;
  options.worker_command = exe;
  Measurer measurer(options);
  double build_ms = 0, measure_ms = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    auto start = std::chrono::steady_clock::now();
    MeasureResult m =
        measurer.measure_each(task, {{KernelMethod::Space, results[i].decisions}}).at(0);
    double total_ms = ms_since(start);
    build_ms += m.build_ms;
    measure_ms += total_ms - m.build_ms;
    std::printf("  #%zu %s: median %.4f ms, min %.4f ms\n", i + 1, status_name(m.status).c_str(),
                m.timing.median_ms, m.timing.min_ms);
  }
  std::fprintf(stderr, "build %.1f ms, measurement %.1f ms (%zu schedules)\n", build_ms, measure_ms,
               results.size());
}

void run_gen(const GenFlags& f, const std::string& exe) {
  TaskSpec task = parse_task_spec(f.task);
  auto start = std::chrono::steady_clock::now();
  Hardware hardware = detect_hardware();
  auto model = ScheduleModel::load(resolve_model(f.model, f.models_dir, hardware.fingerprint()));
  double load_ms = ms_since(start);
  start = std::chrono::steady_clock::now();
  auto results = model->generate(task, hardware, f.options);
  double generate_ms = ms_since(start);
  for (const auto& g : results) {
    std::vector<std::string> values;
    for (int64_t v : g.decisions) values.push_back(std::to_string(v));
    std::printf("%s  log_prob %.3f\n", join(values, ",").c_str(), g.log_prob);
  }
  std::fprintf(stderr,
               "model %s (%lld parameters): load %.1f ms, generation %.1f ms (%.2f ms per "
               "schedule)\n",
               model->info().id.c_str(), (long long)model->parameter_count(), load_ms, generate_ms,
               generate_ms / std::max<size_t>(1, results.size()));
  if (f.measure) measure_generated(task, results, exe);
}

// Options every training command shares.
void add_training_options(CLI::App* cmd, TrainFlags& f) {
  TrainOptions& o = f.options;
  cmd->add_option("--run", o.run_dir, "run directory (resumed if it has a state)")->required();
  cmd->add_option("--steps", o.steps, "optimizer steps in all")->check(in_range(1, 1e8));
  cmd->add_option("--batch", o.batch, "sentences per step")->check(in_range(1, 4096));
  cmd->add_option("--lr", o.learning_rate, "peak learning rate")->check(in_range(1e-9, 1));
  cmd->add_option("--save-every", o.save_every, "steps between saved states")
      ->check(in_range(1, 1e8));
  cmd->add_option("--threads", o.threads, "intra-op threads")->check(in_range(1, 256));
  cmd->add_option("--models", f.models_dir, "where checkpoints are written");
}

void add_train_commands(CLI::App& app, const std::string& command_line) {
  auto* train = app.add_subcommand("train", "train the model");
  train->require_subcommand(1);
  auto pre = std::make_shared<TrainFlags>();
  auto* pretrain = train->add_subcommand("pretrain", "next-token training on a dataset");
  pretrain->add_option("--data", pre->options.data_path, "dataset file (tlm corpus)")->required();
  pretrain->add_option("--config", pre->config_path, "model config (JSON)");
  pretrain->add_option("--init", pre->init, "checkpoint to continue from");
  add_training_options(pretrain, *pre);
  pretrain->callback([pre, command_line] {
    if (pre->config_path.empty() && pre->init.empty())
      throw Error("train pretrain: give --config (a fresh model) or --init (a checkpoint)");
    run_train(*pre, command_line);
  });
  auto fine = std::make_shared<FinetuneFlags>();
  auto* finetune = train->add_subcommand("finetune", "train a checkpoint on measured schedules");
  finetune->add_option("--db", fine->db, "record store");
  finetune->add_option("--init", fine->train.init, "checkpoint to fine-tune")->required();
  finetune
      ->add_option("--per-task", fine->per_task,
                   "schedules per task: the best 4, or with --speed-classes 64 spread over "
                   "speeds")
      ->check(in_range(1, 1e6));
  finetune
      ->add_option("--best-copies", fine->best_copies,
                   "with --speed-classes: times each task's best schedules appear")
      ->check(in_range(1, 64));
  finetune
      ->add_option("--top-copies", fine->top_copies,
                   "with --speed-classes: times each task's fastest schedule appears (when above "
                   "--best-copies)")
      ->check(in_range(1, 256));
  finetune
      ->add_option("--host-copies", fine->host_copies,
                   "with --speed-classes and --hardware all: times this host's sentences appear")
      ->check(in_range(1, 64));
  finetune->add_flag("--speed-classes", fine->speed_classes,
                     "learn from schedules of every speed, each prompt saying its speed class");
  finetune->add_flag("--model-proposals", fine->model_proposals,
                     "with --speed-classes: also every schedule a model proposed (tlm improve's "
                     "data)");
  auto* warm = finetune->add_flag("--warm-only", fine->warm_only,
                                  "warm-timed records only (a host's records timed cold, "
                                  "TLM_TIMING_COLD, are left out)");
  finetune
      ->add_flag("--cold-streamed-weights", fine->cold_streamed_only,
                 "cold-timed records only for tasks whose packed weights stream from memory "
                 "in a model (dense layers); warm ones elsewhere")
      ->excludes(warm);
  finetune
      ->add_option("--hardware", fine->hardware,
                   "whose records: all (default; each prompted with its host), this, or a "
                   "hardware fingerprint")
      ->check(fingerprint_or({"all", "this"}));
  finetune->add_option("--exclude", fine->exclude,
                       "task lists to leave out (held-out, validation; repeat the flag)");
  add_training_options(finetune, fine->train);
  finetune->callback([fine, command_line] { run_finetune(*fine, command_line); });
}

struct RegistryFlags {
  std::string models_dir = "models", id, reason = "by hand";
  std::string other;     // blend: checkpoint B
  double weight = 0.5;   // blend: B's share
  std::string hardware;  // promote/rollback for this machine only ("this": the one running)
  int64_t activation_block = -1;  // with --hardware: the layout measured faster there
};

std::string host_fingerprint(const std::string& hardware) {
  return hardware == "this" ? detect_hardware().fingerprint() : hardware;
}

void print_checkpoints(const Registry& registry) {
  for (const auto& c : registry.list()) {
    std::string marks = c.id == registry.default_id() ? " [default]" : "";
    if (c.id == registry.base_id()) marks += " [base]";
    for (const auto& [host, entry] : registry.host_defaults())
      if (entry.model == c.id) marks += " [default for " + host + "]";
    std::printf("%s%s  parent %s  data %s  %s\n", c.id.c_str(), marks.c_str(),
                c.parent.empty() ? "-" : c.parent.c_str(), c.data_hash.c_str(),
                c.metrics_json.c_str());
  }
}

void add_registry_commands(CLI::App& app, const std::string& command_line) {
  auto flags = std::make_shared<RegistryFlags>();
  auto* model = app.add_subcommand("model", "list, show, promote, roll back or blend checkpoints");
  model->require_subcommand(1);
  model->add_option("--models", flags->models_dir, "models directory");
  model->add_subcommand("list", "every checkpoint, with the default and the base marked")
      ->callback([flags] { print_checkpoints(Registry(flags->models_dir)); });
  auto* show = model->add_subcommand("show", "a checkpoint's provenance and metrics");
  show->add_option("id", flags->id, "checkpoint id")->required();
  show->callback([flags] {
    auto c = Registry(flags->models_dir).show(flags->id);
    std::printf("id %s\nparent %s\ndata %s\ncommand %s\nmetrics %s\n", c.id.c_str(),
                c.parent.c_str(), c.data_hash.c_str(), c.command.c_str(), c.metrics_json.c_str());
  });
  auto* promote = model->add_subcommand("promote", "make a checkpoint the default");
  promote->add_option("id", flags->id, "checkpoint id")->required();
  promote->add_option("--reason", flags->reason, "recorded in the history");
  promote
      ->add_option("--hardware", flags->hardware,
                   "the default of this machine only (a fingerprint, or this)")
      ->check(fingerprint_or({"this"}));
  promote
      ->add_option("--activation-block", flags->activation_block,
                   "with --hardware: the activation layout measured faster on that machine (16 "
                   "or 0), used there when its records cannot decide")
      ->check(CLI::IsMember({0, 16}));
  promote->callback([flags] {
    if (flags->hardware.empty() && flags->activation_block != -1)
      throw Error("model promote: --activation-block is a host's (give --hardware)");
    Registry registry(flags->models_dir);
    load_checkpoint(registry.path_of(flags->id));  // its content hash holds and it loads
    if (flags->hardware.empty())
      registry.promote(flags->id, flags->reason);
    else
      registry.promote_for_host(flags->id, host_fingerprint(flags->hardware), flags->reason,
                                flags->activation_block);
  });
  auto* blend = model->add_subcommand(
      "blend", "a new checkpoint between two of a common ancestor: (1 - w) A + w B, per weight");
  blend->add_option("a", flags->id, "checkpoint A (its parent becomes the blend's)")->required();
  blend->add_option("b", flags->other, "checkpoint B")->required();
  blend->add_option("--weight", flags->weight, "w, B's share")->required()->check(in_range(0, 1));
  blend->callback([flags, command_line] {
    Registry registry(flags->models_dir);
    CheckpointInfo a_info, b_info;
    Gpt a = load_checkpoint(registry.path_of(flags->id), &a_info);
    Gpt b = load_checkpoint(registry.path_of(flags->other), &b_info);
    blend_into(a, b, flags->weight);
    CheckpointInfo info;
    info.parent = a_info.id, info.command = command_line;
    info.data_hash = b_info.data_hash;
    info.metrics_json =
        nlohmann::json{{"blend_of", {a_info.id, b_info.id}}, {"weight", flags->weight}}.dump();
    std::printf("%s\n", write_checkpoint(a, info, flags->models_dir).c_str());
  });
  auto* base = model->add_subcommand("base", "mark a checkpoint as the validated base");
  base->add_option("id", flags->id, "checkpoint id")->required();
  base->add_option("--reason", flags->reason, "recorded in the history");
  base->callback([flags] { Registry(flags->models_dir).set_base(flags->id, flags->reason); });
  auto* rollback = model->add_subcommand("rollback", "make the base (or a given id) the default");
  rollback->add_option("id", flags->id, "checkpoint id (default: the validated base)");
  rollback->add_option("--reason", flags->reason, "recorded in the history");
  rollback
      ->add_option("--hardware", flags->hardware,
                   "drop this machine's own default (a fingerprint, or this): the shared "
                   "default applies to it again")
      ->check(fingerprint_or({"this"}));
  rollback->callback([flags] {
    Registry registry(flags->models_dir);
    if (flags->hardware.empty())
      registry.rollback(flags->id, flags->reason);
    else if (!flags->id.empty())
      throw Error("model rollback: --hardware drops the host's entry; give no id");
    else
      registry.rollback_host(host_fingerprint(flags->hardware), flags->reason);
  });
}

}  // namespace

void add_model_commands(CLI::App& app, const std::string& command_line, const std::string& exe) {
  auto corpus_flags = std::make_shared<CorpusFlags>();
  auto* corpus = app.add_subcommand("corpus", "write a pretraining corpus of random schedules");
  corpus->add_option("-o,--out", corpus_flags->out, "dataset file")->required();
  corpus->add_option("--per-task", corpus_flags->per_task, "random schedules per task")
      ->check(in_range(1, 1e6));
  corpus->add_option("--seed", corpus_flags->seed, "random seed")->check(seed_range());
  corpus->add_option("--exclude", corpus_flags->exclude, "held-out task list to leave out");
  corpus->callback([corpus_flags] { run_corpus(*corpus_flags); });

  add_train_commands(app, command_line);

  auto gen_flags = std::make_shared<GenFlags>();
  auto* gen = app.add_subcommand("gen", "generate schedules for a task with the model");
  gen->add_option("task", gen_flags->task, "task spec")->required();
  gen->add_option("-k", gen_flags->options.k, "schedules to write")->check(in_range(1, 256));
  gen->add_option("--model", gen_flags->model, "checkpoint folder (default: the registry's)");
  gen->add_option("--models", gen_flags->models_dir, "models directory");
  gen->add_option("--mode", gen_flags->options.mode, "beam | greedy | sample");
  gen->add_option("--seed", gen_flags->options.seed, "seed (sample)")->check(seed_range());
  gen->add_option("--temperature", gen_flags->options.temperature, "temperature (sample)")
      ->check(in_range(0.01, 100));
  gen->add_flag("--measure", gen_flags->measure,
                "build, verify and time each schedule (build and measurement time reported)");
  gen->callback([gen_flags, exe] { run_gen(*gen_flags, exe); });
  add_registry_commands(app, command_line);
}

}  // namespace tlm
