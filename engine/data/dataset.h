// Host-side data sets: features and labels/targets in plain vectors, plus the options that
// pick and shape one. No tensors and no backend here: the trainer uploads batches itself
// (see batch_loader.h), so data loading stays testable and independent of the device.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/core/tensor.h"  // Shape

namespace amp {

struct Dataset {
  std::string name;                  // "fmnist/train", "spirals/test", ...
  Shape sampleShape;                 // per-sample feature shape: {1,28,28}, {2}, {1024}
  std::int64_t count = 0;
  std::vector<float> features;       // count * featureSize(), row-major per sample
  std::vector<std::int32_t> labels;  // classification: size count, values in [0, numClasses)
  std::vector<float> targets;        // regression: count * targetDim (empty for classification)
  std::int64_t targetDim = 0;
  int numClasses = 0;                // 0 for regression
  std::vector<std::string> classNames;
  // Image data normalised with data.normalize=standard: the per-channel mean and std (of x/255)
  // that were subtracted and divided by, so the UI and CLI can show them. Empty otherwise.
  std::vector<double> channelMean, channelStd;

  // Token sequences (data.name=text and the sequence tasks: text_dataset.h). `tokens` holds the
  // split's bytes; sample i is the window of sequence + 1 bytes starting at windowStarts[i] (or
  // at i when windowStarts is empty: every offset of the training split): its first `sequence`
  // bytes are the inputs, its last `sequence` the labels (each position's next byte). features
  // and labels stay empty; sampleShape is {sequence}; numClasses is the vocabulary (256).
  std::int64_t sequence = 0;
  std::vector<std::uint8_t> tokens;
  std::vector<std::int64_t> windowStarts;
  bool isTokenData() const { return sequence > 0; }
  std::int64_t windowStart(std::int64_t i) const {
    return windowStarts.empty() ? i : windowStarts[static_cast<std::size_t>(i)];
  }

  std::int64_t featureSize() const;  // product of sampleShape (1 for an empty shape)
  bool isClassification() const { return numClasses > 0; }
};

struct DataSplit {
  Dataset train;
  Dataset test;
};

// One-line messages naming the file or setting and what is wrong with it.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DataOptions {
  // synthetic | fmnist | cifar10 | images | spirals | circles | blobs | csv | text | copy | reverse | sort | add
  std::string name = "synthetic";
  // fmnist: folder (default kFashionMnistDir); csv: file; cifar10: the folder holding
  // data_batch_1.bin ... data_batch_5.bin and test_batch.bin (or its parent, holding
  // cifar-10-batches-bin/); images: the training folder, one sub-folder per class.
  std::string path;
  // 0 = all. Otherwise the training set becomes the first `subset` samples of a seeded shuffle
  // of it (a random `subset` of them, the same for the same seed). The test set is cut only by
  // `testSubset`, likewise: data.subset said "training samples" and cut the test set too.
  // Larger values than a split holds leave that split untouched (and in its original order).
  std::int64_t subset = 0;
  std::int64_t testSubset = 0;
  // Image data: "unit" (x/255, like the PyTorch peer's ToTensor) | "standard" | "none" (raw
  // 0..255). standard: fmnist (x/255 - 0.2860)/0.3530, the usual Fashion-MNIST train mean/std;
  // cifar10 and images the per-channel mean and (population) std of x/255 over the training
  // split. Other data sets ignore it (their values are generated or the user's own).
  std::string normalize = "unit";
  std::uint64_t seed = 0;
  double testFraction = 0.2;   // generated sets and csv: share of samples held out, in [0, 1)
  std::int64_t samples = 0;    // generated sets: total samples (0 = default 1000)
  double noise = 0.1;          // generated sets: std of Gaussian jitter (points lie in ~[-1,1]^2)
  int classes = 0;             // blobs: number of blobs (0 = default 3)
  // text: the corpus file, or a folder whose plain-text files are read in name order (default
  // kDefaultTextCorpus). text and the sequence tasks: the model's context (model.block, set by the
  // trainer); each sample is a window of sequence + 1 bytes.
  std::int64_t sequence = 0;
  // synthetic (the PyTorch AMP recipe's data): `batches` batches of `batchSize` Gaussian
  // inputs of `width` with Gaussian regression targets of `targetWidth` (0 = width). All of
  // it is training data; the test split is empty (the recipe has none).
  std::int64_t batches = 50, batchSize = 256, width = 1024, targetWidth = 0;
  // csv: header name, or 0-based column index; empty = last column.
  std::string labelColumn;
  // csv: is line 1 a header? auto decides only where the line itself says so, and refuses to
  // guess where it does not (readCsvDataset); yes / no settle it.
  std::string csvHeader = "auto";
  // Where the training set lives while training (the trainer's business, not the loader's):
  // "auto" = on the device once for a backend with memory of its own when it fits (as the
  // PyTorch recipe keeps its batches on the GPU), "on" = there always (also the CPU backend, for
  // tests), "off" = each batch uploaded from the host every step.
  std::string deviceCache = "auto";

  // Image data sets (see image_dataset.h for the details).
  // images: a separate test folder with (some of) the training folder's class sub-folders;
  // empty = hold out testFraction of every class of the training folder.
  std::string testPath;
  int imageSize = 32;  // images: every image resized to imageSize x imageSize (1..1024)
  int channels = 3;    // images: 3 = RGB, 1 = grayscale (ITU-R 601 luma)
  // fmnist, cifar10, images: 0 = off; else every sample is zero-padded (pixel value 0, before
  // normalising, like F.pad on x/255) centred to padTo x padTo. Not smaller than the images.
  int padTo = 0;
  // Training batches only, made by the loader on the host: a random crop back to the sample
  // size after zero-padding (0 in the normalised domain) by augmentCrop pixels on each side,
  // and a horizontal flip with probability 1/2. 0 / false = off.
  int augmentCrop = 0;
  bool augmentFlip = false;
  // images: "on" keeps the decoded, resized images in a cache file (image_cache.h) | "off".
  std::string cache = "on";
};

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Debian's fortunes package: plain-text quotations (the .dat files beside it are indexes).
inline constexpr const char* kDefaultTextCorpus = "/usr/share/games/fortunes/fortunes";

// Validates the options, loads or generates the data, applies `subset`. Throws DataError.
DataSplit loadDataset(const DataOptions& opt);
// The checks loadDataset starts with (one line naming the setting). Throws DataError.
void validateDataOptions(const DataOptions& opt);

// The samples of `src` at `indices`, in that order (features, labels and targets together).
Dataset selectSamples(const Dataset& src, std::span<const std::int64_t> indices);

// The index lists behind splitTrainTest (the same draws): per class (numClasses > 0, labels
// in [0, numClasses)) or all together, round(n * testFraction) of a seeded shuffle go to test;
// both lists are shuffled again at the end so the classes are mixed.
struct SplitIndices {
  std::vector<std::int64_t> train, test;
};
SplitIndices splitIndices(std::span<const std::int32_t> labels, int numClasses, std::int64_t count,
                          double testFraction, std::uint64_t seed);

// Splits `data` into train/test by a seeded shuffle; round(n * testFraction) samples go to
// test. Classification data is split per class (stratified) so both halves keep the class
// balance. Names become "<base>/train" and "<base>/test". Throws DataError if train is empty.
DataSplit splitTrainTest(const Dataset& data, double testFraction, std::uint64_t seed,
                         const std::string& base);

}  // namespace amp
