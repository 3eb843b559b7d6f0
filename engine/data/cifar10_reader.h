// CIFAR-10's binary version (https://www.cs.toronto.edu/~kriz/cifar.html): data_batch_1.bin ...
// data_batch_5.bin (training, 10,000 images each) and test_batch.bin, records of 3073 bytes: a
// label byte 0..9, then the 1024 red, 1024 green and 1024 blue bytes of a 32x32 image, rows top
// to bottom. That is already the channel-major (C, H, W) layout of a sample, so a record's
// pixels are copied as they are. Every error is a DataError whose message starts with the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/image_set.h"

namespace amp {

inline constexpr std::int64_t kCifar10RecordBytes = 3073;
inline constexpr std::int64_t kCifar10ImageBytes = 3072;  // 3 x 32 x 32
// More than any CIFAR-10 file holds (30,730,000 bytes); a larger file is not one.
inline constexpr std::int64_t kCifar10MaxFileBytes = std::int64_t{1} << 30;

// The records of one file's bytes as {3,32,32} images; `path` names it in errors: "PATH: 30727
// bytes is not a whole number of 3073-byte records", "PATH: record 17 has label 12 (CIFAR-10
// labels are 0-9)" (records counted from 0), "PATH: empty file". For the fuzzer and readers
// that hold the bytes already.
ImageSet parseCifar10Records(std::string_view bytes, const std::string& path);
// The same from the file (a regular file of at most kCifar10MaxFileBytes).
ImageSet readCifar10File(const std::string& path);

// The six files of a CIFAR-10 folder: `path` itself when it holds any of them, else its
// cifar-10-batches-bin/ sub-folder (the archive's top folder). Throws DataError naming the folder
// and the first missing file.
struct Cifar10Files {
  std::vector<std::string> train;  // data_batch_1.bin ... data_batch_5.bin
  std::string test;                // test_batch.bin
};
Cifar10Files findCifar10Files(const std::string& path);

// airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck.
const std::vector<std::string>& cifar10ClassNames();

// The whole data set, "cifar10/train" (50,000 images in file order) and "cifar10/test",
// normalised as `normalize` says ("standard": the training split's per-channel mean and std)
// and padded to padTo (0 = off; else at least 32).
DataSplit loadCifar10(const std::string& path, const std::string& normalize, int padTo);

}  // namespace amp
