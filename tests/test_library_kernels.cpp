// Tests of the vendor-library baselines (oneDNN, OpenBLAS): each supported task is run on
// random inputs and compared with a naive loop computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "measure/library_kernels.h"
#include "ops/task_spec.h"
#include "util/error.h"

namespace tlm {
namespace {

using Tensor = std::vector<float>;

// Sizes and geometry of a task, read from its spec.
struct Shape {
  int64_t batch = 1, m = 0, n = 0, k = 0;                         // matmul family
  int64_t images = 1, c = 0, h = 0, w = 0, oc = 0, r = 0, s = 0;  // convolutions
  int64_t stride = 1, pad = 0, dilation = 1, groups = 1, oh = 0, ow = 0;
};

bool is_conv(const TaskSpec& task) {
  return task.op() == "conv2d" || task.op() == "dwconv2d";
}

Shape shape_of(const TaskSpec& task) {
  Shape sh;
  if (!is_conv(task)) {
    sh.batch = task.op() == "batch_matmul" ? task.get("b") : 1;
    sh.m = task.get("m"), sh.n = task.get("n"), sh.k = task.get("k");
    return sh;
  }
  bool dw = task.op() == "dwconv2d";
  sh.images = task.get("n"), sh.c = task.get("c"), sh.h = task.get("h"), sh.w = task.get("w");
  sh.oc = dw ? sh.c : task.get("k"), sh.groups = dw ? sh.c : task.get("groups");
  sh.r = task.get("r"), sh.s = task.get("s"), sh.stride = task.get("stride");
  sh.pad = task.get("pad"), sh.dilation = task.get("dilation");
  sh.oh = (sh.h + 2 * sh.pad - sh.dilation * (sh.r - 1) - 1) / sh.stride + 1;
  sh.ow = (sh.w + 2 * sh.pad - sh.dilation * (sh.s - 1) - 1) / sh.stride + 1;
  return sh;
}

int64_t output_size(const Shape& sh) {
  return sh.oc ? sh.images * sh.oc * sh.oh * sh.ow : sh.batch * sh.m * sh.n;
}

int64_t reduction_length(const Shape& sh) {
  return sh.oc ? sh.c / sh.groups * sh.r * sh.s : sh.k;
}

// Element counts of the inputs, in the order of library_kernels.h.
std::vector<int64_t> input_sizes(const TaskSpec& task, const Shape& sh) {
  std::vector<int64_t> sizes;
  if (is_conv(task))
    sizes = {sh.images * sh.c * sh.h * sh.w, sh.oc * (sh.c / sh.groups) * sh.r * sh.s};
  else
    sizes = {sh.batch * sh.m * sh.k, sh.batch * sh.k * sh.n};
  auto words = task.epilogue_words();
  if (std::count(words.begin(), words.end(), "bias")) sizes.push_back(is_conv(task) ? sh.oc : sh.n);
  for (const auto& e : words)
    if (e == "add" || e == "mul") sizes.push_back(output_size(sh));
  return sizes;
}

std::vector<Tensor> random_inputs(const std::vector<int64_t>& sizes, float scale) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<Tensor> tensors;
  for (int64_t size : sizes) {
    Tensor t(size);
    for (float& x : t) x = dist(rng);
    tensors.push_back(t);
  }
  return tensors;
}

Tensor reference_matmul(const Shape& sh, const Tensor& a, const Tensor& b) {
  Tensor c(output_size(sh), 0.0f);
  for (int64_t q = 0; q < sh.batch; ++q)
    for (int64_t i = 0; i < sh.m; ++i)
      for (int64_t j = 0; j < sh.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < sh.k; ++l)
          sum += double(a[(q * sh.m + i) * sh.k + l]) * b[(q * sh.k + l) * sh.n + j];
        c[(q * sh.m + i) * sh.n + j] = float(sum);
      }
  return c;
}

