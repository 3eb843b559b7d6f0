// CIFAR-10 and padded Fashion-MNIST through loadDataset, and the image data keys of the config:
// files written here with known pixels and labels, checked against the channel-major layout,
// hand-computed means and standard deviations, and exact one-line errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <fstream>

#include "engine/config/config_schema.h"
#include "engine/data/cifar10_reader.h"
#include "engine/data/dataset.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace amp;
using Bytes = std::vector<std::uint8_t>;

namespace {

const auto errorOf = test::messageOf<DataError>;

void writeFile(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Record `r` of a file: its pixel at channel c, row y, column x.
std::uint8_t cifarPixel(int r, int c, int y, int x) { return static_cast<std::uint8_t>((r * 31 + c * 101 + y * 7 + x * 3) % 251); }

// `count` records starting at global record number `first`, labels (first + i + shift) % 10.
Bytes cifarRecords(int first, int count, int shift = 0) {
  Bytes b;
  for (int i = 0; i < count; ++i) {
    const int r = first + i;
    b.push_back(static_cast<std::uint8_t>((r + shift) % 10));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) b.push_back(cifarPixel(r, c, y, x));
  }
  return b;
}

class CifarTest : public test::ScratchDirTest {
 protected:
  // Five training files of `perFile` records (numbered 0.. across the files) and a test file of
  // `testCount` records (numbered from 1000, labels shifted by 3).
  fs::path writeCifar(const fs::path& dir, int perFile = 2, int testCount = 3) {
    fs::create_directories(dir);
    for (int f = 0; f < 5; ++f)
      writeFile(dir / ("data_batch_" + std::to_string(f + 1) + ".bin"), cifarRecords(f * perFile, perFile));
    writeFile(dir / "test_batch.bin", cifarRecords(1000, testCount, 3));
    return dir;
  }
  DataOptions options(const fs::path& dir) {
    DataOptions o;
    o.name = "cifar10";
    o.path = dir.string();
    return o;
  }
};

TEST_F(CifarTest, RecordsBecomeChannelMajorSamplesWithTheirLabelsAndNames) {
  const DataSplit s = loadDataset(options(writeCifar(m_dir)));
  EXPECT_EQ(s.train.name, "cifar10/train");
  EXPECT_EQ(s.test.name, "cifar10/test");
  ASSERT_EQ(s.train.count, 10);
  ASSERT_EQ(s.test.count, 3);
  EXPECT_EQ(s.train.sampleShape, (Shape{3, 32, 32}));
  EXPECT_EQ(s.train.numClasses, 10);
  EXPECT_EQ(s.train.classNames, (std::vector<std::string>{"airplane", "automobile", "bird", "cat", "deer", "dog",
                                                           "frog", "horse", "ship", "truck"}));
  EXPECT_TRUE(s.train.channelMean.empty());  // unit: nothing subtracted
  // Train samples in file order (batch 1's records, then batch 2's, ...), test likewise.
  for (int r = 0; r < 10; ++r) {
    EXPECT_EQ(s.train.labels[r], r % 10);
    for (int c = 0; c < 3; ++c)
      for (int y : {0, 5, 31})
        for (int x : {0, 17, 31})
          ASSERT_EQ(s.train.features[r * 3072 + c * 1024 + y * 32 + x], cifarPixel(r, c, y, x) / 255.0f)
              << "record " << r << " c" << c << " y" << y << " x" << x;
  }
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(s.test.labels[r], (1000 + r + 3) % 10);
    EXPECT_EQ(s.test.features[r * 3072 + 2 * 1024 + 31 * 32 + 30], cifarPixel(1000 + r, 2, 31, 30) / 255.0f);
  }
  // normalize=none: the raw byte values.
  DataOptions o = options(m_dir);
  o.normalize = "none";
  EXPECT_EQ(loadDataset(o).train.features[5 * 3072 + 1024 + 3 * 32 + 4], float(cifarPixel(5, 1, 3, 4)));
}

