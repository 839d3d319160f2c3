#include "measure/peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tlm {
namespace {

constexpr int kChains = 12;  // independent accumulators: FMA latency 4 x 2 pipes, and spare
constexpr long kIterations = 1 << 23;

// Each returns its flops; the sums are kept so that the loop is not optimized away.
__attribute__((target("avx512f"))) double fma_avx512(std::atomic<float>& sink) {
  __m512 acc[kChains], a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  for (long i = 0; i < kIterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  float lanes[16];
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  _mm512_storeu_ps(lanes, sum);
  sink = sink + lanes[0];
  return 2.0 * 16 * kChains * double(kIterations);
}

__attribute__((target("avx2,fma"))) double fma_avx2(std::atomic<float>& sink) {
  __m256 acc[kChains], a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(float(c));
  for (long i = 0; i < kIterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  float lanes[8];
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  _mm256_storeu_ps(lanes, sum);
  sink = sink + lanes[0];
  return 2.0 * 8 * kChains * double(kIterations);
}

double fma_sse(std::atomic<float>& sink) {  // no FMA: a multiply and an add
  __m128 acc[kChains], a = _mm_set1_ps(0.999999f), b = _mm_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm_set1_ps(float(c));
  for (long i = 0; i < kIterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], a), b);
  sink = sink + _mm_cvtss_f32(acc[0]);
  return 2.0 * 4 * kChains * double(kIterations);
}

double fma_widest(std::atomic<float>& sink) {
  if (__builtin_cpu_supports("avx512f")) return fma_avx512(sink);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return fma_avx2(sink);
  return fma_sse(sink);
}

}  // namespace

double measure_peak_gflops(int threads) {
  threads = std::max(threads, 1);
  std::atomic<float> sink{0};
  double best = 0;
  // Ten rounds over about half a second: thread pools still spinning from the last
  // kernel (OpenBLAS spins ~100 ms) share the cores with the first ones.
  for (int round = 0; round < 10; ++round) {
    std::vector<double> flops(size_t(threads), 0);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&flops, &sink, t] { flops[size_t(t)] = fma_widest(sink); });
    for (auto& thread : pool) thread.join();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / seconds / 1e9);
  }
  return best;
}

}  // namespace tlm
