#include "search/cost_model.h"

#include <torch/torch.h>

#include <cmath>

namespace tlm {
namespace {

constexpr int64_t kBuckets = 1024;
constexpr int kFitSteps = 300;

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(int64_t inputs) {
    net =
        register_module("net", torch::nn::Sequential(torch::nn::Linear(inputs, 64),
                                                     torch::nn::ReLU(), torch::nn::Linear(64, 64),
                                                     torch::nn::ReLU(), torch::nn::Linear(64, 1)));
  }
  torch::Tensor forward(const torch::Tensor& x) { return net->forward(x).squeeze(1); }
  torch::nn::Sequential net{nullptr};
};
TORCH_MODULE(Mlp);

}  // namespace

struct CostModel::Impl {
  size_t points = 0;
  Mlp mlp{nullptr};
  bool trained = false;

  torch::Tensor features(const std::vector<std::vector<int64_t>>& lists) const {
    int64_t width = int64_t(points) + kBuckets;
    auto x = torch::zeros({int64_t(lists.size()), width});
    auto a = x.accessor<float, 2>();
    for (size_t n = 0; n < lists.size(); ++n)
      for (size_t i = 0; i < points; ++i) {
        int64_t v = lists[n][i];
        a[n][i] = float(std::log2(double(v) + 1));
        uint64_t h = (uint64_t(i) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(v) * 0xC2B2AE3D27D4EB4Full);
        a[n][points + int64_t((h >> 17) % kBuckets)] = 1;
      }
    return x;
  }
};

CostModel::CostModel(const ScheduleSpace& space, uint64_t seed) : impl_(std::make_unique<Impl>()) {
  torch::manual_seed(seed);
  impl_->points = space.num_points();
  impl_->mlp = Mlp(int64_t(impl_->points) + kBuckets);
}

CostModel::~CostModel() = default;

bool CostModel::trained() const {
  return impl_->trained;
}

void CostModel::fit(const std::vector<Record>& records) {
  std::vector<std::vector<int64_t>> lists;
  std::vector<float> targets;
  for (const auto& r : records) {
    bool slow = r.status == Status::Timeout && r.median_ms > 0;  // cut off: at least this slow
    if ((r.status != Status::Ok && !slow) || r.decisions.size() != impl_->points) continue;
    lists.push_back(r.decisions);
    targets.push_back(-float(std::log(r.median_ms)));
  }
  if (lists.size() < 8) return;
  auto x = impl_->features(lists);
  auto y = torch::tensor(targets);
  y = (y - y.mean()) / (y.std() + 1e-6);
  torch::optim::Adam optimizer(impl_->mlp->parameters(), torch::optim::AdamOptions(1e-3));
  impl_->mlp->train();
  for (int step = 0; step < kFitSteps; ++step) {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(impl_->mlp->forward(x), y);
    loss.backward();
    optimizer.step();
  }
  impl_->trained = true;
}

std::vector<double> CostModel::score(const std::vector<std::vector<int64_t>>& candidates) const {
  if (candidates.empty()) return {};
  torch::NoGradGuard no_grad;
  impl_->mlp->eval();
  auto s = impl_->mlp->forward(impl_->features(candidates)).contiguous();
  return std::vector<double>(s.data_ptr<float>(), s.data_ptr<float>() + s.numel());
}

}  // namespace tlm
