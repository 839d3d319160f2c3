#include "compiler/compile.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "compiler/in_place.h"
#include "compiler/layout_choice.h"
#include "graph/batch_split.h"
#include "graph/partition.h"
#include "graph/rewrites.h"
#include "measure/kernel.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"
#include "search/task_scheduler.h"
#include "space/schedule_space.h"
#include "util/aligned.h"
#include "util/error.h"

namespace tlm {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The name of task i's kernel in model.so.
std::string task_function(size_t i) {
  return "tlm_task" + std::to_string(i);
}

// The schedule a task gets under the strategy, and the name of how it was chosen.
PlanTask choose_schedule(const TaskUse& use, const CompileOptions& o, const RecordStore* store,
                         ScheduleModel* model, const Hardware& machine) {
  TaskSpec task = parse_task_spec(use.spec);
  PlanTask t{use.spec, "", "", {}, 1, use.count};
  if (describe_task(task).fixed_schedule) {  // its algorithm's own (ops/winograd.h)
    t.strategy = "fixed";
    return t;
  }
  bool any = o.strategy == Strategy::Auto;
  if (store && (any || o.strategy == Strategy::Store))
    if (auto best = fastest_legal(*store, use.spec, o.hardware)) {
      t.strategy = "store", t.decisions = best->decisions;
      return t;
    }
  if (model && (any || o.strategy == Strategy::Tlm)) {
    t.strategy = "tlm", t.checkpoint = model->info().id;
    t.decisions = model->top_one(task, machine);
    return t;
  }
  if (o.strategy == Strategy::Store || o.strategy == Strategy::Tlm)
    throw Error("compile: strategy '" + strategy_name(o.strategy) + "' has no schedule for " +
                use.spec);
  t.strategy = strategy_name(any ? Strategy::Mullapudi2016 : o.strategy);
  return t;
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"auto",      "store",     "tlm",
                                                 "reference", "adams2019", "mullapudi2016"};
  return names;
}

void make_folder(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw Error("compile: cannot create folder '" + path + "': " + error.message());
}

// Builds every distinct task's kernel into <out>/obj and links them into model.so.
void build_library(const Partition& p, std::vector<PlanTask>& tasks, const std::string& out,
                   bool progress) {
  std::string obj = out + "/obj";
  make_folder(obj);
  std::string objects;
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::string path = obj + "/task" + std::to_string(i) + ".o";
    try {
      tasks[i].weight_block = compile_task_object(
          parse_task_spec(p.tasks[i].spec), plan_task_candidate(tasks[i]), path, task_function(i));
    } catch (const std::exception& e) {
      throw Error("compile: task " + p.tasks[i].spec + ": " + e.what());
    }
    objects += " " + path;
    if (progress) std::fprintf(stderr, "\r  kernels: %zu/%zu built   ", i + 1, tasks.size());
  }
  if (progress) std::fprintf(stderr, "\n");
  compile_runtime_object(obj + "/runtime.o");
  std::string link = "c++ -shared -o " + out + "/model.so" + objects + " " + obj +
                     "/runtime.o -lpthread -ldl 2>&1";
  if (std::system(link.c_str()) != 0) throw Error("compile: linking model.so failed");
}

struct PlanBuilder {
  const Graph& g;
  Plan plan;
  std::vector<float> weights;
  // How steps read each weight tensor: the (block, input block) pairs kernels read it
  // packed in, and whether some step reads it plain (filled before the steps are made).
  std::map<int, std::set<std::pair<int64_t, int64_t>>> packed_reads;
  std::set<int> plain_reads;
  // (weight, block, input block) -> the tensor holding it packed so
  std::map<std::tuple<int, int64_t, int64_t>, int> packed;

  void add_tensors(const Weights& w) {
    for (size_t t = 0; t < g.tensors().size(); ++t) {
      const GraphTensor& gt = g.tensors()[t];
      PlanTensor pt{gt.name, gt.shape, TensorKind::Fused, -1, 0, 0, dtype_name(gt.dtype)};
      if (gt.producer < 0) pt.kind = gt.constant ? TensorKind::Weight : TensorKind::Input;
      if (gt.constant) {
        const auto& values = w.at(int(t));
        pt.weight_offset = reserve_weight(values.size());
        std::copy(values.begin(), values.end(), weights.begin() + pt.weight_offset);
      }
      plan.tensors.push_back(pt);
    }
  }

  // Room for `floats` more weight values at the next cache line (util/aligned.h); their offset.
  int64_t reserve_weight(size_t floats) {
    int64_t offset = round_up_to_cache_line(int64_t(weights.size()));
    weights.resize(size_t(offset) + floats);
    return offset;
  }

