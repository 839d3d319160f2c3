#include "ops/task_pipeline.h"

#include "ops/pipeline_builder.h"
#include "ops/registry.h"
#include "util/error.h"

namespace tlm {

TaskPipeline build_task_pipeline(const TaskSpec& task, int64_t weight_block, bool tables) {
  PipelineBuilder b(task, weight_block, tables);
  task_def(task.kind).build(b);
  return b.take();
}

const std::vector<std::string>& known_stage_names() {
  static const std::vector<std::string> names = {"out",    "acc",    "src",  "rowmax",
                                                 "rowsum", "rowvar", "rowsq"};
  return names;
}

TaskShape describe_task(const TaskSpec& task) {
  return build_task_pipeline(task).shape;
}

std::vector<int64_t> packed_shape(const std::vector<int64_t>& shape, int64_t block, int dim,
                                  int64_t in_block) {
  std::vector<int64_t> packed = {shape.at(size_t(dim)) / block};
  for (size_t d = 0; d < shape.size(); ++d)
    if (int(d) != dim) packed.push_back(shape[d]);
  if (in_block > 1) {
    packed[1] /= in_block;
    packed.push_back(in_block);
  }
  packed.push_back(block);
  return packed;
}

namespace {

// [K,C,rest...] -> [K/b, C/bi, rest..., bi, b] (pack_channel_blocks with an input block).
std::vector<float> pack_both_channel_blocks(const std::vector<float>& data,
                                            const std::vector<int64_t>& shape, int64_t block,
                                            int64_t in_block) {
  int64_t k_count = shape.at(0), c_count = shape.at(1), rest = 1;
  for (size_t d = 2; d < shape.size(); ++d) rest *= shape[d];
  std::vector<float> packed(data.size());
  for (int64_t k = 0; k < k_count; ++k)
    for (int64_t c = 0; c < c_count; ++c)
      for (int64_t i = 0; i < rest; ++i) {
        int64_t outer = ((k / block) * (c_count / in_block) + c / in_block) * rest + i;
        packed[(outer * in_block + c % in_block) * block + k % block] =
            data[(k * c_count + c) * rest + i];
      }
  return packed;
}

}  // namespace

std::vector<float> pack_channel_blocks(const std::vector<float>& data,
                                       const std::vector<int64_t>& shape, int64_t block, int dim,
                                       int64_t in_block) {
  if (in_block > 1) {
    if (dim != 0 || shape.size() < 2 || shape[1] % in_block)
      throw Error("pack_channel_blocks: an input block needs [K, C, ...] with C divisible by it");
    return pack_both_channel_blocks(data, shape, block, in_block);
  }
  int64_t outer = 1, inner = 1, channels = shape.at(size_t(dim));
  for (size_t d = 0; d < shape.size(); ++d)
    (int(d) < dim ? outer : inner) *= int(d) == dim ? 1 : shape[d];
  int64_t rest = outer * inner;
  std::vector<float> packed(data.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i)
        packed[((c / block) * rest + o * inner + i) * block + c % block] =
            data[(o * channels + c) * inner + i];
  return packed;
}

void schedule_reference(TaskPipeline& pipeline) {
  for (auto& stage : pipeline.stages) {
    stage.func.compute_root();
    if (!stage.has_update || stage.vars.empty()) continue;
    // Pure loops inside the reduction: the same summation order per element, but a
    // streaming access pattern, so references of large tasks take seconds, not minutes.
    std::vector<Halide::VarOrRVar> order;
    for (auto& v : stage.vars) order.emplace_back(v);
    for (int i = 0; i < stage.rdom.dimensions(); ++i) order.emplace_back(stage.rdom[i]);
    stage.func.update().reorder(order);
  }
}

void set_estimates(TaskPipeline& pipeline) {
  auto region_of = [](const std::vector<int64_t>& row_major) {
    Halide::Region region;
    for (auto e = row_major.rbegin(); e != row_major.rend(); ++e)
      region.emplace_back(0, static_cast<int>(*e));
    return region;
  };
  for (size_t i = 0; i < pipeline.inputs.size(); ++i)
    pipeline.inputs[i].set_estimates(region_of(pipeline.shape.inputs[i].shape));
  pipeline.output().set_estimates(region_of(pipeline.shape.output_shape));
}

}  // namespace tlm
