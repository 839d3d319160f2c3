// The C API (tlm_runtime.h) over CompiledModel: exceptions become a return value and a
// thread-local message, and inputs arrive in the element type the caller holds.
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi/tlm_runtime.h"
#include "runtime/runtime.h"
#include "util/error.h"
#include "util/shape.h"

struct tlm_model {
  std::unique_ptr<tlm::CompiledModel> compiled;
};

namespace {

thread_local std::string last_error;

// Runs `body`, turning any exception into `failed` and this thread's last error.
template <typename Body, typename Result>
Result guarded(Body body, Result failed) {
  last_error.clear();
  try {
    return body();
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return failed;
}

tlm_dtype dtype_of(const std::string& name) {
  if (name == "int64") return TLM_INT64;
  if (name == "bool") return TLM_BOOL;
  return TLM_FLOAT32;  // the plan check admits these three names only
}

size_t element_size(tlm_dtype dtype) {
  return dtype == TLM_INT64 ? sizeof(int64_t) : dtype == TLM_BOOL ? 1 : sizeof(float);
}

void describe(const tlm::PlanTensor& t, tlm_tensor_info* info) {
  if (!info) throw tlm::Error("no tlm_tensor_info to fill");
  info->name = t.name.c_str();
  info->dtype = dtype_of(t.dtype);
  info->element_size = element_size(info->dtype);
  info->rank = int(t.shape.size());
  info->shape = t.shape.data();
  info->elements = size_t(tlm::element_count(t.shape));
}

// Input or output `index` of the model into `info`; outputs are float32 whatever the
// graph's type.
int describe_io(const tlm::Plan& plan, bool output, size_t index, tlm_tensor_info* info) {
  const std::vector<int>& tensors = output ? plan.outputs : plan.inputs;
  const char* what = output ? "output" : "input";
  if (index >= tensors.size())
    throw tlm::Error("no " + std::string(what) + " " + std::to_string(index) + " (the model has " +
                     std::to_string(tensors.size()) + ")");
  describe(plan.tensors[size_t(tensors[index])], info);
  if (output) info->dtype = TLM_FLOAT32, info->element_size = sizeof(float);
  return 0;
}

const tlm::CompiledModel& checked(const tlm_model* model) {
  if (!model || !model->compiled) throw tlm::Error("no model (tlm_open failed or was not called)");
  return *model->compiled;
}

// Input `i` as float32: the caller's memory when it is float32, else a converted copy.
const float* as_floats(const tlm::PlanTensor& t, const void* data, std::vector<float>& copy) {
  tlm_dtype dtype = dtype_of(t.dtype);
  if (dtype == TLM_FLOAT32) return static_cast<const float*>(data);
  copy.resize(size_t(tlm::element_count(t.shape)));
  for (size_t k = 0; k < copy.size(); ++k)
    copy[k] = dtype == TLM_INT64 ? float(static_cast<const int64_t*>(data)[k])
                                 : float(static_cast<const uint8_t*>(data)[k] != 0);
  return copy.data();
}

int run(const tlm::CompiledModel& model, const void* const* inputs, float* const* outputs) {
  const tlm::Plan& plan = model.plan();
  if (!inputs || !outputs) throw tlm::Error("tlm_run needs input and output pointer arrays");
  std::vector<std::vector<float>> copies(plan.inputs.size());
  std::vector<const float*> floats(plan.inputs.size());
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (!inputs[i]) throw tlm::Error("input " + std::to_string(i) + " is NULL");
    floats[i] = as_floats(plan.tensors[size_t(plan.inputs[i])], inputs[i], copies[i]);
  }
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    if (!outputs[o]) throw tlm::Error("output " + std::to_string(o) + " is NULL");
  model.run(floats.data(), outputs);
  return 0;
}

}  // namespace

extern "C" {

tlm_model* tlm_open(const char* dir) {
  return guarded(
      [&] {
        if (!dir || !*dir) throw tlm::Error("no artifact folder given");
        auto model = std::make_unique<tlm_model>();
        model->compiled = tlm::CompiledModel::load(dir);
        return model.release();
      },
      static_cast<tlm_model*>(nullptr));
}

void tlm_close(tlm_model* model) {
  delete model;
}

size_t tlm_num_inputs(const tlm_model* model) {
  return guarded([&] { return checked(model).plan().inputs.size(); }, size_t(0));
}

size_t tlm_num_outputs(const tlm_model* model) {
  return guarded([&] { return checked(model).plan().outputs.size(); }, size_t(0));
}

int tlm_input_info(const tlm_model* model, size_t index, tlm_tensor_info* info) {
  return guarded([&] { return describe_io(checked(model).plan(), false, index, info); }, -1);
}

int tlm_output_info(const tlm_model* model, size_t index, tlm_tensor_info* info) {
  return guarded([&] { return describe_io(checked(model).plan(), true, index, info); }, -1);
}

int tlm_run(const tlm_model* model, const void* const* inputs, float* const* outputs) {
  return guarded([&] { return run(checked(model), inputs, outputs); }, -1);
}

const char* tlm_last_error(void) {
  return last_error.c_str();
}

const char* tlm_version(void) {
  return TLM_VERSION_STRING;
}

}  // extern "C"