TEST_F(CifarTest, StandardUsesTheTrainingSplitsChannelMeanAndPopulationStd) {
  // Training pixels by hand: red alternates 0 and 255 (mean 0.5, std 0.5), green is 51 everywhere
  // (mean 0.2, std 0: centred only), blue alternates 0 and 102 (0 and 0.4: mean 0.2, std 0.2).
  auto record = [](std::uint8_t label, auto r, auto g, auto b) {
    Bytes rec = {label};
    for (auto f : {std::function<std::uint8_t(int)>(r), std::function<std::uint8_t(int)>(g),
                   std::function<std::uint8_t(int)>(b)})
      for (int k = 0; k < 1024; ++k) rec.push_back(f(k));
    return rec;
  };
  const Bytes train = record(1, [](int k) { return k % 2 ? 255 : 0; }, [](int) { return 51; },
                             [](int k) { return k % 2 ? 102 : 0; });
  fs::create_directories(m_dir / "c");
  for (int f = 1; f <= 5; ++f) writeFile(m_dir / "c" / ("data_batch_" + std::to_string(f) + ".bin"), train);
  // The test image is far from the training statistics; it must not move them.
  writeFile(m_dir / "c" / "test_batch.bin", record(2, [](int) { return 255; }, [](int) { return 0; }, [](int) { return 51; }));
  DataOptions o = options(m_dir / "c");
  o.normalize = "standard";
  const DataSplit s = loadDataset(o);
  ASSERT_EQ(s.train.channelMean.size(), 3u);
  ASSERT_EQ(s.test.channelStd.size(), 3u);
  const double mean[3] = {0.5, 0.2, 0.2}, sd[3] = {0.5, 0.0, 0.2};
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(s.train.channelMean[c], mean[c], 1e-12);
    EXPECT_NEAR(s.train.channelStd[c], sd[c], 1e-12);
    EXPECT_EQ(s.test.channelMean[c], s.train.channelMean[c]);
  }
  // torchvision's float arithmetic: (x/255 - mean) / std, std 0 -> 1.
  auto norm = [&](int v, int c) {
    const float m = static_cast<float>(s.train.channelMean[c]);
    const float d = c == 1 ? 1.0f : static_cast<float>(s.train.channelStd[c]);
    return (static_cast<float>(v) / 255.0f - m) / d;
  };
  EXPECT_EQ(s.train.features[0], norm(0, 0));
  EXPECT_EQ(s.train.features[1], norm(255, 0));
  EXPECT_EQ(s.train.features[1024], norm(51, 1));
  EXPECT_EQ(s.train.features[2048 + 1], norm(102, 2));
  EXPECT_NEAR(s.train.features[1], 1.0f, 1e-6);
  EXPECT_NEAR(s.train.features[2048 + 1], 1.0f, 1e-6);
  EXPECT_EQ(s.test.features[0], norm(255, 0));
  EXPECT_NEAR(s.test.features[0], 1.0f, 1e-6);
  EXPECT_NEAR(s.test.features[1024], -0.2f, 1e-6);
  EXPECT_NEAR(s.test.features[2048], 0.0f, 1e-6);
}

TEST_F(CifarTest, PaddingIsPixelZeroNormalisedLikeAnyPixel) {
  DataOptions o = options(writeCifar(m_dir));
  o.padTo = 40;  // 4 on each side
  o.normalize = "standard";
  const DataSplit s = loadDataset(o);
  ASSERT_EQ(s.train.sampleShape, (Shape{3, 40, 40}));
  for (int c = 0; c < 3; ++c) {
    const float zero = (0.0f - static_cast<float>(s.train.channelMean[c])) / static_cast<float>(s.train.channelStd[c]);
    const float* img = s.train.features.data() + 7 * 3 * 1600 + c * 1600;
    EXPECT_EQ(img[0], zero);
    EXPECT_EQ(img[3 * 40 + 20], zero);
    EXPECT_EQ(img[39 * 40 + 39], zero);
    EXPECT_EQ(img[20 * 40 + 36], zero);
    const float v = (cifarPixel(7, c, 0, 0) / 255.0f - static_cast<float>(s.train.channelMean[c])) /
                    static_cast<float>(s.train.channelStd[c]);
    EXPECT_EQ(img[4 * 40 + 4], v);
  }
  o.padTo = 31;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }),
            "data.pad_to = 31: smaller than the 32x32 images of cifar10 (0 = no padding)");
}

TEST_F(CifarTest, AcceptsTheArchivesParentFolder) {
  writeCifar(m_dir / "cifar-10-batches-bin");
  EXPECT_EQ(loadDataset(options(m_dir)).train.count, 10);
}

