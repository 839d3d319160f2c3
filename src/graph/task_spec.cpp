#include "graph/task_spec.h"

#include <algorithm>

#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

// One parameter of an op: its name, a default ("" = required), and for word
// parameters the allowed words (empty = integer parameter).
struct ParamSchema {
  std::string name;
  std::string default_value;
  std::vector<std::string> words = {};
};

struct OpSchema {
  std::string op;
  std::vector<ParamSchema> params;
};

const std::vector<OpSchema>& op_schemas() {
  static const std::vector<OpSchema> schemas = {
      {"matmul", {{"m", ""}, {"n", ""}, {"k", ""}}},
      {"dense", {{"m", ""}, {"n", ""}, {"k", ""}}},
      {"batch_matmul", {{"b", ""}, {"m", ""}, {"n", ""}, {"k", ""}}},
      {"conv2d",
       {{"n", "1"},
        {"c", ""},
        {"h", ""},
        {"w", ""},
        {"k", ""},
        {"r", ""},
        {"s", ""},
        {"stride", "1"},
        {"pad", "0"},
        {"dilation", "1"},
        {"groups", "1"}}},
      {"dwconv2d",
       {{"n", "1"},
        {"c", ""},
        {"h", ""},
        {"w", ""},
        {"r", ""},
        {"s", ""},
        {"stride", "1"},
        {"pad", "0"},
        {"dilation", "1"}}},
      {"pool2d",
       {{"kind", "", {"max", "avg"}},
        {"n", "1"},
        {"c", ""},
        {"h", ""},
        {"w", ""},
        {"r", ""},
        {"s", ""},
        {"stride", "1"},
        {"pad", "0"}}},
      {"global_pool",
       {{"kind", "avg", {"max", "avg"}}, {"n", "1"}, {"c", ""}, {"h", ""}, {"w", ""}}},
      {"softmax", {{"rows", ""}, {"cols", ""}}},
      {"layernorm", {{"rows", ""}, {"cols", ""}}},
      {"rmsnorm", {{"rows", ""}, {"cols", ""}}},
      {"reduce", {{"kind", "sum", {"sum", "mean", "max"}}, {"rows", ""}, {"cols", ""}}},
      {"elementwise", {{"rows", ""}, {"cols", ""}}},
      {"channel_scale", {{"n", "1"}, {"c", ""}, {"h", ""}, {"w", ""}}},
  };
  return schemas;
}

const std::vector<std::string>& epilogue_names() {
  static const std::vector<std::string> names = {"bias",    "relu", "relu6", "gelu", "silu",
                                                 "sigmoid", "tanh", "add",   "mul"};
  return names;
}

const OpSchema& find_schema(const std::string& op) {
  for (const auto& schema : op_schemas())
    if (schema.op == op) return schema;
  throw Error("unknown op '" + op + "' (known: " + join(known_ops(), ", ") + ")");
}

const ParamSchema* find_param(const OpSchema& schema, const std::string& name) {
  for (const auto& p : schema.params)
    if (p.name == name) return &p;
  return nullptr;
}

void check_value(const OpSchema& schema, const ParamSchema& param, const std::string& value) {
  std::string where = schema.op + " parameter '" + param.name + "'";
  if (!param.words.empty()) {
    if (std::find(param.words.begin(), param.words.end(), value) == param.words.end())
      throw Error(where + ": '" + value + "' is not one of " + join(param.words, "|"));
    return;
  }
  int64_t v = parse_int(value, where);
  bool may_be_zero = param.name == "pad";
  if (v < 0 || (v == 0 && !may_be_zero) || v > (int64_t(1) << 24))
    throw Error(where + ": value " + value + " is out of range");
}

void parse_params(const OpSchema& schema, const std::string& text, TaskSpec& spec) {
  if (!text.empty()) {
    for (const auto& item : split(text, ',')) {
      auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("task spec: expected key=value, got '" + item + "'");
      std::string name = item.substr(0, eq), value = item.substr(eq + 1);
      const ParamSchema* param = find_param(schema, name);
      if (!param) throw Error("task spec: op '" + schema.op + "' has no parameter '" + name + "'");
      if (spec.params.count(name)) throw Error("task spec: parameter '" + name + "' given twice");
      check_value(schema, *param, value);
      spec.params[name] = value;
    }
  }
  for (const auto& p : schema.params) {
    if (spec.params.count(p.name)) continue;
    if (p.default_value.empty())
      throw Error("task spec: op '" + schema.op + "' needs parameter '" + p.name + "'");
    spec.params[p.name] = p.default_value;
  }
}

}  // namespace

int64_t TaskSpec::get(const std::string& key_name) const {
  auto it = params.find(key_name);
  if (it == params.end()) throw Error("task " + op + " has no parameter '" + key_name + "'");
  return parse_int(it->second, op + " parameter '" + key_name + "'");
}

const std::string& TaskSpec::word(const std::string& key_name) const {
  auto it = params.find(key_name);
  if (it == params.end()) throw Error("task " + op + " has no parameter '" + key_name + "'");
  return it->second;
}

bool TaskSpec::has_epilogue(const std::string& name) const {
  return std::find(epilogue.begin(), epilogue.end(), name) != epilogue.end();
}

std::string TaskSpec::key() const {
  std::vector<std::string> items;
  for (const auto& p : find_schema(op).params) items.push_back(p.name + "=" + params.at(p.name));
  std::string text = op + ":" + join(items, ",");
  for (const auto& e : epilogue) text += "+" + e;
  return text;
}

TaskSpec parse_task_spec(const std::string& text) {
  if (text.empty()) throw Error("task spec is empty (expected OP:key=value,...)");
  auto pieces = split(text, '+');
  auto colon = pieces[0].find(':');
  TaskSpec spec;
  spec.op = pieces[0].substr(0, colon);
  const OpSchema& schema = find_schema(spec.op);
  parse_params(schema, colon == std::string::npos ? "" : pieces[0].substr(colon + 1), spec);
  const auto& names = epilogue_names();
  for (size_t i = 1; i < pieces.size(); ++i) {
    if (std::find(names.begin(), names.end(), pieces[i]) == names.end())
      throw Error("task spec: unknown epilogue '" + pieces[i] + "' (known: " + join(names, ", ") +
                  ")");
    spec.epilogue.push_back(pieces[i]);
  }
  if (spec.op == "conv2d") {
    int64_t groups = spec.get("groups");
    if (spec.get("c") % groups || spec.get("k") % groups)
      throw Error("task spec: conv2d groups=" + std::to_string(groups) + " must divide c and k");
  }
  return spec;
}

std::vector<std::string> known_ops() {
  std::vector<std::string> ops;
  for (const auto& s : op_schemas()) ops.push_back(s.op);
  return ops;
}

std::vector<std::string> known_epilogues() {
  return epilogue_names();
}

std::vector<std::string> param_keys(const std::string& op) {
  std::vector<std::string> keys;
  for (const auto& p : find_schema(op).params) keys.push_back(p.name);
  return keys;
}

std::vector<std::string> known_param_keys() {
  std::vector<std::string> keys;
  for (const auto& schema : op_schemas())
    for (const auto& p : schema.params)
      if (std::find(keys.begin(), keys.end(), p.name) == keys.end()) keys.push_back(p.name);
  return keys;
}

std::vector<std::string> known_param_words() {
  std::vector<std::string> words;
  for (const auto& schema : op_schemas())
    for (const auto& p : schema.params)
      for (const auto& w : p.words)
        if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  return words;
}

}  // namespace tlm
