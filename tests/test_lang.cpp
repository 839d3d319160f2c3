// The tensor language: decisions -> sentence -> decisions is exact for random schedules of
// every operator kind; the cursor allows exactly the space's legal values at every point;
// shapes never seen before still encode; malformed sentences are errors.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "lang/sentence.h"
#include "lang/vocabulary.h"
#include "op_kinds.h"
#include "util/error.h"

namespace tlm {
namespace {

Hardware test_hardware() {
  Hardware hw;
  hw.isa = "x86-64-avx512";
  hw.vector_bits = 512;
  hw.cores = 2;
  hw.l1d_bytes = 48 << 10, hw.l2_bytes = 2 << 20, hw.l3_bytes = int64_t(32) << 20;
  return hw;
}

class Sentences : public ::testing::TestWithParam<std::string> {};

TEST_P(Sentences, RoundTripIsExactAndEveryTokenIsAllowed) {
  TaskSpec task = parse_task_spec(GetParam());
  ScheduleSpace space(describe_task(task));
  auto prompt = encode_prompt(test_hardware(), task, space.shape());
  EXPECT_EQ(prompt.front(), Vocabulary::get().bos());
  EXPECT_EQ(prompt.back(), Vocabulary::get().separator());
  std::mt19937_64 rng(std::hash<std::string>()(GetParam()));
  for (int i = 0; i < 1000; ++i) {
    auto decisions = space.sample(rng);
    auto tokens = encode_decisions(space, decisions);
    DecisionCursor cursor(space);
    for (int t : tokens) {
      const auto& allowed = cursor.allowed();
      ASSERT_NE(std::find(allowed.begin(), allowed.end(), t), allowed.end());
      cursor.push(t);
    }
    ASSERT_TRUE(cursor.done());
    ASSERT_EQ(cursor.decisions(), decisions);
    ASSERT_EQ(decode_decisions(space, tokens), decisions);
  }
}

// Every value the cursor lets a generator spell at a point is legal, and every legal
// value can be spelled.
TEST_P(Sentences, CursorSpellsExactlyTheLegalValues) {
  TaskSpec task = parse_task_spec(GetParam());
  ScheduleSpace space(describe_task(task));
  const Vocabulary& v = Vocabulary::get();
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20; ++i) {
    auto decisions = space.sample(rng);
    DecisionCursor cursor(space);
    for (size_t p = 0; p < space.num_points(); ++p) {
      cursor.push(cursor.allowed().at(0));  // the point's name
      std::set<int64_t> spelled;
      std::function<void(DecisionCursor, int64_t)> walk = [&](DecisionCursor c, int64_t value) {
        for (int t : c.allowed()) {
          if (t == v.number_end()) {
            spelled.insert(value);
          } else {
            DecisionCursor next = c;
            next.push(t);  // a magnitude leaves the value as it is; a digit extends it
            walk(next, v.is_magnitude(t) ? value : value * 10 + (t - v.digit(0)));
          }
        }
      };
      walk(cursor, 0);
      auto legal = space.legal_values(p, decisions);
      ASSERT_EQ(spelled, std::set<int64_t>(legal.begin(), legal.end())) << space.point(p).name;
      std::vector<int> value;
      v.append_number(decisions[p], value);
      for (int t : value) cursor.push(t);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOpKind, Sentences, ::testing::ValuesIn(every_task_example()));

TEST(Vocabulary, UnseenShapesStillEncode) {
  TaskSpec task = parse_task_spec("dense:m=97,n=11008,k=4099+bias+silu");
  ScheduleSpace space(describe_task(task));
  auto prompt = encode_prompt(test_hardware(), task, space.shape());
  std::string text = sentence_text(prompt);
  EXPECT_NE(text.find("n ~14 1 1 0 0 8 #"), std::string::npos) << text;
  EXPECT_NE(text.find("k ~13 4 0 9 9 #"), std::string::npos) << text;
  std::mt19937_64 rng(3);
  auto decisions = space.sample(rng);
  EXPECT_EQ(decode_decisions(space, encode_decisions(space, decisions)), decisions);
}

// `variant` keys apart from `plain` (its records stay apart) and has its prompt (the model
// schedules it as it learned to, and no word is added).
void expect_key_apart_prompt_shared(const TaskSpec& plain, const TaskSpec& variant) {
  EXPECT_NE(plain.key(), variant.key());
  EXPECT_EQ(encode_prompt(test_hardware(), plain, describe_task(plain)),
            encode_prompt(test_hardware(), variant, describe_task(variant)));
}

// A convolution that takes a channel scale in (scale_in) does the work of the plain one
// in the same loops.
TEST(Vocabulary, ScaleInIsInTheKeyButNotThePrompt) {
  TaskSpec p =
      parse_task_spec("conv2d:n=1,c=32,h=14,w=14,k=64,r=1,s=1,in_block=16,out_block=16+bias");
  TaskSpec scaled = parse_task_spec(
      "conv2d:n=1,c=32,h=14,w=14,k=64,r=1,s=1,in_block=16,out_block=16,scale_in=1+bias");
  expect_key_apart_prompt_shared(p, scaled);
  EXPECT_EQ(describe_task(scaled).inputs.size(), describe_task(p).inputs.size() + 1);
  EXPECT_THROW(parse_task_spec("conv2d:n=1,c=4,h=5,w=5,k=4,r=1,s=1,groups=2,scale_in=1"), Error);
  EXPECT_THROW(parse_task_spec("conv2d:n=1,c=4,h=5,w=5,k=4,r=1,s=1,scale_in=2"), Error);
}

// Likewise a dense layer that writes only the first cols columns of its padded weight:
// the same loops, so the padded layer's prompt.
TEST(Vocabulary, DenseColumnsAreInTheKeyButNotThePrompt) {
  expect_key_apart_prompt_shared(parse_task_spec("dense:m=128,n=50304,k=768"),
                                 parse_task_spec("dense:m=128,n=50304,k=768,cols=50257"));
}

// And a Winograd product whose filters may be packed (constant_b=1): the same loops, so
// the plain product's prompt; its decisions start with layout.weight_block. And a product
// reading head-split operands in place (a_heads, b_heads): the same loops and decisions.
TEST(Vocabulary, ProductLayoutsAreInTheKeyButNotThePrompt) {
  TaskSpec plain = parse_task_spec("batch_matmul:b=16,m=49,n=256,k=256");
  TaskSpec packable = parse_task_spec("batch_matmul:b=16,m=49,n=256,k=256,constant_b=1");
  expect_key_apart_prompt_shared(plain, packable);
  ScheduleSpace space(describe_task(packable));
  EXPECT_EQ(space.num_points(), ScheduleSpace(describe_task(plain)).num_points() + 1);
  EXPECT_EQ(space.point(0).name, "layout.weight_block");
  TaskSpec heads = parse_task_spec("batch_matmul:b=16,m=49,n=256,k=256,a_heads=8,b_heads=16");
  expect_key_apart_prompt_shared(plain, heads);
  EXPECT_EQ(ScheduleSpace(describe_task(heads)).num_points(),
            ScheduleSpace(describe_task(plain)).num_points());
}

// A number's magnitude token is its power-of-two range, the same for every task.
TEST(Vocabulary, MagnitudesArePowerOfTwoRanges) {
  const Vocabulary& v = Vocabulary::get();
  std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "~0"},  {1, "~1"},  {2, "~2"},   {3, "~2"},   {4, "~3"},
      {64, "~7"}, {96, "~7"}, {127, "~7"}, {128, "~8"}, {int64_t(1) << 40, "~41"}};
  for (const auto& [value, token] : cases) EXPECT_EQ(v.text(v.magnitude(value)), token) << value;
  EXPECT_THROW(v.magnitude(-1), Error);
}

// After a point's name, the cursor allows the magnitudes of its legal values only, then
// the digits of the legal values of the chosen magnitude.
TEST(Vocabulary, CursorOffersMagnitudesThenTheirValues) {
  const Vocabulary& v = Vocabulary::get();
  ScheduleSpace space(describe_task(parse_task_spec("matmul:m=96,n=96,k=96")));
  DecisionCursor cursor(space);
  cursor.push(cursor.allowed().at(0));  // out.tile1.d0: divisors of 96
  std::vector<std::string> magnitudes;
  for (int t : cursor.allowed()) magnitudes.push_back(v.text(t));
  EXPECT_EQ(magnitudes, (std::vector<std::string>{"~1", "~2", "~3", "~4", "~5", "~6", "~7"}));
  cursor.push(v.id("~6"));  // 32 and 48
  EXPECT_EQ(cursor.allowed(), (std::vector<int>{v.digit(3), v.digit(4)}));
  cursor.push(v.digit(4));
  EXPECT_EQ(cursor.allowed(), (std::vector<int>{v.digit(8)}));
  EXPECT_THROW(cursor.push(v.digit(0)), Error);
}

TEST(Vocabulary, MalformedSentencesAreErrors) {
  TaskSpec task = parse_task_spec("matmul:m=64,n=64,k=64");
  ScheduleSpace space(describe_task(task));
  const Vocabulary& v = Vocabulary::get();
  std::mt19937_64 rng(3);
  auto tokens = encode_decisions(space, space.sample(rng));
  auto truncated = tokens;
  truncated.resize(tokens.size() / 2);
  EXPECT_THROW(decode_decisions(space, truncated), Error);
  auto wrong_name = tokens;
  wrong_name[0] = v.id("out.tile2.d0");
  EXPECT_THROW(decode_decisions(space, wrong_name), Error);
  auto illegal_value = tokens;  // out.tile1.d0 = 3 does not divide 64
  illegal_value[1] = v.digit(3);
  EXPECT_THROW(decode_decisions(space, illegal_value), Error);
  EXPECT_THROW(v.id("no-such-token"), Error);
  EXPECT_THROW(v.text(v.size()), Error);
}

// A record's fingerprint names the machine its prompt describes: parsing it back gives the
// same fingerprint and prompt facts, and strings that are not fingerprints are refused.
TEST(Hardware, FingerprintsRoundTripAndOthersAreRefused) {
  Hardware here = detect_hardware();
  Hardware parsed = hardware_from_fingerprint(here.fingerprint());
  EXPECT_EQ(parsed.fingerprint(), here.fingerprint());
  EXPECT_EQ(parsed.isa, here.isa);
  EXPECT_EQ(parsed.vector_bits, here.vector_bits);
  EXPECT_EQ(parsed.cores, here.cores);
  EXPECT_EQ(parsed.l1d_bytes, here.l1d_bytes);
  EXPECT_EQ(parsed.l2_bytes, here.l2_bytes);
  for (const char* fingerprint :
       {"x86-64-avx512/2c/L1d32K/L21024K/L3320M", "x86-64-avx512/2c/L1d48K/L21024K/L332M",
        "x86-64-avx2/16c/L1d32K/L2512K/L30M", "x86-64/1c/L1d0K/L20K/L30M"})
    EXPECT_EQ(hardware_from_fingerprint(fingerprint).fingerprint(), fingerprint);
  EXPECT_EQ(hardware_from_fingerprint("x86-64-avx2/16c/L1d32K/L2512K/L30M").vector_bits, 256);
  EXPECT_EQ(hardware_from_fingerprint("x86-64-avx512/2c/L1d48K/L21024K/L332M").l1d_bytes, 48 << 10);
  for (const char* bad :
       {"hw", "", "x86-64-avx512/2c/L1d32K/L21024K", "x86-64-avx512/2c/L1d32K/L21024K/L3320M/x",
        "arm64/2c/L1d32K/L21024K/L3320M", "x86-64-avx512/0c/L1d32K/L21024K/L3320M",
        "x86-64-avx512/2c/L1d032K/L21024K/L3320M", "x86-64-avx512/2c/L1d32/L21024K/L3320M",
        "x86-64-avx512/2c/L1d-3K/L21024K/L3320M",
        "x86-64-avx512/2c/L1d32K/L21024K/L3999999999999M"})
    EXPECT_THROW(hardware_from_fingerprint(bad), Error) << bad;
}

}  // namespace
}  // namespace tlm
