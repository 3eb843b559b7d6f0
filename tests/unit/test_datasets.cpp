// IDX / Fashion-MNIST loading, loadDataset options and the synthetic recipe data.
// Small IDX files are written into a temp folder so every failure mode can be produced.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/data/dataset.h"
#include "test_support.h"
#include "engine/data/idx_reader.h"

namespace fs = std::filesystem;
using namespace amp;

namespace {

using Bytes = std::vector<std::uint8_t>;

void putBe32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

// An image file header plus `dataBytes` pseudo-random pixels (which need not match the header).
Bytes imageFile(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, std::size_t dataBytes,
                std::uint32_t magic = 0x00000803) {
  Bytes b;
  putBe32(b, magic);
  putBe32(b, count);
  putBe32(b, rows);
  putBe32(b, cols);
  std::uint32_t x = 12345;
  for (std::size_t i = 0; i < dataBytes; ++i) b.push_back(static_cast<std::uint8_t>((x = x * 1103515245u + 12345u) >> 16));
  return b;
}
Bytes imageFile(std::uint32_t count, std::size_t extra = 0) {
  return imageFile(count, 28, 28, count * 784 + extra);
}

Bytes labelFile(const Bytes& labels, std::uint32_t count, std::uint32_t magic = 0x00000801) {
  Bytes b;
  putBe32(b, magic);
  putBe32(b, count);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}
Bytes labelFile(const Bytes& labels) { return labelFile(labels, static_cast<std::uint32_t>(labels.size())); }

Bytes cyclicLabels(std::size_t n) {
  Bytes l(n);
  for (std::size_t i = 0; i < n; ++i) l[i] = static_cast<std::uint8_t>(i % 10);
  return l;
}

const auto errorOf = test::messageOf<DataError>;

class IdxTest : public test::ScratchDirTest {
 protected:

