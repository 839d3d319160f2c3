// RecordStore on SQLite: opens (or creates) the record database, refusing files that
// are not SQLite, are corrupt, or belong to another program without touching them;
// then keeps it in WAL mode and writes each batch in one IMMEDIATE transaction with
// INSERT OR IGNORE on (hardware, task_key, decisions_hash), so merges are idempotent.
#include "store/record_store.h"

#include <sqlite3.h>

#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

const char* const kApplication = "tlm-records";
const char* const kSchemaVersion = "1";

const char* const kSchema =
    "CREATE TABLE IF NOT EXISTS meta ("
    "  key TEXT PRIMARY KEY NOT NULL,"
    "  value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS records ("
    "  id INTEGER PRIMARY KEY,"
    "  hardware TEXT NOT NULL,"
    "  task_key TEXT NOT NULL,"
    "  task_spec TEXT NOT NULL,"
    "  decisions TEXT NOT NULL,"
    "  decisions_hash TEXT NOT NULL,"
    "  method TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  min_ms REAL NOT NULL,"
    "  median_ms REAL NOT NULL,"
    "  runs INTEGER NOT NULL,"
    "  checkpoint TEXT NOT NULL,"
    "  detail TEXT NOT NULL,"
    "  created REAL NOT NULL,"
    "  UNIQUE (hardware, task_key, decisions_hash));"
    "CREATE INDEX IF NOT EXISTS records_task ON records (task_key, hardware);"
    "INSERT OR IGNORE INTO meta (key, value) VALUES ('application', 'tlm-records');"
    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '1');";

const char* const kColumns =
    "hardware, task_key, task_spec, decisions, method, status, min_ms, median_ms, runs, "
    "checkpoint, detail, created";

// The canonical text of a decision list: "[1,2,3]". Stored as is and hashed.
std::string decisions_text(const std::vector<int64_t>& decisions) {
  std::string text = "[";
  for (size_t i = 0; i < decisions.size(); ++i) {
    if (i) text += ",";
    text += std::to_string(decisions[i]);
  }
  return text + "]";
}

std::vector<int64_t> parse_decisions(const std::string& text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    throw Error("record store: malformed decision list '" + text + "'");
  std::vector<int64_t> decisions;
  std::string inner = text.substr(1, text.size() - 2);
  if (inner.empty()) return decisions;
  for (const std::string& part : split(inner, ','))
    decisions.push_back(parse_int(part, "record store decision list"));
  return decisions;
}

// A failed SQLite call: keeps the SQLite error code and message for the open checks.
class SqlError : public Error {
 public:
  SqlError(const std::string& what, int code, const std::string& message)
      : Error("record store: " + what + " failed (" + message + ")"),
        code(code),
        sqlite_message(message) {}
  int code;
  std::string sqlite_message;
};

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
  throw SqlError(what, sqlite3_errcode(db), sqlite3_errmsg(db));
}

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) fail(db, "prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int index, const std::string& value) {
    check(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                            SQLITE_TRANSIENT));
  }
  void bind(int index, double value) { check(sqlite3_bind_double(stmt_, index, value)); }
  void bind(int index, int64_t value) { check(sqlite3_bind_int64(stmt_, index, value)); }

  // Advances to the next row; false when done.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail(db_, "query");
    return false;
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  std::string text(int column) const {
    const void* data = sqlite3_column_blob(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    return data ? std::string(static_cast<const char*>(data), size) : std::string();
  }
  double real(int column) const { return sqlite3_column_double(stmt_, column); }
  int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, "bind");
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, sql);
}

// BEGIN IMMEDIATE ... COMMIT, rolled back if commit() was not reached.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec(db, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, "COMMIT");
    open_ = false;
  }

 private:
  sqlite3* db_;
  bool open_ = true;
};

Record read_record(const Statement& row) {
  Record r;
  r.hardware = row.text(0);
  r.task_key = row.text(1);
  r.task_spec = row.text(2);
  r.decisions = parse_decisions(row.text(3));
  r.method = row.text(4);
  r.status = status_named(row.text(5));
  r.min_ms = row.real(6);
  r.median_ms = row.real(7);
  r.runs = static_cast<int>(row.integer(8));
  r.checkpoint = row.text(9);
  r.detail = row.text(10);
  r.created = row.real(11);
  return r;
}

std::vector<Record> read_records(Statement& query) {
  std::vector<Record> records;
  while (query.step()) records.push_back(read_record(query));
  return records;
}

// What an opened file holds, found by reading only (nothing is written).
enum class Contents { kEmpty, kOurs, kForeign };

// Reads one meta value; empty when absent.
std::string meta_value(sqlite3* db, const std::string& key) {
  Statement query(db, "SELECT value FROM meta WHERE key = ?");
  query.bind(1, key);
  return query.step() ? query.text(0) : std::string();
}

