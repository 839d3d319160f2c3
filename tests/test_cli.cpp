// The tlm command as a user runs it: bad input gives one line on stderr and a non-zero
// exit; SIGKILL in the middle of a tuning run loses no committed record.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "store/record_store.h"

namespace tlm {
namespace {

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr
};

CliRun run_tlm(const std::string& args) {
  std::string cmd = std::string(TLM_EXE) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WEXITSTATUS(status), out};
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tlm_cli_" + std::to_string(getpid()) + "_" + name;
}

void expect_one_line_error(const std::string& args, const std::string& fragment) {
  CliRun r = run_tlm(args);
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_EQ(r.output.find("tlm: error: "), 0u) << r.output;
  EXPECT_NE(r.output.find(fragment), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(Cli, BadInputIsOneLineAndNonZero) {
  expect_one_line_error("space 'matmul:m=8,n=8'", "needs parameter 'k'");
  expect_one_line_error("space 'conv3d:c=1'", "unknown op 'conv3d'");
  expect_one_line_error("space 'conv2d:c=3,h=4,w=4,k=8,r=7,s=7'", "larger than the padded input");
  expect_one_line_error("measure 'matmul:m=8,n=8,k=8' --decisions 1,2,x", "--decisions");
  expect_one_line_error("measure 'matmul:m=8,n=8,k=8' --decisions 8,8,8,8,0,8,0,0,1,8,0",
                        "decisions");
  std::string corrupt = temp_path("corrupt.db");
  std::ofstream(corrupt) << "this is not a database, just text that fills a page......";
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --trials 1 --db " + corrupt,
                        "not a tlm record database");
}

// The model's commands: missing or corrupt models, data and registries are one-line errors.
TEST(Cli, ModelCommandsRejectBadInput) {
  std::string dir = temp_path("models");
  ::mkdir(dir.c_str(), 0755);
  expect_one_line_error("lang 'softmax:rows=0,cols=8'", "out of range");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' --models " + dir, "no default model");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' --model " + dir + "/tlm-none", "cannot read");
  expect_one_line_error("model --models " + dir + " rollback", "no validated base");
  std::string data = temp_path("data.bin");
  std::ofstream(data) << "TLMDATA1 but then nothing sensible";
  std::string config = temp_path("config.json");
  std::ofstream(config) << R"({"context": 64, "layers": 1, "d_model": 16, "heads": 2})";
  expect_one_line_error("train pretrain --data " + data + " --run " + dir + "/run --config " +
                            config + " --models " + dir,
                        "dataset");
  std::ofstream(config) << "{";
  expect_one_line_error("train pretrain --data " + data + " --run " + dir + "/run --config " +
                            config + " --models " + dir,
                        "model config");
  std::ofstream(dir + "/registry.json") << "{not json";
  expect_one_line_error("model --models " + dir + " list", "not valid JSON");
}

TEST(Cli, SpacePrintsPointsAndSize) {
  CliRun r = run_tlm("space 'matmul:m=64,n=64,k=64'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("12 decision points, space size 2455488"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("out.tile1.d0"), std::string::npos);
}

TEST(Cli, KillDuringTuneKeepsCommittedRecords) {
  std::string db = temp_path("kill.db");
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    execl(TLM_EXE, TLM_EXE, "tune", "matmul:m=32,n=32,k=32", "--method", "random", "--trials",
          "100000", "--threads", "1", "--db", db.c_str(), nullptr);
    _exit(127);
  }
  int64_t seen = 0;
  for (int i = 0; i < 600 && seen < 32; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      seen = RecordStore(db).count();
    } catch (const std::exception&) {
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_GE(seen, 32) << "tune never committed a batch";
  RecordStore store(db);
  EXPECT_GE(store.count(), seen);
  EXPECT_EQ(store.count() % 16, 0) << "a batch was half written";
}

}  // namespace
}  // namespace tlm
