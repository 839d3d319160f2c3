// The parent side of isolated measurement: a worker process per Measurer, talking JSON
// lines over pipes, with a deadline per request and an address-space limit.
#include "measure/measurer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "measure/worker_protocol.h"
#include "util/error.h"

namespace tlm {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Measurer::Measurer(MeasureOptions options) : options_(std::move(options)) {
  if (options_.worker_command.empty()) throw Error("measurer: no worker command given");
  log_path_ = "/tmp/tlm-worker-" + std::to_string(getpid()) + "-" +
              std::to_string(reinterpret_cast<uintptr_t>(this) % 100000) + ".log";
}

Measurer::~Measurer() {
  stop_worker();
  unlink(log_path_.c_str());
}

void Measurer::start_worker() {
  int in_pipe[2], out_pipe[2];
  if (pipe(in_pipe) || pipe(out_pipe)) throw Error("measurer: cannot create pipes");
  pid_t pid = fork();
  if (pid < 0) throw Error("measurer: cannot fork a worker");
  if (pid == 0) {                      // child: only async-signal-safe calls until exec
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a worker never outlives its measurer
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) dup2(log, 2);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) close(fd);
    rlimit limit;
    limit.rlim_cur = limit.rlim_max = rlim_t(options_.memory_limit_mb) << 20;
    setrlimit(RLIMIT_AS, &limit);
    std::string threads = std::to_string(options_.threads);
    const char* argv[] = {options_.worker_command.c_str(), "worker", "--threads", threads.c_str(),
                          nullptr};
    execv(argv[0], const_cast<char* const*>(argv));
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  pid_ = pid;
  to_worker_ = in_pipe[1];
  from_worker_ = out_pipe[0];
  pending_.clear();
  signal(SIGPIPE, SIG_IGN);
}

