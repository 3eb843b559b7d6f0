// Image folders: listing rules, the train/test split or test folder, one-line errors naming the
// file, the decode cache (hits, stale and corrupt entries, an unwritable cache folder), the
// normalisation statistics, and the memory refusal before any decode. The images are written
// here with libpng (image_folder_fixture.h), so the expected pixels are known independently.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "engine/config/config_schema.h"
#include "engine/data/image_cache.h"
#include "engine/data/image_dataset.h"
#include "engine/data/image_decode.h"
#include "engine/data/image_folder.h"
#include "engine/data/image_resize.h"
#include "engine/train/memory_estimate.h"
#include "image_folder_fixture.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace amp;
using Bytes = std::vector<std::uint8_t>;

namespace {

const auto errorOf = test::messageOf<DataError>;

class ImageFolderTest : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    m_cache = m_dir / "cache";
    ::setenv("AMP_IMAGE_CACHE_DIR", m_cache.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("AMP_IMAGE_CACHE_DIR");
    test::ScratchDirTest::TearDown();
  }
  DataOptions options(const fs::path& dir, int size = 8) {
    DataOptions o;
    o.name = "images";
    o.path = dir.string();
    o.imageSize = size;
    o.seed = 5;
    return o;
  }
  std::vector<fs::path> cacheFiles() {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(m_cache, ec)) out.push_back(e.path());
    return out;
  }
  // The images writeImageFolder wrote, regenerated in the same order: class by class, CHW.
  std::vector<Bytes> expectedImages(int classes, int perClass, int size, std::uint64_t seed) {
    Rng rng(seed, 0x1F01DE7);
    std::vector<Bytes> out;
    for (int k = 0; k < classes; ++k)
      for (int i = 0; i < perClass; ++i) {
        const Bytes hwc = test::gratingImage(k, classes, size, rng);
        Bytes chw(hwc.size());
        for (int p = 0; p < size * size; ++p)
          for (int c = 0; c < 3; ++c) chw[c * size * size + p] = hwc[p * 3 + c];
        out.push_back(chw);
      }
    return out;
  }
  fs::path m_cache;
};

TEST_F(ImageFolderTest, ListsClassesSortedAndSkipsHiddenEntries) {
  const auto names = test::writeImageFolder(m_dir / "train", 3, 2, 8, 1);
  EXPECT_EQ(names, (std::vector<std::string>{"class_00", "class_01", "class_02"}));
  fs::create_directories(m_dir / "train" / ".thumbnails");
  test::writeBytes(m_dir / "train" / ".thumbnails" / "junk", {1, 2, 3});
  test::writeBytes(m_dir / "train" / "class_01" / ".DS_Store", {1, 2, 3});
  test::writeBytes(m_dir / "train" / "README.txt", {'h', 'i'});  // beside the classes: no class
  // A nested folder inside a class is walked, in name order with the files.
  fs::create_directories(m_dir / "train" / "class_02" / "001b");
  fs::copy_file(m_dir / "train" / "class_02" / "000.png", m_dir / "train" / "class_02" / "001b" / "x.png");
  const ImageFolderListing l = listImageFolder((m_dir / "train").string());
  EXPECT_EQ(l.classNames, names);
  EXPECT_EQ(l.perClass, (std::vector<std::int64_t>{2, 2, 3}));
  std::vector<std::string> rel;
  for (const auto& f : l.files) rel.push_back(f.relative);
  EXPECT_EQ(rel, (std::vector<std::string>{"class_00/000.png", "class_00/001.png", "class_01/000.png", "class_01/001.png",
                                           "class_02/000.png", "class_02/001.png", "class_02/001b/x.png"}));
  EXPECT_EQ(l.files[4].label, 2);
  EXPECT_EQ(l.files[4].bytes, static_cast<std::int64_t>(fs::file_size(m_dir / "train" / "class_02" / "000.png")));
}

TEST_F(ImageFolderTest, LoadsTheWrittenPixelsChannelMajorInListingOrder) {
  test::writeImageFolder(m_dir / "train", 3, 4, 8, 7);
  const ImageFolderListing l = listImageFolder((m_dir / "train").string());
  const LoadedImages got = loadImageFolder(l, 8, 3, false);
  ASSERT_EQ(got.images.count, 12);
  EXPECT_EQ(got.images.channels, 3);
  EXPECT_EQ(got.images.height, 8);
  const auto want = expectedImages(3, 4, 8, 7);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(got.images.labels[i], i / 4);
    EXPECT_EQ(Bytes(got.images.pixels.begin() + i * 192, got.images.pixels.begin() + (i + 1) * 192), want[i]) << i;
  }
  // Resized: what resizeImage makes of the decoded image.
  const LoadedImages small = loadImageFolder(l, 5, 1, false);
  const DecodedImage first = decodeImageFile(l.files[0].path, 1);
  EXPECT_EQ(Bytes(small.images.pixels.begin(), small.images.pixels.begin() + 25),
            resizeImage(first.pixels.data(), 8, 8, 1, 5, 5));
}