  std::string writeRaw(const std::string& name, const Bytes& b) {
    const std::string p = (m_dir / name).string();
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
    return p;
  }
  std::string writeGz(const std::string& name, const Bytes& b) {
    const std::string p = (m_dir / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    EXPECT_TRUE(f);
    EXPECT_EQ(gzwrite(f, b.data(), static_cast<unsigned>(b.size())), static_cast<int>(b.size()));
    gzclose(f);
    return p;
  }
  Bytes readAll(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }
  // A complete fake Fashion-MNIST folder with `nTrain`/`nTest` samples.
  void writeFakeFmnist(std::uint32_t nTrain, std::uint32_t nTest) {
    writeGz("train-images-idx3-ubyte.gz", imageFile(nTrain));
    writeGz("train-labels-idx1-ubyte.gz", labelFile(cyclicLabels(nTrain)));
    writeRaw("t10k-images-idx3-ubyte", imageFile(nTest));  // raw files are found too
    writeRaw("t10k-labels-idx1-ubyte", labelFile(cyclicLabels(nTest)));
  }

};

TEST_F(IdxTest, ReadsGzipAndRawIdentically) {
  const Bytes file = imageFile(3);
  const IdxImages a = readIdxImages(writeGz("a.gz", file), 28, 28);
  const IdxImages b = readIdxImages(writeRaw("b", file));
  EXPECT_EQ(a.count, 3);
  EXPECT_EQ(a.rows, 28);
  EXPECT_EQ(a.cols, 28);
  ASSERT_EQ(a.pixels.size(), 3u * 784);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_TRUE(std::equal(a.pixels.begin(), a.pixels.end(), file.begin() + 16));
  const auto labels = readIdxLabels(writeGz("l.gz", labelFile({3, 1, 4, 1, 5, 9})), 10);
  EXPECT_EQ(labels, (Bytes{3, 1, 4, 1, 5, 9}));
}

TEST_F(IdxTest, TruncatedPixelDataNamesFileAndSizes) {
  const std::string p = writeGz("short.gz", imageFile(5, 28, 28, 3 * 784));
  const std::string msg = errorOf([&] { readIdxImages(p); });
  EXPECT_HAS(msg, p);
  EXPECT_HAS(msg, "truncated: expected 3920 bytes of pixel data, found 2352");
  const std::string raw = writeRaw("short", imageFile(2, 28, 28, 100));
  EXPECT_HAS(errorOf([&] { readIdxImages(raw); }), "expected 1568 bytes of pixel data, found 100");
  const std::string hdr = writeRaw("hdr", Bytes{0, 0, 8, 3, 0, 0});
  EXPECT_HAS(errorOf([&] { readIdxImages(hdr); }), "too short for an IDX images header (6 of 16 bytes)");
}

TEST_F(IdxTest, TrailingGarbageIsAnError) {
  const std::string p = writeRaw("long", imageFile(2, 7));
  const std::string msg = errorOf([&] { readIdxImages(p); });
  EXPECT_HAS(msg, p);
  // Refused at the first byte past the declared data: counting them all would inflate whatever
  // a small gzip holds after it.
  EXPECT_HAS(msg, "unexpected bytes after the 1568 bytes of pixel data");
}

TEST_F(IdxTest, WrongMagicAndTypeAreReported) {
  const std::string bad = writeRaw("bad", imageFile(1, 28, 28, 784, 0x12345678));
  std::string msg = errorOf([&] { readIdxImages(bad); });
  EXPECT_HAS(msg, bad);
  EXPECT_HAS(msg, "bad magic number 0x12345678, expected 0x00000803");
  const std::string labelsAsImages = writeRaw("lab", labelFile({1, 2}));
  EXPECT_HAS(errorOf([&] { readIdxImages(labelsAsImages); }), "1 dimensions, expected 3");
  const std::string imagesAsLabels = writeRaw("img", imageFile(1));
  EXPECT_HAS(errorOf([&] { readIdxLabels(imagesAsLabels, 10); }), "3 dimensions, expected 1");
  const std::string floats = writeRaw("f32", imageFile(1, 28, 28, 784, 0x00000D03));
  EXPECT_HAS(errorOf([&] { readIdxImages(floats); }), "unsupported IDX element type 0x0D");
}

TEST_F(IdxTest, DimensionsThatLie) {
  const std::string zero = writeRaw("zero", imageFile(4, 0, 28, 0));
  std::string msg = errorOf([&] { readIdxImages(zero); });
  EXPECT_HAS(msg, zero);
  EXPECT_HAS(msg, "must be non-zero");
  const std::string big = writeRaw("big", imageFile(1, 32, 32, 1024));
  EXPECT_NO_THROW(readIdxImages(big));
  EXPECT_HAS(errorOf([&] { readIdxImages(big, 28, 28); }), "1 images of 32x32, expected 28x28");
  // A header claiming billions of images must fail cleanly, without allocating them.
  const std::string huge = writeRaw("huge", imageFile(0xFFFFFFFFu, 28, 28, 784));
  EXPECT_HAS(errorOf([&] { readIdxImages(huge); }), "more than 4 GiB");
  const std::string lots = writeRaw("lots", imageFile(1000000, 28, 28, 784));
  EXPECT_HAS(errorOf([&] { readIdxImages(lots); }), "truncated: expected 784000000 bytes");
  const std::string labels = writeRaw("labels", labelFile({1, 2, 3}, 5));
  EXPECT_HAS(errorOf([&] { readIdxLabels(labels, 10); }), "expected 5 bytes of label data, found 3");
}

TEST_F(IdxTest, LabelOutOfRange) {
  const std::string p = writeGz("l.gz", labelFile({0, 9, 10, 3}));
  const std::string msg = errorOf([&] { readIdxLabels(p, 10); });
  EXPECT_HAS(msg, p);
  EXPECT_HAS(msg, "label 10 at index 2 is out of range (expected 0..9)");
}

TEST_F(IdxTest, CorruptGzipIsReported) {
  const std::string p = writeGz("c.gz", imageFile(4));
  Bytes gz = readAll(p);
  Bytes crc = gz;
  crc[crc.size() - 8] ^= 0xFF;  // the CRC-32 in the gzip trailer
  const std::string crcPath = writeRaw("crc.gz", crc);
  std::string msg = errorOf([&] { readIdxImages(crcPath); });
  EXPECT_HAS(msg, crcPath);
  EXPECT_HAS(msg, "corrupt gzip data");
  EXPECT_HAS(msg, "incorrect data check");

  Bytes mid = gz;
  mid[mid.size() / 2] ^= 0x5A;  // inside the deflate stream
  const std::string midPath = writeRaw("mid.gz", mid);
  EXPECT_HAS(errorOf([&] { readIdxImages(midPath); }), "corrupt gzip data");

  Bytes cut(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2));
  const std::string cutPath = writeRaw("cut.gz", cut);
  msg = errorOf([&] { readIdxImages(cutPath); });
  EXPECT_HAS(msg, cutPath);
  EXPECT_HAS(msg, "truncated");
}

TEST_F(IdxTest, MissingFileIsNamed) {
  const std::string p = (m_dir / "nope.gz").string();
  const std::string msg = errorOf([&] { readIdxImages(p); });
  EXPECT_HAS(msg, p);
  EXPECT_HAS(msg, "no such file");
}

TEST_F(IdxTest, FakeFashionMnistFolderLoads) {
  writeFakeFmnist(30, 20);
  const DataSplit s = loadFashionMnist(m_dir.string(), "unit");
  EXPECT_EQ(s.train.name, "fmnist/train");
  EXPECT_EQ(s.train.count, 30);
  EXPECT_EQ(s.test.count, 20);
  EXPECT_EQ(s.train.sampleShape, (Shape{1, 28, 28}));
  EXPECT_EQ(s.train.featureSize(), 784);
  ASSERT_EQ(s.train.features.size(), 30u * 784);
  EXPECT_EQ(s.train.numClasses, 10);
  EXPECT_EQ(s.train.classNames.at(0), "T-shirt/top");
  EXPECT_EQ(s.train.classNames.at(9), "Ankle boot");
  EXPECT_EQ(s.train.labels.at(13), 3);
  const Bytes img = imageFile(30);
  EXPECT_FLOAT_EQ(s.train.features[5], img[16 + 5] / 255.0f);
  const DataSplit raw = loadFashionMnist(m_dir.string(), "none");
  EXPECT_EQ(raw.train.features[5], static_cast<float>(img[16 + 5]));
  const DataSplit st = loadFashionMnist(m_dir.string(), "standard");
  EXPECT_FLOAT_EQ(st.train.features[5], (img[16 + 5] / 255.0f - 0.2860f) / 0.3530f);
}

TEST_F(IdxTest, MislabelledFolderNamesBothFiles) {
  writeFakeFmnist(30, 20);
  const std::string labels = writeGz("train-labels-idx1-ubyte.gz", labelFile(cyclicLabels(29)));
  const std::string msg = errorOf([&] { loadFashionMnist(m_dir.string()); });
  EXPECT_HAS(msg, "train-images-idx3-ubyte.gz has 30 images");
  EXPECT_HAS(msg, labels + " has 29 labels");
  EXPECT_HAS(msg, "mislabelled");
  writeGz("train-labels-idx1-ubyte.gz", labelFile(cyclicLabels(30)));
  fs::remove(m_dir / "t10k-images-idx3-ubyte");
  const std::string missing = errorOf([&] { loadFashionMnist(m_dir.string()); });
  EXPECT_HAS(missing, m_dir.string() + ": no t10k-images-idx3-ubyte.gz");
}

TEST_F(IdxTest, LoadDatasetSubsetsAreSeededAndSeparate) {
  writeFakeFmnist(50, 20);
  DataOptions o;
  o.name = "fmnist";
  o.path = m_dir.string();
  o.subset = 10;
  o.seed = 3;
  const DataSplit a = loadDataset(o);
  EXPECT_EQ(a.train.count, 10);
  EXPECT_EQ(a.test.count, 20) << "data.subset cuts the training set only";
  o.testSubset = 10;
  EXPECT_EQ(loadDataset(o).test.count, 10);
  EXPECT_EQ(loadDataset(o).train.features, a.train.features);
  o.seed = 4;
  EXPECT_NE(loadDataset(o).train.features, a.train.features);
  o.subset = 30;
  o.testSubset = 30;  // more than test holds: test stays whole and in file order
  const DataSplit b = loadDataset(o);
  EXPECT_EQ(b.train.count, 30);
  EXPECT_EQ(b.test.count, 20);
  const Bytes fileOrder = cyclicLabels(20);
  EXPECT_EQ(b.test.labels, std::vector<std::int32_t>(fileOrder.begin(), fileOrder.end()));
}

TEST(LoadDataset, BadOptionsNameTheSetting) {
  DataOptions o;
  o.name = "mnist";
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "data.name = 'mnist'");
  o = {};
  o.testFraction = 1.0;
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "data.test_fraction = 1: must be in [0, 1)");
  o = {};
  o.normalize = "zscore";
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "normalize = 'zscore'");
  o = {};
  o.subset = -1;
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "subset = -1");
  o = {};
  o.width = 0;
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "width = 0");
  o = {};
  o.name = "blobs";
  o.classes = 1;
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "classes = 1");
  o = {};
  o.name = "fmnist";
  o.path = "/nonexistent/fmnist";
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "data.path: /nonexistent/fmnist: no such folder");
  o = {};
  o.name = "csv";
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "path");
}

