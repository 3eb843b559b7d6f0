// The cuDNN plans' workspace cap and their memory of failed algorithms
// (kernels/cuda/conv_plan_policy.h, issue 41): the cap's default and override, and a failed
// algorithm held back for one problem only, for a while only.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "kernels/cuda/conv_plan_policy.h"

using namespace amp::cuda;

TEST(ConvPlanPolicy, TheWorkspaceCapIsASixteenthOfTheDeviceUpToTwoGiB) {
  const std::size_t gib = std::size_t(1) << 30;
  EXPECT_EQ(convWorkspaceCap(80 * gib, nullptr), 2 * gib);
  EXPECT_EQ(convWorkspaceCap(8 * gib, nullptr), gib / 2);
  EXPECT_EQ(convWorkspaceCap(8 * gib, ""), gib / 2);
  EXPECT_EQ(convWorkspaceCap(0, nullptr), 2 * gib);  // size unknown
}

TEST(ConvPlanPolicy, TheEnvironmentSetsTheCapInMiB) {
  const std::size_t gib = std::size_t(1) << 30;
  EXPECT_EQ(convWorkspaceCap(80 * gib, "64"), std::size_t(64) << 20);
  EXPECT_EQ(convWorkspaceCap(80 * gib, "0"), 0u);  // only algorithms without workspace
  EXPECT_EQ(convWorkspaceCap(80 * gib, "0.5"), std::size_t(512) << 10);
  // Unreadable or negative: ignored, the default stands.
  EXPECT_EQ(convWorkspaceCap(8 * gib, "lots"), gib / 2);
  EXPECT_EQ(convWorkspaceCap(8 * gib, "-3"), gib / 2);
  EXPECT_EQ(convWorkspaceCap(8 * gib, "12MB"), gib / 2);
}

TEST(ConvPlanPolicy, AFailedAlgorithmIsHeldBackForItsProblemOnly) {
  FailedAlgorithms<std::string> f(60);
  f.failed("nhwc 64x3x32x32", 1, 100.0);
  EXPECT_TRUE(f.refused("nhwc 64x3x32x32", 1, 100.0));
  EXPECT_FALSE(f.refused("nhwc 64x3x32x32", 0, 100.0)) << "another algorithm of the same problem";
  EXPECT_FALSE(f.refused("nhwc 128x3x32x32", 1, 100.0)) << "another shape";
  EXPECT_FALSE(f.refused("nchw 64x3x32x32", 1, 100.0)) << "the other layout";
}

TEST(ConvPlanPolicy, AFailedAlgorithmIsTriedAgainAfterTheHold) {
  FailedAlgorithms<int> f(60);
  f.failed(7, 1, 100.0);
  EXPECT_TRUE(f.refused(7, 1, 159.9));
  EXPECT_FALSE(f.refused(7, 1, 160.0));
  // A second failure starts a new hold.
  f.failed(7, 1, 200.0);
  EXPECT_TRUE(f.refused(7, 1, 259.0));
}

TEST(ConvPlanPolicy, AProblemWithEveryAlgorithmHeldIsUnplannableUntilTheFirstRelease) {
  FailedAlgorithms<int> f(60);
  EXPECT_EQ(f.nextRelease(7, 0.0), std::numeric_limits<double>::infinity());
  f.failed(7, 1, 100.0);
  f.failed(7, 0, 130.0);
  f.failed(8, 0, 90.0);
  EXPECT_EQ(f.nextRelease(7, 120.0), 160.0);
  EXPECT_EQ(f.nextRelease(7, 170.0), 190.0);
  EXPECT_EQ(f.nextRelease(7, 200.0), std::numeric_limits<double>::infinity());
}
