#include "runtime/runtime.h"

#include <HalideRuntime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "runtime/float_mode.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"
#include "runtime/spin_pool.h"
#include "util/error.h"
#include "util/shape.h"

namespace tlm {
namespace {

// weights.bin, checked against the plan's record: its size before reading, its content after.
AlignedFloats read_weights(const std::string& dir, const Plan& plan) {
  std::string path = dir + "/weights.bin";
  int64_t bytes = regular_file_size(path);
  check_artifact_file(dir, plan, {"weights.bin", bytes, ""});
  AlignedFloats w(size_t(bytes) / sizeof(float));
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(w.data()), std::streamsize(w.size() * sizeof(float))))
    throw Error("cannot read '" + path + "'");
  check_artifact_file(dir, plan,
                      describe_bytes("weights.bin", reinterpret_cast<const char*>(w.data()),
                                     w.size() * sizeof(float)));
  return w;
}

// A halide_buffer_t over a dense row-major tensor (Halide's dimension 0 is the innermost).
struct Buffer {
  halide_buffer_t buffer{};
  std::vector<halide_dimension_t> dims;

  Buffer(float* data, const std::vector<int64_t>& shape) : dims(shape.size()) {
    int32_t stride = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      int32_t extent = int32_t(shape[shape.size() - 1 - d]);
      dims[d] = halide_dimension_t(0, extent, stride);
      stride *= extent;
    }
    buffer.host = reinterpret_cast<uint8_t*>(data);
    buffer.type = halide_type_t(halide_type_float, 32);
    buffer.dimensions = int32_t(shape.size());
    buffer.dim = dims.data();
  }
};

