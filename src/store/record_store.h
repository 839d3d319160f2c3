// RecordStore: the SQLite database of measured schedules (DESIGN.md, "Records").
//
// One row per (hardware fingerprint, task key, hash of the decision list): merging the
// same record twice is a no-op, so stores from many machines or MPI ranks merge
// idempotently. WAL mode and one transaction per batch: a process killed mid-batch
// loses at most that batch and never corrupts what was committed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "measure/status.h"

struct sqlite3;

namespace tlm {

struct Record {
  std::string hardware;            // hardware fingerprint (target + cores + caches)
  std::string task_key;            // canonical TaskSpec::key()
  std::string task_spec;           // the spec as the user wrote it
  std::vector<int64_t> decisions;  // the schedule: values at each decision point, in order
  std::string method;              // random | evolutionary | adams2019 | onednn | tlm ...
  Status status = Status::Ok;
  double min_ms = 0;
  double median_ms = 0;
  int runs = 0;
  std::string checkpoint;  // model checkpoint id, when a model produced it
  std::string detail;      // error text, or what a library/autoscheduler chose
  double created = 0;      // unix time, seconds

  std::string decisions_hash() const;  // stable hash of `decisions`
};

class RecordStore {
 public:
  // Opens or creates the database. Throws tlm::Error (one line) if the file is not a
  // SQLite database, is corrupt, or is a SQLite database of some other program.
  explicit RecordStore(const std::string& path);
  ~RecordStore();
  RecordStore(const RecordStore&) = delete;
  RecordStore& operator=(const RecordStore&) = delete;

  // What adding does with a record of a schedule already stored (same hardware, task and
  // decisions): keep the stored one (merging stays idempotent), or replace it when the
  // new one is newer (a re-timing under a newer measurement protocol).
  enum class OnDuplicate { Keep, ReplaceIfNewer };
  // Adds a batch in one transaction; returns how many rows it wrote: new records, plus
  // replaced ones under ReplaceIfNewer (duplicates kept are not counted).
  int add(const std::vector<Record>& batch, OnDuplicate on_duplicate = OnDuplicate::Keep);
  // All records of a task (any hardware when `hardware` is empty), oldest first.
  std::vector<Record> query(const std::string& task_key, const std::string& hardware = "") const;
  // The fastest `limit` ok records of a task on a hardware, fastest first.
  std::vector<Record> best(const std::string& task_key, const std::string& hardware,
                           int limit) const;
  // Distinct task keys with at least one record.
  std::vector<std::string> task_keys() const;
  // Distinct hardware fingerprints with at least one ok record: the machines measured.
  std::vector<std::string> hardware_fingerprints() const;
  int64_t count() const;

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace tlm
