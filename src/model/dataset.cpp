#include "model/dataset.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <set>

#include "graph/partition.h"
#include "graph/zoo.h"
#include "lang/sentence.h"
#include "lang/vocabulary.h"
#include "space/schedule_space.h"
#include "util/error.h"
#include "util/strings.h"

namespace tlm {
namespace {

const char kMagic[] = "TLMDATA1";

void put16(std::string& out, int value) {
  out.push_back(char(value & 0xff));
  out.push_back(char((value >> 8) & 0xff));
}

int get16(const std::string& in, size_t& at) {
  if (at + 2 > in.size()) throw Error("dataset: file is truncated");
  int v = uint8_t(in[at]) | (uint8_t(in[at + 1]) << 8);
  at += 2;
  return v;
}

std::string format(const char* pattern, std::initializer_list<int> values) {
  std::string text = pattern;
  for (int v : values) text.replace(text.find("{}"), 2, std::to_string(v));
  return text;
}

void add_matmul_family(std::vector<std::string>& tasks) {
  const std::vector<int> sizes = {64, 128, 256, 512, 768, 1024};
  for (int m : sizes)
    for (int n : sizes)
      for (int k : {64, 256, 768, 1024})
        tasks.push_back(format("matmul:m={},n={},k={}", {m, n, k}));
  for (int m : {1, 16, 64, 128, 256})
    for (int n : {256, 768, 1024, 3072, 4096})
      for (int k : {256, 768, 1024, 3072})
        for (const char* e : {"", "+bias", "+bias+gelu", "+bias+relu"})
          tasks.push_back(format("dense:m={},n={},k={}", {m, n, k}) + e);
  for (int b : {4, 12, 16})
    for (int mn : {64, 128, 256})
      for (int k : {32, 64, 128})
        tasks.push_back(format("batch_matmul:b={},m={},n={},k={}", {b, mn, mn, k}));
}

void add_conv_family(std::vector<std::string>& tasks) {
  struct Shape {
    int c, h, k, r, stride;
  };
  const std::vector<Shape> shapes = {
      {3, 224, 32, 3, 2},   {3, 224, 64, 7, 2},   {16, 112, 16, 1, 1},   {32, 112, 64, 3, 1},
      {64, 56, 64, 1, 1},   {64, 56, 64, 3, 1},   {64, 56, 256, 1, 1},   {256, 56, 128, 1, 1},
      {128, 28, 128, 3, 1}, {128, 56, 128, 3, 2}, {128, 28, 512, 1, 1},  {512, 28, 256, 1, 1},
      {256, 14, 256, 3, 1}, {256, 28, 256, 3, 2}, {256, 14, 1024, 1, 1}, {1024, 14, 512, 1, 1},
      {512, 7, 512, 3, 1},  {512, 7, 2048, 1, 1}, {24, 56, 144, 1, 1},   {144, 56, 24, 1, 1},
      {32, 28, 192, 1, 1},  {192, 28, 32, 1, 1},  {64, 14, 384, 1, 1},   {384, 14, 64, 1, 1},
      {96, 14, 576, 1, 1},  {160, 7, 960, 1, 1},  {320, 7, 1280, 1, 1},  {40, 28, 240, 1, 1}};
  for (const Shape& s : shapes)
    for (const char* e : {"+bias+relu", "+bias"})
      tasks.push_back(format("conv2d:n=1,c={},h={},w={},k={},r={},s={},stride={},pad={}",
                             {s.c, s.h, s.h, s.k, s.r, s.r, s.stride, s.r / 2}) +
                      e);
  for (int c : {32, 96, 144, 192, 384, 576, 960})
    for (int h : {7, 14, 28, 56, 112})
      for (int r : {3, 5})
        for (int stride : {1, 2})
          tasks.push_back(format("dwconv2d:n=1,c={},h={},w={},r={},s={},stride={},pad={}",
                                 {c, h, h, r, r, stride, r / 2}) +
                          "+bias+relu6");
  for (int c : {64, 256}) {
    tasks.push_back(format("pool2d:kind=max,n=1,c={},h=112,w=112,r=3,s=3,stride=2,pad=1", {c}));
    tasks.push_back(format("pool2d:kind=avg,n=1,c={},h=56,w=56,r=2,s=2,stride=2", {c}));
  }
  for (int c : {512, 1280, 2048})
    tasks.push_back(format("global_pool:kind=avg,n=1,c={},h=7,w=7", {c}));
}

void add_row_family(std::vector<std::string>& tasks) {
  for (int rows : {128, 512, 1536, 4096})
    for (int cols : {64, 128, 256, 512})
      tasks.push_back(format("softmax:rows={},cols={}", {rows, cols}));
  for (int rows : {32, 128, 512})
    for (int cols : {256, 768, 2048, 4096}) {
      tasks.push_back(format("layernorm:rows={},cols={}", {rows, cols}));
      tasks.push_back(format("rmsnorm:rows={},cols={}", {rows, cols}) + "+mul");
      tasks.push_back(format("reduce:kind=mean,rows={},cols={}", {rows, cols}));
      tasks.push_back(format("elementwise:rows={},cols={}", {rows, cols}) + "+add+relu");
    }
}

}  // namespace

void write_dataset(const std::string& path, Dataset& data) {
  std::string bytes = kMagic + Vocabulary::get().hash();
  uint32_t count = uint32_t(data.sentences.size());
  bytes.append(reinterpret_cast<const char*>(&count), 4);
  for (const auto& s : data.sentences) {
    if (s.tokens.size() > 0xffff) throw Error("dataset: sentence too long");
    put16(bytes, s.prompt_length);
    put16(bytes, int(s.tokens.size()));
    for (int t : s.tokens) put16(bytes, t);
  }
  std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error("dataset: cannot write '" + path + "'");
  data.hash = hash_hex(bytes);
}

Dataset read_dataset(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("dataset: cannot read '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t header = sizeof(kMagic) - 1 + 16 + 4;
  if (bytes.size() < header || bytes.compare(0, sizeof(kMagic) - 1, kMagic) != 0)
    throw Error("dataset: '" + path + "' is not a tlm dataset");
  // Written with this vocabulary or an earlier one (the language only appends words).
  if (Vocabulary::get().prefix_with_hash(bytes.substr(sizeof(kMagic) - 1, 16)) < 0)
    throw Error("dataset: '" + path + "' was written with another vocabulary");
  uint32_t count;
  std::memcpy(&count, bytes.data() + header - 4, 4);
  Dataset data;
  size_t at = header;
  int vocab = Vocabulary::get().size();
  for (uint32_t i = 0; i < count; ++i) {
    Sentence s;
    s.prompt_length = get16(bytes, at);
    int length = get16(bytes, at);
    for (int k = 0; k < length; ++k) s.tokens.push_back(get16(bytes, at));
    for (int t : s.tokens)
      if (t >= vocab) throw Error("dataset: token id out of range in '" + path + "'");
    if (s.prompt_length > length) throw Error("dataset: bad prompt length in '" + path + "'");
    data.sentences.push_back(std::move(s));
  }
  if (at != bytes.size()) throw Error("dataset: trailing bytes in '" + path + "'");
  data.hash = hash_hex(bytes);
  return data;
}

std::vector<std::string> pretrain_tasks(const std::vector<std::string>& excluded) {
  std::vector<std::string> all;
  for (const auto& model : zoo_model_names())  // every task of the zoo networks first
    for (const auto& use : partition_graph(build_zoo_model(model)).tasks) all.push_back(use.spec);
  add_matmul_family(all);
  add_conv_family(all);
  add_row_family(all);
  std::set<std::string> skip;  // held-out tasks, and each task once
  for (const auto& e : excluded) skip.insert(parse_task_spec(e).key());
  std::vector<std::string> tasks;
  for (const auto& t : all)
    if (skip.insert(parse_task_spec(t).key()).second) tasks.push_back(t);
  return tasks;
}

namespace {

// Calls pick(task, space, records) for every stored task not excluded, with its verified
// records on `hardware` that are legal in today's space, fastest first (at most `limit`).
template <class Pick>
void for_each_measured_task(const RecordStore& store, const Hardware& hardware, int limit,
                            const std::vector<std::string>& excluded, Pick pick) {
  std::set<std::string> skip;
  for (const auto& e : excluded) skip.insert(parse_task_spec(e).key());
  for (const auto& key : store.task_keys()) {
    if (skip.count(key)) continue;
    TaskSpec task = parse_task_spec(key);
    ScheduleSpace space(describe_task(task));
    std::vector<Record> legal;
    for (auto& r : store.best(key, hardware.fingerprint(), limit))
      if (space.is_legal(r.decisions)) legal.push_back(std::move(r));
    if (!legal.empty()) pick(task, space, legal);
  }
}

Sentence measured_sentence(const std::vector<int>& prompt, const ScheduleSpace& space,
                           const Record& record) {
  Sentence s{prompt, int(prompt.size())};
  auto body = encode_decisions(space, record.decisions);
  s.tokens.insert(s.tokens.end(), body.begin(), body.end());
  return s;
}

// `count` of `n` ranks (fastest first): the fastest count/4, then evenly spread.
std::vector<size_t> spread_ranks(size_t n, size_t count) {
  std::vector<size_t> ranks;
  if (count >= n) {
    for (size_t i = 0; i < n; ++i) ranks.push_back(i);
    return ranks;
  }
  size_t head = count / 4, rest = count - head;
  for (size_t i = 0; i < head; ++i) ranks.push_back(i);
  for (size_t j = 0; j < rest; ++j) ranks.push_back(head + j * (n - head) / rest);
  return ranks;
}

}  // namespace

Dataset best_measured(const RecordStore& store, const Hardware& hardware, int per_task,
                      const std::vector<std::string>& excluded) {
  Dataset data;
  for_each_measured_task(
      store, hardware, per_task, excluded,
      [&](const TaskSpec& task, const ScheduleSpace& space, const std::vector<Record>& fastest) {
        auto prompt = encode_prompt(hardware, task, space.shape());
        for (const auto& r : fastest) data.sentences.push_back(measured_sentence(prompt, space, r));
      });
  return data;
}

Dataset measured_by_speed(const RecordStore& store, const Hardware& hardware,
                          const SpeedSelection& selection,
                          const std::vector<std::string>& excluded) {
  Dataset data;
  auto pick = [&](const TaskSpec& task, const ScheduleSpace& space,
                  const std::vector<Record>& fastest) {
    double best_ms = fastest.front().median_ms;
    auto add = [&](size_t rank) {
      const Record& r = fastest[rank];
      SpeedClass speed = speed_class(rank, r.median_ms > 0 ? best_ms / r.median_ms : 1.0);
      auto prompt = encode_prompt(hardware, task, space.shape(), speed);
      int copies = speed == SpeedClass::Best ? std::max(selection.best_copies, 1) : 1;
      for (int c = 0; c < copies; ++c)
        data.sentences.push_back(measured_sentence(prompt, space, r));
    };
    auto ranks = spread_ranks(fastest.size(), size_t(std::max(selection.per_task, 0)));
    std::set<size_t> picked(ranks.begin(), ranks.end());
    for (size_t rank : ranks) add(rank);
    for (size_t rank = 0; selection.model_proposals && rank < fastest.size(); ++rank)
      if (!fastest[rank].checkpoint.empty() && !picked.count(rank)) add(rank);
  };
  for_each_measured_task(store, hardware, std::numeric_limits<int>::max(), excluded, pick);
  return data;
}

Dataset sample_corpus(const std::vector<std::string>& tasks, int per_task, uint64_t seed,
                      const Hardware& hardware) {
  Dataset data;
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < tasks.size(); ++i) {
    TaskSpec task = parse_task_spec(tasks[i]);
    ScheduleSpace space(describe_task(task));
    auto prompt = encode_prompt(hardware, task, space.shape());
    for (int k = 0; k < per_task; ++k) {
      Sentence s{prompt, int(prompt.size())};
      auto body = encode_decisions(space, space.sample(rng));
      s.tokens.insert(s.tokens.end(), body.begin(), body.end());
      data.sentences.push_back(std::move(s));
    }
    if ((i + 1) % 50 == 0 || i + 1 == tasks.size())
      std::fprintf(stderr, "\r  corpus: %zu/%zu tasks, %zu sentences   ", i + 1, tasks.size(),
                   data.sentences.size());
  }
  std::fprintf(stderr, "\n");
  return data;
}

}  // namespace tlm