  // The tensor a kernel reads weight `tensor` from, packed in blocks of `block` along
  // its dimension `dim` (and of `in_block` input channels, pack_channel_blocks): the weight
  // itself, repacked in place, when that is its only use; otherwise a packed copy appended
  // to the weights (packed once per block).
  int pack_weight(int tensor, int64_t block, int dim, int64_t in_block) {
    auto key = std::make_tuple(tensor, block, in_block);
    if (auto found = packed.find(key); found != packed.end()) return found->second;
    PlanTensor t = plan.tensors[tensor];
    const float* values = weights.data() + t.weight_offset;
    std::vector<float> data = pack_channel_blocks(
        std::vector<float>(values, values + element_count(t.shape)), t.shape, block, dim, in_block);
    t.shape = packed_shape(t.shape, block, dim, in_block);
    int target = tensor;
    if (plain_reads.count(tensor) || packed_reads[tensor].size() > 1) {
      t.name += ".packed" + std::to_string(block);
      if (in_block > 1) t.name += "x" + std::to_string(in_block);
      t.weight_offset = reserve_weight(data.size());
      target = int(plan.tensors.size());
      plan.tensors.push_back(t);
    } else {
      plan.tensors[tensor] = t;
    }
    std::copy(data.begin(), data.end(), weights.begin() + t.weight_offset);
    packed[key] = target;
    return target;
  }

  // Records how each step reads the weights (pack_weight decides in place or a copy).
  void note_weight_reads(const Partition& p, const std::vector<TaskShape>& shapes) {
    for (size_t i = 0; i < p.tasks.size(); ++i)
      for (const auto& o : p.tasks[i].occurrences)
        for (size_t k = 0; k < o.inputs.size(); ++k) {
          if (plan.tensors[o.inputs[k]].kind != TensorKind::Weight) continue;
          if (int(k) == shapes[i].packable_input && plan.tasks[i].weight_block > 1)
            packed_reads[o.inputs[k]].insert(
                {plan.tasks[i].weight_block, shapes[i].packable_in_block});
          else
            plain_reads.insert(o.inputs[k]);
        }
    for (const Node& n : g.nodes())
      for (int input : n.inputs)
        if (op_def(n.op).role == OpRole::Copy && plan.tensors[input].kind == TensorKind::Weight)
          plain_reads.insert(input);
  }
};

// Steps in an order where every step's inputs exist before it runs (after `before`).
std::vector<PlanStep> dependency_order(std::vector<PlanStep> steps, const Plan& plan,
                                       const std::vector<PlanStep>& before = {}) {
  std::vector<bool> ready(plan.tensors.size(), false);
  for (size_t t = 0; t < plan.tensors.size(); ++t)
    ready[t] =
        plan.tensors[t].kind == TensorKind::Input || plan.tensors[t].kind == TensorKind::Weight;
  for (const auto& step : before) ready[step.output] = true;
  auto available = [&](int t) {
    while (plan.tensors[t].kind == TensorKind::View) t = plan.tensors[t].view_of;
    return bool(ready[t]);
  };
  std::vector<PlanStep> ordered;
  while (!steps.empty()) {
    size_t before = steps.size();
    for (size_t i = 0; i < steps.size();) {
      bool go = true;
      for (int t : steps[i].inputs) go = go && available(t);
      if (!go) {
        ++i;
        continue;
      }
      ready[steps[i].output] = true;
      ordered.push_back(steps[i]);
      steps.erase(steps.begin() + long(i));
    }
    if (steps.size() == before) throw Error("compile: the steps have a cycle");
  }
  return ordered;
}

