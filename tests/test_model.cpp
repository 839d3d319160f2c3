// The model: KV-cached decoding matches full forward passes; generation is legal for every
// operator kind even with an untrained model, deterministic, and seeded sampling repeats.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "lang/sentence.h"
#include "lang/vocabulary.h"
#include "model/checkpoint.h"
#include "model/dataset.h"
#include "model/generator.h"
#include "model/registry.h"
#include "model/schedule_model.h"
#include "model/train.h"
#include "mutate.h"
#include "op_kinds.h"
#include "util/error.h"

namespace tlm {
namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab = Vocabulary::get().size();
  c.context = 256;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 4;
  return c;
}

Hardware test_hardware() {
  Hardware hw;
  hw.isa = "x86-64-avx512";
  hw.vector_bits = 512;
  hw.cores = 2;
  return hw;
}

// A tiny model in evaluation mode, seeded.
Gpt tiny_model(int seed) {
  torch::manual_seed(seed);
  Gpt model(tiny_config());
  model->eval();
  return model;
}

// A cache holding `prompt` [1, length] as the shared part of `beams` sequences.
KvCache beams_after(Gpt& model, const torch::Tensor& prompt, int beams) {
  KvCache cache;
  model->step(prompt, cache);
  cache.share();
  cache.select(torch::zeros({beams}, torch::kLong));
  return cache;
}

TEST(Gpt, CachedStepsMatchTheFullForwardPass) {
  Gpt model = tiny_model(1);
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(0, tiny_config().vocab, {2, 20}, torch::kLong);
  auto full = model->forward(tokens);
  KvCache cache;
  auto first = model->step(tokens.slice(1, 0, 12), cache);
  std::vector<torch::Tensor> parts = {first};
  for (int t = 12; t < 20; ++t) parts.push_back(model->step(tokens.slice(1, t, t + 1), cache));
  auto stepped = torch::cat(parts, 1);
  EXPECT_TRUE(torch::allclose(full, stepped, 1e-4, 1e-5));
  EXPECT_EQ(cache.length(), 20);
}

// Beams branching from one prompt: the prompt's keys and values are shared, each beam's
// own tokens are cached apart and reordered; every beam still scores as its full sequence.
TEST(Gpt, SharedPromptCacheMatchesTheFullForwardPass) {
  Gpt model = tiny_model(2);
  torch::NoGradGuard no_grad;
  auto prompt = torch::randint(0, tiny_config().vocab, {1, 10}, torch::kLong);
  auto own = torch::randint(0, tiny_config().vocab, {3, 6}, torch::kLong);
  KvCache cache = beams_after(model, prompt, 3);
  auto last = model->step(own.slice(1, 0, 3), cache);    // three tokens at once
  cache.select(torch::tensor({2, 0, 1}, torch::kLong));  // the beams reorder
  auto rows = own.index_select(0, torch::tensor({2, 0, 1}, torch::kLong));
  for (int t = 3; t < 6; ++t) last = model->step(rows.slice(1, t, t + 1), cache);
  auto full = model->forward(torch::cat({prompt.expand({3, 10}), rows}, 1));
  EXPECT_TRUE(torch::allclose(full.select(1, -1), last.select(1, -1), 1e-4, 1e-5));
  EXPECT_EQ(cache.length(), 16);
  EXPECT_EQ(cache.shared_length(), 10);
}

