// t *= factor in fp32, rounded once to t's dtype.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void scaleKernel(int code, void* data, std::int64_t n, float factor) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(code, data, i, loadFloat(code, data, i) * factor);
}

void launchScale(int code, void* data, std::int64_t n, float factor, Stream s) {
  if (n > 0) scaleKernel<<<gridFor(n), kBlock, 0, s>>>(code, data, n, factor);
}

}  // namespace amp::cuda
