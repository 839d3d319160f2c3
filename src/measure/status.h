// Status: how measuring one candidate ended. Records store it and the worker reports it;
// its names (the one table below) are what the database, record files and the worker
// protocol hold, and an unknown name read from any of them is a one-line error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/error.h"

namespace tlm {

enum class Status : uint8_t { Ok, WrongResult, Crash, Timeout, Oom, BuildError };

inline const std::vector<std::string>& status_names() {
  static const std::vector<std::string> names = {"ok",      "wrong-result", "crash",
                                                 "timeout", "oom",          "build-error"};
  return names;
}

inline const std::string& status_name(Status status) {
  return status_names().at(static_cast<size_t>(status));
}

inline Status status_named(const std::string& name) {
  const auto& names = status_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<Status>(i);
  throw Error("unknown status '" + name +
              "' (known: ok, wrong-result, crash, timeout, oom, build-error)");
}

}  // namespace tlm
