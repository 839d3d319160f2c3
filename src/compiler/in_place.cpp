#include "compiler/in_place.h"

#include <algorithm>
#include <climits>

#include "runtime/memory_plan.h"
#include "space/schedule_space.h"
#include "util/shape.h"

namespace tlm {
namespace {

// Per tensor (a root): the last step reading it, directly or through a view; INT_MAX for
// what the model outputs.
std::vector<int> last_reads(const Plan& plan) {
  std::vector<int> last(plan.tensors.size(), -1);
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (int t : plan.steps[s].inputs) last[size_t(root_of(plan, t))] = int(s);
  for (int t : plan.outputs) last[size_t(root_of(plan, t))] = INT_MAX;
  return last;
}

// Whether the step may store its output over `operand` (a root tensor), which it reads.
bool may_store_over(const Plan& plan, const PlanStep& step, int operand, int at_step,
                    const std::vector<int>& last) {
  const PlanTensor &in = plan.tensors[size_t(operand)], &out = plan.tensors[size_t(step.output)];
  int reads = 0;
  for (int t : step.inputs) reads += root_of(plan, t) == operand;
  return in.kind == TensorKind::Activation && out.kind == TensorKind::Activation &&
         last[size_t(operand)] == at_step && reads == 1 &&
         !lives_in_caller_buffer(plan, step.output) &&
         element_count(in.shape) == element_count(out.shape) && in.sliced == out.sliced;
}

}  // namespace

int in_place_operand(const PlanTask& task) {
  if (task.strategy == "fixed" || task.decisions.empty()) return -1;
  TaskSpec spec = parse_task_spec(task.spec);
  ScheduleSpace space(describe_task(spec));
  if (!stores_each_output_once(space.shape(), space.decode(task.decisions))) return -1;
  const TaskShape& shape = space.shape();
  size_t operands = size_t(std::count_if(spec.epilogue.begin(), spec.epilogue.end(),
                                         [](const EpilogueStep& e) { return e.mask >= 0; }));
  for (size_t k = shape.inputs.size() - operands; k < shape.inputs.size(); ++k)
    if (element_count(shape.inputs[k].shape) == element_count(shape.output_shape)) return int(k);
  return -1;
}

int write_in_place(Plan& plan, const std::map<std::string, int>& operands) {
  std::vector<int> last = last_reads(plan);
  int made = 0;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    auto found = operands.find(step.function);
    if (step.kind != StepKind::Kernel || found == operands.end() || found->second < 0) continue;
    int operand = root_of(plan, step.inputs.at(size_t(found->second)));
    if (!may_store_over(plan, step, operand, int(s), last)) continue;
    PlanTensor& out = plan.tensors[size_t(step.output)];
    out.kind = TensorKind::View;
    out.view_of = operand;
    out.sliced = false;  // its memory is the operand's, sliced as the operand is
    last[size_t(operand)] = last[size_t(step.output)];
    ++made;
  }
  return made;
}

}  // namespace tlm
