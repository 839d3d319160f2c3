// The tlm command as a user runs it: bad input gives one line on stderr and a non-zero
// exit; SIGKILL in the middle of a tuning run loses no committed record.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "store/record_store.h"
#include "util/npy.h"

namespace tlm {
namespace {

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr
};

CliRun run_tlm(const std::string& args) {
  std::string cmd = std::string(TLM_EXE) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WEXITSTATUS(status), out};
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tlm_cli_" + std::to_string(getpid()) + "_" + name;
}

void expect_one_line_error(const std::string& args, const std::string& fragment) {
  CliRun r = run_tlm(args);
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_EQ(r.output.find("tlm: error: "), 0u) << r.output;
  EXPECT_NE(r.output.find(fragment), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(Cli, BadInputIsOneLineAndNonZero) {
  expect_one_line_error("space 'matmul:m=8,n=8'", "needs parameter 'k'");
  expect_one_line_error("space 'conv3d:c=1'", "unknown op 'conv3d'");
  expect_one_line_error("space 'winograd_in:c=20,h=8,w=8,block=16'",
                        "block=16 does not divide c=20");
  expect_one_line_error("space 'dense:m=2,n=16,k=4,cols=17'", "cols=17 is more than n=16");
  expect_one_line_error(
      "train finetune --init models/none --run " + temp_path("no-run") + " --model-proposals",
      "--model-proposals needs --speed-classes");
  expect_one_line_error(
      "train finetune --init models/none --run " + temp_path("no-run") + " --top-copies 8",
      "--top-copies needs --speed-classes");
  expect_one_line_error("train finetune --init models/none --run " + temp_path("no-run") +
                            " --speed-classes --hardware this --host-copies 4",
                        "--host-copies needs --speed-classes and --hardware all");
  expect_one_line_error("space 'conv2d:c=3,h=4,w=4,k=8,r=7,s=7'", "larger than the padded input");
  expect_one_line_error("measure 'matmul:m=8,n=8,k=8' --decisions 1,2,x", "--decisions");
  expect_one_line_error("measure 'matmul:m=8,n=8,k=8' --decisions 8,8,8,8,0,8,0,0,1,8,0",
                        "decisions");
  std::string corrupt = temp_path("corrupt.db");
  std::ofstream(corrupt) << "this is not a database, just text that fills a page......";
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --trials 1 --db " + corrupt,
                        "not a tlm record database");
  std::string db = temp_path("tune.db");
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --method annealing --db " + db,
                        "unknown search method 'annealing'");
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --method transfer --exclude " +
                            temp_path("missing-list.txt") + " --db " + db,
                        "cannot read");
  std::string bad_list = temp_path("bad-list.txt");
  std::ofstream(bad_list) << "conv3d:c=1\n";
  expect_one_line_error(
      "tune 'matmul:m=8,n=8,k=8' --method transfer --exclude " + bad_list + " --db " + db,
      "unknown op 'conv3d'");
}

// Numeric flags outside their range, or not finite numbers, are refused before any work.
TEST(Cli, NumericFlagsOutsideTheirRangeAreRefused) {
  std::string db = " --db " + temp_path("flags.db");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' -k -1", "-k: '-1' is not a number in [1, 256]");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' -k 5000", "[1, 256]");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' --mode sample --temperature nan", "'nan'");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' --mode sample --temperature -1", "'-1'");
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --trials -1" + db, "--trials: '-1'");
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --threads 0" + db, "--threads: '0'");
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --timeout nan" + db, "--timeout: 'nan'");
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --timeout 0" + db, "--timeout: '0'");
  expect_one_line_error("tune 'matmul:m=8,n=8,k=8' --memory-mb 50" + db, "--memory-mb: '50'");
  expect_one_line_error("measure 'matmul:m=8,n=8,k=8' --threads 2x" + db, "--threads: '2x'");
  expect_one_line_error("tasks gpt2 --layers 100000", "--layers: '100000'");
  expect_one_line_error("tasks mobilenetv2 --activation-block 12", "--activation-block: 12");
  expect_one_line_error("compile mobilenetv2 -o x --activation-block 4", "--activation-block: 4");
  expect_one_line_error("compile mobilenetv2 -o x --fuse-depthwise sometimes",
                        "--fuse-depthwise: sometimes not in {stored,measure,never}");
  expect_one_line_error("compile mobilenetv2 -o x --hardware hw", "not a hardware fingerprint");
  expect_one_line_error(
      "compile mobilenetv2 -o x --trials 2 --hardware x86-64/1c/L1d0K/L20K/L30M" + db,
      "--trials measures on this machine");
  expect_one_line_error(
      "train finetune --init models/none --run " + temp_path("r") + " --hardware L1d48K" + db,
      "--hardware: 'L1d48K' is not a hardware fingerprint");
  expect_one_line_error("bench op 'matmul:m=8,n=8,k=8' --methods random-8,bogus" + db,
                        "unknown method 'bogus'");
  expect_one_line_error("bench op 'matmul:m=8,n=8,k=8' --methods random-0" + db, "at least 1");
  expect_one_line_error("measure 'matmul:m=8,n=8,k=8' --method bogus" + db,
                        "unknown method 'bogus'");
  expect_one_line_error("tasks gpt2 --layers -1", "--layers: '-1'");
  expect_one_line_error("train finetune --init models/none --run " + temp_path("r") + " --lr inf",
                        "--lr: 'inf'");
  EXPECT_FALSE(std::ifstream(temp_path("flags.db")).good()) << "a refused command made a store";
}