TEST_F(CifarTest, BrokenFilesGiveOneLineNamingTheFile) {
  const fs::path dir = writeCifar(m_dir, 20, 10);
  // 10 records less 3 bytes.
  const std::string test = (dir / "test_batch.bin").string();
  fs::resize_file(test, 10 * 3073 - 3);
  EXPECT_EQ(errorOf([&] { loadDataset(options(dir)); }),
            "data.path: " + test + ": 30727 bytes is not a whole number of 3073-byte records (truncated, or not a "
            "CIFAR-10 file)");
  writeFile(test, cifarRecords(1000, 10));
  // Record 17 of data_batch_2.bin labelled 12.
  const std::string batch2 = (dir / "data_batch_2.bin").string();
  Bytes b = cifarRecords(20, 20);
  b[17 * 3073] = 12;
  writeFile(batch2, b);
  EXPECT_EQ(errorOf([&] { loadDataset(options(dir)); }),
            "data.path: " + batch2 + ": record 17 has label 12 (CIFAR-10 labels are 0-9; the record starts at byte 52241)");
  writeFile(batch2, {});
  EXPECT_EQ(errorOf([&] { loadDataset(options(dir)); }),
            "data.path: " + batch2 + ": empty file (0 bytes), expected 3073-byte CIFAR-10 records");
  fs::remove(batch2);
  EXPECT_EQ(errorOf([&] { loadDataset(options(dir)); }),
            "data.path: " + batch2 + ": no such file (CIFAR-10's binary version has data_batch_1.bin ... "
            "data_batch_5.bin and test_batch.bin in one folder)");
  ASSERT_EQ(::mkfifo(batch2.c_str(), 0600), 0);  // must not block
  EXPECT_HAS(errorOf([&] { loadDataset(options(dir)); }), batch2 + ": not a regular file (a pipe)");
  EXPECT_EQ(errorOf([&] { loadDataset(options(m_dir / "nowhere")); }),
            "data.path: " + (m_dir / "nowhere").string() +
                ": no such folder (the CIFAR-10 path is the folder holding data_batch_1.bin ... test_batch.bin, or "
                "the one holding cifar-10-batches-bin/)");
  fs::create_directories(m_dir / "empty");
  EXPECT_EQ(errorOf([&] { loadDataset(options(m_dir / "empty")); }),
            "data.path: " + (m_dir / "empty").string() +
                ": no CIFAR-10 files here or in cifar-10-batches-bin/ (the binary version's data_batch_1.bin ... "
                "data_batch_5.bin and test_batch.bin)");
  DataOptions o;
  o.name = "cifar10";
  EXPECT_EQ(errorOf([&] { loadDataset(o); }),
            "data.path = '': the cifar10 data set needs the folder holding data_batch_1.bin ... test_batch.bin");
}

TEST_F(CifarTest, ParserRefusesWhatIsNotWholeRecords) {
  EXPECT_EQ(errorOf([] { parseCifar10Records(std::string(3074, '\0'), "x.bin"); }),
            "x.bin: 3074 bytes is not a whole number of 3073-byte records (truncated, or not a CIFAR-10 file)");
  std::string one(3073, '\x07');
  one[0] = 9;
  const ImageSet s = parseCifar10Records(one, "x.bin");
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.labels, (std::vector<std::int32_t>{9}));
  EXPECT_EQ(s.pixels, Bytes(3072, 7));
}

// ---- Fashion-MNIST padded ---------------------------------------------------------------------

void putBe32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

std::uint8_t fmnistPixel(int i, int k) { return static_cast<std::uint8_t>((i * 7 + k * 13) % 256); }

void writeFakeFmnist(const fs::path& dir, const std::string& prefix, int n) {
  Bytes img, lab;
  putBe32(img, 0x803);
  putBe32(img, n);
  putBe32(img, 28);
  putBe32(img, 28);
  putBe32(lab, 0x801);
  putBe32(lab, n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 784; ++k) img.push_back(fmnistPixel(i, k));
    lab.push_back(static_cast<std::uint8_t>(i % 10));
  }
  writeFile(dir / (prefix + "-images-idx3-ubyte"), img);
  writeFile(dir / (prefix + "-labels-idx1-ubyte"), lab);
}

