#include "engine/data/data_fingerprint.h"

#include <cstdio>
#include <cstring>

#include "kernels/common/mix64.h"

namespace amp {

namespace {

// Folds bytes into h eight at a time (the tail zero-padded), then their count.
std::uint64_t fold(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix64(h ^ w);
  }
  if (i < bytes) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + i, bytes - i);
    h = mix64(h ^ w);
  }
  return mix64(h ^ static_cast<std::uint64_t>(bytes));
}

std::uint64_t foldSet(std::uint64_t h, const Dataset& d) {
  h = fold(h, d.sampleShape.data(), d.sampleShape.size() * sizeof(d.sampleShape[0]));
  h = fold(h, &d.count, sizeof d.count);
  h = fold(h, d.features.data(), d.features.size() * sizeof(float));
  h = fold(h, d.labels.data(), d.labels.size() * sizeof(std::int32_t));
  h = fold(h, d.targets.data(), d.targets.size() * sizeof(float));
  // Token data (text, sequence tasks) keeps its samples as bytes and window starts. Folded only
  // for it, so the digests of other data, and the checkpoints that store them, stay as they were.
  if (d.isTokenData()) {
    h = fold(h, &d.sequence, sizeof d.sequence);
    h = fold(h, d.tokens.data(), d.tokens.size());
    h = fold(h, d.windowStarts.data(), d.windowStarts.size() * sizeof(std::int64_t));
  }
  return h;
}

}  // namespace

std::string dataFingerprint(const DataSplit& data) {
  const std::uint64_t h = foldSet(foldSet(0x414d5053747564ull, data.train), data.test);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace amp
