// Inverted dropout with the CPU's counter-based mask (dropout_math.h): the same (seed, index)
// gives the same mask bit on both backends, whatever the launch shape.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/common/dropout_math.h"

namespace amp::cuda {

__global__ void dropoutForwardKernel(int code, const void* x, std::uint8_t* mask, void* y,
                                     std::int64_t n, float p, std::uint64_t seed,
                                     std::uint64_t threshold, float keepScale) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const bool keep = dropoutKeeps(seed, i, threshold, p);
    mask[i] = keep ? 1 : 0;
    storeFloat(code, y, i, keep ? loadFloat(code, x, i) * keepScale : 0.f);
  }
}

__global__ void dropoutBackwardKernel(int code, const void* dy, const std::uint8_t* mask,
                                      void* dx, std::int64_t n, float keepScale) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(code, dx, i, mask[i] ? loadFloat(code, dy, i) * keepScale : 0.f);
}

void launchDropoutForward(int code, const void* x, std::uint8_t* mask, void* y, std::int64_t n,
                          float p, std::uint64_t seed, Stream s) {
  if (n > 0)
    dropoutForwardKernel<<<gridFor(n), kBlock, 0, s>>>(code, x, mask, y, n, p, seed,
                                                       dropoutThreshold(p), dropoutKeepScale(p));
}

void launchDropoutBackward(int code, const void* dy, const std::uint8_t* mask, void* dx,
                           std::int64_t n, float p, Stream s) {
  if (n > 0)
    dropoutBackwardKernel<<<gridFor(n), kBlock, 0, s>>>(code, dy, mask, dx, n, dropoutKeepScale(p));
}

}  // namespace amp::cuda
