#include "runtime/artifact.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace tlm {

using Json = nlohmann::json;

namespace {

const std::vector<std::string>& tensor_kind_names() {
  static const std::vector<std::string> names = {"input", "weight", "activation", "view", "fused"};
  return names;
}

const std::vector<std::string>& step_kind_names() {
  static const std::vector<std::string> names = {"kernel", "transpose"};
  return names;
}

template <class Kind>
Kind kind_named(const std::vector<std::string>& names, const std::string& name, const char* what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<Kind>(i);
  throw Error(std::string("plan: unknown ") + what + " kind '" + name + "'");
}

}  // namespace

const std::string& tensor_kind_name(TensorKind kind) {
  return tensor_kind_names().at(size_t(kind));
}

const std::string& step_kind_name(StepKind kind) {
  return step_kind_names().at(size_t(kind));
}

void write_plan(const std::string& path, const Plan& plan) {
  Json j;
  j["model"] = plan.model;
  j["hardware"] = plan.hardware;
  j["layout"] = plan.layout;
  for (const auto& t : plan.tensors)
    j["tensors"].push_back({{"name", t.name},
                            {"shape", t.shape},
                            {"kind", tensor_kind_name(t.kind)},
                            {"dtype", t.dtype},
                            {"view_of", t.view_of},
                            {"weight_offset", t.weight_offset},
                            {"arena_offset", t.arena_offset},
                            {"sliced", t.sliced}});
  for (const auto& s : plan.steps)
    j["steps"].push_back({{"kind", step_kind_name(s.kind)},
                          {"function", s.function},
                          {"task", s.task},
                          {"inputs", s.inputs},
                          {"output", s.output},
                          {"perm", s.perm},
                          {"shapes", s.shapes}});
  for (const auto& f : plan.files)
    j["files"].push_back({{"name", f.name}, {"bytes", f.bytes}, {"hash", f.hash}});
  j["inputs"] = plan.inputs;
  j["outputs"] = plan.outputs;
  j["arena_floats"] = plan.arena_floats;
  j["slices"] = plan.slices;
  j["sliced_steps"] = plan.sliced_steps;
  for (const auto& t : plan.tasks)
    j["tasks"].push_back({{"spec", t.spec},
                          {"strategy", t.strategy},
                          {"checkpoint", t.checkpoint},
                          {"decisions", t.decisions},
                          {"weight_block", t.weight_block},
                          {"count", t.count}});
  for (const auto& [phase, seconds] : plan.compile_seconds) j["compile_seconds"][phase] = seconds;
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) throw Error("cannot write '" + path + "'");
}

Plan read_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("no compiled model at '" + path + "'");
  try {
    Json j = Json::parse(in);
    Plan plan;
    plan.model = j.at("model").get<std::string>();
    plan.hardware = j.at("hardware").get<std::string>();
    plan.layout = j.value("layout", std::string());
    for (const auto& t : j.at("tensors")) {
      PlanTensor pt;
      pt.name = t.at("name").get<std::string>();
      pt.shape = t.at("shape").get<std::vector<int64_t>>();
      pt.kind =
          kind_named<TensorKind>(tensor_kind_names(), t.at("kind").get<std::string>(), "tensor");
      pt.dtype = t.value("dtype", "float32");
      pt.view_of = t.at("view_of").get<int>();
      pt.weight_offset = t.at("weight_offset").get<int64_t>();
      pt.arena_offset = t.at("arena_offset").get<int64_t>();
      pt.sliced = t.value("sliced", false);
      plan.tensors.push_back(pt);
    }
    for (const auto& s : j.at("steps")) {
      PlanStep ps;
      ps.kind = kind_named<StepKind>(step_kind_names(), s.at("kind").get<std::string>(), "step");
      ps.function = s.at("function").get<std::string>();
      ps.task = s.at("task").get<std::string>();
      ps.inputs = s.at("inputs").get<std::vector<int>>();
      ps.output = s.at("output").get<int>();
      ps.perm = s.at("perm").get<std::vector<int64_t>>();
      ps.shapes = s.at("shapes").get<std::vector<std::vector<int64_t>>>();
      plan.steps.push_back(ps);
    }
    for (const auto& f : j.value("files", Json::array()))
      plan.files.push_back({f.at("name").get<std::string>(), f.at("bytes").get<int64_t>(),
                            f.at("hash").get<std::string>()});
    plan.inputs = j.at("inputs").get<std::vector<int>>();
    plan.outputs = j.at("outputs").get<std::vector<int>>();
    plan.arena_floats = j.at("arena_floats").get<int64_t>();
    plan.slices = j.value("slices", int64_t(1));
    plan.sliced_steps = j.value("sliced_steps", 0);
    for (const auto& t : j.value("tasks", Json::array())) {
      PlanTask pt;
      pt.spec = t.at("spec").get<std::string>();
      pt.strategy = t.at("strategy").get<std::string>();
      pt.checkpoint = t.at("checkpoint").get<std::string>();
      pt.decisions = t.at("decisions").get<std::vector<int64_t>>();
      pt.weight_block = t.at("weight_block").get<int64_t>();
      pt.count = t.at("count").get<int>();
      plan.tasks.push_back(pt);
    }
    Json phases = j.value("compile_seconds", Json::object());  // kept alive for items()
    for (const auto& [phase, seconds] : phases.items())
      plan.compile_seconds.push_back({phase, seconds.get<double>()});
    return plan;
  } catch (const Json::exception& e) {
    throw Error("'" + path + "' is not a valid plan (" + std::string(e.what()).substr(0, 80) + ")");
  }
}

}  // namespace tlm