Contents classify(sqlite3* db) {
  Statement tables(db, "SELECT count(*) FROM sqlite_master");
  tables.step();
  if (tables.integer(0) == 0) return Contents::kEmpty;
  Statement has_meta(db,
                     "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  has_meta.step();
  if (has_meta.integer(0) == 0) return Contents::kForeign;
  return meta_value(db, "application") == kApplication ? Contents::kOurs : Contents::kForeign;
}

// Rewrites a SQLite error of `body` as "record store 'PATH': ...", naming a file that
// is not a database, or is corrupt, as not a tlm record database.
template <typename Body>
auto with_path(const std::string& path, Body body) {
  try {
    return body();
  } catch (const SqlError& e) {
    if (e.code == SQLITE_NOTADB || e.code == SQLITE_CORRUPT)
      throw Error("record store '" + path + "': not a tlm record database (" + e.sqlite_message +
                  ")");
    throw Error("record store '" + path + "': " + e.sqlite_message);
  }
}

// Creates the schema unless, by now, another program's tables are there.
Contents create_schema(sqlite3* db) {
  Transaction transaction(db);
  Contents contents = classify(db);
  if (contents == Contents::kForeign) return contents;  // rolled back: nothing written
  exec(db, kSchema);
  transaction.commit();
  return Contents::kOurs;
}

// Validates the file before writing anything, then sets WAL and creates the schema.
void prepare(sqlite3* db, const std::string& path) {
  sqlite3_busy_timeout(db, 5000);
  Contents contents = with_path(path, [&] { return classify(db); });
  if (contents == Contents::kEmpty) {
    with_path(path, [&] { exec(db, "PRAGMA journal_mode=WAL"); });
    contents = with_path(path, [&] { return create_schema(db); });
  }
  if (contents == Contents::kForeign)
    throw Error("record store '" + path + "': a SQLite database of another program");
  std::string version = with_path(path, [&] { return meta_value(db, "schema_version"); });
  if (version != kSchemaVersion)
    throw Error("record store '" + path + "': unsupported schema version '" + version + "'");
  with_path(path, [&] {
    exec(db, "PRAGMA journal_mode=WAL");
    exec(db, "PRAGMA synchronous=FULL");
  });
}

}  // namespace

std::string Record::decisions_hash() const {
  return hash_hex(decisions_text(decisions));
}

RecordStore::RecordStore(const std::string& path) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error("record store '" + path + "': cannot open (" + message + ")");
  }
  try {
    prepare(db_, path);
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

RecordStore::~RecordStore() {
  sqlite3_close_v2(db_);
}

// The upsert of OnDuplicate::ReplaceIfNewer: every measured field of the stored row
// becomes the newer record's (the key columns are the same by definition).
constexpr const char* kReplaceIfNewer =
    " ON CONFLICT (hardware, task_key, decisions_hash) DO UPDATE SET"
    " task_spec = excluded.task_spec, method = excluded.method, status = excluded.status,"
    " min_ms = excluded.min_ms, median_ms = excluded.median_ms, runs = excluded.runs,"
    " checkpoint = excluded.checkpoint, detail = excluded.detail, created = excluded.created"
    " WHERE excluded.created > records.created";

int RecordStore::add(const std::vector<Record>& batch, OnDuplicate on_duplicate) {
  Transaction transaction(db_);
  const bool replace = on_duplicate == OnDuplicate::ReplaceIfNewer;
  Statement insert(db_, std::string(replace ? "INSERT" : "INSERT OR IGNORE") + " INTO records (" +
                            kColumns + ", decisions_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)" +
                            (replace ? kReplaceIfNewer : ""));
  int inserted = 0;
  for (const Record& r : batch) {
    std::string decisions = decisions_text(r.decisions);
    insert.bind(1, r.hardware);
    insert.bind(2, r.task_key);
    insert.bind(3, r.task_spec);
    insert.bind(4, decisions);
    insert.bind(5, r.method);
    insert.bind(6, status_name(r.status));
    insert.bind(7, r.min_ms);
    insert.bind(8, r.median_ms);
    insert.bind(9, static_cast<int64_t>(r.runs));
    insert.bind(10, r.checkpoint);
    insert.bind(11, r.detail);
    insert.bind(12, r.created);
    insert.bind(13, hash_hex(decisions));
    insert.step();
    inserted += sqlite3_changes(db_);
    insert.reset();
  }
  transaction.commit();
  return inserted;
}

std::vector<Record> RecordStore::query(const std::string& task_key,
                                       const std::string& hardware) const {
  std::string sql = std::string("SELECT ") + kColumns + " FROM records WHERE task_key = ?";
  if (!hardware.empty()) sql += " AND hardware = ?";
  Statement query(db_, sql + " ORDER BY created, id");
  query.bind(1, task_key);
  if (!hardware.empty()) query.bind(2, hardware);
  return read_records(query);
}

std::vector<Record> RecordStore::best(const std::string& task_key, const std::string& hardware,
                                      int limit) const {
  if (limit <= 0) return {};
  Statement query(db_, std::string("SELECT ") + kColumns +
                           " FROM records WHERE task_key = ? AND hardware = ? AND status = 'ok'"
                           " ORDER BY median_ms, id LIMIT ?");
  query.bind(1, task_key);
  query.bind(2, hardware);
  query.bind(3, static_cast<int64_t>(limit));
  return read_records(query);
}

namespace {

std::vector<std::string> first_column(Statement& query) {
  std::vector<std::string> values;
  while (query.step()) values.push_back(query.text(0));
  return values;
}

}  // namespace

std::vector<std::string> RecordStore::task_keys() const {
  Statement query(db_, "SELECT DISTINCT task_key FROM records ORDER BY task_key");
  return first_column(query);
}

std::vector<std::string> RecordStore::hardware_fingerprints() const {
  Statement query(db_,
                  "SELECT DISTINCT hardware FROM records WHERE status = 'ok' ORDER BY hardware");
  return first_column(query);
}

int64_t RecordStore::count() const {
  Statement query(db_, "SELECT count(*) FROM records");
  query.step();
  return query.integer(0);
}

}  // namespace tlm
