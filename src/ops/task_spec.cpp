#include "ops/task_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ops/registry.h"
#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

using Kind = ParamSchema::Kind;

const ParamSchema* find_param(const TaskDef& def, const std::string& name) {
  for (const auto& p : def.params)
    if (p.name == name) return &p;
  return nullptr;
}

// The shortest decimal that reads back as the same float32: a real parameter's one
// spelling, whatever the spelling it was given in.
std::string real_text(double value) {
  char buf[64];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    if (float(std::strtod(buf, nullptr)) == float(value)) break;
  }
  return buf;
}

std::string check_value(const TaskDef& def, const ParamSchema& param, const std::string& value) {
  std::string where = task_name(def.kind) + " parameter '" + param.name + "'";
  if (param.kind == Kind::Word) {
    if (std::find(param.words.begin(), param.words.end(), value) == param.words.end())
      throw Error(where + ": '" + value + "' is not one of " + join(param.words, "|"));
    return value;
  }
  if (param.kind == Kind::Real) {
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !std::isfinite(v))
      throw Error(where + ": '" + value + "' is not a finite number");
    return real_text(v);
  }
  int64_t v = parse_int(value, where);
  if (v < 0 || (v == 0 && !param.may_be_zero) || v > (int64_t(1) << 24))
    throw Error(where + ": value " + value + " is out of range");
  return std::to_string(v);  // one spelling: 04 and 4 are the same task
}

void parse_params(const TaskDef& def, const std::string& text, TaskSpec& spec) {
  if (!text.empty()) {
    for (const auto& item : split(text, ',')) {
      auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("task spec: expected key=value, got '" + item + "'");
      std::string name = item.substr(0, eq), value = item.substr(eq + 1);
      const ParamSchema* param = find_param(def, name);
      if (!param)
        throw Error("task spec: op '" + task_name(def.kind) + "' has no parameter '" + name + "'");
      if (spec.params.count(name)) throw Error("task spec: parameter '" + name + "' given twice");
      spec.params[name] = check_value(def, *param, value);
    }
  }
  for (const auto& p : def.params) {
    if (spec.params.count(p.name)) continue;
    if (!p.same_as.empty()) {
      spec.params[p.name] = spec.params.at(p.same_as);
      continue;
    }
    if (p.default_value.empty())
      throw Error("task spec: op '" + task_name(def.kind) + "' needs parameter '" + p.name + "'");
    spec.params[p.name] = p.default_value;
  }
}

int full_mask(const TaskSpec& spec) {
  return (1 << spec.output_rank()) - 1;
}

EpilogueStep parse_epilogue_word(const TaskSpec& spec, const std::string& text) {
  const TaskDef& def = task_def(spec.kind);
  auto bad = [&](const std::string& why) -> EpilogueStep {
    if (why.empty())
      throw Error("task spec: unknown epilogue '" + text +
                  "' (known: " + join(known_epilogues(), ", ") + ")");
    throw Error("task spec: epilogue '" + text + "': " + why);
  };
  if (text == "bias") {
    if (def.channel_dim < 0) bad(task_name(def.kind) + " has no channel dim for a bias");
    return {OpKind::Add, spec.bias_mask(), false};
  }
  size_t at = text.find('@');
  std::string name = text.substr(0, at);
  EpilogueStep step;
  if (!find_op_kind(name, step.op) || op_def(step.op).role != OpRole::Elementwise) {
    if (name.size() < 2 || name[0] != 'r' || !find_op_kind(name.substr(1), step.op) ||
        op_def(step.op).role != OpRole::Elementwise || op_def(step.op).arity != 2 ||
        op_def(step.op).commutative)
      return bad("");
    step.reversed = true;
  }
  const OpDef& d = op_def(step.op);
  if (d.arity == 1) {
    if (at != std::string::npos) bad("a unary operator takes no operand mask");
    return step;
  }
  if (d.arity != 2) bad("not an epilogue operator");
  step.mask = full_mask(spec);
  if (at != std::string::npos) {
    int64_t mask = parse_int(text.substr(at + 1), "epilogue mask");
    if (mask < 0 || mask > full_mask(spec))
      bad("mask " + std::to_string(mask) + " is outside the output's " +
          std::to_string(spec.output_rank()) + " dims");
    step.mask = int(mask);
  }
  return step;
}

std::string epilogue_text(const TaskSpec& spec, const EpilogueStep& step) {
  if (step.op == OpKind::Add && spec.bias_mask() > 0 && step.mask == spec.bias_mask())
    return "bias";
  std::string text = (step.reversed ? "r" : "") + op_name(step.op);
  if (step.mask >= 0 && step.mask != full_mask(spec)) text += "@" + std::to_string(step.mask);
  return text;
}

}  // namespace

int64_t TaskSpec::get(const std::string& key_name) const {
  auto it = params.find(key_name);
  if (it == params.end()) throw Error("task " + op() + " has no parameter '" + key_name + "'");
  return parse_int(it->second, op() + " parameter '" + key_name + "'");
}

