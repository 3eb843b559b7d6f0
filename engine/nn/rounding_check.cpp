#include "engine/nn/rounding_check.h"

namespace amp {

RoundingCounts roundingBetween(const ExponentHistogram& reference, const ExponentHistogram& rounded) {
  RoundingCounts c;
  c.flushedToZero = rounded.counts[kHistBinZero] - reference.counts[kHistBinZero];
  c.roundedToInf = rounded.counts[kHistBinInf] - reference.counts[kHistBinInf];
  return c;
}

RoundingCounts measureRounding(Backend& be, const Tensor& rounded,
                               const std::function<void(Tensor& fp32Out)>& computeFp32) {
  Tensor reference = be.empty(rounded.shape(), DType::F32, MemCategory::Workspace, rounded.format());
  computeFp32(reference);
  return roundingBetween(be.histogram(reference, 1.0), be.histogram(rounded, 1.0));
}

}  // namespace amp
