// IDX files (Fashion-MNIST), gzip-compressed or raw: readIdxImages / readIdxLabels on a file
// holding the input (zlib tells the two apart by the gzip magic, so seeds of both kinds reach
// both paths). The first byte picks the call and its expectations. Refusals are DataErrors; what
// is accepted must be exactly what the header declares.
#include <cstdint>
#include <string>

#include "engine/data/idx_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  if (size == 0) return 0;
  const int mode = data[0] % 4;
  static const QString path = fuzz::scratchPath(QStringLiteral("data-idx-ubyte.gz"));
  fuzz::writeFile(path, fuzz::bytesOf(data + 1, size - 1));
  try {
    if (mode <= 1) {
      const IdxImages img = mode == 0 ? readIdxImages(path.toStdString()) : readIdxImages(path.toStdString(), 28, 28);
      if (img.count <= 0 || img.rows <= 0 || img.cols <= 0 ||
          img.pixels.size() != static_cast<std::size_t>(img.count * img.rows * img.cols))
        fuzz::fail("images: " + std::to_string(img.pixels.size()) + " pixels for " + std::to_string(img.count) +
                   " x " + std::to_string(img.rows) + " x " + std::to_string(img.cols));
      if (mode == 1 && (img.rows != 28 || img.cols != 28)) fuzz::fail("images: expected 28x28 not enforced");
    } else {
      const int classes = mode == 2 ? 10 : 256;
      const auto labels = readIdxLabels(path.toStdString(), classes);
      if (labels.empty()) fuzz::fail("labels: accepted an empty label file");
      for (auto l : labels)
        if (l >= classes) fuzz::fail("labels: " + std::to_string(l) + " accepted with " + std::to_string(classes) + " classes");
    }
  } catch (const DataError& e) {
    fuzz::refused(e);
  }
  return 0;
}
