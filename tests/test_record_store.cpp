// Tests of the SQLite record store: exact round trips, idempotent merges, best(),
// refusal of corrupt and foreign files (left untouched), and survival of SIGKILL
// during writes (the store_writer helper is killed mid-stream).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mutate.h"
#include "store/record_io.h"
#include "store/record_store.h"
#include "util/error.h"
#include "util/strings.h"

namespace fs = std::filesystem;
using tlm::Record;
using tlm::RecordStore;

namespace {

// A fresh directory per test, removed afterwards.
class RecordStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tlm_store_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "records.db") const { return (dir_ / name).string(); }

  fs::path dir_;
};

Record make_record(const std::string& task, const std::string& hw, std::vector<int64_t> decisions,
                   tlm::Status status, double median) {
  Record r;
  r.hardware = hw;
  r.task_key = task;
  r.task_spec = task + " as written";
  r.decisions = std::move(decisions);
  r.method = "random";
  r.status = status;
  r.min_ms = median * 0.9;
  r.median_ms = median;
  r.runs = 5;
  r.created = 1700000000.0 + median;
  return r;
}

void expect_same(const Record& a, const Record& b) {
  EXPECT_EQ(a.hardware, b.hardware);
  EXPECT_EQ(a.task_key, b.task_key);
  EXPECT_EQ(a.task_spec, b.task_spec);
  EXPECT_EQ(a.decisions, b.decisions);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.min_ms, b.min_ms);  // exact: doubles are stored as doubles
  EXPECT_EQ(a.median_ms, b.median_ms);
  EXPECT_EQ(a.runs, b.runs);
  EXPECT_EQ(a.checkpoint, b.checkpoint);
  EXPECT_EQ(a.detail, b.detail);
  EXPECT_EQ(a.created, b.created);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string random_bytes(size_t size, unsigned seed) {
  std::mt19937 gen(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(gen() & 0xff);
  return bytes;
}

// Runs one SQL script on a database through the plain sqlite3 API.
void run_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// The first column of the first row of a query, as text.
std::string sql_value(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string value;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
      value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

// Expects opening `path` to throw tlm::Error whose message contains `fragment`.
void expect_refused(const std::string& path, const std::string& fragment) {
  try {
    RecordStore store(path);
    ADD_FAILURE() << "opened " << path;
  } catch (const tlm::Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST_F(RecordStoreTest, RoundTripsEveryFieldExactly) {
  Record r;
  r.hardware = "x86-64-avx512 cores=16 l1=48K l2=2M l3=32M";
  r.task_key = "conv2d:n1:c64:h56";
  r.task_spec = "conv2d n=1 c=64 h=56 'quoted' \"double\" ünïcödé";
  r.decisions = {0, -1, 42, std::numeric_limits<int64_t>::max(),
                 std::numeric_limits<int64_t>::min()};
  r.method = "evolutionary";
  r.status = tlm::Status::Ok;
  r.min_ms = 0.1;
  r.median_ms = 1.0 / 3.0;
  r.runs = 7;
  r.checkpoint = "ckpt-2024-01";
  r.detail = std::string("line one\nline two, with a nul: ") + '\0' + "end";
  r.created = 1712345678.123456789;
  Record empty = make_record("empty", "hw", {}, tlm::Status::Crash, 1e-300);
  {
    RecordStore store(path());
    EXPECT_EQ(store.add({r, empty}), 2);
  }
  RecordStore store(path());
  std::vector<Record> got = store.query(r.task_key);
  ASSERT_EQ(got.size(), 1u);
  expect_same(got[0], r);
  got = store.query("empty", "hw");
  ASSERT_EQ(got.size(), 1u);
  expect_same(got[0], empty);
}

// Export to JSON lines and import into another store: every field comes back exactly,
// importing twice adds nothing, and a malformed file adds nothing at all.
TEST_F(RecordStoreTest, ExportImportRoundTripsExactlyAndMergesIdempotently) {
  std::vector<Record> batch;
  for (int i = 0; i < 20; ++i)
    batch.push_back(
        make_record(i % 2 ? "a" : "b", "hw", {i, -i, i * 1000003}, tlm::Status::Ok, 1.0 / (i + 3)));
  batch[3].detail = std::string("nul ") + '\0' + " and \"quotes\" \u00fcn\n";
  batch[4].created = 1712345678.123456789;
  std::string file = path("records.jsonl"), other = path("other.db");
  {
    RecordStore store(path());
    store.add(batch);
    EXPECT_EQ(tlm::export_records(store, file), 20);
  }
  RecordStore copy(other);
  EXPECT_EQ(tlm::import_records(copy, file), 20);
  EXPECT_EQ(tlm::import_records(copy, file), 0);
  for (const char* key : {"a", "b"}) {
    RecordStore original(path());
    auto want = original.query(key), got = copy.query(key);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i]);
  }
  std::ofstream(file, std::ios::app) << "{\"hardware\": 3}\n";
  RecordStore third(path("third.db"));
  EXPECT_THROW(tlm::import_records(third, file), tlm::Error);
  EXPECT_EQ(third.count(), 0);
}

// Mutated record files (characters replaced, cut, numbers inserted): each imports whole
// or is refused with tlm::Error adding nothing; nothing else escapes. 1,000 files.
TEST_F(RecordStoreTest, FuzzedRecordFilesImportWholeOrNotAtAll) {
  std::string file = path("fuzz.jsonl");
  {
    RecordStore store(path("source.db"));
    store.add({make_record("a", "hw", {1, 2}, tlm::Status::Ok, 0.5),
               make_record("b", "hw", {3}, tlm::Status::Timeout, 2.0)});
    tlm::export_records(store, file);
  }
  std::ifstream in(file);
  const std::string valid((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::mt19937_64 rng(16);
  int refused = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::string text = tlm::mutate(valid, rng, "0123456789-.e{}[]\":,\n x");
    std::ofstream(file) << text;
    RecordStore store(path("fuzz" + std::to_string(trial) + ".db"));
    try {
      int64_t added = tlm::import_records(store, file);
      EXPECT_EQ(store.count(), added);
      for (const auto& key : store.task_keys())
        for (const auto& r : store.query(key))
          if (r.status == tlm::Status::Ok) {
            EXPECT_GT(r.min_ms, 0);
          }
    } catch (const tlm::Error&) {
      EXPECT_EQ(store.count(), 0);
      ++refused;
    }
  }
  EXPECT_GT(refused, 300);
}

TEST_F(RecordStoreTest, AddingTheSameBatchTwiceIsANoOp) {
  RecordStore store(path());
  std::vector<Record> batch;
  for (int i = 0; i < 10; ++i)
    batch.push_back(make_record("t", "hw", {i, i + 1}, tlm::Status::Ok, i + 1.0));
  EXPECT_EQ(store.add(batch), 10);
  EXPECT_EQ(store.add(batch), 0);
  EXPECT_EQ(store.count(), 10);
  // Same decisions on another hardware or task are different records.
  batch[0].hardware = "other-hw";
  batch[1].task_key = "other-task";
  EXPECT_EQ(store.add(batch), 2);
  EXPECT_EQ(store.count(), 12);
  EXPECT_EQ(store.add({}), 0);
}

// Re-timings: under ReplaceIfNewer a newer record of a stored schedule replaces every
// measured field of it, an older or equally old one changes nothing, new schedules are
// added, and other hardware's record of the same schedule is untouched. Keep (the
// default) never replaces.
TEST_F(RecordStoreTest, ReplaceIfNewerReplacesAStoredScheduleOnlyWithANewerRecord) {
  using OnDuplicate = RecordStore::OnDuplicate;
  RecordStore store(path());
  Record old_fast = make_record("t", "hw", {1, 2}, tlm::Status::Ok, 1.0);
  Record elsewhere = old_fast;
  elsewhere.hardware = "other-hw";
  ASSERT_EQ(store.add({old_fast, elsewhere}), 2);
  Record retimed = old_fast;
  retimed.median_ms = 0.5, retimed.min_ms = 0.4, retimed.runs = 50;
  retimed.method = "manual", retimed.detail = "spin pool", retimed.checkpoint = "ck";
  retimed.created = old_fast.created + 10;
  EXPECT_EQ(store.add({retimed}), 0);  // Keep: the stored record stays
  expect_same(store.query("t", "hw").at(0), old_fast);
  Record stale = old_fast;
  stale.median_ms = 9, stale.min_ms = 8, stale.created = old_fast.created - 1;
  Record added = make_record("t", "hw", {3}, tlm::Status::Timeout, 2.0);
  EXPECT_EQ(store.add({stale, old_fast, added}, OnDuplicate::ReplaceIfNewer), 1);
  expect_same(store.query("t", "hw").at(0), old_fast);
  EXPECT_EQ(store.add({retimed, added}, OnDuplicate::ReplaceIfNewer), 1);
  EXPECT_EQ(store.count(), 3);
  auto rows = store.query("t", "hw");  // oldest first: the re-timed row is now the newest
  ASSERT_EQ(rows.size(), 2u);
  expect_same(rows.back(), retimed);
  expect_same(store.query("t", "other-hw").at(0), elsewhere);
  EXPECT_DOUBLE_EQ(store.best("t", "hw", 1).at(0).median_ms, 0.5);
}

TEST_F(RecordStoreTest, MergesIdempotentlyAcrossConnections) {
  RecordStore a(path());
  RecordStore b(path());
  std::vector<Record> batch = {make_record("t", "hw", {1}, tlm::Status::Ok, 1),
                               make_record("t", "hw", {2}, tlm::Status::Ok, 2)};
  EXPECT_EQ(a.add(batch), 2);
  EXPECT_EQ(b.add(batch), 0);
  EXPECT_EQ(b.add({make_record("t", "hw", {3}, tlm::Status::Ok, 3)}), 1);
  EXPECT_EQ(a.count(), 3);
}

TEST_F(RecordStoreTest, BestReturnsFastestOkRecordsFirst) {
  RecordStore store(path());
  store.add({make_record("t", "hw", {1}, tlm::Status::Ok, 5.0),
             make_record("t", "hw", {2}, tlm::Status::Timeout, 0.5),
             make_record("t", "hw", {3}, tlm::Status::Ok, 2.0),
             make_record("t", "hw", {4}, tlm::Status::WrongResult, 1.0),
             make_record("t", "hw", {5}, tlm::Status::Ok, 3.0),
             make_record("t", "hw2", {6}, tlm::Status::Ok, 0.1),
             make_record("u", "hw", {7}, tlm::Status::Ok, 0.2)});
  std::vector<Record> best = store.best("t", "hw", 10);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].median_ms, 2.0);
  EXPECT_EQ(best[1].median_ms, 3.0);
  EXPECT_EQ(best[2].median_ms, 5.0);
  best = store.best("t", "hw", 2);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].decisions, std::vector<int64_t>{3});
  EXPECT_TRUE(store.best("t", "hw", 0).empty());
  EXPECT_TRUE(store.best("none", "hw", 5).empty());
}

