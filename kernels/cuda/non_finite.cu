// Number of inf/NaN elements (exact, so it matches the CPU's count).
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void countNonFiniteKernel(int code, const void* data, std::int64_t n,
                                     unsigned long long* count) {
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    local += !isFiniteFloat(loadFloat(code, data, i));
  const unsigned long long block = blockSumCount(local);
  if (threadIdx.x == 0 && block) atomicAdd(count, block);
}

void launchCountNonFinite(int code, const void* data, std::int64_t n, unsigned long long* count,
                          Stream s) {
  if (n > 0) countNonFiniteKernel<<<gridFor(n, 1024), kBlock, 0, s>>>(code, data, n, count);
}

}  // namespace amp::cuda