// A ragged step gives each beam its own number of new tokens (the rest padding): every
// beam's logits at its real tokens still equal the full forward pass over its sequence.
TEST(Gpt, RaggedStepsMatchTheFullForwardPass) {
  Gpt model = tiny_model(3);
  torch::NoGradGuard no_grad;
  int vocab = tiny_config().vocab;
  auto prompt = torch::randint(0, vocab, {1, 7}, torch::kLong);
  KvCache cache = beams_after(model, prompt, 2);
  // Beam 0 gets 3 then 1 tokens, beam 1 gets 1 then 3 (padding fills the gaps).
  auto first = torch::randint(0, vocab, {2, 3}, torch::kLong);
  auto second = torch::randint(0, vocab, {2, 3}, torch::kLong);
  auto out1 = model->step(first, cache, {3, 1});
  auto out2 = model->step(second, cache, {1, 3});
  auto beam0 = torch::cat({prompt, first.slice(0, 0, 1), second.slice(0, 0, 1).slice(1, 0, 1)}, 1);
  auto beam1 = torch::cat({prompt, first.slice(0, 1, 2).slice(1, 0, 1), second.slice(0, 1, 2)}, 1);
  auto full0 = model->forward(beam0), full1 = model->forward(beam1);
  EXPECT_TRUE(torch::allclose(full0.slice(1, 7, 10)[0], out1[0], 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(full0.select(1, 10)[0], out2[0][0], 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(full1.select(1, 7)[0], out1[1][0], 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(full1.slice(1, 8, 11)[0], out2[1], 1e-4, 1e-5));
  EXPECT_THROW(model->step(second, cache, {0, 3}), Error);  // a count below 1
  EXPECT_THROW(model->step(second, cache, {1}), Error);     // a count missing
  KvCache empty;  // a ragged first step, with nothing cached before it
  auto alone = model->step(first, empty, {3, 1});
  EXPECT_TRUE(torch::allclose(alone[0], model->forward(first.slice(0, 0, 1))[0], 1e-4, 1e-5));
  EXPECT_EQ(empty.length(), 3);
}

TEST(Gpt, ConfigErrorsAreClear) {
  EXPECT_THROW(ModelConfig::from_json("{\"context\": 64}"), Error);
  EXPECT_THROW(ModelConfig::from_json("not json"), Error);
  EXPECT_THROW(ModelConfig::from_json("{\"context\":64,\"layers\":2,\"d_model\":30,\"heads\":4}"),
               Error);
  auto c = ModelConfig::from_json(tiny_config().to_json());
  EXPECT_EQ(c.d_model, 32);
  EXPECT_EQ(c.vocab, tiny_config().vocab);
}

// Mutated config files (bytes flipped, cut, inserted): each is read into a config a model
// can be made from, or refused with tlm::Error; nothing else escapes. 2,000 files.
TEST(Gpt, FuzzedConfigsAreReadOrRefused) {
  const std::string valid = tiny_config().to_json();
  std::mt19937_64 rng(16);
  int refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = mutate(valid, rng, "0123456789-.e{}[]\":, x");
    try {
      ModelConfig c = ModelConfig::from_json(text);
      EXPECT_TRUE(c.context >= 8 && c.context <= 65536 && c.layers >= 1 && c.layers <= 256 &&
                  c.heads >= 1 && c.d_model % c.heads == 0 && c.d_model <= 16384)
          << text;
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 500);
}

class Generation : public ::testing::TestWithParam<std::string> {};

TEST_P(Generation, EveryScheduleIsLegalAndDecodingIsDeterministic) {
  Gpt model = tiny_model(2);
  TaskSpec task = parse_task_spec(GetParam());
  ScheduleSpace space(describe_task(task));
  auto prompt = encode_prompt(test_hardware(), task, space.shape());
  for (const char* mode : {"beam", "sample"}) {
    GenerateOptions options{8, mode, 5, 1.0};
    auto first = generate(model, prompt, space, options);
    auto again = generate(model, prompt, space, options);
    ASSERT_FALSE(first.empty());
    ASSERT_EQ(first.size(), again.size());
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_TRUE(space.is_legal(first[i].decisions)) << mode;
      EXPECT_EQ(first[i].decisions, again[i].decisions) << mode;
      EXPECT_LE(first[i].log_prob, 0);
    }
    if (std::string(mode) == "beam") {
      for (size_t i = 1; i < first.size(); ++i) EXPECT_GE(first[i - 1].log_prob, first[i].log_prob);
    }
  }
}

// Greedy decoding (which feeds the tokens the space forces together with each choice, in
// one cached step) picks what a plain decoder picks: full forward pass over the whole
// sentence each step, the most probable allowed token.
TEST_P(Generation, GreedyMatchesAPlainFullPassDecoder) {
  Gpt model = tiny_model(3);
  TaskSpec task = parse_task_spec(GetParam());
  ScheduleSpace space(describe_task(task));
  auto prompt = encode_prompt(test_hardware(), task, space.shape());
  auto greedy = generate(model, prompt, space, {1, "greedy", 0, 1.0}).at(0).decisions;
  torch::NoGradGuard no_grad;
  DecisionCursor cursor(space, CursorValues::Proposable);
  std::vector<int64_t> sentence(prompt.begin(), prompt.end());
  while (!cursor.done()) {
    auto tokens = torch::tensor(sentence, torch::kLong).view({1, int64_t(sentence.size())});
    auto logits = model->forward(tokens)[0][int64_t(sentence.size()) - 1];
    int best = cursor.allowed()[0];
    for (int t : cursor.allowed())
      if (logits[t].item<float>() > logits[best].item<float>()) best = t;
    cursor.push(best);
    sentence.push_back(best);
  }
  EXPECT_EQ(greedy, cursor.decisions());
}

// A beam's score is the sentence's log-probability under the model (softmax over the
// whole vocabulary at every token, the forced ones included), as a full forward pass over
// the finished sentence computes it; so a number whose digits start a value the space
// forbids pays for the continuation the model wanted.
TEST_P(Generation, BeamScoreIsTheSentenceLogProbabilityUnderTheModel) {
  Gpt model = tiny_model(5);
  TaskSpec task = parse_task_spec(GetParam());
  ScheduleSpace space(describe_task(task));
  auto prompt = encode_prompt(test_hardware(), task, space.shape());
  auto best = generate(model, prompt, space, {4, "beam", 0, 1.0}).at(0);
  auto body = encode_decisions(space, best.decisions);
  std::vector<int64_t> sentence(prompt.begin(), prompt.end());
  sentence.insert(sentence.end(), body.begin(), body.end());
  torch::NoGradGuard no_grad;
  auto tokens = torch::tensor(sentence, torch::kLong).view({1, int64_t(sentence.size())});
  auto log_probs = torch::log_softmax(model->forward(tokens)[0], -1);
  double expected = 0;
  for (size_t i = prompt.size(); i < sentence.size(); ++i)
    expected += log_probs[int64_t(i) - 1][sentence[i]].item<double>();
  EXPECT_NEAR(best.log_prob, expected, 1e-3 * std::max(1.0, std::fabs(expected)));
}

INSTANTIATE_TEST_SUITE_P(EveryOpKind, Generation, ::testing::ValuesIn(every_task_example()));

// Generation proposes only ScheduleSpace::proposable_values: a task of 9.6 MFLOP never on
// one thread where its tiles let it run in parallel, by beam search or by sampling, though
// the space allows it.
TEST(Generation, LargeTasksAreNeverProposedOnOneThread) {
  Gpt model = tiny_model(7);
  TaskSpec task =
      parse_task_spec("conv2d:n=1,c=384,h=14,w=14,k=64,r=1,s=1,in_block=16,out_block=16+bias+add");
  ScheduleSpace space(describe_task(task));
  size_t parallel = 0;
  while (space.point(parallel).name != "out.parallel") ++parallel;
  auto prompt = encode_prompt(test_hardware(), task, space.shape());
  int could_run_on_one_thread = 0;
  for (const char* mode : {"beam", "sample"}) {
    auto generated = generate(model, prompt, space, {16, mode, 3, 1.5});
    ASSERT_FALSE(generated.empty());
    for (const auto& g : generated) {
      ASSERT_TRUE(space.is_legal(g.decisions));
      // (tiles that leave one tile per loop allow nothing but one thread)
      if (space.legal_values(parallel, g.decisions).size() == 1) continue;
      ++could_run_on_one_thread;
      EXPECT_NE(g.decisions[parallel], 0) << mode;
    }
  }
  EXPECT_GT(could_run_on_one_thread, 8);
}

// Reusing the keys and values of the previous prompt's shared prefix changes nothing.
TEST(Generation, PromptCacheGivesTheSameSchedules) {
  Gpt model = tiny_model(4);
  PromptCache prompt_cache;
  std::vector<std::string> specs = every_task_example(), again = specs;
  specs.insert(specs.end(), again.begin(), again.end());  // the second pass reuses the cache
  for (const auto& spec : specs) {
    TaskSpec task = parse_task_spec(spec);
    ScheduleSpace space(describe_task(task));
    auto prompt = encode_prompt(test_hardware(), task, space.shape());
    GenerateOptions options{4, "beam", 0, 1.0};
    auto plain = generate(model, prompt, space, options);
    auto cached = generate(model, prompt, space, options, &prompt_cache);
    ASSERT_EQ(plain.size(), cached.size()) << spec;
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].decisions, cached[i].decisions) << spec;
      EXPECT_NEAR(plain[i].log_prob, cached[i].log_prob, 1e-3) << spec;
    }
  }
}

