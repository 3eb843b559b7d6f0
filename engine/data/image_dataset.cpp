// The order of a load: list (or find the files), check the memory it will take, read or decode
// the 8-bit images, split them, compute the training split's statistics, convert both splits.
// Statistics come from the 8-bit training images before data.subset, so a quick run on a
// subset normalises exactly as the full run does.
#include "engine/data/image_dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "engine/core/memory_tracker.h"  // formatBytes
#include "engine/data/cifar10_reader.h"
#include "engine/data/image_folder.h"
#include "engine/data/image_set.h"
#include "engine/train/memory_estimate.h"  // hostMemoryAvailable

namespace amp {
namespace {

// Errors about a file name the key that chose it: "data.test_path: /t/zebra: ...".
template <class F>
auto withKey(const char* key, F f) {
  try {
    return f();
  } catch (const DataError& e) {
    throw DataError(std::string(key) + ": " + e.what());
  }
}

std::string folderName(const std::string& path, const char* fallback) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();  // "pets/" -> "pets"
  const std::string name = p.filename().string();
  return name.empty() || name == "." || name == ".." ? fallback : name;
}

std::int64_t subsetOf(std::int64_t n, std::int64_t subset) { return subset > 0 ? std::min(n, subset) : n; }

// Peak host bytes of a load of `images` samples of `imageBytes` 8-bit pixels, becoming
// `sampleValues` floats: the images as read or decoded, their split copies, the cache file or
// the record bytes read alongside, and the float features of both splits.
std::int64_t loadBytesOf(std::int64_t images, std::int64_t imageBytes, std::int64_t sampleValues) {
  const double bytes = static_cast<double>(images) * (3.0 * imageBytes + 4.0 * sampleValues);
  return bytes >= 9.2e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(bytes);
}

std::string padText(int padTo) { return padTo > 0 ? ", data.pad_to=" + std::to_string(padTo) : std::string(); }

ImageDataPlan planImages(const DataOptions& d, const ImageFolderListing& train,
                         const std::optional<ImageFolderListing>& test) {
  ImageDataPlan p;
  const std::int64_t side = d.padTo > 0 ? d.padTo : d.imageSize;
  p.sample = {d.channels, side, side};
  p.classes = static_cast<int>(train.classNames.size());
  const auto files = static_cast<std::int64_t>(train.files.size());
  std::int64_t testCount = 0;
  if (test) {
    testCount = static_cast<std::int64_t>(test->files.size());
  } else {
    for (std::int64_t n : train.perClass)  // as splitIndices rounds, class by class
      testCount += std::llround(static_cast<double>(n) * d.testFraction);
  }
  p.images = files + (test ? testCount : 0);
  p.trainCount = subsetOf(files - (test ? 0 : testCount), d.subset);
  p.testCount = subsetOf(testCount, d.testSubset);
  p.loadBytes = loadBytesOf(p.images, static_cast<std::int64_t>(d.channels) * d.imageSize * d.imageSize,
                            shapeNumel(p.sample));
  p.settings = "data.image_size=" + std::to_string(d.imageSize) + ", data.channels=" + std::to_string(d.channels) +
               padText(d.padTo);
  p.source = "the " + std::to_string(p.images) + " images of " + d.path + (test ? " and " + d.testPath : "");
  return p;
}

ImageDataPlan planCifar10(const DataOptions& d, const Cifar10Files& files) {
  ImageDataPlan p;
  const std::int64_t side = d.padTo > 0 ? d.padTo : 32;
  p.sample = {3, side, side};
  p.classes = 10;
  auto records = [](const std::string& f) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(f, ec);
    return ec ? std::int64_t{0} : static_cast<std::int64_t>(bytes) / kCifar10RecordBytes;
  };
  std::int64_t train = 0;
  for (const std::string& f : files.train) train += records(f);
  const std::int64_t test = records(files.test);
  p.images = train + test;
  p.trainCount = subsetOf(train, d.subset);
  p.testCount = subsetOf(test, d.testSubset);
  p.loadBytes = loadBytesOf(p.images, kCifar10RecordBytes, shapeNumel(p.sample));
  p.settings = "data.name=cifar10" + padText(d.padTo);
  p.source = "the " + std::to_string(p.images) + " images of " + d.path;
  return p;
}