void transpose(const float* in, float* out, const std::vector<int64_t>& shape,
               const std::vector<int64_t>& perm) {
  size_t dims = shape.size();
  std::vector<int64_t> stride(dims, 1), out_shape(dims), index(dims, 0);
  for (size_t d = dims - 1; d-- > 0;) stride[d] = stride[d + 1] * shape[d + 1];
  for (size_t d = 0; d < dims; ++d) out_shape[d] = shape[perm[d]];
  for (int64_t o = 0, n = element_count(shape); o < n; ++o) {
    int64_t from = 0;
    for (size_t d = 0; d < dims; ++d) from += index[d] * stride[perm[d]];
    out[o] = in[from];
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

// Halide's runtime reports errors through this handler instead of aborting the process.
thread_local std::string last_kernel_error;
void record_kernel_error(void*, const char* message) {
  last_kernel_error = message;
  while (!last_kernel_error.empty() && last_kernel_error.back() == '\n')
    last_kernel_error.pop_back();
}

}  // namespace

std::unique_ptr<CompiledModel> CompiledModel::load(const std::string& dir,
                                                   const std::string& this_hardware) {
  std::unique_ptr<CompiledModel> m(new CompiledModel());
  m->plan_ = read_plan(dir + "/plan.json");
  if (!this_hardware.empty() && this_hardware != m->plan_.hardware)
    throw Error("'" + dir + "' was compiled for " + m->plan_.hardware + ", this machine is " +
                this_hardware + " (--any-hardware runs it anyway)");
  check_artifact_file(dir, m->plan_, describe_file(dir, "model.so"));  // before dlopen runs it
  m->weights_ = read_weights(dir, m->plan_);
  check_plan(m->plan_, m->weights_.size());
  check_memory_plan(m->plan_);
  m->library_ = dlopen((dir + "/model.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->library_) throw Error("cannot load '" + dir + "/model.so': " + dlerror());
  using SetHandler = halide_error_handler_t (*)(halide_error_handler_t);
  if (auto set = reinterpret_cast<SetHandler>(dlsym(m->library_, "halide_set_error_handler")))
    set(record_kernel_error);
  // Parallel loops on the pool that stays warm across steps (TLM_POOL=halide: Halide's).
  using SetParFor = halide_do_par_for_t (*)(halide_do_par_for_t);
  auto set_par_for =
      reinterpret_cast<SetParFor>(dlsym(m->library_, "halide_set_custom_do_par_for"));
  if (set_par_for && !halide_pool_asked()) set_par_for(spin_pool_do_par_for);
  for (const auto& step : m->plan_.steps) {
    int (*fn)(void**) = nullptr;
    if (step.kind == StepKind::Kernel) {
      fn = reinterpret_cast<int (*)(void**)>(dlsym(m->library_, (step.function + "_argv").c_str()));
      if (!fn) throw Error("compiled model lacks kernel '" + step.function + "'");
    }
    m->functions_.push_back(fn);
  }
  m->input_slot_.assign(m->plan_.tensors.size(), -1);
  for (size_t i = 0; i < m->plan_.inputs.size(); ++i) m->input_slot_[m->plan_.inputs[i]] = int(i);
  // An activation the plan outputs is computed straight into the caller's buffer (the
  // first, when it is output twice); other outputs are copied after the last step.
  m->output_slot_.assign(m->plan_.tensors.size(), -1);
  for (size_t o = 0; o < m->plan_.outputs.size(); ++o) {
    int t = m->plan_.outputs[o];
    if (lives_in_caller_buffer(m->plan_, t) && m->output_slot_[t] < 0) m->output_slot_[t] = int(o);
  }
  m->give_back(std::make_unique<Arena>(size_t(m->plan_.arena_floats), 0.0f));
  return m;
}

CompiledModel::~CompiledModel() {
  if (library_) dlclose(library_);
}

float* CompiledModel::data(int tensor, const RunMemory& memory) const {
  const PlanTensor& t = plan_.tensors[tensor];
  if (t.kind == TensorKind::View) return data(t.view_of, memory);
  int64_t skip = t.sliced ? memory.slice * (element_count(t.shape) / plan_.slices) : 0;
  if (t.kind == TensorKind::Activation)
    return skip + (output_slot_[tensor] >= 0 ? memory.outputs[output_slot_[tensor]]
                                             : memory.arena + t.arena_offset);
  // Weights and inputs are only read: no step writes them (plan_check.h).
  if (t.kind == TensorKind::Weight) return const_cast<float*>(weights_.data()) + t.weight_offset;
  return const_cast<float*>(memory.inputs[input_slot_[tensor]]) + skip;
}

void CompiledModel::run_step(const PlanStep& step, const RunMemory& memory) const {
  if (step.kind == StepKind::Transpose) {
    transpose(data(step.inputs[0], memory), data(step.output, memory),
              plan_.tensors[step.inputs[0]].shape, step.perm);
    return;
  }
  std::vector<Buffer> buffers;
  buffers.reserve(step.inputs.size() + 1);
  for (size_t k = 0; k < step.inputs.size(); ++k)
    buffers.emplace_back(data(step.inputs[k], memory), step.shapes[k]);
  buffers.emplace_back(data(step.output, memory), step.shapes.back());
  std::vector<void*> args;
  for (auto& b : buffers) args.push_back(&b.buffer);
  size_t index = &step - plan_.steps.data();
  last_kernel_error.clear();
  if (functions_[index](args.data()) != 0)
    throw Error("kernel " + step.function + " (" + step.task + ") failed: " + last_kernel_error);
}

void CompiledModel::run_timed(const PlanStep& step, const RunMemory& memory,
                              std::vector<StepTiming>* timings, StepRepeat repeat) const {
  if (timings && repeat == StepRepeat::Twice) run_step(step, memory);
  auto start = std::chrono::steady_clock::now();
  run_step(step, memory);
  if (!timings) return;
  std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
  timings->push_back(
      {step.kind == StepKind::Kernel ? step.task : step_kind_name(step.kind), ms.count()});
}

std::unique_ptr<CompiledModel::Arena> CompiledModel::take_arena() const {
  {
    std::lock_guard<std::mutex> lock(arenas_mutex_);
    if (!idle_arenas_.empty()) {
      auto arena = std::move(idle_arenas_.back());
      idle_arenas_.pop_back();
      return arena;
    }
  }
  return std::make_unique<Arena>(size_t(plan_.arena_floats), 0.0f);
}

void CompiledModel::give_back(std::unique_ptr<Arena> arena) const {
  std::lock_guard<std::mutex> lock(arenas_mutex_);
  idle_arenas_.push_back(std::move(arena));
}

void CompiledModel::run(const float* const* inputs, float* const* outputs,
                        std::vector<StepTiming>* timings, StepRepeat repeat) const {
  struct Lease {  // this run's arena, back to the pool when the run ends or throws
    const CompiledModel& model;
    std::unique_ptr<Arena> arena;
    ~Lease() { model.give_back(std::move(arena)); }
  } lease{*this, take_arena()};
  FlushDenormals flush;  // float_mode.h
  RunMemory memory{lease.arena->data(), inputs, outputs};
  size_t per_image = size_t(plan_.sliced_steps);
  for (memory.slice = 0; memory.slice < plan_.slices && per_image > 0; ++memory.slice)
    for (size_t s = 0; s < per_image; ++s) run_timed(plan_.steps[s], memory, timings, repeat);
  memory.slice = 0;
  for (size_t s = per_image; s < plan_.steps.size(); ++s)
    run_timed(plan_.steps[s], memory, timings, repeat);
  for (size_t o = 0; o < plan_.outputs.size(); ++o) {
    int t = plan_.outputs[o];
    if (output_slot_[t] == int(o)) continue;  // computed in place
    const float* d = data(t, memory);
    std::copy(d, d + element_count(plan_.tensors[t].shape), outputs[o]);
  }
}

std::vector<std::vector<float>> CompiledModel::output_buffers() const {
  std::vector<std::vector<float>> outputs;
  for (int t : plan_.outputs) outputs.emplace_back(size_t(element_count(plan_.tensors[t].shape)));
  return outputs;
}

std::vector<std::vector<float>> CompiledModel::run(const std::vector<std::vector<float>>& inputs,
                                                   std::vector<StepTiming>* timings) const {
  std::vector<std::vector<float>> outputs = output_buffers();
  run(inputs, outputs, timings);
  return outputs;
}

void CompiledModel::run(const std::vector<std::vector<float>>& inputs,
                        std::vector<std::vector<float>>& outputs, std::vector<StepTiming>* timings,
                        StepRepeat repeat) const {
  if (inputs.size() != plan_.inputs.size())
    throw Error("the model takes " + std::to_string(plan_.inputs.size()) + " inputs");
  std::vector<const float*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    size_t wanted = size_t(element_count(plan_.tensors[plan_.inputs[i]].shape));
    if (inputs[i].size() != wanted)
      throw Error("input " + std::to_string(i) + " has " + std::to_string(inputs[i].size()) +
                  " values, the model wants " + std::to_string(wanted));
    in.push_back(inputs[i].data());
  }
  if (outputs.size() != plan_.outputs.size())
    throw Error("the model gives " + std::to_string(plan_.outputs.size()) + " outputs");
  std::vector<float*> out;
  for (size_t o = 0; o < outputs.size(); ++o) {
    size_t wanted = size_t(element_count(plan_.tensors[plan_.outputs[o]].shape));
    if (outputs[o].size() != wanted)
      throw Error("output buffer " + std::to_string(o) + " holds " +
                  std::to_string(outputs[o].size()) + " values, the output has " +
                  std::to_string(wanted));
    out.push_back(outputs[o].data());
  }
  run(in.data(), out.data(), timings, repeat);
}

size_t CompiledModel::memory_bytes() const {
  int64_t floats = int64_t(weights_.size()) + plan_.arena_floats;
  for (int t : plan_.inputs) floats += element_count(plan_.tensors[t].shape);
  return size_t(floats) * sizeof(float);
}

}  // namespace tlm
