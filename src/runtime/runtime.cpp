#include "runtime/runtime.h"

#include <HalideRuntime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"
#include "runtime/spin_pool.h"
#include "util/error.h"
#include "util/shape.h"

namespace tlm {
namespace {

// weights.bin, checked against the plan's record: its size before reading, its content after.
std::vector<float> read_weights(const std::string& dir, const Plan& plan) {
  std::string path = dir + "/weights.bin";
  int64_t bytes = regular_file_size(path);
  check_artifact_file(dir, plan, {"weights.bin", bytes, ""});
  std::vector<float> w(size_t(bytes) / sizeof(float));
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
  const char* pool = std::getenv("TLM_POOL");
  auto set_par_for =
      reinterpret_cast<SetParFor>(dlsym(m->library_, "halide_set_custom_do_par_for"));
  if (set_par_for && !(pool && std::string(pool) == "halide")) set_par_for(spin_pool_do_par_for);
  for (const auto& step : m->plan_.steps) {
    int (*fn)(void**) = nullptr;
    if (step.kind == StepKind::Kernel) {
      fn = reinterpret_cast<int (*)(void**)>(dlsym(m->library_, (step.function + "_argv").c_str()));
      if (!fn) throw Error("compiled model lacks kernel '" + step.function + "'");
    }
    m->functions_.push_back(fn);
  }
  m->storage_.resize(m->plan_.tensors.size());
  for (size_t t = 0; t < m->plan_.tensors.size(); ++t)
    if (m->plan_.tensors[t].kind == TensorKind::Input)
      m->storage_[t].assign(size_t(element_count(m->plan_.tensors[t].shape)), 0.0f);
  m->arena_.assign(size_t(m->plan_.arena_floats), 0.0f);
  return m;
}

CompiledModel::~CompiledModel() {
  if (library_) dlclose(library_);
}

float* CompiledModel::data(int tensor) {
  const PlanTensor& t = plan_.tensors[tensor];
  if (t.kind == TensorKind::View) return data(t.view_of);
  if (t.kind == TensorKind::Weight) return weights_.data() + t.weight_offset;
  if (t.kind == TensorKind::Activation) return arena_.data() + t.arena_offset;
  return storage_[tensor].data();
}

void CompiledModel::run_step(const PlanStep& step) {
  if (step.kind == StepKind::Transpose) {
    transpose(data(step.inputs[0]), data(step.output), plan_.tensors[step.inputs[0]].shape,
              step.perm);
    return;
  }
  std::vector<Buffer> buffers;
  buffers.reserve(step.inputs.size() + 1);
  for (size_t k = 0; k < step.inputs.size(); ++k)
    buffers.emplace_back(data(step.inputs[k]), step.shapes[k]);
  buffers.emplace_back(data(step.output), step.shapes.back());
  std::vector<void*> args;
  for (auto& b : buffers) args.push_back(&b.buffer);
  size_t index = &step - plan_.steps.data();
  last_kernel_error.clear();
  if (functions_[index](args.data()) != 0)
    throw Error("kernel " + step.function + " (" + step.task + ") failed: " + last_kernel_error);
}

std::vector<std::vector<float>> CompiledModel::run(const std::vector<std::vector<float>>& inputs,
                                                   std::vector<StepTiming>* timings) {
  if (inputs.size() != plan_.inputs.size())
    throw Error("the model takes " + std::to_string(plan_.inputs.size()) + " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto& store = storage_[plan_.inputs[i]];
    if (inputs[i].size() != store.size())
      throw Error("input " + std::to_string(i) + " has " + std::to_string(inputs[i].size()) +
                  " values, the model wants " + std::to_string(store.size()));
    store = inputs[i];
  }
  for (const auto& step : plan_.steps) {
    auto start = std::chrono::steady_clock::now();
    run_step(step);
    if (timings)
      timings->push_back(
          {step.kind == StepKind::Kernel ? step.task : step_kind_name(step.kind),
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3});
  }
  std::vector<std::vector<float>> outputs;
  for (int t : plan_.outputs) {
    const float* d = data(t);
    outputs.emplace_back(d, d + element_count(plan_.tensors[t].shape));
  }
  return outputs;
}

size_t CompiledModel::memory_bytes() const {
  size_t bytes = weights_.size() * sizeof(float);
  for (const auto& s : storage_) bytes += s.size() * sizeof(float);
  bytes += arena_.size() * sizeof(float);
  return bytes;
}

}  // namespace tlm