std::string temp_dir(const std::string& name) {
  std::string dir = "/tmp/tlm-test-model-" + std::to_string(getpid()) + "-" + name;
  std::system(("rm -rf " + dir).c_str());
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

Dataset small_corpus() {
  return sample_corpus({"matmul:m=64,n=64,k=64", "softmax:rows=32,cols=64",
                        "conv2d:n=1,c=8,h=8,w=8,k=8,r=3,s=3,pad=1+relu"},
                       20, 9, test_hardware());
}

TEST(Dataset, RoundTripIsExactAndBadFilesAreErrors) {
  std::string dir = temp_dir("dataset");
  Dataset data = small_corpus();
  write_dataset(dir + "/d.bin", data);
  Dataset back = read_dataset(dir + "/d.bin");
  ASSERT_EQ(back.sentences.size(), data.sentences.size());
  for (size_t i = 0; i < data.sentences.size(); ++i) {
    EXPECT_EQ(back.sentences[i].tokens, data.sentences[i].tokens);
    EXPECT_EQ(back.sentences[i].prompt_length, data.sentences[i].prompt_length);
  }
  EXPECT_EQ(back.hash, data.hash);
  std::ifstream in(dir + "/d.bin", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir + "/truncated.bin", std::ios::binary) << bytes.substr(0, bytes.size() - 7);
  EXPECT_THROW(read_dataset(dir + "/truncated.bin"), Error);
  std::ofstream(dir + "/foreign.bin") << "not a dataset at all";
  EXPECT_THROW(read_dataset(dir + "/foreign.bin"), Error);
  EXPECT_THROW(read_dataset(dir + "/missing.bin"), Error);
}

TEST(Dataset, PretrainTasksLeaveOutHeldOutShapes) {
  auto all = pretrain_tasks({});
  auto kept = pretrain_tasks({"matmul:m=64,n=64,k=64", "softmax:rows=128,cols=64"});
  EXPECT_EQ(kept.size() + 2, all.size());
  for (const auto& t : kept) EXPECT_NE(parse_task_spec(t).key(), "softmax:rows=128,cols=64");
}

// A store with 20 distinct legal schedules of `spec`, the i-th (0-based) timed 1 + i/10 ms,
// plus one failed run; returns the schedules in time order.
std::vector<std::vector<int64_t>> store_timed_schedules(RecordStore& store, const std::string& spec,
                                                        const Hardware& hw) {
  ScheduleSpace space(describe_task(parse_task_spec(spec)));
  std::mt19937_64 rng(5);
  std::vector<std::vector<int64_t>> schedules;
  std::vector<Record> batch;
  while (schedules.size() < 20) {
    auto d = space.sample(rng);
    if (std::find(schedules.begin(), schedules.end(), d) != schedules.end()) continue;
    schedules.push_back(d);
    double ms = 1.0 + 0.1 * double(schedules.size() - 1);
    batch.push_back({hw.fingerprint(), parse_task_spec(spec).key(), spec, d, "random", Status::Ok,
                     ms, ms, 5, "", "", 0});
  }
  batch.push_back({hw.fingerprint(), parse_task_spec(spec).key(), spec, space.sample(rng), "random",
                   Status::Crash, 0, 0, 0, "", "", 0});
  store.add(batch);
  return schedules;
}

TEST(Dataset, SpeedClassesLabelSchedulesOfEverySpeed) {
  std::string dir = temp_dir("speed");
  RecordStore store(dir + "/r.db");
  Hardware hw = test_hardware();
  auto kept = store_timed_schedules(store, "matmul:m=64,n=64,k=64", hw);
  store_timed_schedules(store, "softmax:rows=32,cols=64", hw);
  ScheduleSpace space(describe_task(parse_task_spec("matmul:m=64,n=64,k=64")));
  const Vocabulary& v = Vocabulary::get();
  // 12 of 20: the fastest 3, then 9 spread evenly over ranks 3..19.
  Dataset data = measured_by_speed(store, {hw}, {12}, {"softmax:rows=32,cols=64"});
  ASSERT_EQ(data.sentences.size(), 12u);
  std::vector<size_t> ranks = {0, 1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 18};
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Sentence& s = data.sentences[i];
    std::vector<int> body(s.tokens.begin() + s.prompt_length, s.tokens.end());
    EXPECT_EQ(decode_decisions(space, body), kept[ranks[i]]);
    double ratio = 1.0 / (1.0 + 0.1 * double(ranks[i]));  // the best took 1 ms
    std::string expected = ranks[i] < 4   ? "speed:best"
                           : ratio >= 0.7 ? "speed:near"
                           : ratio >= 0.4 ? "speed:mid"
                                          : "speed:slow";
    EXPECT_EQ(v.text(s.tokens[s.prompt_length - 2]), expected);
    EXPECT_EQ(s.tokens[s.prompt_length - 1], v.separator());
  }
  // With the best ones 3 times each: 4 x 3 Best sentences, the other 8 once.
  Dataset weighted = measured_by_speed(store, {hw}, {12, 3}, {"softmax:rows=32,cols=64"});
  ASSERT_EQ(weighted.sentences.size(), 20u);
  for (size_t i = 0; i < 12; ++i)
    EXPECT_EQ(weighted.sentences[i].tokens, data.sentences[i / 3].tokens);
  for (size_t i = 12; i < 20; ++i)
    EXPECT_EQ(weighted.sentences[i].tokens, data.sentences[i - 8].tokens);
  // The fastest 7 times (top copies), the other Best ones 3 times: 7 + 3 x 3 + 8.
  SpeedSelection top{12, 3};
  top.top_copies = 7;
  Dataset sharpened = measured_by_speed(store, {hw}, top, {"softmax:rows=32,cols=64"});
  ASSERT_EQ(sharpened.sentences.size(), 24u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(sharpened.sentences[i].tokens, data.sentences[0].tokens);
  for (size_t i = 7; i < 24; ++i)
    EXPECT_EQ(sharpened.sentences[i].tokens, weighted.sentences[i - 4].tokens);
  // The best-only data of the same store: no speed classes, the 4 fastest in order.
  Dataset best = best_measured(store, {hw}, 4, {"softmax:rows=32,cols=64"});
  ASSERT_EQ(best.sentences.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const Sentence& s = best.sentences[i];
    for (int k = 0; k < s.prompt_length; ++k) EXPECT_FALSE(v.is_speed_class(s.tokens[k]));
    std::vector<int> body(s.tokens.begin() + s.prompt_length, s.tokens.end());
    EXPECT_EQ(decode_decisions(space, body), kept[i]);
  }
}

// One model for many machines: each host's records are ranked among themselves and
// prompted with that host; a label that names no machine is left out.
TEST(Dataset, EveryHostLearnsItsOwnRecordsUnderItsOwnPrompt) {
  std::string dir = temp_dir("hosts");
  RecordStore store(dir + "/r.db");
  Hardware zen4 = hardware_from_fingerprint("x86-64-avx512/2c/L1d32K/L21024K/L3320M");
  Hardware zen5 = hardware_from_fingerprint("x86-64-avx512/2c/L1d48K/L21024K/L3384M");
  const std::string spec = "matmul:m=64,n=64,k=64";
  auto on_zen4 = store_timed_schedules(store, spec, zen4);
  Hardware label = zen5;  // records of a test label, not a machine
  label.isa = "test-label";
  store_timed_schedules(store, spec, label);
  // Zen 5 timed the same 20 schedules in the opposite order.
  std::vector<Record> reversed;
  for (size_t i = 0; i < on_zen4.size(); ++i) {
    double ms = 3.0 - 0.1 * double(i);
    reversed.push_back({zen5.fingerprint(), parse_task_spec(spec).key(), spec, on_zen4[i], "random",
                        Status::Ok, ms, ms, 5, "", "", 0});
  }
  store.add(reversed);
  auto hosts = measured_hosts(store);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].fingerprint(), zen4.fingerprint());
  EXPECT_EQ(hosts[1].fingerprint(), zen5.fingerprint());
  Dataset both = measured_by_speed(store, hosts, {4}, {});
  Dataset only4 = measured_by_speed(store, {zen4}, {4}, {});
  Dataset only5 = measured_by_speed(store, {zen5}, {4}, {});
  ASSERT_EQ(both.sentences.size(), 8u);
  ScheduleSpace space(describe_task(parse_task_spec(spec)));
  const size_t ranks[] = {0, 1, 7, 13};  // 4 of 20: the fastest, then 3 spread
  for (size_t i = 0; i < 4; ++i) {       // task by task, host by host
    EXPECT_EQ(both.sentences[i].tokens, only4.sentences[i].tokens);
    EXPECT_EQ(both.sentences[4 + i].tokens, only5.sentences[i].tokens);
    const Sentence& s = only5.sentences[i];
    std::vector<int> body(s.tokens.begin() + s.prompt_length, s.tokens.end());
    EXPECT_EQ(decode_decisions(space, body), on_zen4[on_zen4.size() - 1 - ranks[i]]);
  }
  const Sentence& fastest5 = only5.sentences[0];
  EXPECT_EQ(
      std::vector<int>(fastest5.tokens.begin(), fastest5.tokens.begin() + fastest5.prompt_length),
      encode_prompt(zen5, parse_task_spec(spec), space.shape(), SpeedClass::Best));
  EXPECT_NE(only4.sentences[0].tokens, only5.sentences[0].tokens);
  // Zen 5 emphasized 3 times: each of its sentences three times in a row, Zen 4's once.
  SpeedSelection emphasized{4};
  emphasized.emphasized_host = zen5.fingerprint();
  emphasized.host_copies = 3;
  Dataset weighted = measured_by_speed(store, hosts, emphasized, {});
  ASSERT_EQ(weighted.sentences.size(), 16u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(weighted.sentences[i].tokens, only4.sentences[i].tokens);
  for (size_t i = 0; i < 12; ++i)
    EXPECT_EQ(weighted.sentences[4 + i].tokens, only5.sentences[i / 3].tokens);
}

