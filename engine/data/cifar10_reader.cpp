// CIFAR-10 reading: whole files through readRegularFile (a FIFO or device is refused, the size is
// capped), every record's label checked before it is trusted, then one memcpy per record.
#include "engine/data/cifar10_reader.h"

#include <cstring>
#include <filesystem>
#include <future>

#include "engine/core/checked_file.h"

namespace amp {
namespace {

constexpr int kClasses = 10;
const char* const kTrainFiles[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                   "data_batch_4.bin", "data_batch_5.bin"};
constexpr const char* kTestFile = "test_batch.bin";
constexpr const char* kArchiveFolder = "cifar-10-batches-bin";

bool holdsAnyCifarFile(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir / kTestFile, ec)) return true;
  for (const char* f : kTrainFiles)
    if (std::filesystem::exists(dir / f, ec)) return true;
  return false;
}

// The files' records one after the other, in the order given.
ImageSet readAll(const std::vector<std::string>& paths) {
  std::vector<ImageSet> parts;
  for (const std::string& p : paths) parts.push_back(readCifar10File(p));
  ImageSet all;
  all.channels = 3;
  all.height = all.width = 32;
  for (const ImageSet& p : parts) all.count += p.count;
  all.pixels.reserve(static_cast<std::size_t>(all.count * kCifar10ImageBytes));
  all.labels.reserve(static_cast<std::size_t>(all.count));
  for (ImageSet& p : parts) {
    all.pixels.insert(all.pixels.end(), p.pixels.begin(), p.pixels.end());
    all.labels.insert(all.labels.end(), p.labels.begin(), p.labels.end());
    p = ImageSet();  // free each part as soon as it is copied: the peak stays near one copy
  }
  return all;
}

}  // namespace

ImageSet parseCifar10Records(std::string_view bytes, const std::string& path) {
  const auto size = static_cast<std::int64_t>(bytes.size());
  if (size == 0) throw DataError(path + ": empty file (0 bytes), expected 3073-byte CIFAR-10 records");
  if (size % kCifar10RecordBytes != 0)
    throw DataError(path + ": " + std::to_string(size) + " bytes is not a whole number of " +
                    std::to_string(kCifar10RecordBytes) + "-byte records (truncated, or not a CIFAR-10 file)");
  ImageSet images;
  images.count = size / kCifar10RecordBytes;
  images.channels = 3;
  images.height = images.width = 32;
  // Labels first: a file that is not CIFAR-10 (a CIFAR-100 file has two label bytes per record,
  // so its records are 3074 bytes and mostly fail the size check above) is refused before the
  // pixels are copied.
  images.labels.resize(static_cast<std::size_t>(images.count));
  for (std::int64_t r = 0; r < images.count; ++r) {
    const auto label = static_cast<unsigned char>(bytes[static_cast<std::size_t>(r * kCifar10RecordBytes)]);
    if (label >= kClasses)
      throw DataError(path + ": record " + std::to_string(r) + " has label " + std::to_string(label) +
                      " (CIFAR-10 labels are 0-9; the record starts at byte " +
                      std::to_string(r * kCifar10RecordBytes) + ")");
    images.labels[static_cast<std::size_t>(r)] = label;
  }
  images.pixels.resize(static_cast<std::size_t>(images.count * kCifar10ImageBytes));
  for (std::int64_t r = 0; r < images.count; ++r)
    std::memcpy(images.pixels.data() + r * kCifar10ImageBytes, bytes.data() + r * kCifar10RecordBytes + 1,
                static_cast<std::size_t>(kCifar10ImageBytes));
  return images;
}

ImageSet readCifar10File(const std::string& path) {
  std::string bytes;
  if (auto problem = readRegularFile(path, kCifar10MaxFileBytes, bytes)) throw DataError(*problem);
  return parseCifar10Records(bytes, path);
}

Cifar10Files findCifar10Files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw DataError(path + ": no such folder (the CIFAR-10 path is the folder holding data_batch_1.bin "
                           "... test_batch.bin, or the one holding cifar-10-batches-bin/)");
  if (!fs::is_directory(path, ec))
    throw DataError(path + ": not a folder (the CIFAR-10 path is the folder holding data_batch_1.bin "
                           "... test_batch.bin, or the one holding cifar-10-batches-bin/)");
  fs::path dir(path);
  if (!holdsAnyCifarFile(dir)) {
    if (!holdsAnyCifarFile(dir / kArchiveFolder))
      throw DataError(path + ": no CIFAR-10 files here or in cifar-10-batches-bin/ (the binary version's "
                             "data_batch_1.bin ... data_batch_5.bin and test_batch.bin)");
    dir /= kArchiveFolder;
  }
  Cifar10Files files;
  for (const char* f : kTrainFiles) files.train.push_back((dir / f).string());
  files.test = (dir / kTestFile).string();
  std::vector<std::string> all = files.train;
  all.push_back(files.test);
  for (const std::string& f : all)
    if (auto problem = regularFileProblem(f))
      throw DataError(f + ": " + *problem + " (CIFAR-10's binary version has data_batch_1.bin ... "
                      "data_batch_5.bin and test_batch.bin in one folder)");
  return files;
}

const std::vector<std::string>& cifar10ClassNames() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

DataSplit loadCifar10(const std::string& path, const std::string& normalize, int padTo) {
  if (padTo != 0 && padTo < 32)
    throw DataError("data.pad_to = " + std::to_string(padTo) +
                    ": smaller than the 32x32 CIFAR-10 images (0 = no padding)");
  const Cifar10Files files = findCifar10Files(path);
  auto testImages = std::async(std::launch::async, [&] { return readAll({files.test}); });
  const ImageSet train = readAll(files.train);
  const ImageSet test = testImages.get();
  PixelTransform t;
  t.normalize = normalize;
  t.padTo = padTo;
  if (normalize == "standard") {
    const ChannelStats s = channelStats(train);  // of the training split only: no test leakage
    t.mean = s.mean;
    t.stddev = s.stddev;
  }
  auto testSet = std::async(std::launch::async,
                            [&] { return imagesToDataset(test, t, "cifar10/test", cifar10ClassNames()); });
  Dataset trainSet = imagesToDataset(train, t, "cifar10/train", cifar10ClassNames());
  return {std::move(trainSet), testSet.get()};
}

}  // namespace amp
