// Multi-tensor Adam/AdamW with the CPU's element math (optimizer_math.h): fp32 moments, the
// weight updated in its own dtype. Skips itself on the device when the step's gate says so.
#include "kernels/cuda/multi_tensor.cuh"

namespace amp::cuda {

__global__ void adamStepKernel(const MultiTensorEntry* table, AdamScalars p,
                               DeviceStepStats* stats, int rowBase) {
  if (!stats->stepped) return;
  const MultiTensorEntry e = table[tensorIndex(rowBase)];
  unsigned long long lost = 0;
  double sumSq = 0;
  AMP_FOR_EACH_ELEMENT(i, e.n) {
    const float w = loadFloat(e.paramCode, e.param, i);
    const float g = loadFloat(e.gradCode, e.grad, i);
    sumSq += double(g) * double(g);
    float m = e.stateA[i], v = e.stateB[i], delta;
    const float next = storedValue(e.paramCode, adamUpdate(p, w, g, m, v, delta));
    e.stateA[i] = m;
    e.stateB[i] = v;
    storeFloat(e.paramCode, e.param, i, next);
    lost += (delta != 0.f && next == w);
  }
  addBlockStepStats(stats, sumSq, lost);
}

void launchAdamStep(const MultiTensorEntry* table, int count, std::int64_t maxN,
                    const AdamScalars& p, DeviceStepStats* stats, Stream s) {
  forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
    adamStepKernel<<<grid, kBlock, 0, s>>>(table, p, stats, rowBase);
  });
}

}  // namespace amp::cuda