// Cold-weight records (fingerprint + kColdWeightsSuffix) are the same host: where a task
// has them they are its training data, ranked among themselves; elsewhere its warm ones.
TEST(Dataset, ColdRecordsOfAHostReplaceItsWarmOnes) {
  std::string dir = temp_dir("cold");
  RecordStore store(dir + "/r.db");
  Hardware host = hardware_from_fingerprint("x86-64-avx512/2c/L1d48K/L22048K/L3480M");
  const std::string spec = "matmul:m=64,n=64,k=64", other = "softmax:rows=32,cols=64";
  auto warm = store_timed_schedules(store, spec, host);
  store_timed_schedules(store, other, host);
  std::vector<Record> cold;  // timed cold, the same 20 schedules in the opposite order
  for (size_t i = 0; i < warm.size(); ++i) {
    double ms = 3.0 - 0.1 * double(i);
    cold.push_back({host.fingerprint() + kColdWeightsSuffix, parse_task_spec(spec).key(), spec,
                    warm[i], "random", Status::Ok, ms, ms, 5, "", "", 0});
  }
  store.add(cold);
  auto hosts = measured_hosts(store);
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].fingerprint(), host.fingerprint());
  ScheduleSpace space(describe_task(parse_task_spec(spec)));
  Dataset matmul = best_measured(store, hosts, 4, {other});
  ASSERT_EQ(matmul.sentences.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const Sentence& s = matmul.sentences[i];
    std::vector<int> body(s.tokens.begin() + s.prompt_length, s.tokens.end());
    EXPECT_EQ(decode_decisions(space, body), warm[warm.size() - 1 - i]);
    EXPECT_EQ(std::vector<int>(s.tokens.begin(), s.tokens.begin() + s.prompt_length),
              encode_prompt(host, parse_task_spec(spec), space.shape()));
  }
  Dataset softmax = best_measured(store, hosts, 4, {spec});  // no cold records: the warm ones
  EXPECT_EQ(softmax.sentences.size(), 4u);
  Dataset warm_matmul = best_measured(store, hosts, 1, {other}, ColdRecords::None);
  ASSERT_EQ(warm_matmul.sentences.size(), 1u);
  const Sentence& w = warm_matmul.sentences[0];
  EXPECT_EQ(decode_decisions(space, {w.tokens.begin() + w.prompt_length, w.tokens.end()}),
            warm.front());
  // Speed classes learn the cold order too, unless told to keep to the warm records.
  SpeedSelection first{1};
  auto fastest_of = [&](const SpeedSelection& selection) {
    Dataset d = measured_by_speed(store, hosts, selection, {other});
    EXPECT_EQ(d.sentences.size(), 1u);
    const Sentence& s = d.sentences.at(0);
    return decode_decisions(space, {s.tokens.begin() + s.prompt_length, s.tokens.end()});
  };
  EXPECT_EQ(fastest_of(first), warm.back());
  SpeedSelection warm_only{1};
  warm_only.cold_records = ColdRecords::None;
  EXPECT_EQ(fastest_of(warm_only), warm.front());
}