TEST(SyntheticData, RecipeShapesAndDeterminism) {
  DataOptions o;  // defaults: 50 batches of 256 x 1024
  o.batches = 4;
  o.batchSize = 8;
  o.width = 16;
  o.seed = 7;
  const DataSplit a = loadDataset(o);
  EXPECT_EQ(a.train.count, 32);
  EXPECT_EQ(a.train.sampleShape, (Shape{16}));
  EXPECT_EQ(a.train.targetDim, 16);
  EXPECT_EQ(a.train.features.size(), 32u * 16);
  EXPECT_EQ(a.train.targets.size(), 32u * 16);
  EXPECT_FALSE(a.train.isClassification());
  EXPECT_TRUE(a.train.labels.empty());
  EXPECT_EQ(a.test.count, 0);
  EXPECT_EQ(a.test.sampleShape, (Shape{16}));
  EXPECT_EQ(loadDataset(o).train.features, a.train.features);
  o.targetWidth = 3;  // inputs come from their own stream: unchanged by the target width
  const DataSplit b = loadDataset(o);
  EXPECT_EQ(b.train.targetDim, 3);
  EXPECT_EQ(b.train.features, a.train.features);
  o.seed = 8;
  EXPECT_NE(loadDataset(o).train.features, a.train.features);
}

