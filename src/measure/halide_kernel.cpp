// Kernels made with Halide: our space's schedules, the reference pipeline and the
// Halide autoschedulers, JIT-compiled for the host; plus the dispatch to vendor
// libraries and the injected faults used to test isolation.
#include <Halide.h>
#include <cpuid.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "measure/kernel.h"
#include "measure/library_kernels.h"
#include "runtime/spin_pool.h"
#include "space/apply_schedule.h"
#include "space/schedule_space.h"
#include "util/aligned.h"
#include "util/error.h"

#ifndef TLM_HALIDE_PLUGIN_DIR
#define TLM_HALIDE_PLUGIN_DIR "/usr/lib/x86_64-linux-gnu/halide14"
#endif

namespace tlm {
namespace {

int g_threads = 2;

// Halide 14 takes a Zen 4 (AVX-512 with VNNI and BF16) for Sapphire Rapids, whose LLVM
// target adds AVX-VNNI: the VEX-encoded vpdpwssd it may then emit is an illegal
// instruction on Zen 4. The feature is kept only where CPUID reports AVX-VNNI
// (leaf 7, sub-leaf 1, EAX bit 4).
bool cpu_has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
}

Halide::Target runnable(Halide::Target target) {
  if (target.has_feature(Halide::Target::AVX512_SapphireRapids) && !cpu_has_avx_vnni())
    target = target.without_feature(Halide::Target::AVX512_SapphireRapids);
  return target;
}

// The targets kernels are compiled for: this machine's, as Halide detects it, less what
// the CPU cannot run.
Halide::Target jit_target() {
  return runnable(Halide::get_jit_target_from_environment());
}
Halide::Target host_target() {
  return runnable(Halide::get_host_target());
}

// A JIT kernel's parallel loops on the pool compiled models run them on (runtime/
// spin_pool.h), so that a schedule is timed as a model step runs it. On Halide's own pool
// parallel kernels timed 1.05-1.6x slower than in a model (conv 384->64 at 14x14,
// parallel: 0.062 ms alone, 0.037 per step in MobileNetV2; session 35). TLM_POOL=halide
// keeps Halide's pool, as it does for a loaded model.
int spin_pool_par_for(Halide::JITUserContext* context,
                      int (*task)(Halide::JITUserContext*, int, uint8_t*), int min, int size,
                      uint8_t* closure) {
  return spin_pool_do_par_for(context, reinterpret_cast<ParallelTask>(task), min, size, closure);
}

Halide::Buffer<float> wrap(Tensor& t) {
  std::vector<int> dims(t.shape.rbegin(), t.shape.rend());
  return Halide::Buffer<float>(t.data.data(), dims);
}

class HalideKernel : public Kernel {
 public:
  // With `weight_block` > 1 the packable weight is packed into a copy the kernel owns.
  HalideKernel(TaskPipeline pipeline, const std::vector<Tensor>& inputs, Tensor& output,
               std::string description, int64_t weight_block)
      : pipeline_(std::move(pipeline)),
        output_(wrap(output)),
        description_(std::move(description)),
        halide_(pipeline_.output()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor* tensor = const_cast<Tensor*>(&inputs[i]);
      if (weight_block > 1 && int(i) == pipeline_.shape.packable_input) {
        int dim = pipeline_.shape.packable_dim;
        int64_t in_block = pipeline_.shape.packable_in_block;
        auto packed = pack_channel_blocks({tensor->data.begin(), tensor->data.end()}, tensor->shape,
                                          weight_block, dim, in_block);
        packed_ = {packed_shape(tensor->shape, weight_block, dim, in_block),
                   AlignedFloats(packed.begin(), packed.end())};
        tensor = &packed_;
      }
      input_buffers_.push_back(wrap(*tensor));
      params_.set(pipeline_.inputs[i], input_buffers_.back());
    }
    dump_generated_code();
    halide_.compile_jit(jit_target());
    if (!halide_pool_asked() && spin_pool_size() == g_threads)
      halide_.jit_handlers().custom_do_par_for = spin_pool_par_for;
  }
  void run() override { halide_.realize(output_, Halide::Target(), params_); }
  // With TLM_DUMP_KERNEL=PREFIX, writes PREFIX.stmt (Halide's lowered loop nest) and
  // PREFIX.s (the assembly) of the kernel, to read what a schedule compiles to.
  void dump_generated_code() {
    const char* prefix = std::getenv("TLM_DUMP_KERNEL");
    if (!prefix) return;
    std::vector<Halide::Argument> args(pipeline_.inputs.begin(), pipeline_.inputs.end());
    Halide::Target target = jit_target();
    halide_.compile_to_lowered_stmt(std::string(prefix) + ".stmt", args, Halide::Text, target);
    halide_.compile_to_assembly(std::string(prefix) + ".s", args, "kernel", target);
  }
  std::string describe() const override { return description_; }
  void evict_weights() override {
    int weights = pipeline_.shape.packable_input;
    if (weights < 0) return;
    const auto& buffer = input_buffers_[size_t(weights)];
    evict_from_caches(buffer.data(), buffer.size_in_bytes());
  }

