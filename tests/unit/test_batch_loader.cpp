// BatchLoader: DataLoader(shuffle=True) semantics, determinism, and exact resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "engine/data/batch_loader.h"

using namespace amp;

namespace {

// Sample i has features {i, i + 0.5} (shape {2}) and label i % 3: batches reveal their indices.
Dataset indexedDataset(std::int64_t n) {
  Dataset d;
  d.name = "indexed";
  d.sampleShape = {2};
  d.count = n;
  d.numClasses = 3;
  for (std::int64_t i = 0; i < n; ++i) {
    d.features.push_back(static_cast<float>(i));
    d.features.push_back(static_cast<float>(i) + 0.5f);
    d.labels.push_back(static_cast<std::int32_t>(i % 3));
  }
  return d;
}

// The sample indices of one whole epoch, batch by batch, checking each batch's consistency.
std::vector<std::vector<std::int64_t>> epochBatches(BatchLoader& loader) {
  std::vector<std::vector<std::int64_t>> out;
  Batch b;
  while (loader.next(b)) {
    std::vector<std::int64_t> ids;
    EXPECT_EQ(b.xShape, (Shape{b.size, 2}));
    EXPECT_EQ(b.x.size(), static_cast<std::size_t>(2 * b.size));
    EXPECT_EQ(b.labels.size(), static_cast<std::size_t>(b.size));
    for (std::int64_t i = 0; i < b.size; ++i) {
      const auto id = static_cast<std::int64_t>(b.x[2 * i]);
      EXPECT_EQ(b.x[2 * i + 1], b.x[2 * i] + 0.5f);
      EXPECT_EQ(b.labels[i], id % 3);
      ids.push_back(id);
    }
    out.push_back(ids);
  }
  return out;
}

std::vector<std::int64_t> flatten(const std::vector<std::vector<std::int64_t>>& batches) {
  std::vector<std::int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

TEST(BatchLoader, EverySampleOncePerEpochWithPartialLastBatch) {
  const Dataset d = indexedDataset(103);
  BatchLoader loader(d, {.batchSize = 10, .seed = 1});
  EXPECT_EQ(loader.batchesPerEpoch(), 11);
  const auto batches = epochBatches(loader);
  ASSERT_EQ(batches.size(), 11u);
  EXPECT_EQ(batches.back().size(), 3u);  // drop_last=False keeps the remainder
  std::vector<std::int64_t> all = flatten(batches);
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> expect(103);
  std::iota(expect.begin(), expect.end(), 0);
  EXPECT_EQ(all, expect);
  EXPECT_EQ(loader.epoch(), 1);  // the false return moved on to the next epoch
  EXPECT_EQ(loader.position(), 0);
}

TEST(BatchLoader, NewOrderEachEpochAndDeterministicBySeed) {
  const Dataset d = indexedDataset(200);
  BatchLoader a(d, {.batchSize = 32, .seed = 7});
  BatchLoader b(d, {.batchSize = 32, .seed = 7});
  BatchLoader c(d, {.batchSize = 32, .seed = 8});
  const auto a0 = flatten(epochBatches(a)), a1 = flatten(epochBatches(a));
  EXPECT_NE(a0, a1);
  std::vector<std::int64_t> iota(200);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_NE(a0, iota);
  EXPECT_EQ(flatten(epochBatches(b)), a0);
  EXPECT_EQ(flatten(epochBatches(b)), a1);
  EXPECT_NE(flatten(epochBatches(c)), a0);
  // reset(e) reproduces epoch e without iterating the ones before it.
  BatchLoader r(d, {.batchSize = 32, .seed = 7});
  r.reset(1);
  EXPECT_EQ(flatten(epochBatches(r)), a1);
}

TEST(BatchLoader, NoShuffleAndDropLast) {
  const Dataset d = indexedDataset(25);
  BatchLoader plain(d, {.batchSize = 10, .shuffle = false});
  std::vector<std::int64_t> iota(25);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(flatten(epochBatches(plain)), iota);
  EXPECT_EQ(flatten(epochBatches(plain)), iota);
  BatchLoader drop(d, {.batchSize = 10, .dropLast = true, .seed = 2});
  EXPECT_EQ(drop.batchesPerEpoch(), 2);
  const auto batches = epochBatches(drop);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].size(), 10u);
  BatchLoader tiny(d, {.batchSize = 100, .dropLast = true});
  Batch b;
  EXPECT_EQ(tiny.batchesPerEpoch(), 0);
  EXPECT_FALSE(tiny.next(b));
  EXPECT_THROW(BatchLoader(d, {.batchSize = 0}), DataError);
}

