#include "lang/vocabulary.h"

#include "graph/task_spec.h"
#include "ops/task_shape.h"
#include "space/schedule_space.h"
#include "util/error.h"
#include "util/strings.h"

namespace tlm {

const Vocabulary& Vocabulary::get() {
  static const Vocabulary vocabulary;
  return vocabulary;
}

void Vocabulary::add(const std::string& token) {
  if (ids_.count(token)) return;  // a word may be both a key and a stage name
  ids_[token] = static_cast<int>(tokens_.size());
  tokens_.push_back(token);
}

Vocabulary::Vocabulary() {
  for (const char* special : {"<pad>", "<bos>", "<eos>", ";", "#"}) add(special);
  pad_ = id("<pad>"), bos_ = id("<bos>"), eos_ = id("<eos>");
  separator_ = id(";"), number_end_ = id("#");
  digit0_ = size();
  for (int d = 0; d < 10; ++d) add(std::to_string(d));
  magnitude0_ = size();
  for (int k = 0; k < kMagnitudes; ++k) add("~" + std::to_string(k));
  // Hardware words.
  for (const char* word : {"isa", "vector_bits", "cores", "l1d_kb", "l2_kb", "l3_kb", "x86-64",
                           "x86-64-avx2", "x86-64-avx512", "f32"})
    add(word);
  // Task words.
  for (const auto& op : known_ops()) add("op:" + op);
  for (const auto& key : known_param_keys()) add(key);
  for (const auto& word : known_param_words()) add(word);
  for (const auto& epilogue : known_epilogues()) add("+" + epilogue);
  for (const char* word :
       {"stage:output", "stage:anchor", "stage:reduction", "stage:producer", "loops", "rloops"})
    add(word);
  // Speed classes (SpeedClass in sentence.h).
  speed0_ = size();
  for (const char* word : {"speed:best", "speed:near", "speed:mid", "speed:slow"}) add(word);
  // Decision points.
  for (const auto& point : all_point_names()) add(point);
}

int Vocabulary::id(const std::string& token) const {
  auto it = ids_.find(token);
  if (it == ids_.end()) throw Error("tensor language: no token '" + token + "'");
  return it->second;
}

const std::string& Vocabulary::text(int id) const {
  if (id < 0 || id >= size())
    throw Error("tensor language: token id " + std::to_string(id) + " out of range");
  return tokens_[id];
}

int Vocabulary::magnitude(int64_t value) const {
  if (value < 0) throw Error("tensor language: negative number " + std::to_string(value));
  int bits = 0;
  for (uint64_t v = uint64_t(value); v; v >>= 1) ++bits;
  return magnitude0_ + bits;
}

void Vocabulary::append_number(int64_t value, std::vector<int>& out) const {
  out.push_back(magnitude(value));
  for (char c : std::to_string(value)) out.push_back(digit(c - '0'));
  out.push_back(number_end_);
}

std::string Vocabulary::hash() const {
  return hash_hex(join(tokens_, "\n"));
}

}  // namespace tlm