// `records import` takes a file only when every record is valid, naming the first bad line.
TEST(Cli, RecordsImportRefusesInvalidRecordsNamingTheLine) {
  const std::string good =
      R"({"hardware":"hw","task_key":"matmul:m=8,n=8,k=8","task_spec":"matmul:m=8,n=8,k=8",)"
      R"("decisions":[8,8,8,8,0,8,0,0,1,8,0,0],"method":"random","status":"ok","min_ms":0.5,)"
      R"("median_ms":0.6,"runs":5,"checkpoint":"","detail":"","created":1.0})";
  auto with = [&](const std::string& from, const std::string& to) {
    std::string line = good;
    size_t at = line.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return line.replace(at, from.size(), to);
  };
  std::string db = temp_path("import.db"), file = temp_path("import.jsonl");
  std::ofstream(file) << good << "\n";
  CliRun ok = run_tlm("records import " + file + " --db " + db);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("1 new records"), std::string::npos) << ok.output;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {with("matmul:m=8,n=8,k=8\",\"decisions", "conv3d:c=1\",\"decisions"), "unknown op"},
      {with(R"("task_key":"matmul:m=8,n=8,k=8")", R"("task_key":"matmul:m=08,n=8,k=8")"),
       "is not its spec's key"},
      {with("[8,8,8,8,0,8,0,0,1,8,0,0]", "[8,8,8,8,0,8,0,0,1,8,0,7]"), "not a legal schedule"},
      {with("[8,8,8,8,0,8,0,0,1,8,0,0]", "[8,8]"), "not a legal schedule"},
      {with(R"("median_ms":0.6)", R"("median_ms":-5)"), "finite and non-negative"},
      {with(R"("min_ms":0.5)", R"("min_ms":0)"), "an ok record needs"},
      {with(R"("status":"ok")", R"("status":"great")"), "unknown status 'great'"}};
  for (const auto& [line, fragment] : bad) {
    std::ofstream(file) << with("0.5,", "0.4,") << "\n" << line << "\n";
    expect_one_line_error("records import " + file + " --db " + db, fragment);
    EXPECT_NE(run_tlm("records import " + file + " --db " + db).output.find("line 2: "),
              std::string::npos);
  }
  CliRun again = run_tlm("records export -o " + file + ".out --db " + db);
  EXPECT_NE(again.output.find("1 records"), std::string::npos) << again.output;  // nothing added
}

