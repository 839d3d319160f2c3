// capi_threads ARTIFACT [THREADS] [RUNS]: one model opened once and run through the C API
// from THREADS threads at once (RUNS runs each, every run on its own seeded inputs); each
// result must equal, bit for bit, the same inputs run serially first. Built with
// -fsanitize=thread as the test of concurrent runs (tests/CMakeLists.txt): a data race
// in the runtime fails it even when the results agree. Exit 0 when all agree.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "capi/tlm_runtime.h"

namespace {

struct Case {
  std::vector<std::vector<unsigned char>> inputs;  // bytes of each input, in its dtype
  std::vector<std::vector<float>> outputs;
};

std::vector<unsigned char> seeded_input(const tlm_tensor_info& info, unsigned seed) {
  std::vector<unsigned char> bytes(info.elements * info.element_size);
  std::mt19937 rng(seed);
  for (size_t k = 0; k < info.elements; ++k) {
    if (info.dtype == TLM_FLOAT32) {
      float v = std::normal_distribution<float>(0.0f, 1.0f)(rng);
      std::memcpy(&bytes[k * 4], &v, 4);
    } else if (info.dtype == TLM_INT64) {
      int64_t v = int64_t(rng() % 100);
      std::memcpy(&bytes[k * 8], &v, 8);
    } else {
      bytes[k] = (rng() % 4) != 0;
    }
  }
  return bytes;
}

Case make_case(const tlm_model* model, unsigned seed) {
  Case c;
  tlm_tensor_info info;
  for (size_t i = 0; i < tlm_num_inputs(model); ++i) {
    tlm_input_info(model, i, &info);
    c.inputs.push_back(seeded_input(info, seed * 31 + unsigned(i)));
  }
  for (size_t o = 0; o < tlm_num_outputs(model); ++o) {
    tlm_output_info(model, o, &info);
    c.outputs.emplace_back(info.elements);
  }
  return c;
}

bool run(const tlm_model* model, Case& c) {
  std::vector<const void*> in;
  std::vector<float*> out;
  for (auto& i : c.inputs) in.push_back(i.data());
  for (auto& o : c.outputs) out.push_back(o.data());
  if (tlm_run(model, in.data(), out.data()) == 0) return true;
  std::fprintf(stderr, "capi_threads: %s\n", tlm_last_error());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: capi_threads ARTIFACT [THREADS] [RUNS]\n"), 2;
  int threads = argc > 2 ? std::atoi(argv[2]) : 4, runs = argc > 3 ? std::atoi(argv[3]) : 3;
  tlm_model* model = tlm_open(argv[1]);
  if (!model) return std::fprintf(stderr, "capi_threads: %s\n", tlm_last_error()), 1;
  std::vector<Case> serial, concurrent;
  for (int k = 0; k < threads * runs; ++k) {
    serial.push_back(make_case(model, unsigned(k)));
    concurrent.push_back(make_case(model, unsigned(k)));
    if (!run(model, serial.back())) return 1;
  }
  std::vector<std::thread> pool;
  std::vector<int> ok(size_t(threads), 1);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < runs; ++r) ok[size_t(t)] &= run(model, concurrent[size_t(t * runs + r)]);
    });
  for (auto& p : pool) p.join();
  int differ = 0;
  for (size_t k = 0; k < serial.size(); ++k) differ += serial[k].outputs != concurrent[k].outputs;
  tlm_close(model);
  for (int t : ok)
    if (!t) return 1;
  std::printf("capi_threads: %d threads x %d runs, %d of %zu results differ from serial runs\n",
              threads, runs, differ, serial.size());
  return differ == 0 ? 0 : 1;
}
