// TaskPipeline: the Halide algorithm of one task (anchor op + fused epilogue + producers).
//
// It carries no schedule: the Space Builder applies one, the Halide autoschedulers pick
// one, or `schedule_reference` computes every stage at root for verification. Stage i
// here matches stage i of the TaskShape from `describe_task`.
#pragma once
#include <Halide.h>

#include <functional>
#include <vector>

#include "ops/task_shape.h"

namespace tlm {

struct PipelineStage {
  Halide::Func func;
  std::vector<Halide::Var> vars;  // pure vars, innermost first
  Halide::RDom rdom;              // the reduction of update 0, if any
  bool has_update = false;
};

struct TaskPipeline {
  TaskShape shape;
  std::vector<Halide::ImageParam> inputs;  // same order as shape.inputs
  std::vector<PipelineStage> stages;       // same order as shape.stages
  // Set when the algorithm schedules itself (shape.fixed_schedule): applies that schedule
  // to the output and the algorithm's own inner Funcs.
  std::function<void(Halide::Func output)> own_schedule;
  // Small per-call tables the algorithm reads (PipelineBuilder::add_table): computed at
  // root, vectorized along their first dim, under a schedule from the space; inline in
  // the reference. Pipelines built for the Halide autoschedulers have none.
  struct Table {
    Halide::Func func;
    int vector_width;
  };
  std::vector<Table> tables;

  Halide::Func output() const { return stages.back().func; }
};

// `weight_block` > 1 reads the packable weight input in the packed layout of
// pack_channel_blocks (TaskPipeline::inputs then expects packed buffers).
// `tables`: the algorithm may read small per-call tables (TaskPipeline::tables); off for
// the Halide autoschedulers.
TaskPipeline build_task_pipeline(const TaskSpec& task, int64_t weight_block = 1,
                                 bool tables = true);

// The unscheduled reference: every stage computed at root (so row reductions are not
// recomputed per element), nothing else.
void schedule_reference(TaskPipeline& pipeline);

// Input and output size estimates, for the Halide autoschedulers.
void set_estimates(TaskPipeline& pipeline);

}  // namespace tlm
