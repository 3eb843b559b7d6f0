// fill: every element set to one fp32 value rounded to the tensor's dtype.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void fillKernel(int code, void* data, std::int64_t n, float value) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(code, data, i, value);
}

void launchFill(int code, void* data, std::int64_t n, float value, Stream s) {
  if (n > 0) fillKernel<<<gridFor(n), kBlock, 0, s>>>(code, data, n, value);
}

}  // namespace amp::cuda