double conv_point(const Shape& sh, const Tensor& x, const Tensor& wt, int64_t img, int64_t o,
                  int64_t y, int64_t z) {
  int64_t cg = sh.c / sh.groups, group = o / (sh.oc / sh.groups);
  double sum = 0;
  for (int64_t ci = 0; ci < cg; ++ci)
    for (int64_t i = 0; i < sh.r; ++i)
      for (int64_t j = 0; j < sh.s; ++j) {
        int64_t iy = y * sh.stride - sh.pad + i * sh.dilation;
        int64_t iz = z * sh.stride - sh.pad + j * sh.dilation;
        if (iy < 0 || iy >= sh.h || iz < 0 || iz >= sh.w) continue;
        int64_t channel = group * cg + ci;
        sum += double(x[((img * sh.c + channel) * sh.h + iy) * sh.w + iz]) *
               wt[((o * cg + ci) * sh.r + i) * sh.s + j];
      }
  return sum;
}

Tensor reference_conv(const Shape& sh, const Tensor& x, const Tensor& wt) {
  Tensor y(output_size(sh));
  for (int64_t img = 0; img < sh.images; ++img)
    for (int64_t o = 0; o < sh.oc; ++o)
      for (int64_t p = 0; p < sh.oh; ++p)
        for (int64_t q = 0; q < sh.ow; ++q)
          y[((img * sh.oc + o) * sh.oh + p) * sh.ow + q] =
              float(conv_point(sh, x, wt, img, o, p, q));
  return y;
}

float activation(const std::string& name, float x) {
  if (name == "relu") return std::max(x, 0.0f);
  if (name == "relu6") return std::min(std::max(x, 0.0f), 6.0f);
  if (name == "gelu")
    return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
  if (name == "silu") return x / (1.0f + std::exp(-x));
  if (name == "sigmoid") return 1.0f / (1.0f + std::exp(-x));
  if (name == "tanh") return std::tanh(x);
  ADD_FAILURE() << "unknown activation " << name;
  return x;
}

// Applies the epilogue in order; the bias runs along the output's channel dimension.
void reference_epilogue(const TaskSpec& task, const Shape& sh, const std::vector<Tensor>& in,
                        Tensor& y) {
  size_t next = 2;
  for (const auto& e : task.epilogue_words()) {
    for (size_t i = 0; i < y.size(); ++i) {
      if (e == "bias") {
        int64_t channel = sh.oc ? (int64_t(i) / (sh.oh * sh.ow)) % sh.oc : int64_t(i) % sh.n;
        y[i] += in[next][channel];
      } else if (e == "add") {
        y[i] += in[next][i];
      } else if (e == "mul") {
        y[i] *= in[next][i];
      } else {
        y[i] = activation(e, y[i]);
      }
    }
    if (e == "bias" || e == "add" || e == "mul") ++next;
  }
}

Tensor reference(const TaskSpec& task, const Shape& sh, const std::vector<Tensor>& in) {
  Tensor y = is_conv(task) ? reference_conv(sh, in[0], in[1]) : reference_matmul(sh, in[0], in[1]);
  reference_epilogue(task, sh, in, y);
  return y;
}

// Runs `spec` with `library` on random inputs (uniform in +-scale) and compares with the
// reference; returns the kernel's description.
std::string check_against_reference(const std::string& library, const std::string& spec,
                                    float scale = 1.0f) {
  TaskSpec task = parse_task_spec(spec);
  Shape sh = shape_of(task);
  std::vector<Tensor> in = random_inputs(input_sizes(task, sh), scale);
  std::vector<const float*> pointers;
  for (const auto& t : in) pointers.push_back(t.data());
  Tensor out(output_size(sh), NAN);
  auto kernel = make_library_kernel(library, task, pointers, out.data(), 2);
  kernel->run();
  kernel->run();  // a second run must give the same result
  Tensor expected = reference(task, sh, in);
  float max_abs = 0;
  for (float v : expected) max_abs = std::max(max_abs, std::abs(v));
  float tolerance = 1e-4f * std::sqrt(float(reduction_length(sh))) * std::max(max_abs, 1.0f);
  size_t bad = 0;  // the first wrong element (NaN and Inf are always wrong)
  while (bad < out.size() && std::abs(out[bad] - expected[bad]) <= tolerance) ++bad;
  EXPECT_EQ(bad, out.size()) << spec << ": element " << bad << " is " << out[bad] << ", expected "
                             << expected[bad] << " +- " << tolerance;
  std::string description = kernel->describe();
  EXPECT_FALSE(description.empty());
  return description;
}

TEST(LibraryKernels, MatmulOnednn) {
  check_against_reference("onednn", "matmul:m=37,n=29,k=41");
}

