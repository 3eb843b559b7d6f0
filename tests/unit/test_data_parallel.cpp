// Data-parallel training (engine/dist) with the ranks as threads of this process (ThreadCommunicator),
// so it runs where mpirun cannot, under the sanitizers too: shards follow DistributedSampler's rule,
// 2 ranks follow 1 rank to summation-order bounds, the replicas stay bit-identical, an overflow on
// one rank makes every rank skip, and the loss of an uneven batch is weighed by rows. The Open MPI
// path is tests/integration/dist_ranks_check.py.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/config/config_schema.h"
#include "engine/dist/data_parallel.h"
#include "tests/unit/data_parallel_support.h"

namespace amp {
namespace {

TEST(ShardBatch, RanksTakeEveryNthRowOfTheGlobalBatch) {
  Batch g;
  g.size = 5;
  g.xShape = {5, 2};
  g.x = {0, 1, 10, 11, 20, 21, 30, 31, 40, 41};
  g.labels = {0, 1, 2, 3, 4};
  g.rows = {7, 3, 9, 1, 5};
  const Batch r0 = shardBatch(g, 0, 2), r1 = shardBatch(g, 1, 2);
  EXPECT_EQ(r0.size, 3);
  EXPECT_EQ(r1.size, 2);
  EXPECT_EQ(r0.xShape, (Shape{3, 2}));
  EXPECT_EQ(r0.x, (std::vector<float>{0, 1, 20, 21, 40, 41}));
  EXPECT_EQ(r1.x, (std::vector<float>{10, 11, 30, 31}));
  EXPECT_EQ(r1.labels, (std::vector<std::int32_t>{1, 3}));
  EXPECT_EQ(r0.rows, (std::vector<std::int64_t>{7, 9, 5}));
  const Batch r2 = shardBatch(g, 2, 6);  // more ranks than rows: some get none
  EXPECT_EQ(shardBatch(g, 5, 6).size, 0);
  EXPECT_EQ(r2.size, 1);
}

using test::trainOnRanks;

RunConfig config(std::initializer_list<const char*> kv) {
  RunConfig c;
  for (const char* s : {"model.width=32", "train.batch_size=16", "train.steps=20", "train.histogram_every=0"})
    applyOverride(c, s);
  for (const char* s : kv) applyOverride(c, s);
  return c;
}

TEST(DataParallel, TwoRanksFollowOneAndStayIdentical) {
  for (const char* opt : {"optimizer.name=sgd", "optimizer.name=adam"}) {
    const RunConfig c = config({opt});
    const auto one = trainOnRanks(c, 1), two = trainOnRanks(c, 2);
    ASSERT_EQ(two[0].steps.size(), one[0].steps.size());
    for (std::size_t i = 0; i < one[0].steps.size(); ++i)
      EXPECT_NEAR(two[0].steps[i].loss, one[0].steps[i].loss, 1e-5 * std::fabs(one[0].steps[i].loss)) << opt << " step " << i + 1;
    EXPECT_EQ(two[0].digest, two[1].digest) << opt << ": the replicas parted";
    EXPECT_EQ(two[0].steps.back().ranks, 2);
    EXPECT_EQ(two[0].steps.back().rankSamplesPerS.size(), 2u);
  }
}

TEST(DataParallel, AnOverflowOnOneRankMakesEveryRankSkip) {
  const RunConfig c = config({"amp.mode=fp16", "scaler.growth_interval=4", "train.inject_nonfinite=3,4,9",
                              "dist.inject_rank=1"});
  const auto one = trainOnRanks(c, 1);  // injected on rank "1" of 1: never
  RunConfig every = c;
  every.dist.injectRank = -1;
  const auto reference = trainOnRanks(every, 1);
  const auto two = trainOnRanks(c, 2);
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < reference[0].steps.size(); ++i) {
      const StepMetrics &a = reference[0].steps[i], &b = two[std::size_t(r)].steps[i];
      EXPECT_EQ(a.skipped, b.skipped) << "rank " << r << " step " << i + 1;
      EXPECT_EQ(a.scaleAfter, b.scaleAfter) << "rank " << r << " step " << i + 1;
      EXPECT_EQ(a.growthTracker, b.growthTracker) << "rank " << r << " step " << i + 1;
    }
  EXPECT_TRUE(two[0].steps[2].skipped && two[0].steps[2].injected);  // rank 0 records rank 1's injection
  EXPECT_FALSE(one[0].steps[2].skipped);
  EXPECT_EQ(two[0].digest, two[1].digest);
}

TEST(DataParallel, AnUnevenBatchWeighsEachRanksLossByItsRows) {
  // 80 training rows in batches of 32: the third is 16 rows, 6 + 5 + 5 on 3 ranks.
  const RunConfig c = config({"data.name=spirals", "data.samples=101", "model.name=mlp", "model.hidden=16",
                              "train.steps=0", "train.epochs=2", "train.eval_every=0"});
  const auto one = trainOnRanks(c, 1), three = trainOnRanks(c, 3);
  ASSERT_EQ(three[0].steps.size(), one[0].steps.size());
  for (std::size_t i = 0; i < one[0].steps.size(); ++i)
    EXPECT_NEAR(three[0].steps[i].loss, one[0].steps[i].loss, 1e-5 * std::fabs(one[0].steps[i].loss)) << "step " << i + 1;
  EXPECT_EQ(three[0].digest, three[2].digest);
}

}  // namespace
}  // namespace amp
