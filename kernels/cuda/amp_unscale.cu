// PyTorch's _amp_foreach_non_finite_check_and_unscale_ in one launch over every gradient: each
// value is checked before it is scaled, every gradient is scaled even after an inf is found
// (x * 1 is skipped, keeping NaN payloads), and found_inf is set on the device. Beside it, the
// first non-finite tensor (the lowest list index: backward order) and the sum of squares of the
// values as stored after unscaling, which is the gradient norm without a second read. A
// gradient's deferred rounding (entry.roundCode) is applied as it is read and written back with
// the unscaled value: the same bits as a rounding pass before this one.
#include "kernels/cuda/multi_tensor.cuh"
#include "kernels/cuda/vector_io.cuh"

namespace amp::cuda {

namespace {
struct UnscaleBody {
  const MultiTensorEntry& e;
  float invScale;
  bool stores;
  int bad = 0;
  double sumSq = 0;
  template <int W>
  __device__ void run(std::int64_t i) {
    Lanes<W> x = loadLanes<W>(e.gradCode, e.grad, i);
    for (int k = 0; k < W; ++k) {
      float v = settledGrad(x.v[k], e.roundCode);
      bad |= !isFiniteFloat(v);
      if (invScale != 1.f) v = storedValue(e.gradCode, v * invScale);
      x.v[k] = v;
      sumSq += double(v) * double(v);
    }
    if (stores) storeLanes<W>(e.gradCode, e.grad, i, x);
  }
};
}  // namespace

__global__ void unscaleAndCheckKernel(const MultiTensorEntry* table, float invScaleValue,
                                      const float* invScaleOnDevice, DeviceStepStats* stats,
                                      int rowBase) {
  const float invScale = invScaleOnDevice ? *invScaleOnDevice : invScaleValue;
  const int tensor = tensorIndex(rowBase);
  const MultiTensorEntry e = table[tensor];
  if (blockOwnsNoElement(e.n)) {
    if (blockIdx.x == 0 && tensor == 0 && threadIdx.x == 0) stats->unscaled = 1;
    return;
  }
  UnscaleBody body{e, invScale, unscaleStores(invScale, e.roundCode)};
  forEachLanes(e.n, vectorAligned(e.grad), body);
  const int bad = body.bad;
  const double sumSq = body.sumSq;
  const int anyBad = __syncthreads_or(bad);
  const double blockSumSq = blockSum(sumSq);
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0 && tensor == 0) stats->unscaled = 1;
  if (anyBad) {
    atomicExch(&stats->foundInf, 1);
    atomicMin(&stats->firstNonFinite, tensor);
  }
  atomicAdd(&stats->unscaledSumOfSquares, blockSumSq);
}

void launchUnscaleAndCheck(const MultiTensorEntry* table, int count, std::int64_t maxN,
                           float invScale, DeviceStepStats* stats, Stream s,
                           const float* invScaleOnDevice) {
  forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
    unscaleAndCheckKernel<<<grid, kBlock, 0, s>>>(table, invScale, invScaleOnDevice, stats,
                                                  rowBase);
  });
}

}  // namespace amp::cuda
