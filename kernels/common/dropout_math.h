// Inverted dropout's mask, counter-based: whether element i is kept depends only on (seed, i),
// so a CPU and a CUDA mask are identical and independent of threading or launch shape.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/mix64.h"

namespace amp {

// Elements whose 64 random bits fall below p * 2^64 are dropped.
AMP_HD inline std::uint64_t dropoutThreshold(float p) {
  return static_cast<std::uint64_t>(double(p) * 18446744073709551616.0);
}

AMP_HD inline bool dropoutKeeps(std::uint64_t seed, std::int64_t index, std::uint64_t threshold,
                                float p) {
  return p == 0.f || mix64(seed ^ mix64(static_cast<std::uint64_t>(index))) >= threshold;
}

// 1 / (1 - p), the scale of the kept elements, in fp32 as PyTorch computes it.
AMP_HD inline float dropoutKeepScale(float p) { return 1.f / (1.f - p); }

}  // namespace amp
