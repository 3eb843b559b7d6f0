// loadDataset: option validation, dispatch to the readers/generators, subset and split helpers.
#include "engine/data/dataset.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/data/csv_reader.h"
#include "engine/data/idx_reader.h"
#include "engine/data/image_dataset.h"
#include "engine/data/rng.h"
#include "engine/data/sequence_tasks.h"
#include "engine/data/synthetic_dataset.h"
#include "engine/data/text_dataset.h"
#include "engine/data/toy_datasets.h"

namespace amp {
namespace {

// Each use of the seed draws from its own stream, so e.g. changing `subset` never changes
// which samples the split or the generators produce.
constexpr std::uint64_t kSplitStream = 0x5B117;
constexpr std::uint64_t kSubsetTrainStream = 0x5B5E7A;
constexpr std::uint64_t kSubsetTestStream = 0x5B5E7B;

template <typename T>
std::string str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

[[noreturn]] void badOption(const std::string& setting, const std::string& value,
                            const std::string& why) {
  throw DataError(setting + " = " + value + ": " + why);
}

// The side of the images a data set holds before padding; 0 for data that are not images.
std::int64_t imageSideOf(const DataOptions& o) {
  if (o.name == "fmnist") return 28;
  if (o.name == "cifar10") return 32;
  if (o.name == "images") return o.imageSize;
  return 0;
}

void validateImageOptions(const DataOptions& o) {
  if (o.imageSize < 1 || o.imageSize > 1024)
    badOption("data.image_size", str(o.imageSize), "must be from 1 to 1024 (pixels a side)");
  if (o.channels != 1 && o.channels != 3)
    badOption("data.channels", str(o.channels), "must be 3 (RGB) or 1 (grayscale)");
  if (o.cache != "on" && o.cache != "off") badOption("data.cache", "'" + o.cache + "'", "expected on or off");
  if (o.padTo < 0 || o.padTo > 4096) badOption("data.pad_to", str(o.padTo), "must be from 0 (off) to 4096");
  if (o.augmentCrop < 0 || o.augmentCrop > 1024)
    badOption("data.augment_crop", str(o.augmentCrop), "must be from 0 (off) to 1024");
  const std::int64_t side = imageSideOf(o);
  // Padding and augmentation act on images; on a table or points they would mean nothing, and
  // ignoring them silently would leave the user believing they apply.
  if (side == 0) {
    if (o.padTo != 0) badOption("data.pad_to", str(o.padTo), "only image data (fmnist, cifar10, images) can be padded");
    if (o.augmentCrop != 0)
      badOption("data.augment_crop", str(o.augmentCrop), "only image data (fmnist, cifar10, images) can be cropped");
    if (o.augmentFlip) badOption("data.augment_flip", "true", "only image data (fmnist, cifar10, images) can be flipped");
    return;
  }
  if (o.padTo != 0 && o.padTo < side)
    badOption("data.pad_to", str(o.padTo),
              "smaller than the " + str(side) + "x" + str(side) + " images of " + o.name + " (0 = no padding)");
  if (o.name == "images" && o.path.empty())
    badOption("data.path", "''", "the images data set needs its training folder (one sub-folder per class)");
  if (o.name == "cifar10" && o.path.empty())
    badOption("data.path", "''", "the cifar10 data set needs the folder holding data_batch_1.bin ... test_batch.bin");
}

void validateOptions(const DataOptions& o) {
  static const char* kNames[] = {"synthetic", "fmnist", "cifar10", "images", "spirals", "circles", "blobs", "csv",
                                 "text",      "copy",   "reverse", "sort",   "add"};
  bool known = false;
  for (const char* n : kNames) known = known || o.name == n;
  if (!known)
    badOption("data.name", "'" + o.name + "'",
              "unknown data set (expected synthetic, fmnist, cifar10, images, spirals, circles, blobs, csv, text, "
              "copy, reverse, sort or add)");
  if (o.subset < 0) badOption("data.subset", str(o.subset), "must be >= 0 (0 = all samples)");
  if (o.testSubset < 0) badOption("data.test_subset", str(o.testSubset), "must be >= 0 (0 = all samples)");
  if (o.normalize != "unit" && o.normalize != "standard" && o.normalize != "none")
    badOption("data.normalize", "'" + o.normalize + "'", "expected unit, standard or none");
  if (!(o.testFraction >= 0.0 && o.testFraction < 1.0))
    badOption("data.test_fraction", str(o.testFraction), "must be in [0, 1)");
  if (o.samples < 0) badOption("data.samples", str(o.samples), "must be >= 0 (0 = default 1000)");
  if (!(o.noise >= 0.0 && std::isfinite(o.noise)))
    badOption("data.noise", str(o.noise), "must be a finite number >= 0");
  if (o.classes < 0 || o.classes == 1 || o.classes > 1000)
    badOption("data.classes", str(o.classes), "must be 0 (default 3) or 2..1000");
  if (o.name == "synthetic") {
    if (o.batches <= 0) badOption("data.batches", str(o.batches), "must be > 0");
    if (o.batchSize <= 0) badOption("train.batch_size", str(o.batchSize), "must be > 0");
    if (o.width <= 0) badOption("model.width", str(o.width), "must be > 0");
    if (o.targetWidth < 0) badOption("the synthetic target width", str(o.targetWidth), "must be >= 0 (0 = width)");
  }
  // Token data: the trainer sets the window from model.block; without one there is no sample.
  if (o.name == "text" || isSequenceTask(o.name)) {
    if (o.sequence <= 0 || o.sequence > kMaxTextBytes)
      badOption("model.block", str(o.sequence),
                "data.name=" + o.name + " reads windows of model.block + 1 bytes: must be from 1 to " +
                    str(kMaxTextBytes));
    if (isSequenceTask(o.name) && o.samples > kMaxTaskExamples)
      badOption("data.samples", str(o.samples),
                "at most " + str(kMaxTaskExamples) + " examples for data.name=" + o.name + " (0 = default " +
                    str(kDefaultTaskExamples) + ")");
  }
  if (o.name == "csv" && o.path.empty())
    badOption("data.path", "''", "the csv data set needs the path of a .csv file");
  validateImageOptions(o);
}

// The first min(n, count) samples of a seeded shuffle; untouched when n covers the split.
void applySubset(Dataset& d, std::int64_t n, std::uint64_t seed, std::uint64_t stream) {
  if (n <= 0 || n >= d.count) return;
  Rng rng(seed, stream);
  std::vector<std::int64_t> order = rng.permutation(d.count);
  order.resize(static_cast<std::size_t>(n));
  d = selectSamples(d, order);
}

// Token data: the chosen samples become an explicit list of window starts over the same bytes.
Dataset selectWindows(const Dataset& src, std::span<const std::int64_t> indices) {
  Dataset out;
  out.name = src.name;
  out.sampleShape = src.sampleShape;
  out.numClasses = src.numClasses;
  out.classNames = src.classNames;
  out.sequence = src.sequence;
  out.tokens = src.tokens;
  out.count = static_cast<std::int64_t>(indices.size());
  out.windowStarts.resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t j = indices[i];
    if (j < 0 || j >= src.count)
      throw std::out_of_range("selectSamples: index " + str(j) + " outside " + src.name);
    out.windowStarts[i] = src.windowStart(j);
  }
  return out;
}

}  // namespace

