// Multi-tensor Adam/AdamW with the CPU's element math (optimizer_math.h): fp32 moments, the
// weight updated in its own dtype. Skips itself on the device when the step's gate says so.
#include "kernels/cuda/multi_tensor.cuh"
#include "kernels/cuda/vector_io.cuh"

namespace amp::cuda {

namespace {
struct AdamBody {
  const MultiTensorEntry& e;
  const AdamScalars& p;
  unsigned long long lost = 0;
  double sumSq = 0;
  template <int W>
  __device__ void run(std::int64_t i) {
    Lanes<W> w = loadLanes<W>(e.paramCode, e.param, i);
    const Lanes<W> g = loadLanes<W>(e.gradCode, e.grad, i);
    Lanes<W> m = loadLanes<W>(0, e.stateA, i), v = loadLanes<W>(0, e.stateB, i);
    for (int k = 0; k < W; ++k) {
      const float gk = settledGrad(g.v[k], e.roundCode);
      sumSq += double(gk) * double(gk);
      float delta;
      const float next = storedValue(e.paramCode, adamUpdate(p, w.v[k], gk, m.v[k], v.v[k], delta));
      lost += (delta != 0.f && next == w.v[k]);
      w.v[k] = next;
    }
    storeLanes<W>(0, e.stateA, i, m);
    storeLanes<W>(0, e.stateB, i, v);
    storeLanes<W>(e.paramCode, e.param, i, w);
    if (e.lowCopy) storeLanes<W>(e.lowCode, e.lowCopy, i, w);
  }
};
}  // namespace

__global__ void adamStepKernel(const MultiTensorEntry* table, AdamScalars value,
                               const AdamScalars* onDevice, DeviceStepStats* stats, int rowBase) {
  if (!stats->stepped) return;
  const AdamScalars p = onDevice ? *onDevice : value;
  const MultiTensorEntry e = table[tensorIndex(rowBase)];
  if (blockOwnsNoElement(e.n)) return;
  AdamBody body{e, p};
  forEachLanes(e.n, vectorAligned(e.param, e.grad, e.stateA, e.stateB) && vectorAligned(e.lowCopy), body);
  addBlockStepStats(stats, body.sumSq, body.lost);
}

void launchAdamStep(const MultiTensorEntry* table, int count, std::int64_t maxN,
                    const AdamScalars& p, DeviceStepStats* stats, Stream s,
                    const AdamScalars* pOnDevice) {
  forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
    adamStepKernel<<<grid, kBlock, 0, s>>>(table, p, pOnDevice, stats, rowBase);
  });
}

}  // namespace amp::cuda