double TaskSpec::real(const std::string& key_name) const {
  auto it = params.find(key_name);
  if (it == params.end()) throw Error("task " + op() + " has no parameter '" + key_name + "'");
  return std::strtod(it->second.c_str(), nullptr);
}

const std::string& TaskSpec::word(const std::string& key_name) const {
  auto it = params.find(key_name);
  if (it == params.end()) throw Error("task " + op() + " has no parameter '" + key_name + "'");
  return it->second;
}

bool TaskSpec::has_epilogue(OpKind kind_of_step) const {
  for (const auto& e : epilogue)
    if (e.op == kind_of_step) return true;
  return false;
}

std::vector<std::string> TaskSpec::epilogue_words() const {
  std::vector<std::string> words;
  for (const auto& e : epilogue) words.push_back(epilogue_text(*this, e));
  return words;
}

int64_t TaskSpec::output_block() const {
  const char* key = task_def(kind).block_param;
  return key ? get(key) : 1;
}

int TaskSpec::output_rank() const {
  return task_def(kind).output_rank + (output_block() > 1 ? 1 : 0);
}

int TaskSpec::bias_mask() const {
  int channel = task_def(kind).channel_dim;
  if (channel < 0) return 0;
  return output_block() > 1 ? (1 << channel) | (1 << (output_rank() - 1)) : 1 << channel;
}

std::vector<std::string> TaskSpec::shown_keys() const {
  std::vector<std::string> keys;
  for (const auto& p : task_def(kind).params) {
    const std::string& fallback = p.same_as.empty() ? p.default_value : params.at(p.same_as);
    if (!p.optional || params.at(p.name) != fallback) keys.push_back(p.name);
  }
  return keys;
}

std::string TaskSpec::key() const {
  std::vector<std::string> items;
  for (const auto& k : shown_keys()) items.push_back(k + "=" + params.at(k));
  std::string text = op() + ":" + join(items, ",");
  for (const auto& w : epilogue_words()) text += "+" + w;
  return text;
}

TaskSpec parse_task_spec(const std::string& text) {
  if (text.empty()) throw Error("task spec is empty (expected OP:key=value,...)");
  auto pieces = split(text, '+');
  auto colon = pieces[0].find(':');
  TaskSpec spec;
  std::string op = pieces[0].substr(0, colon);
  for (TaskKind k : all_task_kinds())
    if (task_name(k) == op) spec.kind = k;
  if (spec.kind == TaskKind::Count)
    throw Error("unknown op '" + op + "' (known: " + join(known_ops(), ", ") + ")");
  const TaskDef& def = task_def(spec.kind);
  parse_params(def, colon == std::string::npos ? "" : pieces[0].substr(colon + 1), spec);
  for (size_t i = 1; i < pieces.size(); ++i)
    spec.epilogue.push_back(parse_epilogue_word(spec, pieces[i]));
  if (def.validate) def.validate(spec);
  return spec;
}

bool read_stored_task(const std::string& key, TaskSpec& task) {
  try {
    task = parse_task_spec(key);
    if (task.key() == key) return true;
    std::fprintf(stderr, "tlm: warning: skipping stored task '%s': not its canonical key '%s'\n",
                 key.c_str(), task.key().c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "tlm: warning: skipping stored task '%s': %s\n", key.c_str(), e.what());
  }
  return false;
}

bool earlier_form(const TaskSpec& task, TaskSpec& earlier) {
  if (task.kind != TaskKind::BatchMatmul) return false;
  earlier = task;
  for (const char* key : {"constant_b", "a_heads", "b_heads"}) earlier.params[key] = "0";
  return earlier.key() != task.key();
}

std::string param_text(const std::string& key, int64_t value) {
  return key + "=" + std::to_string(value);
}

std::vector<std::string> known_ops() {
  std::vector<std::string> ops;
  for (TaskKind k : all_task_kinds()) ops.push_back(task_name(k));
  return ops;
}

std::vector<std::string> known_epilogues() {
  std::vector<std::string> words = {"bias"};
  for (OpKind k : all_op_kinds()) {
    const OpDef& d = op_def(k);
    if (d.role != OpRole::Elementwise || d.arity < 1) continue;
    words.push_back(op_name(k));
    if (d.arity == 2 && !d.commutative) words.push_back("r" + op_name(k));
  }
  return words;
}

std::vector<std::string> known_param_keys() {
  std::vector<std::string> keys;
  for (TaskKind k : all_task_kinds())
    for (const auto& p : task_def(k).params)
      if (p.in_prompt && std::find(keys.begin(), keys.end(), p.name) == keys.end())
        keys.push_back(p.name);
  return keys;
}

std::vector<std::string> known_param_words() {
  std::vector<std::string> words;
  for (TaskKind k : all_task_kinds())
    for (const auto& p : task_def(k).params)
      for (const auto& w : p.words)
        if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  return words;
}

}  // namespace tlm
