// CIFAR-10 record files: parseCifar10Records on the bytes, and what is accepted turned into
// features with the training split's own statistics (imagesToDataset, normalize=standard).
// Refusals are DataErrors; an accepted file must be whole records with labels 0-9 whose pixels
// are the bytes after each label, and its normalised features finite.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/data/cifar10_reader.h"
#include "engine/data/image_set.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  try {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const ImageSet s = parseCifar10Records(bytes, "data_batch_1.bin");
    if (s.count <= 0 || static_cast<std::size_t>(s.count * kCifar10RecordBytes) != size)
      fuzz::fail("accepted " + std::to_string(size) + " bytes as " + std::to_string(s.count) + " records");
    for (std::int64_t r = 0; r < s.count; ++r) {
      if (s.labels[r] < 0 || s.labels[r] > 9 || s.labels[r] != data[r * kCifar10RecordBytes])
        fuzz::fail("label " + std::to_string(s.labels[r]) + " of record " + std::to_string(r));
      if (std::memcmp(s.pixels.data() + r * kCifar10ImageBytes, data + r * kCifar10RecordBytes + 1, kCifar10ImageBytes))
        fuzz::fail("pixels of record " + std::to_string(r) + " differ from the file");
    }
    PixelTransform t;
    t.normalize = "standard";
    const ChannelStats stats = channelStats(s);
    t.mean = stats.mean;
    t.stddev = stats.stddev;
    const Dataset d = imagesToDataset(s, t, "cifar10/train", cifar10ClassNames());
    for (float v : d.features)
      if (!std::isfinite(v)) fuzz::fail("a non-finite normalised feature");
  } catch (const DataError& e) {
    fuzz::refused(e);
  }
  return 0;
}
