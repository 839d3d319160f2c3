#include "runtime/plan_check.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "runtime/memory_plan.h"
#include "util/error.h"
#include "util/shape.h"

namespace tlm {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 34;  // 64 GiB of floats: past any model here
constexpr int64_t kMaxExtent = int64_t(1) << 31;    // Halide buffers hold int32 extents
constexpr size_t kMaxRank = 8;

// A 64-bit hash of a buffer, eight bytes at a time (FNV-1a's constants over words, a
// shift to mix the high bits down): several times faster than hash_hex's byte-wise FNV on
// the hundreds of megabytes of a weights.bin.
std::string hash_words(const char* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t at = 0; at < size; at += 8) {
    uint64_t word = 0;
    for (size_t b = 0; b < 8 && at + b < size; ++b)
      word |= uint64_t(uint8_t(data[at + b])) << (8 * b);
    h = (h ^ word) * 1099511628211ull;
    h ^= h >> 31;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

void check_shape(const std::vector<int64_t>& shape, const std::string& what) {
  if (shape.size() > kMaxRank) throw Error("plan: " + what + " has more than 8 dims");
  int64_t n = 1;
  for (int64_t e : shape) {
    if (e < 1 || e >= kMaxExtent) throw Error("plan: " + what + " has an extent out of range");
    n *= e;
    if (n > kMaxElements) throw Error("plan: " + what + " is too large");
  }
}

bool valid_index(const Plan& plan, int t) {
  return t >= 0 && t < int(plan.tensors.size());
}

void check_views(const Plan& plan) {
  int n = int(plan.tensors.size());
  for (int t = 0; t < n; ++t) {
    if (plan.tensors[size_t(t)].kind != TensorKind::View) continue;
    int at = t;
    for (int hops = 0; plan.tensors[size_t(at)].kind == TensorKind::View; ++hops) {
      at = plan.tensors[size_t(at)].view_of;
      if (!valid_index(plan, at)) throw Error("plan: a view of an unknown tensor");
      if (hops > n) throw Error("plan: a cycle of views");
    }
    const PlanTensor &view = plan.tensors[size_t(t)], &root = plan.tensors[size_t(at)];
    if (root.kind == TensorKind::Fused) throw Error("plan: view '" + view.name + "' of nothing");
    if (element_count(view.shape) != element_count(root.shape))
      throw Error("plan: view '" + view.name + "' has another size than its tensor");
  }
}

void check_tensors(const Plan& plan, size_t weight_floats) {
  for (const auto& t : plan.tensors) check_shape(t.shape, "tensor '" + t.name + "'");
  check_views(plan);
  for (const auto& t : plan.tensors)
    if (t.kind == TensorKind::Weight &&
        (t.weight_offset < 0 || uint64_t(t.weight_offset + element_count(t.shape)) > weight_floats))
      throw Error("plan: weight '" + t.name + "' lies outside weights.bin");
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    int t = plan.inputs[i];
    if (!valid_index(plan, t) || plan.tensors[size_t(t)].kind != TensorKind::Input)
      throw Error("plan: model input " + std::to_string(i) + " is not an input tensor");
    const std::string& dtype = plan.tensors[size_t(t)].dtype;
    if (dtype != "float32" && dtype != "int64" && dtype != "bool")
      throw Error("plan: model input " + std::to_string(i) + " has unknown element type '" + dtype +
                  "'");
  }
  for (int t : plan.outputs)
    if (!valid_index(plan, t) || plan.tensors[size_t(root_of(plan, t))].kind == TensorKind::Fused)
      throw Error("plan: a model output is not a stored tensor");
  int64_t bound = activation_floats(plan) + 16 * int64_t(plan.tensors.size() + 1);
  if (plan.arena_floats < 0 || plan.arena_floats > bound)
    throw Error("plan: arena_floats " + std::to_string(plan.arena_floats) +
                " is not what its activations need");
}

// Per-image steps see one image of a sliced tensor.
void check_kernel_step(const Plan& plan, const PlanStep& step, const std::string& where,
                       bool per_image) {
  if (step.function.empty() ||
      step.function.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
    throw Error(where + " names no valid kernel");
  if (step.shapes.size() != step.inputs.size() + 1) throw Error(where + " lacks its buffer shapes");
  for (size_t k = 0; k < step.shapes.size(); ++k) {
    int t = k < step.inputs.size() ? step.inputs[k] : step.output;
    check_shape(step.shapes[k], "a buffer of " + where.substr(6));
    const PlanTensor& tensor = plan.tensors[size_t(root_of(plan, t))];
    int64_t parts = per_image && tensor.sliced ? plan.slices : 1;
    if (element_count(step.shapes[k]) * parts != element_count(plan.tensors[size_t(t)].shape))
      throw Error(where + " sees a tensor with another size");
  }
}

void check_transpose_step(const Plan& plan, const PlanStep& step, const std::string& where) {
  if (step.inputs.size() != 1) throw Error(where + " needs exactly one input");
  const auto& in = plan.tensors[size_t(step.inputs[0])].shape;
  std::vector<bool> seen(in.size(), false);
  if (step.perm.size() != in.size()) throw Error(where + " has a perm of another rank");
  for (int64_t p : step.perm) {
    if (p < 0 || p >= int64_t(in.size()) || seen[size_t(p)])
      throw Error(where + " has a perm that is not a permutation");
    seen[size_t(p)] = true;
  }
  if (element_count(plan.tensors[size_t(step.output)].shape) != element_count(in))
    throw Error(where + " writes a tensor of another size");
}

// Every index in range, each step reading only what is stored and already written.
void check_steps(const Plan& plan) {
  std::vector<bool> written(plan.tensors.size(), false);
  for (size_t t = 0; t < plan.tensors.size(); ++t)
    written[t] =
        plan.tensors[t].kind == TensorKind::Input || plan.tensors[t].kind == TensorKind::Weight;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    std::string where = "plan: step " + std::to_string(s) + " (" +
                        (step.kind == StepKind::Kernel ? step.function : "transpose") + ")";
    if (!valid_index(plan, step.output) ||
        plan.tensors[size_t(root_of(plan, step.output))].kind != TensorKind::Activation)
      throw Error(where + " writes no activation");
    for (int t : step.inputs) {
      if (!valid_index(plan, t)) throw Error(where + " reads an unknown tensor");
      if (!written[size_t(root_of(plan, t))])
        throw Error(where + " reads '" + plan.tensors[size_t(t)].name +
                    "' before anything writes it");
    }
    bool per_image = int(s) < plan.sliced_steps;
    if (step.kind == StepKind::Kernel)
      check_kernel_step(plan, step, where, per_image);
    else if (per_image)
      throw Error(where + " is a layout step among the per-image steps");
    else
      check_transpose_step(plan, step, where);
    written[size_t(root_of(plan, step.output))] = true;
  }
}

// The per-image steps (artifact.h): sliced tensors hold the batch in dim 0; what those
// steps write and anything after them reads is sliced, else it would hold the last
// image only.
void check_slice_counts(const Plan& plan) {
  if (plan.slices < 1 || plan.slices >= kMaxExtent || plan.sliced_steps < 0 ||
      size_t(plan.sliced_steps) > plan.steps.size() || (plan.sliced_steps > 0) != (plan.slices > 1))
    throw Error("plan: slices and sliced_steps are out of range");
}

void check_slices(const Plan& plan) {
  for (const auto& t : plan.tensors)
    if (t.sliced && (t.kind == TensorKind::View || t.kind == TensorKind::Weight ||
                     t.kind == TensorKind::Fused || t.shape.empty() || t.shape[0] != plan.slices))
      throw Error("plan: sliced tensor '" + t.name + "' does not hold one image per slice");
  std::vector<bool> per_image_only(plan.tensors.size(), false);
  for (int s = 0; s < plan.sliced_steps; ++s) {
    int out = root_of(plan, plan.steps[size_t(s)].output);
    per_image_only[size_t(out)] = !plan.tensors[size_t(out)].sliced;
  }
  auto check_read = [&](int t) {
    if (per_image_only[size_t(root_of(plan, t))])
      throw Error("plan: '" + plan.tensors[size_t(t)].name +
                  "' holds one image but is read after the per-image steps");
  };
  for (size_t s = size_t(plan.sliced_steps); s < plan.steps.size(); ++s)
    for (int t : plan.steps[s].inputs) check_read(t);
  for (int t : plan.outputs) check_read(t);
}

}  // namespace