// `records import --replace`: a newer record of a stored schedule replaces it (and says
// so); without the flag the stored one stays.
TEST(Cli, RecordsImportReplaceTakesNewerTimingsOfStoredSchedules) {
  auto line = [](const std::string& median, const std::string& created) {
    return R"({"hardware":"hw","task_key":"matmul:m=8,n=8,k=8","task_spec":"matmul:m=8,n=8,k=8",)"
           R"("decisions":[8,8,8,8,0,8,0,0,1,8,0,0],"method":"random","status":"ok","min_ms":0.1,)"
           R"("median_ms":)" +
           median + R"(,"runs":5,"checkpoint":"","detail":"","created":)" + created + "}";
  };
  std::string db = temp_path("replace.db"), file = temp_path("replace.jsonl");
  std::ofstream(file) << line("0.9", "1.0") << "\n";
  ASSERT_EQ(run_tlm("records import " + file + " --db " + db).exit_code, 0);
  std::ofstream(file) << line("0.3", "2.0") << "\n";
  auto exported = [&] {
    EXPECT_EQ(run_tlm("records export -o " + file + ".out --db " + db).exit_code, 0);
    std::ifstream in(file + ".out");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  CliRun kept = run_tlm("records import " + file + " --db " + db);
  EXPECT_NE(kept.output.find("0 new records"), std::string::npos) << kept.output;
  EXPECT_NE(exported().find("\"median_ms\":0.9"), std::string::npos);
  CliRun replaced = run_tlm("records import " + file + " --db " + db + " --replace");
  ASSERT_EQ(replaced.exit_code, 0) << replaced.output;
  EXPECT_NE(replaced.output.find("0 new records in " + db + ", 1 replaced by newer ones"),
            std::string::npos)
      << replaced.output;
  std::string after = exported();
  EXPECT_NE(after.find("\"median_ms\":0.3"), std::string::npos) << after;
  EXPECT_EQ(after.find("\"median_ms\":0.9"), std::string::npos) << after;
}

// A dense record from before dense tasks had a weight layout decision imports as the
// plain layout it measured (block 1 in front); one of today's form imports unchanged.
TEST(Cli, RecordsImportBringsOldDenseRecordsToTodaysSpace) {
  auto line = [](const std::string& decisions, const std::string& created) {
    return R"({"hardware":"hw","task_key":"dense:m=8,n=8,k=8","task_spec":"dense:m=8,n=8,k=8",)"
           R"("decisions":[)" +
           decisions +
           R"(],"method":"random","status":"ok","min_ms":0.5,)"
           R"("median_ms":0.6,"runs":5,"checkpoint":"","detail":"","created":)" +
           created + "}";
  };
  std::string db = temp_path("upgrade.db"), file = temp_path("upgrade.jsonl");
  std::ofstream(file) << line("8,8,8,8,0,8,0,0,1,8,0,0", "1.0") << "\n"
                      << line("4,8,8,8,8,0,8,0,0,1,8,0,0", "2.0") << "\n";
  CliRun ok = run_tlm("records import " + file + " --db " + db);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  ASSERT_EQ(run_tlm("records export -o " + file + ".out --db " + db).exit_code, 0);
  std::ifstream in(file + ".out");
  std::string exported((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(exported.find("[1,8,8,8,8,0,8,0,0,1,8,0,0]"), std::string::npos) << exported;
  EXPECT_NE(exported.find("[4,8,8,8,8,0,8,0,0,1,8,0,0]"), std::string::npos) << exported;
}

// Timed cold (TLM_TIMING_COLD=1), a task with weights stores its records under its own
// fingerprint, and a search counts only those (--up-to: the warm trials do not count); a
// task without weights times the same either way and keeps the plain fingerprint.
TEST(Cli, ColdTimedRecordsAreStoredApartFromWarmOnes) {
  std::string db = temp_path("cold.db");
  const std::string dense = "dense:m=8,n=16,k=8", softmax = "softmax:rows=8,cols=16";
  auto tune = [&](const std::string& spec) {
    CliRun r = run_tlm("tune " + spec + " --method random --trials 2 --up-to --db " + db);
    EXPECT_EQ(r.exit_code, 0) << r.output;
  };
  tune(dense);
  tune(softmax);
  setenv("TLM_TIMING_COLD", "1", 1);
  tune(dense);
  tune(softmax);
  unsetenv("TLM_TIMING_COLD");
  RecordStore store(db);
  auto count_on = [&](const std::string& kind, bool cold) {  // records of a kind's task
    int n = 0;
    for (const auto& key : store.task_keys())
      for (const auto& r : store.query(key))
        if (key.rfind(kind, 0) == 0)
          n += (r.hardware.find("/cold-weights") != std::string::npos) == cold;
    return n;
  };
  EXPECT_EQ(count_on("dense:", false), 2);
  EXPECT_EQ(count_on("dense:", true), 2);  // the same 2 schedules, timed again cold
  EXPECT_EQ(count_on("softmax:", false), 2);
  EXPECT_EQ(count_on("softmax:", true), 0);
}

// `measure --store` keeps the measured schedule as a "manual" record with its decisions;
// measuring it again adds nothing, and a library method is refused, storing nothing.
TEST(Cli, MeasureStoreKeepsTheScheduleAsARecord) {
  std::string db = temp_path("manual.db");
  const std::string spec = "matmul:m=8,n=16,k=8";
  // Whole rows of 16 as 16-wide vectors, one row per register tile, accumulator at root.
  const std::string decisions = "16,16,8,1,0,16,0,0,1,1,0,0";
  CliRun first = run_tlm("measure " + spec + " --decisions " + decisions + " --store --db " + db);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("stored in "), std::string::npos) << first.output;
  CliRun again = run_tlm("measure " + spec + " --decisions " + decisions + " --store --db " + db);
  EXPECT_NE(again.output.find("already stored"), std::string::npos) << again.output;
  expect_one_line_error("measure " + spec + " --method reference --store --db " + db,
                        "only space schedules");
  std::string junk = temp_path("junk.db");
  std::ofstream(junk) << "not a database";
  expect_one_line_error("measure " + spec + " --decisions " + decisions + " --store --db " + junk,
                        junk);
  RecordStore store(db);
  ASSERT_EQ(store.count(), 1);
  Record r = store.query(store.task_keys().at(0)).at(0);
  EXPECT_EQ(r.method, "manual");
  EXPECT_EQ(r.status, Status::Ok);
  EXPECT_GT(r.median_ms, 0);
  EXPECT_EQ(r.decisions, (std::vector<int64_t>{16, 16, 8, 1, 0, 16, 0, 0, 1, 1, 0, 0}));
}

// The model's commands: missing or corrupt models, data and registries are one-line errors.
TEST(Cli, ModelCommandsRejectBadInput) {
  std::string dir = temp_path("models");
  ::mkdir(dir.c_str(), 0755);
  expect_one_line_error("lang 'softmax:rows=0,cols=8'", "out of range");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' --models " + dir, "no default model");
  expect_one_line_error("gen 'matmul:m=8,n=8,k=8' --model " + dir + "/tlm-none", "cannot read");
  expect_one_line_error("model --models " + dir + " rollback", "no validated base");
  expect_one_line_error("model --models " + dir + " rollback --hardware this",
                        "no default promoted");
  expect_one_line_error("model --models " + dir + " rollback tlm-0 --hardware this", "give no id");
  expect_one_line_error("model --models " + dir + " promote tlm-0 --hardware zen9", "zen9");
  expect_one_line_error("model --models " + dir + " promote tlm-0 --activation-block 8", "8");
  expect_one_line_error("model --models " + dir + " promote tlm-0 --activation-block 16",
                        "give --hardware");
  std::string data = temp_path("data.bin");
  std::ofstream(data) << "TLMDATA1 but then nothing sensible";
  std::string config = temp_path("config.json");
  std::ofstream(config) << R"({"context": 64, "layers": 1, "d_model": 16, "heads": 2})";
  expect_one_line_error("train pretrain --data " + data + " --run " + dir + "/run --config " +
                            config + " --models " + dir,
                        "dataset");
  std::ofstream(config) << "{";
  expect_one_line_error("train pretrain --data " + data + " --run " + dir + "/run --config " +
                            config + " --models " + dir,
                        "model config");
  expect_one_line_error("tasks alexnet", "unknown model 'alexnet'");
  expect_one_line_error("compile alexnet -o " + dir + "/out", "unknown model 'alexnet'");
  expect_one_line_error(
      "compile mobilenetv2 --image 32 --strategy tlm --models " + dir + " -o " + dir + "/out",
      "--strategy tlm needs a model");
  expect_one_line_error("run " + dir + "/no-artifact", "no compiled model");
  expect_one_line_error("compile llama-7b --layers 32 -o " + dir + "/llama", "GB available");
  ::mkdir((dir + "/tlm-0123456789abcdef").c_str(), 0755);  // a checkpoint that does not load
  std::ofstream(dir + "/tlm-0123456789abcdef/config.json") << R"({"context": 64, "layers": 1})";
  std::ofstream(dir + "/tlm-0123456789abcdef/weights.pt") << "not a libtorch archive";
  expect_one_line_error("model --models " + dir + " promote tlm-0123456789abcdef",
                        "tlm-0123456789abcdef");
  expect_one_line_error(
      "model --models " + dir + " blend tlm-0123456789abcdef tlm-0123456789abcdef --weight 0.5",
      "tlm-0123456789abcdef");
  expect_one_line_error("model --models " + dir + " blend tlm-0 tlm-1 --weight 2",
                        "not a number in [0, 1]");
  EXPECT_EQ(run_tlm("model --models " + dir + " list").output.find("default"), std::string::npos);
  std::ofstream(dir + "/registry.json") << "{not json";
  expect_one_line_error("model --models " + dir + " list", "not valid JSON");
}

TEST(Cli, SpacePrintsPointsAndSize) {
  CliRun r = run_tlm("space 'matmul:m=64,n=64,k=64'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("12 decision points, space size 2455488"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("out.tile1.d0"), std::string::npos);
}

TEST(Cli, KillDuringTuneKeepsCommittedRecords) {
  std::string db = temp_path("kill.db");
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    execl(TLM_EXE, TLM_EXE, "tune", "matmul:m=32,n=32,k=32", "--method", "random", "--trials",
          "100000", "--threads", "1", "--db", db.c_str(), nullptr);
    _exit(127);
  }
  int64_t seen = 0;
  for (int i = 0; i < 600 && seen < 32; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      seen = RecordStore(db).count();
    } catch (const std::exception&) {
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_GE(seen, 32) << "tune never committed a batch";
  RecordStore store(db);
  EXPECT_GE(store.count(), seen);
  EXPECT_EQ(store.count() % 16, 0) << "a batch was half written";
}

// `tune --method refine` goes on from the task's stored records of any method: each
// trial is a schedule not stored yet, and with nothing stored it is a one-line error.
TEST(Cli, RefineTuneMeasuresOnlyNewSchedules) {
  std::string db = temp_path("refine.db");
  const std::string tune = "tune matmul:m=8,n=16,k=8 --threads 1 --seed 3 --db " + db;
  expect_one_line_error(tune + " --method refine --trials 4", "no passing record");
  ASSERT_EQ(run_tlm(tune + " --method random --trials 16").exit_code, 0);
  for (int round = 1; round <= 2; ++round) {
    CliRun r = run_tlm(tune + " --method refine --trials 12");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("12 measured"), std::string::npos) << r.output;
    RecordStore store(db);
    EXPECT_EQ(store.count(), 16 + 12 * round) << "a trial re-measured a stored schedule";
    int refined = 0;
    for (const Record& rec : store.query(store.task_keys().at(0)))
      refined += rec.method == "refine";
    EXPECT_EQ(refined, 12 * round);
  }
}

// The count N of "round R: N measured" in improve's output (-1 when absent).
int measured_in_round(const std::string& output, int round) {
  std::string key = "round " + std::to_string(round) + ": ";
  for (size_t at = output.find(key); at != std::string::npos; at = output.find(key, at + 1))
    if (std::isdigit(static_cast<unsigned char>(output[at + key.size()])))
      return std::atoi(output.c_str() + at + key.size());
  return -1;
}

// The model's life cycle as a user drives it: corpus, pretraining, a validated base, one
// improve round (measured, fine-tuned, gated, audited), and a rerun that resumes.
TEST(Cli, CorpusPretrainImproveAndResume) {
  std::string dir = temp_path("lifecycle");
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/config.json")
      << R"({"context": 256, "layers": 1, "d_model": 32, "heads": 2})";
  std::ofstream(dir + "/tasks.txt") << "matmul:m=32,n=32,k=32\nsoftmax:rows=16,cols=32\n";
  std::ofstream(dir + "/held.txt") << "# held out\nmatmul:m=48,n=32,k=16\n";
  ASSERT_EQ(
      run_tlm("corpus -o " + dir + "/c.bin --per-task 1 --exclude " + dir + "/held.txt").exit_code,
      0);
  CliRun train = run_tlm("train pretrain --data " + dir + "/c.bin --run " + dir + "/pre --config " +
                         dir + "/config.json --steps 5 --models " + dir + "/m");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  auto at = train.output.find("checkpoint " + dir + "/m/tlm-");
  ASSERT_NE(at, std::string::npos) << train.output;
  std::string id = train.output.substr(train.output.find("tlm-", at + 11), 20);
  ASSERT_EQ(run_tlm("model --models " + dir + "/m base " + id).exit_code, 0);
  CliRun gen = run_tlm("gen 'matmul:m=48,n=32,k=16' -k 2 --measure --models " + dir + "/m");
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  EXPECT_NE(gen.output.find("#2 ok: median"), std::string::npos) << gen.output;
  EXPECT_NE(gen.output.find("generation"), std::string::npos) << gen.output;
  EXPECT_NE(gen.output.find("build "), std::string::npos) << gen.output;
  EXPECT_NE(gen.output.find("measurement "), std::string::npos) << gen.output;
  std::string improve = "improve --rounds 1 --trials-per-task 2 --finetune-steps 3 --tasks " + dir +
                        "/tasks.txt --heldout " + dir + "/held.txt --run " + dir +
                        "/run --models " + dir + "/m --db " + dir + "/t.db --threads 1";
  CliRun first = run_tlm(improve);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  int measured = measured_in_round(first.output, 1);
  EXPECT_GE(measured, 2) << first.output;  // per task: the beam's top-1, and a sample
  std::ifstream audit(dir + "/run/audit.jsonl");
  std::string line, all;
  int lines = 0;
  while (std::getline(audit, line)) ++lines, all += line;
  EXPECT_EQ(lines, 1);
  EXPECT_NE(all.find("\"held_out_geomean_ms\""), std::string::npos);
  EXPECT_NE(all.find("\"held_out_ms\":{\"matmul:m=48,n=32,k=16\":{\"candidate\":"),
            std::string::npos)
      << all;
  // The candidate continues its parent, the default the round started from.
  auto candidate_at = all.find("\"candidate\":\"tlm-");
  ASSERT_NE(candidate_at, std::string::npos) << all;
  std::string candidate = all.substr(candidate_at + 13, 20);
  CliRun show = run_tlm("model --models " + dir + "/m show " + candidate);
  EXPECT_NE(show.output.find("parent " + id), std::string::npos) << show.output;
  EXPECT_EQ(RecordStore(dir + "/t.db").count(), measured);
  CliRun again = run_tlm(improve);  // round 1 is in the audit log: nothing to redo
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.output.find("round 1"), std::string::npos) << again.output;
  EXPECT_EQ(RecordStore(dir + "/t.db").count(), measured);
  // Round 2 samples with another seed: new schedules even when round 1's candidate was
  // not promoted (same parent, same beam).
  CliRun second = run_tlm(improve.replace(improve.find("--rounds 1"), 10, "--rounds 2"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_GE(measured_in_round(second.output, 2), 1) << second.output;
  expect_one_line_error("improve --rounds 11 --tasks " + dir + "/tasks.txt --heldout " + dir +
                            "/held.txt --models " + dir + "/m",
                        "--rounds: '11' is not a number in [1, 10]");
}

// `compile --trials`: the task scheduler measures candidates for every task, stores them,
// and the artifact uses the best measured schedule of each task; it runs.
TEST(Cli, CompileWithTrialsSchedulesEveryTaskFromMeasurements) {
  std::string dir = temp_path("trials");
  CliRun compile = run_tlm("compile bert-base --layers 1 --seq 16 --trials 8 --db " + dir +
                           ".db -o " + dir + " --models " + dir + "-no-models");
  ASSERT_EQ(compile.exit_code, 0) << compile.output;
  // 10 tasks: 4 dense, 2 batched products, softmax, layernorm and 2 head transposes (the
  // products read queries and values in place)
  EXPECT_NE(compile.output.find("tuning: 80/80 trials"), std::string::npos) << compile.output;
  EXPECT_NE(compile.output.find("schedules from store: 10 tasks"), std::string::npos)
      << compile.output;
  EXPECT_GE(RecordStore(dir + ".db").count(), 10 * 8 / 2);  // some may repeat a stored one
  CliRun run = run_tlm("run " + dir + " --bench 2 --report");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("latency:"), std::string::npos) << run.output;
}

// After a task's first batch, half of each of its batches are tile variants of its best
// so far (search/tile_variants.h), stored with their own method; the budget counts them.
TEST(Cli, TrialsMeasureTileVariantsWithinTheBudget) {
  std::string dir = temp_path("trials_variants");
  CliRun compile = run_tlm("compile bert-base --layers 1 --seq 16 --trials 16 --db " + dir +
                           ".db -o " + dir + " --models " + dir + "-no-models");
  ASSERT_EQ(compile.exit_code, 0) << compile.output;
  RecordStore store(dir + ".db");
  int variants = 0, measured = 0;
  std::set<std::string> varied_tasks;
  for (const auto& key : store.task_keys())
    for (const auto& r : store.query(key)) {
      ++measured;
      if (r.method != "tile-variant") continue;
      ++variants;
      varied_tasks.insert(key);
      EXPECT_EQ(r.checkpoint, "") << r.task_spec;
    }
  EXPECT_GT(variants, 0) << compile.output;
  EXPECT_LE(measured, 10 * 16) << compile.output;  // 10 tasks, 16 each at most
  for (const auto& key : varied_tasks) {           // variants of schedules measured before them
    auto records = store.query(key);
    EXPECT_GE(std::count_if(records.begin(), records.end(),
                            [](const Record& r) { return r.method != "tile-variant"; }),
              4)
        << key;
  }
}

// `bench model`: the compiled model against PyTorch, both timed, outputs compared, each
// side's peak memory measured in its own process; results in the JSON.
TEST(Cli, BenchModelComparesWithPyTorch) {
  std::string dir = temp_path("bench_model");
  CliRun r = run_tlm("bench model bert-base --layers 1 --seq 8 --out " + dir + " --json " + dir +
                     ".json --models " + dir + "-no-models");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto row = nlohmann::json::parse(std::ifstream(dir + ".json")).at(0);
  for (const char* field : {"speedup_vs_torch_median", "torch_openblas1", "torch_default",
                            "compiled_peak_mb", "torch_peak_mb"})
    EXPECT_TRUE(row.contains(field)) << field;
  const auto& alone = row.at("compiled_alone");
  EXPECT_GE(alone.at("runs").get<int>(), 10);
  EXPECT_GT(alone.at("min_ms").get<double>(), 0.0);
  EXPECT_GE(alone.at("median_ms").get<double>(), alone.at("min_ms").get<double>());
  EXPECT_GT(row.at("compiled_peak_mb").get<double>(), 1.0);
  EXPECT_GT(row.at("torch_peak_mb").get<double>(), 1.0);
  EXPECT_LT(row.at("relative_error").get<double>(), 1e-3);
  EXPECT_GE(row.at("relative_error").get<double>(), 0.0);
}

// `bench model --peers`: a peer process (here a stand-in speaking peer_runner.py's
// protocol: it reads the benchmark's input files, its output is zeros of the fixture
// output's shape and its run sleeps 2 ms) is started on the same ONNX file, timed
// interleaved and checked against PyTorch.
TEST(Cli, BenchModelTimesPeersOnTheSameOnnxFile) {
  const char* fixtures = std::getenv("TLM_ONNX_FIXTURES");
  if (!fixtures) GTEST_SKIP() << "TLM_ONNX_FIXTURES is not set (scripts/test.sh sets it)";
  std::string model = std::string(fixtures) + "/norms_resize.onnx", dir = temp_path("peers");
  std::string script = temp_path("fake_peer.py");
  std::ofstream(script) << R"(import sys, time
import numpy as np
inputs = [np.load(a.split("=", 1)[1]) for a in sys.argv if "=" in a]
print("ready 0.01 9.9", flush=True)
for line in sys.stdin:
    w = line.split()
    if w[0] == "run":
        time.sleep(0.002)
        print("ok", flush=True)
    elif w[0] == "output":
        np.save(w[1], np.zeros(np.load(sys.argv[1][:-5] + ".out.npy").shape, np.float32))
        print("ok", flush=True)
    elif w[0] == "memory":
        print("rss_mb 10 25", flush=True)
    else:
        break
)";
  std::string peers = " --peers ort --peers-python /usr/bin/python3 --peers-script " + script;
  CliRun r = run_tlm("bench model " + model + " --strategy reference --report --out " + dir +
                     " --json " + dir + ".json" + peers);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("9.9"), std::string::npos) << r.output;  // the peer's version
  auto j = nlohmann::json::parse(std::ifstream(dir + ".json"));
  const auto& ort = j.at(0).at("peers").at("ort");
  EXPECT_GE(ort.at("min_ms").get<double>(), 2.0);
  EXPECT_GE(ort.at("runs").get<int>(), 10);
  EXPECT_GE(ort.at("alone").at("min_ms").get<double>(), 2.0);  // timed by itself as well
  EXPECT_GE(ort.at("alone").at("runs").get<int>(), 10);
  EXPECT_DOUBLE_EQ(ort.at("peak_mb").get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(ort.at("relative_error").get<double>(), 1.0);  // zeros against PyTorch
  EXPECT_EQ(j.at(0).at("fastest_peer"), "ort");
  EXPECT_GT(j.at(0).at("speedup_vs_fastest_peer_median").get<double>(), 0.0);
  // With --report: the plan's floor at the peak, and the peer's time over it.
  double at_peak = j.at(0).at("at_peak_ms").get<double>();
  EXPECT_GT(at_peak, 0.0);
  EXPECT_LT(at_peak, j.at(0).at("compiled").at("min_ms").get<double>());
  EXPECT_DOUBLE_EQ(j.at(0).at("ceiling_vs_fastest_peer").get<double>(),
                   ort.at("median_ms").get<double>() / at_peak);
  EXPECT_NE(r.output.find("ceiling"), std::string::npos) << r.output;
  expect_one_line_error("bench model " + model + " --peers tvm", "--peers");
  expect_one_line_error("bench model bert-base --layers 1 --seq 8 --out " + dir + peers,
                        "is a zoo name");
  expect_one_line_error("bench model " + model + " --peers openvino --peers-python /no/python",
                        "bench/peers/install.sh");
}

TEST(Cli, OnnxErrorsAreOneLine) {
  std::string broken = temp_path("broken.onnx");
  std::ofstream(broken) << "\x08\x07garbage that is not a model";
  expect_one_line_error("compile " + broken + " -o " + temp_path("onnx-out"), "onnx:");
  expect_one_line_error("tasks " + temp_path("missing.onnx"), "cannot read");
}

// A user compares with their framework without writing code: .npy in, .npy out.
TEST(Cli, RunReadsAndWritesNpy) {
  const char* fixtures = std::getenv("TLM_ONNX_FIXTURES");
  if (!fixtures) GTEST_SKIP() << "TLM_ONNX_FIXTURES is not set (scripts/test.sh sets it)";
  std::string base = std::string(fixtures) + "/norms_resize", dir = temp_path("npy-model");
  ASSERT_EQ(run_tlm("compile " + base + ".onnx -o " + dir + " --strategy mullapudi2016 --db " +
                    temp_path("none.db"))
                .exit_code,
            0);
  std::string out = temp_path("out.npy");
  CliRun r = run_tlm("run " + dir + " --input " + base + ".in.input.npy --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  NpyArray got = read_npy(out), expected = read_npy(base + ".out.npy");
  EXPECT_EQ(got.shape, expected.shape);
  double scale = 0;
  for (double v : expected.values) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.values.size(); ++i)
    EXPECT_NEAR(got.values[i], expected.values[i], 1e-4 * scale);
  std::string folder = temp_path("outputs");  // a folder gets NAME.npy per output
  ASSERT_EQ(run_tlm("run " + dir + " --input input=" + base + ".in.input.npy --output " + folder)
                .exit_code,
            0);
  EXPECT_EQ(read_npy(folder + "/output.npy").values, got.values);
  expect_one_line_error("run " + dir + " --input " + out, "wants shape [1,3,12,10]");
  expect_one_line_error("run " + dir + " --input nope=" + out, "the model has no input 'nope'");
  expect_one_line_error("run " + dir + " --input " + temp_path("missing.npy"), "cannot read");
  std::ofstream(temp_path("bad.npy")) << "not numpy";
  expect_one_line_error("run " + dir + " --input " + temp_path("bad.npy"), "is not a .npy file");
}

}  // namespace
}  // namespace tlm
