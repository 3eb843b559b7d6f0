// Multi-tensor SGD (momentum, Nesterov, weight decay) with the CPU's element math
// (optimizer_math.h). It reads the step's gate on the device and returns at once when the step
// is skipped, as PyTorch's fused optimizers do with found_inf. Lost updates (a non-zero delta
// that left the stored weight unchanged) and the gradients' sum of squares go to the stats.
#include "kernels/cuda/multi_tensor.cuh"

namespace amp::cuda {

__global__ void sgdStepKernel(const MultiTensorEntry* table, SgdScalars p, DeviceStepStats* stats,
                              int rowBase) {
  if (!stats->stepped) return;
  const MultiTensorEntry e = table[tensorIndex(rowBase)];
  unsigned long long lost = 0;
  double sumSq = 0;
  AMP_FOR_EACH_ELEMENT(i, e.n) {
    const float w = loadFloat(e.paramCode, e.param, i);
    const float g = loadFloat(e.gradCode, e.grad, i);
    sumSq += double(g) * double(g);
    const float d = sgdDecayedGrad(w, g, p.weightDecay);
    float b = d;
    if (p.momentum != 0.f) {
      b = sgdMomentumBuffer(p.firstStep ? 0.f : e.stateA[i], d, p.momentum, p.keep, p.firstStep);
      e.stateA[i] = b;
    }
    const float delta = sgdDelta(p.lr, d, b, p.momentum, p.nesterov);
    const float next = storedValue(e.paramCode, w + delta);
    storeFloat(e.paramCode, e.param, i, next);
    lost += (delta != 0.f && next == w);
  }
  addBlockStepStats(stats, sumSq, lost);
}

void launchSgdStep(const MultiTensorEntry* table, int count, std::int64_t maxN,
                   const SgdScalars& p, DeviceStepStats* stats, Stream s) {
  forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
    sgdStepKernel<<<grid, kBlock, 0, s>>>(table, p, stats, rowBase);
  });
}

}  // namespace amp::cuda
