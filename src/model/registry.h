// Registry: which checkpoint tlm uses. Checkpoints are immutable folders under a models
// directory; `registry.json` beside them names the default (what `tlm gen` and compiling
// use), the validated base (the shipped model, which rollback can always return to) and
// an append-only history of every promotion and rollback with its reason.
#pragma once
#include <string>
#include <vector>

namespace tlm {

struct CheckpointSummary {
  std::string id, parent, data_hash, command, metrics_json;
};

class Registry {
 public:
  // Reads `<models_dir>/registry.json` if present; throws tlm::Error if it is corrupt.
  explicit Registry(std::string models_dir);

  std::string default_id() const { return default_; }
  std::string base_id() const { return base_; }
  std::string path_of(const std::string& id) const;  // throws if no such checkpoint
  std::vector<CheckpointSummary> list() const;       // every checkpoint folder, by id
  CheckpointSummary show(const std::string& id) const;

  // Each writes registry.json atomically and appends to its history.
  void promote(const std::string& id, const std::string& reason);
  void set_base(const std::string& id, const std::string& reason);
  void rollback(const std::string& id, const std::string& reason);  // "" = to the base
  std::vector<std::string> history() const { return history_; }

 private:
  void save() const;
  void record(const std::string& action, const std::string& id, const std::string& reason);

  std::string dir_, default_, base_;
  std::vector<std::string> history_;  // one JSON object per entry
};

// The checkpoint folder to use: `model` if given, else the default of `models_dir`'s
// registry; throws tlm::Error when there is none.
std::string resolve_model(const std::string& model, const std::string& models_dir);

// The models folder that commands reading the shipped model use by default: ./models when
// it holds a registry (a source checkout), else the one installed beside the executable
// `exe` (<prefix>/share/tlm/models), else ./models.
std::string default_models_dir(const std::string& exe);

}  // namespace tlm
