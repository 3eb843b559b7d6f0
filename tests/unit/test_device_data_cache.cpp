// data.device_cache: the training set kept on the backend's device and each batch gathered there
// (Backend::gatherRows) instead of copied from the host every step. It must change where the
// bytes come from and nothing else: the same batches in the same order, so a run with the cache
// is bit for bit the run without it (shuffled and unshuffled data, classification and
// regression, fp32 and pure-fp16 inputs, across an epoch boundary, after a resume). On the CPU
// "auto" leaves it off (the data is in host memory already); "on" forces it, which is how these
// tests reach the trainer's cached path without a GPU (the GPU suite does the same on a GPU).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "engine/backend/backend.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/batch_loader.h"
#include "engine/train/trainer.h"

namespace amp {
namespace {

TEST(GatherRows, CopiesTheNamedRowsInOrderInEveryDtype) {
  auto be = makeCpuBackend();
  std::vector<float> host(6 * 3);
  std::iota(host.begin(), host.end(), 0.5f);
  const std::vector<std::int64_t> rows = {4, 0, 5, 5, 2};
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    Tensor src = be->fromHost(host, {6, 3}, dt, MemCategory::Workspace);
    Tensor dst = be->empty({5, 3}, dt, MemCategory::Workspace);
    be->gatherRows(src, rows, dst);
    const std::vector<float> got = be->toHostFloat(dst), all = be->toHostFloat(src);
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (std::size_t j = 0; j < 3; ++j)
        EXPECT_EQ(got[i * 3 + j], all[std::size_t(rows[i]) * 3 + j]) << dtypeName(dt);
  }
  Tensor labels = be->fromHostInt(std::vector<std::int32_t>{7, 8, 9, 10, 11, 12}, {6}, MemCategory::Workspace);
  Tensor picked = be->empty({5}, DType::I32, MemCategory::Workspace);
  be->gatherRows(labels, rows, picked);
  EXPECT_EQ(be->toHostInt(picked), (std::vector<std::int32_t>{11, 7, 12, 12, 9}));
}

TEST(GatherRows, RefusesRowsOutsideTheSetAndMismatchedShapes) {
  auto be = makeCpuBackend();
  Tensor src = be->zeros({4, 2}, DType::F32, MemCategory::Workspace);
  Tensor dst = be->empty({2, 2}, DType::F32, MemCategory::Workspace);
  try {
    be->gatherRows(src, std::vector<std::int64_t>{1, 4}, dst);
    ADD_FAILURE() << "row 4 of 4 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "gatherRows: row 4 is outside the 4 rows of (4, 2)");
  }
  EXPECT_THROW(be->gatherRows(src, std::vector<std::int64_t>{-1, 0}, dst), std::invalid_argument);
  EXPECT_THROW(be->gatherRows(src, std::vector<std::int64_t>{0, 1, 2}, dst), std::invalid_argument);
  Tensor wrongRow = be->empty({2, 3}, DType::F32, MemCategory::Workspace);
  EXPECT_THROW(be->gatherRows(src, std::vector<std::int64_t>{0, 1}, wrongRow), std::invalid_argument);
  Tensor wrongType = be->empty({2, 2}, DType::F16, MemCategory::Workspace);
  EXPECT_THROW(be->gatherRows(src, std::vector<std::int64_t>{0, 1}, wrongType), std::invalid_argument);
}

TEST(BatchLoaderRows, RowsAreTheBatchesOrderWithOrWithoutTheData) {
  Dataset d;
  d.count = 10;
  d.sampleShape = {2};
  d.features.resize(20);
  std::iota(d.features.begin(), d.features.end(), 0.f);
  d.labels = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  d.numClasses = 10;
  BatchLoaderOptions full{.batchSize = 4, .shuffle = true, .seed = 3};
  BatchLoaderOptions light = full;
  light.copyData = false;
  BatchLoader a(d, full), b(d, light);
  Batch ba, bb;
  for (int k = 0; k < 7; ++k) {  // past an epoch boundary (3 batches per epoch)
    if (!a.next(ba)) a.next(ba);
    if (!b.next(bb)) b.next(bb);
    ASSERT_EQ(ba.rows, bb.rows) << "batch " << k;
    EXPECT_EQ(ba.xShape, bb.xShape);
    EXPECT_TRUE(bb.x.empty() && bb.labels.empty());
    for (std::size_t i = 0; i < ba.rows.size(); ++i) {
      EXPECT_EQ(ba.labels[i], d.labels[std::size_t(ba.rows[i])]);
      EXPECT_EQ(ba.x[i * 2 + 1], d.features[std::size_t(ba.rows[i]) * 2 + 1]);
    }
  }
}

RunConfig withCache(RunConfig c, const char* cache) {
  setConfigValue(c, "data.device_cache", cache);
  setConfigValue(c, "train.threads", "1");
  return c;
}

// Two runs, one with the cache: identical losses, gradient norms and weights, step for step.
void expectSameRun(const RunConfig& base, int steps, const std::string& what) {
  Trainer off(withCache(base, "off")), on(withCache(base, "on"));
  EXPECT_FALSE(off.trainingSetOnDevice());
  EXPECT_TRUE(on.trainingSetOnDevice());
  for (int i = 0; i < steps && !off.finished(); ++i) {
    const StepMetrics a = off.step(), b = on.step();
    ASSERT_EQ(std::memcmp(&a.loss, &b.loss, sizeof a.loss), 0) << what << " step " << i + 1;
    ASSERT_EQ(std::memcmp(&a.gradNorm, &b.gradNorm, sizeof a.gradNorm), 0) << what << " step " << i + 1;
    EXPECT_EQ(a.testLoss.has_value(), b.testLoss.has_value());
  }
  const auto pa = off.model().parameters(), pb = on.model().parameters();
  for (std::size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(off.backend().toHostBytes(pa[i]->value), on.backend().toHostBytes(pb[i]->value)) << what;
}

TEST(DeviceDataCache, ShuffledClassificationRunIsUnchanged) {
  RunConfig c = presetConfig(*findPreset("spirals"));
  setConfigValue(c, "train.steps", "45");  // 16 batches per epoch: three epochs' shuffles
  setConfigValue(c, "train.eval_every", "20");
  expectSameRun(c, 45, "spirals");
}

TEST(DeviceDataCache, RecipeRegressionRunIsUnchangedAlsoInPureFp16) {
  for (const char* mode : {"fp16", "pure_fp16"}) {
    RunConfig c = presetConfig(*findPreset("recipe"));
    setConfigValue(c, "model.width", "64");
    setConfigValue(c, "train.batch_size", "32");
    setConfigValue(c, "data.batches", "4");
    setConfigValue(c, "train.steps", "10");
    setConfigValue(c, "amp.mode", mode);
    expectSameRun(c, 10, std::string("recipe ") + mode);
  }
}

TEST(DeviceDataCache, AutoKeepsHostDataOnTheCpuAndCountsTheCacheAsWorkspace) {
  RunConfig c = presetConfig(*findPreset("recipe"));
  setConfigValue(c, "model.width", "64");
  setConfigValue(c, "train.batch_size", "32");
  setConfigValue(c, "data.batches", "4");
  setConfigValue(c, "backend", "cpu");
  Trainer automatic(c);
  EXPECT_FALSE(automatic.trainingSetOnDevice());
  Trainer on(withCache(c, "on"));
  ASSERT_TRUE(on.trainingSetOnDevice());
  // 128 rows of 64 fp32 inputs and 64 fp32 targets stay allocated as workspace.
  EXPECT_GE(on.backend().memory().snapshot().current[std::size_t(MemCategory::Workspace)], 2 * 128 * 64 * 4);
  EXPECT_EQ(automatic.backend().memory().snapshot().current[std::size_t(MemCategory::Workspace)], 0);
}

}  // namespace
}  // namespace amp
