#include "runtime/model_io.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "util/error.h"
#include "util/npy.h"
#include "util/shape.h"
#include "util/strings.h"

namespace tlm {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<int64_t> without_leading_ones(std::vector<int64_t> shape) {
  while (!shape.empty() && shape.front() == 1) shape.erase(shape.begin());
  return shape;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t e : shape) parts.push_back(std::to_string(e));
  return "[" + join(parts, ",") + "]";
}

// One input's values from an .npy file, checked against the plan's tensor.
std::vector<float> npy_input(const PlanTensor& t, const std::string& path) {
  NpyArray a = read_npy(path);
  if (without_leading_ones(a.shape) != without_leading_ones(t.shape))
    throw Error("input '" + t.name + "' wants shape " + shape_string(t.shape) + ", '" + path +
                "' holds " + shape_string(a.shape));
  bool integer_input = t.dtype != "float32";
  bool integer_file = a.dtype[1] == 'i' || a.dtype[1] == 'u' || a.dtype[1] == 'b';
  if (integer_input && !integer_file)
    throw Error("input '" + t.name + "' holds " + t.dtype + ", '" + path + "' holds " + a.dtype);
  std::vector<float> values(a.values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (integer_input && std::fabs(a.values[i]) >= 16777216)
      throw Error("input '" + t.name + "': value " + std::to_string(int64_t(a.values[i])) +
                  " is too large to hold exactly");
    values[i] = float(a.values[i]);
  }
  return values;
}

std::vector<float> random_input(const PlanTensor& t, std::mt19937_64& rng) {
  std::vector<float> v(size_t(element_count(t.shape)));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 1);  // valid as a mask and as a token id
  for (float& x : v) x = t.dtype == "float32" ? normal(rng) : float(small(rng));
  return v;
}

// Every input, in order, from one raw float32 file.
std::vector<std::vector<float>> raw_inputs(const Plan& plan, const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read input file '" + file + "'");
  std::vector<std::vector<float>> inputs;
  for (int t : plan.inputs) {
    std::vector<float> v(size_t(element_count(plan.tensors[t].shape)));
    in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
    if (!in) throw Error("input file '" + file + "' is shorter than the model's inputs");
    inputs.push_back(std::move(v));
  }
  return inputs;
}

}  // namespace

std::vector<std::vector<float>> read_model_inputs(const Plan& plan,
                                                  const std::vector<std::string>& specs) {
  if (specs.size() == 1 && !ends_with(specs[0], ".npy")) return raw_inputs(plan, specs[0]);
  std::map<std::string, std::string> files;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    if (name.empty()) {
      if (plan.inputs.size() != 1)
        throw Error("--input " + spec + ": the model has " + std::to_string(plan.inputs.size()) +
                    " inputs; name each (--input NAME=file.npy)");
      name = plan.tensors[plan.inputs[0]].name;
    }
    if (!files.emplace(name, spec.substr(eq == std::string::npos ? 0 : eq + 1)).second)
      throw Error("--input: input '" + name + "' is given twice");
  }
  for (const auto& [name, file] : files) {
    bool known = false;
    for (int t : plan.inputs) known = known || plan.tensors[t].name == name;
    if (!known) throw Error("--input: the model has no input '" + name + "'");
  }
  std::mt19937_64 rng(7);
  std::vector<std::vector<float>> inputs;
  for (int t : plan.inputs) {
    const PlanTensor& tensor = plan.tensors[t];
    auto found = files.find(tensor.name);
    if (found == files.end() && !files.empty())
      throw Error("--input: no file for the model's input '" + tensor.name + "'");
    inputs.push_back(found == files.end() ? random_input(tensor, rng)
                                          : npy_input(tensor, found->second));
  }
  return inputs;
}

void write_model_outputs(const Plan& plan, const std::vector<std::vector<float>>& outputs,
                         const std::string& path) {
  if (ends_with(path, ".npy")) {
    if (plan.outputs.size() != 1)
      throw Error("--output " + path + ": the model has " + std::to_string(plan.outputs.size()) +
                  " outputs; give a folder");
    write_npy(path, plan.tensors[plan.outputs[0]].shape, outputs[0]);
    return;
  }
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw Error("--output: cannot create folder '" + path + "'");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const PlanTensor& t = plan.tensors[plan.outputs[i]];
    std::string name = t.name;
    for (char& c : name)
      if (c == '/' || c == '\\' || c == ':') c = '_';
    write_npy(path + "/" + name + ".npy", t.shape, outputs[i]);
  }
}

}  // namespace tlm
