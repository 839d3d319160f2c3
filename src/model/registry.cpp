#include "model/registry.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"

namespace tlm {
namespace {

bool is_dir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path + "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw Error("'" + path + "' is not valid JSON");
  }
}

}  // namespace

Registry::Registry(std::string models_dir) : dir_(std::move(models_dir)) {
  std::string path = dir_ + "/registry.json";
  std::ifstream probe(path);
  if (!probe) return;
  auto j = read_json(path);
  try {
    default_ = j.value("default", "");
    base_ = j.value("base", "");
    const auto hosts = j.value("hosts", nlohmann::json::object());
    for (const auto& [host, entry] : hosts.items()) {
      HostDefault d{entry.at("model").get<std::string>(),
                    entry.value("activation_block", int64_t(-1))};
      if (d.activation_block != -1 && d.activation_block != 0 && d.activation_block != 16)
        throw Error("registry '" + path + "': host '" + host + "' names activation block " +
                    std::to_string(d.activation_block) + " (16 or 0)");
      host_defaults_[host] = d;
    }
    for (const auto& h : j.value("history", nlohmann::json::array())) history_.push_back(h.dump());
  } catch (const nlohmann::json::exception&) {
    throw Error("registry '" + path + "' is corrupt");
  }
}

std::string Registry::path_of(const std::string& id) const {
  std::string path = dir_ + "/" + id;
  if (id.empty() || id.find('/') != std::string::npos || !is_dir(path))
    throw Error("no checkpoint '" + id + "' in '" + dir_ + "'");
  return path;
}

CheckpointSummary Registry::show(const std::string& id) const {
  auto meta = read_json(path_of(id) + "/meta.json");
  return {id, meta.value("parent", ""), meta.value("data_hash", ""), meta.value("command", ""),
          meta.value("metrics", nlohmann::json::object()).dump()};
}

std::vector<CheckpointSummary> Registry::list() const {
  std::vector<std::string> ids;
  if (DIR* d = opendir(dir_.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("tlm-", 0) == 0 && name.find(".tmp") == std::string::npos &&
          is_dir(dir_ + "/" + name))
        ids.push_back(name);
    }
    closedir(d);
  }
  std::sort(ids.begin(), ids.end());
  std::vector<CheckpointSummary> out;
  for (const auto& id : ids) out.push_back(show(id));
  return out;
}

void Registry::record(const std::string& action, const std::string& id, const std::string& reason,
                      const std::string& fingerprint) {
  nlohmann::json entry = {
      {"time", double(std::time(nullptr))}, {"action", action}, {"id", id}, {"reason", reason}};
  if (!fingerprint.empty()) entry["hardware"] = fingerprint;
  history_.push_back(entry.dump());
  save();
}

std::string Registry::default_for(const std::string& fingerprint) const {
  auto host = host_defaults_.find(fingerprint);
  return host == host_defaults_.end() ? default_ : host->second.model;
}

int64_t Registry::activation_block_for(const std::string& fingerprint) const {
  auto host = host_defaults_.find(fingerprint);
  return host == host_defaults_.end() ? -1 : host->second.activation_block;
}

void Registry::promote_for_host(const std::string& id, const std::string& fingerprint,
                                const std::string& reason, int64_t activation_block) {
  path_of(id);
  if (fingerprint.empty()) throw Error("promote: no hardware fingerprint for the host");
  if (activation_block != -1 && activation_block != 0 && activation_block != 16)
    throw Error("promote: a host's activation layout is 16 or 0 (NCHW)");
  HostDefault& entry = host_defaults_[fingerprint];
  entry.model = id;
  if (activation_block != -1) entry.activation_block = activation_block;
  record("promote-host", id, reason, fingerprint);
}

void Registry::rollback_host(const std::string& fingerprint, const std::string& reason) {
  if (!host_defaults_.erase(fingerprint))
    throw Error("rollback: no default promoted for '" + fingerprint + "'");
  record("rollback-host", default_, reason, fingerprint);
}

void Registry::promote(const std::string& id, const std::string& reason) {
  path_of(id);
  default_ = id;
  record("promote", id, reason);
}

void Registry::set_base(const std::string& id, const std::string& reason) {
  path_of(id);
  base_ = id;
  if (default_.empty()) default_ = id;
  record("base", id, reason);
}

void Registry::rollback(const std::string& id, const std::string& reason) {
  std::string target = id.empty() ? base_ : id;
  if (target.empty()) throw Error("rollback: no validated base is set");
  path_of(target);
  default_ = target;
  record("rollback", target, reason);
}

std::string resolve_model(const std::string& model, const std::string& models_dir,
                          const std::string& fingerprint) {
  if (!model.empty()) return model;
  Registry registry(models_dir);
  std::string id = registry.default_for(fingerprint);
  if (id.empty())
    throw Error("no default model in '" + models_dir + "' (train one, or pass --model)");
  return registry.path_of(id);
}

std::string default_models_dir(const std::string& exe) {
  struct stat st;
  if (stat("models/registry.json", &st) == 0) return "models";
  std::string bin = exe.substr(0, exe.find_last_of('/') + 1);
  std::string installed = bin + "../share/tlm/models";
  if (stat((installed + "/registry.json").c_str(), &st) == 0) return installed;
  return "models";
}

void Registry::save() const {
  nlohmann::json j = {{"default", default_}, {"base", base_}, {"history", nlohmann::json::array()}};
  for (const auto& [host, entry] : host_defaults_) {
    j["hosts"][host] = {{"model", entry.model}};
    if (entry.activation_block >= 0) j["hosts"][host]["activation_block"] = entry.activation_block;
  }
  for (const auto& h : history_) j["history"].push_back(nlohmann::json::parse(h));
  std::string path = dir_ + "/registry.json", tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
    if (!out) throw Error("cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("cannot write '" + path + "'");
}

}  // namespace tlm
