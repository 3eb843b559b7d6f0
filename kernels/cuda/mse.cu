// Mean squared error: the sum of squared differences in double (forward; the caller divides),
// and the gradient (pred - target) * k rounded once to the gradient's dtype (backward).
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void mseForwardKernel(int code, const void* pred, const float* target, std::int64_t n,
                                 double* sum) {
  double local = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double d = double(loadFloat(code, pred, i)) - double(target[i]);
    local += d * d;
  }
  const double block = blockSum(local);
  if (threadIdx.x == 0) atomicAdd(sum, block);
}

__global__ void mseBackwardKernel(int pCode, const void* pred, const float* target,
                                  std::int64_t n, float kValue, const float* kOnDevice,
                                  int gCode, void* dpred) {
  const float k = kOnDevice ? *kOnDevice : kValue;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(gCode, dpred, i, (loadFloat(pCode, pred, i) - target[i]) * k);
}

void launchMseForward(int code, const void* pred, const float* target, std::int64_t n,
                      double* sum, Stream s) {
  if (n > 0) mseForwardKernel<<<gridFor(n, 1024), kBlock, 0, s>>>(code, pred, target, n, sum);
}

void launchMseBackward(int pCode, const void* pred, const float* target, std::int64_t n, float k,
                       int gCode, void* dpred, Stream s, const float* kOnDevice) {
  if (n > 0)
    mseBackwardKernel<<<gridFor(n), kBlock, 0, s>>>(pCode, pred, target, n, k, kOnDevice, gCode,
                                                    dpred);
}

}  // namespace amp::cuda
