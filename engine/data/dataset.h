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
  std::string name = "synthetic";  // synthetic | fmnist | spirals | circles | blobs | csv
  std::string path;                // fmnist: folder (default kFashionMnistDir); csv: file
  // 0 = all. Otherwise the training set becomes the first `subset` samples of a seeded shuffle
  // of it, and the test set likewise the first min(subset, test count) of a seeded shuffle of
  // the test set (a quick run still evaluates on as many samples as it trains on). Larger
  // values than a split holds leave that split untouched (and in its original order).
  std::int64_t subset = 0;
  // fmnist only: "unit" (x/255, like the PyTorch peer's ToTensor) | "standard" ((x/255 -
  // 0.2860)/0.3530, the usual Fashion-MNIST train mean/std) | "none" (raw 0..255).
  // Other data sets ignore it (their values are generated or the user's own).
  std::string normalize = "unit";
  std::uint64_t seed = 0;
  double testFraction = 0.2;   // generated sets and csv: share of samples held out, in [0, 1)
  std::int64_t samples = 0;    // generated sets: total samples (0 = default 1000)
  double noise = 0.1;          // generated sets: std of Gaussian jitter (points lie in ~[-1,1]^2)
  int classes = 0;             // blobs: number of blobs (0 = default 3)
  // synthetic (the PyTorch AMP recipe's data): `batches` batches of `batchSize` Gaussian
  // inputs of `width` with Gaussian regression targets of `targetWidth` (0 = width). All of
  // it is training data; the test split is empty (the recipe has none).
  std::int64_t batches = 50, batchSize = 256, width = 1024, targetWidth = 0;
  // csv: header name, or 0-based column index; empty = last column.
  std::string labelColumn;
  // Where the training set lives while training (the trainer's business, not the loader's):
  // "auto" = on the device once for a backend with memory of its own when it fits (as the
  // PyTorch recipe keeps its batches on the GPU), "on" = there always (also the CPU backend, for
  // tests), "off" = each batch uploaded from the host every step.
  std::string deviceCache = "auto";
};

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Validates the options, loads or generates the data, applies `subset`. Throws DataError.
DataSplit loadDataset(const DataOptions& opt);

// The samples of `src` at `indices`, in that order (features, labels and targets together).
Dataset selectSamples(const Dataset& src, std::span<const std::int64_t> indices);

// Splits `data` into train/test by a seeded shuffle; round(n * testFraction) samples go to
// test. Classification data is split per class (stratified) so both halves keep the class
// balance. Names become "<base>/train" and "<base>/test". Throws DataError if train is empty.
DataSplit splitTrainTest(const Dataset& data, double testFraction, std::uint64_t seed,
                         const std::string& base);

}  // namespace amp