std::vector<PlanStep> make_steps(const Graph& g, const Partition& p, PlanBuilder& b) {
  // (a copy no task expresses is a layout step, below)
  std::vector<TaskShape> shapes;
  for (const auto& task : p.tasks) shapes.push_back(describe_task(parse_task_spec(task.spec)));
  b.note_weight_reads(p, shapes);
  std::vector<PlanStep> steps;
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const TaskShape& shape = shapes[i];
    int64_t block = b.plan.tasks[i].weight_block;
    for (auto o : p.tasks[i].occurrences) {
      if (o.inputs.size() != shape.inputs.size())
        throw Error("compile: task " + p.tasks[i].spec + " reads " +
                    std::to_string(shape.inputs.size()) + " tensors, the graph gives " +
                    std::to_string(o.inputs.size()));
      std::vector<std::vector<int64_t>> step_shapes;
      for (const auto& input : shape.inputs) step_shapes.push_back(input.shape);
      if (block > 1 && shape.packable_input >= 0) {
        int& weight = o.inputs[size_t(shape.packable_input)];
        if (b.plan.tensors[weight].kind != TensorKind::Weight)
          throw Error("compile: task " + p.tasks[i].spec + " packs input " +
                      std::to_string(shape.packable_input) + ", which is not a constant");
        weight = b.pack_weight(weight, block, shape.packable_dim, shape.packable_in_block);
        step_shapes[size_t(shape.packable_input)] = b.plan.tensors[weight].shape;
      }
      b.plan.tensors[o.output].kind = TensorKind::Activation;
      step_shapes.push_back(shape.output_shape);
      steps.push_back({StepKind::Kernel,
                       task_function(i),
                       p.tasks[i].spec,
                       o.inputs,
                       o.output,
                       {},
                       step_shapes});
    }
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    OpRole role = op_def(n.op).role;
    if (role == OpRole::View) {
      b.plan.tensors[n.output].kind = TensorKind::View;
      b.plan.tensors[n.output].view_of = n.inputs[0];
    }
    if (role != OpRole::Copy || p.node_task[i] >= 0) continue;
    b.plan.tensors[n.output].kind = TensorKind::Activation;
    steps.push_back({StepKind::Transpose, "", "", {n.inputs[0]}, n.output, n.attrs.at("perm"), {}});
  }
  return steps;
}

// Marks the tensors the first `per_image_steps` steps read or write whole-batch (the
// per-image graph's inputs and outputs) as sliced and gives the others one image's shape.
void mark_slices(Plan& plan, const BatchSplit& split, size_t per_image_steps) {
  const Graph& g = split.per_image;
  std::map<int, int> per_image;  // full tensor -> per-image tensor
  for (size_t t = 0; t < split.full_tensor.size(); ++t) per_image[split.full_tensor[t]] = int(t);
  std::set<int> whole;
  for (int t : g.inputs()) whole.insert(split.full_tensor[size_t(t)]);
  for (int t : g.outputs()) whole.insert(split.full_tensor[size_t(t)]);
  for (size_t s = 0; s < per_image_steps; ++s) {
    std::vector<int> touched = plan.steps[s].inputs;
    touched.push_back(plan.steps[s].output);
    for (int t : touched) {
      PlanTensor& tensor = plan.tensors[size_t(t)];
      if (tensor.kind == TensorKind::Weight) continue;
      if (whole.count(t))
        tensor.sliced = true;
      else
        tensor.shape = g.shape(per_image.at(t));
    }
  }
  plan.slices = split.batch;
  plan.sliced_steps = int(per_image_steps);
}

// Each layout's batch split, its per-image tasks put first in the layout's partition, so
// measuring and pricing the layouts see the tasks that will run.
struct SplitLayout {
  BatchSplit split;
  size_t per_image_tasks = 0;
};
// The batch split of each candidate from `splits.size()` on, appended to `splits`.
void split_batches(std::vector<LayoutCandidate>& candidates, bool enabled,
                   std::vector<SplitLayout>& splits) {
  size_t from = splits.size();
  splits.resize(candidates.size());
  for (size_t i = from; i < candidates.size(); ++i) {
    SplitLayout& s = splits[i];
    s.split.why = "off";
    if (!enabled) continue;
    s.split = plan_batch_split(candidates[i].prepared.graph, candidates[i].partition);
    if (s.split.batch > 1)
      s.per_image_tasks = put_per_image_tasks_first(candidates[i].partition, s.split);
  }
}

// Every task of the layouts, each once (for measuring them all before choosing); those
// only fused candidates run when `fused`.
std::vector<TaskUse> tasks_of(const std::vector<LayoutCandidate>& candidates, bool fused) {
  std::vector<TaskUse> tasks;
  std::set<std::string> seen;
  for (const auto& c : candidates)
    if (fused || c.fused_chains == 0)
      for (const auto& use : c.partition.tasks)
        if (seen.insert(use.spec).second) tasks.push_back(use);
  return tasks;
}

}  // namespace

Candidate plan_task_candidate(const PlanTask& task) {
  if (task.strategy == "fixed") return {KernelMethod::Space, {}};
  if (task.decisions.empty()) return {kernel_method_named(task.strategy), {}};
  return {KernelMethod::Space, task.decisions};
}

const std::string& strategy_name(Strategy strategy) {
  return strategy_names().at(size_t(strategy));
}

Strategy strategy_named(const std::string& name) {
  for (size_t i = 0; i < strategy_names().size(); ++i)
    if (strategy_names()[i] == name) return Strategy(i);
  throw Error("unknown strategy '" + name + "' (auto|store|tlm|reference|adams2019|mullapudi2016)");
}