class FmnistPadTest : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    writeFakeFmnist(m_dir, "train", 5);
    writeFakeFmnist(m_dir, "t10k", 3);
  }
};

TEST_F(FmnistPadTest, PaddingTo32IsFPadOnXOver255BeforeNormalising) {
  DataOptions o;
  o.name = "fmnist";
  o.path = m_dir.string();
  o.normalize = "standard";
  o.padTo = 32;
  const DataSplit s = loadDataset(o);
  ASSERT_EQ(s.train.sampleShape, (Shape{1, 32, 32}));
  ASSERT_EQ(s.train.features.size(), 5u * 1024);
  EXPECT_EQ(s.train.channelMean, (std::vector<double>{0.2860}));
  EXPECT_EQ(s.train.channelStd, (std::vector<double>{0.3530}));
  // The peer: x = F.pad(x / 255, (2, 2, 2, 2)); (x - 0.2860) / 0.3530.
  const float border = (0.0f - 0.2860f) / 0.3530f;
  for (int i = 0; i < 5; ++i)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        const float got = s.train.features[i * 1024 + y * 32 + x];
        const bool inside = y >= 2 && y < 30 && x >= 2 && x < 30;
        const float want = inside ? (fmnistPixel(i, (y - 2) * 28 + (x - 2)) / 255.0f - 0.2860f) / 0.3530f : border;
        ASSERT_EQ(got, want) << "image " << i << " y " << y << " x " << x;
      }
  EXPECT_EQ(s.test.sampleShape, (Shape{1, 32, 32}));
  // unit: the border is 0; an odd difference puts the extra row and column at the bottom/right.
  o.normalize = "unit";
  o.padTo = 31;
  const DataSplit odd = loadDataset(o);
  EXPECT_EQ(odd.train.features[0], 0.0f);
  EXPECT_EQ(odd.train.features[1 * 31 + 1], fmnistPixel(0, 0) / 255.0f);
  EXPECT_EQ(odd.train.features[28 * 31 + 28], fmnistPixel(0, 27 * 28 + 27) / 255.0f);
  EXPECT_EQ(odd.train.features[29 * 31 + 29], 0.0f);
  EXPECT_TRUE(odd.train.channelMean.empty());
  o.padTo = 27;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }),
            "data.pad_to = 27: smaller than the 28x28 images of fmnist (0 = no padding)");
}

TEST(FmnistPadInstalled, PaddedInteriorEqualsTheUnpaddedImages) {
  if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashionMnistDir;
  DataOptions o;
  o.name = "fmnist";
  o.subset = 0;
  const DataSplit plain = loadDataset(o);
  o.padTo = 32;
  const DataSplit padded = loadDataset(o);
  ASSERT_EQ(padded.train.count, 60000);
  ASSERT_EQ(padded.test.count, 10000);
  for (std::int64_t i : {0L, 12345L, 59999L})
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        const bool inside = y >= 2 && y < 30 && x >= 2 && x < 30;
        const float want = inside ? plain.train.features[i * 784 + (y - 2) * 28 + (x - 2)] : 0.0f;
        ASSERT_EQ(padded.train.features[i * 1024 + y * 32 + x], want);
      }
  EXPECT_EQ(padded.train.labels, plain.train.labels);
}

// ---- config keys ------------------------------------------------------------------------------

