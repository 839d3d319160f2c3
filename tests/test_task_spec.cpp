// Task spec parsing: canonical keys, defaults, and a one-line error for each malformed part.
#include <gtest/gtest.h>

#include <random>

#include "mutate.h"
#include "op_kinds.h"
#include "ops/task_shape.h"
#include "ops/task_spec.h"
#include "util/error.h"

namespace tlm {
namespace {

TEST(TaskSpec, CanonicalKeyFillsDefaultsInSchemaOrder) {
  TaskSpec a = parse_task_spec("conv2d:k=64,c=64,h=56,w=56,r=3,s=3,pad=1+bias+relu");
  TaskSpec b = parse_task_spec("conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1+bias+relu");
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(a.key(),
            "conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,dilation=1,groups=1+bias+relu");
  EXPECT_EQ(a.get("k"), 64);
  EXPECT_EQ(a.epilogue_words(), (std::vector<std::string>{"bias", "relu"}));
  EXPECT_EQ(parse_task_spec(a.key()).key(), a.key());
}

TEST(TaskSpec, WordParameters) {
  TaskSpec t = parse_task_spec("pool2d:kind=max,c=64,h=112,w=112,r=3,s=3,stride=2,pad=1");
  EXPECT_EQ(t.word("kind"), "max");
}

void expect_error(const std::string& spec, const std::string& fragment) {
  try {
    parse_task_spec(spec);
    FAIL() << "no error for " << spec;
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
  }
}

TEST(TaskSpec, MalformedSpecsNameTheBadPart) {
  expect_error("", "empty");
  expect_error("matmull:m=1,n=2,k=3", "unknown op 'matmull'");
  expect_error("matmul:m=1,n=2", "needs parameter 'k'");
  expect_error("matmul:m=1,n=2,k=3,q=4", "no parameter 'q'");
  expect_error("matmul:m=1,n=two,k=3", "'two'");
  expect_error("matmul:m=1,n=2,k=3,m=4", "given twice");
  expect_error("matmul:m=1,n=2,k", "key=value");
  expect_error("matmul:m=0,n=2,k=3", "out of range");
  expect_error("matmul:m=-4,n=2,k=3", "out of range");
  expect_error("matmul:m=1,n=2,k=3+swish", "unknown epilogue 'swish'");
  expect_error("pool2d:kind=min,c=1,h=4,w=4,r=2,s=2", "not one of max|avg");
  expect_error("conv2d:c=6,h=8,w=8,k=4,r=3,s=3,groups=4", "groups=4");
  expect_error("matmul:m=99999999999999999999,n=1,k=1", "expected an integer");
}

// Channel-blocked activations: a plain task keeps its key (the block parameters are left
// out at 1); a blocked output is one rank more, its bias runs along the channel block
// and the in-block dim, and its buffers are [N, C/b, H, W, b].
TEST(TaskSpec, ChannelBlocksKeepPlainKeysAndAddARank) {
  TaskSpec plain = parse_task_spec("conv2d:c=32,h=7,w=7,k=64,r=1,s=1,in_block=1+bias");
  EXPECT_EQ(plain.key(),
            "conv2d:n=1,c=32,h=7,w=7,k=64,r=1,s=1,stride=1,pad=0,dilation=1,groups=1+bias");
  EXPECT_EQ(plain.output_rank(), 4);
  EXPECT_EQ(plain.bias_mask(), 1 << 1);
  TaskSpec blocked =
      parse_task_spec("conv2d:c=32,h=7,w=7,k=64,r=1,s=1,in_block=8,out_block=16+bias+add");
  EXPECT_EQ(blocked.output_block(), 16);
  EXPECT_EQ(blocked.output_rank(), 5);
  EXPECT_EQ(blocked.bias_mask(), (1 << 1) | (1 << 4));
  EXPECT_EQ(blocked.epilogue_words(), (std::vector<std::string>{"bias", "add"}));
  EXPECT_EQ(parse_task_spec(blocked.key()).key(), blocked.key());
  TaskShape shape = describe_task(blocked);
  EXPECT_EQ(shape.inputs[0].shape, (std::vector<int64_t>{1, 4, 7, 7, 8}));
  EXPECT_EQ(shape.output_shape, (std::vector<int64_t>{1, 4, 7, 7, 16}));
  EXPECT_EQ(shape.output().extents, (std::vector<int64_t>{16, 7, 7, 4, 1}));
  EXPECT_EQ(parse_task_spec("conv2d:c=32,h=7,w=7,k=64,r=1,s=1,out_block=16+add@18").key(),
            parse_task_spec("conv2d:c=32,h=7,w=7,k=64,r=1,s=1,out_block=16+bias").key());
  expect_error("conv2d:c=32,h=7,w=7,k=64,r=1,s=1,in_block=3", "in_block=3");
  expect_error("conv2d:c=32,h=7,w=7,k=64,r=1,s=1,groups=2,out_block=8", "groups=1");
  expect_error("dwconv2d:c=24,h=7,w=7,r=3,s=3,out_block=16", "must divide");
  expect_error("conv2d:c=32,h=7,w=7,k=64,r=1,s=1,out_block=16+add@32",
               "outside the output's 5 dims");
  expect_error("global_pool:c=24,h=7,w=7,in_block=16", "in_block must divide c");
  expect_error("channel_scale:c=24,h=7,w=7,block=16", "block must divide c");
}

// A 1x1 convolution with a depthwise prologue: its image is the prologue's input (x),
// its output the prologue's output size, its inputs x, w, the depthwise taps [R, R, C] and
// bias [C]; its FLOPs count both; the prologue's padding and activation stay out of the
// key's prompt words but not the key. Anything but a 1x1 convolution is refused.
TEST(TaskSpec, DepthwisePrologueReadsTheLargerImage) {
  TaskSpec t = parse_task_spec(
      "conv2d:c=32,h=14,w=14,k=64,r=1,s=1,in_block=16,dw_r=3,dw_stride=2,dw_pad=1,dw_act=2+bias");
  EXPECT_EQ(t.key(),
            "conv2d:n=1,c=32,h=14,w=14,k=64,r=1,s=1,stride=1,pad=0,dilation=1,groups=1,"
            "in_block=16,dw_r=3,dw_stride=2,dw_pad=1,dw_act=2+bias");
  TaskShape shape = describe_task(t);
  ASSERT_EQ(shape.inputs.size(), 5u);  // x, w, taps, bias of the prologue, bias
  EXPECT_EQ(shape.inputs[0].shape, (std::vector<int64_t>{1, 2, 14, 14, 16}));
  EXPECT_EQ(shape.inputs[2].shape, (std::vector<int64_t>{3, 3, 32}));
  EXPECT_EQ(shape.inputs[3].shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(shape.output_shape, (std::vector<int64_t>{1, 64, 7, 7}));
  EXPECT_DOUBLE_EQ(shape.flops, 2.0 * 64 * 49 * 32 + 2.0 * 32 * 49 * 9);
  EXPECT_FALSE(shape.stages[0].inlinable);
  expect_error("conv2d:c=32,h=14,w=14,k=64,r=3,s=3,pad=1,dw_r=3", "1x1 convolution");
  expect_error("conv2d:c=32,h=14,w=14,k=64,r=1,s=1,dw_r=3,dw_act=3", "dw_act 0-2");
  expect_error("conv2d:c=32,h=2,w=2,k=64,r=1,s=1,dw_r=7", "within the padded input");
}

// A dense layer on a padded weight writes its first cols columns: cols is in its key
// (left out at n) and its output shape; it cannot be more than n.
TEST(TaskSpec, DenseColumnsAreKeyedAndAtMostN) {
  TaskSpec part = parse_task_spec("dense:m=2,n=64,k=8,cols=50+bias");
  EXPECT_EQ(part.key(), "dense:m=2,n=64,k=8,cols=50+bias");
  EXPECT_EQ(parse_task_spec("dense:m=2,n=64,k=8,cols=64").key(), "dense:m=2,n=64,k=8");
  EXPECT_EQ(describe_task(part).output_shape, (std::vector<int64_t>{2, 50}));
  expect_error("dense:m=2,n=64,k=8,cols=65", "cols=65 is more than n=64");
}

// A batched product whose right-hand side is constant (a Winograd product's filters) keys
// constant_b=1 (left out at 0) and may pack that input; its records from before it could
// are those of its earlier form (test_lang: the prompt is the plain product's).
TEST(TaskSpec, ABatchedProductOfAConstantMayPackIt) {
  TaskSpec packable = parse_task_spec("batch_matmul:b=4,m=9,n=32,k=16,constant_b=1");
  EXPECT_EQ(packable.key(), "batch_matmul:b=4,m=9,n=32,k=16,constant_b=1");
  EXPECT_EQ(parse_task_spec("batch_matmul:b=4,m=9,n=32,k=16,constant_b=0").key(),
            "batch_matmul:b=4,m=9,n=32,k=16");
  EXPECT_EQ(describe_task(packable).packable_input, 1);
  EXPECT_EQ(describe_task(parse_task_spec("batch_matmul:b=4,m=9,n=32,k=16")).packable_input, -1);
  TaskSpec earlier;
  ASSERT_TRUE(earlier_form(packable, earlier));
  EXPECT_EQ(earlier.key(), "batch_matmul:b=4,m=9,n=32,k=16");
  EXPECT_FALSE(earlier_form(earlier, earlier));
  expect_error("batch_matmul:b=4,m=9,n=32,k=16,constant_b=2", "constant_b=2 is not 0 or 1");
}

// A batched product may read an operand split into heads in place: a_heads=H stores A as
// [b / H, m, H, k], b_heads=H stores B as [b / H, k, H, n]; the loops and the output are the
// plain product's (test_lang: so is the prompt).
TEST(TaskSpec, ABatchedProductMayReadHeadSplitOperands) {
  TaskSpec heads = parse_task_spec("batch_matmul:b=6,m=5,n=8,k=4,a_heads=3,b_heads=6");
  EXPECT_EQ(heads.key(), "batch_matmul:b=6,m=5,n=8,k=4,a_heads=3,b_heads=6");
  EXPECT_EQ(parse_task_spec("batch_matmul:b=6,m=5,n=8,k=4,a_heads=0").key(),
            "batch_matmul:b=6,m=5,n=8,k=4");
  TaskShape shape = describe_task(heads);
  EXPECT_EQ(shape.inputs[0].shape, (std::vector<int64_t>{2, 5, 3, 4}));
  EXPECT_EQ(shape.inputs[1].shape, (std::vector<int64_t>{1, 4, 6, 8}));
  EXPECT_EQ(shape.output_shape, (std::vector<int64_t>{6, 5, 8}));
  TaskSpec earlier;
  ASSERT_TRUE(earlier_form(heads, earlier));  // its records: the plain product's schedules
  EXPECT_EQ(earlier.key(), "batch_matmul:b=6,m=5,n=8,k=4");
  expect_error("batch_matmul:b=6,m=5,n=8,k=4,a_heads=4", "a_heads=4 does not divide b=6");
  expect_error("batch_matmul:b=6,m=5,n=8,k=4,constant_b=1,b_heads=3", "are exclusive");
}

TEST(TaskSpec, ShapeErrorsComeFromDescribe) {
  EXPECT_THROW(describe_task(parse_task_spec("conv2d:c=3,h=4,w=4,k=8,r=7,s=7")), Error);
  TaskShape s =
      describe_task(parse_task_spec("conv2d:c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3"));
  EXPECT_EQ(s.output_shape, (std::vector<int64_t>{1, 64, 112, 112}));
  EXPECT_DOUBLE_EQ(s.flops, 2.0 * 64 * 112 * 112 * 3 * 7 * 7);
}

// Mutated specs of every task kind (characters replaced, cut, numbers inserted): each
// parses into a task whose canonical key parses back to itself and whose shape can be
// described, or is refused with tlm::Error; nothing else escapes. 20,000 specs.
TEST(TaskSpec, FuzzedSpecsParseOrAreRefused) {
  const auto examples = every_task_example();
  std::mt19937_64 rng(16);
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text = mutate(examples[rng() % examples.size()], rng, "0123456789-=,+:@x_ ", 2);
    try {
      TaskSpec task = parse_task_spec(text);
      EXPECT_EQ(parse_task_spec(task.key()).key(), task.key()) << text;
      TaskShape shape = describe_task(task);
      EXPECT_GT(shape.flops, 0) << text;
      ++accepted;
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(accepted, 500);
}

}  // namespace
}  // namespace tlm
