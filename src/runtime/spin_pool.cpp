#include "runtime/spin_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/float_mode.h"

namespace tlm {
namespace {

constexpr double kSpinMicros = 2000;  // a worker's spin after a loop before it sleeps

void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

class SpinPool {
 public:
  explicit SpinPool(int threads) : blocks_(size_t(threads)) {
    const char* mode = std::getenv("TLM_POOL_SCHEDULE");
    dynamic_ = mode && std::string(mode) == "dynamic";
    for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { work_loop(t); });
  }
  ~SpinPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

  int threads() const { return int(blocks_.size()); }
  int64_t loops() const { return loops_.load(std::memory_order_relaxed); }

  int run(void* user_context, ParallelTask task, int min, int size, uint8_t* closure) {
    loops_.fetch_add(1, std::memory_order_relaxed);
    bool idle = false;
    if (workers_.empty() || size <= 1 || !busy_.compare_exchange_strong(idle, true))
      return run_inline(user_context, task, min, size, closure);
    job_ = {user_context, task, closure, min + size, current_float_mode()};
    next_.store(min);
    int parts = int(blocks_.size());
    for (int p = 0; p < parts; ++p) {
      blocks_[p].next.store(min + int(int64_t(size) * p / parts));
      blocks_[p].end = min + int(int64_t(size) * (p + 1) / parts);
    }
    result_.store(0);
    unfinished_.store(int(workers_.size()));
    {
      std::lock_guard<std::mutex> lock(mutex_);  // a worker going to sleep sees the new job
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load() > 0) wake_.notify_all();
    take_iterations(0);
    while (unfinished_.load(std::memory_order_acquire) > 0) cpu_relax();
    busy_.store(false);
    return result_.load();
  }

 private:
  struct Job {
    void* user_context = nullptr;
    ParallelTask task = nullptr;
    uint8_t* closure = nullptr;
    int end = 0;
    uint32_t float_mode = 0;  // the caller's (float_mode.h): the workers run in it too
  };

  static int run_inline(void* user_context, ParallelTask task, int min, int size,
                        uint8_t* closure) {
    for (int i = min; i < min + size; ++i)
      if (int r = task(user_context, i, closure)) return r;
    return 0;
  }

  void run_iteration(int i) {
    if (result_.load(std::memory_order_relaxed) != 0) return;  // a failure: drain
    if (int r = job_.task(job_.user_context, i, job_.closure)) result_.store(r);
  }

  // Participant `self` first runs its own contiguous block of the loop in order, then
  // helps with the others' (so a slow thread does not hold the loop up).
  void take_iterations(int self) {
    if (dynamic_) {
      for (int i; (i = next_.fetch_add(1)) < job_.end;) run_iteration(i);
      return;
    }
    int parts = int(blocks_.size());
    for (int k = 0; k < parts; ++k) {
      Block& b = blocks_[(self + k) % parts];
      for (int i; (i = b.next.fetch_add(1)) < b.end;) run_iteration(i);
    }
  }

  // Waits for a generation after `seen`: spinning first, then asleep.
  uint64_t wait_for_job(uint64_t seen) {
    auto start = std::chrono::steady_clock::now();
    for (int n = 0;; ++n) {
      uint64_t now = generation_.load(std::memory_order_acquire);
      if (now != seen) return now;
      cpu_relax();
      if (n % 256 == 0 &&
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                  .count() > kSpinMicros)
        break;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);
    wake_.wait(lock, [&] { return generation_.load() != seen; });
    sleepers_.fetch_sub(1);
    return generation_.load(std::memory_order_acquire);
  }

  void work_loop(int self) {
    uint64_t seen =
        0;  // the generation at construction: a job posted before this thread ran counts
    uint32_t float_mode = current_float_mode();
    while (true) {
      seen = wait_for_job(seen);
      if (stop_) return;
      if (job_.float_mode != float_mode) set_float_mode(float_mode = job_.float_mode);
      take_iterations(self);
      unfinished_.fetch_sub(1, std::memory_order_release);
    }
  }

  struct alignas(64) Block {  // one cache line per block: threads take from their own
    std::atomic<int> next{0};
    int end = 0;
  };
  std::vector<Block> blocks_;
  bool dynamic_ = false;
  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};
  Job job_;
  std::atomic<int> next_{0}, result_{0}, unfinished_{0}, sleepers_{0};
  std::atomic<uint64_t> generation_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::atomic<int64_t> loops_{0};
};

SpinPool& the_pool() {
  static SpinPool pool(spin_pool_threads());
  return pool;
}

}  // namespace

int spin_pool_threads() {
  const char* env = std::getenv("HL_NUM_THREADS");
  int threads = env ? std::atoi(env) : int(std::thread::hardware_concurrency());
  return threads > 0 ? threads : 1;
}

int spin_pool_do_par_for(void* user_context, ParallelTask task, int min, int size,
                         uint8_t* closure) {
  return the_pool().run(user_context, task, min, size, closure);
}

bool halide_pool_asked() {
  const char* pool = std::getenv("TLM_POOL");
  return pool && std::string(pool) == "halide";
}

int spin_pool_size() {
  return the_pool().threads();
}

int64_t spin_pool_loops() {
  return the_pool().loops();
}

}  // namespace tlm
