// Every task kind's examples (TaskDef::examples in the registry), for tests that sweep them.
#pragma once
#include <string>
#include <vector>

#include "ops/registry.h"

namespace tlm {

inline std::vector<std::string> every_task_example() {
  std::vector<std::string> specs;
  for (TaskKind kind : all_task_kinds())
    for (const auto& spec : task_def(kind).examples) specs.push_back(spec);
  return specs;
}

}  // namespace tlm
