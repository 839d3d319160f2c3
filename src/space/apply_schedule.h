// apply_schedule: turns a decoded Schedule into Halide scheduling calls on a task's
// pipeline. Every Schedule the space decodes is legal: it compiles, and the pipeline
// computes the reference result up to floating-point reassociation.
#pragma once
#include "ops/task_pipeline.h"
#include "space/schedule.h"

namespace tlm {

void apply_schedule(TaskPipeline& pipeline, const Schedule& schedule);

}  // namespace tlm
