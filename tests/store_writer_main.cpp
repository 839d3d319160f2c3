// store_writer: test helper for the record store's crash safety. Adds batches of 50
// records to the database named on the command line in an endless loop and prints the
// number of committed records after each commit, until it is killed.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "store/record_store.h"

namespace {

std::vector<tlm::Record> make_batch(int64_t batch) {
  std::vector<tlm::Record> records;
  for (int64_t i = 0; i < 50; ++i) {
    tlm::Record r;
    r.hardware = "x86-64-test";
    r.task_key = "matmul:128x128x128";
    r.task_spec = "matmul 128 128 128";
    r.decisions = {static_cast<int64_t>(getpid()), batch, i};  // unique across runs
    r.method = "random";
    r.status = tlm::Status::Ok;
    r.min_ms = 1.0 + i;
    r.median_ms = 2.0 + i;
    r.runs = 3;
    r.detail = "written by store_writer";
    r.created = static_cast<double>(batch);
    records.push_back(r);
  }
  return records;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: store_writer DATABASE\n");
    return 2;
  }
  try {
    tlm::RecordStore store(argv[1]);
    for (int64_t batch = 0;; ++batch) {
      store.add(make_batch(batch));
      std::printf("%lld\n", static_cast<long long>(store.count()));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_writer: %s\n", e.what());
    return 1;
  }
}
