// Loader-side augmentation (random crop after zero padding, horizontal flip): checked exactly
// against the peer's augment() written out independently here (an explicit padded copy, a
// crop, a reversed row), reproducible from (seed, epoch, batch position) through reset and
// restore, different between epochs, with offsets over all of [0, 2p] and flips about half the
// time; and in the trainer, never on the device cache and never on the test set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include <QTemporaryDir>

#include "checkpoint_test_support.h"
#include "engine/config/config_schema.h"
#include "engine/data/batch_loader.h"
#include "engine/io/checkpoint.h"
#include "engine/train/trainer.h"
#include "image_folder_fixture.h"
#include "kernels/common/mix64.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace amp;

namespace {

// n samples of shape {C, H, W} whose every value is distinct and positive (1 + its index), so an
// output value names the source pixel it came from and only padding gives 0.
Dataset uniqueImages(std::int64_t n, std::int64_t C, std::int64_t H, std::int64_t W) {
  Dataset d;
  d.name = "unique";
  d.sampleShape = {C, H, W};
  d.count = n;
  d.numClasses = 2;
  for (std::int64_t i = 0; i < n * C * H * W; ++i) d.features.push_back(static_cast<float>(1 + i));
  for (std::int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<std::int32_t>(i % 2));
  return d;
}

// The generator the header documents, spelled out here.
Rng documentedRng(std::uint64_t seed, std::int64_t epoch, std::int64_t position) {
  return Rng(seed ^ mix64(0xA06D0000ULL + static_cast<std::uint64_t>(position)),
             0xA06E000000000000ULL + static_cast<std::uint64_t>(epoch));
}

struct Draw {
  std::int64_t i, j;
  bool flip;
};

// The peer: padded = F.pad(x, (p, p, p, p)); out = padded[:, i:i+H, j:j+W]; flip -> out.flip(-1).
std::vector<float> peerAugment(const Dataset& d, const std::vector<std::int64_t>& rows, int p, bool flip, Rng rng,
                               std::vector<Draw>* draws = nullptr) {
  const std::int64_t C = d.sampleShape[0], H = d.sampleShape[1], W = d.sampleShape[2];
  const std::int64_t PH = H + 2 * p, PW = W + 2 * p;
  std::vector<float> out;
  for (std::int64_t row : rows) {
    Draw dr{p, p, false};
    if (p > 0) {
      dr.i = static_cast<std::int64_t>(rng.below(2 * p + 1));
      dr.j = static_cast<std::int64_t>(rng.below(2 * p + 1));
    }
    if (flip) dr.flip = rng.below(2) == 1;
    if (draws) draws->push_back(dr);
    std::vector<float> padded(static_cast<std::size_t>(C * PH * PW), 0.0f);
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = 0; y < H; ++y)
        for (std::int64_t x = 0; x < W; ++x)
          padded[(c * PH + y + p) * PW + x + p] = d.features[((row * C + c) * H + y) * W + x];
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = 0; y < H; ++y) {
        std::vector<float> line;
        for (std::int64_t x = 0; x < W; ++x) line.push_back(padded[(c * PH + y + dr.i) * PW + x + dr.j]);
        if (dr.flip) std::reverse(line.begin(), line.end());
        out.insert(out.end(), line.begin(), line.end());
      }
  }
  return out;
}

std::vector<Batch> epochOf(BatchLoader& loader) {
  std::vector<Batch> out;
  Batch b;
  while (loader.next(b)) out.push_back(b);
  return out;
}

TEST(Augment, BatchesEqualThePeersAugmentExactly) {
  const Dataset d = uniqueImages(30, 2, 5, 6);
  for (auto [crop, flip] : {std::pair{2, true}, std::pair{3, false}, std::pair{0, true}, std::pair{1, true}}) {
    BatchLoaderOptions o{.batchSize = 7, .seed = 11};
    o.augmentCrop = crop;
    o.augmentFlip = flip;
    BatchLoader loader(d, o);
    for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
      const auto batches = epochOf(loader);
      ASSERT_EQ(batches.size(), 5u);
      for (std::size_t pos = 0; pos < batches.size(); ++pos) {
        const Batch& b = batches[pos];
        EXPECT_EQ(b.xShape, (Shape{b.size, 2, 5, 6}));
        EXPECT_EQ(b.x, peerAugment(d, b.rows, crop, flip, documentedRng(11, epoch, static_cast<std::int64_t>(pos))))
            << "crop " << crop << " flip " << flip << " epoch " << epoch << " batch " << pos;
        for (std::int64_t k = 0; k < b.size; ++k) EXPECT_EQ(b.labels[k], d.labels[b.rows[k]]);
      }
    }
  }
}

