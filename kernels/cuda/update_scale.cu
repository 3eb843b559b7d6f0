// PyTorch's _amp_update_scale_ on the device: the scaler's rule (scale_update.h, the host
// GradScaler's own code) applied to the step's found_inf without the host reading it.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void updateScaleKernel(ScaleRule rule, ScaleCounters current,
                                  const ScaleCounters* currentOnDevice, DeviceStepStats* stats) {
  ScaleCounters next = currentOnDevice ? *currentOnDevice : current;
  stats->scaleEvent = applyScaleRule(rule, next, stats->foundInf != 0);
  stats->scale = next;
  stats->scaleUpdated = 1;
}

void launchUpdateScale(const ScaleRule& rule, const ScaleCounters& current,
                       DeviceStepStats* stats, Stream s, const ScaleCounters* currentOnDevice) {
  updateScaleKernel<<<1, 1, 0, s>>>(rule, current, currentOnDevice, stats);
}

__global__ void incrementIntKernel(std::int32_t* counter) { *counter += 1; }

void launchIncrementInt(std::int32_t* counter, Stream s) {
  incrementIntKernel<<<1, 1, 0, s>>>(counter);
}

}  // namespace amp::cuda