void Measurer::stop_worker() {
  if (pid_ <= 0) return;
  close(to_worker_);
  close(from_worker_);
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string Measurer::worker_log_tail() const {
  std::ifstream in(log_path_);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.substr(0, 300);
}

// Killing a worker costs a restart (about 0.5 s), so a first run gets a floor of time too.
double run_allowance_seconds(double cutoff_ms) {
  return Measurer::kCutoffGrace * cutoff_ms * 1e-3 + 0.2;
}

Measurer::LineStatus Measurer::read_line(double deadline, std::string& line) {
  for (;;) {
    auto newline = pending_.find('\n');
    if (newline != std::string::npos) {
      line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return LineStatus::kLine;
    }
    double left = deadline - now_seconds();
    pollfd fd{from_worker_, POLLIN, 0};
    if (left <= 0 || poll(&fd, 1, static_cast<int>(left * 1000) + 1) == 0)
      return LineStatus::kTimeout;
    char buf[65536];
    ssize_t n = read(from_worker_, buf, sizeof buf);
    if (n <= 0) return LineStatus::kClosed;
    pending_.append(buf, size_t(n));
  }
}

std::string Measurer::worker_exit_reason() {
  int status = 0;
  close(to_worker_);
  close(from_worker_);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                        : "exited with " + std::to_string(WEXITSTATUS(status));
  std::string log = worker_log_tail();
  // The environment's fault, not the schedule's: the worker could not even start (its
  // libraries did not load, e.g. under a memory limit too small). Never stored as a crash.
  if ((WIFEXITED(status) && WEXITSTATUS(status) == 127) ||
      log.find("error while loading shared libraries") != std::string::npos)
    throw Error("measurement setup: the worker could not start (" + how + ": " +
                log.substr(0, 200) + ")");
  return "worker " + how + ": " + log;
}

bool Measurer::send(const std::string& request_line, MeasureResult& failure) {
  if (pid_ <= 0) start_worker();
  std::string line = request_line + "\n";
  if (write(to_worker_, line.data(), line.size()) == ssize_t(line.size())) return true;
  // Its input closed: the worker has exited or is exiting. One whose exec failed exits
  // 127 (a setup error, thrown by worker_exit_reason); SIGKILL does not change the status
  // of one already exiting, and stops one that closed its input but lives on.
  kill(pid_, SIGKILL);
  failure = {Status::Crash, {}, 0, 0, "worker closed its input: " + worker_exit_reason()};
  return false;
}

std::string Measurer::await_answer(double deadline, MeasureResult& failure, double cutoff_ms) {
  std::string answer;
  for (;;) {
    LineStatus got = read_line(deadline, answer);
    if (got == LineStatus::kClosed) {
      failure = {Status::Crash, {}, 0, 0, worker_exit_reason()};
      return "";
    }
    if (got == LineStatus::kTimeout) {
      std::string after = cutoff_ms > 0 ? "its first run passed the cutoff, " : "no answer within ";
      double limit =
          (cutoff_ms > 0 ? run_allowance_seconds(cutoff_ms) : options_.timeout_seconds) * 1e3;
      failure = {Status::Timeout, {limit, limit, 0}, 0, 0, after + std::to_string(limit) + " ms"};
      stop_worker();
      return "";
    }
    WorkerNotice notice = decode_notice(answer);
    if (notice == WorkerNotice::kNone) return answer;
    if (notice == WorkerNotice::kBuilt && cutoff_ms > 0)  // the first run must end in time
      deadline = std::min(deadline, now_seconds() + run_allowance_seconds(cutoff_ms));
    if (notice == WorkerNotice::kFirstRunDone) deadline = now_seconds() + options_.timeout_seconds;
  }
}

std::string Measurer::exchange(const std::string& request_line, MeasureResult& failure,
                               double cutoff_ms) {
  if (!send(request_line, failure)) return "";
  return await_answer(now_seconds() + options_.timeout_seconds, failure, cutoff_ms);
}

Measurer& Measurer::twin() {
  if (!twin_) twin_ = std::make_unique<Measurer>(options_);
  return *twin_;
}

void Measurer::begin(const TaskSpec& task, const Candidate& candidate,
                     const TimingOptions& timing) {
  gated_cutoff_ms_ = timing.cutoff_ms;
  gated_done_ = !send(encode_request(task, {candidate}, false, timing, true), gated_result_);
}

void Measurer::wait_built() {
  if (gated_done_) return;
  std::string line;
  LineStatus got = read_line(now_seconds() + options_.timeout_seconds, line);
  if (got == LineStatus::kLine && decode_notice(line) == WorkerNotice::kBuilt) return;
  gated_done_ = true;  // it failed to build, crashed or hung while building
  if (got == LineStatus::kLine) {
    gated_result_ = decode_response(line).at(0);
  } else if (got == LineStatus::kClosed) {
    gated_result_ = {Status::Crash, {}, 0, 0, worker_exit_reason()};
  } else {
    double limit = options_.timeout_seconds * 1e3;
    gated_result_ = {Status::Timeout,
                     {limit, limit, 0},
                     0,
                     0,
                     "no answer within " + std::to_string(limit) + " ms"};
    stop_worker();
  }
}

MeasureResult Measurer::finish() {
  MeasureResult result;
  if (gated_done_) {
    result = gated_result_;
  } else {
    std::string answer;
    if (send("go", result)) {
      double first_run =
          gated_cutoff_ms_ > 0 ? run_allowance_seconds(gated_cutoff_ms_) : options_.timeout_seconds;
      answer = await_answer(now_seconds() + first_run, result, gated_cutoff_ms_);
    }
    if (!answer.empty()) result = decode_response(answer).at(0);
  }
  gated_done_ = false;
  if (result.status == Status::Oom) stop_worker();  // its heap may still be exhausted
  return result;
}

std::vector<MeasureResult> Measurer::measure_each(const TaskSpec& task,
                                                  const std::vector<Candidate>& candidates,
                                                  const TimingOptions* timing) {
  std::vector<MeasureResult> results;
  for (const auto& candidate : candidates) {
    MeasureResult failure;
    const TimingOptions& t = timing ? *timing : options_.timing;
    std::string answer =
        exchange(encode_request(task, {candidate}, false, t), failure, t.cutoff_ms);
    results.push_back(answer.empty() ? failure : decode_response(answer).at(0));
    if (results.back().status == Status::Oom) stop_worker();  // its heap may still be exhausted
  }
  return results;
}

std::vector<MeasureResult> Measurer::measure_interleaved(const TaskSpec& task,
                                                         const std::vector<Candidate>& candidates) {
  TimingOptions verify_only{1, 1, 1, 0.0};
  std::vector<MeasureResult> results = measure_each(task, candidates, &verify_only);
  std::vector<Candidate> passed;
  std::vector<size_t> where;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (results[i].status == Status::Ok) passed.push_back(candidates[i]), where.push_back(i);
  if (passed.empty()) return results;
  MeasureResult failure;
  std::string answer = exchange(encode_request(task, passed, true, options_.timing), failure);
  std::vector<MeasureResult> timed =
      answer.empty() ? std::vector<MeasureResult>(passed.size(), failure) : decode_response(answer);
  for (size_t k = 0; k < where.size(); ++k) results[where[k]] = timed.at(k);
  return results;
}

}  // namespace tlm
