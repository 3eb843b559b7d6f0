// Multi-tensor SGD (momentum, Nesterov, weight decay) with the CPU's element math
// (optimizer_math.h). It reads the step's gate on the device and returns at once when the step
// is skipped, as PyTorch's fused optimizers do with found_inf. Lost updates (a non-zero delta
// that left the stored weight unchanged) and the gradients' sum of squares go to the stats.
#include "kernels/cuda/multi_tensor.cuh"
#include "kernels/cuda/vector_io.cuh"

namespace amp::cuda {

namespace {
struct SgdBody {
  const MultiTensorEntry& e;
  const SgdScalars& p;
  unsigned long long lost = 0;
  double sumSq = 0;
  template <int W>
  __device__ void run(std::int64_t i) {
    Lanes<W> w = loadLanes<W>(e.paramCode, e.param, i);
    const Lanes<W> g = loadLanes<W>(e.gradCode, e.grad, i);
    const bool momentum = p.momentum != 0.f;
    Lanes<W> b{};
    if (momentum && !p.firstStep) b = loadLanes<W>(0, e.stateA, i);
    for (int k = 0; k < W; ++k) {
      const float gk = settledGrad(g.v[k], e.roundCode);
      sumSq += double(gk) * double(gk);
      const float d = sgdDecayedGrad(w.v[k], gk, p.weightDecay);
      float bk = d;
      if (momentum) {
        bk = sgdMomentumBuffer(p.firstStep ? 0.f : b.v[k], d, p.momentum, p.keep, p.firstStep);
        b.v[k] = bk;
      }
      const float delta = sgdDelta(p.lr, d, bk, p.momentum, p.nesterov);
      const float next = storedValue(e.paramCode, w.v[k] + delta);
      lost += (delta != 0.f && next == w.v[k]);
      w.v[k] = next;
    }
    if (momentum) storeLanes<W>(0, e.stateA, i, b);
    storeLanes<W>(e.paramCode, e.param, i, w);
    if (e.lowCopy) storeLanes<W>(e.lowCode, e.lowCopy, i, w);
  }
};
}  // namespace

__global__ void sgdStepKernel(const MultiTensorEntry* table, SgdScalars value,
                              const SgdScalars* onDevice, DeviceStepStats* stats, int rowBase) {
  if (!stats->stepped) return;
  const SgdScalars p = onDevice ? *onDevice : value;
  const MultiTensorEntry e = table[tensorIndex(rowBase)];
  if (blockOwnsNoElement(e.n)) return;
  SgdBody body{e, p};
  forEachLanes(e.n, vectorAligned(e.param, e.grad, e.stateA, e.lowCopy), body);
  addBlockStepStats(stats, body.sumSq, body.lost);
}

void launchSgdStep(const MultiTensorEntry* table, int count, std::int64_t maxN,
                   const SgdScalars& p, DeviceStepStats* stats, Stream s,
                   const SgdScalars* pOnDevice) {
  forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
    sgdStepKernel<<<grid, kBlock, 0, s>>>(table, p, pOnDevice, stats, rowBase);
  });
}

}  // namespace amp::cuda
