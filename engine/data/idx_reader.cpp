// IDX reading through zlib's gz* API, which also reads uncompressed files transparently, so
// one code path serves both .gz and raw files.
#include "engine/data/idx_reader.h"

#include "engine/core/checked_file.h"
#include "engine/core/memory_tracker.h"  // formatBytes
#include "engine/data/image_set.h"
#include "engine/train/memory_estimate.h"  // hostMemoryAvailable

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>

namespace amp {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
// A header is trusted for sizes only up to this much data; beyond it is surely a lie.
constexpr std::uint64_t kMaxDataBytes = std::uint64_t{1} << 32;

std::string hex(std::uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, v);
  return buf;
}

// An open gz (or raw) file that turns every zlib complaint into a DataError naming the path.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : m_path(path) {
    // A pipe would block gzopen forever and /dev/zero would be read for ever: files only.
    if (auto problem = regularFileProblem(path)) fail(*problem + ", expected an IDX file");
    m_file = gzopen(path.c_str(), "rb");
    if (!m_file) fail(std::string("cannot open: ") + std::strerror(errno));
    gzbuffer(m_file, 1 << 18);  // fewer, larger reads: inflate dominates the load time
  }
  ~GzReader() {
    if (m_file) gzclose(m_file);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes; fewer only at the end of the data.
  std::size_t read(void* dst, std::size_t n) {
    std::size_t total = 0;
    auto* out = static_cast<unsigned char*>(dst);
    while (total < n) {
      const auto want = static_cast<unsigned>(std::min<std::size_t>(n - total, INT_MAX));
      const int got = gzread(m_file, out + total, want);
      checkError();
      if (got <= 0) break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

  [[noreturn]] void fail(const std::string& what) const { throw DataError(m_path + ": " + what); }

 private:
  void checkError() {
    int err = Z_OK;
    const char* msg = gzerror(m_file, &err);
    if (err == Z_OK) return;
    if (err == Z_ERRNO) fail(std::string("read error: ") + std::strerror(errno));
    // Z_BUF_ERROR: the compressed stream stops mid-way; Z_DATA_ERROR: bad CRC, length or
    // deflate data. Either way the bytes cannot be trusted.
    fail(std::string("corrupt gzip data (") + (msg ? msg : "unknown zlib error") +
         (err == Z_BUF_ERROR ? "; the compressed file is truncated)" : ")"));
  }

  std::string m_path;
  gzFile m_file = nullptr;
};

std::uint32_t bigEndian32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

void checkMagic(GzReader& in, std::uint32_t magic, std::uint32_t expected, const char* what) {
  if (magic == expected) return;
  const unsigned type = (magic >> 8) & 0xFF, dims = magic & 0xFF;
  if ((magic >> 16) == 0 && type == 0x08)
    in.fail("IDX file has " + std::to_string(dims) + " dimensions, expected " +
            std::to_string(expected & 0xFF) + " for " + what);
  if ((magic >> 16) == 0)
    in.fail("unsupported IDX element type " + hex(type, 2) +
            " (only unsigned byte 0x08 is supported)");
  in.fail("bad magic number " + hex(magic, 8) + ", expected " + hex(expected, 8) + " (" + what +
          "); is this an IDX file?");
}

// The magic number is checked before the rest of the header is required, so a labels file
// passed as images gets "wrong dimensions" rather than "too short".
void readHeader(GzReader& in, unsigned char* header, std::size_t size, std::uint32_t magic,
                const char* what) {
  std::size_t got = in.read(header, 4);
  if (got == 4) {
    checkMagic(in, bigEndian32(header), magic, what);
    got += in.read(header + 4, size - 4);
  }
  if (got < size)
    in.fail("too short for an IDX " + std::string(what) + " header (" + std::to_string(got) +
            " of " + std::to_string(size) + " bytes)");
}

// Reads exactly `expected` bytes after the header, then insists on end of file.
std::vector<std::uint8_t> readBody(GzReader& in, std::uint64_t expected, const char* what) {
  std::vector<std::uint8_t> data;
  // Grow as bytes actually arrive: a header that lies about its size must not make us allocate
  // up front (a 9-byte file declaring 2^28 labels reserved 256 MiB; found by fuzz_idx). Reads
  // start at 64 KiB and double while the data keeps coming, up to 4 MiB, so a lying header
  // costs 64 KiB and a real file still few, large reads.
  std::size_t chunk = std::size_t{1} << 16;
  while (data.size() < expected) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(expected - data.size(), chunk));
    chunk = std::min<std::size_t>(chunk * 2, std::size_t{1} << 22);
    const std::size_t old = data.size();
    data.resize(old + want);
    const std::size_t got = in.read(data.data() + old, want);
    data.resize(old + got);
    if (got < want) break;
  }
  if (data.size() < expected)
    in.fail("truncated: expected " + std::to_string(expected) + " bytes of " + what +
            ", found " + std::to_string(data.size()));
  // One byte past the end is enough to refuse: counting them all would inflate whatever a
  // small gzip chooses to hold after the data (gigabytes of zeros, at 1000:1).
  unsigned char extra;
  if (in.read(&extra, 1) > 0)
    in.fail("unexpected bytes after the " + std::to_string(expected) + " bytes of " + what +
            " the header declares (trailing garbage, or a wrong count)");
  return data;
}

// The count a header declares (images or labels), read without touching the body.
std::uint32_t idxHeaderCount(const std::string& path, std::uint32_t magic, const char* what) {
  GzReader in(path);
  unsigned char header[8];
  readHeader(in, header, sizeof header, magic, what);
  return bigEndian32(header + 4);
}