TEST(SyntheticData, DefaultRecipeIsStandardNormal) {
  const DataSplit s = loadDataset(DataOptions{});
  ASSERT_EQ(s.train.count, 50 * 256);
  double sum = 0, sq = 0;
  for (float v : s.train.features) sum += v, sq += double(v) * v;
  const double n = static_cast<double>(s.train.features.size());
  EXPECT_NEAR(sum / n, 0.0, 0.002);
  EXPECT_NEAR(sq / n, 1.0, 0.003);
}

TEST(FashionMnist, RealFilesLoad) {
  if (!fs::exists(kFashionMnistDir)) GTEST_SKIP() << kFashionMnistDir << " not installed";
  DataOptions o;
  o.name = "fmnist";
  const auto t0 = std::chrono::steady_clock::now();
  const DataSplit s = loadDataset(o);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("full Fashion-MNIST load: %.0f ms\n", ms);
  ASSERT_EQ(s.train.count, 60000);
  ASSERT_EQ(s.test.count, 10000);
  EXPECT_EQ(s.train.features.size(), 60000u * 784);
  float lo = 1e9f, hi = -1e9f;
  for (float v : s.train.features) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  std::vector<int> trainHist(10), testHist(10);
  for (auto l : s.train.labels) ++trainHist.at(l);
  for (auto l : s.test.labels) ++testHist.at(l);
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(trainHist[c], 6000) << "class " << c;
    EXPECT_EQ(testHist[c], 1000) << "class " << c;
  }
  // The "standard" constants are the train set's own mean/std of x/255.
  double sum = 0, sq = 0;
  for (float v : s.train.features) sum += v, sq += double(v) * v;
  const double n = static_cast<double>(s.train.features.size());
  EXPECT_NEAR(sum / n, 0.2860, 5e-4);
  EXPECT_NEAR(std::sqrt(sq / n - (sum / n) * (sum / n)), 0.3530, 5e-4);
}

}  // namespace