std::int64_t Dataset::featureSize() const { return shapeNumel(sampleShape); }

Dataset selectSamples(const Dataset& src, std::span<const std::int64_t> indices) {
  if (src.isTokenData()) return selectWindows(src, indices);
  Dataset out;
  out.name = src.name;
  out.sampleShape = src.sampleShape;
  out.targetDim = src.targetDim;
  out.numClasses = src.numClasses;
  out.classNames = src.classNames;
  out.channelMean = src.channelMean;
  out.channelStd = src.channelStd;
  out.count = static_cast<std::int64_t>(indices.size());

  const auto fs = static_cast<std::size_t>(src.featureSize());
  const auto td = static_cast<std::size_t>(src.targetDim);
  const bool hasLabels = !src.labels.empty();
  const bool hasTargets = !src.targets.empty();
  out.features.resize(indices.size() * fs);
  if (hasLabels) out.labels.resize(indices.size());
  if (hasTargets) out.targets.resize(indices.size() * td);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t j = indices[i];
    if (j < 0 || j >= src.count)
      throw std::out_of_range("selectSamples: index " + str(j) + " outside " + src.name);
    const auto uj = static_cast<std::size_t>(j);
    std::memcpy(out.features.data() + i * fs, src.features.data() + uj * fs, fs * sizeof(float));
    if (hasLabels) out.labels[i] = src.labels[uj];
    if (hasTargets)
      std::memcpy(out.targets.data() + i * td, src.targets.data() + uj * td, td * sizeof(float));
  }
  return out;
}