 private:
  TaskPipeline pipeline_;
  Tensor packed_;
  Halide::Buffer<float> output_;
  std::string description_;
  Halide::Pipeline halide_;
  std::vector<Halide::Buffer<float>> input_buffers_;
  Halide::ParamMap params_;
};

std::string autoscheduler_name(KernelMethod method) {
  if (method == KernelMethod::Adams2019) return "Adams2019";
  if (method == KernelMethod::Mullapudi2016) return "Mullapudi2016";
  if (method == KernelMethod::Li2018) return "Li2018";
  return "";
}

void load_autoscheduler(const std::string& method) {
  static std::vector<std::string> loaded;
  for (const auto& m : loaded)
    if (m == method) return;
  Halide::load_plugin(std::string(TLM_HALIDE_PLUGIN_DIR) + "/libautoschedule_" + method + ".so");
  loaded.push_back(method);
}

// Swallows what is written to std::cerr while it lives (the autoschedulers' warnings,
// e.g. "Outer dim vectorization of var ...", which say nothing a user can act on).
class QuietCerr {
 public:
  QuietCerr() : saved_(std::cerr.rdbuf(sink_.rdbuf())) {}
  ~QuietCerr() { std::cerr.rdbuf(saved_); }

 private:
  std::ostringstream sink_;
  std::streambuf* saved_;
};

std::string autoschedule(TaskPipeline& pipeline, KernelMethod method) {
  load_autoscheduler(kernel_method_name(method));
  set_estimates(pipeline);
  Halide::Pipeline p(pipeline.output());
  Halide::MachineParams params(g_threads, 32 * 1024 * 1024, 40);
  QuietCerr quiet;
  auto results = p.auto_schedule(autoscheduler_name(method), jit_target(), params);
  return results.schedule_source;
}

// A kernel that misbehaves on purpose, to show isolation records each fault and goes on.
class FaultKernel : public Kernel {
 public:
  FaultKernel(KernelMethod fault, std::unique_ptr<Kernel> inner, Tensor& output)
      : fault_(fault), inner_(std::move(inner)), output_(output) {}
  void run() override {
    if (fault_ == KernelMethod::FaultCrash) std::abort();
    if (fault_ == KernelMethod::FaultHang)
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    if (fault_ == KernelMethod::FaultOom) {
      for (;;) {
        char* block = static_cast<char*>(std::malloc(size_t(1) << 28));
        if (!block) throw std::bad_alloc();
        for (size_t i = 0; i < (size_t(1) << 28); i += 4096) block[i] = 1;
      }
    }
    if (fault_ == KernelMethod::FaultSlowStart && runs_ < 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(runs_ == 0 ? 50 : 25));
    ++runs_;
    inner_->run();
    if (fault_ == KernelMethod::FaultWrong) output_.data[output_.data.size() / 2] += 1.0f;
  }

 private:
  KernelMethod fault_;
  int runs_ = 0;
  std::unique_ptr<Kernel> inner_;
  Tensor& output_;
};

struct ScheduledPipeline {
  TaskPipeline pipeline;
  std::string description;
  int64_t weight_block = 1;
};

// The task's pipeline with the candidate's schedule applied (a Halide method only).
ScheduledPipeline schedule_candidate(const TaskSpec& task, const Candidate& candidate,
                                     const CodegenOptions& options = {}) {
  KernelMethod method = candidate.method;
  Schedule schedule;
  if (method == KernelMethod::Space)
    schedule = ScheduleSpace(describe_task(task)).decode(candidate.decisions);
  bool tables = autoscheduler_name(method).empty();
  ScheduledPipeline out{build_task_pipeline(task, schedule.weight_block, tables), "",
                        schedule.weight_block};
  if (out.pipeline.own_schedule) {  // whatever the method: the space is empty
    out.pipeline.own_schedule(out.pipeline.output());
    out.description = "fixed";
  } else if (method == KernelMethod::Space) {
    apply_schedule(out.pipeline, schedule, options);
  } else if (method == KernelMethod::Reference) {
    schedule_reference(out.pipeline);
  } else if (!autoscheduler_name(method).empty()) {
    out.description = autoschedule(out.pipeline, method);
  } else {
    throw Error("method '" + kernel_method_name(method) + "' builds no Halide pipeline");
  }
  return out;
}

Error halide_error(const Halide::Error& e) {
  std::string what = e.what();
  for (char& c : what)
    if (c == '\n') c = ' ';
  return Error("Halide: " + what.substr(0, 400));
}

const std::vector<std::string>& kernel_method_names() {
  static const std::vector<std::string> names = {
      "space",    "reference",   "adams2019",  "mullapudi2016", "li2018",    "onednn",
      "openblas", "fault:crash", "fault:hang", "fault:wrong",   "fault:oom", "fault:slow-start"};
  return names;
}

}  // namespace

const std::string& kernel_method_name(KernelMethod method) {
  return kernel_method_names().at(size_t(method));
}

