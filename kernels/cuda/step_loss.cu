// A micro-batch's loss added to the step's record on the device, so a training step reads its
// loss back with found_inf and the rest, once. The row losses are added in
// kernels/common/row_sum_order.h's blocked order by one block (or, with
// AMP_CUDA_DISABLE=warp-losses, by one thread in row order, as the CPU).
#include "kernels/common/row_sum_order.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void addRowLossesKernel(const double* rowLoss, std::int64_t m, DeviceStepStats* stats) {
  double total = 0;
  for (std::int64_t r = 0; r < m; ++r) total += rowLoss[r];
  stats->lossSum += total / double(m);
}

// One block of kRowSumLanes threads: thread t's partial, then thread 0 adds them in lane order.
__global__ void addRowLossesBlockedKernel(const double* rowLoss, std::int64_t m, DeviceStepStats* stats) {
  __shared__ double partial[kRowSumLanes];
  partial[threadIdx.x] = rowSumLanePartial(rowLoss, m, static_cast<int>(threadIdx.x));
  __syncthreads();
  if (threadIdx.x != 0) return;
  double total = 0;
  for (int t = 0; t < kRowSumLanes; ++t) total += partial[t];
  stats->lossSum += total / double(m);
}

__global__ void addMseKernel(std::int64_t n, DeviceStepStats* stats) {
  stats->lossSum += stats->mseSum / double(n);
  stats->mseSum = 0;
}

void launchAddRowLossesToStep(const double* rowLoss, std::int64_t m, DeviceStepStats* stats,
                              Stream s, bool blocked) {
  if (m <= 0) return;
  if (blocked) addRowLossesBlockedKernel<<<1, kRowSumLanes, 0, s>>>(rowLoss, m, stats);
  else addRowLossesKernel<<<1, 1, 0, s>>>(rowLoss, m, stats);
}

void launchAddMseToStep(std::int64_t n, DeviceStepStats* stats, Stream s) {
  if (n > 0) addMseKernel<<<1, 1, 0, s>>>(n, stats);
}

}  // namespace amp::cuda
