// Record files: records as JSON lines, one record per line, to carry measured data
// outside a database (the compact export shipped beside a trained checkpoint, data moved
// between machines). Importing merges idempotently, as RecordStore::add does.
#pragma once
#include <string>

#include "store/record_store.h"

namespace tlm {

// Writes every record of the store (of `hardware` only when it is not empty), grouped by
// task, oldest first; returns how many.
int64_t export_records(const RecordStore& store, const std::string& path,
                       const std::string& hardware = "");
// Adds the file's records; returns how many were new. Throws tlm::Error naming the line
// of the first malformed record (nothing of the file is added then).
int64_t import_records(RecordStore& store, const std::string& path);

}  // namespace tlm
