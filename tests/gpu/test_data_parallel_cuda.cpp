// Data-parallel ranks on the GPU, as threads of this program (ThreadCommunicator): two ranks on
// one GPU all-reduce through host memory (NCCL refuses two ranks on one device), two ranks on
// two GPUs through NCCL where there are two. Either way 2 ranks follow 1 rank on the same GPU to
// summation-order bounds, the replicas stay bit-identical, and an overflow on rank 1 alone makes
// both skip exactly the steps one process skips.
#include <cmath>

#include "engine/config/config_schema.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/unit/data_parallel_support.h"

using namespace amp;

namespace {

RunConfig recipe(std::initializer_list<const char*> kv) {
  RunConfig c;
  for (const char* s : {"backend=cuda", "model.width=256", "train.batch_size=64", "train.steps=30",
                        "train.histogram_every=0"})
    applyOverride(c, s);
  for (const char* s : kv) applyOverride(c, s);
  return c;
}

void expectRanksFollowOne(const RunConfig& c, const std::function<std::unique_ptr<Backend>(int)>& backendOf,
                         const std::string& what, int ranks = 2) {
  const auto one = test::trainOnRanks(c, 1), two = test::trainOnRanks(c, ranks, backendOf);
  ASSERT_EQ(one[0].steps.size(), two[0].steps.size()) << what;
  for (std::size_t i = 0; i < one[0].steps.size(); ++i) {
    const StepMetrics &a = one[0].steps[i], &b = two[0].steps[i];
    EXPECT_NEAR(b.loss, a.loss, 1e-4 * std::fabs(a.loss)) << what << " step " << i + 1;
    EXPECT_EQ(a.skipped, b.skipped) << what << " step " << i + 1;
    EXPECT_EQ(a.scaleAfter, b.scaleAfter) << what << " step " << i + 1;
    EXPECT_EQ(a.growthTracker, b.growthTracker) << what << " step " << i + 1;
  }
  for (int r = 1; r < ranks; ++r)
    EXPECT_EQ(two[0].digest, two[std::size_t(r)].digest) << what << ": rank " << r << "'s replica parted";
}

}  // namespace

TEST(DataParallelCuda, TwoRanksSharingOneGpuGoThroughHostMemory) {
  AMP_SKIP_WITHOUT_GPU();
  const auto sameGpu = [](int) { return makeBackend("cuda"); };
  expectRanksFollowOne(recipe({"amp.mode=fp32"}), sameGpu, "fp32, one GPU");
  expectRanksFollowOne(recipe({"amp.mode=fp16", "scaler.growth_interval=5", "train.inject_nonfinite=4,5,12",
                             "dist.inject_rank=1"}),
                     sameGpu, "fp16, overflow on rank 1, one GPU");
  // Three ranks: a batch of 64 splits 22/21/21 (the uneven shards' weighted average), with an
  // overflow on the last rank only, and in bf16.
  expectRanksFollowOne(recipe({"amp.mode=fp16", "train.inject_nonfinite=3", "dist.inject_rank=2"}),
                       sameGpu, "fp16, 3 ranks, overflow on rank 2, one GPU", 3);
  expectRanksFollowOne(recipe({"amp.mode=bf16"}), sameGpu, "bf16, 3 ranks, one GPU", 3);
}

TEST(DataParallelCuda, TwoRanksOnTwoGpusGoThroughNccl) {
  AMP_SKIP_WITHOUT_GPU();
  if (gpuInventory().devices.size() < 2) GTEST_SKIP() << "one GPU here: NCCL needs a GPU per rank";
  const auto ownGpu = [](int r) { return makeBackend("cuda:" + std::to_string(gpuInventory().devices[std::size_t(r)].ordinal)); };
  expectRanksFollowOne(recipe({"amp.mode=bf16"}), ownGpu, "bf16, NCCL");
  expectRanksFollowOne(recipe({"amp.mode=fp16", "train.inject_nonfinite=4,5", "dist.inject_rank=1"}), ownGpu,
                     "fp16, overflow on rank 1, NCCL");
}