KernelMethod kernel_method_named(const std::string& name) {
  const auto& names = kernel_method_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return KernelMethod(i);
  throw Error("unknown method '" + name + "' (known: space, reference, adams2019, mullapudi2016, " +
              "li2018, onednn, openblas)");
}

bool is_library(KernelMethod method) {
  return method == KernelMethod::OneDnn || method == KernelMethod::OpenBlas;
}

void set_kernel_threads(int threads) {
  g_threads = threads;
  setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
}

std::unique_ptr<Kernel> build_kernel(const TaskSpec& task, const Candidate& candidate,
                                     const std::vector<Tensor>& inputs, Tensor& output,
                                     bool model_split) {
  KernelMethod method = candidate.method;
  if (is_library(method)) {
    std::vector<const float*> pointers;
    for (const auto& t : inputs) pointers.push_back(t.data.data());
    auto kernel = make_library_kernel(kernel_method_name(method), task, pointers,
                                      output.data.data(), g_threads);
    struct Adapter : Kernel {
      std::unique_ptr<LibraryKernel> lib;
      void run() override { lib->run(); }
      std::string describe() const override { return lib->describe(); }
    };
    auto adapter = std::make_unique<Adapter>();
    adapter->lib = std::move(kernel);
    return adapter;
  }
  if (method >= KernelMethod::FaultCrash) {
    Candidate reference{KernelMethod::Reference, {}};
    return std::make_unique<FaultKernel>(method, build_kernel(task, reference, inputs, output),
                                         output);
  }
  try {
    CodegenOptions options;
    if (model_split) options.first_parallel_dim = parallel_first_dim(task);
    ScheduledPipeline scheduled = schedule_candidate(task, candidate, options);
    return std::make_unique<HalideKernel>(std::move(scheduled.pipeline), inputs, output,
                                          scheduled.description, scheduled.weight_block);
  } catch (const Halide::Error& e) {
    throw halide_error(e);
  }
}

namespace {

// TLM_WEIGHT_PREFETCH=0 builds without it (to measure what it gives).
bool weight_prefetch_wanted() {
  const char* value = std::getenv("TLM_WEIGHT_PREFETCH");
  return !value || std::string(value) != "0";
}

// Whether ahead-of-time builds split convolutions by rows and dense layers by columns first
// (parallel_first_dim; unless TLM_PARALLEL_FIRST=0, for A/B runs).
bool parallel_first_wanted() {
  const char* value = std::getenv("TLM_PARALLEL_FIRST");
  return !value || std::string(value) != "0";
}

// Compiles to assembly, makes its prefetches temporal and assembles the object.
void compile_object_via_assembly(Halide::Func output, const std::vector<Halide::Argument>& args,
                                 const std::string& path, const std::string& function,
                                 const Halide::Target& target) {
  std::string assembly = path + ".s";
  output.compile_to_assembly(assembly, args, function, target);
  std::stringstream text;
  text << std::ifstream(assembly).rdbuf();
  std::ofstream(assembly) << with_temporal_prefetches(text.str());
  std::string command = "c++ -c -x assembler -o '" + path + "' '" + assembly + "' 2>&1";
  if (std::system(command.c_str()) != 0) throw Error("cannot assemble '" + assembly + "'");
  std::remove(assembly.c_str());
}

}  // namespace

std::string with_temporal_prefetches(std::string assembly) {
  const std::string nta = "prefetchnta", t0 = "prefetcht0";
  for (size_t at = assembly.find(nta); at != std::string::npos; at = assembly.find(nta, at))
    assembly.replace(at, nta.size(), t0);
  return assembly;
}

int64_t compile_task_object(const TaskSpec& task, const Candidate& candidate,
                            const std::string& path, const std::string& function) {
  try {
    CodegenOptions options;
    options.prefetch_weights = weight_prefetch_wanted();
    options.first_parallel_dim = parallel_first_wanted() ? parallel_first_dim(task) : -1;
    ScheduledPipeline scheduled = schedule_candidate(task, candidate, options);
    std::vector<Halide::Argument> args(scheduled.pipeline.inputs.begin(),
                                       scheduled.pipeline.inputs.end());
    Halide::Target target = host_target().with_feature(Halide::Target::NoRuntime);
    Halide::Func output = scheduled.pipeline.output();
    if (options.prefetch_weights && scheduled.pipeline.shape.prefetch_packable &&
        scheduled.weight_block > 1)
      compile_object_via_assembly(output, args, path, function, target);
    else
      output.compile_to_object(path, args, function, target);
    return scheduled.weight_block;
  } catch (const Halide::Error& e) {
    throw halide_error(e);
  }
}

void compile_runtime_object(const std::string& path) {
  Halide::compile_standalone_runtime(path, host_target());
}

Tensor reference_output(const TaskSpec& task, const std::vector<Tensor>& inputs) {
  TaskShape shape = describe_task(task);
  Tensor output = Tensor::zeros(shape.output_shape);
  build_kernel(task, {KernelMethod::Reference, {}}, inputs, output)->run();
  return output;
}

}  // namespace tlm
