#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "util/aligned.h"
#include "util/error.h"

namespace tlm {
namespace {

int64_t floats_of(const PlanTensor& t) {
  int64_t n = 1;
  for (int64_t e : t.shape) n *= e;
  return n;
}

struct Lifetime {
  int first = -1, last = -1;  // steps; -1 = never written / read
};

std::vector<Lifetime> lifetimes(const Plan& plan) {
  std::vector<Lifetime> life(plan.tensors.size());
  int end = int(plan.steps.size());
  for (int s = 0; s < end; ++s) {
    const PlanStep& step = plan.steps[s];
    for (int t : step.inputs) life[root_of(plan, t)].last = s;
    Lifetime& out = life[root_of(plan, step.output)];
    if (out.first < 0) out.first = s;
    out.last = std::max(out.last, s);
  }
  for (int t : plan.outputs) life[root_of(plan, t)].last = end;
  // A sliced tensor is written by every image's pass over the first steps: it lives from
  // the first image's first step on.
  for (size_t t = 0; t < plan.tensors.size(); ++t)
    if (plan.tensors[t].sliced && life[t].first >= 0 && life[t].first < plan.sliced_steps)
      life[t].first = 0;
  for (auto& l : life)
    if (l.first < 0) l.first = 0, l.last = end;  // never written: keep it whole-run
  return life;
}

bool overlap_in_time(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

// The activations the arena holds.
std::vector<int> arena_tensors(const Plan& plan) {
  std::vector<int> held;
  for (size_t t = 0; t < plan.tensors.size(); ++t)
    if (plan.tensors[t].kind == TensorKind::Activation && !lives_in_caller_buffer(plan, int(t)))
      held.push_back(int(t));
  return held;
}

}  // namespace

int root_of(const Plan& plan, int t) {
  for (int hops = 0; plan.tensors[t].kind == TensorKind::View; ++hops) {
    if (hops > int(plan.tensors.size())) throw Error("plan: a cycle of views");
    t = plan.tensors[t].view_of;
  }
  return t;
}

bool lives_in_caller_buffer(const Plan& plan, int tensor) {
  return plan.tensors[size_t(tensor)].kind == TensorKind::Activation &&
         std::find(plan.outputs.begin(), plan.outputs.end(), tensor) != plan.outputs.end();
}

int64_t activation_floats(const Plan& plan) {
  int64_t total = 0;
  for (const auto& t : plan.tensors)
    if (t.kind == TensorKind::Activation) total += floats_of(t);
  return total;
}

void plan_memory(Plan& plan) {
  auto life = lifetimes(plan);
  for (auto& t : plan.tensors) t.arena_offset = 0;
  std::vector<int> order = arena_tensors(plan);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return floats_of(plan.tensors[a]) > floats_of(plan.tensors[b]);
  });
  std::vector<int> placed;
  plan.arena_floats = 0;
  for (int t : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of live neighbours
    for (int other : placed)
      if (overlap_in_time(life[t], life[other])) {
        const PlanTensor& o = plan.tensors[other];
        busy.push_back({o.arena_offset, o.arena_offset + floats_of(o)});
      }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0, size = floats_of(plan.tensors[t]);
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, round_up_to_cache_line(end));
    }
    plan.tensors[t].arena_offset = offset;
    plan.arena_floats = std::max(plan.arena_floats, offset + size);
    placed.push_back(t);
  }
}

void check_memory_plan(const Plan& plan) {
  auto life = lifetimes(plan);
  std::vector<int> activations = arena_tensors(plan);
  for (int t : activations) {
    const PlanTensor& p = plan.tensors[size_t(t)];
    if (p.arena_offset < 0 || p.arena_offset + floats_of(p) > plan.arena_floats)
      throw Error("plan: activation '" + p.name + "' lies outside the arena");
  }
  for (size_t i = 0; i < activations.size(); ++i)
    for (size_t j = i + 1; j < activations.size(); ++j) {
      const PlanTensor &a = plan.tensors[activations[i]], &b = plan.tensors[activations[j]];
      bool share = a.arena_offset < b.arena_offset + floats_of(b) &&
                   b.arena_offset < a.arena_offset + floats_of(a);
      if (share && overlap_in_time(life[activations[i]], life[activations[j]]))
        throw Error("plan: activations '" + a.name + "' and '" + b.name +
                    "' share memory while both are live");
    }
}

}  // namespace tlm
