#include "model/checkpoint.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lang/vocabulary.h"
#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("checkpoint: cannot read '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw Error("checkpoint: cannot write '" + path + "'");
}

std::string weights_bytes(Gpt& model) {
  std::ostringstream out;
  torch::save(model, out);
  return out.str();
}

std::string content_id(const std::string& config, const std::string& weights) {
  return "tlm-" + hash_hex(config + '\0' + weights);
}

}  // namespace

std::string write_checkpoint(Gpt& model, CheckpointInfo info, const std::string& models_dir) {
  std::string config = model->config().to_json(), weights = weights_bytes(model);
  info.id = content_id(config, weights);
  std::string dir = models_dir + "/" + info.id;
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return info.id;  // immutable: equal content, same id
  std::filesystem::create_directories(models_dir);
  std::string tmp = dir + ".tmp";
  ::mkdir(tmp.c_str(), 0755);
  nlohmann::json meta = {{"id", info.id},
                         {"vocab_hash", Vocabulary::get().hash()},
                         {"data_hash", info.data_hash},
                         {"parent", info.parent},
                         {"command", info.command},
                         {"metrics", nlohmann::json::parse(info.metrics_json)}};
  write_file(tmp + "/config.json", config);
  write_file(tmp + "/weights.pt", weights);
  write_file(tmp + "/meta.json", meta.dump(2));
  if (std::rename(tmp.c_str(), dir.c_str()) != 0)
    throw Error("checkpoint: cannot create '" + dir + "'");
  return info.id;
}

Gpt load_checkpoint(const std::string& path, CheckpointInfo* info) {
  std::string config_text = read_file(path + "/config.json");
  std::string weights = read_file(path + "/weights.pt");
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(read_file(path + "/meta.json"));
  } catch (const nlohmann::json::exception&) {
    throw Error("checkpoint: '" + path + "/meta.json' is not valid JSON");
  }
  std::string id = meta.value("id", "");
  if (id != content_id(config_text, weights))
    throw Error("checkpoint: '" + path + "' does not match its id (corrupt or edited)");
  ModelConfig config = ModelConfig::from_json(config_text);
  // Made with this vocabulary or an earlier one (the language only appends words).
  const Vocabulary& vocabulary = Vocabulary::get();
  if (config.vocab < 1 || config.vocab > vocabulary.size() ||
      meta.value("vocab_hash", "") != vocabulary.prefix_hash(config.vocab))
    throw Error("checkpoint: '" + path + "' was trained with another vocabulary");
  Gpt model(config);
  try {
    std::istringstream in(weights);
    torch::load(model, in);
  } catch (const c10::Error& e) {
    throw Error("checkpoint: cannot load weights of '" + path + "'");
  }
  model->extend_vocabulary(vocabulary.size());
  if (info) {
    info->id = id;
    info->vocab_hash = meta.value("vocab_hash", "");
    info->data_hash = meta.value("data_hash", "");
    info->parent = meta.value("parent", "");
    info->command = meta.value("command", "");
    info->metrics_json = meta.value("metrics", nlohmann::json::object()).dump();
  }
  return model;
}

void blend_into(Gpt& a, Gpt& b, double weight) {
  if (!(weight >= 0 && weight <= 1)) throw Error("blend: the weight must be in [0, 1]");
  if (a->config().to_json() != b->config().to_json())
    throw Error("blend: the two checkpoints have different configurations");
  auto into = a->named_parameters(), from = b->named_parameters();
  if (into.size() != from.size()) throw Error("blend: the two checkpoints differ in parameters");
  torch::NoGradGuard no_grad;
  for (const auto& item : into) {
    const torch::Tensor* other = from.find(item.key());
    if (!other || !other->sizes().equals(item.value().sizes()))
      throw Error("blend: parameter '" + item.key() + "' differs in shape or is missing");
    item.value().mul_(1 - weight).add_(*other, weight);
  }
}

}  // namespace tlm
