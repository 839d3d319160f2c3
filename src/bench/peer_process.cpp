#include "bench/peer_process.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <sstream>

#include "util/error.h"

extern char** environ;

namespace tlm {
namespace {

// Reads one line (without its newline); false at the end of the stream.
bool read_line(FILE* from, std::string& line) {
  line.clear();
  for (int c; (c = std::fgetc(from)) != EOF;) {
    if (c == '\n') return true;
    line += char(c);
  }
  return !line.empty();
}

}  // namespace

PeerProcess::PeerProcess(const PeerSetup& setup, const std::string& system,
                         const std::string& onnx_path, const std::vector<std::string>& inputs)
    : system_(system) {
  std::signal(SIGPIPE, SIG_IGN);  // a peer that died is an error answer, not our death
  std::vector<std::string> args = {setup.python,
                                   setup.script,
                                   onnx_path,
                                   "--system",
                                   system,
                                   "--threads",
                                   std::to_string(setup.threads)};
  for (const auto& input : inputs) args.insert(args.end(), {"--input", input});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int down[2], up[2];  // parent -> child stdin, child stdout -> parent
  if (pipe(down) != 0 || pipe(up) != 0) throw Error("peer " + system + ": cannot make pipes");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, down[0], 0);
  posix_spawn_file_actions_adddup2(&actions, up[1], 1);
  for (int fd : {down[0], down[1], up[0], up[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  int failed = posix_spawn(&pid_, setup.python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(down[0]);
  close(up[1]);
  to_ = fdopen(down[1], "w");
  from_ = fdopen(up[0], "r");
  if (failed) {
    pid_ = -1;
    throw Error("peer " + system + ": cannot start '" + setup.python + "' (" +
                std::strerror(failed) + "; bash bench/peers/install.sh makes it)");
  }
  try {
    std::istringstream ready(ask(""));
    std::string word;
    ready >> word >> load_seconds_ >> version_;
  } catch (...) {
    stop();
    throw;
  }
}

PeerProcess::~PeerProcess() {
  stop();
}

void PeerProcess::stop() {
  if (to_) std::fputs("quit\n", to_), std::fclose(to_);
  if (from_) std::fclose(from_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
  to_ = from_ = nullptr;
  pid_ = -1;
}

std::string PeerProcess::ask(const std::string& line) {
  if (!line.empty()) {
    std::fputs((line + "\n").c_str(), to_);
    std::fflush(to_);
  }
  std::string answer;
  if (!read_line(from_, answer)) throw Error("peer " + system_ + ": exited without an answer");
  if (answer.rfind("error ", 0) == 0) throw Error("peer " + answer.substr(6));
  return answer;
}

void PeerProcess::run() {
  ask("run");
}

void PeerProcess::write_output(const std::string& npy) {
  ask("output " + npy);
}

std::pair<double, double> PeerProcess::memory_mb() {
  std::istringstream answer(ask("memory"));
  std::string word;
  std::pair<double, double> mb;
  answer >> word >> mb.first >> mb.second;
  return mb;
}

}  // namespace tlm
