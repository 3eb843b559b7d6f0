// Counts of a tensor's values by binary exponent, with the fp16 range fractions beside them.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/common/exponent_bins.h"

namespace amp {

struct ExponentHistogram {
  std::array<std::int64_t, kHistBins> counts{};
  std::int64_t total = 0;
  std::int64_t underflow = 0;  // non-zero, |x| < 2^-24: lost to zero in fp16
  std::int64_t subnormal = 0;  // non-zero, |x| < 2^-14: below fp16's normal range (underflow included)
  std::int64_t overflow = 0;   // |x| > 65504, inf included: not representable in fp16
  std::int64_t nonFinite = 0;

  void add(double v);  // v already multiplied into the domain being shown
  void merge(const ExponentHistogram& o);
  double fraction(std::int64_t n) const { return total ? double(n) / double(total) : 0.0; }
};

}  // namespace amp
