// Sum of squares in double (the gradient norm). The order of the partial sums differs from the
// CPU's, so results agree within double rounding, not bit for bit.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void sumOfSquaresKernel(int code, const void* data, std::int64_t n, double* sum) {
  double local = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double v = loadFloat(code, data, i);
    local += v * v;
  }
  const double block = blockSum(local);
  if (threadIdx.x == 0) atomicAdd(sum, block);
}

void launchSumOfSquares(int code, const void* data, std::int64_t n, double* sum, Stream s) {
  if (n > 0) sumOfSquaresKernel<<<gridFor(n, 1024), kBlock, 0, s>>>(code, data, n, sum);
}

}  // namespace amp::cuda