SplitIndices splitIndices(std::span<const std::int32_t> labels, int numClasses, std::int64_t count,
                          double testFraction, std::uint64_t seed) {
  Rng rng(seed, kSplitStream);
  SplitIndices out;
  // Stratify classification data: the same share of every class goes to test, so a small
  // toy set or a user's table does not end up with a class missing from one side.
  std::vector<std::vector<std::int64_t>> groups(numClasses > 0 ? numClasses : 1);
  for (std::int64_t i = 0; i < count; ++i)
    groups[numClasses > 0 ? static_cast<std::size_t>(labels[static_cast<std::size_t>(i)]) : 0].push_back(i);
  for (auto& g : groups) {
    rng.shuffle(g);
    const auto nTest = static_cast<std::size_t>(std::llround(g.size() * testFraction));
    out.test.insert(out.test.end(), g.begin(), g.begin() + nTest);
    out.train.insert(out.train.end(), g.begin() + nTest, g.end());
  }
  // Mix the classes again (the loader shuffles too, but an unshuffled test set sorted by
  // class would make any "first N test samples" view misleading).
  rng.shuffle(out.train);
  rng.shuffle(out.test);
  return out;
}

DataSplit splitTrainTest(const Dataset& data, double testFraction, std::uint64_t seed,
                         const std::string& base) {
  const SplitIndices idx = splitIndices(data.labels, data.isClassification() ? data.numClasses : 0,
                                        data.count, testFraction, seed);
  if (idx.train.empty())
    throw DataError(base + ": data.test_fraction " + str(testFraction) + " of " + str(data.count) +
                    " samples leaves no training samples");
  DataSplit split{selectSamples(data, idx.train), selectSamples(data, idx.test)};
  split.train.name = base + "/train";
  split.test.name = base + "/test";
  return split;
}

void validateDataOptions(const DataOptions& opt) { validateOptions(opt); }

DataSplit loadDataset(const DataOptions& opt) {
  validateOptions(opt);
  DataSplit split;
  // Errors about the user's files name the key that chose them: "data.path: 0: no such file".
  auto fromPath = [&](auto load) {
    try {
      return load();
    } catch (const DataError& e) {
      if (opt.path.empty()) throw;
      throw DataError(std::string("data.path: ") + e.what());
    }
  };
  if (opt.name == "fmnist") {
    split = fromPath([&] {
      return loadFashionMnist(opt.path.empty() ? std::string(kFashionMnistDir) : opt.path, opt.normalize,
                              opt.padTo);
    });
  } else if (isImageDataSet(opt.name)) {
    split = loadImageData(opt);  // names data.path or data.test_path in its errors itself
  } else if (opt.name == "csv") {
    split = fromPath([&] {
      return splitTrainTest(readCsvDataset(opt.path, opt.labelColumn, opt.csvHeader), opt.testFraction, opt.seed,
                            csvBaseName(opt.path));
    });
  } else if (opt.name == "text") {
    split = fromPath([&] { return loadTextDataset(opt); });
  } else if (isSequenceTask(opt.name)) {
    split = makeSequenceTask(opt);
  } else if (opt.name == "synthetic") {
    split = makeSyntheticRegression(opt);
  } else {
    split = makeToyDataset(opt);
  }
  applySubset(split.train, opt.subset, opt.seed, kSubsetTrainStream);
  applySubset(split.test, opt.testSubset, opt.seed, kSubsetTestStream);
  return split;
}

}  // namespace amp
