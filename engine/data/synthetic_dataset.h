// The PyTorch AMP recipe's data ("Automatic Mixed Precision" tutorial): a fixed list of
// `batches` batches, each `batchSize` rows of standard-normal inputs of `width` with
// standard-normal regression targets. Read in order (BatchLoader with shuffle off and the same
// batch size), it reproduces the recipe's loop `for input, target in zip(data, targets)`.
#pragma once

#include "engine/data/dataset.h"

namespace amp {

// Uses opt.batches, batchSize, width, targetWidth (0 = width) and seed. Everything goes to
// train ("synthetic/train", sampleShape {width}, targetDim as above); the test split is empty
// but has the same shape, so code that evaluates can skip it uniformly.
DataSplit makeSyntheticRegression(const DataOptions& opt);

}  // namespace amp
