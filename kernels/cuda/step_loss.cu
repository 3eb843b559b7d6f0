// A micro-batch's loss added to the step's record on the device, so a training step reads its
// loss back with found_inf and the rest, once. One thread: a few hundred row losses, summed in
// row order as the CPU does.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void addRowLossesKernel(const double* rowLoss, std::int64_t m, DeviceStepStats* stats) {
  double total = 0;
  for (std::int64_t r = 0; r < m; ++r) total += rowLoss[r];
  stats->lossSum += total / double(m);
}

__global__ void addMseKernel(std::int64_t n, DeviceStepStats* stats) {
  stats->lossSum += stats->mseSum / double(n);
  stats->mseSum = 0;
}

void launchAddRowLossesToStep(const double* rowLoss, std::int64_t m, DeviceStepStats* stats,
                              Stream s) {
  if (m > 0) addRowLossesKernel<<<1, 1, 0, s>>>(rowLoss, m, stats);
}

void launchAddMseToStep(std::int64_t n, DeviceStepStats* stats, Stream s) {
  if (n > 0) addMseKernel<<<1, 1, 0, s>>>(n, stats);
}

}  // namespace amp::cuda