TEST_F(RecordStoreTest, QueriesOldestFirstAndListsTaskKeys) {
  RecordStore store(path());
  store.add({make_record("b", "hw1", {1}, tlm::Status::Ok, 3.0),
             make_record("a", "hw1", {1}, tlm::Status::Ok, 1.0),
             make_record("b", "hw2", {2}, tlm::Status::Crash, 2.0)});
  std::vector<Record> all = store.query("b");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_LT(all[0].created, all[1].created);
  EXPECT_EQ(all[0].hardware, "hw2");
  ASSERT_EQ(store.query("b", "hw1").size(), 1u);
  EXPECT_TRUE(store.query("b", "hw3").empty());
  EXPECT_EQ(store.task_keys(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(RecordStoreTest, DecisionsHashIsStableAndDistinguishesLists) {
  Record a, b, c;
  a.decisions = {1, 2, 3};
  b.decisions = {1, 2, 3};
  c.decisions = {12, 3};
  EXPECT_EQ(a.decisions_hash(), tlm::hash_hex("[1,2,3]"));
  EXPECT_EQ(a.decisions_hash(), b.decisions_hash());
  EXPECT_NE(a.decisions_hash(), c.decisions_hash());
  b.task_key = "not part of the hash";
  EXPECT_EQ(a.decisions_hash(), b.decisions_hash());
}

TEST_F(RecordStoreTest, CreatesTheSchemaWithMetaInWalMode) {
  { RecordStore store(path()); }
  EXPECT_EQ(sql_value(path(), "SELECT value FROM meta WHERE key = 'application'"), "tlm-records");
  EXPECT_EQ(sql_value(path(), "SELECT value FROM meta WHERE key = 'schema_version'"), "1");
  EXPECT_EQ(sql_value(path(), "PRAGMA journal_mode"), "wal");
}

TEST_F(RecordStoreTest, OpensAnEmptyFileAsANewStore) {
  write_bytes(path(), "");
  RecordStore store(path());
  EXPECT_EQ(store.count(), 0);
  EXPECT_EQ(store.add({make_record("t", "hw", {1}, tlm::Status::Ok, 1)}), 1);
}

TEST_F(RecordStoreTest, RefusesRandomBytesAndLeavesThemUntouched) {
  std::string bytes = random_bytes(8192, 1);
  write_bytes(path(), bytes);
  expect_refused(path(), "not a tlm record database");
  EXPECT_EQ(read_bytes(path()), bytes);
  EXPECT_FALSE(fs::exists(path() + "-wal"));
}

TEST_F(RecordStoreTest, RefusesACorruptDatabaseAndLeavesItUntouched) {
  { RecordStore store(path()); }
  // A real header, followed by garbage where the schema pages were.
  std::string bytes = read_bytes(path());
  ASSERT_GE(bytes.size(), 100u);
  std::string corrupt = bytes.substr(0, 100) + random_bytes(8192 - 100, 2);
  write_bytes(path(), corrupt);
  expect_refused(path(), "not a tlm record database");
  EXPECT_EQ(read_bytes(path()), corrupt);
}

TEST_F(RecordStoreTest, RefusesAnotherProgramsDatabaseAndLeavesItUntouched) {
  run_sql(path(), "CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1);");
  std::string bytes = read_bytes(path());
  expect_refused(path(), "a SQLite database of another program");
  EXPECT_EQ(read_bytes(path()), bytes);
  EXPECT_EQ(sql_value(path(), "PRAGMA journal_mode"), "delete");

  run_sql(path("meta.db"),
          "CREATE TABLE meta (key TEXT, value TEXT);"
          "INSERT INTO meta VALUES ('application', 'someone-else');");
  bytes = read_bytes(path("meta.db"));
  expect_refused(path("meta.db"), "a SQLite database of another program");
  EXPECT_EQ(read_bytes(path("meta.db")), bytes);
}

TEST_F(RecordStoreTest, RefusesAPathThatCannotBeOpened) {
  expect_refused((dir_ / "missing-dir" / "records.db").string(), "cannot open");
}

// Reads whole lines from `fd` until `wanted` lines arrived; the last one is returned in
// `last`. False if the writer stopped or was silent for 30 seconds.
bool read_lines(int fd, int wanted, std::string& pending, std::string& last) {
  int lines = 0;
  while (lines < wanted) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 30000) <= 0) return false;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    pending.append(buf, n);
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos; ++lines) {
      last = pending.substr(0, eol);
      pending.erase(0, eol + 1);
    }
  }
  return true;
}