// ColdRecords::StreamedWeights: a dense layer (its packed weights stream from memory in a
// model) learns its cold order, a matmul of two activations its warm order.
TEST(Dataset, ColdRecordsOnlyWhereWeightsStream) {
  std::string dir = temp_dir("cold_dense");
  RecordStore store(dir + "/r.db");
  Hardware host = hardware_from_fingerprint("x86-64-avx512/2c/L1d48K/L22048K/L3480M");
  const std::string dense = "dense:m=64,n=64,k=64", matmul = "matmul:m=64,n=64,k=64";
  std::map<std::string, std::vector<std::vector<int64_t>>> warm;
  for (const auto& spec : {dense, matmul}) {
    warm[spec] = store_timed_schedules(store, spec, host);
    std::vector<Record> cold;  // the same schedules timed cold, in the opposite order
    for (size_t i = 0; i < warm[spec].size(); ++i) {
      double ms = 3.0 - 0.1 * double(i);
      cold.push_back({host.fingerprint() + kColdWeightsSuffix, parse_task_spec(spec).key(), spec,
                      warm[spec][i], "random", Status::Ok, ms, ms, 5, "", "", 0});
    }
    store.add(cold);
  }
  SpeedSelection first{1};
  first.cold_records = ColdRecords::StreamedWeights;
  auto fastest_of = [&](const std::string& spec, const std::string& other) {
    Dataset d = measured_by_speed(store, {host}, first, {other});
    EXPECT_EQ(d.sentences.size(), 1u);
    const Sentence& s = d.sentences.at(0);
    ScheduleSpace space(describe_task(parse_task_spec(spec)));
    return decode_decisions(space, {s.tokens.begin() + s.prompt_length, s.tokens.end()});
  };
  EXPECT_EQ(fastest_of(dense, matmul), warm[dense].back());    // cold: the last is fastest
  EXPECT_EQ(fastest_of(matmul, dense), warm[matmul].front());  // warm: the first is
}