TEST_F(ImageFolderTest, HeldOutShareIsStratifiedAndTheDatasetShapesFollowTheOptions) {
  test::writeImageFolder(m_dir / "pets", 3, 8, 8, 2);
  DataOptions o = options(m_dir / "pets", 6);
  o.testFraction = 0.25;
  o.channels = 1;
  const DataSplit s = loadDataset(o);
  EXPECT_EQ(s.train.name, "pets/train");
  EXPECT_EQ(s.test.name, "pets/test");
  EXPECT_EQ(s.train.sampleShape, (Shape{1, 6, 6}));
  EXPECT_EQ(s.train.count, 18);
  EXPECT_EQ(s.test.count, 6);
  EXPECT_EQ(s.train.classNames, (std::vector<std::string>{"class_00", "class_01", "class_02"}));
  std::vector<int> perClass(3, 0);
  for (int label : s.test.labels) ++perClass[label];
  EXPECT_EQ(perClass, (std::vector<int>{2, 2, 2}));
  // The same seed splits the same way; the plan (listing only) agrees with the load.
  EXPECT_EQ(loadDataset(o).test.features, s.test.features);
  o.subset = 10;
  const ImageDataPlan plan = *planImageData(o);
  EXPECT_EQ(plan.sample, (Shape{1, 6, 6}));
  EXPECT_EQ(plan.classes, 3);
  EXPECT_EQ(plan.trainCount, 10);
  EXPECT_EQ(plan.testCount, 6);
  const DataSplit sub = loadDataset(o);
  EXPECT_EQ(sub.train.count, plan.trainCount);
  EXPECT_EQ(sub.test.count, plan.testCount);
}

TEST_F(ImageFolderTest, StandardStatisticsAreTheTrainingSplitsPerChannel) {
  test::writeImageFolder(m_dir / "train", 2, 6, 8, 3);
  DataOptions o = options(m_dir / "train");
  o.testFraction = 0.5;
  const DataSplit unit = loadDataset(o);
  o.normalize = "standard";
  const DataSplit standard = loadDataset(o);
  // Independently: mean and population std of x/255 over the training features, in double.
  for (int c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    const std::int64_t n = unit.train.count * 64;
    for (std::int64_t i = 0; i < unit.train.count; ++i)
      for (int k = 0; k < 64; ++k) sum += unit.train.features[i * 192 + c * 64 + k];
    const double mean = sum / n;
    for (std::int64_t i = 0; i < unit.train.count; ++i)
      for (int k = 0; k < 64; ++k) sq += std::pow(unit.train.features[i * 192 + c * 64 + k] - mean, 2);
    EXPECT_NEAR(standard.train.channelMean[c], mean, 1e-6);
    EXPECT_NEAR(standard.train.channelStd[c], std::sqrt(sq / n), 1e-6);
    const float m = static_cast<float>(standard.train.channelMean[c]), d = static_cast<float>(standard.train.channelStd[c]);
    EXPECT_EQ(standard.test.features[c * 64 + 5], (unit.test.features[c * 64 + 5] - m) / d);
  }
}

TEST_F(ImageFolderTest, ASeparateTestFolderMayLackClassesNotAddThem) {
  test::writeImageFolder(m_dir / "train", 3, 3, 8, 1);
  test::writeImageFolder(m_dir / "test", 3, 2, 8, 9);
  fs::remove_all(m_dir / "test" / "class_00");
  DataOptions o = options(m_dir / "train");
  o.testPath = (m_dir / "test").string();
  const DataSplit s = loadDataset(o);
  EXPECT_EQ(s.train.count, 9);
  ASSERT_EQ(s.test.count, 4);
  std::vector<int> perClass(3, 0);
  for (int label : s.test.labels) ++perClass[label];
  EXPECT_EQ(perClass, (std::vector<int>{0, 2, 2}));  // numbered as the training folder numbers them
  const fs::path bad = m_dir / "test" / "class_02" / "001.png";
  test::writeBytes(bad, {'G', 'I', 'F', '8'});
  EXPECT_EQ(errorOf([&] { loadDataset(o); }), "data.test_path: " + bad.string() + ": not a PNG or JPEG image");
  fs::remove(bad);
  fs::create_directories(m_dir / "test" / "zebra");
  fs::copy_file(m_dir / "test" / "class_01" / "000.png", m_dir / "test" / "zebra" / "000.png");
  EXPECT_EQ(errorOf([&] { loadDataset(o); }),
            "data.test_path: " + (m_dir / "test" / "zebra").string() +
                ": class 'zebra' is not in the training folder (its classes: class_00, class_01, class_02)");
}

