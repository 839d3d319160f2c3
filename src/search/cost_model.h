// CostModel: predicts how fast a schedule of one task is from its decisions, learned
// online from that task's measured records. The evolutionary search evolves many
// candidates on predictions and measures only the most promising, as Ansor's search
// does with its learned cost model; measurements stay the only judge of what is best.
//
// Features per decision point: log2(value + 1), and the (point, value) pair hashed into a
// one-hot bucket. Model: a small MLP (libtorch) regressing -log(median latency).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "space/schedule_space.h"
#include "store/record_store.h"

namespace tlm {

class CostModel {
 public:
  explicit CostModel(const ScheduleSpace& space, uint64_t seed = 1);
  ~CostModel();

  // Fits to the records of the task: ok ones with their latency, cut-off ones with the
  // latency they were cut at (a lower bound, still a useful "slow").
  void fit(const std::vector<Record>& records);
  bool trained() const;
  // Higher is predicted faster.
  std::vector<double> score(const std::vector<std::vector<int64_t>>& candidates) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tlm
