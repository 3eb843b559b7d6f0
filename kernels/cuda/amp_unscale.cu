// PyTorch's _amp_foreach_non_finite_check_and_unscale_ in one launch over every gradient: each
// value is checked before it is scaled, every gradient is scaled even after an inf is found
// (x * 1 is skipped, keeping NaN payloads), and found_inf is set on the device. Beside it, the
// first non-finite tensor (the lowest list index: backward order) and the sum of squares of the
// values as stored after unscaling, which is the gradient norm without a second read.
#include "kernels/cuda/multi_tensor.cuh"

namespace amp::cuda {

__global__ void unscaleAndCheckKernel(const MultiTensorEntry* table, float invScale,
                                      DeviceStepStats* stats, int rowBase) {
  const int tensor = tensorIndex(rowBase);
  const MultiTensorEntry e = table[tensor];
  int bad = 0;
  double sumSq = 0;
  AMP_FOR_EACH_ELEMENT(i, e.n) {
    float v = loadFloat(e.gradCode, e.grad, i);
    bad |= !isFiniteFloat(v);
    if (invScale != 1.f) {
      v = storedValue(e.gradCode, v * invScale);
      storeFloat(e.gradCode, e.grad, i, v);
    }
    sumSq += double(v) * double(v);
  }
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
                           float invScale, DeviceStepStats* stats, Stream s) {
  forEachRowChunk(count, maxN, [&](dim3 grid, int rowBase) {
    unscaleAndCheckKernel<<<grid, kBlock, 0, s>>>(table, invScale, stats, rowBase);
  });
}

}  // namespace amp::cuda
