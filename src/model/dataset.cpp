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
#include "ops/registry.h"
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
  // every task of the zoo networks first, convolutions direct: the list the shipped
  // model's pretraining used (models/README.md), kept so its commands reproduce
  for (const auto& model : zoo_model_names())
    for (const auto& use : model_tasks(build_zoo_model(model)).tasks) all.push_back(use.spec);
  for (TaskKind kind : all_task_kinds())  // then each task kind's corpus shapes
    if (task_def(kind).corpus)
      for (const auto& spec : task_def(kind).corpus()) all.push_back(spec);
  std::set<std::string> skip;  // held-out tasks, and each task once
  for (const auto& e : excluded) skip.insert(parse_task_spec(e).key());
  std::vector<std::string> tasks;
  for (const auto& t : all)
    if (skip.insert(parse_task_spec(t).key()).second) tasks.push_back(t);
  return tasks;
}

namespace {

// Whether a task learns from its cold-timed records under `policy`.
bool uses_cold_records(ColdRecords policy, const ScheduleSpace& space) {
  if (policy == ColdRecords::StreamedWeights) return space.shape().prefetch_packable;
  return policy == ColdRecords::All;
}

// A task's verified records on a host that are legal in today's space, fastest first (at
// most `limit`): those timed cold when there are any and `cold` allows them (a model's
// weights come from memory, and cold times rank schedules as the model runs them), else the
// warm ones. The two are never ranked together.
std::vector<Record> legal_fastest(const RecordStore& store, const std::string& key,
                                  const ScheduleSpace& space, const Hardware& hardware, int limit,
                                  ColdRecords cold) {
  std::vector<Record> legal;
  std::vector<std::string> fingerprints = {hardware.fingerprint()};
  if (uses_cold_records(cold, space))
    fingerprints.insert(fingerprints.begin(), hardware.fingerprint() + kColdWeightsSuffix);
  for (const auto& fingerprint : fingerprints) {
    for (auto& r : store.best(key, fingerprint, limit))
      if (space.is_legal(r.decisions)) legal.push_back(std::move(r));
    if (!legal.empty()) break;
  }
  return legal;
}

// Calls pick(hardware, task, space, records) for every stored task not excluded and every
// host of `hosts` that measured it, with its legal_fastest records on that host.
template <class Pick>
void for_each_measured_task(const RecordStore& store, const std::vector<Hardware>& hosts, int limit,
                            ColdRecords cold, const std::vector<std::string>& excluded, Pick pick) {
  std::set<std::string> skip;
  for (const auto& e : excluded) skip.insert(parse_task_spec(e).key());
  for (const auto& key : store.task_keys()) {
    TaskSpec task;
    if (skip.count(key) || !read_stored_task(key, task)) continue;
    ScheduleSpace space(describe_task(task));
    for (const auto& hardware : hosts) {
      auto legal = legal_fastest(store, key, space, hardware, limit, cold);
      if (!legal.empty()) pick(hardware, task, space, legal);
    }
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

std::vector<Hardware> measured_hosts(const RecordStore& store) {
  std::vector<Hardware> hosts;
  std::set<std::string> machines;  // a host's cold and warm records are one host
  for (const auto& fingerprint : store.hardware_fingerprints()) {
    if (!machines.insert(machine_fingerprint(fingerprint)).second) continue;
    try {
      hosts.push_back(hardware_named(machine_fingerprint(fingerprint)));
    } catch (const Error&) {
      // not a machine's fingerprint (a test's or another tool's label): nothing to prompt
    }
  }
  return hosts;
}

Dataset best_measured(const RecordStore& store, const std::vector<Hardware>& hosts, int per_task,
                      const std::vector<std::string>& excluded, ColdRecords cold_records) {
  Dataset data;
  for_each_measured_task(store, hosts, per_task, cold_records, excluded,
                         [&](const Hardware& hardware, const TaskSpec& task,
                             const ScheduleSpace& space, const std::vector<Record>& fastest) {
                           auto prompt = encode_prompt(hardware, task, space.shape());
                           for (const auto& r : fastest)
                             data.sentences.push_back(measured_sentence(prompt, space, r));
                         });
  return data;
}

Dataset measured_by_speed(const RecordStore& store, const std::vector<Hardware>& hosts,
                          const SpeedSelection& selection,
                          const std::vector<std::string>& excluded) {
  Dataset data;
  auto pick = [&](const Hardware& hardware, const TaskSpec& task, const ScheduleSpace& space,
                  const std::vector<Record>& fastest) {
    double best_ms = fastest.front().median_ms;
    auto add = [&](size_t rank) {
      const Record& r = fastest[rank];
      SpeedClass speed = speed_class(rank, r.median_ms > 0 ? best_ms / r.median_ms : 1.0);
      auto prompt = encode_prompt(hardware, task, space.shape(), speed);
      int copies = speed == SpeedClass::Best ? std::max(selection.best_copies, 1) : 1;
      if (rank == 0) copies = std::max(copies, selection.top_copies);
      if (hardware.fingerprint() == selection.emphasized_host) copies *= selection.host_copies;
      for (int c = 0; c < copies; ++c)
        data.sentences.push_back(measured_sentence(prompt, space, r));
    };
    auto ranks = spread_ranks(fastest.size(), size_t(std::max(selection.per_task, 0)));
    std::set<size_t> picked(ranks.begin(), ranks.end());
    for (size_t rank : ranks) add(rank);
    for (size_t rank = 0; selection.model_proposals && rank < fastest.size(); ++rank)
      if (!fastest[rank].checkpoint.empty() && !picked.count(rank)) add(rank);
  };
  for_each_measured_task(store, hosts, std::numeric_limits<int>::max(), selection.cold_records,
                         excluded, pick);
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