// Improve's data: a model's proposals enter wherever they rank.
TEST(Dataset, SpeedClassesKeepEveryModelProposal) {
  std::string dir = temp_dir("proposals");
  RecordStore store(dir + "/r.db");
  Hardware hw = test_hardware();
  const std::string spec = "matmul:m=64,n=64,k=64";
  auto timed = store_timed_schedules(store, spec, hw);
  store_timed_schedules(store, "softmax:rows=32,cols=64", hw);
  ScheduleSpace space(describe_task(parse_task_spec(spec)));
  std::mt19937_64 rng(9);
  std::vector<std::vector<int64_t>> proposed;  // ranks 1 (picked anyway) and 21 (never)
  while (proposed.size() < 2) {
    auto d = space.sample(rng);
    if (std::find(timed.begin(), timed.end(), d) == timed.end()) proposed.push_back(d);
  }
  store.add({{hw.fingerprint(), parse_task_spec(spec).key(), spec, proposed[0], "tlm", Status::Ok,
              1.05, 1.05, 5, "tlm-x", "", 0},
             {hw.fingerprint(), parse_task_spec(spec).key(), spec, proposed[1], "tlm", Status::Ok,
              2.95, 2.95, 5, "tlm-x", "", 0}});
  SpeedSelection selection{12};
  Dataset spread = measured_by_speed(store, {hw}, selection, {"softmax:rows=32,cols=64"});
  selection.model_proposals = true;
  Dataset with_own = measured_by_speed(store, {hw}, selection, {"softmax:rows=32,cols=64"});
  ASSERT_EQ(spread.sentences.size(), 12u);
  ASSERT_EQ(with_own.sentences.size(), 13u);
  for (size_t i = 0; i < 12; ++i)
    EXPECT_EQ(with_own.sentences[i].tokens, spread.sentences[i].tokens);
  const Sentence& slow = with_own.sentences.back();
  std::vector<int> body(slow.tokens.begin() + slow.prompt_length, slow.tokens.end());
  EXPECT_EQ(decode_decisions(space, body), proposed[1]);
  EXPECT_EQ(Vocabulary::get().text(slow.tokens[slow.prompt_length - 2]), "speed:slow");
}

TEST(Checkpoint, LoadsWhatWasWrittenAndRejectsCorruptFiles) {
  std::string dir = temp_dir("checkpoint");
  torch::manual_seed(4);
  Gpt model(tiny_config());
  CheckpointInfo info;
  info.data_hash = "abc";
  std::string id = write_checkpoint(model, info, dir);
  EXPECT_EQ(write_checkpoint(model, info, dir), id);  // same content, same id
  CheckpointInfo loaded_info;
  Gpt loaded = load_checkpoint(dir + "/" + id, &loaded_info);
  EXPECT_EQ(loaded_info.data_hash, "abc");
  torch::NoGradGuard no_grad;
  model->eval(), loaded->eval();
  auto tokens = torch::randint(0, tiny_config().vocab, {1, 16}, torch::kLong);
  EXPECT_TRUE(torch::equal(model->forward(tokens), loaded->forward(tokens)));
  std::ofstream(dir + "/" + id + "/weights.pt", std::ios::app) << "x";
  EXPECT_THROW(load_checkpoint(dir + "/" + id), Error);
  EXPECT_THROW(load_checkpoint(dir + "/no-such-checkpoint"), Error);
}

