// The step's stats record on the device: reset at the start of a step, and the gate that decides
// (from found_inf, without the host) whether the optimizer kernels of this step run.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void beginStepKernel(DeviceStepStats* stats) {
  DeviceStepStats s{};
  s.firstNonFinite = kNoNonFinite;
  s.clipCoef = 1.f;
  *stats = s;
}

__global__ void gateStepKernel(bool skipIfFoundInf, bool skipIfNonFiniteAfterUnscale,
                               DeviceStepStats* stats) {
  const bool foundInf = stats->foundInf != 0;
  const bool nonFiniteAfterUnscale =
      stats->unscaled && !foundInf && !isfinite(stats->unscaledSumOfSquares);
  stats->stepped = !((skipIfFoundInf && foundInf) ||
                     (skipIfNonFiniteAfterUnscale && nonFiniteAfterUnscale));
}

void launchBeginStep(DeviceStepStats* stats, Stream s) { beginStepKernel<<<1, 1, 0, s>>>(stats); }

void launchGateStep(bool skipIfFoundInf, bool skipIfNonFiniteAfterUnscale,
                    DeviceStepStats* stats, Stream s) {
  gateStepKernel<<<1, 1, 0, s>>>(skipIfFoundInf, skipIfNonFiniteAfterUnscale, stats);
}

}  // namespace amp::cuda
