// Image cache entries (readImageCache): the input after three parameter bytes (count, image
// side, channels) is the cache file, read back under a fixed key. An entry must be refused
// (nothing returned) unless every field and both CRCs check out, and what is returned must be
// exactly the expected pixels' size and the payload's bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/data/image_cache.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  if (size < 3) return 0;
  static const bool dirSet = [] {
    return ::setenv("AMP_IMAGE_CACHE_DIR", amp::fuzz::scratchDir().toLocal8Bit().constData(), 1) == 0;
  }();
  fuzz::require(dirSet, "cannot set AMP_IMAGE_CACHE_DIR");
  constexpr std::uint64_t kKey = 0xA11CE;
  const std::int64_t count = data[0] % 8;
  const int side = 1 + data[1] % 8;
  const int channels = data[2] & 1 ? 3 : 1;
  static const QString path = QString::fromStdString(imageCachePath(kKey));
  fuzz::writeFile(path, fuzz::bytesOf(data + 3, size - 3));
  const auto pixels = readImageCache(kKey, count, side, channels);
  if (!pixels) return 0;
  const std::size_t payload = static_cast<std::size_t>(count) * channels * side * side;
  if (pixels->size() != payload) fuzz::fail("returned " + std::to_string(pixels->size()) + " bytes, expected " + std::to_string(payload));
  if (size - 3 != kImageCacheHeaderBytes + payload) fuzz::fail("accepted a file of the wrong length");
  if (payload && std::memcmp(pixels->data(), data + 3 + kImageCacheHeaderBytes, payload) != 0)
    fuzz::fail("returned other bytes than the payload");
  return 0;
}