// A blend is each parameter's weighted mean: weight 0 is A, 1 is B, 0.25 a quarter of
// the way; configurations that differ and weights outside [0, 1] are refused.
TEST(Checkpoint, BlendsAreWeightedMeansOfEveryParameter) {
  auto blended = [](double weight) {
    torch::manual_seed(6);
    Gpt a(tiny_config()), b(tiny_config());
    blend_into(a, b, weight);
    return a;
  };
  torch::manual_seed(6);
  Gpt a(tiny_config()), b(tiny_config());
  Gpt none = blended(0), all = blended(1), quarter = blended(0.25);
  auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_GT(pa.size(), 4u);
  for (const auto& item : pa) {
    const torch::Tensor& x = item.value();
    const torch::Tensor& y = pb[item.key()];
    EXPECT_TRUE(torch::equal(none->named_parameters()[item.key()], x)) << item.key();
    EXPECT_TRUE(torch::allclose(all->named_parameters()[item.key()], y)) << item.key();
    EXPECT_TRUE(torch::allclose(quarter->named_parameters()[item.key()], 0.75 * x + 0.25 * y))
        << item.key();
  }
  EXPECT_FALSE(torch::equal(pa[pa.keys()[0]], pb[pa.keys()[0]]));  // two different models
  ModelConfig wider = tiny_config();
  wider.d_model = 64;
  Gpt other(wider);
  EXPECT_THROW(blend_into(a, other, 0.5), Error);
  EXPECT_THROW(blend_into(a, b, 1.5), Error);
  EXPECT_THROW(blend_into(a, b, -0.1), Error);
}

TEST(Registry, PromoteRollbackAndHistory) {
  std::string dir = temp_dir("registry");
  torch::manual_seed(7);
  Gpt a(tiny_config()), b(tiny_config());
  std::string base = write_checkpoint(a, {}, dir), next = write_checkpoint(b, {}, dir);
  {
    Registry registry(dir);
    EXPECT_THROW(registry.rollback("", "no base yet"), Error);
    registry.set_base(base, "shipped");
    registry.promote(next, "held-out geomean improved");
    EXPECT_THROW(registry.promote("tlm-none", "x"), Error);
  }
  Registry reread(dir);
  EXPECT_EQ(reread.default_id(), next);
  EXPECT_EQ(reread.base_id(), base);
  reread.rollback("", "regression");
  EXPECT_EQ(Registry(dir).default_id(), base);
  EXPECT_EQ(Registry(dir).history().size(), 3u);
  EXPECT_EQ(Registry(dir).list().size(), 2u);
  std::ofstream(dir + "/registry.json") << "{broken";
  EXPECT_THROW(Registry{dir}, Error);
}

// A checkpoint promoted for one machine is that machine's default only; the others keep
// the shared default, and rolling the host back drops its entry.
TEST(Registry, AHostsOwnDefault) {
  std::string dir = temp_dir("registry-host");
  torch::manual_seed(8);
  Gpt a(tiny_config()), b(tiny_config());
  std::string shared = write_checkpoint(a, {}, dir), own = write_checkpoint(b, {}, dir);
  const std::string host = "x86-64-avx512/2c/L1d48K/L22048K/L3480M";
  const std::string other = "x86-64-avx512/2c/L1d32K/L21024K/L3320M";
  {
    Registry registry(dir);
    registry.set_base(shared, "shipped");
    registry.promote_for_host(own, host, "fine-tuned on its records", 16);
    registry.promote_for_host(own, host, "again, the layout kept");
    EXPECT_THROW(registry.promote_for_host("tlm-none", host, "x"), Error);
    EXPECT_THROW(registry.promote_for_host(own, "", "x"), Error);
    EXPECT_THROW(registry.promote_for_host(own, host, "x", 8), Error);
  }
  Registry reread(dir);
  EXPECT_EQ(reread.default_id(), shared);
  EXPECT_EQ(reread.default_for(host), own);
  EXPECT_EQ(reread.default_for(other), shared);
  EXPECT_EQ(reread.activation_block_for(host), 16);
  EXPECT_EQ(reread.activation_block_for(other), -1);
  EXPECT_EQ(resolve_model("", dir, host), dir + "/" + own);
  EXPECT_EQ(resolve_model("", dir, other), dir + "/" + shared);
  EXPECT_EQ(resolve_model("", dir), dir + "/" + shared);
  EXPECT_THROW(reread.rollback_host(other, "never promoted"), Error);
  reread.rollback_host(host, "slower");
  EXPECT_EQ(Registry(dir).default_for(host), shared);
  EXPECT_EQ(Registry(dir).activation_block_for(host), -1);
  EXPECT_EQ(Registry(dir).history().size(), 4u);
  std::ofstream(dir + "/registry.json") << R"({"default": ")" << shared << R"(", "hosts": [1]})";
  EXPECT_THROW(Registry{dir}, Error);
  std::ofstream(dir + "/registry.json") << R"({"hosts": {")" << host << R"(": {"model": ")" << own
                                        << R"(", "activation_block": 8}}})";
  EXPECT_THROW(Registry{dir}, Error);
}

