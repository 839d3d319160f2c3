// PipelineBuilder: what a task kind's Halide algorithm (TaskDef::build) writes with. It
// collects the task's inputs and stages in order and adds the output stage with the
// task's epilogue applied, so an algorithm is only its own arithmetic.
//
// Tensors are row-major; Halide dimensions are innermost first, so a row-major [m, n]
// tensor is the Halide buffer (n, m). No schedule is set here.
#pragma once
#include <Halide.h>

#include <functional>
#include <string>
#include <vector>

#include "ops/task_pipeline.h"
#include "ops/task_spec.h"

namespace tlm {

class PipelineBuilder {
 public:
  PipelineBuilder(const TaskSpec& task, int64_t weight_block, bool tables)
      : task_(task), weight_block_(weight_block), tables_(tables) {}

  const TaskSpec& task() const { return task_; }

  // A float input of the task, with its fixed row-major shape; `index_range` > 0 marks
  // indices into a dimension of that many entries (InputShape).
  Halide::ImageParam input(const std::string& name, const std::vector<int64_t>& shape,
                           int64_t index_range = 0);
  // An input whose strides are fixed too (dense row-major), for the operands of register
  // tiles (convolutions, matrix products): their loads become constant offsets.
  Halide::ImageParam dense_input(const std::string& name, const std::vector<int64_t>& shape);
  // A weight input that the space may pack in blocks of output channels along its
  // row-major dimension `channel_dim` (pack_channel_blocks); returns a Func reading it in
  // the plain index order, whichever layout the buffer has. `dense`: its strides fixed
  // too (dense_input). `in_block` > 1: packed with dim 1 split in blocks of that many too
  // (TaskShape::packable_in_block).
  Halide::Func packable_weight(const std::string& name, const std::vector<int64_t>& shape,
                               int channel_dim = 0, bool dense = true, int64_t in_block = 1);
  // Marks the packable weight for prefetching in ahead-of-time builds
  // (TaskShape::prefetch_packable).
  void prefetch_packable_weight() { pipeline_.shape.prefetch_packable = true; }
  // A vector along output loop `dim` (innermost first) stays inside one weight block
  // (TaskShape::packed_vector_dim).
  void keep_vectors_in_weight_blocks(int dim) { pipeline_.shape.packed_vector_dim = dim; }
  // Output loop `dim` (innermost first) runs over blocks of output channels
  // (TaskShape::channel_blocks_dim).
  void mark_channel_blocks(int dim) { pipeline_.shape.channel_blocks_dim = dim; }

  // Adds a stage. Its name (the Func's base name) must be one of known_stage_names().
  void add_stage(StageKind kind, Halide::Func func, const std::vector<Halide::Var>& vars,
                 const std::vector<int64_t>& extents, const std::vector<int>& output_dim,
                 const Halide::RDom& rdom = Halide::RDom(),
                 const std::vector<int64_t>& rextents = {}, bool feeds_next = false);

  // Marks the stage added last as too costly to inline (StageShape::inlinable).
  void keep_last_stage_computed() { pipeline_.shape.stages.back().inlinable = false; }

  // Adds the output stage: `value` with the task's epilogue applied; `vars` innermost
  // first, one per dim of `row_major_shape`. The schedule tiles the stage's loops as if
  // they were `tiled_shape` (default: the written shape); an output smaller than that
  // guards its stores past the written extent (a dense layer's padded columns, matmul.cpp).
  void add_output(const Halide::Expr& value, const std::vector<Halide::Var>& vars,
                  const std::vector<int64_t>& row_major_shape,
                  const std::vector<int64_t>& tiled_shape = {});

  // A small per-call table the algorithm reads (TaskPipeline::tables), e.g. a factor
  // copied into vector lanes so that it multiplies whole vectors. Only when tables() (a
  // schedule from the space: the Halide autoschedulers crash on some of them).
  bool tables() const { return tables_; }
  void add_table(Halide::Func func, int vector_width) {
    pipeline_.tables.push_back({func, vector_width});
  }
  // For tasks whose schedule is part of the algorithm (ops/winograd.h): `schedule` is
  // applied to the output instead of any schedule from the space; the space is empty.
  void schedule_itself(std::function<void(Halide::Func output)> schedule);

  void finish(double flops, int64_t reduction_length);
  TaskPipeline take() { return std::move(pipeline_); }

 private:
  Halide::Expr apply_epilogue(Halide::Expr value, const std::vector<Halide::Var>& vars,
                              const std::vector<int64_t>& row_major_shape);

  Halide::ImageParam add_input(const std::string& name, const std::vector<int64_t>& shape,
                               int64_t index_range, bool dense);

  const TaskSpec& task_;
  int64_t weight_block_;
  bool tables_;
  TaskPipeline pipeline_;
};

// Helpers the algorithms share.
std::vector<int64_t> reversed(std::vector<int64_t> v);
std::vector<int> identity_dims(size_t n);
std::vector<Halide::Var> make_vars(const std::vector<std::string>& names);

// A convolution or pooling window read from a task's parameters (n, c, h, w, r, s,
// stride, pad and, when the schema has them, pad_w and dilation), with its output size.
struct Window {
  int64_t n, c, h, w, r, s, stride, pad, pad_w, dilation, oh, ow;
};
Window read_window(const TaskSpec& t);
// The input seen through its padding (x and y shifted by it, `fill` outside), over X's
// dims; no stage.
Halide::Func padded_view(Halide::ImageParam X, const Window& win, Halide::Expr fill, int64_t block,
                         const std::string& name);
// The input seen through its padding: a Producer stage when pad > 0 (its dims follow the
// output's dims `output_dim`, -1: none), the input otherwise. `block` > 1: X is
// channel-blocked [N, C/block, H, W, block], and so is the padded view.
Halide::Func padded_input(PipelineBuilder& b, Halide::ImageParam X, const Window& win,
                          Halide::Expr fill, int64_t block = 1,
                          const std::vector<int>& output_dim = {0, 1, -1, 3});

}  // namespace tlm
