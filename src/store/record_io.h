// Record files: records as JSON lines, one record per line, to carry measured data
// outside a database (the compact export shipped beside a trained checkpoint, data moved
// between machines). Importing merges idempotently, as RecordStore::add does.
#pragma once
#include <functional>
#include <string>

#include "store/record_store.h"

namespace tlm {

// Writes every record of the store (of `hardware` only when it is not empty), grouped by
// task, oldest first; returns how many.
int64_t export_records(const RecordStore& store, const std::string& path,
                       const std::string& hardware = "");
// What a record must satisfy beyond its own fields (the store knows no task spaces: the
// caller checks that the spec is valid, the key is its canonical key and the decisions
// are legal in the task's space, and may bring decisions recorded in an older form of the
// space to today's); throws tlm::Error saying what is wrong.
using RecordCheck = std::function<void(Record&)>;

// Adds the file's records; returns how many rows it wrote (RecordStore::add: the new ones,
// and under ReplaceIfNewer the stored ones it replaced). Throws tlm::Error naming the line
// of the first bad record (nothing of the file is added then): malformed JSON, a missing
// field, an unknown status, times that are not finite and non-negative (positive, with
// min <= median and at least one run, for an ok record), or one `check` refuses.
int64_t import_records(RecordStore& store, const std::string& path, const RecordCheck& check = {},
                       RecordStore::OnDuplicate on_duplicate = RecordStore::OnDuplicate::Keep);

}  // namespace tlm
