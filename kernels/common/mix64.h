// SplitMix64's finaliser: a bijective 64-bit mix. The seeding of Rng, the per-layer dropout
// seeds and the counter-based dropout masks all use it, so a CPU and a CUDA mask agree.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace amp {

AMP_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace amp