Plan compile_model(const Graph& graph, const Weights& weights, const CompileOptions& o,
                   RecordStore* store, ScheduleModel* model, Measurer* measurer) {
  auto start = std::chrono::steady_clock::now();
  auto candidates =
      layout_candidates(graph, weights, o.activation_block, o.winograd, o.host_activation_block,
                        o.fuse_depthwise != DepthwiseFusion::Never);
  const auto& unsupported = candidates.front().partition.unsupported;
  if (!unsupported.empty())
    throw Error("compile: " + std::to_string(unsupported.size()) +
                " nodes have no task yet, e.g. " + unsupported.front());
  std::vector<SplitLayout> splits;
  split_batches(candidates, o.batch_split, splits);
  double graph_seconds = seconds_since(start);
  double measure_seconds = 0;
  if (o.trials_per_task > 0) {
    if (!store || !measurer) throw Error("compile: measuring candidates needs a record store");
    TaskTuneOptions tune{o.trials_per_task, 8, o.hardware, o.progress};
    bool fused = o.fuse_depthwise == DepthwiseFusion::Measure;
    measure_seconds =
        tune_tasks(tasks_of(candidates, fused), *measurer, *store, model, tune).seconds;
  }
  if (store && add_measured_fusion(candidates, *store, o.hardware) > 0)
    split_batches(candidates, o.batch_split, splits);
  LayoutChoice layout = choose_layout(candidates, store, o.hardware);
  if (o.progress) std::fprintf(stderr, "activation layout: %s\n", layout.reason.c_str());
  WeightedGraph folded = std::move(candidates[layout.candidate].prepared);
  Partition p = std::move(candidates[layout.candidate].partition);
  candidates.clear();
  BatchSplit split = std::move(splits[layout.candidate].split);
  size_t per_image_tasks = splits[layout.candidate].per_image_tasks;
  if (o.progress) std::fprintf(stderr, "batch split: %s\n", split.why.c_str());
  PlanBuilder b{folded.graph, {}, {}, {}, {}, {}};
  b.plan.model = graph.name();
  b.plan.hardware = o.hardware;
  b.plan.layout = layout.reason;
  start = std::chrono::steady_clock::now();
  Hardware machine = model ? hardware_named(o.hardware) : detect_hardware();
  for (const auto& use : p.tasks)
    b.plan.tasks.push_back(choose_schedule(use, o, store, model, machine));
  double schedule_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  make_folder(o.out_dir);
  build_library(p, b.plan.tasks, o.out_dir, o.progress);
  double build_seconds = seconds_since(start);
  b.add_tensors(folded.weights);
  auto steps = make_steps(folded.graph, p, b);
  size_t per_image_steps = 0;  // make_steps lists them first, task by task
  for (size_t i = 0; i < per_image_tasks; ++i) per_image_steps += p.tasks[i].occurrences.size();
  b.plan.steps = dependency_order({steps.begin(), steps.begin() + long(per_image_steps)}, b.plan);
  auto later =
      dependency_order({steps.begin() + long(per_image_steps), steps.end()}, b.plan, b.plan.steps);
  b.plan.steps.insert(b.plan.steps.end(), later.begin(), later.end());
  if (per_image_steps > 0) mark_slices(b.plan, split, per_image_steps);
  if (o.in_place) {
    std::map<std::string, int> operands;  // kernel -> the input it may store over
    for (size_t i = 0; i < b.plan.tasks.size(); ++i)
      operands[task_function(i)] = in_place_operand(b.plan.tasks[i]);
    int made = write_in_place(b.plan, operands);
    if (o.progress) std::fprintf(stderr, "in place: %d steps store over their operand\n", made);
  }
  b.plan.inputs = folded.graph.inputs();
  b.plan.outputs = folded.graph.outputs();
  for (size_t i = 0; i < b.plan.outputs.size(); ++i)
    b.plan.tensors[b.plan.outputs[i]].name = folded.graph.output_names()[i];
  plan_memory(b.plan);
  b.plan.compile_seconds = {{"graph", graph_seconds},
                            {"schedule", schedule_seconds},
                            {"build", build_seconds},
                            {"measure", measure_seconds}};
  std::ofstream out(o.out_dir + "/weights.bin", std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.weights.data()),
            std::streamsize(b.weights.size() * sizeof(float)));
  out.close();
  if (!out) throw Error("compile: cannot write weights.bin");
  b.plan.files = {describe_file(o.out_dir, "model.so"),
                  describe_bytes("weights.bin", reinterpret_cast<const char*>(b.weights.data()),
                                 b.weights.size() * sizeof(float))};
  write_plan(o.out_dir + "/plan.json", b.plan);
  return b.plan;
}

}  // namespace tlm
