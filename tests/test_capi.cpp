// The C API (tlm_runtime.h) against the tool: the same artifact and inputs give exactly the
// outputs `tlm run --output` writes; what a model takes and gives is what its plan says;
// broken artifacts and bad arguments fail with a one-line message, never a crash.
// CAPI_ARTIFACT is compiled by the ctest fixture `capi_artifact` (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "capi/tlm_runtime.h"
#include "util/npy.h"

namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tlm_capi_" + std::to_string(getpid()) + "_" + name;
}

void run_tool(const std::string& args) {
  std::string cmd = std::string(TLM_EXE) + " " + args + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// The model's outputs on `inputs` (each in its dtype's bytes) through the C API.
std::vector<std::vector<float>> run_capi(const tlm_model* model,
                                         const std::vector<const void*>& inputs) {
  std::vector<std::vector<float>> outputs(tlm_num_outputs(model));
  std::vector<float*> out;
  tlm_tensor_info info;
  for (size_t o = 0; o < outputs.size(); ++o) {
    EXPECT_EQ(tlm_output_info(model, o, &info), 0);
    outputs[o].resize(info.elements);
    out.push_back(outputs[o].data());
  }
  EXPECT_EQ(tlm_run(model, inputs.data(), out.data()), 0) << tlm_last_error();
  return outputs;
}

void expect_same_as_tool_output(const std::vector<float>& got, const std::string& npy) {
  tlm::NpyArray expected = tlm::read_npy(npy);
  ASSERT_EQ(got.size(), expected.values.size());
  for (size_t k = 0; k < got.size(); ++k) ASSERT_EQ(double(got[k]), expected.values[k]) << k;
}

void expect_open_fails(const std::string& dir, const std::string& fragment) {
  tlm_model* model = tlm_open(dir.c_str());
  EXPECT_EQ(model, nullptr) << dir;
  std::string message = tlm_last_error();
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  tlm_close(model);
}

TEST(Capi, DescribesInputsAndOutputsAsThePlanSays) {
  tlm_model* model = tlm_open(CAPI_ARTIFACT);
  ASSERT_NE(model, nullptr) << tlm_last_error();
  auto plan = nlohmann::json::parse(std::ifstream(std::string(CAPI_ARTIFACT) + "/plan.json"));
  ASSERT_EQ(tlm_num_inputs(model), plan["inputs"].size());
  ASSERT_EQ(tlm_num_outputs(model), plan["outputs"].size());
  for (size_t i = 0; i < plan["inputs"].size() + plan["outputs"].size(); ++i) {
    bool output = i >= plan["inputs"].size();
    size_t index = output ? i - plan["inputs"].size() : i;
    const auto& t = plan["tensors"][plan[output ? "outputs" : "inputs"][index].get<size_t>()];
    tlm_tensor_info info;
    ASSERT_EQ((output ? tlm_output_info : tlm_input_info)(model, index, &info), 0);
    EXPECT_EQ(info.name, t["name"].get<std::string>());
    EXPECT_EQ(std::vector<int64_t>(info.shape, info.shape + info.rank),
              t["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(info.dtype, TLM_FLOAT32);
    EXPECT_EQ(info.element_size, 4u);
  }
  EXPECT_EQ(tlm_input_info(model, 7, nullptr), -1);
  EXPECT_NE(std::string(tlm_last_error()).find("no input 7"), std::string::npos);
  tlm_close(model);
}

TEST(Capi, RunGivesExactlyTheToolsOutput) {
  tlm_model* model = tlm_open(CAPI_ARTIFACT);
  ASSERT_NE(model, nullptr) << tlm_last_error();
  tlm_tensor_info info;
  ASSERT_EQ(tlm_input_info(model, 0, &info), 0);
  std::vector<float> input(info.elements);
  std::mt19937 rng(11);
  for (float& x : input) x = std::normal_distribution<float>(0.0f, 1.0f)(rng);
  std::string in = temp_path("in.npy"), out = temp_path("out.npy");
  tlm::write_npy(in, std::vector<int64_t>(info.shape, info.shape + info.rank), input);
  run_tool(std::string("run ") + CAPI_ARTIFACT + " --input " + in + " --output " + out);
  auto got = run_capi(model, {input.data()});
  expect_same_as_tool_output(got.at(0), out);
  // A second run on the same model (its arena reused) gives the same again.
  EXPECT_EQ(run_capi(model, {input.data()}), got);
  tlm_close(model);
  fs::remove(in), fs::remove(out);
}

#if defined(__x86_64__)
// A run flushes denormals on the caller's thread (runtime/float_mode.h) and gives the
// caller its own floating-point mode back, whatever that mode was.
TEST(Capi, ARunGivesTheCallerItsFloatModeBack) {
  tlm_model* model = tlm_open(CAPI_ARTIFACT);
  ASSERT_NE(model, nullptr) << tlm_last_error();
  tlm_tensor_info info;
  ASSERT_EQ(tlm_input_info(model, 0, &info), 0);
  std::vector<float> input(info.elements, 0.5f);
  for (unsigned mode : {0x1f80u, 0x1f80u | 0x6000u}) {  // the default; rounding toward zero
    _mm_setcsr(mode);
    run_capi(model, {input.data()});
    EXPECT_EQ(_mm_getcsr() & ~0x3fu, mode) << "MXCSR (exception flags masked off)";
  }
  _mm_setcsr(0x1f80u);
  tlm_close(model);
}
#endif

// Integer inputs (token ids, a mask) go in as int64: the ONNX BERT fixture against the tool.
TEST(Capi, IntegerInputsGoInAsTheirOwnType) {
  const char* fixtures = std::getenv("TLM_ONNX_FIXTURES");
  if (!fixtures) GTEST_SKIP() << "TLM_ONNX_FIXTURES is not set (scripts/test.sh sets it)";
  std::string dir = temp_path("bert"), out = temp_path("bert_out.npy"), f = fixtures;
  run_tool("compile " + f + "/bert.onnx -o " + dir + " --strategy reference");
  std::string ids = f + "/bert.in.input_ids.npy", mask = f + "/bert.in.attention_mask.npy";
  run_tool("run " + dir + " --input input_ids=" + ids + " --input attention_mask=" + mask +
           " --output " + out);
  tlm_model* model = tlm_open(dir.c_str());
  ASSERT_NE(model, nullptr) << tlm_last_error();
  std::vector<std::vector<int64_t>> inputs;
  for (size_t i = 0; i < tlm_num_inputs(model); ++i) {
    tlm_tensor_info info;
    ASSERT_EQ(tlm_input_info(model, i, &info), 0);
    EXPECT_EQ(info.dtype, TLM_INT64);
    EXPECT_EQ(info.element_size, 8u);
    auto values = tlm::read_npy(std::string(info.name) == "input_ids" ? ids : mask).values;
    inputs.emplace_back(values.begin(), values.end());
  }
  expect_same_as_tool_output(run_capi(model, {inputs[0].data(), inputs[1].data()}).at(0), out);
  tlm_close(model);
  fs::remove_all(dir), fs::remove(out);
}

TEST(Capi, BrokenArtifactsFailToOpenWithOneLine) {
  expect_open_fails("", "no artifact folder");
  EXPECT_EQ(tlm_open(nullptr), nullptr);
  expect_open_fails(temp_path("absent"), "no compiled model");
  std::string dir = temp_path("broken");
  auto copy = [&] {
    fs::remove_all(dir);
    fs::copy(CAPI_ARTIFACT, dir);
  };
  copy();
  std::ofstream(dir + "/plan.json", std::ios::trunc) << "{\"tensors\": [";
  expect_open_fails(dir, "plan");
  copy();
  auto plan = nlohmann::json::parse(std::ifstream(dir + "/plan.json"));
  plan["tensors"][plan["inputs"][0].get<size_t>()]["dtype"] = "float16";
  std::ofstream(dir + "/plan.json", std::ios::trunc) << plan.dump();
  expect_open_fails(dir, "unknown element type 'float16'");
  copy();
  { std::fstream(dir + "/weights.bin", std::ios::in | std::ios::out | std::ios::binary) << "xxxx"; }
  expect_open_fails(dir, "weights.bin");
  copy();
  fs::resize_file(dir + "/model.so", fs::file_size(dir + "/model.so") / 2);
  expect_open_fails(dir, "model.so");
  copy();
  fs::remove(dir + "/model.so");
  expect_open_fails(dir, "model.so");
  fs::remove_all(dir);
  tlm_model* intact = tlm_open(CAPI_ARTIFACT);  // nothing of the original was touched
  EXPECT_NE(intact, nullptr) << tlm_last_error();
  tlm_close(intact);
}

TEST(Capi, BadRunArgumentsFailWithAMessage) {
  tlm_model* model = tlm_open(CAPI_ARTIFACT);
  ASSERT_NE(model, nullptr) << tlm_last_error();
  float out[1];
  float* outputs[] = {out};
  const void* missing[] = {nullptr};
  EXPECT_EQ(tlm_run(model, nullptr, outputs), -1);
  EXPECT_NE(std::string(tlm_last_error()).find("pointer arrays"), std::string::npos);
  EXPECT_EQ(tlm_run(model, missing, outputs), -1);
  EXPECT_EQ(std::string(tlm_last_error()), "input 0 is NULL");
  EXPECT_EQ(tlm_run(nullptr, missing, outputs), -1);
  EXPECT_NE(std::string(tlm_last_error()).find("no model"), std::string::npos);
  EXPECT_EQ(tlm_num_inputs(nullptr), 0u);
  EXPECT_EQ(tlm_output_info(model, 1, nullptr), -1);
  EXPECT_EQ(std::string(tlm_last_error()), "no output 1 (the model has 1)");
  tlm_tensor_info info;
  EXPECT_EQ(tlm_output_info(model, 0, &info), 0);
  EXPECT_EQ(std::string(tlm_last_error()), "");  // a call that succeeds clears it
  tlm_close(model);
}

}  // namespace