int64_t regular_file_size(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    throw Error("artifact: '" + path + "' is missing or not a regular file");
  return int64_t(info.st_size);
}

ArtifactFile describe_bytes(const std::string& name, const char* data, size_t size) {
  return {name, int64_t(size), hash_words(data, size)};
}

ArtifactFile describe_file(const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name;
  int64_t size = regular_file_size(path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size_t(size), '\0');
  if (!in.read(bytes.data(), std::streamsize(size))) throw Error("cannot read '" + path + "'");
  return describe_bytes(name, bytes.data(), bytes.size());
}

void check_artifact_file(const std::string& dir, const Plan& plan, const ArtifactFile& found) {
  const ArtifactFile* recorded = nullptr;
  for (const auto& f : plan.files)
    if (f.name == found.name) recorded = &f;
  std::string path = "'" + dir + "/" + found.name + "'";
  if (!recorded)
    throw Error("artifact: plan.json records no size and hash of " + found.name +
                " (compiled by an older tlm? compile it again)");
  if (found.bytes != recorded->bytes)
    throw Error("artifact: " + path + " has " + std::to_string(found.bytes) +
                " bytes, the plan recorded " + std::to_string(recorded->bytes) +
                " (truncated or replaced)");
  if (!found.hash.empty() && found.hash != recorded->hash)
    throw Error("artifact: " + path +
                " does not match the hash the plan recorded (changed after compiling)");
}

void check_plan(const Plan& plan, size_t weight_floats) {
  check_tensors(plan, weight_floats);
  check_slice_counts(plan);
  check_steps(plan);
  check_slices(plan);
}

}  // namespace tlm
