// What rounding to 16 bits did to a result a layer computed: how many values were non-zero in
// exact-ish fp32 and became exactly zero (flushed: fp16 underflow), and how many were finite
// and became inf (overflow). The reference is the same op computed from the same 16-bit inputs
// with fp32 output (products and sums are fp32 either way, so only the final rounding differs).
// Measured on histogram steps only: one extra op and two histograms per tensor.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/backend/backend.h"

namespace amp {

struct RoundingCounts {
  std::int64_t flushedToZero = 0;
  std::int64_t roundedToInf = 0;
  RoundingCounts& operator+=(const RoundingCounts& o) {
    flushedToZero += o.flushedToZero;
    roundedToInf += o.roundedToInf;
    return *this;
  }
};

// Counts from histograms of the reference and the rounded values (same element count).
// Rounding never makes a zero non-zero nor an inf finite, so the differences of the zero and
// inf bins are exactly the values it flushed and the values it overflowed.
RoundingCounts roundingBetween(const ExponentHistogram& reference, const ExponentHistogram& rounded);

// `rounded` against a fresh fp32 tensor of its shape that `computeFp32` fills (the same op with
// fp32 output). The reference is a Workspace temporary, freed on return.
RoundingCounts measureRounding(Backend& be, const Tensor& rounded,
                               const std::function<void(Tensor& fp32Out)>& computeFp32);

}  // namespace amp
