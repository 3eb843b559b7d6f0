// clip_grad_norm_ without the host: the norm (from the unscale pass, or measured here), the
// coefficient maxNorm / (norm + 1e-6) in double as PyTorch, and the scaling, all on the device.
#include "kernels/cuda/multi_tensor.cuh"

namespace amp::cuda {

__global__ void gradSumOfSquaresKernel(const MultiTensorEntry* table, DeviceStepStats* stats,
                                       int rowBase) {
  const MultiTensorEntry e = table[tensorIndex(rowBase)];
  if (blockOwnsNoElement(e.n)) return;
  double sumSq = 0;
  AMP_FOR_EACH_ELEMENT(i, e.n) {
    const double v = loadFloat(e.gradCode, e.grad, i);
    sumSq += v * v;
  }
  const double block = blockSum(sumSq);
  if (threadIdx.x == 0) atomicAdd(&stats->normSumOfSquares, block);
}

__global__ void clipCoefficientKernel(double maxNorm, bool useUnscaledSum, DeviceStepStats* stats) {
  if (useUnscaledSum) stats->normSumOfSquares = stats->unscaledSumOfSquares;
  stats->normTaken = 1;
  const double norm = sqrt(stats->normSumOfSquares);
  const double coef = maxNorm / (norm + 1e-6);
  const bool clip = isfinite(norm) && coef < 1.0;
  stats->clipped = clip;
  stats->clipCoef = clip ? static_cast<float>(coef) : 1.f;
}

__global__ void clipScaleKernel(const MultiTensorEntry* table, const DeviceStepStats* stats,
                                int rowBase) {
  if (!stats->clipped) return;
  const float factor = stats->clipCoef;
  const MultiTensorEntry e = table[tensorIndex(rowBase)];
  AMP_FOR_EACH_ELEMENT(i, e.n)
    storeFloat(e.gradCode, e.grad, i, loadFloat(e.gradCode, e.grad, i) * factor);
}

void launchClipGradNorm(const MultiTensorEntry* table, int count, std::int64_t maxN,
                        double maxNorm, bool useUnscaledSum, DeviceStepStats* stats, Stream s) {
  if (!useUnscaledSum)
    forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
      gradSumOfSquaresKernel<<<grid, kBlock, 0, s>>>(table, stats, rowBase);
    });
  clipCoefficientKernel<<<1, 1, 0, s>>>(maxNorm, useUnscaledSum, stats);
  forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
    clipScaleKernel<<<grid, kBlock, 0, s>>>(table, stats, rowBase);
  });
}

}  // namespace amp::cuda