TEST(BatchLoader, RegressionTargetsTravelWithInputs) {
  Dataset d;
  d.name = "reg";
  d.sampleShape = {3};
  d.count = 5;
  d.targetDim = 2;
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 3; ++j) d.features.push_back(static_cast<float>(10 * i + j));
    for (int j = 0; j < 2; ++j) d.targets.push_back(static_cast<float>(-10 * i - j));
  }
  BatchLoader loader(d, {.batchSize = 2, .seed = 3});
  Batch b;
  int seen = 0;
  while (loader.next(b)) {
    EXPECT_TRUE(b.labels.empty());
    ASSERT_EQ(b.targets.size(), static_cast<std::size_t>(2 * b.size));
    for (std::int64_t i = 0; i < b.size; ++i) {
      EXPECT_EQ(b.targets[2 * i], -b.x[3 * i]);
      EXPECT_EQ(b.targets[2 * i + 1], -b.x[3 * i] - 1);
    }
    seen += static_cast<int>(b.size);
  }
  EXPECT_EQ(seen, 5);
}

TEST(BatchLoader, SaveRestoreContinuesIdentically) {
  const Dataset d = indexedDataset(90);
  BatchLoader original(d, {.batchSize = 16, .seed = 11});
  Batch b;
  epochBatches(original);                     // epoch 0
  for (int i = 0; i < 3; ++i) original.next(b);  // 3 batches into epoch 1
  const BatchLoaderState saved = original.state();
  EXPECT_EQ(saved.epoch, 1);
  EXPECT_EQ(saved.position, 3);
  const auto restOfEpoch1 = epochBatches(original);
  const auto epoch2 = epochBatches(original);

  BatchLoader resumed(d, {.batchSize = 16, .seed = 11});
  resumed.restore(saved);
  EXPECT_EQ(epochBatches(resumed), restOfEpoch1);
  EXPECT_EQ(epochBatches(resumed), epoch2);

  BatchLoaderState wrong = saved;
  wrong.batchSize = 32;
  EXPECT_THROW(resumed.restore(wrong), DataError);
  wrong = saved;
  wrong.position = 99;
  EXPECT_THROW(resumed.restore(wrong), DataError);
  const Dataset other = indexedDataset(91);
  BatchLoader elsewhere(other, {.batchSize = 16, .seed = 11});
  EXPECT_THROW(elsewhere.restore(saved), DataError);
}

TEST(BatchLoader, FashionMnistSizedEpochIsFast) {
  Dataset d;
  d.name = "fmnist-sized";
  d.sampleShape = {1, 28, 28};
  d.count = 60000;
  d.numClasses = 10;
  d.features.assign(static_cast<std::size_t>(60000) * 784, 0.5f);
  d.labels.assign(60000, 1);
  BatchLoader loader(d, {.batchSize = 128, .seed = 0});
  ASSERT_EQ(loader.batchesPerEpoch(), 469);
  Batch b;
  loader.next(b);  // first batch allocates
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t rows = b.size;
  while (loader.next(b)) rows += b.size;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("468 batches of 128 x 784: %.1f ms\n", ms);
  EXPECT_EQ(rows, 60000);
  EXPECT_LT(ms, 2000.0);  // milliseconds in practice; the bound only catches pathologies
}

}  // namespace
