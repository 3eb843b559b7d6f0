// IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or raw, and the Fashion-MNIST
// data set built from them. Every error is a DataError whose message starts with the file path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace amp {

struct IdxImages {
  std::int64_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols, row-major
};

// Images (magic 0x00000803, unsigned bytes, 3 dimensions). expectRows/expectCols = 0 accepts
// any non-zero size. The pixel data must match the header exactly: short data is reported as
// truncated, extra bytes after it as trailing garbage, and gzip errors (bad CRC, cut-off
// stream) as corrupt.
IdxImages readIdxImages(const std::string& path, std::int64_t expectRows = 0,
                        std::int64_t expectCols = 0);

// Labels (magic 0x00000801, unsigned bytes, 1 dimension), each checked to be < numClasses.
std::vector<std::uint8_t> readIdxLabels(const std::string& path, int numClasses);

// "T-shirt/top", "Trouser", ..., "Ankle boot".
const std::vector<std::string>& fashionMnistClassNames();

// The four Fashion-MNIST files in `dir` (train-images-idx3-ubyte.gz etc., or the same names
// without .gz), 28x28 images as {1,28,28} samples, normalized as DataOptions::normalize says.
// padTo > 0 (at least 28): zero-padded to {1,padTo,padTo} before normalising (image_set.h), as
// the ResNet peer's F.pad(x/255, (2,2,2,2)) for 32. Names "fmnist/train" and "fmnist/test";
// samples in file order.
DataSplit loadFashionMnist(const std::string& dir, const std::string& normalize = "unit", int padTo = 0);

}  // namespace amp