// The repository's registry names checkpoints that are in the repository and load (a
// host's own default too: a clean clone on that host compiles with it).
TEST(Registry, TheShippedRegistryNamesCheckpointsThatLoad) {
  Registry shipped(TLM_MODELS_DIR);
  std::vector<std::string> ids = {shipped.default_id(), shipped.base_id()};
  for (const auto& [host, entry] : shipped.host_defaults()) {
    EXPECT_NO_THROW(hardware_named(host)) << host;
    ids.push_back(entry.model);
  }
  for (const auto& id : ids) EXPECT_NO_THROW(load_checkpoint(shipped.path_of(id))) << id;
}

// The shipped default was trained before conv2d's depthwise prologue had words: it knows
// every word of a plain 1x1 convolution's prompt, not dw_r (so --trials searches such a
// task with the transfer search instead of its beam, search/task_scheduler.h).
TEST(ScheduleModel, KnowsOnlyTheWordsItsCheckpointWasTrainedWith) {
  Registry shipped(TLM_MODELS_DIR);
  auto model = ScheduleModel::load(shipped.path_of(shipped.default_id()));
  Hardware hw = test_hardware();
  EXPECT_TRUE(model->knows_words_of(parse_task_spec("conv2d:c=32,h=14,w=14,k=64,r=1,s=1"), hw));
  EXPECT_FALSE(model->knows_words_of(
      parse_task_spec("conv2d:c=32,h=14,w=14,k=64,r=1,s=1,dw_r=3,dw_pad=1,dw_act=2+bias"), hw));
}

// A run stopped after 3 steps and resumed to 6 ends exactly where a 6-step run ends.
TEST(Train, SpeedClassFinetuneMakesAModelThatAsksForTheBest) {
  std::string dir = temp_dir("speed-train");
  RecordStore store(dir + "/r.db");
  Hardware hw = test_hardware();
  store_timed_schedules(store, "matmul:m=64,n=64,k=64", hw);
  store_timed_schedules(store, "softmax:rows=32,cols=64", hw);
  Dataset data = measured_by_speed(store, {hw}, {16}, {});
  write_dataset(dir + "/d.bin", data);
  torch::manual_seed(3);
  Gpt base(tiny_config());
  std::string base_id = write_checkpoint(base, {}, dir + "/models");
  TrainOptions o;
  o.data_path = dir + "/d.bin";
  o.run_dir = dir + "/run";
  o.steps = 2, o.batch = 4, o.threads = 1;
  o.speed_prompt = true;
  auto tuned = train_checkpoint(o, {}, dir + "/models/" + base_id, dir + "/models", "test");
  auto model = ScheduleModel::load(dir + "/models/" + tuned.id);
  EXPECT_TRUE(model->config().speed_prompt);
  EXPECT_FALSE(ModelConfig::from_json(base->config().to_json()).speed_prompt);
  TaskSpec task = parse_task_spec("matmul:m=48,n=80,k=32");  // unseen shape: still legal
  ScheduleSpace space(describe_task(task));
  for (const auto& g : model->generate(task, hw, {4, "beam", 0, 1.0}))
    EXPECT_TRUE(space.is_legal(g.decisions));
  o.run_dir = dir + "/run2";  // a speed-reading model never learns from unlabeled prompts
  o.speed_prompt = false;
  EXPECT_THROW(train_checkpoint(o, {}, dir + "/models/" + tuned.id, dir + "/models", "test"),
               Error);
}

TEST(Train, ResumedRunMatchesAnUninterruptedOne) {
  std::string dir = temp_dir("train");
  Dataset data = small_corpus();
  write_dataset(dir + "/d.bin", data);
  TrainOptions o;
  o.data_path = dir + "/d.bin";
  o.batch = 4;
  o.save_every = 3;
  o.threads = 1;
  auto run = [&](const std::string& run_dir, std::vector<int> stops) {
    torch::manual_seed(5);
    Gpt model(tiny_config());
    TrainReport report;
    for (int steps : stops) {
      torch::manual_seed(6);
      Gpt fresh(tiny_config());  // each invocation starts from a fresh process's state
      o.run_dir = run_dir;
      o.steps = steps;
      report = train_model(o, fresh);
      model = fresh;
    }
    return std::make_pair(model, report);
  };
  auto [straight, straight_report] = run(dir + "/straight", {6});
  auto [resumed, resumed_report] = run(dir + "/resumed", {3, 6});
  EXPECT_EQ(resumed_report.step, 6);
  auto a = straight->parameters(), b = resumed->parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6));
  EXPECT_GT(straight_report.validation_loss, 0);
  std::ifstream curve(dir + "/resumed/learning_curve.svg");  // both saves, both series
  std::string svg((std::istreambuf_iterator<char>(curve)), std::istreambuf_iterator<char>());
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find("points='"), std::string::npos);
  std::ofstream(dir + "/resumed/state.json") << "{broken";
  torch::manual_seed(6);
  Gpt again(tiny_config());
  EXPECT_THROW(train_model(o, again), Error);
}

}  // namespace
}  // namespace tlm
