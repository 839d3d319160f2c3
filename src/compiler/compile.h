// Compile: a whole model to an artifact (runtime/artifact.h).
//
//   graph -> fold batch norms -> partition into fused, deduplicated tasks
//   -> (with a trial budget) measure candidates per task, budget spent by the task scheduler
//   -> a schedule per task -> each task's kernel compiled ahead of time (Halide)
//   -> one shared library + plan (steps in dependency order) + weights (packed as the
//      kernels read them)
//
// Schedules ("strategy"): "store" takes the fastest measured schedule of the task from
// the record store; "tlm" the model's top-1; "auto" the store's when it has one, else
// the model's, else Halide's Mullapudi2016 autoscheduler (fast to run; the report says
// which each task got); "reference", "adams2019", "mullapudi2016" force one.
#pragma once
#include <string>

#include "graph/activation_layout.h"
#include "graph/graph.h"
#include "graph/weights.h"
#include "measure/measurer.h"
#include "model/schedule_model.h"
#include "runtime/artifact.h"
#include "store/record_store.h"

namespace tlm {

enum class Strategy : uint8_t { Auto, Store, Tlm, Reference, Adams2019, Mullapudi2016 };
// "auto", "store", "tlm", "reference", "adams2019", "mullapudi2016".
const std::string& strategy_name(Strategy strategy);
// Throws tlm::Error naming the known strategies for an unknown name.
Strategy strategy_named(const std::string& name);

// Which fused depthwise convolutions a compile considers. Stored: those the record store
// has measured already, at no cost (the default: the shipped model has not learned these
// tasks, so measuring them with --trials costs MobileNetV2 +50% compile time for no gain
// yet, bench/reports/depthwise_fusion_s54_zen4.txt); Measure: --trials measures them too;
// Never: every depthwise convolution stays a task of its own.
enum class DepthwiseFusion { Never, Stored, Measure };

struct CompileOptions {
  std::string out_dir;
  Strategy strategy = Strategy::Auto;
  int trials_per_task = 0;  // > 0: measure that many candidates per task first (task_scheduler.h)
  std::string hardware;     // fingerprint, for store lookups and the manifest
  bool progress = true;
  // Channels per block of activations kept blocked between convolutions (16 or 8; 0:
  // every activation NCHW), graph/activation_layout.h.
  int64_t activation_block = kAutoActivationBlock;
  // With activation_block auto: the layout this machine's registry entry names (16 or 0),
  // used when records cannot decide (compiler/layout_choice.h); auto: the rule's.
  int64_t host_activation_block = kAutoActivationBlock;
  // 3x3 convolutions (stride 1) as Winograd F(4x4) or F(2x2) where graph/rewrites.h
  // finds it pays (ops/winograd.h); false: every convolution direct.
  bool winograd = true;
  // Depthwise convolutions fused into the 1x1 convolutions that read them, as further
  // layout candidates used where measured faster (compiler/layout_choice.h).
  DepthwiseFusion fuse_depthwise = DepthwiseFusion::Stored;
  // A batched model's leading layers run image by image where graph/batch_split.h finds
  // it pays (their activations then stay cached from layer to layer); false: never.
  bool batch_split = true;
  // Residual adds stored over their operand where the schedule allows (compiler/in_place.h).
  bool in_place = true;
};

// The kernel a plan's task was built with: its schedule from the space, or the named
// strategy's own (reference, an autoscheduler).
Candidate plan_task_candidate(const PlanTask& task);

// `store`, `model` and `measurer` may be null, except that measuring (trials_per_task > 0)
// needs a store and a measurer. Throws tlm::Error naming what cannot be compiled.
Plan compile_model(const Graph& graph, const Weights& weights, const CompileOptions& options,
                   RecordStore* store, ScheduleModel* model, Measurer* measurer = nullptr);

}  // namespace tlm
