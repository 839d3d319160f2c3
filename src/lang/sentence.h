// Sentence: a task and a schedule in the tensor language, and back.
//
//   <bos> isa x86-64-avx512 vector_bits ~10 5 1 2 # cores ~2 2 # ... f32 op:matmul
//   m ~11 1 0 2 4 # ... stage:anchor loops ~11 1 0 2 4 # ... ;
//   out.tile1.d0 ~7 6 4 # out.tile2.d0 ~6 3 2 # ... acc.unroll_reduction ~0 0 # <eos>
//
// The prompt (up to ";") describes the hardware, the task and every stage's loop extents
// in the order the decision points refer to them (innermost first). The decisions name
// each point of the task's space in order and give its value. DecisionCursor walks the
// decisions token by token and says which tokens are legal next: the point's name, the
// magnitudes of its legal values, then only digits that still spell a legal value of that
// magnitude, `#` once they do. A generator that picks among those tokens alone always
// writes a schedule of the space.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/task_spec.h"
#include "space/schedule_space.h"
#include "util/hardware.h"

namespace tlm {

// How fast a measured schedule is among those measured for its task. A fine-tuning
// sentence says it in its prompt, so the model learns from slow schedules too, and
// generation asks for Best. Best is rank-based (one of the task's kBestRanks fastest,
// the schedules best-only fine-tuning learns from); the others go by the ratio of the
// task's best median to theirs.
enum class SpeedClass { None, Best, Near, Mid, Slow };  // the vocabulary's order
constexpr int kBestRanks = 4;
// rank 0 = the fastest. Best: rank < kBestRanks; else Near: ratio >= 0.7, Mid: >= 0.4,
// Slow: below.
SpeedClass speed_class(size_t rank, double ratio_to_best);

// <bos>, the hardware, the task and its stages, the speed class unless None, then ";".
std::vector<int> encode_prompt(const Hardware& hardware, const TaskSpec& task,
                               const TaskShape& shape, SpeedClass speed = SpeedClass::None);
// Point names and values of a complete, legal decision list, ending with <eos>.
std::vector<int> encode_decisions(const ScheduleSpace& space,
                                  const std::vector<int64_t>& decisions);
// The decision list the tokens spell; throws tlm::Error at the first token the space does
// not allow there (or when the tokens end early).
std::vector<int64_t> decode_decisions(const ScheduleSpace& space, const std::vector<int>& tokens);
// Tokens as words separated by spaces.
std::string sentence_text(const std::vector<int>& tokens);

// Which values a DecisionCursor offers at each point: every legal one (reading and scoring
// stored schedules), or only those a model may propose (ScheduleSpace::proposable_values,
// for generation).
enum class CursorValues { Legal, Proposable };

class DecisionCursor {
 public:
  explicit DecisionCursor(const ScheduleSpace& space, CursorValues values = CursorValues::Legal);

  const std::vector<int>& allowed() const { return allowed_; }  // legal next tokens
  void push(int token);  // throws tlm::Error if the token is not allowed
  bool done() const { return done_; }
  const std::vector<int64_t>& decisions() const { return decisions_; }

 private:
  void begin_point();   // the point's name is next (or <eos> after the last point)
  void allow_digits();  // digits continuing a legal value, `#` if one is complete

  const ScheduleSpace* space_;  // a pointer, so cursors can be copied and assigned
  CursorValues offered_ = CursorValues::Legal;
  std::vector<int64_t> decisions_;
  std::vector<int64_t> values_;     // the current point's offered values
  std::vector<std::string> legal_;  // those of the chosen magnitude, in decimal
  std::string digits_;              // digits of the current value so far
  bool naming_ = true, sizing_ = false, done_ = false;
  std::vector<int> allowed_;
};

}  // namespace tlm
