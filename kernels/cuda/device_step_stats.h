// The step's AMP bookkeeping as it sits in device memory: written by the multi-tensor kernels,
// copied to the host once per step (CudaBackend::readStepStats). Plain data, no CUDA types.
#pragma once

#include <cstdint>

#include "kernels/common/scale_update.h"

namespace amp::cuda {

constexpr std::int32_t kNoNonFinite = 0x7FFFFFFF;  // firstNonFinite before any is found

struct DeviceStepStats {
  std::int32_t unscaled, foundInf, firstNonFinite, normTaken;
  std::int32_t clipped, stepped, scaleUpdated, scaleEvent;
  double unscaledSumOfSquares, normSumOfSquares, stepGradSumOfSquares;
  double lossSum;     // the micro-batches' mean losses, added where they are computed
  double mseSum;      // an MSE sum in flight, consumed (and zeroed) by launchAddMseToStep
  std::int32_t badLabel;  // 1 + the row of a cross-entropy label out of range, or 0
  unsigned long long lost;
  float clipCoef;  // what clipping multiplies by (1 when it does not clip)
  ScaleCounters scale;
};

}  // namespace amp::cuda
