// PeerProcess: one peer runtime a user might pick instead of tlm (ONNX Runtime, OpenVINO)
// holding one ONNX model in a Python child process (bench/peers/peer_runner.py, in the
// virtual environment bench/peers/install.sh makes), driven one line at a time so that
// its runs are timed here, interleaved with tlm's and PyTorch's. The product never needs
// it: only `tlm bench model --peers` starts one.
#pragma once
#include <sys/types.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace tlm {

struct PeerSetup {
  std::string python;  // the virtual environment's interpreter
  std::string script;  // peer_runner.py
  int threads = 2;
};

class PeerProcess {
 public:
  // Starts the peer `system` ("ort" or "openvino") on `onnx_path` with `inputs` given as
  // NAME=FILE.npy; returns once it has loaded the model. Throws tlm::Error with the
  // peer's one-line reason when it cannot.
  PeerProcess(const PeerSetup& setup, const std::string& system, const std::string& onnx_path,
              const std::vector<std::string>& inputs);
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  void run();                                 // one inference
  void write_output(const std::string& npy);  // its first output, as float32
  // Its resident set before it loaded anything and its peak since, in MB.
  std::pair<double, double> memory_mb();
  const std::string& version() const { return version_; }
  double load_seconds() const { return load_seconds_; }

 private:
  std::string ask(const std::string& line);  // one line out, the answer line back
  void stop();                               // asks it to quit, waits for it

  std::string system_, version_;
  double load_seconds_ = 0;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

}  // namespace tlm
