// Crop and flip in one pass per sample: each output pixel reads the source pixel it lands on
// (or 0 in the padding), so no padded copy is ever built; the sample is first copied to a
// scratch buffer because the output overwrites it in place.
#include "engine/data/augment.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/common/mix64.h"

namespace amp {

Rng augmentationRng(std::uint64_t seed, std::int64_t epoch, std::int64_t position) {
  return Rng(seed ^ mix64(kAugmentPositionTag + static_cast<std::uint64_t>(position)),
             kAugmentStreamBase + static_cast<std::uint64_t>(epoch));
}

void augmentBatch(float* x, std::int64_t count, const Shape& sampleShape, const AugmentOptions& opt, Rng& rng,
                  std::vector<float>& scratch) {
  if (!opt.active() || count <= 0) return;
  if (sampleShape.size() != 3)
    throw std::invalid_argument("augmentBatch: samples must be (C, H, W) images");
  const std::int64_t C = sampleShape[0], H = sampleShape[1], W = sampleShape[2];
  const std::int64_t p = opt.crop;
  const auto sampleSize = static_cast<std::size_t>(C * H * W);
  scratch.resize(sampleSize);
  for (std::int64_t s = 0; s < count; ++s) {
    const std::int64_t i = p > 0 ? static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * p + 1))) : p;
    const std::int64_t j = p > 0 ? static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * p + 1))) : p;
    const bool flip = opt.flip && rng.below(2) == 1;
    if (i == p && j == p && !flip) continue;  // the window is the image itself
    float* sample = x + static_cast<std::size_t>(s) * sampleSize;
    std::memcpy(scratch.data(), sample, sampleSize * sizeof(float));
    for (std::int64_t c = 0; c < C; ++c) {
      const float* src = scratch.data() + c * H * W;
      float* dst = sample + c * H * W;
      for (std::int64_t y = 0; y < H; ++y) {
        float* out = dst + y * W;
        const std::int64_t sy = y + i - p;  // the padded image's row y + i, in source rows
        if (sy < 0 || sy >= H) {
          std::fill(out, out + W, 0.0f);
          continue;
        }
        const float* row = src + sy * W;
        for (std::int64_t xo = 0; xo < W; ++xo) {
          const std::int64_t sx = (flip ? W - 1 - xo : xo) + j - p;
          out[xo] = sx >= 0 && sx < W ? row[sx] : 0.0f;
        }
      }
    }
  }
}

}  // namespace amp