TEST(LibraryKernels, MatmulOpenblas) {
  check_against_reference("openblas", "matmul:m=37,n=29,k=41");
}

TEST(LibraryKernels, DenseBiasGeluOnednn) {
  check_against_reference("onednn", "dense:m=33,n=47,k=64+bias+gelu");
}

TEST(LibraryKernels, DenseBiasGeluOpenblas) {
  check_against_reference("openblas", "dense:m=33,n=47,k=64+bias+gelu");
}

TEST(LibraryKernels, BatchMatmulOnednn) {
  check_against_reference("onednn", "batch_matmul:b=3,m=17,n=23,k=19");
}

TEST(LibraryKernels, Conv2dStridePadDilationGroupsOnednn) {
  check_against_reference(
      "onednn", "conv2d:n=2,c=8,h=13,w=11,k=12,r=3,s=3,stride=2,pad=1,dilation=2,groups=2");
}

TEST(LibraryKernels, Conv2dBlockedLayoutOnednn) {
  check_against_reference("onednn", "conv2d:c=32,h=14,w=14,k=32,r=3,s=3,pad=1+bias+relu");
}

// An NCHW tensor in channel blocks [N, C/b, H, W, b] (b = 1: unchanged).
Tensor to_blocks(const Tensor& nchw, int64_t n, int64_t c, int64_t b) {
  if (b <= 1) return nchw;
  int64_t hw = int64_t(nchw.size()) / (n * c);
  Tensor out(nchw.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[((i * (c / b) + ch / b) * hw + p) * b + ch % b] = nchw[(i * c + ch) * hw + p];
  return out;
}

// Channel-blocked activations (in_block, out_block) are oneDNN's nChw8c / nChw16c: the
// blocked task, given the blocked inputs, writes the plain task's output in blocks (the plain
// task is checked against the reference), bias and residual included.
void check_blocked_against_plain(const std::string& plain, const std::string& blocks) {
  SCOPED_TRACE(plain + " with " + blocks);
  size_t plus = plain.find('+');
  TaskSpec task = parse_task_spec(plain),
           blocked = parse_task_spec(plain.substr(0, plus) + "," + blocks + plain.substr(plus));
  Shape sh = shape_of(task);
  std::vector<Tensor> in = random_inputs(input_sizes(task, sh), 3.0f), in_blocked = in;
  int64_t bi = blocked.get("in_block"), bo = blocked.get("out_block");
  in_blocked[0] = to_blocks(in[0], sh.images, sh.c, bi);
  for (size_t i = 2; i < in.size(); ++i)
    if (int64_t(in[i].size()) == output_size(sh))
      in_blocked[i] = to_blocks(in[i], sh.images, sh.oc, bo);
  auto run = [&](const TaskSpec& t, const std::vector<Tensor>& inputs) {
    std::vector<const float*> pointers;
    for (const auto& x : inputs) pointers.push_back(x.data());
    Tensor out(output_size(sh), NAN);
    make_library_kernel("onednn", t, pointers, out.data(), 2)->run();
    return out;
  };
  Tensor expected = to_blocks(run(task, in), sh.images, sh.oc, bo), got = run(blocked, in_blocked);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], 1e-4f * std::max(1.0f, std::abs(expected[i]))) << i;
}

TEST(LibraryKernels, Conv2dChannelBlockedActivationsOnednn) {
  check_against_reference("onednn", "conv2d:c=32,h=14,w=14,k=32,r=3,s=3,pad=1+bias+relu");
  check_blocked_against_plain("conv2d:c=32,h=14,w=14,k=32,r=3,s=3,pad=1+bias+relu",
                              "in_block=16,out_block=16");
  check_blocked_against_plain("conv2d:c=16,h=9,w=9,k=32,r=1,s=1+bias+add",
                              "in_block=8,out_block=16");
  check_blocked_against_plain("conv2d:c=3,h=12,w=12,k=16,r=3,s=3,stride=2,pad=1+bias",
                              "out_block=8");
  check_blocked_against_plain("dwconv2d:c=32,h=10,w=10,r=3,s=3,pad=1+bias+relu6",
                              "in_block=16,out_block=16");
}

