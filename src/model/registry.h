// Registry: which checkpoint tlm uses. Checkpoints are immutable folders under a models
// directory; `registry.json` beside them names the default (what `tlm gen` and compiling
// use), the validated base (the shipped model, which rollback can always return to) and
// an append-only history of every promotion and rollback with its reason.
//
// A host may have its own default: a checkpoint fine-tuned on that machine's records
// (`train finetune --hardware this`), promoted for its fingerprint only. One small model
// trained on every host's records learns each host's fastest schedules less well than one
// that learned its own host's; the per-host entry lets a machine use its specialist while
// every other machine keeps the shared default. The entry may also name the activation
// layout measured faster on that machine, which compiling there uses when its own records
// cannot decide (compiler/layout_choice.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tlm {

struct HostDefault {
  std::string model;              // checkpoint id
  int64_t activation_block = -1;  // 16 or 0 (NCHW); -1: none named (the rule decides)
};

struct CheckpointSummary {
  std::string id, parent, data_hash, command, metrics_json;
};

class Registry {
 public:
  // Reads `<models_dir>/registry.json` if present; throws tlm::Error if it is corrupt.
  explicit Registry(std::string models_dir);

  std::string default_id() const { return default_; }
  // The checkpoint promoted for the machine of `fingerprint`, else the default.
  std::string default_for(const std::string& fingerprint) const;
  const std::map<std::string, HostDefault>& host_defaults() const { return host_defaults_; }
  // The layout the machine's entry names, else -1.
  int64_t activation_block_for(const std::string& fingerprint) const;
  std::string base_id() const { return base_; }
  std::string path_of(const std::string& id) const;  // throws if no such checkpoint
  std::vector<CheckpointSummary> list() const;       // every checkpoint folder, by id
  CheckpointSummary show(const std::string& id) const;

  // Each writes registry.json atomically and appends to its history.
  void promote(const std::string& id, const std::string& reason);
  void set_base(const std::string& id, const std::string& reason);
  void rollback(const std::string& id, const std::string& reason);  // "" = to the base
  // The default of one machine only, with its layout when `activation_block` is 16 or 0
  // (-1 keeps the entry's); rolling a host back drops its entry (the shared default and
  // the rule apply again).
  void promote_for_host(const std::string& id, const std::string& fingerprint,
                        const std::string& reason, int64_t activation_block = -1);
  void rollback_host(const std::string& fingerprint, const std::string& reason);
  std::vector<std::string> history() const { return history_; }

 private:
  void save() const;
  void record(const std::string& action, const std::string& id, const std::string& reason,
              const std::string& fingerprint = "");

  std::string dir_, default_, base_;
  std::map<std::string, HostDefault> host_defaults_;  // by fingerprint
  std::vector<std::string> history_;                  // one JSON object per entry
};

// The checkpoint folder to use: `model` if given, else the default of `models_dir`'s
// registry for the machine of `fingerprint` (Registry::default_for); throws tlm::Error
// when there is none.
std::string resolve_model(const std::string& model, const std::string& models_dir,
                          const std::string& fingerprint = "");

// The models folder that commands reading the shipped model use by default: ./models when
// it holds a registry (a source checkout), else the one installed beside the executable
// `exe` (<prefix>/share/tlm/models), else ./models.
std::string default_models_dir(const std::string& exe);

}  // namespace tlm
