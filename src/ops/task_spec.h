// TaskSpec: one task named on the command line, `OP:key=value,...[+EPILOGUE...]`.
//
// The parser checks syntax and validates every key and value against the task kind's
// schema (registry.h: which keys exist, which are required, defaults, allowed words), so
// anything that reaches `ops` is well formed. `key()` is the canonical form: schema
// order, defaults filled in (optional parameters left out at their default), so two
// spellings of one task share a key.
//
// The epilogue is the chain of elementwise operators applied to the task's value, each
// a word: `+relu` (unary), `+add` (an operand of the output's shape), `+bias` (an operand
// along the output's channel dim), `+mul@M` (an operand along the output dims in the bit
// mask M, bit i = row-major dim i; M = 0 is a scalar), `+rsub` (operand - value: the
// reversed form of a non-commutative operator).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ops/op_kind.h"

namespace tlm {

struct EpilogueStep {
  OpKind op = OpKind::Relu;
  int mask = -1;          // binary: output dims the operand varies along; -1: unary
  bool reversed = false;  // binary: operand op value

  bool operator==(const EpilogueStep& o) const {
    return op == o.op && mask == o.mask && reversed == o.reversed;
  }
};

struct TaskSpec {
  TaskKind kind = TaskKind::Count;
  std::map<std::string, std::string> params;  // every schema key, defaults filled
  std::vector<EpilogueStep> epilogue;         // in application order

  const std::string& op() const { return task_name(kind); }
  int64_t get(const std::string& key) const;              // integer parameter
  double real(const std::string& key) const;              // real parameter
  const std::string& word(const std::string& key) const;  // word parameter (e.g. kind)
  bool has_epilogue(OpKind op) const;
  // The epilogue words in order ("bias", "relu", "mul@3", ...), as the key writes them.
  std::vector<std::string> epilogue_words() const;
  // Channels per block of the output when the task writes it channel-blocked (its kind's
  // block parameter, registry.h), else 1.
  int64_t output_block() const;
  // The output's rank as the kernel writes it: one more than the kind's when blocked.
  int output_rank() const;
  // The mask "+bias" stands for: the channel dim, and the in-block dim when blocked (0:
  // the kind has no channel dim).
  int bias_mask() const;
  // The schema keys of this task that its key and prompt show.
  std::vector<std::string> shown_keys() const;
  std::string key() const;
};

// Parses and validates; throws tlm::Error with a one-line message naming the bad part.
TaskSpec parse_task_spec(const std::string& text);
// For readers of a record store's task keys: the task, or false (with a one-line warning
// on stderr naming the key) when the key is not a valid, canonical spec, so that one bad
// stored record never stops work on the other tasks.
bool read_stored_task(const std::string& key, TaskSpec& task);
// The task as record stores keyed it before an optional parameter that only adds decision
// points in front (batch_matmul constant_b=1 adds layout.weight_block, session 61) or only
// moves an operand (batch_matmul a_heads, b_heads: the same decisions): its records there
// are this task's schedules with the plain layout (ScheduleSpace::upgrade). False when the
// task has no earlier form.
bool earlier_form(const TaskSpec& task, TaskSpec& earlier);
// "key=value", a piece of a spec's text.
std::string param_text(const std::string& key, int64_t value);

// The op names and unary/binary epilogue words the parser accepts.
std::vector<std::string> known_ops();
std::vector<std::string> known_epilogues();
// Every parameter key a prompt may show and every word value of any task kind.
std::vector<std::string> known_param_keys();
std::vector<std::string> known_param_words();

}  // namespace tlm
