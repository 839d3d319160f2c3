#include "lang/sentence.h"

#include <algorithm>

#include "lang/vocabulary.h"
#include "ops/registry.h"
#include "util/error.h"

namespace tlm {
namespace {

const char* stage_word(StageKind kind) {
  switch (kind) {
    case StageKind::Output:
      return "stage:output";
    case StageKind::Anchor:
      return "stage:anchor";
    case StageKind::Reduction:
      return "stage:reduction";
    case StageKind::Producer:
      return "stage:producer";
  }
  return "";
}

// Real parameters (a norm's epsilon) and those marked so do not change what a schedule
// does: the prompt leaves them out.
bool shown_in_prompt(const TaskSpec& task, const std::string& key) {
  for (const auto& p : task_def(task.kind).params)
    if (p.name == key) return p.kind != ParamSchema::Kind::Real && p.in_prompt;
  return true;
}

void append_hardware(const Hardware& hw, std::vector<int>& out) {
  const Vocabulary& v = Vocabulary::get();
  out.push_back(v.id("isa"));
  out.push_back(v.id(hw.isa));
  auto number = [&](const char* key, int64_t value) {
    out.push_back(v.id(key));
    v.append_number(value, out);
  };
  number("vector_bits", hw.vector_bits);
  number("cores", hw.cores);
  number("l1d_kb", hw.l1d_bytes >> 10);
  number("l2_kb", hw.l2_bytes >> 10);
  number("l3_kb", hw.l3_bytes >> 10);
}

void append_task(const TaskSpec& task, const TaskShape& shape, std::vector<int>& out) {
  const Vocabulary& v = Vocabulary::get();
  out.push_back(v.id("f32"));
  out.push_back(v.id("op:" + task.op()));
  for (const auto& key : task.shown_keys()) {
    const std::string& value = task.params.at(key);
    if (!shown_in_prompt(task, key)) continue;
    out.push_back(v.id(key));
    if (v.has(value) && !v.is_digit(v.id(value)))
      out.push_back(v.id(value));  // a word, e.g. kind=max
    else
      v.append_number(task.get(key), out);
  }
  for (const auto& word : task.epilogue_words()) {
    size_t at = word.find('@');
    out.push_back(v.id("+" + word.substr(0, at)));
    if (at == std::string::npos) continue;
    out.push_back(v.mask());
    v.append_number(std::stoll(word.substr(at + 1)), out);
  }
  for (const auto& stage : shape.stages) {
    out.push_back(v.id(stage_word(stage.kind)));
    out.push_back(v.id("loops"));
    for (int64_t e : stage.extents) v.append_number(e, out);
    if (stage.rextents.empty()) continue;
    out.push_back(v.id("rloops"));
    for (int64_t e : stage.rextents) v.append_number(e, out);
  }
}

}  // namespace

SpeedClass speed_class(size_t rank, double ratio_to_best) {
  if (rank < size_t(kBestRanks)) return SpeedClass::Best;
  if (ratio_to_best >= 0.7) return SpeedClass::Near;
  if (ratio_to_best >= 0.4) return SpeedClass::Mid;
  return SpeedClass::Slow;
}

std::vector<int> encode_prompt(const Hardware& hardware, const TaskSpec& task,
                               const TaskShape& shape, SpeedClass speed) {
  const Vocabulary& v = Vocabulary::get();
  std::vector<int> out = {v.bos()};
  append_hardware(hardware, out);
  append_task(task, shape, out);
  if (speed != SpeedClass::None) out.push_back(v.speed_class(static_cast<int>(speed) - 1));
  out.push_back(v.separator());
  return out;
}

std::vector<int> encode_decisions(const ScheduleSpace& space,
                                  const std::vector<int64_t>& decisions) {
  space.check(decisions);
  const Vocabulary& v = Vocabulary::get();
  std::vector<int> out;
  for (size_t i = 0; i < space.num_points(); ++i) {
    out.push_back(v.id(space.point(i).name));
    v.append_number(decisions[i], out);
  }
  out.push_back(v.eos());
  return out;
}

std::vector<int64_t> decode_decisions(const ScheduleSpace& space, const std::vector<int>& tokens) {
  DecisionCursor cursor(space);
  for (int t : tokens) {
    cursor.push(t);
    if (cursor.done()) return cursor.decisions();
  }
  throw Error("tensor language: the sentence ends before its last decision");
}

std::string sentence_text(const std::vector<int>& tokens) {
  std::string text;
  for (int t : tokens) text += (text.empty() ? "" : " ") + Vocabulary::get().text(t);
  return text;
}

DecisionCursor::DecisionCursor(const ScheduleSpace& space, CursorValues values)
    : space_(&space), offered_(values) {
  begin_point();
}

void DecisionCursor::begin_point() {
  const Vocabulary& v = Vocabulary::get();
  naming_ = true;
  digits_.clear();
  size_t i = decisions_.size();
  allowed_ = {i < space_->num_points() ? v.id(space_->point(i).name) : v.eos()};
}

void DecisionCursor::allow_digits() {
  const Vocabulary& v = Vocabulary::get();
  allowed_.clear();
  for (const auto& value : legal_) {
    if (value == digits_) allowed_.push_back(v.number_end());
    if (value.size() > digits_.size() && value.compare(0, digits_.size(), digits_) == 0)
      allowed_.push_back(v.digit(value[digits_.size()] - '0'));
  }
  std::sort(allowed_.begin(), allowed_.end());
  allowed_.erase(std::unique(allowed_.begin(), allowed_.end()), allowed_.end());
}

void DecisionCursor::push(int token) {
  const Vocabulary& v = Vocabulary::get();
  if (done_ || std::find(allowed_.begin(), allowed_.end(), token) == allowed_.end())
    throw Error("tensor language: token '" + v.text(token) + "' is not legal after " +
                std::to_string(decisions_.size()) + " decisions");
  if (token == v.eos()) {
    done_ = true;
    allowed_.clear();
  } else if (naming_) {  // the value's magnitude is next
    naming_ = false, sizing_ = true;
    values_ = offered_ == CursorValues::Proposable
                  ? space_->proposable_values(decisions_.size(), decisions_)
                  : space_->legal_values(decisions_.size(), decisions_);
    allowed_.clear();
    for (int64_t value : values_) allowed_.push_back(v.magnitude(value));
    std::sort(allowed_.begin(), allowed_.end());
    allowed_.erase(std::unique(allowed_.begin(), allowed_.end()), allowed_.end());
  } else if (sizing_) {  // the digits of the legal values of that magnitude
    sizing_ = false;
    legal_.clear();
    for (int64_t value : values_)
      if (v.magnitude(value) == token) legal_.push_back(std::to_string(value));
    allow_digits();
  } else if (token == v.number_end()) {
    decisions_.push_back(std::stoll(digits_));
    begin_point();
  } else {
    digits_ += static_cast<char>('0' + (token - v.digit(0)));
    allow_digits();
  }
}

}  // namespace tlm