TEST_F(ImageFolderTest, BadFoldersAndFilesGiveOneLineNamingThem) {
  const fs::path train = m_dir / "train";
  EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }),
            "data.path: " + train.string() + ": no such folder (an image folder holds one sub-folder per class)");
  fs::create_directories(train);
  EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }),
            "data.path: " + train.string() + ": no class sub-folders (an image folder holds one sub-folder per class)");
  test::writeImageFolder(train, 1, 2, 8, 1);
  EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }),
            "data.path: " + train.string() + ": only one class sub-folder ('class_00'); a classifier needs at least two");
  fs::create_directories(train / "empty");
  EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }),
            "data.path: " + (train / "empty").string() + ": no images in this class folder (every class needs at least one)");
  test::writeImageFolder(train, 2, 12, 8, 1);
  fs::remove(train / "empty");
  // Two bad files: the first in listing order is named, whichever thread met which first.
  const fs::path notes = train / "class_00" / "005.png", cut = train / "class_01" / "003.png";
  test::writeBytes(notes, {'n', 'o', 't', 'e', 's'});
  test::writeBytes(cut, Bytes(100, 0x89));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }), "data.path: " + notes.string() + ": not a PNG or JPEG image");
  fs::remove(notes);
  EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }), "data.path: " + cut.string() + ": not a PNG or JPEG image");
  Bytes png;
  {
    std::ifstream in(train / "class_01" / "004.png", std::ios::binary);
    png.assign(std::istreambuf_iterator<char>(in), {});
  }
  test::writeBytes(cut, Bytes(png.begin(), png.begin() + static_cast<long>(png.size()) - 30));
  const std::string m = errorOf([&] { loadDataset(options(train)); });
  EXPECT_EQ(m.rfind("data.path: " + cut.string() + ": PNG: ", 0), 0u) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  fs::remove(cut);
  ASSERT_EQ(::mkfifo(cut.c_str(), 0600), 0);
  EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }),
            "data.path: " + cut.string() + ": not a regular file (a pipe), not an image");
  fs::remove(cut);
  fs::create_symlink(train / "nowhere.png", cut);
  EXPECT_EQ(errorOf([&] { loadDataset(options(train)); }),
            "data.path: " + cut.string() + ": no such file (a dangling symbolic link?)");
  fs::remove(cut);
  fs::create_directory_symlink(train / "class_01", train / "class_01" / "loop");
  EXPECT_HAS(errorOf([&] { loadDataset(options(train)); }), "nested more than 16 folders deep (a symbolic-link loop?)");
}

// ---- the cache --------------------------------------------------------------------------------

TEST_F(ImageFolderTest, SecondLoadReadsTheCacheNotTheFiles) {
  test::writeImageFolder(m_dir / "train", 2, 5, 8, 4);
  const ImageFolderListing l = listImageFolder((m_dir / "train").string());
  const std::int64_t before = imageDecodeCount();
  const LoadedImages first = loadImageFolder(l, 8, 3, true);
  EXPECT_EQ(first.source, ImageSource::Decoded);
  EXPECT_EQ(imageDecodeCount() - before, 10);
  ASSERT_EQ(cacheFiles().size(), 1u);
  EXPECT_EQ(cacheFiles()[0], fs::path(imageCachePath(imageCacheKey(l, 8, 3))));
  EXPECT_EQ(static_cast<std::int64_t>(fs::file_size(cacheFiles()[0])), kImageCacheHeaderBytes + 10 * 192);
  const LoadedImages second = loadImageFolder(l, 8, 3, true);
  EXPECT_EQ(second.source, ImageSource::Cache);
  EXPECT_EQ(imageDecodeCount() - before, 10);  // nothing decoded again
  EXPECT_EQ(second.images.pixels, first.images.pixels);
  EXPECT_EQ(second.images.labels, first.images.labels);

  // Proof that the pixels come from the cache: rewrite an image with other pixels but the same
  // size and modification time (which the key hashes); the cached pixels come back.
  const fs::path img = m_dir / "train" / "class_01" / "002.png";
  struct stat st {};
  ASSERT_EQ(::stat(img.c_str(), &st), 0);
  test::writePng8(img, 8, 8, 3, Bytes(192, 0));
  fs::resize_file(img, static_cast<std::uintmax_t>(st.st_size));  // same length (a broken PNG, never read)
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, img.c_str(), times, 0), 0);
  const ImageFolderListing same = listImageFolder((m_dir / "train").string());
  EXPECT_EQ(imageCacheKey(same, 8, 3), imageCacheKey(l, 8, 3));
  EXPECT_EQ(loadImageFolder(same, 8, 3, true).images.pixels, first.images.pixels);
  // Another size or channel count is another entry.
  EXPECT_NE(imageCacheKey(l, 9, 3), imageCacheKey(l, 8, 3));
  EXPECT_NE(imageCacheKey(l, 8, 1), imageCacheKey(l, 8, 3));
}