TEST(ImageDataKeys, DefaultsRoundTripAndOverridesStick) {
  const RunConfig defaults;
  std::map<std::string, std::string> flat;
  for (const auto& [k, v] : flattenConfig(defaults)) flat[k] = v;
  EXPECT_EQ(flat.at("data.test_path"), "");
  EXPECT_EQ(flat.at("data.image_size"), "32");
  EXPECT_EQ(flat.at("data.channels"), "3");
  EXPECT_EQ(flat.at("data.pad_to"), "0");
  EXPECT_EQ(flat.at("data.augment_crop"), "0");
  EXPECT_EQ(flat.at("data.augment_flip"), "false");
  EXPECT_EQ(flat.at("data.cache"), "on");
  const std::vector<std::string> names = findConfigKey("data.name")->choices;
  EXPECT_NE(std::find(names.begin(), names.end(), "cifar10"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "images"), names.end());

  RunConfig c;
  const std::vector<std::pair<std::string, std::string>> set = {
      {"data.name", "images"}, {"data.test_path", "/data/pets/test"}, {"data.image_size", "64"},
      {"data.channels", "1"}, {"data.pad_to", "72"}, {"data.augment_crop", "4"}, {"data.augment_flip", "true"},
      {"data.cache", "off"}};
  for (const auto& [k, v] : set) setConfigValue(c, k, v);
  EXPECT_EQ(c.data.testPath, "/data/pets/test");
  EXPECT_EQ(c.data.imageSize, 64);
  EXPECT_EQ(c.data.channels, 1);
  EXPECT_EQ(c.data.padTo, 72);
  EXPECT_EQ(c.data.augmentCrop, 4);
  EXPECT_TRUE(c.data.augmentFlip);
  EXPECT_EQ(c.data.cache, "off");
  RunConfig copy;
  for (const auto& [k, v] : flattenConfig(c)) setConfigValue(copy, k, v);
  EXPECT_EQ(flattenConfig(copy), flattenConfig(c));
  EXPECT_FALSE(validateRunConfig(c));
}

TEST(ImageDataKeys, BadValuesNameTheKeyInOneLine) {
  const auto configError = test::messageOf<ConfigError>;
  RunConfig c;
  EXPECT_EQ(configError([&] { setConfigValue(c, "data.image_size", "big"); }),
            "data.image_size: expected an integer, got 'big'");
  EXPECT_EQ(configError([&] { setConfigValue(c, "data.cache", "maybe"); }),
            "data.cache: expected one of on | off, got 'maybe'");
  EXPECT_EQ(configError([&] { setConfigValue(c, "data.augment_flip", "sometimes"); }),
            "data.augment_flip: expected true or false, got 'sometimes'");
  EXPECT_HAS(configError([&] { setConfigValue(c, "data.channels", "99999999999"); }), "data.channels: expected an integer from");
  EXPECT_EQ(configError([&] { setConfigValue(c, "data.name", "cifar100"); }),
            "data.name: expected one of synthetic | fmnist | cifar10 | images | spirals | circles | blobs | csv | text | "
            "copy | reverse | sort | add | external, got "
            "'cifar100'");
  auto problem = [](auto change) {
    RunConfig r;
    change(r);
    return validateRunConfig(r).value_or("(valid)");
  };
  EXPECT_EQ(problem([](RunConfig& r) { r.data.imageSize = 0; }), "data.image_size must be from 1 to 1024, got 0");
  EXPECT_EQ(problem([](RunConfig& r) { r.data.imageSize = 1025; }), "data.image_size must be from 1 to 1024, got 1025");
  EXPECT_EQ(problem([](RunConfig& r) { r.data.channels = 2; }), "data.channels must be 3 (RGB) or 1 (grayscale), got 2");
  EXPECT_EQ(problem([](RunConfig& r) { r.data.padTo = -1; }), "data.pad_to must be from 0 (off) to 4096, got -1");
  EXPECT_EQ(problem([](RunConfig& r) { r.data.augmentCrop = 2000; }),
            "data.augment_crop must be from 0 (off) to 1024, got 2000");
}

TEST(ImageDataKeys, PaddingAndAugmentationAreRefusedForDataThatAreNotImages) {
  DataOptions o;
  o.name = "spirals";
  o.augmentCrop = 4;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }), "data.augment_crop = 4: only image data (fmnist, cifar10, images) can be cropped");
  o.augmentCrop = 0;
  o.augmentFlip = true;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }), "data.augment_flip = true: only image data (fmnist, cifar10, images) can be flipped");
  o.augmentFlip = false;
  o.padTo = 32;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }), "data.pad_to = 32: only image data (fmnist, cifar10, images) can be padded");
  o.padTo = 0;
  o.name = "images";
  EXPECT_EQ(errorOf([&] { loadDataset(o); }),
            "data.path = '': the images data set needs its training folder (one sub-folder per class)");
  o.path = "/x";
  o.imageSize = 0;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }), "data.image_size = 0: must be from 1 to 1024 (pixels a side)");
  o.imageSize = 32;
  o.channels = 4;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }), "data.channels = 4: must be 3 (RGB) or 1 (grayscale)");
}

}  // namespace
