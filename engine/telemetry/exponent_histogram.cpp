#include "engine/telemetry/exponent_histogram.h"

namespace amp {

void ExponentHistogram::add(double v) {
  const ScaledBin b = binDouble(v);  // shared with the CUDA histogram kernel
  ++counts[b.bin];
  ++total;
  nonFinite += b.nonFinite;
  underflow += b.underflow;
  subnormal += b.subnormal;
  overflow += b.overflow;
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
