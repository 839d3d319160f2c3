// The improve loop's second guard: a candidate that is faster on the held-out geomean but
// slower on a family of the user's own tasks is not promoted.
#include <gtest/gtest.h>

#include "train/improve.h"

namespace tlm {
namespace {

const std::vector<std::string> kTasks = {
    "conv2d:n=1,c=64,h=56,w=56,k=64,r=1,s=1,stride=1,pad=0+bias+relu",
    "conv2d:n=1,c=96,h=28,w=28,k=192,r=1,s=1,stride=1,pad=0+bias",
    "conv2d:n=1,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1+bias+relu",
    "dwconv2d:n=1,c=144,h=56,w=56,r=3,s=3,stride=1,pad=1+bias+relu6",
    "softmax:rows=1536,cols=128",
    "softmax:rows=448,cols=256",
};

TEST(ImproveGuard, AFamilyThatGetsSlowerBlocksWhateverTheGeomean) {
  // Every task as fast under the candidate: nothing is slower.
  std::vector<std::pair<double, double>> same(kTasks.size(), {1.0, 1.0});
  EXPECT_TRUE(slower_families(kTasks, same).empty());
  // The 1x1 convolutions 10% slower, softmax 2x faster: the geomean improves, the guard
  // names the 1x1 family alone (the 3x3 convolution is another family).
  auto mixed = same;
  mixed[0] = {1.0, 1.1}, mixed[1] = {2.0, 2.2}, mixed[4] = {0.06, 0.03}, mixed[5] = {0.1, 0.05};
  EXPECT_EQ(slower_families(kTasks, mixed), std::vector<std::string>{"conv2d 1x1"});
  // Within the noise allowance (3% slower) nothing is named; a family is judged by its
  // geomean, so one task 1.2x slower and the other 1.2x faster is no slowdown.
  auto small = same;
  small[2] = {1.0, 1.03}, small[3] = {0.5, 0.515};
  EXPECT_TRUE(slower_families(kTasks, small).empty());
  auto offset = same;
  offset[4] = {0.05, 0.06}, offset[5] = {0.06, 0.05};
  EXPECT_TRUE(slower_families(kTasks, offset).empty());
  // Every family over the limit is named, in order.
  auto worse = same;
  worse[2] = {1.0, 1.2}, worse[3] = {0.5, 0.6}, worse[4] = {0.05, 0.06}, worse[5] = {0.1, 0.12};
  EXPECT_EQ(slower_families(kTasks, worse),
            (std::vector<std::string>{"conv2d 3x3", "dwconv2d 3x3", "softmax"}));
}

}  // namespace
}  // namespace tlm
