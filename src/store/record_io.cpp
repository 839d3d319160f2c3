#include "store/record_io.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace tlm {
namespace {

using Json = nlohmann::json;

Json to_json(const Record& r) {
  return {
      {"hardware", r.hardware},     {"task_key", r.task_key},   {"task_spec", r.task_spec},
      {"decisions", r.decisions},   {"method", r.method},       {"status", status_name(r.status)},
      {"min_ms", r.min_ms},         {"median_ms", r.median_ms}, {"runs", r.runs},
      {"checkpoint", r.checkpoint}, {"detail", r.detail},       {"created", r.created}};
}

Record from_json(const Json& j) {
  Record r;
  r.hardware = j.at("hardware").get<std::string>();
  r.task_key = j.at("task_key").get<std::string>();
  r.task_spec = j.at("task_spec").get<std::string>();
  r.decisions = j.at("decisions").get<std::vector<int64_t>>();
  r.method = j.at("method").get<std::string>();
  r.status = status_named(j.at("status").get<std::string>());
  r.min_ms = j.at("min_ms").get<double>();
  r.median_ms = j.at("median_ms").get<double>();
  r.runs = j.at("runs").get<int>();
  r.checkpoint = j.at("checkpoint").get<std::string>();
  r.detail = j.at("detail").get<std::string>();
  r.created = j.at("created").get<double>();
  return r;
}

void check_times(const Record& r) {
  if (!std::isfinite(r.min_ms) || !std::isfinite(r.median_ms) || r.min_ms < 0 || r.median_ms < 0 ||
      r.runs < 0)
    throw Error("times must be finite and non-negative");
  if (r.status == Status::Ok && !(r.min_ms > 0 && r.min_ms <= r.median_ms && r.runs >= 1))
    throw Error("an ok record needs 0 < min_ms <= median_ms and at least one run");
}

}  // namespace

int64_t export_records(const RecordStore& store, const std::string& path,
                       const std::string& hardware) {
  std::ofstream out(path);
  if (!out) throw Error("cannot write '" + path + "'");
  int64_t written = 0;
  for (const auto& key : store.task_keys())
    for (const auto& r : store.query(key, hardware)) {
      out << to_json(r).dump() << "\n";
      ++written;
    }
  if (!out) throw Error("cannot write '" + path + "'");
  return written;
}

int64_t import_records(RecordStore& store, const std::string& path, const RecordCheck& check,
                       RecordStore::OnDuplicate on_duplicate) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path + "'");
  std::vector<Record> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      records.push_back(from_json(Json::parse(line)));
      check_times(records.back());
      if (check) check(records.back());
    } catch (const Json::exception&) {
      throw Error("'" + path + "' line " + std::to_string(number) + " is not a record");
    } catch (const Error& e) {
      throw Error("'" + path + "' line " + std::to_string(number) + ": " + e.what());
    }
  }
  return store.add(records, on_duplicate);
}

}  // namespace tlm