void checkMemory(const ImageDataPlan& plan) {
  if (auto problem = imageDataMemoryProblem(plan)) throw DataError(*problem);
}

PixelTransform transformFor(const DataOptions& d, const ImageSet& train) {
  PixelTransform t;
  t.normalize = d.normalize;
  t.padTo = d.padTo;
  if (d.normalize == "standard") {
    const ChannelStats s = channelStats(train);  // the training split only: no test leakage
    t.mean = s.mean;
    t.stddev = s.stddev;
  }
  return t;
}

DataSplit loadImages(const DataOptions& d) {
  const ImageFolderListing listing = withKey("data.path", [&] { return listImageFolder(d.path); });
  std::optional<ImageFolderListing> testListing;
  if (!d.testPath.empty())
    testListing = withKey("data.test_path", [&] { return listTestFolder(d.testPath, listing.classNames); });
  checkMemory(planImages(d, listing, testListing));
  const bool cache = d.cache == "on";
  const int classes = static_cast<int>(listing.classNames.size());

  ImageSet all = withKey("data.path", [&] { return loadImageFolder(listing, d.imageSize, d.channels, cache).images; });
  ImageSet train, test;
  if (testListing) {
    const ImageSet t = withKey("data.test_path", [&] {
      return loadImageFolder(*testListing, d.imageSize, d.channels, cache).images;
    });
    // Both in a seeded shuffle of their files, as a held-out split is (a test fraction of 0
    // leaves every image in the shuffled "train" list).
    train = selectImages(all, splitIndices(all.labels, classes, all.count, 0.0, d.seed).train);
    test = selectImages(t, splitIndices(t.labels, classes, t.count, 0.0, d.seed).train);
  } else {
    const SplitIndices idx = splitIndices(all.labels, classes, all.count, d.testFraction, d.seed);
    if (idx.train.empty())
      throw DataError("data.test_fraction = " + std::to_string(d.testFraction) + ": holds out all " +
                      std::to_string(all.count) + " images of " + d.path + ", leaving none to train on");
    train = selectImages(all, idx.train);
    test = selectImages(all, idx.test);
  }
  all = ImageSet();
  const std::string base = folderName(d.path, "images");
  const PixelTransform t = transformFor(d, train);
  return {imagesToDataset(train, t, base + "/train", listing.classNames),
          imagesToDataset(test, t, base + "/test", listing.classNames)};
}

}  // namespace

bool isImageDataSet(const std::string& name) { return name == "cifar10" || name == "images"; }

std::optional<ImageDataPlan> planImageData(const DataOptions& d) {
  if (!isImageDataSet(d.name)) return std::nullopt;
  validateDataOptions(d);
  if (d.name == "cifar10") return planCifar10(d, withKey("data.path", [&] { return findCifar10Files(d.path); }));
  const ImageFolderListing listing = withKey("data.path", [&] { return listImageFolder(d.path); });
  std::optional<ImageFolderListing> test;
  if (!d.testPath.empty())
    test = withKey("data.test_path", [&] { return listTestFolder(d.testPath, listing.classNames); });
  return planImages(d, listing, test);
}

std::optional<std::string> imageDataMemoryProblem(const ImageDataPlan& plan) {
  const auto available = hostMemoryAvailable();
  if (!available || plan.loadBytes <= *available) return std::nullopt;
  std::string sample;
  for (std::size_t i = 0; i < plan.sample.size(); ++i) sample += (i ? " x " : "") + std::to_string(plan.sample[i]);
  return plan.settings + " (" + sample + " a sample): " + plan.source + " need ≈ " + formatBytes(plan.loadBytes) +
         " to load; " + formatBytes(*available) + " available";
}

DataSplit loadImageData(const DataOptions& d) {
  if (d.name == "images") return loadImages(d);
  if (d.name != "cifar10") throw DataError("data.name = '" + d.name + "': not an image data set");
  const Cifar10Files files = withKey("data.path", [&] { return findCifar10Files(d.path); });
  checkMemory(planCifar10(d, files));
  return withKey("data.path", [&] { return loadCifar10(d.path, d.normalize, d.padTo); });
}

}  // namespace amp