TEST(Augment, ResetAndRestoreGiveTheSameAugmentedBatches) {
  const Dataset d = uniqueImages(23, 3, 4, 4);
  BatchLoaderOptions o{.batchSize = 5, .seed = 3};
  o.augmentCrop = 1;
  o.augmentFlip = true;
  BatchLoader a(d, o);
  epochOf(a);
  const auto epoch1 = epochOf(a);
  BatchLoader b(d, o);
  b.reset(1);
  const auto again = epochOf(b);
  ASSERT_EQ(again.size(), epoch1.size());
  for (std::size_t k = 0; k < again.size(); ++k) EXPECT_EQ(again[k].x, epoch1[k].x);
  // Mid-epoch: two batches into epoch 1, saved, restored into a fresh loader.
  BatchLoader c(d, o);
  c.reset(1);
  Batch x;
  c.next(x);
  c.next(x);
  const BatchLoaderState saved = c.state();
  BatchLoader resumed(d, o);
  resumed.restore(saved);
  for (std::size_t k = 2; k < epoch1.size(); ++k) {
    ASSERT_TRUE(resumed.next(x));
    EXPECT_EQ(x.x, epoch1[k].x) << "batch " << k;
    EXPECT_EQ(x.rows, epoch1[k].rows);
  }
}

TEST(Augment, EachEpochAugmentsEachImageAfresh) {
  const Dataset d = uniqueImages(40, 1, 6, 6);
  BatchLoaderOptions o{.batchSize = 40, .shuffle = false, .seed = 9};
  o.augmentCrop = 2;
  o.augmentFlip = true;
  BatchLoader loader(d, o);
  const Batch e0 = epochOf(loader)[0], e1 = epochOf(loader)[0];
  int same = 0;
  for (int k = 0; k < 40; ++k)
    same += std::equal(e0.x.begin() + k * 36, e0.x.begin() + (k + 1) * 36, e1.x.begin() + k * 36);
  EXPECT_LE(same, 6);  // 50 equally likely outcomes per image: about 1 in 50 repeats
}

TEST(Augment, OffsetsCoverZeroToTwiceThePaddingAndHalfTheImagesFlip) {
  const std::int64_t n = 2000, H = 8, W = 8, p = 3;
  const Dataset d = uniqueImages(n, 1, H, W);
  BatchLoaderOptions o{.batchSize = 100, .seed = 21};
  o.augmentCrop = static_cast<int>(p);
  o.augmentFlip = true;
  BatchLoader loader(d, o);
  std::vector<int> iCount(2 * p + 1, 0), jCount(2 * p + 1, 0);
  int flips = 0, pos = 0;
  Batch b;
  while (loader.next(b)) {
    std::vector<Draw> draws;
    peerAugment(d, b.rows, static_cast<int>(p), true, documentedRng(21, 0, pos++), &draws);
    for (std::int64_t k = 0; k < b.size; ++k) {
      // Read the draws back from the output itself. Row 4 always lies inside the image (offsets
      // move it by at most p = 3 < 4) and holds at least W - p = 5 source pixels: two adjacent
      // ones give the direction, one gives the offsets.
      const float* out = b.x.data() + k * H * W;
      const std::int64_t base = b.rows[k] * H * W + 1;
      std::int64_t x0 = 0;
      while (out[4 * W + x0] == 0 || out[4 * W + x0 + 1] == 0) ++x0;
      const std::int64_t src0 = static_cast<std::int64_t>(out[4 * W + x0]) - base;
      const std::int64_t src1 = static_cast<std::int64_t>(out[4 * W + x0 + 1]) - base;
      const bool flip = src1 < src0;
      const std::int64_t sy = src0 / W, sx = src0 % W;
      const std::int64_t i = sy - 4 + p, j = sx - (flip ? W - 1 - x0 : x0) + p;
      ASSERT_GE(i, 0);
      ASSERT_LE(i, 2 * p);
      ASSERT_GE(j, 0);
      ASSERT_LE(j, 2 * p);
      ++iCount[i];
      ++jCount[j];
      flips += flip;
      EXPECT_EQ(i, draws[k].i);
      EXPECT_EQ(j, draws[k].j);
      EXPECT_EQ(flip, draws[k].flip);
    }
  }
  for (int v = 0; v <= 2 * p; ++v) {
    EXPECT_GE(iCount[v], 200) << "offset i = " << v;  // 2000 / 7 = 286 expected
    EXPECT_GE(jCount[v], 200) << "offset j = " << v;
  }
  EXPECT_GE(flips, 900);  // 1000 expected, sigma 22
  EXPECT_LE(flips, 1100);
}

