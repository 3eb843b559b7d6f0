// Training-time augmentation of image batches on the host, as the ResNet peer's augment():
// each sample (C, H, W) is zero-padded by `crop` pixels on every side (0 in the normalised
// domain: the padding comes after normalisation), a random H x W window at offset (i, j), each
// uniform in [0, 2 * crop], is kept, and then, with probability 1/2, the window is mirrored
// left-right. The test set is never augmented.
//
// Randomness: a batch's draws come from augmentationRng(seed, epoch, position) alone, so the
// same loader seed, epoch and batch position give the same augmented batch whether reached by
// iterating, reset(epoch) or restore() (a resumed run stays bit-exact). Per sample, in batch
// order: i = below(2 * crop + 1), j = below(2 * crop + 1) (when crop > 0), then flip =
// below(2) == 1 (when flipping).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"  // Shape
#include "engine/data/rng.h"

namespace amp {

struct AugmentOptions {
  int crop = 0;       // padding on each side before the random crop; 0 = no crop
  bool flip = false;  // horizontal flip with probability 1/2
  bool active() const { return crop > 0 || flip; }
};

// Rng(seed ^ mix64(kAugmentPositionTag + position), kAugmentStreamBase + epoch): a stream of
// its own, apart from the epoch permutations' (batch_loader.cpp) and the data split's.
inline constexpr std::uint64_t kAugmentStreamBase = 0xA06E0000'00000000ULL;
inline constexpr std::uint64_t kAugmentPositionTag = 0xA06D'0000ULL;
Rng augmentationRng(std::uint64_t seed, std::int64_t epoch, std::int64_t position);

// Augments `count` samples of shape {C, H, W} in place (x: count * C * H * W floats), drawing
// from `rng` as described above. `scratch` is reused between calls.
void augmentBatch(float* x, std::int64_t count, const Shape& sampleShape, const AugmentOptions& opt, Rng& rng,
                  std::vector<float>& scratch);

}  // namespace amp