TEST_F(ImageFolderTest, AChangedFolderIsDecodedAgain) {
  test::writeImageFolder(m_dir / "train", 2, 3, 8, 4);
  DataOptions o = options(m_dir / "train");
  loadDataset(o);
  const std::int64_t before = imageDecodeCount();
  const fs::path img = m_dir / "train" / "class_00" / "001.png";
  fs::last_write_time(img, fs::last_write_time(img) + std::chrono::seconds(5));
  loadDataset(o);
  EXPECT_EQ(imageDecodeCount() - before, 6);
  EXPECT_EQ(cacheFiles().size(), 2u);  // the old entry stays (keyed by the old listing)
}

TEST_F(ImageFolderTest, TruncatedOrCorruptCacheFilesAreIgnoredAndRewritten) {
  test::writeImageFolder(m_dir / "train", 2, 3, 8, 4);
  const ImageFolderListing l = listImageFolder((m_dir / "train").string());
  const LoadedImages good = loadImageFolder(l, 8, 3, true);
  const fs::path entry = imageCachePath(imageCacheKey(l, 8, 3));
  const auto size = fs::file_size(entry);
  Bytes bytes;
  {
    std::ifstream in(entry, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto expectRepaired = [&](const Bytes& damaged, const char* what) {
    test::writeBytes(entry, damaged);
    const LoadedImages again = loadImageFolder(l, 8, 3, true);
    EXPECT_EQ(again.source, ImageSource::Decoded) << what;
    EXPECT_EQ(again.images.pixels, good.images.pixels) << what;
    EXPECT_EQ(fs::file_size(entry), size) << what;  // rewritten whole
    EXPECT_EQ(loadImageFolder(l, 8, 3, true).source, ImageSource::Cache) << what;
  };
  expectRepaired(Bytes(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2)), "truncated");
  Bytes flipped = bytes;
  flipped[kImageCacheHeaderBytes + 100] ^= 0x40;  // one pixel: the payload CRC catches it
  expectRepaired(flipped, "pixel flipped");
  Bytes header = bytes;
  header[8] = 99;  // the version
  expectRepaired(header, "other version");
  Bytes longer = bytes;
  longer.push_back(0);
  expectRepaired(longer, "one byte too many");
  expectRepaired({}, "empty");
  // Nothing half-written is ever left beside the entries.
  for (const auto& f : cacheFiles()) EXPECT_EQ(f.extension(), ".ampimg") << f;
}

TEST_F(ImageFolderTest, AnUnwritableCacheStillLoadsAndCacheOffWritesNothing) {
  test::writeImageFolder(m_dir / "train", 2, 3, 8, 4);
  test::writeBytes(m_dir / "a-file", {1});
  ::setenv("AMP_IMAGE_CACHE_DIR", (m_dir / "a-file" / "cache").c_str(), 1);  // cannot be made
  DataOptions o = options(m_dir / "train");
  o.testFraction = 0.0;
  const DataSplit s = loadDataset(o);
  EXPECT_EQ(s.train.count, 6);
  EXPECT_EQ(s.test.count, 0);
  EXPECT_EQ(loadImageFolder(listImageFolder(o.path), 8, 3, true).source, ImageSource::Decoded);
  ::setenv("AMP_IMAGE_CACHE_DIR", m_cache.c_str(), 1);
  o.cache = "off";
  loadDataset(o);
  EXPECT_TRUE(cacheFiles().empty());
}

TEST_F(ImageFolderTest, CacheFolderFollowsTheEnvironment) {
  ::setenv("AMP_IMAGE_CACHE_DIR", "/somewhere/else", 1);
  EXPECT_EQ(imageCacheDir(), "/somewhere/else");
  ::unsetenv("AMP_IMAGE_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string savedXdg = xdg ? xdg : "", savedHome = home ? home : "";
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(imageCacheDir(), "/xdg/ampstudio/images");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // invalid by the XDG spec: ignored
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(imageCacheDir(), "/home/u/.cache/ampstudio/images");
  xdg ? ::setenv("XDG_CACHE_HOME", savedXdg.c_str(), 1) : ::unsetenv("XDG_CACHE_HOME");
  home ? ::setenv("HOME", savedHome.c_str(), 1) : ::unsetenv("HOME");
}

// ---- memory -----------------------------------------------------------------------------------

TEST_F(ImageFolderTest, TheEstimatesShapesComeFromTheListingWithoutDecoding) {
  test::writeImageFolder(m_dir / "train", 3, 4, 8, 1);
  RunConfig c;
  c.seed = 2;
  c.model.name = "cnn";
  c.data = options(m_dir / "train", 12);
  c.data.padTo = 16;
  c.data.testFraction = 0.25;
  const std::int64_t before = imageDecodeCount();
  const DataShapes s = dataShapesOf(c);
  const auto generated = generatedDataShapes(dataOptionsOf(c));
  EXPECT_EQ(imageDecodeCount(), before);  // the UI asks this on its own thread
  EXPECT_EQ(s.sample, (Shape{3, 16, 16}));
  EXPECT_EQ(s.outputs, 3);
  EXPECT_EQ(s.trainCount, 9);
  EXPECT_EQ(s.testCount, 3);
  ASSERT_TRUE(generated);
  EXPECT_EQ(generated->sample, s.sample);
  EXPECT_EQ(generated->trainCount, 9);
  const DataSplit loaded = loadDataset(dataOptionsOf(c));
  EXPECT_EQ(loaded.train.sampleShape, s.sample);
  EXPECT_EQ(loaded.train.count, s.trainCount);
  EXPECT_EQ(loaded.test.count, s.testCount);
  // A test folder that names an unknown class fails here as the load would.
  test::writeImageFolder(m_dir / "test", 4, 1, 8, 1);
  c.data.testPath = (m_dir / "test").string();
  EXPECT_HAS(errorOf([&] { dataShapesOf(c); }), "data.test_path: " + (m_dir / "test" / "class_03").string() + ": class");
}

TEST_F(ImageFolderTest, ATooLargeImageSizeIsRefusedBeforeAnyDecode) {
  const auto available = hostMemoryAvailable();
  if (!available) GTEST_SKIP() << "no /proc/meminfo";
  // 1024 x 1024 x 3 a sample: 7 bytes a pixel value at the peak (8-bit copies and floats).
  const std::int64_t perImage = std::int64_t{3} * 1024 * 1024 * 7;
  const std::int64_t files = *available / perImage + 16;
  if (files > 20000) GTEST_SKIP() << "too much memory here to exceed it with a test folder";
  test::writeImageFolder(m_dir / "big", 2, 1, 4, 1);
  const Bytes tiny = [&] {
    std::ifstream in(m_dir / "big" / "class_00" / "000.png", std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }();
  for (std::int64_t i = 1; i < files / 2; ++i)
    for (const char* c : {"class_00", "class_01"}) test::writeBytes(m_dir / "big" / c / (std::to_string(i) + ".png"), tiny);
  RunConfig c;
  c.data = options(m_dir / "big", 1024);
  c.model.name = "cnn";
  const std::int64_t before = imageDecodeCount();
  const std::string m = test::messageOf<ConfigError>([&] { refuseDataThatCannotFit(dataOptionsOf(c)); });
  EXPECT_HAS(m, "data.image_size=1024, data.channels=3 (3 x 1024 x 1024 a sample): the ");
  EXPECT_HAS(m, " images of " + (m_dir / "big").string() + " need ≈ ");
  EXPECT_HAS(m, " available");
  EXPECT_EQ(imageDecodeCount(), before);
  // Loading directly checks the same way. The memory available is read afresh by each check and
  // moves between them while other tests run (22.76 vs 22.88 GiB in a CI run): compared without it.
  const auto withoutAvailable = [](const std::string& text) { return text.substr(0, text.rfind("; ")); };
  EXPECT_EQ(withoutAvailable(errorOf([&] { loadDataset(c.data); })), withoutAvailable(m));
  EXPECT_EQ(imageDecodeCount(), before);
}

}  // namespace