std::string findFile(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& name : {base + ".gz", base})
    if (fs::is_regular_file(fs::path(dir) / name, ec)) return (fs::path(dir) / name).string();
  throw DataError(dir + ": no " + base + ".gz (or uncompressed " + base +
                  ") found; is this the Fashion-MNIST folder?");
}

// The Fashion-MNIST train/test mean and std of x/255 (the PyTorch peer's Normalize).
constexpr double kFmnistMean = 0.2860, kFmnistStd = 0.3530;

Dataset loadSplit(const std::string& dir, const std::string& prefix, const std::string& name,
                  const PixelTransform& transform) {
  const std::string imagesPath = findFile(dir, prefix + "-images-idx3-ubyte");
  const std::string labelsPath = findFile(dir, prefix + "-labels-idx1-ubyte");
  // Both headers before either body: a small gzip that declares millions of images is refused
  // for its counts or its size before anything is inflated.
  const std::uint32_t imageCount = idxHeaderCount(imagesPath, kImagesMagic, "images");
  const std::uint32_t labelCount = idxHeaderCount(labelsPath, kLabelsMagic, "labels");
  if (labelCount != imageCount)
    throw DataError(imagesPath + " has " + std::to_string(imageCount) + " images but " +
                    labelsPath + " has " + std::to_string(labelCount) +
                    " labels (mislabelled: the counts must match)");
  // Pixels as bytes while reading, then as floats: 5 bytes a pixel at the peak (more if padded).
  const std::uint64_t side = static_cast<std::uint64_t>(std::max<std::int64_t>(28, transform.padTo));
  const std::uint64_t needed = std::uint64_t{imageCount} * (28 * 28 + side * side * 4);
  if (const auto available = hostMemoryAvailable(); available && needed > static_cast<std::uint64_t>(*available))
    throw DataError(imagesPath + ": declares " + std::to_string(imageCount) + " images, which need " +
                    formatBytes(static_cast<std::int64_t>(needed)) + " to load; " + formatBytes(*available) +
                    " available");
  IdxImages idx = readIdxImages(imagesPath, 28, 28);
  const std::vector<std::uint8_t> labels = readIdxLabels(labelsPath, 10);
  ImageSet images;
  images.count = idx.count;
  images.channels = 1;
  images.height = idx.rows;
  images.width = idx.cols;
  images.pixels = std::move(idx.pixels);
  images.labels.assign(labels.begin(), labels.end());
  return imagesToDataset(images, transform, name, fashionMnistClassNames());
}

}  // namespace

IdxImages readIdxImages(const std::string& path, std::int64_t expectRows, std::int64_t expectCols) {
  GzReader in(path);
  unsigned char header[16];
  readHeader(in, header, sizeof header, kImagesMagic, "images");
  IdxImages img;
  img.count = bigEndian32(header + 4);
  img.rows = bigEndian32(header + 8);
  img.cols = bigEndian32(header + 12);
  const std::string dims = std::to_string(img.count) + " images of " + std::to_string(img.rows) +
                           "x" + std::to_string(img.cols);
  if (img.count == 0 || img.rows == 0 || img.cols == 0)
    in.fail("header declares " + dims + "; all dimensions must be non-zero");
  if ((expectRows && img.rows != expectRows) || (expectCols && img.cols != expectCols))
    in.fail("header declares " + dims + ", expected " + std::to_string(expectRows) + "x" +
            std::to_string(expectCols) + " images");
  const std::uint64_t imageBytes = static_cast<std::uint64_t>(img.rows) * img.cols;
  if (imageBytes > kMaxDataBytes / static_cast<std::uint64_t>(img.count))
    in.fail("header declares " + dims + ", more than 4 GiB of pixels; the header is wrong");
  img.pixels = readBody(in, imageBytes * img.count, "pixel data");
  return img;
}

std::vector<std::uint8_t> readIdxLabels(const std::string& path, int numClasses) {
  GzReader in(path);
  unsigned char header[8];
  readHeader(in, header, sizeof header, kLabelsMagic, "labels");
  const std::uint32_t count = bigEndian32(header + 4);
  if (count == 0) in.fail("header declares 0 labels");
  std::vector<std::uint8_t> labels = readBody(in, count, "label data");
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= numClasses)
      in.fail("label " + std::to_string(labels[i]) + " at index " + std::to_string(i) +
              " is out of range (expected 0.." + std::to_string(numClasses - 1) + ")");
  return labels;
}

const std::vector<std::string>& fashionMnistClassNames() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress",
                                                 "Coat",        "Sandal",  "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

DataSplit loadFashionMnist(const std::string& dir, const std::string& normalize, int padTo) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec))
    throw DataError(dir + ": no such folder (the Fashion-MNIST data path is the folder holding "
                          "train-images-idx3-ubyte.gz etc.)");
  if (!std::filesystem::is_directory(dir, ec))
    throw DataError(dir + ": not a folder (the Fashion-MNIST data path is the folder holding "
                          "train-images-idx3-ubyte.gz etc.)");
  if (padTo != 0 && padTo < 28)
    throw DataError("data.pad_to = " + std::to_string(padTo) +
                    ": smaller than the 28x28 Fashion-MNIST images (0 = no padding)");
  PixelTransform transform;
  transform.normalize = normalize;
  transform.mean = {kFmnistMean};
  transform.stddev = {kFmnistStd};
  transform.padTo = padTo;
  // Inflating dominates the load; the test files inflate on a second core meanwhile.
  auto test = std::async(std::launch::async, [&] { return loadSplit(dir, "t10k", "fmnist/test", transform); });
  Dataset train = loadSplit(dir, "train", "fmnist/train", transform);
  return {std::move(train), test.get()};
}

}  // namespace amp