TEST(Augment, RefusesWhatItCannotAugment) {
  const auto errorOf = test::messageOf<DataError>;
  const Dataset img = uniqueImages(4, 1, 4, 4);
  BatchLoaderOptions o{.batchSize = 2};
  o.augmentFlip = true;
  o.copyData = false;
  EXPECT_EQ(errorOf([&] { BatchLoader(img, o); }),
            "unique: augmented batches must carry their data (the device cache cannot augment)");
  o.copyData = true;
  o.augmentCrop = 5;
  EXPECT_EQ(errorOf([&] { BatchLoader(img, o); }),
            "data.augment_crop = 5: larger than the 4x4 samples of unique (at most their side)");
  Dataset flat = img;
  flat.sampleShape = {16};
  o.augmentCrop = 0;
  EXPECT_EQ(errorOf([&] { BatchLoader(flat, o); }),
            "unique: augmentation (data.augment_crop, data.augment_flip) needs image samples (channels, height, width)");
}

class AugmentTrainerTest : public test::ScratchDirTest {
 protected:
  RunConfig config(bool augment) {
    RunConfig c;
    c.seed = 4;
    c.backend = "cpu";
    c.model.name = "cnn";
    c.model.cnn = "conv:4,pool,fc:8";
    c.data.name = "images";
    c.data.path = (m_dir / "train").string();
    c.data.imageSize = 8;
    c.data.testFraction = 0.25;
    c.data.cache = "off";
    c.data.deviceCache = "on";
    c.data.augmentCrop = augment ? 2 : 0;
    c.data.augmentFlip = augment;
    c.train.batchSize = 4;
    c.train.steps = 2;
    c.train.histogramEvery = 0;
    return c;
  }
};

TEST_F(AugmentTrainerTest, AugmentationKeepsTheTrainingSetOffTheDeviceAndTheTestSetAsItIs) {
  test::writeImageFolder(m_dir / "train", 2, 8, 8, 3);
  Trainer plain(config(false)), augmented(config(true));
  EXPECT_TRUE(plain.trainingSetOnDevice());        // data.device_cache=on ...
  EXPECT_FALSE(augmented.trainingSetOnDevice());   // ... unless batches are augmented on the host
  // Same seed, same weights, same test set: evaluation is identical (never augmented).
  const EvalResult a = plain.evaluate(), b = augmented.evaluate();
  EXPECT_EQ(a.samples, 4);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.accuracy, b.accuracy);
  EXPECT_EQ(plain.data().test.features, augmented.data().test.features);
  augmented.step();
  EXPECT_EQ(augmented.evaluate().samples, 4);
}

TEST_F(AugmentTrainerTest, ACheckpointResumeMidEpochIsBitExact) {
  test::writeImageFolder(m_dir / "train", 2, 8, 8, 3);
  RunConfig c = config(true);
  c.data.deviceCache = "auto";
  c.train.steps = 10;  // 12 training images in batches of 4: three epochs and a bit
  c.optimizer.name = "adam";
  Trainer whole(c);
  std::vector<double> losses;
  while (!whole.finished()) losses.push_back(whole.step().loss);
  QTemporaryDir dir;
  const QString path = dir.filePath("step-5.zip");
  {
    Trainer first(c);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(first.step().loss, losses[i]);
    saveCheckpoint(first, path, QByteArray());
  }
  Trainer resumed(c);
  loadCheckpoint(resumed, path);
  for (std::size_t i = 5; i < losses.size(); ++i) EXPECT_EQ(resumed.step().loss, losses[i]) << "step " << i + 1;
  EXPECT_EQ(stateBytes(resumed), stateBytes(whole));
}

}  // namespace
