// PNG and JPEG decoding of arbitrary bytes (decodeImage, told apart by the signature), then a
// resize of what was decoded. The first byte picks the output channels (1 or 3) and the resize
// target; the rest is the file. Refusals are DataErrors; what is accepted must have the sizes it
// claims, within the caps, and resize to exactly the requested size.
#include <cstdint>
#include <string>

#include "engine/data/dataset.h"
#include "engine/data/image_decode.h"
#include "engine/data/image_resize.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  if (size == 0) return 0;
  const int channels = data[0] & 1 ? 3 : 1;
  const int side = 1 + (data[0] >> 1) % 16;
  try {
    const DecodedImage img = decodeImage({data + 1, size - 1}, channels, "fuzz");
    if (img.width <= 0 || img.height <= 0 || img.width > kMaxImageSide || img.height > kMaxImageSide ||
        std::int64_t{img.width} * img.height > kMaxImagePixels)
      fuzz::fail("decoded " + std::to_string(img.width) + " x " + std::to_string(img.height));
    if (img.channels != channels ||
        img.pixels.size() != static_cast<std::size_t>(img.width) * img.height * static_cast<std::size_t>(channels))
      fuzz::fail("decoded " + std::to_string(img.pixels.size()) + " bytes for " + std::to_string(img.width) + " x " +
                 std::to_string(img.height) + " x " + std::to_string(img.channels));
    // Large images only cost time here; the resize of a small one is what is worth fuzzing.
    if (std::int64_t{img.width} * img.height <= 1 << 16) {
      const auto out = resizeImage(img.pixels.data(), img.width, img.height, channels, side, side);
      if (out.size() != static_cast<std::size_t>(side * side * channels)) fuzz::fail("resize size");
    }
  } catch (const DataError& e) {
    fuzz::refused(e);
  }
  return 0;
}
