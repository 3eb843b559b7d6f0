#include "engine/telemetry/exponent_histogram.h"

#include <cmath>

namespace amp {

void ExponentHistogram::add(double v) {
  ++counts[exponentBin(v)];
  ++total;
  const double a = std::fabs(v);
  if (!std::isfinite(v)) {
    ++nonFinite;
    if (std::isinf(v)) ++overflow;
    return;
  }
  if (a != 0.0 && a < kFp16MinSubnormal) ++underflow;
  if (a != 0.0 && a < kFp16MinNormal) ++subnormal;
  if (a > kFp16Max) ++overflow;
}

void ExponentHistogram::merge(const ExponentHistogram& o) {
  for (int i = 0; i < kHistBins; ++i) counts[i] += o.counts[i];
  total += o.total;
  underflow += o.underflow;
  subnormal += o.subnormal;
  overflow += o.overflow;
  nonFinite += o.nonFinite;
}

}  // namespace amp