// Starts store_writer on `db` with its stdout on a pipe; returns its pid.
pid_t start_writer(const std::string& db, int& out_fd) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    const char* writer = STORE_WRITER_PATH;
    char* const args[] = {const_cast<char*>(writer), const_cast<char*>(db.c_str()), nullptr};
    execv(writer, args);
    _exit(127);
  }
  close(fds[1]);
  out_fd = fds[0];
  return pid;
}

TEST_F(RecordStoreTest, SurvivesSigkillDuringWrites) {
  int64_t committed = 0;
  for (int round = 0; round < 3; ++round) {
    int fd = -1;
    pid_t pid = start_writer(path(), fd);
    ASSERT_GT(pid, 0);
    std::string pending, last;
    bool ok = read_lines(fd, 5 + 3 * round, pending, last);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fd);
    ASSERT_TRUE(ok) << "store_writer stopped early";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    int64_t reported = tlm::parse_int(last, "store_writer output");
    EXPECT_GE(reported, committed + 250);  // each round committed at least 5 batches of 50
    committed = reported;

    RecordStore store(path());  // must open after the kill
    EXPECT_GE(store.count(), committed);
    EXPECT_EQ(store.count() % 50, 0) << "a batch was partly committed";
    EXPECT_EQ(sql_value(path(), "PRAGMA integrity_check"), "ok");
  }
}

}  // namespace