// A convolution with an input scale (scale_in) is not oneDNN's: refused, not mis-computed.
TEST(LibraryKernels, ScaledConvolutionIsNotOnednns) {
  EXPECT_FALSE(library_supports(
      "onednn",
      parse_task_spec("conv2d:c=32,h=7,w=7,k=16,r=1,s=1,in_block=16,out_block=16,scale_in=1")));
  EXPECT_TRUE(library_supports(
      "onednn", parse_task_spec("conv2d:c=32,h=7,w=7,k=16,r=1,s=1,in_block=16,out_block=16")));
}

TEST(LibraryKernels, DwConv2dBiasRelu6Onednn) {
  // Inputs in +-3 so that some outputs pass 6 and the clamp is exercised.
  check_against_reference("onednn", "dwconv2d:n=2,c=16,h=12,w=12,r=3,s=3,pad=1+bias+relu6", 3.0f);
}

TEST(LibraryKernels, ResidualAddOnednn) {
  check_against_reference("onednn", "matmul:m=20,n=24,k=16+add");
  check_against_reference("onednn", "conv2d:c=32,h=10,w=10,k=32,r=3,s=3,pad=1+bias+relu+add");
}

TEST(LibraryKernels, ResidualAddMulOpenblas) {
  check_against_reference("openblas", "dense:m=20,n=24,k=16+bias+add+mul");
}

TEST(LibraryKernels, EveryActivationOnednn) {
  for (const char* act : {"relu", "relu6", "gelu", "silu", "sigmoid", "tanh"}) {
    check_against_reference("onednn", std::string("dense:m=8,n=16,k=8+bias+") + act, 3.0f);
    check_against_reference("onednn", std::string("conv2d:c=16,h=6,w=6,k=16,r=1,s=1+") + act, 3.0f);
  }
}

TEST(LibraryKernels, BiasAfterActivationOnednn) {
  check_against_reference("onednn", "dense:m=8,n=16,k=8+relu+bias+mul");
  check_against_reference("onednn", "dwconv2d:c=16,h=6,w=6,r=3,s=3+tanh+bias");
}

TEST(LibraryKernels, DescribeNamesLayouts) {
  std::string d = check_against_reference("onednn", "conv2d:c=32,h=14,w=14,k=32,r=3,s=3,pad=1");
  EXPECT_NE(d.find("src="), std::string::npos) << d;
  EXPECT_NE(d.find("dst="), std::string::npos) << d;
}

TEST(LibraryKernels, SupportTable) {
  EXPECT_TRUE(library_supports("onednn", parse_task_spec("dwconv2d:c=8,h=8,w=8,r=3,s=3")));
  EXPECT_TRUE(library_supports("openblas", parse_task_spec("dense:m=2,n=2,k=2+bias")));
  EXPECT_FALSE(library_supports("openblas", parse_task_spec("batch_matmul:b=2,m=2,n=2,k=2")));
  for (const char* library : {"onednn", "openblas"})  // writes 14 of its 16 columns
    EXPECT_FALSE(library_supports(library, parse_task_spec("dense:m=2,n=16,k=2,cols=14")));
  EXPECT_FALSE(library_supports("onednn", parse_task_spec("softmax:rows=4,cols=8")));
  EXPECT_FALSE(library_supports("cublas", parse_task_spec("matmul:m=2,n=2,k=2")));
}

TEST(LibraryKernels, UnsupportedTasksThrow) {
  float in[64] = {}, out[64] = {};
  std::vector<const float*> two = {in, in};
  auto pool = parse_task_spec("pool2d:kind=max,c=1,h=4,w=4,r=2,s=2");
  EXPECT_THROW(make_library_kernel("onednn", pool, two, out, 1), Error);
  auto softmax = parse_task_spec("softmax:rows=4,cols=8");
  EXPECT_THROW(make_library_kernel("openblas", softmax, {in}, out, 1), Error);
  auto conv = parse_task_spec("conv2d:c=1,h=4,w=4,k=1,r=1,s=1");
  EXPECT_THROW(make_library_kernel("openblas", conv, two, out, 1), Error);
  auto matmul = parse_task_spec("matmul:m=2,n=2,k=2");
  EXPECT_THROW(make_library_kernel("nosuchlib", matmul, two, out, 1), Error);
  EXPECT_THROW(make_library_kernel("onednn", matmul, {in}, out, 1), Error);  // missing input
}

}  // namespace
}  // namespace tlm
