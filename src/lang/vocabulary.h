// Vocabulary: every token of the tensor language, one fixed list for all tasks. The list
// only ever grows at its end, so a checkpoint made with an earlier (shorter) vocabulary
// still means the same ids: its embedding is extended for the new words and it can be
// fine-tuned instead of thrown away.
//
// A sentence is `prompt ; decisions`. The prompt describes the hardware and the task in
// words (op, parameter keys, epilogues, stage kinds) and numbers; the decisions name each
// decision point by one token and give its value as a number. A number is its magnitude
// (a token for its power-of-two range: 0, 1, 2-3, 4-7, 8-15, ...) then its decimal
// digits closed by `#` (512 -> "~10" "5" "1" "2" "#"). The magnitude says what matters
// across shapes ("a tile near 64", "as long as the row") in one token that means the same
// for every task; the digits make it exact, so a shape never seen in training still reads
// as tokens the model knows, and no value is out of vocabulary.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tlm {

class Vocabulary {
 public:
  // The one vocabulary (its word list is in vocabulary.cpp).
  static const Vocabulary& get();

  int size() const { return static_cast<int>(tokens_.size()); }
  int id(const std::string& token) const;  // throws tlm::Error for an unknown token
  bool has(const std::string& token) const { return ids_.count(token) != 0; }
  const std::string& text(int id) const;  // throws tlm::Error for an id out of range

  int pad() const { return pad_; }
  int bos() const { return bos_; }
  int eos() const { return eos_; }
  int separator() const { return separator_; }  // ";" between prompt and decisions
  int number_end() const { return number_end_; }
  int digit(int d) const { return digit0_ + d; }
  bool is_digit(int id) const { return id >= digit0_ && id < digit0_ + 10; }
  // The magnitude token of a value >= 0: "~0" for 0, "~k" for 2^(k-1) <= value < 2^k.
  int magnitude(int64_t value) const;
  bool is_magnitude(int id) const { return id >= magnitude0_ && id < magnitude0_ + kMagnitudes; }
  // Speed-class tokens speed:best, speed:near, speed:mid, speed:slow (k = 0..3, the order
  // of SpeedClass in sentence.h after None).
  static constexpr int kSpeedClasses = 4;
  int speed_class(int k) const { return speed0_ + k; }
  bool is_speed_class(int id) const { return id >= speed0_ && id < speed0_ + kSpeedClasses; }

  int mask() const { return mask_; }  // "@": an epilogue operand's mask follows

  // Appends `value` (>= 0) as its magnitude, its digits and `#`.
  void append_number(int64_t value, std::vector<int>& out) const;
  // A vocabulary fingerprint: checkpoints and datasets record it.
  std::string hash() const;
  // The fingerprint of the first `words` words, and the length of the prefix whose
  // fingerprint is `hash` (-1: none): an earlier vocabulary is a prefix of this one.
  std::string prefix_hash(int words) const;
  int prefix_with_hash(const std::string& hash) const;

 private:
  Vocabulary();

  std::vector<std::string> tokens_;
  std::map<std::string, int> ids_;
  static constexpr int kMagnitudes = 64;  // every int64_t value has one
  int pad_ = 0, bos_ = 0, eos_ = 0, separator_ = 0, number_end_ = 0, digit0_ = 0;
  int magnitude0_ = 0, speed0_ = 0, mask_ = 0;
};

}  // namespace tlm
